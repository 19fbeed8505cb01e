"""Benchmark kinds: everything numaplace knows about one benchmark, in one place.

A kind says how its binary is named and built (a bundled source tree with NPB's make
interface), how its stdout is parsed, what "verified" means, which metric it reports
(and whether higher is better), and what a run costs a batch system. Planning, building,
running, aggregating and reporting ask the registry; no stage tests a kernel's name.
New kinds (the memory micro-benchmarks) register here with `register`.
"""
from __future__ import annotations

import signal
from pathlib import Path

from numaplace.kinds import membench_output
from numaplace.kinds import npb_output

REPO = Path(__file__).resolve().parents[3]


class Kind:
    name = ""                  # the study's `benchmarks:` entry, the run id's first part
    family = ""                # "npb", "memory": which tables and figures it feeds
    title = ""
    metric = ""                # the output field compared across placements
    unit = ""
    higher_is_better = True
    source_dir = None          # bundled source tree (NPB's make interface)
    classes = ()
    variants = ("default",)
    tree_name = "tree"         # build tree folder beside the variant's (NPB kinds share one)
    follows_npb_source = True  # built from the study's npb.source (else always source_dir)
    # which numa_maps sample is the run's working set, judged for memory placement:
    # "steady" (the footprint the run settled on) or "peak" (the largest one seen)
    footprint = "steady"

    def binary_name(self, cls):
        return f"{self.name}.{cls}.x"

    def make_args(self, cls, variant, official=False):
        """The make command that builds binary_name(cls) in a prepared tree."""
        return ["make", self.name.upper(), f"CLASS={cls}"]

    def parse(self, stdout):
        """The benchmark's stdout → dict with at least `complete` and `verified`."""
        raise NotImplementedError

    def outcome(self, output, exit_status):
        """(status, reason) of a run that ended by itself, from its parsed output."""
        if output["complete"] and not output["verified"]:
            return "unverified", f"verification failed (exit status {exit_status})"
        if exit_status != 0:
            return "failed", _ended(exit_status)
        if not output["complete"]:
            return "failed", f"no {self.title} report in stdout"
        return "ok", None

    def estimate(self, cls):
        """(seconds one thread needs, resident MiB) for batch-system requests."""
        raise NotImplementedError

    def working_set_bytes(self, output):
        """Bytes the run's judged footprint must hold to have seen its working set, from
        its parsed output; None when the output does not say."""
        return None


class NPBKernel(Kind):
    family = "npb"
    metric = "mops"
    unit = "Mop/s"
    source_dir = REPO / "npb" / "src"
    classes = ("S", "W", "A", "B", "C")
    variants = ("default", "serial-init", "mcmodel-medium")

    def __init__(self, name, title, cost):
        self.name, self.title, self._cost = name, title, cost

    def make_args(self, cls, variant, official=False):
        args = super().make_args(cls, variant)
        if variant == "serial-init" and not official:   # official trees are transformed instead
            args.append("INIT=serial")
        return args

    def parse(self, stdout):
        return npb_output.parse(stdout)

    def outcome(self, output, exit_status):
        if output["complete"] and not output["verified"]:
            return "unverified", f"NPB verification UNSUCCESSFUL (exit status {exit_status})"
        return super().outcome(output, exit_status)

    def estimate(self, cls):
        return self._cost[cls]


def _ended(exit_status):
    """'exit status 3', or 'killed by SIGSEGV' (Popen's negative status)."""
    if exit_status < 0:
        try:
            return f"killed by {signal.Signals(-exit_status).name}"
        except ValueError:
            return f"killed by signal {-exit_status}"
    return f"exit status {exit_status}"


KINDS: dict[str, Kind] = {}


def register(kind):
    if kind.name in KINDS:
        raise ValueError(f"benchmark kind {kind.name!r} registered twice")
    KINDS[kind.name] = kind
    return kind


def kind(name):
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark kind {name!r} (known: {', '.join(KINDS)})") from None


# Per class: (seconds one thread needs, resident MiB). Generous round estimates for a
# ~2010 node (the reference study's Magny-Cours era); resident sizes follow NPB's array
# sizes. For scale, on the 2-core 2026 development machine with numaplace's own kernels,
# one thread: CG.A 0.7 s / 48 MiB, MG.A 0.6 s / 445 MiB.
register(NPBKernel("cg", "NPB CG", {"S": (1, 8), "W": (5, 16), "A": (15, 60), "B": (600, 420),
                                    "C": (1800, 1100)}))
register(NPBKernel("mg", "NPB MG", {"S": (1, 8), "W": (10, 60), "A": (30, 460), "B": (120, 460),
                                    "C": (900, 3500)}))


class MemoryBench(Kind):
    """numaplace's memory micro-benchmarks (microbench/src): one class, X, whose sizes,
    modes and repetitions are the experiment's `args`. Their output holds many values
    (one per size, reader and repetition: `results`); the tables (memory_tables) take
    them apart. Built from microbench/src whatever the study's npb.source says."""
    family = "memory"
    source_dir = REPO / "microbench" / "src"
    classes = ("X",)
    tree_name = "microbench-tree"
    follows_npb_source = False
    # each size's buffer is freed once measured, with the thread team still alive: a
    # steady tail after the last free is the runtime, not the buffer under test
    footprint = "peak"

    def __init__(self, name, title, metric, unit, higher_is_better):
        self.name, self.title, self.metric, self.unit = name, title, metric, unit
        self.higher_is_better = higher_is_better

    def parse(self, stdout):
        return membench_output.parse(stdout)

    def outcome(self, output, exit_status):
        if output["complete"] and not output["verified"]:
            return "unverified", (f"{self.name}'s own check failed (buffer changed or chain broken; "
                                  f"exit status {exit_status})")
        return super().outcome(output, exit_status)

    def working_set_bytes(self, output):
        # the largest buffer measured: a sample that holds less caught it mid first touch
        sizes = [r.get("size_bytes") or 0 for r in (output or {}).get("results") or []]
        return max(sizes) if sizes else None

    def estimate(self, cls):
        # time and size depend on the args; a full latency sweep to 4x a large LLC with 5
        # repetitions and 2 readers takes a few minutes; buffers stay below 2 GiB
        return (300, 2048)


register(MemoryBench("membw", "membw read bandwidth", "value", "MB/s", True))
register(MemoryBench("memlat", "memlat pointer-chase latency", "value", "ns", False))


def wildcard_constraints():
    """The Snakefile's bench, cls and variant patterns, from the registered kinds."""
    def alternatives(values):
        return "|".join(sorted(set(values)))
    return {"bench": alternatives(KINDS),
            "cls": alternatives(c for k in KINDS.values() for c in k.classes),
            "variant": alternatives(v for k in KINDS.values() for v in k.variants)}
