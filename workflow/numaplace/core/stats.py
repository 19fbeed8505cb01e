"""The statistics of the tables: per-placement summaries of NPB time with a distribution-free
interval of the median, the Mann-Whitney U test between two placements (scipy's), how many
repetitions would tell two placements apart, and the cost of the wrong choice at the
resolution NPB measured with. One place for all of them (aggregate applies them to the
records). Rank statistics throughout: repetitions interleaved over a study's time see
drift and the odd slow run, which a mean and a t-test would take at face value."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd


def _scipy_stats():
    """scipy.stats, imported where a statistic needs it: 0.9 s of import that a report of
    single runs (the quick study) never needs."""
    from scipy import stats
    return stats

EXACT_MWU_MAX = 20_000           # splits enumerated for an exact p-value with ties (8 vs 8: 12,870)
ALPHA = 0.05                     # "beyond noise" by the test
POWER = 0.8                      # of the repetitions_needed estimate
MWU_ARE = 3 / math.pi            # Mann-Whitney's efficiency against the t-test, normal data


def summary_stats(times):
    """min, median, mean, max, sample std (ddof=1) and CV of the times (NaN where undefined),
    and a distribution-free interval of the median with its coverage (median_interval)."""
    t = pd.Series(times, dtype=float).dropna()
    # pandas gives NaN for every statistic of no times and for the std of one time
    mean, std = t.mean(), t.std(ddof=1)
    lo, hi, level = median_interval(t)
    return dict(time_min_s=t.min(), time_median_s=t.median(), time_mean_s=mean, time_max_s=t.max(),
                time_std_s=std, time_cv=std / mean if mean > 0 else np.nan,
                time_median_lo_s=lo, time_median_hi_s=hi, time_median_level=level)


def median_interval(values, level=0.95):
    """(low, high, coverage): the narrowest pair of order statistics that holds the median
    with at least `level` (scipy's quantile_test, from binomial(n, 1/2)); below 6 values
    no pair reaches 95 %, and the interval is min-max with the coverage it has: 1 - 2^(1-n)
    (75 % with 3 runs, 94 % with 5). NaN below 2 values."""
    v = np.asarray(values, float)
    v = v[~np.isnan(v)]
    if len(v) < 2:
        return np.nan, np.nan, np.nan
    ci = _scipy_stats().quantile_test(v, q=float(np.median(v)), p=0.5).confidence_interval(level)
    if np.isnan(ci.low) or np.isnan(ci.high):
        return float(v.min()), float(v.max()), 1 - 2.0 ** (1 - len(v))
    return float(ci.low), float(ci.high), level


def mann_whitney_p(a, b):
    """Two-sided p-value of the Mann-Whitney U test of samples a and b (scipy): exact from
    U's distribution without ties; with ties (NPB prints 0.01 s) exact over every split of
    the pooled values, mid-ranks, when that is at most EXACT_MWU_MAX splits; else the
    normal approximation with tie and continuity correction."""
    a, b = [float(x) for x in a], [float(x) for x in b]
    if not a or not b:
        return float("nan")
    if len(set(a + b)) == len(a + b):
        method = "exact"
    elif math.comb(len(a) + len(b), len(a)) <= EXACT_MWU_MAX:
        method = _scipy_stats().PermutationMethod(n_resamples=np.inf)
    else:
        method = "asymptotic"
    return float(_scipy_stats().mannwhitneyu(a, b, alternative="two-sided", method=method).pvalue)


def repetitions_needed(a, b, alpha=ALPHA, power=POWER):
    """Repetitions per placement that would let Mann-Whitney tell a and b apart at `alpha`
    with `power`, if their medians differ as measured: the t-test's normal sample size
    over Mann-Whitney's efficiency, spread from the pooled MAD, and never fewer than the 4
    each that an exact p below 0.05 needs (3 vs 3 cannot go below 0.10). None when the
    medians do not differ or there is no spread to scale by."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if min(len(a), len(b)) < 2:
        return None
    delta = abs(np.median(a) - np.median(b))
    pooled = np.concatenate([a - np.median(a), b - np.median(b)])
    sigma = _scipy_stats().median_abs_deviation(pooled, scale="normal") or np.std(pooled, ddof=1)
    if delta == 0 or not sigma > 0:
        return None
    z = _scipy_stats().norm.ppf(1 - alpha / 2) + _scipy_stats().norm.ppf(power)
    n = math.ceil(2 * (z * sigma / delta) ** 2 / MWU_ARE)
    least = next(k for k in range(2, 50) if 2 / math.comb(2 * k, k) < alpha)
    return max(n, least)


TIME_RESOLUTION_S = 0.01      # NPB prints "Time in seconds" with two decimals
MOPS_RESOLUTION = 0.01         # ... and Mop/s with two


def units_apart(a, b, unit):
    """How many printed units two printed values are apart, rounded off float noise:
    1.13 - 1.11 is 0.01999... in binary, and must count as two hundredths like 0.52 - 0.50."""
    return round(abs(a - b) / unit, 6)


TIME_RESOLVED_S = 1.0          # medians from here on are read to 1 % or better: compared by time


def compared_by(best_time, worst_time, best_mops, worst_mops):
    """The measure two groups are compared by, and the one the answer prints beside the
    cost (so the percentage follows from the numbers shown): their median times where
    both are long enough for NPB's 0.01 s to resolve them and they differ, else their median Mop/s (from
    NPB's full-precision timer) where both have it, else the times. Times that tie at
    NPB's two decimals are told apart by Mop/s too."""
    if pd.notna(best_time) and pd.notna(worst_time) and min(best_time, worst_time) >= TIME_RESOLVED_S \
            and units_apart(worst_time, best_time, TIME_RESOLUTION_S) >= 2:
        return "time"
    if pd.notna(best_mops) and pd.notna(worst_mops) and best_mops > 0 and worst_mops > 0:
        return "mops"
    return "time"


def improvement(best, worst):
    """Cost of the wrong choice, at the resolution the runs were measured with, from the
    measure compared_by picks: 100 (1 - t_best / t_worst) of the median times, or
    100 (1 - Mop/s_worst / Mop/s_best) of the median Mop/s for short runs (NPB prints
    its time to 0.01 s but computes Mop/s from its full-precision timer; one kernel and
    class has a fixed operation count). Medians of an even number of runs are not
    reciprocal, so the two differ slightly: the answer prints the one used. A
    difference below one printed unit is flagged below_resolution instead of being shown
    as an improvement."""
    bm, wm = best["mops_median"], worst["mops_median"]
    if compared_by(best["time_median_s"], worst["time_median_s"], bm, wm) == "mops":
        return {"compared_by": "mops", "improvement_pct": 100 * (1 - wm / bm), "speedup": bm / wm,
                "below_resolution": bool(units_apart(bm, wm, MOPS_RESOLUTION) < 2)}
    b, w = best["time_median_s"], worst["time_median_s"]
    # a program says how finely it prints its time (summary's time_resolution_s); NPB 0.01 s
    given = [x for x in (best.get("time_resolution_s"), worst.get("time_resolution_s")) if pd.notna(x)]
    res = max(given) if given else TIME_RESOLUTION_S
    return {"compared_by": "time", "improvement_pct": 100 * (w - b) / w if w > 0 else np.nan,
            "speedup": w / b if b > 0 else np.nan, "below_resolution": bool(w <= b or units_apart(w, b, res) < 2)}
