"""The statistics of the tables: per-placement summaries of NPB time, the Mann-Whitney U
test between two placements, and the cost of the wrong choice at the resolution NPB
measured with. One place for all of them (aggregate applies them to the records)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

EXACT_MWU_MAX = 200_000          # splits enumerated for the exact p-value; above: normal approx.


def summary_stats(times):
    """min, median, mean, max, sample std (ddof=1) and CV of the times (NaN where undefined)."""
    t = pd.Series(times, dtype=float).dropna()
    # pandas gives NaN for every statistic of no times and for the std of one time
    mean, std = t.mean(), t.std(ddof=1)
    return dict(time_min_s=t.min(), time_median_s=t.median(), time_mean_s=mean, time_max_s=t.max(),
                time_std_s=std, time_cv=std / mean if mean > 0 else np.nan)


def mann_whitney_p(a, b):
    """Two-sided p-value of the Mann-Whitney U test of samples a and b: exact (every split
    of the pooled values, mid-ranks for ties) when that is at most EXACT_MWU_MAX splits,
    else the normal approximation with tie correction."""
    a, b = [float(x) for x in a], [float(x) for x in b]
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return float("nan")
    pooled = a + b
    ranks = pd.Series(pooled).rank(method="average").tolist()
    mean_u = n1 * n2 / 2

    def u_of(idx):
        return sum(ranks[i] for i in idx) - n1 * (n1 + 1) / 2

    observed = abs(u_of(range(n1)) - mean_u)
    if math.comb(n1 + n2, n1) <= EXACT_MWU_MAX:
        total = extreme = 0
        for idx in itertools.combinations(range(n1 + n2), n1):
            total += 1
            if abs(u_of(idx) - mean_u) >= observed - 1e-9:
                extreme += 1
        return extreme / total
    n = n1 + n2
    ties = pd.Series(pooled).value_counts()
    var = n1 * n2 / 12 * ((n + 1) - float(((ties ** 3 - ties).sum())) / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (observed - 0.5) / math.sqrt(var)
    return math.erfc(max(z, 0) / math.sqrt(2))


TIME_RESOLUTION_S = 0.01      # NPB prints "Time in seconds" with two decimals
MOPS_RESOLUTION = 0.01         # ... and Mop/s with two


def improvement(best, worst):
    """Cost of the wrong choice, at the resolution the runs were measured with. NPB prints
    its time to 0.01 s but computes Mop/s from its full-precision timer, and the operation
    count of one kernel and class is fixed: so time_best/time_worst = Mop/s_worst/Mop/s_best
    exactly, and short runs are compared by Mop/s. A difference below one printed unit is
    flagged below_resolution instead of being shown as an improvement."""
    bm, wm = best["mops_median"], worst["mops_median"]
    if pd.notna(bm) and pd.notna(wm) and bm > 0 and wm > 0:
        return {"compared_by": "mops", "improvement_pct": 100 * (1 - wm / bm), "speedup": bm / wm,
                "below_resolution": bool(abs(bm - wm) < 2 * MOPS_RESOLUTION)}
    b, w = best["time_median_s"], worst["time_median_s"]
    return {"compared_by": "time", "improvement_pct": 100 * (w - b) / w if w > 0 else np.nan,
            "speedup": w / b if b > 0 else np.nan, "below_resolution": bool(w - b < 2 * TIME_RESOLUTION_S)}
