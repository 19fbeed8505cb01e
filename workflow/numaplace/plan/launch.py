"""The words of a placement's execution: memory policies and launchers, one registry
each. A launcher takes a concrete placement in and gives argv + environment out (no
shell strings); ``cannot_express`` says why a placement is out of its reach, which the
study check turns into a validation error. The study, platform and record schemas take
their launcher and memory-policy enums from here.
"""
from __future__ import annotations

from dataclasses import dataclass

from numaplace.core.cpulist import format_cpulist
from numaplace.core.schema import register_words


@dataclass(frozen=True)
class MemoryPolicy:
    name: str                   # the study's word (memory: local | {<name>: nodes})
    short: str                  # its part of a placement id
    numactl: str                # numactl's option ({nodes}: the policy's node list)
    words: tuple = ()           # portable node words it takes (numaplace.plan.placement)


MEMORY_POLICIES = {m.name: m for m in (
    MemoryPolicy("local", "loc", "--localalloc"),
    MemoryPolicy("interleave", "il", "--interleave={nodes}", ("all",)),
    MemoryPolicy("membind", "mb", "--membind={nodes}", ("nearest", "farthest", "each-distance")),
    MemoryPolicy("preferred", "pr", "--preferred={nodes}", ("nearest", "farthest")),
)}

# Variables that would change the measurement if inherited from the caller's shell.
SCRUBBED_ENV = ("OMP_", "GOMP_", "KMP_", "NPB_TIMER_FLAG", "NUMAPLACE_")   # numaplace's own never reach a benchmark


def omp_env(p):
    """OpenMP environment for a placement: thread count, and per-thread pinning."""
    env = {"OMP_NUM_THREADS": str(p.threads)}
    if p.binding == "threads":
        # one place per CPU, threads bound in order before the kernel initialises (a
        # memory cell's order puts thread 0, the first-touching one, on its memory CPU)
        env["OMP_PLACES"] = ",".join(f"{{{c}}}" for c in (getattr(p, "order", ()) or p.cpus))
        env["OMP_PROC_BIND"] = "true"
    return env


class Launcher:
    name = ""                      # the study's `launcher:` value
    short = ""                     # its part of a placement id
    default_binding = "process"
    on_measured_node = True        # False: the run executes elsewhere (no local capture)

    def cannot_express(self, p):
        """None, or why this launcher cannot apply placement p."""
        return None

    def prefix(self, p):
        return []

    def argv(self, p, binary):
        return self.prefix(p) + [str(binary)]

    def env(self, p):
        return omp_env(p)

    def probe(self, p):
        """A command that applies the placement to `true`: fails where the placement
        cannot be applied on this machine (numactl refusing a node, an offline CPU)."""
        pre = self.prefix(p)
        return pre + ["true"] if pre else None


class Taskset(Launcher):
    name = "taskset"
    short = "ts"

    def cannot_express(self, p):
        if p.memory.policy != "local":
            return "taskset sets only the CPU mask; use numactl for a memory policy"

    def prefix(self, p):
        return ["taskset", "-c", p.cpulist]


class Numactl(Launcher):
    name = "numactl"
    short = "nc"

    def prefix(self, p):
        mem = p.memory
        nodes = format_cpulist(mem.nodes)
        policy = MEMORY_POLICIES[mem.policy].numactl.format(nodes=nodes)
        return ["numactl", f"--physcpubind={p.cpulist}", policy]

    def cannot_express(self, p):
        if p.memory.policy == "preferred" and len(p.memory.nodes) != 1:
            return "numactl --preferred takes exactly one node"


class Aprun(Launcher):
    """Cray ALPS: one process with N threads bound in order to the -cc CPU list."""
    name = "aprun"
    short = "ap"
    default_binding = "threads"
    on_measured_node = False       # ALPS starts the process on a compute node

    def cannot_express(self, p):
        if p.memory.policy != "local":
            return "aprun has no interleave/membind/preferred control (only first touch)"
        if p.binding != "threads":
            return "aprun -cc binds every thread to one CPU of the list: use binding threads"

    def prefix(self, p):
        return ["aprun", "-n", "1", "-d", str(p.threads), "-cc",
                ",".join(map(str, getattr(p, "order", ()) or p.cpus))]

    def env(self, p):
        return {"OMP_NUM_THREADS": str(p.threads)}   # ALPS does the binding

    def probe(self, p):
        return None


class OpenMP(Launcher):
    """Environment only: OMP_PLACES pins the threads; memory is first touch."""
    name = "omp"
    short = "omp"
    default_binding = "threads"

    def cannot_express(self, p):
        if p.memory.policy != "local":
            return "OpenMP environment variables cannot set a memory policy; use numactl"
        if p.binding != "threads":
            return "without a launcher only per-thread binding (OMP_PLACES) restricts the CPUs"


LAUNCHERS = {cls.name: cls() for cls in (Taskset, Numactl, Aprun, OpenMP)}


def command(p, binary):
    """(argv, env) to run `binary` under placement p."""
    launcher = LAUNCHERS[p.launcher]
    return launcher.argv(p, binary), launcher.env(p)
register_words("launcher", LAUNCHERS)
register_words("memory_policy", MEMORY_POLICIES)
