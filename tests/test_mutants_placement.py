"""Placements (numaplace.plan.placement): a plan row read back, the lines that say why a
portable placement is left out, and spread on a machine with SMT. Written against the
mutants mutmut left alive (tests/benchmarks/mutation_score.sh)."""
from __future__ import annotations

import pytest

from numaplace.machine.topology import Topology
from numaplace.plan.placement import (Memory, NotApplicable, Placement, compact, count_choices, default_id, finish,
                                      node_choices, resolve_memory_nodes, spread)

pytestmark = pytest.mark.unit

ONE = Topology("one", {0: [0, 1]}, {0: 100})
TWO = Topology("two", {0: [0, 1], 1: [2, 3]}, {0: 100, 1: 100})
SMT = Topology("smt", {0: [0, 1, 4, 5], 1: [2, 3, 6, 7]},
               siblings={c: (c % 4, c % 4 + 4) for c in range(8)})


def test_a_memory_cells_plan_row_is_read_back_with_its_thread_order():
    """Thread 0 first-touches the memory: the order (2, 0, 1) must survive the plan."""
    p = finish([2, 0, 1], Memory("membind", (0,)), "threads", "numactl", "sweep", TWO)
    row = p.to_dict()
    assert row["order"] == "2,0,1"
    back = Placement.from_dict(row)
    assert back == p and back.order == (2, 0, 1)
    assert Placement.from_dict({**row, "order": ""}).order == ()


def test_an_unpinned_placement_of_fewer_threads_than_cpus_keeps_its_team():
    u = finish([0, 1, 2, 3], Memory("local"), "process", "taskset", "unpinned 1", TWO, team=1)
    back = Placement.from_dict(u.to_dict())
    assert back == u and (back.team, back.threads, back.cpus) == (1, 1, (0, 1, 2, 3))


def test_a_plan_row_without_threads_or_order_columns():
    """Plan rows written before those columns existed: as many threads as CPUs, no order."""
    row = finish([0, 1, 2, 3], Memory("local"), "process", "numactl", "2/2 on 0-1", TWO).to_dict()
    del row["threads"]
    back = Placement.from_dict(row)
    assert (back.team, back.threads, back.order, back.layout) == (0, 4, (), (2, 2))


@pytest.mark.parametrize("topo, value, thread_nodes, why", [
    (ONE, "all", [0], "1 NUMA node with memory: interleave over all is local"),
    (ONE, "farthest", [0], "1 NUMA node with memory, none of them away from the threads' node 0"),
    (TWO, "nearest", [0, 1], "2 NUMA nodes with memory, none of them away from the threads' nodes 0-1"),
])
def test_why_a_portable_memory_target_is_left_out(topo, value, thread_nodes, why):
    with pytest.raises(NotApplicable) as e:
        resolve_memory_nodes("membind", value, thread_nodes, topo)
    assert str(e.value) == why


def test_spread_places_one_thread_per_core_unless_asked_for_every_hardware_thread():
    assert spread(4, SMT) == [0, 2, 1, 3]
    assert spread(4, SMT, smt=True) == [0, 2, 4, 6]


def test_a_placements_default_id():
    """Run ids are built from it: the CPUs, memory, binding and launcher, and `x<team>`
    only for an unpinned team."""
    p = finish([0, 1], Memory("local"), "process", "numactl", "2 on 0", TWO)
    assert (p.id, p.team, p.threads) == ("c0-1_loc_p_nc", 0, 2)
    assert finish([0, 2], Memory("membind", (1,)), "threads", "numactl", "1/1", TWO).id == "c0.2_mb1_t_nc"


def test_node_choices_are_counted_before_they_are_made():
    """4 nodes, layout 2/1/1: C(4, 3) node sets × 3 distinct orders of the counts."""
    four = Topology("four", {n: [2 * n, 2 * n + 1] for n in range(4)})
    n = count_choices([2, 1, 1], four)
    assert n == 12 and isinstance(n, int) and n == len(node_choices([2, 1, 1], four, False))


def test_a_default_id_without_a_team_is_pinned():
    """Called without a team, an id names no `x<team>`: that suffix is for unpinned teams."""
    assert default_id((0, 1), Memory("local"), "process", "numactl") == "c0-1_loc_p_nc"


def test_compact_counts_physical_cores_unless_asked_for_smt():
    """The first t cores: one hardware thread per core unless smt is asked for."""
    assert compact(2, SMT) == [0, 1]
    assert compact(2, SMT, smt=True) == [0, 4]


def test_a_layout_longer_than_the_machine_has_nodes_gives_no_choice_at_once():
    """More per-node counts than nodes: no choice, found without making the orderings of
    the counts (3000 of them: the orderings alone would go 3000 calls deep)."""
    assert node_choices([1] * 3000, TWO, False) == []
    assert node_choices([1] * 3000, TWO, True) == [] and count_choices([1] * 3000, TWO) == 0
