"""Bad days: faults injected while a real study runs (class S CG through Snakemake).
Whatever happens, nothing measured is lost or corrupted, and the user is told why.

One workflow copy per session; every test has its own study in it (the build, keyed by
source and flags, is shared)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest
import yaml
from conftest import copy_workflow, run_snakemake

IS_ROOT = os.geteuid() == 0
# Every fault is injected twice where this machine allows it: into a Snakemake run as
# root (write protection does nothing for root) and into one without privileges.
WHO = ["root", "unprivileged"] if IS_ROOT else ["user"]


@pytest.fixture(params=WHO)
def who(request):
    return request.param


def study(name, runs=1, binary_wrapper=False):
    return {"study": name, "benchmarks": ["cg"], "classes": ["S"], "repetitions": runs,
            "launcher": "taskset", "run": {"idle_check": "off"},
            "experiments": [{"name": "one", "placements": [{"cpus": "0"}]}]}


@pytest.fixture(scope="module")
def wf(repo, tmp_path_factory):
    wf = copy_workflow(repo, tmp_path_factory.mktemp("faults") / "wf")
    (wf / "build.yaml").write_text(yaml.safe_dump(study("buildonly")))
    run_snakemake(wf, "--cores", "1", "build", "--configfile", "build.yaml")
    return wf


def slow_binary(wf, seconds):
    """Make the shared cg.S binary a wrapper that sleeps first (restored by the caller),
    so a fault surely lands while the run executes."""
    binary = next((wf / "results/build").glob("*/default/bin/cg.S.x"))
    real = binary.with_suffix(".real")
    if not real.exists():
        binary.rename(real)
    binary.write_text(f"#!/bin/sh\nsleep {seconds}\nexec {real}\n")
    binary.chmod(0o755)
    os.utime(binary, (time.time() - 3600,) * 2)       # older than its build record
    return binary, real


def restore_binary(binary, real):
    binary.unlink()
    real.rename(binary)
    os.utime(binary, (time.time() - 3600,) * 2)


def start(wf, configfile, *extra, unprivileged=False):
    unprivileged = unprivileged in (True, "unprivileged")
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", configfile, *extra]
    env = {**os.environ, "HOME": str(wf / ".home")} if unprivileged else None   # no /root/.cache
    return subprocess.Popen(unprivileged_prefix() + cmd if unprivileged else cmd, cwd=wf,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=env)


def unprivileged_prefix():
    """Run without privileges: root without any capability (no CAP_DAC_OVERRIDE), for
    whom file permissions hold as for any user (Snakemake's write protection is an
    os.access check); unlike user nobody it can still reach an interpreter under /root."""
    return ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]


def wait_for(path, timeout=90):
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear in {timeout} s")
        time.sleep(0.2)


def running(pattern):
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()


def snakemake_as(wf, who, configfile, *extra):
    p = start(wf, configfile, *extra, unprivileged=who)
    out, _ = p.communicate(timeout=600)
    p.out = out
    return p


@contextmanager
def a_run_in_progress(wf, name, seconds=60, who="root"):
    """Snakemake started on study `name`, its one run's benchmark surely executing (it
    sleeps `seconds` first); yields (Snakemake's Popen, the run's folder, the binary)."""
    (wf / f"{name}.yaml").write_text(yaml.safe_dump(study(name)))
    binary, real = slow_binary(wf, seconds)
    try:
        p = start(wf, f"{name}.yaml", unprivileged=who)
        rundir = wf / f"results/{name}/runs/cg.S.default.c0_loc_p_ts.r1"
        wait_for(rundir / "stdout")
        time.sleep(1.0)
        yield p, rundir, binary
    finally:
        restore_binary(binary, real)


def test_kill_9_of_snakemake_stops_the_benchmark_and_a_rerun_recovers(wf, who):
    name = f"k9-{who}"
    with a_run_in_progress(wf, name, who=who) as (p, rundir, binary):
        assert running(str(binary)), "the benchmark should be running"
        os.kill(p.pid, signal.SIGKILL)                   # Snakemake alone, no chance to clean up
        p.communicate(timeout=30)
        deadline = time.monotonic() + 10
        while (running(str(binary)) or running(f"numaplace run --spec.*results/{name}/")) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not running(str(binary)), "the benchmark outlived Snakemake"
        assert not [pid for pid in running(f"numaplace run --spec.*results/{name}/")]
        assert not (rundir / "record.json").exists()
    # the next start names the one command that recovers
    again = snakemake_as(wf, who, f"{name}.yaml")
    assert again.returncode != 0 and "--unlock" in again.out, again.out[-3000:]
    assert snakemake_as(wf, who, f"{name}.yaml", "--unlock").returncode == 0
    assert snakemake_as(wf, who, f"{name}.yaml").returncode == 0
    rec = json.loads((rundir / "record.json").read_text())
    assert rec["status"] == "ok"
    # the interrupted attempt's files were set aside, not mixed into the new run
    assert len(list((rundir / "interrupted").glob("*/stdout"))) == 1


def test_sigint_to_snakemake_alone_keeps_the_complete_record(wf, who):
    """A batch system or a script signals only Snakemake's pid: the run finishes, and
    the complete record survives whatever Snakemake then decides (--rerun-incomplete)."""
    name = f"si-{who}"
    (wf / f"{name}.yaml").write_text(yaml.safe_dump(study(name)))
    binary, real = slow_binary(wf, 3)
    try:
        p = start(wf, f"{name}.yaml", unprivileged=who)
        rundir = wf / f"results/{name}/runs/cg.S.default.c0_loc_p_ts.r1"
        wait_for(rundir / "stdout")
        os.kill(p.pid, signal.SIGINT)
        out, _ = p.communicate(timeout=120)
    finally:
        restore_binary(binary, real)
    kept = rundir / "record.kept.json"
    assert kept.exists(), out[-2000:]
    first = json.loads(kept.read_text())
    assert first["status"] == "ok"
    again = snakemake_as(wf, who, f"{name}.yaml")
    if again.returncode != 0:          # the record was marked incomplete: the message says what to do
        assert "--rerun-incomplete" in again.out, again.out[-3000:]
        assert snakemake_as(wf, who, f"{name}.yaml", "--rerun-incomplete").returncode == 0
    recs = sorted(rundir.glob("**/record.json"))
    statuses = {str(r.relative_to(rundir)): json.loads(r.read_text())["status"] for r in recs}
    assert statuses.get("record.json") == "ok"
    # the first, complete measurement is still there: as the current record, or set aside
    assert any(json.loads(r.read_text())["started"] == first["started"] for r in recs), statuses


def test_two_studies_at_once_never_overlap(wf, who):
    names = (f"par-a-{who}", f"par-b-{who}")
    for name in names:
        (wf / f"{name}.yaml").write_text(yaml.safe_dump(study(name, runs=3)))
    binary, real = slow_binary(wf, 2)          # runs long enough to surely meet
    try:
        procs = [start(wf, f"{name}.yaml", unprivileged=who) for name in names]
        for p in procs:
            out, _ = p.communicate(timeout=600)
            assert p.returncode == 0, out[-3000:]
    finally:
        restore_binary(binary, real)
    recs = [json.loads(r.read_text()) for name in names
            for r in (wf / "results" / name / "runs").glob("*/record.json")]
    assert len(recs) == 6 and all(r["status"] == "ok" for r in recs)
    spans = sorted((r["started"], r["ended"], r["study"]) for r in recs)
    for (s1, e1, a), (s2, e2, b) in zip(spans, spans[1:]):
        assert e1 <= s2, f"measured runs of {a} and {b} overlapped: {s1}..{e1} and {s2}..{e2}"
    assert any(r["lock_wait_s"] > 0.5 for r in recs), [r["lock_wait_s"] for r in recs]


def _cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def test_other_load_on_the_run_cpus_is_measured_and_flagged(npb_build, tmp_path):
    """A process hogging the run's CPU: its CPU time shows up as the run's foreign load
    (whatever else the machine does, the hog's share is a lower bound), and the benchmark's
    own time is not counted as foreign."""
    from conftest import single_run_spec
    from numaplace.aggregate import record_row
    from numaplace.runner import execute
    exe = npb_build("cg", "W")
    hog = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        before = _cpu_s(hog.pid)
        loud = execute(single_run_spec(), exe, tmp_path / "loud" / "record.json")
        hog_cpu = _cpu_s(hog.pid) - before
    finally:
        hog.kill()
    f = loud["foreign_load"]
    assert loud["status"] == "ok" and hog_cpu > 0.2 * loud["wall_s"]
    assert f["cpu_s"] >= 0.8 * hog_cpu - 0.05, (f, hog_cpu)       # jiffies: ±1/CLK_TCK per CPU
    assert f["busy_cpu_s"] == pytest.approx(loud["wall_s"], rel=0.2)   # CPU 0 never idle
    # the benchmark's own time was spent on CPU 0 (tick-sampled jiffies vs exact rusage)
    assert 0 < f["run_cpu_s"] <= 1.1 * f["busy_cpu_s"] + 0.05, f
    assert f["share"] > 0.2 and record_row({**loud, "_path": None})["shared_cpus"] is True


def test_two_snakemakes_on_one_study_the_second_is_refused_and_nothing_is_lost(wf, who):
    name = f"same-{who}"
    with a_run_in_progress(wf, name, seconds=5, who=who) as (p, rundir, binary):
        second = snakemake_as(wf, who, f"{name}.yaml")
        first_out, _ = p.communicate(timeout=300)
    assert second.returncode != 0 and "cannot be locked" in second.out, second.out[-3000:]
    assert p.returncode == 0, first_out[-3000:]
    rec = json.loads((rundir / "record.json").read_text())
    assert rec["status"] == "ok" and not list(rundir.glob("attempts/*"))


def test_kill_9_of_the_benchmark_is_a_failed_record(wf, who):
    with a_run_in_progress(wf, f"kb-{who}", who=who) as (p, rundir, binary):
        for pid in running(str(binary)):
            os.kill(int(pid), signal.SIGKILL)
        p.communicate(timeout=120)
    rec = json.loads((rundir / "record.json").read_text())
    assert rec["status"] == "failed" and rec["exit_status"] == -9, rec["reason"]
    assert rec["reason"].startswith("killed by SIGKILL"), rec["reason"]


@pytest.mark.skipif(not IS_ROOT, reason="mounting a small tmpfs needs root")
def test_full_disk_tells_the_user_why(wf, who):
    name = f"full-{who}"
    (wf / f"{name}.yaml").write_text(yaml.safe_dump(study(name)))
    runs = wf / f"results/{name}/runs"
    runs.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(runs)], check=True)
    try:
        subprocess.run(["dd", "if=/dev/zero", f"of={runs / 'filler'}", "bs=4k"], capture_output=True)
        r = snakemake_as(wf, who, f"{name}.yaml")
        assert r.returncode != 0
        assert "no record written: the disk is full" in r.out and "No space left on device" in r.out, r.out[-3000:]
        assert not list(runs.glob("*/record.json"))
    finally:
        subprocess.run(["umount", str(runs)], check=True)


@pytest.mark.skipif(not IS_ROOT, reason="dropping privileges needs root")
def test_forced_rerun_without_privileges_keeps_the_record(wf):
    """Without privileges Snakemake's write protection refuses a --forcerun over a
    finished record (as root it does not: see test_workflow); whatever it does, the
    measurement stays."""
    (wf / "u.yaml").write_text(yaml.safe_dump(study("u")))
    (wf / ".home").mkdir(exist_ok=True)
    p = start(wf, "u.yaml", unprivileged=True)
    out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out[-3000:]
    record = wf / "results/u/runs/cg.S.default.c0_loc_p_ts.r1/record.json"
    first = record.read_bytes()
    p = start(wf, "u.yaml", "--forcerun", "measure", unprivileged=True)
    out, _ = p.communicate(timeout=600)
    assert p.returncode != 0 and "protected" in out.lower(), out[-3000:]
    assert record.read_bytes() == first and not list(record.parent.glob("attempts/*"))
