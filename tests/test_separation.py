"""The adaptive repetitions' decision (numaplace.judge.separation), edge by edge, on the
records of tests/test_adaptive.py's helpers. Several tests pin what the mutation run over
judge/separation.py left alive (tests/benchmarks/mutation-survivors.md)."""
from __future__ import annotations

import pytest

from numaplace.judge.separation import _label, compared_value, decide

from test_adaptive import rec, rounds_of, spec

FOUR = {"a": [1.0, 1.01, 1.02, 1.03], "b": [2.0, 2.01, 2.02, 2.03]}


def test_a_round_at_the_minimum_is_within_it():
    d = decide(rounds_of(FOUR), spec("a", 4), 4, 0.05)
    assert d.stop is False and d.reason == "round 4 is within the minimum of 4"


def test_only_the_same_class_and_variant_count():
    """Records of another class or variant are another case: here b ran only there, so this
    case has one placement, whatever the other case separated."""
    for key, other in (("class", "W"), ("variant", "serial-init")):
        records = [{**r, key: other} for r in rounds_of(FOUR)] + rounds_of({"a": [1.0] * 4})
        d = decide(records, spec("a", 5), 4, 0.05)
        assert d.stop is True and d.reason.startswith("one placement in its case"), (key, d.reason)


def test_a_metric_that_is_no_number_is_no_value():
    r = rec("a", 1, "fast", bench="membw", field="value")
    assert compared_value(r) == (None, True)


def test_stopping_at_the_minimum_says_so_in_full():
    d = decide([], spec("m", 2, bench="membw", threads=1), 1, 0.05)
    assert d.rounds == 1
    one = decide(rounds_of({"a": [1.0, 1.1, 1.2]}), spec("a", 4), 3, 0.05)
    assert one.reason == "one placement in its case, nothing to separate: 3 rounds, the minimum"


def test_a_case_with_one_placement_of_ok_runs_goes_on():
    records = rounds_of(FOUR)
    for r in records[4:]:
        r["status"] = "failed"                                   # b: no ok run at all
    d = decide(records, spec("a", 5), 4, 0.05)
    assert d.stop is False and d.rounds == 4
    assert d.reason == "fewer than two placements with ok runs after 4 rounds"


def test_a_placement_with_no_ok_run_is_named_by_its_id():
    records = rounds_of({**FOUR, "c": [3.0] * 4})
    for r in records[8:]:
        r["status"] = "failed"                                   # c: no ok run
    d = decide(records, spec("a", 5), 4, 0.05)
    assert d.stop is False and "c has 0 ok runs after 4 rounds" in d.reason, d.reason
    labelled = rounds_of(FOUR) + [rec("c", i, 3.0, label="spread 2", status="ok" if i == 1 else "failed")
                                   for i in range(1, 5)]
    assert "spread 2 has 1 ok runs" in decide(labelled, spec("a", 5), 4, 0.05).reason


def test_p_exactly_at_the_level_does_not_stop():
    records = rounds_of(FOUR)                                    # 4 vs 4, apart: p = 2/70 exactly
    d = decide(records, spec("a", 5), 4, 2 / 70)
    assert d.p == 2 / 70 and d.stop is False
    assert decide(records, spec("a", 5), 4, 0.05).stop is True
    assert decide(rounds_of({"a": [1.0] * 4, "b": [1.0] * 4}), spec("a", 5), 4, 0.05).stop is False


@pytest.mark.parametrize("placement, label", [({"id": "x", "shape": "compact 2"}, "compact 2"), ({"id": "x"}, "x")])
def test_a_placement_too_bare_to_word_is_named_by_its_shape_or_id(placement, label):
    assert _label(placement) == label


def test_a_recorded_placement_is_worded_as_the_report_words_it():
    p = {"binding": "threads", "cpus": "0-1", "id": "c0-1_loc_t_nc", "launcher": "numactl", "layout": "2 on 0",
         "memory": "local", "memory_nodes": "", "nodes": "0", "shape": "compact 2", "threads": 2}
    assert _label(p) == "compact 2 · pinned threads"


def test_only_ok_runs_rank_the_placements():
    """A run that did not end ok (here: not idle, with a time) is no evidence for its placement."""
    records = rounds_of(FOUR)
    for r in records[4:]:
        r["status"] = "not-idle"
    d = decide(records, spec("a", 5), 4, 0.05)
    assert d.stop is False and d.reason == "fewer than two placements with ok runs after 4 rounds"


def test_placements_are_ranked_by_their_median_not_their_mean():
    """One slow outlier (10 s) does not make a placement of three 1 s runs the runner-up."""
    records = rounds_of({"a": [1.0, 1.0, 1.0, 10.0], "b": [2.0, 2.0, 2.0, 2.0]})
    d = decide(records, spec("a", 5), 4, 0.05)
    assert d.reason.startswith("best a and runner-up b not separated after 4 rounds"), d.reason


def test_the_level_of_each_look_is_written_to_two_significant_digits():
    """Three looks at alpha 0.05: 0.017 a look, as the not-needed record and the report say it."""
    records = rounds_of(FOUR)
    d = decide(records, spec("a", 5), 4, 0.05, 7)
    assert d.reason == ("best a and runner-up b not separated after 4 rounds: "
                        "Mann-Whitney p 0.029 >= 0.017 (0.05 over 3 looks)")
    assert (d.stop, d.rounds, round(d.p, 4)) == (False, 4, 0.0286)


def test_a_placement_not_yet_measured_keeps_its_case_going():
    """The run's own placement counts even before any record of it: unmeasured, it could be the best."""
    d = decide(rounds_of(FOUR), spec("c", 5), 4, 0.05)
    assert d.stop is False
    assert d.reason == "best a and runner-up b: c has 0 ok runs after 4 rounds, fewer than the minimum of 4"
