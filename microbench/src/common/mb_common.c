/* See mb_common.h. */
#define _GNU_SOURCE
#include "mb_common.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

double mb_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void mb_where(int *cpu, int *node)
{
    unsigned c = 0, n = 0;
    if (syscall(SYS_getcpu, &c, &n, NULL) != 0) { c = (unsigned)-1; n = (unsigned)-1; }
    *cpu = (int)c;
    *node = (int)n;
}

void mb_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static int read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    if (!fgets(buf, (int)n, f)) { fclose(f); return -1; }
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

/* sysfs sizes read "32K", "32768K", sometimes "1M" */
static size_t sysfs_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (*end == 'K') v *= 1024; else if (*end == 'M') v *= 1048576; else if (*end == 'G') v *= 1073741824.0;
    return (size_t)v;
}

/* CPUs in a list such as "0-3,8" (for counting how many LLC instances the machine has) */
static int first_cpu(const char *list) { return atoi(list); }

void mb_read_caches(int cpu, mb_caches *c)
{
    char path[256], buf[256];
    memset(c, 0, sizeof *c);
    for (int i = 0; i < 16; i++) {
        int level; char type[32]; size_t size;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", cpu, i);
        if (read_line(path, buf, sizeof buf)) break;
        level = atoi(buf);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/type", cpu, i);
        if (read_line(path, type, sizeof type)) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu, i);
        if (read_line(path, buf, sizeof buf)) continue;
        size = sysfs_size(buf);
        if (!strcmp(type, "Instruction")) continue;
        if (level == 1) c->l1d = size;
        if (level == 2) c->l2 = size;
        if (level == 3) c->l3 = size;
        if (level >= c->llc_level) { c->llc_level = level; c->llc = size; }
    }
    /* The sum of all LLC instances (STREAM's rule: arrays >= 4x this): one per distinct
     * first CPU of shared_cpu_list among online CPUs. */
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    char seen[4096] = {0};
    for (long p = 0; p < ncpu && p < 4096; p++) {
        for (int i = 0; i < 16; i++) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/level", p, i);
            if (read_line(path, buf, sizeof buf)) break;
            if (atoi(buf) != c->llc_level) continue;
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/shared_cpu_list", p, i);
            if (read_line(path, buf, sizeof buf)) continue;
            int owner = first_cpu(buf);
            if (owner >= 0 && owner < 4096 && !seen[owner]) {
                seen[owner] = 1;
                snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/cache/index%d/size", p, i);
                if (!read_line(path, buf, sizeof buf)) c->llc_total += sysfs_size(buf);
            }
        }
    }
    /* no sysfs cache info (some containers): assume a small machine, say so in the header */
    if (!c->l1d) c->l1d = 32768;
    if (!c->l2) c->l2 = c->l1d * 16;
    if (!c->llc) { c->llc = c->l2; c->llc_level = 2; }
    if (!c->llc_total) c->llc_total = c->llc;
}

long mb_page_nodes(const void *buf, size_t len, long counts[], long *unknown)
{
    long psz = sysconf(_SC_PAGESIZE);
    uintptr_t start = (uintptr_t)buf & ~(uintptr_t)(psz - 1);
    long npages = (long)(((uintptr_t)buf + len - start + (size_t)psz - 1) / (size_t)psz);
    enum { CHUNK = 4096 };
    void *pages[CHUNK];
    int status[CHUNK];
    memset(counts, 0, sizeof(long) * MB_MAX_NODES);
    *unknown = 0;
    for (long done = 0; done < npages; done += CHUNK) {
        long n = npages - done < CHUNK ? npages - done : CHUNK;
        for (long i = 0; i < n; i++) pages[i] = (void *)(start + (uintptr_t)(done + i) * (uintptr_t)psz);
        if (syscall(SYS_move_pages, 0, (unsigned long)n, pages, NULL, status, 0) != 0) {
            *unknown += n;
            continue;
        }
        for (long i = 0; i < n; i++) {
            if (status[i] >= 0 && status[i] < MB_MAX_NODES) counts[status[i]]++;
            else (*unknown)++;
        }
    }
    return npages;
}

long mb_huge_kb(const void *buf, size_t len)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    uintptr_t lo = (uintptr_t)buf, hi = lo + len;
    char line[512];
    int inside = 0;
    long kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end, v;
        /* a mapping's first line, "start-end perms ...", starts with a lower-case hex
           digit; its fields ("Size:", "AnonHugePages:", "VmFlags:") with a capital */
        if (isxdigit((unsigned char)line[0]) && !isupper((unsigned char)line[0]) &&
            sscanf(line, "%lx-%lx ", &start, &end) == 2)
            inside = start < hi && end > lo;
        else if (inside && sscanf(line, "AnonHugePages: %lu kB", &v) == 1)
            kb += (long)v;
    }
    fclose(f);
    return kb;
}

int mb_majority_node(const long counts[], long total, double *share)
{
    int best = -1;
    for (int i = 0; i < MB_MAX_NODES; i++)
        if (counts[i] > 0 && (best < 0 || counts[i] > counts[best])) best = i;
    *share = (best >= 0 && total > 0) ? (double)counts[best] / (double)total : 0.0;
    return best;
}

void *mb_alloc(size_t len, int hugepages)
{
    void *p = NULL;
    size_t align = hugepages ? (size_t)2 << 20 : (size_t)sysconf(_SC_PAGESIZE);
    size_t rounded = (len + align - 1) / align * align;
    if (posix_memalign(&p, align, rounded)) mb_die("cannot allocate %zu bytes", len);
    /* THP is commonly "madvise": ask before the first touch, which then maps 2 MiB pages */
    if (hugepages && madvise(p, rounded, MADV_HUGEPAGE) != 0)
        mb_die("madvise(MADV_HUGEPAGE) failed: %s", strerror(errno));
    return p;
}

void mb_locate(const void *buf, size_t len, mb_placement *pl)
{
    long counts[MB_MAX_NODES], unknown;
    mb_where(&pl->cpu, &pl->node);
    pl->pages = mb_page_nodes(buf, len, counts, &unknown);
    pl->huge_kb = mb_huge_kb(buf, len);
    pl->memory_node = mb_majority_node(counts, pl->pages, &pl->share);
    mb_format_nodes(counts, pl->by_node, sizeof pl->by_node);
}

static int size_name(const char *s, const mb_caches *c, size_t *v, const char **end)
{
    static const char *names[] = {"DRAM", "LLC", "L1", "L2"};
    for (int i = 0; i < 4; i++) {
        size_t k = strlen(names[i]);
        if (strncmp(s, names[i], k) || (s[k] && s[k] != ',')) continue;
        *v = i == 0 ? 4 * c->llc_total : i == 1 ? c->llc / 2 : i == 2 ? c->l1d / 2 : c->l2 / 2;
        *end = s + k;
        return 1;
    }
    return 0;
}

int mb_parse_sizes(const char *text, size_t out[], int max, const mb_caches *c)
{
    int n = 0;
    const char *s = text;
    while (*s) {
        size_t named;
        const char *after;
        if (size_name(s, c, &named, &after)) {
            if (n >= max) return -1;
            out[n++] = named;
            s = *after ? after + 1 : after;
            continue;
        }
        char *end;
        double v = strtod(s, &end);
        if (end == s || v <= 0) return -1;
        if (*end == 'K' || *end == 'k') { v *= 1024; end++; }
        else if (*end == 'M' || *end == 'm') { v *= 1048576; end++; }
        else if (*end == 'G' || *end == 'g') { v *= 1073741824.0; end++; }
        if (*end && *end != ',') return -1;
        if (n >= max) return -1;
        out[n++] = (size_t)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

int mb_sweep(size_t lo, size_t hi, int per_octave, size_t unit, size_t out[], int max)
{
    int n = 0;
    for (int k = 0; n < max; k++) {
        double v = (double)lo * pow(2.0, (double)k / per_octave);
        size_t s = ((size_t)(v + 0.5) + unit - 1) / unit * unit;
        if (s > hi) break;
        if (n == 0 || s != out[n - 1]) out[n++] = s;
    }
    return n;
}

void mb_print_header(const char *bench, const mb_caches *c, int hugepages)
{
    char bal[64] = "unknown", thp[128] = "unknown", gov[64] = "unknown";
    read_line("/proc/sys/kernel/numa_balancing", bal, sizeof bal);
    read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
    read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", gov, sizeof gov);
    for (char *p = thp; *p; p++) if (*p == ' ') *p = '_';
    printf("# numaplace %s format %d (key=value fields; see microbench/README.md)\n", bench, MB_FORMAT_VERSION);
    printf("cache: l1d=%zu l2=%zu l3=%zu llc=%zu llc_level=%d llc_total=%zu\n",
           c->l1d, c->l2, c->l3, c->llc, c->llc_level, c->llc_total);
    printf("system: numa_balancing=%s thp=%s governor=%s page_size=%ld hugepages=%s\n",
           bal, thp, gov, sysconf(_SC_PAGESIZE), hugepages ? "madvise" : "off");
}

/* Evict what the caches hold by writing then reading a buffer of `bytes` (the reader
 * calls this, so its own caches hold unrelated data when it starts measuring). */
void mb_flush(size_t bytes)
{
    static volatile char sink;
    char *b = malloc(bytes);
    if (!b) mb_die("cannot allocate the %zu-byte flush buffer", bytes);
    memset(b, 1, bytes);
    char acc = 0;
    for (size_t i = 0; i < bytes; i += MB_LINE) acc ^= b[i];
    sink = acc;
    free(b);
}

void mb_format_nodes(const long counts[], char *out, size_t n)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < MB_MAX_NODES && used + 24 < n; i++)
        if (counts[i] > 0) used += (size_t)snprintf(out + used, n - used, "%s%d:%ld", used ? "," : "", i, counts[i]);
    if (!used) snprintf(out, n, "none");
}
