"""summary.csv and best_worst.csv (numaplace.tables.aggregate): per-placement statistics
and the best/worst choice. Written against the mutants mutmut left alive
(tests/benchmarks/mutation_score.sh). tests/test_aggregate.py builds its tables once per
module, which mutmut credits to its first test only: the tables are built in each test here.

Runs are given as the runs table has them (one row per record), with only the columns
the summary reads."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numaplace.tables.aggregate import best_worst_table, build_tables, summary_table

pytestmark = pytest.mark.unit

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "records" / "results" / "fixture"

SUMMARY_COLUMNS = [
    "bench", "class", "variant", "threads", "placement_id", "placement", "cpus", "layout", "memory",
    "binding", "launcher", "n_planned", "n_missing", "n_records", "n", "n_failed", "failed_statuses",
    "n_set_aside", "n_drift", "time_min_s", "time_median_s", "time_mean_s", "time_max_s", "time_std_s",
    "time_cv", "time_median_lo_s", "time_median_hi_s", "time_median_level", "mops_median"]


def run(pid, t, status="ok", mops=np.nan, current=True, rid=None, threads=2, fidelity="ok"):
    return {"bench": "cg", "class": "A", "variant": "default", "threads": threads, "placement_id": pid,
            "placement": f"label {pid}", "cpus": "0-1", "layout": "2 on 0", "memory": "local",
            "binding": "process", "launcher": "numactl", "run_id": rid or f"{pid}.r{t}",
            "current": current, "status": status, "npb_time_s": t, "mops": mops, "fidelity": fidelity}


def test_summary_csv_columns_and_rows_of_the_fixture_study():
    s = build_tables(FIXTURE, FIXTURE / "plan.tsv")["summary"]
    assert list(s.columns) == SUMMARY_COLUMNS
    assert list(s.index) == list(range(len(s)))
    assert [(r.variant, r.threads, r.placement, r.n_planned, r.n_missing) for r in s.itertuples()] == [
        ("default", 1, "cpus 0 · pinned threads", 1, 0), ("default", 2, "1/1 on 0,1", 5, 1),
        ("default", 2, "2 on 0", 3, 0), ("default", 2, "2 on 1 · interleave 0-1", 2, 0),
        ("default", 4, "2/2 on 0,1", 3, 0), ("default", 4, "2/2 on 0,1 · membind 0", 3, 0),
        ("serial-init", 4, "2/2 on 0,1", 2, 0), ("default", 2, "2 on 0", 1, 0)]
    assert str(s["n_planned"].dtype) == "Int64" and str(s["threads"].dtype) == "Int64"


def test_failed_runs_are_counted_per_status():
    runs = pd.DataFrame([run("a", 10.0), run("a", 0.0, "failed", rid="a.r2"), run("a", 0.0, "failed", rid="a.r3"),
                         run("a", 0.0, "timeout", rid="a.r4"), run("a", 0.0, "not-idle", current=False, rid="a.r5")])
    (s,) = summary_table(runs).to_dict("records")
    assert (s["n"], s["n_failed"], s["n_set_aside"], s["n_records"]) == (1, 4, 1, 5)
    assert s["failed_statuses"] == "failed:2 not-idle:1 timeout:1"


def test_a_planned_placement_never_measured_is_listed_from_the_plan():
    runs = pd.DataFrame([run("a", 10.0, rid="a.r1")])
    plan = pd.DataFrame([
        {**{k: v for k, v in run("a", 0).items() if k in ("bench", "class", "variant", "threads", "placement",
                                                           "cpus", "layout", "memory", "binding", "launcher")},
         "placement_id": "a", "run_id": rid} for rid in ("a.r1", "a.r2")] + [
        {"bench": "cg", "class": "A", "variant": "default", "threads": 2, "placement_id": "b", "run_id": "b.r1",
         "placement": "2 on 1", "cpus": "2-3", "layout": "2 on 1", "memory": "local", "binding": "process",
         "launcher": "numactl"}])
    s = summary_table(runs, plan)
    a, b = s.to_dict("records")
    assert (a["placement_id"], a["n_planned"], a["n_missing"], a["n"]) == ("a", 2, 1, 1)
    assert (b["placement_id"], b["placement"], b["cpus"], b["n_planned"], b["n_missing"], b["n"]) == \
        ("b", "2 on 1", "2-3", 1, 1, 0)
    assert pd.isna(b["time_median_s"])
    (only,) = summary_table(runs).to_dict("records")                      # no plan: not known
    assert pd.isna(only["n_planned"]) and pd.isna(only["n_missing"])


def test_median_mops_of_the_ok_runs_that_have_it():
    runs = pd.DataFrame([run("a", 10.0, mops=100.0), run("a", 11.0, mops=np.nan), run("a", 12.0, mops=80.0),
                         run("b", 9.0)])
    s = summary_table(runs).set_index("placement_id")
    assert s.loc["a", "mops_median"] == 90.0 and pd.isna(s.loc["b", "mops_median"])


def test_ties_in_time_go_to_the_higher_mops_and_a_placement_without_mops_ranks_last():
    """NPB prints times to 0.01 s: equal medians are told apart by Mop/s (full precision);
    a placement whose runs have no Mop/s is neither the best nor spared being the worst."""
    runs = pd.DataFrame([run(p, 10.0, mops=m, rid=f"{p}.r{i}") for p, m in (("a", 100.0), ("b", 101.0), ("c", np.nan))
                         for i in range(2)])
    (bw,) = best_worst_table(summary_table(runs), runs).to_dict("records")
    assert (bw["best_placement_id"], bw["worst_placement_id"]) == ("b", "c")
    assert bw["runner_up_placement_id"] == "a"


BEST_WORST_COLUMNS = [
    "bench", "class", "variant", "threads", "n_placements", "n_placements_planned", "best_placement",
    "best_placement_id", "best_n", "best_median_s", "best_min_s", "best_max_s", "best_n_drift", "best_mops_median",
    "worst_placement", "worst_placement_id", "worst_n", "worst_median_s", "worst_min_s", "worst_max_s",
    "worst_n_drift", "worst_mops_median",
    "improvement_pct", "speedup", "compared_by", "below_resolution", "ranges_overlap", "differs", "mwu_p",
    "reps_needed", "runner_up_placement", "runner_up_placement_id", "runner_up_median_s", "runner_up_mwu_p",
    "runner_up_reps_needed", "rests_on_drift", "stopped_after", "rounds_max", "stopped_by", "stop_reason", "stop_p"]


def test_best_worst_csv_of_the_fixture_study():
    """The fixture's cases (tests/fixtures/records/make_fixtures.py): 2 threads has a
    runner-up 3 vs 3 runs apart (p = 0.1: 4 runs each would tell), 4 threads two placements
    told apart by their ranges, 1 thread and serial-init a single placement."""
    bw = build_tables(FIXTURE, FIXTURE / "plan.tsv")["best_worst"]
    assert list(bw.columns) == BEST_WORST_COLUMNS
    rows = {(r["variant"], r["threads"]): r for r in bw.to_dict("records")}
    assert list(rows) == [("default", 1), ("default", 2), ("default", 4), ("serial-init", 4)]
    t2 = rows[("default", 2)]
    assert (t2["n_placements"], t2["best_placement"], t2["worst_placement"], t2["worst_n_drift"]) == \
        (3, "1/1 on 0,1", "2 on 1 · interleave 0-1", 1)
    assert (t2["ranges_overlap"], t2["differs"], pd.isna(t2["mwu_p"]), pd.isna(t2["reps_needed"])) == \
        (False, "unknown", True, True)
    assert (t2["runner_up_placement"], t2["runner_up_placement_id"], t2["runner_up_median_s"]) == \
        ("2 on 0", "c0-1_loc_p_nc", 11.0)
    assert t2["runner_up_mwu_p"] == pytest.approx(0.1) and t2["runner_up_reps_needed"] == 4
    assert t2["rests_on_drift"] is True
    t4 = rows[("default", 4)]
    assert (t4["differs"], t4["ranges_overlap"], pd.isna(t4["reps_needed"])) == ("yes", False, True)
    assert t4["mwu_p"] == pytest.approx(0.1) and pd.isna(t4["runner_up_placement"])
    assert pd.isna(t4["runner_up_mwu_p"]) and pd.isna(t4["runner_up_reps_needed"])
    for one in (rows[("default", 1)], rows[("serial-init", 4)]):
        assert one["best_placement_id"] == one["worst_placement_id"] and one["differs"] == "n/a"
        assert pd.isna(one["ranges_overlap"]) and pd.isna(one["mwu_p"]) and pd.isna(one["reps_needed"])
    assert str(bw["reps_needed"].dtype) == "Int64"


def test_equal_placements_are_ranked_by_name():
    """Same time, no Mop/s: the best is the first by name, the worst the last (stable
    across runs of the table)."""
    runs = pd.DataFrame([run(p, 10.0, rid=f"{p}.r{i}") for p in ("c", "a", "b") for i in range(2)])
    (bw,) = best_worst_table(summary_table(runs), runs).to_dict("records")
    assert (bw["best_placement_id"], bw["worst_placement_id"], bw["runner_up_placement_id"]) == ("a", "c", "b")


def test_two_runs_each_tell_by_ranges_but_not_by_the_test():
    """2 runs per placement: the ranges decide (differs yes/no), no p-value (fewer than 3);
    two placements have no runner-up."""
    apart = pd.DataFrame([run("a", t, rid=f"a{t}") for t in (1.0, 1.1)] + [run("b", t, rid=f"b{t}") for t in (2.0, 2.1)])
    (bw,) = best_worst_table(summary_table(apart), apart).to_dict("records")
    assert (bw["differs"], bw["ranges_overlap"], pd.isna(bw["mwu_p"])) == ("yes", False, True)
    assert bw["runner_up_placement"] is None and pd.isna(bw["runner_up_mwu_p"])
    touching = pd.DataFrame([run("a", t, rid=f"a{t}") for t in (1.0, 2.0)] + [run("b", t, rid=f"b{t}") for t in (2.0, 2.1)])
    (bw,) = best_worst_table(summary_table(touching), touching).to_dict("records")
    assert (bw["differs"], bw["ranges_overlap"]) == ("no", True)


def test_the_runner_up_is_tested_from_three_runs_each():
    runs = pd.DataFrame([run(p, t + d, rid=f"{p}{d}") for p, t in (("a", 1.0), ("b", 2.0), ("c", 3.0))
                         for d in (0.0, 0.1, 0.2)])
    (bw,) = best_worst_table(summary_table(runs), runs).to_dict("records")
    assert bw["runner_up_placement_id"] == "b" and bw["runner_up_mwu_p"] == pytest.approx(0.1)
    assert bw["mwu_p"] == pytest.approx(0.1)


def test_an_ok_run_without_a_time_is_not_measured():
    runs = pd.DataFrame([run("a", 10.0), run("a", pd.NA, rid="a.na"), run("a", None, rid="a.none")])
    (s,) = summary_table(runs).to_dict("records")
    assert (s["n"], s["n_records"], s["time_median_s"]) == (1, 3, 10.0)


def test_placements_planned_per_case_count_the_unmeasured_ones():
    """A case's planned placements are its rows of summary.csv, measured or not (a placement
    of the plan without a run yet), and only its own: not another case's of the same bench."""
    runs = pd.DataFrame([run("a", 10.0, rid="a.r1"), run("b", 12.0, rid="b.r1"), run("c", 11.0, rid="c.r1", threads=4)])
    keys = ("bench", "class", "variant", "threads", "placement", "cpus", "layout", "memory", "binding", "launcher")
    plan = pd.DataFrame([{**{k: v for k, v in run(p, 0, threads=t).items() if k in keys}, "placement_id": p,
                          "run_id": f"{p}.r1"} for p, t in (("a", 2), ("b", 2), ("never", 2), ("c", 4))])
    bw = best_worst_table(summary_table(runs, plan), runs).set_index("threads")
    assert (bw.loc[2, "n_placements"], bw.loc[2, "n_placements_planned"]) == (2, 3)
    assert (bw.loc[4, "n_placements"], bw.loc[4, "n_placements_planned"]) == (1, 1)


def test_a_runner_up_told_apart_needs_no_more_runs_however_wide_its_spread():
    """Best and runner-up 4 runs each, every best run faster (p 0.03): told apart, so no
    repetitions are asked for, though their spread alone would ask for 8."""
    times = {"a": (1.0, 1.1, 3.9, 4.0), "b": (4.1, 4.2, 7.0, 7.1), "c": (10.0, 10.1, 10.2, 10.3)}
    runs = pd.DataFrame([run(p, t, rid=f"{p}{t}") for p, ts in times.items() for t in ts])
    (bw,) = best_worst_table(summary_table(runs), runs).to_dict("records")
    assert (bw["best_placement_id"], bw["runner_up_placement_id"]) == ("a", "b")
    assert bw["runner_up_mwu_p"] < 0.05 and pd.isna(bw["runner_up_reps_needed"])


def adaptive_runs(times, most):
    """Runs of adaptive repetitions (at most `most` rounds), repetition i the i-th time."""
    return pd.DataFrame([{**run(p, t, rid=f"{p}.r{i}"), "rep": i, "reps_max": most, "reason": None,
                          "decision_p": np.nan} for p, ts in times.items() for i, t in enumerate(ts, 1)])


def test_at_the_maximum_the_stop_is_judged_against_the_runner_up():
    """Every round measured and best and runner-up not separated: stop_p is theirs (not
    the best against the worst), and the reason says it."""
    runs = adaptive_runs({"a": (1.0, 1.1, 1.2), "b": (1.05, 1.15, 1.25), "c": (5.0, 5.1, 5.2)}, 3)
    (bw,) = best_worst_table(summary_table(runs), runs).to_dict("records")
    assert bw["stopped_by"] == "maximum" and bw["mwu_p"] == pytest.approx(0.1)
    assert bw["stop_p"] == bw["runner_up_mwu_p"] and bw["stop_p"] > 0.1
    assert bw["stop_reason"] == f"not separated at the maximum, 3 rounds: Mann-Whitney p {bw['stop_p']:.2g}"


def test_at_the_maximum_with_too_few_runs_nothing_is_tested():
    runs = adaptive_runs({"a": (1.0, 1.1), "b": (2.0, 2.1), "c": (5.0, 5.1)}, 2)
    (bw,) = best_worst_table(summary_table(runs), runs).to_dict("records")
    assert bw["stopped_by"] == "maximum" and pd.isna(bw["stop_p"])
    assert bw["stop_reason"] == "not separated at the maximum, 2 rounds: too few runs to test"


def test_a_study_without_runs_has_the_summary_columns():
    runs = pd.DataFrame(columns=list(run("a", 1.0)))
    s = summary_table(runs)
    assert s.empty and list(s.columns) == SUMMARY_COLUMNS
