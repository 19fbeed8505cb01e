"""What a study will cost, said before anything is built: machine time per experiment and in
total, and the memory a run's pages need on a node.

Each kind says what one run costs on the reference machine at its speed (Kind.run_seconds:
for the NPB kernels, NPB's own operation count per class over the bundled kernels' Mop/s
there, numaplace.kinds.npb; for the micro-benchmarks a fixed cost), scaled here by this
machine's read bandwidth against the reference's (a 0.1 s numpy read of 256 MiB: the
kernels are memory-bound). Each run's fixed cost (a Snakemake job, a Python start, the
idle check, captures, the record) and each build are scaled by this machine's start-up
time against the reference's (a Python that imports the runner: what every run pays). It
is an estimate: the summary puts the real time beside it.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from numaplace.kinds import kind

CLASS_ORDER = "SWABC"
# the reference machine (2 vCPUs of an EPYC guest), quiet
REF_READ_GBS = 32.0                 # read_bandwidth() there (31.5-32.9 GB/s)
REF_START_S = 0.10                  # start_seconds() there (0.09-0.12 s)
# a run's fixed cost there, outside the benchmark: the mean gap between one run's end and
# the next one's start (Snakemake's job, a Python, the idle check, captures, the record):
# 0.34 s in the default study (class B), 0.18 s in the quick study; 3.6 s in the NUMA VM
# under QEMU's TCG, whose cpu speed is 0.078: 0.28 s at the reference's
RUN_OVERHEAD_S = 0.35
BUILD_S = 1.0                       # one binary there: make + gfortran -O3 (0.3-1.3 s) and its job


def read_bandwidth(nbytes=256 * 2**20, tries=5, probes=None):
    """This machine's single-thread read bandwidth in GB/s (best of a few numpy sums);
    `probes`, a list, receives every sum's GB/s (their spread says how steady it was)."""
    import time
    import numpy as np
    a = np.ones(nbytes // 8)
    best = 0.0
    for _ in range(tries):
        t = time.perf_counter()
        a.sum()
        gbs = a.nbytes / (time.perf_counter() - t) / 1e9
        best = max(best, gbs)
        if probes is not None:
            probes.append(round(gbs, 2))
    return best


class Load(NamedTuple):
    """How busy the machine was while numaplace probed it (before the study runs)."""
    busy: float                 # share of this process's CPUs' time taken by others (0-1)
    loadavg: float              # 1-minute load average
    cpus: int                   # CPUs this process may use

    def words(self):
        return (f"load {self.loadavg:.1f} on {self.cpus} CPU{'s' * (self.cpus != 1)}, "
                f"{100 * self.busy:.0f} % of their time taken by other processes")


def machine_load(seconds=0.3, since=None):
    """Load of the CPUs this process may use over a short window (numaplace itself sleeps
    through it; or `since`, a machine.idle.LoadWindow opened earlier, its own work taken
    off), and the load average."""
    import os
    from numaplace.machine.idle import cpu_busy
    cpus = sorted(os.sched_getaffinity(0))
    if since is not None:
        return Load(since.foreign_busy(cpus, seconds), round(os.getloadavg()[0], 2), len(cpus))
    busy = cpu_busy(seconds)
    mine = [busy[c] for c in cpus if c in busy]
    return Load(round(sum(mine) / len(mine), 3) if mine else 0.0, round(os.getloadavg()[0], 2), len(cpus))


def load_since(window):
    """machine_load as wait_for_quiet's load_of: its first look over `window` (opened as the
    workflow started, so the start costs no wait), every later one a fresh window."""
    first = [window]
    return lambda: machine_load(since=first.pop() if first else None)


def busy_words(results_dir, busy_max):
    """The plan's line when the machine was busy as the study's speed was probed (kept in
    speed.json), or None: said before any run, not found out at the end."""
    kept = _kept(results_dir)
    try:
        load = Load(float(kept["busy"]), float(kept["loadavg"]), int(kept["cpus"]))
    except (KeyError, TypeError, ValueError):
        return None
    if load.busy <= busy_max:
        return None
    return (f"this machine is busy ({load.words()}): the estimate and the measurements will not be "
            "reliable (run.when_busy: wait waits for quiet, stop stops)")


def start_seconds(tries=3):
    """Seconds a new Python takes to import the runner and exit (best of a few): what each
    measured run pays before and after its benchmark, on this machine."""
    import subprocess
    import sys
    import time
    best = float("inf")
    for _ in range(tries):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import numaplace.run.runner"], check=True)
        best = min(best, time.perf_counter() - t)
    return best


class Speed(NamedTuple):
    """This machine against the reference machine: >1 is faster."""
    memory: float = 1.0         # read bandwidth ratio: scales the kernels' run time
    cpu: float = 1.0            # start-up time ratio: scales each run's and build's fixed cost


SPEED_FILE = "speed.json"           # results/<study>/: this machine's measured speed, kept


def _kept(results_dir):
    """What results/<study>/speed.json keeps of this host ({} when nothing, or another
    host's: a study planned on a login node and measured on a compute node)."""
    import json
    import os
    try:
        kept = json.loads((Path(results_dir) / SPEED_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) and kept.get("host") == os.uname().nodename else {}


def _keep(results_dir, **measured):
    """Add what was measured on this host to speed.json (a read-only checkout plans all the
    same, measuring again)."""
    import json
    import os
    f = Path(results_dir) / SPEED_FILE
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps({**_kept(results_dir), "host": os.uname().nodename, **measured}))
    except OSError:
        pass


def machine_speed(results_dir):
    """This machine's Speed, measured once per study and kept in
    results/<study>/speed.json, so that every process that plans the study (numaplace plan,
    each Snakemake invocation, cluster jobs) plans it alike."""
    kept = _kept(results_dir)
    try:
        # a probe taken on a busy machine is not kept for the study's life: measured again
        if kept["memory"] > 0 and kept["cpu"] > 0 and not kept.get("busy_when_probed"):
            return Speed(float(kept["memory"]), float(kept["cpu"]))
    except (KeyError, TypeError):
        pass
    load = machine_load()
    probes = []
    read_gbs, start_s = read_bandwidth(probes=probes), start_seconds()
    speed = Speed(read_gbs / REF_READ_GBS, REF_START_S / start_s)
    _keep(results_dir, **speed._asdict(), read_gbs=read_gbs, read_gbs_probes=probes,
          reference_read_gbs=REF_READ_GBS, start_s=start_s, reference_start_s=REF_START_S,
          **load._asdict(), busy_when_probed=load.busy > BUSY_MAX)
    return speed


def wait_for_quiet(run, say, load_of=machine_load, sleep=None, clock=None):
    """Before the first job: what the study's run.when_busy says to do on a busy machine.
    go (default): say so and go on; wait: wait for the load to fall under
    run.idle_busy_max, at most run.busy_wait seconds, then go on, said; stop: say so and
    return False (nothing runs)."""
    import time
    sleep, clock = sleep or time.sleep, clock or time.monotonic
    load = load_of()
    if load.busy <= run["idle_busy_max"]:
        return True
    mode = run["when_busy"]
    if mode == "stop":
        say(f"numaplace: this machine is busy ({load.words()}) and the study says run.when_busy: stop: "
            "nothing was run; run again when it is quiet, or set run.when_busy: go or wait")
        return False
    if mode == "wait":
        say(f"numaplace: this machine is busy ({load.words()}): waiting for quiet, at most "
            f"{format_duration(run['busy_wait'])} (run.busy_wait)")
        deadline = clock() + run["busy_wait"]
        while clock() < deadline:
            sleep(5)
            load = load_of()
            if load.busy <= run["idle_busy_max"]:
                say(f"numaplace: quiet now ({load.words()}): the study starts")
                return True
        say(f"numaplace: still busy after {format_duration(run['busy_wait'])} ({load.words()}): the study starts "
            "anyway; its runs are flagged where other load shared their CPUs")
        return True
    say(f"numaplace: this machine is busy ({load.words()}): the estimate and the measurements will not "
        "be reliable; runs are flagged where other load shared their CPUs (run.when_busy: wait or stop)")
    return True


BUSY_MAX = 0.15                     # the study's run.idle_busy_max by default: above it, busy


def slowest_speed(results_dir, speed):
    """The Speed at the slowest of the kept read probes (the estimate's other end), or
    `speed` itself when no probes are kept."""
    probes = [p for p in _kept(results_dir).get("read_gbs_probes") or [] if isinstance(p, (int, float)) and p > 0]
    return speed._replace(memory=min(probes) / REF_READ_GBS) if probes else speed


def run_seconds(run, speed=Speed()):
    """Estimated seconds of one planned run (numaplace.plan.study.Run) on a machine of `speed`."""
    return (kind(run.bench).run_seconds(run.cls, run.placement.threads, run.args, speed.memory)
            + RUN_OVERHEAD_S / speed.cpu)


def parse_minutes(text):
    """A budget: minutes as a number, or "90 min", "1.5 h"."""
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(min|h)\s*", text)
    return float(m.group(1)) * (60 if m.group(2) == "h" else 1)


def format_duration(seconds):
    m = round(seconds / 60)
    return f"{m // 60} h {m % 60:02d} min" if m >= 60 else (f"{m} min" if m else f"{seconds:.0f} s")


class Estimate:
    """Machine time of a study's runs: per experiment (a run that two experiments share
    counts in both), builds, and the total (every run once)."""

    def __init__(self, runs, binaries, speed=Speed()):
        self.speed = speed
        self.per_experiment = {}
        self.per_run = {}
        runs_s = 0.0
        for r in runs:
            s = self.per_run[r.run_id] = run_seconds(r, speed)
            runs_s += s
            for e in r.experiments:
                self.per_experiment[e] = self.per_experiment.get(e, 0.0) + s
        self.builds = BUILD_S / speed.cpu * len(binaries)
        self.total = runs_s + self.builds


def step_down(classes):
    """The next smaller NPB class for the largest of C and B among classes (C -> B -> A);
    None when none is above A."""
    npb = [c for c in classes if c in "BC"]
    if not npb:
        return None
    top = max(npb, key=CLASS_ORDER.index)
    return {top: CLASS_ORDER[CLASS_ORDER.index(top) - 1]}


def free_mb(topo):
    """Free memory per node: MemFree on this machine (platform auto, system.free_mb_by_node),
    else the platform file's memory_mb."""
    if topo.name == "auto":
        from numaplace.machine.system import free_mb_by_node
        free = {int(n): mb for n, mb in free_mb_by_node().items()}
        if free:
            return free
    return dict(topo.memory_mb)


class Spill(NamedTuple):
    """Pages of one kind of run that one node cannot hold where they are meant to go."""
    bench: str
    cls: str
    variant: str
    node: int
    need_mb: float
    free_mb: int
    measured: bool              # free now (this machine) or in all (a platform file)

    def __str__(self):
        return (f"{self.bench}.{self.cls} {self.variant}: {self.need_mb:.0f} MiB of pages meant for node "
                f"{self.node}, which has {self.free_mb} MiB {'free' if self.measured else 'in all'}")


def kept_free_mb(topo, results_dir):
    """free_mb, measured once per study on this machine and kept in results/<study>/
    speed.json beside its speed (free memory moves with the page cache: a plan read again
    must choose the same classes); a platform file's memory_mb as it is."""
    if topo.name != "auto":
        return free_mb(topo)
    kept = _kept(results_dir).get("free_mb")
    if isinstance(kept, dict):
        return {int(n): int(mb) for n, mb in kept.items()}
    free = free_mb(topo)
    _keep(results_dir, free_mb={str(n): mb for n, mb in free.items()})
    return free


def memory_spills(runs, topo, free_by_node=None):
    """Runs whose pages cannot all fit where they are meant to go, one Spill per (kind,
    class, variant, node): a serial-init run puts its whole working set on the master's
    node, a membind run on its nodes, a first-touch run a share on each of its threads'
    nodes. free_by_node: MiB per node (default free_mb now)."""
    out, seen = [], set()
    if free_by_node is None:
        free_by_node = free_mb(topo)                      # read once, not per run
    for r in runs:
        ws = kind(r.bench).working_set_mb(r.cls)
        if ws is None:
            continue
        p = r.placement
        if r.variant == "serial-init":                     # the master thread: thread 0
            where = {topo.node_of((p.order or p.cpus)[0]): ws}
        elif p.memory.policy == "membind":
            where = {n: ws / len(p.memory.nodes) for n in p.memory.nodes}
        else:
            where = {n: ws * k / p.threads for n, k in zip(p.nodes, p.layout)}
        for node, need in where.items():
            free = free_by_node.get(node)
            key = (r.bench, r.cls, r.variant, node)
            if free is not None and need > free and key not in seen:
                seen.add(key)
                out.append(Spill(r.bench, r.cls, r.variant, node, need, free, topo.name == "auto"))
    return out


def memory_warnings(runs, topo):
    """The plan's lines for memory_spills."""
    return [f"{s}: they will spill" for s in memory_spills(runs, topo)]
