"""Cluster execution: what each job asks of the batch system, and what the batch system
says about a job.

Two halves:
  * requests — a measured run takes one whole node for itself (every CPU of the node in
    its cpuset, exclusive), for a walltime and memory estimated from its kernel, class
    and thread count; builds are ordinary one-CPU jobs. The platform file's `cluster:`
    section supplies the node size, partition/account and a runtime scale. The rules'
    `threads:`/`resources:` lambdas call these functions; the profiles
    (profiles/slurm, profiles/pbs, profiles/pbs-torque) turn them into sbatch/qsub
    options.
  * PBS — the qsub command line for a job (PBS Pro/OpenPBS `select` dialect or the
    Torque `nodes=1:ppn=` dialect) and the mapping of every qstat job state to the
    running|success|failed that Snakemake's cluster-generic executor expects.
    `numaplace pbs-submit` and `numaplace pbs-status` (numaplace.cli) are thin wrappers over these functions.
"""
from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass

# -- requests ---------------------------------------------------------------------

# Per kernel and class: (seconds one thread needs, resident MiB of the benchmark).
# Generous round estimates for a ~2010 node (the reference study's Magny-Cours era);
# resident sizes follow NPB's array sizes. For scale, measured on the 2-core 2026 x86
# development machine with numaplace's own kernels, one thread: CG.A 0.7 s / 48 MiB,
# MG.A 0.6 s / 445 MiB. The platform's cluster.runtime_scale multiplies the walltimes.
NPB_COST = {
    "cg": {"S": (1, 8), "W": (5, 16), "A": (15, 60), "B": (600, 420), "C": (1800, 1100)},
    "mg": {"S": (1, 8), "W": (10, 60), "A": (30, 460), "B": (120, 460), "C": (900, 3500)},
    # memory micro-benchmarks: time and size depend on their args; a full latency sweep
    # to 4x a 2010s LLC with 5 reps and 2 threads takes a few minutes, buffers < 2 GiB
    "membw": {"X": (300, 2048)},
    "memlat": {"X": (300, 2048)},
}
RUN_SAFETY = 3           # × the estimate: bad placements (all memory remote) run slower
SPEEDUP_CAP = 4          # never assume more than 4× from threads (memory-bound kernels)
RUN_OVERHEAD_S = 150     # Snakemake start in the job, idle check (≤ idle_wait), captures
RUN_MEM_OVERHEAD_MB = 1024   # runner, Snakemake in the job, numa_maps/numastat copies
BUILD_RUNTIME_MIN = 20
BUILD_MEM_MB = 2048


@dataclass(frozen=True)
class ClusterSettings:
    cpus_per_node: int
    mem_mb_per_node: int | None = None
    partition: str = ""
    account: str = ""
    runtime_scale: float = 1.0

    @classmethod
    def of(cls, topology):
        """From a platform topology: its `cluster:` section, else the topology's CPUs
        (for `platform: auto` that is the machine Snakemake starts on)."""
        c = getattr(topology, "cluster", None) or {}
        return cls(cpus_per_node=int(c.get("cpus_per_node") or len(topology.cpus)),
                   mem_mb_per_node=c.get("mem_mb_per_node"),
                   partition=c.get("partition", "") or "",
                   account=c.get("account", "") or "",
                   runtime_scale=float(c.get("runtime_scale", 1.0)))


def _settings(study):
    return ClusterSettings.of(study.topology)


def _cost(bench, cls):
    try:
        return NPB_COST[bench][cls]
    except KeyError:
        raise ValueError(f"no runtime/memory estimate for {bench}.{cls}") from None


def run_runtime_minutes(bench, cls, threads, settings):
    """Walltime (minutes) for one measured run, including the in-job overhead."""
    serial_s, _ = _cost(bench, cls)
    kernel_s = RUN_SAFETY * serial_s / max(1, min(threads, SPEEDUP_CAP))
    return max(1, math.ceil((RUN_OVERHEAD_S + kernel_s) * settings.runtime_scale / 60))


def run_mem_mb(bench, cls, settings):
    """Memory (MiB) for one measured run, at most the node's memory."""
    _, resident = _cost(bench, cls)
    mem = math.ceil(resident * 1.25) + RUN_MEM_OVERHEAD_MB
    if settings.mem_mb_per_node:
        mem = min(mem, settings.mem_mb_per_node)
    return mem


# The functions the rules' lambdas call (the Study and a study.Run in, a number out).

def node_cpus(study):
    """All CPUs of a node: a measured job's threads and cpus_per_task."""
    return _settings(study).cpus_per_node


def measure_runtime(study, run):
    return run_runtime_minutes(run.bench, run.cls, run.placement.threads, _settings(study))


def measure_mem_mb(study, run):
    return run_mem_mb(run.bench, run.cls, _settings(study))


def queue_resources(study):
    """slurm_partition / slurm_account from the platform, only where it sets them (so
    that --default-resources on the command line applies otherwise); the PBS
    profiles read the same two resources as queue (-q) and account (-A)."""
    s = _settings(study)
    out = {}
    if s.partition:
        out["slurm_partition"] = s.partition
    if s.account:
        out["slurm_account"] = s.account
    return out


def walltime(minutes):
    """60 → '01:00:00' (the form qsub -l walltime= takes)."""
    minutes = int(math.ceil(float(minutes)))
    return f"{minutes // 60:02d}:{minutes % 60:02d}:00"


# -- PBS submission ---------------------------------------------------------------

DIALECTS = ("pbspro", "torque")


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


def qsub_argv(props, dialect="pbspro", log=None, extra=(), exclusive_args=None):
    """qsub argv (without the jobscript) for one Snakemake job's properties.

    pbspro: -l select=1:ncpus=N:mem=Mmb -l walltime=HH:MM:SS [-l place=excl]
    torque: -l nodes=1:ppn=N,mem=Mmb,walltime=HH:MM:SS (one -l: Slurm's Torque
            wrappers keep only the last -l); an exclusive job asks for every CPU of
            the node (ppn = all CPUs), which is what makes it exclusive there.
    Queue/account come from the slurm_partition/slurm_account resources (the
    platform's cluster section) unless pbs_queue/pbs_account are set.
    """
    if dialect not in DIALECTS:
        raise ValueError(f"unknown PBS dialect {dialect!r} (known: {', '.join(DIALECTS)})")
    res = props.get("resources") or {}
    ncpus = _number(res.get("cpus_per_task")) or _number(props.get("threads")) or 1
    mem = _number(res.get("mem_mb"))          # unknown sizes are written as "<TBD>"
    minutes = _number(res.get("runtime"))
    exclusive = bool(res.get("exclusive"))
    if exclusive_args is None:
        exclusive_args = ["-l", "place=excl"] if dialect == "pbspro" else []
    argv = ["qsub", "-V", "-N", job_name(props), "-j", "oe"]
    if log:
        argv += ["-o", str(log)]
    if dialect == "pbspro":
        select = f"select=1:ncpus={ncpus}" + (f":mem={mem}mb" if mem else "")
        argv += ["-l", select]
        if minutes:
            argv += ["-l", f"walltime={walltime(minutes)}"]
        if exclusive:
            argv += list(exclusive_args)
    else:
        spec = f"nodes=1:ppn={ncpus}"
        if mem:
            spec += f",mem={mem}mb"
        if minutes:
            spec += f",walltime={walltime(minutes)}"
        argv += ["-l", spec]
        if exclusive:
            argv += list(exclusive_args)
    queue = res.get("pbs_queue") or res.get("slurm_partition")
    account = res.get("pbs_account") or res.get("slurm_account")
    if queue:
        argv += ["-q", str(queue)]
    if account:
        argv += ["-A", str(account)]
    argv += list(extra)
    return argv


def _number(value):
    try:
        return int(math.ceil(float(value)))
    except (TypeError, ValueError):
        return None


def split_args(text):
    return shlex.split(text) if text else []


# -- PBS job states ---------------------------------------------------------------

RUNNING, SUCCESS, FAILED = "running", "success", "failed"

# PBS Pro / OpenPBS (qstat -fx -F json): every job_state code.
PBSPRO_STATES = {
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
# Torque (qstat -f): every job_state code.
TORQUE_STATES = {
    "Q": (RUNNING, "queued"),
    "H": (RUNNING, "held"),
    "W": (RUNNING, "waiting for its execution time"),
    "T": (RUNNING, "being moved to a new location"),
    "R": (RUNNING, "running"),
    "E": (RUNNING, "exiting after having run"),
    "S": (RUNNING, "suspended"),
    "C": (None, "completed"),         # → exit_status
}
# Slurm (scontrol show job / sacct), for Slurm's Torque wrappers, whose qstat shows
# `C` for every ended job and no exit status.
SLURM_RUNNING = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
                 "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT",
                 "RESV_DEL_HOLD", "PREEMPTED"}
SLURM_SUCCESS = {"COMPLETED"}
# everything else (FAILED, TIMEOUT, CANCELLED, OUT_OF_MEMORY, NODE_FAIL, BOOT_FAIL,
# DEADLINE, SPECIAL_EXIT, REVOKED) has failed


@dataclass(frozen=True)
class JobStatus:
    status: str            # running | success | failed
    reason: str            # human-readable: state, exit status, source


def verdict_from_state(state, exit_status, dialect):
    """JobStatus for a PBS Pro or Torque job_state (+ exit status for ended jobs); None
    when the state is not one of the dialect's, or says the job ended but no exit
    status is known (the caller may ask Slurm, for Slurm's Torque wrappers)."""
    table = PBSPRO_STATES if dialect == "pbspro" else TORQUE_STATES
    if state not in table:
        return None
    status, meaning = table[state]
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
    elif code > 128:
        why = f" (killed by signal {code - 128})"
    return JobStatus(FAILED, f"job_state {state} ({meaning}), exit status {code}{why}")


def parse_qstat_json(text, jobid=None):
    """(job_state, Exit_status) from `qstat -fx -F json`; tolerant of the invalid JSON
    some PBS Pro versions print (unescaped characters in Variable_List)."""
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


def parse_qstat_full(text):
    """(job_state, exit_status) from `qstat -f` (Torque; PBS Pro without -F json).
    Long values wrap onto tab-indented continuation lines; only the two short
    attributes matter here."""
    st = re.search(r"^\s*job_state\s*=\s*(\S+)", text, re.M)
    ex = re.search(r"^\s*exit_status\s*=\s*(-?\d+)", text, re.M | re.I)
    return (st.group(1) if st else None), (int(ex.group(1)) if ex else None)


def _unknown_job(rc, err):
    # PBS_UNKJOBID (15001) exits 153 on Torque, PBS Pro and Slurm's qstat wrapper;
    # the message wording differs by version
    return rc == 153 or re.search(r"unknown job", err or "", re.I) is not None


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


def job_status(jobid, dialect="auto", vanished=SUCCESS, run=_run, which=shutil.which):
    """running|success|failed (with a reason) for a PBS job id.

    pbspro: `qstat -fx -F json ID` (-x: finished jobs too; needs the server's
            job_history_enable); torque: `qstat -f ID`; auto tries pbspro, then
            torque. What qstat leaves open — a Torque `C` without exit_status, or a
            state code outside the dialect (Slurm's Torque wrappers print both) — is
            settled by asking Slurm where Slurm is installed, else counts as failed.
    A job qstat no longer knows is `vanished` (default success: Snakemake still checks
    its outputs). Any other qstat failure (server unreachable) reads as running, so a
    transient error does not fail the workflow.
    """
    jobid = str(jobid).strip()
    errors = []
    if dialect in ("pbspro", "auto"):
        p = run(["qstat", "-fx", "-F", "json", jobid])
        if p.returncode == 0 and (p.stdout or "").lstrip().startswith("{"):
            state, code = parse_qstat_json(p.stdout, jobid)
            if state:
                return verdict_from_state(state, code, "pbspro") or \
                    _undecided(jobid, state, code, run, which)
        elif _unknown_job(p.returncode, p.stderr):
            return _vanished(jobid, vanished, run, which, p.stderr)
        errors.append(f"qstat -fx -F json: exit {p.returncode} {(p.stderr or '').strip()[:200]}")
    if dialect in ("torque", "auto"):
        p = run(["qstat", "-f", jobid])
        out = (p.stdout or "").strip()
        if p.returncode == 0 and out:
            state, code = parse_qstat_full(out)
            if state:
                # Torque's codes; PBS Pro's for a PBS Pro too old for -F json
                dia = "torque" if state in TORQUE_STATES else "pbspro"
                return verdict_from_state(state, code, dia) or _undecided(jobid, state, code, run, which)
        if _unknown_job(p.returncode, p.stderr) or (p.returncode == 0 and not out):
            return _vanished(jobid, vanished, run, which, p.stderr)
        errors.append(f"qstat -f: exit {p.returncode} {(p.stderr or '').strip()[:200]}")
    return JobStatus(RUNNING, "qstat failed, assuming still running: " + "; ".join(errors))


def _undecided(jobid, state, code, run, which):
    s = slurm_verdict(jobid, run, which)
    if s is not None:
        return JobStatus(s.status, f"job_state {state} without exit status; {s.reason}")
    what = "unknown job_state" if state not in PBSPRO_STATES and state not in TORQUE_STATES \
        else "no exit status"
    return JobStatus(FAILED, f"job_state {state}: {what}")


def _vanished(jobid, vanished, run, which, err):
    s = slurm_verdict(jobid, run, which)
    if s is not None:
        return JobStatus(s.status, f"unknown to qstat; {s.reason}")
    return JobStatus(vanished, f"unknown to qstat ({(err or '').strip()[:120]}); "
                     f"reported as {vanished}")
