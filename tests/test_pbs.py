"""PBS profiles (snakemake-executor-plugin-cluster-generic): the qsub lines they render,
the mapping of every PBS Pro and Torque job state to running|success|failed on recorded
qstat outputs (tests/fixtures/qstat/), and — for real — the quick study through
profiles/pbs-torque over Slurm's Torque wrappers (qsub/qstat/qdel of Debian's
slurm-wlm-torque) on the local Slurm of tests/test_slurm.py.

No PBS Pro/OpenPBS or Torque server is installable here: the PBS Pro and Torque
dialects are checked on fixtures only (see tests/fixtures/qstat/README.md).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from cluster import common
from cluster.common import slurm  # noqa: F401  (the shared local-Slurm fixture)
from conftest import need_rig

from numaplace.cluster import resources as cluster
from numaplace.cluster import pbs  # noqa: E402
from numaplace.plan.study import load_study_file  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "qstat"
ON_PBSPRO = "the PBS Pro dialect was checked on fixtures only"


def profile(name):
    return yaml.safe_load((REPO / "profiles" / name / "config.yaml").read_text())


# -- the state mapping on recorded qstat outputs -------------------------------------

def fake(responses, tools=("qstat",)):
    """A `run` for pbs.job_status answering from fixtures, and a `which`."""
    def run(argv):
        for prefix, (rc, out, err) in responses.items():
            if argv[:len(prefix)] == list(prefix):
                return subprocess.CompletedProcess(argv, rc, out, err)
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]}: not expected here")

    return run, (lambda name: f"/usr/bin/{name}" if name in tools else None)


def fx(path):
    return (FIX / path).read_text()


JSON = ("qstat", "-fx", "-F", "json")
FULL = ("qstat", "-f")
SCONTROL = ("scontrol", "show", "job", "-o")

PBSPRO = {   # fixture (pbspro/qstat-fx-F-json-<name>.json) → expected
    "Q": "running", "H": "running", "W": "running", "T": "running", "R": "running",
    "E": "running", "B": "running", "S": "running", "U": "running",
    "M": "failed",                       # moved to another server: not trackable any more
    "F-exit0": "success", "F-exit1": "failed", "F-walltime": "failed", "F-signal": "failed",
    "F-deleted-queued": "failed", "F-invalid-json": "success", "X": "success",
}
TORQUE = {   # fixture (torque/qstat-f-<name>.txt) → expected
    "Q": "running", "H": "running", "W": "running", "T": "running", "R": "running",
    "E": "running", "S": "running",
    "C-exit0": "success", "C-exit1": "failed", "C-walltime": "failed", "C-exec-failed": "failed",
    "C-deleted-queued": "failed",
}
WRAPPER = {  # recorded from Slurm's Torque wrappers: qstat -f fixture, scontrol fixture → expected
    "R": ("qstat-f-R.txt", None, "running"),
    "Q": ("qstat-f-Q.txt", None, "running"),
    "Q-held": ("qstat-f-Q-held.txt", None, "running"),
    "C-completed": ("qstat-f-C-completed.txt", "scontrol-COMPLETED.txt", "success"),
    "C-failed": ("qstat-f-C-failed.txt", "scontrol-FAILED.txt", "failed"),
    "C-cancelled": ("qstat-f-C-cancelled.txt", "scontrol-CANCELLED.txt", "failed"),
}


def test_fixtures_cover_every_state():
    pbspro = {pbs.DIALECTS["pbspro"].parse_qstat(p.read_text())[0] for p in (FIX / "pbspro").glob("*.json")}
    torque = {pbs.DIALECTS["torque"].parse_qstat(p.read_text())[0] for p in (FIX / "torque").glob("qstat-f-*.txt")}
    assert pbspro == set(pbs.DIALECTS["pbspro"].states)
    assert torque == set(pbs.DIALECTS["torque"].states)
    assert set(PBSPRO) == {p.stem.replace("qstat-fx-F-json-", "") for p in (FIX / "pbspro").glob("*.json")}
    assert set(TORQUE) == {p.stem.replace("qstat-f-", "") for p in (FIX / "torque").glob("qstat-f-*.txt")}


@pytest.mark.parametrize("dialect", ["pbspro", "auto"])
@pytest.mark.parametrize("name", sorted(PBSPRO))
def test_pbspro_states(name, dialect):
    run, which = fake({JSON: (0, fx(f"pbspro/qstat-fx-F-json-{name}.json"), "")})
    st = pbs.job_status("1211.pbs01", dialect, run=run, which=which)
    assert st.status == PBSPRO[name], st


@pytest.mark.parametrize("dialect", ["torque", "auto"])
@pytest.mark.parametrize("name", sorted(TORQUE))
def test_torque_states(name, dialect):
    run, which = fake({JSON: (2, "", fx("torque/qstat-fx-F-json.stderr")),
                       FULL: (0, fx(f"torque/qstat-f-{name}.txt"), "")})
    st = pbs.job_status("308.torque01", dialect, run=run, which=which)
    assert st.status == TORQUE[name], st


@pytest.mark.parametrize("dialect", ["torque", "auto"])
@pytest.mark.parametrize("name", sorted(WRAPPER))
def test_slurm_torque_wrapper_states(name, dialect):
    qstat, scontrol, expected = WRAPPER[name]
    responses = {JSON: (2, "", fx("slurm-torque/qstat-fx-F-json.stderr")),
                 FULL: (0, fx(f"slurm-torque/{qstat}"), "")}
    if scontrol:
        responses[SCONTROL] = (0, fx(f"slurm-torque/{scontrol}"), "")
    run, which = fake(responses, tools=("qstat", "scontrol"))
    st = pbs.job_status("41", dialect, run=run, which=which)
    assert st.status == expected, st
    if scontrol:      # without Slurm to ask, a C without exit_status cannot be success
        run, which = fake(responses)
        assert pbs.job_status("41", dialect, run=run, which=which).status == "failed"


def test_vanished_and_unreachable():
    for dialect, responses in (
            ("pbspro", {JSON: (153, "", fx("pbspro/qstat-unknown.stderr"))}),
            ("torque", {FULL: (153, "", fx("torque/qstat-unknown.stderr"))}),
            ("auto", {JSON: (2, "", fx("torque/qstat-fx-F-json.stderr")),
                      FULL: (153, "", fx("torque/qstat-unknown.stderr"))}),
            ("torque", {FULL: (153, "", "")})):           # Slurm's wrapper: silent, exit 153
        run, which = fake(responses)
        assert pbs.job_status("9", dialect, run=run, which=which).status == "success"
        assert pbs.job_status("9", dialect, "failed", run=run, which=which).status == "failed"
    run, which = fake({JSON: (1, "", "Connection refused\nqstat: cannot connect to server pbs01 (errno=111)\n")})
    st = pbs.job_status("9", "pbspro", run=run, which=which)
    assert st.status == "running" and "cannot connect" in st.reason


# -- the thin scripts, as the profiles call them -------------------------------------

def fake_tools(bindir, json_out=None, full_out=None):
    """A qsub that records its argv and prints a PBS job id; a qstat that prints one
    fixture for `-F json` and another for plain `-f` (exit 153 where there is none)."""
    bindir.mkdir(parents=True, exist_ok=True)
    (bindir / "qsub").write_text("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$QSUB_ARGV\"\necho 1234.pbs01\n")
    qstat = "#!/bin/sh\ncase \"$*\" in\n"
    if json_out:
        qstat += f"  *-F*) cat {shlex.quote(str(json_out))} ;;\n"
    if full_out:
        qstat += f"  -f\\ *) cat {shlex.quote(str(full_out))} ;;\n"
    qstat += "  *) exit 153 ;;\nesac\n"
    (bindir / "qstat").write_text(qstat)
    for f in ("qsub", "qstat"):
        (bindir / f).chmod(0o755)


def test_status_script_from_the_profile(tmp_path):
    fake_tools(tmp_path / "bin", FIX / "pbspro/qstat-fx-F-json-F-exit1.json", FIX / "torque/qstat-f-C-exit0.txt")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    for name, expected in (("pbs", "failed"), ("pbs-torque", "success")):
        cmd = profile(name)["cluster-generic-status-cmd"]
        # cluster-generic runs: {statuscmd} '{jobid}' (in the directory Snakemake runs in)
        out = subprocess.run(f"{cmd} '1212.pbs01'", shell=True, cwd=REPO, env=env,
                             capture_output=True, text=True, check=True)
        assert out.stdout == f"{expected}\n", (name, out)
        assert profile(name)["cluster-generic-cancel-cmd"] == "qdel"


def sample_study_jobs():
    """Job properties, as Snakemake writes them into a jobscript, for the reference
    study on the Magny-Cours node (24 CPUs): a measure job of one run (a chunk of a round
    holding a CG.C run with 8 threads alone), a build, and a group of three such jobs."""
    st = load_study_file(REPO / "config/studies/thesis-magny-cours.yaml", REPO / "config")
    chunk = next(c for c in st.chunks if "cg.C.default.c0-7_loc_t_ap.r1" in c.run_ids)
    runs = [st.run("cg.C.default.c0-7_loc_t_ap.r1")]
    res = {"mem_mb": cluster.measure_mem_mb(st, runs), "mem_mib": 2288, "disk_mb": 1000, "disk_mib": 954,
           "tmpdir": "<TBD>", "machine": 1, "exclusive": 1, "cpus_per_task": cluster.node_cpus(st),
           "runtime": cluster.measure_runtime(st, runs)}
    measure = {"type": "single", "rule": "measure", "local": False, "input": ["results/build/x/default/bin/cg.C.x"],
               "output": [f"results/thesis-magny-cours/rounds/{chunk.id}.json"],
               "wildcards": {"chunk": chunk.id}, "params": {}, "log": [], "threads": 24,
               "resources": res, "jobid": 17, "cluster": {}}
    build = {"type": "single", "rule": "npb_build", "local": False, "input": [], "output": ["cg.C.x"],
             "wildcards": {"variant": "default", "bench": "cg", "cls": "C"}, "params": {}, "log": [],
             "threads": 1, "resources": {"mem_mb": cluster.BUILD_MEM_MB, "disk_mb": 1000, "tmpdir": "<TBD>",
                                         "machine": 1, "runtime": cluster.BUILD_RUNTIME_MIN},
             "jobid": 3, "cluster": {}}
    group = {"type": "group", "groupid": "runs", "local": False, "input": [], "output": [], "threads": 24,
             "resources": {**res, "runtime": 3 * res["runtime"]}, "jobid": "0f2c", "cluster": {}}
    return measure, build, group


def render(tmp_path, profile_name, props):
    """Run the profile's submit command on a jobscript with these properties, as
    cluster-generic does ({submitcmd} "{jobscript}"), against a recording qsub."""
    wd = tmp_path / "wd"
    wd.mkdir(exist_ok=True)
    if not (wd / "profiles").exists():
        (wd / "profiles").symlink_to(REPO / "profiles")
    fake_tools(tmp_path / "bin")
    script = wd / f"snakejob.{props.get('rule', 'group')}.sh"
    script.write_text(f"#!/bin/sh\n# properties = {json.dumps(props)}\ntrue\n")
    argv_file = tmp_path / "qsub.argv"
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}", "QSUB_ARGV": str(argv_file)}
    cmd = profile(profile_name)["cluster-generic-submit-cmd"]
    out = subprocess.run(f'{cmd} "{script}"', shell=True, cwd=wd, env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout == "1234.pbs01\n"
    argv = argv_file.read_text().splitlines()
    assert argv[-1] == str(script)
    log = argv[argv.index("-o") + 1]
    assert log.startswith(str(wd / "logs" / "pbs")) and (wd / "logs" / "pbs").is_dir()
    return " ".join(argv[:argv.index("-o")] + argv[argv.index("-o") + 2:-1])


def test_pbspro_submit_line(tmp_path):
    measure, build, group = sample_study_jobs()
    assert measure["resources"]["runtime"] == 25 and measure["resources"]["mem_mb"] == 2399
    assert render(tmp_path, "pbs", measure) == (
        "-V -N np-measure -j oe -l select=1:ncpus=24:mem=2399mb -l walltime=00:25:00 -l place=excl")
    assert render(tmp_path, "pbs", build) == (
        "-V -N np-npb_build -j oe -l select=1:ncpus=1:mem=2048mb -l walltime=00:20:00")
    assert render(tmp_path, "pbs", group) == (
        "-V -N np-g-runs -j oe -l select=1:ncpus=24:mem=2399mb -l walltime=01:15:00 -l place=excl")
    queued = {**measure, "resources": {**measure["resources"], "slurm_partition": "workq",
                                       "slurm_account": "proj42"}}
    assert render(tmp_path, "pbs", queued).endswith("-l place=excl -q workq -A proj42")


def test_torque_submit_line(tmp_path):
    measure, build, _ = sample_study_jobs()
    assert render(tmp_path, "pbs-torque", measure) == (
        "-V -N np-measure -j oe -l nodes=1:ppn=24,mem=2399mb,walltime=00:25:00")
    assert render(tmp_path, "pbs-torque", build) == (
        "-V -N np-npb_build -j oe -l nodes=1:ppn=1,mem=2048mb,walltime=00:20:00")


def test_qsub_argv_options():
    measure, _, _ = sample_study_jobs()
    argv = pbs.qsub_argv(measure, "torque", "/l/x.log", extra=["-W", "group_list=g1"], exclusive_args=["-n"])
    assert argv == ["qsub", "-V", "-N", "np-measure", "-j", "oe", "-o", "/l/x.log",
                    "-l", "nodes=1:ppn=24,mem=2399mb,walltime=00:25:00", "-n", "-W", "group_list=g1"]
    with pytest.raises(ValueError):
        pbs.qsub_argv(measure, "lsf")
    assert pbs.walltime(25) == "00:25:00" and pbs.walltime(1501) == "25:01:00"


def test_rules_ask_for_whole_nodes(repo, tmp_path):
    """The rules' lambdas, through Snakemake: on the 24-CPU Magny-Cours platform a
    measure job (a chunk of a round) asks for 24 threads/CPUs, exclusive, the walltime
    of its runs one after the other and its largest run's memory; a build for one CPU.
    (Dry run; --cores only so that the dry run shows the threads.)"""
    wf = common.copy_workflow(repo, tmp_path / "wf")
    st = load_study_file(REPO / "config/studies/thesis-magny-cours.yaml", REPO / "config")
    chunk = next(c for c in st.chunks if "cg.C.default.c0-7_loc_t_ap.r1" in c.run_ids)
    runs = [st.run(rid) for rid in chunk.run_ids]
    assert len(runs) > 1
    minutes, mem = cluster.measure_runtime(st, runs), cluster.measure_mem_mb(st, runs)
    assert minutes > sum(cluster.measure_runtime(st, [r]) for r in runs) / 2 and mem == 2399
    target = f"results/thesis-magny-cours/rounds/{chunk.id}.json"
    r, _ = common.snakemake(wf, "--quiet", "host", "--profile", "profiles/pbs", "--configfile",
                            "config/studies/thesis-magny-cours.yaml", "-n", "--cores", "1000", target)
    text = r.stdout
    jobs = {m.group(1): m.group(2) for m in re.finditer(r"^rule (\w+):\n((?:    .*\n)+)", text, re.M)}
    assert re.search(r"threads: 24\b", jobs["measure"])
    res = dict(kv.split("=", 1) for kv in re.search(r"resources: (.*)", jobs["measure"]).group(1).split(", "))
    assert (res["cpus_per_task"], res["exclusive"], res["runtime"], res["mem_mb"]) == ("24", "1", str(minutes), "2399")
    assert "threads:" not in jobs["npb_build"]
    bres = dict(kv.split("=", 1) for kv in re.search(r"resources: (.*)", jobs["npb_build"]).group(1).split(", "))
    assert (bres["runtime"], bres["mem_mb"]) == ("20", "2048") and "exclusive" not in bres


# -- for real: Torque dialect over Slurm's Torque wrappers ---------------------------

def slurm_torque_wrappers():
    qsub = shutil.which("qsub")
    if not qsub:
        return "qsub not installed (bash .ci/setup --tests installs slurm-wlm-torque)"
    if "sbatch" not in Path(qsub).read_text(errors="replace"):
        return f"{qsub} is not Slurm's Torque wrapper"
    return None




@pytest.fixture(scope="module")
def torque(slurm, repo, tmp_path_factory):
    why = slurm_torque_wrappers()
    if why:
        need_rig(why)
    return slurm


def test_quick_study_through_torque_wrappers(torque, repo, tmp_path_factory):
    """The quick study through profiles/pbs-torque: builds as ordinary qsub jobs, the 14
    measured runs as two measure jobs (chunks of 7: rounds.chunk_runs), each on the whole
    node, its runs back to back, walltime their sum; qstat -f + Slurm settle every job."""
    wf = common.copy_workflow(repo, tmp_path_factory.mktemp("torque-quick"))
    with open(wf / "config/studies/quick.yaml", "a") as f:
        f.write("rounds: {chunk_runs: 7}\n")
    r, seconds = common.snakemake(wf, "--profile", "profiles/pbs-torque", "--configfile",
                                  "config/studies/quick.yaml", "--latency-wait", "5", timeout=900)
    print(f"quick study through profiles/pbs-torque (Slurm's Torque wrappers): {seconds:.0f} s")
    log = r.stdout + r.stderr
    submitted = re.findall(r"Submitted (group job|job) \S+ with external jobid '(\d+)'", log)
    recs = common.records(wf, "quick")
    assert sorted(recs) == sorted(common.plan_ids(wf, "quick"))
    groups = {}
    for rid, rec in recs.items():
        assert rec["status"] == "ok" and rec["output"]["verified"], (rid, rec["reason"])
        groups.setdefault(rec["slurm_job_id"], []).append(rec)
    assert sorted(len(g) for g in groups.values()) == [7, 7], {k: len(v) for k, v in groups.items()}
    for jid, g in groups.items():
        job = common.scontrol_job(jid)
        assert job["JobName"] == "np-measure" and int(job["NumCPUs"]) == torque["cpus"]
        assert len({x["round"]["chunk"] for x in g}) == 1
        spans = sorted((datetime.fromisoformat(x["started"]), datetime.fromisoformat(x["ended"])) for x in g)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))              # back to back
        settings = cluster.ClusterSettings(torque["cpus"])
        total = cluster.chunk_runtime_minutes([(x["bench"], x["class"], x["placement"]["threads"]) for x in g],
                                              settings)
        assert job["TimeLimit"] == pbs.walltime(total)
    builds = [j for kind, j in submitted if common.scontrol_job(j).get("JobName") == "np-npb_build"]
    assert len(builds) == 4
    assert all(int(common.scontrol_job(j)["NumCPUs"]) == 1 for j in builds)
    status = profile("pbs-torque")["cluster-generic-status-cmd"]
    for jid in groups:
        out = subprocess.run(f"{status} '{jid}'", shell=True, cwd=wf, capture_output=True, text=True)
        assert out.stdout == "success\n", out


def test_cancel_with_qdel(torque, tmp_path):
    """A job submitted by the profile's submit command, seen running by its status
    command, cancelled with the profile's cancel command (qdel), then seen failed."""
    wd = tmp_path / "wd"
    wd.mkdir()
    (wd / "profiles").symlink_to(REPO / "profiles")
    props = {"type": "single", "rule": "measure", "threads": 1, "jobid": 1,
             "resources": {"mem_mb": 100, "runtime": 2, "cpus_per_task": 1}}
    script = wd / "snakejob.sleep.sh"
    script.write_text(f"#!/bin/sh\n# properties = {json.dumps(props)}\nsleep 120\n")
    prof = profile("pbs-torque")
    jid = subprocess.run(f'{prof["cluster-generic-submit-cmd"]} "{script}"', shell=True, cwd=wd,
                         capture_output=True, text=True, check=True).stdout.strip()
    status = lambda: subprocess.run(f"{prof['cluster-generic-status-cmd']} '{jid}'", shell=True, cwd=wd,
                                    capture_output=True, text=True).stdout.strip()
    assert status() == "running"
    subprocess.run([prof["cluster-generic-cancel-cmd"], jid], check=True)
    deadline = time.monotonic() + 30
    while status() == "running" and time.monotonic() < deadline:
        time.sleep(1)
    assert status() == "failed"
    assert common.scontrol_job(jid)["JobState"] == "CANCELLED"
