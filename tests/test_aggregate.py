"""Aggregation of run records into tables, checked by hand on the fixture study
(tests/fixtures/records/make_fixtures.py describes every record and value)."""
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numaplace.kinds import table_captions
from numaplace.tables import aggregate
from numaplace.tables.aggregate import (best_worst_table, build_tables, mann_whitney_p, read_tables,
                                        summary_table, write_tables)

FIXTURE = Path(__file__).parent / "fixtures" / "records" / "results" / "fixture"
PLAN = FIXTURE / "plan.tsv"


@pytest.fixture(scope="module")
def tables():
    return build_tables(FIXTURE, PLAN)


def group(summary, variant, threads, placement):
    g = summary[(summary["bench"] == "cg") & (summary["variant"] == variant) &
                (summary["threads"] == threads) & (summary["placement"] == placement)]
    assert len(g) == 1, (variant, threads, placement)
    return g.iloc[0]


def test_runs_table_counts_every_record_and_attempt(tables):
    runs = tables["runs"]
    on_disk = list(FIXTURE.glob("runs/**/record.json"))
    assert len(runs) == len(on_disk) == 20
    attempt = runs[~runs["current"]]
    assert list(attempt["run_id"]) == ["cg.A.default.c0-3_loc_p_nc.r2"]
    assert attempt.iloc[0]["status"] == "timeout" and attempt.iloc[0]["attempt"] == 1
    # the current record of that run is its second attempt
    cur = runs[(runs["run_id"] == "cg.A.default.c0-3_loc_p_nc.r2") & runs["current"]].iloc[0]
    assert cur["attempt"] == 2 and cur["status"] == "ok" and cur["npb_time_s"] == 5.2
    assert set(runs["status"]) == {"ok", "failed", "unverified", "timeout", "placement-failed"}
    # human labels, never ids
    assert "2 on 1 · interleave 0-1" in set(runs["placement"])
    assert "cpus 0 · pinned threads" in set(runs["placement"])
    assert {"npb_time_s", "mops", "verification", "wall_s", "fidelity", "variant", "class",
            "threads", "data_bytes_node0", "data_pages_node1"} <= set(runs.columns)


def test_runs_table_pages_from_numa_maps(tables):
    runs = tables["runs"].set_index(["run_id", "attempt"])
    r1 = runs.loc[("cg.A.default.c0-3_loc_p_nc.r1", 1)]
    # hugetlb pages count as pages of their own size; file mappings are not data
    assert (r1["data_pages_node0"], r1["data_pages_node1"]) == (1002, 1203)
    assert (r1["data_bytes_node0"], r1["data_bytes_node1"]) == (8290304, 4927488)
    assert r1["data_pages"] == 2205
    f1 = runs.loc[("cg.A.default.c0-3_mb0_p_nc.r1", 1)]
    # 256 pages of 4 KiB, all on node 0 (membind 0): from the capture summary's data_pages
    assert (f1["data_pages"], f1["data_bytes"]) == (256, 1048576)
    assert (f1["data_pages_node0"], f1["data_pages_node1"]) == (256, 0)
    pf = runs.loc[("mg.A.default.c0-1_loc_p_nc.r1", 1)]
    assert pd.isna(pf["data_bytes"]) and pd.isna(pf["npb_time_s"])


def without_summary_pages(src, dest):
    """A copy of a run directory as a record written before the runner put data_pages
    into the capture summary: its pages come from the numa_maps file."""
    shutil.copytree(src, dest)
    rec = json.loads((dest / "record.json").read_text())
    for view in ("peak", "steady", "last"):
        del rec["captures"]["numa_maps"][view]["data_pages"]
    (dest / "record.json").write_text(json.dumps(rec))


def test_pages_from_the_numa_maps_file_match_the_summary(tmp_path):
    """The same hand-checked pages read from the run's numa_maps.peak.txt (the kernel's
    lines, a hugetlb mapping among them) when the record has no data_pages."""
    name = "cg.A.default.c0-3_loc_p_nc.r1"
    without_summary_pages(FIXTURE / "runs" / name, tmp_path / "runs" / name)
    r1 = build_tables(tmp_path)["runs"].iloc[0]
    assert (r1["data_pages_node0"], r1["data_pages_node1"]) == (1002, 1203)
    assert (r1["data_bytes_node0"], r1["data_bytes_node1"]) == (8290304, 4927488)


def test_summary_statistics_by_hand(tables):
    s = tables["summary"]
    a = group(s, "default", 2, "2 on 0")                       # 10, 11, 12
    assert (a["n"], a["n_failed"], a["n_records"]) == (3, 0, 3)
    assert (a["time_min_s"], a["time_median_s"], a["time_mean_s"], a["time_max_s"]) == (10, 11, 11, 12)
    assert a["time_std_s"] == pytest.approx(1.0)
    assert a["time_cv"] == pytest.approx(1 / 11)

    b = group(s, "default", 2, "1/1 on 0,1")                   # 8, 9.5, 8.5 + a failed run
    assert (b["n"], b["n_failed"], b["n_planned"], b["n_missing"]) == (3, 1, 5, 1)
    assert b["failed_statuses"] == "failed:1"
    assert b["time_median_s"] == 8.5
    assert b["time_mean_s"] == pytest.approx(26 / 3)
    assert b["time_std_s"] == pytest.approx(math.sqrt(7 / 12))
    assert b["time_cv"] == pytest.approx(math.sqrt(7 / 12) / (26 / 3))

    c = group(s, "default", 2, "2 on 1 · interleave 0-1")      # ok with drift + unverified
    assert (c["n"], c["n_failed"], c["n_drift"]) == (1, 1, 1)
    assert c["failed_statuses"] == "unverified:1"
    assert c["time_median_s"] == 14 and pd.isna(c["time_std_s"]) and pd.isna(c["time_cv"])

    e = group(s, "default", 4, "2/2 on 0,1")                   # 5.0, 5.2, 5.1 + set-aside timeout
    assert (e["n"], e["n_failed"], e["n_set_aside"], e["n_records"]) == (3, 1, 1, 4)
    assert e["time_median_s"] == 5.1 and e["time_std_s"] == pytest.approx(0.1)
    assert e["time_cv"] == pytest.approx(0.1 / 5.1)

    si = group(s, "serial-init", 4, "2/2 on 0,1")              # 30, 34
    assert si["time_std_s"] == pytest.approx(math.sqrt(8))

    mg = s[s["bench"] == "mg"].iloc[0]                         # placement-failed only
    assert (mg["n"], mg["n_failed"], mg["failed_statuses"]) == (0, 1, "placement-failed:1")
    assert pd.isna(mg["time_median_s"])


def test_best_worst_choice_and_noise(tables):
    bw = tables["best_worst"].set_index(["variant", "threads"])
    t2 = bw.loc[("default", 2)]
    assert t2["best_placement"] == "1/1 on 0,1" and t2["worst_placement"] == "2 on 1 · interleave 0-1"
    # from the median Mop/s as NPB prints them (2 decimals): 1000/14 → 71.43, 1000/8.5 → 117.65
    # times of seconds, resolved: compared by them (Mop/s would say 100 (1 - 71.43 / 117.65))
    assert t2["compared_by"] == "time" and t2["improvement_pct"] == pytest.approx(100 * (14 - 8.5) / 14)
    assert t2["speedup"] == pytest.approx(14 / 8.5)
    assert t2["improvement_pct"] == pytest.approx(100 * (14 - 8.5) / 14, abs=0.01)   # the times' answer
    assert t2["differs"] == "unknown"            # the worst has a single ok run
    assert bool(t2["rests_on_drift"]) is True and t2["worst_n_drift"] == 1

    t4 = bw.loc[("default", 4)]
    assert (t4["best_placement"], t4["worst_placement"]) == ("2/2 on 0,1", "2/2 on 0,1 · membind 0")
    assert t4["improvement_pct"] == pytest.approx(100 * (1 - 5.1 / 6.5))   # the times printed beside it
    assert t4["improvement_pct"] == pytest.approx(100 * (6.5 - 5.1) / 6.5, abs=0.01)
    assert t4["differs"] == "yes" and not t4["ranges_overlap"]          # [5.0, 5.2] vs [6, 7]
    assert t4["mwu_p"] == pytest.approx(0.1)     # 3 vs 3, fully separated: 2/20
    assert bool(t4["rests_on_drift"]) is False

    t1 = bw.loc[("default", 1)]                  # a single run: best is worst
    assert t1["best_placement_id"] == t1["worst_placement_id"] and t1["differs"] == "n/a"
    assert t1["improvement_pct"] == 0
    assert ("mg" not in set(tables["best_worst"]["bench"]))   # no ok run at all


def test_mann_whitney_exact_values():
    assert mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / 20)
    assert mann_whitney_p(range(1, 6), range(6, 11)) == pytest.approx(2 / 252)
    assert mann_whitney_p([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    # 1 vs 2 swapped once: U = 1 of 9; |U - 4.5| >= 3.5 in 2·(U<=1) = 2·2 of 20 splits
    assert mann_whitney_p([1, 2, 4], [3, 5, 6]) == pytest.approx(4 / 20)
    big = mann_whitney_p(range(0, 20), range(20, 40))          # normal approximation
    assert 0 < big < 1e-6


def test_numa_pages_per_run_and_group(tables):
    np_ = tables["numa_pages"]
    run = np_[(np_["level"] == "run") & (np_["run_id"] == "cg.A.default.c0-3_loc_p_nc.r1")].set_index("node")
    assert list(run["pages"]) == [1002, 1203]
    assert run.loc[0, "gib"] == pytest.approx(8290304 / 2 ** 30)
    assert run["share"].sum() == pytest.approx(1)
    grp = np_[(np_["level"] == "group") & (np_["placement"] == "2/2 on 0,1") &
              (np_["variant"] == "default")].set_index("node")
    # medians over the three ok runs (the set-aside timeout is not in them)
    assert list(grp["pages"]) == [1100, 1203]
    assert list(grp["bytes"]) == [6144000, 4927488]
    assert set(grp["n_runs"]) == {3}


def test_numastat_system_wide_deltas(tables):
    ns = tables["numastat"]
    assert set(ns["scope"]) == {"system-wide"}
    assert set(aggregate.NUMASTAT_COUNTERS) <= set(ns.columns)
    r = ns[(ns["level"] == "run") & (ns["run_id"] == "cg.A.default.c0-3_loc_p_nc.r1")].set_index("node")
    assert (r.loc[0, "numa_hit"], r.loc[1, "numa_hit"], r.loc[1, "other_node"]) == (3001, 2001, 100)
    g = ns[(ns["level"] == "group") & (ns["placement"] == "2/2 on 0,1") &
           (ns["variant"] == "default")].set_index("node")
    assert g.loc[0, "numa_hit"] == 3002 and g.loc[1, "local_node"] == 1902


def test_tables_round_trip_through_csv(tmp_path):
    paths = write_tables(FIXTURE, tmp_path / "tables", PLAN)
    assert set(paths) == set(table_captions())
    back = read_tables(tmp_path / "tables")
    assert back["best_worst"]["differs"].tolist().count("n/a") == 2     # "n/a" is a value
    assert back["summary"]["class"].tolist()[0] == "A"
    for name, path in paths.items():
        assert path.stat().st_size > 0, name


def test_partial_study_without_plan_and_single_run(tmp_path):
    # one record, no plan: every table still builds
    src = FIXTURE / "runs" / "cg.A.default.c0_loc_t_nc.r1"
    shutil.copytree(src, tmp_path / "runs" / src.name)
    t = build_tables(tmp_path)
    assert len(t["runs"]) == 1 and len(t["summary"]) == 1 and len(t["best_worst"]) == 1
    s = t["summary"].iloc[0]
    assert s["n"] == 1 and pd.isna(s["n_planned"]) and s["time_median_s"] == 20
    assert t["best_worst"].iloc[0]["differs"] == "n/a"


def test_empty_study(tmp_path):
    (tmp_path / "runs").mkdir()
    t = build_tables(tmp_path, PLAN)
    assert len(t["runs"]) == 0 and len(t["best_worst"]) == 0
    # the plan's placements are there, with nothing measured
    assert len(t["summary"]) == 8 and t["summary"]["n"].sum() == 0
    assert t["summary"]["n_missing"].sum() == 20      # every planned run


def test_unreadable_record_is_named_not_skipped(tmp_path):
    """A record corrupted by hand is a row of status `unreadable` naming the file and the
    command that sets it aside; nothing else is lost."""
    shutil.copytree(FIXTURE / "runs", tmp_path / "runs")
    (tmp_path / "runs" / "cg.A.default.broken.r1").mkdir()
    broken = tmp_path / "runs" / "cg.A.default.broken.r1" / "record.json"
    broken.write_text("{not json")
    runs = build_tables(tmp_path)["runs"]
    assert len(runs) == 21
    row = runs[runs["status"] == "unreadable"].iloc[0]
    assert row["run_id"] == "cg.A.default.broken.r1" and row["record"] == str(broken)
    assert str(broken) in row["reason"] and "retry-failed" in row["reason"]
    from numaplace.record.store import set_aside_failed
    assert set_aside_failed(tmp_path, ["unreadable"]) == [("cg.A.default.broken.r1", "unreadable")]
    assert (broken.parent / "attempts" / "1" / "record.json").read_text() == "{not json"


def test_missing_capture_file_is_named(tmp_path):
    """A record whose numa_maps file is gone keeps its row; the row says which file.
    The runner now writes the pages into the capture summary (data_pages); this copy has
    them removed, as in a record written before that, whose pages come from the file."""
    src = FIXTURE / "runs" / "cg.A.default.c0-3_loc_p_nc.r1"
    without_summary_pages(src, tmp_path / "runs" / src.name)
    for f in (tmp_path / "runs" / src.name).glob("numa_maps.*.txt"):
        f.unlink()
    row = build_tables(tmp_path)["runs"].iloc[0]
    assert "capture file missing" in row["problems"] and str(tmp_path / "runs" / src.name) in row["problems"]


def test_steady_footprint_preferred_over_peak(tmp_path):
    """CG's peak holds matrix-generation temporaries; tables use the steady footprint
    (the one fidelity judges) when the sampler saw one."""
    rundir = tmp_path / "runs" / "cg.A.default.c0_loc_p_nc.r1"
    rundir.mkdir(parents=True)
    (rundir / "numa_maps.peak.txt").write_text("7f00 default anon=300 dirty=300 N0=200 N1=100 kernelpagesize_kB=4\n")
    (rundir / "numa_maps.steady.txt").write_text("7f00 default anon=150 dirty=150 N0=100 N1=50 kernelpagesize_kB=4\n")
    rec = {"run_id": "cg.A.default.c0_loc_p_nc.r1", "status": "ok", "_path": str(rundir / "record.json"),
           "placement": {"id": "c0_loc_p_nc", "shape": "cpus 0", "cpus": "0", "threads": 1,
                         "memory": "local", "memory_nodes": "", "binding": "process", "launcher": "numactl"},
           "captures": {"numa_maps": {"peak": {"data_bytes": {"0": 200 * 4096, "1": 100 * 4096}},
                                      "steady": {"data_bytes": {"0": 100 * 4096, "1": 50 * 4096}}}}}
    row = aggregate.record_row(rec)
    assert row["footprint"] == "steady" and row["data_bytes"] == 150 * 4096 and row["data_pages"] == 150
    del rec["captures"]["numa_maps"]["steady"]
    row = aggregate.record_row(rec)
    assert row["footprint"] == "peak" and row["data_pages"] == 300


def test_steady_sample_that_is_the_peak_has_its_pages(tmp_path):
    """The sampler writes no numa_maps.steady.txt when the steady sample is the peak one
    (a run whose footprint only grew, then settled): its pages come from the peak file
    (older records) or from the capture summary's data_pages (records since)."""
    from numaplace.run.numa_maps import parse, summarize
    line = "7f00 default anon=300 dirty=300 N0=200 N1=100 kernelpagesize_kB=64\n"
    rundir = tmp_path / "runs" / "r1"
    rundir.mkdir(parents=True)
    (rundir / "numa_maps.peak.txt").write_text(line)
    sample = {"t": 1.5, "data_bytes": {"0": 200 * 65536, "1": 100 * 65536}}
    rec = {"run_id": "r1", "status": "ok", "_path": str(rundir / "record.json"),
           "placement": {"id": "c0", "shape": "cpus 0", "cpus": "0", "threads": 1, "memory": "local",
                         "memory_nodes": "", "binding": "process", "launcher": "numactl"},
           "captures": {"numa_maps": {"peak": sample, "steady": dict(sample)}}}
    row = aggregate.record_row(rec)
    assert row["footprint"] == "steady" and row["data_pages"] == 300 and row["_data_pages"] == {0: 200, 1: 100}
    # the summary carries the pages: no file needed
    (rundir / "numa_maps.peak.txt").unlink()
    pages = {str(n): k for n, k in summarize(parse(line))["data_pages"].items()}
    rec["captures"]["numa_maps"]["steady"]["data_pages"] = pages
    assert aggregate.record_row(rec)["_data_pages"] == {0: 200, 1: 100}


# -- the tables from a few runs, built in each test ----------------------------------------
# summary.csv's per-placement statistics and best_worst.csv's choice, on runs given as the
# runs table has them (only the columns the summary reads). Each test builds its own tables:
# mutmut credits the module-scoped `tables` above to its first test only. Several pin what
# the mutation run left alive (tests/benchmarks/mutation-survivors.md).

SUMMARY_COLUMNS = [
    "bench", "class", "variant", "threads", "placement_id", "placement", "cpus", "layout", "memory",
    "binding", "launcher", "n_planned", "n_missing", "n_records", "n", "n_failed", "failed_statuses",
    "n_set_aside", "n_drift", "time_min_s", "time_median_s", "time_mean_s", "time_max_s", "time_std_s",
    "time_cv", "time_median_lo_s", "time_median_hi_s", "time_median_level", "mops_median", "fom_median",
    "time_resolution_s"]


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


def test_a_programs_figure_of_merit_is_the_median_of_its_runs():
    """A program's figure of merit per placement is the median of its ok runs, as its time
    is: one run that printed an outlying figure does not move it (1, 2 and 10 GB/s: 2)."""
    runs = pd.DataFrame([{**run("a", t, rid=f"a.r{i}"), "fom": f}
                         for i, (t, f) in enumerate(((10.0, 1.0), (10.1, 2.0), (10.2, 10.0)), 1)])
    (s,) = summary_table(runs).to_dict("records")
    assert s["fom_median"] == 2.0


def test_a_placements_time_resolution_is_the_coarsest_its_runs_printed():
    """A program that printed one run's time to 0.01 s and another's to 0.0001 s is read to
    0.01 s: two placements 0.015 s apart are below that resolution, not an effect."""
    def printed(pid, t, res, i):
        return {**run(pid, t, rid=f"{pid}.r{i}"), "time_resolution_s": res}
    runs = pd.DataFrame([printed("a", 1.0, 0.01, 1), printed("a", 1.0, 0.0001, 2),
                         printed("b", 1.015, 0.0001, 1), printed("b", 1.015, 0.0001, 2)])
    s = summary_table(runs)
    assert s.set_index("placement_id")["time_resolution_s"].to_dict() == {"a": 0.01, "b": 0.0001}
    (bw,) = best_worst_table(s, runs).to_dict("records")
    assert (bw["best_placement_id"], bw["worst_placement_id"], bw["compared_by"]) == ("a", "b", "time")
    assert bw["below_resolution"] is True


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
    "runner_up_reps_needed", "rests_on_drift", "stopped_after", "rounds_max", "stopped_by", "stop_reason", "stop_p",
    "best_fom_median", "worst_fom_median"]


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


def test_numa_pages_group_rows_are_of_the_current_ok_runs_only(tmp_path):
    """An attempt that ended ok and was set aside anyway (runs/<id>/attempts/1/), its pages
    all on node 1, is a run row of numa_pages.csv, but the group's rows (n_runs, median
    bytes and pages, share) stay those of the three current ok runs, as in the fixture
    study. (Fails when the group takes in the set-aside attempt: 4 runs, node 1's
    median bytes up and node 0's share down.)"""
    shutil.copytree(FIXTURE / "runs", tmp_path / "runs")
    attempt = tmp_path / "runs" / "cg.A.default.c0-3_loc_p_nc.r2" / "attempts" / "1"
    rec = json.loads((attempt / "record.json").read_text())
    on_node1 = {"data_bytes": {"1": 64 * 2**20}, "data_pages": {"1": 16384}, "total_bytes": {"1": 68 * 2**20}}
    rec.update(status="ok", reason=None, exit_status=0, wall_s=5.9)
    for view in ("peak", "steady", "last"):
        rec["captures"]["numa_maps"][view].update(on_node1)
    (attempt / "record.json").write_text(json.dumps(rec))
    np_ = build_tables(tmp_path, PLAN)["numa_pages"]
    runs = np_[(np_["level"] == "run") & (np_["run_id"] == "cg.A.default.c0-3_loc_p_nc.r2")]
    set_aside = runs[runs["attempt"] == 1].set_index("node")
    assert set(set_aside["status"]) == {"ok"} and set_aside.loc[1, "bytes"] == 64 * 2**20
    grp = np_[(np_["level"] == "group") & (np_["placement"] == "2/2 on 0,1") &
              (np_["variant"] == "default")].set_index("node")
    assert set(grp["n_runs"]) == {3}
    assert list(grp["pages"]) == [1100, 1203]
    assert list(grp["bytes"]) == [6144000, 4927488]
    assert list(grp["share"]) == pytest.approx([6144000 / 11071488, 4927488 / 11071488])
