/* See mb_options.h. */
#define _GNU_SOURCE
#include "mb_options.h"
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mb_common_defaults(mb_common_opts *o)
{
    memset(o, 0, sizeof *o);
    o->min_time = 0.1;
    o->reps = 5;      /* the thesis ran every configuration 5 times */
}

static const char *value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) mb_die("%s needs a value", argv[*i]);
    return argv[++*i];
}

int mb_common_option(int argc, char **argv, int *i, mb_common_opts *o)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--sizes")) {
        o->sizes_text = value(argc, argv, i);
        mb_caches none = {0};   /* syntax check now, names resolved later */
        none.llc_total = none.llc = none.l1d = none.l2 = 1;
        if (mb_parse_sizes(o->sizes_text, o->sizes, MB_MAX_SIZES, &none) <= 0)
            mb_die("--sizes %s: expected sizes such as 32K,1M,128M or L1,L2,LLC,DRAM", o->sizes_text);
    } else if (!strcmp(a, "--min-time")) {
        o->min_time = atof(value(argc, argv, i));
        if (o->min_time <= 0) mb_die("--min-time must be > 0");
    } else if (!strcmp(a, "--reps")) {
        o->reps = atoi(value(argc, argv, i));
        if (o->reps < 1) mb_die("--reps must be >= 1");
    } else if (!strcmp(a, "--hugepages")) {
        o->hugepages = 1;
    } else if (!strcmp(a, "--flush")) {
        o->flush = 1;
    } else if (!strcmp(a, "--cpus")) {
        const char *v = value(argc, argv, i);
        char *end;
        o->ncpus = 0;
        for (const char *s = v; *s;) {
            long c = strtol(s, &end, 10);
            if (end == s || c < 0 || o->ncpus >= 1024 || (*end && *end != ',')) mb_die("--cpus %s: expected 0,1,2", v);
            o->cpus[o->ncpus++] = (int)c;
            s = *end ? end + 1 : end;
        }
    } else {
        return 0;
    }
    return 1;
}

void mb_resolve_sizes(mb_common_opts *o, const mb_caches *c)
{
    if (o->sizes_text) o->nsizes = mb_parse_sizes(o->sizes_text, o->sizes, MB_MAX_SIZES, c);
}

void mb_pin_thread(const mb_common_opts *o, int tid)
{
    if (!o->ncpus) return;
    if (tid >= o->ncpus) mb_die("--cpus lists %d CPUs for more threads", o->ncpus);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(o->cpus[tid], &set);
    if (sched_setaffinity(0, sizeof set, &set)) mb_die("cannot pin thread %d to CPU %d", tid, o->cpus[tid]);
}

const char *mb_common_usage(void)
{
    return "  --sizes LIST     sizes, e.g. 32K,1M,128M (K/M/G = 2^10/2^20/2^30), or L1,L2,LLC (half the\n"
           "                   cache), DRAM (4x all last-level caches); default from sysfs caches\n"
           "  --reps N         timed regions per size and reader (default 5)\n"
           "  --min-time S     each timed region lasts at least S seconds (default 0.1)\n"
           "  --hugepages      madvise(MADV_HUGEPAGE) the buffer before first touch\n"
           "  --flush          the reader sweeps a 2x last-level-cache buffer before measuring\n"
           "  --cpus LIST      pin OpenMP thread t to the t-th CPU of LIST (else the launcher's binding)\n";
}
