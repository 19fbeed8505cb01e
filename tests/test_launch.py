"""Launchers as a specification: for each launcher and memory policy, the exact argv, the
exact environment, the probe command, and the exact reason a placement is out of reach.
Placements come from the reference platforms' files (config/platforms/)."""
import pytest

from numaplace import ConfigError
from numaplace.plan.launch import LAUNCHERS, command
from numaplace.plan.expand import expand_experiment
from numaplace.machine.topology import load_platform


@pytest.fixture(scope="module")
def platforms(repo):
    return {n: load_platform(repo / "config" / "platforms" / f"{n}.yaml")
            for n in ("x4600", "magny-cours", "nehalem")}


def one(topo, launcher, cpus, memory="local", binding=None):
    exp = {"name": "t", "launcher": launcher, "placements": [{"cpus": cpus}], "memory": [memory]}
    if binding:
        exp["binding"] = [binding]
    (p,) = expand_experiment(exp, {}, topo, "s.yaml", "experiments[0]")
    return p


PLACES_4_7 = {"OMP_NUM_THREADS": "4", "OMP_PLACES": "{4},{5},{6},{7}", "OMP_PROC_BIND": "true"}


# platform, launcher, cpus, memory, binding → argv, env, probe
@pytest.mark.parametrize("plat, launcher, cpus, memory, binding, argv, env, probe", [
    ("x4600", "taskset", "4-7", "local", "process",
     ["taskset", "-c", "4-7", "./cg.B.x"], {"OMP_NUM_THREADS": "4"}, ["taskset", "-c", "4-7", "true"]),
    ("x4600", "taskset", "4-7", "local", "threads",
     ["taskset", "-c", "4-7", "./cg.B.x"], PLACES_4_7, ["taskset", "-c", "4-7", "true"]),
    ("x4600", "numactl", "0-1,8", "local", "process",
     ["numactl", "--physcpubind=0-1,8", "--localalloc", "./cg.B.x"], {"OMP_NUM_THREADS": "3"},
     ["numactl", "--physcpubind=0-1,8", "--localalloc", "true"]),
    ("x4600", "numactl", "0-3", {"interleave": [2, 3, 5]}, "process",
     ["numactl", "--physcpubind=0-3", "--interleave=2-3,5", "./cg.B.x"], {"OMP_NUM_THREADS": "4"},
     ["numactl", "--physcpubind=0-3", "--interleave=2-3,5", "true"]),
    ("x4600", "numactl", "0-3", {"membind": "1,3"}, "process",
     ["numactl", "--physcpubind=0-3", "--membind=1,3", "./cg.B.x"], {"OMP_NUM_THREADS": "4"},
     ["numactl", "--physcpubind=0-3", "--membind=1,3", "true"]),
    ("x4600", "numactl", "4-7", {"preferred": 6}, "threads",
     ["numactl", "--physcpubind=4-7", "--preferred=6", "./cg.B.x"], PLACES_4_7,
     ["numactl", "--physcpubind=4-7", "--preferred=6", "true"]),
    ("magny-cours", "aprun", "0-1,6-7", "local", "threads",
     ["aprun", "-n", "1", "-d", "4", "-cc", "0,1,6,7", "./cg.B.x"], {"OMP_NUM_THREADS": "4"}, None),
    ("nehalem", "omp", "1,5", "local", "threads",
     ["./cg.B.x"], {"OMP_NUM_THREADS": "2", "OMP_PLACES": "{1},{5}", "OMP_PROC_BIND": "true"}, None),
], ids=["taskset", "taskset-threads", "numactl-local", "numactl-interleave", "numactl-membind",
        "numactl-preferred-threads", "aprun", "omp"])
def test_argv_env_probe(platforms, plat, launcher, cpus, memory, binding, argv, env, probe):
    p = one(platforms[plat], launcher, cpus, memory, binding)
    assert command(p, "./cg.B.x") == (argv, env)
    assert LAUNCHERS[launcher].probe(p) == probe


@pytest.mark.parametrize("launcher, default", [("taskset", "process"), ("numactl", "process"),
                                               ("aprun", "threads"), ("omp", "threads")])
def test_default_binding(platforms, launcher, default):
    assert one(platforms["x4600"], launcher, "0-1").binding == default


NO_POLICY = {"taskset": "taskset sets only the CPU mask; use numactl for a memory policy",
             "omp": "OpenMP environment variables cannot set a memory policy; use numactl"}
PROCESS = {"aprun": "aprun -cc binds every thread to one CPU of the list: use binding threads",
           "omp": "without a launcher only per-thread binding (OMP_PLACES) restricts the CPUs"}


@pytest.mark.parametrize("launcher, memory, binding, label, problem", [
    *[(ln, pol, "threads", f"cpus 0-3 · {name} 1 · pinned threads", NO_POLICY[ln])
      for ln in NO_POLICY for pol, name in (({"membind": [1]}, "membind"), ({"interleave": [1]}, "interleave"),
                                            ({"preferred": [1]}, "preferred"))],
    *[(ln, "local", "process", "cpus 0-3", PROCESS[ln]) for ln in PROCESS],
    ("numactl", {"preferred": [0, 1]}, "process", "cpus 0-3 · preferred 0-1",
     "numactl --preferred takes exactly one node"),
])
def test_cannot_express(platforms, launcher, memory, binding, label, problem):
    with pytest.raises(ConfigError) as e:
        one(platforms["x4600"], launcher, "0-3", memory, binding)
    assert str(e.value) == (f"s.yaml: experiments[0].placements[0]: launcher {launcher} cannot express "
                            f"{label}: {problem}")


@pytest.mark.parametrize("launcher, memory, binding", [
    ("taskset", "local", "process"), ("taskset", "local", "threads"),
    ("numactl", {"membind": [0, 1]}, "process"), ("numactl", {"interleave": [0, 1]}, "threads"),
    ("numactl", {"preferred": [1]}, "process"),
    ("aprun", "local", "threads"), ("omp", "local", "threads"),
])
def test_can_express(platforms, launcher, memory, binding):
    p = one(platforms["x4600"], launcher, "0-3", memory, binding)
    assert LAUNCHERS[launcher].cannot_express(p) is None


def test_a_plan_tsv_command_runs_in_bash_as_written(tmp_path):
    """plan.tsv's command, pasted into bash, runs the benchmark with the environment it
    shows. (Fails when the whole assignment is quoted, 'OMP_PLACES={0}' OMP_PROC_BIND=true
    ...: bash then looks for a command named OMP_PLACES={0}.)"""
    import subprocess
    from numaplace.machine.topology import Topology
    from numaplace.plan.placement import Memory, finish
    from numaplace.plan.study import _shown_command
    topo = Topology("one", {0: [0]}, {0: 1024})
    p = finish([0], Memory("local"), "threads", "taskset", "cpus 0", topo)
    script = tmp_path / "bench.x"
    script.write_text('#!/bin/sh\necho "$OMP_NUM_THREADS|$OMP_PLACES|$OMP_PROC_BIND|$*"\n')
    script.chmod(0o755)
    line = _shown_command(p, "bench.x", ("--sizes", "1M,2M"))
    assert line.startswith("OMP_NUM_THREADS=1 OMP_PLACES='{0}' OMP_PROC_BIND=true taskset -c 0 ./bench.x")
    out = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and out.stdout.strip() == "1|{0}|true|--sizes 1M,2M", out.stderr


def test_each_memory_policy_has_its_numactl_option_study_form_and_id_code():
    """The registry's words are what studies, ids and numactl lines are made of."""
    from numaplace.plan.launch import MEMORY_POLICIES
    assert [(m.name, m.short, m.option, m.form) for m in MEMORY_POLICIES.values()] == [
        ("local", "loc", "--localalloc", "local"),
        ("interleave", "il", "--interleave", "{interleave: nodes}"),
        ("membind", "mb", "--membind", "{membind: nodes}"),
        ("preferred", "pr", "--preferred", "{preferred: node}"),
        ("weighted-interleave", "wi", "--weighted-interleave", "{weighted-interleave: nodes}"),
        ("preferred-many", "pm", "--preferred-many", "{preferred-many: nodes}")]
    assert MEMORY_POLICIES["local"].schema() == {"const": "local"}
    assert MEMORY_POLICIES["preferred"].schema() == {
        "type": "object", "additionalProperties": False, "required": ["preferred"],
        "properties": {"preferred": {"anyOf": [{"$ref": "#/$defs/node"}, {"enum": ["nearest", "farthest"]}]}}}
    assert MEMORY_POLICIES["preferred-many"].schema("n", "l") == {
        "type": "object", "additionalProperties": False, "required": ["preferred-many"],
        "properties": {"preferred-many": {"anyOf": [{"$ref": "l"}]}}}
    assert [(n, m.kernel, m.numactl_since) for n, m in MEMORY_POLICIES.items() if m.kernel] == [
        ("weighted-interleave", (6, 9), "2.0.19"), ("preferred-many", (5, 15), "2.0.15")]


def test_a_refused_memory_value_is_told_in_one_line_naming_the_policy():
    """What is wrong with {policy: value}: one node for preferred, no node twice, no weights."""
    from numaplace.plan.launch import MEMORY_POLICIES as M
    assert M["preferred"].refusal([1, 2]) == "preferred needs one node id (got [1, 2])"
    assert M["membind"].refusal([1, 2, 1]) == "membind lists node 1 twice"
    assert M["membind"].refusal([1, 2]) == "membind needs a non-empty list of node ids, or a node list like " \
                                           "'0-3' (got [1, 2])"
    assert M["weighted-interleave"].refusal({"0": 1}) == (
        "weighted-interleave takes nodes only and interleaves by the kernel's weights "
        "(/sys/kernel/mm/mempolicy/weighted_interleave/node<N>, set by root); explicit weights are not "
        "supported (got {'0': 1})")
    assert M["interleave"].refusal({"0": 1}).startswith("interleave needs a non-empty list")
    assert M["local"].refusal(3) is None


def test_a_kernel_older_than_a_policy_says_which_version_it_needs():
    """6.8 lacks weighted interleave (6.9+), 5.14 preferred-many (5.15+); the release itself has it."""
    from numaplace.plan.launch import MEMORY_POLICIES as M
    assert M["weighted-interleave"].missing_here("6.8.0-45-generic") == \
        "kernel 6.8 has no weighted interleave (6.9+)"
    assert M["weighted-interleave"].missing_here("6.9.0") is None
    assert M["weighted-interleave"].missing_here("6.9") is None and M["weighted-interleave"].missing_here("6.9-rc1") is None
    assert M["preferred-many"].missing_here("5.14.21-150500") == \
        "kernel 5.14 has no preferred-many memory policy (5.15+)"
    assert M["preferred-many"].missing_here("5.15.0") is None
    assert M["membind"].missing_here("3.0") is None
    assert M["membind"].facts() == {} and M["interleave"].facts() == {}


def test_missing_tools_name_each_launchers_program_and_its_debian_package_once():
    """Before the first job: one line per tool not on PATH, launchers sorted, each once."""
    from numaplace.plan.launch import missing_tools
    assert missing_tools(["taskset", "aprun", "omp", "numactl", "taskset"], which=lambda t: None) == [
        "launcher aprun needs aprun, which is not on PATH here (Debian: apt-get install aprun); nothing was run",
        "launcher numactl needs numactl, which is not on PATH here (Debian: apt-get install numactl); "
        "nothing was run",
        "launcher taskset needs taskset, which is not on PATH here (Debian: apt-get install util-linux); "
        "nothing was run"]
    assert missing_tools(["numactl", "taskset"], which=lambda t: None if t == "numactl" else "/bin/" + t) == [
        "launcher numactl needs numactl, which is not on PATH here (Debian: apt-get install numactl); "
        "nothing was run"]
    assert missing_tools(["omp"], which=lambda t: None) == []
