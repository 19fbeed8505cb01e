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
    assert all(r["load_mbps"] == 0 and r["load_threads"] == 0 for r in res[:2])
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

def study(tmp_path, args, placements=({"compact": ["all"]},), platform="auto"):
    from numaplace.plan.study import load_study_file
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"study": "ll", "platform": platform, "launcher": "numactl", "benchmarks": ["loadlat"],
                                 "classes": ["X"], "repetitions": 1, "binding": "threads",
                                 "experiments": [{"name": "ll", "args": args, "placements": list(placements)}]}))
    return load_study_file(f, REPO / "config")


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
    """One buffer per thread (the chain and one per loader): 2 x 60 % of the machine's
    memory is refused where membw's single buffer of that size would pass."""
    kb = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal:"))
    size = f"{int(kb * 0.6) // 1024}M"
    with pytest.raises(ConfigError) as e:
        study(tmp_path, ["--sizes", size], placements=({"cpus": "0,1"},))
    assert "2 buffers of" in str(e.value) and "experiments[0] (ll).args[1]:" in str(e.value)
    assert study(tmp_path, ["--sizes", size], placements=({"cpus": "0"},)).runs          # 1 thread: one buffer


def test_a_run_is_estimated_from_its_points_and_repetitions():
    k = kind("loadlat")
    assert k.run_seconds("X", 2, []) == pytest.approx(2.0 + 11 * 6 * 0.13)
    assert k.run_seconds("X", 2, ["--delays", "0,100", "--reps", "3"]) == pytest.approx(2.0 + 3 * 4 * 0.13)
    opts = {"--delays": [0, 100], "--reps": 3, "--min-time": 0.1}
    seconds, how = k.seconds_at_least(opts, 2)
    assert seconds == pytest.approx(3 * 3 * 0.1) and "at once" in how


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
    assert line.startswith("loaded latency (compact 2, memory on node 0): idle ")
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
