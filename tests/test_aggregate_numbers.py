"""The tables' exact numbers (numaplace.tables.aggregate): threads per node, which records
each statistic is over, medians not means, orderings and thresholds."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from test_aggregate import adaptive_runs, run

from numaplace.record.store import Record
from numaplace.tables import aggregate as ag
from numaplace.tables.aggregate import best_worst_table, build_tables, summary_table

FIXTURE = Path(__file__).parent / "fixtures" / "records" / "results" / "fixture"


def test_threads_per_node_spread_in_proportion_to_the_placements_cpus():
    """4 threads on CPUs 0-2 of nodes 0,0,1: two thirds on node 0, one third on node 1, nodes in order."""
    half = lambda c: c // 2                                                   # noqa: E731
    assert ag.thread_nodes({"cpus": "0-2", "threads": 4}, half) == "0:2.66667,1:1.33333"
    assert ag.thread_nodes({"cpus": "6,7,4,5", "threads": 4}, half) == "2:2,3:2"
    assert ag.thread_nodes({"cpus": "0-3", "threads": 2}, half) == "0:1,1:1"
    assert ag.thread_nodes({"cpus": "0-1", "threads": 2}, lambda c: None) is None
    assert ag.thread_nodes({"cpus": "0-1", "threads": None}, half) is None
    assert ag.thread_nodes({"cpus": "x"}, half) is None


def test_runs_table_lists_a_placements_rounds_in_order():
    """runs.csv: within each placement, repetition 1, 2, 3 ... and a run's attempts in order."""
    runs = build_tables(FIXTURE)["runs"]
    for _, g in runs.groupby(["bench", "class", "variant", "threads", "placement_id"], sort=False):
        keys = list(zip(g["rep"].fillna(0), g["attempt"]))
        assert keys == sorted(keys), g[["run_id", "rep", "attempt"]]
    assert runs["rep"].is_monotonic_increasing is False      # several placements: the order restarts


def test_summary_is_over_current_ok_runs_and_drift_counts_only_those():
    """A set-aside ok attempt (20 s) and a failed run judged drift change neither the time nor n_drift."""
    runs = pd.DataFrame([run("a", 10.0, rid="a.r1"), run("a", 12.0, rid="a.r2", fidelity="drift"),
                         run("a", 20.0, rid="a.r1", current=False, fidelity="drift"),
                         run("a", 30.0, "failed", rid="a.r3", fidelity="drift")])
    (s,) = summary_table(runs).to_dict("records")
    assert (s["n"], s["n_records"], s["n_failed"], s["n_set_aside"], s["n_drift"]) == (2, 4, 1, 1, 1)
    assert (s["time_min_s"], s["time_median_s"], s["time_max_s"]) == (10.0, 11.0, 12.0)


def test_median_mops_is_the_median_not_the_mean():
    """100, 80 and 10 Mop/s: 80 (the mean would be 63.3)."""
    runs = pd.DataFrame([run("a", 10.0, mops=100.0, rid="1"), run("a", 11.0, mops=80.0, rid="2"),
                         run("a", 12.0, mops=10.0, rid="3")])
    assert summary_table(runs).loc[0, "mops_median"] == 80.0


def test_an_adaptive_case_stops_for_the_reason_of_its_first_not_needed_round():
    """Rounds 3 and 4 were not needed: the case stopped after 2, for round 3's reason and p."""
    runs = adaptive_runs({"a": (1.0, 1.1), "b": (2.0, 2.1)}, 6)
    skipped = [{**run(p, np.nan, "not-needed", rid=f"{p}.r{i}"), "rep": i, "reps_max": 6,
                "reason": f"separated before round {i}", "decision_p": p_}
               for p in ("a", "b") for i, p_ in ((4, 0.01), (3, 0.02))]
    runs = pd.concat([runs, pd.DataFrame(skipped)], ignore_index=True)
    (bw,) = best_worst_table(summary_table(runs), runs).to_dict("records")
    assert (bw["stopped_after"], bw["rounds_max"], bw["stopped_by"]) == (2, 6, "separated")
    assert (bw["stop_reason"], bw["stop_p"]) == ("separated before round 3", 0.02)


def test_more_runs_are_asked_only_when_more_than_there_are_would_be_needed():
    """The estimate says 4 runs each: asked of 3 runs each, not of 4 (they have that many)."""
    fast, slow = [1.0, 1.1, 1.2, 1.3], [12.0, 13.0, 14.0, 15.0]
    assert pd.isna(ag._more_needed(fast, slow, False))
    assert ag._more_needed(fast[:3], slow[:3], False) == 4
    assert pd.isna(ag._more_needed(fast[:3], slow[:3], True))
    assert ag._more_needed([1.0, 1.1, 1.2], [1.05, 1.15, 1.25], False) == 145


def test_foreign_load_at_the_threshold_is_not_shared_cpus():
    """foreign_load_max (5 %) is the most foreign load a run may see and still count as alone."""
    row = ag.record_row({"run_id": "x", "status": "ok", "foreign_load": {"share": 0.05}})
    assert (row["foreign_load_share"], row["shared_cpus"]) == (0.05, False)
    assert ag.record_row({"run_id": "x", "status": "ok", "foreign_load": {"share": 0.051}})["shared_cpus"] is True
    assert ag.record_row({"run_id": "x", "status": "ok", "foreign_load": {"share": 0.051}},
                         {"foreign_load_max": 0.1})["shared_cpus"] is False


def test_drift_reasons_name_their_aspect_when_the_verdict_has_no_list():
    fid = {"verdict": "drift", "threads": {"verdict": "drift", "reasons": ["tid 5 on 7"]},
           "memory": {"verdict": "drift"}}
    assert ag._fidelity_reasons(fid) == "threads: tid 5 on 7; memory: drift"
    assert ag._fidelity_reasons({"reasons": ["a", "b"]}) == "a; b"
    assert ag._fidelity_reasons({"reason": "no capture"}) == "no capture"


def test_counted_remote_share_is_predicted_from_the_nodes_the_threads_ran_on():
    """Threads on node 0 (CPUs 0-1), a quarter of the data on node 1: 25 % remote predicted."""
    rec = Record({"run_id": "x", "status": "ok", "placement": {"cpus": "0-1", "threads": 2},
                  "topology": {"nodes": {"0": "0-1", "1": "2-3"}},
                  "counters": {"captured": True, "events": {"first": "local_dram", "remote": "remote_dram"},
                               "local": 300, "remote": 100, "remote_share": 0.25}})
    assert ag.counter_columns(rec, {0: 75, 1: 25}) == {
        "counted_events": "local_dram / remote_dram", "counted_local": 300, "counted_remote": 100,
        "counted_remote_share": 0.25, "predicted_remote_share": 0.25}
    assert ag.counter_columns(Record({"run_id": "x", "counters": {}}), {0: 1}) is None


def numastat_row(rid, status="ok", current=True, local=0, foreign=0):
    return {"run_id": rid, "attempt": 1, "status": status, "current": current, "bench": "cg", "class": "A",
            "variant": "default", "threads": 2, "placement_id": "a", "placement": "2 on 0",
            "_numastat": {"local_node": {"0": local}, "numa_foreign": {"0": foreign}}}


def test_numastat_group_is_the_median_of_the_current_ok_runs():
    """Three current ok runs (10, 20, 90 local pages): 20; a set-aside ok run and a failed run are run rows only."""
    rows = [numastat_row("r1", local=10, foreign=1), numastat_row("r2", local=20, foreign=2),
            numastat_row("r3", local=90, foreign=3), numastat_row("r2", current=False, local=1000),
            numastat_row("r4", "failed", local=5000)]
    t = ag.numastat_table(rows)
    assert list(t["level"]) == ["run"] * 5 + ["group"]
    g = t[t["level"] == "group"].iloc[0]
    assert (g["n_runs"], g["node"], g["local_node"], g["numa_foreign"], g["scope"]) == (3, 0, 20.0, 2.0, "system-wide")


def test_runs_table_writes_zero_for_a_node_without_pages_and_empty_without_a_sample():
    """A run whose pages are all on node 0 has 0 bytes on node 1 (not unknown); a run without
    a numa_maps sample has empty page columns."""
    runs = build_tables(FIXTURE)["runs"].set_index(["run_id", "attempt"])
    one = runs.loc[("cg.A.default.c0-1_loc_p_nc.r1", 1)]
    assert (one["data_bytes_node0"], one["data_bytes_node1"], one["data_pages_node1"]) == (1048576, 0, 0)
    assert one["footprint"] == "steady" and one["data_bytes"] == 1048576
    il = runs.loc[("cg.A.default.c2-3_il0-1_p_nc.r1", 1)]
    assert (il["data_bytes_node0"], il["data_bytes_node1"], il["data_pages_node1"], il["data_bytes"]) == \
        (33177600, 7782400, 1900, 40960000)
    none = runs.loc[("mg.A.default.c0-1_loc_p_nc.r1", 1)]
    assert pd.isna(none["data_bytes_node1"]) and pd.isna(none["footprint"])


def test_a_record_without_a_steady_sample_is_tabled_at_its_peak():
    """A run whose footprint never settled (steady None), or an older record with only the peak:
    the row says footprint peak and takes the peak's bytes."""
    view = {"t": 2.0, "data_bytes": {"0": 3 * 2**20, "1": 2**20}, "data_pages": {"0": 768, "1": 256}}
    row = ag.record_row({"run_id": "cg.A.default.x.r1", "status": "ok", "bench": "cg",
                         "captures": {"numa_maps": {"peak": view, "last": view}}})
    assert (row["footprint"], row["data_bytes"], row["data_pages"]) == ("peak", 4 * 2**20, 1024)
    assert row["_data_pages"] == {0: 768, 1: 256}
    row = ag.record_row({"run_id": "cg.A.default.x.r1", "status": "ok", "bench": "cg",
                         "captures": {"numa_maps": {"peak": view, "steady": None, "last": view}}})
    assert (row["footprint"], row["data_bytes"], row["_data_bytes"]) == ("peak", 4 * 2**20, {0: 3 * 2**20, 1: 2**20})


PLACED = {"cpus": "0-1", "threads": 2, "shape": "compact 2", "binding": "process", "memory": "local",
          "memory_nodes": "", "launcher": "numactl", "layout": "2 on 0"}
TOPO2 = {"nodes": {"0": "0-1", "1": "2-3"}}


def test_counter_columns_appear_once_any_run_counted_and_stay_empty_for_the_others():
    """runs.csv has the counters' columns where some run has counts; a run without them has empty cells."""
    counted = {"run_id": "a.r1", "status": "ok", "placement": {**PLACED, "id": "a"}, "topology": TOPO2,
               "counters": {"captured": True, "events": {"first": "l", "remote": "r"}, "local": 3, "remote": 1,
                            "remote_share": 0.25}}
    plain = {"run_id": "b.r1", "status": "ok", "placement": {**PLACED, "id": "b"}, "topology": TOPO2}
    t = ag.runs_table(ag.load_rows([counted, plain])).set_index("run_id")
    assert (t.loc["a.r1", "counted_events"], t.loc["a.r1", "counted_local"], t.loc["a.r1", "counted_remote"]) == \
        ("l / r", 3, 1)
    assert pd.isna(t.loc["b.r1", "counted_local"]) and pd.isna(t.loc["b.r1", "counted_events"])
    assert "counted_local" not in ag.runs_table(ag.load_rows([plain])).columns
    assert t.loc["a.r1", "thread_nodes"] == "0:2" and t.loc["a.r1", "placement"] == "compact 2"


def test_a_plan_without_rows_is_no_plan(tmp_path):
    """An empty plan.tsv (header only) plans nothing: the summary then knows no planned counts."""
    empty = tmp_path / "plan.tsv"
    empty.write_text("run_id\tbench\tclass\tvariant\tthreads\tplacement_id\n")
    assert ag.read_plan(empty) is None and ag.read_plan(tmp_path / "none.tsv") is None and ag.read_plan(None) is None
    plan = ag.read_plan(Path(__file__).parent / "fixtures" / "records" / "results" / "fixture" / "plan.tsv")
    assert len(plan) and plan["class"].map(type).eq(str).all()
