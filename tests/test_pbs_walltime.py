"""The qsub walltime and Slurm's states as numaplace.cluster.pbs reads them: exact
strings and verdicts (no qsub or qstat run)."""
from __future__ import annotations

import subprocess

import pytest

from numaplace.cluster import pbs


def test_walltime_rounds_a_fractional_runtime_up_to_the_next_minute():
    """qsub's walltime must never be shorter than the runtime asked: 90.5 min → 01:31:00."""
    assert [pbs.walltime(m) for m in (60, 90.5, 0.2, 1, 59.01, 1439, "25", 6000)] == \
        ["01:00:00", "01:31:00", "00:01:00", "00:01:00", "01:00:00", "23:59:00", "00:25:00", "100:00:00"]


def test_fractional_resources_are_asked_rounded_up_in_both_dialects():
    """Snakemake may hand a runtime or mem_mb with a fraction: the job gets the whole unit above."""
    props = {"rule": "measure", "threads": 4, "resources": {"runtime": 90.5, "mem_mb": 1000.2, "cpus_per_task": 3.5}}
    assert pbs.qsub_argv(props, "pbspro") == ["qsub", "-V", "-N", "np-measure", "-j", "oe", "-l",
                                              "select=1:ncpus=4:mem=1001mb", "-l", "walltime=01:31:00"]
    assert pbs.qsub_argv(props, "torque", log="l.txt") == ["qsub", "-V", "-N", "np-measure", "-j", "oe", "-o", "l.txt",
                                                           "-l", "nodes=1:ppn=4,mem=1001mb,walltime=01:31:00"]


def slurm_says(state, code="0:0"):
    def run(argv):
        return subprocess.CompletedProcess(argv, 0, f"JobId=5 JobState={state} ExitCode={code}", "")
    return pbs.slurm_verdict("5.srv", run, which=lambda name: "/usr/bin/" + name if name == "scontrol" else None)


@pytest.mark.parametrize("state", ["PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
                                   "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT",
                                   "RESV_DEL_HOLD", "PREEMPTED"])
def test_every_slurm_state_of_a_live_job_is_running(state):
    """A job Slurm still holds (held for requeue, staging out, ...) must not read as ended."""
    assert slurm_says(state) == pbs.JobStatus("running", f"Slurm {state}")


@pytest.mark.parametrize("state, status", [("COMPLETED", "success"), ("FAILED", "failed"), ("TIMEOUT", "failed"),
                                           ("OUT_OF_MEMORY", "failed"), ("CANCELLED", "failed")])
def test_every_slurm_end_state_is_success_only_when_completed(state, status):
    assert slurm_says(state, "2:9") == pbs.JobStatus(status, f"Slurm {state}, exit code 2:9")
