"""What keeps a measured run to itself, and says when it was not.

* one measured run at a time on a machine, across Snakemake processes and studies
  (an flock that the kernel drops when its holder dies);
* the benchmark dies with its runner (parent-death signal), and the runner stops the
  benchmark when the Snakemake process that started it is gone (kill -9 of Snakemake
  would otherwise leave both running, overlapping the next run);
* idle check before a run, and the CPU time others spent on the run's CPUs during it.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
LOCK_NAME = "numaplace-measure.lock"
PR_SET_PDEATHSIG = 1


def lock_path():
    """Machine-wide: /run/lock (world-writable, sticky, on tmpfs), else the temp dir."""
    base = Path("/run/lock")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        base = Path(tempfile.gettempdir())
    return base / LOCK_NAME


@contextmanager
def machine_lock(path=None):
    """Hold the machine's measurement lock; yields the seconds spent waiting for it.
    Opened read-only, so a lock file created by root still serves other users."""
    path = Path(path or lock_path())
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)
    try:
        t0 = time.monotonic()
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield round(time.monotonic() - t0, 3)
    finally:
        os.close(fd)                 # releases the lock


def die_with_parent():
    """preexec_fn of the benchmark: SIGKILL when the runner dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _start_time(pid):
    """A live process's start time (clock ticks since boot): a pid plus this names one
    process, even after the pid is reused. None for a process that is gone or a zombie
    (killed, not yet reaped by its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def snakemake_ancestor(pid=None):
    """(pid, start time) of the nearest ancestor that is a Snakemake process, or None."""
    pid = os.getppid() if pid is None else pid
    while pid > 1:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        if b"snakemake" in cmdline:
            return pid, _start_time(pid)
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
    return None


class AncestorWatch(threading.Thread):
    """Calls on_gone() once if the watched process ends (polled: no pidfd for a
    non-child before Linux 5.3's pidfd_open, and polling costs ~10 µs a second)."""

    def __init__(self, ancestor, on_gone, interval=0.5):
        super().__init__(daemon=True)
        self.ancestor, self.on_gone, self.interval = ancestor, on_gone, interval
        self.gone = False
        self._stop = threading.Event()

    def run(self):
        pid, started = self.ancestor
        while not self._stop.wait(self.interval):
            if _start_time(pid) != started:
                self.gone = True
                self.on_gone()
                return

    def stop(self):
        self._stop.set()


def cpu_jiffies():
    """{cpu: (busy, total)} jiffies from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                v = list(map(int, line.split()[1:9]))
                idle = v[3] + v[4]
                out[int(line.split()[0][3:])] = (sum(v) - idle, sum(v))
    return out


def cpu_busy(seconds=0.1):
    """Busy fraction per CPU over a short window."""
    a = cpu_jiffies()
    time.sleep(seconds)
    b = cpu_jiffies()
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


def foreign_load(before, after, cpus, wall_s, own_cpu_s):
    """CPU seconds that something other than the run (benchmark + sampler, `own_cpu_s`)
    spent on the run's CPUs while it ran, and that as a share of the CPUs' time."""
    busy_s = sum(after[c][0] - before[c][0] for c in cpus if c in before and c in after) / CLK_TCK
    foreign = max(0.0, busy_s - own_cpu_s)
    capacity = max(wall_s * len(cpus), 1e-9)
    return {"cpu_s": round(foreign, 3), "share": round(min(foreign / capacity, 1.0), 4),
            "busy_cpu_s": round(busy_s, 3), "run_cpu_s": round(own_cpu_s, 3),
            "note": "jiffy resolution (1/%d s): shares below ~%.0f%% of short runs are noise"
                    % (CLK_TCK, 100 * 2 / CLK_TCK / max(wall_s, 1e-9))}


def is_disk_full(e):
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)
