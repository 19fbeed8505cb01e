"""A measurement stops when its workflow is gone, and says so in one line (issue 45, items
2 and 3): the chunk's process watches its Snakemake for the whole chunk, decides what to
keep only under the machine lock, and a failed measure job prints numaplace's one line,
never the run specs. Stand-ins: a parent process whose command line names snakemake, and
a benchmark that sleeps 0.3 s (class-S-like: shorter than the runner's own watch's poll)."""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO, single_run_spec
from numaplace.machine.guard import _start_time
from numaplace.run import chunk

RUNS = 14


def chunk_files(tmp_path, sleep=0.3, n=RUNS):
    """A chunk of n runs of a stand-in benchmark (sleeps, prints no NPB report: each run
    gets a `failed` record, which is all this needs), as the measure rule passes it."""
    exe = tmp_path / "bench.x"
    exe.write_text(f"#!/bin/sh\nsleep {sleep}\necho stand-in\n")
    exe.chmod(0o755)
    build = tmp_path / "bench.build.json"
    build.write_text(json.dumps({"status": "ok", "binary": str(exe), "reason": None}))
    runs = []
    for i in range(1, n + 1):
        spec = single_run_spec(capture={"numa_maps": False, "threads": False, "numastat": False})
        spec["rep"] = i
        spec["run_id"] = f"cg.S.default.c0.r{i}"
        spec["capture"] = {"numa_maps": False, "threads": False, "numastat": False}
        spec["run"].pop("capture", None)
        runs.append({"spec": spec, "build": str(build)})
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs))
    return runs, path


# the chunk's process: numaplace measure, with the machine lock in the test's folder (the
# machine's own is shared with whatever else measures here)
MEASURE = ("import sys; from pathlib import Path; import numaplace.machine.guard as g; "
           "g.lock_path = lambda: Path(sys.argv[1]); from numaplace.cli import main; sys.exit(main(sys.argv[2:]))")
# the stand-in Snakemake: starts the chunk's process and waits for it
PARENT = ("import subprocess, sys; p = subprocess.Popen(sys.argv[2:], stderr=open(sys.argv[1] + '.err', 'w')); "
          "open(sys.argv[1], 'w').write(str(p.pid)); p.wait()  # snakemake stand-in")


def records(results):
    return sorted((results / "runs").glob("*/record.json"))


@pytest.mark.workflow
def test_an_orphaned_chunk_stops_within_seconds_and_the_rerun_measures_each_run_once(tmp_path, monkeypatch):
    """kill -9 of the Snakemake process mid-chunk: the chunk's process stops within 5 s, and
    says in one line what stopped it and the exact command to go on. Before: the watch was
    armed only while a benchmark ran (and looked up per run), so with runs shorter than its
    poll the orphan measured all 14 runs on its own."""
    runs, runs_file = chunk_files(tmp_path)
    results, ledger, pidfile = tmp_path / "results" / "t", tmp_path / "results" / "t" / "rounds" / "r1.c1.json", tmp_path / "pid"
    measure = [sys.executable, "-c", MEASURE, str(tmp_path / "machine.lock"), "measure", "--runs", f"@{runs_file}",
               "--chunk", json.dumps({"chunk": "r1.c1", "round": 1, "seed": 1}), "--results", str(results),
               "--ledger", str(ledger)]
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(pidfile), *measure], cwd=REPO)
    pid = None
    try:
        deadline = time.monotonic() + 30
        while len(records(results)) < 2:
            assert time.monotonic() < deadline and parent.poll() is None, "the chunk did not start measuring"
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        killed_at, at_kill = time.monotonic(), len(records(results))
        while _start_time(pid) is not None and time.monotonic() - killed_at < 8:
            time.sleep(0.05)
        stopped_after = time.monotonic() - killed_at
        assert _start_time(pid) is None, "the orphaned chunk still measures 8 s after its Snakemake died"
        assert stopped_after < 5, f"the orphaned chunk took {stopped_after:.1f} s to stop"
    finally:
        if pid and _start_time(pid) is not None:
            os.kill(pid, signal.SIGKILL)
    assert len(records(results)) <= at_kill + 1 < RUNS       # at most the run under way finished
    assert not ledger.exists()
    err = (tmp_path / "pid.err").read_text().strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"numaplace measure: r1.c1: stopped after {len(records(results))} of its {RUNS} runs: "
                             f"its Snakemake (pid {parent.pid}) is gone;")
    # the exact command: --unlock, then Snakemake's own command line again
    assert " --unlock " in err[0] and err[0].endswith(" && " + shlex.join(parent.args))
    assert len(err[0]) < 3000 and '"spec"' not in err[0]
    # the rerun (fast now) measures each run once: what the orphan recorded is kept
    before = {p: p.read_bytes() for p in records(results)}
    monkeypatch.setattr("numaplace.machine.guard.lock_path", lambda: tmp_path / "machine.lock")
    runs, _ = chunk_files(tmp_path, sleep=0)
    out = chunk.measure_chunk(json.loads(runs_file.read_text()), results, ledger,
                              {"chunk": "r1.c1", "round": 1, "seed": 1})
    outcome = {r["run_id"]: r["outcome"] for r in out["runs"]}
    assert sum(o == "kept" for o in outcome.values()) == len(before)
    assert len(records(results)) == RUNS and all(p.read_bytes() == b for p, b in before.items())
    assert not list((results / "runs").glob("*/attempts"))


@pytest.mark.unit
def test_what_is_kept_is_decided_under_the_machine_lock(tmp_path, monkeypatch):
    """Before: the records were read (recorded) before the lock was taken, so a chunk
    started again while an orphan still measured measured the orphan's runs again and set
    its ok records aside."""
    import fcntl
    log = []
    monkeypatch.setattr("numaplace.machine.guard.lock_path", lambda: tmp_path / "machine.lock")
    monkeypatch.setattr(chunk, "recorded", lambda path, spec, adaptive=None: log.append("decide") or True)
    real = fcntl.flock
    monkeypatch.setattr(fcntl, "flock", lambda fd, op: (log.append("lock" if op == fcntl.LOCK_EX else op),
                                                        real(fd, op)))
    runs = [{"spec": {"run_id": f"a.r{i}"}, "build": "b.json"} for i in (1, 2)]
    out = chunk.measure_chunk(runs, tmp_path / "results", tmp_path / "ledger.json", {"chunk": "r1.c1"})
    assert log == ["lock", "decide", "decide"]
    assert [r["outcome"] for r in out["runs"]] == ["kept", "kept"]


@pytest.mark.unit
def test_records_of_another_definition_are_said_before_they_are_measured_again(tmp_path, monkeypatch):
    monkeypatch.setattr("numaplace.machine.guard.lock_path", lambda: tmp_path / "machine.lock")
    results = tmp_path / "results"
    (results / "runs" / "a.r2").mkdir(parents=True)
    (results / "runs" / "a.r2" / "record.json").write_text(json.dumps({"definition_sha256": "old"}))
    monkeypatch.setattr("numaplace.run.runner.execute_build",
                        lambda spec, *a, **k: (os.close(a[3]), {"run_id": spec["run_id"], "status": "ok"})[1])
    monkeypatch.setattr(chunk, "_window", lambda spec, affinity: None)
    said = []
    runs = [{"spec": {"run_id": f"a.r{i}", "run": {}}, "build": "b.json"} for i in (1, 2)]
    chunk.measure_chunk(runs, results, tmp_path / "ledger.json", {"chunk": "r1.c1"}, aside=said.append)
    assert said == [["a.r2"]]


@pytest.mark.workflow
def test_a_failed_measure_job_says_one_line_and_no_spec(tmp_path):
    """The measure rule passes its runs as a file (@path), so what Snakemake prints of a
    failed job is a short command; numaplace's own line says what, where and what to do.
    Before: --runs carried every run spec as JSON (23 kB for 14 runs), printed whole."""
    runs, runs_file = chunk_files(tmp_path, n=3)
    results = tmp_path / "results" / "t"
    (results / "runs").mkdir(parents=True)
    (results / "runs" / runs[0]["spec"]["run_id"]).write_text("a file where the run's folder goes")
    p = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path / "machine.lock"), "measure", "--runs",
                        f"@{runs_file}", "--chunk", '{"chunk": "r1.c1"}', "--results", str(results),
                        "--ledger", str(results / "rounds" / "r1.c1.json")],
                       capture_output=True, text=True, timeout=60, cwd=REPO)
    assert p.returncode == 1
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("numaplace measure: r1.c1: ") and "Traceback" not in p.stderr
    assert "kept" in err[0] and len(err[0]) < 600 and '"spec"' not in err[0]
    # the rule's command names the file, not the specs
    smk = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert 'return f"@{path}"' in smk
