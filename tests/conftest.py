"""Shared test fixtures: the repository root, NPB builds, a copy of the workflow.

numaplace itself is imported because it is installed (.ci/setup: .venv/); its `numaplace`
command sits beside this interpreter, put first on PATH here as the workflow's
common.smk does for Snakemake's jobs, so commands run by tests find it unactivated."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from numaplace.machine.topology import Topology

REPO = Path(__file__).resolve().parents[1]
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


# In CI (CI=true, set by .ci/run) every rig is installed: a test that cannot find one fails
# instead of skipping, so the claims that rest on the rigs are never silently untested.
IN_CI = os.environ.get("CI", "").lower() == "true"


def need_rig(reason):
    """A rig this test needs is missing: skip with the reason (and the command that
    installs it) on a developer's machine; fail in CI."""
    if IN_CI:
        pytest.fail(f"CI=true, but a rig is missing: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def repo_root():
    return REPO


@pytest.fixture(scope="session")
def repo():
    return REPO


@pytest.fixture(scope="session")
def npb_build(tmp_path_factory):
    """npb_build(bench, cls, variant="default", settings=None) → Path of a binary built by
    numaplace.builds.tree.build from a copy of npb/src in a session temp dir (npb/src itself is
    not touched); each (bench, class, variant, settings) is built once per session."""
    if not shutil.which("make") or not shutil.which("gfortran"):
        need_rig("make/gfortran not installed: cannot build NPB binaries (bash .ci/setup installs them)")
    from numaplace.builds.tree import build
    root = tmp_path_factory.mktemp("npb-build")
    built = {}

    def _build(bench, cls, variant="default", settings=None):
        settings = settings or {}
        tag = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:8]
        key = (bench, cls, variant, tag)
        if key not in built:
            d = root / tag / variant
            binary, log = d / "bin" / f"{bench}.{cls}.x", d / "logs" / f"{bench}.{cls}.log"
            try:
                build(settings, variant, bench, cls, d / "tree", binary, log)
            except RuntimeError as e:
                tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
                pytest.fail(f"{e}\n{tail}")
            built[key] = binary
        return built[key]

    return _build


@pytest.fixture(scope="session")
def numaplace_wheel(tmp_path_factory):
    """numaplace built as a wheel from this checkout (for machines where it is installed
    by unpacking, such as the NUMA VM guest), beside the wheels of what its runner imports
    (PyYAML, jsonschema and their dependencies, at requirements.txt's pins)."""
    import subprocess
    out = tmp_path_factory.mktemp("wheel")
    pins = [line.strip() for line in (REPO / "requirements.txt").read_text().splitlines()
            if line.split("==")[0].strip().lower() in ("pyyaml", "jsonschema")]
    for what in (["--no-deps", str(REPO)], pins):
        r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "-w", str(out), *what],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"pip wheel {' '.join(what)} failed (exit {r.returncode}):\n"
                        f"{r.stdout[-2000:]}{r.stderr[-2000:]}")
    wheels = list(out.glob("numaplace-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


# -- a private copy of the workflow to run Snakemake in ---------------------------------
WORKFLOW_PARTS = ("Snakefile", "config", "workflow", "npb", "microbench", "profiles", "envs")


def _ignore_build_products(directory, names):
    # build products of npb/src (object dirs build.<class>.<init>, binaries) stay behind
    return [n for n in names if n in ("__pycache__", ".snakemake") or n.endswith(".x")
            or (n.startswith("build.") and Path(directory, n).is_dir())]


def copy_workflow(repo, dest):
    """Copy what a user checks out (not results/ or report/) into dest."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_PARTS:
        src = repo / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=_ignore_build_products)
        else:
            shutil.copy(src, dest / name)
    return dest


def run_snakemake(wf, *args, check=True, timeout=1800):
    """snakemake *args in wf; .out holds stdout+stderr; fails with the log tail."""
    import subprocess
    r = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=wf, capture_output=True,
                       text=True, timeout=timeout)
    r.out = r.stdout + r.stderr
    if check and r.returncode != 0:
        pytest.fail(f"snakemake {' '.join(args)} failed (exit {r.returncode})\n{r.out[-6000:]}")
    return r


RUN_FILES = ("record.json", "numa_maps.peak.txt", "numa_maps.steady.txt", "numastat.process.txt")


def copy_run_files(rundir, dest):
    """The files of a run that the tables and the judge read (not stdout or samples)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in RUN_FILES:
        if (rundir / name).exists():
            shutil.copy(rundir / name, dest / name)
            os.chmod(dest / name, 0o644)


def read_records(wf, study):
    return {p.parent.name: json.loads(p.read_text())
            for p in (wf / "results" / study / "runs").glob("*/record.json")}


@pytest.fixture(autouse=True)
def kinds_as_found():
    """Programs a test defines (directly or by loading a study) leave with it: the kinds
    registry and the schema's benchmark words are as the test found them, so no later test
    in the same worker sees a 'stencil' or 'mine' among the kinds."""
    from numaplace import kinds
    before = dict(kinds.KINDS)
    yield
    if kinds.KINDS.keys() != before.keys() or any(kinds.KINDS[n] is not k for n, k in before.items()):
        kinds.KINDS.clear()
        kinds.KINDS.update(before)
        kinds.schema_words()


def single_run_spec(cpu=0, **run_settings):
    """A measured run's spec (what Study.run_params gives) for `taskset -c <cpu>` of one
    thread, class S CG, for tests that call the runner directly."""
    return {"run_id": f"cg.S.default.c{cpu}.r1", "study": "t", "bench": "cg", "class": "S",
            "variant": "default", "rep": 1, "argv": ["taskset", "-c", str(cpu), "BINARY"],
            "env": {"OMP_NUM_THREADS": "1"}, "capture": {}, "run": {"idle_check": "off", **run_settings},
            "placement": {"id": f"c{cpu}", "shape": f"cpus {cpu}", "cpus": str(cpu), "threads": 1,
                          "nodes": "0", "layout": "1 on 0", "memory": "local", "memory_nodes": "",
                          "binding": "process", "launcher": "taskset"}}


# -- NASA's NPB tarballs as distributed (../shared/npb/) -----------------------------------
SHARED_NPB = REPO.parent / "shared" / "npb"


@pytest.fixture(scope="session")
def nasa_npb():
    """nasa_npb("3.4.2") → {"tarball": Path, "sha256": str} from ../shared/npb/ (skips
    with the reason when the tarballs are not beside the clone)."""
    sums = SHARED_NPB / "SHA256SUMS"
    if not sums.exists():
        need_rig(f"NASA's NPB tarballs are not at {SHARED_NPB} (../shared/npb/ beside the clone: "
                 "see its README.md)")
    known = {name: digest for digest, name in (line.split() for line in sums.read_text().splitlines() if line.strip())}

    def _get(release):
        name = f"NPB{release}.tar.gz"
        if name not in known or not (SHARED_NPB / name).exists():
            need_rig(f"{SHARED_NPB / name} is missing (../shared/npb/README.md)")
        return {"tarball": SHARED_NPB / name, "sha256": known[name]}

    return _get


@pytest.fixture(scope="session")
def official_build(nasa_npb, tmp_path_factory):
    """(release, bench, cls, variant) → binary, built by numaplace.builds.tree.build from
    NASA's tarball as a study would (one tree per variant, shared source folder)."""
    from numaplace.builds.tree import build
    root = tmp_path_factory.mktemp("nasa-build")
    built = {}

    def _build(release, bench, cls, variant):
        key = (release, bench, cls, variant)
        if key not in built:
            npb = nasa_npb(release)
            settings = {"source": str(npb["tarball"]), "sha256": npb["sha256"]}
            d = root / release / variant
            binary, log = d / "bin" / f"{bench}.{cls}.x", d / "logs" / f"{bench}.{cls}.log"
            try:
                build(settings, variant, bench, cls, d / "tree", binary, log)
            except RuntimeError as e:
                pytest.fail(f"{e}\n{log.read_text(errors='replace')[-3000:] if log.exists() else ''}")
            built[key] = binary
        return built[key]

    return _build


def job_stats(output):
    """{rule: count} from the "Job stats" table snakemake prints (empty: nothing to do)."""
    m = re.search(r"Job stats:\n.*?\n-+\s+-+\n(.*?)\ntotal", output, re.S)
    if not m:
        assert "Nothing to be done" in output, output[-3000:]
        return {}
    return {line.split()[0]: int(line.split()[1]) for line in m.group(1).splitlines() if line.strip()}


@pytest.fixture(scope="session")
def microbench(tmp_path_factory):
    """microbench(bench, cflags=None) → binary bin/<bench>.X.x, built by `make <BENCH>
    CLASS=X` in a session copy of microbench/src (cflags replaces make.def's CFLAGS)."""
    if not shutil.which("make") or not shutil.which("cc"):
        need_rig("make/cc not installed (bash .ci/setup installs them)")
    root = tmp_path_factory.mktemp("microbench")
    built = {}

    def _build(bench, cflags=None):
        if (bench, cflags) not in built:
            tree = root / f"src{len(built)}"
            shutil.copytree(REPO / "microbench" / "src", tree,
                            ignore=shutil.ignore_patterns("build.*", "*.x", "make.def"))
            cmd = ["make", bench.upper(), "CLASS=X"] + ([f"CFLAGS={cflags}"] if cflags else [])
            r = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
            assert r.returncode == 0, r.stdout + r.stderr
            built[(bench, cflags)] = tree / "bin" / f"{bench}.X.x"
        return built[(bench, cflags)]
    return _build


# -- the reference study's platforms, and one experiment expanded on them ---------------
@pytest.fixture(scope="session")
def platforms():
    from numaplace.machine.topology import load_platform
    return {n: load_platform(REPO / "config" / "platforms" / f"{n}.yaml")
            for n in ("x4600", "magny-cours", "nehalem")}


def expand(topo, exp, defaults=None):
    from numaplace.plan.expand import expand_experiment
    return expand_experiment({"name": "t", **exp}, defaults or {}, topo, "study.yaml", "experiments[0]")


# -- small machines for the plan's tests (test_placement, test_expand, test_memory_specs) --
ONE = Topology("one", {0: [0, 1]}, {0: 100})
TWO = Topology("two", {0: [0, 1], 1: [2, 3]}, {0: 100, 1: 100})
# two nodes of two cores, each core two hardware threads (c and c + 4)
SMT = Topology("smt", {0: [0, 1, 4, 5], 1: [2, 3, 6, 7]}, siblings={c: (c % 4, c % 4 + 4) for c in range(8)})


# -- speed classes: every test is exactly one of unit, workflow, rig (tests/MARKERS.md) ----
#   pytest -m unit          the fast loop (pure logic, < ~1 s each, under a minute in all)
#   pytest -m workflow      runs Snakemake or the numaplace command, or builds binaries
#   pytest -m rig           needs a real rig (NUMA VM, Slurm/Torque, NASA's tarballs,
#                           valgrind, Chromium, root to drop to user nobody)
#   pytest -m "not rig"     what a developer's machine can run
# The first rule that holds decides (first match wins):
#   0. the test (or its module: `pytestmark = pytest.mark.workflow`) declares one: kept;
#   1. rig       its module is in RIG_MODULES, or it uses a fixture in RIG_FIXTURES, or it
#                reaches a function in RIG_CALLS;
#   2. workflow  its module is in WORKFLOW_MODULES, or it uses a fixture in
#                WORKFLOW_FIXTURES, or it reaches a function in WORKFLOW_CALLS or a command
#                word in WORKFLOW_COMMANDS, or it is in SLOW_TESTS;
#   3. unit      otherwise.
# "Uses a fixture" counts the fixtures' own fixtures. "Reaches": the code of the test, of a
# fixture it uses, or of a function of tests/ that these call (followed by name) names the
# function, or holds the command word as a string of its own, as in
# [sys.executable, "-m", "snakemake", ...] or ["make", "CG", "CLASS=S"].
CLASSES = {
    "unit": "pure logic: no Snakemake, no numaplace command, no build beyond cached ones, "
            "no rig; under ~1 s each (pytest -m unit is the fast loop)",
    "workflow": "runs Snakemake or the numaplace command, or builds NPB/microbench binaries",
    "rig": "needs a real rig: the NUMA VM, Slurm and its Torque wrappers, NASA's NPB tarballs, "
           "valgrind, Chromium, or root to run as user nobody",
}
RIG_MODULES = {"test_numa_vm", "test_numa_vm_system", "test_memory_numa_vm", "test_numa_vm_servers"}
RIG_FIXTURES = {"slurm", "nasa_npb", "official_build"}
RIG_CALLS = {"find_chromium",          # tests/browser/cdp.py: a real Chromium
             "_as_nobody"}             # test_system.py: root, to drop to user nobody
WORKFLOW_MODULES = {"test_workflow", "test_faults", "test_memory_workflow"}
WORKFLOW_FIXTURES = {"npb_build", "numaplace_wheel", "microbench"}
WORKFLOW_CALLS = {"run_snakemake", "copy_workflow", "snakemake",
                  "make_figures"}      # every figure of a study, drawn by matplotlib: seconds
WORKFLOW_COMMANDS = {"snakemake", "numaplace", "make"}
# run no command, yet measured at over ~1 s each on this 2-core machine ("file.py::name";
# better declared in the test file itself with @pytest.mark.workflow)
SLOW_TESTS = {"test_report.py::test_figures_survive_long_labels",
              "test_numa_maps.py::test_sampler_sees_a_child_footprint_and_threads"}


def pytest_configure(config):
    for name, what in CLASSES.items():
        config.addinivalue_line("markers", f"{name}: {what}")


def _reached(code, func_globals, seen):
    """(names, strings) in code and its nested code, and in the code of the functions
    defined under tests/ that it names (followed through their module's globals)."""
    names, strings = set(), set()
    if code in seen:
        return names, strings
    seen.add(code)
    names |= set(code.co_names)
    consts = list(code.co_consts)
    while consts:
        const = consts.pop()
        if isinstance(const, str):
            strings.add(const)
        elif isinstance(const, (tuple, frozenset)):
            consts.extend(const)
        elif hasattr(const, "co_names"):
            n, s = _reached(const, func_globals, seen)
            names |= n
            strings |= s
    for name in code.co_names:
        called = func_globals.get(name)
        inner = getattr(called, "__code__", None)
        if inner is not None and Path(inner.co_filename).is_relative_to(REPO / "tests"):
            n, s = _reached(inner, called.__globals__, seen)
            names |= n
            strings |= s
    return names, strings


def _reached_by(item):
    """_reached from the test function and from every fixture it uses."""
    funcs = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)        # pytest Function items (not doctests)
    for defs in (info.name2fixturedefs.values() if info else ()):
        funcs += [d.func for d in defs]
    seen, names, strings = set(), set(), set()
    for f in funcs:
        f = getattr(f, "__wrapped__", f)
        if getattr(f, "__code__", None) is not None:
            n, s = _reached(f.__code__, f.__globals__, seen)
            names |= n
            strings |= s
    return names, strings


def speed_class(item):
    """unit, workflow or rig, by the rules above (a class the test declares wins)."""
    declared = [m for m in CLASSES if item.get_closest_marker(m)]
    if declared:
        return declared[0]
    module = item.path.stem
    fixtures = set(getattr(item, "fixturenames", ()))
    names, strings = _reached_by(item)
    listed = f"{item.path.name}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS
    if module in RIG_MODULES or fixtures & RIG_FIXTURES or names & RIG_CALLS:
        return "rig"
    if (module in WORKFLOW_MODULES or fixtures & WORKFLOW_FIXTURES or names & WORKFLOW_CALLS
            or strings & WORKFLOW_COMMANDS or listed):
        return "workflow"
    return "unit"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if not any(item.get_closest_marker(m) for m in CLASSES):
            item.add_marker(speed_class(item))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`pytest -n 2 tests` (the README's test command): two streams, the NUMA VM's guests
    (TCG, about one host core for ~10 min) on one worker and every other test on the
    other, in their usual order. Host tests never run beside each other (they share the
    machine lock, its idle check and timing margins), only beside QEMU. (xdist's
    loadgroup would do this, but its group suffix is lost under pytest 9's node ids.)"""
    from xdist.scheduler import LoadScopeScheduling

    class VMAndHost(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            module = Path(nodeid.split("::", 1)[0]).stem
            return "numa-vm" if module in RIG_MODULES else "host"

    return VMAndHost(config, log)
