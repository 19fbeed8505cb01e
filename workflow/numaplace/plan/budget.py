"""What a study will cost, said before anything is built: machine time per experiment and in
total, and the memory a run's pages need on a node.

Each kind says what one run costs on the reference machine at its speed (Kind.run_seconds:
for the NPB kernels, NPB's own operation count per class over the bundled kernels' Mop/s
there, numaplace.kinds.npb; for the micro-benchmarks a fixed cost), scaled here by this
machine's read bandwidth against the reference's (a 0.1 s numpy read of 256 MiB: the
kernels are memory-bound). Builds and each run's start-up are fixed costs measured on the
reference machine. It is an estimate: the summary puts the real time beside it.
"""
from __future__ import annotations

import re

from numaplace.kinds import kind

CLASS_ORDER = "SWABC"
# the reference machine (2 vCPUs of an EPYC guest)
REF_READ_GBS = 32.0                 # read_bandwidth() there, quiet (31.5-32.9 GB/s)
RUN_OVERHEAD_S = 0.6                # a run's start, captures, record (quick study: 14 class S runs in 7 s)
BUILD_S = 25.0                      # one binary, gfortran -O3


def read_bandwidth(nbytes=256 * 2**20, tries=5):
    """This machine's single-thread read bandwidth in GB/s (best of a few numpy sums)."""
    import time
    import numpy as np
    a = np.ones(nbytes // 8)
    best = 0.0
    for _ in range(tries):
        t = time.perf_counter()
        a.sum()
        best = max(best, a.nbytes / (time.perf_counter() - t) / 1e9)
    return best


SPEED_FILE = "speed.json"           # results/<study>/: this machine's measured speed, kept


def machine_speed(results_dir):
    """This machine's speed against the reference (read bandwidth ratio), measured once per
    study and kept in results/<study>/speed.json, so that every process that plans the
    study (numaplace plan, each Snakemake invocation, cluster jobs) plans it alike."""
    import json
    import os
    from pathlib import Path
    f = Path(results_dir) / SPEED_FILE
    try:
        kept = json.loads(f.read_text())
        if kept.get("host") == os.uname().nodename and kept.get("speed", 0) > 0:
            return float(kept["speed"])
    except (OSError, ValueError, AttributeError):
        pass
    speed = read_bandwidth() / REF_READ_GBS
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps({"host": os.uname().nodename, "speed": speed,
                                 "read_gbs": speed * REF_READ_GBS, "reference_gbs": REF_READ_GBS}))
    except OSError:
        pass                    # a read-only checkout plans all the same
    return speed


def run_seconds(run, speed=1.0):
    """Estimated seconds of one planned run (numaplace.plan.study.Run); speed scales the rates."""
    return kind(run.bench).run_seconds(run.cls, run.placement.threads, run.args, speed) + RUN_OVERHEAD_S


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

    def __init__(self, runs, binaries, speed=1.0):
        self.speed = speed
        self.per_experiment = {}
        runs_s = 0.0
        for r in runs:
            s = run_seconds(r, speed)
            runs_s += s
            for e in r.experiments:
                self.per_experiment[e] = self.per_experiment.get(e, 0.0) + s
        self.builds = BUILD_S * len(binaries)
        self.total = runs_s + self.builds


def step_down(classes):
    """The next smaller NPB class for each of C and B (C -> B -> A); None when at A."""
    npb = [c for c in classes if c in "BC"]
    if not npb:
        return None
    top = max(npb, key=CLASS_ORDER.index)
    lower = CLASS_ORDER[CLASS_ORDER.index(top) - 1]
    return {top: lower}


def free_mb(topo):
    """Free memory per node: MemFree on this machine (platform auto, system.free_mb_by_node),
    else the platform file's memory_mb."""
    if topo.name == "auto":
        from numaplace.machine.system import free_mb_by_node
        free = {int(n): mb for n, mb in free_mb_by_node().items()}
        if free:
            return free
    return dict(topo.memory_mb)


def memory_warnings(runs, topo):
    """Runs whose pages cannot all fit where they are meant to go: a serial-init run puts its
    whole working set on the master's node, a membind run on its nodes, a first-touch run a
    share on each of its threads' nodes."""
    out, seen = [], set()
    free_by_node = free_mb(topo)                          # read once, not per run
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
                out.append(f"{r.bench}.{r.cls} {r.variant}: {need:.0f} MiB of pages meant for node {node}, "
                           f"which has {free} MiB {'free' if topo.name == 'auto' else 'in all'}: they will spill")
    return out
