"""Today's servers (issue 40): the default study plans inside the allocation a job was
given (a taskset mask, a Slurm job's or a container's cpuset), measures memory-only nodes
(CXL, HBM) as memory targets, counts physical cores per node (SMT, unequal nodes), sizes
its buffers for nodes of 14 to 24 cores, and plans the same from a platform file as from
the machine itself."""
from pathlib import Path

import pytest
import yaml

import numaplace.plan.study as study_mod
from numaplace.core.cpulist import parse_cpulist
from numaplace.judge.fidelity import _observe_threads, _thread_findings
from numaplace.machine.topology import Topology, from_sysfs, load_platform, process_allowed
from numaplace.plan.study import Study

REPO = Path(__file__).resolve().parents[1]
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())


def four_nodes():
    """4 nodes x 2 CPUs, a SLIT ring (the NUMA VM's default shape)."""
    d = [[10, 20, 30, 20], [20, 10, 20, 30], [30, 20, 10, 20], [20, 30, 20, 10]]
    return Topology("auto", {n: [2 * n, 2 * n + 1] for n in range(4)}, {n: 1024 for n in range(4)}, d)


def cxl():
    """2 CPU nodes of 2 cores and a memory-only node (a CXL expander: farther, no CPUs)."""
    return Topology("auto", {0: [0, 1], 1: [2, 3], 2: []}, {0: 2048, 1: 2048, 2: 4096},
                    [[10, 21, 24], [21, 10, 24], [24, 24, 10]])


def snc4_8480():
    """2 x Xeon Platinum 8480+ in SNC4: 8 nodes x 14 cores + SMT (CPU c and c+112 are one
    core), 64 GiB a node, 105 MiB L3 a socket, 2 MiB L2 a core, 48 KiB L1d."""
    nodes = {n: list(range(14 * n, 14 * n + 14)) + list(range(112 + 14 * n, 112 + 14 * n + 14)) for n in range(8)}
    siblings = {c: (c % 112, c % 112 + 112) for c in range(224)}
    dist = [[10 if a == b else 12 if a // 4 == b // 4 else 21 for b in range(8)] for a in range(8)]
    caches = [{"level": 1, "type": "Data", "size_kb": 48, "shared_cpus": [f"{c},{c + 112}" for c in range(112)]},
              {"level": 2, "type": "Unified", "size_kb": 2048, "shared_cpus": [f"{c},{c + 112}" for c in range(112)]},
              {"level": 3, "type": "Unified", "size_kb": 107520, "shared_cpus": ["0-55,112-167", "56-111,168-223"]}]
    return Topology("auto", nodes, {n: 65536 for n in range(8)}, dist, siblings=siblings, caches=caches)


def plan(topo, config=None):
    """The study planned with platform: auto on `topo` (as if read from this machine's sysfs)."""
    orig = study_mod.from_sysfs
    study_mod.from_sysfs = lambda: topo
    try:
        return Study(config or DEFAULT, "config/config.yaml", REPO / "config")
    finally:
        study_mod.from_sysfs = orig


def platform_text(topo, name):
    """The platform file a detected machine gives (what `numaplace platform detect` writes)."""
    whole = topo
    lines = [f"name: {name}", "nodes:"]
    for n in whole.node_ids:
        lines.append(f"  - {{id: {n}, cpus: \"{','.join(map(str, whole.nodes[n]))}\", memory_mb: {whole.memory_mb[n]}}}")
    lines.append("distances:")
    lines += [f"  - {row}" for row in whole.distances]
    if whole.siblings:
        lines.append("smt_siblings: [" + ", ".join(f'"{a},{b}"' for a, b in sorted(set(whole.siblings.values()))) + "]")
    if whole.caches:
        lines.append("caches:")
        for c in whole.caches:
            lines.append(f"  - {{level: {c['level']}, type: {c['type']}, size_kb: {c['size_kb']}, shared_cpus: "
                         f"[{', '.join(repr(s) for s in c['shared_cpus'])}]}}")
    return "\n".join(lines) + "\n"


def run_cpus(st):
    return {c for r in st.runs for c in parse_cpulist(r.placement.cpulist)}


def run_memory_nodes(st):
    return {n for r in st.runs for n in r.placement.memory.nodes}


# -- 1. the machine is what the process may use ---------------------------------------------
def test_a_plan_never_uses_a_cpu_or_node_outside_the_allocation():
    """A Slurm job's cpuset: CPUs 2-5, memory nodes 1-2 of 4 nodes. Every run's CPUs and
    memory nodes are inside it, and the head says so. (Fails when from_sysfs ignores the
    allocation: the plan then names CPUs 0, 1, 6, 7 and nodes 0, 3.)"""
    job = four_nodes().restrict([2, 3, 4, 5], [1, 2], "cpuset")
    st = plan(job)
    assert run_cpus(st) <= {2, 3, 4, 5} and run_cpus(st) == {2, 3, 4, 5}
    assert run_memory_nodes(st) <= {1, 2}
    head = st.plan_summary()[0]
    assert "restricted to CPUs 2-5 and nodes 1-2 of 4 nodes (cpuset)" in head
    # the two nodes of the job are spread over and compared: the study still answers
    assert any(r.placement.shape.startswith("spread 2") for r in st.runs)
    assert any(r.placement.memory.policy == "membind" for r in st.runs if r.bench in ("cg", "mg"))


def test_what_the_allocation_cannot_hold_is_left_out_in_one_line():
    """One allowed core: 2-thread placements exist on the machine, not in the job."""
    job = four_nodes().restrict([3], [1], "affinity mask")
    st = plan(job)
    assert run_cpus(st) == {3}
    line = [x for x in st.not_applicable if "two-threads).placements[0]" in x]
    assert line == ["experiments[6] (two-threads).placements[0]: not applicable here: compact 2: "
                    "this allocation has 1 core (CPUs 3, affinity mask)"]


def test_process_allowed_reads_the_affinity_and_mems_allowed(tmp_path, monkeypatch):
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCpus_allowed_list:\t0-7\nMems_allowed_list:\t1-2\n")
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {2, 3, 4, 5})
    cpus, mems, source = process_allowed(status=status, cgroup=tmp_path / "none")
    assert (cpus, mems, source) == ([2, 3, 4, 5], [1, 2], "affinity mask")


def test_the_live_topology_is_restricted_and_a_fake_tree_is_not(tmp_path, monkeypatch):
    """from_sysfs() of the live machine applies this process's allocation; a tree given
    by path (a test's, platform detect's) is the whole machine unless told otherwise."""
    root = tmp_path / "devices" / "system" / "node"
    for n in range(2):
        (root / f"node{n}").mkdir(parents=True)
        (root / f"node{n}" / "cpulist").write_text(f"{2 * n}-{2 * n + 1}\n")
        (root / f"node{n}" / "meminfo").write_text(f"Node {n} MemTotal:  1048576 kB\n")
    assert from_sysfs(root).cpus == [0, 1, 2, 3] and not from_sysfs(root).allowed
    job = from_sysfs(root, allowed=([1, 2], [0], "cpuset"))
    assert job.nodes == {0: [1], 1: [2]} and job.memory_mb == {0: 1024, 1: 0}
    assert job.memory_nodes == [0]


def test_a_platform_file_with_an_allocation_plans_as_auto_under_it(tmp_path):
    job = four_nodes().restrict([2, 3, 4, 5], [1, 2], "cpuset")
    cfg = tmp_path / "config"
    (cfg / "platforms").mkdir(parents=True)
    (cfg / "platforms" / "ring4.yaml").write_text(platform_text(four_nodes(), "ring4")
                                                  + 'allowed: {cpus: "2-5", nodes: "1-2", source: cpuset}\n')
    named = Study({**DEFAULT, "platform": "ring4"}, "s.yaml", cfg)
    auto = plan(job)
    assert [r.run_id for r in named.runs] == [r.run_id for r in auto.runs]


def test_fidelity_never_judges_ok_a_mask_that_lost_planned_cpus():
    """An unpinned run planned on CPUs 2-5 whose threads ran under mask 2-3 (a cpuset took
    4-5): every sample inside the placement, yet it shared 2 CPUs, not 4."""
    threads = {"101": {"cpus": {"2": 5, "3": 5}, "allowed": "2-3"},
               "102": {"cpus": {"3": 5}, "allowed": "2-3"}}
    seen = _observe_threads(threads, {2, 3, 4, 5}, pinned=False)
    out = {}
    reasons = _thread_findings(seen, [2, 3, 4, 5], out)
    assert reasons and "lost planned CPUs 2-5" in reasons[0] and out["mask_lost"] == {"101": "2-3", "102": "2-3"}
    whole = _observe_threads({"101": {"cpus": {"2": 5}, "allowed": "2-5"}}, {2, 3, 4, 5}, pinned=False)
    assert _thread_findings(whole, [2, 3, 4, 5], {}) == []


# -- 3. memory-only nodes are memory targets everywhere ------------------------------------
def test_a_memory_only_node_has_its_column_in_the_default_matrix():
    """(Fails when memory_specs keeps only nodes with CPUs on the memory axis.)"""
    st = plan(cxl())
    cells = {r.placement.id for r in st.runs if "memory-matrix" in r.experiments}
    assert {"mx-mb-r0-m2", "mx-mb-r1-m2", "mx-ft-r0-m1", "mx-ft-r1-m0"} <= cells
    assert st.plan_summary()[0].split(": ")[1].startswith("3 NUMA nodes (2 with CPUs, 1 memory only)")
    mem = {(r.placement.memory.policy, r.placement.memory.nodes) for r in st.runs
           if "one-node-memory" in r.experiments}
    # interleave over every node vs over the CPU nodes alone; farthest is the CXL node
    assert {("interleave", (0, 1, 2)), ("interleave", (0, 1)), ("membind", (2,))} <= mem
    assert any("memory-only node 2" in line for line in st.plan_summary())


def test_interleave_over_cpu_nodes_is_no_second_placement_without_memory_only_nodes():
    st = plan(four_nodes())
    mem = [r.placement.memory.nodes for r in st.runs if "one-node-memory" in r.experiments
           and r.placement.memory.policy == "interleave" and r.bench == "cg" and r.run_id.endswith(".r1")]
    assert mem == [(0, 1, 2, 3)]
    assert not [x for x in st.not_applicable if "cpu-nodes" in x or "CPU nodes" in x]


# -- 4. physical cores and per-node counts ------------------------------------------------
def test_contention_never_fills_smt_siblings():
    """(Fails when contention takes hardware threads: "one node's cores" = CPUs 0-1, the
    two threads of core 0, and "all cores" stays on node 0.)"""
    st = plan(snc4_8480())
    ct = {r.placement.id: r.placement for r in st.runs if "memory-contention" in r.experiments}
    node, every = ct["ct-m0-t14"], ct["ct-m0-t112"]
    assert sorted(node.cpus) == list(range(14))
    assert sorted(every.cpus) == list(range(112))                  # every core, no sibling
    assert not {c for p in ct.values() for c in p.cpus} & set(range(112, 224))


def test_node_is_the_placements_own_node_on_unequal_nodes():
    """Nodes of 4 and 2 cores: contention from a CPU of node 1 counts node 1's cores; a
    compact node placement (from node 0) node 0's. (Fails when `node` is the smallest
    node's count, or node 0's for every placement.)"""
    from numaplace.plan.memory_specs import contention
    topo = Topology("u", {0: [0, 1, 2, 3], 1: [4, 5]}, {0: 1024, 1: 1024}, [[10, 20], [20, 10]])
    cells = contention({"memory_cpu": 4, "threads": ["node"]}, topo, "s.yaml", "e")
    assert cells[0][0] == (4, 5)
    st = plan(Topology("auto", {0: [0, 1, 2, 3], 1: [4, 5]}, {0: 1024, 1: 1024}, [[10, 20], [20, 10]]))
    compact_node = {r.placement.cpulist for r in st.runs if r.placement.shape == "compact node (4)"}
    assert compact_node == {"0-3"}
    assert any("nodes differ in cores (node 0 4, node 1 2)" in line for line in st.plan_summary())


# -- 2. sized for the machine ------------------------------------------------------------
def test_big_nodes_plan_the_default_study_with_buffers_stepped_down():
    """SNC4 Xeon 8480+: 112 loaders x 840 MiB (DRAM = 4 x 210 MiB of L3) on a 64 GiB node
    was refused; now the size steps down to fit half the node, and the plan says so."""
    st = plan(snc4_8480())
    ll = [r for r in st.runs if "memory-loaded-latency" in r.experiments]
    assert ll and {r.args for r in ll} == {("--sizes", "292M", "--reps", "3")}
    # 14 buffers of 840 MiB fit the farthest node's 64 GiB: the remote curve keeps DRAM
    remote = [r for r in st.runs if "memory-loaded-latency-remote" in r.experiments]
    assert remote and {r.args for r in remote} == {("--sizes", "DRAM", "--reps", "3")}
    note = [x for x in st.plan_summary() if "stepped down" in x]
    assert note and "112 buffers of 840 MiB (compact all (112))" in note[0] and "64 GiB" in note[0]


def test_a_detected_platform_file_plans_exactly_as_auto(tmp_path):
    """The same SNC4 machine from its platform file (caches, SMT siblings, memory) and from
    auto: the same runs with the same args. (Fails when a named platform sizes from
    nothing: no stepping, and the plan differs.)"""
    cfg = tmp_path / "config"
    (cfg / "platforms").mkdir(parents=True)
    (cfg / "platforms" / "spr.yaml").write_text(platform_text(snc4_8480(), "spr"))
    topo = load_platform(cfg / "platforms" / "spr.yaml")
    assert topo.named_size("DRAM") == snc4_8480().named_size("DRAM") == 4 * 210 * 2**20
    named = Study({**DEFAULT, "platform": "spr"}, "s.yaml", cfg)
    auto = plan(snc4_8480())
    assert [r.run_id for r in named.runs] == [r.run_id for r in auto.runs]


# -- 5. many nodes stay affordable ----------------------------------------------------------
def many_nodes(n=32, cores=4):
    """n nodes on 2 sockets: 10 local, 12 within a socket, 32 across (an SNC/NPS-like SLIT)."""
    half = n // 2
    dist = [[10 if a == b else 12 if a // half == b // half else 32 for b in range(n)] for a in range(n)]
    return Topology("auto", {k: list(range(cores * k, cores * k + cores)) for k in range(n)},
                    {k: 16384 for k in range(n)}, dist)


def test_a_32_node_matrix_is_sampled_one_cell_per_distance_class():
    """32 x 32 = 1024 cells a benchmark; cells: auto keeps one per SLIT distance (10, 12,
    32): 3 cells, said in the plan; cells: all keeps every one. (Fails when the matrix is
    planned whole on every machine: 2048 matrix runs.)"""
    st = plan(many_nodes())
    cells = sorted({r.placement.id for r in st.runs if "memory-matrix" in r.experiments})
    assert cells == ["mx-ft-r0-m0", "mx-ft-r0-m1", "mx-ft-r0-m16"]
    assert any("32 x 32 nodes sampled" in line and "3 of 1024 cells" in line for line in st.plan_summary())
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["experiments"][0]["placements"] = [{"matrix": {"via": "first-touch", "cells": "all"}}]
    whole = plan(many_nodes(), config)
    assert len({r.placement.id for r in whole.runs if "memory-matrix" in r.experiments}) == 1024


def test_eight_nodes_keep_every_cell():
    st = plan(many_nodes(8, 14))
    assert len({r.placement.id for r in st.runs if "memory-matrix" in r.experiments}) == 64


def epyc_9654_nps4():
    """2 x EPYC 9654 in NPS4: 8 nodes x 24 cores + SMT (CPU c and c+192), 96 GiB a node,
    one 32 MiB L3 per 8-core CCD (24 in all), SLIT 10 / 12 within a socket / 32 across."""
    nodes = {n: list(range(24 * n, 24 * n + 24)) + list(range(192 + 24 * n, 192 + 24 * n + 24)) for n in range(8)}
    siblings = {c: (c % 192, c % 192 + 192) for c in range(384)}
    dist = [[10 if a == b else 12 if a // 4 == b // 4 else 32 for b in range(8)] for a in range(8)]
    l3 = [f"{8 * k}-{8 * k + 7},{192 + 8 * k}-{192 + 8 * k + 7}" for k in range(24)]
    caches = [{"level": 3, "type": "Unified", "size_kb": 32768, "shared_cpus": l3}]
    return Topology("auto", nodes, {n: 98304 for n in range(8)}, dist, siblings=siblings, caches=caches)


def test_an_epyc_in_nps4_plans_the_default_study():
    """192 loaders x 3 GiB (DRAM = 4 x 24 x 32 MiB) on a 96 GiB node was refused; stepped
    down to 256 MiB a buffer (half the node over 192 threads), said in the plan."""
    st = plan(epyc_9654_nps4())
    ll = {r.args for r in st.runs if "memory-loaded-latency" in r.experiments}
    assert ll == {("--sizes", "256M", "--reps", "3")}
    assert any("192 buffers of 3 GiB" in line for line in st.plan_summary())
    assert st.plan_summary()[0].split(": ")[1].startswith("8 NUMA nodes, 192 cores (384 CPUs)")


def test_loaded_latency_on_a_one_core_node_is_not_applicable_in_one_line():
    """Nodes of one core: `compact node` is one thread, a chaser with no loader. A portable
    placement that its kind cannot run is left out with one line (an explicit one is
    refused); the curve over all cores stays."""
    st = plan(Topology("auto", {0: [0], 1: [1]}, {0: 4096, 1: 4096}, [[10, 20], [20, 10]]))
    ll = {r.placement.shape for r in st.runs if r.bench == "loadlat"}
    assert ll == {"compact all (2)"}
    assert "experiments[4] (memory-loaded-latency): not applicable here: compact node (1): one thread is a " \
           "chaser with no loader (loaded latency needs 2 or more threads)" in st.not_applicable


def test_counts_in_an_allocation_fit_up_to_its_cores_and_past_them_are_left_out():
    """A cpuset of 4 cores: unpinned/compact 4 and all exist, 5 is one line naming the allocation."""
    from numaplace.plan.expand import expand_spec
    from numaplace.plan.placement import NotApplicable
    job = Topology("f", {n: [2 * n, 2 * n + 1] for n in range(4)}, {n: 100 for n in range(4)}).restrict(
        [2, 3, 4, 5], [1, 2], "cpuset")
    shown = lambda out: [str(o) if isinstance(o, NotApplicable) else o for o in out]
    assert shown(expand_spec({"unpinned": ["all", 4, 5, "half"]}, job, "f", "e")) == [
        ([2, 3, 4, 5], "unpinned all (4)", None, 0), ([2, 3, 4, 5], "unpinned 4", None, 0),
        "unpinned 5: this allocation has 4 cores (CPUs 2-5, cpuset)", ([2, 3, 4, 5], "unpinned half (2)", None, 2)]
    assert shown(expand_spec({"compact": [4, 5, "all"]}, job, "f", "e")) == [
        ([2, 3, 4, 5], "compact 4", None, 0), "compact 5: this allocation has 4 cores (CPUs 2-5, cpuset)",
        ([2, 3, 4, 5], "compact all (4)", None, 0)]
    with pytest.raises(NotApplicable) as e:
        expand_spec({"cpus": "0-1"}, job, "f", "e")
    assert str(e.value) == "cpus 0-1: CPU 0-1 outside this allocation (CPUs 2-5, memory nodes 1-2, cpuset)"
    with pytest.raises(NotApplicable) as e:
        expand_spec({"layout": "1/1", "nodes": [0, 1]}, job, "f", "e")
    assert str(e.value) == "layout on nodes 0-1: node 0 outside this allocation (CPUs 2-5, memory nodes 1-2, cpuset)"
    from numaplace import ConfigError
    from numaplace.plan.memory_specs import expand as expand_cells
    with pytest.raises(ConfigError) as e:
        expand_cells({"sweep": {"memory_cpu": 0}}, job, "f", "e")
    assert str(e.value) == ("f: e.sweep.memory_cpu: CPU 0 is not in platform f (CPUs 2-5): CPU 0 outside this "
                            "allocation (CPUs 2-5, memory nodes 1-2, cpuset)")


def test_a_matrix_in_an_allocation_names_the_memory_this_process_may_not_use():
    """CPUs of nodes 1-2 but memory of node 1 only: node 2 is refused as memory the job may not use."""
    from numaplace import ConfigError
    from numaplace.plan.memory_specs import expand as expand_cells
    job = Topology("f", {n: [2 * n, 2 * n + 1] for n in range(4)}, {n: 100 for n in range(4)}).restrict(
        [2, 3, 4, 5], [1], "cpuset")
    with pytest.raises(ConfigError) as e:
        expand_cells({"matrix": {"memory": [2]}}, job, "f", "e")
    assert str(e.value) == "f: e.matrix.memory: node 2 of platform f has no memory this process may use"
    with pytest.raises(ConfigError) as e:
        expand_cells({"matrix": {"readers": [0]}}, job, "f", "e")
    assert str(e.value) == ("f: e.matrix.readers: node 0 is not a node with CPUs in platform f (nodes 1-2): node 0 "
                            "outside this allocation (CPUs 2-5, memory nodes 1, cpuset)")
