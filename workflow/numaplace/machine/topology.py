"""NUMA topology: nodes → OS CPU ids, memory per node, distance matrix.

Read from sysfs for ``platform: auto`` or from ``config/platforms/<name>.yaml``. CPU
numbering is never assumed contiguous per node.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from numaplace import ConfigError
from numaplace.core.cpulist import check_cpulist_text, format_cpulist, parse_cpulist

SYSFS_NODES = Path("/sys/devices/system/node")
@dataclass
class Topology:
    name: str
    nodes: dict                      # node id → sorted list of OS CPU ids
    memory_mb: dict = field(default_factory=dict)   # node id → MiB (0: memory-less)
    distances: list | None = None    # SLIT-like matrix indexed by position in node_ids
    launcher: str = "numactl"        # default launcher on this platform
    description: str = ""
    cluster: dict = field(default_factory=dict)     # scheduler settings (profiles)
    siblings: dict = field(default_factory=dict)    # CPU → its core's hardware threads (SMT only)

    @property
    def node_ids(self):
        return sorted(self.nodes)

    @property
    def cpus(self):
        return sorted(c for cs in self.nodes.values() for c in cs)

    def node_cpus(self, node, smt=False):
        """The node's CPUs to place threads on: one per physical core (its first hardware
        thread), or with smt every hardware thread, a core's siblings next to each other."""
        cpus = self.nodes[node]
        core = lambda c: min(self.siblings.get(c, (c,)))
        if smt:
            return sorted(cpus, key=lambda c: (core(c), c))
        return [c for c in cpus if core(c) == c or core(c) not in cpus]

    def cores(self, smt=False):
        """Physical cores (or hardware threads with smt) of the machine, node by node."""
        return [c for n in self.node_ids for c in self.node_cpus(n, smt)]

    @property
    def cpu_nodes(self):
        """The nodes that have CPUs (memory-only nodes are left out)."""
        return [n for n in self.node_ids if self.nodes[n]]

    @property
    def memory_nodes(self):
        """The nodes that have memory (memory_mb 0, or no memory_mb in a platform file: none)."""
        return [n for n in self.node_ids if self.memory_mb.get(n, 1) != 0]

    def node_of(self, cpu):
        # a map made once: placements of thousands of CPUs ask for every CPU
        if self.__dict__.get("_node_of_key") != id(self.nodes):
            self._node_of = {c: n for n, cs in self.nodes.items() for c in cs}
            self._node_of_key = id(self.nodes)
        return self._node_of.get(cpu)

    def distance(self, a, b):
        if not self.distances:
            return 10 if a == b else 20
        ids = self.node_ids
        return self.distances[ids.index(a)][ids.index(b)]

    def to_dict(self):
        return {"name": self.name, "description": self.description,
                "launcher": self.launcher,
                "nodes": {str(n): format_cpulist(c) for n, c in sorted(self.nodes.items())},
                "memory_mb": {str(n): m for n, m in sorted(self.memory_mb.items())},
                "distances": self.distances}

    def automorphisms(self, limit=None):
        """Node permutations that keep the distance matrix (and CPU counts) unchanged.

        Used to keep one representative per class of equivalent node choices. A
        backtracking search: fine for the tens of nodes NUMA machines have. With a
        limit, stops after limit + 1 (the caller refuses that many). A complete answer
        is kept: the study check and the placements ask for it in turn.
        """
        if "_automorphisms" in self.__dict__:
            return self._automorphisms
        ids = self.node_ids
        n = len(ids)
        D = self.distances or [[10 if a == b else 20 for b in ids] for a in ids]
        size = [len(self.nodes[a]) for a in ids]
        found = []

        def extend(perm, used):
            i = len(perm)
            if limit is not None and len(found) > limit:
                return
            if i == n:
                found.append({ids[k]: ids[perm[k]] for k in range(n)})
                return
            for j in range(n):
                if j in used or size[j] != size[i] or D[j][j] != D[i][i]:
                    continue
                if all(D[perm[k]][j] == D[k][i] and D[j][perm[k]] == D[i][k] for k in range(i)):
                    extend(perm + [j], used | {j})

        extend([], frozenset())
        if limit is None or len(found) <= limit:
            self._automorphisms = found
        return found


def _node_sysfs(path):
    return int(path.name[4:])


def from_sysfs(root=SYSFS_NODES, name="auto"):
    """The running machine's topology; a machine without NUMA sysfs is one node."""
    import os
    root = Path(root)
    nodes, mem = {}, {}
    for d in sorted(root.glob("node[0-9]*"), key=_node_sysfs):
        n = _node_sysfs(d)
        cpulist = (d / "cpulist").read_text().strip()
        nodes[n] = parse_cpulist(cpulist) if cpulist else []
        meminfo = (d / "meminfo").read_text() if (d / "meminfo").exists() else ""
        m = re.search(r"MemTotal:\s+(\d+) kB", meminfo)
        mem[n] = int(m.group(1)) // 1024 if m else 0
    if not nodes:
        nodes = {0: sorted(os.sched_getaffinity(0))}
        mem = {0: os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20}
        return Topology(name, nodes, mem, None, description="no NUMA sysfs: one node")
    siblings = {}
    for c in (c for cs in nodes.values() for c in cs):
        f = root.parent / "cpu" / f"cpu{c}" / "topology" / "thread_siblings_list"
        sib = tuple(parse_cpulist(f.read_text().strip())) if f.exists() else (c,)
        if len(sib) > 1:
            siblings[c] = sib
    distances = []
    for n in sorted(nodes):
        f = root / f"node{n}" / "distance"
        distances.append([int(x) for x in f.read_text().split()] if f.exists() else [])
    if any(len(r) != len(nodes) for r in distances):
        distances = None
    return Topology(name, nodes, mem, distances, description="read from sysfs", siblings=siblings)


def platform_path(name, config_dir):
    return Path(config_dir) / "platforms" / f"{name}.yaml"


def load_platform(path, limits=None):
    """Read and check one platform file; errors name the file and the entry."""
    from numaplace.core import limits as limits_mod
    from numaplace.core.loader import load_mapping
    from numaplace.core.schema import validate_platform
    path = Path(path)
    where = str(path)
    limits = limits or limits_mod.of({})
    data = load_mapping(path, "platform")
    validate_platform(data, where)
    nodes, mem = {}, {}
    seen = {}
    for i, node in enumerate(data["nodes"]):
        nid = node["id"]
        entry = f"nodes[{i}] (node {nid})"
        limits_mod.check(where, entry + ".id", "node id", nid, "cpu_id", limits)
        if nid in nodes:
            raise ConfigError(where, entry, f"node id {nid} appears twice")
        if node.get("cpus") not in (None, ""):
            check_cpulist_text(node["cpus"], where, entry + ".cpus", limits["cpu_id"])
        cpus = parse_cpulist(node["cpus"], where, entry + ".cpus") if node.get("cpus") not in (None, "") else []
        for c in cpus:
            if c in seen:
                raise ConfigError(where, entry + ".cpus", f"CPU {c} is already in node {seen[c]}")
            seen[c] = nid
        nodes[nid] = cpus
        mem[nid] = node.get("memory_mb", 0)
    dist = data.get("distances")
    if dist is None and data.get("hops") is not None:
        dist = [[10 + 10 * h for h in _matrix_row(r)] for r in data["hops"]]
    elif dist is not None:
        dist = [_matrix_row(r) for r in dist]
    if dist is not None:
        _check_matrix(dist, len(nodes), where, "distances" if data.get("distances") is not None else "hops")
    cluster = data.get("cluster", {}) or {}
    _check_cluster(cluster, nodes, where)
    siblings = {}
    for i, text in enumerate(data.get("smt_siblings") or []):
        sib = tuple(parse_cpulist(text, where, f"smt_siblings[{i}]"))
        unknown = [c for c in sib if c not in seen]
        if unknown:
            raise ConfigError(where, f"smt_siblings[{i}]", f"CPU {format_cpulist(unknown)} is in no node")
        siblings.update({c: sib for c in sib} if len(sib) > 1 else {})
    return Topology(data["name"], nodes, mem, dist, data.get("launcher", "numactl"),
                    data.get("description", ""), cluster, siblings)


def _check_matrix(dist, n, where, key):
    if len(dist) != n or any(len(r) != n for r in dist):
        raise ConfigError(where, key, f"must be a {n}x{n} matrix "
                          "(one row per node, in node id order)")
    for i, r in enumerate(dist):
        if r[i] <= 0:
            raise ConfigError(where, f"{key}[{i}][{i}]", f"a node's distance to itself is {r[i]}; "
                              "SLIT gives it the local distance (10), the smallest of its row")
        for j, v in enumerate(r):
            if v != dist[j][i]:
                raise ConfigError(where, key, f"not symmetric at row {i}, column {j}")
            if j != i and v < r[i]:
                raise ConfigError(where, f"{key}[{i}][{j}]", f"distance {v} between two nodes is "
                                  f"below the node's own distance {r[i]} (SLIT: local is smallest)")


def _check_cluster(cluster, nodes, where):
    cpus = sum(len(c) for c in nodes.values())
    if cluster.get("cpus_per_node") is not None and cluster["cpus_per_node"] < cpus:
        raise ConfigError(where, "cluster.cpus_per_node", f"{cluster['cpus_per_node']} is smaller "
                          f"than the {cpus} CPUs the nodes list (a job gets the whole machine)")


def _matrix_row(row):
    # rows may be written compactly as "01122223" (single-digit hops) or as lists
    if isinstance(row, str):
        row = row.split() if " " in row.strip() else list(row.strip())
    return [int(x) for x in row]
