"""The progress line after each measured run (numaplace.run.progress.progress_line): runs
recorded of the plan's, and the machine time left, re-estimated from the runs measured."""
from __future__ import annotations

import json

import pytest

from numaplace.run.progress import progress_line

pytestmark = pytest.mark.unit

PLAN = {"a.r1": 60.0, "a.r2": 120.0, "b.r1": 240.0, "b.r2": 0.0, "c.r1": 600.0}


@pytest.fixture
def study(tmp_path):
    """A study of five runs: a.r1 and b.r2 recorded, a.r2 begun but interrupted (its folder,
    no record), the others not started."""
    (tmp_path / "estimate.json").write_text(json.dumps({"per_run_s": PLAN}))
    for rid in ("a.r1", "b.r2"):
        (tmp_path / "runs" / rid).mkdir(parents=True)
        (tmp_path / "runs" / rid / "record.json").write_text("{}")
    (tmp_path / "runs" / "a.r2" / "interrupted").mkdir(parents=True)
    return tmp_path


def test_a_run_begun_without_a_record_is_still_left(study):
    """Left: a.r2 (interrupted), b.r1 and c.r1: 120 + 240 + 600 s = 16 min."""
    assert progress_line(study, "b.r2: ok") == "numaplace: 2 of 5 runs recorded (b.r2: ok); about 16 min of runs left"
    assert progress_line(study) == "numaplace: 2 of 5 runs recorded; about 16 min of runs left"


def test_the_time_left_is_scaled_by_the_measured_runs_against_their_estimate(study):
    """Only runs of the plan with an estimate above 0 and a measured wall time count: here
    a.r1, 150 s against 60 s estimated: x 2.5, 960 s -> 40 min."""
    measured = [("a.r1", 150.0), ("b.r2", 30.0), ("x.r9", 50.0), ("a.r2", None)]
    assert progress_line(study, "b.r2: ok", measured) == (
        "numaplace: 2 of 5 runs recorded (b.r2: ok); about 40 min of runs left "
        "(the plan's estimate x 2.5, from 1 run measured)")
    assert progress_line(study, None, [("a.r1", 30.0)]) == (
        "numaplace: 2 of 5 runs recorded; about 8 min of runs left (the plan's estimate x 0.5, from 1 run measured)")
    # two runs: (150 + 420) / (60 + 240) = 1.9
    assert progress_line(study, None, [("a.r1", 150.0), ("b.r1", 420.0)]).endswith(
        "about 30 min of runs left (the plan's estimate x 1.9, from 2 runs measured)")


def test_an_estimate_within_10_percent_is_not_rescaled_in_words(study):
    assert progress_line(study, None, [("a.r1", 63.0)]) == \
        "numaplace: 2 of 5 runs recorded; about 17 min of runs left"             # 960 * 1.05 s
    assert progress_line(study, None, [("a.r1", 54.6)]) == \
        "numaplace: 2 of 5 runs recorded; about 15 min of runs left"             # x 0.91


def test_no_estimate_no_line(tmp_path):
    assert progress_line(tmp_path) is None
    (tmp_path / "estimate.json").write_text(json.dumps({"total_s": 5}))
    assert progress_line(tmp_path) is None
    (tmp_path / "estimate.json").write_text(json.dumps({"per_run_s": {"a.r1": 90.0}}))
    assert progress_line(tmp_path) == "numaplace: 0 of 1 run recorded; about 2 min of runs left"
