"""Placements of the memory micro-benchmarks: the thesis's sweeps and node × node
matrices on the reference platforms, down to the command lines the launchers build."""
from pathlib import Path

import pytest

from numaplace import ConfigError
from numaplace.plan.launch import command
from numaplace.kinds.microbench import intended_memory_node
from numaplace.plan.study import Study
from conftest import expand

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
