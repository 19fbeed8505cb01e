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


def _nodes(value, topo, where, entry, memory=False):
    """Reader nodes (with CPUs) or, with memory, memory nodes: every node with memory this
    process may use, memory-only ones (CXL, HBM, GPU memory) included."""
    usable = topo.memory_nodes if memory else topo.cpu_nodes
    what = "a node with memory" if memory else "a node with CPUs"
    if value in (None, "all"):
        return usable
    nodes = value if isinstance(value, list) else parse_cpulist(str(value), where, entry)
    for n in nodes:
        if n not in usable:
            if memory and n in topo.nodes:
                raise ConfigError(where, entry, f"node {n} of platform {topo.name} has no memory"
                                  + (" this process may use" if topo.allowed else ""))
            outside = topo.outside_allocation(nodes=[n])
            raise ConfigError(where, entry, f"node {n} is not {what} in platform {topo.name} "
                              f"(nodes {format_cpulist(usable)})" + (f": {outside}" if outside else ""))
    return list(nodes)


def _cpus(value, topo, where, entry):
    """CPUs of a sweep or contention: all = every physical core (one hardware thread per
    core, as every other experiment counts), first = the first core this process may use."""
    if value in (None, "all"):
        return list(topo.cores())
    if value == "first":
        return [topo.cores()[0]]
    cpus = [value] if isinstance(value, int) else parse_cpulist(str(value), where, entry)
    bad = [c for c in cpus if topo.node_of(c) is None]
    if bad:
        outside = topo.outside_allocation(cpus=bad)
        raise ConfigError(where, entry, f"CPU {format_cpulist(bad)} is not in platform {topo.name} "
                          f"(CPUs {format_cpulist(topo.cpus)})" + (f": {outside}" if outside else ""))
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
    memory_cpu and the next physical cores, its own node's first, then node by node;
    `node` is memory_cpu's node's cores (never SMT siblings, never another node's count)."""
    x, = _cpus(spec["memory_cpu"], topo, where, entry + ".memory_cpu")
    home = topo.node_of(x)
    others = [c for n in [home] + [n for n in topo.cpu_nodes if n != home] for c in topo.node_cpus(n) if c != x]
    out = []
    for count in spec["threads"]:
        t = resolve_count(count, topo, node=home)
        if t > len(others) + 1:
            raise ConfigError(where, entry + ".threads", f"{t} threads but platform {topo.name} "
                              f"has {len(others) + 1} cores")
        order = (x, *others[:t - 1])
        out.append((order, f"{t} readers, memory on cpu {x}", f"ct-m{x}-t{t}", None))
    return out


def matrix(spec, topo, where, entry):
    """Reader node x memory node; a memory-only node (no CPU to first-touch it) is bound
    with membind in a first-touch matrix too: every memory node gets its column."""
    via = spec.get("via", "first-touch")
    readers = _nodes(spec.get("readers", "all"), topo, where, entry + ".readers")
    memories = _nodes(spec.get("memory", "all"), topo, where, entry + ".memory", memory=True)
    first = {n: topo.node_cpus(n)[0] for n in set(readers) | set(memories) if topo.nodes[n]}
    out = []
    for r, m in cells_of(spec, topo, readers, memories):
        if via == "membind" or m not in first:
            out.append(((first[r],), f"node {r} reads node {m} (membind)", f"mx-mb-r{r}-m{m}",
                        Memory("membind", (m,))))
        else:
            order = (first[m],) if r == m else (first[m], first[r])
            out.append((order, f"node {r} reads node {m} (first touch)", f"mx-ft-r{r}-m{m}", None))
    return out


SAMPLE_ABOVE = 64          # cells: auto measures every cell up to 8 x 8 nodes, one per class beyond


def cells_of(spec, topo, readers, memories):
    """The (reader, memory) cells a matrix measures: every one (cells: all), or one per
    distance class (cells: distance-classes; auto beyond SAMPLE_ABOVE cells): the first
    pair of each (SLIT distance, memory-only or not) in reader order, so a 32-node
    machine measures its few kinds of path instead of its 1024 cells."""
    every = [(r, m) for r in readers for m in memories]
    how = spec.get("cells", "all")
    if how == "all" or (how == "auto" and len(every) <= SAMPLE_ABOVE):
        return every
    seen, keep = set(), []
    for r, m in every:
        key = (topo.distance(r, m), bool(topo.nodes[m]))
        if key not in seen:
            seen.add(key)
            keep.append((r, m))
    return keep


def sampled_note(spec, topo, where, entry):
    """The plan's line for a sampled matrix, or None when every cell is measured."""
    if "matrix" not in spec:
        return None
    m = spec["matrix"]
    readers = _nodes(m.get("readers", "all"), topo, where, entry + ".matrix.readers")
    memories = _nodes(m.get("memory", "all"), topo, where, entry + ".matrix.memory", memory=True)
    kept = cells_of(m, topo, readers, memories)
    if len(kept) == len(readers) * len(memories):
        return None
    return (f"{entry}: matrix of {len(readers)} x {len(memories)} nodes sampled: one cell per SLIT distance "
            f"and memory kind, {len(kept)} of {len(readers) * len(memories)} cells (cells: all measures every one)")


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
    return len(cells_of(m, topo, _nodes(m.get("readers", "all"), topo, where, e + ".readers"),
                        _nodes(m.get("memory", "all"), topo, where, e + ".memory", memory=True)))


def expand(spec, topo, where, entry):
    if "sweep" in spec:
        return sweep(spec["sweep"], topo, where, entry + ".sweep")
    if "contention" in spec:
        return contention(spec["contention"], topo, where, entry + ".contention")
    return matrix(spec["matrix"], topo, where, entry + ".matrix")
