"""A study's plan (numaplace.plan.study) pinned to exact values on the bundled platforms:
its rows and run ids, a run's params, shared runs and adaptive repetitions, the fidelity
thresholds, the machine's notes, the summary's lines, the memory experiments' checks and
the files write_plan leaves. Pure logic on named platforms (nothing measured or built)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from numaplace import ConfigError
from numaplace.machine.topology import Topology
from numaplace.plan.study import Study, args_tag, check_memory_experiment

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "config"

X4600 = {"study": "s", "platform": "x4600", "benchmarks": ["cg", "mg"], "classes": ["A"], "repetitions": 2,
         "experiments": [{"name": "a", "launcher": "numactl", "memory": ["local", {"interleave": "all"}],
                          "placements": [{"compact": [2]}, {"layout": "2/2", "nodes": [0, 7]}]},
                         {"name": "b", "placements": [{"compact": [2]}]}]}

# two experiments share cg's compact 4 (a adaptive 2..4 rounds, b a fixed 3)
SHARED = {"study": "ad", "platform": "nehalem", "benchmarks": ["cg"], "classes": ["A", "B"],
          "repetitions": {"min": 2, "max": 4},
          "experiments": [{"name": "a", "placements": [{"compact": [4]}, {"spread": [2]}]},
                          {"name": "b", "repetitions": 3, "placements": [{"compact": [4]}]}]}


def study(config, tmp_path=None):
    return Study(json.loads(json.dumps(config)), "s.yaml", CONFIG)


def test_plan_rows_name_each_run_its_placement_and_the_command_as_run():
    """plan.tsv is what a user reads and reruns: run ids, labels, layouts and commands exact."""
    s = study(X4600)
    assert [r.run_id for r in s.runs] == [
        f"{b}.A.default.{pid}.r{rep}" for b in ("cg", "mg")
        for pid in ("c0-1_loc_p_nc", "c0-1_il0-7_p_nc", "c0-1.14-15_loc_p_nc", "c0-1.14-15_il0-7_p_nc")
        for rep in (1, 2)] + [f"{b}.A.default.c0-1_loc_p_ts.r{rep}" for b in ("cg", "mg") for rep in (1, 2)]
    rows = {r.run_id: r.row() for r in s.runs}
    assert rows["cg.A.default.c0-1_il0-7_p_nc.r2"] == {
        "run_id": "cg.A.default.c0-1_il0-7_p_nc.r2", "experiment": "a", "bench": "cg", "class": "A",
        "variant": "default", "rep": 2, "placement_id": "c0-1_il0-7_p_nc",
        "placement": "compact 2 · interleave 0-7", "threads": 2, "cpus": "0-1", "layout": "2 on 0",
        "memory": "interleave 0-7", "binding": "process", "launcher": "numactl",
        "command": "OMP_NUM_THREADS=2 numactl --physcpubind=0-1 --interleave=0-7 ./cg.A.x"}
    assert rows["mg.A.default.c0-1.14-15_loc_p_nc.r1"] == {
        "run_id": "mg.A.default.c0-1.14-15_loc_p_nc.r1", "experiment": "a", "bench": "mg", "class": "A",
        "variant": "default", "rep": 1, "placement_id": "c0-1.14-15_loc_p_nc", "placement": "2/2 on 0,7",
        "threads": 4, "cpus": "0-1,14-15", "layout": "2/2 on 0,7", "memory": "local", "binding": "process",
        "launcher": "numactl",
        "command": "OMP_NUM_THREADS=4 numactl --physcpubind=0-1,14-15 --localalloc ./mg.A.x"}
    assert rows["cg.A.default.c0-1_loc_p_ts.r1"]["command"] == "OMP_NUM_THREADS=2 taskset -c 0-1 ./cg.A.x"
    assert rows["cg.A.default.c0-1_loc_p_ts.r1"]["experiment"] == "b"
    assert s.binaries() == [("cg", "A", "default"), ("mg", "A", "default")]
    assert s.not_applicable == [] and s.sizing_notes == [] and s.budget_notes == []


def test_a_runs_params_are_its_placement_argv_env_and_settings():
    """run_params decide when Snakemake re-runs a run: every field exact, fidelity not in capture."""
    cfg = {**X4600, "capture": {"fidelity": {"memory_share_min": 0.8}, "numastat": False}}
    s = study(cfg)
    p = s.run_params("mg.A.default.c0-1.14-15_il0-7_p_nc.r2")
    assert p == {
        "run_id": "mg.A.default.c0-1.14-15_il0-7_p_nc.r2", "study": "s", "bench": "mg", "class": "A",
        "variant": "default", "rep": 2,
        "placement": {"id": "c0-1.14-15_il0-7_p_nc", "shape": "2/2 on 0,7", "cpus": "0-1,14-15", "threads": 4,
                      "nodes": "0,7", "layout": "2/2 on 0,7", "memory": "interleave", "memory_nodes": "0-7",
                      "binding": "process", "launcher": "numactl"},
        "argv": ["numactl", "--physcpubind=0-1,14-15", "--interleave=0-7", "BINARY"],
        "env": {"OMP_NUM_THREADS": "4"},
        "capture": {"numa_maps": True, "interval_min": 0.005, "interval_max": 5.0, "threads": True,
                    "numastat": False},
        "run": {"timeout": 3600, "idle_check": "flag", "idle_busy_max": 0.15, "idle_wait": 30,
                "when_busy": "go", "busy_wait": 600},
        "build": s.build_key()}
    assert re.fullmatch(r"[0-9a-f]{10}", s.build_key())
    assert s.build_dir == f"results/build/{s.build_key()}"
    assert s.build_record("cg", "A", "default") == f"results/build/{s.build_key()}/default/bin/cg.A.build.json"
    assert s.chunk_entry("mg.A.default.c0-1.14-15_il0-7_p_nc.r2") == {
        "spec": p, "build": f"results/build/{s.build_key()}/default/bin/mg.A.build.json"}


def test_args_tag_tells_runs_of_one_placement_apart_by_their_args():
    """Run ids differ exactly when a micro-benchmark's args differ: six hex digits of their hash."""
    assert args_tag(()) == "" and args_tag([]) == ""
    assert args_tag(["1", "2"]) == ".a8169ca"
    assert args_tag(["2", "1"]) != args_tag(["1", "2"])
    assert re.fullmatch(r"\.a[0-9a-f]{6}", args_tag(["--sizes", "64M"]))


def test_a_run_shared_by_two_experiments_is_planned_once_naming_both():
    """A placement two experiments ask for runs once per repetition; its rounds are the larger count."""
    s = study(SHARED)
    runs = {r.run_id: r.experiments for r in s.runs}
    assert runs == {
        **{f"cg.{c}.default.c0-3_loc_p_ts.r{n}": ("a", "b") for c in "AB" for n in (1, 2, 3)},
        **{f"cg.{c}.default.c0-3_loc_p_ts.r4": ("a",) for c in "AB"},
        **{f"cg.{c}.default.c0.4_loc_p_ts.r{n}": ("a",) for c in "AB" for n in (1, 2, 3, 4)}}
    assert [r.run_id for r in s.runs][:5] == ["cg.A.default.c0-3_loc_p_ts.r1", "cg.A.default.c0-3_loc_p_ts.r2",
                                              "cg.A.default.c0-3_loc_p_ts.r3", "cg.A.default.c0-3_loc_p_ts.r4",
                                              "cg.A.default.c0.4_loc_p_ts.r1"]


def test_only_runs_every_experiment_repeats_adaptively_may_be_skipped():
    """A run a fixed experiment shares is always measured; an adaptive one past its min may stop."""
    s = study(SHARED)
    assert s.adaptive("cg.A.default.c0-3_loc_p_ts.r3") is None          # shared with b (fixed 3)
    assert s.adaptive("cg.A.default.c0-3_loc_p_ts.r4").most == 4      # a's alone
    reps = s.adaptive("cg.A.default.c0.4_loc_p_ts.r4")
    assert (reps.least, reps.most, reps.alpha) == (2, 4, 0.05)
    assert s.chunk_entry("cg.B.default.c0.4_loc_p_ts.r3")["adaptive"] == {"min": 2, "max": 4, "alpha": 0.05}
    assert "adaptive" not in s.chunk_entry("cg.B.default.c0-3_loc_p_ts.r3")
    assert [(c.id, s.decides(c)) for c in s.chunks] == [("r1.c1", False), ("r2.c1", False), ("r3.c1", True),
                                                       ("r4.c1", True)]


def test_a_run_two_adaptive_experiments_share_takes_the_largest_min_and_max_and_smallest_alpha():
    """Shared adaptive runs: the stricter of both experiments (more rounds, smaller alpha)."""
    cfg = {**SHARED, "experiments": [
        {"name": "a", "repetitions": {"min": 3, "max": 5, "alpha": 0.05}, "placements": [{"compact": [4]}]},
        {"name": "b", "repetitions": {"min": 4, "max": 4, "alpha": 0.01}, "placements": [{"compact": [4]}]}]}
    s = study(cfg)
    reps = s.adaptive("cg.A.default.c0-3_loc_p_ts.r1")
    assert (reps.least, reps.most, reps.alpha) == (4, 5, 0.01)
    assert sorted({r.rep for r in s.runs}) == [1, 2, 3, 4, 5]
    assert [(c.id, s.decides(c)) for c in s.chunks] == [("r1.c1", False), ("r2.c1", False), ("r3.c1", False),
                                                       ("r4.c1", False), ("r5.c1", True)]


def test_no_chunk_decides_anything_when_no_experiment_is_adaptive():
    """Fixed repetitions: every chunk is measured, none waits on a decision."""
    s = study(X4600)
    assert [s.decides(c) for c in s.chunks] == [False, False]


def test_fidelity_thresholds_take_capture_fidelity_where_fidelity_keeps_a_default():
    """The older capture.fidelity is honoured; fidelity: wins where it sets a value of its own."""
    cfg = {**SHARED, "capture": {"fidelity": {"memory_share_min": 0.8, "foreign_load_max": 0.02}},
           "fidelity": {"interleave_tolerance": 0.2, "foreign_load_max": 0.05, "memory_min_bytes": 1024}}
    assert study(cfg).fidelity_thresholds == {
        "memory_share_min": 0.8, "foreign_load_max": 0.02, "interleave_tolerance": 0.2,
        "interleave_slack_bytes": 4194304, "memory_min_bytes": 1024, "migration_moved_max": 0.05,
        "memory_cell_share_min": 0.99}


def test_machine_notes_name_memory_only_nodes_and_unequal_nodes():
    """The plan says which nodes are memory-only (one or several) and how core counts differ."""
    notes = lambda topo: Study.machine_notes(SimpleNamespace(topology=topo))
    assert notes(Topology("m", {0: [0, 1, 2, 3], 1: [4, 5], 2: [], 3: []}, {0: 100, 1: 100, 2: 50, 3: 50})) == [
        "memory-only nodes 2-3: memory targets of the matrices (membind from every CPU node), of interleave "
        "all and of nearest/farthest (by SLIT distance)",
        "nodes differ in cores (node 0 4, node 1 2): `node` counts the placement's own node"]
    assert notes(Topology("m", {0: [0, 1], 1: [2, 3], 2: []}, {0: 100, 1: 100, 2: 50})) == [
        "memory-only node 2: memory targets of the matrices (membind from every CPU node), of interleave "
        "all and of nearest/farthest (by SLIT distance)"]
    assert notes(Topology("m", {0: [0, 1], 1: [2, 3]}, {0: 100, 1: 100})) == []
    smt = Topology("smt", {0: [0, 1, 4, 5], 1: [2, 6]}, {0: 100, 1: 100},
                   siblings={0: (0, 4), 4: (0, 4), 1: (1, 5), 5: (1, 5), 2: (2, 6), 6: (2, 6)})
    assert notes(smt) == ["nodes differ in cores (node 0 2, node 1 1): `node` counts the placement's own node"]


def test_plan_summary_counts_runs_per_experiment_and_shared_runs_once(tmp_path, monkeypatch):
    """The plan's first lines: runs, classes, runs per experiment (adaptive: up to), builds."""
    monkeypatch.chdir(tmp_path)
    assert study(X4600).plan_summary() == [
        "study s on x4600: 8 NUMA nodes, 16 cores: 20 runs, estimated machine time 17 s (at the reference "
        "machine's speed: a named platform is not measured)",
        "  classes: cg A, mg A", "  a: 16 runs, ~11 s", "  b: 4 runs, ~3 s", "  builds: 2, ~2 s"]
    assert study(SHARED).plan_summary() == [
        "study ad on nehalem: 2 NUMA nodes, 8 cores: up to 16 runs, estimated machine time up to 2 min (at the "
        "reference machine's speed: a named platform is not measured)",
        "  classes: cg A/B",
        "  a: up to 16 runs, ~up to 2 min; repeats 2 to 4 rounds, stopping a case early once its best and "
        "runner-up are separated (Mann-Whitney p < 0.05)",
        "  b: 6 runs, ~1 min",
        "  (a run that experiments share counts in each of them, once in the total)",
        "  builds: 2, ~2 s"]


MEMORY = {"study": "m", "platform": "nehalem", "benchmarks": ["membw"], "classes": ["X"], "repetitions": 1,
          "experiments": [{"name": "mx", "launcher": "numactl", "placements": [{"matrix": {"via": "first-touch"}}]},
                          {"name": "sp", "launcher": "numactl",
                           "memory": [{"membind": "farthest"}, {"interleave": "cpu-nodes"}],
                           "placements": [{"spread": ["2/node", "all"]}, {"layout": "1/1/1"}]}]}


def test_memory_cells_and_what_cannot_exist_here_are_planned_exactly():
    """Matrix cells put thread 0 on the memory node; what cannot exist is one line each."""
    s = study(MEMORY)
    rows = [r.row() for r in s.runs]
    assert [(r["placement_id"], r["threads"], r["cpus"], r["placement"]) for r in rows] == [
        ("mx-ft-r0-m0", 1, "0", "node 0 reads node 0 (first touch) · pinned threads"),
        ("mx-ft-r0-m1", 2, "0,4", "node 0 reads node 1 (first touch) · pinned threads"),
        ("mx-ft-r1-m0", 2, "0,4", "node 1 reads node 0 (first touch) · pinned threads"),
        ("mx-ft-r1-m1", 1, "4", "node 1 reads node 1 (first touch) · pinned threads"),
        ("c0-1.4-5_il0-1_p_nc", 4, "0-1,4-5", "spread 2/node (4) · interleave 0-1")]
    assert rows[1]["command"] == ("OMP_NUM_THREADS=2 OMP_PLACES='{4},{0}' OMP_PROC_BIND=true "
                                  "numactl --physcpubind=0,4 --localalloc ./membw.X.x")
    assert s.not_applicable == [
        "experiments[1] (sp).placements[0]: not applicable here: spread all runs on the same CPUs as compact all here",
        "experiments[1] (sp).memory[0] for spread 2/node (4): not applicable here: 2 NUMA nodes with memory, "
        "none of them away from the threads' nodes 0-1",
        "experiments[1] (sp).placements[1]: not applicable here: 2 NUMA nodes: layout '1/1/1' needs 3 nodes"]


@pytest.mark.parametrize("exp, benches, classes, line", [
    ({}, ["membw", "cg"], ["X"], "f.yaml: e.benchmarks: NPB kernels and memory micro-benchmarks (membw) go in "
                                 "separate experiments"),
    ({}, ["membw"], ["A"], "f.yaml: e.classes: membw have one class, X (sizes are args): write classes: [X]"),
    ({}, ["membw", "memlat"], ["X", "A"], "f.yaml: e.classes: membw, memlat have one class, X (sizes are args): "
                                          "write classes: [X]"),
    ({}, ["cg"], ["A", "X"], "f.yaml: e.classes: class X is the memory micro-benchmarks' class"),
    ({"args": ["1"]}, ["cg"], ["A"], "f.yaml: e.args: args are for the memory micro-benchmarks (membw, memlat, "
                                     "loadlat, stream)"),
    ({"placements": [{"compact": [1]}, {"sweep": {"memory_cpu": 0}}]}, ["cg"], ["A"],
     "f.yaml: e.placements: sweep, matrix and contention placements are for the memory micro-benchmarks "
     "(membw, memlat)"),
])
def test_npb_kernels_and_memory_micro_benchmarks_are_told_apart(exp, benches, classes, line):
    """Each mix a memory experiment cannot have is one line naming the entry."""
    with pytest.raises(ConfigError) as e:
        check_memory_experiment({"placements": [{"compact": [1]}], **exp}, benches, classes, [], "f.yaml", "e")
    assert str(e.value) == line


def test_memory_micro_benchmarks_in_class_x_with_cells_pass_the_check():
    """The right mixes are accepted: micro-benchmarks in X with cells, NPB kernels in A/B without."""
    check_memory_experiment({"args": ["--sizes", "1M"], "placements": [{"sweep": {"memory_cpu": 0}}]},
                            ["membw", "memlat"], ["X"], [], "f.yaml", "e")
    check_memory_experiment({"placements": [{"compact": [1]}]}, ["cg", "mg"], ["A", "B"], [], "f.yaml", "e")


def test_write_plan_leaves_the_rows_the_not_applicable_lines_and_the_decisions(tmp_path, monkeypatch):
    """plan.tsv, not_applicable.txt and the estimate's decisions are what the report reads."""
    monkeypatch.chdir(tmp_path)
    s = study(MEMORY)
    s.write_plan(tmp_path / "out" / "plan.tsv")
    lines = (tmp_path / "out" / "plan.tsv").read_text().splitlines()
    assert len(lines) == 1 + 5
    assert lines[0].split("\t") == ["run_id", "experiment", "bench", "class", "variant", "rep", "placement_id",
                                    "placement", "threads", "cpus", "layout", "memory", "binding", "launcher",
                                    "command"]
    assert lines[1].split("\t")[:7] == ["membw.X.default.mx-ft-r0-m0.r1", "mx", "membw", "X", "default", "1",
                                        "mx-ft-r0-m0"]
    na = (tmp_path / "out" / "not_applicable.txt").read_text()
    assert na == "".join(line + "\n" for line in s.not_applicable) and na.count("\n") == 3
    est = json.loads((tmp_path / "out" / "estimate.json").read_text())
    assert est["runs"] == 5
    assert est["per_run_s"] == {k: round(v, 2) for k, v in s.estimate().per_run.items()}
    assert est["runs_s"] == pytest.approx(s.estimate().total - s.estimate().builds)
    assert est["decisions"]["not_applicable"] == [
        {"entry": "experiments[1] (sp).placements[0]", "what": "not-applicable",
         "why": "spread all runs on the same CPUs as compact all here"},
        {"entry": "experiments[1] (sp).memory[0] for spread 2/node (4)", "what": "not-applicable",
         "why": "2 NUMA nodes with memory, none of them away from the threads' nodes 0-1"},
        {"entry": "experiments[1] (sp).placements[1]", "what": "not-applicable",
         "why": "2 NUMA nodes: layout '1/1/1' needs 3 nodes"}]
    assert est["decisions"]["machine"] == [] and est["decisions"]["budget"] == []


def test_the_plan_digest_changes_with_any_row_and_only_then():
    """Sixteen hex digits over every row: the same study, the same digest; one more run, another."""
    small = {**SHARED, "classes": ["A"], "repetitions": 1,
             "experiments": [{"name": "a", "placements": [{"compact": [2]}]}]}
    a, b = study(small), study(small)
    assert re.fullmatch(r"[0-9a-f]{16}", a.plan_digest()) and a.plan_digest() == b.plan_digest()
    assert study({**small, "repetitions": 2}).plan_digest() != a.plan_digest()


def test_duplicate_explicit_ids_for_different_placements_are_refused():
    """Two placements under one id would mix their runs: one line naming both labels."""
    cfg = {**X4600, "experiments": [{"name": "a", "placements": [{"cpus": "0-1", "id": "p"}]},
                                    {"name": "b", "placements": [{"cpus": "0-2", "id": "p"}]}]}
    with pytest.raises(ConfigError) as e:
        study(cfg)
    assert str(e.value) == ("s.yaml: experiments[1] (b): duplicate placement id 'p' for two different placements "
                            "(cpus 0-1 / cpus 0-2)")


def test_one_placement_asked_twice_in_an_experiment_runs_once_naming_it_once():
    """compact 2 and cpus 0-1 are the same CPUs: one run per repetition, the experiment once."""
    s = study({**SHARED, "classes": ["A"], "repetitions": 1,
               "experiments": [{"name": "a", "placements": [{"compact": [2]}, {"cpus": "0-1"}]}]})
    assert [(r.run_id, r.experiments, r.placement.label) for r in s.runs] == [
        ("cg.A.default.c0-1_loc_p_ts.r1", ("a",), "compact 2")]


def own_program(**changes):
    import yaml
    cfg = yaml.safe_load((CONFIG / "studies" / "own-program.yaml").read_text())
    cfg.update(platform="nehalem", repetitions=1, experiments=[{"name": "a", "placements": [{"compact": [2]}]}],
               **changes)
    return Study(cfg, str(CONFIG / "studies" / "own-program.yaml"), CONFIG)


def test_a_program_of_one_class_runs_at_it_beside_npb_kernels_at_theirs():
    """A program has one class whatever the experiment's; class X beside an NPB kernel is refused."""
    s = own_program(benchmarks=["cg", "stencil"], classes=["A"])
    assert [r.run_id for r in s.runs] == ["cg.A.default.c0-1_loc_t_nc.r1", "stencil.X.default.c0-1_loc_t_nc.r1"]
    assert set(s.build_settings("stencil")) == {"program"} and s.build_settings("cg") == s.npb
    with pytest.raises(ConfigError) as e:
        own_program(benchmarks=["cg", "stencil"], classes=["A", "X"])
    assert str(e.value).endswith("experiments[0] (a).classes: class X is the memory micro-benchmarks' class")


def test_an_experiment_with_nothing_here_is_said_left_out_and_not_counted(tmp_path, monkeypatch):
    """No '0 runs' line: the summary says why the experiment is gone; classes read sorted."""
    monkeypatch.chdir(tmp_path)
    s = study({"study": "w", "platform": "nehalem", "benchmarks": ["cg"], "classes": ["W", "S", "A"],
               "repetitions": 1, "experiments": [{"name": "a", "placements": [{"compact": [1]}]},
                                                 {"name": "far", "placements": [{"layout": "1/1/1"}]}]})
    assert s.plan_summary() == [
        "study w on nehalem: 2 NUMA nodes, 8 cores: 3 runs, estimated machine time 5 s (at the reference "
        "machine's speed: a named platform is not measured)",
        "  classes: cg A/S/W", "  a: 3 runs, ~2 s", "  builds: 3, ~3 s",
        "  experiments[1] (far).placements[0]: not applicable here: 2 NUMA nodes: layout '1/1/1' needs 3 nodes",
        "  experiments[1] (far): left out: none of its placements exists on this machine (nehalem)"]


def test_each_variant_is_a_binary_of_its_own_with_its_own_build_record():
    """serial-init runs its own binary: its run id, binaries and chunk entry name the variant."""
    s = study({**SHARED, "classes": ["A"], "repetitions": 1, "variants": ["default", "serial-init"],
               "experiments": [{"name": "a", "placements": [{"compact": [2]}]}]})
    assert [r.run_id for r in s.runs] == ["cg.A.default.c0-1_loc_p_ts.r1", "cg.A.serial-init.c0-1_loc_p_ts.r1"]
    assert s.binaries() == [("cg", "A", "default"), ("cg", "A", "serial-init")]
    assert s.chunk_entry("cg.A.serial-init.c0-1_loc_p_ts.r1")["build"] == \
        f"results/build/{s.build_key()}/serial-init/bin/cg.A.build.json"
    assert s.run_params("cg.A.serial-init.c0-1_loc_p_ts.r1")["variant"] == "serial-init"


def test_an_explicit_placement_loaded_latency_cannot_run_is_refused_not_left_out():
    """cpus '0' is what the user wrote: one line telling them to give loadlat 2 CPUs, nothing skipped."""
    with pytest.raises(ConfigError) as e:
        study({"study": "s", "platform": "nehalem", "benchmarks": ["loadlat"], "classes": ["X"], "repetitions": 1,
               "experiments": [{"name": "ll", "placements": [{"cpus": "0"}, {"compact": [2]}]}]})
    assert str(e.value).startswith("s.yaml: experiments[0] (ll).placements: placement c0_loc_p_ts (cpus 0) runs "
                                   "1 thread: loadlat's thread 0 chases")


def test_a_budget_says_each_step_it_took_classes_first_then_one_repetition():
    """The budget's one line: what it cost before, each step (class B -> A, one repetition), after."""
    base = {"study": "b", "platform": "nehalem", "benchmarks": ["cg"], "classes": ["A"], "repetitions": 4,
            "experiments": [{"name": "a", "placements": [{"compact": [1, 2, 4]}]}]}
    s = study({**base, "budget": "0.171 min"})
    assert s.budget_notes == ["budget 0.171 min: estimated 12 s before; dropped: 1 repetition fewer where there "
                              "were more than 3; now 9 s"]
    assert sorted({r.rep for r in s.runs}) == [1, 2, 3] and len(s.runs) == 9
    s = study({**base, "classes": ["B"], "budget": "0.171 min"})
    assert s.budget_notes == ["budget 0.171 min: estimated 4 min before; dropped: class B -> A; 1 repetition "
                              "fewer where there were more than 3; now 9 s"]
    assert {r.cls for r in s.runs} == {"A"} and s.class_of == {("cg", "B"): "A"}


def test_a_budget_steps_down_the_largest_spilling_class_first_and_chains_the_steps(tmp_path):
    """Nodes of 400 MiB: cg.C and mg.C spill before mg.B is looked at; mg's C ends at A (C -> B -> A)."""
    (tmp_path / "platforms").mkdir()
    (tmp_path / "platforms" / "small.yaml").write_text(
        "name: small\nnodes:\n  - {id: 0, cpus: '0-3', memory_mb: 400}\n  - {id: 1, cpus: '4-7', memory_mb: 400}\n"
        "distances: [[10, 20], [20, 10]]\n")
    s = Study({"study": "m", "platform": "small", "benchmarks": ["cg", "mg"], "classes": ["B", "C"],
               "variants": ["default", "serial-init"], "repetitions": 1, "budget": "100 h",
               "experiments": [{"name": "all", "placements": [{"compact": ["all"]}]}]}, "m.yaml", tmp_path)
    assert s.budget_notes == [
        "budget 100 h: estimated 1 min before; dropped: class C -> B for cg (cg.C default: 446 MiB of pages meant "
        "for node 0, which has 400 MiB in all: it would spill); class C -> B for mg (mg.C default: 1740 MiB of "
        "pages meant for node 0, which has 400 MiB in all: it would spill); class B -> A for mg (mg.B serial-init: "
        "435 MiB of pages meant for node 0, which has 400 MiB in all: it would spill); now 16 s"]
    assert s.class_of == {("cg", "C"): "B", ("mg", "C"): "A", ("mg", "B"): "A"}
    assert sorted({(r.bench, r.cls) for r in s.runs}) == [("cg", "B"), ("mg", "A")]


def test_an_unknown_platform_names_the_file_looked_for_and_the_known_ones():
    """A misspelt platform: one line with the path it looked for and every platform it knows."""
    with pytest.raises(ConfigError) as e:
        study({**X4600, "platform": "nosuch"})
    assert str(e.value) == (f"s.yaml: platform: unknown platform 'nosuch': no {CONFIG}/platforms/nosuch.yaml "
                            "(known: auto, magny-cours, nehalem, x4600)")


def test_a_micro_benchmarks_args_tag_its_run_ids_before_the_repetition_and_follow_the_program():
    """membw with args: <bench>.X.<variant>.<placement><args tag>.r<rep>; the args end the argv."""
    s = study({"study": "m", "platform": "nehalem", "benchmarks": ["membw"], "classes": ["X"], "repetitions": 2,
               "experiments": [{"name": "sw", "launcher": "numactl", "args": ["--sizes", "64M"],
                                "placements": [{"sweep": {"memory_cpu": 0, "readers": "0,4"}}]}]})
    tag = args_tag(["--sizes", "64M"])
    assert [r.run_id for r in s.runs] == [f"membw.X.default.sw-m0-r{y}{tag}.r{n}" for y in (0, 4) for n in (1, 2)]
    assert s.run_params(s.runs[0].run_id)["argv"] == ["numactl", "--physcpubind=0", "--localalloc", "BINARY",
                                                      "--sizes", "64M"]
    assert s.runs[2].row()["command"] == ("OMP_NUM_THREADS=2 OMP_PLACES='{0},{4}' OMP_PROC_BIND=true numactl "
                                          "--physcpubind=0,4 --localalloc ./membw.X.x --sizes 64M")


def test_an_unpinned_rows_threads_are_its_team_not_its_mask():
    """unpinned 2 runs 2 threads in a mask of 8 CPUs: the row and the command say 2."""
    s = study({"study": "u", "platform": "nehalem", "benchmarks": ["cg"], "classes": ["A"], "repetitions": 1,
               "experiments": [{"name": "u", "placements": [{"unpinned": [2, "all"]}]}]})
    assert [(r.row()["placement_id"], r.row()["placement"], r.row()["threads"], r.row()["cpus"], r.row()["command"])
            for r in s.runs] == [
        ("c0-7x2_loc_p_ts", "unpinned 2", 2, "0-7", "OMP_NUM_THREADS=2 taskset -c 0-7 ./cg.A.x"),
        ("c0-7_loc_p_ts", "unpinned all (8)", 8, "0-7", "OMP_NUM_THREADS=8 taskset -c 0-7 ./cg.A.x")]


def test_the_summary_counts_cores_and_says_the_hardware_threads_beside_them(tmp_path):
    """Two cores' siblings per node: 4 cores (8 CPUs); compact all is the cores, with smt every CPU."""
    (tmp_path / "platforms").mkdir()
    (tmp_path / "platforms" / "smt2.yaml").write_text(
        "name: smt2\nnodes:\n  - {id: 0, cpus: '0-1,4-5', memory_mb: 1024}\n  - {id: 1, cpus: '2-3,6-7', "
        "memory_mb: 1024}\ndistances: [[10, 20], [20, 10]]\nsmt_siblings: ['0,4', '1,5', '2,6', '3,7']\n")
    s = Study({"study": "s", "platform": "smt2", "benchmarks": ["cg"], "classes": ["A"], "repetitions": 1,
               "experiments": [{"name": "a", "placements": [{"compact": ["all"]}, {"compact": ["all"], "smt": True}]}]},
              "s.yaml", tmp_path)
    assert s.plan_summary()[0].startswith("study s on smt2: 2 NUMA nodes, 4 cores (8 CPUs): 2 runs, ")
    assert [(r.row()["placement"], r.row()["cpus"]) for r in s.runs] == [("compact all (4)", "0-3"),
                                                                         ("compact all (8) smt", "0-7")]


def test_a_study_with_nothing_that_exists_here_is_one_error_saying_why():
    """Nothing to run is an error before any job, with every not-applicable line."""
    with pytest.raises(ConfigError) as e:
        study({**SHARED, "experiments": [{"name": "a", "placements": [{"layout": "1/1/1"}]}]})
    assert str(e.value) == ("s.yaml: experiments: nothing of this study exists on this machine: experiments[0] (a)."
                            "placements[0]: not applicable here: 2 NUMA nodes: layout '1/1/1' needs 3 nodes; "
                            "experiments[0] (a): left out: none of its placements exists on this machine (nehalem)")
