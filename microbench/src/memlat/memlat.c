/* memlat: load-to-load latency (ns per load) by chasing pointers around one random cycle
 * over the cache lines of a buffer (thesis B3 local / B4 remote).
 *
 * OpenMP thread 0 builds the list (first touch: its pages land on thread 0's node, or
 * where a membind policy says); the threads then chase it one at a time in thread id
 * order: thread 0 = local (B3), others = the reader of memory on another CPU (B4).
 * One pointer per `--stride` bytes (default 64, one cache line); the visiting order is a
 * single random cycle (Sattolo's shuffle), so no prefetcher can guess the next line. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mb_common.h"
#include "mb_options.h"
#include "mb_chase.h"


int main(int argc, char **argv)
{
    mb_common_opts o;
    setvbuf(stdout, NULL, _IOLBF, 0);   /* a killed run keeps every line it printed */
    mb_common_defaults(&o);
    size_t stride = MB_LINE;
    long min_loads = 1000000;    /* enough loads that loop overhead never dominates */
    int per_octave = 4, dump_chain = 0;
    uint64_t seed = 12345;
    for (int i = 1; i < argc; i++) {
        if (mb_common_option(argc, argv, &i, &o)) continue;
        if (!strcmp(argv[i], "--stride") && i + 1 < argc) stride = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--per-octave") && i + 1 < argc) per_octave = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min-loads") && i + 1 < argc) min_loads = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--dump-chain")) dump_chain = 1;
        else {
            fprintf(stderr, "usage: %s [--stride B] [--per-octave N] [--min-loads N] [--seed S] [--dump-chain] "
                    "[options]\n%s", argv[0], mb_common_usage());
            return 2;
        }
    }
    if (per_octave < 1 || per_octave > 32) mb_die("--per-octave %d: 1..32", per_octave);
    mb_chase_options(stride, &min_loads);

    int cpu0, node0;
    mb_where(&cpu0, &node0);
    mb_caches c;
    mb_read_caches(cpu0, &c);
    mb_resolve_sizes(&o, &c);
    if (!o.nsizes) {   /* from well inside L1 to >= 4x all last-level caches */
        size_t lo = c.l1d / 4 < 4096 ? 4096 : c.l1d / 4;
        o.nsizes = mb_sweep(lo, 4 * c.llc_total, per_octave, stride, o.sizes, MB_MAX_SIZES);
        if (o.sizes[o.nsizes - 1] < 4 * c.llc_total && o.nsizes < MB_MAX_SIZES) o.sizes[o.nsizes++] = 4 * c.llc_total;
    }
    int nthreads = omp_get_max_threads();
    mb_print_header("memlat", &c, o.hugepages);
    printf("run: bench=memlat mode=chase threads=%d stride=%zu seed=%llu min_time=%g min_loads=%ld reps=%d "
           "flush=%d per_octave=%d\n", nthreads, stride, (unsigned long long)seed, o.min_time, min_loads, o.reps,
           o.flush, per_octave);
    fflush(stdout);

    int results = 0, verified = 1;
    char *buf = NULL;
    size_t lines = 0;
    mb_placement pl = {.cpu = -1, .node = -1, .memory_node = -1, .huge_kb = -1, .by_node = "none"};

#pragma omp parallel num_threads(nthreads)
    {
        int tid = omp_get_thread_num();
        mb_pin_thread(&o, tid);
        for (int s = 0; s < o.nsizes; s++) {
#pragma omp master
            {
                buf = mb_chain_buffer(o.sizes[s], stride, o.hugepages, seed + (uint64_t)s, &lines, &pl);
                if (dump_chain) {   /* test mode: the chain as it is in memory, line by line */
                    printf("chain: size_bytes=%zu lines=%zu stride=%zu seed=%llu next=", lines * stride, lines,
                           stride, (unsigned long long)(seed + (uint64_t)s));
                    for (size_t i = 0; i < lines; i++)
                        printf("%s%zu", i ? "," : "", (size_t)(*(char **)(buf + i * stride) - buf) / stride);
                    printf("\n");
                }
            }
#pragma omp barrier
            for (int t = 0; t < nthreads && !dump_chain; t++) {
                if (t == tid) {
                    if (o.flush) mb_flush(2 * c.llc_total);
                    /* one untimed lap, so the caches hold what they can of the list */
                    mb_timed_chase(buf, ((long)lines + 15) / 16 * 16);
                    long steps = min_loads;
                    for (int r = 0; r < o.reps; r++) {
                        int cpu, node, after, dummy;
                        mb_where(&cpu, &node);
                        double secs = mb_timed_chase(buf, steps);
                        mb_where(&after, &dummy);
                        if (secs < o.min_time) {   /* too short for the clock: longer, and again */
                            steps = mb_longer(steps, secs, o.min_time);
                            r--;
                            continue;
                        }
                        printf("result: bench=memlat mode=chase size_bytes=%zu stride=%zu lines=%zu threads=%d "
                               "thread=%d reader_cpu=%d reader_node=%d alloc_cpu=%d alloc_node=%d memory_node=%d "
                               "pages=%ld pages_by_node=%s pages_on_memory_node=%.6f huge_kb=%ld rep=%d loads=%ld seconds=%.6f "
                               "migrated=%d value=%.3f unit=ns\n",
                               lines * stride, stride, lines, nthreads, tid, cpu, node, pl.cpu, pl.node,
                               pl.memory_node, pl.pages, pl.by_node, pl.share, pl.huge_kb, r, steps, secs, after != cpu, secs / (double)steps * 1e9);
                        results++;
                    }
                    fflush(stdout);
                }
#pragma omp barrier
            }
#pragma omp master
            {   /* the chain must still be one cycle through every line */
                if (!mb_chain_intact(buf, lines)) verified = 0;
                free(buf);
            }
#pragma omp barrier
        }
    }
    printf("done: bench=memlat results=%d complete=1 verified=%d\n", results, verified);
    return verified ? 0 : 1;
}
