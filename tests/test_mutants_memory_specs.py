"""The memory micro-benchmarks' cells (numaplace.plan.memory_specs): what a wrong sweep,
contention or matrix is told, naming the file and the entry. Written against the mutants
mutmut left alive (tests/benchmarks/mutation_score.sh)."""
from __future__ import annotations

import pytest

from numaplace import ConfigError
from numaplace.machine.topology import Topology
from numaplace.plan.memory_specs import count, expand
from numaplace.plan.placement import Memory

pytestmark = pytest.mark.unit

# two nodes of two CPUs, and a memory-only node 2
TWO = Topology("two", {0: [0, 1], 1: [2, 3], 2: []}, {0: 100, 1: 100, 2: 50})


@pytest.mark.parametrize("spec, line", [
    ({"sweep": {"memory_cpu": 9}}, "e.sweep.memory_cpu: CPU 9 is not in platform two (CPUs 0-3)"),
    ({"sweep": {"memory_cpu": 0, "readers": "2-9"}}, "e.sweep.readers: CPU 4-9 is not in platform two (CPUs 0-3)"),
    ({"sweep": {"memory_cpu": "0-x"}}, "e.sweep.memory_cpu: bad CPU list element '0-x' in '0-x' "
                                      "(use numbers and ranges like '0-3,8')"),
    ({"contention": {"memory_cpu": 9, "threads": [2]}}, "e.contention.memory_cpu: CPU 9 is not in platform two "
                                                        "(CPUs 0-3)"),
    ({"contention": {"memory_cpu": 1, "threads": [2, 5]}}, "e.contention.threads: 5 threads but platform two "
                                                           "has 4 cores"),
    ({"matrix": {"readers": "0,2"}}, "e.matrix.readers: node 2 is not a node with CPUs in platform two (nodes 0-1)"),
    ({"matrix": {"memory": [5]}}, "e.matrix.memory: node 5 is not a node with memory in platform two (nodes 0-2)"),
    ({"matrix": {"memory": "0-x"}}, "e.matrix.memory: bad CPU list element '0-x' in '0-x' "
                                    "(use numbers and ranges like '0-3,8')"),
])
def test_wrong_cells_name_the_file_and_entry(spec, line):
    with pytest.raises(ConfigError) as e:
        expand(spec, TWO, "f.yaml", "e")
    assert str(e.value) == "f.yaml: " + line


def test_a_sweep_reads_from_every_cpu_by_default():
    cells = expand({"sweep": {"memory_cpu": 1}}, TWO, "f.yaml", "e")
    assert [order for order, *_ in cells] == [(1, 0), (1,), (1, 2), (1, 3)]
    assert expand({"sweep": {"memory_cpu": "1", "readers": "self"}}, TWO, "f.yaml", "e") == \
        [((1,), "memory on cpu 1, read by cpu 1", "sw-m1-r1", None)]


def test_contention_reads_with_memory_cpu_and_the_next_cpus():
    assert [order for order, *_ in expand({"contention": {"memory_cpu": 1, "threads": [1, 4]}}, TWO, "f", "e")] == \
        [(1,), (1, 0, 2, 3)]


def test_a_matrix_reads_every_memory_node_from_every_cpu_node_by_default():
    """First touch where the memory node has a CPU to touch it; a memory-only node (node 2:
    CXL, HBM) has its column too, bound with membind: it is never left out."""
    cells = expand({"matrix": {}}, TWO, "f.yaml", "e")
    assert [(order, shape, mem) for order, shape, _, mem in cells] == [
        ((0,), "node 0 reads node 0 (first touch)", None), ((2, 0), "node 0 reads node 1 (first touch)", None),
        ((0,), "node 0 reads node 2 (membind)", Memory("membind", (2,))),
        ((0, 2), "node 1 reads node 0 (first touch)", None), ((2,), "node 1 reads node 1 (first touch)", None),
        ((2,), "node 1 reads node 2 (membind)", Memory("membind", (2,)))]


SMT = Topology("smt", {0: [0, 1, 4, 5], 1: [2, 3, 6, 7]}, siblings={c: (c % 4, c % 4 + 4) for c in range(8)})


def test_contention_counts_physical_cores():
    """`node` readers are a node's cores, as for the NPB placements, not its hardware threads."""
    (cell,) = expand({"contention": {"memory_cpu": 0, "threads": ["node"]}}, SMT, "f", "e")
    assert cell[1:] == ("2 readers, memory on cpu 0", "ct-m0-t2", None)


@pytest.mark.parametrize("spec, cells", [
    ({"sweep": {"memory_cpu": "all"}}, 16), ({"sweep": {"memory_cpu": "all", "readers": "self"}}, 4),
    ({"sweep": {"memory_cpu": "0-3", "readers": "0-1"}}, 8), ({"contention": {"memory_cpu": 0, "threads": [1, 2, 4]}}, 3),
    ({"matrix": {"readers": "0"}}, 3), ({"matrix": {"memory": [1], "via": "membind"}}, 2),
])
def test_cells_are_counted_before_any_is_made(spec, cells):
    assert count(spec, TWO, "f.yaml", "e") == cells == len(expand(spec, TWO, "f.yaml", "e"))


@pytest.mark.parametrize("spec, line", [
    ({"sweep": {"memory_cpu": 9}}, "e.sweep.memory_cpu: CPU 9 is not in platform two (CPUs 0-3)"),
    ({"sweep": {"memory_cpu": 0, "readers": "7"}}, "e.sweep.readers: CPU 7 is not in platform two (CPUs 0-3)"),
    ({"matrix": {"readers": [3]}}, "e.matrix.readers: node 3 is not a node with CPUs in platform two (nodes 0-1)"),
    ({"matrix": {"memory": "3"}}, "e.matrix.memory: node 3 is not a node with memory in platform two (nodes 0-2)"),
])
def test_counting_names_the_entry_too(spec, line):
    with pytest.raises(ConfigError) as e:
        count(spec, TWO, "f.yaml", "e")
    assert str(e.value) == "f.yaml: " + line


def test_a_reader_cpu_given_as_a_negative_number_is_a_cpu_not_in_the_platform():
    """The schema lets an integer reader through unchecked (its pattern is for text): -1 is
    told as a CPU the platform does not have, not as a malformed CPU list."""
    with pytest.raises(ConfigError) as e:
        expand({"sweep": {"memory_cpu": 0, "readers": -1}}, TWO, "f.yaml", "e")
    assert str(e.value) == "f.yaml: e.sweep.readers: CPU -1 is not in platform two (CPUs 0-3)"


# node 1 has CPUs but no memory of its own (memory_mb 0), node 0 has 1 MB
NOMEM = Topology("nomem", {0: [0, 1], 1: [2, 3]}, {0: 1, 1: 0})


def test_membind_to_a_node_without_memory_is_refused_naming_the_memory_entry():
    """numactl --membind to a node without memory cannot run: the matrix says which node,
    under the spec's memory entry."""
    with pytest.raises(ConfigError) as e:
        expand({"matrix": {"via": "membind", "memory": [1]}}, NOMEM, "f.yaml", "e")
    assert str(e.value) == "f.yaml: e.matrix.memory: node 1 of platform nomem has no memory"
    assert (e.value.where, e.value.entry) == ("f.yaml", "e.matrix.memory")


def test_membind_to_a_node_with_some_memory_is_a_cell():
    """Only a node with no memory at all is refused: 1 MB is memory to bind to."""
    assert expand({"matrix": {"via": "membind", "memory": [0], "readers": [1]}}, NOMEM, "f.yaml", "e") == \
        [((2,), "node 1 reads node 0 (membind)", "mx-mb-r1-m0", Memory("membind", (0,)))]
