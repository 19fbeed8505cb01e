"""Placement specs of the memory micro-benchmarks (membw, memlat): the thesis's sweeps and
node × node matrices, as concrete cells for the ordinary placement machinery.

Both benchmarks first-touch their buffer on OpenMP thread 0 and read it from thread 0
(local) and then thread 1 (the other CPU), so a cell fixes the *order* of its CPUs:
thread 0 on the memory CPU, thread 1 on the reader. The launchers express that order
with per-thread binding (OMP_PLACES lists the places in thread order; aprun -cc too).

  sweep:  {memory_cpu: 0 | all, readers: all | self | "0-15"}
      memory first-touched by memory_cpu, read from every reader CPU (thesis B1/B4):
      a reader equal to memory_cpu is the local cell, one thread (readers: self = only
      that one: B1 local on every CPU with memory_cpu: all).
  contention: {memory_cpu: 4, threads: [2, 4, 16]}
      B2: thread 0 on memory_cpu first-touches, then t threads (memory_cpu and the next
      CPUs node by node) read at once (membw --mode parallel).
  matrix: {via: first-touch | membind, readers: all | nodes, memory: all | nodes}
      reader node × memory node, each node represented by its first CPU. first-touch:
      thread 0 on the memory node's CPU writes, thread 1 on the reader's CPU reads (as
      the thesis did); membind: one thread on the reader's CPU, memory bound to the
      memory node (numactl --membind: a full node fails instead of spilling).

expand(spec, topo, where, entry) → [(cpus in thread order, shape, id, Memory or None)];
Memory None = the experiment's memory policies apply (first touch: local)."""
from __future__ import annotations


from numaplace import ConfigError
from numaplace.core.cpulist import format_cpulist, parse_cpulist
from numaplace.plan.placement import Memory, resolve_count


def _nodes(value, topo, where, entry):
    usable = [n for n in topo.node_ids if topo.nodes[n]]
    if value in (None, "all"):
        return usable
    nodes = value if isinstance(value, list) else parse_cpulist(str(value), where, entry)
    for n in nodes:
        if n not in usable:
            raise ConfigError(where, entry, f"node {n} is not a node with CPUs in platform {topo.name} "
                              f"(nodes {format_cpulist(usable)})")
    return list(nodes)


def _cpus(value, topo, where, entry):
    if value in (None, "all"):
        return list(topo.cpus)
    cpus = [value] if isinstance(value, int) else parse_cpulist(str(value), where, entry)
    bad = [c for c in cpus if topo.node_of(c) is None]
    if bad:
        raise ConfigError(where, entry, f"CPU {format_cpulist(bad)} is not in platform {topo.name} "
                          f"(CPUs {format_cpulist(topo.cpus)})")
    return cpus


def sweep(spec, topo, where, entry):
    out = []
    for x in _cpus(spec["memory_cpu"], topo, where, entry + ".memory_cpu"):
        readers = [x] if spec.get("readers") == "self" else \
            _cpus(spec.get("readers", "all"), topo, where, entry + ".readers")
        for y in readers:
            order = (x,) if y == x else (x, y)
            out.append((order, f"memory on cpu {x}, read by cpu {y}", f"sw-m{x}-r{y}", None))
    return out


def contention(spec, topo, where, entry):
    """B2: memory first-touched by memory_cpu (thread 0), then t threads reading at once:
    memory_cpu and the next CPUs in compact order (node by node), for each t."""
    x = spec["memory_cpu"]
    _cpus(x, topo, where, entry + ".memory_cpu")
    others = [c for n in topo.node_ids for c in topo.nodes[n] if c != x]
    out = []
    for count in spec["threads"]:
        t = resolve_count(count, topo)              # node, all: physical cores, as the NPB placements
        if t > len(others) + 1:
            raise ConfigError(where, entry + ".threads", f"{t} threads but platform {topo.name} "
                              f"has {len(others) + 1} CPUs")
        order = (x, *others[:t - 1])
        out.append((order, f"{t} readers, memory on cpu {x}", f"ct-m{x}-t{t}", None))
    return out


def matrix(spec, topo, where, entry):
    via = spec.get("via", "first-touch")
    readers = _nodes(spec.get("readers", "all"), topo, where, entry + ".readers")
    memories = _nodes(spec.get("memory", "all"), topo, where, entry + ".memory")
    first = {n: topo.nodes[n][0] for n in set(readers) | set(memories)}
    out = []
    for r in readers:
        for m in memories:
            if via == "membind":
                if topo.memory_mb.get(m) == 0:
                    raise ConfigError(where, entry + ".memory", f"node {m} of platform {topo.name} has no memory")
                out.append(((first[r],), f"node {r} reads node {m} (membind)", f"mx-mb-r{r}-m{m}",
                            Memory("membind", (m,))))
            else:
                order = (first[m],) if r == m else (first[m], first[r])
                out.append((order, f"node {r} reads node {m} (first touch)", f"mx-ft-r{r}-m{m}", None))
    return out


def count(spec, topo, where, entry):
    """How many cells a spec gives, counted before any is made (planning stays bounded
    on a platform of thousands of CPUs: a sweep of all × all is their square)."""
    if "sweep" in spec:
        s, e = spec["sweep"], entry + ".sweep"
        memory = len(_cpus(s["memory_cpu"], topo, where, e + ".memory_cpu"))
        readers = 1 if s.get("readers") == "self" else len(_cpus(s.get("readers", "all"), topo, where, e + ".readers"))
        return memory * readers
    if "contention" in spec:
        return len(spec["contention"]["threads"])
    m, e = spec["matrix"], entry + ".matrix"
    return len(_nodes(m.get("readers", "all"), topo, where, e + ".readers")) * \
        len(_nodes(m.get("memory", "all"), topo, where, e + ".memory"))


def expand(spec, topo, where, entry):
    if "sweep" in spec:
        return sweep(spec["sweep"], topo, where, entry + ".sweep")
    if "contention" in spec:
        return contention(spec["contention"], topo, where, entry + ".contention")
    return matrix(spec["matrix"], topo, where, entry + ".matrix")
