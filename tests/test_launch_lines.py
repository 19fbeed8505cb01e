"""The launch line to use (issue 41, item 7): every placement of the default study planned on
the shipped platforms, written out as numactl, taskset, Slurm and aprun lines, each read back
by its own flags to the placement's CPUs (per thread, in thread order) and memory nodes; the
numactl and taskset lines run in bash here, with a stand-in program that prints what it got;
srun and aprun lines (no Slurm or ALPS here) as exact strings."""
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from numaplace.machine.topology import Topology
from numaplace.plan.launch_lines import KINDS, LineError, launch_lines, resolve, resolves
from numaplace.plan.placement import Memory, finish
from numaplace.plan.study import Study, _shown_command, load_study_file

REPO = Path(__file__).resolve().parents[1]
PLATFORMS = ("x4600", "nehalem", "magny-cours")


@pytest.fixture(scope="module")
def studies():
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    return {plat: Study({**config, "platform": plat}, "config.yaml", REPO / "config") for plat in PLATFORMS}


def placements(study):
    return sorted({r.placement for r in study.runs}, key=lambda p: p.id)


@pytest.mark.parametrize("plat", PLATFORMS)
def test_every_line_of_the_default_study_resolves_to_its_placement(studies, plat):
    st = studies[plat]
    checked = {k: 0 for k in KINDS}
    for p in placements(st):
        lines = launch_lines(p)
        assert set(lines) == set(KINDS)
        assert launch_lines(p.to_dict()) == lines              # a plan row gives the same lines
        for kind, entry in lines.items():
            if entry["line"] is None:
                # only taskset lacks a line, and only for a policy other than local
                assert kind == "taskset" and p.memory.policy != "local", (p.id, kind, entry)
                assert entry["why"].startswith("taskset sets only the CPU mask")
                continue
            assert resolves(entry, p, st.topology, program="./cg.B.x"), (p.id, kind)
            checked[kind] += 1
    n = len(placements(st))
    assert checked["numactl"] == checked["slurm"] == checked["aprun"] == n
    assert 0 < checked["taskset"] < n


X4600 = {
    # placement id → {kind: line}
    "c0-1_mb7_t_nc": {
        "numactl": "OMP_NUM_THREADS=2 OMP_PLACES='{0},{1}' OMP_PROC_BIND=true numactl --physcpubind=0-1 --membind=7 ./cg.B.x",
        "taskset": None,
        "slurm": "OMP_NUM_THREADS=2 OMP_PLACES='{0},{1}' OMP_PROC_BIND=true srun --nodes=1 --ntasks=1 --exclusive "
                 "--cpu-bind=mask_cpu:0x3 --mem-bind=map_mem:7 ./cg.B.x",
        "aprun": "OMP_NUM_THREADS=2 aprun -n 1 -d 2 -cc 0,1 numactl --membind=7 ./cg.B.x"},
    "c0-1_il0-7_t_nc": {
        "numactl": "OMP_NUM_THREADS=2 OMP_PLACES='{0},{1}' OMP_PROC_BIND=true numactl --physcpubind=0-1 --interleave=0-7 ./cg.B.x",
        "taskset": None,
        "slurm": "OMP_NUM_THREADS=2 OMP_PLACES='{0},{1}' OMP_PROC_BIND=true srun --nodes=1 --ntasks=1 --exclusive "
                 "--cpu-bind=mask_cpu:0x3 numactl --interleave=0-7 ./cg.B.x",
        "aprun": "OMP_NUM_THREADS=2 aprun -n 1 -d 2 -cc 0,1 numactl --interleave=0-7 ./cg.B.x"},
    # a memory cell: thread 0 (the first-touching one) on node 1's CPU 2, thread 1 on CPU 0
    "mx-ft-r0-m1": {
        "numactl": "OMP_NUM_THREADS=2 OMP_PLACES='{2},{0}' OMP_PROC_BIND=true numactl --physcpubind=0,2 --localalloc ./cg.B.x",
        "taskset": "OMP_NUM_THREADS=2 OMP_PLACES='{2},{0}' OMP_PROC_BIND=true taskset -c 0,2 ./cg.B.x",
        "slurm": "OMP_NUM_THREADS=2 OMP_PLACES='{2},{0}' OMP_PROC_BIND=true srun --nodes=1 --ntasks=1 --exclusive "
                 "--cpu-bind=mask_cpu:0x5 --mem-bind=local ./cg.B.x",
        "aprun": "OMP_NUM_THREADS=2 aprun -n 1 -d 2 -cc 2,0 ./cg.B.x"},
    # unpinned: 8 threads in a mask of all 16 CPUs
    "c0-15x8_loc_p_nc": {
        "numactl": "OMP_NUM_THREADS=8 numactl --physcpubind=0-15 --localalloc ./cg.B.x",
        "taskset": "OMP_NUM_THREADS=8 taskset -c 0-15 ./cg.B.x",
        "slurm": "OMP_NUM_THREADS=8 srun --nodes=1 --ntasks=1 --exclusive --cpu-bind=mask_cpu:0xffff "
                 "--mem-bind=local ./cg.B.x",
        "aprun": "OMP_NUM_THREADS=8 aprun -n 1 -d 16 -cc none numactl --physcpubind=0-15 --localalloc ./cg.B.x"},
}


@pytest.mark.parametrize("pid", sorted(X4600))
def test_exact_lines_on_x4600(studies, pid):
    (p,) = [p for p in placements(studies["x4600"]) if p.id == pid]
    got = {k: e["line"] for k, e in launch_lines(p).items()}
    assert got == X4600[pid]


def test_magny_cours_aprun_line_is_the_plans_command():
    """The thesis study's aprun placements: the aprun line to use is the command plan.tsv
    shows and numaplace runs (OMP_NUM_THREADS=8 aprun -n 1 -d 8 -cc 0,1,6,7,12,13,18,19 ...)."""
    thesis = load_study_file(REPO / "config/studies/thesis-magny-cours.yaml", REPO / "config")
    aprun = {r.placement for r in thesis.runs if r.placement.launcher == "aprun"}
    assert len(aprun) > 10
    for p in aprun:
        assert launch_lines(p)["aprun"]["line"] == _shown_command(p, "cg.B.x"), p.id
    p = next(p for p in aprun if p.shape == "2/2/2/2 on 0-3")
    assert launch_lines(p)["aprun"]["line"] == "OMP_NUM_THREADS=8 aprun -n 1 -d 8 -cc 0,1,6,7,12,13,18,19 ./cg.B.x"


@pytest.mark.parametrize("memory, slurm_mem, numactl_mem", [
    (Memory("membind", (1, 3)), "--mem-bind=mask_mem:0xa", "--membind=1,3"),
    (Memory("preferred", (5,)), "--mem-bind=prefer,map_mem:5", "--preferred=5"),
    (Memory("weighted-interleave", (0, 1, 2, 3)), "numactl --weighted-interleave=0-3", "--weighted-interleave=0-3"),
    (Memory("preferred-many", (2, 3)), "numactl --preferred-many=2-3", "--preferred-many=2-3"),
])
def test_every_memory_policy_has_a_slurm_and_aprun_line(platforms, memory, slurm_mem, numactl_mem):
    topo = platforms["x4600"]
    p = finish([4, 5], memory, "threads", "numactl", "cpus 4-5", topo)
    lines = launch_lines(p, program="/opt/app/x", args=["--size", "big one"])
    srun = lines["slurm"]["line"]
    assert f"--cpu-bind=mask_cpu:0x30 {slurm_mem} /opt/app/x --size 'big one'" in srun
    assert lines["numactl"]["line"].endswith(f"--physcpubind=4-5 {numactl_mem} /opt/app/x --size 'big one'")
    assert lines["aprun"]["line"] == f"OMP_NUM_THREADS=2 aprun -n 1 -d 2 -cc 4,5 numactl {numactl_mem} " \
                                     f"/opt/app/x --size 'big one'"
    assert lines["taskset"]["line"] is None
    for kind in ("numactl", "slurm", "aprun"):
        assert resolves(lines[kind], p, topo, program="/opt/app/x")
        assert resolve(lines[kind]["line"], topo)["args"] == ["--size", "big one"]


@pytest.mark.parametrize("line, problem", [
    # thread order lost: thread 0 would touch the memory from CPU 0, not from node 1's CPU 2
    ("OMP_NUM_THREADS=2 OMP_PLACES='{0},{2}' OMP_PROC_BIND=true numactl --physcpubind=0,2 --localalloc ./cg.B.x",
     "threads' CPUs [[0], [2]], placement [[2], [0]]"),
    ("OMP_NUM_THREADS=2 aprun -n 1 -d 2 -cc 0,2 ./cg.B.x", "threads' CPUs [[0], [2]], placement [[2], [0]]"),
    # map_cpu gives one task one CPU: both threads' places outside the mask
    ("OMP_NUM_THREADS=2 OMP_PLACES='{2},{0}' OMP_PROC_BIND=true srun --ntasks=1 --cpu-bind=map_cpu:2,0 ./cg.B.x",
     "outside the mask 2"),
    # pinning off: both threads anywhere in the mask
    ("OMP_NUM_THREADS=2 OMP_PLACES='{2},{0}' OMP_PROC_BIND=false taskset -c 0,2 ./cg.B.x",
     "threads' CPUs [[0, 2], [0, 2]]"),
    ("OMP_NUM_THREADS=2 OMP_PLACES='{2},{0}' taskset -c 0,2 ./cg.B.x", "OMP_PLACES without OMP_PROC_BIND"),
    ("OMP_NUM_THREADS=2 OMP_PLACES='{2},{0}' OMP_PROC_BIND=true srun --ntasks=1 --cpu-bind=mask_cpu:0x5 "
     "--mem-bind=map_mem:0 ./cg.B.x", "memory membind [0], placement local [0, 1]"),
    ("OMP_PLACES='{2},{0}' OMP_PROC_BIND=true taskset -c 0,2 ./cg.B.x", "OMP_NUM_THREADS is not set"),
])
def test_the_checker_catches_a_wrong_line(studies, line, problem):
    st = studies["x4600"]
    (p,) = [p for p in placements(st) if p.id == "mx-ft-r0-m1"]
    entry = {**launch_lines(p)["numactl"], "line": line}
    with pytest.raises((AssertionError, LineError)) as e:
        resolves(entry, p, st.topology)
    assert problem in str(e.value)


# -- run in bash on this machine ---------------------------------------------------------

HERE = Topology("here", {0: [0, 1]}, {0: 1024}, [[10]])

STANDIN = """#!/bin/sh
# stand-in for the benchmark: what the launch line gave it
echo "threads=$OMP_NUM_THREADS places=$OMP_PLACES bind=$OMP_PROC_BIND args=$*"
grep Cpus_allowed_list /proc/self/status | tr -d ' \\t'
"""

WHERE_C = r"""
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
int main(void) {
    #pragma omp parallel
    {
        cpu_set_t s; CPU_ZERO(&s); sched_getaffinity(0, sizeof s, &s);
        char buf[256]; int n = 0;
        for (int c = 0; c < CPU_SETSIZE && n < 200; c++)
            if (CPU_ISSET(c, &s)) n += snprintf(buf + n, sizeof buf - n, n ? ",%d" : "%d", c);
        #pragma omp critical
        printf("thread %d cpus %s\n", omp_get_thread_num(), buf);
    }
    return 0;
}
"""


def run_line(line, cwd):
    return subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=60)


@pytest.fixture
def standin(tmp_path):
    if not (shutil.which("numactl") and shutil.which("taskset")):
        pytest.skip("numactl or taskset missing")
    (tmp_path / "bench.x").write_text(STANDIN)
    (tmp_path / "bench.x").chmod(0o755)
    return tmp_path


@pytest.mark.parametrize("cpus, binding, allowed, places", [
    ([0, 1], "threads", "0-1", "{0},{1}"),
    ([1, 0], "threads", "0-1", "{1},{0}"),      # thread order kept
    ([1], "threads", "1", "{1}"),               # a mask narrower than the machine's
    ([1], "process", "1", ""),
])
def test_numactl_and_taskset_lines_run_in_bash(standin, cpus, binding, allowed, places):
    p = finish(cpus, Memory("local"), binding, "numactl", f"cpus {cpus}", HERE)
    lines = launch_lines(p, program="./bench.x", args=["--sizes", "1M 2M"])
    for kind in ("numactl", "taskset"):
        entry = lines[kind]
        assert resolves(entry, p, HERE, program="./bench.x")
        out = run_line(entry["line"], standin)
        assert out.returncode == 0, (entry["line"], out.stderr)
        first, affinity = out.stdout.splitlines()
        assert first == (f"threads={len(cpus)} places={places} bind={'true' if places else ''} "
                         f"args=--sizes 1M 2M"), entry["line"]
        assert affinity == f"Cpus_allowed_list:{allowed}", entry["line"]


def test_each_openmp_thread_gets_its_cpu_in_thread_order(tmp_path):
    """A real OpenMP program under the lines: thread 0 on CPU 1, thread 1 on CPU 0."""
    if not (shutil.which("gcc") and shutil.which("numactl") and shutil.which("taskset")):
        pytest.skip("gcc, numactl or taskset missing")
    (tmp_path / "where.c").write_text(WHERE_C)
    cc = subprocess.run(["gcc", "-fopenmp", "-O1", "-o", "where", "where.c"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=120)
    if cc.returncode:
        pytest.skip(f"no OpenMP compiler here: {cc.stderr[-200:]}")
    p = finish([1, 0], Memory("local"), "threads", "numactl", "cpus 1,0", HERE)
    for kind in ("numactl", "taskset", ):
        entry = launch_lines(p, program="./where")[kind]
        out = run_line(entry["line"], tmp_path)
        assert out.returncode == 0, out.stderr
        assert sorted(out.stdout.splitlines()) == ["thread 0 cpus 1", "thread 1 cpus 0"], entry["line"]


def test_an_option_without_its_value_is_a_line_error_not_a_crash():
    """`taskset -c` at the end of a line: the checker says which option lacks its value."""
    with pytest.raises(LineError, match="^-c needs a value$"):
        resolve("OMP_NUM_THREADS=1 taskset -c", {0: 0})
    with pytest.raises(LineError, match="^-d needs a value$"):
        resolve("OMP_NUM_THREADS=1 aprun -n 1 -d", {0: 0})


FOUR = {c: c // 2 for c in range(8)}       # CPU -> node: 4 nodes of two CPUs


@pytest.mark.parametrize("line, threads, cpus, policy, nodes, args", [
    ("OMP_NUM_THREADS=2 numactl -C 0-1 -m 2,3 ./x a b", 2, [[0, 1], [0, 1]], "membind", [2, 3], ["a", "b"]),
    ("OMP_NUM_THREADS=2 numactl -C 0-1 -i 0-3 -l ./x", 2, [[0, 1], [0, 1]], "local", [0], []),
    ("OMP_NUM_THREADS=3 numactl --physcpubind=4-6 --preferred=1 ./x", 3, [[4, 5, 6]] * 3, "preferred", [1], []),
    ("OMP_NUM_THREADS=2 srun --nodes=1 --ntasks=1 --exclusive --cpu-bind=mask_cpu:0x30 --mem-bind=local ./x",
     2, [[4, 5], [4, 5]], "local", [2], []),
    ("OMP_NUM_THREADS=2 srun --nodes=1 --ntasks=1 --cpu-bind=q,mask_cpu:0xc0 --mem-bind=prefer,mask_mem:0xa ./x",
     2, [[6, 7], [6, 7]], "preferred", [1], []),
    ("OMP_NUM_THREADS=2 srun --ntasks=1 --cpu-bind=map_cpu:5,1 --mem-bind=mask_mem:0xc ./x",
     2, [[5], [5]], "membind", [2, 3], []),
    ("OMP_NUM_THREADS=2 aprun -n 1 -d 4 -cc 6,1,2 ./x", 2, [[6], [1]], "local", [0, 3], []),
    ("OMP_NUM_THREADS=2 aprun -n 1 -d 2 -cc none numactl --physcpubind=2,3 --membind=0 ./x",
     2, [[2, 3], [2, 3]], "membind", [0], []),
    ("OMP_NUM_THREADS=2 OMP_PLACES={3},{1} OMP_PROC_BIND=close taskset -c 1,3 ./x", 2, [[3], [1]], "local", [0, 1], []),
    # first touch: the node of the CPU that touches, not of the whole mask; Slurm's local: the mask's nodes
    ("OMP_NUM_THREADS=1 OMP_PLACES={4} OMP_PROC_BIND=true taskset -c 4-7 ./x", 1, [[4]], "local", [2], []),
    ("OMP_NUM_THREADS=1 OMP_PLACES={4} OMP_PROC_BIND=true srun --ntasks=1 --cpu-bind=mask_cpu:0xf0 "
     "--mem-bind=local ./x", 1, [[4]], "local", [2, 3], []),
    ("OMP_NUM_THREADS=1 OMP_PLACES={4} OMP_PROC_BIND=true numactl --physcpubind=4-7 --localalloc ./x",
     1, [[4]], "local", [2], []),
    ("OMP_NUM_THREADS=2 taskset --cpu-list 1,3 ./x", 2, [[1, 3], [1, 3]], "local", [0, 1], []),
    ("OMP_NUM_THREADS=2 srun --ntasks=1 --cpu-bind=verbose,mask_cpu:0x3 ./x", 2, [[0, 1], [0, 1]], "local", [0], []),
    ("OMP_NUM_THREADS=1 srun --ntasks=1 --cpu-bind=map_cpu:0x5 ./x", 1, [[5]], "local", [2], []),
    ("OMP_NUM_THREADS=1 srun --ntasks=1 --cpu-bind=no --mem-bind=v,no taskset -c 1 ./x", 1, [[1]], "local", [0], []),
])
def test_a_line_read_back_gives_each_thread_its_cpus_and_the_policy_its_nodes(line, threads, cpus, policy, nodes,
                                                                                args):
    """The checker models each launcher's own flags exactly (numactl short options, srun lists, -cc)."""
    assert resolve(line, FOUR) == {"threads": threads, "thread_cpus": cpus, "policy": policy, "nodes": nodes,
                                   "program": "./x", "args": args}


@pytest.mark.parametrize("line, error", [
    ("OMP_NUM_THREADS=3 aprun -n 1 -d 2 -cc 0,1,2 ./x", "aprun -d 2 reserves fewer CPUs than 3 threads"),
    ("OMP_NUM_THREADS=3 aprun -n 1 -d 3 -cc 0,1 ./x", "-cc lists 2 CPUs for 3 threads"),
    ("OMP_NUM_THREADS=2 OMP_PLACES={0} OMP_PROC_BIND=true taskset -c 0,1 ./x",
     "1 places for 2 threads: the binding policy decides (not modelled)"),
    ("OMP_NUM_THREADS=1 OMP_PLACES={0} OMP_PROC_BIND=true aprun -n 1 -d 1 -cc 0 ./x",
     "both ALPS -cc and OMP_PLACES bind the threads"),
    ("OMP_NUM_THREADS=1 ./x", "nothing in the line restricts the CPUs"),
    ("OMP_NUM_THREADS=1 srun --ntasks=2 ./x", "--ntasks=2: one task on one node is modelled"),
    ("OMP_NUM_THREADS=1 aprun -n 2 ./x", "aprun -n 2: one PE is modelled"),
    ("OMP_NUM_THREADS=1 numactl --cpunodebind=0 ./x", "numactl option --cpunodebind is not modelled"),
    ("OMP_NUM_THREADS=1 taskset -c 0", "no program in the line"),
])
def test_a_line_the_checker_cannot_trust_is_refused_with_the_reason(line, error):
    """Lines whose binding a runtime would decide, or that the model does not cover, are errors."""
    with pytest.raises(LineError) as e:
        resolve(line, FOUR)
    assert str(e.value) == error


def test_a_line_for_each_launcher_of_a_process_mask_with_memory_bound():
    """binding process: one mask for all threads; srun maps one node, masks several; aprun -cc none."""
    topo = Topology("four", {n: [2 * n, 2 * n + 1] for n in range(4)}, {n: 1 for n in range(4)})
    p = finish([2, 3, 4], Memory("membind", (3,)), "process", "numactl", "cpus 2-4", topo)
    lines = launch_lines(p, program="./x")
    assert {k: e["line"] for k, e in lines.items()} == {
        "numactl": "OMP_NUM_THREADS=3 numactl --physcpubind=2-4 --membind=3 ./x",
        "taskset": None,
        "slurm": "OMP_NUM_THREADS=3 srun --nodes=1 --ntasks=1 --exclusive --cpu-bind=mask_cpu:0x1c "
                 "--mem-bind=map_mem:3 ./x",
        "aprun": "OMP_NUM_THREADS=3 aprun -n 1 -d 3 -cc none numactl --physcpubind=2-4 --membind=3 ./x"}
    assert lines["taskset"]["why"] == "taskset sets only the CPU mask, not memory membind 3: use the numactl line"
    assert (lines["numactl"]["cpus"], lines["numactl"]["nodes"]) == ([2, 3, 4], [3])
    assert lines["slurm"]["note"] == ("needs the whole node (--exclusive, or inside a whole-node allocation); "
                                      "the mask is OS CPU ids")
    assert lines["aprun"]["note"] == "-cc none: ALPS binds nothing, numactl gives the threads one mask"
    for kind in ("numactl", "slurm", "aprun"):
        assert resolves(lines[kind], p, topo)
    local = launch_lines(finish([5, 2], Memory("local"), "threads", "numactl", "cpus 2,5", topo), program="./x")
    assert local["taskset"] == {"line": "OMP_NUM_THREADS=2 OMP_PLACES='{5},{2}' OMP_PROC_BIND=true taskset -c 2,5 ./x",
                                "cpus": [5, 2], "nodes": [1, 2],
                                "note": "memory: first touch (the kernel's default policy)"}
    assert local["aprun"]["line"] == "OMP_NUM_THREADS=2 aprun -n 1 -d 2 -cc 5,2 ./x"
    assert local["aprun"]["note"] == "-cc binds thread i to the list's i-th CPU"
    assert local["slurm"]["line"].endswith("--cpu-bind=mask_cpu:0x24 --mem-bind=local ./x")
    assert local["slurm"]["note"] == ("needs the whole node (--exclusive, or inside a whole-node allocation); the "
                                      "mask is OS CPU ids; --mem-bind=local binds memory to the CPUs' nodes (no "
                                      "spill to other nodes)")


def test_a_record_gives_the_lines_of_its_placement_and_the_checker_names_each_difference():
    """A run record ({placement: ...}) reads as its placement; resolves() lists what differs."""
    topo = Topology("four", {n: [2 * n, 2 * n + 1] for n in range(4)}, {n: 1 for n in range(4)})
    p = finish([3, 2], Memory("interleave", (0, 1)), "threads", "numactl", "cpus 2-3", topo)
    lines = launch_lines({"placement": p.to_dict(), "run_id": "r"}, program="./x")
    assert lines == launch_lines(p, program="./x")
    assert lines["numactl"]["line"] == ("OMP_NUM_THREADS=2 OMP_PLACES='{3},{2}' OMP_PROC_BIND=true "
                                        "numactl --physcpubind=2-3 --interleave=0-1 ./x")
    assert lines["slurm"]["line"] == ("OMP_NUM_THREADS=2 OMP_PLACES='{3},{2}' OMP_PROC_BIND=true srun --nodes=1 "
                                      "--ntasks=1 --exclusive --cpu-bind=mask_cpu:0xc numactl --interleave=0-1 ./x")
    assert lines["aprun"]["note"] == "-cc binds thread i to the list's i-th CPU; numactl in the PE sets interleave 0-1"
    assert resolves(lines["numactl"], p, topo, program="./x") is True
    assert resolves({"line": None, "why": "-"}, p, topo) is False
    wrong = {**lines["numactl"], "line": "OMP_NUM_THREADS=3 OMP_PLACES='{2},{3},{4}' OMP_PROC_BIND=true "
                                         "numactl --physcpubind=2-4 --interleave=0 ./y"}
    with pytest.raises(AssertionError) as e:
        resolves(wrong, p, topo, program="./x")
    assert str(e.value) == (
        f"{p.id}: {wrong['line']}: 3 threads, placement 2; threads' CPUs [[2], [3], [4]], placement [[3], [2]]; "
        "memory interleave [0], placement interleave [0, 1]; program ./y, asked ./x")
    with pytest.raises(AssertionError, match="entry says cpus \\[2, 3\\] nodes \\[0, 1\\], placement \\[3, 2\\] \\[0, 1\\]"):
        resolves({**lines["numactl"], "cpus": [2, 3]}, p, topo)


def test_srun_prefers_one_node_itself_and_leaves_several_to_numactl():
    """--mem-bind=prefer takes one node; preferred-many (or several) goes to numactl in the task."""
    topo = Topology("four", {n: [2 * n, 2 * n + 1] for n in range(4)}, {n: 1 for n in range(4)})
    one = finish([0, 1], Memory("preferred", (2,)), "process", "numactl", "cpus 0-1", topo)
    assert launch_lines(one, program="./x")["slurm"]["line"].endswith("--mem-bind=prefer,map_mem:2 ./x")
    two = finish([0, 1], Memory("preferred", (2, 3)), "process", "numactl", "cpus 0-1", topo)
    lines = launch_lines(two, program="./x")
    assert lines["slurm"]["line"].endswith("--cpu-bind=mask_cpu:0x3 numactl --preferred=2-3 ./x")
    assert lines["slurm"]["note"].endswith("; srun --mem-bind cannot say preferred: numactl in the task sets it "
                                           "(numactl must be on the compute node)")
    assert lines["numactl"] == {"line": None, "why": "numactl --preferred takes exactly one node"}
