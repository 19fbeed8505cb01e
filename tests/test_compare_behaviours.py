"""`numaplace compare` (numaplace.report.compare): a placement that got faster between two
studies is reported beyond noise as a slower one is. Issue 42, behaviour 3
(tests/benchmarks/behaviour_bugs.py shows the test failing on the mistake)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import numaplace.report.compare as compare_mod
from numaplace.tables.aggregate import summary_table

pytestmark = pytest.mark.unit


def study(name, times):
    """A study of one placement (CG class A, 2 threads, cpus 0-1) with these NPB times."""
    runs = pd.DataFrame([{"bench": "cg", "class": "A", "variant": "default", "threads": 2, "placement_id": "p",
                          "placement": "cpus 0-1", "cpus": "0-1", "layout": "2 on 0", "memory": "local",
                          "binding": "process", "launcher": "numactl", "run_id": f"p.r{i}", "current": True,
                          "status": "ok", "npb_time_s": t, "mops": np.nan, "fidelity": "ok"}
                         for i, t in enumerate(times, 1)])
    empty = pd.DataFrame()
    tables = {"runs": runs, "summary": summary_table(runs), "best_worst": pd.DataFrame(columns=[
        "best_placement_id", "worst_placement_id"]), "memory_matrix": empty, "memory": empty}
    return SimpleNamespace(name=name, dir=name, tables=tables, topology={"nodes": {"0": "0-1"}},
                           host="h", kernel="k")


BEFORE = (20.0, 20.1, 20.2, 20.3)
FASTER = (15.0, 15.1, 15.2, 15.3)      # 25 % less time: ranges apart
SLOWER = (25.0, 25.1, 25.2, 25.3)


@pytest.mark.parametrize("after, change", [(FASTER, -25), (SLOWER, 25)], ids=["speed-up", "slow-down"])
def test_compare_reports_a_speed_up_beyond_noise_as_it_reports_a_slow_down(after, change):
    """Against the first study, a placement 25 % faster and one 25 % slower, each with
    ranges apart from the first's: both are beyond noise, with Mann-Whitney's p. (Fails
    when only a later study's slower runs count as apart: the speed-up is 'no'.)"""
    side = compare_mod.side_by_side([study("before", BEFORE), study("after", after)])
    (row,) = side[side["study"] == "after"].to_dict("records")
    assert round(row["change_pct"]) == change
    assert row["beyond_noise"] == "yes", f"beyond_noise {row['beyond_noise']!r}"
    assert row["mwu_p"] == pytest.approx(2 / 70)        # 4 vs 4, apart: 2 of C(8, 4) splits


def test_the_compare_command_says_a_speed_up_beyond_noise(monkeypatch, tmp_path):
    """What `numaplace compare before after` prints: the faster placement's line, beyond
    noise, not 'no shared placement changed beyond noise'."""
    studies = {"before": study("before", BEFORE), "after": study("after", FASTER)}
    monkeypatch.setattr(compare_mod, "Compared", lambda d: studies[str(d)])
    monkeypatch.setattr(compare_mod, "_figure", lambda side, out: [])      # no matplotlib: the lines are the point
    monkeypatch.setattr(compare_mod, "_html", lambda text, out: None)
    lines = compare_mod.compare(["before", "after"], tmp_path)
    assert lines[1:] == ["CG.A default 2 threads, cpus 0-1: after -24.8% (15.15 s), beyond noise, p 0.0286"], lines


# -- the machine as measured: fingerprints.csv's row --------------------------------------

MIB = 2 ** 20


def cell_rows(bench, size, values, mode="", via="first-touch"):
    return [{"bench": bench, "mode": mode, "via": via, "size_bytes": size, "reader_node": r, "memory_node": m,
             "median": v} for r, m, v in values]


def machine_study():
    """A 2-node study with its matrices (memlat 90/100 ns local, 140/150 remote; membw
    12.0-14.0 and 11.0 GB/s local, 7.0 and 6.123 remote), its local latency curve and
    settings as the records hold them (a column with an empty cell is read back as floats)."""
    s = study("m", BEFORE)
    matrix = pd.DataFrame(
        cell_rows("memlat", 256 * MIB, [(0, 0, 90.0), (0, 1, 140.0), (1, 0, 150.0), (1, 1, 100.0)])
        + cell_rows("memlat", 1 * MIB, [(0, 0, 5.0)])            # a smaller size: never the matrix
        + cell_rows("membw", 512 * MIB, [(0, 0, 12000.0), (0, 0, 12500.0), (0, 0, 14000.0), (0, 1, 7000.0),
                                         (1, 0, 6123.0), (1, 1, 11000.0)], mode="serial")
        + cell_rows("membw", 512 * MIB, [(0, 0, 40000.0)], mode="parallel"))
    curve = [(32 * 1024, [1.0]), (64 * 1024, [1.2]), (MIB, [4.0]), (2 * MIB, [5.2]), (4 * MIB, [5.0, 5.0, 20.0]),
             (64 * MIB, [80.0])]
    memory = pd.DataFrame([{"bench": "memlat", "status": "ok", "reader_node": 0, "memory_node": 0, "size_bytes": size,
                            "value": v, "cache_l1d": 49152, "cache_l2": 1048576, "cache_l3": 33554432}
                           for size, vs in curve for v in vs]
                          + [{"bench": "memlat", "status": "ok", "reader_node": 0, "memory_node": 1, "size_bytes": MIB,
                              "value": 400.0, "cache_l1d": 49152, "cache_l2": 1048576, "cache_l3": 33554432}])
    runs = s.tables["runs"].assign(sys_numa_balancing=[0.0, 1.0, np.nan, 0.0],
                                   sys_thp_enabled=["always"] * 3 + ["never"], current=[True] * 3 + [False])
    s.tables.update(memory_matrix=matrix, memory=memory, runs=runs)
    s.topology = {"nodes": {"0": "0-1", "1": "2-3"}, "distances": [[10, 21], [21, 10]]}
    return s


def test_the_fingerprint_says_how_many_times_worse_remote_is_for_latency_and_bandwidth_alike():
    """Remote/local factors over 1 when remote is worse: latency 145/95 = 1.526, bandwidth
    local (12 + 12.5 + 14 + 11) / 4 = 12.375 against remote 6.5615: 1.886; values in ns and GB/s,
    local bandwidth per node the median of its cells; knees where the median latency is
    1.3x the size before's (2 MiB at exactly 1.3x); settings as the current runs wrote them
    (a set-aside attempt's THP 'never' is not the study's)."""
    row = compare_mod.fingerprint(machine_study())
    assert row == {
        "study": "m", "host": "h", "kernel": "k", "nodes": 2, "slit_remote_local": "2.1x",
        "latency_ns_local": 95.0, "latency_ns_remote": 145.0, "latency_remote_local": 1.526,
        "bandwidth_gbs_local": 12.375, "bandwidth_gbs_remote": 6.562, "bandwidth_remote_local": 1.886,
        "bandwidth_gbs_per_node": "n0:12.5 n1:11.0",
        "caches_sysfs": "l1d:48 KiB l2:1 MiB l3:32 MiB", "latency_knees": "1 MiB 2 MiB 64 MiB",
        "numa_balancing": "0 / 1", "thp_enabled": "always"}


def test_a_knee_is_a_size_whose_median_latency_jumps_by_the_knee_factor():
    memory = machine_study().tables["memory"]
    assert compare_mod.knees(memory) == [MIB, 2 * MIB, 64 * MIB]
    assert compare_mod.knees(memory[memory["size_bytes"] <= MIB // 2]) == []
    assert compare_mod.knees(memory.iloc[0:0]) == []


def test_a_setting_is_written_as_its_runs_wrote_it():
    assert [compare_mod._setting(v) for v in (0.0, 1.0, 2.5, "madvise", 3)] == ["0", "1", "2.5", "madvise", "3"]


def test_noise_needs_two_runs_a_side_and_mann_whitney_three():
    """A placement with one run in the later study: change but beyond noise 'unknown'; 3
    runs a side, apart: 'yes' with the exact p of 3 vs 3 (2/20)."""
    side = compare_mod.side_by_side([study("before", BEFORE), study("after", (25.0,))])
    (row,) = side[side["study"] == "after"].to_dict("records")
    assert row["beyond_noise"] == "unknown" and row["change_pct"] == pytest.approx(100 * (25.0 - 20.15) / 20.15)
    assert np.isnan(row["mwu_p"])
    side = compare_mod.side_by_side([study("before", BEFORE[:3]), study("after", SLOWER[:3])])
    (row,) = side[side["study"] == "after"].to_dict("records")
    assert row["beyond_noise"] == "yes" and row["mwu_p"] == pytest.approx(0.1)
    assert list(side["study"]) == ["before", "after"] and side["n"].tolist() == [3, 3]


def test_the_best_per_study_leaves_out_a_case_of_one_placement():
    s = study("a", BEFORE)
    row = {"bench": "cg", "class": "A", "variant": "default", "threads": 2, "best_placement": "cpus 0-1",
           "best_median_s": 20.15, "worst_placement": "cpus 2-3", "worst_median_s": 25.15, "improvement_pct": 19.9,
           "differs": "yes"}
    s.tables["best_worst"] = pd.DataFrame([{**row, "best_placement_id": "p", "worst_placement_id": "q"},
                                           {**row, "threads": 1, "best_placement_id": "p", "worst_placement_id": "p"}])
    best = compare_mod.best_per_study([s])
    assert best.to_dict("records") == [{"bench": "cg", "class": "A", "variant": "default", "threads": 2, "study": "a",
                                        "best": "cpus 0-1", "best_median_s": 20.15, "worst": "cpus 2-3",
                                        "worst_median_s": 25.15, "improvement_pct": 19.9, "differs": "yes"}]


def test_the_compare_command_counts_the_shared_placements_when_nothing_changed(monkeypatch, tmp_path):
    """Two studies of the same times: one placement in both, 'no shared placement changed
    beyond noise (1 placements ...)' (placements counted, not rows)."""
    studies = {"a": study("a", BEFORE), "b": study("b", BEFORE)}
    monkeypatch.setattr(compare_mod, "Compared", lambda d: studies[str(d)])
    monkeypatch.setattr(compare_mod, "_figure", lambda side, out: [])
    monkeypatch.setattr(compare_mod, "_html", lambda text, out: None)
    lines = compare_mod.compare(["a", "b"], tmp_path)
    assert lines == ["compared 2 studies: a, b (against a)",
                     "no shared placement changed beyond noise (1 placements measured in more than one study)"]
