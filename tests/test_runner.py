"""Runner details: timeouts in batch jobs, and what execute leaves behind."""
import pytest
from conftest import single_run_spec
from numaplace.runner import effective_timeout


def test_timeout_is_cut_to_the_batch_walltime():
    assert effective_timeout({"timeout": 3600}, {}) == 3600
    assert effective_timeout({"timeout": 3600}, {"NUMAPLACE_WALLTIME_MIN": "10"}) == 3600   # not in a job
    assert effective_timeout({"timeout": 3600}, {"NUMAPLACE_WALLTIME_MIN": "10", "SLURM_JOB_ID": "7"}) == 450
    assert effective_timeout({"timeout": 100}, {"NUMAPLACE_WALLTIME_MIN": "60", "PBS_JOBID": "7.srv"}) == 100
    assert effective_timeout({}, {"NUMAPLACE_WALLTIME_MIN": "1", "SLURM_JOB_ID": "7"}) == 30


def test_execute_leaves_the_caller_as_it_was(npb_build, tmp_path):
    import os
    import signal
    from numaplace.runner import execute
    before = (os.sched_getaffinity(0), signal.getsignal(signal.SIGINT))
    spec = single_run_spec()
    assert execute(spec, npb_build("cg", "S"), tmp_path / "r" / "record.json")["status"] == "ok"
    assert (os.sched_getaffinity(0), signal.getsignal(signal.SIGINT)) == before


@pytest.mark.parametrize("script, status, reason", [
    ("echo boom >&2; exit 3", "failed", "exit status 3: boom"),        # a crash
    ("echo no report here", "failed", "no NPB CG report in stdout"),     # exit 0, no NPB output
])
def test_crash_and_missing_report_are_failed_records(tmp_path, script, status, reason):
    from numaplace.runner import execute
    exe = tmp_path / "fake.x"
    exe.write_text(f"#!/bin/sh\n{script}\n")
    exe.chmod(0o755)
    rec = execute(single_run_spec(), exe, tmp_path / "r" / "record.json")
    assert rec["status"] == status and reason in rec["reason"]
    assert (tmp_path / "r" / "record.json").exists()
