"""Runner details: timeouts in batch jobs, and what execute leaves behind."""
import pytest
from conftest import single_run_spec
from numaplace.run.runner import effective_timeout


def test_timeout_is_cut_to_the_batch_walltime(monkeypatch):
    import time
    from numaplace.run import runner
    monkeypatch.setattr(runner, "JOB_STARTED", time.monotonic())
    assert effective_timeout({"timeout": 3600}, {}) == 3600
    assert effective_timeout({"timeout": 3600}, {"NUMAPLACE_WALLTIME_MIN": "10"}) == 3600   # not in a job
    assert effective_timeout({"timeout": 3600}, {"NUMAPLACE_WALLTIME_MIN": "10", "SLURM_JOB_ID": "7"}) == \
        pytest.approx(450, abs=1)
    # a later run of a chunk: the job's walltime less what the earlier runs took
    monkeypatch.setattr(runner, "JOB_STARTED", time.monotonic() - 120)
    assert effective_timeout({"timeout": 3600}, {"NUMAPLACE_WALLTIME_MIN": "10", "SLURM_JOB_ID": "7"}) == \
        pytest.approx(330, abs=1)
    assert effective_timeout({"timeout": 100}, {"NUMAPLACE_WALLTIME_MIN": "60", "PBS_JOBID": "7.srv"}) == 100
    assert effective_timeout({}, {"NUMAPLACE_WALLTIME_MIN": "1", "SLURM_JOB_ID": "7"}) == 30


def test_execute_leaves_the_caller_as_it_was(npb_build, tmp_path):
    import os
    import signal
    from numaplace.run.runner import execute
    before = (os.sched_getaffinity(0), signal.getsignal(signal.SIGINT))
    spec = single_run_spec()
    assert execute(spec, npb_build("cg", "S"), tmp_path / "r" / "record.json")["status"] == "ok"
    assert (os.sched_getaffinity(0), signal.getsignal(signal.SIGINT)) == before


@pytest.mark.parametrize("script, status, reason", [
    ("echo boom >&2; exit 3", "failed", "exit status 3: boom"),        # a crash
    ("echo no report here", "failed", "no NPB CG report in stdout"),     # exit 0, no NPB output
])
def test_crash_and_missing_report_are_failed_records(tmp_path, script, status, reason):
    from numaplace.run.runner import execute
    exe = tmp_path / "fake.x"
    exe.write_text(f"#!/bin/sh\n{script}\n")
    exe.chmod(0o755)
    rec = execute(single_run_spec(), exe, tmp_path / "r" / "record.json")
    assert rec["status"] == status and reason in rec["reason"]
    assert (tmp_path / "r" / "record.json").exists()


def test_run_arguments_are_read_without_argparse_and_anything_else_goes_to_it():
    from numaplace.cli import _run_args
    a = _run_args(["run", "--record", "r.json", "--spec", "{}", "--binary", "x"])
    assert (a.cmd, a.spec, a.binary, a.build, a.record) == ("run", "{}", "x", None, "r.json")
    b = _run_args(["run", "--spec", "{}", "--build", "b.json", "--record", "r.json"])
    assert (b.build, b.binary) == ("b.json", None)
    for other in (["run", "--spec", "{}", "--binary", "x", "--build", "b"], ["run", "--help"],
                  ["tables", "--spec", "{}", "--binary", "x", "--record", "r"]):
        assert _run_args(other) is None


def test_settings_fall_back_on_the_schema_defaults_only_when_missing():
    from numaplace.core.schema import Section, defaults
    s = Section("run", {"timeout": 5})
    assert s["timeout"] == 5 and s["idle_check"] == defaults("run")["idle_check"]
    assert dict(s) == {"timeout": 5}
    assert s.whole() == {**defaults("run"), "timeout": 5} and Section("run").whole() == defaults("run")
