/* stencil: the worked example of "study your own program" (README).
 *
 * A 7-point Jacobi sweep on a periodic n x n x n grid of doubles, OpenMP: every sweep
 * reads one grid and writes the other (two arrays of n^3 doubles: 16 n^3 bytes of working
 * set), so it is bandwidth-bound once the grids outgrow the caches. Pages are
 * first-touched in parallel with the sweep's own schedule, so each thread's planes live
 * where its threads run, as in a well-written OpenMP code.
 *
 * Its report (what the study's patterns read):
 *   time 0.532 s                  the sweeps' seconds (the time pattern)
 *   bandwidth 12.34 GB/s          16 n^3 bytes per sweep over that time (the figure of merit)
 *   Verification = SUCCESSFUL     the grid's sum is conserved (the success pattern)
 * The sweep averages a point with its six neighbours with weights summing to 1 on a
 * periodic grid, so the sum over the grid is the same after every sweep: a wrong index,
 * a race or a lost plane changes it.
 *
 * Usage: stencil [n] [sweeps]      (default 192 20)
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define AT(g, i, j, k) (g)[((size_t)(i) * n + (j)) * n + (k)]

static void sweep(const double *u, double *v, long n)
{
    const double c = 0.4, w = (1.0 - c) / 6.0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        long im = (i + n - 1) % n, ip = (i + 1) % n;
        for (long j = 0; j < n; j++) {
            long jm = (j + n - 1) % n, jp = (j + 1) % n;
            const double *o = &AT(u, i, j, 0), *w1 = &AT(u, im, j, 0), *e = &AT(u, ip, j, 0),
                         *s = &AT(u, i, jm, 0), *nn = &AT(u, i, jp, 0);
            double *out = &AT(v, i, j, 0);
            /* the periodic ends of a row apart, so that its inner points vectorise */
            out[0] = c * o[0] + w * (w1[0] + e[0] + s[0] + nn[0] + o[n - 1] + o[1]);
            for (long k = 1; k < n - 1; k++)
                out[k] = c * o[k] + w * (w1[k] + e[k] + s[k] + nn[k] + o[k - 1] + o[k + 1]);
            out[n - 1] = c * o[n - 1] + w * (w1[n - 1] + e[n - 1] + s[n - 1] + nn[n - 1] + o[n - 2] + o[0]);
        }
    }
}

static double grid_sum(const double *u, long n)
{
    double s = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : s)
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            for (long k = 0; k < n; k++)
                s += AT(u, i, j, k);
    return s;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 192;
    long sweeps = argc > 2 ? atol(argv[2]) : 20;
    if (n < 4 || n > 4096 || sweeps < 1) {
        fprintf(stderr, "usage: stencil [n 4-4096] [sweeps >= 1]\n");
        return 2;
    }
    size_t points = (size_t)n * n * n;
    double *u = malloc(points * sizeof *u), *v = malloc(points * sizeof *v);
    if (!u || !v) {
        fprintf(stderr, "stencil: cannot allocate 2 x %zu doubles\n", points);
        return 1;
    }
    /* first touch with the sweep's schedule: plane i's pages on the node of its thread */
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            for (long k = 0; k < n; k++) {
                AT(u, i, j, k) = sin(0.1 * i) + cos(0.2 * j) + 0.001 * k;
                AT(v, i, j, k) = 0.0;
            }
    double before = grid_sum(u, n);
    double t0 = omp_get_wtime();
    for (long s = 0; s < sweeps; s++) {
        sweep(u, v, n);
        double *t = u; u = v; v = t;
    }
    double seconds = omp_get_wtime() - t0;
    double after = grid_sum(u, n);
    double rel = fabs(after - before) / fmax(fabs(before), 1e-300);
    printf("stencil: 7-point Jacobi, n=%ld, sweeps=%ld, threads=%d\n", n, sweeps, omp_get_max_threads());
    printf("time %.6f s\n", seconds);
    printf("bandwidth %.3f GB/s\n", 16.0 * (double)points * sweeps / seconds / 1e9);
    printf("sum before %.12e after %.12e (relative change %.1e)\n", before, after, rel);
    printf("Verification = %s\n", rel < 1e-9 ? "SUCCESSFUL" : "UNSUCCESSFUL");
    free(u);
    free(v);
    return rel < 1e-9 ? 0 : 1;
}
