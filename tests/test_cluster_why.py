"""Clusters say why (issue 45 item 5): a cluster job's failure (refused at submission,
cancelled, out of time, out of memory) becomes numaplace's one line on Slurm and PBS
alike; the partition/queue and each chunk's walltime are checked before submission; a
chunk killed at its limit asks for twice that limit next time (numaplace.cluster.why).

The mapping is checked on scheduler outputs (recorded from the local Slurm, PBS written
after its documented attributes: tests/fixtures/qstat/), the PBS commands exactly as
they are run; then, for real, through profiles/slurm on the local Slurm: a partition
that does not exist, a cancelled chunk and a chunk killed at its time limit.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from cluster.common import fake, slurm  # noqa: F401  (slurm: the shared local-Slurm fixture)
from numaplace.cluster import resources, why

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "qstat"


SCONTROL_TIMEOUT = ("JobId=5 JobName=x JobState=TIMEOUT Reason=TimeLimit Dependency=(null) ExitCode=0:15 "
                    "RunTime=00:01:31 TimeLimit=00:01:00 NodeList=vm MinMemoryNode=1034M")
SCONTROL_OOM = "JobId=6 JobState=OUT_OF_MEMORY Reason=OutOfMemory ExitCode=0:125 TimeLimit=00:04:00 NodeList=vm MinMemoryNode=2000M"
LEDGER = ["results/quick/rounds/r1.c2.json"]


# -- the mapping -------------------------------------------------------------------

def test_slurm_plugin_messages_become_one_line_each():
    run, which = fake({("scontrol", "show", "job", "-o", "5"): (0, SCONTROL_TIMEOUT, ""),
                       ("scontrol", "show", "job", "-o", "6"): (0, SCONTROL_OOM, ""),
                       ("scontrol", "show", "job", "-o", "4"): (0, (FIX / "slurm-torque/scontrol-CANCELLED.txt").read_text(), ""),
                       ("sinfo",): (0, "batch\ndebug\n", "")})
    what, chunk, _ = why.what_of("measure", LEDGER)
    cases = {
        "SLURM sbatch failed. The error message was 'sbatch: error: invalid partition specified: nosuch\n"
        "sbatch: error: Batch job submission failed: Invalid partition name specified'.\n    sbatch call: x":
            ("rejected", "invalid partition specified: nosuch", "known here: batch, debug"),
        "SLURM-job '4' failed, SLURM status is: 'CANCELLED'. Detailed failure reason unavailable":
            ("cancelled", "Slurm job 4 on vm) was cancelled", "run the same snakemake command again"),
        "SLURM-job '5' failed, SLURM status is: 'TIMEOUT'. Reason: TimeLimit.":
            ("timeout", "time limit of 1 min", "submitted again with 2 min"),
        "SLURM-job '6' failed, SLURM status is: 'OUT_OF_MEMORY'.":
            ("out-of-memory", "more than its memory of 2000 MiB", "mem_mb=4000"),
    }
    for msg, (cause, said, todo) in cases.items():
        f = why.from_plugin_message(msg, run, which)
        assert f.cause == cause, (msg, f)
        text = why.line(f, what, chunk, why.known_queues("Slurm", run, which) if cause == "rejected" else None,
                        next_min=2 * f.limit_min if cause == "timeout" else None)
        assert "\n" not in text and text.startswith("numaplace: chunk r1.c2 of study quick ("), text
        assert said in text and todo in text, text
    assert why.from_plugin_message("some other error") is None


def test_slurm_forgotten_job_falls_back_to_sacct_then_to_the_plugins_state():
    run, which = fake({("scontrol",): (1, "", "Invalid job id specified"),
                       ("sacct",): (0, "TIMEOUT|0:15|00:02:00|2000M|vm\n", "")}, tools=("scontrol", "sacct"))
    f = why.slurm_failure("7", "TIMEOUT", run, which)
    assert (f.cause, f.limit_min, f.mem_mb, f.node) == ("timeout", 2, 2000, "vm")
    assert run.asked[-1] == ["sacct", "-X", "-n", "-P", "-j", "7", "-o", "State,ExitCode,Timelimit,ReqMem,NodeList"]
    run, which = fake({}, tools=())
    assert why.slurm_failure("7", "CANCELLED", run, which).cause == "cancelled"


# Slurm's own job state names (squeue/sacct JOB STATE CODES) a job ends in, and what each is
SLURM_END_STATES = {"TIMEOUT": ("timeout", "was killed at its time limit"),
                    "DEADLINE": ("timeout", "was killed at its time limit"),
                    "CANCELLED": ("cancelled", "was cancelled"), "PREEMPTED": ("cancelled", "was cancelled"),
                    "OUT_OF_MEMORY": ("out-of-memory", "was killed for using more than its memory"),
                    "NODE_FAIL": ("node-failure", "lost its node"), "BOOT_FAIL": ("node-failure", "lost its node"),
                    "FAILED": ("failed", "failed")}


@pytest.mark.parametrize("state", sorted(SLURM_END_STATES))
def test_each_slurm_end_state_reads_as_its_cause(state):
    """The state Slurm gives a chunk that ended badly, as the plugin reports it and as
    scontrol still holds it, is numaplace's cause and words: a chunk whose node died
    (NODE_FAIL, BOOT_FAIL) lost its node, it did not fail by itself."""
    cause, words = SLURM_END_STATES[state]
    scontrol = f"JobId=8 JobState={state} Reason=None ExitCode=0:0 TimeLimit=00:10:00 NodeList=vm MinMemoryNode=1000M"
    run, which = fake({("scontrol", "show", "job", "-o", "8"): (0, scontrol, "")})
    f = why.from_plugin_message(f"SLURM-job '8' failed, SLURM status is: '{state}'.", run, which)
    assert (f.cause, f.job, f.node) == (cause, "8", "vm"), f
    what, chunk, _ = why.what_of("measure", LEDGER)
    assert f"(Slurm job 8 on vm) {words}" in why.line(f, what, chunk), why.line(f, what, chunk)
    assert why.slurm_failure("8", state, *fake({}, tools=())).cause == cause        # Slurm forgot it


def test_every_state_numaplace_maps_is_one_slurm_reports():
    """A state spelt otherwise than Slurm's own never matches: each one mapped is Slurm's."""
    assert set(why.SLURM_CAUSES) <= set(SLURM_END_STATES)


def pbspro_job(**attrs):
    return json.dumps({"Jobs": {"12.srv": {"job_state": "F", **attrs}}})


def test_pbs_exit_statuses_comments_and_walltimes():
    cases = [
        (pbspro_job(Exit_status=-29, Resource_List={"walltime": "00:06:00"}), "timeout", 6),
        (pbspro_job(Exit_status=-27), "out-of-memory", None),
        (pbspro_job(comment="Job deleted as result of qdel by alice@login01"), "cancelled", None),
        (pbspro_job(Exit_status=271, Resource_List={"walltime": "00:05:00"},
                    resources_used={"walltime": "00:05:02"}), "timeout", 5),
        (pbspro_job(Exit_status=271, Resource_List={"walltime": "00:05:00"},
                    resources_used={"walltime": "00:01:00"}), "failed", 5),
        (pbspro_job(Exit_status=-1), "rejected", None),
        (pbspro_job(Exit_status=3), "failed", None),
    ]
    for text, cause, limit in cases:
        f = why.pbs_failure("12.srv", why.pbs_facts(text))
        if cause:
            assert (f.cause, f.limit_min) == (cause, limit), (text, f)
    # Torque's text form; exit 271 (SIGTERM) after 12 s of a 3 min walltime: killed, not at the limit
    torque = why.pbs_failure("12.srv", why.pbs_facts((FIX / "torque/qstat-f-C-walltime.txt").read_text()))
    assert (torque.cause, torque.limit_min) == ("failed", 3) and "Exit_status 271" in torque.words, torque


def test_pbs_status_line_names_the_chunk_and_remembers_a_walltime_kill(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    logs = tmp_path / "logs/pbs"
    logs.mkdir(parents=True)
    why.note_submission(logs, "12.srv", {"rule": "measure", "output": LEDGER})
    run, which = fake({("qstat", "-fx", "-F", "json", "12.srv"):
                       (0, pbspro_job(Exit_status=-29, Resource_List={"walltime": "00:06:00"}), "")}, tools=("qstat",))
    text = why.pbs_status_line("12.srv", "pbspro", logs, run, which)
    assert text.startswith("numaplace: chunk r1.c2 of study quick (PBS job 12.srv) was killed at its time limit of 6 min")
    assert "submitted again with 12 min" in text, text
    assert run.asked == [["qstat", "-fx", "-F", "json", "12.srv"]]          # exactly the command run
    assert why.killed_at("results/quick", "r1.c2") == 6


def test_pbs_submit_refusal_is_one_line(tmp_path):
    """qsub refusing a queue (here Slurm's qsub wrapper, or a stub where it is missing):
    numaplace's line, exit non-zero, nothing else."""
    script = tmp_path / "job.sh"
    props = {"rule": "measure", "output": LEDGER, "threads": 1, "resources": {"pbs_queue": "nosuch", "runtime": 1}}
    script.write_text("#!/bin/sh\n# properties = " + json.dumps(props) + "\ntrue\n")
    env = None
    if not shutil_which("qsub"):
        stub = tmp_path / "bin"
        stub.mkdir()
        (stub / "qsub").write_text("#!/bin/sh\necho 'qsub: Unknown queue MSG=requested queue not found' >&2\nexit 170\n")
        (stub / "qsub").chmod(0o755)
        import os
        env = {**os.environ, "PATH": f"{stub}:{os.environ['PATH']}"}
    r = subprocess.run([sys.executable, "-m", "numaplace", "pbs-submit", "--dialect", "torque", "--log-dir",
                        str(tmp_path / "logs"), str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0 and r.stdout == "", r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("numaplace: chunk r1.c2 of study quick (PBS) was refused"), r.stderr
    assert "Traceback" not in r.stderr


def shutil_which(name):
    import shutil
    return shutil.which(name)


# -- before submission ---------------------------------------------------------------

def test_queues_are_asked_with_exactly_these_commands():
    run, which = fake({("sinfo", "-h", "-o", "%R"): (0, "batch\ndebug\n", ""),
                       ("qstat", "-Q"): (0, "Queue   Max Tot\n------- --- ---\nworkq    0   0\nlong 0 0\n", "")})
    assert why.known_queues("Slurm", run, which) == ["batch", "debug"]
    assert why.known_queues("PBS", run, which) == ["long", "workq"]
    assert run.asked == [["sinfo", "-h", "-o", "%R"], ["qstat", "-Q"]]
    run, which = fake({("qstat", "-Q"): (2, "", "cannot connect to server")})
    assert why.known_queues("PBS", run, which) is None      # not asked: nothing refused
    assert why.scheduler_of("cluster-generic", "numaplace pbs-submit --dialect torque") == "PBS"
    assert why.scheduler_of("cluster-generic", "sbatch --parsable") == "Slurm"
    assert why.scheduler_of("slurm") == "Slurm" and why.scheduler_of("local") is None


def test_preflight_refuses_unknown_queue_short_walltime_and_the_same_limit_again():
    run, which = fake({("qstat", "-Q"): (0, "Queue Max\n----- ---\nworkq 0\n", "")})
    ok = why.Submission("measure", "r1.c1", 6, "workq", estimate_s=300, runs=5)
    assert why.preflight([ok, why.Submission("npb_build", None, 20, "workq")], "PBS", run, which) == []
    (bad,) = why.preflight([ok, why.Submission("npb_build", None, 20, "nosuch")], "PBS", run, which)
    assert bad.startswith("numaplace: PBS has no queue 'nosuch' (known: workq), which npb_build"), bad
    (short,) = why.preflight([why.Submission("measure", "r1.c2", 1, "", 300, 5)], "Slurm", run, which)
    assert "chunk r1.c2 would get 1 min of walltime, and the plan estimates 5 min for its 5 runs" in short
    (again,) = why.preflight([why.Submission("measure", "r1.c2", 1, "", 10, 5, killed_at_min=1)], "Slurm", run, which)
    assert "killed at its 1 min limit last time, and would get 1 min again" in again
    assert why.preflight([why.Submission("measure", "r1.c2", 2, "", 10, 5, killed_at_min=1)], "Slurm", run, which) == []


def test_a_chunk_killed_at_its_limit_asks_for_twice_that(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = [SimpleNamespace(run_id=f"r{i}", bench="cg", cls="S", placement=SimpleNamespace(threads=1)) for i in range(2)]
    study = SimpleNamespace(name="quick", topology=SimpleNamespace(cpus=[0, 1], cluster={}),
                            chunks=[SimpleNamespace(id="r1.c2", run_ids=("r0", "r1"))])
    asked = resources.measure_runtime(study, runs)
    why.remember_timeout("results/quick", "r1.c2", why.Failure("timeout", "Slurm", "5", limit_min=asked))
    assert resources.measure_runtime(study, runs) == 2 * asked
    why.remember_timeout("results/quick", "r1.c2", why.Failure("cancelled", "Slurm", "6", limit_min=asked))
    assert resources.measure_runtime(study, runs) == asked      # only a time-limit kill asks for more


def test_minutes_of_scheduler_durations():
    assert [why.minutes(t) for t in ("00:06:00", "1-00:00:00", "5:30", "90", "UNLIMITED", None)] == \
        [6, 1440, 6, 90, None, None]


# -- for real, through profiles/slurm on the local Slurm ---------------------------------

TINY = """study: tiny
platform: auto
benchmarks: [cg]
classes: [S]
variants: [default]
repetitions: 1
launcher: numactl
run: {idle_check: flag}
rounds: {chunk_runs: 3}
experiments:
  - name: pinned
    binding: [threads]
    placements:
      - {cpus: "0"}
      - {cpus: "1"}
      - {compact: [2]}
"""
ARGS = ("--profile", "profiles/slurm", "--config", "study=tiny.yaml",
        "--slurm-init-seconds-before-status-checks", "5", "--latency-wait", "5")


@pytest.fixture(scope="module")
def built(slurm, repo, tmp_path_factory):
    """A copy of the workflow with the tiny study's one binary built through Slurm."""
    from cluster import common
    wf = common.copy_workflow(repo, tmp_path_factory.mktemp("why"))
    (wf / "tiny.yaml").write_text(TINY)
    common.snakemake(wf, *ARGS, "build")
    return wf


def snakemake(wf, *args, during=None, timeout=300):
    """Snakemake expected to fail; `during(proc)` runs while it does. stdout+stderr."""
    p = subprocess.Popen([sys.executable, "-m", "snakemake", *args], cwd=wf, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    if during:
        during(p)
    out, _ = p.communicate(timeout=timeout)
    assert p.returncode != 0, out[-3000:]
    assert "Traceback" not in out, out[-3000:]
    return out


def numaplace_lines(out, word):
    return [line for line in out.splitlines() if line.startswith("numaplace: ") and word in line]


def test_slurm_bad_partition_is_refused_before_submission(built):
    t0 = time.monotonic()
    out = snakemake(built, *ARGS, "--default-resources", "slurm_partition=nosuch", "runtime=15", "mem_mb=2000")
    (said,) = numaplace_lines(out, "nosuch")
    print(said)
    assert said.startswith("numaplace: Slurm has no partition 'nosuch' (known: batch), which measure")
    assert "submitted with SLURM jobid" not in out and time.monotonic() - t0 < 60


def test_slurm_walltime_below_the_plans_estimate_is_refused(built):
    big = TINY.replace("classes: [S]", "classes: [C]").replace("study: tiny", "study: tinyc")
    (built / "tinyc.yaml").write_text(big)
    out = snakemake(built, *ARGS[:2], "--config", "study=tinyc.yaml", *ARGS[4:], "--set-resources", "measure:runtime=1")
    (said,) = numaplace_lines(out, "would get 1 min of walltime")
    print(said)
    assert "nothing was submitted" in said and "submitted with SLURM jobid" not in out


def measure_job():
    for _ in range(120):
        ids = subprocess.run(["squeue", "-h", "-o", "%i %k"], capture_output=True, text=True).stdout
        found = [line.split()[0] for line in ids.splitlines() if "measure" in line]
        if found:
            return found[0]
        time.sleep(0.5)
    pytest.fail("no measure job appeared in squeue within 60 s")


def test_slurm_cancelled_chunk_says_so(built):
    ids = []
    out = snakemake(built, *ARGS, during=lambda p: (ids.append(measure_job()),
                                                      subprocess.run(["scancel", ids[0]], check=True)))
    (said,) = numaplace_lines(out, "was cancelled")
    print(said)
    assert said.startswith(f"numaplace: chunk r1.c1 of study tiny (Slurm job {ids[0]}")
    assert "run the same snakemake command again" in said


def test_slurm_chunk_out_of_time_says_so_and_is_not_given_the_same_limit_again(built):
    """The binary hangs (replaced by a sleep): the runner ends each run at 30 s and records
    it, but the chunk's three runs overrun its 1 min walltime and Slurm kills it (about
    100 s: Slurm's limit is whole minutes). The records written stay; the same command
    with the same 1 min is then refused before submission."""
    (record,) = (built / "results/build").rglob("cg.S.build.json")
    binary = built / json.loads(record.read_text())["binary"]
    real = binary.read_bytes()
    binary.chmod(0o755)
    binary.write_text("#!/bin/sh\nexec sleep 600\n")
    try:
        out = snakemake(built, *ARGS, "--set-resources", "measure:runtime=1")
    finally:
        binary.write_bytes(real)
    (said,) = numaplace_lines(out, "time limit")
    print(said)
    assert said.startswith("numaplace: chunk r1.c1 of study tiny (Slurm job ") and "of 1 min: TIMEOUT" in said
    kept = list((built / "results/tiny/runs").glob("*/record.json"))
    assert kept and all(json.loads(p.read_text())["status"] == "timeout" for p in kept)
    again = snakemake(built, *ARGS, "--set-resources", "measure:runtime=1")
    (refused,) = numaplace_lines(again, "last time")
    print(refused)
    assert "would get 1 min again" in refused and "submitted with SLURM jobid" not in again
