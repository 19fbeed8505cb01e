"""Captures taken while a run executes: numa_maps samples, per-thread CPUs, numastat.

Sampling is adaptive: dense while the process's memory grows (that is when first
touch decides where pages land), then backing off geometrically once it is stable, so
the cost against NPB's own timer stays negligible (see benchmarks/).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

from . import numa_maps


def read_numa_maps(pid):
    with open(f"/proc/{pid}/numa_maps") as f:
        return f.read()


def thread_cpus(pid):
    """tid → (cpu last run on, allowed CPU list) for every thread of pid."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            allowed = re.search(r"Cpus_allowed_list:\s*(\S+)", (task / "status").read_text())
        except (FileNotFoundError, ProcessLookupError):
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        # field 39 of stat (1-based) is `processor`; fields after "comm)" start at 3
        out[int(task.name)] = (int(fields[39 - 3]), allowed.group(1) if allowed else None)
    return out


class Sampler(threading.Thread):
    """Samples numa_maps and thread CPUs of one process until it exits."""

    def __init__(self, pid, outdir, interval_min=0.005, interval_max=5.0,
                 numa_maps_on=True, threads_on=True, numastat_on=True, exe=None):
        super().__init__(daemon=True)
        self.pid, self.outdir = pid, Path(outdir)
        self.imin, self.imax = interval_min, interval_max
        self.numa_maps_on, self.threads_on, self.numastat_on = numa_maps_on, threads_on, numastat_on
        self.stop_event = threading.Event()
        self.samples = []             # (t, {node: data bytes}, {node: total bytes})
        self.threads = {}             # tid → {"cpus": {cpu: count}, "allowed": str}
        self.peak_text = None         # raw numa_maps at the largest data footprint
        self.peak_bytes = -1
        self.numastat_p = None
        self.read_seconds = 0.0
        self.errors = []
        self.t0 = time.monotonic()
        self.exe = str(exe) if exe else None   # sample only once the launcher exec'd it

    def _wait_for_exec(self):
        while self.exe and not self.stop_event.is_set():
            try:
                if os.readlink(f"/proc/{self.pid}/exe") == self.exe:
                    return True
            except OSError:
                return False
            time.sleep(0.0005)
        return not self.stop_event.is_set()

    def _sample(self):
        t = time.monotonic() - self.t0
        data = None
        if self.numa_maps_on:
            r0 = time.perf_counter()
            text = read_numa_maps(self.pid)
            self.read_seconds += time.perf_counter() - r0
            if not text:
                raise ProcessLookupError        # an exiting process has no mappings
            s = numa_maps.summarize(numa_maps.parse(text))
            data = s["data_bytes"]
            self.samples.append((round(t, 4), data, s["total_bytes"]))
            if sum(data.values()) > self.peak_bytes:
                self.peak_bytes, self.peak_text = sum(data.values()), text
        if self.threads_on:
            for tid, (cpu, allowed) in thread_cpus(self.pid).items():
                th = self.threads.setdefault(tid, {"cpus": {}, "allowed": allowed})
                th["cpus"][cpu] = th["cpus"].get(cpu, 0) + 1
        return data

    def _numastat(self):
        try:
            self.numastat_p = subprocess.run(["numastat", "-p", str(self.pid)], capture_output=True,
                                             text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError) as e:
            self.errors.append(f"numastat -p: {e}")

    def run(self):
        interval, last = self.imin, None
        if not self._wait_for_exec():
            return
        while not self.stop_event.is_set():
            try:
                data = self._sample()
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                break                                   # the process has exited
            except (OSError, ValueError) as e:
                self.errors.append(str(e))
                break
            total = sum(data.values()) if data else 0
            if last is not None and total and abs(total - last) <= 0.01 * max(last, 1):
                if self.numastat_on and self.numastat_p is None:
                    self._numastat()                    # memory settled: per-process view
                interval = min(interval * 2, self.imax)
            else:
                interval = self.imin
            last = total
            self.stop_event.wait(interval)

    def stop(self):
        self.stop_event.set()

    def write(self):
        """Raw evidence next to the record: the samples and the peak numa_maps."""
        self.outdir.mkdir(parents=True, exist_ok=True)
        with open(self.outdir / "numa_maps.samples.jsonl", "w") as f:
            for t, data, total in self.samples:
                f.write(json.dumps({"t": t, "data_bytes": data, "total_bytes": total}) + "\n")
        if self.peak_text:
            (self.outdir / "numa_maps.peak.txt").write_text(self.peak_text)
        if self.numastat_p:
            (self.outdir / "numastat.process.txt").write_text(self.numastat_p)

    def summary(self):
        peak = max(self.samples, key=lambda s: sum(s[1].values()), default=None)
        last = self.samples[-1] if self.samples else None
        return {
            "numa_maps": {
                "samples": len(self.samples),
                "read_seconds": round(self.read_seconds, 4),
                "peak": None if not peak else {"t": peak[0], "data_bytes": _str_keys(peak[1]),
                                               "total_bytes": _str_keys(peak[2])},
                "last": None if not last else {"t": last[0], "data_bytes": _str_keys(last[1])},
            },
            "threads": {str(tid): {"cpus": _str_keys(v["cpus"]), "allowed": v["allowed"]}
                        for tid, v in sorted(self.threads.items())},
            "numastat_process_taken": self.numastat_p is not None,
            "errors": self.errors,
        }


def _str_keys(d):
    return {str(k): v for k, v in sorted(d.items())}


NUMASTAT_COUNTERS = ("numa_hit", "numa_miss", "numa_foreign", "interleave_hit", "local_node", "other_node")


def numastat_system():
    """System-wide numastat counters: {counter: {node: pages}} (includes every process)."""
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
