"""One measured run: machine lock → idle check → placement probe → launch under capture
→ record.

Every outcome is a record (ok, unverified, failed, timeout, placement-failed,
not-idle, build-failed; not-needed: a run adaptive repetitions skipped); the record
is written atomically at the end, so an interrupted run never
leaves something that looks complete.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from numaplace.machine import system
from numaplace.run import counters
from numaplace.run.capture import Sampler, numastat_delta, numastat_system
from numaplace.machine.guard import AncestorWatch, die_with_parent, machine_lock, snakemake_ancestor
from numaplace.machine.idle import cpu_jiffies, foreign_load, idle_check
from numaplace.kinds.program import from_spec
from numaplace.core.schema import Section
from numaplace.plan.launch import LAUNCHERS, MEMORY_POLICIES, SCRUBBED_ENV
from numaplace.run.pages_over_time import pages_over_time
from numaplace.plan.placement import Placement
from numaplace.record.store import VERSION as RECORD_VERSION, kind_facts, set_aside, write_record
from numaplace.machine.topology import from_sysfs


def now():
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def host_facts():
    uts = os.uname()        # what socket.gethostname() and platform.release()/machine() read
    facts = {"host": uts.nodename, "kernel": uts.release, "machine": uts.machine}
    for k in ("SLURM_JOB_ID", "SLURMD_NODENAME", "SLURM_JOB_NODELIST", "PBS_JOBID", "PBS_NODEFILE"):
        if k in os.environ:
            facts[k.lower()] = os.environ[k]
    return facts


# when this process (a measure job) started: the walltime is the job's, shared by its runs
JOB_STARTED = time.monotonic()


def effective_timeout(runcfg, environ=os.environ):
    """The study's per-run timeout, cut short inside a batch job so that the runner, not
    the scheduler, ends a hung run (and records it) before the walltime runs out: the
    job's walltime less what its earlier runs took."""
    timeout = Section("run", runcfg)["timeout"]
    walltime = environ.get("NUMAPLACE_WALLTIME_MIN")
    if walltime and any(k in environ for k in ("SLURM_JOB_ID", "PBS_JOBID")):
        left = 60 * float(walltime) - (time.monotonic() - JOB_STARTED)
        timeout = min(timeout, max(30, left - 150))
    return timeout


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_ENV)}
    env.update(extra)
    return env


class Interrupted(Exception):
    pass


def on_interrupt(signum, frame):
    raise Interrupted(f"signal {signum}")


def execute_build(spec, build_record, record_path, window=None, held_lock=None, **more):
    """Run spec with the binary of a build record (numaplace build); a failed build gives
    the run a `build-failed` record carrying the build's reason, and nothing executes.
    `more`: execute's keywords (a chunk's: probed, ended, extra)."""
    build = json.loads(Path(build_record).read_text())
    if build["status"] == "ok":
        return execute(spec, build["binary"], record_path, window, held_lock, **more)
    if held_lock is not None:
        os.close(held_lock)                   # nothing to measure: the lock goes at once
    if window is not None:
        os.sched_setaffinity(0, window.affinity)
    record_path = Path(record_path)
    record_path.parent.mkdir(parents=True, exist_ok=True)
    rec = {**_record_head(spec), "binary": build["binary"], "argv": spec["argv"], "env": spec["env"],
           **host_facts(), "build": build,
           "capture_settings": spec.get("capture", {}), "run_settings": spec.get("run", {}),
           "status": "build-failed", "reason": build["reason"], "output": None, "captures": None,
           "captures_note": "the run did not execute: its binary could not be built",
           "finished": now(), **more.get("extra", {})}
    set_aside(record_path.parent)        # an earlier attempt's files: attempts/<n>/ or interrupted/
    write_record(record_path, rec)
    return rec


def record_not_needed(spec, record_path, reason, extra=None):
    """A run that adaptive repetitions found not needed (its case decided by the earlier
    rounds: numaplace.judge.separation): a record of status not-needed carrying the reason,
    written as every record is (write-protected, kept, with its definition: a chunk
    started again keeps it byte for byte). Nothing executes, no lock is taken."""
    record_path = Path(record_path)
    record_path.parent.mkdir(parents=True, exist_ok=True)
    rec = {**_record_head(spec), "argv": spec["argv"], "env": spec["env"], **host_facts(),
           "capture_settings": spec.get("capture", {}), "run_settings": spec.get("run", {}),
           "status": "not-needed", "reason": reason, "output": None, "captures": None,
           "captures_note": "the run did not execute: adaptive repetitions found it not needed",
           "finished": now(), **(extra or {})}
    set_aside(record_path.parent)        # an earlier attempt's files: attempts/<n>/ or interrupted/
    write_record(record_path, rec)
    return rec


def definition_digest(spec):
    """The run's definition (its params from the plan) as one hash, kept in its record: a
    chunk measures again only the runs whose record has another (numaplace.run.chunk)."""
    import hashlib
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def _record_head(spec):
    """The fields every record starts with: which run of which study it is."""
    return {"record_version": RECORD_VERSION, **{k: spec[k] for k in
            ("run_id", "study", "bench", "class", "variant", "rep", "placement")},
            "kind": kind_facts(from_spec(spec).name), "definition_sha256": definition_digest(spec),
            **({"program": spec["program"]} if spec.get("program") else {})}


def execute(spec, binary, record_path, window=None, held_lock=None, probed=None, ended=None, extra=None):
    """Run spec (the plan's run params) with `binary`; write the record; return it.
    `window`: the idle.IdleWindow the command opened at start-up, with the machine lock
    it took just before (`held_lock`), if any. A chunk of runs in one process
    (numaplace.run.chunk) also gives `probed`, the probe commands that passed earlier in
    it (each placement is probed once per chunk), `ended`, called as the benchmark has
    been reaped, before its record is written (the next run's idle window opens there),
    and `extra`, fields for the record (where in its chunk the run was)."""
    # Snakemake stops jobs with SIGTERM/SIGINT: kill the benchmark, leave no record.
    # Handlers and CPU affinity are the caller's again afterwards.
    sigs = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {sig: signal.signal(sig, on_interrupt) for sig in sigs}
    own_cpus = window.affinity if window else os.sched_getaffinity(0)
    try:
        # No other measured run on this machine meanwhile: the lock spans the study's
        # kernel.numa_balancing (set, then restored, system.py) and the settings read.
        with machine_lock(held=held_lock) as waited, \
                system.balancing_for_run(spec.get("system"), system.state_file()):
            return _Run(spec, binary, record_path, lock_wait_s=waited, own_cpus=own_cpus,
                        window=window, probed=probed, ended=ended, extra=extra).execute()
    finally:
        os.sched_setaffinity(0, own_cpus)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Run:
    """One measured run, step by step; every step that ends the run writes its record."""

    def __init__(self, spec, binary, record_path, lock_wait_s=0.0, own_cpus=None, window=None,
                 probed=None, ended=None, extra=None):
        self.own_cpus = own_cpus or os.sched_getaffinity(0)
        self.window = window                   # an idle.IdleWindow opened at start-up
        self.probed = probed if probed is not None else set()
        self.ended = ended
        self.record_path = Path(record_path)
        self.rundir = self.record_path.parent
        self.binary = Path(binary).resolve()
        self.kind = from_spec(spec)
        self.placement = Placement.from_dict(spec["placement"])
        self.launcher = LAUNCHERS[self.placement.launcher]
        self.capture = Section("capture", spec.get("capture", {}))
        self.runcfg = Section("run", spec.get("run", {}))
        self.argv = [str(self.binary) if a == "BINARY" else a for a in spec["argv"]]
        self.counting = None                   # perf stat around the run (run.counters), when asked
        self.env = dict(spec["env"])
        self.rec = {**_record_head(spec), "binary": str(self.binary), "argv": self.argv,
                    "env": self.env, "env_scrubbed": list(SCRUBBED_ENV),
                    "cwd": str(self.rundir / "work"), **host_facts(), "topology": from_sysfs().to_dict(),
                    "system": system.at_start(),
                    "capture_settings": self.capture, "run_settings": self.runcfg,
                    "lock_wait_s": lock_wait_s, **(extra or {}), "status": None, "reason": None}
        # what the policy's judgement needs of the machine (weighted interleave: the weights)
        self.rec["system"].update(MEMORY_POLICIES[self.placement.memory.policy].facts())

    def execute(self):
        self.rundir.mkdir(parents=True, exist_ok=True)
        set_aside(self.rundir)               # an earlier attempt's files: attempts/<n>/ or interrupted/
        (self.rundir / "work").mkdir()          # clean cwd: no mg.input, no timer.flag
        if not self.launcher.on_measured_node:
            self.rec["host_note"] = (f"{self.launcher.name}: host, kernel and topology describe the "
                                     "launch node; the run executes on a compute node")
        return self.check_idle() or self.probe() or self.measure()

    def finish(self, status, reason=None):
        self.rec["status"], self.rec["reason"] = status, reason
        system.at_end(self.rec["system"])        # numa_balancing again, migration counters
        self.rec["finished"] = now()
        write_record(self.record_path, self.rec)
        return self.rec

    def check_idle(self):
        """With idle_check refuse, a run on busy CPUs ends here (not-idle)."""
        mode = self.runcfg["idle_check"] if self.launcher.on_measured_node else "off"
        if mode != "off":
            idle, evidence = idle_check(self.placement.cpus, self.runcfg["idle_busy_max"],
                                        self.runcfg["idle_wait"], mode, since=self.window)
            self.rec["idle"] = {"idle": idle, **evidence}
            if not idle and mode == "refuse":
                return self.finish("not-idle", f"CPUs busy before the run: {evidence['busy_cpus']}")
        self.rec["loadavg_before"] = os.getloadavg()
        os.sched_setaffinity(0, self.own_cpus)   # the probe and the benchmark inherit it
        return None

    def probe(self):
        """The launcher applies the placement to `true` first: a placement this machine
        refuses ends here (placement-failed), before the benchmark starts."""
        probe = self.launcher.probe(self.placement)
        if not probe or tuple(probe) in self.probed:
            return None
        pr = subprocess.run(probe, capture_output=True, text=True, env=clean_env(self.env))
        if pr.returncode == 0:
            self.probed.add(tuple(probe))
            return None
        self.rec["probe"] = {"argv": probe, "exit_status": pr.returncode, "stderr": pr.stderr[-2000:]}
        return self.finish("placement-failed", f"{probe[0]} refused the placement: "
                           f"{(pr.stderr or pr.stdout).strip()[:300]}")

    def measure(self):
        cap, local = self.capture, self.launcher.on_measured_node
        numastat = cap["numastat"] and local
        before = numastat_system() if numastat else None
        sampler = None
        if local and (cap["numa_maps"] or cap["threads"]):
            sampler = lambda pid: Sampler(pid, self.rundir, cap["interval_min"], cap["interval_max"],  # noqa: E731
                                          cap["numa_maps"], cap["threads"], cap["numastat"],
                                          exe=self.binary)
        self.counting, not_counted = counters.for_run(cap, self.launcher, self.rundir)
        if not_counted:
            self.rec["counters"] = not_counted
        rc, timed_out, sampler = self.launch(sampler)
        if self.counting:
            rc = self.rec["exit_status"] = self.counting.exit_status(rc, self.rundir / "stderr")
            self.rec["counters"] = self.counting.result(timed_out)
        if numastat:
            after = numastat_system()
            self.rec["numastat"] = {"system_before": before, "system_after": after,
                                    "system_delta": numastat_delta(before, after),
                                    "note": "system-wide counters: include every process on the machine"}
        if sampler:
            sampler.write()
            self.rec["captures"] = sampler.summary()
            self.rec["captures"]["pages_over_time"] = pages_over_time(sampler.samples)
        else:
            self.rec["captures"] = None
            self.rec["captures_note"] = (f"{self.launcher.name}: the process runs on a compute node; "
                                         "capture not available") if not local else "capture switched off"
        stdout = (self.rundir / "stdout").read_text(errors="replace")
        self.rec["output"] = self.kind.parse(stdout)
        self.kind.complete_output(self.rec["output"], self.rec)
        if timed_out:
            return self.finish("timeout", f"killed after {self.rec['timeout_s']:g} s")
        status, reason = self.kind.outcome(self.rec["output"], rc)
        if status == "failed" and rc != 0:
            tail = (self.rundir / "stderr").read_text(errors="replace").strip()[-300:]
            reason += f": {tail}" if tail else ""
        return self.finish(status, reason)

    def launch(self, make_sampler):
        """Start the benchmark in a session of its own, sample it from CPUs outside the
        placement, reap it (wait4: exact end time, peak RSS); kill it at the timeout or
        when the runner is interrupted. Returns (exit status, timed out?, sampler)."""
        timeout = effective_timeout(self.runcfg)
        self.rec["timeout_s"] = timeout
        self.rec["started"] = now()
        ancestor = snakemake_ancestor()
        self_before, jiffies_before = os.times(), cpu_jiffies()
        t0 = time.monotonic()
        with open(self.rundir / "stdout", "w") as out, open(self.rundir / "stderr", "w") as err:
            argv = self.counting.wrap(self.argv) if self.counting else self.argv
            proc = subprocess.Popen(argv, cwd=self.rundir / "work", env=clean_env(self.env),
                                    stdout=out, stderr=err, start_new_session=True,
                                    preexec_fn=die_with_parent)
            kill = lambda: os.killpg(proc.pid, signal.SIGKILL)   # noqa: E731
            free = set(os.sched_getaffinity(0)) - set(self.placement.cpus)
            if free:                                 # keep the sampler off the benchmark's CPUs
                os.sched_setaffinity(0, free)
            # under perf stat the benchmark is perf's child
            sampler = make_sampler(self.counting.workload_pid(proc.pid) if self.counting else proc.pid) \
                if make_sampler else None
            if sampler:
                sampler.start()
            watch = AncestorWatch(ancestor, kill) if ancestor else None
            if watch:
                watch.start()
            timed_out = False
            reaper = _Reaper(proc)
            try:
                reaped = reaper.result(timeout)
                if reaped is None:
                    timed_out = True
                    kill()
                    reaped = reaper.result(None)
            except BaseException:                    # interrupted: no record, kill the run
                kill()
                raise
            finally:
                if watch:
                    watch.stop()
            rc, usage, t_end = reaped
            if self.ended:
                self.ended()
            if sampler:
                sampler.stop()
                sampler.join()
        if watch and watch.gone:
            raise Interrupted(f"Snakemake (pid {ancestor[0]}) is gone: the benchmark was stopped")
        self.rec["wall_s"] = round(t_end - t0, 4)
        self.rec["max_rss_kb"] = usage.ru_maxrss         # of the launcher chain's largest process
        self.rec["ended"] = now()
        self.rec["exit_status"] = rc
        # the sampler's CPU time counts as the run's own only where it shared the run's CPUs
        self_after = os.times()
        own = usage.ru_utime + usage.ru_stime + (0 if free else (
            self_after.user - self_before.user + self_after.system - self_before.system))
        self.rec["foreign_load"] = foreign_load(jiffies_before, cpu_jiffies(), self.placement.cpus,
                                                self.rec["wall_s"], own)
        return rc, timed_out, sampler


class _Reaper(threading.Thread):
    """Reaps one child with os.wait4 in a thread of its own: the end time is exact
    (Popen.wait polls with growing sleeps) and the rusage gives the peak RSS."""

    def __init__(self, proc):
        super().__init__(daemon=True)
        self.proc, self.reaped = proc, None
        self.start()

    def run(self):
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.reaped = (os.waitstatus_to_exitcode(status), usage, time.monotonic())
        self.proc.returncode = self.reaped[0]    # Popen must not reap it again

    def result(self, timeout):
        """(exit status, rusage, end time), or None while still running after timeout."""
        self.join(timeout)
        return self.reaped
