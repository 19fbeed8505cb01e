"""The machine's topology (numaplace.machine.topology): `platform: auto` read from sysfs,
what a record keeps of it, and the node symmetries behind `distinct`. Written against
the mutants mutmut left alive (tests/benchmarks/mutation_score.sh)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from numaplace.machine.topology import Topology, from_sysfs, load_platform

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
