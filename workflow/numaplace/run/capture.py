"""Captures taken while a run executes: numa_maps samples, per-thread CPUs, numastat.

Sampling starts once the launcher has exec'd the benchmark (before that /proc/<pid>
is numactl's or taskset's) and is adaptive: dense while the process's data footprint
changes (first touch decides where pages land), backing off geometrically to
interval_max once it is steady. Reading numa_maps walks the page tables under the
process's memory-map lock (tens of ms for GiBs), so the interval never drops below
1/duty_max times the last read's CPU cost (the page-table walk the benchmark feels); the
whole sample (read, parsing, threads) is held to duty_max of a CPU as well while the
sampler shares CPUs with the benchmark, and to duty_free when it runs on CPUs the
benchmark's threads may not use (the runner moves itself off the placement's CPUs
when there are free ones). Per thread it records the CPU of every sample (field 39 of
/proc/<pid>/task/<tid>/stat) under the affinity mask the thread had then.
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
import time
from pathlib import Path

from numaplace.run import numa_maps
from numaplace.core.cpulist import format_cpulist, parse_cpulist

STEADY = 0.01          # two samples within 1 % of each other: the footprint is steady


def read_numa_maps(pid):
    with open(f"/proc/{pid}/numa_maps") as f:
        return f.read()


def thread_cpus(pid):
    """tid → (CPU last run on, affinity mask as a CPU list) for every thread of pid.

    ProcessLookupError once the process is gone."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        raise ProcessLookupError(pid) from None
    out = {}
    for tid in tids:
        try:
            # the mask first: a thread bound between the two reads then shows its
            # new CPU under its old mask, never an old CPU under its new mask
            allowed = format_cpulist(os.sched_getaffinity(int(tid)))
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except (FileNotFoundError, ProcessLookupError):
            continue                                    # the thread has just exited
        # comm (field 2) may contain spaces and ')': fields after the last ')' start at 3
        fields = stat[stat.rindex(")") + 2:].split()
        out[int(tid)] = (int(fields[39 - 3]), allowed)   # field 39: processor
    return out


class Sampler(threading.Thread):
    """Samples numa_maps and thread CPUs of one process until it exits."""

    def __init__(self, pid, outdir, interval_min=0.005, interval_max=5.0,
                 numa_maps_on=True, threads_on=True, numastat_on=True, exe=None,
                 duty_max=0.05, duty_free=0.25):
        super().__init__(daemon=True)
        self.pid, self.outdir = pid, Path(outdir)
        self.imin, self.imax = interval_min, max(interval_max, interval_min)
        self.duty_max, self.duty_free = duty_max, duty_free
        self.shared_cpus = True            # does the sampler share CPUs with the benchmark?
        self.own_cpus = frozenset(os.sched_getaffinity(0))
        self.numa_maps_on, self.threads_on, self.numastat_on = numa_maps_on, threads_on, numastat_on
        self.stop_event = threading.Event()
        self.samples = []       # {"t", "data_bytes", "total_bytes", "policies", "threads"}
        self.threads = {}       # tid → {"cpus": {cpu: n}, "by_allowed": {mask: {cpu: n}}, "allowed": last mask}
        self.peak = self.steady = None     # sample dicts
        self.peak_text = self.steady_text = None   # raw numa_maps of those samples
        self.numastat_p = None
        self.numastat_p_bytes = 0          # data footprint when numastat -p was taken
        self.numastat_p_takes = 0
        self.read_seconds = 0.0            # reading numa_maps
        self.sample_seconds = 0.0          # whole samples (reads, parsing, threads)
        self.last_sample_cost = self.last_read_cost = 0.0
        self.errors = []
        self.exec_seen = None
        self.team = 0
        self.t0 = time.monotonic()
        self.exe = str(exe) if exe else None   # sample only once the launcher exec'd it

    def _wait_for_exec(self):
        """True once /proc/<pid>/exe is the benchmark; False if the process ended first."""
        if not self.exe:
            return True
        wait, seen = 0.0002, None
        while not self.stop_event.is_set():
            try:
                seen = os.readlink(f"/proc/{self.pid}/exe")
            except OSError:
                break                                    # exited (or a zombie) before exec
            if seen == self.exe:
                return True
            self.stop_event.wait(wait)
            wait = min(wait * 2, 0.002)
        self.errors.append(f"the process never ran {self.exe} while sampled (last exe: {seen})")
        return False

    def _sample(self):
        """One sample; returns its data footprint in bytes (None without numa_maps)."""
        # costs in this thread's CPU time: a read slowed by CPU starvation or by pages
        # migrating must not stretch the interval past the run (it would hide the move)
        s0 = time.thread_time()
        sample = {"t": round(time.monotonic() - self.t0, 4)}
        text = None
        if self.numa_maps_on:
            text = read_numa_maps(self.pid)
            self.last_read_cost = time.thread_time() - s0
            self.read_seconds += self.last_read_cost
            if not text:
                raise ProcessLookupError(self.pid)     # an exiting process has no mappings
            try:
                s = numa_maps.summarize(numa_maps.parse(text))
            except ValueError as e:                    # keep sampling threads; say why
                self.errors.append(f"numa_maps: {e}")
                self.numa_maps_on, text = False, None
            else:
                sample.update(data_bytes=s["data_bytes"], data_pages=s["data_pages"],
                              total_bytes=s["total_bytes"], policies=s["policies"])
        if self.threads_on:
            tc = thread_cpus(self.pid)
            self.team = max(self.team, len(tc))
            sample["threads"] = len(tc)
            sample["team"] = self.team             # most threads alive at once so far
            masks = set()
            for tid, (cpu, allowed) in tc.items():
                masks.add(allowed)
                th = self.threads.setdefault(tid, {"cpus": {}, "by_allowed": {}, "allowed": allowed})
                th["cpus"][cpu] = th["cpus"].get(cpu, 0) + 1
                per = th["by_allowed"].setdefault(allowed, {})
                per[cpu] = per.get(cpu, 0) + 1
                th["allowed"] = allowed
            self.shared_cpus = any(_cpus_of(m) & self.own_cpus for m in masks)
        self.last_sample_cost = time.thread_time() - s0
        self.sample_seconds += self.last_sample_cost
        if text is None:
            self.samples.append(sample)
            return None
        data = sum(sample["data_bytes"].values())
        prev = self.samples[-1] if self.samples else None
        self.samples.append(sample)
        if self.peak is None or data > sum(self.peak["data_bytes"].values()):
            self.peak, self.peak_text = sample, text
        if prev and "data_bytes" in prev and data and _steady(sum(prev["data_bytes"].values()), data):
            self.steady, self.steady_text = sample, text
        return data

    def _confirmed_with_team(self):
        """The last sample confirmed the steady footprint, with more than one thread alive
        and as many as in the sample before (the OpenMP team is up)."""
        if len(self.samples) < 2 or self.steady is not self.samples[-1]:
            return False
        now, before = self.samples[-1].get("threads") or 0, self.samples[-2].get("threads") or 0
        return now > 1 and now == before

    def _numastat(self, data):
        try:
            self.numastat_p = subprocess.run(["numastat", "-p", str(self.pid)], capture_output=True,
                                             text=True, timeout=30).stdout
            self.numastat_p_bytes = data
            self.numastat_p_takes += 1
        except (OSError, subprocess.SubprocessError) as e:
            self.errors.append(f"numastat -p: {e}")
            self.numastat_on = False

    def run(self):
        if not self._wait_for_exec():
            return
        self.exec_seen = round(time.monotonic() - self.t0, 4)
        self.own_cpus = frozenset(os.sched_getaffinity(0))
        interval, last = self.imin, None
        while not self.stop_event.is_set():
            try:
                data = self._sample()
            except (FileNotFoundError, ProcessLookupError):
                break                                   # the process has exited
            except PermissionError as e:                # ptrace access mode refused
                self.errors.append(f"cannot read /proc/{self.pid}: {e}")
                break
            except (OSError, ValueError) as e:
                self.errors.append(f"{type(e).__name__}: {e}")
                break
            # without numa_maps (threads only) there is no footprint: just back off
            steady = data is None or (last is not None and _steady(last, data))
            read_cost, cost = self.last_read_cost, self.last_sample_cost
            if steady and data and self.numastat_on and self.numastat_p_takes < 3 and \
                    data > 1.05 * self.numastat_p_bytes:
                self._numastat(data)                    # steady: take the per-process view
            interval = min(interval * 2, self.imax) if steady else self.imin
            if steady and self.shared_cpus and self._confirmed_with_team():
                # each wake-up preempts a benchmark thread (an OpenMP team waits for it):
                # once the footprint is confirmed steady with the team running, stay away
                interval = self.imax
            interval = max(interval, read_cost / self.duty_max,
                           cost / (self.duty_max if self.shared_cpus else self.duty_free))
            last = data
            self.stop_event.wait(interval)

    def stop(self):
        self.stop_event.set()

    def write(self):
        """Raw evidence next to the record: the samples and the peak/steady numa_maps."""
        self.outdir.mkdir(parents=True, exist_ok=True)
        with open(self.outdir / "numa_maps.samples.jsonl", "w") as f:
            for s in self.samples:
                f.write(json.dumps(s) + "\n")
        if self.peak_text:
            (self.outdir / "numa_maps.peak.txt").write_text(self.peak_text)
        if self.steady_text and self.steady is not self.peak:
            (self.outdir / "numa_maps.steady.txt").write_text(self.steady_text)
        if self.numastat_p:
            (self.outdir / "numastat.process.txt").write_text(self.numastat_p)

    def summary(self):
        def view(s):
            if not s or "data_bytes" not in s:
                return None
            return {"t": s["t"], "data_bytes": _str_keys(s["data_bytes"]),
                    "data_pages": _str_keys(s["data_pages"]),
                    "total_bytes": _str_keys(s["total_bytes"]), "policies": s["policies"],
                    "threads": s.get("threads"), "team": s.get("team")}
        return {
            "numa_maps": {
                "samples": len(self.samples),
                "read_seconds": round(self.read_seconds, 4),
                "sample_seconds": round(self.sample_seconds, 4),
                "exec_seen_s": self.exec_seen,
                "peak": view(self.peak),
                # the last sample whose footprint equalled the one before it: the
                # working set the run settled on (what fidelity judges)
                "steady": view(self.steady),
                "last": view(next((s for s in reversed(self.samples) if "data_bytes" in s), None)),
            },
            "threads": {str(tid): {"cpus": _str_keys(v["cpus"]), "allowed": v["allowed"],
                                   "by_allowed": {m: _str_keys(c) for m, c in v["by_allowed"].items()}}
                        for tid, v in sorted(self.threads.items())},
            "team": self.team if self.threads_on else None,
            "sampler_cpus": format_cpulist(self.own_cpus),
            "sampler_shared_cpus": self.shared_cpus,
            "numastat_process_taken": self.numastat_p is not None,
            "errors": self.errors,
        }


@functools.lru_cache(maxsize=256)
def _cpus_of(mask):
    return frozenset(parse_cpulist(mask))


def _steady(before, now):
    return abs(now - before) <= STEADY * max(before, 1)


def _str_keys(d):
    return {str(k): v for k, v in sorted(d.items())}


NUMASTAT_COUNTERS = ("numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node")


def numastat_system(sysfs="/sys/devices/system/node"):
    """System-wide numastat counters: {counter: {node: pages}} (includes every process).

    Read from sysfs (what plain `numastat` prints, without a subprocess next to the
    run); the numastat command where sysfs has no per-node counters."""
    out = {}
    for d in sorted(Path(sysfs).glob("node[0-9]*")):
        try:
            text = (d / "numastat").read_text()
        except OSError:
            out = {}
            break
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k in NUMASTAT_COUNTERS and v.strip().isdigit():
                out.setdefault(k, {})[d.name[4:]] = int(v)
    if out:
        return {k: dict(sorted(v.items(), key=lambda kv: int(kv[0]))) for k, v in out.items()}
    try:
        text = subprocess.run(["numastat"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_numastat(text)


def parse_numastat(text):
    lines = [l.split() for l in text.splitlines() if l.strip()]
    if not lines:
        return None
    nodes = [int(h.replace("node", "")) for h in lines[0] if h.startswith("node")]
    out = {}
    for row in lines[1:]:
        if row[0] in NUMASTAT_COUNTERS:
            out[row[0]] = {str(n): int(v) for n, v in zip(nodes, row[1:])}
    return out


def numastat_delta(before, after):
    if not before or not after:
        return None
    return {k: {n: after[k][n] - before[k].get(n, 0) for n in after[k]}
            for k in after if k in before}
