"""Helpers of the cluster tests (tests/test_slurm.py, tests/test_pbs.py): a copy of the
workflow to run in, Snakemake through a profile, the records, and one local Slurm for
the whole pytest session, whichever test module asks for it first."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from cluster import slurm_local
from conftest import copy_workflow, need_rig, read_records as records  # noqa: F401


def fake(responses, tools=("qstat", "scontrol", "sinfo")):
    """The batch system's tools as numaplace.cluster asks them, answered from
    {argv prefix: (rc, stdout, stderr)}: (`run`, which records each argv in run.asked;
    `which`, finding only `tools`)."""
    asked = []

    def run(argv):
        asked.append(list(argv))
        for prefix, (rc, out, err) in responses.items():
            if argv[:len(prefix)] == list(prefix):
                return subprocess.CompletedProcess(argv, rc, out, err)
        return subprocess.CompletedProcess(argv, 1, "", "not expected here")
    run.asked = asked
    return run, (lambda name: f"/usr/bin/{name}" if name in tools else None)


def snakemake(wf, *args, timeout=600):
    """Run Snakemake in wf; returns (CompletedProcess, seconds). Fails the test with the
    log tail when Snakemake fails."""
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=wf, capture_output=True,
                       text=True, timeout=timeout)
    seconds = time.monotonic() - t0
    if r.returncode != 0:
        pytest.fail(f"snakemake {' '.join(args)} failed (exit {r.returncode}) after {seconds:.0f} s\n"
                    + r.stdout[-4000:] + "\n" + r.stderr[-6000:])
    return r, seconds


def plan_ids(wf, study):
    lines = (wf / "results" / study / "plan.tsv").read_text().splitlines()
    return [line.split("\t")[0] for line in lines[1:]]


def scontrol_job(job_id):
    """`scontrol show job -o` as a dict (the test cluster keeps ended jobs for an hour)."""
    out = subprocess.run(["scontrol", "show", "job", "-o", str(job_id)], capture_output=True,
                         text=True).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv)


class _Shared:
    """One Slurm per pytest session: started by the first module that asks, stopped
    (by PID, only if we started it) when the last one lets go."""
    users = 0
    info = None
    error = None


def acquire():
    """The running test cluster's facts, or pytest.skip with the reason."""
    why = slurm_local.missing()
    if why:
        need_rig(f"no local Slurm: {why}")
    if _Shared.error:
        need_rig(_Shared.error)
    if _Shared.info is None:
        try:
            _Shared.info = slurm_local.start(log=lambda m: print(f"[slurm_local] {m}"))
        except (RuntimeError, subprocess.CalledProcessError, OSError) as e:
            # the packages are there but the daemons would not come up: that is a failure
            _Shared.error = f"local Slurm did not start: {e}"
            pytest.fail(_Shared.error)
    _Shared.users += 1
    return _Shared.info


def release():
    _Shared.users -= 1
    if _Shared.users == 0 and _Shared.info is not None:
        if not _Shared.info.get("reused"):
            slurm_local.stop(log=lambda m: print(f"[slurm_local] {m}"))
        _Shared.info = None


@pytest.fixture(scope="session")
def slurm():
    """The local test Slurm, started by the first module that needs it and stopped
    (by pid) when the last one is done."""
    info = acquire()
    yield info
    release()
