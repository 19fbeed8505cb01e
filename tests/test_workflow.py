"""The study workflow end to end on this machine: builds, measured runs under real
numactl/taskset, captures in the records, failures recorded as data, interruptions."""
import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest
import yaml
from conftest import copy_workflow, job_stats, read_records, run_snakemake, single_run_spec
from numaplace.core.cpulist import parse_cpulist



def snakemake(wf, *args, check=True):
    return run_snakemake(wf, "--cores", "2", *args, check=check)


def records(wf, study):
    return read_records(wf, study)


@pytest.fixture(scope="module")
def quick(repo, tmp_path_factory):
    wf = copy_workflow(repo, tmp_path_factory.mktemp("quick"))
    t0 = time.monotonic()
    snakemake(wf, "--configfile", "config/studies/quick.yaml")
    return wf, time.monotonic() - t0


def test_quick_study_all_verified(quick):
    wf, seconds = quick
    plan = (wf / "results/quick/plan.tsv").read_text().splitlines()
    recs = records(wf, "quick")
    assert len(recs) == len(plan) - 1 >= 10
    for rid, r in recs.items():
        assert r["status"] == "ok", (rid, r["reason"])
        assert r["output"]["verified"] and r["output"]["class"] == "S"
        assert r["exit_status"] == 0 and r["argv"][-1].endswith(f"{r['bench']}.S.x")
        assert r["env"]["OMP_NUM_THREADS"] == str(r["placement"]["threads"])
        assert r["output"]["threads"] == r["placement"]["threads"]
        assert r["host"] and r["kernel"] and r["topology"]["nodes"] and r["started"] < r["ended"]
        assert "idle" in r and "loadavg" in r["idle"]
        # the page-shaping settings (numaplace.machine.system), at the start and the end
        assert {"numa_balancing", "thp_enabled", "kernel_cmdline", "numa_balancing_at_end"} <= set(r["system"])
    print(f"quick study: {len(recs)} runs + builds in {seconds:.1f} s")


def test_records_hold_captures(quick):
    wf, _ = quick
    recs = records(wf, "quick")
    with_pages = 0
    for rid, r in recs.items():
        cap = r["captures"]
        # MG.S lives ~5 ms: it can end before the first sample; CG.S (~30 ms) cannot
        assert cap["threads"] or r["bench"] == "mg", rid
        allowed = {int(c) for t in cap["threads"].values() for c in t["cpus"]}
        assert allowed <= set(parse_cpulist(r["placement"]["cpus"])), rid
        nm = cap["numa_maps"]
        assert r["bench"] == "mg" or (nm["samples"] and nm["peak"]["data_bytes"]), rid
        if nm["samples"] and nm["peak"]["data_bytes"]:
            with_pages += 1
            assert all(int(n) in {int(k) for k in r["topology"]["nodes"]} for n in nm["peak"]["data_bytes"])
            assert (wf / "results/quick/runs" / rid / "numa_maps.samples.jsonl").stat().st_size > 0
        assert r["numastat"]["system_before"] and r["numastat"]["system_delta"] is not None
    # every CG run (~30 ms) is sampled with its pages; an MG.S run (~5 ms) may end first
    assert with_pages >= sum(1 for r in recs.values() if r["bench"] == "cg")


def test_plan_commands_are_what_ran(quick):
    wf, _ = quick
    import csv
    rows = list(csv.DictReader(open(wf / "results/quick/plan.tsv"), delimiter="\t"))
    recs = records(wf, "quick")
    for row in rows:
        r = recs[row["run_id"]]
        shown = shlex.split(row["command"])
        env = [w for w in shown if "=" in w and w.split("=")[0].isupper()]
        assert dict(w.split("=", 1) for w in env) == r["env"]
        assert shown[len(env):-1] == r["argv"][:-1]


def test_nothing_reruns_and_records_are_protected(quick):
    wf, _ = quick
    r = snakemake(wf, "--configfile", "config/studies/quick.yaml", "-n")
    assert "Nothing to be done" in r.stdout + r.stderr
    rec = next((wf / "results/quick/runs").glob("*/record.json"))
    assert (rec.stat().st_mode & 0o222) == 0              # write-protected by Snakemake


FAILING = {
    "study": "failing", "platform": "fake2", "benchmarks": ["cg"], "classes": ["S"], "repetitions": 1,
    # the smallest timeout a study may set (numaplace.plan.checks.RUN_TIMEOUT_MIN_S) and a run
    # that needs far longer: CG class B on one thread takes ~30 s here
    "launcher": "numactl", "run": {"timeout": 5, "idle_check": "off"},
    "experiments": [
        {"name": "refused", "placements": [{"cpus": "0"}], "memory": [{"membind": [63]}]},
        {"name": "too-slow", "classes": ["B"], "placements": [{"cpus": "0"}]},
    ],
}
FAKE2 = {"name": "fake2", "description": "node 63 does not exist on the test machine",
         "nodes": [{"id": 0, "cpus": "0"}, {"id": 63, "cpus": "1", "memory_mb": 1024}]}


def test_failures_are_records_and_can_be_retried(repo, tmp_path):
    wf = copy_workflow(repo, tmp_path / "wf")
    (wf / "config/platforms/fake2.yaml").write_text(yaml.safe_dump(FAKE2))
    (wf / "failing.yaml").write_text(yaml.safe_dump(FAILING))
    # every run is measured and recorded; none succeeded, so the study fails (exit 1) and
    # its last lines say so
    r = snakemake(wf, "--configfile", "failing.yaml", check=False)
    assert r.returncode != 0 and "no run succeeded" in r.stderr + r.stdout, (r.stdout + r.stderr)[-2000:]
    recs = records(wf, "failing")
    by_exp = {("refused" if "mb63" in rid else "slow"): r for rid, r in recs.items()}
    assert by_exp["refused"]["status"] == "placement-failed"
    assert "numactl" in by_exp["refused"]["reason"] and by_exp["refused"]["probe"]["exit_status"] != 0
    assert by_exp["slow"]["status"] == "timeout" and "killed after" in by_exp["slow"]["reason"]
    # retry: failed records are set aside (kept), then Snakemake runs them again
    out = subprocess.run([sys.executable, "-m", "numaplace", "retry-failed", "results/failing"],
                         cwd=wf,
                         capture_output=True, text=True, check=True).stdout
    assert out.count("set aside") == 2
    assert not list((wf / "results/failing/runs").glob("*/record.json"))
    kept = list((wf / "results/failing/runs").glob("*/attempts/1/record.json"))
    assert len(kept) == 2
    snakemake(wf, "--configfile", "failing.yaml", check=False)
    assert len(records(wf, "failing")) == 2


def test_interrupt_leaves_no_complete_record(repo, tmp_path):
    wf = copy_workflow(repo, tmp_path / "wf")
    study = {"study": "interrupt", "benchmarks": ["cg"], "classes": ["W"], "repetitions": 1,
             "launcher": "taskset", "run": {"idle_check": "off"},
             "experiments": [{"name": "one", "placements": [{"cpus": "0"}]}]}
    (wf / "s.yaml").write_text(yaml.safe_dump(study))
    snakemake(wf, "build", "--configfile", "s.yaml")
    # slow the run down so it is surely still executing when interrupted
    binary = next((wf / "results/build").glob("*/default/bin/cg.W.x"))
    real = binary.with_suffix(".real")
    binary.rename(real)
    binary.write_text(f"#!/bin/sh\nsleep 30\nexec {real}\n")
    binary.chmod(0o755)
    os.utime(binary, (time.time() - 3600,) * 2)
    p = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "s.yaml"],
                         cwd=wf, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    rundir = wf / "results/interrupt/runs/cg.W.default.c0_loc_p_ts.r1"
    deadline = time.monotonic() + 60
    while not (rundir / "stdout").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    os.killpg(p.pid, signal.SIGINT)                      # Ctrl-C at the terminal
    p.communicate(timeout=60)
    assert not (rundir / "record.json").exists()
    left = subprocess.run(["pgrep", "-f", str(binary)], capture_output=True, text=True).stdout
    assert not left.strip(), "the benchmark outlived the interrupted run"


def test_runs_never_overlap_with_two_cores(quick):
    wf, _ = quick
    spans = sorted((r["started"], r["ended"]) for r in records(wf, "quick").values())
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        assert e1 <= s2, f"runs overlapped: {s1}..{e1} and {s2}..{e2}"


def test_busy_machine_is_refused_or_flagged(npb_build, tmp_path):
    from numaplace.run.runner import execute
    exe = npb_build("cg", "S")
    spec = single_run_spec(idle_check="refuse", idle_wait=0, idle_busy_max=0.5)
    hog = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        refused = execute(spec, exe, tmp_path / "a" / "record.json")
        spec["run"]["idle_check"] = "flag"
        flagged = execute(spec, exe, tmp_path / "b" / "record.json")
    finally:
        hog.kill()
    assert refused["status"] == "not-idle" and "0" in refused["idle"]["busy_cpus"]
    assert refused.get("exit_status") is None and not (tmp_path / "a" / "stdout").exists()
    assert flagged["status"] == "ok" and flagged["idle"]["idle"] is False


def test_a_busy_machine_is_said_before_any_run_and_when_busy_stop_runs_nothing(repo, tmp_path):
    """A CPU hog on every CPU the workflow may use: its start says the machine is busy
    from the load it watched while reading the study (numaplace's own work taken off),
    and run.when_busy: stop ends it there, before any build or run."""
    wf = copy_workflow(repo, tmp_path / "wf")
    study = {**JUDGED, "study": "busy", "run": {"when_busy": "stop"}}
    (wf / "busy.yaml").write_text(yaml.safe_dump(study))
    hogs = [subprocess.Popen(["taskset", "-c", str(c), sys.executable, "-c", "while True: pass"])
            for c in sorted(os.sched_getaffinity(0))]
    try:
        time.sleep(0.3)
        r = snakemake(wf, "--config", "study=busy.yaml", check=False)
    finally:
        for hog in hogs:
            hog.kill()
    assert r.returncode != 0, r.out[-3000:]
    assert "this machine is busy" in r.out and "run.when_busy: stop: nothing was run" in r.out, r.out[-3000:]
    assert not (wf / "results/build").exists() and not list(wf.glob("results/busy/runs/*"))


JUDGED = {"study": "judged", "platform": "auto", "benchmarks": ["cg"], "classes": ["W"], "variants": ["default"],
          "repetitions": 1, "launcher": "numactl", "run": {"idle_check": "off"},
          "experiments": [{"name": "one", "placements": [{"cpus": "0", "id": "n0"}]}]}


def test_thresholds_rejudge_without_rerunning_and_a_forced_rerun_keeps_the_record(repo, tmp_path):
    """Records hold no verdict: a changed fidelity threshold plans no measure or build job
    and the tables show the new judgement; a forced re-run keeps the record; a run measured
    again (retry-failed) sets the earlier record aside, still counted."""
    import csv
    wf = copy_workflow(repo, tmp_path / "wf")
    (wf / "s.yaml").write_text(yaml.safe_dump(JUDGED))
    snakemake(wf, "--configfile", "s.yaml")
    record = wf / "results/judged/runs/cg.W.default.n0.r1/record.json"
    before = record.read_bytes()
    assert b'"fidelity"' not in before

    def fidelity_in_tables():
        rows = list(csv.DictReader(open(wf / "results/judged/tables/runs.csv")))
        return [(r["run_id"], r["attempt"], r["fidelity"]) for r in rows]

    assert fidelity_in_tables() == [("cg.W.default.n0.r1", "1", "ok")]
    (wf / "s.yaml").write_text(yaml.safe_dump({**JUDGED, "fidelity": {"memory_min_bytes": 10**12}}))
    plan = snakemake(wf, "--configfile", "s.yaml", "-n").out
    jobs = job_stats(plan)
    assert "measure" not in jobs and "npb_build" not in jobs and "make_report" in jobs, plan[-3000:]
    snakemake(wf, "--configfile", "s.yaml")
    assert record.read_bytes() == before
    assert fidelity_in_tables() == [("cg.W.default.n0.r1", "1", "unknown")]
    # a plot setting: the figures are drawn again, nothing is measured or built
    (wf / "s.yaml").write_text(yaml.safe_dump({**JUDGED, "fidelity": {"memory_min_bytes": 10**12},
                                               "figures": {"dpi": 80, "max_rows": 10}}))
    plan = snakemake(wf, "--configfile", "s.yaml", "-n").out
    jobs = job_stats(plan)
    assert "measure" not in jobs and "npb_build" not in jobs and "make_report" in jobs, plan[-3000:]
    # a forced re-run (as root no write protection holds): the chunk finds the record of
    # the run's definition and keeps it; measured again only when asked (retry-failed)
    snakemake(wf, "--configfile", "s.yaml", "--forcerun", "measure")
    assert record.read_bytes() == before and not list(record.parent.glob("attempts/*"))
    subprocess.run([sys.executable, "-m", "numaplace", "retry-failed", "results/judged", "--status", "ok"],
                   cwd=wf, check=True, capture_output=True)
    snakemake(wf, "--configfile", "s.yaml")
    kept = wf / "results/judged/runs/cg.W.default.n0.r1/attempts/1/record.json"
    assert kept.read_bytes() == before and record.read_bytes() != before
    assert sorted(fidelity_in_tables()) == [("cg.W.default.n0.r1", "1", "unknown"), ("cg.W.default.n0.r1", "2", "unknown")]


def _run_as_the_measure_rule_does(tmp_path, spec, binary="/bin/true"):
    """`numaplace run --spec S --build B --record R`, as rule measure calls it."""
    build = tmp_path / "build.json"
    build.write_text(json.dumps({"status": "ok", "binary": binary, "reason": None}))
    record = tmp_path / "r" / "record.json"
    subprocess.run([sys.executable, "-m", "numaplace", "run", "--spec", json.dumps(spec),
                    "--build", str(build), "--record", str(record)], check=True, capture_output=True)
    return json.loads(record.read_text())


def test_runner_leaves_the_placement_cpus_while_it_starts_and_the_benchmark_gets_them_back(tmp_path):
    """The idle check's window opens as the runner starts (it moves off the placement's
    CPUs first, so its start-up is not counted as load); the benchmark, and the launcher
    that binds it, still start with the runner's whole CPU mask."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs: the runner moves to one outside the placement")
    mask = sorted(os.sched_getaffinity(0))
    spec = single_run_spec(cpu=mask[0], idle_check="flag")
    spec["argv"] = ["grep", "Cpus_allowed_list", "/proc/self/status"]   # no launcher: inherits
    hog = subprocess.Popen(["taskset", "-c", str(mask[0]), sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        rec = _run_as_the_measure_rule_does(tmp_path, spec)
    finally:
        hog.kill()
    assert rec["idle"]["window_opened"] == "start-up" and rec["idle"]["window_s"] >= 0.1
    assert rec["idle"]["idle"] is False and str(mask[0]) in rec["idle"]["busy_cpus"]
    allowed = (tmp_path / "r" / "stdout").read_text().split(":")[1].strip()
    assert parse_cpulist(allowed) == mask


def test_runner_that_waits_for_the_machine_opens_its_idle_window_after_the_wait(tmp_path):
    """A window opened while another run still held the machine would count that run's
    end as load on these CPUs: the runner that has to wait opens it once it has the lock."""
    from numaplace.machine.guard import lock_path
    # the holder keeps the lock well past the run's start-up (which on a loaded machine ate
    # into a 0.4 s margin: 0.197 s of wait seen with two test suites on 2 cores)
    holder = subprocess.Popen(["flock", str(lock_path()), "sleep", "1.2"])
    try:
        time.sleep(0.2)
        rec = _run_as_the_measure_rule_does(tmp_path, single_run_spec(idle_check="flag"))
    finally:
        holder.wait()
    assert rec["lock_wait_s"] >= 0.2 and rec["idle"]["window_opened"] == "check"


def test_snakemake_plan_says_the_plan_when_plan_tsv_is_up_to_date(quick):
    """`snakemake plan` after the plan was written (numaplace plan, or an earlier run) runs
    no job, so onstart is never called: the plan is still said (issue 41)."""
    wf, _ = quick
    r = snakemake(wf, "plan", "--config", "study=config/studies/quick.yaml")
    assert "study quick on auto" in r.stderr and "plan.tsv is up to date" in r.stderr, r.stderr[-2000:]
