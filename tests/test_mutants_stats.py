"""The statistics of the tables (numaplace.core.stats): how many repetitions would tell two
placements apart, and the test between them. Written against the mutants mutmut left
alive (tests/benchmarks/mutation_score.sh)."""
from __future__ import annotations

import math

import pytest

from numaplace.core.stats import mann_whitney_p, repetitions_needed

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
