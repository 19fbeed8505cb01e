"""loadlat, the loaded-latency micro-benchmark (microbench/src/loadlat) and its kind
(numaplace.kinds.loadlat): the real binary's curve, the study checks of its args, and
its table, summary and answer from a real record (tests/fixtures/membench/
loadlat-record.json: memory-quick's loaded-latency run on this 2-CPU machine)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from numaplace import ConfigError
from numaplace.kinds import kind
from numaplace.kinds import membench_output
from numaplace.record.store import Record

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "tests" / "fixtures" / "membench" / "loadlat-record.json"
TINY = ["--sizes", "4M", "--reps", "2", "--min-time", "0.02", "--min-loads", "20000"]


def run(binary, *args, threads=2):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env["OMP_NUM_THREADS"] = str(threads)
    return subprocess.run([str(binary), *args], capture_output=True, text=True, env=env, timeout=120)


# -- the binary -------------------------------------------------------------------------

def test_the_curve_starts_idle_and_the_delay_throttles_the_load(microbench):
    p = run(microbench("loadlat"), "--cpus", "0,1", "--delays", "0,20000", *TINY)
    assert p.returncode == 0, p.stderr
    out = membench_output.parse(p.stdout)
    assert out["complete"] and out["verified"] and out["run"]["load_threads"] == 1
    res = out["results"]
    assert [r["delay"] for r in res] == [-1, -1, 0, 0, 20000, 20000]        # idle first, then each delay
    assert all(r["load_mbps"] == 0 and r["load_threads"] == r["load_active"] == 0 for r in res[:2])
    assert all(r["load_threads"] == r["load_active"] == 1 for r in res[2:])     # the loader drew bytes
    heavy = min(r["load_mbps"] for r in res if r["delay"] == 0)
    light = max(r["load_mbps"] for r in res if r["delay"] == 20000)
    assert heavy > 4 * light > 0, (heavy, light)
    for r in res:
        assert r["thread_cpus"] == ("0,-1" if r["delay"] < 0 else "0,1")      # chaser CPU 0, its loader CPU 1
        assert abs(r["load_bytes"] - r["load_mbps"] * 1e6 * r["seconds"]) <= 1e-3 * r["load_bytes"] + 1e4
        assert sum(r["load_pages_by_node"].values()) == r["pages"]        # one loader, one buffer of the size
        assert r["value"] > 0 and r["loads"] % 16 == 0


def test_one_thread_measures_the_idle_latency_alone(microbench):
    p = run(microbench("loadlat"), "--delays", "0", *TINY, threads=1)
    out = membench_output.parse(p.stdout)
    assert p.returncode == 0 and out["verified"]
    assert [r["delay"] for r in out["results"]] == [-1, -1]


@pytest.mark.parametrize("args, says", [(["--delays", "0,x"], "--delays 0,x"),
                                        (["--delays", "-3"], "--delays -3"),
                                        (["--load-memory", "far"], "--load-memory far"),
                                        (["--bogus"], "usage")])
def test_the_binary_refuses_bad_options_in_one_line(microbench, args, says):
    p = run(microbench("loadlat"), *args, *TINY)
    assert p.returncode == 2 and says in p.stderr and len(p.stderr.strip().splitlines()) <= 12, p.stderr


# -- the study's args, checked before any run ------------------------------------------

def study(tmp_path, args, placements=({"compact": ["all"]},), platform="auto", memory=None, load_memory=None):
    """A loadlat study planned from files under tmp_path; platform "two": 2 nodes x 2 CPUs x 1 GiB."""
    from numaplace.plan.study import load_study_file
    (tmp_path / "platforms").mkdir(exist_ok=True)
    (tmp_path / "platforms" / "two.yaml").write_text(
        "name: two\nnodes:\n  - {id: 0, cpus: '0-1', memory_mb: 1024}\n  - {id: 1, cpus: '2-3', memory_mb: 1024}\n"
        "distances: [[10, 20], [20, 10]]\n")
    exp = {"name": "ll", "args": args, "placements": list(placements), **({"memory": [memory]} if memory else {})}
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"study": "ll", "platform": platform, "launcher": "numactl", "benchmarks": ["loadlat"],
                                 "classes": ["X"], "repetitions": 1, "binding": "threads", "experiments": [exp]}))
    return load_study_file(f, tmp_path)


@pytest.mark.parametrize("args, entry, says", [
    (["--delays", "0,-5"], "args[1]", "--delays '0,-5': expected spin counts from 0 to"),
    (["--delays", "0,,5"], "args[1]", "expected spin counts"),
    (["--delays", ",".join(["1"] * 65)], "args[1]", "(at most 64)"),
    (["--delays", "200000000"], "args[1]", "spin counts from 0 to 100000000"),
    (["--load-memory", "far"], "args[1]", "--load-memory 'far': expected chaser or own"),
    (["--dump-chain"], "args[0]", "--dump-chain is an option of memlat only; loadlat would stop"),
])
def test_bad_args_are_refused_naming_the_entry(tmp_path, args, entry, says):
    with pytest.raises(ConfigError) as e:
        study(tmp_path, args)
    assert f"experiments[0] (ll).{entry}:" in str(e.value) and says in str(e.value), str(e.value)


def test_buffers_of_every_thread_must_fit_the_memory(tmp_path):
    """One buffer per thread (the chain and one per loader), all on the chaser's node or its
    membind node unless --load-memory own: 2 x 600 MiB do not fit a node of 1 GiB, where
    2 x 400 MiB would, and 2 x 1.2 GiB are more than the machine."""
    two = ({"cpus": "0,1"},)
    with pytest.raises(ConfigError) as e:
        study(tmp_path, ["--sizes", "600M"], placements=two, platform="two")
    assert "experiments[0] (ll).args[1]: --sizes 600M: placement" in str(e.value)
    assert "puts 2 buffers of 600 MiB on node 0, which holds 1 GiB" in str(e.value)
    with pytest.raises(ConfigError) as e:                       # bound to node 1: the same
        study(tmp_path, ["--sizes", "600M"], placements=({"cpus": "0,2"},), platform="two", memory={"membind": [1]})
    assert "on node 1, which holds 1 GiB" in str(e.value)
    with pytest.raises(ConfigError) as e:                       # membind binds the loaders' buffers too
        study(tmp_path, ["--sizes", "600M", "--load-memory", "own"], placements=({"cpus": "0,2"},), platform="two",
              memory={"membind": [1]})
    assert "puts 2 buffers of 600 MiB on node 1, which holds 1 GiB" in str(e.value)
    assert study(tmp_path, ["--sizes", "400M"], placements=two, platform="two").runs      # 2 x 400 MiB fit
    assert study(tmp_path, ["--sizes", "512M"], placements=two, platform="two").runs      # 2 x 512 MiB: just
    assert study(tmp_path, ["--sizes", "600M", "--load-memory", "own"], placements=({"cpus": "0,2"},),
                 platform="two").runs                          # each buffer on its own node
    with pytest.raises(ConfigError) as e:
        study(tmp_path, ["--sizes", "1200M", "--load-memory", "own"], placements=({"cpus": "0,2"},), platform="two")
    assert "2 buffers of 1.17 GiB (the chain and one per loader) are more than platform two's memory" in str(e.value)


def fake_sysfs(root, sockets):
    """cpu/cpuN/cache of `sockets` sockets of 2 CPUs: L1d 32K, L1i 32K, L2 512K each, one
    32M L3 per socket."""
    for cpu in range(2 * sockets):
        pair = f"{cpu // 2 * 2}-{cpu // 2 * 2 + 1}"
        for i, (level, kind, size, shared) in enumerate([(1, "Data", "32K", str(cpu)), (1, "Instruction", "32K", str(cpu)),
                                                         (2, "Unified", "512K", str(cpu)), (3, "Unified", "32768K", pair)]):
            d = root / f"cpu{cpu}" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
                (d / name).write_text(f"{value}\n")
    return root


@pytest.mark.parametrize("sockets", [1, 2])
def test_named_sizes_resolve_as_the_binary_does(tmp_path, sockets):
    """DRAM = 4 x every last-level cache once (mb_parse_sizes), the others half a cache of CPU 0."""
    from numaplace.kinds.microbench import named_size
    sysfs = fake_sysfs(tmp_path, sockets)
    assert named_size("DRAM", sysfs=sysfs) == 4 * sockets * 32 * 2**20
    assert [named_size(n, sysfs=sysfs) for n in ("LLC", "L2", "L1")] == [16 * 2**20, 256 * 2**10, 16 * 2**10]
    assert named_size("DRAM", sysfs=tmp_path / "none") is None


def test_a_run_is_estimated_from_its_points_and_repetitions():
    k = kind("loadlat")
    assert k.run_seconds("X", 2, []) == pytest.approx(2.0 + 11 * 6 * 0.13)
    assert k.run_seconds("X", 2, ["--delays", "0,100", "--reps", "3"]) == pytest.approx(2.0 + 3 * 4 * 0.13)
    opts = {"--delays": [0, 100], "--reps": 3, "--min-time": 0.1}
    seconds, how = k.seconds_at_least(opts, 2)
    assert seconds == pytest.approx(3 * 3 * 0.1) and "at once" in how


@pytest.mark.parametrize("change, status", [
    ({}, "ok"),
    ({"load_active": 1, "load_threads": 2}, "idle-loader"),                    # a loader drew nothing
    ({"load_pages_by_node": {0: 90, 1: 10}}, "drift"),                         # its buffer spilled to node 1
    ({"load_pages_by_node": {0: 90, 1: 10}, "load_memory": "own"}, "ok"),      # on its own node: meant
    ({"delay": -1, "load_active": 0, "load_threads": 0}, "ok"),                # the idle point
])
def test_a_point_is_ok_only_with_every_loader_loading_where_meant(change, status):
    from numaplace.kinds.loadlat import point_status
    result = {"delay": 0, "load_threads": 2, "load_active": 2, "load_memory": "chaser",
              "load_pages_by_node": {0: 100}, **change}
    assert point_status(result, {"status": "ok", "memory_node": 0}, 0.99) == status
    assert point_status(result, {"status": "drift", "memory_node": 0}, 0.99) == "drift"   # the chain's own


# -- its table, summary and answer, from a real record ---------------------------------

@pytest.fixture
def tables():
    rec = json.loads(RECORD.read_text())
    rec["_path"] = str(RECORD)
    return kind("loadlat").make_tables([Record(rec)], {"memory_cell_share_min": 0.99})


def test_the_table_has_one_row_per_point_and_repetition(tables):
    t = tables["loaded_latency"]
    rec = json.loads(RECORD.read_text())
    assert len(t) == len(rec["output"]["results"]) == 33            # (idle + 10 delays) x 3 repetitions
    assert set(t["status"]) == {"ok"} and set(t["memory_node"]) == {0}
    assert set(t[t["delay"] >= 0]["load_nodes"]) == {"0"} and set(t[t["delay"] < 0]["load_nodes"]) == {""}
    assert (t[t["delay"] < 0]["load_mbps"] == 0).all() and (t[t["delay"] == 0]["load_mbps"] > 1000).all()
    # sorted by size, placement, load memory, delay, repetition and sample: idle first
    assert list(zip(t["delay"], t["sample"]))[:4] == [(-1, 0), (-1, 1), (-1, 2), (0, 0)]
    assert t["delay"].tolist()[-1] == 12800 and t["delay"].is_monotonic_increasing


def test_the_curve_and_the_answer_name_idle_and_heaviest_load(tables):
    k = kind("loadlat")
    curves = k.curves(tables["loaded_latency"])
    assert len(curves) == 11 and set(curves["n"]) == {3}
    heavy = curves.loc[curves["load_mbps"].idxmax()]
    idle = curves[curves["delay"] == -1].iloc[0]
    (line,) = k.answer(tables)
    # this real record (a 2-CPU VM) is one physics rules out: its latency fell under load,
    # so the line leads with that and keeps its numbers after (issue 41.3)
    assert line.startswith("loaded latency (compact 2, memory on node 0): not a result: the latency fell under load")
    assert f"idle {idle['latency_ns']:.0f} ns; {heavy['latency_ns']:.0f} ns" in line
    assert f"under {heavy['load_mbps'] / 1000:.1f} GB/s of load from nodes 0" in line


def test_the_answer_reads_the_table_back_from_its_csv(tables, tmp_path):
    """load_nodes '0' comes back from the CSV as the number 0: still node 0, not unknown."""
    import pandas as pd
    tables["loaded_latency"].to_csv(tmp_path / "t.csv", index=False)
    back = {"loaded_latency": pd.read_csv(tmp_path / "t.csv")}
    assert kind("loadlat").answer(back) == kind("loadlat").answer(tables)


def test_the_summary_section_lists_every_point(tables):
    from numaplace.report.summary import md_table
    lines = kind("loadlat").summary(tables, md_table)
    assert lines[0] == "## Loaded latency"
    body = "\n".join(lines)
    assert body.count("| idle |") == 1 and "| 12800 |" in body


def test_the_answer_says_when_other_load_shared_the_cpus(tables):
    """The fixture's run shared its CPUs with other work (the machine was busy): the curve is
    not a quiet machine's, and the answer says so; a quiet run's line does not."""
    import pandas as pd
    rec = json.loads(RECORD.read_text())
    runs = pd.DataFrame([{"bench": "loadlat", "placement_id": rec["placement"]["id"], "current": True,
                          "shared_cpus": shared} for shared in (True,)])
    (busy,) = kind("loadlat").answer({**tables, "runs": runs})
    assert busy.endswith("; measured while other load shared its CPUs")
    (quiet,) = kind("loadlat").answer({**tables, "runs": runs.assign(shared_cpus=False)})
    assert "shared" not in quiet
    earlier = pd.concat([runs.assign(current=False), runs.assign(shared_cpus=False)])   # a set-aside run shared
    (line,) = kind("loadlat").answer({**tables, "runs": earlier})
    assert "shared" not in line


def test_a_curve_physics_rules_out_is_flagged_and_kept_out_of_the_headline():
    """Issue 41.3: a latency that falls under load, or an idle latency 4x memlat's own on
    the same node, leads its line with "not a result" (the numbers after, named)."""
    import pandas as pd
    from numaplace.kinds.loadlat import implausible
    idle = {"latency_ns": 2757.0, "size_bytes": 128 << 20}
    heavy = {"latency_ns": 2144.0, "memory_node": 0}
    matrix = pd.DataFrame([{"bench": "memlat", "mode": "chase", "size_bytes": 128 << 20, "via": "first-touch",
                            "reader_node": 0, "memory_node": 0, "median": 491.0},
                           {"bench": "memlat", "mode": "chase", "size_bytes": 1 << 20, "via": "first-touch",
                            "reader_node": 0, "memory_node": 0, "median": 4.0}])
    doubts = implausible(idle, heavy, matrix)
    assert doubts == ["the latency fell under load (2757 ns idle, 2144 ns loaded)",
                      "idle 2757 ns is 5.6x memlat's 491 ns on node 0 at 128 MiB"]
    assert implausible({"latency_ns": 500.0, "size_bytes": 128 << 20}, {"latency_ns": 900.0, "memory_node": 0},
                       matrix) == []


# -- exact values of its curve, answer, plan and refusals -------------------------------

def test_each_point_of_the_curve_is_the_median_of_its_repetitions(tables):
    """The curve's point per delay: the median (not the mean) of its repetitions' latency,
    their min and max, the loaders' median MB/s and n; idle first (delay -1)."""
    c = kind("loadlat").curves(tables["loaded_latency"])
    assert c["delay"].tolist() == [-1, 0, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800]
    got = c[["latency_ns", "latency_min", "latency_max", "load_mbps", "n"]].head(3).values.tolist()
    assert got == [[418.164, 207.586, 515.047, 0.0, 3], [331.254, 180.116, 377.047, 10329.4, 3],
                   [231.853, 208.927, 829.666, 4001.26, 3]]
    assert c["load_nodes"].tolist() == [""] + ["0"] * 10
    t = tables["loaded_latency"].copy()
    t.loc[t["delay"] == 50, "status"] = "drift"               # not ok: not in the curve
    t.loc[t["delay"] == 100, "attempt"] = True                # an attempt set aside: neither
    assert kind("loadlat").curves(t)["delay"].tolist() == [-1, 0, 200, 400, 800, 1600, 3200, 6400, 12800]


def test_the_answer_line_gives_idle_loaded_change_and_load(tables):
    (line,) = kind("loadlat").answer(tables)
    assert line == ("loaded latency (compact 2, memory on node 0): not a result: the latency fell under load "
                    "(418 ns idle, 331 ns loaded) (idle 418 ns; 331 ns (-21%) under 10.3 GB/s of load from nodes 0)")


def test_a_plausible_curve_reads_as_a_result_with_its_rise_in_percent(tables):
    """Heaviest load = the point of most load MB/s (not delay 0 by name): here delay 50 with
    20 GB/s and 600 ns against 400 ns idle: +50 %."""
    t = tables["loaded_latency"].copy()
    t.loc[t["delay"] == -1, "value"] = 400.0
    t.loc[t["delay"] == 50, ["value", "load_mbps"]] = [600.0, 20000.0]
    (line,) = kind("loadlat").answer({"loaded_latency": t})
    assert line == ("loaded latency (compact 2, memory on node 0): idle 400 ns; 600 ns (+50%) under 20.0 GB/s "
                    "of load from nodes 0")
    assert kind("loadlat").answer({"loaded_latency": t.iloc[0:0]}) == []


def test_the_summary_rows_give_each_points_numbers(tables):
    from numaplace.report.summary import md_table
    lines = kind("loadlat").summary(tables, md_table)
    rows = lines[4].splitlines()
    assert rows[0] == ("| size (MiB) | placement | memory node | loaders' nodes | load memory | delay | load MB/s | "
                       "latency ns | n |")
    assert rows[2:4] == ["| 128 | compact 2 | 0 |  | chaser | idle | 0 | 418.2 | 3 |",
                         "| 128 | compact 2 | 0 | 0 | chaser | 0 | 10329 | 331.3 | 3 |"]
    assert rows[-1] == "| 128 | compact 2 | 0 | 0 | chaser | 12800 | 68 | 254.3 | 3 |"


def test_the_table_row_keeps_the_loaders_facts():
    rec = json.loads(RECORD.read_text())
    rec["_path"] = "rec.json"
    r = rec["output"]["results"][3]
    r["thread_nodes"], r["load_pages_by_node"], r["load_threads"], r["load_active"] = "0,1,-1,1", {"1": 5, "0": 7}, 3, 3
    t = kind("loadlat").make_tables([Record(rec)], {"memory_cell_share_min": 0.99})["loaded_latency"]
    row = t[(t["delay"] == r["delay"]) & (t["sample"] == r["rep"])].iloc[0]
    assert (row["load_nodes"], row["load_pages_by_node"], row["load_threads"], row["load_active"]) == \
        ("1,1", "1:5,0:7", 3, 3)
    assert (row["status"], row["placement"], row["load_memory"], row["rep"], row["attempt"]) == \
        ("drift", "compact 2", "chaser", 1, False)                 # 7 of 12 loader pages on node 0


def test_delays_are_spin_counts_up_to_the_binarys_limits():
    from numaplace.kinds.loadlat import _delays
    assert _delays("0,50,100000000") == [0, 50, 100000000]
    assert _delays(",".join(["7"] * 64)) == [7] * 64
    for bad in ("100000001", "", "1,", "-1", "1.5", ",".join(["7"] * 65)):
        with pytest.raises(ValueError):
            _delays(bad)


def test_load_nodes_are_the_loaders_as_they_started():
    from numaplace.kinds.loadlat import _load_nodes, _nodes
    assert _load_nodes({"thread_nodes": "0,1,-1,1"}) == "1,1"
    assert _load_nodes({"thread_nodes": "0,-1"}) == "" and _load_nodes({}) == ""
    assert [_nodes(v) for v in (None, float("nan"), "", 0, 0.0, 1.0, "0,1")] == ["?", "?", "?", "0", "0", "1", "0,1"]


def test_a_points_loader_share_at_the_threshold_is_not_drift():
    from numaplace.kinds.loadlat import point_status
    r = {"delay": 0, "load_threads": 2, "load_active": 2, "load_memory": "chaser", "load_pages_by_node": {0: 99, 1: 1}}
    assert point_status(r, {"status": "ok", "memory_node": 0}, 0.99) == "ok"
    assert point_status(r, {"status": "ok", "memory_node": 0}, 0.995) == "drift"
    assert point_status({**r, "load_active": 2, "load_threads": 3}, {"status": "ok", "memory_node": 0}, 0.9) == \
        "idle-loader"
    assert point_status({**r, "load_active": None}, {"status": "ok", "memory_node": 1}, 0.99) == "drift"


def test_its_regions_points_and_threads():
    """A timed region per point (idle and one per delay), each at least --min-loads chases of
    0.5 ns (default 10^6); one thread has no loader."""
    from types import SimpleNamespace as NS
    k = kind("loadlat")
    assert k.passes({}) == 11 and k.passes({"--delays": [0, 5]}) == 3
    assert k.floor_s({}) == pytest.approx(5e-4) and k.floor_s({"--min-loads": 4000}) == pytest.approx(2e-6)
    assert k.in_parallel({})
    assert k.cannot_run(NS(threads=1)).startswith("one thread is a chaser with no loader")
    assert k.cannot_run(NS(threads=2)) is None


def test_a_named_size_is_stepped_down_to_half_the_smallest_node_share():
    """fit_args: DRAM buffers (2 GiB each here) that would take more than half of the node
    they land on become the largest whole MiB that fits every placement (the tightest named
    in the plan line); explicit sizes and --load-memory own (first touch) stay."""
    from types import SimpleNamespace as NS
    from numaplace.plan.placement import Memory, finish
    t = NS(memory_mb={0: 1024, 1: 1024}, node_of=lambda c: c // 2,
           named_size=lambda s: {"DRAM": 2 << 30, "LLC": 16 << 20}.get(s))
    k = kind("loadlat")
    a = finish((0, 1), Memory("local"), "threads", "numactl", "compact 2", t)
    b = finish((0, 2), Memory("membind", (1,)), "threads", "numactl", "spread 2, memory on node 1", t)
    c = finish((0, 1, 2), Memory("membind", (0, 1)), "threads", "numactl", "three", t)
    d = finish((0, 1, 2, 3), Memory("local"), "threads", "numactl", "compact 4", t)
    assert k.fit_args(("--sizes", "DRAM,LLC,64M", "--reps", "3"), [a, b], t) == (
        ("--sizes", "256M,LLC,64M", "--reps", "3"),
        ["--sizes DRAM stepped down to 256 MiB a buffer: 2 buffers of 2 GiB (compact 2) would take more than half "
         "of node 0's 1 GiB"])
    assert k.fit_args(("--sizes", "DRAM"), [c], t) == (
        ("--sizes", "341M",), ["--sizes DRAM stepped down to 341 MiB a buffer: 3 buffers of 2 GiB (three) would "
                               "take more than half of node 0-1's 2 GiB"])
    args, (note,) = k.fit_args(("--sizes", "DRAM"), [a, d], t)
    assert args == ("--sizes", "128M") and "4 buffers of 2 GiB (compact 4)" in note
    assert k.fit_args(("--sizes", "DRAM", "--load-memory", "own"), [a], t) == (("--sizes", "DRAM", "--load-memory",
                                                                                 "own"), [])
    assert k.fit_args(("--sizes", "DRAM", "--load-memory", "own"), [b], t)[0] == ("--sizes", "256M", "--load-memory",
                                                                                  "own")
    assert k.fit_args(("--sizes", "512M"), [a], t) == (("--sizes", "512M"), [])
    assert k.fit_args(("--reps", "3"), [a], t) == (("--reps", "3"), [])
    t.named_size = lambda s: 256 << 20                          # fits exactly: unchanged
    assert k.fit_args(("--sizes", "DRAM"), [a], t) == (("--sizes", "DRAM"), [])


def test_implausible_bounds_are_inclusive_and_use_the_nearest_memlat_size():
    """A loaded latency down to 95 % of idle, an idle latency from half to twice memlat's cell
    at the nearest size on the same node, are results."""
    import pandas as pd
    from numaplace.kinds.loadlat import implausible
    m = pd.DataFrame([{"bench": "memlat", "size_bytes": s, "reader_node": 0, "memory_node": 0, "median": v}
                      for s, v in ((1 << 20, 10.0), (64 << 20, 100.0), (1 << 30, 1000.0))]
                     + [{"bench": "memlat", "size_bytes": 128 << 20, "reader_node": 1, "memory_node": 0, "median": 1.0},
                        {"bench": "membw", "size_bytes": 128 << 20, "reader_node": 0, "memory_node": 0, "median": 1.0}])
    idle = {"latency_ns": 200.0, "size_bytes": 128 << 20}
    assert implausible(idle, {"latency_ns": 190.0, "memory_node": 0}, m) == []
    assert implausible(idle, {"latency_ns": 189.9, "memory_node": 0}, m) == [
        "the latency fell under load (200 ns idle, 190 ns loaded)"]
    assert implausible({"latency_ns": 50.0, "size_bytes": 128 << 20}, {"latency_ns": 60.0, "memory_node": 0}, m) == []
    assert implausible({"latency_ns": 201.0, "size_bytes": 128 << 20}, {"latency_ns": 300.0, "memory_node": 0}, m) == [
        "idle 201 ns is 2.0x memlat's 100 ns on node 0 at 64 MiB"]
    assert implausible({"latency_ns": 49.0, "size_bytes": 100 << 20}, {"latency_ns": 60.0, "memory_node": 0}, m) == [
        "idle 49 ns is 0.5x memlat's 100 ns on node 0 at 64 MiB"]
    assert implausible(idle, {"latency_ns": 300.0, "memory_node": 1}, m) == []     # no memlat cell of node 1


def test_the_figure_plots_median_latency_against_load_in_gb_per_s(tables):
    """loaded_latency's figure: per size, one curve per placement sorted by load, x the
    loaders' median GB/s (MB/s / 1000), y the median latency with min-max bars; its legend
    names the memory node, the loaders' nodes (at the heaviest delay) and the load memory."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    saved = []

    class W:
        cfg = {"width": 8.0}

        def save(self, fig, name, stem, title, case):
            ax = fig.axes[0]
            saved.append((name, stem, title, case, [t.get_text() for t in ax.get_legend().get_texts()],
                          [(list(l.get_xdata()), list(l.get_ydata())) for l in ax.lines]))
            plt.close(fig)
    kind("loadlat").draw(tables, W())
    ((name, stem, title, case, legend, lines),) = saved
    assert (name, stem, title) == ("loaded_latency", "loadlat.134217728", "loadlat loaded latency — 128 MiB buffers")
    assert case == {"bench": "loadlat", "class": "X", "variant": "default", "threads": None}
    assert legend == ["compact 2: memory node 0, loaders on nodes 0 (chaser memory)"]
    (x, y), (_, low), (_, high) = lines
    assert x[:3] == pytest.approx([0.0, 0.06781, 0.12914]) and x[-1] == pytest.approx(10.3294)
    assert y[:3] == [418.164, 254.258, 265.319] and y[-1] == 331.254
    assert low[:3] == [207.586, 171.243, 217.823] and high[:3] == [515.047, 299.735, 311.316]
