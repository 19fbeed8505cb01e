/* membw: read bandwidth (MB/s, MB = 10^6 B) of an array first-touched by OpenMP thread 0.
 *
 *   serial mode   (thesis B1): the threads read the whole array one at a time, in thread
 *                 id order; thread 0 on the allocating CPU = local, others = remote.
 *   parallel mode (thesis B2): all threads read at once, each its 1/N slice (or, with
 *                 --share whole, the whole array); per-thread MB/s under contention.
 *
 * Placement is the launcher's (taskset/numactl/OMP_PLACES) or --cpus. The kernel reads
 * every 8-byte element through a volatile pointer, so the compiler keeps each load and
 * does not vectorise (scalar loads, as likwid-bench's `load`). */
#define _GNU_SOURCE
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mb_common.h"
#include "mb_options.h"

#define KERNEL_NAME "load_scalar_volatile_x8"

/* One pass over n doubles; noinline and named so tests can find its loads in the binary. */
__attribute__((noinline)) void membw_load_kernel(const double *a, size_t n)
{
    const volatile double *v = a;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        (void)v[i]; (void)v[i + 1]; (void)v[i + 2]; (void)v[i + 3];
        (void)v[i + 4]; (void)v[i + 5]; (void)v[i + 6]; (void)v[i + 7];
    }
    for (; i < n; i++) (void)v[i];
}

static double timed_passes(const double *a, size_t n, long passes)
{
    double t0 = mb_now();
    for (long p = 0; p < passes; p++) membw_load_kernel(a, n);
    return mb_now() - t0;
}

/* passes so that one timed region lasts >= min_time (with 20% margin) */
static long calibrate(const double *a, size_t n, double min_time)
{
    long passes = 1;
    for (;;) {
        double t = timed_passes(a, n, passes);
        if (t >= min_time) return passes;
        double scale = t > 0 ? 1.2 * min_time / t : 100.0;
        passes = (long)((double)passes * (scale > 100.0 ? 100.0 : scale < 2.0 ? 2.0 : scale));
    }
}

typedef mb_placement placement;      /* of the array, thread 0 its first toucher */

static void print_result(const char *mode, size_t size, int threads, int thread, int cpu, int node,
                         int cpu_after, const placement *pl, int rep, long passes, size_t bytes, double secs)
{
    printf("result: bench=membw mode=%s size_bytes=%zu threads=%d thread=%d reader_cpu=%d reader_node=%d "
           "alloc_cpu=%d alloc_node=%d memory_node=%d pages=%ld pages_by_node=%s pages_on_memory_node=%.6f huge_kb=%ld rep=%d "
           "passes=%ld bytes=%zu seconds=%.6f migrated=%d value=%.2f unit=MB/s\n",
           mode, size, threads, thread, cpu, node, pl->cpu, pl->node, pl->memory_node, pl->pages, pl->by_node, pl->share,
           pl->huge_kb, rep, passes, bytes * (size_t)passes, secs, cpu_after != cpu, (double)bytes * (double)passes / secs / 1e6);
}

int main(int argc, char **argv)
{
    mb_common_opts o;
    setvbuf(stdout, NULL, _IOLBF, 0);   /* a killed run keeps every line it printed */
    mb_common_defaults(&o);
    const char *mode = "serial", *share = "slice";
    for (int i = 1; i < argc; i++) {
        if (mb_common_option(argc, argv, &i, &o)) continue;
        if (!strcmp(argv[i], "--mode") && i + 1 < argc) mode = argv[++i];
        else if (!strcmp(argv[i], "--share") && i + 1 < argc) share = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--mode serial|parallel] [--share slice|whole] [options]\n%s",
                    argv[0], mb_common_usage());
            return 2;
        }
    }
    if (strcmp(mode, "serial") && strcmp(mode, "parallel")) mb_die("--mode %s: serial or parallel", mode);
    if (strcmp(share, "slice") && strcmp(share, "whole")) mb_die("--share %s: slice or whole", share);
    int parallel = !strcmp(mode, "parallel");

    int cpu0, node0;
    mb_where(&cpu0, &node0);
    mb_caches c;
    mb_read_caches(cpu0, &c);
    mb_resolve_sizes(&o, &c);
    if (!o.nsizes) {   /* L1-, L2-, LLC-resident, and DRAM (4x all LLCs, STREAM's rule) */
        size_t d[] = {c.l1d / 2, c.l2 / 2, c.llc / 2, 4 * c.llc_total};
        memcpy(o.sizes, d, sizeof d);
        o.nsizes = 4;
    }
    int nthreads = omp_get_max_threads();
    mb_print_header("membw", &c, o.hugepages);
    printf("run: bench=membw mode=%s share=%s threads=%d kernel=%s min_time=%g reps=%d flush=%d\n",
           mode, parallel ? share : "whole", nthreads, KERNEL_NAME, o.min_time, o.reps, o.flush);
    fflush(stdout);

    int results = 0, verified = 1, again = 0;
    double *a = NULL;
    placement pl;
    long *passes_of = calloc((size_t)nthreads, sizeof(long));
    double *secs_of = calloc((size_t)nthreads, sizeof(double));
    int *cpu_of = calloc((size_t)nthreads, sizeof(int)), *node_of = calloc((size_t)nthreads, sizeof(int));
    int *after_of = calloc((size_t)nthreads, sizeof(int));

#pragma omp parallel num_threads(nthreads)
    {
        int tid = omp_get_thread_num();
        mb_pin_thread(&o, tid);
        for (int s = 0; s < o.nsizes; s++) {
            size_t n = o.sizes[s] / sizeof(double);
#pragma omp master
            {   /* first touch: thread 0 alone writes every element */
                a = mb_alloc(n * sizeof(double), o.hugepages);
                for (size_t i = 0; i < n; i++) a[i] = (double)(i & 1023);
                mb_locate(a, n * sizeof(double), &pl);
            }
#pragma omp barrier
            if (!parallel) {
                for (int t = 0; t < nthreads; t++) {
                    if (t == tid) {
                        if (o.flush) mb_flush(2 * c.llc_total);
                        long passes = calibrate(a, n, o.min_time);
                        for (int r = 0; r < o.reps; r++) {
                            int cpu, node, after, dummy;
                            mb_where(&cpu, &node);
                            double secs = timed_passes(a, n, passes);
                            mb_where(&after, &dummy);
                            if (secs < o.min_time) { passes *= 2; r--; continue; }
                            print_result(mode, n * sizeof(double), nthreads, tid, cpu, node, after, &pl, r,
                                         passes, n * sizeof(double), secs);
                            results++;
                        }
                        fflush(stdout);
                    }
#pragma omp barrier
                }
            } else {
                size_t lo = 0, hi = n;
                if (!strcmp(share, "slice")) {
                    lo = n * (size_t)tid / (size_t)nthreads;
                    hi = n * (size_t)(tid + 1) / (size_t)nthreads;
                }
                if (o.flush) mb_flush(2 * c.llc_total);
                /* the slowest thread sets the pass count, so every region is long enough */
                passes_of[tid] = calibrate(a + lo, hi - lo, o.min_time);
#pragma omp barrier
#pragma omp master
                {
                    long m = 0;
                    for (int t = 0; t < nthreads; t++) if (passes_of[t] > m) m = passes_of[t];
                    for (int t = 0; t < nthreads; t++) passes_of[t] = m;
                }
#pragma omp barrier
                for (int r = 0; r < o.reps; r++) {
                    int dummy;
                    mb_where(&cpu_of[tid], &node_of[tid]);
#pragma omp barrier
                    secs_of[tid] = timed_passes(a + lo, hi - lo, passes_of[tid]);
                    mb_where(&after_of[tid], &dummy);
#pragma omp barrier
#pragma omp master
                    {
                        again = 0;
                        for (int t = 0; t < nthreads; t++) if (secs_of[t] < o.min_time) again = 1;
                        if (again) {
                            for (int t = 0; t < nthreads; t++) passes_of[t] *= 2;
                        } else {
                            for (int t = 0; t < nthreads; t++) {
                                size_t tlo = !strcmp(share, "slice") ? n * (size_t)t / (size_t)nthreads : 0;
                                size_t thi = !strcmp(share, "slice") ? n * (size_t)(t + 1) / (size_t)nthreads : n;
                                print_result(mode, n * sizeof(double), nthreads, t, cpu_of[t], node_of[t],
                                             after_of[t], &pl, r, passes_of[t], (thi - tlo) * sizeof(double),
                                             secs_of[t]);
                                results++;
                            }
                            fflush(stdout);
                        }
                    }
#pragma omp barrier
                    int repeat = again;   /* a region too short does not count: measure again */
#pragma omp barrier
                    if (repeat) r--;
                }
            }
#pragma omp master
            {   /* the array must still hold what was written: the loads read real data */
                double sum = 0, want = 0;
                for (size_t i = 0; i < n; i++) { sum += a[i]; want += (double)(i & 1023); }
                if (sum != want) verified = 0;
                free(a);
            }
#pragma omp barrier
        }
    }
    printf("done: bench=membw results=%d complete=1 verified=%d\n", results, verified);
    return verified ? 0 : 1;
}
