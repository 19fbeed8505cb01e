"""Cray ALPS: with `launcher: aprun` a measured run is `aprun -n 1 -d <threads> -cc
<cpu list> <binary>`, started from the batch job on the MOM node. Checked on the
reference study's Magny-Cours core lists (config/studies/thesis-magny-cours.yaml), and
the runner's aprun path against a stand-in aprun (there is no ALPS here)."""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from numaplace import ConfigError
from numaplace.judge.fidelity import judge
from numaplace.plan.launch import command
from numaplace.plan.study import Study, load_study_file

REPO = Path(__file__).resolve().parents[1]

# placement (its shape in the plan) → aprun line for CG class B
THESIS = {
    "cpus 0-1": "aprun -n 1 -d 2 -cc 0,1 ./cg.B.x",
    "cpus 5-6": "aprun -n 1 -d 2 -cc 5,6 ./cg.B.x",
    "cpus 5,13": "aprun -n 1 -d 2 -cc 5,13 ./cg.B.x",
    "cpus 0-1,6-7": "aprun -n 1 -d 4 -cc 0,1,6,7 ./cg.B.x",
    "cpus 1,7,12,18": "aprun -n 1 -d 4 -cc 1,7,12,18 ./cg.B.x",
    "cpus 3-8": "aprun -n 1 -d 6 -cc 3,4,5,6,7,8 ./cg.B.x",
    "cpus 1,7-8,13-14,19": "aprun -n 1 -d 6 -cc 1,7,8,13,14,19 ./cg.B.x",
    "cpus 6-9,18-21": "aprun -n 1 -d 8 -cc 6,7,8,9,18,19,20,21 ./cg.B.x",
    "2/2/2/2 on 0-3": "aprun -n 1 -d 8 -cc 0,1,6,7,12,13,18,19 ./cg.B.x",
    "cpus 1-3,7-9,13-15,19-21": "aprun -n 1 -d 12 -cc 1,2,3,7,8,9,13,14,15,19,20,21 ./cg.B.x",
    "3/3/3/3 on 0-3": "aprun -n 1 -d 12 -cc 0,1,2,6,7,8,12,13,14,18,19,20 ./cg.B.x",
    "cpus 1-2,7-10,13-16,19-20": "aprun -n 1 -d 12 -cc 1,2,7,8,9,10,13,14,15,16,19,20 ./cg.B.x",
    "4/5/5/4 on 0-3": "aprun -n 1 -d 18 -cc 0,1,2,3,6,7,8,9,10,12,13,14,15,16,18,19,20,21 ./cg.B.x",
    "cpus 1-4,6-10,13-21": "aprun -n 1 -d 18 -cc 1,2,3,4,6,7,8,9,10,13,14,15,16,17,18,19,20,21 ./cg.B.x",
    "cpus 0-23": "aprun -n 1 -d 24 -cc " + ",".join(map(str, range(24))) + " ./cg.B.x",
    # also the serial-init experiment's 6/6 on nodes 0,3 (same CPUs, same placement id)
    "cpus 0-5,18-23": "aprun -n 1 -d 12 -cc 0,1,2,3,4,5,18,19,20,21,22,23 ./cg.B.x",
}


@pytest.fixture(scope="module")
def thesis():
    return load_study_file(REPO / "config/studies/thesis-magny-cours.yaml", REPO / "config")


def placements(study):
    return {r.placement.shape: r.placement for r in study.runs}


@pytest.mark.parametrize("shape", sorted(THESIS))
def test_thesis_core_lists(thesis, shape):
    p = placements(thesis)[shape]
    argv, env = command(p, "./cg.B.x")
    assert shlex.join(argv) == THESIS[shape]
    assert env == {"OMP_NUM_THREADS": str(p.threads)}      # ALPS binds; no OMP_PLACES


def test_every_thesis_run_is_one_aprun_per_core_list(thesis):
    assert len(thesis.runs) > 100
    for r in thesis.runs:
        if r.placement.launcher != "aprun":       # the memory matrices' membind cells: numactl
            assert r.placement.memory.policy == "membind", r.run_id
            continue
        argv, env = command(r.placement, "./x")
        cc = [int(c) for c in argv[argv.index("-cc") + 1].split(",")]
        assert argv[:5] == ["aprun", "-n", "1", "-d", str(r.placement.threads)] and argv[-1] == "./x"
        # threads bound in order: ascending, or thread 0 first on the memory CPU (memory cells)
        assert cc == list(r.placement.order or sorted(r.placement.cpus)), r.run_id
        assert len(cc) == r.placement.threads, r.run_id
        assert r.placement.binding == "threads" and r.placement.memory.policy == "local"


def test_plan_shows_and_runner_gets_the_same_command(thesis):
    run = next(r for r in thesis.runs if r.bench == "cg" and r.cls == "B" and r.placement.shape == "2/2/2/2 on 0-3")
    assert run.row()["command"] == "OMP_NUM_THREADS=8 " + THESIS["2/2/2/2 on 0-3"]
    spec = thesis.run_params(run.run_id)
    assert spec["argv"] == THESIS["2/2/2/2 on 0-3"].split()[:-1] + ["BINARY"]
    assert spec["env"] == {"OMP_NUM_THREADS": "8"}


@pytest.mark.parametrize("memory, option", [({"interleave": [0, 1]}, "--interleave=0-1"),
                                            ({"membind": [1]}, "--membind=1"), ({"preferred": 0}, "--preferred=0")])
def test_aprun_composes_numactl_for_a_memory_policy(memory, option):
    """ALPS binds the threads, numactl on the compute node sets the memory policy
    (aprun -n 1 -d 6 -cc 0-5 numactl --interleave=0-1 ./cg.S.x): a composition, not a
    refusal (issue 43.2)."""
    cfg = {"study": "x", "platform": "magny-cours", "launcher": "aprun", "classes": ["S"], "benchmarks": ["cg"],
           "experiments": [{"name": "e", "memory": [memory], "placements": [{"cpus": "0-5"}]}]}
    st = Study(cfg, "x.yaml", REPO / "config")
    spec = st.run_params(st.runs[0].run_id)
    assert spec["argv"] == ["aprun", "-n", "1", "-d", "6", "-cc", "0,1,2,3,4,5", "numactl", option, "BINARY"]


def test_runner_under_aprun_records_what_it_can(npb_build, tmp_path, monkeypatch):
    """A stand-in aprun (drops its options, runs the binary) on PATH: the record has
    the aprun argv, NPB's report and exit status, the batch job's ids; no numa_maps or
    thread samples (the process would be on a compute node), fidelity unknown."""
    from numaplace.run.runner import execute
    binary = npb_build("cg", "S")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "aprun").write_text('#!/bin/sh\n# stand-in for ALPS aprun: -n 1 -d N -cc LIST BINARY\n'
                                  'shift 6\nexec "$@"\n')
    (bindir / "aprun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("PBS_JOBID", "4242.sdb")
    study = Study({"study": "ap", "platform": "magny-cours", "launcher": "aprun", "classes": ["S"],
                   "benchmarks": ["cg"], "repetitions": 1, "run": {"idle_check": "off"},
                   "experiments": [{"name": "e", "placements": [{"cpus": "0,1"}]}]},
                  "ap.yaml", REPO / "config")
    (run,) = study.runs
    rec = execute(study.run_params(run.run_id), binary, tmp_path / "run" / "record.json")
    assert rec["argv"][:6] == ["aprun", "-n", "1", "-d", "2", "-cc"] and rec["argv"][6] == "0,1"
    assert rec["status"] == "ok" and rec["output"]["verified"] and rec["exit_status"] == 0
    assert rec["pbs_jobid"] == "4242.sdb"
    assert rec["captures"] is None and "aprun" in rec["captures_note"]
    assert judge(rec)["verdict"] == "unknown" and "fidelity" not in rec
    assert json.loads((tmp_path / "run" / "record.json").read_text())["run_id"] == run.run_id
