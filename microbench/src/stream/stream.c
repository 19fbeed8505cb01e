/* stream: sustained memory bandwidth (MB/s, MB = 10^6 B) of McCalpin's four STREAM
 * kernels, written here from STREAM's published definition (no code from STREAM or
 * likwid):
 *
 *   copy   c[i] = a[i]             counted 2 x 8 x N bytes (one read, one write)
 *   scale  b[i] = q * c[i]         counted 2 x 8 x N
 *   add    c[i] = a[i] + b[i]      counted 3 x 8 x N
 *   triad  a[i] = b[i] + q * c[i]  counted 3 x 8 x N
 *
 * on three arrays a, b, c of N doubles (q = 3). Bytes are counted as STREAM counts them:
 * what the kernel names, not the write-allocate reads the hardware adds for each stored
 * line. Unlike membw and memlat, this one writes.
 *
 * All OpenMP threads run every kernel at once, thread t on the t-th of nthreads equal
 * contiguous slices (a static schedule), the same slices with which they first touched
 * the arrays, so each thread's pages are on its own node (STREAM's way); `--init serial`
 * has thread 0 write all three arrays instead (its node holds every page). One timed
 * region = `passes` executions of one kernel between two barriers; every region lasts at
 * least --min-time (a shorter one is not reported: the passes double and it is measured
 * again). Each repetition runs the selected kernels in STREAM's order (copy, scale, add,
 * triad), one region each. Every kernel rewrites its output from inputs it does not
 * write, so running it again gives the same values: the passes change the time, not the
 * data. After the repetitions the three arrays are checked against the same sequence of
 * kernels replayed on three scalars (STREAM's checkSTREAMresults, in spirit).
 *
 * The kernels are plain loops with ordinary (write-allocating) stores, unrolled by four,
 * compiled as the compiler likes (vectorised or not); the copy loop is kept from being
 * turned into a call to memcpy, whose large-size path would use non-temporal stores and
 * measure something else than the other three kernels. */
#define _GNU_SOURCE
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mb_common.h"
#include "mb_options.h"

#define KERNEL_NAME "c_loops_static_slices"
#define SCALAR 3.0
#define MAX_REPS 200       /* a full repetition multiplies a by 15: 15^200 stays finite */
#define EPSILON 1e-13      /* mean relative error allowed per array (STREAM's for doubles) */
/* The layout of the three arrays in their one block: each starts an odd number of pages
 * plus ARRAY_SHIFT bytes after the one before, so no two are a power of two apart nor a
 * whole number of pages apart (a[i], b[i], c[i] never at the same offset in their pages).
 * Measured on an AMD EPYC (family 25) guest at N = 2^24, 1 thread: with the arrays
 * exactly 2^27 B apart copy ran at about half of scale and of likwid-bench's copy; an
 * odd number of whole pages apart, all four kernels at about half twice running; with
 * this layout as fast as at N not a power of two. (STREAM's OFFSET is for the same.) */
#define ARRAY_SHIFT 128

enum { COPY, SCALE, ADD, TRIAD, NOPS };
static const char *const op_name[NOPS] = {"copy", "scale", "add", "triad"};
static const int op_arrays[NOPS] = {2, 2, 3, 3};   /* arrays named per element */

/* Keep the copy loop a loop of loads and stores, not a libc memcpy call. */
#if defined(__clang__)
#define KERNEL_ATTR __attribute__((noinline, no_builtin("memcpy", "memmove", "memset")))
#elif defined(__GNUC__)
#define KERNEL_ATTR __attribute__((noinline, optimize("no-tree-loop-distribute-patterns")))
#else
#define KERNEL_ATTR
#endif

/* Four elements per loop step (likwid-bench's kernels have the same stride): one element
 * per step costs a compare and a branch per load and store, which bounds copy and scale
 * to one element per cycle when the arrays are in a cache (measured here at 24 MiB of
 * arrays: copy at half of likwid-bench's copy without it, the same with it; at DRAM
 * sizes no difference). GCC and clang read this pragma; other compilers may ignore it. */
#define UNROLL _Pragma("GCC unroll 4")

/* The kernels, on elements [lo, hi); noinline and named so tests can read their code. */
KERNEL_ATTR void stream_copy(double *restrict c, const double *restrict a, size_t lo, size_t hi)
{
    UNROLL for (size_t i = lo; i < hi; i++) c[i] = a[i];
}

KERNEL_ATTR void stream_scale(double *restrict b, const double *restrict c, double q, size_t lo, size_t hi)
{
    UNROLL for (size_t i = lo; i < hi; i++) b[i] = q * c[i];
}

KERNEL_ATTR void stream_add(double *restrict c, const double *restrict a, const double *restrict b,
                            size_t lo, size_t hi)
{
    UNROLL for (size_t i = lo; i < hi; i++) c[i] = a[i] + b[i];
}

KERNEL_ATTR void stream_triad(double *restrict a, const double *restrict b, const double *restrict c,
                              double q, size_t lo, size_t hi)
{
#ifdef STREAM_BREAK_TRIAD
    /* TEST ONLY (tests/test_stream.py builds with -DSTREAM_BREAK_TRIAD): a wrong triad,
     * which the verification must catch. Never define it for a measurement. */
    UNROLL for (size_t i = lo; i < hi; i++) a[i] = b[i] + q * c[i] + 1.0;
#else
    UNROLL for (size_t i = lo; i < hi; i++) a[i] = b[i] + q * c[i];
#endif
}

/* Thread t's slice of n elements: the same for the first touch and every kernel. */
static void slice(size_t n, int t, int nthreads, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)t / (size_t)nthreads;
    *hi = n * (size_t)(t + 1) / (size_t)nthreads;
}

/* shared by the threads; written by the master between barriers */
static double *a, *b, *c;
static void *block;                  /* holds a, then b, then c */
static double t_start, t_end;
static int *cpu_before, *node_before, *cpu_after;
static double sim_a, sim_b, sim_c;   /* the values every element should hold */

static void run_kernel(int op, size_t lo, size_t hi)
{
    switch (op) {
    case COPY: stream_copy(c, a, lo, hi); break;
    case SCALE: stream_scale(b, c, SCALAR, lo, hi); break;
    case ADD: stream_add(c, a, b, lo, hi); break;
    case TRIAD: stream_triad(a, b, c, SCALAR, lo, hi); break;
    }
}

/* the same kernel on the three scalars (what checkSTREAMresults replays) */
static void replay(int op, long passes)
{
    for (long p = 0; p < passes; p++) {
        switch (op) {
        case COPY: sim_c = sim_a; break;
        case SCALE: sim_b = SCALAR * sim_c; break;
        case ADD: sim_c = sim_a + sim_b; break;
        case TRIAD: sim_a = sim_b + SCALAR * sim_c; break;
        }
    }
}

/* One timed region, called by every thread: `passes` runs of kernel `op` on the caller's
 * slice, timed from the barrier before the first pass to the barrier after the last (a
 * pass needs no barrier: no thread reads another's slice). Returns the region's wall
 * time, the same value in every thread. */
static double region(int op, long passes, size_t lo, size_t hi)
{
    int tid = omp_get_thread_num(), dummy;
    /* the master may still be printing the previous region's cpu_before/after */
#pragma omp barrier
    mb_where(&cpu_before[tid], &node_before[tid]);
#pragma omp master
    t_start = mb_now();
#pragma omp barrier
    for (long p = 0; p < passes; p++) run_kernel(op, lo, hi);
#pragma omp barrier
#pragma omp master
    {
        t_end = mb_now();
        replay(op, passes);
    }
    mb_where(&cpu_after[tid], &dummy);
#pragma omp barrier
    /* nothing read here or printed after is written again before the next region's
       first barrier, which the master reaches only when it is done with them */
    return t_end - t_start;
}

/* passes so that one region lasts >= min_time (with 20% margin); every thread computes
 * the same count from the same times */
static long calibrate(int op, double min_time, size_t lo, size_t hi)
{
    long passes = 1;
    for (;;) {
        double t = region(op, passes, lo, hi);
        if (t >= min_time) return passes;
        double scale = t > 0 ? 1.2 * min_time / t : 100.0;
        passes = (long)((double)passes * (scale > 100.0 ? 100.0 : scale < 2.0 ? 2.0 : scale));
    }
}

/* Mean relative error of an array against the value all its elements should hold. */
static double array_error(const double *x, size_t n, double want)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += fabs(x[i] - want);
    double scale = fabs(want) > 0 ? fabs(want) : 1.0;
    return n ? sum / (double)n / scale : 0.0;
}

typedef mb_placement placement;      /* of the three arrays together (summed here) */

static void list_ints(const int *v, int n, char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n && used + 16 < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%d", i ? "," : "", v[i]);
}

static int parse_ops(const char *text, int sel[NOPS])
{
    memset(sel, 0, sizeof(int) * NOPS);
    int any = 0;
    const char *s = text;
    while (*s) {
        size_t k = strcspn(s, ",");
        int found = 0;
        for (int op = 0; op < NOPS; op++)
            if (strlen(op_name[op]) == k && !strncmp(s, op_name[op], k)) { sel[op] = found = any = 1; }
        if (!found) return 0;
        s += k;
        if (*s == ',') s++;
    }
    return any;
}

int main(int argc, char **argv)
{
    mb_common_opts o;
    setvbuf(stdout, NULL, _IOLBF, 0);   /* a killed run keeps every line it printed */
    mb_common_defaults(&o);
    const char *init = "parallel", *ops_text = "copy,scale,add,triad";
    int sel[NOPS];
    for (int i = 1; i < argc; i++) {
        if (mb_common_option(argc, argv, &i, &o)) continue;
        if (!strcmp(argv[i], "--init") && i + 1 < argc) init = argv[++i];
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc) ops_text = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--init parallel|serial] [--ops copy,scale,add,triad] [options]\n%s"
                    "  (--sizes: total bytes of the three arrays; default DRAM)\n", argv[0], mb_common_usage());
            return 2;
        }
    }
    if (strcmp(init, "parallel") && strcmp(init, "serial")) mb_die("--init %s: parallel or serial", init);
    if (!parse_ops(ops_text, sel)) mb_die("--ops %s: a list of copy,scale,add,triad", ops_text);
    if (o.reps > MAX_REPS) mb_die("--reps %d: at most %d (a repetition multiplies the values by 15)", o.reps, MAX_REPS);
    int serial_init = !strcmp(init, "serial");
    char ops_list[64] = "";
    for (int op = 0; op < NOPS; op++)
        if (sel[op]) snprintf(ops_list + strlen(ops_list), sizeof ops_list - strlen(ops_list), "%s%s",
                              ops_list[0] ? "," : "", op_name[op]);

    int cpu0, node0;
    mb_where(&cpu0, &node0);
    mb_caches cache;
    mb_read_caches(cpu0, &cache);
    mb_resolve_sizes(&o, &cache);
    if (!o.nsizes) {   /* DRAM: the three arrays together are 4x all last-level caches */
        o.sizes[0] = 4 * cache.llc_total;
        o.nsizes = 1;
    }
    for (int s = 0; s < o.nsizes; s++)
        if (o.sizes[s] < 3 * sizeof(double))
            mb_die("--sizes: %zu bytes is less than one element of each of the three arrays", o.sizes[s]);
    int nthreads = omp_get_max_threads();
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    mb_print_header("stream", &cache, o.hugepages);
    printf("run: bench=stream mode=parallel init=%s threads=%d ops=%s kernel=%s scalar=%g min_time=%g reps=%d "
           "flush=%d\n", init, nthreads, ops_list, KERNEL_NAME, SCALAR, o.min_time, o.reps, o.flush);
    fflush(stdout);

    int results = 0, verified = 1;
    placement pl;
    cpu_before = calloc((size_t)nthreads, sizeof(int));
    node_before = calloc((size_t)nthreads, sizeof(int));
    cpu_after = calloc((size_t)nthreads, sizeof(int));
    double (*secs_of)[NOPS] = calloc((size_t)o.reps, sizeof *secs_of);
    long (*passes_of)[NOPS] = calloc((size_t)o.reps, sizeof *passes_of);

#pragma omp parallel num_threads(nthreads)
    {
        int tid = omp_get_thread_num();
        mb_pin_thread(&o, tid);
        for (int s = 0; s < o.nsizes; s++) {
            size_t n = o.sizes[s] / (3 * sizeof(double)), lo, hi;
            size_t size = 3 * n * sizeof(double), len = n * sizeof(double);
            size_t pages = (len + page - 1) / page;
            size_t stride = (pages + (pages % 2 ? 2 : 1)) * page;   /* an odd number of pages */
            slice(n, tid, nthreads, &lo, &hi);
#pragma omp master
            {   /* one block (STREAM's arrays are contiguous too), the arrays apart by an odd
                   number of pages plus ARRAY_SHIFT: never a power of two apart, nor a multiple
                   of 4 KiB (see ARRAY_SHIFT) */
                block = mb_alloc(3 * stride + 2 * ARRAY_SHIFT, o.hugepages);
                a = block;
                b = (double *)((char *)block + stride + ARRAY_SHIFT);
                c = (double *)((char *)block + 2 * stride + 2 * ARRAY_SHIFT);
                mb_where(&pl.cpu, &pl.node);
                if (serial_init)   /* thread 0 writes everything: its node gets every page */
                    for (size_t i = 0; i < n; i++) { a[i] = 1.0; b[i] = 2.0; c[i] = 0.0; }
            }
#pragma omp barrier
            if (!serial_init)      /* each thread writes its own slice first: its pages are local */
                for (size_t i = lo; i < hi; i++) { a[i] = 1.0; b[i] = 2.0; c[i] = 0.0; }
#pragma omp barrier
#pragma omp master
            {   /* where the pages of all three arrays are, right after the first touch (not
                   the untouched pages between them) */
                long counts[MB_MAX_NODES], sum[MB_MAX_NODES] = {0}, unknown;
                double *arrays[3] = {a, b, c};
                pl.pages = 0;
                for (int k = 0; k < 3; k++) {
                    pl.pages += mb_page_nodes(arrays[k], len, counts, &unknown);
                    for (int nd = 0; nd < MB_MAX_NODES; nd++) sum[nd] += counts[nd];
                }
                pl.huge_kb = mb_huge_kb(block, 3 * stride + 2 * ARRAY_SHIFT);
                pl.memory_node = mb_majority_node(sum, pl.pages, &pl.share);
                mb_format_nodes(sum, pl.by_node, sizeof pl.by_node);
                sim_a = 1.0; sim_b = 2.0; sim_c = 0.0;
                if (o.flush) mb_flush(2 * cache.llc_total);
            }
#pragma omp barrier
            long passes[NOPS] = {0};
            for (int op = 0; op < NOPS; op++)
                if (sel[op]) passes[op] = calibrate(op, o.min_time, lo, hi);
            for (int r = 0; r < o.reps; r++) {
                for (int op = 0; op < NOPS; op++) {
                    if (!sel[op]) continue;
                    double secs = region(op, passes[op], lo, hi);
                    if (secs < o.min_time) {   /* too short to count: twice the passes, again */
                        passes[op] *= 2;
                        op--;
                        continue;
                    }
#pragma omp master
                    {
                        int migrated = 0;
                        for (int t = 0; t < nthreads; t++) migrated |= cpu_after[t] != cpu_before[t];
                        char cpus[4096], nodes[4096];
                        list_ints(cpu_before, nthreads, cpus, sizeof cpus);
                        list_ints(node_before, nthreads, nodes, sizeof nodes);
                        size_t bytes = (size_t)op_arrays[op] * len * (size_t)passes[op];
                        printf("result: bench=stream op=%s mode=parallel init=%s size_bytes=%zu elements=%zu "
                               "threads=%d thread=0 reader_cpu=%d reader_node=%d alloc_cpu=%d alloc_node=%d "
                               "memory_node=%d pages=%ld pages_by_node=%s pages_on_memory_node=%.6f huge_kb=%ld "
                               "rep=%d passes=%ld bytes=%zu seconds=%.6f migrated=%d value=%.2f unit=MB/s "
                               "thread_cpus=%s thread_nodes=%s\n",
                               op_name[op], init, size, n, nthreads, cpu_before[0], node_before[0], pl.cpu,
                               pl.node, pl.memory_node, pl.pages, pl.by_node, pl.share, pl.huge_kb, r, passes[op],
                               bytes, secs, migrated, (double)bytes / secs / 1e6, cpus, nodes);
                        secs_of[r][op] = secs;
                        passes_of[r][op] = passes[op];
                        results++;
                    }
                }
            }
#pragma omp master
            {   /* per kernel: the best repetition (least time per pass) and the spread */
                for (int op = 0; op < NOPS; op++) {
                    if (!sel[op]) continue;
                    double best = 0, sum = 0, worst = 0;
                    int best_rep = 0;
                    for (int r = 0; r < o.reps; r++) {
                        double t = secs_of[r][op] / (double)passes_of[r][op];
                        if (r == 0 || t < best) { best = t; best_rep = r; }
                        if (t > worst) worst = t;
                        sum += t;
                    }
                    size_t bytes = (size_t)op_arrays[op] * len;
                    printf("best: bench=stream op=%s size_bytes=%zu threads=%d reps=%d rep=%d bytes_per_pass=%zu "
                           "min_pass_seconds=%.9f avg_pass_seconds=%.9f max_pass_seconds=%.9f value=%.2f "
                           "unit=MB/s\n", op_name[op], size, nthreads, o.reps, best_rep, bytes, best,
                           sum / o.reps, worst, (double)bytes / best / 1e6);
                }
                /* every element of each array must hold the value the scalars reached */
                double ea = array_error(a, n, sim_a), eb = array_error(b, n, sim_b), ec = array_error(c, n, sim_c);
                int ok = ea <= EPSILON && eb <= EPSILON && ec <= EPSILON;
                if (!ok) {
                    verified = 0;
                    fprintf(stderr, "stream: verification failed at %zu bytes: mean relative error a %.3g, "
                            "b %.3g, c %.3g (expected a=%g b=%g c=%g)\n", size, ea, eb, ec, sim_a, sim_b, sim_c);
                }
                free(block);
                fflush(stdout);
            }
#pragma omp barrier
        }
    }
    printf("done: bench=stream results=%d complete=1 verified=%d\n", results, verified);
    return verified ? 0 : 1;
}
