#define _GNU_SOURCE
#include <stdlib.h>
#include "mb_chase.h"
#include "mb_common.h"

void *volatile mb_chase_sink;

/* xorshift64*: small, seedable, good enough to shuffle */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12; *s ^= *s << 25; *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* Sattolo's shuffle: a uniformly random permutation that is one cycle through all n */
static void random_cycle(size_t *next, size_t n, uint64_t seed)
{
    size_t *perm = malloc(n * sizeof *perm);
    if (!perm) mb_die("cannot allocate the permutation for %zu lines", n);
    for (size_t i = 0; i < n; i++) perm[i] = i;
    uint64_t s = seed ? seed : 1;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(rng_next(&s) % i);      /* j < i: this is what makes it one cycle */
        size_t t = perm[i]; perm[i] = perm[j]; perm[j] = t;
    }
    /* the cycle visits perm[0] -> perm[1] -> ... -> perm[n-1] -> perm[0] */
    for (size_t k = 0; k < n; k++) next[perm[k]] = perm[(k + 1) % n];
    free(perm);
}

void mb_build_chain(char *buf, size_t lines, size_t stride, uint64_t seed)
{
    size_t *next = malloc(lines * sizeof *next);
    if (!next) mb_die("cannot allocate %zu line indices", lines);
    random_cycle(next, lines, seed);
    for (size_t i = 0; i < lines; i++) *(void **)(buf + i * stride) = buf + next[i] * stride;
    free(next);
}

void mb_chase_options(size_t stride, long *min_loads)
{
    if (stride < sizeof(void *) || stride % sizeof(void *)) mb_die("--stride %zu: a multiple of %zu", stride, sizeof(void *));
    if (*min_loads < 16) *min_loads = 16;   /* enough loads that loop overhead never dominates */
    *min_loads = (*min_loads + 15) / 16 * 16;
}

char *mb_chain_buffer(size_t size, size_t stride, int hugepages, uint64_t seed, size_t *lines, mb_placement *pl)
{
    *lines = size / stride;
    if (*lines < 2) mb_die("size %zu holds fewer than 2 lines of %zu B", size, stride);
    char *buf = mb_alloc(*lines * stride, hugepages);
    mb_build_chain(buf, *lines, stride, seed);
    mb_locate(buf, *lines * stride, pl);
    return buf;
}

/* noinline so the loop is one piece of code */
__attribute__((noinline)) void *mb_chase(void *p, long steps)
{
    void **q = p;
    for (long i = 0; i < steps; i += 16) {
        q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q;
        q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q; q = *q;
    }
    return q;
}

double mb_timed_chase(void *start, long steps)
{
    double t0 = mb_now();
    mb_chase_sink = mb_chase(start, steps);
    return mb_now() - t0;
}

int mb_chain_intact(char *buf, size_t lines)
{
    char *p = buf;
    size_t k = 0;
    do { p = *(char **)p; k++; } while (p != buf && k <= lines);
    return k == lines;
}

long mb_longer(long steps, double secs, double min_time)
{
    double scale = secs > 0 ? 1.2 * min_time / secs : 100.0;
    return ((long)((double)steps * (scale > 100 ? 100 : scale < 2 ? 2 : scale)) + 15) / 16 * 16;
}
