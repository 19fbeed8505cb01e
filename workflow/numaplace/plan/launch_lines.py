"""The launch line to use (issue 41, item 7): one placement written out as the commands a
user runs their own job with, each a single bash line that runs as written, and a checker
that reads a line back and says which CPUs each thread gets and which memory nodes its
policy uses.

    launch_lines(placement, program="./cg.B.x") ->
        {"numactl": entry, "taskset": entry, "slurm": entry, "aprun": entry}
    entry: {"line": str, "cpus": [...], "nodes": [...], "note": str}   (a line)
           {"line": None, "why": str}                                 (none possible)

`cpus`: the CPU of thread 0, 1, ... where every thread has its own CPU (binding threads),
else the mask all threads share (binding process). `nodes`: the memory nodes the policy
uses: the CPUs' own nodes for local (first touch), else the policy's nodes.

Lines are built from the launcher registry (numaplace.plan.launch: omp_env and
MEMORY_POLICIES' numactl options), quoted with shlex; environment assignments are written
NAME='value' (the value quoted, never the assignment, which bash would take for a command).

`resolve(line, topo)` and `resolves(entry, placement, topo)` are the check: the line is
split back (shlex.split) and only its own flags say where threads and pages go. They are
for tests and proofs (tests/test_launch_lines.py, tests/benchmarks/launch_lines_vm.py),
not for the report path.
"""
from __future__ import annotations

import re
import shlex

from numaplace.core.cpulist import format_cpulist, parse_cpulist
from numaplace.plan.launch import LAUNCHERS, MEMORY_POLICIES, omp_env

KINDS = ("numactl", "taskset", "slurm", "aprun")


def _placement(p):
    """A Placement of a Placement, a plan row / placement dict, or a record (its
    `placement`)."""
    from numaplace.plan.placement import Placement
    if isinstance(p, Placement):
        return p
    if isinstance(p, dict) and "cpus" not in p and isinstance(p.get("placement"), dict):
        p = p["placement"]
    return Placement.from_dict(p)


def thread_cpus(p):
    """The placement's CPUs as the entry gives them: per thread in thread order (binding
    threads), or the shared mask, ascending (binding process)."""
    return list(p.order or p.cpus) if p.binding == "threads" else sorted(p.cpus)


def memory_nodes(p):
    """The memory nodes the placement's policy uses: local → its CPUs' nodes."""
    return sorted(p.nodes) if p.memory.policy == "local" else sorted(p.memory.nodes)


def _numactl_memory(p):
    """numactl's option for the placement's memory policy (--localalloc for local)."""
    return MEMORY_POLICIES[p.memory.policy].numactl.format(nodes=format_cpulist(p.memory.nodes))


def _line(env, argv):
    return " ".join([f"{k}={shlex.quote(str(v))}" for k, v in env.items()]
                    + [shlex.quote(str(a)) for a in argv])


def _hex(ids):
    return hex(sum(1 << i for i in ids))


def _entry(p, env, argv, note=""):
    return {"line": _line(env, argv), "cpus": thread_cpus(p), "nodes": memory_nodes(p), "note": note}


def _numactl(p, program, args):
    why = LAUNCHERS["numactl"].cannot_express(p)
    if why:
        return {"line": None, "why": why}
    return _entry(p, omp_env(p), ["numactl", f"--physcpubind={p.cpulist}", _numactl_memory(p),
                                  program, *args])


def _taskset(p, program, args):
    if p.memory.policy != "local":
        return {"line": None, "why": f"taskset sets only the CPU mask, not memory {p.memory.label}: "
                                      f"use the numactl line"}
    return _entry(p, omp_env(p), ["taskset", "-c", p.cpulist, program, *args],
                  "memory: first touch (the kernel's default policy)")


def _slurm(p, program, args):
    # One task with many threads: --cpu-bind=map_cpu:<list> would give the task (rank 0)
    # the list's first CPU alone, and every OpenMP thread would share it (map_cpu is one CPU
    # per *task*). mask_cpu:<hex> gives the task a fat mask of all the placement's CPUs;
    # OMP_PLACES + OMP_PROC_BIND, which srun passes on (--export=ALL is its default), then
    # bind thread i to its own CPU inside that mask, in the placement's thread order. An
    # explicit mask names OS CPU ids and is honoured only where the step holds every CPU of
    # the node (srun(1), --cpu-bind; Slurm 22.05 otherwise drops it): hence --exclusive and
    # no --cpus-per-task, which implies --exact and would leave the step only n CPUs of
    # Slurm's choosing. OMP_NUM_THREADS, not --cpus-per-task, sets the thread count.
    mem = p.memory
    argv = ["srun", "--nodes=1", "--ntasks=1", "--exclusive", f"--cpu-bind=mask_cpu:{_hex(p.cpus)}"]
    note = ("needs the whole node (--exclusive, or inside a whole-node allocation); "
            "the mask is OS CPU ids")
    if mem.policy == "local":
        # Slurm's local binds the task's memory to the nodes of its CPUs (strict, no spill)
        argv.append("--mem-bind=local")
        note += "; --mem-bind=local binds memory to the CPUs' nodes (no spill to other nodes)"
    elif mem.policy == "membind":
        argv.append(f"--mem-bind=map_mem:{mem.nodes[0]}" if len(mem.nodes) == 1
                    else f"--mem-bind=mask_mem:{_hex(mem.nodes)}")
    elif mem.policy == "preferred" and len(mem.nodes) == 1:
        argv.append(f"--mem-bind=prefer,map_mem:{mem.nodes[0]}")
    else:
        # --mem-bind has no interleave, weighted interleave or preferred-many: numactl inside
        # the task sets the policy, within srun's CPU mask (a launcher and a modifier)
        argv += ["numactl", _numactl_memory(p)]
        note += f"; srun --mem-bind cannot say {mem.policy}: numactl in the task sets it " \
                f"(numactl must be on the compute node)"
    return _entry(p, omp_env(p), argv + [program, *args], note)


def _aprun(p, program, args):
    env = {"OMP_NUM_THREADS": str(p.threads)}      # ALPS binds the threads, no OMP_PLACES
    if p.binding == "threads":
        argv = ["aprun", "-n", "1", "-d", str(p.threads), "-cc", ",".join(map(str, thread_cpus(p)))]
        note = "-cc binds thread i to the list's i-th CPU"
        if p.memory.policy != "local":
            # ALPS places memory by first touch; numactl in the PE sets the policy and execs
            # the program in the same process, whose threads ALPS then binds as they start
            argv += ["numactl", _numactl_memory(p)]
            note += f"; numactl in the PE sets {p.memory.label}"
    else:
        # one mask for every thread: no ALPS binding (-cc none), numactl sets the mask
        argv = ["aprun", "-n", "1", "-d", str(len(p.cpus)), "-cc", "none",
                "numactl", f"--physcpubind={p.cpulist}", _numactl_memory(p)]
        note = "-cc none: ALPS binds nothing, numactl gives the threads one mask"
    return _entry(p, env, argv + [program, *args], note)


def launch_lines(placement, program="./cg.B.x", args=()):
    """The lines that run `program` under this placement: numactl, taskset, Slurm's srun and
    Cray's aprun (see the module's docstring for an entry's keys)."""
    p = _placement(placement)
    args = [str(a) for a in args]
    return {"numactl": _numactl(p, program, args), "taskset": _taskset(p, program, args),
            "slurm": _slurm(p, program, args), "aprun": _aprun(p, program, args)}


# -- the check: a line read back ------------------------------------------------------------

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_NUMACTL_MEMORY = {m.option: m.name for m in MEMORY_POLICIES.values()}
_NUMACTL_SHORT = {"-l": "--localalloc", "-i": "--interleave", "-m": "--membind", "-p": "--preferred",
                  "-w": "--weighted-interleave", "-P": "--preferred-many", "-C": "--physcpubind"}


class LineError(ValueError):
    """A line the checker cannot read: an unknown command or option."""


def _hexbits(text):
    value = int(text, 16)
    return sorted(i for i in range(value.bit_length()) if value >> i & 1)


def _node_of(topo):
    if hasattr(topo, "node_of"):
        return topo.node_of
    return lambda c: topo.get(c)


def _options(words, i, takes_value=()):
    """The options at words[i:] up to the first word that is not one: [(name, value)], next i.
    `--name=value`, `--name value` / `-x value` for names in takes_value, flags alone."""
    out = []
    while i < len(words) and words[i].startswith("-"):
        w = words[i]
        if "=" in w and w.startswith("--"):
            name, value = w.split("=", 1)
            i += 1
        elif w in takes_value:
            if i + 1 >= len(words):
                raise LineError(f"{w} needs a value")
            name, value = w, words[i + 1]
            i += 2
        else:
            name, value = w, None
            i += 1
        out.append((name, value))
    return out, i


def _slurm_list(value):
    """Slurm's option value split into its parts: a comma not followed by a digit separates
    parts ("prefer,map_mem:1,3" → ["prefer", "map_mem:1,3"]), as srun reads it."""
    return re.sub(r",(?![0-9])", ";", value).split(";")


def resolve(line, topo):
    """What the line does, from its own words: {"threads", "thread_cpus" (per thread, a
    sorted list), "policy" (numaplace's word), "nodes" (the memory nodes the policy uses),
    "program", "args"}. topo: anything with node_of(cpu), or a CPU → node dict."""
    node_of = _node_of(topo)
    words = shlex.split(line)
    env, i = {}, 0
    while i < len(words) and _ASSIGN.match(words[i]):
        k, v = words[i].split("=", 1)
        env[k] = v
        i += 1
    mask = None           # the process's CPU mask (None: not restricted by the line)
    per_thread = None     # ALPS -cc list: thread i → one CPU
    depth = None          # aprun -d
    policy, nodes, strict_local = "local", None, False    # the kernel's default: first touch
    program = None
    while i < len(words):
        cmd = words[i]
        i += 1
        if cmd == "numactl":
            opts, i = _options(words, i, takes_value=tuple(k for k in _NUMACTL_SHORT if k != "-l"))
            for name, value in opts:
                name = _NUMACTL_SHORT.get(name, name)
                if name == "--physcpubind":
                    mask = set(parse_cpulist(value))
                    per_thread = None            # numactl's mask replaces ALPS's binding
                elif name == "--localalloc":
                    policy, nodes, strict_local = "local", None, False
                elif name in _NUMACTL_MEMORY:
                    policy, nodes = _NUMACTL_MEMORY[name], parse_cpulist(value)
                else:
                    raise LineError(f"numactl option {name} is not modelled")
        elif cmd == "taskset":
            opts, i = _options(words, i, takes_value=("-c", "--cpu-list"))
            if [n for n, _ in opts] not in (["-c"], ["--cpu-list"]):
                raise LineError(f"taskset {opts}: only taskset -c LIST PROGRAM is modelled")
            mask, per_thread = set(parse_cpulist(opts[0][1])), None
        elif cmd == "srun":
            opts, i = _options(words, i)
            for name, value in opts:
                if name in ("--nodes", "--ntasks"):
                    if value != "1":
                        raise LineError(f"{name}={value}: one task on one node is modelled")
                elif name in ("--exclusive", "--cpus-per-task"):
                    pass
                elif name == "--cpu-bind":
                    parts = [x for x in _slurm_list(value) if x not in ("quiet", "q", "verbose", "v")]
                    (kind,) = parts
                    if kind in ("none", "no"):
                        continue
                    what, _, lst = kind.partition(":")
                    first = lst.split(",")[0]            # one task: the list's first element
                    if what == "mask_cpu":
                        mask = set(_hexbits(first))
                    elif what == "map_cpu":
                        mask = {int(first, 0)}
                    else:
                        raise LineError(f"--cpu-bind={value} is not modelled")
                    per_thread = None
                elif name == "--mem-bind":
                    parts = [x for x in _slurm_list(value) if x not in ("quiet", "q", "verbose", "v")]
                    prefer = any(x in ("prefer", "p") for x in parts)
                    parts = [x for x in parts if x not in ("prefer", "p")]
                    (kind,) = parts
                    what, _, lst = kind.partition(":")
                    first = lst.split(",")[0]
                    if what in ("none", "no"):
                        continue
                    if what == "local":
                        policy, nodes, strict_local = "local", None, True
                        continue
                    if what == "map_mem":
                        got = [int(first, 0)]
                    elif what == "mask_mem":
                        got = _hexbits(first)
                    else:
                        raise LineError(f"--mem-bind={value} is not modelled")
                    # prefer: the first node of the set first, others after (numa_set_preferred)
                    policy, nodes = ("preferred", got[:1]) if prefer else ("membind", got)
                else:
                    raise LineError(f"srun option {name} is not modelled")
        elif cmd == "aprun":
            opts, i = _options(words, i, takes_value=("-n", "-N", "-d", "-cc"))
            for name, value in opts:
                if name in ("-n", "-N"):
                    if value != "1":
                        raise LineError(f"aprun {name} {value}: one PE is modelled")
                elif name == "-d":
                    depth = int(value)
                elif name == "-cc":
                    if value == "none":
                        per_thread = None
                    elif re.fullmatch(r"\d+(,\d+)*", value):
                        per_thread = [int(c) for c in value.split(",")]
                        mask = set(per_thread)
                    else:
                        raise LineError(f"aprun -cc {value} is not modelled")
                else:
                    raise LineError(f"aprun option {name} is not modelled")
        else:
            program = cmd
            break
    if program is None:
        raise LineError("no program in the line")
    if "OMP_NUM_THREADS" not in env:
        raise LineError("OMP_NUM_THREADS is not set: the thread count would be the runtime's guess")
    threads = int(env["OMP_NUM_THREADS"])
    if depth is not None and depth < threads:
        raise LineError(f"aprun -d {depth} reserves fewer CPUs than {threads} threads")
    places = env.get("OMP_PLACES")
    if places and "OMP_PROC_BIND" not in env:
        raise LineError("OMP_PLACES without OMP_PROC_BIND: whether threads are bound is the "
                        "runtime's choice (libgomp binds, others may not)")
    bind = env.get("OMP_PROC_BIND", "false").split(",")[0].lower()
    if places and bind != "false":
        if per_thread is not None:
            raise LineError("both ALPS -cc and OMP_PLACES bind the threads")
        parsed = [parse_cpulist(x) for x in re.findall(r"\{([^}]*)\}", places)]
        if len(parsed) != threads:
            raise LineError(f"{len(parsed)} places for {threads} threads: the binding policy decides "
                            f"(not modelled)")
        for pl in parsed:
            if mask is not None and not set(pl) <= mask:
                raise LineError(f"place {{{format_cpulist(pl)}}} is outside the mask "
                                f"{format_cpulist(sorted(mask))}: the runtime drops it")
        per = [sorted(pl) for pl in parsed]
    elif per_thread is not None:
        if len(per_thread) < threads:
            raise LineError(f"-cc lists {len(per_thread)} CPUs for {threads} threads")
        per = [[c] for c in per_thread[:threads]]
    else:
        if mask is None:
            raise LineError("nothing in the line restricts the CPUs")
        per = [sorted(mask)] * threads
    used = sorted({c for cs in per for c in cs})
    if policy == "local":
        # first touch: the node of the touching thread's CPU; Slurm's local: the nodes of
        # the task's mask, bound
        nodes = sorted({node_of(c) for c in (sorted(mask) if strict_local and mask else used)})
    return {"threads": threads, "thread_cpus": per, "policy": policy, "nodes": sorted(nodes),
            "program": program, "args": words[i:]}


def resolves(entry, placement, topo, program=None):
    """True when the entry's line, read back, gives every thread the placement's CPUs (its
    own CPU in thread order, or the shared mask) and the policy the placement's memory
    policy on its nodes, and the entry says so too; AssertionError naming the difference
    otherwise. An entry without a line is not checked (False)."""
    p = _placement(placement)
    if entry.get("line") is None:
        return False
    got = resolve(entry["line"], topo)
    if p.binding == "threads":
        want_cpus = [[c] for c in thread_cpus(p)]
    else:
        want_cpus = [sorted(p.cpus)] * p.threads
    problems = []
    if got["threads"] != p.threads:
        problems.append(f"{got['threads']} threads, placement {p.threads}")
    if got["thread_cpus"] != want_cpus:
        problems.append(f"threads' CPUs {got['thread_cpus']}, placement {want_cpus}")
    if got["policy"] != p.memory.policy or got["nodes"] != memory_nodes(p):
        problems.append(f"memory {got['policy']} {got['nodes']}, placement {p.memory.policy} {memory_nodes(p)}")
    if entry["cpus"] != thread_cpus(p) or entry["nodes"] != memory_nodes(p):
        problems.append(f"entry says cpus {entry['cpus']} nodes {entry['nodes']}, placement "
                        f"{thread_cpus(p)} {memory_nodes(p)}")
    if program is not None and got["program"] != program:
        problems.append(f"program {got['program']}, asked {program}")
    if problems:
        raise AssertionError(f"{p.id}: {entry['line']}: " + "; ".join(problems))
    return True
