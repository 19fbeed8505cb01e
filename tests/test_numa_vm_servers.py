"""Today's servers (issue 40) on a real multi-node kernel (numa-vm, QEMU): a job's cpuset,
a memory-only node (CXL-like) and SMT, one guest boot per topology.

A. `--topology 2:512M,2:512M,2:512M,0:512M`: nodes 0-2 with 2 CPUs each, node 3 memory
   only; numa_balancing off. The host plans the quick study and a memory matrix from a
   platform file of that shape with `allowed: {cpus: 2-5, nodes: 1-3, source: cpuset}`
   BEFORE the boot; the guest detects the whole machine, enters a cgroup v2 cpuset of
   CPUs 2-5 and memory nodes 1-3, detects again (its allowed: line) and runs the planned
   jobs there. Every run must stay inside the cpuset, membind cells must land on node 3,
   and the detected files must plan what the host-written file (and the guest's sysfs)
   plan.
B. `--nodes 2 --cpus-per-node 4 --smt 2` (cpus-per-node counts hardware threads: 2 cores
   x 2 threads a node): `platform detect` only; the default study's contention placements
   must use one hardware thread per core, `node` = the node's cores.

The guest script is tests/vm/guest_servers.py (it reuses guest_runs.py). Skips (fails in
CI) when numa-vm, QEMU or the guest artifacts are missing, as tests/test_numa_vm.py does.
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml

import numaplace.plan.study as study_mod
from numaplace.core.cpulist import parse_cpulist
from numaplace.judge.fidelity import judge
from numaplace.kinds import kind
from numaplace.kinds.memory import record_rows
from numaplace.machine.topology import from_sysfs, load_platform
from numaplace.plan.study import Study
from numaplace.record.store import Record

from test_numa_vm import REPO, _boot_failed, _skip_unless_numa_vm, boot_and_run, guest_records

GUEST_SCRIPT = REPO / "tests" / "vm" / "guest_servers.py"
JOB_CPUS, JOB_MEMS = "2-5", "1-3"
CXL_NODES = {0: "0-1", 1: "2-3", 2: "4-5", 3: ""}            # node 3: memory only
CXL_OPTS = ["--topology", "2:512M,2:512M,2:512M,0:512M"]
SMT_OPTS = ["--nodes", "2", "--cpus-per-node", "4", "--smt", "2", "--mem-per-node", "512M"]
DEFAULT = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
QUICK = {**yaml.safe_load((REPO / "config" / "studies" / "quick.yaml").read_text()),
         "platform": "vmjob", "classes": ["S"], "run": {"idle_check": "off", "timeout": 240}}
SMALL = ["--sizes", "8M", "--reps", "1", "--min-time", "0.01"]
MEMORY = {
    "study": "vmcxlmem", "platform": "vmjob", "launcher": "numactl", "repetitions": 1,
    "benchmarks": ["memlat"], "classes": ["X"], "run": {"idle_check": "off", "timeout": 120},
    "experiments": [
        {"name": "memory-matrix", "args": [*SMALL, "--min-loads", "20000"],
         "placements": [{"matrix": {"via": "first-touch"}}]},
        # membw takes no --min-loads: an experiment of its own, the same matrix
        {"name": "memory-matrix-bw", "benchmarks": ["membw"], "args": SMALL,
         "placements": [{"matrix": {"via": "first-touch"}}]},
    ],
}
# the worked example of "study your own program" (config/studies/own-program.yaml), small
OWN = {**yaml.safe_load((REPO / "config" / "studies" / "own-program.yaml").read_text()),
       "study": "vmown", "platform": "vmjob", "repetitions": 2, "run": {"idle_check": "off", "timeout": 120}}
OWN["programs"]["stencil"].update(command=["./stencil", "128", "30"], directory="stencil", title="7-point stencil (n 128)")
OWN["experiments"] = [{"name": "two-threads", "placements": [{"compact": [2]}, {"spread": [2]}]},
                      {"name": "one-thread-memory", "placements": [{"compact": [1]}],
                       "memory": ["local", {"membind": "farthest"}]}]


def cxl_platform(name, allowed=True):
    """The guest's shape as a platform file written by hand (10/20 distances, 512 MiB a node)."""
    data = {"name": name, "description": "numa-vm guest: 3 nodes x 2 CPUs + memory-only node 3",
            "launcher": "numactl",
            "nodes": [{"id": n, "cpus": c, "memory_mb": 512} for n, c in CXL_NODES.items()],
            "distances": [[10 if i == j else 20 for j in range(4)] for i in range(4)]}
    if allowed:
        data["allowed"] = {"cpus": JOB_CPUS, "nodes": JOB_MEMS, "source": "cpuset"}
    return yaml.safe_dump(data, sort_keys=False)


def config_dir(base, files):
    """base/config with platforms/<name>.yaml for each {name: text}."""
    (base / "config" / "platforms").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (base / "config" / "platforms" / f"{name}.yaml").write_text(text)
    return base / "config"


def on_sysfs(config, root):
    """The study planned with platform: auto on the node sysfs under `root` (a copy of the
    guest's, read by from_sysfs(path): the whole machine)."""
    orig = study_mod.from_sysfs
    study_mod.from_sysfs = lambda: from_sysfs(root)
    try:
        return Study({**config, "platform": "auto"}, "config/config.yaml", REPO / "config")
    finally:
        study_mod.from_sysfs = orig


def ids(study):
    return [r.run_id for r in study.runs]


def run_cpus(r):
    return set(parse_cpulist(r.placement.cpulist))


def run_memory_nodes(study, r):
    """Nodes a run's memory may come from: its policy's nodes, or (local, first touch)
    its CPUs' nodes."""
    return set(r.placement.memory.nodes) or {study.topology.node_of(c) for c in run_cpus(r)}


def check_inside_the_job(*studies):
    """Every planned run's CPUs within 2-5 and memory nodes within 1-3 (the cpuset)."""
    cpus, mems = set(parse_cpulist(JOB_CPUS)), set(parse_cpulist(JOB_MEMS))
    for st in studies:
        for r in st.runs:
            assert run_cpus(r) <= cpus, f"{st.name}: {r.run_id} plans CPUs {r.placement.cpulist} outside {JOB_CPUS}"
            assert run_memory_nodes(st, r) <= mems, \
                f"{st.name}: {r.run_id} plans memory on nodes {sorted(run_memory_nodes(st, r))} outside {JOB_MEMS}"


def boot(tool, topology, shares, command, started, timeout=600):
    """One `numa-vm run` of `command` on `topology`, numa_balancing off; skips (fails in CI)
    when the guest does not boot."""
    argv = [str(tool), "run", *topology, "--numa-balancing", "off"]
    for s in shares:
        argv += ["--share", str(s)]
    t0 = time.monotonic()
    p = boot_and_run([*argv, "--timeout", str(timeout), "--timing", "--", *command], started)
    if p.returncode == 125 and not Path(started).exists():
        _boot_failed("run", p)
    sys.stderr.write("".join(f"\n{line}" for line in (p.stderr or "").splitlines() if "boot-to-command" in line))
    return p, time.monotonic() - t0


def show_plan(title, study):
    sys.stderr.write(f"\n{title}:\n  " + "\n  ".join([study.plan_summary()[0],
                                                      *study.machine_notes(), *study.not_applicable]) + "\n")


# -- A. a job's cpuset on a machine with a memory-only node ----------------------------------
@pytest.fixture(scope="module")
def cxl_vm(npb_build, numaplace_wheel, tmp_path_factory):
    tool = _skip_unless_numa_vm()
    from numaplace.builds.tree import build
    t0 = time.monotonic()
    base = tmp_path_factory.mktemp("numa-vm-servers-cxl")
    cfg = config_dir(base / "host", {"vmjob": cxl_platform("vmjob")})
    quick = Study(QUICK, "quick.yaml", cfg)
    memory = Study(MEMORY, "vmcxlmem.yaml", cfg)
    shutil.copytree(REPO / "config" / "programs" / "stencil", base / "stencil")
    own = Study(OWN, base / "vmown.yaml", cfg)
    stencil = kind("stencil").build_binary(base / "stencil" / "stencil", base / "stencil.log")
    # planned before the boot, from the file written here: inside the cpuset, node 3 read
    check_inside_the_job(quick, memory, own)
    assert {rid.split(".")[3] for rid in ids(memory)} >= {"mx-mb-r1-m3", "mx-mb-r2-m3"}, ids(memory)
    micro = {}
    for bench in ("memlat", "membw"):
        d = base / "build"
        micro[bench] = build({}, "default", bench, "X", d / "tree", d / "bin" / f"{bench}.X.x",
                             d / "logs" / f"{bench}.log")
    jobs = []
    for st in (quick, memory, own):
        for r in st.runs:
            binary = stencil if st is own else micro[r.bench] if r.bench in micro else npb_build(r.bench, r.cls, r.variant)
            # the example's records as a study's results folder (its tables and answer are made from it)
            record = base / st.name / "runs" / r.run_id / "record.json" if st is own else \
                base / "runs" / st.name / r.run_id / "record.json"
            jobs.append({"name": r.run_id, "study": st.name, "spec": st.run_params(r.run_id), "binary": str(binary),
                         "record": str(record)})
    assert len({j["name"] for j in jobs}) == len(jobs)
    built = time.monotonic()
    guest = base / "guest"
    guest.mkdir()
    jobs_file, out_file = base / "jobs.json", base / "guest-out.json"
    jobs_file.write_text(json.dumps({"wheel": str(numaplace_wheel), "thp": "never", "jobs": jobs}, indent=1))
    p, boot_s = boot(tool, CXL_OPTS, [REPO, tmp_path_factory.getbasetemp()],
                     ["python3", str(GUEST_SCRIPT), str(numaplace_wheel), str(guest), "vmcxl",
                      "vmjob", JOB_CPUS, JOB_MEMS, str(jobs_file), str(out_file)], guest / "started")
    assert p.returncode == 0 and out_file.exists(), \
        f"guest failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    out, records = guest_records(out_file, jobs)
    timings = {"build_and_plan_s": round(built - t0, 1), "guest_s": round(boot_s, 1), "runs": len(jobs),
               "runs_s": round(sum(v["seconds"] for v in out["jobs"].values()), 1),
               "fixture_s": round(time.monotonic() - t0, 1)}
    sys.stderr.write(f"\nnuma-vm servers (cxl + cpuset) timings: {json.dumps(timings)}\n")
    return {"base": base, "guest": guest, "quick": quick, "memory": memory, "own": own, "jobs": jobs,
            "records": records, "out": out, "detect": json.loads((guest / "detect.json").read_text())}


def test_cxl_guest_detects_the_whole_machine_and_the_cpuset(cxl_vm):
    det, guest = cxl_vm["detect"], cxl_vm["guest"]
    assert det["whole"]["rc"] == 0 and det["job"]["rc"] == 0, det
    assert "available: 4 nodes (0-3)" in det["numactl_hardware"], det["numactl_hardware"]
    assert det["numa_balancing"] == "0"
    whole = load_platform(guest / "vmcxl.yaml")
    assert not whole.allowed and "allowed:" not in (guest / "vmcxl.yaml").read_text()
    assert {n: c for n, c in whole.nodes.items()} == {n: parse_cpulist(c) if c else [] for n, c in CXL_NODES.items()}
    assert whole.memory_only_nodes == [3] and whole.memory_mb[3] > 400
    # inside the cpuset: the kernel's view, and the detected file's allowed line
    assert det["job"]["status"] == {"Cpus_allowed_list": JOB_CPUS, "Mems_allowed_list": JOB_MEMS}, det["job"]
    text = (guest / "vmjob.yaml").read_text()
    assert f'allowed: {{cpus: "{JOB_CPUS}", nodes: "{JOB_MEMS}", source: "cpuset"}}' in text, text
    job = load_platform(guest / "vmjob.yaml")
    assert job.allowed["cpus"] == [2, 3, 4, 5] and job.allowed["nodes"] == [1, 2, 3]
    assert job.allowed["source"] == "cpuset"
    assert job.nodes == {1: [2, 3], 2: [4, 5], 3: []} and job.memory_only_nodes == [3]


def test_the_host_plan_stays_inside_the_cpuset(cxl_vm):
    check_inside_the_job(cxl_vm["quick"], cxl_vm["memory"], cxl_vm["own"])
    m3 = [r for r in cxl_vm["memory"].runs if r.placement.id.endswith("-m3")]
    assert sorted((r.bench, r.placement.id) for r in m3) == \
        [(b, f"mx-mb-r{r}-m3") for b in ("membw", "memlat") for r in (1, 2)]
    for r in m3:
        assert "--membind=3" in cxl_vm["memory"].run_params(r.run_id)["argv"]


def test_every_run_in_the_cpuset_is_ok_and_stayed_inside_it(cxl_vm):
    allowed = {str(c) for c in parse_cpulist(JOB_CPUS)}
    seen, verdicts = set(), {}
    for name, rec in cxl_vm["records"].items():
        assert rec["status"] == "ok", (name, rec["status"], rec.get("reason"))
        assert rec["captures"]["errors"] == [], (name, rec["captures"]["errors"])
        th = judge(rec)["threads"]
        # ok wherever the capture saw the whole team; a class S run in TCG can end before its
        # parallel part is sampled: then unknown, saying so (never drift)
        if th.get("threads_seen", 0) >= th.get("threads_expected", 1):
            assert th["verdict"] == "ok", (name, th)
        else:
            assert th["verdict"] == "unknown" and "ended before its parallel part" in th["reason"], (name, th)
        verdicts[th["verdict"]] = verdicts.get(th["verdict"], 0) + 1
        threads = rec["captures"]["threads"]
        assert threads, f"{name}: no thread was sampled"
        for tid, t in threads.items():
            assert set(t["cpus"]) <= allowed, (name, tid, t)
            seen |= set(t["cpus"])
    assert verdicts.get("ok", 0) >= 0.75 * len(cxl_vm["records"]), verdicts
    sys.stderr.write(f"cpuset runs: {len(cxl_vm['records'])} ok, threads observed on CPUs "
                     f"{','.join(sorted(seen))}; thread fidelity {json.dumps(verdicts)}\n")


def test_memory_only_node_cells_have_their_pages_on_node_3(cxl_vm):
    shares = {}
    for j in cxl_vm["jobs"]:
        if j["study"] != cxl_vm["memory"].name:
            continue
        rec = cxl_vm["records"][j["name"]]
        rows = record_rows(Record(rec))
        assert rows, j["name"]
        pid = rec["placement"]["id"]
        memory = int(pid.rsplit("-m", 1)[1])
        for row in rows:
            assert row["memory_node"] == memory and row["status"] == "ok", (j["name"], row)
            assert row["pages_on_memory_node"] >= 0.99, (j["name"], row)
        shares[f"{rec['bench']} {pid}"] = min(row["pages_on_memory_node"] for row in rows)
    assert len([k for k in shares if k.endswith("-m3")]) == 4, shares
    sys.stderr.write("pages on the intended memory node (memory matrix in the cpuset): "
                     + json.dumps(shares) + "\n")


def test_own_program_runs_where_placed_and_is_answered_with_its_launch_line(cxl_vm):
    """The worked example in the cpuset: every run ok and verified by its own pattern, its
    pages where its policy put them, its threads on its CPUs; the answer names it and
    gives the line to run it with."""
    from numaplace.report.answer import answer_data
    from numaplace.tables.aggregate import build_tables
    own = cxl_vm["own"]
    recs = {j["name"]: cxl_vm["records"][j["name"]] for j in cxl_vm["jobs"] if j["study"] == own.name}
    assert len(recs) == len(own.runs) >= 6
    pages = {}
    for name, rec in recs.items():
        assert rec["status"] == "ok" and rec["output"]["verified"] and rec["output"]["fom"] > 0, (name, rec.get("reason"))
        fid = judge(rec)
        assert fid["memory"]["verdict"] == "ok", (name, fid["memory"])
        assert fid["threads"]["verdict"] in ("ok", "unknown"), (name, fid["threads"])
        pages[rec["placement"]["id"]] = fid["memory"].get("share_on_allowed")
    tables = build_tables(cxl_vm["base"] / own.name)
    placements = {r.placement.id: r.placement.to_dict() for r in own.runs}
    lines = answer_data(tables, own.topology.to_dict(), placements=placements)["lines"]
    said = "\n".join(lines)
    assert "7-point stencil" in said, said
    assert "to run it best:" in said and f"{cxl_vm['base']}/stencil/stencil 128 30" in said, said
    sys.stderr.write("own program in the cpuset: pages on the allowed nodes " + json.dumps(pages)
                     + "\n  " + "\n  ".join(lines) + "\n")


def test_the_detected_job_file_plans_as_the_host_written_file(cxl_vm):
    """auto and the detected file plan the same: the quick study (and the memory matrix)
    from the guest's vmjob.yaml, through a config dir of its own, gives the host file's runs."""
    cfg = config_dir(cxl_vm["base"] / "detected", {"vmjob": (cxl_vm["guest"] / "vmjob.yaml").read_text()})
    for config, host in ((QUICK, cxl_vm["quick"]), (MEMORY, cxl_vm["memory"])):
        detected = Study(config, f"{config['study']}.yaml", cfg)
        assert ids(detected) == ids(host)
        assert [detected.run_params(i)["argv"] for i in ids(detected)] == [host.run_params(i)["argv"] for i in ids(host)]
    show_plan("quick study on the guest-detected vmjob (cpuset 2-5, mems 1-3)", Study(QUICK, "quick.yaml", cfg))


def test_the_default_study_plans_the_same_from_the_detected_file_and_the_sysfs(cxl_vm):
    guest = cxl_vm["guest"]
    cfg = config_dir(cxl_vm["base"] / "detected-whole", {"vmcxl": (guest / "vmcxl.yaml").read_text(),
                                                         "vmjob": (guest / "vmjob.yaml").read_text()})
    named = Study({**DEFAULT, "platform": "vmcxl"}, "config.yaml", cfg)
    auto = on_sysfs(DEFAULT, guest / "sysfs" / "devices" / "system" / "node")
    assert ids(named) == ids(auto)
    matrix = [r for r in named.runs if "memory-matrix" in r.experiments]
    columns = {int(r.placement.id.rsplit("-m", 1)[1]) for r in matrix}
    assert columns == {0, 1, 2, 3}, columns
    assert {(r.bench, r.placement.id) for r in matrix if r.placement.id.endswith("-m3")} == \
        {(b, f"mx-mb-r{n}-m3") for b in ("memlat", "membw") for n in (0, 1, 2)}
    show_plan("default study on the guest-detected vmcxl (whole machine)", named)
    job = Study({**DEFAULT, "platform": "vmjob"}, "config.yaml", cfg)
    check_inside_the_job(job)
    show_plan("default study on the guest-detected vmjob (cpuset 2-5, mems 1-3)", job)


# -- B. SMT: one hardware thread per core ---------------------------------------------------
@pytest.fixture(scope="module")
def smt_vm(numaplace_wheel, tmp_path_factory):
    tool = _skip_unless_numa_vm()
    guest = tmp_path_factory.mktemp("numa-vm-servers-smt")
    p, boot_s = boot(tool, SMT_OPTS, [REPO, tmp_path_factory.getbasetemp()],
                     ["python3", str(GUEST_SCRIPT), str(numaplace_wheel), str(guest), "vmsmt"],
                     guest / "started", timeout=300)
    assert p.returncode == 0 and (guest / "detect.json").exists(), \
        f"guest failed (exit {p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    sys.stderr.write(f"\nnuma-vm servers (smt) guest: {boot_s:.1f} s\n")
    return {"guest": guest, "detect": json.loads((guest / "detect.json").read_text())}


def test_smt_guest_contention_uses_one_thread_per_core(smt_vm):
    guest, det = smt_vm["guest"], smt_vm["detect"]
    assert det["whole"]["rc"] == 0, det
    data = yaml.safe_load((guest / "vmsmt.yaml").read_text())
    # the guest's own sibling sets (thread_siblings_list), not numaplace's reading of them
    pairs = [set(parse_cpulist(s)) for s in data["smt_siblings"]]
    assert len(pairs) == 4 and all(len(p) == 2 for p in pairs), data["smt_siblings"]
    node_cpus = {n["id"]: set(parse_cpulist(n["cpus"])) for n in data["nodes"]}
    assert sorted(len(c) for c in node_cpus.values()) == [4, 4], node_cpus
    core_of = {c: min(p) for p in pairs for c in p}
    cfg = config_dir(guest / "host", {"vmsmt": (guest / "vmsmt.yaml").read_text()})
    st = Study({**DEFAULT, "platform": "vmsmt"}, "config.yaml", cfg)
    contention = [r for r in st.runs if "memory-contention" in r.experiments]
    assert contention, ids(st)
    placements = {r.placement.id: parse_cpulist(r.placement.cpulist) for r in contention}
    for pid, cpus in placements.items():
        cores = [core_of[c] for c in cpus]
        assert len(set(cores)) == len(cores), f"{pid}: CPUs {cpus} put two threads on one core"
    (first,) = [cpus[0] for cpus in placements.values() if len(cpus) == 1]     # memory_cpu: first
    home = next(n for n, cs in node_cpus.items() if first in cs)
    node_cores = {core_of[c] for c in node_cpus[home]}
    node = [cpus for cpus in placements.values() if len(cpus) == len(node_cores)]
    assert len(node) == 1 and {core_of[c] for c in node[0]} == node_cores \
        and set(node[0]) <= node_cpus[home], (placements, node_cores)
    assert sorted(len(c) for c in placements.values()) == [1, 2, 4], placements
    auto = on_sysfs(DEFAULT, guest / "sysfs" / "devices" / "system" / "node")
    assert ids(auto) == ids(st)
    show_plan("default study on the guest-detected vmsmt (2 nodes x 2 cores x 2 threads)", st)
    sys.stderr.write(f"  memory-contention placements: {json.dumps(placements)}; "
                     f"siblings {data['smt_siblings']}\n")
