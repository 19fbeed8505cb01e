/* The sparse matrix-vector product's inner loops, in C for one reason: software prefetch.
 * A matvec streams the whole matrix (8-byte values + 4-byte column indices, ~12 B per
 * entry) from memory, and a single core's hardware prefetcher alone keeps too few
 * lines in flight to reach the core's streaming bandwidth; prefetching ~1 KiB ahead
 * in both streams lifts the sustained rate (tests/benchmarks/bench_vs_official.py).
 * Fortran has no prefetch intrinsic, so the loop lives here and is called through
 * bind(C) from cg_solver. Same arithmetic as before: four partial sums per row, in
 * entry order, combined as (s0 + s1) + (s2 + s3).
 *
 * Indices are Fortran's: rows lo..hi (1-based), rowstr and colidx hold 1-based values.
 */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch((p), 0, 0)
#else
#define PREFETCH(p) ((void)0)
#endif

/* prefetch distance in entries: 1 KiB of values, 1 KiB of column indices */
enum { AHEAD_VALUES = 128, AHEAD_INDICES = 256 };

void cg_rows_times(int lo, int hi, const int *rowstr, const int *colidx,
                   const double *a, const double *v, double *out)
{
    /* shift to 0-based: entry k of Fortran is a[k - 1]; v(c) is v[c - 1] */
    const double *v1 = v - 1;
    for (int j = lo - 1; j < hi; j++) {
        long k = rowstr[j] - 1, last = rowstr[j + 1] - 1;    /* entries k..last-1 */
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (; k + 7 < last; k += 8) {
            PREFETCH(a + k + AHEAD_VALUES);
            PREFETCH(colidx + k + AHEAD_INDICES);
            s0 += a[k] * v1[colidx[k]];
            s1 += a[k + 1] * v1[colidx[k + 1]];
            s2 += a[k + 2] * v1[colidx[k + 2]];
            s3 += a[k + 3] * v1[colidx[k + 3]];
            s0 += a[k + 4] * v1[colidx[k + 4]];
            s1 += a[k + 5] * v1[colidx[k + 5]];
            s2 += a[k + 6] * v1[colidx[k + 6]];
            s3 += a[k + 7] * v1[colidx[k + 7]];
        }
        for (; k + 3 < last; k += 4) {
            s0 += a[k] * v1[colidx[k]];
            s1 += a[k + 1] * v1[colidx[k + 1]];
            s2 += a[k + 2] * v1[colidx[k + 2]];
            s3 += a[k + 3] * v1[colidx[k + 3]];
        }
        for (; k < last; k++)
            s0 += a[k] * v1[colidx[k]];
        out[j] = (s0 + s1) + (s2 + s3);
    }
}
