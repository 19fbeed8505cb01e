"""Were the run's CPUs idle before it, and what did others spend on them during it
(/proc/stat jiffies). A light module: the runner opens its idle window with it before
importing anything else (see cli._run)."""
from __future__ import annotations

import os
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


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


IDLE_WINDOW_S = 0.1


class IdleWindow:
    """An idle check's window opened when the runner starts: the runner first moves to
    CPUs outside the placement, so its own start-up (imports, set-up) is not counted
    and the check only waits for what is left of the window. `affinity` is the runner's
    CPU mask before the move: the probe and the benchmark are started with it."""

    def __init__(self, affinity, jiffies, opened, free=None):
        self.affinity, self.jiffies, self.opened = affinity, jiffies, opened
        self.free = free or affinity

    @classmethod
    def leave(cls, cpus, affinity=None):
        """Move off `cpus` and open the window; None where no other CPU is allowed.
        `affinity`: the mask to start the probe and benchmark with (default: this
        thread's now; a chunk of runs gives its own, the job's whole mask)."""
        affinity = affinity or os.sched_getaffinity(0)
        free = affinity - set(cpus)
        if not free:
            return None
        os.sched_setaffinity(0, free)
        return cls(affinity, cpu_jiffies(), time.monotonic(), free)

    def stay_off(self):
        """Off the run's CPUs again (a chunk's work between two runs, while the window is open)."""
        os.sched_setaffinity(0, self.free)


def cpu_busy(seconds=IDLE_WINDOW_S, since=None):
    """Busy fraction per CPU over a short window (or over the IdleWindow `since`, made up
    to `seconds` long)."""
    if since is None:
        a = cpu_jiffies()
        time.sleep(seconds)
    else:
        a = since.jiffies
        time.sleep(max(0.0, seconds - (time.monotonic() - since.opened)))
    b = cpu_jiffies()
    return {c: round((b[c][0] - a[c][0]) / max(b[c][1] - a[c][1], 1), 3) for c in b if c in a}


def own_cpu_s():
    """CPU seconds this process (every thread) and its reaped children have spent."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class LoadWindow:
    """The machine's load over a window in which numaplace itself works (the workflow
    reading the study and building its DAG): what this process spends meanwhile is taken
    off the CPUs' busy time, so the window costs no wait of its own when it is long enough."""

    def __init__(self):
        self.jiffies, self.opened, self.own = cpu_jiffies(), time.monotonic(), own_cpu_s()

    def foreign_busy(self, cpus, seconds):
        """Share of `cpus`' time that others took since the window opened (made up to
        `seconds` long): jiffy resolution, this process's own CPU time subtracted."""
        time.sleep(max(0.0, seconds - (time.monotonic() - self.opened)))
        b, own = cpu_jiffies(), own_cpu_s() - self.own
        cpus = [c for c in cpus if c in b and c in self.jiffies]
        busy = sum(b[c][0] - self.jiffies[c][0] for c in cpus)
        total = sum(b[c][1] - self.jiffies[c][1] for c in cpus)
        return round(max(0.0, busy - own * CLK_TCK) / max(total, 1), 3)


def idle_check(cpus, busy_max, wait, mode, since=None):
    """(idle?, evidence). With mode refuse, waits up to `wait` seconds for idleness. The
    first window may be one opened earlier (`since`: an IdleWindow)."""
    deadline = time.monotonic() + (wait if mode == "refuse" else 0)
    while True:
        opened, at = (time.monotonic(), "check") if since is None else (since.opened, "start-up")
        busy = cpu_busy(since=since)
        window = time.monotonic() - opened
        since = None
        load = os.getloadavg()
        hot = {c: b for c, b in busy.items() if c in cpus and b > busy_max}
        evidence = {"busy": {str(c): b for c, b in busy.items()}, "loadavg": load,
                    "busy_max": busy_max, "busy_cpus": {str(c): b for c, b in hot.items()},
                    "window_s": round(window, 3), "window_opened": at}
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
