"""A study's placement specs expanded (numaplace.plan.expand): what a wrong spec is told,
what a portable one becomes here, and the lines for what cannot exist here, on small
machines (conftest's ONE, TWO, SMT and two here). Several tests pin what the mutation run
left alive (tests/benchmarks/mutation-survivors.md names the test that kills each)."""
from __future__ import annotations

import pytest

from numaplace import ConfigError
from numaplace.machine.topology import Topology
from numaplace.plan.expand import expand_experiment, expand_spec
from numaplace.plan.placement import NotApplicable
from conftest import ONE, SMT, TWO

pytestmark = pytest.mark.unit

UNEVEN = Topology("u", {0: [0, 1], 1: [2]})


def told(spec, topo):
    with pytest.raises((ConfigError, NotApplicable)) as e:
        expand_spec(spec, topo, "f.yaml", "e")
    return type(e.value).__name__, str(e.value)


def shown(out):
    return [str(o) if isinstance(o, NotApplicable) else (o[0], o[1], o[3]) for o in out]


@pytest.mark.parametrize("spec, topo, error", [
    ({"unpinned": [5]}, TWO, ("ConfigError", "f.yaml: e.unpinned: 5 threads but platform two has 4 CPUs")),
    ({"cpus": "0,9-10"}, TWO, ("ConfigError", "f.yaml: e.cpus: CPU 9-10 is not in platform two (CPUs 0-3)")),
    ({"compact": [5]}, SMT, ("ConfigError", "f.yaml: e.compact: 5 threads but platform smt has 4 cores "
                                            "(smt: true counts every hardware thread)")),
    ({"compact": [5]}, TWO, ("ConfigError", "f.yaml: e.compact: 5 threads but platform two has 4 CPUs")),
    ({"layout": "1/1/1"}, TWO, ("NotApplicable", "2 NUMA nodes: layout '1/1/1' needs 3 nodes")),
    ({"layout": "3/1"}, UNEVEN, ("ConfigError", "f.yaml: e: layout '3/1' fits on no choice of nodes of platform u")),
    ({"layout": "3/1", "nodes": "0-1"}, UNEVEN, ("ConfigError", "f.yaml: e.layout: layout asks for 3 threads on "
                                                                "node 0, which has 2 CPUs")),
    # with SMT siblings: a node's every hardware thread counts for a layout, smt: true counts CPUs
    ({"layout": "5/1", "nodes": [0, 1]}, SMT, ("ConfigError", "f.yaml: e.layout: layout asks for 5 threads on "
                                                             "node 0, which has 4 CPUs")),
    ({"compact": [9], "smt": True}, SMT, ("ConfigError", "f.yaml: e.compact: 9 threads but platform smt has 8 CPUs")),
])
def test_what_a_wrong_spec_is_told(spec, topo, error):
    assert told(spec, topo) == error


def test_unpinned_counts():
    """Porterfield's baseline: t threads in a mask of every CPU; a portable count shows
    what it came to here; the team is left out when it is every CPU."""
    out = expand_spec({"unpinned": ["half", 2, "all"], "id": "u"}, TWO, "f.yaml", "e")
    assert out == [([0, 1, 2, 3], "unpinned half (2)", "u", 2), ([0, 1, 2, 3], "unpinned 2", "u", 2),
                   ([0, 1, 2, 3], "unpinned all (4)", "u", 0)]
    (smt,) = expand_spec({"unpinned": ["node"], "smt": True}, SMT, "f.yaml", "e")
    assert smt[1:] == ("unpinned node (4)", None, 4)
    (cores,) = expand_spec({"unpinned": ["node"]}, SMT, "f.yaml", "e")
    assert cores[1:] == ("unpinned node (2)", None, 2)


def test_per_node_counts_that_fit_and_that_do_not():
    """k per node fits where every node has k cores; past that it is left out, with why,
    and the spec's other counts still expand."""
    assert shown(expand_spec({"compact": ["2/node"]}, SMT, "f.yaml", "e")) == [([0, 1, 2, 3], "compact 2/node (4)", 0)]
    assert shown(expand_spec({"compact": ["3/node", 2]}, SMT, "f.yaml", "e")) == [
        "compact 3/node needs 6 threads, 3 on a node; platform smt has 4 cores", ([0, 1], "compact 2", 0)]


def test_spread_the_same_as_compact_is_left_out_and_the_rest_expands():
    assert shown(expand_spec({"spread": ["all", 2]}, TWO, "f.yaml", "e")) == [
        "spread all runs on the same CPUs as compact all here", ([0, 2], "spread 2", 0)]
    lopsided = Topology("l", {0: [0], 1: [1, 2, 3]})
    assert shown(expand_spec({"spread": [2]}, lopsided, "f.yaml", "e")) == [
        "spread 2 runs on the same CPUs as compact 2 here"]
    one = Topology("one", {0: [0, 1]})
    assert shown(expand_spec({"spread": [2, 1]}, one, "f.yaml", "e")) == \
        ["1 NUMA node: spread 2 would be compact 2", "1 NUMA node: spread 1 would be compact 1"]


def test_spread_k_per_node_is_kept_even_where_it_covers_the_same_cpus_as_compact():
    """2/node on two nodes of two CPUs is every CPU: the per-node count is what was asked, so it stays."""
    assert shown(expand_spec({"spread": ["2/node", "1/node"]}, TWO, "f.yaml", "e")) == [
        ([0, 1, 2, 3], "spread 2/node (4)", 0), ([0, 2], "spread 1/node (2)", 0)]


def test_spread_on_one_cpu_node_beside_a_memory_only_node_is_left_out():
    """One socket with a CXL memory expander (node 1: memory, no CPUs): there is still only
    one node to spread threads over, so spread counts, per-node ones too, are compact and
    left out with the one-node line; the memory-only node does not make it two."""
    cxl = Topology("cxl", {0: [0, 1, 2, 3], 1: []}, {0: 16384, 1: 65536}, [[10, 21], [21, 10]])
    assert shown(expand_spec({"spread": [2, "1/node"]}, cxl, "f.yaml", "e")) == [
        "1 NUMA node: spread 2 would be compact 2", "1 NUMA node: spread 1/node would be compact 1/node"]


def test_smt_counts_every_hardware_thread():
    assert shown(expand_spec({"compact": [2, 4], "smt": True}, SMT, "f.yaml", "e")) == [
        ([0, 4], "compact 2 smt", 0), ([0, 4, 1, 5], "compact 4 smt", 0)]
    assert shown(expand_spec({"spread": [2, "node"], "smt": True}, SMT, "f.yaml", "e")) == [
        ([0, 2], "spread 2 smt", 0), ([0, 2, 4, 6], "spread node (4) smt", 0)]


def test_spread_over_every_hardware_thread_is_compact_all_with_smt_and_left_out():
    """With smt: true, spread is compared with compact of every hardware thread: spread
    all is the same 8 CPUs (left out), spread half is not."""
    assert shown(expand_spec({"spread": ["all", "half"], "smt": True}, SMT, "f.yaml", "e")) == [
        "spread all runs on the same CPUs as compact all here", ([0, 2, 4, 6], "spread half (4) smt", 0)]


def test_per_node_counts_with_smt_take_a_cores_hardware_threads_first():
    """k/node with smt: true: the node's first k hardware threads, a core's siblings next
    to each other (3/node: both threads of core 0, then core 1's first), not k cores."""
    assert shown(expand_spec({"compact": ["2/node", "3/node"], "smt": True}, SMT, "f.yaml", "e")) == [
        ([0, 4, 2, 6], "compact 2/node (4) smt", 0), ([0, 4, 1, 2, 6, 3], "compact 3/node (6) smt", 0)]


def test_all_choices_are_not_reduced_unless_distinct_is_asked():
    assert [o[1] for o in expand_spec({"layout": "1/1"}, Topology("t", {n: [n] for n in range(3)}), "f", "e")] == \
        ["1/1 on 0,1", "1/1 on 0,2", "1/1 on 1,2"]


# -- expand_experiment: specs × memory policies × bindings --------------------------------

THREE = Topology("three", {0: [0], 1: [1], 2: [2]}, {0: 1, 1: 1, 2: 1}, [[10, 20, 30], [20, 10, 20], [30, 20, 10]])


def experiment_told(exp, topo, defaults=None):
    with pytest.raises(ConfigError) as e:
        expand_experiment(exp, defaults or {}, topo, "f.yaml", "e")
    return str(e.value)


@pytest.mark.parametrize("exp, line", [
    ({"placements": [{"matrix": {"via": "membind"}}], "memory": ["local"]},
     "e.placements[0]: matrix via membind sets each cell's memory policy itself: drop the experiment's memory list"),
    ({"placements": [{"sweep": {"memory_cpu": 0}}], "binding": ["process"]},
     "e.placements[0]: sweep and matrix cells pin thread 0 to the memory CPU: they need binding [threads]"),
    ({"placements": [{"unpinned": [2]}], "binding": ["threads"]},
     "e.placements[0]: unpinned placements leave the threads to the OS within a mask of every CPU: they need "
     "binding [process]"),
    # one binding that fits among others is not enough: the other would be planned too
    ({"placements": [{"sweep": {"memory_cpu": 0}}], "binding": ["threads", "process"]},
     "e.placements[0]: sweep and matrix cells pin thread 0 to the memory CPU: they need binding [threads]"),
    ({"placements": [{"unpinned": [2]}], "binding": ["process", "threads"]},
     "e.placements[0]: unpinned placements leave the threads to the OS within a mask of every CPU: they need "
     "binding [process]"),
])
def test_cells_and_bindings_that_do_not_go_together(exp, line):
    assert experiment_told(exp, TWO) == "f.yaml: " + line


def test_the_right_bindings_for_cells_and_unpinned_are_accepted():
    assert [p.binding for p in expand_experiment({"placements": [{"sweep": {"memory_cpu": 0, "readers": "self"}}],
                                                  "binding": ["threads"]}, {}, TWO, "f", "e")] == ["threads"]
    assert [p.binding for p in expand_experiment({"placements": [{"unpinned": [2]}], "binding": ["process"]},
                                                 {}, TWO, "f", "e")] == ["process"]


def test_what_cannot_exist_here_is_said_once_and_the_rest_expands():
    said = []
    out = expand_experiment({"placements": [{"spread": [2]}, {"cpus": "0"}, {"spread": [2]}]},
                            {"memory": [{"interleave": "all"}, "local"]}, ONE, "f.yaml", "e", said)
    assert [p.id for p in out] == ["c0_loc_p_nc"]
    assert said == ["e.placements[0]: not applicable here: 1 NUMA node: spread 2 would be compact 2",
                    "e memory[0] for cpus 0: not applicable here: 1 NUMA node with memory: interleave over all is local",
                    "e.placements[2]: not applicable here: 1 NUMA node: spread 2 would be compact 2"]
    # nobody listening: left out all the same
    assert [p.id for p in expand_experiment({"placements": [{"spread": [2]}, {"cpus": "1"}]}, {}, ONE, "f", "e")] == \
        ["c1_loc_p_nc"]


def test_an_explicit_id_with_several_memory_targets_is_refused():
    """membind each-distance from node 0 of a line of three nodes: two targets, one id."""
    exp = {"placements": [{"cpus": "0", "id": "x"}], "memory": [{"membind": "each-distance"}]}
    assert experiment_told(exp, THREE) == ("f.yaml: e.placements[0].id: an explicit id needs a single placement, "
                                           "but the experiment lists several memory policies or bindings")
    one_target = {**exp, "placements": [{"cpus": "1", "id": "x"}]}          # node 1: both at distance 20
    assert [p.id for p in expand_experiment(one_target, {}, THREE, "f", "e")] == ["x"]


def test_a_threads_key_checks_the_count_each_placement_gives():
    """`threads:` beside a spec: placements of that many threads pass (a pinned one counts
    its CPUs, an unpinned team its threads), another count is refused with both numbers."""
    assert shown(expand_spec({"compact": [2], "threads": 2}, TWO, "f.yaml", "e")) == [([0, 1], "compact 2", 0)]
    assert shown(expand_spec({"unpinned": [1], "threads": 1}, TWO, "f.yaml", "e")) == [([0, 1, 2, 3], "unpinned 1", 1)]
    assert told({"compact": [2], "threads": 3}, TWO) == ("ConfigError", "f.yaml: e: compact 2 places 2 threads, "
                                                                        "but threads: 3")


def test_a_placement_that_cannot_exist_here_does_not_stop_the_ones_after_it():
    """A layout on more nodes than there are is left out with its line; the experiment's
    next placements still expand."""
    said = []
    out = expand_experiment({"placements": [{"layout": "1/1"}, {"cpus": "0"}, {"cpus": "1"}]}, {}, ONE,
                            "f.yaml", "e", said)
    assert [p.id for p in out] == ["c0_loc_p_nc", "c1_loc_p_nc"]
    assert said == ["e.placements[0]: not applicable here: 1 NUMA node: layout '1/1' needs 2 nodes"]


def test_a_wrong_memory_cell_names_the_study_file():
    assert experiment_told({"placements": [{"sweep": {"memory_cpu": 9}}]}, TWO) == \
        "f.yaml: e.placements[0].sweep.memory_cpu: CPU 9 is not in platform two (CPUs 0-3)"



def test_a_membind_matrix_is_its_cells_whatever_the_studys_memory_list():
    """Each cell of a membind matrix sets its own memory: a study-level list of several
    memory policies neither multiplies the cells nor refuses them as 'an explicit id'
    the user never wrote (it did: the cells' built-in ids met that check)."""
    exp = {"placements": [{"matrix": {"via": "membind"}}]}
    one = expand_experiment(exp, {"memory": ["local"]}, TWO, "f.yaml", "e")
    several = expand_experiment(exp, {"memory": ["local", {"interleave": "all"}]}, TWO, "f.yaml", "e")
    assert len(one) == 4
    assert [(p.id, p.label) for p in several] == [(p.id, p.label) for p in one]


def test_a_plan_line_is_read_back_as_entry_kind_and_reason():
    """The report reads decisions as data: not applicable, left out, or a plain note."""
    from numaplace.plan.expand import not_applicable_record
    assert not_applicable_record("e.placements[0]: not applicable here: 1 NUMA node: spread 2 would be compact 2") == \
        {"entry": "e.placements[0]", "what": "not-applicable", "why": "1 NUMA node: spread 2 would be compact 2"}
    assert not_applicable_record("experiments[1] (far): left out: none of its placements exists: here: x") == \
        {"entry": "experiments[1] (far)", "what": "left-out", "why": "none of its placements exists: here: x"}
    assert not_applicable_record("a: b: not applicable here: c: not applicable here: d") == \
        {"entry": "a: b", "what": "not-applicable", "why": "c: not applicable here: d"}
    assert not_applicable_record("the machine is busy") == {"entry": "", "what": "note", "why": "the machine is busy"}
