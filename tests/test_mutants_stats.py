"""The statistics of the tables (numaplace.core.stats): how many repetitions would tell two
placements apart, and the test between them. Written against the mutants mutmut left
alive (tests/benchmarks/mutation_score.sh)."""
from __future__ import annotations

import math
import warnings

import pytest

from numaplace.core import stats as stats_module
from numaplace.core.stats import mann_whitney_p, median_interval, repetitions_needed, summary_stats

pytestmark = pytest.mark.unit


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
