"""Bad studies and platforms fail before anything is built or run, with a message that
names the file, the entry and the problem; results already on disk stay untouched."""
import shutil
import subprocess
import sys

import pytest
import yaml

from numaplace import ConfigError
from numaplace.study import load_study_file

BASE = {"study": "bad", "platform": "x4600", "repetitions": 1,
        "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}]}]}


def study(**changes):
    d = yaml.safe_load(yaml.safe_dump(BASE))
    d.update(changes)
    return d


def exp(*placements, **extra):
    return [{"name": "e", "placements": list(placements), **extra}]


GOOD_PLATFORM = {"name": "p", "nodes": [{"id": 0, "cpus": "0-1"}, {"id": 1, "cpus": "2-3"}]}


def platform(**changes):
    d = yaml.safe_load(yaml.safe_dump(GOOD_PLATFORM))
    d.update(changes)
    return d


# (case id, study dict or raw text, platform override or None, entry expected, problem expected)
CASES = [
    ("malformed-yaml", "study: x\nexperiments: [\n", None, "line 3", "malformed YAML"),
    ("unknown-top-key", study(repetitons=3), None, "(top level)", "unknown key: Additional properties are not allowed ('repetitons' was unexpected)"),
    ("unknown-placement-key", study(experiments=exp({"cpu": "0"})), None, "experiments[0].placements[0]",
     "unknown key: Additional properties are not allowed ('cpu' was unexpected)"),
    ("cpu-not-in-topology", study(experiments=exp({"cpus": "0-3,99"})), None,
     "experiments[0] (e).placements[0].cpus", "CPU 99 is not in platform x4600"),
    ("layout-sum-not-threads", study(experiments=exp({"layout": "2/2", "nodes": [0, 1], "threads": 5})), None,
     "experiments[0] (e).placements[0]", "places 4 threads, but threads: 5"),
    ("layout-exceeds-node", study(experiments=exp({"layout": "3/1", "nodes": [0, 1]})), None,
     "placements[0].layout", "3 threads on node 0, which has 2 CPUs"),
    ("unknown-node", study(experiments=exp({"layout": "2/2", "nodes": [0, 9]})), None,
     "placements[0]", "node 9 is not in platform x4600"),
    ("layout-nodes-count", study(experiments=exp({"layout": "2/2/2", "nodes": [0, 1]})), None,
     "placements[0]", "has 3 entries but nodes has 2"),
    ("taskset-membind", study(experiments=exp({"cpus": "0-1"}, memory=[{"membind": [0]}])), None,
     "placements[0]", "launcher taskset cannot express"),
    ("aprun-process-binding", study(launcher="aprun", binding="process"), None,
     "placements[0]", "aprun cannot express"),
    ("membind-unknown-node", study(launcher="numactl", experiments=exp({"cpus": "0-1"}, memory=[{"membind": [12]}])),
     None, "memory[0].membind", "node 12 is not in platform"),
    ("duplicate-ids", study(experiments=exp({"cpus": "0-1", "id": "a"}, {"cpus": "2-3", "id": "a"})), None,
     "experiments[0] (e)", "duplicate placement id 'a'"),
    ("unknown-class", study(classes=["D"]), None, "classes[0]", "'D' is not one of"),
    ("unknown-kernel", study(benchmarks=["ft"]), None, "benchmarks[0]", "'ft' is not one of"),
    ("repetitions-zero", study(repetitions=0), None, "repetitions", "less than the minimum"),
    ("shell-in-cpus", study(experiments=exp({"cpus": "0;rm -rf ~"})), None,
     "experiments[0].placements[0].cpus", "is not a CPU list"),
    ("shell-in-fflags", study(npb={"fflags": "-O3 $(curl evil)"}), None, "npb.fflags", "is not allowed here"),
    ("shell-in-source", study(npb={"source": "x.tar.gz;reboot"}), None, "npb.source", "is not allowed here"),
    ("bad-study-name", study(study="../etc"), None, "study", "is not a usable name"),
    ("unknown-platform", study(platform="vax"), None, "platform", "unknown platform 'vax'"),
    ("too-many-threads", study(experiments=exp({"compact": [64]})), None, "placements[0].compact",
     "64 threads but platform x4600 has 16 CPUs"),
    ("platform-cpu-twice", study(platform="p"), platform(nodes=[{"id": 0, "cpus": "0-1"}, {"id": 1, "cpus": "1-2"}]),
     "nodes[1] (node 1).cpus", "CPU 1 is already in node 0"),
    ("platform-distances-shape", study(platform="p"), platform(distances=[[10, 20]]), "distances", "2x2 matrix"),
    ("platform-unknown-key", study(platform="p"), platform(sockets=2), "(top level)",
     "unknown key: Additional properties are not allowed ('sockets' was unexpected)"),
    ("platform-malformed", study(platform="p"), "name: p\nnodes: [{id: 0\n", "line", "malformed YAML"),
]


def write_case(tmp_path, repo, data, plat):
    cfg = tmp_path / "config"
    shutil.copytree(repo / "config" / "platforms", cfg / "platforms")
    if plat is not None:
        (cfg / "platforms" / "p.yaml").write_text(plat if isinstance(plat, str) else yaml.safe_dump(plat))
    f = tmp_path / "study.yaml"
    f.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False))
    return f, cfg


@pytest.mark.parametrize("case, data, plat, entry, problem", CASES, ids=[c[0] for c in CASES])
def test_bad_input_named(tmp_path, repo, case, data, plat, entry, problem):
    f, cfg = write_case(tmp_path, repo, data, plat)
    with pytest.raises(ConfigError) as ei:
        load_study_file(f, cfg)
    msg = str(ei.value)
    expected_file = str(cfg / "platforms" / "p.yaml") if case.startswith("platform-") else str(f)
    assert ei.value.where == expected_file, msg
    assert entry in ei.value.entry, msg
    assert problem in ei.value.problem, msg


def test_cases_are_many_and_distinct():
    assert len(CASES) >= 15 and len({c[0] for c in CASES}) == len(CASES)


def test_good_base_is_valid(tmp_path, repo):
    f, cfg = write_case(tmp_path, repo, study(), None)
    assert len(load_study_file(f, cfg).runs) == 2


@pytest.fixture
def workdir(tmp_path, repo):
    """A copy of the workflow with earlier results on disk."""
    w = tmp_path / "wf"
    w.mkdir()
    for name in ("Snakefile", "config", "workflow", "profiles", "envs"):
        src = repo / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, w / name)
    earlier = w / "results" / "bad" / "runs" / "cg.S.default.x.r1"
    earlier.mkdir(parents=True)
    (earlier / "record.json").write_text('{"status": "ok"}')
    return w


@pytest.mark.parametrize("case", ["unknown-node", "shell-in-cpus", "taskset-membind"])
def test_snakemake_refuses_before_any_job(workdir, case):
    data = next(c[1] for c in CASES if c[0] == case)
    (workdir / "bad.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    before = {p: p.read_bytes() for p in (workdir / "results").rglob("*") if p.is_file()}
    r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--configfile", "bad.yaml"],
                       cwd=workdir, capture_output=True, text=True)
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "bad.yaml" in out and "invalid study" in out, out[-2000:]
    assert "Execute" not in out and "localrule" not in out and "rule npb_build" not in out
    after = {p: p.read_bytes() for p in (workdir / "results").rglob("*") if p.is_file()}
    assert after == before
