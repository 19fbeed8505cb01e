"""PBS glue for Snakemake's cluster-generic executor: the qsub command line of a job and
the running|success|failed verdict on a job id, for the two PBS dialects.

A dialect is a small class: how it asks for one node (PBS Pro/OpenPBS `select`, Torque
`nodes=1:ppn=`), how it asks qstat about a job, and what each of its job_state codes
means. `numaplace pbs-submit` and `numaplace pbs-status` (numaplace.cli) are thin
wrappers over `qsub_argv` and `job_status`.
"""
from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass

RUNNING, SUCCESS, FAILED = "running", "success", "failed"


@dataclass(frozen=True)
class JobStatus:
    status: str            # running | success | failed
    reason: str            # human-readable: state, exit status, source


def walltime(minutes):
    """60 → '01:00:00' (the form qsub -l walltime= takes)."""
    minutes = int(math.ceil(float(minutes)))
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


class Dialect:
    name = ""
    states = {}                    # job_state → (status or None = ended: see exit, meaning)
    exclusive_args = ()            # what makes a job exclusive, beyond its resources
    also_reads = None              # the dialect whose state codes this one's qstat may show
    silent_when_gone = False       # qstat exits 0 and prints nothing for a job it forgot
    history_argv = None            # qstat asked again for a job only in PBS Pro's history

    def answered(self, out):
        """Whether qstat's output (exit status 0) is an answer in this dialect."""
        return bool(out)

    def resource_args(self, ncpus, mem, minutes):
        raise NotImplementedError

    def qstat_argv(self, jobid):
        raise NotImplementedError

    def parse_qstat(self, text, jobid):
        """(job_state, exit status) from this dialect's qstat output."""
        raise NotImplementedError

    def verdict(self, state, exit_status):
        """JobStatus for one of this dialect's job_state codes (+ exit status of an ended
        job); None when the state is not the dialect's, or says the job ended but no
        exit status is known (the caller may ask Slurm, for Slurm's Torque wrappers)."""
        if state not in self.states:
            return None
        status, meaning = self.states[state]
        if status is not None:
            return JobStatus(status, f"job_state {state} ({meaning})")
        if exit_status is None:
            return None
        code = int(exit_status)
        if code == 0:
            return JobStatus(SUCCESS, f"job_state {state} ({meaning}), exit status 0")
        why = ""
        if code < 0:
            why = " (the batch system could not run the job, or killed it at a limit)"
        elif code > 256:
            why = f" (killed by signal {code - 256})"
        elif 128 < code < 256:       # 256 is neither: no signal 0, no shell exit above 255
            why = f" (killed by signal {code - 128})"
        return JobStatus(FAILED, f"job_state {state} ({meaning}), exit status {code}{why}")


class PBSPro(Dialect):
    """PBS Pro / OpenPBS: -l select=1:ncpus=N:mem=Mmb -l walltime=… [-l place=excl];
    `qstat -fx -F json` (-x: finished jobs too; needs the server's job_history_enable)."""
    name = "pbspro"
    exclusive_args = ("-l", "place=excl")
    states = {
        "Q": (RUNNING, "queued"),
        "H": (RUNNING, "held"),
        "W": (RUNNING, "waiting for its start time"),
        "T": (RUNNING, "in transit to a server/queue"),
        "R": (RUNNING, "running"),
        "E": (RUNNING, "exiting after having run"),
        "B": (RUNNING, "array job: at least one subjob started"),
        "S": (RUNNING, "suspended by the server"),
        "U": (RUNNING, "suspended: workstation became busy"),
        "M": (FAILED, "moved to another server: no longer trackable by this id"),
        "F": (None, "finished"),          # → Exit_status
        "X": (None, "subjob finished"),   # → Exit_status
    }

    def resource_args(self, ncpus, mem, minutes):
        args = ["-l", f"select=1:ncpus={ncpus}" + (f":mem={mem}mb" if mem else "")]
        return args + (["-l", f"walltime={walltime(minutes)}"] if minutes else [])

    def qstat_argv(self, jobid):
        return ["qstat", "-fx", "-F", "json", jobid]

    def answered(self, out):
        return out.startswith("{")

    def parse_qstat(self, text, jobid=None):
        """Tolerant of the invalid JSON some PBS Pro versions print (unescaped
        characters in Variable_List)."""
        try:
            jobs = json.loads(text).get("Jobs") or {}
            if jobs:
                job = jobs.get(jobid) if jobid in jobs else next(iter(jobs.values()))
                return job.get("job_state"), job.get("Exit_status")
            return None, None
        except ValueError:
            st = re.search(r'"job_state"\s*:\s*"([A-Z])"', text)
            ex = re.search(r'"Exit_status"\s*:\s*(-?\d+)', text)
            return (st.group(1) if st else None), (int(ex.group(1)) if ex else None)


class Torque(Dialect):
    """Torque: one -l nodes=1:ppn=N,mem=…,walltime=… (Slurm's Torque wrappers keep only
    the last -l); an exclusive job asks for every CPU of the node, which is what makes
    it exclusive there. `qstat -f` (also PBS Pro without -F json)."""
    name = "torque"
    also_reads = "pbspro"          # a PBS Pro too old for -F json
    silent_when_gone = True        # Slurm's qstat wrapper
    states = {
        "Q": (RUNNING, "queued"),
        "H": (RUNNING, "held"),
        "W": (RUNNING, "waiting for its execution time"),
        "T": (RUNNING, "being moved to a new location"),
        "R": (RUNNING, "running"),
        "E": (RUNNING, "exiting after having run"),
        "S": (RUNNING, "suspended"),
        "C": (None, "completed"),         # → exit_status
    }

    def resource_args(self, ncpus, mem, minutes):
        spec = f"nodes=1:ppn={ncpus}" + (f",mem={mem}mb" if mem else "")
        return ["-l", spec + (f",walltime={walltime(minutes)}" if minutes else "")]

    def qstat_argv(self, jobid):
        return ["qstat", "-f", jobid]

    def history_argv(self, jobid):
        """PBS Pro read through this path: a finished job is shown only with -x."""
        return ["qstat", "-x", "-f", jobid]

    def parse_qstat(self, text, jobid=None):
        """Long values wrap onto tab-indented continuation lines; only the two short
        attributes matter here."""
        st = re.search(r"^\s*job_state\s*=\s*(\S+)", text, re.M)
        ex = re.search(r"^\s*exit_status\s*=\s*(-?\d+)", text, re.M | re.I)
        return (st.group(1) if st else None), (int(ex.group(1)) if ex else None)


DIALECTS = {d.name: d for d in (PBSPro(), Torque())}


def dialect(name):
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown PBS dialect {name!r} (known: {', '.join(DIALECTS)})") from None


# -- submission -------------------------------------------------------------------

def read_job_properties(jobscript):
    """The job's properties (rule, threads, resources, ...) that Snakemake writes into
    the `# properties = {...}` line of every cluster jobscript."""
    with open(jobscript) as f:
        for line in f:
            if line.startswith("# properties = "):
                return json.loads(line[len("# properties = "):])
    raise ValueError(f"{jobscript}: no '# properties = ' line (not a Snakemake jobscript?)")


def job_name(props):
    """Short, PBS-safe job name: np-<rule> (np-g-<group> for a group job), ≤ 15 chars."""
    what = props.get("rule") or ("g-" + str(props.get("groupid", "job")))
    return ("np-" + re.sub(r"[^A-Za-z0-9_.-]", "_", what))[:15]


def qsub_argv(props, dialect_name="pbspro", log=None, extra=(), exclusive_args=None):
    """qsub argv (without the jobscript) for one Snakemake job's properties. Queue and
    account come from the slurm_partition/slurm_account resources (the platform's
    cluster section) unless pbs_queue/pbs_account are set."""
    d = dialect(dialect_name)
    res = props.get("resources") or {}
    ncpus = _number(res.get("cpus_per_task")) or _number(props.get("threads")) or 1
    mem = _number(res.get("mem_mb"))          # unknown sizes are written as "<TBD>"
    minutes = _number(res.get("runtime"))
    argv = ["qsub", "-V", "-N", job_name(props), "-j", "oe"] + (["-o", str(log)] if log else [])
    argv += d.resource_args(ncpus, mem, minutes)
    if res.get("exclusive"):
        argv += list(d.exclusive_args if exclusive_args is None else exclusive_args)
    queue = res.get("pbs_queue") or res.get("slurm_partition")
    account = res.get("pbs_account") or res.get("slurm_account")
    argv += (["-q", str(queue)] if queue else []) + (["-A", str(account)] if account else [])
    return argv + list(extra)


def _number(value):
    try:
        return int(math.ceil(float(value)))
    except (TypeError, ValueError):
        return None


def split_args(text):
    return shlex.split(text) if text else []


# -- status -----------------------------------------------------------------------

# Slurm (scontrol show job / sacct), for Slurm's Torque wrappers, whose qstat shows
# `C` for every ended job and no exit status.
SLURM_RUNNING = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
                 "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT",
                 "RESV_DEL_HOLD", "PREEMPTED"}
SLURM_SUCCESS = {"COMPLETED"}
# everything else (FAILED, TIMEOUT, CANCELLED, OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL,
# DEADLINE, SPECIAL_EXIT, REVOKED) has failed


def _unknown_job(rc, err):
    # PBS_UNKJOBID (15001) exits 153 on Torque, PBS Pro and Slurm's qstat wrapper;
    # the message wording differs by version
    return rc == 153 or re.search(r"unknown job", err or "", re.I) is not None


def _finished_in_history(rc, err):
    # PBS Pro's qstat without -x on a job that has finished (job_history_enable on):
    # PBSE_HISTJOBID (15139) exits 35, "Job has finished, use -x or -H to obtain
    # historical job information"
    return rc == 35 or re.search(r"job has finished", err or "", re.I) is not None


def slurm_verdict(jobid, run, which=shutil.which):
    """JobStatus from Slurm for a job id (jobs submitted through Slurm's Torque
    wrappers); None when Slurm is not there or does not know the job."""
    sid = str(jobid).split(".")[0]
    state = exit_code = None
    if which("scontrol"):
        p = run(["scontrol", "show", "job", "-o", sid])
        m = re.search(r"\bJobState=([A-Z_]+)", p.stdout or "")
        state = m.group(1) if m else None
        exit_code = re.search(r"\bExitCode=(\d+):(\d+)", p.stdout or "")
    if state is None and which("sacct"):
        p = run(["sacct", "-X", "-n", "-P", "-j", sid, "-o", "State,ExitCode"])
        lines = (p.stdout or "").strip().splitlines()
        if p.returncode == 0 and lines:
            fields = lines[0].split("|")
            state = fields[0].split()[0] if fields[0] else None
            exit_code = re.match(r"(\d+):(\d+)", fields[1]) if len(fields) > 1 else None
    if state is None:
        return None
    ec = f", exit code {exit_code.group(1)}:{exit_code.group(2)}" if exit_code else ""
    if state in SLURM_SUCCESS:
        return JobStatus(SUCCESS, f"Slurm {state}{ec}")
    if state in SLURM_RUNNING:
        return JobStatus(RUNNING, f"Slurm {state}")
    return JobStatus(FAILED, f"Slurm {state}{ec}")


def _run(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except FileNotFoundError as e:
        return subprocess.CompletedProcess(argv, 127, "", str(e))
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(argv, 124, "", f"{argv[0]} timed out")


def job_status(jobid, dialect_name="auto", vanished=SUCCESS, run=_run, which=shutil.which):
    """running|success|failed (with a reason) for a PBS job id.

    Asks qstat in the dialect's form (auto: PBS Pro's, then Torque's). What qstat
    leaves open — a Torque `C` without exit_status, or a state code outside the dialect
    (Slurm's Torque wrappers print both) — is settled by asking Slurm where Slurm is
    installed, else counts as failed. A job qstat no longer knows is `vanished`
    (default success: Snakemake still checks its outputs). Any other qstat failure
    (server unreachable) reads as running, so a transient error does not fail the
    workflow. A job PBS Pro's plain `qstat -f` calls finished (exit 35, "Job has
    finished, use -x ...") is asked again with `qstat -x -f`; if that does not tell
    either, it has finished with an unknown exit status: failed.
    """
    jobid = str(jobid).strip()
    errors = []
    asked = list(DIALECTS.values()) if dialect_name == "auto" else [dialect(dialect_name)]
    for d in asked:
        argv = d.qstat_argv(jobid)
        p = run(argv)
        finished = d.history_argv is not None and _finished_in_history(p.returncode, p.stderr)
        if finished:
            argv = d.history_argv(jobid)
            p = run(argv)
        out = (p.stdout or "").strip()
        if p.returncode == 0 and d.answered(out):
            state, code = d.parse_qstat(out, jobid)
            if state:
                codes = d if state in d.states or not d.also_reads else DIALECTS[d.also_reads]
                return codes.verdict(state, code) or _undecided(jobid, state, run, which)
        elif not finished and (_unknown_job(p.returncode, p.stderr) or
                               (p.returncode == 0 and not out and d.silent_when_gone)):
            return _vanished(jobid, vanished, run, which, p.stderr)
        if finished:
            # qstat said the job has finished, but its history (-x) did not tell how:
            # finished with an unknown exit status, reported failed rather than running
            # forever (Snakemake then checks nothing more; retry-failed runs it again)
            return JobStatus(FAILED, f"qstat: job has finished; {' '.join(argv[:-1])}: exit {p.returncode} "
                             f"{(p.stderr or '').strip()[:200]}: exit status unknown, reported as failed")
        errors.append(f"{' '.join(argv[:-1])}: exit {p.returncode} {(p.stderr or '').strip()[:200]}")
    return JobStatus(RUNNING, "qstat failed, assuming still running: " + "; ".join(errors))


def _undecided(jobid, state, run, which):
    s = slurm_verdict(jobid, run, which)
    if s is not None:
        return JobStatus(s.status, f"job_state {state} without exit status; {s.reason}")
    known = any(state in d.states for d in DIALECTS.values())
    return JobStatus(FAILED, f"job_state {state}: {'no exit status' if known else 'unknown job_state'}")


def _vanished(jobid, vanished, run, which, err):
    s = slurm_verdict(jobid, run, which)
    if s is not None:
        return JobStatus(s.status, f"unknown to qstat; {s.reason}")
    return JobStatus(vanished, f"unknown to qstat ({(err or '').strip()[:120]}); "
                     f"reported as {vanished}")
