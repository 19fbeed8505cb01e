"""The machine's topology (numaplace.machine.topology): `platform: auto` read from sysfs,
what a record keeps of it, the node symmetries behind `distinct`, and what a wrong
platform file is told. Several tests pin what the mutation run left alive
(tests/benchmarks/mutation-survivors.md names the test that kills each)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from numaplace import ConfigError
from numaplace.machine.topology import Topology, from_sysfs, load_platform, platform_path

pytestmark = pytest.mark.unit

VM_DETECT = Path(__file__).resolve().parent / "fixtures" / "real" / "vm-detect"


def test_platform_auto_reads_what_platform_detect_wrote_on_the_same_guest():
    """The NUMA VM with a memory-only node (its sysfs, kept): the nodes, their memory
    (MemTotal, MiB) and the SLIT distances as `numaplace platform detect` printed them."""
    guest = load_platform(VM_DETECT / "vm-unequal" / "vm-unequal.yaml")
    topo = from_sysfs(VM_DETECT / "vm-unequal" / "sysfs" / "devices" / "system" / "node")
    assert (topo.name, topo.description) == ("auto", "read from sysfs")
    assert topo.nodes == guest.nodes == {0: [0, 1], 1: [2, 3], 2: []}
    assert topo.memory_mb == guest.memory_mb == {0: 962, 1: 1007, 2: 503}
    assert topo.distances == guest.distances
    assert topo.siblings == {}


def test_an_allocation_keeps_the_memory_only_node_it_may_use():
    """A job on the same guest allowed CPUs 0-1 and memory on nodes 0 and 2 (a cpuset):
    node 2 has no CPUs but its memory is the job's, so it stays, memory only, a memory
    target beside node 0; node 1 (neither its CPUs nor its memory allowed) is gone."""
    job = load_platform(VM_DETECT / "vm-unequal" / "vm-unequal.yaml").restrict({0, 1}, {0, 2}, "cpuset")
    assert job.nodes == {0: [0, 1], 2: []} and job.memory_mb == {0: 962, 2: 503}
    assert job.memory_only_nodes == [2] and job.memory_nodes == [0, 2] and job.cpu_nodes == [0]
    assert job.distances == [[10, 20], [20, 10]]
    assert job.nodes_words() == "2 NUMA nodes (1 with CPUs, 1 memory only)"
    assert job.restriction_words() == "restricted to CPUs 0-1 and nodes 0,2 of 3 nodes (cpuset)"


def fake_sysfs(root, nodes, siblings=(), distances=True):
    """node<N>/{cpulist,meminfo,distance} and cpu/cpu<C>/topology/thread_siblings_list;
    nodes: {node: (cpulist, MemTotal kB or None)}."""
    base = root / "devices" / "system"
    for n, (cpus, kb) in nodes.items():
        d = base / "node" / f"node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
        if kb is not None:
            (d / "meminfo").write_text(f"Node {n} MemTotal:       {kb} kB\nNode {n} MemFree:        1 kB\n")
        if distances is True or n in distances:
            (d / "distance").write_text(" ".join("10" if m == n else "21" for m in sorted(nodes)) + "\n")
    for c, text in siblings:
        f = base / "cpu" / f"cpu{c}" / "topology"
        f.mkdir(parents=True)
        (f / "thread_siblings_list").write_text(text + "\n")
    return base / "node"


def test_sysfs_of_an_smt_machine_with_many_nodes(tmp_path):
    """Nodes 2 and 10 (numbered, not sorted as text), hardware threads in pairs (cpu 0 and
    4 one core), a node without meminfo (no memory), and a node's memory in whole MiB."""
    root = fake_sysfs(tmp_path, {2: ("0,4", 1536 * 1024 + 1023), 10: ("1,5", None)},
                      siblings=[(0, "0,4"), (4, "0,4"), (1, "1"), (5, "5")])
    topo = from_sysfs(root, name="here")
    assert topo.name == "here"
    assert topo.nodes == {2: [0, 4], 10: [1, 5]}
    assert topo.memory_mb == {2: 1536, 10: 0} and topo.memory_nodes == [2]
    assert topo.distances == [[10, 21], [21, 10]] and topo.distance(10, 2) == 21
    assert topo.siblings == {0: (0, 4), 4: (0, 4)}
    assert topo.node_cpus(2) == [0] and topo.node_cpus(2, smt=True) == [0, 4]


def test_sysfs_without_every_distance_has_no_matrix(tmp_path):
    topo = from_sysfs(fake_sysfs(tmp_path, {0: ("0", 1024), 1: ("1", 1024)}, distances={0}))
    assert topo.distances is None and topo.to_dict()["distances"] is None
    assert topo.distance(0, 0) == 10 and topo.distance(0, 1) == 20


def test_a_machine_without_numa_sysfs_is_one_node(tmp_path, monkeypatch):
    """Its CPUs: this process's mask; its memory: the physical pages, in MiB."""
    def sched_getaffinity(pid):
        assert pid == 0
        return {3, 1, 2, 0}

    def sysconf(name):
        return {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 3_000_000}[name]
    monkeypatch.setattr(os, "sched_getaffinity", sched_getaffinity)
    monkeypatch.setattr(os, "sysconf", sysconf)
    topo = from_sysfs(tmp_path / "no-such-dir")
    assert (topo.name, topo.description, topo.distances) == ("auto", "no NUMA sysfs: one node", None)
    assert topo.nodes == {0: [0, 1, 2, 3]}
    assert topo.memory_mb == {0: 11718}


def test_a_topology_as_a_record_keeps_it():
    topo = Topology("mc", {1: [4, 5, 6, 7], 0: [0, 1, 2, 3]}, {1: 2048, 0: 1024}, [[10, 16], [16, 10]],
                    "aprun", "two sockets")
    assert topo.to_dict() == {"name": "mc", "description": "two sockets", "launcher": "aprun",
                              "nodes": {"0": "0-3", "1": "4-7"}, "memory_mb": {"0": 1024, "1": 2048},
                              "distances": [[10, 16], [16, 10]]}


def test_without_a_matrix_distances_are_local_and_remote():
    topo = Topology("t", {0: [0], 1: [1], 2: [2]})
    assert [[topo.distance(a, b) for b in range(3)] for a in range(3)] == [[10, 20, 20], [20, 10, 20], [20, 20, 10]]


def _perms(autos):
    return sorted(tuple(a[n] for n in sorted(a)) for a in autos)


def test_symmetries_without_a_matrix_are_every_permutation_of_equal_nodes():
    topo = Topology("t", {0: [0, 1], 1: [2, 3], 2: [4, 5], 3: [6]})
    assert _perms(topo.automorphisms()) == [(0, 1, 2, 3), (0, 2, 1, 3), (1, 0, 2, 3), (1, 2, 0, 3),
                                            (2, 0, 1, 3), (2, 1, 0, 3)]


def test_symmetries_keep_every_distance():
    """A ring of four nodes: rotations and reflections (8), never a swap of neighbours
    alone; a directed ring (a SLIT may be asymmetric): its rotations only."""
    ring = [[10, 20, 30, 20], [20, 10, 20, 30], [30, 20, 10, 20], [20, 30, 20, 10]]
    topo = Topology("ring", {n: [n] for n in range(4)}, distances=ring)
    autos = _perms(topo.automorphisms())
    assert len(autos) == 8 and (1, 0, 2, 3) not in autos and (1, 2, 3, 0) in autos
    # a line 0-1-2: only the identity and the reflection
    line = Topology("line", {n: [n] for n in range(3)}, distances=[[10, 20, 30], [20, 10, 20], [30, 20, 10]])
    assert _perms(line.automorphisms()) == [(0, 1, 2), (2, 1, 0)]
    directed = Topology("d", {n: [n] for n in range(3)}, distances=[[10, 20, 30], [30, 10, 20], [20, 30, 10]])
    assert _perms(directed.automorphisms()) == [(0, 1, 2), (1, 2, 0), (2, 0, 1)]


def test_symmetries_with_a_limit_stop_early_and_are_not_kept():
    topo = Topology("t", {n: [n] for n in range(4)})
    assert len(topo.automorphisms(limit=3)) == 4              # limit + 1: the caller refuses
    assert len(topo.automorphisms()) == 24                    # asked again in full
    fresh = Topology("t", {n: [n] for n in range(4)})
    assert len(fresh.automorphisms(limit=24)) == 24           # exactly the limit: complete, kept
    fresh.distances = [[10 if a == b else 20 + a + b for b in range(4)] for a in range(4)]
    assert len(fresh.automorphisms()) == 24


def test_symmetries_are_computed_once(monkeypatch):
    topo = Topology("t", {n: [n] for n in range(5)})
    first = topo.automorphisms()
    topo.distances = [[10 if a == b else 20 + a + b for b in range(5)] for a in range(5)]
    assert topo.automorphisms() is first                     # kept, as the docstring says


def test_symmetries_of_an_asymmetric_slit_keep_both_directions():
    """A SLIT may differ from a to b and from b to a: swapping nodes 1 and 2 keeps the
    distances out of node 0 (20, 20) but not those into it (30, 40), so it is no symmetry."""
    slit = [[10, 20, 20], [30, 10, 25], [40, 25, 10]]
    topo = Topology("asym", {n: [n] for n in range(3)}, distances=slit)
    assert _perms(topo.automorphisms()) == [(0, 1, 2)]


def test_symmetries_map_nodes_one_to_one_when_remote_equals_local():
    """A firmware that reports 10 between two nodes as within one (a platform file may say
    so: remote is only refused below local): the identity and the swap, never both nodes
    sent to one."""
    topo = Topology("flat", {0: [0], 1: [1]}, distances=[[10, 10], [10, 10]])
    assert _perms(topo.automorphisms()) == [(0, 1), (1, 0)]


class _CountingNodes(dict):
    """A node → CPUs dict that counts how often its items are walked."""
    walks = 0

    def items(self):
        self.walks += 1
        return super().items()


def test_the_cpu_to_node_map_is_made_once_and_again_for_new_nodes():
    """A placement of thousands of CPUs asks node_of for every CPU: the map is built once
    (not once per CPU), and again only when the topology gets another nodes dict."""
    nodes = _CountingNodes({n: list(range(64 * n, 64 * n + 64)) for n in range(16)})
    topo = Topology("big", nodes)
    assert [topo.node_of(c) for c in range(1024)] == [c // 64 for c in range(1024)]
    assert topo.node_of(5000) is None and nodes.walks == 1
    topo.nodes = {0: [5000]}
    assert topo.node_of(5000) == 0 and topo.node_of(5) is None


@pytest.mark.parametrize("matrix", [
    "distances: [[10, 20], [20, 10], [20, 20]]",        # a row too many
    "distances: [[10, 20, 30], [20, 10, 30]]",           # rows too long
    "hops: ['01', '1']",                                 # a row too short
])
def test_a_platform_matrix_of_the_wrong_shape_is_refused(tmp_path, matrix):
    f = tmp_path / "p.yaml"
    f.write_text('name: p\nnodes:\n  - {id: 0, cpus: "0", memory_mb: 1}\n  - {id: 1, cpus: "1", memory_mb: 1}\n'
                 + matrix + "\n")
    with pytest.raises(ConfigError) as e:
        load_platform(f)
    key = matrix.split(":")[0]
    assert str(e.value) == f"{f}: {key}: must be a 2x2 matrix (one row per node, in node id order)"


def _three_nodes(tmp_path, matrix):
    f = tmp_path / "p.yaml"
    f.write_text("name: p\nnodes:\n" + "".join(f'  - {{id: {n}, cpus: "{n}", memory_mb: 1}}\n' for n in range(3))
                 + matrix + "\n")
    return f


@pytest.mark.parametrize("matrix, line", [
    ("distances: [[10, 20, 20], [20, 10, 20], [20, 20, 0]]",
     "distances[2][2]: a node's distance to itself is 0; SLIT gives it the local distance (10), the smallest of its row"),
    ("distances: [[10, 20, 20], [20, 10, 20], [20, 30, 10]]", "distances: not symmetric at row 1, column 2"),
    ("hops: ['012', '101', '220']", "hops: not symmetric at row 1, column 2"),
    ("distances: [[10, 20, 30], [20, 10, 15], [30, 15, 25]]",
     "distances[2][1]: distance 15 between two nodes is below the node's own distance 25 (SLIT: local is smallest)"),
])
def test_a_platform_matrix_that_is_no_slit_is_refused_where_it_is_wrong(tmp_path, matrix, line):
    f = _three_nodes(tmp_path, matrix)
    with pytest.raises(ConfigError) as e:
        load_platform(f)
    assert str(e.value) == f"{f}: {line}"


def test_a_platform_matrix_at_the_edges_of_a_slit_and_hops_in_every_form(tmp_path):
    """A local distance of 1 and a remote one equal to it are accepted; hops are written
    as digit strings, space-separated strings or lists, each hop 10 more than local."""
    edge = [[1, 1, 20], [1, 1, 20], [20, 20, 1]]
    assert load_platform(_three_nodes(tmp_path, f"distances: {edge}")).distances == edge
    hops = load_platform(_three_nodes(tmp_path, "hops: ['012', ' 1 0 1 ', [2, 1, 0]]"))
    assert hops.distances == [[10, 20, 30], [20, 10, 20], [30, 20, 10]]


def _two_cpus(tmp_path, extra=""):
    f = tmp_path / "p.yaml"
    f.write_text('name: p\nnodes:\n  - {id: 0, cpus: "0", memory_mb: 1}\n  - {id: 1, cpus: "1", memory_mb: 1}\n' + extra)
    return f


def test_a_cluster_node_must_hold_every_cpu_of_the_platform(tmp_path):
    """cluster.cpus_per_node below the CPUs the nodes list is refused (a job gets the whole
    machine); exactly as many, or no cpus_per_node at all, is fine."""
    f = _two_cpus(tmp_path, "cluster: {cpus_per_node: 1}\n")
    with pytest.raises(ConfigError) as e:
        load_platform(f)
    assert str(e.value) == (f"{f}: cluster.cpus_per_node: 1 is smaller than the 2 CPUs the nodes list "
                            "(a job gets the whole machine)")
    assert load_platform(_two_cpus(tmp_path, "cluster: {cpus_per_node: 2}\n")).cluster == {"cpus_per_node": 2}
    assert load_platform(_two_cpus(tmp_path, "cluster: {mem_mb_per_node: 64}\n")).cluster == {"mem_mb_per_node": 64}
    assert load_platform(_two_cpus(tmp_path)).cluster == {}


def test_a_platform_name_is_a_yaml_file_under_the_config_platforms_folder():
    assert platform_path("magny-cours", "config") == Path("config") / "platforms" / "magny-cours.yaml"


def test_a_node_id_above_the_cpu_id_limit_is_refused_by_name(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text('name: p\nnodes:\n  - {id: 0, cpus: "0", memory_mb: 1}\n  - {id: 8192, cpus: "1", memory_mb: 1}\n')
    with pytest.raises(ConfigError) as e:
        load_platform(f)
    assert str(e.value).startswith(f"{f}: nodes[1] (node 8192).id: node id: 8192, above numaplace's limit of 8191 (cpu_id;")


def test_a_platform_cpu_list_is_checked_before_it_is_expanded(tmp_path):
    """A CPU above the limit, one listed twice or a descending range is refused naming the
    node's cpus entry."""
    for cpus, why in [("9000", "id: 9000, above numaplace's limit of 8191 (cpu_id;"), ("0,0-1", "0 is listed twice in '0,0-1'"),
                      ("5-3", "descending range '5-3' in '5-3'")]:
        f = tmp_path / "p.yaml"
        f.write_text(f'name: p\nnodes:\n  - {{id: 0, cpus: "2", memory_mb: 1}}\n  - {{id: 1, cpus: "{cpus}", memory_mb: 1}}\n')
        with pytest.raises(ConfigError) as e:
            load_platform(f)
        assert str(e.value).startswith(f"{f}: nodes[1] (node 1).cpus: {why}")


def test_a_platform_node_without_memory_mb_has_no_memory(tmp_path):
    """No memory_mb in a platform file: memory 0, so no memory policy may bind to it."""
    f = tmp_path / "p.yaml"
    f.write_text('name: p\nnodes:\n  - {id: 0, cpus: "0", memory_mb: 512}\n  - {id: 1, cpus: "1"}\n')
    topo = load_platform(f)
    assert topo.memory_mb == {0: 512, 1: 0} and topo.memory_nodes == [0]


def test_the_named_cache_sizes_are_half_the_cache_as_the_micro_benchmarks_take_them(tmp_path):
    """L1, L2 and LLC name half of that cache of the CPU (mb_parse_sizes: a buffer that
    fits beside what else the cache holds), DRAM 4 x every last-level cache once. A
    2-node machine: per CPU a 48 KiB L1d (its 32 KiB L1i holds no data), a 2 MiB L2;
    a 30 MiB L3 per node. The topology read from sysfs gives the sizes the binaries
    resolve on the same sysfs. (Fails when a named size is the whole cache: L1 48 KiB.)"""
    from numaplace.kinds.microbench import named_size
    root = fake_sysfs(tmp_path, {0: ("0-1", 8 << 20), 1: ("2-3", 8 << 20)})
    cpu_root = root.parent / "cpu"
    for cpu in range(4):
        node_cpus = "0-1" if cpu < 2 else "2-3"
        for i, (level, kind, size, shared) in enumerate([(1, "Data", "48K", str(cpu)),
                                                         (1, "Instruction", "32K", str(cpu)),
                                                         (2, "Unified", "2048K", str(cpu)),
                                                         (3, "Unified", "30720K", node_cpus)]):
            d = cpu_root / f"cpu{cpu}" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
                (d / name).write_text(f"{value}\n")
    topo = from_sysfs(root)
    want = {"L1": 24 << 10, "L2": 1 << 20, "LLC": 15 << 20, "DRAM": 4 * 2 * (30 << 20)}
    assert {name: topo.named_size(name) for name in want} == want
    for cpu in (0, 3):
        assert {name: topo.named_size(name, cpu) for name in want} == want
        assert {name: named_size(name, cpu, sysfs=cpu_root) for name in want} == want   # the binaries' rule
