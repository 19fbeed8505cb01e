"""Mann-Whitney's p with ties between the two groups (NPB prints its times to 0.01 s) is
the one numaplace documents (numaplace.core.stats.mann_whitney_p: exact over every split
of the pooled runs, mid-ranks), the same as scipy's for that method; the report's verdict
and the adaptive repetitions' stop (numaplace.judge.separation) rest on it. Issue 42,
behaviour 4 (tests/benchmarks/behaviour_bugs.py shows the tests failing on the mistake)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from numaplace.core.stats import compared_by, mann_whitney_p
from numaplace.judge.separation import decide

pytestmark = pytest.mark.unit

# 5 runs a side, no tie within a side, one between the sides (2.07 s in both): mid-ranks,
# U = 2.5; exact over the 252 splits p = 10/252 = 0.0397. scipy's "exact" (U's distribution
# without ties) says 0.0556, the normal approximation 0.0465.
BEST = [2.01, 2.02, 2.03, 2.04, 2.07]
NEXT = [2.05, 2.06, 2.07, 2.08, 2.09]


def scipy_p(a, b):
    """scipy's Mann-Whitney with the method numaplace documents for ties: every split."""
    return stats.mannwhitneyu(a, b, alternative="two-sided", method=stats.PermutationMethod(n_resamples=np.inf)).pvalue


@pytest.mark.parametrize("a, b", [
    (BEST, NEXT),
    ([2.01, 2.02, 2.03, 2.05], [2.03, 2.05, 2.06, 2.07]),              # two ties between the groups
    ([10.0, 10.0, 10.01, 10.02, 10.02], [10.01, 10.02, 10.03, 10.03]),  # ties within and between, 5 vs 4
    ([1.5, 1.6, 1.7], [1.7, 1.8, 1.9, 2.0, 2.1, 2.2]),
], ids=["one-between", "two-between", "within-and-between", "3-vs-6"])
def test_mann_whitney_p_with_ties_between_the_groups_is_scipys_exact_over_every_split(a, b):
    assert mann_whitney_p(a, b) == pytest.approx(scipy_p(a, b), rel=1e-12)
    assert mann_whitney_p(b, a) == pytest.approx(scipy_p(a, b), rel=1e-12)


def test_a_tie_between_the_groups_does_not_push_p_over_alpha():
    """The planted pair: p 0.040, beyond noise at 0.05 (0.056 without the ties' mid-ranks
    would read 'within noise')."""
    assert mann_whitney_p(BEST, NEXT) == pytest.approx(10 / 252)
    assert mann_whitney_p(BEST, NEXT) < 0.05


def rec(pid, rep, t):
    return {"run_id": f"cg.S.default.{pid}.r{rep}", "bench": "cg", "class": "S", "variant": "default", "rep": rep,
            "status": "ok", "output": {"time_s": t, "complete": True, "verified": True},
            "placement": {"id": pid, "shape": pid, "memory": "local", "binding": "process", "threads": 2}}


def test_an_adaptive_case_stops_once_a_tied_pair_is_separated():
    """Rounds 1-5 of two placements with the tie between them: round 6 (min 5, max 6: one
    look at 0.05) is not needed, p 0.04. (Fails when ties are ignored: 0.056, the case runs on.)"""
    records = [rec("a", i, t) for i, t in enumerate(BEST, 1)] + [rec("b", i, t) for i, t in enumerate(NEXT, 1)]
    spec = {k: v for k, v in rec("b", 6, None).items() if k not in ("status", "output")}
    d = decide(records, spec, 5, 0.05, 6)
    assert d.stop and d.p == pytest.approx(10 / 252), d
    assert d.reason == "best a and runner-up b separated after 5 rounds: Mann-Whitney p 0.04 < 0.05"


NAN = float("nan")


@pytest.mark.parametrize("best_s, worst_s, best_mops, worst_mops, by", [
    (1.0, 1.5, 150.0, 100.0, "time"),         # both medians 1 s or more, apart: their times
    (1.5, 2.0, 150.0, 100.0, "time"),
    (0.99, 1.5, 150.0, 100.0, "mops"),        # the faster one under 1 s: NPB's 0.01 s reads it to > 1 %
    (0.9, 1.5, 150.0, 100.0, "mops"),
    (0.5, 0.9, 150.0, 100.0, "mops"),
    (1.0, 1.01, 101.0, 100.0, "mops"),        # tied at two decimals: told apart by Mop/s
    (1.0, 1.02, 102.0, 100.0, "time"),
    (0.9, 1.5, NAN, NAN, "time"),             # no Mop/s (a program): the times, however short
])
def test_two_placements_are_compared_by_time_only_when_both_medians_are_resolved(
        best_s, worst_s, best_mops, worst_mops, by):
    """The cost is computed from the median times only where both are at least 1 s (NPB's
    0.01 s then resolves each to 1 %) and differ by two printed units; a shorter median,
    even on one side only, sends the comparison to the full-precision Mop/s where both
    placements have it."""
    assert compared_by(best_s, worst_s, best_mops, worst_mops) == by
    assert compared_by(worst_s, best_s, worst_mops, best_mops) == by


@pytest.mark.parametrize("best_s, worst_s, best_mops, worst_mops, by", [
    (0.5, 0.9, NAN, 100.0, "time"),           # Mop/s on one side only: the times
    (0.5, 0.9, 100.0, NAN, "time"),
    (0.5, 0.9, 0.0, 100.0, "time"),           # a zero Mop/s (a program that prints none) is no Mop/s
    (0.5, 0.9, 100.0, 0.0, "time"),
    (0.5, 0.9, 150.0, 100.0, "mops"),
])
def test_short_runs_are_compared_by_mops_only_when_both_sides_have_it(best_s, worst_s, best_mops, worst_mops, by):
    """A cost from one placement's Mop/s and the other's missing one would be no cost at all."""
    assert compared_by(best_s, worst_s, best_mops, worst_mops) == by


def test_the_coarser_of_two_programs_time_resolutions_decides_what_is_below_it():
    """A program that prints tenths of a second (time_resolution_s 0.1) cannot resolve 0.15 s,
    even beside one that prints hundredths: the coarser resolution is the one that holds."""
    from numaplace.core.stats import improvement
    best = {"mops_median": NAN, "time_median_s": 2.0, "time_resolution_s": 0.01}
    worst = {"mops_median": NAN, "time_median_s": 2.15, "time_resolution_s": 0.1}
    got = improvement(best, worst)
    assert got["compared_by"] == "time" and got["below_resolution"] is True
    assert got["improvement_pct"] == pytest.approx(100 * 0.15 / 2.15) and got["speedup"] == pytest.approx(1.075)
    assert improvement({**best, "time_resolution_s": NAN}, {**worst, "time_resolution_s": 0.01})["below_resolution"] is False
    assert improvement({**best, "time_median_s": 1.5}, worst)["below_resolution"] is False


def test_the_median_interval_reports_the_coverage_asked_for():
    """With 20 runs a pair of order statistics reaches 90 % or 99 %: that level is said, not 95 %."""
    from numaplace.core.stats import median_interval
    times = [10.0 + i / 100 for i in range(20)]
    lo, hi, level = median_interval(times, level=0.9)
    assert (lo, hi, level) == (10.05, 10.14, 0.9)
    lo, hi, level = median_interval(times, level=0.99)
    assert (lo, hi, level) == (10.03, 10.16, 0.99)
    assert median_interval(times) == (10.05, 10.14, 0.95)
