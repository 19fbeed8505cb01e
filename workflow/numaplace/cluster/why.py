"""Why a cluster job failed, in numaplace's one line (what, where, what to do), on Slurm
and PBS alike, and what is checked before anything is submitted.

Where the reason comes from:
* Slurm (profiles/slurm, snakemake-executor-plugin-slurm): the plugin reports a refused
  sbatch or a failed job to Snakemake's logger, which the profiles' `quiet: [rules]`
  silences. `watch` hangs a handler on that logger (in the workflow's main process)
  that turns the plugin's message into a Failure, asking `scontrol show job` (or sacct)
  for the state, reason, exit code, time limit and memory.
* PBS (profiles/pbs, profiles/pbs-torque, cluster-generic): `numaplace pbs-status` and
  `numaplace pbs-submit` print the line themselves (their stderr reaches the console);
  the state comes from qstat (Exit_status, comment, resources_used.walltime against
  Resource_List.walltime), from Slurm for Slurm's Torque wrappers.

A chunk killed at its time limit is remembered (results/<study>/logs/cluster/<chunk>.json):
its next submission asks for twice that limit (numaplace.cluster.resources), and the
pre-submission check refuses a walltime set by hand that is no longer than it.
"""
from __future__ import annotations

import json
import logging
import math
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from numaplace.core.loader import one_line

TIMEOUT, CANCELLED, OUT_OF_MEMORY, NODE_FAILURE, REJECTED, FAILED = (
    "timeout", "cancelled", "out-of-memory", "node-failure", "rejected", "failed")

SLURM_CAUSES = {"TIMEOUT": TIMEOUT, "DEADLINE": TIMEOUT, "CANCELLED": CANCELLED, "PREEMPTED": CANCELLED,
                "OUT_OF_MEMORY": OUT_OF_MEMORY, "NODE_FAIL": NODE_FAILURE, "BOOT_FAIL": NODE_FAILURE}
# PBS Pro's JOB_EXEC_KILL_* exit statuses (the MoM killed the job at a limit)
PBS_LIMIT_EXITS = {-29: (TIMEOUT, "walltime"), -28: (TIMEOUT, "cput"), -27: (OUT_OF_MEMORY, "mem"),
                   -26: (OUT_OF_MEMORY, "vmem")}


@dataclass(frozen=True)
class Failure:
    cause: str                 # timeout | cancelled | out-of-memory | node-failure | rejected | failed
    scheduler: str             # Slurm | PBS
    job: str = ""              # the scheduler's job id ("" when it never got one)
    words: str = ""            # the scheduler's own words: state, reason, exit code, comment
    limit_min: int | None = None   # the job's walltime
    mem_mb: int | None = None      # the job's memory
    node: str = ""


def _run(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(argv, 127, "", str(e))


def minutes(text):
    """Slurm/PBS durations ('1-02:03:04', '01:00:00', '5:00', '90') → minutes, rounded
    up; None for UNLIMITED, Partition_Limit or anything else."""
    m = re.fullmatch(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)|(\d+)", str(text or "").strip())
    if not m:
        return None
    if m.group(5):
        return int(m.group(5))
    d, h, mi, s = (int(g or 0) for g in m.group(1, 2, 3, 4))
    if m.group(2) is None and m.group(1) is None:       # MM:SS
        h, mi, s = 0, int(m.group(3)), int(m.group(4))
    return d * 1440 + h * 60 + mi + math.ceil(s / 60)


def _mem_mb(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)[bB]?(?:[nc])?", str(text or "").strip(), re.I)
    if not m:
        return None
    scale = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 ** 2}[m.group(2).upper()]
    return int(math.ceil(float(m.group(1)) * scale))


# -- Slurm ------------------------------------------------------------------------

def slurm_facts(jobid, run=_run, which=shutil.which):
    """The facts Slurm keeps on a job: scontrol while slurmctld holds it (MinJobAge),
    else sacct (slurmdbd); {} when neither knows it."""
    sid = str(jobid).split(";")[0].split(".")[0]
    if which("scontrol"):
        p = run(["scontrol", "show", "job", "-o", sid])
        facts = dict(kv.split("=", 1) for kv in (p.stdout or "").split() if "=" in kv)
        if p.returncode == 0 and facts.get("JobState"):
            return facts
    if which("sacct"):
        p = run(["sacct", "-X", "-n", "-P", "-j", sid, "-o", "State,ExitCode,Timelimit,ReqMem,NodeList"])
        lines = (p.stdout or "").strip().splitlines()
        if p.returncode == 0 and lines:
            f = (lines[0].split("|") + [""] * 5)[:5]
            return {"JobState": f[0].split()[0] if f[0] else "", "Reason": " ".join(f[0].split()[1:]),
                    "ExitCode": f[1], "TimeLimit": f[2], "MinMemoryNode": f[3], "NodeList": f[4]}
    return {}


def slurm_failure(jobid, state=None, run=_run, which=shutil.which):
    """Failure of a Slurm job from what Slurm says of it (`state`: what the plugin saw,
    used when Slurm has forgotten the job)."""
    f = slurm_facts(jobid, run, which)
    state = f.get("JobState") or state or "unknown"
    words = [state]
    if f.get("Reason") and f["Reason"] not in ("None", "(null)"):
        words.append(f"reason {f['Reason']}")
    if f.get("ExitCode") and f["ExitCode"] not in ("0:0",):
        words.append(f"exit code {f['ExitCode']}")
    return Failure(SLURM_CAUSES.get(state, FAILED), "Slurm", str(jobid), ", ".join(words),
                   minutes(f.get("TimeLimit")), _mem_mb(f.get("MinMemoryNode") or f.get("ReqMem")),
                   f.get("NodeList", "") if f.get("NodeList") not in (None, "(null)", "None assigned") else "")


def from_plugin_message(msg, run=_run, which=shutil.which):
    """The Failure behind a message of snakemake-executor-plugin-slurm, or None."""
    msg = str(msg or "")
    m = re.search(r"SLURM sbatch failed\. The error message was '(.*?)'\.", msg, re.S)
    if m:
        said = " ".join(line.strip() for line in m.group(1).splitlines() if line.strip())
        return Failure(REJECTED, "Slurm", words=re.sub(r"^sbatch: error: ", "", said))
    m = re.search(r"SLURM job submission failed\. The error message was (.*)", msg, re.S)
    if m:
        return Failure(REJECTED, "Slurm", words=" ".join(m.group(1).split()))
    m = re.search(r"SLURM-job '([^']+)' failed.*?SLURM status is: '([A-Z_]+)'", msg, re.S)
    if m:
        return slurm_failure(m.group(1), m.group(2), run, which)
    return None


# -- PBS --------------------------------------------------------------------------

def pbs_facts(text):
    """job_state, exit status, comment and walltimes (limit, used) from `qstat -f` text
    or `qstat -fx -F json`, whichever `text` is."""
    try:
        jobs = json.loads(text).get("Jobs") or {}
        job = next(iter(jobs.values()), {})
        return {"state": job.get("job_state"), "exit": job.get("Exit_status"), "comment": job.get("comment", ""),
                "limit": (job.get("Resource_List") or {}).get("walltime"),
                "used": (job.get("resources_used") or {}).get("walltime")}
    except (ValueError, AttributeError):
        pass

    def attr(name):
        m = re.search(rf"^\s*{re.escape(name)}\s*=\s*(.*)$", text, re.M | re.I)
        return m.group(1).strip() if m else None
    ex = attr("exit_status")
    return {"state": attr("job_state"), "exit": int(ex) if ex and re.fullmatch(r"-?\d+", ex) else None,
            "comment": attr("comment") or "", "limit": attr("Resource_List.walltime"),
            "used": attr("resources_used.walltime")}


def pbs_failure(jobid, facts):
    """Failure of a finished PBS job from its qstat facts (pbs_facts)."""
    code, comment = facts.get("exit"), facts.get("comment") or ""
    limit, used = minutes(facts.get("limit")), minutes(facts.get("used"))
    words = [f"job_state {facts.get('state')}"] + ([f"Exit_status {code}"] if code is not None else []) \
        + ([f"comment '{comment}'"] if comment else [])
    if code in PBS_LIMIT_EXITS:
        cause, what = PBS_LIMIT_EXITS[code]
        words.append(f"killed at its {what} limit")
    elif re.search(r"walltime \d+ exceeded limit|exceeded.*walltime", comment, re.I) or (
            limit and used and used >= limit and code is not None and code != 0):
        cause = TIMEOUT
    elif re.search(r"\bmem\b.*exceeded|exceeded.*\bmem", comment, re.I):
        cause = OUT_OF_MEMORY
    elif re.search(r"qdel|deleted", comment, re.I):
        cause = CANCELLED
    elif code is not None and code < 0:
        cause = REJECTED if code in (-1, -2, -4, -10) else FAILED   # the job could not start
    else:
        cause = FAILED
    return Failure(cause, "PBS", str(jobid), ", ".join(words), limit)


def pbs_job_failure(jobid, dialect_name="auto", run=_run, which=shutil.which):
    """Failure of a PBS job pbs-status called failed: qstat's facts, or Slurm's for the
    jobs of Slurm's Torque wrappers (their qstat shows no exit status)."""
    from numaplace.cluster import pbs
    asked = list(pbs.DIALECTS.values()) if dialect_name == "auto" else [pbs.dialect(dialect_name)]
    for d in asked:
        for argv in (d.qstat_argv(jobid), d.history_argv(jobid) if d.history_argv else None):
            if argv is None:
                continue
            p = run(argv)
            out = (p.stdout or "").strip()
            if p.returncode == 0 and d.answered(out):
                facts = pbs_facts(out)
                if facts["state"] and (facts["exit"] is not None or not which("scontrol")):
                    return pbs_failure(jobid, facts)
                break
    if which("scontrol") or which("sacct"):
        f = slurm_failure(jobid, None, run, which)
        return Failure(f.cause, "PBS", f.job, f"Slurm {f.words}", f.limit_min, f.mem_mb, f.node)
    return Failure(FAILED, "PBS", str(jobid), "qstat no longer knows the job")


def pbs_rejection(returncode, said):
    """Failure of a qsub that refused a job (its stderr and stdout)."""
    said = " ".join(str(said or "").split()) or f"exit {returncode}, nothing said"
    return Failure(REJECTED, "PBS", words=re.sub(r"^qsub: ", "", said))


# -- which job it was (cluster-generic: pbs-submit notes it, pbs-status reads it) ---------

JOBS_FILE = "jobs.tsv"


def note_submission(log_dir, jobid, props):
    """One line per submitted job in <log_dir>/jobs.tsv: its id, rule and first output,
    so that pbs-status, which is given only the id, can name the chunk."""
    outputs = props.get("output") or []
    rule = props.get("rule") or f"group {props.get('groupid', '?')}"
    fields = [str(jobid), str(rule), str(outputs[0]) if outputs else ""]
    try:
        with open(Path(log_dir) / JOBS_FILE, "a") as f:      # one short append: atomic enough
            f.write("\t".join(one_line(x).replace("\t", " ") for x in fields) + "\n")
    except OSError:
        pass                 # the line then names the job by its id alone


def submitted_as(log_dir, jobid):
    """(rule, outputs) pbs-submit noted for a job id; ('job', []) when not noted."""
    try:
        lines = (Path(log_dir) / JOBS_FILE).read_text().splitlines()
    except OSError:
        lines = []
    for text in reversed(lines):
        f = text.split("\t")
        if len(f) == 3 and f[0] == str(jobid):
            return f[1], [f[2]] if f[2] else []
    return "job", []


def pbs_status_line(jobid, dialect_name, log_dir, run=_run, which=shutil.which):
    """pbs-status's line for a failed job; a chunk killed at its limit is remembered."""
    failure = pbs_job_failure(jobid, dialect_name, run, which)
    what, chunk, results = what_of(*submitted_as(log_dir, jobid))
    next_min = None
    if chunk and failure.cause == TIMEOUT and failure.limit_min:
        remember_timeout(results, chunk, failure)
        next_min = 2 * failure.limit_min
    return line(failure, what, chunk, next_min=next_min)


# -- the line ---------------------------------------------------------------------

def what_of(rule, output=()):
    """(words naming the job, its chunk or None, its results/<study> folder or None) from
    its rule and output files (a measure job's ledger: results/<study>/rounds/<chunk>.json)."""
    for path in output or ():
        p = Path(str(path).split(" ")[0])
        if p.parent.name == "rounds" and p.suffix == ".json":
            return f"chunk {p.stem} of study {p.parent.parent.name}", p.stem, str(p.parent.parent)
    if output:
        return f"job {rule} ({Path(str(output[0]).split(' ')[0]).name})", None, None
    return f"job {rule}", None, None


LIMIT_WORDS = {TIMEOUT: "was killed at its time limit", CANCELLED: "was cancelled",
               OUT_OF_MEMORY: "was killed for using more than its memory", NODE_FAILURE: "lost its node",
               REJECTED: "was refused at submission", FAILED: "failed"}


def line(failure, what, chunk=None, partitions=None, log=None, next_min=None):
    """numaplace's one line for a failed cluster job: what, where, what to do."""
    f = failure
    where = f"{f.scheduler} job {f.job}" if f.job else f.scheduler
    where += f" on {f.node}" if f.node else ""
    said = f"{what} ({where}) {LIMIT_WORDS[f.cause]}"
    if f.cause == TIMEOUT and f.limit_min:
        said += f" of {f.limit_min} min"
    if f.cause == OUT_OF_MEMORY and f.mem_mb:
        said += f" of {f.mem_mb} MiB"
    said += f": {f.words}" if f.words else ""
    kept = "any records it wrote are kept; " if chunk else ""
    if f.cause == TIMEOUT:
        todo = (f"{kept}run the same snakemake command again: the chunk is submitted again with "
                f"{next_min} min (twice its limit; a --set-resources measure:runtime=<min> of yours "
                f"goes first: raise it)" if chunk and next_min else
                f"{kept}give it more time (--set-resources {'measure' if chunk else 'RULE'}:runtime=<min>) "
                "or cut chunks smaller (rounds: {chunk_runs: N} in the study)")
    elif f.cause == OUT_OF_MEMORY:
        todo = (f"{kept}give it more memory (--set-resources {'measure' if chunk else 'RULE'}:mem_mb="
                f"{2 * f.mem_mb if f.mem_mb else '<MiB>'}, or cluster.mem_mb_per_node in the platform file)")
    elif f.cause == REJECTED:
        queue = "queue" if f.scheduler == "PBS" else "partition"
        known = f" (known here: {', '.join(partitions)})" if partitions else ""
        todo = (f"nothing was measured by it; check the {queue}{known} and account: cluster.partition and "
                f"cluster.account in the platform file, or --default-resources slurm_partition=<{queue}>")
    elif f.cause == CANCELLED:
        todo = f"{kept}run the same snakemake command again to measure what is left"
    else:
        todo = f"{kept}read {log or 'its log'}, then run the same snakemake command again"
    return one_line(f"numaplace: {said}; {todo}")


# -- a chunk killed at its limit ------------------------------------------------------

def _timeout_file(results, chunk):
    return Path(results) / "logs" / "cluster" / f"{chunk}.json"


def remember_timeout(results, chunk, failure):
    """Keep a chunk's time-limit kill, so that its next submission asks for more."""
    path = _timeout_file(results, chunk)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"cause": failure.cause, "scheduler": failure.scheduler,
                                    "job": failure.job, "limit_min": failure.limit_min}) + "\n")
    except OSError:
        pass           # a read-only results folder: the line still says what to do


def killed_at(results, chunk):
    """The time limit (minutes) a chunk was last killed at, or None."""
    try:
        kept = json.loads(_timeout_file(results, chunk).read_text())
        return int(kept["limit_min"]) if kept.get("cause") == TIMEOUT and kept.get("limit_min") else None
    except (OSError, ValueError, TypeError, KeyError):
        return None


def longer(minutes_asked, results, chunk):
    """A chunk's walltime: twice the limit it was last killed at, if more than asked."""
    killed = killed_at(results, chunk)
    return max(minutes_asked, 2 * killed) if killed else minutes_asked


# -- before submission --------------------------------------------------------------

def scheduler_of(executor, submit_cmd=""):
    """'Slurm', 'PBS' or None: which batch system the workflow's executor submits to."""
    if executor == "slurm":
        return "Slurm"
    if executor == "cluster-generic":
        cmd = str(submit_cmd or "")
        if "pbs-submit" in cmd or re.search(r"\bqsub\b", cmd):
            return "PBS"
        if re.search(r"\bsbatch\b", cmd):
            return "Slurm"
    return None


def known_queues(scheduler, run=_run, which=shutil.which):
    """The partitions (Slurm: sinfo) or queues (PBS: qstat -Q) the scheduler knows; None
    when it cannot be asked."""
    if scheduler == "Slurm" and which("sinfo"):
        p = run(["sinfo", "-h", "-o", "%R"])
        names = (p.stdout or "").split()
        return sorted(set(names)) if p.returncode == 0 and names else None
    if scheduler == "PBS" and which("qstat"):
        p = run(["qstat", "-Q"])
        lines = (p.stdout or "").splitlines()
        if p.returncode != 0:
            return None
        body = [l for l in lines[next((i + 1 for i, l in enumerate(lines) if l.startswith("---")), 0):] if l.strip()]
        return sorted({l.split()[0] for l in body}) or None
    return None


@dataclass(frozen=True)
class Submission:
    """What one job to be submitted asks for (from Snakemake's DAG, after every
    --set-resources/--default-resources)."""
    rule: str
    chunk: str | None
    runtime_min: float | None
    queue: str = ""                # slurm_partition / pbs_queue
    estimate_s: float | None = None    # the plan's estimate of the chunk's runs
    runs: int = 0
    killed_at_min: int | None = None   # the limit the chunk was last killed at


def preflight(jobs, scheduler, run=_run, which=shutil.which):
    """Lines refusing the submission (empty: go on): a partition/queue the scheduler does
    not know, a chunk whose walltime is below the plan's estimate of its runs, or no
    longer than the limit it was last killed at."""
    problems = []
    queues = {q for j in jobs for q in str(j.queue or "").split(",") if q}
    known = known_queues(scheduler, run, which) if queues and scheduler else None
    word = "queue" if scheduler == "PBS" else "partition"
    if known is not None:
        for q in sorted(queues):
            if q.split("@")[0] not in known:
                users = sorted({j.rule for j in jobs if q in str(j.queue).split(",")})
                problems.append(one_line(
                    f"numaplace: {scheduler} has no {word} {q!r} (known: {', '.join(known)}), which "
                    f"{', '.join(users)} would be submitted to; nothing was submitted; set cluster.partition "
                    f"in the platform file, or --default-resources slurm_partition=<{word}>"))
    short = [j for j in jobs if j.chunk and j.runtime_min and j.estimate_s
             and 60 * float(j.runtime_min) < j.estimate_s]
    if short:
        j = short[0]
        need = math.ceil(j.estimate_s / 60)
        more = f" (and {len(short) - 1} more chunks)" if len(short) > 1 else ""
        problems.append(one_line(
            f"numaplace: chunk {j.chunk}{more} would get {j.runtime_min:g} min of walltime, and the plan "
            f"estimates {need} min for its {j.runs} runs: {scheduler or 'the scheduler'} would kill it at its "
            f"limit; nothing was submitted; give it at least {need} min (--set-resources measure:runtime="
            f"{need}, or cluster.runtime_scale in the platform file) or cut chunks smaller "
            "(rounds: {chunk_runs: N} in the study)"))
    again = [j for j in jobs if j.chunk and j.killed_at_min and j.runtime_min
             and float(j.runtime_min) <= j.killed_at_min]
    if again:
        j = again[0]
        problems.append(one_line(
            f"numaplace: chunk {j.chunk} was killed at its {j.killed_at_min} min limit last time, and would get "
            f"{j.runtime_min:g} min again; nothing was submitted; give it more (--set-resources "
            f"measure:runtime={2 * j.killed_at_min}) or cut chunks smaller (rounds: {{chunk_runs: N}})"))
    return problems


# -- in the workflow's main process -----------------------------------------------

class _Watch(logging.Handler):
    """Turns the Slurm plugin's error reports (which `quiet: [rules]` hides) into
    numaplace's line, and keeps a chunk's time-limit kill."""

    def __init__(self, say, run=_run, which=shutil.which):
        super().__init__(logging.ERROR)
        self.say, self.run, self.which = say, run, which

    def emit(self, record):
        try:
            self._explain(record)
        except Exception as e:       # never the workflow's end: its own line instead
            self.say(one_line(f"numaplace: could not tell why a cluster job failed ({e})"))

    def _explain(self, record):
        event = str(getattr(record, "event", "") or "")
        if event.endswith("JOB_ERROR") or event == "job_error":
            failure = from_plugin_message(getattr(record, "rule_msg", None), self.run, self.which)
            jobs = [(getattr(record, "rule_name", "?"), getattr(record, "output", None) or [])]
        elif event.endswith("GROUP_ERROR") or event == "group_error":
            # Snakemake drops the plugin's message for a group; its Slurm log names the job
            ids = [m.group(1) for a in getattr(record, "aux_logs", None) or []
                   for m in [re.search(r"(\d+)\.log$", str(a))] if m]
            failure = slurm_failure(ids[0], None, self.run, self.which) if ids else None
            jobs = [(i.get("rule_name", "?"), i.get("output") or []) for i in getattr(record, "job_error_info", [])]
        else:
            return
        if failure is None:
            return       # a local job (its own line), or cluster-generic: pbs-status has spoken
        partitions = known_queues(failure.scheduler, self.run, self.which) if failure.cause == REJECTED else None
        for rule, output in jobs:
            what, chunk, results = what_of(rule, output)
            next_min = None
            if chunk and failure.cause == TIMEOUT and failure.limit_min:
                remember_timeout(results, chunk, failure)
                next_min = 2 * failure.limit_min
            self.say(line(failure, what, chunk, partitions, next_min=next_min))


def watch(logger, say=None):
    """Hang the handler on Snakemake's logger; returns it (to take it off again)."""
    def to_console_and_log(text):
        # not logger.warning: a record logged from inside a handler does not reach
        # Snakemake's console handler; the log file's handler is called directly
        sys.stderr.write(text + "\n")
        for h in logger.handlers:
            if isinstance(h, logging.FileHandler):
                h.handle(logger.makeRecord(logger.name, logging.WARNING, __file__, 0, text, None, None))
    handler = _Watch(say or to_console_and_log)
    logger.addHandler(handler)
    return handler
