"""Per-run local and remote DRAM accesses from the CPU's core counters, through `perf stat`.

An optional capture (study `capture: {counters: true}`): pages say where a run's data
lives (numa_maps), counters say where its loads went. Where the machine can count them
(numaplace.machine.pmu: the events per CPU, and what the plan says where it cannot), the
runner starts the launch line under

    perf stat -x, -o <run folder>/perf.stat.csv -e <local>,<remote> -- <launch line>

(an argv list, never a shell: nothing of the study is parsed by one), and the record gets
the counted local and remote accesses and their remote share (record field `counters`);
the tables put the share numa_maps predicts beside it (predicted_remote_share: the run's
data pages on nodes where none of its threads ran, over all its data pages). Where it
cannot, a run asked to count records why (`counters.captured` false) and nothing else.

perf stat forks the launch line and exits with its exit status, but a run killed by a
signal leaves perf's status 0 and a line `<argv0>: <signal name>` on stderr: the
runner reads the signal back from it (exit_status), and samples perf's child, not perf.
perf's start (tens of ms) is in the run's wall_s, not in the benchmark's own time.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from numaplace.machine import pmu
from numaplace.machine.pmu import OUTPUT, SEP, event_name, parse


def counts(parsed, events):
    """{"local", "remote", "remote_share", "running_pct"} of an EventSet's two counters
    in parse()'s output, or None when either was not counted. remote_share: remote over
    local + remote (None when both are 0)."""
    first, remote = parsed.get(event_name(events.first)), parsed.get(event_name(events.remote))
    if not first or not remote or first["value"] is None or remote["value"] is None:
        return None
    r = int(round(remote["value"]))
    local = int(round(first["value"])) - (r if events.measures == "total" else 0)
    local = max(local, 0)
    return {"local": local, "remote": r,
            "remote_share": r / (local + r) if local + r else None,
            "running_pct": min((p for p in (first["running_pct"], remote["running_pct"]) if p is not None),
                               default=None)}


# -- one run ----------------------------------------------------------------------------------

def for_run(capture, launcher, rundir):
    """(Counting or None, the record's `counters` when it is not captured, or None when
    not asked for)."""
    if not capture.get("counters"):
        return None, None
    if not launcher.on_measured_node:
        return None, {"captured": False, "why": f"{launcher.name} starts the process on a compute node"}
    a = pmu.availability()
    if not a.ok:
        return None, {"captured": False, "why": a.why}
    return Counting(a, rundir), None


class Counting:
    """perf stat around one run: the argv, the benchmark's pid, the exit status, the counts."""

    def __init__(self, avail, rundir):
        self.avail = avail
        self.out = Path(rundir) / OUTPUT
        self.argv0 = None

    def wrap(self, argv):
        self.argv0 = argv[0]
        return [self.avail.perf, "stat", "-x" + SEP, "-o", str(self.out), "-e",
                ",".join(self.avail.event_list()), "--", *argv]

    @staticmethod
    def workload_pid(pid, timeout=5.0, proc="/proc"):
        """The process perf forked for the launch line (what the sampler must watch), or
        pid itself when none appeared (perf ended first: the sampler then finds nothing)."""
        end = time.monotonic() + timeout
        wait = 0.0002
        while time.monotonic() < end:
            kids = _children(pid, proc)
            if kids:
                return kids[0]
            try:
                os.kill(pid, 0)
                with open(f"{proc}/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        break                           # perf has exited
            except (OSError, IndexError):
                break
            time.sleep(wait)
            wait = min(wait * 2, 0.005)
        return pid

    def exit_status(self, rc, stderr_path):
        """The launch line's exit status: perf's, except that a run killed by a signal
        gives perf status 0 and a last stderr line `<argv0>: <signal description>`
        (psignal): then minus the signal's number, as a killed child's status reads."""
        if rc != 0 or not self.argv0:
            return rc
        try:
            with open(stderr_path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
                stderr_text = f.read().decode(errors="replace")
        except OSError:
            return rc
        last = next((l.strip() for l in reversed(stderr_text.splitlines()) if l.strip()), "")
        for sig in signal.Signals:
            desc = signal.strsignal(sig)
            if desc and last == f"{self.argv0}: {desc}":
                return -int(sig)
        return rc

    def result(self, timed_out=False):
        """The record's `counters`."""
        a = self.avail
        base = {"events": {"first": a.event_list()[0], "remote": a.event_list()[1]},
                "measures": a.events.measures, "cpu": a.events.cpu, "scope": a.scope(), "file": OUTPUT}
        text = self.out.read_text(errors="replace") if self.out.exists() else ""
        c = counts(parse(text, a.event_list()), a.events)
        if c is None:
            why = ("the run was killed at its timeout before perf stat wrote its counts" if timed_out
                   else "perf stat wrote no counts of both events" + (f" to {OUTPUT}" if text else
                                                                       f" ({OUTPUT} is missing)"))
            return {"captured": False, "why": why, **base}
        return {"captured": True, **base, **c}


def _children(pid, proc="/proc"):
    try:
        text = Path(f"{proc}/{pid}/task/{pid}/children").read_text()
        return [int(x) for x in text.split()]
    except (OSError, ValueError):
        pass
    kids = []                              # a kernel without CONFIG_PROC_CHILDREN: scan
    for d in Path(proc).iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return sorted(kids)


# -- what numa_maps predicts -------------------------------------------------------------------

def predicted_remote_share(data_by_node, thread_nodes):
    """The share of a run's data (pages or bytes per node) on nodes where none of its
    threads ran: the remote share numa_maps predicts if every thread reads pages on its
    own nodes as often as the placement has them (exact for threads on one node; for
    threads spread over nodes a lower bound: a thread reading a page of another of the
    run's nodes is remote too). None without data or threads' nodes."""
    total = sum(data_by_node.values()) if data_by_node else 0
    if not total or not thread_nodes:
        return None
    return sum(v for n, v in data_by_node.items() if int(n) not in thread_nodes) / total
