"""Placements of the memory micro-benchmarks: the thesis's sweeps and node × node
matrices on the reference platforms, down to the command lines the launchers build."""
from pathlib import Path

import pytest

from numaplace import ConfigError
from numaplace.kinds.microbench import intended_memory_node
from numaplace.machine.topology import Topology
from numaplace.plan.launch import command
from numaplace.plan import memory_specs
from numaplace.plan.memory_specs import count
from numaplace.plan.memory_specs import expand as expand_cells
from numaplace.plan.placement import Memory
from numaplace.plan.study import Study
from conftest import SMT, expand

CONFIG = Path(__file__).resolve().parents[1] / "config"




def test_first_touch_matrix_every_cell_thread0_on_memory_node(platforms):
    x = platforms["x4600"]
    cells = expand(x, {"placements": [{"matrix": {"via": "first-touch"}}]}, {"launcher": "taskset"})
    assert len(cells) == 64 and len({p.id for p in cells}) == 64
    for p in cells:
        r, m = (int(v) for v in p.id.removeprefix("mx-ft-r").split("-m"))
        order = p.order or p.cpus
        assert order[0] == x.nodes[m][0] and x.node_of(order[-1]) == r
        assert p.threads == (1 if r == m else 2) and p.binding == "threads" and p.memory.policy == "local"
        argv, env = command(p, "./memlat.X.x")
        assert argv[:3] == ["taskset", "-c", p.cpulist]
        assert env["OMP_PLACES"] == ",".join(f"{{{c}}}" for c in order)   # thread 0 first
        assert intended_memory_node(p.to_dict(), x.node_of) == m
    # reader node 0 × memory node 7: thread 0 on CPU 14 writes, thread 1 on CPU 0 reads
    p = next(p for p in cells if p.id == "mx-ft-r0-m7")
    assert p.order == (14, 0) and p.cpus == (0, 14)
    assert command(p, "./b")[1]["OMP_PLACES"] == "{14},{0}"


def test_membind_matrix_one_thread_memory_bound(platforms):
    n = platforms["nehalem"]
    cells = expand(n, {"launcher": "numactl", "placements": [{"matrix": {"via": "membind"}}]})
    assert sorted(p.id for p in cells) == ["mx-mb-r0-m0", "mx-mb-r0-m1", "mx-mb-r1-m0", "mx-mb-r1-m1"]
    p = next(p for p in cells if p.id == "mx-mb-r1-m0")
    assert p.cpus == (4,) and p.memory.policy == "membind" and p.memory.nodes == (0,)
    assert command(p, "./membw.X.x")[0] == ["numactl", "--physcpubind=4", "--membind=0", "./membw.X.x"]
    assert intended_memory_node(p.to_dict(), n.node_of) == 0


def test_membind_matrix_needs_numactl(platforms):
    with pytest.raises(ConfigError, match="taskset cannot express"):
        expand(platforms["nehalem"], {"launcher": "taskset", "placements": [{"matrix": {"via": "membind"}}]})


def test_sweep_memory_on_cpu_read_from_every_cpu(platforms):
    x = platforms["x4600"]
    cells = expand(x, {"placements": [{"sweep": {"memory_cpu": 4, "readers": "all"}}]}, {"launcher": "taskset"})
    assert [p.id for p in cells] == [f"sw-m4-r{y}" for y in range(16)]
    assert [p.order or p.cpus for p in cells][:6] == [(4, 0), (4, 1), (4, 2), (4, 3), (4,), (4, 5)]


def test_matrix_subset_and_bad_nodes(platforms):
    x = platforms["x4600"]
    cells = expand(x, {"placements": [{"matrix": {"readers": [0, 3], "memory": "2-3"}}]}, {"launcher": "numactl"})
    assert sorted(p.id for p in cells) == ["mx-ft-r0-m2", "mx-ft-r0-m3", "mx-ft-r3-m2", "mx-ft-r3-m3"]
    with pytest.raises(ConfigError, match="node 9"):
        expand(x, {"placements": [{"matrix": {"readers": [9]}}]}, {"launcher": "numactl"})
    with pytest.raises(ConfigError, match="binding"):
        expand(x, {"binding": ["process"], "placements": [{"sweep": {"memory_cpu": 0}}]}, {"launcher": "taskset"})


def test_aprun_keeps_the_thread_order(platforms):
    m = platforms["magny-cours"]
    cells = expand(m, {"placements": [{"sweep": {"memory_cpu": 6, "readers": "0"}}]}, {"launcher": "aprun"})
    assert command(cells[0], "./membw.X.x")[0] == ["aprun", "-n", "1", "-d", "2", "-cc", "6,0", "./membw.X.x"]


def study(tmp_path, **exp):
    cfg = {"study": "m", "platform": "nehalem", "launcher": "numactl", "repetitions": 2,
           "experiments": [{"name": "e", "placements": [{"matrix": {}}], **exp}]}
    return Study(cfg, "m.yaml", CONFIG)


def test_study_runs_carry_args_and_distinct_ids(tmp_path):
    s = study(tmp_path, benchmarks=["membw", "memlat"], classes=["X"], args=["--sizes", "64M"])
    assert len(s.runs) == 2 * 4 * 2
    spec = s.run_params(s.runs[0].run_id)
    assert spec["argv"][-3:] == ["BINARY", "--sizes", "64M"]
    cfg2 = {"study": "m", "platform": "nehalem", "launcher": "numactl", "repetitions": 1, "experiments": [
        {"name": "a", "benchmarks": ["membw"], "classes": ["X"], "args": ["--mode", "serial"],
         "placements": [{"cpus": "0"}]},
        {"name": "b", "benchmarks": ["membw"], "classes": ["X"], "args": ["--mode", "parallel"],
         "placements": [{"cpus": "0"}]}]}
    s2 = Study(cfg2, "m.yaml", CONFIG)
    assert len({r.run_id for r in s2.runs}) == 2


@pytest.mark.parametrize("exp,match", [
    ({"benchmarks": ["membw"], "classes": ["B"]}, "one class, X"),
    ({"benchmarks": ["cg"], "classes": ["B"]}, "memory micro-benchmarks"),
    ({"benchmarks": ["membw", "cg"], "classes": ["X"]}, "separate experiments"),
    ({"benchmarks": ["membw"], "classes": ["X"], "args": ["--sizes", "1M;rm"]}, "not allowed"),
])
def test_bad_memory_experiments_are_one_line_errors(tmp_path, exp, match):
    with pytest.raises(ConfigError, match=match) as e:
        study(tmp_path, **exp)
    assert "\n" not in str(e.value)


def test_contention_thread0_on_memory_cpu(platforms):
    x = platforms["x4600"]
    cells = expand(x, {"placements": [{"contention": {"memory_cpu": 4, "threads": [1, 2, 16]}}]},
                   {"launcher": "taskset"})
    assert [p.id for p in cells] == ["ct-m4-t1", "ct-m4-t2", "ct-m4-t16"]
    assert (cells[1].order or cells[1].cpus) == (4, 5)      # the memory CPU's own node's cores first
    assert command(cells[2], "./b")[1]["OMP_PLACES"].startswith("{4},{5},{0},{1},{2},{3},{6}")
    with pytest.raises(ConfigError, match="17 threads"):
        expand(x, {"placements": [{"contention": {"memory_cpu": 0, "threads": [17]}}]}, {"launcher": "taskset"})


def test_sweep_self_is_local_on_every_cpu(platforms):
    n = platforms["nehalem"]
    cells = expand(n, {"placements": [{"sweep": {"memory_cpu": "all", "readers": "self"}}]}, {"launcher": "taskset"})
    assert [(p.cpus, p.order) for p in cells] == [((c,), ()) for c in range(8)]


@pytest.mark.parametrize("name", ["x4600", "magny-cours", "nehalem"])
def test_thesis_studies_have_the_memory_experiments(repo, name):
    from numaplace.plan.study import load_study_file
    s = load_study_file(repo / "config" / "studies" / f"thesis-{name}.yaml", repo / "config")
    benches = {r.bench for r in s.runs}
    assert {"membw", "memlat"} <= benches
    mem = [r for r in s.runs if r.bench in ("membw", "memlat")]
    assert all(r.cls == "X" and r.args for r in mem if r.bench == "membw")
    assert any(r.placement.id.startswith("mx-ft-") for r in mem)
    assert any(r.placement.id.startswith("ct-") for r in mem)


# -- what a wrong sweep, contention or matrix is told --------------------------------------
# The cells of numaplace.plan.memory_specs on two small machines (`expand_cells` is its
# expand, not conftest's): each mistake named with its file and entry, and the cells counted
# before any is made. Several pin what the mutation run left alive
# (tests/benchmarks/mutation-survivors.md).

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
        expand_cells(spec, TWO, "f.yaml", "e")
    assert str(e.value) == "f.yaml: " + line


def test_a_sweep_reads_from_every_cpu_by_default():
    cells = expand_cells({"sweep": {"memory_cpu": 1}}, TWO, "f.yaml", "e")
    assert [order for order, *_ in cells] == [(1, 0), (1,), (1, 2), (1, 3)]
    assert expand_cells({"sweep": {"memory_cpu": "1", "readers": "self"}}, TWO, "f.yaml", "e") == \
        [((1,), "memory on cpu 1, read by cpu 1", "sw-m1-r1", None)]


def test_contention_reads_with_memory_cpu_and_the_next_cpus():
    assert [order for order, *_ in expand_cells({"contention": {"memory_cpu": 1, "threads": [1, 4]}}, TWO, "f", "e")] == \
        [(1,), (1, 0, 2, 3)]


def test_a_matrix_reads_every_memory_node_from_every_cpu_node_by_default():
    """First touch where the memory node has a CPU to touch it; a memory-only node (node 2:
    CXL, HBM) has its column too, bound with membind: it is never left out."""
    cells = expand_cells({"matrix": {}}, TWO, "f.yaml", "e")
    assert [(order, shape, mem) for order, shape, _, mem in cells] == [
        ((0,), "node 0 reads node 0 (first touch)", None), ((2, 0), "node 0 reads node 1 (first touch)", None),
        ((0,), "node 0 reads node 2 (membind)", Memory("membind", (2,))),
        ((0, 2), "node 1 reads node 0 (first touch)", None), ((2,), "node 1 reads node 1 (first touch)", None),
        ((2,), "node 1 reads node 2 (membind)", Memory("membind", (2,)))]


def test_contention_counts_physical_cores():
    """`node` readers are a node's cores, as for the NPB placements, not its hardware threads."""
    (cell,) = expand_cells({"contention": {"memory_cpu": 0, "threads": ["node"]}}, SMT, "f", "e")
    assert cell[1:] == ("2 readers, memory on cpu 0", "ct-m0-t2", None)


@pytest.mark.parametrize("spec, cells", [
    ({"sweep": {"memory_cpu": "all"}}, 16), ({"sweep": {"memory_cpu": "all", "readers": "self"}}, 4),
    ({"sweep": {"memory_cpu": "0-3", "readers": "0-1"}}, 8), ({"contention": {"memory_cpu": 0, "threads": [1, 2, 4]}}, 3),
    ({"matrix": {"readers": "0"}}, 3), ({"matrix": {"memory": [1], "via": "membind"}}, 2),
])
def test_cells_are_counted_before_any_is_made(spec, cells):
    assert count(spec, TWO, "f.yaml", "e") == cells == len(expand_cells(spec, TWO, "f.yaml", "e"))


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
        expand_cells({"sweep": {"memory_cpu": 0, "readers": -1}}, TWO, "f.yaml", "e")
    assert str(e.value) == "f.yaml: e.sweep.readers: CPU -1 is not in platform two (CPUs 0-3)"


# node 1 has CPUs but no memory of its own (memory_mb 0), node 0 has 1 MB
NOMEM = Topology("nomem", {0: [0, 1], 1: [2, 3]}, {0: 1, 1: 0})


def test_membind_to_a_node_without_memory_is_refused_naming_the_memory_entry():
    """numactl --membind to a node without memory cannot run: the matrix says which node,
    under the spec's memory entry."""
    with pytest.raises(ConfigError) as e:
        expand_cells({"matrix": {"via": "membind", "memory": [1]}}, NOMEM, "f.yaml", "e")
    assert str(e.value) == "f.yaml: e.matrix.memory: node 1 of platform nomem has no memory"
    assert (e.value.where, e.value.entry) == ("f.yaml", "e.matrix.memory")


def test_membind_to_a_node_with_some_memory_is_a_cell():
    """Only a node with no memory at all is refused: 1 MB is memory to bind to."""
    assert expand_cells({"matrix": {"via": "membind", "memory": [0], "readers": [1]}}, NOMEM, "f.yaml", "e") == \
        [((2,), "node 1 reads node 0 (membind)", "mx-mb-r1-m0", Memory("membind", (0,)))]


def test_a_sweep_over_all_cpus_reads_from_physical_cores_only():
    """memory_cpu/readers all = one hardware thread per core, as every other experiment counts."""
    cells = expand_cells({"sweep": {"memory_cpu": "all"}}, SMT, "f.yaml", "e")
    assert [order for order, *_ in cells] == [(x,) if x == y else (x, y) for x in range(4) for y in range(4)]
    assert count({"sweep": {"memory_cpu": "all"}}, SMT, "f.yaml", "e") == 16


def test_a_sweep_from_the_first_core_starts_on_the_first_node():
    """memory_cpu: first is the first core node by node, not the lowest CPU id."""
    odd = Topology("odd", {0: [4, 5], 1: [0, 1]})
    assert expand_cells({"sweep": {"memory_cpu": "first", "readers": "self"}}, odd, "f.yaml", "e") == \
        [((4,), "memory on cpu 4, read by cpu 4", "sw-m4-r4", None)]
    assert [c[2] for c in expand_cells({"sweep": {"memory_cpu": "first"}}, odd, "f.yaml", "e")] == \
        ["sw-m4-r4", "sw-m4-r5", "sw-m4-r0", "sw-m4-r1"]
    assert expand_cells({"sweep": {"memory_cpu": "first", "readers": "0"}}, odd, "f.yaml", "e") == \
        [((4, 0), "memory on cpu 4, read by cpu 0", "sw-m4-r0", None)]


def grouped(n):
    """n nodes of two CPUs in groups of three: 10 local, 20 in the group, 30 across."""
    d = [[10 if i == j else (20 if i // 3 == j // 3 else 30) for j in range(n)] for i in range(n)]
    return Topology(f"g{n}", {i: [2 * i, 2 * i + 1] for i in range(n)}, {i: 100 for i in range(n)}, d)


def test_an_auto_matrix_measures_every_cell_up_to_8_by_8_nodes_and_one_per_class_beyond():
    """64 cells are all measured; 81 are sampled to one cell per distance class, said in one note."""
    eight, nine = grouped(8), grouped(9)
    assert count({"matrix": {"cells": "auto"}}, eight, "f.yaml", "e") == 64
    assert len(expand_cells({"matrix": {"cells": "auto"}}, eight, "f.yaml", "e")) == 64
    assert memory_specs.sampled_note({"matrix": {"cells": "auto"}}, eight, "f.yaml", "e") is None
    cells = expand_cells({"matrix": {"cells": "auto"}}, nine, "f.yaml", "e")
    assert [(order, pid) for order, _, pid, _ in cells] == [((0,), "mx-ft-r0-m0"), ((2, 0), "mx-ft-r0-m1"),
                                                           ((6, 0), "mx-ft-r0-m3")]
    assert count({"matrix": {"cells": "auto"}}, nine, "f.yaml", "e") == 3
    assert count({"matrix": {}}, nine, "f.yaml", "e") == 81
    assert memory_specs.sampled_note({"matrix": {"cells": "auto"}}, nine, "f.yaml", "e") == (
        "e: matrix of 9 x 9 nodes sampled: one cell per SLIT distance and memory kind, 3 of 81 cells "
        "(cells: all measures every one)")
    assert memory_specs.sampled_note({"matrix": {}}, nine, "f.yaml", "e") is None
    assert memory_specs.sampled_note({"sweep": {"memory_cpu": 0}}, nine, "f.yaml", "e") is None


def test_distance_classes_keep_a_memory_only_node_apart_from_a_cpu_node_at_the_same_distance():
    """Same SLIT distance, other memory kind (CXL beside DRAM): a class of its own, membind."""
    cxl = Topology("cxl", {0: [0, 1], 1: [2, 3], 2: []}, {0: 100, 1: 100, 2: 100},
                   [[10, 21, 21], [21, 10, 21], [21, 21, 10]])
    cells = expand_cells({"matrix": {"cells": "distance-classes"}}, cxl, "f.yaml", "e")
    assert [(order, pid, mem) for order, _, pid, mem in cells] == [
        ((0,), "mx-ft-r0-m0", None), ((2, 0), "mx-ft-r0-m1", None),
        ((0,), "mx-mb-r0-m2", Memory("membind", (2,)))]
    assert memory_specs.sampled_note({"matrix": {"cells": "distance-classes"}}, cxl, "f.yaml", "e") == (
        "e: matrix of 2 x 3 nodes sampled: one cell per SLIT distance and memory kind, 3 of 6 cells "
        "(cells: all measures every one)")
