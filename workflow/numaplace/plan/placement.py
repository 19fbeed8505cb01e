"""The placement language: what a study asks for → concrete placements with stable ids.

A placement spec is one of
  cpus: "0-3,8"                      explicit OS CPU list
  layout: "2/2/2/2", nodes: [0,1,2,3] per-node thread counts on given nodes
  layout: "2/2", nodes: all-choices  ... on every choice of nodes (distinct: true keeps
                                     one representative per class of choices that the
                                     distance matrix makes equivalent)
  compact: [1, 2, 4] / spread: [2, 4] generators for thread counts
combined with every memory policy (local, interleave, membind, preferred) and binding
(process mask, or one CPU per OpenMP thread) of its experiment.

Portable forms, resolved against the machine's topology (so that one study file runs on a
1-, 2-, 4- or 8-node machine):
  compact/spread counts: node (one node's cores), half (half the machine's cores), all
                         (every core), "<k>/node" (k on every node); physical cores unless
                         the spec says smt: true (then every hardware thread counts)
  memory nodes:          interleave: all; membind/preferred: nearest | farthest (from the
                         threads' nodes, by the distance matrix); membind: each-distance
                         (one node of every remote distance class from the master's node)
A portable form that cannot exist on this machine (spreading over one node, a remote
node on a one-node machine, a layout on more nodes than there are) is left out with one
line saying why (NotApplicable), never an error and never replaced by another placement.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from numaplace import ConfigError
from numaplace.plan.launch import LAUNCHERS, MEMORY_POLICIES
from numaplace.core.cpulist import format_cpulist, parse_cpulist


class NotApplicable(Exception):
    """A portable placement or memory target that cannot exist on this machine: the
    message says why, e.g. "1 NUMA node"."""


class SameAs(NotApplicable):
    """A portable target that is, on this machine, exactly another one of the same list
    whose own line already says why it cannot exist: left out without a second line.
    (Where both exist they resolve to the same placement, which is planned once.)"""


COUNT_WORDS = ("node", "half", "all")
MEMORY_WORDS = {m.name: m.words for m in MEMORY_POLICIES.values() if m.words}


def nodes_phrase(n):
    return f"{n} NUMA node" + ("" if n == 1 else "s")


def per_node(count):
    """k of a "<k>/node" count, else None."""
    return int(count.split("/")[0]) if isinstance(count, str) and count.endswith("/node") else None


def resolve_count(count, topo, smt=False, node=None):
    """A thread count of compact/spread: an integer, or a word relative to the topology.
    `node` is the cores of the placement's own node (default: the first node with CPUs,
    where compact starts): on unequal nodes, never another node's count."""
    if isinstance(count, int):
        return count
    nodes = topo.cpu_nodes
    if count == "node":
        return len(topo.node_cpus(nodes[0] if node is None else node, smt))
    if count == "half":
        return max(1, len(topo.cores(smt)) // 2)
    if count == "all":
        return len(topo.cores(smt))
    return int(count.split("/")[0]) * len(nodes)          # "<k>/node"


def _mean_distance(topo, node, to):
    return sum(topo.distance(t, node) for t in to) / len(to)


def resolve_memory_nodes(policy, value, thread_nodes, topo):
    """Memory nodes of a portable target, from where the threads run; lists of nodes
    (each-distance gives several). NotApplicable when the machine has no such node."""
    mem = topo.memory_nodes
    if value == "all":
        if len(mem) < 2:
            raise NotApplicable(f"{nodes_phrase(len(mem))} with memory: interleave over all is local")
        return [tuple(mem)]
    if value == "cpu-nodes":          # the nodes with CPUs, without memory-only ones
        with_cpus = [n for n in mem if topo.nodes[n]]
        if len(with_cpus) == len(mem) and len(mem) < 2:
            raise SameAs("interleave over the CPU nodes is interleave over all here")
        if len(with_cpus) < 2:
            raise NotApplicable(f"{nodes_phrase(len(with_cpus))} with CPUs and memory: interleave over them is local")
        return [tuple(with_cpus)]
    others = [n for n in mem if n not in thread_nodes]
    if not others:
        raise NotApplicable(f"{nodes_phrase(len(mem))} with memory, none of them away from the threads' "
                            f"node{'s' if len(thread_nodes) > 1 else ''} {format_cpulist(thread_nodes)}")
    if value == "each-distance":
        master = thread_nodes[0]
        classes = {}
        for n in others:
            classes.setdefault(topo.distance(master, n), n)
        return [(classes[d],) for d in sorted(classes)]
    dist = {n: _mean_distance(topo, n, thread_nodes) for n in others}
    pick = min if value == "nearest" else max
    best = pick(dist.values())
    return [(min(n for n in others if dist[n] == best),)]


@dataclass(frozen=True)
class Memory:
    policy: str                 # local | interleave | membind | preferred
    nodes: tuple = ()

    @classmethod
    def parse(cls, spec, topo, where, entry):
        if spec == "local":
            return cls("local")
        (policy, value), = spec.items()
        nodes = parse_cpulist(value, where, f"{entry}.{policy}")   # a list, one node or "0-1,3"
        outside = topo.outside_allocation(nodes=nodes)
        if outside:
            raise NotApplicable(f"{policy} {format_cpulist(nodes)}: {outside}")
        for n in nodes:
            if n not in topo.nodes:
                raise ConfigError(where, f"{entry}.{policy}",
                                  f"node {n} is not in platform {topo.name} (nodes {format_cpulist(topo.node_ids)})")
            if topo.memory_mb.get(n) == 0:
                raise ConfigError(where, f"{entry}.{policy}", f"node {n} of platform {topo.name} has no memory")
        return cls(policy, tuple(sorted(set(nodes))))

    @classmethod
    def resolve(cls, spec, thread_nodes, topo, where, entry):
        """The Memory of one spec for threads on thread_nodes: a list (each-distance gives
        several); portable words resolved, NotApplicable when they cannot be here."""
        if spec != "local":
            (policy, value), = spec.items()
            if isinstance(value, str) and value in MEMORY_WORDS.get(policy, ()):
                return [cls(policy, nodes) for nodes in resolve_memory_nodes(policy, value, thread_nodes, topo)]
        return [cls.parse(spec, topo, where, entry)]

    @property
    def label(self):
        return "local" if self.policy == "local" else f"{self.policy} {format_cpulist(self.nodes)}"

    @property
    def short(self):
        return MEMORY_POLICIES[self.policy].short + format_cpulist(self.nodes, ".")


@dataclass(frozen=True)
class Placement:
    """One concrete placement: where the threads go and where the memory may go."""
    cpus: tuple
    memory: Memory
    binding: str                # process | threads
    launcher: str
    shape: str                  # how the user wrote it, e.g. "2/2/2/2 on 0-3", "cpus 0,1"
    id: str = ""
    nodes: tuple = field(default=())      # NUMA nodes holding the CPUs, ascending
    layout: tuple = field(default=())     # threads per node in `nodes`
    order: tuple = field(default=())      # CPU of thread 0, 1, ... when not ascending (memory cells)
    team: int = 0                         # threads when fewer than CPUs (unpinned: the OS places them)

    @property
    def threads(self):
        return self.team or len(self.cpus)

    @property
    def cpulist(self):
        return format_cpulist(self.cpus)

    @property
    def label(self):
        return label_of(self.to_dict())

    @property
    def layout_label(self):
        return "/".join(map(str, self.layout)) + " on " + format_cpulist(self.nodes)

    @classmethod
    def from_dict(cls, d):
        """The placement of a plan row or record (the inverse of to_dict)."""
        layout = d["layout"].split(" on ")[0]
        return cls(tuple(parse_cpulist(d["cpus"])),
                   Memory(d["memory"], tuple(parse_cpulist(d["memory_nodes"])) if d["memory_nodes"] else ()),
                   d["binding"], d["launcher"], d["shape"], d["id"], tuple(parse_cpulist(d["nodes"])),
                   tuple(int(n) for n in layout.split("/")),
                   tuple(int(c) for c in d["order"].split(",")) if d.get("order") else (),
                   int(d["threads"]) if int(d.get("threads") or 0) not in (0, len(parse_cpulist(d["cpus"]))) else 0)

    def to_dict(self):
        """What defines the measurement (the label is derived, so not stored)."""
        return {"id": self.id, "shape": self.shape,
                "cpus": self.cpulist, "threads": self.threads,
                "nodes": format_cpulist(self.nodes), "layout": self.layout_label,
                "memory": self.memory.policy, "memory_nodes": format_cpulist(self.memory.nodes),
                "binding": self.binding, "launcher": self.launcher,
                **({"order": ",".join(map(str, self.order))} if self.order else {})}


def memory_label_of(d):
    """As Memory.label, of a placement dict (plan row or record): "local" or "<policy> <nodes>"."""
    return d["memory"] if d["memory"] == "local" else f"{d['memory']} {d.get('memory_nodes', '')}"


def label_of(d):
    """Human label of a placement dict (plan row or record), as Placement.label."""
    parts = [d["shape"]]
    if d["memory"] != "local":
        parts.append(memory_label_of(d))
    if d["binding"] == "threads":
        parts.append("pinned threads")
    return " · ".join(parts)


MEMORY_SPECS = {"sweep", "matrix", "contention"}    # numaplace.plan.memory_specs


def default_id(cpus, memory, binding, launcher, team=0):
    return "_".join(["c" + format_cpulist(cpus, ".") + (f"x{team}" if team else ""), memory.short,
                     "p" if binding == "process" else "t", LAUNCHERS[launcher].short])


def finish(cpus, memory, binding, launcher, shape, topo, pid=None, team=0):
    """A placement of CPUs given in thread order (kept as `order` when not ascending);
    team: fewer threads than CPUs, placed by the OS within them."""
    order = tuple(cpus)
    cpus = tuple(sorted(cpus))
    nodes = tuple(sorted({topo.node_of(c) for c in cpus}))
    layout = tuple(sum(1 for c in cpus if topo.node_of(c) == n) for n in nodes)
    return Placement(cpus, memory, binding, launcher, shape,
                     pid or default_id(cpus, memory, binding, launcher, team), nodes, layout,
                     order if order != cpus else (), team)


def layout_cpus(counts, nodes, topo, where, entry):
    cpus = []
    outside = topo.outside_allocation(nodes=[n for n in nodes if n not in topo.nodes])
    if outside:
        raise NotApplicable(f"layout on nodes {format_cpulist(nodes)}: {outside}")
    for n, k in zip(nodes, counts):
        if n not in topo.nodes:
            raise ConfigError(where, entry, f"node {n} is not in platform {topo.name} "
                              f"(nodes {format_cpulist(topo.node_ids)})")
        if k > len(topo.nodes[n]):
            raise ConfigError(where, entry, f"layout asks for {k} threads on node {n}, "
                              f"which has {len(topo.nodes[n])} CPUs")
        # first k cores of the node, as in the thesis; past its cores, their SMT siblings
        cores = topo.node_cpus(n)
        cpus += (cores + [c for c in topo.node_cpus(n, smt=True) if c not in cores])[:k]
    return cpus


def distinct_orders(counts):
    """The distinct orderings of the per-node counts, ascending; made one by one, not
    by filtering all k! permutations (a layout of 12 ones has 1 ordering, not 479 million)."""
    if not counts:
        return [()]
    out = []
    for k in sorted(set(counts)):
        rest = list(counts)
        rest.remove(k)
        out += [(k,) + tail for tail in distinct_orders(rest)]
    return out


def count_choices(counts, topo):
    """How many node choices `nodes: all-choices` can give, before any is made."""
    usable = sum(1 for n in topo.node_ids if topo.nodes[n])
    orders = math.factorial(len(counts))
    for k in set(counts):
        orders //= math.factorial(counts.count(k))
    return math.comb(usable, len(counts)) * orders


def node_choices(counts, topo, distinct):
    """Every assignment of the per-node counts to distinct nodes (node sets ascending,
    counts in every distinct order); with distinct, one per automorphism orbit."""
    usable = [n for n in topo.node_ids if topo.nodes[n]]
    choices = []
    orders = distinct_orders(counts) if len(counts) <= len(usable) else []
    for nodes in itertools.combinations(usable, len(counts)):
        for order in orders:
            if all(k <= len(topo.nodes[n]) for n, k in zip(nodes, order)):
                choices.append(tuple(zip(nodes, order)))
    if not distinct:
        return choices
    autos = topo.automorphisms()
    seen, keep = set(), []
    for ch in choices:
        key = frozenset(ch)
        if key in seen:
            continue
        keep.append(ch)
        for a in autos:
            seen.add(frozenset((a[n], k) for n, k in ch))
    return keep


def compact(t, topo, smt=False):
    """The first t cores, node after node: packed on the fewest nodes."""
    return topo.cores(smt)[:t]


def spread(t, topo, smt=False):
    """Round-robin over the nodes: threads as evenly spread as the node sizes allow."""
    queues = [list(topo.node_cpus(n, smt)) for n in topo.cpu_nodes]
    cpus = []
    while len(cpus) < t and any(queues):
        for q in queues:
            if q and len(cpus) < t:
                cpus.append(q.pop(0))
    return cpus
