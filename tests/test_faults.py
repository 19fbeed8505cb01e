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
from conftest import REPO, copy_workflow, run_snakemake
from numaplace.record.store import KEPT

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


def slow_binary(wf, seconds, name):
    """Make study `name`'s cg.S binary (its own build key: another test's study may have
    built another) a wrapper that sleeps first (restored by the caller), so a fault surely
    lands while the run executes."""
    from numaplace.plan.study import load_study_file
    key = load_study_file(wf / f"{name}.yaml", wf / "config").build_key()
    binary = wf / "results/build" / key / "default/bin/cg.S.x"
    assert binary.exists(), f"{binary}: study {name} has no cg.S binary yet"
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
    # --configfile=<file>: one file, so that targets may follow it
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", f"--configfile={configfile}", *extra]
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


def numaplace_as(wf, who, *args):
    """The numaplace command, as `who` runs it in the workflow's folder."""
    cmd = [sys.executable, "-m", "numaplace", *args]
    cmd = unprivileged_prefix() + cmd if who == "unprivileged" else cmd
    return subprocess.run(cmd, cwd=wf, capture_output=True, text=True, timeout=300)


def last_lines(out, n=15):
    """The end of a Snakemake run's console output (what a user sees last)."""
    return "\n".join(out.strip().splitlines()[-n:])


RUN = "cg.S.default.c0_loc_p_ts.r1"


def measured(wf, who, name, **settings):
    """Study `name` (one run) measured by Snakemake as `who`; its run folder."""
    (wf / f"{name}.yaml").write_text(yaml.safe_dump({**study(name), **settings}))
    p = snakemake_as(wf, who, f"{name}.yaml", "runs")
    assert p.returncode == 0, p.out[-3000:]
    return wf / f"results/{name}/runs/{RUN}"


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
    binary, real = slow_binary(wf, seconds, name)
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
        while (running(str(binary)) or running(f"numaplace measure .*results/{name}")) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not running(str(binary)), "the benchmark outlived Snakemake"
        assert not [pid for pid in running(f"numaplace measure .*results/{name}")]
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
    binary, real = slow_binary(wf, 3, name)
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
    binary, real = slow_binary(wf, 2, names[0])          # runs long enough to surely meet
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
    from numaplace.tables.aggregate import record_row
    from numaplace.run.runner import execute
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
    """The failed run is a record (data, in the report); the console says so at the end,
    and a study with no successful run exits non-zero naming the record to read (fault 7:
    it exited 0 with nothing on the console)."""
    name = f"kb-{who}"
    with a_run_in_progress(wf, name, who=who) as (p, rundir, binary):
        for pid in running(str(binary)):
            os.kill(int(pid), signal.SIGKILL)
        out, _ = p.communicate(timeout=300)
    rec = json.loads((rundir / "record.json").read_text())
    assert rec["status"] == "failed" and rec["exit_status"] == -9, rec["reason"]
    assert rec["reason"].startswith("killed by SIGKILL"), rec["reason"]
    assert "Failed and unverified runs" in (wf / f"report/{name}/summary.md").read_text()
    assert p.returncode != 0, out[-3000:]
    tail = last_lines(out)
    assert f"1 of 1 runs of study {name} failed (failed: 1)" in tail, tail
    assert f"study {name} failed: no run succeeded; read results/{name}/runs/{rundir.name}/record.json" in tail, tail


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


def test_forced_rerun_keeps_every_record(wf, who):
    """--forcerun of the measure jobs, as root (for whom no write protection holds) and
    without privileges: the chunk runs again, finds every record holding its run's
    definition and keeps it byte for byte: nothing is measured again (its ledger says
    kept). To measure a run again: numaplace retry-failed --status ok."""
    rundir = measured(wf, who, f"fr-{who}")
    record = rundir / "record.json"
    first = record.read_bytes()
    assert (record.stat().st_mode & 0o222) == 0                # write-protected
    p = snakemake_as(wf, who, f"fr-{who}.yaml", "runs", "--forcerun", "measure")
    assert p.returncode == 0, p.out[-3000:]
    assert "measure" in p.out, p.out[-3000:]                    # the job did run
    assert record.read_bytes() == first and not list(rundir.glob("attempts/*"))
    ledger = json.loads((wf / f"results/fr-{who}/rounds/r1.c1.json").read_text())
    assert [e["outcome"] for e in ledger["runs"]] == ["kept"]


# -- issue 30: nothing measured is lost or silently overwritten; failures are visible -----

def test_retry_of_an_unreadable_record_restores_its_intact_kept_copy(wf, who):
    """Fault 1: record.json replaced by a broken copy (a new file, not truncated in
    place: an editor, a bad copy) while record.kept.json still holds the measurement.
    `retry-failed --status unreadable` deleted record.kept.json: the only good copy was
    lost. The kept record is the measurement: it is restored, the broken copy kept beside."""
    rundir = measured(wf, who, f"ru-{who}")
    record, kept = rundir / "record.json", rundir / KEPT
    first = record.read_bytes()
    broken = rundir / "record.json.part"
    broken.write_bytes(first[:100])
    os.replace(broken, record)
    assert not os.path.samefile(record, kept)
    r = numaplace_as(wf, who, "retry-failed", f"results/ru-{who}", "--status", "unreadable")
    assert r.returncode == 0, r.stdout + r.stderr
    assert kept.exists() and record.exists(), r.stdout        # the measurement is still there
    assert record.read_bytes() == first and os.path.samefile(record, kept)
    assert f"restored {RUN} (ok)" in r.stdout, r.stdout
    assert (rundir / "record.unreadable.json").read_bytes() == first[:100]
    assert not list(rundir.glob("attempts/*"))
    # the measurement is current again: nothing to measure
    again = snakemake_as(wf, who, f"ru-{who}.yaml", "runs")
    assert again.returncode == 0 and record.read_bytes() == first, again.out[-3000:]


def redefine(wf, name):
    """Study `name` with another definition of its runs (a longer timeout): the same run
    ids, measured again by the next workflow."""
    (wf / f"{name}.yaml").write_text(yaml.safe_dump({**study(name), "run": {"idle_check": "off", "timeout": 1800}}))


def test_a_redefined_run_without_kept_link_sets_its_record_aside(wf, who):
    """Fault 2: a record with no record.kept.json (written before the link existed, or
    the link removed), measured again because its definition changed: the old record is
    set aside as attempt 1, whole, before the new one is written."""
    rundir = measured(wf, who, f"fk-{who}")
    record = rundir / "record.json"
    first = record.read_bytes()
    (rundir / KEPT).unlink()
    redefine(wf, f"fk-{who}")
    p = snakemake_as(wf, who, f"fk-{who}.yaml", "runs")
    assert p.returncode == 0, p.out[-3000:]
    assert (rundir / "attempts/1/record.json").read_bytes() == first
    assert json.loads(record.read_text())["status"] == "ok" and record.read_bytes() != first
    assert not list(rundir.glob("interrupted/*"))


def test_a_gap_in_the_attempt_numbers_never_stops_a_rerun(wf, who):
    """Fault 3: attempts/1 and attempts/3 (attempts/2 removed by hand): the next attempt
    was numbered by counting (3, taken), so every later re-measure failed with "File
    exists" and the run dropped out of the report. The next number is the highest + 1,
    for a re-run (the runner's set-aside) and a retry (retry-failed's) alike."""
    rundir = measured(wf, who, f"gap-{who}")
    record = rundir / "record.json"
    first = record.read_bytes()
    for n in (1, 3):
        (rundir / "attempts" / str(n)).mkdir(parents=True)
        (rundir / "attempts" / str(n) / "record.json").write_bytes(first)
    redefine(wf, f"gap-{who}")
    p = snakemake_as(wf, who, f"gap-{who}.yaml", "runs")
    assert p.returncode == 0, p.out[-3000:]
    assert (rundir / "attempts/4/record.json").read_bytes() == first
    second = record.read_bytes()
    assert json.loads(second)["status"] == "ok" and second != first
    r = numaplace_as(wf, who, "retry-failed", f"results/gap-{who}", "--status", "ok")
    assert r.returncode == 0 and f"set aside {RUN} (ok)" in r.stdout, r.stdout + r.stderr
    assert (rundir / "attempts/5/record.json").read_bytes() == second
    p = snakemake_as(wf, who, f"gap-{who}.yaml")
    assert p.returncode == 0, p.out[-3000:]
    assert json.loads(record.read_text())["status"] == "ok"
    import csv
    rows = list(csv.DictReader(open(wf / f"results/gap-{who}/tables/runs.csv")))
    assert sorted((r["attempt"], r["current"]) for r in rows if r["run_id"] == RUN) == \
        [("1", "False"), ("3", "False"), ("4", "False"), ("5", "False"), ("6", "True")], rows


def test_a_build_waits_for_a_measured_run_of_another_study(wf, who):
    """Fault 4: builds did not take the machine's measurement lock, so a build of one
    study (another Snakemake) ran beside a measured run of another. The build holds it."""
    from numaplace.plan.study import load_study_file
    name = f"bl-{who}"
    flags = {"root": "-O2 -fopenmp", "unprivileged": "-O1 -fopenmp"}.get(who, "-O2 -fopenmp")
    (wf / f"{name}.yaml").write_text(yaml.safe_dump({**study(name), "npb": {"fflags": flags}}))
    key = load_study_file(wf / f"{name}.yaml", wf / "config").build_key()
    build_record = wf / "results/build" / key / "default/bin/cg.S.build.json"
    assert not build_record.exists()
    with a_run_in_progress(wf, f"bl-run-{who}", seconds=15, who=who) as (p, rundir, binary):
        b = start(wf, f"{name}.yaml", "build", unprivileged=who)
        out_b, _ = b.communicate(timeout=900)
        out_a, _ = p.communicate(timeout=300)
    assert p.returncode == 0, out_a[-3000:]
    assert b.returncode == 0, out_b[-3000:]
    run = json.loads((rundir / "record.json").read_text())
    build = json.loads(build_record.read_text())
    assert build["status"] == "ok", build["reason"]
    assert build["started"] >= run["ended"], (f"the build ({build['started']}..{build['ended']}) overlapped "
                                              f"the measured run ({run['started']}..{run['ended']})")
    assert run["wall_s"] >= 14, run                 # the wrapped binary really ran (its 15 s sleep)
    assert build["lock_wait_s"] > 1, (build, run["started"], run["ended"], out_b[-3000:])


FAKE2 = {"name": "fake2", "description": "node 63 does not exist on the test machine",
         "nodes": [{"id": 0, "cpus": "0"}, {"id": 63, "cpus": "1", "memory_mb": 1024}]}


def test_failed_builds_fail_the_study_and_name_their_log(wf, who):
    """Fault 7: with a compiler that does not exist every build fails, yet the workflow
    exited 0 ("... steps (100%) done"). The runs are build-failed records (data, in the
    report); the last lines say so, and name the build log; the exit status is not 0."""
    name = f"nofc-{who}"
    (wf / f"{name}.yaml").write_text(yaml.safe_dump({**study(name, runs=2),
                                                     "npb": {"fc": f"/nonexistent/gfortran-{who}"}}))
    p = snakemake_as(wf, who, f"{name}.yaml")
    assert p.returncode != 0, p.out[-3000:]
    recs = {r.parent.name: json.loads(r.read_text()) for r in (wf / f"results/{name}/runs").glob("*/record.json")}
    assert [r["status"] for r in recs.values()] == ["build-failed"] * 2
    assert "build-failed" in (wf / f"report/{name}/summary.md").read_text()
    log = recs[RUN]["build"]["log"]
    tail = last_lines(p.out)
    assert f"1 of 1 builds of study {name} failed" in tail and log in tail, tail
    assert f"2 of 2 runs of study {name} failed (build-failed: 2)" in tail, tail
    assert tail.splitlines()[-1].endswith(f"study {name} failed: 1 build(s) failed; read the build log {log}"), tail


def test_some_failed_runs_are_named_at_the_end_and_the_study_succeeds(wf, who):
    """Fault 7: a placement the machine refuses is a placement-failed record and the
    study goes on (exit 0, other runs succeeded), but the last lines count it."""
    name = f"some-{who}"
    (wf / "config/platforms/fake2.yaml").write_text(yaml.safe_dump(FAKE2))
    (wf / f"{name}.yaml").write_text(yaml.safe_dump({
        **study(name), "platform": "fake2", "launcher": "numactl",
        "experiments": [{"name": "refused", "placements": [{"cpus": "0"}], "memory": [{"membind": [63]}]},
                        {"name": "fine", "placements": [{"cpus": "0"}]}]}))
    p = snakemake_as(wf, who, f"{name}.yaml")
    assert p.returncode == 0, p.out[-3000:]
    tail = last_lines(p.out)
    assert f"1 of 2 runs of study {name} failed (placement-failed: 1)" in tail, tail
    assert f"report/{name}/summary.md" in tail, tail


def test_two_checkouts_sharing_results_never_work_on_one_study_at_once(wf, who, tmp_path):
    """Issue 30, item 6: Snakemake's lock is per working directory, so a second checkout
    whose results/ is the same folder ran the same study at once: its runner set aside
    the files of the run still executing. The second workflow is refused, naming the
    first; the first one's record is whole."""
    name = f"co-{who}"
    other = copy_workflow(REPO, tmp_path / "other")
    (other / "results").symlink_to(wf / "results")
    (other / ".home").mkdir()
    with a_run_in_progress(wf, name, seconds=12, who=who) as (p, rundir, binary):
        (other / f"{name}.yaml").write_text((wf / f"{name}.yaml").read_text())
        second = snakemake_as(other, who, f"{name}.yaml")
        first_out, _ = p.communicate(timeout=300)
    assert second.returncode != 0, second.out[-3000:]
    assert f"results/{name} is in use by another workflow (Snakemake pid {p.pid}" in second.out, second.out[-3000:]
    assert p.returncode == 0, first_out[-3000:]
    rec = json.loads((rundir / "record.json").read_text())
    assert rec["status"] == "ok" and not list(rundir.glob("attempts/*")) and not list(rundir.glob("interrupted/*"))
    assert (rundir / "stdout").stat().st_size > 0


def test_a_study_file_edited_while_its_study_runs_is_measured_as_it_was_read(wf, who):
    """Fault 5: the study file edited (a second placement added) while its one run
    executes. Jobs that Snakemake starts as processes of their own (the plan's `run:`
    job, cluster jobs) and the report's nested `snakemake --report` read the file again:
    plan.tsv came from the new file while the runs followed the old one, with no word.
    The workflow reads the version it started with (results/<study>/study.frozen.yaml)
    to its end, and its last lines say that the file changed; the next workflow measures
    the new version. (Before: plan.tsv listed both placements, report.html showed the
    edited description, and nothing was said.)"""
    name = f"ed-{who}"
    old_text = yaml.safe_dump(study(name))
    edited = study(name)
    edited["experiments"][0]["placements"].append({"cpus": "1"})
    edited["description"] = "the edited version"            # the report's landing page shows it
    with a_run_in_progress(wf, name, seconds=8, who=who) as (p, rundir, binary):
        assert (wf / f"{name}.yaml").read_text() == old_text
        (wf / f"{name}.yaml").write_text(yaml.safe_dump(edited))   # plan.tsv is made after the run
        out, _ = p.communicate(timeout=600)
    assert p.returncode == 0, out[-3000:]
    results = wf / f"results/{name}"
    import csv
    planned = sorted(r["run_id"] for r in csv.DictReader(open(results / "plan.tsv"), delimiter="\t"))
    assert planned == [RUN], planned                          # the plan the runs followed
    rec = json.loads((rundir / "record.json").read_text())
    assert rec["status"] == "ok"
    assert (results / "study.frozen.yaml").read_text() == old_text
    assert f"numaplace: {name}.yaml changed while study {name} ran; this run followed the version read at " \
           in out and f" (results/{name}/study.frozen.yaml); run the workflow again to measure the new " \
           "version" in out, last_lines(out, 30)
    assert "the edited version" not in (wf / f"report/{name}/report.html").read_text()
    first = (rundir / "record.json").read_bytes()
    # the next workflow plans and measures the new version, and keeps the first record
    again = snakemake_as(wf, who, f"{name}.yaml")
    assert again.returncode == 0, again.out[-3000:]
    assert "changed while study" not in again.out, last_lines(again.out)
    planned = sorted(r["run_id"] for r in csv.DictReader(open(results / "plan.tsv"), delimiter="\t"))
    new = RUN.replace(".c0_", ".c1_")
    assert planned == sorted([RUN, new]), planned
    assert json.loads((results / f"runs/{new}/record.json").read_text())["status"] == "ok"
    assert (rundir / "record.json").read_bytes() == first and not list(rundir.glob("attempts/*"))
    assert (results / "study.frozen.yaml").read_text() == yaml.safe_dump(edited)
    assert "the edited version" in (wf / f"report/{name}/report.html").read_text()


# -- issue 29: a chunk of a round measures several runs in one job --------------------------

def three_in_a_chunk(name, **more):
    """Study `name`: three placements, one repetition: one chunk, one measure job."""
    return {**study(name), "experiments": [{"name": "three", "placements": [{"cpus": "0"}, {"cpus": "1"},
                                                                           {"cpus": "0-1"}]}], **more}


def records_of(wf, name):
    return {p.parent.name: p.read_bytes() for p in (wf / f"results/{name}/runs").glob("*/record.json")}


@pytest.mark.parametrize("how", ["kill-9-job", "ctrl-c"])
def test_a_chunk_stopped_midway_keeps_its_records_and_measures_only_the_rest(wf, who, how):
    """kill -9 of the measure job (its benchmark dies with it), or Ctrl-C at the terminal
    (SIGINT to the whole foreground group), while the second of a chunk's three runs
    executes: the first run's record is kept byte for byte, the next workflow measures
    only the two without a record, and the interrupted one's files are set aside."""
    name = f"cs-{how}-{who}"
    (wf / f"{name}.yaml").write_text(yaml.safe_dump(three_in_a_chunk(name)))
    binary, real = slow_binary(wf, 4, name)
    runs = wf / f"results/{name}/runs"
    try:
        p = start(wf, f"{name}.yaml", unprivileged=who)
        deadline = time.monotonic() + 120
        while not (list(runs.glob("*/record.json")) and len(list(runs.glob("*/stdout"))) == 2):
            assert time.monotonic() < deadline, "the chunk's second run never started"
            time.sleep(0.1)
        time.sleep(1.0)
        if how == "kill-9-job":
            # the newest match: the numaplace process, not the shell that started it
            job = subprocess.run(["pgrep", "-n", "-f", f"numaplace measure .*results/{name}"],
                                 capture_output=True, text=True).stdout.split()
            os.kill(int(job[0]), signal.SIGKILL)
        else:
            os.killpg(p.pid, signal.SIGINT)
        out, _ = p.communicate(timeout=300)
        deadline = time.monotonic() + 10
        while running(str(binary)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not running(str(binary)), "the benchmark outlived its job"
    finally:
        restore_binary(binary, real)
    assert p.returncode != 0, out[-3000:]
    first = records_of(wf, name)
    assert len(first) == 1, (sorted(first), out[-3000:])
    assert not (wf / f"results/{name}/rounds/r1.c1.json").exists()
    again = snakemake_as(wf, who, f"{name}.yaml")
    if again.returncode != 0 and "--unlock" in again.out:
        assert snakemake_as(wf, who, f"{name}.yaml", "--unlock").returncode == 0
        again = snakemake_as(wf, who, f"{name}.yaml")
    assert again.returncode == 0, again.out[-3000:]
    now = records_of(wf, name)
    assert len(now) == 3 and all(json.loads(b)["status"] == "ok" for b in now.values())
    (kept_id, kept_bytes), = first.items()
    assert now[kept_id] == kept_bytes                         # byte for byte
    ledger = json.loads((wf / f"results/{name}/rounds/r1.c1.json").read_text())
    assert sorted(e["outcome"] for e in ledger["runs"]) == ["kept", "ok", "ok"], ledger
    assert len(list(runs.glob("*/interrupted/*/stdout"))) == 1          # the stopped run's files
    assert not list(runs.glob("*/attempts/*"))


def test_a_failing_run_inside_a_chunk_leaves_its_siblings_alone(wf, who):
    """One run of a chunk fails (a node the machine does not have): it is a record, the
    chunk goes on, the study succeeds. Retried (numaplace retry-failed), only that run is
    measured again; its siblings' records stay byte for byte."""
    name = f"cf-{who}"
    (wf / "config/platforms/fake2.yaml").write_text(yaml.safe_dump(FAKE2))
    (wf / f"{name}.yaml").write_text(yaml.safe_dump({
        **study(name), "platform": "fake2", "launcher": "numactl",
        "experiments": [{"name": "refused", "placements": [{"cpus": "0"}], "memory": [{"membind": [63]}]},
                        {"name": "fine", "placements": [{"cpus": "0"}, {"cpus": "1"}]}]}))
    p = snakemake_as(wf, who, f"{name}.yaml")
    assert p.returncode == 0, p.out[-3000:]
    first = records_of(wf, name)
    statuses = sorted(json.loads(b)["status"] for b in first.values())
    assert statuses == ["ok", "ok", "placement-failed"], statuses
    (failed,) = [rid for rid, b in first.items() if json.loads(b)["status"] != "ok"]
    r = numaplace_as(wf, who, "retry-failed", f"results/{name}")
    assert f"set aside {failed} (placement-failed)" in r.stdout, r.stdout + r.stderr
    again = snakemake_as(wf, who, f"{name}.yaml")
    assert again.returncode == 0, again.out[-3000:]
    now = records_of(wf, name)
    assert all(now[rid] == b for rid, b in first.items() if rid != failed)
    assert json.loads(now[failed])["finished"] != json.loads(first[failed])["finished"]   # measured again
    assert (wf / f"results/{name}/runs/{failed}/attempts/1/record.json").read_bytes() == first[failed]
    ledger = json.loads((wf / f"results/{name}/rounds/r1.c1.json").read_text())
    assert sorted(e["outcome"] for e in ledger["runs"]) == ["kept", "kept", "placement-failed"], ledger
