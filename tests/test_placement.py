"""The placement language on the reference study's three platforms."""
import pytest
from pathlib import Path

from numaplace import ConfigError
from numaplace.plan.launch import command
from numaplace.plan.placement import (Memory, NotApplicable, Placement, compact, count_choices, default_id, finish,
                                      node_choices, resolve_memory_nodes, spread)
from numaplace.core.cpulist import format_cpulist, parse_cpulist
from numaplace.machine.topology import Topology, load_platform
from conftest import ONE, SMT, TWO, expand




def cmd(p, binary="./cg.B.x"):
    argv, env = command(p, binary)
    return " ".join(argv), env


def test_cpulist_roundtrip():
    assert parse_cpulist("0-3,8") == [0, 1, 2, 3, 8]
    assert format_cpulist([8, 0, 1, 2, 3]) == "0-3,8"
    assert format_cpulist([1, 2, 7, 8, 9, 10, 13]) == "1-2,7-10,13"
    with pytest.raises(ConfigError):
        parse_cpulist("3-1")


def test_platform_shapes(platforms):
    x = platforms["x4600"]
    assert x.nodes[5] == [10, 11] and len(x.cpus) == 16
    assert x.distance(0, 7) == 40 and x.distance(2, 3) == 30   # 3 hops, 2 hops
    m = platforms["magny-cours"]
    assert m.nodes[3] == list(range(18, 24)) and m.launcher == "aprun"
    assert platforms["nehalem"].nodes == {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}


def test_magny_cours_2222_aprun(platforms):
    (p,) = expand(platforms["magny-cours"], {"placements": [{"layout": "2/2/2/2", "nodes": [0, 1, 2, 3]}]})
    assert cmd(p)[0] == "aprun -n 1 -d 8 -cc 0,1,6,7,12,13,18,19 ./cg.B.x"
    assert cmd(p)[1] == {"OMP_NUM_THREADS": "8"}
    assert p.label == "2/2/2/2 on 0-3 · pinned threads" and p.layout == (2, 2, 2, 2)


def test_magny_cours_45554(platforms):
    (p,) = expand(platforms["magny-cours"], {"placements": [{"layout": "4/5/5/4", "nodes": [0, 1, 2, 3]}]})
    assert p.cpulist == "0-3,6-10,12-16,18-21" and p.threads == 18


def test_x4600_taskset_nodes_2_3(platforms):
    (p,) = expand(platforms["x4600"], {"placements": [{"layout": "2/2", "nodes": [2, 3]}]})
    assert cmd(p)[0] == "taskset -c 4-7 ./cg.B.x"


def test_x4600_numactl_interleave(platforms):
    (p,) = expand(platforms["x4600"], {"launcher": "numactl", "memory": [{"interleave": [2, 3]}],
                                       "placements": [{"layout": "2/2", "nodes": [0, 1]}]})
    assert cmd(p)[0] == "numactl --physcpubind=0-3 --interleave=2-3 ./cg.B.x"
    assert p.label == "2/2 on 0-1 · interleave 2-3"


def test_memory_policies_numactl(platforms):
    ps = expand(platforms["x4600"], {"launcher": "numactl", "placements": [{"cpus": "0-3"}],
                                     "memory": ["local", {"membind": [0]}, {"preferred": 4}]})
    assert [cmd(p)[0].split()[2] for p in ps] == ["--localalloc", "--membind=0", "--preferred=4"]
    assert len({p.id for p in ps}) == 3


def test_thread_binding_env(platforms):
    (p,) = expand(platforms["nehalem"], {"binding": ["threads"], "placements": [{"cpus": "1,5"}]})
    assert cmd(p)[1] == {"OMP_NUM_THREADS": "2", "OMP_PLACES": "{1},{5}", "OMP_PROC_BIND": "true"}


def test_x4600_pairs_and_distinct(platforms):
    x = platforms["x4600"]
    pairs = expand(x, {"placements": [{"layout": "2/2", "nodes": "all-choices"}]})
    assert len(pairs) == 28
    four = expand(x, {"placements": [{"layout": "2/2/2/2", "nodes": "all-choices"}]})
    assert len(four) == 70
    distinct = expand(x, {"placements": [{"layout": "2/2/2/2", "nodes": "all-choices", "distinct": True}]})
    assert 1 < len(distinct) < 70
    # every choice of four nodes is the image of exactly one representative under the
    # hop matrix's symmetries (the ladder's mirror images)
    autos = x.automorphisms()
    assert len(autos) == 4
    reps = [frozenset(p.nodes) for p in distinct]
    for p in four:
        images = {frozenset(a[n] for n in p.nodes) for a in autos}
        assert len(images & set(reps)) == 1, p.nodes


def test_distinct_on_symmetric_magny_cours(platforms):
    # dies 0-3 with diagonal slow links: pairs are either "fast link" or "diagonal"
    ch = node_choices([6, 6], platforms["magny-cours"], distinct=True)
    kinds = {frozenset(n for n, _ in c) for c in ch}
    assert len(ch) == 2 and frozenset({0, 3}) in kinds | {frozenset({1, 2})}


def test_nonuniform_layout_orders(platforms):
    ps = expand(platforms["nehalem"], {"placements": [{"layout": "3/1", "nodes": "all-choices"}]})
    assert sorted(p.cpulist for p in ps) == ["0,4-6", "0-2,4"]


def test_compact_spread(platforms):
    x = platforms["x4600"]
    c = expand(x, {"placements": [{"compact": [4]}]})[0]
    s = expand(x, {"placements": [{"spread": [4]}]})[0]
    assert c.cpulist == "0-3" and s.cpulist == "0,2,4,6"
    assert expand(platforms["nehalem"], {"placements": [{"spread": [6]}]})[0].layout == (3, 3)


@pytest.mark.parametrize("exp, problem", [
    ({"placements": [{"cpus": "0-3"}], "memory": [{"membind": [0]}]}, "taskset cannot express"),
    ({"launcher": "aprun", "binding": ["process"], "placements": [{"cpus": "0-3"}]}, "aprun cannot express"),
    ({"launcher": "omp", "placements": [{"cpus": "0-3"}], "memory": [{"membind": [1]}]}, "omp cannot express"),
])
def test_launcher_cannot_express(platforms, exp, problem):
    with pytest.raises(ConfigError, match=problem):
        expand(platforms["x4600"], exp)


def test_plan_rows_thesis_studies(repo, tmp_path):
    from numaplace.plan.study import load_study_file
    for name, expect in [("thesis-magny-cours", "aprun -n 1 -d 8 -cc 0,1,6,7,12,13,18,19 ./cg.B.x"),
                         ("thesis-x4600", "taskset -c 4-7 ./cg.B.x"),
                         ("thesis-x4600", "numactl --physcpubind=0-3 --interleave=2-3 ./cg.B.x"),
                         ("thesis-nehalem", "taskset -c 1-6 ./mg.C.x")]:
        st = load_study_file(repo / "config" / "studies" / f"{name}.yaml", repo / "config")
        assert any(r.row()["command"].endswith(expect) for r in st.runs), (name, expect)
        st.write_plan(tmp_path / f"{name}.tsv")
        lines = (tmp_path / f"{name}.tsv").read_text().splitlines()
        assert len(lines) == len(st.runs) + 1
        assert len({r.run_id for r in st.runs}) == len(st.runs)


def test_multi_node_membind_keeps_every_node(platforms):
    """membind [1, 3, 5] binds to all three nodes: the launcher's argv, the placement's
    memory nodes and its label all carry every node, in order."""
    (p,) = expand(platforms["x4600"], {"launcher": "numactl", "placements": [{"cpus": "0-1"}],
                                       "memory": [{"membind": [1, 3, 5]}]})
    assert tuple(p.memory.nodes) == (1, 3, 5)
    assert cmd(p)[0] == "numactl --physcpubind=0-1 --membind=1,3,5 ./cg.B.x"
    assert p.memory.label == "membind 1,3,5"


@pytest.mark.parametrize("placement,key", [({"cpus": "0-1", "thread": 2}, "thread"),
                                           ({"layout": "2/2", "nodes": "all-choices", "distinc": True}, "distinc")])
def test_misspelt_placement_key_is_refused_by_name(platforms, placement, key):
    from numaplace import ConfigError
    from numaplace.plan.study import Study
    study = {"study": "t", "platform": "x4600", "experiments": [{"name": "e", "placements": [placement]}]}
    with pytest.raises(ConfigError) as e:
        Study(study, "s.yaml", "config")
    assert str(e.value) == (f"s.yaml: experiments[0].placements[0]: unknown key: Additional properties "
                            f"are not allowed ('{key}' was unexpected)")


# Every refusal of the placement language, word for word: file, entry, problem.
@pytest.mark.parametrize("plat, exp, defaults, error", [
    ("x4600", {"placements": [{"cpus": "0-1,40"}]}, {},
     "experiments[0].placements[0].cpus: CPU 40 is not in platform x4600 (CPUs 0-15)"),
    ("x4600", {"placements": [{"cpus": "3-1"}]}, {},
     "experiments[0].placements[0].cpus: descending range '3-1' in '3-1'"),
    ("x4600", {"placements": [{"layout": "2/0", "nodes": [0, 1]}]}, {},
     "experiments[0].placements[0].layout: '2/0': every node needs at least one thread"),
    ("x4600", {"placements": [{"layout": "3/3"}]}, {},
     "experiments[0].placements[0]: layout '3/3' fits on no choice of nodes of platform x4600"),
    ("x4600", {"placements": [{"layout": "2/2", "id": "pair"}]}, {},
     "experiments[0].placements[0].id: an explicit id needs a single placement, but nodes: all-choices gives 28"),
    ("nehalem", {"placements": [{"layout": "3/1", "id": "two-ways"}]}, {},
     "experiments[0].placements[0].id: an explicit id needs a single placement, but nodes: all-choices gives 2"),
    ("x4600", {"placements": [{"layout": "2/2", "nodes": [0, 0]}]}, {},
     "experiments[0].placements[0].nodes: a node appears twice"),
    ("x4600", {"placements": [{"layout": "2/2", "nodes": "3-2"}]}, {},
     "experiments[0].placements[0].nodes: descending range '3-2' in '3-2'"),
    ("x4600", {"placements": [{"layout": "2/2/2", "nodes": "2-3"}]}, {},
     "experiments[0].placements[0]: layout '2/2/2' has 3 entries but nodes has 2"),
    ("x4600", {"placements": [{"layout": "2/3", "nodes": "2-3"}]}, {},
     "experiments[0].placements[0].layout: layout asks for 3 threads on node 3, which has 2 CPUs"),
    ("x4600", {"placements": [{"layout": "2/2", "nodes": [2, 9]}]}, {},
     "experiments[0].placements[0].layout: node 9 is not in platform x4600 (nodes 0-7)"),
    ("x4600", {"placements": [{"compact": [2, 4], "id": "c"}]}, {},
     "experiments[0].placements[0].id: an explicit id needs a single placement, but compact lists 2 thread counts"),
    ("x4600", {"placements": [{"spread": [20]}]}, {},
     "experiments[0].placements[0].spread: 20 threads but platform x4600 has 16 CPUs"),
    ("x4600", {"placements": [{"spread": [3], "threads": 4}]}, {},
     "experiments[0].placements[0]: spread 3 places 3 threads, but threads: 4"),
    ("x4600", {"placements": [{"cpus": "0-1", "id": "two"}], "memory": ["local", {"membind": [0]}]}, {},
     "experiments[0].placements[0].id: an explicit id needs a single placement, but the experiment lists "
     "several memory policies or bindings"),
    ("x4600", {"placements": [{"cpus": "0-1", "id": "two"}], "binding": ["process", "threads"]}, {},
     "experiments[0].placements[0].id: an explicit id needs a single placement, but the experiment lists "
     "several memory policies or bindings"),
    ("x4600", {"placements": [{"cpus": "0-1"}], "launcher": "numactl", "memory": [{"membind": [9]}]}, {},
     "experiments[0].memory[0].membind: node 9 is not in platform x4600 (nodes 0-7)"),
    ("x4600", {"placements": [{"cpus": "0-1"}], "launcher": "numactl", "memory": ["local", {"membind": "2-1"}]}, {},
     "experiments[0].memory[1].membind: descending range '2-1' in '2-1'"),
    ("x4600", {"placements": [{"cpus": "0-1"}], "launcher": "numactl"}, {"memory": [{"interleave": [7, 8]}]},
     "memory.interleave: node 8 is not in platform x4600 (nodes 0-7)"),   # from the study's defaults
], ids=["cpu-outside", "cpus-descending", "layout-zero", "layout-fits-nowhere", "id-all-choices", "id-two-choices",
        "node-twice", "nodes-descending", "layout-vs-nodes", "layout-too-many", "layout-node-unknown",
        "id-compact", "spread-too-many", "threads-crosscheck", "id-memories", "id-bindings",
        "membind-unknown", "membind-descending", "default-memory-unknown"])
def test_refusals_word_for_word(platforms, plat, exp, defaults, error):
    with pytest.raises(ConfigError) as e:
        expand(platforms[plat], exp, defaults)
    assert str(e.value) == "study.yaml: " + error


def test_memory_on_a_memoryless_node_is_refused(tmp_path):
    f = tmp_path / "cpuonly.yaml"
    f.write_text("name: cpuonly\nlauncher: numactl\nnodes:\n  - {id: 0, cpus: '0-1', memory_mb: 1024}\n"
                 "  - {id: 1, cpus: '2-3', memory_mb: 0}\n  - {id: 2, cpus: '4-5', memory_mb: 1}\n")
    topo = load_platform(f)
    assert expand(topo, {"placements": [{"cpus": "0-1"}], "memory": [{"membind": [0, 2]}]})[0].memory.nodes == (0, 2)
    with pytest.raises(ConfigError) as e:
        expand(topo, {"placements": [{"cpus": "0-1"}], "memory": [{"interleave": "0-1"}]})
    assert str(e.value) == "study.yaml: experiments[0].memory[0].interleave: node 1 of platform cpuonly has no memory"


# spec → (id, shape, cpus) of every placement, in order; ids name CPUs, memory, binding, launcher
@pytest.mark.parametrize("plat, exp, defaults, want", [
    ("nehalem", {"placements": [{"layout": "4/4", "id": "full"}]}, {}, [("full", "4/4 on 0,1", "0-7")]),
    ("nehalem", {"placements": [{"layout": "2/2"}]}, {}, [("c0-1.4-5_loc_p_ts", "2/2 on 0,1", "0-1,4-5")]),
    ("nehalem", {"placements": [{"layout": "3/1", "nodes": "all-choices"}]}, {},
     [("c0.4-6_loc_p_ts", "1/3 on 0,1", "0,4-6"), ("c0-2.4_loc_p_ts", "3/1 on 0,1", "0-2,4")]),
    ("x4600", {"placements": [{"layout": "2/2", "nodes": "2-3", "id": "mid"}]}, {}, [("mid", "2/2 on 2-3", "4-7")]),
    ("x4600", {"placements": [{"layout": "1/2", "nodes": [2, 5]}]}, {}, [("c4.10-11_loc_p_ts", "1/2 on 2,5", "4,10-11")]),
    ("x4600", {"placements": [{"compact": [2], "id": "c2"}]}, {}, [("c2", "compact 2", "0-1")]),
    ("x4600", {"placements": [{"spread": [3], "id": "s3"}]}, {}, [("s3", "spread 3", "0,2,4")]),
    ("x4600", {"placements": [{"cpus": "0-1,8", "id": "mine"}], "launcher": "numactl",
               "memory": [{"membind": "0-1"}]}, {}, [("mine", "cpus 0-1,8", "0-1,8")]),
    ("x4600", {"placements": [{"cpus": "0-1,8"}], "launcher": "numactl"},
     {"memory": [{"interleave": "0-1"}, {"preferred": 4}], "binding": "threads"},
     [("c0-1.8_il0-1_t_nc", "cpus 0-1,8", "0-1,8"), ("c0-1.8_pr4_t_nc", "cpus 0-1,8", "0-1,8")]),
    ("x4600", {"placements": [{"cpus": "4"}], "launcher": "numactl", "memory": [{"membind": [1, 3, 5]}],
               "binding": ["process", "threads"]}, {},
     [("c4_mb1.3.5_p_nc", "cpus 4", "4"), ("c4_mb1.3.5_t_nc", "cpus 4", "4")]),
    ("magny-cours", {"placements": [{"cpus": "0-1"}]}, {}, [("c0-1_loc_t_ap", "cpus 0-1", "0-1")]),
    ("nehalem", {"placements": [{"cpus": "0-1"}], "launcher": "omp"}, {}, [("c0-1_loc_t_omp", "cpus 0-1", "0-1")]),
    ("nehalem", {"placements": [{"cpus": "0-1"}], "launcher": "taskset"}, {"launcher": "numactl"},
     [("c0-1_loc_p_ts", "cpus 0-1", "0-1")]),
    ("nehalem", {"placements": [{"cpus": "0-1"}]}, {"launcher": "numactl"}, [("c0-1_loc_p_nc", "cpus 0-1", "0-1")]),
], ids=["all-choices-one-with-id", "nodes-default-all-choices", "orders", "nodes-string-id", "nodes-list",
        "compact-id", "spread-id", "cpus-id", "default-memories", "membind-bindings", "aprun-default",
        "omp", "experiment-launcher-wins", "default-launcher"])
def test_ids_shapes_cpus(platforms, plat, exp, defaults, want):
    assert [(p.id, p.shape, p.cpulist) for p in expand(platforms[plat], exp, defaults)] == want


def test_placement_record_fields(platforms):
    (p,) = expand(platforms["x4600"], {"launcher": "numactl", "placements": [{"layout": "1/2", "nodes": [2, 5]}],
                                       "memory": [{"interleave": [2, 5]}], "binding": ["threads"]})
    assert p.to_dict() == {"id": "c4.10-11_il2.5_t_nc", "shape": "1/2 on 2,5", "cpus": "4,10-11", "threads": 3,
                           "nodes": "2,5", "layout": "1/2 on 2,5", "memory": "interleave", "memory_nodes": "2,5",
                           "binding": "threads", "launcher": "numactl"}
    assert p.label == "1/2 on 2,5 · interleave 2,5 · pinned threads"


@pytest.mark.parametrize("plat, exp", [
    ("x4600", {"launcher": "numactl", "placements": [{"layout": "1/2", "nodes": [2, 5]}],
               "memory": [{"interleave": [2, 5]}], "binding": ["threads"]}),
    ("x4600", {"launcher": "taskset", "placements": [{"cpus": "0-3", "order": [3, 1, 0, 2]}]}),
    ("x4600", {"launcher": "numactl", "placements": [{"compact": [2, 4]}], "memory": ["local", {"membind": [1, 3]}]}),
], ids=["layout-interleave-threads", "cpus-order", "compact-membind"])
def test_a_placement_is_rebuilt_from_its_record_exactly(platforms, plat, exp):
    """The runner executes the plan row it is given: Placement.from_dict inverts to_dict."""
    from numaplace.plan.placement import Placement
    for p in expand(platforms[plat], exp):
        back = Placement.from_dict(p.to_dict())
        assert back == p and back.to_dict() == p.to_dict() and back.label == p.label


def test_layout_on_nodes_out_of_order_keeps_counts_with_their_nodes():
    """layout 1/2 on nodes [5, 2]: node 5 gets 1 thread, node 2 gets 2; the shape says so."""
    from numaplace.plan.expand import expand_spec
    from numaplace.machine.topology import Topology, load_platform
    topo = load_platform(Path(__file__).parents[1] / "config" / "platforms" / "x4600.yaml")
    (cpus, shape, _, _), = expand_spec({"layout": "1/2", "nodes": [5, 2]}, topo, "s.yaml", "e")
    assert shape == "2/1 on 2,5"
    assert sorted(topo.node_of(c) for c in cpus) == [2, 2, 5]


# -- a plan row read back, portable memory targets, and SMT --------------------------------
# numaplace.plan.placement on small machines (conftest's ONE, TWO, SMT): a plan row read
# back, the lines that say why a portable placement is left out, spread and compact with
# SMT, default ids. Several pin what the mutation run left alive
# (tests/benchmarks/mutation-survivors.md).


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


@pytest.mark.parametrize("value, thread_nodes, nodes", [
    ("nearest", [0], [(1,)]), ("nearest", [3], [(1,)]), ("nearest", [2, 5], [(0,)]),
    ("nearest", [7, 0], [(1,)]),                     # 1, 2, 5, 6 tie at a mean of 25: the lowest
    ("farthest", [0], [(7,)]), ("farthest", [3], [(0,)]), ("farthest", [2, 5], [(1,)]),
    ("farthest", [7, 0], [(3,)]),                    # 3 and 4 at a mean of 30 (none of them 40 from both)
    ("each-distance", [0], [(1,), (3,), (7,)]),      # distances 20, 30, 40 from node 0, nearest class first
    ("each-distance", [3], [(1,), (0,)]),
    ("each-distance", [7, 0], [(5,), (1,)]),         # from the master's node 7: 20 then 30
])
def test_nearest_farthest_and_each_distance_on_the_x4600_ladder(platforms, value, thread_nodes, nodes):
    """Portable memory targets are read off the SLIT matrix: mean distance from the threads' nodes."""
    assert resolve_memory_nodes("membind", value, thread_nodes, platforms["x4600"]) == nodes


def test_interleave_over_all_and_over_the_cpu_nodes():
    """all: every node with memory; cpu-nodes: those with CPUs, memory-only ones left out."""
    cxl = Topology("cxl", {0: [0, 1], 1: [2, 3], 2: [], 3: []}, {0: 1, 1: 1, 2: 1, 3: 0})
    assert resolve_memory_nodes("interleave", "all", [0], cxl) == [(0, 1, 2)]
    assert resolve_memory_nodes("interleave", "cpu-nodes", [0], cxl) == [(0, 1)]
    assert resolve_memory_nodes("interleave", "all", [0], TWO) == [(0, 1)]
    assert resolve_memory_nodes("interleave", "cpu-nodes", [0], TWO) == [(0, 1)]     # interleave all, once
    (p,) = expand(TWO, {"launcher": "numactl", "memory": [{"interleave": "cpu-nodes"}], "placements": [{"cpus": "0"}]})
    assert p.label == "cpus 0 · interleave 0-1"
    with pytest.raises(NotApplicable) as e:
        resolve_memory_nodes("interleave", "cpu-nodes", [0], Topology("c", {0: [0, 1], 1: []}, {0: 1, 1: 1}))
    assert str(e.value) == "1 NUMA node with CPUs and memory: interleave over them is local"
    from numaplace.plan.placement import SameAs
    with pytest.raises(SameAs):
        resolve_memory_nodes("interleave", "cpu-nodes", [0], ONE)


UNEQUAL = Topology("u", {0: [0, 1, 2, 3], 1: [4, 5], 2: [6, 7, 8]}, {0: 1, 1: 1, 2: 1})


def test_count_words_are_resolved_against_the_topology():
    """node: the placement's own node's cores; half: of all cores, floor; k/node: k times the nodes."""
    from numaplace.plan.placement import per_node, resolve_count
    assert [resolve_count(c, UNEQUAL) for c in ("node", "half", "all", "2/node", 5)] == [4, 4, 9, 6, 5]
    assert [resolve_count(c, UNEQUAL, node=1) for c in ("node", "half", "all", "2/node")] == [2, 4, 9, 6]
    assert [resolve_count(c, SMT) for c in ("node", "half", "all", "1/node")] == [2, 2, 4, 2]
    assert [resolve_count(c, SMT, smt=True) for c in ("node", "half", "all")] == [4, 4, 8]
    assert resolve_count("half", ONE) == 1 and resolve_count("half", Topology("1", {0: [0]})) == 1
    cxl = Topology("cxl", {0: [0, 1], 1: [2, 3], 2: []}, {0: 1, 1: 1, 2: 1})
    assert resolve_count("3/node", cxl) == 6          # memory-only nodes hold no thread
    assert (per_node("3/node"), per_node("node"), per_node(4)) == (3, None, None)


def test_spread_takes_one_cpu_per_node_in_turn_until_short_nodes_run_out():
    """Round-robin in node order; a node out of CPUs is skipped, compact fills node after node."""
    assert spread(7, UNEQUAL) == [0, 4, 6, 1, 5, 7, 2]
    assert spread(9, UNEQUAL) == [0, 4, 6, 1, 5, 7, 2, 8, 3]
    assert spread(20, UNEQUAL) == spread(9, UNEQUAL)
    assert compact(5, UNEQUAL) == [0, 1, 2, 3, 4]


def test_distinct_orders_of_per_node_counts_come_ascending_each_once():
    """2/1/1 has three orderings, 1/2/3 six, smallest first; nothing has one empty ordering."""
    from numaplace.plan.placement import distinct_orders
    assert distinct_orders([2, 1, 1]) == [(1, 1, 2), (1, 2, 1), (2, 1, 1)]
    assert distinct_orders([3, 1, 2]) == [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)]
    assert distinct_orders([1] * 5) == [(1,) * 5] and distinct_orders([]) == [()]


def test_node_choices_fit_each_count_on_its_node_and_distinct_keeps_one_per_class(platforms):
    """All choices of 2/1 on magny-cours: 6 node pairs x 2 orders; distinct: near and far pair."""
    m = platforms["magny-cours"]
    every = node_choices([2, 1], m, False)
    assert len(every) == 12 == count_choices([2, 1], m)
    assert every[:4] == [((0, 1), (1, 2)), ((0, 2), (1, 1)), ((0, 1), (2, 2)), ((0, 2), (2, 1))]
    assert node_choices([2, 1], m, True) == [((0, 1), (1, 2)), ((0, 1), (3, 2))]
    assert node_choices([2, 2], UNEQUAL, False) == [((0, 2), (1, 2)), ((0, 2), (2, 2)), ((1, 2), (2, 2))]
    assert node_choices([3, 2], UNEQUAL, False) == [((0, 3), (1, 2)), ((0, 2), (2, 3)), ((0, 3), (2, 2)),
                                                    ((1, 2), (2, 3))]
    cxl = Topology("cxl", {0: [0, 1], 1: [2, 3], 2: []}, {0: 1, 1: 1, 2: 1})
    assert count_choices([1, 1], cxl) == 1 == len(node_choices([1, 1], cxl, False))
    four = Topology("four", {n: [2 * n, 2 * n + 1] for n in range(4)})
    assert count_choices([1, 1, 1], four) == 4 == len(node_choices([1, 1, 1], four, False))      # C(4, 3), one order
    assert count_choices([2, 2, 1, 1], four) == 6 == len(node_choices([2, 2, 1, 1], four, False))  # 4! / (2! 2!)


def test_memory_given_as_nodes_is_sorted_once_and_labelled():
    """membind '3,1,3' is nodes 1 and 3: label, id code and numactl all read them ascending."""
    x = Topology("x", {n: [n] for n in range(4)}, {n: 1 for n in range(4)})
    mem = Memory.parse({"membind": [3, 1, 3]}, x, "s.yaml", "e")
    assert mem == Memory("membind", (1, 3))
    assert (mem.label, mem.short) == ("membind 1,3", "mb1.3")
    assert (Memory("interleave", (0, 1, 2)).label, Memory("interleave", (0, 1, 2)).short) == \
        ("interleave 0-2", "il0-2")
    assert (Memory("local").label, Memory("local").short) == ("local", "loc")
    assert Memory.parse("local", x, "s.yaml", "e") == Memory("local")
    assert Memory.parse({"preferred": 2}, x, "s.yaml", "e") == Memory("preferred", (2,))
    # a platform that gives no memory_mb: its nodes have memory (only memory_mb 0 is none)
    assert Memory.parse({"membind": [1]}, Topology("n", {0: [0], 1: [1]}), "s.yaml", "e") == Memory("membind", (1,))
    with pytest.raises(ConfigError, match="node 1 of platform z has no memory"):
        Memory.parse({"membind": [1]}, Topology("z", {0: [0], 1: [1]}, {0: 1, 1: 0}), "s.yaml", "e")


def test_a_placements_label_says_its_shape_memory_and_pinning():
    """The label every table and figure shows: shape · memory (unless local) · pinned threads."""
    from numaplace.plan.placement import label_of, memory_label_of
    row = {"shape": "2/2 on 0-1", "memory": "membind", "memory_nodes": "1,3", "binding": "threads"}
    assert label_of(row) == "2/2 on 0-1 · membind 1,3 · pinned threads"
    assert memory_label_of(row) == "membind 1,3"
    assert label_of({**row, "memory": "local", "binding": "process"}) == "2/2 on 0-1"
    assert memory_label_of({**row, "memory": "local"}) == "local"
    assert label_of({**row, "binding": "process"}) == "2/2 on 0-1 · membind 1,3"
    p = finish([3, 2, 0], Memory("local"), "threads", "omp", "cpus 0,2-3", TWO, team=0)
    assert (p.label, p.layout_label, p.nodes, p.layout, p.order, p.id) == (
        "cpus 0,2-3 · pinned threads", "1/2 on 0-1", (0, 1), (1, 2), (3, 2, 0), "c0.2-3_loc_t_omp")
    u = finish([0, 1, 2, 3], Memory("local"), "process", "taskset", "unpinned 3", TWO, team=3)
    assert (u.id, u.threads, u.to_dict()["threads"]) == ("c0-3x3_loc_p_ts", 3, 3)
