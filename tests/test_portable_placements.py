"""The portable placement language (issue 28): thread counts and memory targets relative to
the topology resolve to the right CPUs and nodes on each shipped platform, on a 2-socket
machine with SMT and on a one-node machine; what cannot exist on a machine is left out with
one line, never an error and never replaced by another placement; and the embedded default
study spreads over the nodes of a multi-node machine instead of staying on node 0."""
from pathlib import Path

import pytest
import yaml

from numaplace.plan.sources import NOT_BUNDLED

from conftest import expand
from numaplace import ConfigError
from numaplace.core.cpulist import parse_cpulist
from numaplace.plan.study import Study
from numaplace.machine.topology import Topology

REPO = Path(__file__).resolve().parents[1]


def smt_two_sockets():
    """2 sockets x 8 cores x 2 hardware threads, Linux's usual numbering: CPU c and c+16 are
    one core's siblings."""
    nodes = {0: list(range(0, 8)) + list(range(16, 24)), 1: list(range(8, 16)) + list(range(24, 32))}
    siblings = {c: (c % 16, c % 16 + 16) for c in range(32)}
    return Topology("smt2x8", nodes, {0: 65536, 1: 65536}, [[10, 21], [21, 10]], siblings=siblings)


def one_node():
    return Topology("one", {0: [0, 1]}, {0: 24576}, [[10]])


def cpus_of(topo, spec, memory=None, notes=None):
    from numaplace.plan.expand import expand_experiment
    exp = {"name": "t", "placements": [spec], **({"memory": memory} if memory else {})}
    return [(p.cpulist, p.memory.label) for p in
            expand_experiment(exp, {"launcher": "numactl"}, topo, "s.yaml", "experiments[0]", notes)]


@pytest.mark.parametrize("plat, spec, cpus", [
    ("x4600", {"compact": ["node"]}, "0-1"),
    ("x4600", {"compact": ["half"]}, "0-7"),
    ("x4600", {"spread": ["half"]}, "0,2,4,6,8,10,12,14"),
    ("x4600", {"compact": ["all"]}, "0-15"),
    ("x4600", {"spread": ["1/node"]}, "0,2,4,6,8,10,12,14"),
    ("x4600", {"compact": ["1/node"]}, "0,2,4,6,8,10,12,14"),          # k on every node, whichever generator
    ("nehalem", {"compact": ["node"]}, "0-3"),
    ("nehalem", {"spread": ["half"]}, "0-1,4-5"),
    ("nehalem", {"spread": ["2/node"]}, "0-1,4-5"),
    ("magny-cours", {"compact": ["node"]}, "0-5"),
    ("magny-cours", {"compact": ["half"]}, "0-11"),
    ("magny-cours", {"spread": ["half"]}, "0-2,6-8,12-14,18-20"),
])
def test_relative_counts_on_the_shipped_platforms(platforms, plat, spec, cpus):
    assert [c for c, _ in cpus_of(platforms[plat], spec)] == [cpus]


def test_portable_counts_that_do_not_fit_are_left_out_and_same_cpus_are_no_second_placement(platforms):
    notes = []
    assert cpus_of(platforms["x4600"], {"spread": ["4/node"]}, notes=notes) == []
    assert cpus_of(platforms["nehalem"], {"spread": ["all"]}, notes=notes) == []      # = compact all
    assert notes == [
        "experiments[0].placements[0]: not applicable here: spread 4/node needs 32 threads, 4 on a node; "
        "platform x4600 has 16 CPUs",
        "experiments[0].placements[0]: not applicable here: spread all runs on the same CPUs as compact all here"]
    with pytest.raises(ConfigError, match="layout '3/3' fits on no choice of nodes of platform x4600"):
        cpus_of(platforms["x4600"], {"layout": "3/3"})                                # a typo, not a portable form


def test_smt_siblings_of_a_platform_file_and_layouts_past_the_cores(tmp_path):
    from numaplace.machine.topology import load_platform
    f = tmp_path / "smt.yaml"
    f.write_text("name: smt\nnodes:\n  - {id: 0, cpus: '0-3,8-11', memory_mb: 1024}\n"
                 "  - {id: 1, cpus: '4-7,12-15', memory_mb: 1024}\ndistances: [[10, 20], [20, 10]]\n"
                 "smt_siblings: ['0,8', '1,9', '2,10', '3,11', '4,12', '5,13', '6,14', '7,15']\n")
    t = load_platform(f)
    assert len(t.cores()) == 8 and len(t.cores(smt=True)) == 16
    assert cpus_of(t, {"compact": ["node"]}) == [("0-3", "local")]
    assert cpus_of(t, {"layout": "6", "nodes": [0]}) == [("0-3,8-9", "local")]     # 4 cores, then siblings
    assert cpus_of(t, {"layout": "8/8", "nodes": [0, 1]}) == [("0-15", "local")]


def test_physical_cores_by_default_siblings_only_when_asked():
    t = smt_two_sockets()
    assert cpus_of(t, {"compact": ["node"]}) == [("0-7", "local")]            # 8 cores, no sibling
    assert cpus_of(t, {"compact": ["all"]}) == [("0-15", "local")]            # 16 cores of 32 CPUs
    assert cpus_of(t, {"compact": [4], "smt": True}) == [("0-1,16-17", "local")]   # 2 cores, both threads
    assert cpus_of(t, {"spread": [2]}) == [("0,8", "local")]
    assert cpus_of(t, {"layout": "2/2", "nodes": [0, 1]}) == [("0-1,8-9", "local")]
    assert cpus_of(t, {"compact": ["all"], "smt": True}) == [("0-31", "local")]


@pytest.mark.parametrize("plat, memory, label", [
    ("x4600", {"membind": "nearest"}, "membind 1"),          # hops from node 0: 1 and 2 are 1 hop away
    ("x4600", {"membind": "farthest"}, "membind 7"),         # 3 hops
    ("x4600", {"interleave": "all"}, "interleave 0-7"),
    ("x4600", {"preferred": "farthest"}, "preferred 7"),
    ("nehalem", {"membind": "nearest"}, "membind 1"),
    ("nehalem", {"membind": "farthest"}, "membind 1"),
    ("magny-cours", {"membind": "nearest"}, "membind 1"),    # 16
    ("magny-cours", {"membind": "farthest"}, "membind 3"),   # the diagonal die, 22
])
def test_memory_targets_from_the_distance_matrix(platforms, plat, memory, label):
    assert cpus_of(platforms[plat], {"compact": [1]}, [memory]) == [("0", label)]


def test_each_distance_class_gives_one_node_per_class(platforms):
    got = cpus_of(platforms["x4600"], {"compact": [1]}, [{"membind": "each-distance"}])
    assert got == [("0", "membind 1"), ("0", "membind 3"), ("0", "membind 7")]     # 1, 2, 3 hops
    got = cpus_of(platforms["magny-cours"], {"cpus": "6"}, [{"membind": "each-distance"}])
    assert got == [("6", "membind 0"), ("6", "membind 2")]                          # 16, 22 from node 1


def test_nearest_is_away_from_every_node_the_threads_use(platforms):
    # 2/2 on nodes 2,3 of the X4600: the other nodes' mean hop distance to 2 and 3
    got = cpus_of(platforms["x4600"], {"layout": "2/2", "nodes": [2, 3]}, [{"membind": "nearest"}])
    assert got == [("4-7", "membind 4")]


def test_one_node_machine_leaves_out_what_cannot_exist_with_one_line_each():
    notes = []
    t = one_node()
    assert cpus_of(t, {"spread": [2]}, notes=notes) == []                     # never compact 2 instead
    assert cpus_of(t, {"layout": "1/1"}, notes=notes) == []
    assert cpus_of(t, {"compact": [1]}, ["local", {"membind": "nearest"}, {"interleave": "all"}],
                   notes=notes) == [("0", "local")]
    assert notes == [
        "experiments[0].placements[0]: not applicable here: 1 NUMA node: spread 2 would be compact 2",
        "experiments[0].placements[0]: not applicable here: 1 NUMA node: layout '1/1' needs 2 nodes",
        "experiments[0].memory[1] for compact 1: not applicable here: 1 NUMA node with memory, none of "
        "them away from the threads' node 0",
        "experiments[0].memory[2] for compact 1: not applicable here: 1 NUMA node with memory: interleave "
        "over all is local"]


def test_unpinned_runs_fewer_threads_in_a_mask_of_every_cpu(platforms):
    from numaplace.plan.placement import Placement
    from numaplace.plan.expand import expand_experiment
    (p,) = expand_experiment({"name": "t", "placements": [{"unpinned": ["half"]}]}, {"launcher": "numactl"},
                             platforms["x4600"], "s.yaml", "experiments[0]")
    assert (p.cpulist, p.threads, p.binding, p.id, p.shape) == ("0-15", 8, "process", "c0-15x8_loc_p_nc", "unpinned half (8)")
    assert Placement.from_dict(p.to_dict()) == p                      # plan rows and records read it back
    (all_,) = expand_experiment({"name": "t", "placements": [{"unpinned": ["all"]}]}, {"launcher": "numactl"},
                                platforms["x4600"], "s.yaml", "experiments[0]")
    assert (all_.threads, all_.id) == (16, "c0-15_loc_p_nc")          # as many threads as CPUs: a plain mask
    with pytest.raises(ConfigError, match="unpinned placements leave the threads to the OS"):
        expand_experiment({"name": "t", "binding": ["threads"], "placements": [{"unpinned": [2]}]},
                          {"launcher": "numactl"}, platforms["x4600"], "s.yaml", "experiments[0]")


def test_absolute_numbers_that_do_not_fit_are_still_errors(platforms):
    with pytest.raises(ConfigError, match="20 threads but platform x4600 has 16 CPUs"):
        expand(platforms["x4600"], {"placements": [{"compact": [20]}]})
    with pytest.raises(ConfigError, match="node 9 is not in platform x4600"):
        expand(platforms["x4600"], {"placements": [{"cpus": "0"}], "launcher": "numactl",
                                    "memory": [{"membind": [9]}]})


# -- the embedded default study ---------------------------------------------------------

def default_study(platform, config_dir=REPO / "config", **npb):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return Study({**config, "platform": platform, **({"npb": npb} if npb else {})}, "config.yaml", config_dir)


# the default study's control experiments (EP, class A, 5 repetitions) where npb.official is
# given: 1 thread with local and with the farthest node's memory; compact 2, spread 2, unpinned 1
EP_CONTROL_RUNS = {"two-socket-16": 25, "nehalem": 25, "magny-cours": 25, "x4600": 25}


@pytest.fixture(scope="module")
def config_dir(tmp_path_factory):
    """config/platforms plus a 2-socket 16-core machine."""
    d = tmp_path_factory.mktemp("config")
    (d / "platforms").mkdir()
    for p in (REPO / "config" / "platforms").glob("*.yaml"):
        (d / "platforms" / p.name).write_text(p.read_text())
    (d / "platforms" / "two-socket-16.yaml").write_text(
        "name: two-socket-16\nnodes:\n  - {id: 0, cpus: '0-7', memory_mb: 65536}\n"
        "  - {id: 1, cpus: '8-15', memory_mb: 65536}\ndistances: [[10, 21], [21, 10]]\n")
    return d


@pytest.mark.parametrize("plat, runs", [("two-socket-16", 131), ("nehalem", 123), ("magny-cours", 175),
                                        ("x4600", 257)])
def test_default_study_spreads_over_the_nodes(config_dir, plat, runs):
    st = default_study(plat, config_dir)
    # its control, EP, is NASA's code: left out, said, until npb.official names NASA's tarball
    assert len(st.runs) == runs and st.not_applicable == [
        f"experiments[{i}] ({name}).benchmarks: not applicable here: {NOT_BUNDLED.format(bench='EP')}"
        for i, name in ((13, "control-memory"), (14, "control-placement"))]
    given = default_study(plat, config_dir, official="https://www.nas.nasa.gov/assets/npb/NPB3.4.2.tar.gz",
                          official_sha256="0" * 64)
    assert len(given.runs) == runs + EP_CONTROL_RUNS[plat] and given.not_applicable == []
    npb = [r for r in st.runs if r.bench in ("cg", "mg")]
    nodes = {n for r in npb for n in r.placement.nodes}
    assert nodes == set(st.topology.cpu_nodes) or len(nodes) > 1
    memory_nodes = {n for r in npb for n in r.placement.memory.nodes}
    assert len(memory_nodes) > 1                                  # remote memory is measured
    assert {r.variant for r in npb} == {"default", "serial-init"}
    assert {r.placement.binding for r in npb} == {"threads", "process"}
    cores = st.topology.cores()
    two_nodes = [r for r in npb if r.placement.shape == "spread 2"]
    assert two_nodes and all(len(r.placement.nodes) == 2 for r in two_nodes)
    assert any(r.placement.threads == len(cores) for r in npb)


def test_default_study_on_one_node_says_what_it_left_out(config_dir):
    one = Topology("auto", {0: [0, 1]}, {0: 24576}, [[10]])
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    import numaplace.plan.study as study_mod
    orig = study_mod.from_sysfs
    study_mod.from_sysfs = lambda: one
    try:
        st = Study(config, "config.yaml", config_dir)
    finally:
        study_mod.from_sysfs = orig
    assert len(st.runs) == 46
    assert all(r.placement.nodes == (0,) for r in st.runs)
    assert len(st.not_applicable) == 11
    assert st.not_applicable[-2:] == [f"experiments[{i}] ({name}).benchmarks: not applicable here: "
                                      + NOT_BUNDLED.format(bench="EP")
                                      for i, name in ((13, "control-memory"), (14, "control-placement"))]
    # 8 comparisons, and the experiment that had no other (loaded latency on remote memory)
    assert len([line for line in st.not_applicable if "not applicable here: 1 NUMA node" in line]) == 8
    assert [line for line in st.not_applicable if "not applicable here" not in line] == [
        "experiments[5] (memory-loaded-latency-remote): left out: none of its placements exists on this machine (auto)"]
    assert not [r for r in st.runs if "spread" in r.placement.shape]
    assert {tuple(parse_cpulist(r.placement.cpulist)) for r in st.runs if r.bench == "cg"} == {(0,), (0, 1)}


def test_each_distance_is_counted_from_thread_0s_node_as_the_layout_names_it(platforms):
    """layout 1/1 on nodes [7, 0]: thread 0 runs on node 7, so the classes are 7's (20: node 5, 30: node 1)."""
    ps = expand(platforms["x4600"], {"launcher": "numactl", "memory": [{"membind": "each-distance"}],
                                     "placements": [{"layout": "1/1", "nodes": [7, 0]}]})
    assert [(p.id, p.label, p.order) for p in ps] == [("c0.14_mb5_p_nc", "1/1 on 0,7 · membind 5", (14, 0)),
                                                      ("c0.14_mb1_p_nc", "1/1 on 0,7 · membind 1", (14, 0))]
