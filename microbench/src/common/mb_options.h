/* Command-line options both benchmarks take, and self-pinning of OpenMP threads. */
#ifndef MB_OPTIONS_H
#define MB_OPTIONS_H
#include <stddef.h>
#include "mb_common.h"

typedef struct {
    size_t sizes[MB_MAX_SIZES];
    int nsizes;            /* 0 = the benchmark's sysfs default */
    const char *sizes_text; /* --sizes as given, resolved by mb_resolve_sizes */
    double min_time;       /* each timed region lasts at least this (s) */
    int reps;              /* timed regions per (size, reader) */
    int hugepages;         /* madvise(MADV_HUGEPAGE) before first touch */
    int flush;             /* the reader sweeps a 2x-LLC buffer before it measures */
    int cpus[1024];        /* --cpus: thread t pins itself to cpus[t] */
    int ncpus;
} mb_common_opts;

/* Consumes a common option at argv[*i] (advancing *i past its value); 1 if it was one. */
int mb_common_option(int argc, char **argv, int *i, mb_common_opts *o);
void mb_common_defaults(mb_common_opts *o);
/* --sizes into o->sizes once the caches are known (names such as DRAM need them) */
void mb_resolve_sizes(mb_common_opts *o, const mb_caches *c);
/* Pin the calling OpenMP thread to cpus[tid] when --cpus was given. */
void mb_pin_thread(const mb_common_opts *o, int tid);
const char *mb_common_usage(void);
#endif
