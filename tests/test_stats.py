"""The statistics of the tables (numaplace.core.stats), on data where the wrong statistic shows:
median ≠ mean, ties, one-run groups, empty groups, zero and sub-unit values."""
import math
import warnings

import pytest

from numaplace.core import stats as stats_module
from numaplace.core.stats import (improvement, mann_whitney_p, median_interval, repetitions_needed,
                                  summary_stats)
KEYS = ("time_min_s", "time_median_s", "time_mean_s", "time_max_s", "time_std_s", "time_cv",
        "time_median_lo_s", "time_median_hi_s", "time_median_level")
NAN = float("nan")


def same(got, want):
    """Equal dicts, NaN equal to NaN (and None is not NaN)."""
    assert list(got) == list(want)
    for k, w in want.items():
        g = got[k]
        if isinstance(w, float) and math.isnan(w):
            assert isinstance(g, float) and math.isnan(g), (k, g)
        elif isinstance(w, float):
            assert g == pytest.approx(w, rel=1e-12), (k, g, w)
        else:
            assert g == w and type(g) is type(w), (k, g, w)


# times → min, median, mean, max, sample std (ddof=1), CV; stdev by hand:
# [10, 10, 30]: mean 50/3, squares 2·(20/3)² + (40/3)² = 2400/9, /2 → √(1200/9) = 11.547
@pytest.mark.parametrize("times, want", [
    # the median's interval: below 6 times no two order statistics hold it with 95 %: min-max
    # with the coverage it has, 1 - 2^(1-n) (3 runs: 75 %); none below 2 times
    ([10, 10, 30], (10, 10, 50 / 3, 30, math.sqrt(1200 / 9), math.sqrt(1200 / 9) / (50 / 3), 10, 30, 0.75)),
    ([30, 10, None, 10], (10, 10, 50 / 3, 30, math.sqrt(1200 / 9), math.sqrt(1200 / 9) / (50 / 3), 10, 30, 0.75)),
    ([0.5, 0.7], (0.5, 0.6, 0.6, 0.7, math.sqrt(0.02), math.sqrt(0.02) / 0.6, 0.5, 0.7, 0.5)),   # mean below 1
    ([4.0, 6.0], (4, 5, 5, 6, math.sqrt(2), math.sqrt(2) / 5, 4, 6, 0.5)),                  # two runs
    ([7.25], (7.25, 7.25, 7.25, 7.25, NAN, NAN, NAN, NAN, NAN)),                           # one run: no spread
    ([0.0, 0.0, 0.0], (0, 0, 0, 0, 0.0, NAN, 0, 0, 0.75)),                                 # CV undefined at mean 0
    ([], (NAN,) * 9),
    ([None, None], (NAN,) * 9),
    # 7 times: [x(1), x(7)] covers the median with 1 - 2/2^7 = 98 %, [x(2), x(6)] only 88 %
    ([7, 1, 6, 2, 5, 3, 4], (1, 4, 4, 7, math.sqrt(28 / 6), math.sqrt(28 / 6) / 4, 1, 7, 0.95)),
    # 10 times: [x(2), x(9)] covers 1 - 2·11/1024 = 97.9 %, [x(3), x(8)] 89 %
    (list(range(10, 0, -1)), (1, 5.5, 5.5, 10, math.sqrt(110 / 12), math.sqrt(110 / 12) / 5.5, 2, 9, 0.95)),
], ids=["median<mean", "unordered+missing", "sub-unit", "two-runs", "one-run", "all-zero", "empty", "all-missing",
        "seven", "ten"])
def test_summary_stats(times, want):
    got = summary_stats(times)
    same(got, dict(zip(KEYS, map(float, want))))
    for k in KEYS:                      # floats even when every time is an integer
        assert isinstance(got[k], float), k


@pytest.mark.parametrize("a, b, p", [
    ([1, 2, 3], [4, 5, 6], 2 / 20),
    ([1], [2, 3], 2 / 3),               # one-run sample: 3 splits, U = 0 and U = 2 as extreme
    ([1, 2], [3], 2 / 3),
    ([1, 1, 2], [1, 2, 2], 1.0),        # mid-ranks: every split is as extreme or more
    ([5, 5], [5, 5], 1.0),
    # no ties: exact from U's distribution at any size; a < b entirely: 2 of C(22, 11) splits
    (list(range(1, 12)), list(range(12, 23)), 2 / 705432),
    # ties with C(22, 11) > 20,000 splits: normal approximation, continuity 0.5, tie
    # correction: ties 1×6, 2×10, 3×6: U1 = 6·3.5 + 5·11.5 − 66 = 12.5, Σ(t³−t) = 1410,
    # σ² = 121/12·(23 − 1410/462), z = 47.5/σ
    ([1] * 6 + [2] * 5, [2] * 5 + [3] * 6, 0.0008104477469793205),
    # odd vs even, no ties: U1 = 55 of mean 60.5, exact (the normal approximation: 0.7427)
    (list(range(1, 23, 2)), list(range(2, 23, 2)), 0.7476581725807732),
    ([3.0] * 11, [3.0] * 11, 1.0),      # every value tied: no variance, no evidence
], ids=["disjoint3", "1vs2", "2vs1", "ties-small", "all-tied-small", "exact-disjoint", "normal-ties",
        "exact-null", "normal-all-tied"])
def test_mann_whitney_p(a, b, p):
    assert mann_whitney_p(a, b) == pytest.approx(p, rel=1e-9)
    assert mann_whitney_p(b, a) == pytest.approx(p, rel=1e-9)      # two-sided: symmetric


@pytest.mark.parametrize("a, b", [([], [1.0]), ([1.0, 2.0], []), ([], [])])
def test_mann_whitney_p_of_an_empty_sample_is_nan(a, b):
    assert math.isnan(mann_whitney_p(a, b))


def group(mops, time):
    return {"mops_median": mops, "time_median_s": time}


# best, worst → the cost of the wrong choice. By the median times where both are >= 1 s
# (read to 1 %: the answer prints them beside the cost, which must follow from them); by
# Mop/s for shorter runs where both have a positive Mop/s (NPB's Mop/s comes from its
# full-precision timer), else by the printed time.
@pytest.mark.parametrize("best, worst, want", [
    (group(200.0, 0.1), group(150.0, 0.133), {"compared_by": "mops", "improvement_pct": 25.0,
                                               "speedup": 4 / 3, "below_resolution": False}),
    # two printed units (0.02 Mop/s) apart is resolved, one is not; 0.04 − 0.02 is exactly 0.02
    (group(100.03, 0.5), group(100.0, 0.5), {"compared_by": "mops", "improvement_pct": 100 * 0.03 / 100.03,
                                              "speedup": 100.03 / 100.0, "below_resolution": False}),
    (group(0.04, 0.5), group(0.02, 0.5), {"compared_by": "mops", "improvement_pct": 50.0,
                                           "speedup": 2.0, "below_resolution": False}),
    (group(100.01, 0.5), group(100.0, 0.5), {"compared_by": "mops", "improvement_pct": 100 * 0.01 / 100.01,
                                              "speedup": 100.01 / 100.0, "below_resolution": True}),
    # resolved times: the cost follows from the times printed beside it, not from Mop/s
    # medians that two runs a side make non-reciprocal (8.35/29.79 s: 45 % by Mop/s, 19 % by time)
    (group(0.5, 19.1), group(0.275, 23.6), {"compared_by": "time", "improvement_pct": 100 * 4.5 / 23.6,
                                             "speedup": 23.6 / 19.1, "below_resolution": False}),
    # no usable Mop/s on one side → times: improvement 100·(w − b)/w, speedup w/b
    (group(NAN, 2.0), group(150.0, 2.5), {"compared_by": "time", "improvement_pct": 20.0,
                                           "speedup": 1.25, "below_resolution": False}),
    (group(200.0, 2.0), group(NAN, 2.5), {"compared_by": "time", "improvement_pct": 20.0,
                                           "speedup": 1.25, "below_resolution": False}),
    (group(0.0, 2.0), group(5.0, 2.5), {"compared_by": "time", "improvement_pct": 20.0,
                                         "speedup": 1.25, "below_resolution": False}),
    (group(5.0, 2.0), group(0.0, 2.5), {"compared_by": "time", "improvement_pct": 20.0,
                                         "speedup": 1.25, "below_resolution": False}),
    # 0.02 s apart is resolved, 0.01 s is not (NPB prints two decimals); 0.04 − 0.02 is exactly 0.02
    (group(NAN, 0.02), group(NAN, 0.04), {"compared_by": "time", "improvement_pct": 50.0,
                                           "speedup": 2.0, "below_resolution": False}),
    (group(NAN, 0.5), group(NAN, 0.52), {"compared_by": "time", "improvement_pct": 100 * 0.02 / 0.52,
                                          "speedup": 0.52 / 0.5, "below_resolution": False}),
    (group(NAN, 0.5), group(NAN, 0.51), {"compared_by": "time", "improvement_pct": 100 * 0.01 / 0.51,
                                          "speedup": 0.51 / 0.5, "below_resolution": True}),
    (group(NAN, 0.25), group(NAN, 0.75), {"compared_by": "time", "improvement_pct": 100 * 0.5 / 0.75,
                                           "speedup": 3.0, "below_resolution": False}),
    (group(NAN, 0.0), group(NAN, 0.0), {"compared_by": "time", "improvement_pct": NAN,
                                         "speedup": NAN, "below_resolution": True}),
], ids=["mops", "mops-3-units", "mops-exactly-2-units", "mops-1-unit", "time-resolved", "best-mops-nan", "worst-mops-nan",
        "best-mops-0", "worst-mops-0", "time-exactly-2-units", "time-2-units", "time-1-unit", "time-sub-second", "time-0"])
def test_improvement(best, worst, want):
    same(improvement(best, worst), want)


@pytest.mark.parametrize("a, b, want", [
    # clearly apart: the formula asks 1, but 3 vs 3 cannot give p < 0.05 (its least p is
    # 2/20 = 0.10), 4 vs 4 can (2/70): 4
    ([9.9, 10.0, 10.1], [10.9, 11.0, 11.1], 4),
    # medians 0.1 apart, spread MAD·1.4826 = 0.148: 2·((1.960 + 0.842)·1.4826)² / (3/π) = 36.1 → 37
    ([10.0, 10.1, 10.2], [10.1, 10.2, 10.3], 37),
    ([10.0, 10.1, 10.2], [10.2, 10.1, 10.0], None),      # same median: nothing to tell apart
    ([10.0], [11.0, 12.0], None),                         # one run: no spread measured
])
def test_repetitions_needed(a, b, want):
    from numaplace.core.stats import repetitions_needed
    assert repetitions_needed(a, b) == want
    assert repetitions_needed(b, a) == want


# -- how many repetitions would tell two placements apart, and the test between them -------
# Several pin what the mutation run left alive (tests/benchmarks/mutation-survivors.md).

def test_two_runs_each_are_enough_to_estimate_from():
    """2 runs per placement give a spread and a difference of medians: an estimate (never
    below the 4 per placement an exact p < 0.05 needs); 1 run gives none."""
    assert repetitions_needed([1, 2], [3, 4]) == 4
    assert repetitions_needed([1], [3, 4]) is None


def test_without_spread_by_the_mad_the_standard_deviation_scales():
    """Three equal times and an outlier: the MAD is 0, the sample standard deviation
    (n - 1) of the deviations from the medians takes over."""
    assert repetitions_needed([1, 1, 1, 5], [2, 2, 2, 2]) == 33


def test_no_estimate_without_spread_or_difference():
    assert repetitions_needed([1, 1], [2, 2]) is None          # no spread at all
    assert repetitions_needed([1, 2], [1, 2]) is None          # the same medians


@pytest.mark.parametrize("alpha, least", [(0.05, 4), (0.1, 4), (0.4, 2)])
def test_never_fewer_than_an_exact_test_can_use_at_alpha(alpha, least):
    """Far apart placements need few runs, but not fewer than the fewest per placement
    for which 2 / C(2k, k) < alpha: 4 at 0.05 and at 0.1 (3 vs 3 gives exactly 0.1), 2 at 0.4."""
    assert repetitions_needed([10, 10.1], [10.5, 10.6], alpha=alpha) == least
    assert 2 / math.comb(2 * least, least) < alpha


def test_mann_whitney_needs_runs_on_both_sides():
    assert math.isnan(mann_whitney_p([], [1, 2])) and math.isnan(mann_whitney_p([1, 2], []))
    assert mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)


def test_times_all_printed_as_zero_give_no_cv_and_no_warning():
    """NPB prints a run under 5 ms as 0.00 s: the CV of all-zero times is NaN, and the
    tables are built without numpy's 0/0 warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = summary_stats([0.0, 0.0, 0.0])
    assert math.isnan(s["time_cv"]) and s["time_std_s"] == 0 and s["time_mean_s"] == 0


@pytest.mark.parametrize("times, level", [([3.0, 1.0, 2.0], 0.75), ([1.0, 2.0], 0.5)])
def test_min_max_holds_the_median_at_exactly_its_coverage(times, level):
    """Asked for exactly the coverage min-max has (1 - 2^(1-n): 75 % with 3 runs, 50 % with
    2), the interval is min-max at that level, not open at one end."""
    assert median_interval(times, level=level) == (min(times), max(times), level)


def test_a_side_without_runs_gives_nan_quietly():
    """No runs on one side: NaN, without scipy's small-sample warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(mann_whitney_p([], [1.0, 2.0])) and math.isnan(mann_whitney_p([1.0, 2.0], []))


def test_ties_are_tested_exactly_up_to_and_including_the_split_limit(monkeypatch):
    """With ties, the p-value is exact when there are at most EXACT_MWU_MAX splits of the
    pooled runs. 3 vs 3 has C(6, 3) = 20 splits; mid-ranks 1.5 1.5 3.5 | 3.5 5.5 5.5: U = 0.5,
    reached by 2 of the 20 splits, two-sided p = 2 * 2/20 = 0.2 (the normal approximation
    says 0.11)."""
    monkeypatch.setattr(stats_module, "EXACT_MWU_MAX", 20)
    assert mann_whitney_p([1.0, 1.0, 2.0], [2.0, 3.0, 3.0]) == pytest.approx(0.2)
    monkeypatch.setattr(stats_module, "EXACT_MWU_MAX", 19)
    assert mann_whitney_p([1.0, 1.0, 2.0], [2.0, 3.0, 3.0]) == pytest.approx(0.1101, abs=1e-4)


@pytest.mark.parametrize("best, worst", [(0.50, 0.52), (1.11, 1.13), (1.0, 1.02), (12.34, 12.36), (199.98, 200.0)])
def test_two_printed_hundredths_apart_are_resolved_wherever_the_times_lie(best, worst):
    """Two NPB times exactly two printed hundredths apart are told apart the same way at any
    magnitude: 1.13 - 1.11 is 0.01999... in binary and must not read as below resolution."""
    from numaplace.core.stats import compared_by, improvement
    assert compared_by(best, worst, 100.0, 90.0) == ("time" if best >= 1.0 else "mops")
    got = improvement({"time_median_s": best, "mops_median": float("nan")},
                      {"time_median_s": worst, "mops_median": float("nan")})
    assert got["compared_by"] == "time" and got["below_resolution"] is False
    one_apart = improvement({"time_median_s": best, "mops_median": float("nan")},
                            {"time_median_s": round(best + 0.01, 2), "mops_median": float("nan")})
    assert one_apart["below_resolution"] is True


@pytest.mark.parametrize("best, worst", [(100.02, 100.00), (1.13, 1.11), (2500.02, 2500.0)])
def test_two_printed_mops_units_apart_are_resolved(best, worst):
    """Mop/s two printed hundredths apart are a resolved difference, whatever their size."""
    from numaplace.core.stats import improvement
    got = improvement({"time_median_s": 0.5, "mops_median": best}, {"time_median_s": 0.5, "mops_median": worst})
    assert got["compared_by"] == "mops" and got["below_resolution"] is False
