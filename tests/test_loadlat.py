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
    assert study(tmp_path, ["--sizes", "400M"], placements=two, platform="two").runs      # 2 x 400 MiB fit
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
