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


# -- what a plan reads of a topology: every method on one realistic machine ----------------

def _epyc_like():
    """Two sockets of two nodes, SMT pairs (CPU c and c+8 one core), CPU ids interleaved
    across nodes as firmware numbers them, plus node 4: CXL memory without CPUs; a SLIT."""
    nodes = {0: [0, 1, 8, 9], 1: [2, 3, 10, 11], 2: [4, 5, 12, 13], 3: [6, 7, 14, 15], 4: []}
    siblings = {c: (c, c + 8) for c in range(8)} | {c + 8: (c, c + 8) for c in range(8)}
    slit = [[10, 12, 32, 32, 50], [12, 10, 32, 32, 50], [32, 32, 10, 12, 60], [32, 32, 12, 10, 60],
            [50, 50, 60, 60, 10]]
    return Topology("epyc", nodes, {0: 64000, 1: 64000, 2: 64000, 3: 64000, 4: 128000}, slit,
                    siblings=siblings)


def test_a_plans_view_of_cores_threads_and_node_kinds():
    """One thread per physical core (its first hardware thread) unless smt, where a core's
    threads sit side by side; CPU nodes, memory nodes and memory-only nodes; the head's words."""
    t = _epyc_like()
    assert t.node_ids == [0, 1, 2, 3, 4] and t.cpus == list(range(16))
    assert t.node_cpus(1) == [2, 3] and t.node_cpus(1, smt=True) == [2, 10, 3, 11]
    assert t.cores() == [0, 1, 2, 3, 4, 5, 6, 7]
    assert t.cores(smt=True) == [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15]
    assert t.cpu_nodes == [0, 1, 2, 3] and t.memory_nodes == [0, 1, 2, 3, 4] and t.memory_only_nodes == [4]
    assert [t.node_kind(n) for n in (0, 4)] == ["cpus and memory", "memory only"]
    assert t.nodes_words() == "5 NUMA nodes (4 with CPUs, 1 memory only)"
    assert t.distance(0, 1) == 12 and t.distance(1, 2) == 32 and t.distance(4, 2) == 60 and t.distance(3, 3) == 10
    assert [t.node_of(c) for c in (0, 9, 10, 15)] == [0, 0, 1, 3] and t.node_of(16) is None
    assert t.node_sizes_differ() is False and t.restriction_words() == "" and t.outside_allocation([0], [4]) == ""


def test_a_core_whose_first_thread_is_not_allowed_keeps_its_other_thread():
    """A job given only CPU 9 of core (1, 9): that thread is the core's, not none."""
    t = _epyc_like().restrict({0, 9, 8}, {0}, "cpuset")
    assert t.nodes == {0: [0, 8, 9]} and t.siblings == {0: (0, 8), 8: (0, 8)}
    assert t.node_cpus(0) == [0, 9] and t.node_cpus(0, smt=True) == [0, 8, 9]
    # a node listing a core's second thread only (its first is another node's, or offline)
    odd = Topology("t", {0: [2, 9, 10], 1: [1]}, siblings={1: (1, 9), 9: (1, 9), 2: (2, 10), 10: (2, 10)})
    assert odd.node_cpus(0) == [2, 9] and odd.node_cpus(1) == [1] and odd.cores() == [2, 9, 1]


def test_node_words_for_one_node_and_for_a_memoryless_cpu_node():
    assert Topology("one", {0: [0, 1]}, {0: 1024}).nodes_words() == "1 NUMA node"
    assert Topology("two", {0: [0], 1: [1]}, {0: 1, 1: 1}).nodes_words() == "2 NUMA nodes"
    memless = Topology("m", {0: [0], 1: [1]}, {0: 1024, 1: 0})
    assert memless.node_kind(1) == "cpus only" and memless.memory_nodes == [0] and memless.memory_only_nodes == []
    assert memless.nodes_words() == "2 NUMA nodes"
    neither = Topology("n", {0: [0, 1], 1: []}, {0: 1024, 1: 0})          # a node with no CPU and no memory
    assert neither.nodes_words() == "2 NUMA nodes (1 with CPUs, 0 memory only)"
    unknown = Topology("u", {0: [0], 1: []}, {0: 1024})
    assert unknown.memory_nodes == [0, 1] and unknown.nodes_words() == "2 NUMA nodes (1 with CPUs, 1 memory only)"
    assert Topology("s", {0: [0, 1, 2], 1: [3, 4]}).node_sizes_differ() is True


def test_an_allocation_as_the_plan_words_it():
    """A Slurm job given CPUs 2-3 and 10 (node 1) and memory on nodes 1 and 4: node 1 keeps
    those CPUs, node 4 stays memory only, nodes 0, 2 and 3 are gone; the words name CPUs,
    nodes and cores; what it asks outside is named, what the machine lacks is not."""
    job = _epyc_like().restrict([2, 3, 10], [1, 4], "cpuset")
    assert job.nodes == {1: [2, 3, 10], 4: []} and job.memory_mb == {1: 64000, 4: 128000}
    assert job.distances == [[10, 50], [50, 10]]
    assert job.siblings == {2: (2, 10), 10: (2, 10)}
    assert job.allowed == {"cpus": [2, 3, 10], "nodes": [1, 4], "source": "cpuset", "machine_nodes": 5,
                           "machine_cpus": 16, "machine_node_ids": [0, 1, 2, 3, 4], "machine_cpu_ids": list(range(16))}
    assert job.restriction_words() == "restricted to CPUs 2-3,10 and nodes 1,4 of 5 nodes (cpuset)"
    assert job.allocation_words() == "this allocation has 2 cores (CPUs 2-3,10, cpuset)"
    assert job.outside_allocation([2, 4, 5, 99], [1, 0, 7]) == \
        "CPU 4-5 and node 0 outside this allocation (CPUs 2-3,10, memory nodes 1,4, cpuset)"
    assert job.outside_allocation([2], [1]) == "" and job.outside_allocation([], [2]) == \
        "node 2 outside this allocation (CPUs 2-3,10, memory nodes 1,4, cpuset)"
    one = Topology("two", {0: [0, 1], 1: [2, 3]}, {0: 1, 1: 1}).restrict([1], [0], "affinity mask")
    assert one.nodes == {0: [1]} and one.memory_mb == {0: 1}
    assert one.restriction_words() == "restricted to CPUs 1 and node 0 of 2 nodes (affinity mask)"
    assert one.allocation_words() == "this allocation has 1 core (CPUs 1, affinity mask)"
    single = Topology("one", {0: [0, 1]}, {0: 1}).restrict([1], None, "affinity mask")
    assert single.restriction_words() == "restricted to CPUs 1 and node 0 of 1 node (affinity mask)"


def test_cpus_without_their_nodes_memory_and_the_whole_machine():
    """CPUs allowed on a node whose memory is not: the node stays with memory 0 (never a
    memory target); allowing everything gives the same topology back."""
    t = _epyc_like()
    job = t.restrict([0, 1, 4], [0], "cpuset")
    assert job.nodes == {0: [0, 1], 2: [4]} and job.memory_mb == {0: 64000, 2: 0}
    assert job.memory_nodes == [0] and job.node_kind(2) == "cpus only"
    assert t.restrict(range(16), None, "x") is t and t.restrict(range(20), [0, 1, 2, 3, 4, 5], "x") is t
    assert list(t.restrict(range(16), [0, 1, 2, 3], "x").nodes) == [0, 1, 2, 3]      # CXL memory not allowed: gone


def test_a_topology_record_carries_model_sockets_caches_siblings_and_allocation():
    t = _epyc_like()
    t.model, t.sockets = "AMD EPYC 9654 96-Core Processor", 2
    t.caches = [{"level": 3, "type": "Unified", "size_kb": 32768, "shared_cpus": ["0-1,8-9"]}]
    d = t.restrict([2, 3, 10, 11], [1], "cpuset").to_dict()
    assert d == {"name": "epyc", "description": "", "launcher": "numactl", "nodes": {"1": "2-3,10-11"},
                 "memory_mb": {"1": 64000}, "distances": [[10]], "model": "AMD EPYC 9654 96-Core Processor",
                 "sockets": 2, "caches": t.caches, "smt_siblings": ["2,10", "3,11"],
                 "allowed": {"cpus": "2-3,10-11", "nodes": "1", "source": "cpuset"}}
    full = _epyc_like().to_dict()
    assert full["smt_siblings"] == ["0,8", "1,9", "2,10", "3,11", "4,12", "5,13", "6,14", "7,15"]
    assert list(full["nodes"]) == ["0", "1", "2", "3", "4"] and "model" not in full and "allowed" not in full
    wide = Topology("w", {0: [9, 10, 25, 26]}, siblings={9: (9, 25), 25: (9, 25), 10: (10, 26), 26: (10, 26)})
    assert wide.to_dict()["smt_siblings"] == ["9,25", "10,26"]          # by first CPU, not as text


def test_named_sizes_of_a_platform_with_unequal_last_level_caches():
    """DRAM is 4 x every last-level cache once (two 32 MiB L3 groups: 256 MiB); the
    others half of the cache holding the CPU; Instruction caches never count; an unknown
    name or a CPU without that cache: None."""
    t = Topology("c", {0: [0, 1], 1: [2, 3]}, caches=[
        {"level": 1, "type": "Instruction", "size_kb": 64, "shared_cpus": ["0", "1", "2", "3"]},
        {"level": 1, "type": "Data", "size_kb": 32, "shared_cpus": ["0", "1", "2", "3"]},
        {"level": 2, "type": "Unified", "size_kb": 1024, "shared_cpus": ["0", "1"]},
        {"level": 2, "type": "Unified", "size_kb": 512, "shared_cpus": ["2", "3"]},
        {"level": 3, "type": "Unified", "size_kb": 32768, "shared_cpus": ["0-1", "2-3"]}])
    assert t.named_size("DRAM") == 4 * 2 * 32768 * 1024
    assert (t.named_size("L1"), t.named_size("L2"), t.named_size("LLC")) == (16 * 1024, 512 * 1024, 16 << 20)
    assert t.named_size("L2", 3) == 256 * 1024
    assert t.named_size("L4") is None and t.named_size("L2", 9) is None
    assert Topology("none", {0: [0]}).named_size("LLC") is None


def test_sysfs_cache_sizes_in_kb_and_their_sharing_cpus(tmp_path):
    """sysfs writes '48K', '2048K', '32M' (a bare number is bytes); every (level, type,
    size) once with its CPU sets in first-CPU order (2 before 10)."""
    from numaplace.machine.topology import _size_kb, read_caches
    assert [_size_kb(x) for x in ("48K", "2048K", "32M", "1G", "65536", "", None, "3.5M")] == \
        [48, 2048, 32768, 1024 ** 2, 64, None, None, None]
    cpu_root = tmp_path / "cpu"
    for cpu, l3 in ((0, "0-1"), (1, "0-1"), (10, "2,10"), (2, "2,10")):
        for i, (level, kind, size, shared) in enumerate([(1, "Data", "48K", str(cpu)), (3, "Unified", "32M", l3)]):
            d = cpu_root / f"cpu{cpu}" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
                (d / name).write_text(f"{value}\n")
    assert read_caches(cpu_root) == [
        {"level": 1, "type": "Data", "size_kb": 48, "shared_cpus": ["0", "1", "2", "10"]},
        {"level": 3, "type": "Unified", "size_kb": 32768, "shared_cpus": ["0-1", "2,10"]}]


def test_the_cpu_model_and_the_socket_count_from_proc_and_sysfs(tmp_path):
    from numaplace.machine.topology import count_sockets, cpu_model
    f = tmp_path / "cpuinfo"
    f.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 17\n"
                 "model name\t: AMD EPYC 9654 96-Core Processor\nmodel name\t: other\n")
    assert cpu_model(f) == "AMD EPYC 9654 96-Core Processor"
    f.write_text("processor\t: 0\nBogoMIPS\t: 50.00\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n")
    assert cpu_model(f) == "Raspberry Pi 4 Model B Rev 1.4"
    f.write_text("processor\t: 0\ncpu model\t: ICT Loongson-3 V0.13 FPU V0.1\n")
    assert cpu_model(f) == "ICT Loongson-3 V0.13 FPU V0.1"
    assert cpu_model(tmp_path / "none") == ""
    for cpu, pkg in ((0, "0"), (1, "0"), (2, "1"), (3, "1"), (4, "-1")):
        d = tmp_path / "cpu" / f"cpu{cpu}" / "topology"
        d.mkdir(parents=True)
        (d / "physical_package_id").write_text(pkg + "\n")
    assert count_sockets(tmp_path / "cpu") == 2
    assert count_sockets(tmp_path / "none") == 0


def test_a_platform_file_with_hops_siblings_memory_and_an_allocation(tmp_path):
    """hops are 10 + 10 per hop; smt_siblings map each thread to its core's; a node without
    memory_mb has none; `allowed` restricts as a job's cpuset does."""
    f = tmp_path / "p.yaml"
    f.write_text('name: p\ndescription: two sockets\nlauncher: taskset\nnodes:\n'
                 '  - {id: 0, cpus: "0-1", memory_mb: 2048}\n  - {id: 1, cpus: "2-3", memory_mb: 4096}\n'
                 '  - {id: 2, cpus: "", memory_mb: 8192}\n'
                 'hops: ["012", "101 ", "210"]\nsmt_siblings: ["0,2", "1", "3"]\n'
                 'allowed: {cpus: "0-2", nodes: "0,2", source: "slurm"}\n')
    whole = tmp_path / "whole.yaml"
    whole.write_text("\n".join(l for l in f.read_text().splitlines() if not l.startswith("allowed")) + "\n")
    w = load_platform(whole)
    assert w.siblings == {0: (0, 2), 2: (0, 2)} and w.nodes == {0: [0, 1], 1: [2, 3], 2: []} and w.allowed == {}
    t = load_platform(f)
    assert (t.name, t.description, t.launcher) == ("p", "two sockets", "taskset")
    assert t.nodes == {0: [0, 1], 1: [2], 2: []} and t.memory_mb == {0: 2048, 1: 0, 2: 8192}
    assert t.distances == [[10, 20, 30], [20, 10, 20], [30, 20, 10]]
    assert t.siblings == {0: (0, 2), 2: (0, 2)}
    assert t.restriction_words() == "restricted to CPUs 0-2 and nodes 0,2 of 3 nodes (slurm)"


def _proc_self(tmp_path, cgroup_line, eff_cpus=None, eff_mems=None, mems="0-1"):
    """/proc/self/{status,cgroup} and the cgroup v2 tree as the kernel writes them."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    status, cgroup, root = tmp_path / "status", tmp_path / "cgroup", tmp_path / "cg"
    status.write_text("Name:\tpython3\nCpus_allowed_list:\t2-3\n"
                      + (f"Mems_allowed:\t00000000,00000003\nMems_allowed_list:\t{mems}\n" if mems else "")
                      + "voluntary_ctxt_switches:\t5\n")
    cgroup.write_text(cgroup_line + "\n")
    path = cgroup_line.split(":", 2)[2].lstrip("/") if cgroup_line.startswith("0::") else ""
    d = root / path
    d.mkdir(parents=True, exist_ok=True)
    if eff_cpus is not None:
        (d / "cpuset.cpus.effective").write_text(eff_cpus + "\n")
    if eff_mems is not None:
        (d / "cpuset.mems.effective").write_text(eff_mems + "\n")
    return str(status), str(cgroup), str(root)


def test_what_this_process_may_use_and_whether_a_cpuset_limits_it(tmp_path, monkeypatch):
    """A Slurm job's cgroup whose effective cpuset is exactly the process's mask: 'cpuset';
    a mask narrower than its cgroup's cpuset (taskset inside a job): 'affinity mask'; the
    root cgroup, or cgroup v1 only: 'affinity mask'; memory nodes from Mems_allowed_list."""
    from numaplace.core.cpulist import parse_cpulist
    from numaplace.machine.topology import process_allowed
    online = parse_cpulist(Path("/sys/devices/system/cpu/online").read_text().strip())
    fewer = online[:-1] or online
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(fewer))
    text = ",".join(map(str, fewer))
    job = _proc_self(tmp_path / "a", "0::/system.slice/slurmstepd.scope/job_42/step_0", text, "0-1")
    assert process_allowed(*job) == (fewer, [0, 1], "cpuset" if fewer != online else "affinity mask")
    only_cpus = _proc_self(tmp_path / "a2", "0::/system.slice/slurmstepd.scope/job_43/step_0", text, None)
    assert process_allowed(*only_cpus) == (fewer, [0, 1], "cpuset" if fewer != online else "affinity mask")
    wider = _proc_self(tmp_path / "b", "0::/system.slice/slurmstepd.scope/job_42", ",".join(map(str, online)) + ",4095")
    assert process_allowed(*wider) == (fewer, [0, 1], "affinity mask")
    v1 = _proc_self(tmp_path / "c", "12:cpuset:/slurm/uid_0/job_42", text, "0", mems="0")
    assert process_allowed(*v1) == (fewer, [0], "affinity mask")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(online))
    whole = ",".join(map(str, online))
    root = _proc_self(tmp_path / "d", "0::/", whole, "0")
    assert process_allowed(*root) == (online, [0, 1], "affinity mask")
    container = _proc_self(tmp_path / "e", "0::/docker/abc123", whole, "0")
    assert process_allowed(*container) == (online, [0, 1], "cpuset")      # its own cgroup, all CPUs, a mems file
    no_mems = _proc_self(tmp_path / "f", "0::/docker/abc123", whole, None)
    assert process_allowed(*no_mems) == (online, [0, 1], "affinity mask")
    no_list = _proc_self(tmp_path / "g", "0::/docker/abc123", whole, "0", mems=None)
    assert process_allowed(*no_list) == (online, None, "affinity mask")
    assert process_allowed(str(tmp_path / "none"), str(tmp_path / "none"), str(tmp_path)) == (online, None, "affinity mask")


def test_a_node_or_cpu_listed_twice_is_refused_naming_both(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text('name: p\nnodes:\n  - {id: 3, cpus: "0-1", memory_mb: 1}\n  - {id: 3, cpus: "2", memory_mb: 1}\n')
    with pytest.raises(ConfigError) as e:
        load_platform(f)
    assert str(e.value) == f"{f}: nodes[1] (node 3): node id 3 appears twice"
    f.write_text('name: p\nnodes:\n  - {id: 0, cpus: "0-3", memory_mb: 1}\n  - {id: 5, cpus: "2,4", memory_mb: 1}\n')
    with pytest.raises(ConfigError) as e:
        load_platform(f)
    assert str(e.value) == f"{f}: nodes[1] (node 5).cpus: CPU 2 is already in node 0"


def test_a_platform_files_siblings_and_allocation_errors_name_the_unknown_ids(tmp_path):
    """Only the CPUs or nodes the platform lacks are named; an allocation without a
    source is an 'allocation'."""
    base = 'name: p\nnodes:\n  - {id: 0, cpus: "0-1", memory_mb: 1}\n  - {id: 1, cpus: "2-3", memory_mb: 1}\n'
    f = tmp_path / "p.yaml"
    f.write_text(base + 'smt_siblings: ["0,2", "1,8-9"]\n')
    with pytest.raises(ConfigError) as e:
        load_platform(f)
    assert str(e.value) == f"{f}: smt_siblings[1]: CPU 8-9 is in no node"
    f.write_text(base + 'allowed: {cpus: "1-2", nodes: "0,5"}\n')
    with pytest.raises(ConfigError) as e:
        load_platform(f)
    assert str(e.value) == f"{f}: allowed.nodes: node 5 is not in the nodes list"
    f.write_text(base + 'allowed: {cpus: "1,7"}\n')
    with pytest.raises(ConfigError) as e:
        load_platform(f)
    assert str(e.value) == f"{f}: allowed.cpus: CPU 7 is in no node"
    f.write_text(base + 'allowed: {cpus: "1-2"}\n')
    t = load_platform(f)
    assert t.allowed["source"] == "allocation" and t.allowed["nodes"] == [0, 1] and t.nodes == {0: [1], 1: [2]}


def test_an_asymmetric_slit_keeps_its_direction_through_an_allocation():
    """A SLIT may differ from a to b and from b to a: distance(a, b) is row a, column b,
    and an allocation of nodes 0 and 2 keeps both directions; its node list holds only
    nodes the machine has (Mems_allowed_list may name possible, absent ones)."""
    t = Topology("asym", {0: [0], 1: [1], 2: [2]}, {0: 1, 1: 1, 2: 1},
                 [[10, 20, 30], [25, 10, 35], [32, 36, 10]])
    assert (t.distance(0, 2), t.distance(2, 0), t.distance(1, 2), t.distance(2, 1)) == (30, 32, 35, 36)
    job = t.restrict([0, 2], [0, 2, 5], "cpuset")
    assert job.distances == [[10, 30], [32, 10]] and job.allowed["nodes"] == [0, 2]
    d = Topology("m", {1: [1], 0: [0]}, {1: 2048, 0: 1024}).to_dict()
    assert list(d["nodes"]) == ["0", "1"] and list(d["memory_mb"]) == ["0", "1"]
