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
def test_crash_and_missing_report_are_failed_records(tmp_path, script, status, reason, own_lock):
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


# -- what each outcome's record says (Issue 42: exact values) ---------------------------------

@pytest.fixture
def own_lock(tmp_path, monkeypatch):
    """A machine lock of the test's own: the machine's may be held by a measured run."""
    from numaplace.machine import guard
    monkeypatch.setattr(guard, "lock_path", lambda: tmp_path / guard.LOCK_NAME)


def fake_bench(tmp_path, script):
    exe = tmp_path / "fake.x"
    exe.write_text(f"#!/bin/sh\n{script}\n")
    exe.chmod(0o755)
    return exe


def test_a_pbs_job_cuts_the_timeout_too(monkeypatch):
    import time
    from numaplace.run import runner
    monkeypatch.setattr(runner, "JOB_STARTED", time.monotonic())
    assert effective_timeout({"timeout": 3600}, {"NUMAPLACE_WALLTIME_MIN": "10", "PBS_JOBID": "7.srv"}) == \
        pytest.approx(450, abs=1)


def test_host_facts_name_the_batch_job_in_lower_case(monkeypatch):
    import os
    from numaplace.run import runner
    for k in ("SLURM_JOB_ID", "SLURMD_NODENAME", "SLURM_JOB_NODELIST", "PBS_JOBID", "PBS_NODEFILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "4711")
    monkeypatch.setenv("PBS_NODEFILE", "/var/spool/pbs/aux/12.srv")
    facts = runner.host_facts()
    assert facts == {"host": os.uname().nodename, "kernel": os.uname().release, "machine": os.uname().machine,
                     "slurm_job_id": "4711", "pbs_nodefile": "/var/spool/pbs/aux/12.srv"}


def test_a_runs_definition_digest_does_not_depend_on_key_order():
    """A chunk started again keeps a record only when its digest matches: the same params
    written in another order must give the same digest."""
    from numaplace.run.runner import definition_digest
    assert definition_digest({"run_id": "a.r1", "rep": 1}) == definition_digest({"rep": 1, "run_id": "a.r1"}) == \
        "1591e2c4f588020c0d1eaf7fd0e3ae861f66991ab18e61c75abd8bbb96b1a3b1"
    assert definition_digest({"run_id": "a.r1", "rep": 2}) != definition_digest({"run_id": "a.r1", "rep": 1})


def test_a_failed_build_gives_a_build_failed_record_and_runs_nothing(tmp_path):
    import json
    import os
    from numaplace.run.runner import definition_digest, execute_build
    build = tmp_path / "cg.S.build.json"
    build.write_text(json.dumps({"status": "failed", "binary": "/b/cg.S.x", "reason": "make exited 2",
                                 "log": "/b/cg.S.log"}))
    readable, fd = os.pipe()                     # the held lock's descriptor: its write end
    os.set_blocking(readable, False)             # still open: BlockingIOError, not a hang
    spec = single_run_spec()
    rec = execute_build(spec, build, tmp_path / "r" / "record.json", held_lock=fd)
    assert os.read(readable, 1) == b""             # closed: the lock was let go at once
    os.close(readable)
    assert (rec["status"], rec["reason"], rec["output"], rec["captures"]) == ("build-failed", "make exited 2", None, None)
    assert rec["captures_note"] == "the run did not execute: its binary could not be built"
    assert (rec["binary"], rec["build"]["log"], rec["argv"]) == ("/b/cg.S.x", "/b/cg.S.log", spec["argv"])
    assert (rec["run_id"], rec["rep"], rec["definition_sha256"]) == (spec["run_id"], 1, definition_digest(spec))
    assert json.loads((tmp_path / "r" / "record.json").read_text()) == rec


def test_a_not_needed_record_carries_its_reason_and_nothing_measured(tmp_path):
    import json
    from numaplace.run.runner import record_not_needed
    spec = {**single_run_spec(), "rep": 3}
    rec = record_not_needed(spec, tmp_path / "r" / "record.json", "separated after 2 rounds (p 0.01)",
                            {"adaptive": {"min": 2, "max": 5, "alpha": 0.05}})
    assert (rec["status"], rec["reason"], rec["output"], rec["captures"], rec["rep"]) == \
        ("not-needed", "separated after 2 rounds (p 0.01)", None, None, 3)
    assert rec["captures_note"] == "the run did not execute: adaptive repetitions found it not needed"
    assert rec["adaptive"] == {"min": 2, "max": 5, "alpha": 0.05} and rec["run_settings"] == spec["run"]
    assert rec["kind"] == {"family": "npb", "metric": "mops", "unit": "Mop/s", "higher_is_better": True}
    assert json.loads((tmp_path / "r" / "record.json").read_text()) == rec


def test_a_refused_placement_keeps_the_end_of_the_probes_stderr_and_says_its_beginning(tmp_path, monkeypatch, own_lock):
    import subprocess
    from types import SimpleNamespace
    from numaplace.run import runner
    stderr = "taskset: failed to set pid 0's affinity: " + "x" * 2500 + " END\n"
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 1, "", stderr)
    monkeypatch.setattr(runner, "subprocess", SimpleNamespace(run=run, Popen=subprocess.Popen))
    rec = runner.execute(single_run_spec(cpu=0), fake_bench(tmp_path, "exit 0"), tmp_path / "r" / "record.json")
    assert calls == [["taskset", "-c", "0", "true"]]
    assert rec["status"] == "placement-failed"
    assert rec["reason"] == "taskset refused the placement: " + stderr.strip()[:300]
    assert rec["probe"] == {"argv": ["taskset", "-c", "0", "true"], "exit_status": 1, "stderr": stderr[-2000:]}


def test_busy_cpus_end_a_run_only_under_idle_check_refuse(tmp_path, monkeypatch, own_lock):
    """refuse: a not-idle record naming the busy CPUs; flag: noted, and the run goes on
    (here to a probe that refuses the placement)."""
    import subprocess
    from types import SimpleNamespace
    from numaplace.run import runner
    seen = []

    def idle_check(cpus, busy_max, wait, mode, since=None):
        seen.append((list(cpus), busy_max, wait, mode))
        return False, {"busy": {"0": 0.9}, "busy_cpus": {"0": 0.9}}
    monkeypatch.setattr(runner, "idle_check", idle_check)
    monkeypatch.setattr(runner, "subprocess", SimpleNamespace(
        run=lambda argv, **kw: subprocess.CompletedProcess(argv, 1, "", "refused\n"), Popen=subprocess.Popen))
    exe = fake_bench(tmp_path, "exit 0")
    rec = runner.execute(single_run_spec(idle_check="refuse", idle_busy_max=0.2, idle_wait=0),
                         exe, tmp_path / "a" / "record.json")
    assert (rec["status"], rec["reason"]) == ("not-idle", "CPUs busy before the run: {'0': 0.9}")
    assert rec["idle"] == {"idle": False, "busy": {"0": 0.9}, "busy_cpus": {"0": 0.9}}
    rec = runner.execute(single_run_spec(idle_check="flag", idle_busy_max=0.2, idle_wait=0),
                         exe, tmp_path / "b" / "record.json")
    assert (rec["status"], rec["reason"]) == ("placement-failed", "taskset refused the placement: refused")
    assert rec["idle"]["idle"] is False
    assert seen == [([0], 0.2, 0, "refuse"), ([0], 0.2, 0, "flag")]


def test_a_crash_reason_ends_with_the_last_300_characters_of_stderr(tmp_path, own_lock):
    from numaplace.run.runner import execute
    exe = fake_bench(tmp_path, "printf '%0100d' 0 | tr 0 A >&2; printf '%0300d' 0 | tr 0 B >&2; exit 3")
    rec = execute(single_run_spec(), exe, tmp_path / "r" / "record.json")
    assert (rec["status"], rec["reason"], rec["exit_status"]) == ("failed", "exit status 3: " + "B" * 300, 3)


def test_a_run_that_exits_0_without_a_report_is_failed_without_its_stderr(tmp_path, own_lock):
    from numaplace.run.runner import execute
    rec = execute(single_run_spec(), fake_bench(tmp_path, "echo warning >&2; exit 0"), tmp_path / "r" / "record.json")
    assert (rec["status"], rec["reason"], rec["exit_status"]) == ("failed", "no NPB CG report in stdout", 0)


def test_wall_time_is_kept_to_a_tenth_of_a_millisecond(tmp_path, monkeypatch, own_lock):
    import time
    from types import SimpleNamespace
    from numaplace.run import runner
    monkeypatch.delenv("NUMAPLACE_WALLTIME_MIN", raising=False)
    ticks = iter([100.0, 101.23456789])
    monkeypatch.setattr(runner, "time", SimpleNamespace(monotonic=lambda: next(ticks, 101.23456789),
                                                       sleep=time.sleep))
    rec = runner.execute(single_run_spec(), fake_bench(tmp_path, "exit 0"), tmp_path / "r" / "record.json")
    assert rec["wall_s"] == 1.2346


def test_a_timed_out_run_says_its_timeout_in_plain_seconds(tmp_path, monkeypatch, own_lock):
    from numaplace.run import runner
    monkeypatch.setattr(runner, "effective_timeout", lambda runcfg: 0.1 + 0.2)      # 0.30000000000000004
    rec = runner.execute(single_run_spec(), fake_bench(tmp_path, "exec sleep 5"), tmp_path / "r" / "record.json")
    assert (rec["status"], rec["reason"]) == ("timeout", "killed after 0.3 s")
