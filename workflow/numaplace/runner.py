"""One measured run: idle check → placement probe → launch under capture → record.

Every outcome is a record (ok, unverified, failed, timeout, placement-failed,
not-idle, build-failed); the record is written atomically at the end, so an interrupted run never
leaves something that looks complete.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from . import membench_output, npb_output
from .build import MEMORY_BENCHES
from .capture import Sampler, numastat_delta, numastat_system
from .launch import LAUNCHERS, SCRUBBED_ENV
from .records import KEPT
from .topology import from_sysfs, parse_cpulist

RECORD_VERSION = 1


def now():
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


def cpu_busy(seconds=0.1):
    """Busy fraction per CPU over a short window, from /proc/stat."""
    def snap():
        out = {}
        for line in open("/proc/stat"):
            if line.startswith("cpu") and line[3].isdigit():
                f = line.split()
                vals = list(map(int, f[1:9]))
                idle = vals[3] + vals[4]
                out[int(f[0][3:])] = (sum(vals) - idle, sum(vals))
        return out
    a = snap()
    time.sleep(seconds)
    b = snap()
    return {c: round((b[c][0] - a[c][0]) / max(b[c][1] - a[c][1], 1), 3) for c in b if c in a}


def idle_check(cpus, busy_max, wait, mode):
    """(idle?, evidence). With mode refuse, waits up to `wait` seconds for idleness."""
    deadline = time.monotonic() + (wait if mode == "refuse" else 0)
    while True:
        busy = cpu_busy()
        load = os.getloadavg()
        hot = {c: b for c, b in busy.items() if c in cpus and b > busy_max}
        evidence = {"busy": {str(c): b for c, b in busy.items()}, "loadavg": load,
                    "busy_max": busy_max, "busy_cpus": {str(c): b for c, b in hot.items()}}
        if not hot or time.monotonic() >= deadline:
            return not hot, evidence
        time.sleep(2)


def host_facts():
    facts = {"host": socket.gethostname(), "kernel": platform.release(),
             "machine": platform.machine()}
    for k in ("SLURM_JOB_ID", "SLURMD_NODENAME", "SLURM_JOB_NODELIST", "PBS_JOBID", "PBS_NODEFILE"):
        if k in os.environ:
            facts[k.lower()] = os.environ[k]
    return facts


def effective_timeout(runcfg, environ=os.environ):
    """The study's per-run timeout, cut short inside a batch job so that the runner, not
    the scheduler, ends a hung run (and records it) before the walltime runs out."""
    timeout = runcfg.get("timeout", 3600)
    walltime = environ.get("NUMAPLACE_WALLTIME_MIN")
    if walltime and any(k in environ for k in ("SLURM_JOB_ID", "PBS_JOBID")):
        timeout = min(timeout, max(30, 60 * float(walltime) - 150))
    return timeout


def clean_env(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUBBED_ENV)}
    env.update(extra)
    return env


# KEPT: a second name (hard link) of every record written: when Snakemake deletes
# record.json to run the job again (its write protection does not stop root, nor
# --forcerun), the measurement survives under it and is set aside as an attempt.


def _set_aside_earlier(rundir):
    """Files of an earlier attempt in the run's folder are set aside before a new one:
    a complete attempt (its record kept under KEPT) into attempts/<n>/, still counted by
    the tables; an interrupted one (no record) into interrupted/<time>/, not mixed in."""
    leftovers = [p for p in rundir.iterdir() if p.name not in ("record.json", "attempts", "interrupted")]
    if not leftovers:
        return
    if (rundir / KEPT).exists():
        attempts = rundir / "attempts"
        n = len(list(attempts.glob("*"))) + 1 if attempts.exists() else 1
        dest = attempts / str(n)
    else:
        dest = rundir / "interrupted" / dt.datetime.now().strftime("%Y%m%dT%H%M%S")
    dest.mkdir(parents=True)
    for p in leftovers:
        shutil.move(str(p), dest / ("record.json" if p.name == KEPT else p.name))


def _write_record(path, rec):
    """Atomically, and under its second name KEPT too."""
    _write_json(path, rec)
    kept = path.parent / KEPT
    kept.unlink(missing_ok=True)
    os.link(path, kept)


class Interrupted(Exception):
    pass


def _interrupt(signum, frame):
    raise Interrupted(f"signal {signum}")


def execute_build(spec, build_record, record_path):
    """Run spec with the binary of a build record (numaplace build); a failed build gives
    the run a `build-failed` record carrying the build's reason, and nothing executes."""
    build = json.loads(Path(build_record).read_text())
    if build["status"] == "ok":
        return execute(spec, build["binary"], record_path)
    record_path = Path(record_path)
    record_path.parent.mkdir(parents=True, exist_ok=True)
    rec = {**_record_head(spec), "binary": build["binary"], "argv": spec["argv"], "env": spec["env"],
           **host_facts(), "build": build,
           "capture_settings": spec.get("capture", {}), "run_settings": spec.get("run", {}),
           "status": "build-failed", "reason": build["reason"], "captures": None,
           "captures_note": "the run did not execute: its binary could not be built",
           "finished": now()}
    _set_aside_earlier(record_path.parent)
    _write_record(record_path, rec)
    return rec


def _record_head(spec):
    """The fields every record starts with: which run of which study it is."""
    return {"record_version": RECORD_VERSION, **{k: spec[k] for k in
            ("run_id", "study", "bench", "class", "variant", "rep", "placement")}}


def _write_json(path, data):
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=False))
    os.replace(tmp, path)


def execute(spec, binary, record_path):
    """Run spec (the plan's run params) with `binary`; write the record; return it."""
    # Snakemake stops jobs with SIGTERM/SIGINT: kill the benchmark, leave no record.
    # Handlers and CPU affinity are the caller's again afterwards.
    sigs = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    previous = {sig: signal.signal(sig, _interrupt) for sig in sigs}
    own_cpus = os.sched_getaffinity(0)
    try:
        return _execute(spec, binary, record_path)
    finally:
        os.sched_setaffinity(0, own_cpus)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _execute(spec, binary, record_path):
    record_path = Path(record_path)
    rundir = record_path.parent
    rundir.mkdir(parents=True, exist_ok=True)
    _set_aside_earlier(rundir)
    workdir = rundir / "work"          # clean cwd: no mg.input, no timer.flag
    workdir.mkdir()
    binary = Path(binary).resolve()
    p = spec["placement"]
    cap, runcfg = spec.get("capture", {}), spec.get("run", {})
    argv = [str(binary) if a == "BINARY" else a for a in spec["argv"]]
    env_set = dict(spec["env"])
    cpus = parse_cpulist(p["cpus"])
    launcher = LAUNCHERS[p["launcher"]]

    rec = {**_record_head(spec), "binary": str(binary), "argv": argv,
           "env": env_set, "env_scrubbed": list(SCRUBBED_ENV), "cwd": str(workdir),
           **host_facts(), "topology": from_sysfs().to_dict(), "capture_settings": cap,
           "run_settings": runcfg, "status": None, "reason": None}

    def finish(status, reason=None):
        rec["status"], rec["reason"] = status, reason
        rec["finished"] = now()
        _write_record(record_path, rec)
        return rec

    local_capture = p["launcher"] != "aprun"     # aprun'd processes run on a compute node
    if not local_capture:
        rec["host_note"] = ("aprun: host, kernel and topology describe the launch (MOM) node; "
                            "the run executes on a compute node")
    mode = runcfg.get("idle_check", "flag") if local_capture else "off"
    if mode != "off":
        idle, evidence = idle_check(cpus, runcfg.get("idle_busy_max", 0.15),
                                    runcfg.get("idle_wait", 30), mode)
        rec["idle"] = {"idle": idle, **evidence}
        if not idle and mode == "refuse":
            return finish("not-idle", f"CPUs busy before the run: {evidence['busy_cpus']}")
    rec["loadavg_before"] = os.getloadavg()

    probe = launcher.probe(_PlacementView(p))
    if probe:
        pr = subprocess.run(probe, capture_output=True, text=True, env=clean_env(env_set))
        if pr.returncode != 0:
            rec["probe"] = {"argv": probe, "exit_status": pr.returncode, "stderr": pr.stderr[-2000:]}
            return finish("placement-failed", f"{probe[0]} refused the placement: "
                          f"{(pr.stderr or pr.stdout).strip()[:300]}")

    system_numastat = cap.get("numastat", True) and local_capture
    if system_numastat:
        rec_numastat_before = numastat_system()
    timeout = effective_timeout(runcfg)
    rec["timeout_s"] = timeout
    rec["started"] = now()
    t0 = time.monotonic()
    with open(rundir / "stdout", "w") as out, open(rundir / "stderr", "w") as err:
        proc = subprocess.Popen(argv, cwd=workdir, env=clean_env(env_set), stdout=out, stderr=err,
                                start_new_session=True)
        free = set(os.sched_getaffinity(0)) - set(cpus)
        if free:                                 # keep the sampler off the benchmark's CPUs
            os.sched_setaffinity(0, free)
        sampler = None
        if local_capture and (cap.get("numa_maps", True) or cap.get("threads", True)):
            sampler = Sampler(proc.pid, rundir, cap.get("interval_min", 0.005), cap.get("interval_max", 5.0),
                              cap.get("numa_maps", True), cap.get("threads", True), cap.get("numastat", True),
                              exe=binary)
            sampler.start()
        timed_out = False
        reaper = _Reaper(proc)
        try:
            reaped = reaper.result(timeout)
            if reaped is None:
                timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)
                reaped = reaper.result(None)
        except BaseException:                    # interrupted: no record, kill the run
            os.killpg(proc.pid, signal.SIGKILL)
            raise
        rc, usage, t_end = reaped
        if sampler:
            sampler.stop()
            sampler.join()
    rec["wall_s"] = round(t_end - t0, 4)
    rec["max_rss_kb"] = usage.ru_maxrss         # of the launcher chain's largest process
    rec["ended"] = now()
    rec["exit_status"] = rc
    if system_numastat:
        after = numastat_system()
        rec["numastat"] = {"system_before": rec_numastat_before, "system_after": after,
                           "system_delta": numastat_delta(rec_numastat_before, after),
                           "note": "system-wide counters: include every process on the machine"}
    if sampler:
        sampler.write()
        rec["captures"] = sampler.summary()
    else:
        rec["captures"] = None
        rec["captures_note"] = "aprun: the process runs on a compute node; capture not available"
    stdout = (rundir / "stdout").read_text(errors="replace")
    if spec["bench"] in MEMORY_BENCHES:         # membw/memlat: their own report format
        rec["kind"] = spec["bench"]
        rec["output"] = membench_output.parse(stdout)
        if timed_out:
            return finish("timeout", f"killed after {timeout:g} s")
        return finish(*membench_output.outcome(rec["output"], rc,
                                               (rundir / "stderr").read_text(errors="replace")))
    rec["npb"] = npb_output.parse(stdout)
    if timed_out:
        return finish("timeout", f"killed after {timeout:g} s")
    if rec["npb"]["complete"] and not rec["npb"]["verified"]:
        return finish("unverified", f"NPB verification UNSUCCESSFUL (exit status {rc})")
    if rc != 0:
        tail = (rundir / "stderr").read_text(errors="replace").strip()[-300:]
        return finish("failed", f"exit status {rc}" + (f": {tail}" if tail else ""))
    if not rec["npb"]["complete"]:
        return finish("failed", "no NPB report in stdout")
    return finish("ok")


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


class _PlacementView:
    """The launcher interface over a placement dict from the plan."""

    def __init__(self, d):
        from .placement import Memory
        self.cpus = tuple(parse_cpulist(d["cpus"]))
        self.order = tuple(int(c) for c in d["order"].split(",")) if d.get("order") else ()
        self.cpulist = d["cpus"]
        self.threads = d["threads"]
        self.binding = d["binding"]
        self.memory = Memory(d["memory"], tuple(parse_cpulist(d["memory_nodes"])) if d["memory_nodes"] else ())
