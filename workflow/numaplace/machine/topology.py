"""NUMA topology: nodes → OS CPU ids, memory per node, distance matrix.

Read from sysfs for ``platform: auto`` or from ``config/platforms/<name>.yaml``. CPU
numbering is never assumed contiguous per node.
"""
from __future__ import annotations

import os
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
    caches: list = field(default_factory=list)      # [{level, type, size_kb, shared_cpus}] (sizes named DRAM, LLC...)
    model: str = ""                                 # CPU model name (/proc/cpuinfo), for the report's machine line
    sockets: int = 0                                # physical packages (sysfs physical_package_id), 0: unknown
    allowed: dict = field(default_factory=dict)     # what the process may use, when less than the machine:
    #   {"cpus": [...], "nodes": [...], "source": "cpuset" | "affinity mask", "machine_nodes": n, "machine_cpus": n}

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

    @property
    def memory_only_nodes(self):
        """Nodes with memory and no CPUs (CXL expanders, HBM in flat mode, GPU memory; or, in
        an allocation, a node whose memory the job may use but none of its CPUs)."""
        return [n for n in self.memory_nodes if not self.nodes[n]]

    def node_kind(self, node):
        """'cpus and memory' | 'memory only' | 'cpus only' (a memory-less node)."""
        if not self.nodes[node]:
            return "memory only"
        return "cpus and memory" if node in self.memory_nodes else "cpus only"

    def nodes_words(self):
        """How many nodes of which kind, for the plan's and the answer's head:
        '3 NUMA nodes (2 with CPUs, 1 memory only)'."""
        total, cpu, mem_only = len(self.node_ids), len(self.cpu_nodes), len(self.memory_only_nodes)
        text = f"{total} NUMA node" + ("" if total == 1 else "s")
        if mem_only or cpu != total:
            text += f" ({cpu} with CPUs, {mem_only} memory only)"
        return text

    def restriction_words(self):
        """'restricted to CPUs 2-5 and nodes 1-2 of 4 nodes (cpuset)', or '' for the whole machine."""
        a = self.allowed
        if not a:
            return ""
        n = a["machine_nodes"]
        return (f"restricted to CPUs {format_cpulist(a['cpus'])} and node{'s' * (len(a['nodes']) > 1)} "
                f"{format_cpulist(a['nodes'])} of {n} node{'s' * (n > 1)} ({a['source']})")

    def allocation_words(self):
        """'this allocation has 4 cores (CPUs 2-5, cpuset)', for what does not fit in it."""
        a, cores = self.allowed, len(self.cores())
        return (f"this allocation has {cores} core{'s' * (cores != 1)} (CPUs {format_cpulist(a['cpus'])}, "
                f"{a['source']})")

    def named_size(self, name, cpu=None):
        """Bytes of a size name (DRAM, LLC, L2, L1) from the caches this topology holds, as
        the micro-benchmarks resolve it on the machine (mb_parse_sizes: DRAM = 4 x every
        last-level cache once, the others half of that cache of `cpu`), or None unknown;
        the same on `auto` and on the platform file detected from the same machine."""
        data = [c for c in self.caches if c.get("type") in ("Data", "Unified")]
        if not data:
            return None
        top = max(c["level"] for c in data)
        if name == "DRAM":
            return 4 * sum(c["size_kb"] * 1024 * len(c["shared_cpus"]) for c in data if c["level"] == top)
        level = {"L1": 1, "L2": 2, "LLC": top}.get(name)
        cpu = self.cpus[0] if cpu is None and self.cpus else cpu
        mine = [c["size_kb"] * 1024 for c in data if c["level"] == level
                and any(cpu in parse_cpulist(s) for s in c["shared_cpus"])]
        return mine[0] // 2 if mine else None

    def outside_allocation(self, cpus=(), nodes=()):
        """Why CPUs and nodes that the machine has are not for this process: '' when
        they all are, or not on the machine at all (the caller's error)."""
        a = self.allowed
        if not a:
            return ""
        cpus = [c for c in cpus if c in a["machine_cpu_ids"] and c not in a["cpus"]]
        nodes = [n for n in nodes if n in a["machine_node_ids"] and n not in a["nodes"]]
        what = ([f"CPU {format_cpulist(cpus)}"] if cpus else []) + ([f"node {format_cpulist(nodes)}"] if nodes else [])
        return (" and ".join(what) + " outside this allocation (CPUs " + format_cpulist(a["cpus"]) +
                ", memory nodes " + format_cpulist(a["nodes"]) + f", {a['source']})") if what else ""

    def node_sizes_differ(self, smt=False):
        return len({len(self.node_cpus(n, smt)) for n in self.cpu_nodes}) > 1

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
                "distances": self.distances,
                **({"model": self.model} if self.model else {}), **({"sockets": self.sockets} if self.sockets else {}),
                **({"caches": self.caches} if self.caches else {}),
                **({"smt_siblings": sorted({format_cpulist(s) for s in self.siblings.values()},
                                           key=lambda t: parse_cpulist(t)[0])} if self.siblings else {}),
                **({"allowed": {"cpus": format_cpulist(self.allowed["cpus"]),
                                "nodes": format_cpulist(self.allowed["nodes"]),
                                "source": self.allowed["source"]}} if self.allowed else {})}

    def restrict(self, cpus, mems, source):
        """The machine as a process allowed `cpus` and memory on `mems` sees it: every node
        keeps only its allowed CPUs; a node whose memory is not allowed has none (memory_mb
        0: never a memory target); a node with neither is gone. Node ids stay the machine's,
        so a plan names the nodes numactl and the kernel know."""
        cpus, mems = set(cpus), set(self.node_ids if mems is None else mems)
        if cpus >= set(self.cpus) and mems >= set(self.node_ids):
            return self
        keep = [n for n in self.node_ids if n in mems or cpus & set(self.nodes[n])]
        idx = {n: i for i, n in enumerate(self.node_ids)}
        dist = [[self.distances[idx[a]][idx[b]] for b in keep] for a in keep] if self.distances else None
        siblings = {}
        for c, sib in self.siblings.items():
            mine = tuple(x for x in sib if x in cpus)
            if c in cpus and len(mine) > 1:
                siblings[c] = mine
        return Topology(self.name, {n: [c for c in self.nodes[n] if c in cpus] for n in keep},
                        {n: (self.memory_mb.get(n, 0) if n in mems else 0) for n in keep}, dist,
                        self.launcher, self.description, self.cluster, siblings, self.caches, self.model, self.sockets,
                        {"cpus": sorted(cpus & set(self.cpus)), "nodes": sorted(mems & set(self.node_ids)),
                         "source": source, "machine_nodes": len(self.node_ids), "machine_cpus": len(self.cpus),
                         "machine_node_ids": self.node_ids, "machine_cpu_ids": self.cpus})

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


def read_text(path):
    """A sysfs file's text, stripped, or None where it cannot be read."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _size_kb(text):
    """'32K' / '1024K' / '16M' (sysfs cache size) → kB."""
    m = re.match(r"^(\d+)([KMG]?)$", text or "")
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2)
    return n // 1024 if not unit else n * {"K": 1, "M": 1024, "G": 1024 ** 2}[unit]


def read_caches(cpu_root):
    """[{level, type, size_kb, shared_cpus: [cpu lists]}] one entry per (level, type,
    size), with every distinct set of CPUs sharing one such cache."""
    found = {}
    for idx in sorted(Path(cpu_root).glob("cpu[0-9]*/cache/index[0-9]*")):
        level, kind = read_text(idx / "level"), read_text(idx / "type")
        size, shared = _size_kb(read_text(idx / "size")), read_text(idx / "shared_cpu_list")
        if not (level and kind and size and shared):
            continue
        key = (int(level), kind, size)
        found.setdefault(key, set()).add(format_cpulist(parse_cpulist(shared)))
    return [{"level": lv, "type": kind, "size_kb": size,
             "shared_cpus": sorted(sets, key=lambda s: parse_cpulist(s)[0])}
            for (lv, kind, size), sets in sorted(found.items())]


def _node_sysfs(path):
    return int(path.name[4:])


def process_allowed(status="/proc/self/status", cgroup="/proc/self/cgroup", cgroup_root="/sys/fs/cgroup"):
    """(CPUs, memory nodes, source) this process may use: sched_getaffinity and
    Mems_allowed_list; source 'cpuset' when its cgroup's effective cpuset is what limits it
    (a Slurm job, a container), else 'affinity mask' (taskset, numactl, a launcher)."""
    cpus = sorted(os.sched_getaffinity(0))
    mems, source = None, "affinity mask"
    try:
        text = Path(status).read_text()
        m = re.search(r"^Mems_allowed_list:\s*(\S+)", text, re.M)
        mems = parse_cpulist(m.group(1)) if m else None
        path = next((line.split(":", 2)[2] for line in Path(cgroup).read_text().splitlines()
                     if line.startswith("0::")), None)
        if path is not None:
            eff = Path(cgroup_root, path.lstrip("/"), "cpuset.cpus.effective")
            if eff.exists() and parse_cpulist(eff.read_text().strip()) == cpus:
                mem_eff = Path(cgroup_root, path.lstrip("/"), "cpuset.mems.effective")
                online = Path("/sys/devices/system/cpu/online")
                limited = online.exists() and parse_cpulist(online.read_text().strip()) != cpus
                if limited or (mems is not None and mem_eff.exists() and path.strip("/")):
                    source = "cpuset"
    except (OSError, ValueError):
        pass
    return cpus, mems, source


def from_sysfs(root=SYSFS_NODES, name="auto", allowed=None):
    """The running machine's topology; a machine without NUMA sysfs is one node.

    On the live sysfs it is the machine as this process may use it (process_allowed:
    a taskset mask, a Slurm job's or a container's cpuset), so a plan never names a CPU
    or node the job cannot have; allowed=False gives the whole machine (platform
    detect), a (cpus, mems, source) tuple another allocation (tests)."""
    root = Path(root)
    if allowed is None:
        allowed = process_allowed() if root == SYSFS_NODES else False
    topo = _whole_from_sysfs(root, name)
    if allowed:
        cpus, mems, source = allowed
        topo = topo.restrict(cpus, topo.node_ids if mems is None else mems, source)
    return topo


def _whole_from_sysfs(root, name):
    caches = read_caches(root.parent / "cpu")
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
        return Topology(name, nodes, mem, None, description="no NUMA sysfs: one node", caches=caches)
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
    return Topology(name, nodes, mem, distances, description="read from sysfs", siblings=siblings, caches=caches,
                    model=cpu_model(), sockets=count_sockets(root.parent / "cpu"))


def cpu_model(cpuinfo="/proc/cpuinfo"):
    """The CPU's model name ('AMD EPYC 9654 96-Core Processor'), or '' where not given."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith(("model name", "Model", "cpu model")) and ":" in line:
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def count_sockets(cpu_root):
    """Physical packages: distinct physical_package_id of the CPUs (0 where sysfs has none)."""
    ids = {read_text(f) for f in Path(cpu_root).glob("cpu[0-9]*/topology/physical_package_id")}
    return len(ids - {None, "-1"})


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
    topo = Topology(data["name"], nodes, mem, dist, data.get("launcher", "numactl"),
                    data.get("description", ""), cluster, siblings, list(data.get("caches") or []))
    allowed = data.get("allowed")
    if allowed:
        cpus = parse_cpulist(allowed["cpus"], where, "allowed.cpus")
        mems = parse_cpulist(allowed["nodes"], where, "allowed.nodes") if allowed.get("nodes") else topo.node_ids
        unknown = [c for c in cpus if c not in seen]
        if unknown or not cpus:
            raise ConfigError(where, "allowed.cpus", f"CPU {format_cpulist(unknown)} is in no node" if unknown
                              else "no CPU allowed")
        unknown = [n for n in mems if n not in nodes]
        if unknown:
            raise ConfigError(where, "allowed.nodes", f"node {format_cpulist(unknown)} is not in the nodes list")
        topo = topo.restrict(cpus, mems, allowed.get("source", "allocation"))
    return topo


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
