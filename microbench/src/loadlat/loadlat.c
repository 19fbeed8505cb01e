/* loadlat: loaded latency, the bandwidth-latency curve.
 *
 * OpenMP thread 0 chases pointers around one random cycle (memlat's chain, ns per
 * dependent load) while threads 1..N-1, the loaders, read buffers of their own with
 * membw's scalar loads, pausing `delay` spin iterations after every 512-byte block. One
 * point of the curve per delay: the chaser's latency against the bandwidth the loaders
 * drew during the very same timed region. Delay 0 is the heaviest load; the first point
 * of every size is the idle latency (loaders waiting, no load).
 *
 * Written from the published description of Intel MLC's --loaded_latency (one latency
 * thread, bandwidth-generating threads whose request rate an injected delay throttles),
 * not from MLC's code.
 *
 * Memory: thread 0 writes the chain and, with --load-memory chaser (default), every
 * loader's buffer too, so all of it is on thread 0's node (or where a membind policy puts
 * it): the load falls on the memory under test. --load-memory own: each loader writes its
 * own buffer (first touch on the loader's node): the load falls on the loaders' nodes. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mb_common.h"
#include "mb_options.h"
#include "mb_chase.h"

#define BLOCK_DOUBLES 64               /* 512 B, 8 lines between two pauses */
#define MAX_DELAYS 64
#define MAX_THREADS 1024

/* a loader's byte count, alone on its cache line: the chaser reads it twice per region */
typedef struct { unsigned long bytes; char pad[64 - sizeof(unsigned long)]; } __attribute__((aligned(64))) counter;

static counter counters[MAX_THREADS];
static int state;            /* 0: loaders wait; k > 0: run k, load; -1: this size is done */
static long delay_now;
static int loader_cpu[MAX_THREADS], loader_node[MAX_THREADS];

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* One block: every 8-byte element read through a volatile pointer (membw's kernel), so the
 * loads stay and are scalar; then `delay` iterations of an empty loop the compiler keeps */
__attribute__((noinline)) void loadlat_load_block(const double *a, long delay)
{
    const volatile double *v = a;
    for (int i = 0; i < BLOCK_DOUBLES; i += 8) {
        (void)v[i]; (void)v[i + 1]; (void)v[i + 2]; (void)v[i + 3];
        (void)v[i + 4]; (void)v[i + 5]; (void)v[i + 6]; (void)v[i + 7];
    }
    for (long d = 0; d < delay; d++) __asm__ volatile("" ::: "memory");
}

/* A loader: wait for a run, read its buffer round and round until the run ends */
static void loader(int tid, const double *a, size_t n)
{
    int seen = 0;
    size_t i = 0;
    for (;;) {
        int st;
        while ((st = __atomic_load_n(&state, __ATOMIC_ACQUIRE)) == 0 || st == seen) relax();
        if (st < 0) return;
        seen = st;
        long delay = __atomic_load_n(&delay_now, __ATOMIC_RELAXED);
        mb_where(&loader_cpu[tid], &loader_node[tid]);
        unsigned long bytes = counters[tid].bytes;
        while (__atomic_load_n(&state, __ATOMIC_RELAXED) == st) {
            loadlat_load_block(a + i, delay);
            i = i + 2 * BLOCK_DOUBLES <= n ? i + BLOCK_DOUBLES : 0;
            bytes += BLOCK_DOUBLES * sizeof(double);
            __atomic_store_n(&counters[tid].bytes, bytes, __ATOMIC_RELAXED);
        }
    }
}

/* every loader's byte count now, into snap[]; returns their sum */
static unsigned long load_bytes(int nthreads, unsigned long snap[])
{
    unsigned long sum = 0;
    for (int t = 1; t < nthreads; t++) sum += snap[t] = __atomic_load_n(&counters[t].bytes, __ATOMIC_RELAXED);
    return sum;
}

/* loaders that read something between two snapshots: one that never ran (not scheduled,
 * its CPU taken) leaves a point that is not the load it says */
static int active(int nthreads, const unsigned long before[], const unsigned long after[])
{
    int n = 0;
    for (int t = 1; t < nthreads; t++) n += after[t] > before[t];
    return n;
}

static void fill(double *a, size_t n)
{
    for (size_t i = 0; i < n; i++) a[i] = 1.0;
}

static int parse_delays(const char *text, long out[])
{
    int n = 0;
    const char *s = text;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 100000000L || n >= MAX_DELAYS || (*end && *end != ',')) return -1;
        out[n++] = v;
        s = *end ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    mb_common_opts o;
    setvbuf(stdout, NULL, _IOLBF, 0);   /* a killed run keeps every line it printed */
    mb_common_defaults(&o);
    size_t stride = MB_LINE;
    long min_loads = 1000000;
    uint64_t seed = 12345;
    long delays[MAX_DELAYS];
    const char *delays_text = "0,50,100,200,400,800,1600,3200,6400,12800";
    int own = 0;
    for (int i = 1; i < argc; i++) {
        if (mb_common_option(argc, argv, &i, &o)) continue;
        if (!strcmp(argv[i], "--delays") && i + 1 < argc) delays_text = argv[++i];
        else if (!strcmp(argv[i], "--load-memory") && i + 1 < argc) {
            const char *w = argv[++i];
            if (strcmp(w, "chaser") && strcmp(w, "own")) mb_die("--load-memory %s: chaser or own", w);
            own = !strcmp(w, "own");
        }
        else if (!strcmp(argv[i], "--stride") && i + 1 < argc) stride = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--min-loads") && i + 1 < argc) min_loads = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [--delays D,D,...] [--load-memory chaser|own] [--stride B] [--min-loads N] "
                    "[--seed S] [options]\n%s", argv[0], mb_common_usage());
            return 2;
        }
    }
    int ndelays = parse_delays(delays_text, delays);
    if (ndelays < 1) mb_die("--delays %s: spin counts from 0 to 100000000, separated by commas (at most %d)",
                            delays_text, MAX_DELAYS);
    mb_chase_options(stride, &min_loads);

    int cpu0, node0;
    mb_where(&cpu0, &node0);
    mb_caches c;
    mb_read_caches(cpu0, &c);
    mb_resolve_sizes(&o, &c);
    if (!o.nsizes) o.sizes[o.nsizes++] = 4 * c.llc_total;      /* DRAM: the curve is about memory */
    int nthreads = omp_get_max_threads();
    if (nthreads > MAX_THREADS) mb_die("at most %d threads", MAX_THREADS);
    mb_print_header("loadlat", &c, o.hugepages);
    printf("run: bench=loadlat mode=loaded threads=%d load_threads=%d load_memory=%s delays=%s block_bytes=%d "
           "kernel=load_scalar_volatile_x8 stride=%zu seed=%llu min_time=%g min_loads=%ld reps=%d flush=%d\n",
           nthreads, nthreads - 1, own ? "own" : "chaser", delays_text, (int)(BLOCK_DOUBLES * sizeof(double)), stride,
           (unsigned long long)seed, o.min_time, min_loads, o.reps, o.flush);
    fflush(stdout);

    int results = 0, verified = 1, run = 0;
    char *buf = NULL;
    double *load[MAX_THREADS] = {0};
    size_t lines = 0, load_n = 0;
    mb_placement pl = {.cpu = -1, .node = -1, .memory_node = -1, .huge_kb = -1, .by_node = "none"};
    char load_by_node[512] = "none";

#pragma omp parallel num_threads(nthreads)
    {
        int tid = omp_get_thread_num();
        mb_pin_thread(&o, tid);
        for (int s = 0; s < o.nsizes; s++) {
#pragma omp master
            {
                load_n = o.sizes[s] / sizeof(double) / BLOCK_DOUBLES * BLOCK_DOUBLES;
                if (load_n < 2 * BLOCK_DOUBLES) mb_die("size %zu: a loader's buffer needs at least 1 KiB", o.sizes[s]);
                buf = mb_chain_buffer(o.sizes[s], stride, o.hugepages, seed + (uint64_t)s, &lines, &pl);
                for (int t = 1; t < nthreads && !own; t++) {
                    load[t] = mb_alloc(load_n * sizeof(double), o.hugepages);
                    fill(load[t], load_n);
                }
                __atomic_store_n(&state, 0, __ATOMIC_RELEASE);
            }
#pragma omp barrier
            if (tid > 0 && own) {
                load[tid] = mb_alloc(load_n * sizeof(double), o.hugepages);
                fill(load[tid], load_n);
            }
#pragma omp barrier
#pragma omp master
            {   /* where the loaders' pages are, all buffers together */
                long all[MB_MAX_NODES] = {0};
                for (int t = 1; t < nthreads; t++) {
                    long counts[MB_MAX_NODES], unknown;
                    mb_page_nodes(load[t], load_n * sizeof(double), counts, &unknown);
                    for (int k = 0; k < MB_MAX_NODES; k++) all[k] += counts[k];
                }
                mb_format_nodes(all, load_by_node, sizeof load_by_node);
            }
#pragma omp barrier
            if (tid > 0) {
                loader(tid, load[tid], load_n);
            } else {
                if (o.flush) mb_flush(2 * c.llc_total);
                mb_timed_chase(buf, ((long)lines + 15) / 16 * 16);   /* one untimed lap */
                long steps = min_loads;
                /* -1: the idle point; with no loader (1 thread) that is all there is */
                for (int p = -1; p < (nthreads > 1 ? ndelays : 0); p++) {
                    if (p >= 0) {
                        __atomic_store_n(&delay_now, delays[p], __ATOMIC_RELAXED);
                        for (int t = 1; t < nthreads; t++) loader_cpu[t] = loader_node[t] = -1;   /* until it starts */
                        __atomic_store_n(&state, ++run, __ATOMIC_RELEASE);
                        mb_timed_chase(buf, steps);                 /* untimed: the loaders ramp up */
                    }
                    char cpus[8192], nodes[8192];
                    for (int r = 0; r < o.reps; r++) {
                        int cpu, node, after, dummy;
                        mb_where(&cpu, &node);
                        unsigned long snap0[MAX_THREADS], snap1[MAX_THREADS];
                        unsigned long b0 = load_bytes(nthreads, snap0);
                        double secs = mb_timed_chase(buf, steps);
                        unsigned long b1 = load_bytes(nthreads, snap1);
                        mb_where(&after, &dummy);
                        if (secs < o.min_time) {   /* too short for the clock: longer, and again */
                            steps = mb_longer(steps, secs, o.min_time);
                            r--;
                            continue;
                        }
                        {   /* every thread's CPU and node, loaders as they started; per repetition,
                               so a loader not yet started (-1) is one whose repetition lacks its load */
                            size_t lc = 0, ln = 0;
                            cpus[0] = nodes[0] = '\0';
                            for (int t = 0; t < nthreads; t++) {
                                int tc = t ? (p >= 0 ? loader_cpu[t] : -1) : cpu, tn = t ? (p >= 0 ? loader_node[t] : -1) : node;
                                lc += (size_t)snprintf(cpus + lc, sizeof cpus - lc, "%s%d", t ? "," : "", tc);
                                ln += (size_t)snprintf(nodes + ln, sizeof nodes - ln, "%s%d", t ? "," : "", tn);
                                if (lc >= sizeof cpus || ln >= sizeof nodes) break;
                            }
                        }
                        printf("result: bench=loadlat mode=loaded size_bytes=%zu stride=%zu lines=%zu threads=%d "
                               "thread=0 reader_cpu=%d reader_node=%d alloc_cpu=%d alloc_node=%d memory_node=%d "
                               "pages=%ld pages_by_node=%s pages_on_memory_node=%.6f huge_kb=%ld rep=%d loads=%ld "
                               "seconds=%.6f migrated=%d delay=%ld load_threads=%d load_active=%d load_memory=%s "
                               "load_pages_by_node=%s load_bytes=%lu load_mbps=%.2f value=%.3f unit=ns "
                               "thread_cpus=%s thread_nodes=%s\n",
                               lines * stride, stride, lines, nthreads, cpu, node, pl.cpu, pl.node,
                               pl.memory_node, pl.pages, pl.by_node, pl.share, pl.huge_kb, r, steps, secs, after != cpu,
                               p < 0 ? -1L : delays[p], p < 0 ? 0 : nthreads - 1, active(nthreads, snap0, snap1),
                               own ? "own" : "chaser",
                               load_by_node, b1 - b0, (double)(b1 - b0) / secs / 1e6, secs / (double)steps * 1e9,
                               cpus, nodes);
                        results++;
                    }
                    __atomic_store_n(&state, 0, __ATOMIC_RELEASE);   /* the loaders wait again */
                    fflush(stdout);
                }
                __atomic_store_n(&state, -1, __ATOMIC_RELEASE);      /* this size is done */
            }
#pragma omp barrier
#pragma omp master
            {   /* the chain must still be one cycle, every loader buffer still all 1.0 */
                if (!mb_chain_intact(buf, lines)) verified = 0;
                free(buf);
                for (int t = 1; t < nthreads; t++) {
                    double sum = 0;
                    for (size_t i = 0; i < load_n; i++) sum += load[t][i];
                    if (sum != (double)load_n) verified = 0;
                    free(load[t]);
                    load[t] = NULL;
                }
            }
#pragma omp barrier
        }
    }
    printf("done: bench=loadlat results=%d complete=1 verified=%d\n", results, verified);
    return verified ? 0 : 1;
}
