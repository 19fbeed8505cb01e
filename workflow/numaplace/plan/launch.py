"""The words of a placement's execution: memory policies and launchers, one registry
each. A launcher takes a concrete placement in and gives argv + environment out (no
shell strings); ``cannot_express`` says why a placement is out of its reach, which the
study check turns into a validation error. The study, platform and record schemas take
their launcher and memory-policy enums from here.
"""
from __future__ import annotations

from dataclasses import dataclass

from numaplace.core.cpulist import format_cpulist
from numaplace.core.schema import register_memory, register_words


@dataclass(frozen=True)
class MemoryPolicy:
    """One memory policy: its study word and id code, how numactl expresses it, what
    numa_maps prints for its pages, how fidelity judges where they went, and what the
    kernel and numactl must be for it to exist."""
    name: str                   # the study's word (memory: local | {<name>: nodes})
    short: str                  # its part of a placement id
    numactl: str                # numactl's option ({nodes}: the policy's node list)
    words: tuple = ()           # portable node words it takes (numaplace.plan.placement)
    takes: str = "nodes"        # what the study gives it: "" (nothing), "node" (one id), "nodes"
    modes: tuple = ()           # numa_maps mode names of pages placed under it (judge.fidelity)
    spread: str = ""            # how its pages spread over its nodes: "" | "even" | "weighted"
    kernel: tuple = ()          # the first Linux version that has it, e.g. (6, 9)
    numactl_since: str = ""     # the first numactl that has its option, e.g. "2.0.19"
    what: str = ""              # the policy in words, for a not-applicable line

    @property
    def option(self):
        """numactl's long option, without its value ('--weighted-interleave')."""
        return self.numactl.split("=")[0]

    @property
    def form(self):
        """How a study writes it (for messages)."""
        return f"{{{self.name}: {self.takes}}}" if self.takes else self.name

    def schema(self, node_ref="#/$defs/node", nodelist_ref="#/$defs/nodelist"):
        """Its branch of the study schema's `memory` oneOf."""
        if not self.takes:
            return {"const": self.name}
        value = [{"$ref": node_ref if self.takes == "node" else nodelist_ref}]
        if self.words:
            value.append({"enum": list(self.words)})
        return {"type": "object", "additionalProperties": False, "required": [self.name],
                "properties": {self.name: {"anyOf": value}}}

    def refusal(self, value):
        """What is wrong with `{name: value}` that its schema refused (one line), or None
        for a policy that takes no value (then the mapping is an unknown policy)."""
        from numaplace.core.loader import shown
        if not self.takes:
            return None
        if self.takes == "node":
            return f"{self.name} needs one node id (got {shown(value)})"
        if isinstance(value, list) and len(set(map(repr, value))) < len(value):
            dup = next(n for i, n in enumerate(value) if n in value[:i])
            return f"{self.name} lists node {shown(dup)} twice"
        if self.spread == "weighted" and isinstance(value, dict):
            return (f"{self.name} takes nodes only and interleaves by the kernel's weights "
                    f"(/sys/kernel/mm/mempolicy/weighted_interleave/node<N>, set by root); "
                    f"explicit weights are not supported (got {shown(value)})")
        return f"{self.name} needs a non-empty list of node ids, or a node list like '0-3' " \
               f"(got {shown(value)})"

    def missing_here(self, release=None):
        """None where the running kernel has this policy, else why not (one line)."""
        if not self.kernel:
            return None
        from numaplace.machine import mempolicy
        release = release or mempolicy.kernel_release()
        have = mempolicy.version_tuple(release)
        if have and have < self.kernel:
            return (f"kernel {mempolicy.short_release(release)} has no {self.what} "
                    f"({'.'.join(map(str, self.kernel))}+)")
        return None

    def facts(self):
        """What a run under this policy records of the machine (record field `system`)."""
        if self.spread != "weighted":
            return {}
        from numaplace.machine import mempolicy
        weights, auto = mempolicy.weighted_interleave_weights()
        return {"weighted_interleave": weights, "weighted_interleave_auto": auto}


MEMORY_POLICIES = {m.name: m for m in (
    MemoryPolicy("local", "loc", "--localalloc", takes="", modes=("local", "default")),
    MemoryPolicy("interleave", "il", "--interleave={nodes}", ("all", "cpu-nodes"),
                 modes=("interleave", "weighted interleave"), spread="even"),
    MemoryPolicy("membind", "mb", "--membind={nodes}", ("nearest", "farthest", "each-distance"),
                 modes=("bind",)),
    MemoryPolicy("preferred", "pr", "--preferred={nodes}", ("nearest", "farthest"), takes="node",
                 modes=("prefer", "prefer (many)")),
    # Linux 6.9 (MPOL_WEIGHTED_INTERLEAVE), numactl 2.0.19: pages go to the nodes in the
    # ratio of the kernel's per-node weights (sysfs, root's to set; recorded with the run)
    MemoryPolicy("weighted-interleave", "wi", "--weighted-interleave={nodes}", ("all",),
                 modes=("weighted interleave",), spread="weighted", kernel=(6, 9),
                 numactl_since="2.0.19", what="weighted interleave"),
    # Linux 5.15 (MPOL_PREFERRED_MANY), numactl 2.0.15: any of the nodes first, then others
    MemoryPolicy("preferred-many", "pm", "--preferred-many={nodes}",
                 modes=("prefer (many)",), kernel=(5, 15), numactl_since="2.0.15",
                 what="preferred-many memory policy"),
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
    tools = ()                     # programs it runs on this machine, looked for before the first job

    def cannot_express(self, p):
        """None, or why this launcher cannot apply placement p."""
        return None

    def prefix(self, p):
        return []

    def argv(self, p, binary):
        return self.prefix(p) + [str(binary)]

    def env(self, p):
        return omp_env(p)

    def not_applicable(self, policy, topo):
        """None, or why memory policy `policy` cannot be had here with this launcher (the
        plan leaves its placements out with that line). Only `platform: auto` is asked:
        a named platform is planned elsewhere, and this machine's kernel says nothing of it."""
        return None

    def probe(self, p):
        """A command that applies the placement to `true`: fails where the placement
        cannot be applied on this machine (numactl refusing a node, an offline CPU)."""
        pre = self.prefix(p)
        return pre + ["true"] if pre else None


class Taskset(Launcher):
    name = "taskset"
    short = "ts"
    tools = ("taskset",)

    def cannot_express(self, p):
        if p.memory.policy != "local":
            return "taskset sets only the CPU mask; use numactl for a memory policy"

    def prefix(self, p):
        return ["taskset", "-c", p.cpulist]


class Numactl(Launcher):
    name = "numactl"
    short = "nc"
    tools = ("numactl",)

    @staticmethod
    def memory_option(p):
        """numactl's option for the placement's memory policy ('--membind=2')."""
        return MEMORY_POLICIES[p.memory.policy].numactl.format(nodes=format_cpulist(p.memory.nodes))

    @staticmethod
    def memory_problem(p):
        """Why numactl cannot set this memory policy, or None."""
        if p.memory.policy == "preferred" and len(p.memory.nodes) != 1:
            return "numactl --preferred takes exactly one node"

    def prefix(self, p):
        return ["numactl", f"--physcpubind={p.cpulist}", self.memory_option(p)]

    def cannot_express(self, p):
        return self.memory_problem(p)

    def not_applicable(self, policy, topo):
        m = MEMORY_POLICIES[policy]
        if topo.name != "auto" or not (m.kernel or m.numactl_since):
            return None
        why = m.missing_here()
        if why is None and m.numactl_since:
            from numaplace.machine.mempolicy import numactl_has
            why = numactl_has(m.option, m.numactl_since)
        return why


class Aprun(Launcher):
    """Cray ALPS: one process with N threads bound in order to the -cc CPU list."""
    name = "aprun"
    short = "ap"
    default_binding = "threads"
    on_measured_node = False       # ALPS starts the process on a compute node
    tools = ("aprun",)             # numactl, composed after it, runs on the compute node

    def cannot_express(self, p):
        if p.binding != "threads":
            return "aprun -cc binds every thread to one CPU of the list: use binding threads"
        return Numactl.memory_problem(p)

    def prefix(self, p):
        # ALPS binds the threads (-cc, in thread order); a memory policy is numactl's on
        # the compute node, composed after it (as ReFrame's launcher + modifier)
        binder = ["aprun", "-n", "1", "-d", str(p.threads), "-cc",
                  ",".join(map(str, getattr(p, "order", ()) or p.cpus))]
        return binder + (["numactl", Numactl.memory_option(p)] if p.memory.policy != "local" else [])

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


def missing_tools(launchers, which=None):
    """One line per tool a launcher needs that is not on PATH here ([] when all are)."""
    import shutil
    which = which or shutil.which
    return [f"launcher {name} needs {tool}, which is not on PATH here (Debian: apt-get install "
            f"{'util-linux' if tool == 'taskset' else tool}); nothing was run"
            for name in sorted(set(launchers)) for tool in LAUNCHERS[name].tools if not which(tool)]


def command(p, binary):
    """(argv, env) to run `binary` under placement p."""
    launcher = LAUNCHERS[p.launcher]
    return launcher.argv(p, binary), launcher.env(p)
register_words("launcher", LAUNCHERS)
register_words("memory_policy", MEMORY_POLICIES)
register_memory(MEMORY_POLICIES)
