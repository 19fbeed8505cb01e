"""Adaptive repetitions (issue 31, item 4): `repetitions: {min, max}` plans rounds 1..max;
a run past min is measured only while its case's best and runner-up placements are not
yet separated (numaplace.judge.separation), else it gets a not-needed record; the report
says where each case stopped and why. The end-to-end run is at the bottom (workflow)."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from numaplace import ConfigError
from numaplace.core.loader import refusal
from numaplace.judge.separation import decide
from numaplace.kinds import KINDS, Kind
from numaplace.plan.rounds import DEFAULT_ALPHA, Repetitions
from numaplace.plan.study import Study
from numaplace.record.store import KEPT, iter_records, set_aside_failed, workflow_outcome, write_record

REPO = Path(__file__).resolve().parents[1]


def study(reps=None, exp_reps=None, budget=None, **more):
    s = {"study": "a", "platform": "x4600", "benchmarks": ["cg"], "classes": ["S"],
         "experiments": [{"name": "two", "placements": [{"compact": [2]}, {"spread": [2]}]}], **more}
    if reps is not None:
        s["repetitions"] = reps
    if exp_reps is not None:
        s["experiments"][0]["repetitions"] = exp_reps
    if budget is not None:
        s["budget"] = budget
    return s


# -- the study file --------------------------------------------------------------------

@pytest.mark.parametrize("value, entry, words", [
    ({"min": 4}, "repetitions", "adaptive repetitions need max"),
    ({"max": 4}, "repetitions", "adaptive repetitions need min"),
    ({"min": 4, "max": 12, "most": 20}, "repetitions", "'most' was unexpected"),
    ({"min": 4.0, "max": 12}, "repetitions.min", "expected a whole number, got 4.0"),
    ({"min": 4, "max": "12"}, "repetitions.max", "expected a whole number, got '12'"),
    ({"min": True, "max": 12}, "repetitions.min", "true/false is not a number"),
    ({"min": 0, "max": 12}, "repetitions.min", "less than the minimum of 1"),
    ({"min": 12, "max": 4}, "repetitions", "min 12 is above max 4"),
    ({"min": 4, "max": 5000}, "repetitions.max", "above numaplace's limit of 1000"),
    ({"min": 4, "max": 12, "alpha": 0}, "repetitions.alpha", "less than or equal to the minimum of 0"),
    ({"min": 4, "max": 12, "alpha": 0.9}, "repetitions.alpha", "greater than the maximum of 0.5"),
    ([4, 12], "repetitions", "expected a whole number, got [4, 12]"),
])
@pytest.mark.parametrize("level", ["study", "experiment"])
def test_bad_adaptive_repetitions_are_refused_in_one_line(value, entry, words, level):
    s = study(reps=value) if level == "study" else study(exp_reps=value)
    with pytest.raises(ConfigError) as e:
        Study(s, "a.yaml", REPO / "config")
    line = refusal(e.value)
    assert "\n" not in line and line.startswith("invalid study: a.yaml: "), line
    # the experiment's entry is named as the schema names it (experiments[0]) or as the
    # cross-field checks do (experiments[0] (two))
    at = entry if level == "study" else entry.replace("repetitions", "experiments[0].repetitions")
    assert e.value.entry in (at, at.replace("experiments[0]", "experiments[0] (two)")), line
    assert words in e.value.problem, line


def test_adaptive_repetitions_plan_every_round_up_to_max_and_say_so():
    st = Study(study(reps={"min": 4, "max": 12}), "a.yaml", REPO / "config")
    assert {r.rep for r in st.runs} == set(range(1, 13)) and len(st.runs) == 24
    assert st.repetitions["two"] == Repetitions(4, 12, DEFAULT_ALPHA)
    head, *rest = st.plan_summary()
    assert ": up to 24 runs, estimated machine time up to " in head, head
    (line,) = [x for x in rest if x.startswith("  two:")]
    assert line.startswith("  two: up to 24 runs, ~up to ") and "repeats 4 to 12 rounds, stopping a case " \
        "early once its best and runner-up are separated (Mann-Whitney p < 0.05)" in line, line
    fixed = Study(study(reps=5), "a.yaml", REPO / "config").plan_summary()
    assert not any("up to" in x or "repeats" in x for x in fixed), fixed


def test_the_default_alpha_is_the_reports():
    from numaplace.core.stats import ALPHA
    assert DEFAULT_ALPHA == ALPHA
    assert Repetitions.of({"min": 2, "max": 3}).alpha == ALPHA
    assert Repetitions.of({"min": 2, "max": 3, "alpha": 0.01}).alpha == 0.01
    assert not Repetitions.of(3).adaptive and Repetitions.of(3) == Repetitions(3, 3)


def test_only_adaptive_runs_carry_their_repetitions_and_a_fixed_experiment_wins_a_shared_run():
    s = study(exp_reps={"min": 2, "max": 5, "alpha": 0.01})
    s["experiments"].append({"name": "fixed", "repetitions": 3, "placements": [{"compact": [2]}]})
    st = Study(s, "a.yaml", REPO / "config")
    by = {(r.placement.id, r.rep): r.run_id for r in st.runs}
    compact, spread = sorted({r.placement.id for r in st.runs}, key=lambda p: "spread" in st.run(by[(p, 1)]).placement.label)
    # compact 2 is in both experiments: measured always up to 3, adaptive past that (r4, r5)
    assert "adaptive" not in st.chunk_entry(by[(compact, 2)])
    assert st.chunk_entry(by[(compact, 4)])["adaptive"] == {"min": 2, "max": 5, "alpha": 0.01}
    assert st.chunk_entry(by[(spread, 1)])["adaptive"] == {"min": 2, "max": 5, "alpha": 0.01}
    # the params (the run's definition) are the same as without adaptive repetitions
    assert st.chunk_entry(by[(spread, 1)])["spec"] == st.run_params(by[(spread, 1)])


def test_a_chunk_past_min_waits_for_every_earlier_round_and_fixed_studies_wait_for_nothing():
    st = Study(study(reps={"min": 3, "max": 5}, rounds={"chunk_runs": 1}), "a.yaml", REPO / "config")
    chunks = {c.id: c for c in st.chunks}
    assert sorted(chunks) == [f"r{r}.c{c}" for r in range(1, 6) for c in (1, 2)]
    waits = {cid: sorted(c.id for c in st.waits_for(cid)) for cid in chunks}
    for cid in ("r1.c1", "r2.c2", "r3.c1"):
        assert waits[cid] == [], cid                        # within min: as without adaptive
    # round 4 decides: it needs rounds 1-3 (their chunks wait for nothing themselves)
    assert waits["r4.c1"] == waits["r4.c2"] == [f"r{r}.c{c}" for r in (1, 2, 3) for c in (1, 2)]
    # round 5: round 4 is enough, it waited for the rest
    assert waits["r5.c2"] == ["r4.c1", "r4.c2"]
    fixed = Study(study(reps=5, rounds={"chunk_runs": 1}), "a.yaml", REPO / "config")
    assert all(fixed.waits_for(c.id) == [] for c in fixed.chunks)


def test_a_budget_steps_the_max_down_but_never_below_min():
    full = Study(study(reps={"min": 5, "max": 12}, classes=["A"]), "a.yaml", REPO / "config")
    per_round = full.estimate().total / 12
    st = Study(study(reps={"min": 5, "max": 12}, classes=["A"], budget=f"{per_round * 8.5 / 60:.4f} min"),
               "a.yaml", REPO / "config")
    assert max(r.rep for r in st.runs) == 8 and st.repetitions["two"] == Repetitions(5, 8, DEFAULT_ALPHA)
    assert "4 repetitions fewer" in st.budget_notes[0], st.budget_notes
    with pytest.raises(ConfigError) as e:          # 5 rounds do not fit: the min is kept, refused
        Study(study(reps={"min": 5, "max": 12}, classes=["A"], budget=f"{per_round * 4.5 / 60:.4f} min"),
              "a.yaml", REPO / "config")
    assert e.value.entry == "budget" and "an adaptive experiment's min" in e.value.problem


def test_the_planned_runs_limit_counts_an_adaptive_experiment_at_its_max():
    """Every round up to max is planned, so the `limits: {runs}` check counts max rounds:
    2 placements x max 10 = 20 runs is above a limit of 10, though min 2 (4 runs) is not."""
    with pytest.raises(ConfigError) as e:
        Study(study(reps={"min": 2, "max": 10}, limits={"runs": 10}), "a.yaml", REPO / "config")
    assert e.value.entry == "experiments" and "planned runs: 20" in e.value.problem, refusal(e.value)
    assert len(Study(study(reps={"min": 2, "max": 5}, limits={"runs": 10}), "a.yaml", REPO / "config").runs) == 10


def test_a_run_two_adaptive_experiments_share_is_judged_at_the_stricter_alpha():
    """compact 2 is in an experiment at alpha 0.05 and one at alpha 0.01: it stops early only
    when the stricter test (0.01) separates its case, with the larger min and max."""
    s = study(exp_reps={"min": 2, "max": 5, "alpha": 0.05})
    s["experiments"].append({"name": "strict", "repetitions": {"min": 3, "max": 4, "alpha": 0.01},
                             "placements": [{"compact": [2]}]})
    st = Study(s, "a.yaml", REPO / "config")
    shared = [r for r in st.runs if len(r.experiments) == 2]
    assert shared and all(st.adaptive(r.run_id) == Repetitions(3, 5, 0.01) for r in shared)
    assert st.chunk_entry(shared[0].run_id)["adaptive"] == {"min": 3, "max": 5, "alpha": 0.01}
    alone = [r for r in st.runs if r.experiments == ("two",)]
    assert alone and all(st.adaptive(r.run_id) == Repetitions(2, 5, 0.05) for r in alone)


# -- the decision ------------------------------------------------------------------------

def rec(pid, rep, value, status="ok", bench="cg", threads=2, field="time_s", label=None):
    return {"run_id": f"{bench}.S.default.{pid}.r{rep}", "bench": bench, "class": "S", "variant": "default",
            "rep": rep, "status": status,
            "output": {field: value, "complete": True, "verified": True} if value is not None else None,
            "placement": {"id": pid, "shape": label or pid, "memory": "local", "binding": "process",
                          "threads": threads}}


def spec(pid, rep, bench="cg", threads=2):
    return {k: v for k, v in rec(pid, rep, None, bench=bench, threads=threads).items() if k not in ("status", "output")}


def rounds_of(values, bench="cg", field="time_s"):
    """{placement: [value per round]} -> records of rounds 1..n."""
    return [rec(pid, i, v, bench=bench, field=field) for pid, vs in values.items() for i, v in enumerate(vs, 1)]


def test_separated_best_and_runner_up_stop_the_case():
    records = rounds_of({"a": [1.0, 1.01, 1.02, 1.03], "b": [2.0, 2.01, 2.02, 2.03], "c": [3.0] * 4})
    d = decide(records, spec("b", 5), 4, 0.05)
    assert d.stop and d.rounds == 4 and d.p == pytest.approx(2 / 70)
    assert d.reason == "best a and runner-up b separated after 4 rounds: Mann-Whitney p 0.029 < 0.05"
    # the same records, a stricter alpha: go on
    assert not decide(records, spec("b", 5), 4, 0.01).stop


def test_every_look_tests_at_alpha_split_over_the_looks():
    """Looking before each of rounds min+1..max: alpha / (max - min) a look (Bonferroni), so
    that stopping on chance alone stays below alpha over the whole study."""
    four = rounds_of({"a": [1.0, 1.01, 1.02, 1.03], "b": [2.0, 2.01, 2.02, 2.03]})
    d = decide(four, spec("b", 5), 4, 0.05, 6)                  # 2 looks: 0.025 each; 4 vs 4 gives 0.029
    assert not d.stop and d.reason.endswith("Mann-Whitney p 0.029 >= 0.025 (0.05 over 2 looks)"), d.reason
    five = four + [rec("a", 5, 1.04), rec("b", 5, 2.04)]
    d = decide(five, spec("b", 6), 4, 0.05, 6)
    assert d.stop and d.reason.endswith("p 0.0079 < 0.025 (0.05 over 2 looks)"), d.reason
    assert decide(four, spec("b", 5), 4, 0.05, 5).stop          # 1 look: alpha itself


def test_a_placement_short_of_runs_keeps_the_case_going():
    """Best and runner-up apart, but a third placement has too few ok runs to be ranked:
    it could be the best, so the case goes on."""
    records = rounds_of({"a": [1.0] * 4, "b": [2.0] * 4, "c": [3.0] * 4})
    for r in records[-3:]:
        r["status"] = "failed"                                    # c: 1 ok run of 4
    d = decide(records, spec("a", 5), 4, 0.05)
    assert not d.stop and "c has 1 ok runs after 4 rounds" in d.reason, d.reason


def test_interleaved_best_and_runner_up_go_on_and_the_worst_does_not_count():
    # a and b interleave; c is far worse (the worst alone would separate at once)
    records = rounds_of({"a": [1.0, 1.2, 1.4, 1.6], "b": [1.1, 1.3, 1.5, 1.7], "c": [9.0] * 4})
    d = decide(records, spec("a", 5), 4, 0.05)
    assert not d.stop and d.p > 0.05 and d.rounds == 4
    assert d.reason.startswith("best a and runner-up b not separated after 4 rounds: Mann-Whitney p "), d.reason


def test_only_the_earlier_rounds_of_the_same_case_count():
    apart = rounds_of({"a": [1.0] * 4, "b": [2.0] * 4})
    # a 5th round already on disk, and another case (4 threads) that mixes them up
    noise = [rec("a", 5, 5.0), rec("b", 5, 0.5)] + [rec(p, i, 1.0, threads=4) for p in "ab" for i in range(1, 5)]
    d = decide(apart + noise, spec("a", 5), 4, 0.05)
    assert d.stop and d.rounds == 4
    # round 4 of a min of 4 is never asked about: always measured
    assert not decide(apart[:3] + apart[4:7], spec("a", 4), 4, 0.05).stop


def test_failed_runs_do_not_count_and_fewer_than_min_ok_runs_go_on():
    records = rounds_of({"a": [1.0] * 4, "b": [2.0] * 4})
    records[0]["status"] = "failed"                          # a has 3 ok runs of 4 rounds
    d = decide(records, spec("a", 5), 4, 0.05)
    assert not d.stop and "a has 3 ok runs after 4 rounds" in d.reason and "minimum of 4" in d.reason
    # a not-needed record is no measured round
    more = records + [rec("a", 5, None, status="not-needed"), rec("b", 5, None, status="not-needed")]
    assert decide(more, spec("a", 6), 4, 0.05).rounds == 4


def test_a_case_of_one_placement_stops_at_min():
    d = decide(rounds_of({"a": [1.0, 1.1, 1.2]}), spec("a", 4), 3, 0.05)
    assert d.stop and d.p is None and d.rounds == 3 and d.reason.startswith("one placement in its case")


def test_a_kind_whose_higher_values_are_better_ranks_the_highest_first(monkeypatch):
    class Rate(Kind):
        name, family, metric, higher_is_better = "rate", "test", "rate", True
    monkeypatch.setitem(KINDS, "rate", Rate())
    # the lowest rates are far apart from the rest: only the top two matter
    records = rounds_of({"low": [1.0] * 4, "mid": [5.0, 5.1, 5.2, 5.3], "high": [5.05, 5.15, 5.25, 5.35]},
                        bench="rate", field="rate")
    d = decide(records, spec("low", 5, bench="rate"), 4, 0.05)
    assert not d.stop and d.reason.startswith("best high and runner-up mid not separated"), d.reason
    apart = rounds_of({"low": [1.0] * 4, "high": [9.0] * 4}, bench="rate", field="rate")
    d = decide(apart, spec("low", 5, bench="rate"), 4, 0.05)
    assert d.stop and d.reason.startswith("best high and runner-up low separated"), d.reason


def test_a_kind_whose_runs_are_not_compared_never_goes_past_min():
    d = decide([], spec("m", 2, bench="membw", threads=1), 1, 0.05)
    assert d.stop and d.reason == "membw runs are not compared between placements: 1 round, the minimum"


# -- the chunk ----------------------------------------------------------------------------

def write_as_a_run(results, r):
    path = results / "runs" / r["run_id"] / "record.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_record(path, {"record_version": 2, "study": "a", "variant": "default",
                        "kind": {"family": "npb", "metric": "mops", "unit": "Mop/s", "higher_is_better": True},
                        "class": "S", **r, "placement": {**r["placement"], "cpus": "0", "nodes": "0", "layout": "2 on 0",
                                                         "memory_nodes": "", "launcher": "taskset"}})


def chunk_entry(pid, rep):
    s = {**spec(pid, rep), "study": "a", "argv": ["taskset", "-c", "0", "BINARY"], "env": {"OMP_NUM_THREADS": "2"},
         "run": {"idle_check": "off"}, "capture": {}}
    s["placement"] = {**s["placement"], "cpus": "0", "nodes": "0", "layout": "2 on 0", "memory_nodes": "",
                      "launcher": "taskset"}
    return {"spec": s, "build": "b.json", "adaptive": {"min": 4, "max": 5, "alpha": 0.05}}


@pytest.fixture
def measured(monkeypatch, tmp_path):
    """measure_chunk with a runner that records a fixed time and lists what it measured."""
    from numaplace.run import runner
    done = []

    def fake(spec, build, record, window=None, held_lock=None, **more):
        os.close(held_lock)
        r = {**spec, "status": "ok", "output": {"time_s": 1.0, "complete": True, "verified": True}, "definition_sha256": runner.definition_digest(spec),
             **more["extra"]}
        record.parent.mkdir(parents=True, exist_ok=True)
        write_record(record, r)
        done.append(spec["run_id"])
        return r
    monkeypatch.setattr(runner, "execute_build", fake)
    monkeypatch.setattr("numaplace.machine.guard.lock_path", lambda: tmp_path / "machine.lock")
    return done


def test_a_chunk_past_min_writes_not_needed_records_and_keeps_them_when_started_again(tmp_path, measured):
    from numaplace.run.chunk import measure_chunk
    for r in rounds_of({"a": [1.0] * 4, "b": [2.0] * 4}) + rounds_of({"a": [1.0, 2.0, 1.0, 2.0]}, bench="mg") + \
            rounds_of({"b": [2.0, 1.0, 2.0, 1.0]}, bench="mg"):
        write_as_a_run(tmp_path, r)
    runs = [chunk_entry("a", 5), chunk_entry("b", 5), {**chunk_entry("a", 5), "spec": {
        **chunk_entry("a", 5)["spec"], "bench": "mg", "run_id": "mg.S.default.a.r5"}}]
    ledger = measure_chunk(runs, tmp_path, tmp_path / "rounds" / "r5.c1.json", {"chunk": "r5.c1", "round": 5},
                           decide=decide)
    assert measured == ["mg.S.default.a.r5"]                       # CG's case is decided: not measured
    assert [e["outcome"] for e in ledger["runs"]] == ["not-needed", "not-needed", "ok"]
    path = tmp_path / "runs" / "cg.S.default.a.r5" / "record.json"
    skipped = json.loads(path.read_text())
    assert skipped["status"] == "not-needed" and skipped["output"] is None and skipped["rep"] == 5
    assert skipped["reason"] == "best a and runner-up b separated after 4 rounds: Mann-Whitney p 0.029 < 0.05"
    assert skipped["placement"]["id"] == "a" and skipped["adaptive"] == {"min": 4, "max": 5, "alpha": 0.05}
    assert skipped["decision"] == {"rounds": 4, "p": pytest.approx(2 / 70)}
    assert skipped["round"] == {"chunk": "r5.c1", "round": 5, "position": 1, "runs": 3}
    # written as every record is: write-protected, with its second name, read by the readers
    assert path.stat().st_mode & 0o222 == 0 and os.path.samefile(path, path.parent / KEPT)
    assert {r.run_id: r.status for r in iter_records(tmp_path)}["cg.S.default.a.r5"] == "not-needed"
    assert json.loads((tmp_path / "runs/mg.S.default.a.r5/record.json").read_text())["adaptive"]["max"] == 5
    # started again (kill -9, --forcerun): kept byte for byte, nothing measured or decided again
    before = path.read_bytes()
    again = measure_chunk(runs, tmp_path, tmp_path / "rounds" / "r5.c1.json", {"chunk": "r5.c1", "round": 5},
                          decide=lambda *a: pytest.fail("a kept record was decided again"))
    assert [e["outcome"] for e in again["runs"]] == ["kept"] * 3 and measured == ["mg.S.default.a.r5"]
    assert path.read_bytes() == before


def test_a_not_needed_record_of_other_repetitions_is_decided_again(tmp_path, measured):
    """A study that now asks for other repetitions (here alpha 0.04, or max 6: two looks at
    0.025) does not keep a run found not needed under the old ones: it is decided again,
    and the old record is set aside as an attempt, kept."""
    from numaplace.run.chunk import measure_chunk
    for r in rounds_of({"a": [1.0] * 4, "b": [2.0] * 4}):
        write_as_a_run(tmp_path, r)
    first = measure_chunk([chunk_entry("a", 5)], tmp_path, tmp_path / "l.json", decide=decide)
    assert [e["outcome"] for e in first["runs"]] == ["not-needed"] and measured == []
    other = {**chunk_entry("a", 5), "adaptive": {"min": 4, "max": 5, "alpha": 0.04}}
    again = measure_chunk([other], tmp_path, tmp_path / "l.json", decide=decide)
    assert [e["outcome"] for e in again["runs"]] == ["not-needed"]
    run = tmp_path / "runs" / "cg.S.default.a.r5"
    assert json.loads((run / "record.json").read_text())["adaptive"]["alpha"] == 0.04
    assert json.loads((run / "attempts" / "1" / "record.json").read_text())["adaptive"]["alpha"] == 0.05
    stricter = {**chunk_entry("a", 5), "adaptive": {"min": 4, "max": 6, "alpha": 0.05}}
    measure_chunk([stricter], tmp_path, tmp_path / "l.json", decide=decide)
    assert measured == ["cg.S.default.a.r5"]                    # not separated at 0.025: measured


def test_without_a_decision_or_within_min_every_run_is_measured(tmp_path, measured):
    from numaplace.run.chunk import measure_chunk
    for r in rounds_of({"a": [1.0] * 4, "b": [2.0] * 4}):
        write_as_a_run(tmp_path, r)
    measure_chunk([chunk_entry("a", 5)], tmp_path, tmp_path / "l.json")                    # no decide given
    fixed = {k: v for k, v in chunk_entry("b", 5).items() if k != "adaptive"}             # a fixed run
    measure_chunk([fixed], tmp_path, tmp_path / "l.json", decide=decide)
    # a round within min is never asked about (nor the records read for it)
    within = {**chunk_entry("a", 4), "spec": {**chunk_entry("a", 4)["spec"], "run_id": "cg.S.default.x.r4"}}
    measure_chunk([within], tmp_path, tmp_path / "l.json", decide=lambda *a: pytest.fail("asked within min"))
    assert measured == ["cg.S.default.a.r5", "cg.S.default.b.r5", "cg.S.default.x.r4"]


# -- not needed is no failure ---------------------------------------------------------------

def test_not_needed_runs_are_not_retried_by_default_nor_counted_as_failed(tmp_path):
    for r in rounds_of({"a": [1.0] * 2}) + [rec("a", 3, None, status="not-needed"), rec("a", 4, None, status="failed")]:
        write_as_a_run(tmp_path, r)
    paths = sorted(str(p) for p in (tmp_path / "runs").glob("*/record.json"))
    lines, failed = workflow_outcome("a", paths, [], "report/a")
    assert not failed and lines[0].startswith("numaplace: 1 of 4 runs of study a failed (failed: 1); 1 not needed"), lines
    lines, _ = workflow_outcome("a", paths[:3], [], "report/a")
    assert lines == ["numaplace: 2 of 3 runs of study a ok; 1 not needed (adaptive repetitions: their case was "
                     "decided)"]
    assert set_aside_failed(tmp_path) == [("cg.S.default.a.r4", "failed")]
    assert set_aside_failed(tmp_path, ["not-needed"]) == [("cg.S.default.a.r3", "not-needed")]  # to decide again


def runs_rows(cases):
    """The runs table as the tables have it: {(bench, placement): [(rep, status, time)]}."""
    rows = []
    for (bench, pid), runs in cases.items():
        for rep, status, t, *more in runs:
            rows.append({"bench": bench, "class": "S", "variant": "default", "threads": 2, "placement_id": pid,
                         "placement": f"cpus {pid}", "cpus": pid, "layout": "", "memory": "local", "binding": "process",
                         "launcher": "taskset", "run_id": f"{bench}.{pid}.r{rep}", "rep": rep, "current": True,
                         "status": status, "npb_time_s": t, "mops": np.nan, "fidelity": "ok",
                         "reason": more[0] if more else None, "reps_min": more[1] if more else 2,
                         "reps_max": 4, "reps_alpha": 0.05, "decision_p": more[2] if more else np.nan})
    return pd.DataFrame(rows)


def test_best_worst_says_where_each_case_stopped_and_why():
    from numaplace.report.answer import kernel_lines
    from numaplace.tables.aggregate import best_worst_table, summary_table
    why = "best cpus 0 and runner-up cpus 1 separated after 2 rounds: Mann-Whitney p 0.33 < 0.5"
    runs = runs_rows({
        ("cg", "0"): [(1, "ok", 1.0), (2, "ok", 1.1)] + [(r, "not-needed", np.nan, why, 2, 1 / 3) for r in (3, 4)],
        ("cg", "1"): [(1, "ok", 2.0), (2, "ok", 2.1)] + [(r, "not-needed", np.nan, why, 2, 1 / 3) for r in (3, 4)],
        ("mg", "0"): [(r, "ok", 1.0 + r / 10) for r in (1, 2, 3, 4)],
        ("mg", "1"): [(r, "ok", 1.05 + r / 10) for r in (1, 2, 3, 4)],
    })
    summary = summary_table(runs)
    assert summary["n_failed"].tolist() == [0, 0, 0, 0]            # not needed is no failure
    bw = best_worst_table(summary, runs).set_index("bench")
    cg, mg = bw.loc["cg"], bw.loc["mg"]
    assert (cg["stopped_after"], cg["rounds_max"], cg["stopped_by"], cg["stop_reason"]) == (2, 4, "separated", why)
    assert cg["stop_p"] == pytest.approx(1 / 3)
    assert (mg["stopped_after"], mg["rounds_max"], mg["stopped_by"]) == (4, 4, "maximum")
    assert mg["stop_reason"] == f"not separated at the maximum, 4 rounds: Mann-Whitney p {mg['mwu_p']:.2g}"
    lines = kernel_lines(bw.reset_index(), summary, runs)
    assert lines[0].endswith("; stopped after 2 of at most 4 rounds: best and runner-up separated (p 0.33)"), lines
    assert lines[1].endswith(f"; not separated at the maximum, 4 rounds (p {mg['mwu_p']:.2g})"), lines
    # fixed repetitions: the rounds measured, and no words in the answer
    fixed = runs[runs["bench"] == "mg"].assign(reps_max=np.nan, reps_min=np.nan)
    (row,) = best_worst_table(summary_table(fixed), fixed).to_dict("records")
    assert (row["stopped_after"], row["rounds_max"], row["stopped_by"], row["stop_reason"]) == \
        (4, 4, "fixed", "fixed repetitions")
    assert "rounds" not in kernel_lines(pd.DataFrame([row]), summary_table(fixed), fixed)[0]
    # a case still measuring says so
    partial = runs[(runs["bench"] == "mg") & (runs["rep"] < 3)]
    (row,) = best_worst_table(summary_table(partial), partial).to_dict("records")
    assert (row["stopped_by"], row["stop_reason"]) == ("unfinished", "2 of at most 4 rounds measured so far")


# -- end to end -------------------------------------------------------------------------

FAKE_NPB = """#!/bin/sh
# {bench}.S for the test: on CPU 0 it takes 1.00 s, elsewhere {other} s (NPB's report, nothing run)
cpus=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
if [ "$cpus" = 0 ]; then t=1.00; m=100.00; else t={other}; m={other_mops}; fi
printf ' {BENCH} Benchmark Completed.\\n Class           =                        S\\n'
printf ' Total threads   =                        1\\n Time in seconds =                     %s\\n' "$t"
printf ' Mop/s total     =                   %s\\n Verification    =               SUCCESSFUL\\n' "$m"
"""


@pytest.mark.workflow
def test_adaptive_study_end_to_end(repo, tmp_path):
    """CG's placements are 1 s apart: after its min of 4 rounds (4 vs 4 runs apart: p 0.029)
    it is not yet separated at the 0.025 of each of its two looks (before rounds 5 and 6),
    after 5 it is (p 0.0079); MG's take the same time on both: it goes on to the max of 6.
    The records, the ledgers, best_worst.csv and the answer say so."""
    from conftest import copy_workflow, run_snakemake
    if len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0):
        pytest.skip("needs CPUs 0 and 1")
    wf = copy_workflow(repo, tmp_path / "wf")
    name = "adaptive"
    (wf / "adaptive.yaml").write_text(yaml.safe_dump({
        "study": name, "benchmarks": ["cg", "mg"], "classes": ["S"], "launcher": "taskset",
        "run": {"idle_check": "off"}, "repetitions": {"min": 4, "max": 6},
        "experiments": [{"name": "two-cpus", "placements": [{"cpus": "0"}, {"cpus": "1"}]}]}))
    run_snakemake(wf, "--cores", "1", "build", "--config", "study=adaptive.yaml")
    for binary in wf.glob("results/build/*/default/bin/*.S.x"):
        bench = binary.name.split(".")[0]
        other = "2.00" if bench == "cg" else "1.00"
        binary.write_text(FAKE_NPB.format(bench=bench, BENCH=bench.upper(), other=other,
                                          other_mops=f"{100 / float(other):.2f}"))
        binary.chmod(0o755)
    # the rule's inputs: round 5 (past min) waits for rounds 1-4, round 6 for round 5
    dag = run_snakemake(wf, "-n", "--dag", "--config", "study=adaptive.yaml").stdout
    node = {m[1]: m[0] for m in re.findall(r'(\d+)\[label = "measure\\nchunk: (r\d\.c\d)"', dag)}
    edges = set(re.findall(r"(\d+) -> (\d+)", dag))
    assert len(node) == 6, dag[-2000:]
    assert {c for c in node if (node[c], node["r5.c1"]) in edges} == {"r1.c1", "r2.c1", "r3.c1", "r4.c1"}
    assert {c for c in node if (node[c], node["r6.c1"]) in edges} == {"r5.c1"}
    assert not any((node[c], node["r4.c1"]) in edges for c in node)
    r = run_snakemake(wf, "--cores", "2", "--config", "study=adaptive.yaml")
    results = wf / "results" / name
    recs = {p.parent.name: json.loads(p.read_text()) for p in (results / "runs").glob("*/record.json")}
    status = {rid: r_["status"] for rid, r_ in recs.items()}
    assert len(status) == 24
    for cpu in "01":
        assert [status[f"cg.S.default.c{cpu}_loc_p_ts.r{i}"] for i in range(1, 7)] == ["ok"] * 5 + ["not-needed"]
        assert [status[f"mg.S.default.c{cpu}_loc_p_ts.r{i}"] for i in range(1, 7)] == ["ok"] * 6
    skipped = recs["cg.S.default.c1_loc_p_ts.r6"]
    assert skipped["reason"] == ("best cpus 0 and runner-up cpus 1 separated after 5 rounds: Mann-Whitney p 0.0079 "
                                 "< 0.025 (0.05 over 2 looks)")
    # the ledgers: round 6 says which runs were not needed; round 5 measured them all
    def outcomes(chunk):
        return sorted(e["outcome"] for e in json.loads((results / "rounds" / f"{chunk}.json").read_text())["runs"])
    assert outcomes("r4.c1") == outcomes("r5.c1") == ["ok"] * 4
    assert outcomes("r6.c1") == ["not-needed", "not-needed", "ok", "ok"]
    bw = pd.read_csv(results / "tables" / "best_worst.csv").set_index("bench")
    assert (bw.loc["cg", "stopped_after"], bw.loc["cg", "rounds_max"], bw.loc["cg", "stopped_by"]) == (5, 6, "separated")
    assert bw.loc["cg", "stop_reason"] == skipped["reason"]
    assert (bw.loc["mg", "stopped_after"], bw.loc["mg", "stopped_by"]) == (6, "maximum")
    answer = (wf / "report" / name / "answer.txt").read_text()
    assert "stopped after 5 of at most 6 rounds: best and runner-up separated (p 0.0079)" in answer, answer
    assert "not separated at the maximum, 6 rounds (p 1)" in answer, answer
    assert f"numaplace: 22 of 24 runs of study {name} ok; 2 not needed" in r.out, r.out[-3000:]
    assert "failed" not in r.out.split("numaplace: the answer")[-1], r.out[-3000:]
