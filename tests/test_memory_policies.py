"""The memory policies weighted-interleave (Linux 6.9, numactl 2.0.19) and preferred-many
(Linux 5.15, numactl 2.0.15), each one MemoryPolicy of numaplace.plan.launch: the argv each
launcher gives (or why it cannot), the one not-applicable line where this machine's kernel
or numactl lacks the policy (platform auto only), the fidelity verdict against the kernel's
weights, and the schema's one-line refusals."""
import pytest

from numaplace import ConfigError
from numaplace.core.schema import _schema, schema_file, validate_study
from numaplace.judge.fidelity import POLICY_MODES, judge
from numaplace.machine import mempolicy
from numaplace.machine.topology import Topology, load_platform
from numaplace.plan.expand import expand_experiment
from numaplace.plan.launch import LAUNCHERS, MEMORY_POLICIES, command

pytestmark = pytest.mark.unit

MiB = 2**20
NEW = ("weighted-interleave", "preferred-many")


@pytest.fixture(scope="module")
def x4600(repo):
    return load_platform(repo / "config" / "platforms" / "x4600.yaml")


def plan(topo, memory, launcher="numactl", notes=None, placements=({"cpus": "0-1"},)):
    exp = {"name": "t", "launcher": launcher, "placements": list(placements), "memory": list(memory)}
    return expand_experiment(exp, {}, topo, "s.yaml", "experiments[0]", notes)


def machine(monkeypatch, kernel, version=None, usage=""):
    """This machine as the plan sees it: its kernel release and its numactl."""
    monkeypatch.setattr(mempolicy, "kernel_release", lambda: kernel)
    monkeypatch.setattr(mempolicy, "numactl_facts",
                        lambda: {"found": True, "version": version, "usage": usage})


def auto(nodes=2):
    """A `platform: auto` topology of `nodes` nodes of 2 CPUs."""
    dist = [[10 if a == b else 20 for b in range(nodes)] for a in range(nodes)]
    return Topology("auto", {n: [2 * n, 2 * n + 1] for n in range(nodes)}, {n: 4096 for n in range(nodes)}, dist)


# -- launchers ---------------------------------------------------------------------------

@pytest.mark.parametrize("memory, option", [
    ({"weighted-interleave": [2, 3, 5]}, "--weighted-interleave=2-3,5"),
    ({"weighted-interleave": "all"}, "--weighted-interleave=0-7"),
    ({"preferred-many": "1,3"}, "--preferred-many=1,3"),
    ({"preferred-many": [6]}, "--preferred-many=6"),
])
def test_numactl_argv(x4600, monkeypatch, memory, option):
    machine(monkeypatch, "4.19.0")       # a named platform is planned elsewhere: no local check
    (p,) = plan(x4600, [memory])
    assert command(p, "./cg.B.x") == (["numactl", "--physcpubind=0-1", option, "./cg.B.x"],
                                      {"OMP_NUM_THREADS": "2"})
    assert LAUNCHERS["numactl"].probe(p) == ["numactl", "--physcpubind=0-1", option, "true"]


def test_placement_ids_and_labels(x4600):
    wi, pm = plan(x4600, [{"weighted-interleave": "0-1"}, {"preferred-many": [2, 3]}])
    assert wi.id == "c0-1_wi0-1_p_nc" and wi.label == "cpus 0-1 · weighted-interleave 0-1"
    assert pm.id == "c0-1_pm2-3_p_nc" and pm.to_dict()["memory"] == "preferred-many"


@pytest.mark.parametrize("launcher, binding, problem", [
    ("taskset", "process", "taskset sets only the CPU mask; use numactl for a memory policy"),
    ("omp", "threads", "OpenMP environment variables cannot set a memory policy; use numactl"),
])
@pytest.mark.parametrize("policy", NEW)
def test_other_launchers_cannot_express(x4600, launcher, binding, problem, policy):
    exp = {"name": "t", "launcher": launcher, "binding": [binding], "placements": [{"cpus": "0-3"}],
           "memory": [{policy: [1, 2]}]}
    with pytest.raises(ConfigError) as e:
        expand_experiment(exp, {}, x4600, "s.yaml", "experiments[0]")
    assert str(e.value) == (f"s.yaml: experiments[0].placements[0]: launcher {launcher} cannot express "
                            f"cpus 0-3 · {policy} 1-2{' · pinned threads' if binding == 'threads' else ''}: "
                            + problem.format(policy=policy))


# -- applicability: kernel and numactl of this machine (platform auto) --------------------

@pytest.mark.parametrize("kernel, version, usage, memory, line", [
    ("6.1.0-18-amd64", "2.0.19", "", {"weighted-interleave": "all"},
     "kernel 6.1 has no weighted interleave (6.9+)"),
    ("5.10.0-28-amd64", "2.0.19", "", {"preferred-many": [0, 1]},
     "kernel 5.10 has no preferred-many memory policy (5.15+)"),
    ("6.9.0", "2.0.18", "", {"weighted-interleave": [0, 1]},
     "numactl 2.0.18 has no --weighted-interleave (2.0.19+)"),
    # Debian 12's numactl 2.0.16 has no --version: its usage lists what it knows
    ("6.12.9", None, "usage: numactl [--interleave= | -i <nodes>] [--preferred= | -p <node>]\n",
     {"preferred-many": [0, 1]}, "this numactl has no --preferred-many (numactl 2.0.15+)"),
])
def test_not_applicable_here_is_one_line(monkeypatch, kernel, version, usage, memory, line):
    machine(monkeypatch, kernel, version, usage)
    notes = []
    ps = plan(auto(), ["local", memory], notes=notes, placements=({"cpus": "0-1"}, {"cpus": "0,2"}))
    assert notes == [f"experiments[0].memory[1]: not applicable here: {line}"]
    assert [p.memory.policy for p in ps] == ["local", "local"]


USAGE_2_0_16 = ("usage: numactl [--all | -a] [--balancing | -b] [--interleave= | -i <nodes>]\n"
                "\t\t[--preferred= | -p <node>] [--preferred-many= | -P <nodes>]\n")


def test_applicable_where_kernel_and_numactl_have_them(monkeypatch):
    machine(monkeypatch, "6.9.0-rc7", "2.0.19")
    notes = []
    ps = plan(auto(), [{"weighted-interleave": "all"}, {"preferred-many": "0-1"}], notes=notes)
    assert notes == [] and [p.memory.label for p in ps] == ["weighted-interleave 0-1", "preferred-many 0-1"]
    machine(monkeypatch, "6.1.0", None, USAGE_2_0_16)       # 2.0.16 knows --preferred-many
    assert [p.memory.policy for p in plan(auto(), [{"preferred-many": [1]}])] == ["preferred-many"]


def test_the_default_memory_list_names_its_index(monkeypatch):
    machine(monkeypatch, "6.1.0", "2.0.19")
    notes = []
    exp = {"name": "t", "launcher": "numactl", "placements": [{"cpus": "0-1"}]}
    expand_experiment(exp, {"memory": ["local", {"weighted-interleave": "all"}]}, auto(), "s.yaml",
                      "experiments[0]", notes)
    assert notes == ["memory[1]: not applicable here: kernel 6.1 has no weighted interleave (6.9+)"]


def test_a_launcher_that_cannot_express_it_is_an_error_not_a_skip(monkeypatch):
    machine(monkeypatch, "6.1.0", "2.0.19")
    with pytest.raises(ConfigError, match="launcher taskset cannot express"):
        plan(auto(), [{"weighted-interleave": [0, 1]}], launcher="taskset")


def test_the_old_policies_ask_nothing_of_kernel_or_numactl(monkeypatch):
    monkeypatch.setattr(mempolicy, "kernel_release", lambda: pytest.fail("kernel asked"))
    monkeypatch.setattr(mempolicy, "numactl_facts", lambda: pytest.fail("numactl asked"))
    ps = plan(auto(), ["local", {"interleave": "all"}, {"membind": [1]}, {"preferred": 1}])
    assert len(ps) == 4
    assert all(MEMORY_POLICIES[p].facts() == {} for p in ("local", "interleave", "membind", "preferred"))


def test_numactl_probe_reads_version_or_usage(monkeypatch):
    monkeypatch.setattr(mempolicy, "numactl_facts", lambda: {"found": True, "version": None, "usage": USAGE_2_0_16})
    assert mempolicy.numactl_has("--preferred-many", "2.0.15") is None
    assert mempolicy.numactl_has("--weighted-interleave", "2.0.19") == \
        "this numactl has no --weighted-interleave (numactl 2.0.19+)"
    monkeypatch.setattr(mempolicy, "numactl_facts", lambda: {"found": True, "version": "2.0.19", "usage": ""})
    assert mempolicy.numactl_has("--weighted-interleave", "2.0.19") is None
    monkeypatch.setattr(mempolicy, "numactl_facts", lambda: {"found": False, "version": None, "usage": ""})
    assert mempolicy.numactl_has("--preferred-many", "2.0.15") == "no numactl on PATH"


def test_weights_read_from_sysfs(tmp_path):
    d = tmp_path / mempolicy.WEIGHTS_DIR
    d.mkdir(parents=True)
    for n, w in ((0, 3), (1, 1), (10, 2)):
        (d / f"node{n}").write_text(f"{w}\n")
    (d / "auto").write_text("false\n")
    assert mempolicy.weighted_interleave_weights(tmp_path) == ({"0": 3, "1": 1, "10": 2}, False)
    assert mempolicy.weighted_interleave_weights(tmp_path / "none") == ({}, None)


# -- fidelity ------------------------------------------------------------------------------

def record(memory, memory_nodes, data, policies, weights=None):
    """A run record as runner.execute writes it, reduced to what fidelity reads: two threads
    on CPUs 0-1 (node 0), numa_maps-derived per-node data bytes and policies."""
    view = {"t": 1.5, "data_bytes": {str(n): b for n, b in data.items()},
            "total_bytes": {str(n): b for n, b in data.items()}, "policies": policies, "threads": 2, "team": 2}
    threads = {"1": {"cpus": {"0": 5}, "allowed": "0-1"}, "2": {"cpus": {"1": 5}, "allowed": "0-1"}}
    rec = {"run_id": "cg.W.default.x.r1", "status": "ok",
           "placement": {"cpus": "0-1", "threads": 2, "nodes": "0", "memory": memory,
                         "memory_nodes": memory_nodes, "binding": "process", "launcher": "numactl"},
           "topology": {"name": "auto", "nodes": {"0": "0-1", "1": "2-3", "2": "4-5", "3": "6-7"}},
           "capture_settings": {"numa_maps": True}, "output": {"threads": 2},
           "captures": {"numa_maps": {"samples": 12, "peak": view, "steady": view, "last": view},
                        "threads": threads, "team": 2, "errors": []},
           "system": {}}
    if weights is not None:
        rec["system"]["weighted_interleave"] = weights
    return rec


W31 = {"0": 3, "1": 1, "2": 1, "3": 1}


def test_weighted_interleave_ok_when_shares_follow_the_weights():
    v = judge(record("weighted-interleave", "0-1", {0: 74 * MiB, 1: 26 * MiB},
                     {"weighted interleave:0-1": 100 * MiB}, W31))
    assert v["verdict"] == "ok", v
    m = v["memory"]
    assert m["weights"] == {"0": 3, "1": 1} and m["expected_distribution"] == {"0": 0.75, "1": 0.25}
    assert m["interleave_max_deviation"] == 0.01 and m["share_under_policy"] == 1.0


def test_weighted_interleave_even_split_against_3_to_1_is_drift():
    v = judge(record("weighted-interleave", "0-1", {0: 50 * MiB, 1: 50 * MiB},
                     {"weighted interleave:0-1": 100 * MiB}, W31))
    assert v["verdict"] == "drift" and v["memory"]["interleave_max_deviation"] == 0.25
    assert v["reasons"] == ["memory: weighted interleave over 2 nodes is off its weights 3:1: per node "
                            "N0=50.0% N1=50.0% (expected N0=75.0% N1=25.0% ± 14.0%)"]


def test_weighted_interleave_under_plain_interleave_is_drift():
    # the pages follow the weights by chance, but the kernel applied plain interleave
    v = judge(record("weighted-interleave", "0-1", {0: 75 * MiB, 1: 25 * MiB},
                     {"interleave:0-1": 100 * MiB}, W31))
    assert v["verdict"] == "drift" and v["memory"]["share_under_policy"] == 0.0
    assert "asks for weighted-interleave 0-1" in v["reasons"][0]


def test_weighted_interleave_without_recorded_weights_is_unknown():
    v = judge(record("weighted-interleave", "0-1", {0: 75 * MiB, 1: 25 * MiB},
                     {"weighted interleave:0-1": 100 * MiB}, {"0": 3}))
    assert v["verdict"] == "unknown" and v["memory"]["verdict"] == "unknown"
    assert "weights of node(s) 1 were not recorded" in v["memory"]["reason"]


def test_plain_interleave_is_judged_as_before():
    # weighted-interleave's weights do not touch plain interleave: even, and 'weighted
    # interleave' pages still count for it (as they did)
    v = judge(record("interleave", "0-1", {0: 51 * MiB, 1: 49 * MiB}, {"weighted interleave:0-1": 100 * MiB}, W31))
    assert v["verdict"] == "ok" and "weights" not in v["memory"]
    assert POLICY_MODES["interleave"] == ("interleave", "weighted interleave")


def test_preferred_many_ok_and_drift():
    ok = judge(record("preferred-many", "1-2", {1: 60 * MiB, 2: 40 * MiB}, {"prefer (many):1-2": 100 * MiB}))
    assert ok["verdict"] == "ok", ok
    off = judge(record("preferred-many", "1-2", {1: 20 * MiB, 3: 80 * MiB}, {"prefer (many):1-2": 100 * MiB}))
    assert off["verdict"] == "drift"
    assert "20.0% of 100.0 MiB data pages on preferred-many node(s) 1-2" in off["reasons"][0]
    single = judge(record("preferred-many", "1-2", {1: 100 * MiB}, {"prefer:1": 100 * MiB}))
    assert single["verdict"] == "drift" and single["memory"]["share_under_policy"] == 0.0


# -- schema ------------------------------------------------------------------------------

BASE = {"study": "s", "platform": "x4600", "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}]}]}


def with_memory(*memory):
    return {**BASE, "experiments": [{**BASE["experiments"][0], "memory": list(memory)}]}


@pytest.mark.parametrize("memory", [{"weighted-interleave": "all"}, {"weighted-interleave": "0-1"},
                                    {"weighted-interleave": [0, 3]}, {"preferred-many": [0, 1]},
                                    {"preferred-many": "2-3"}])
def test_schema_accepts(memory):
    validate_study(with_memory(memory), "f.yaml")


@pytest.mark.parametrize("memory, line", [
    ({"weighted-interleave": {"nodes": "0-1", "weights": [3, 1]}},
     "weighted-interleave takes nodes only and interleaves by the kernel's weights "
     "(/sys/kernel/mm/mempolicy/weighted_interleave/node<N>, set by root); explicit weights are not "
     "supported (got {'nodes': '0-1', 'weights': [3, 1]})"),
    ({"weighted-interleave": "nearest"},
     "weighted-interleave needs a non-empty list of node ids, or a node list like '0-3' (got 'nearest')"),
    ({"preferred-many": []}, "preferred-many needs a non-empty list of node ids, or a node list like '0-3' (got [])"),
    ({"preferred-many": "all"},
     "preferred-many needs a non-empty list of node ids, or a node list like '0-3' (got 'all')"),
    ({"preferred-many": [1, 1]}, "preferred-many lists node 1 twice"),
    ({"weighted_interleave": [0]}, "unknown memory policy {'weighted_interleave': [0]}: use local, "
     "{interleave: nodes}, {membind: nodes}, {preferred: node}, {weighted-interleave: nodes} or "
     "{preferred-many: nodes}"),
])
def test_schema_refuses_with_one_line(memory, line):
    with pytest.raises(ConfigError) as e:
        validate_study(with_memory("local", memory), "f.yaml")
    assert str(e.value) == "f.yaml: experiments[0].memory[1]: " + line


def test_schema_memory_comes_from_the_registry():
    raw = schema_file("study")["$defs"]["memory"]
    assert not any(name in str(raw.get("anyOf")) for name in MEMORY_POLICIES if name != "local")
    filled = _schema("study")["$defs"]["memory"]["oneOf"]
    assert filled == [m.schema() for m in MEMORY_POLICIES.values()]
    assert filled[0] == {"const": "local"}


def test_a_weighted_run_records_the_kernels_weights(monkeypatch):
    monkeypatch.setattr(mempolicy, "weighted_interleave_weights", lambda root="/": ({"0": 3, "1": 1}, False))
    assert MEMORY_POLICIES["weighted-interleave"].facts() == {"weighted_interleave": {"0": 3, "1": 1},
                                                              "weighted_interleave_auto": False}
    assert MEMORY_POLICIES["preferred-many"].facts() == {}
