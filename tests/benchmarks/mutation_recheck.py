"""The survivors of a mutation_score.sh stage, checked again against the repository's tests
as they are now, without a new mutmut run (its stage keeps the mutated package):

    python3 tests/benchmarks/mutation_recheck.py STAGE [OUT.json]      (repository root; J=2)

Every mutant the stage's run left alive (survived, no tests, or timed out) runs the unit
tests of its module (TESTS below, -m unit, -x) with MUTANT_UNDER_TEST set, as mutmut does:
killed when they fail. Per module a baseline run, unmutated, comes first: tests that fail
there (they check a fix made after the stage's snapshot) are deselected, so they kill
nothing here (conservative). Prints per module: mutants checked, killed, survived."""
import collections
import concurrent.futures as cf
import json
import os
import pathlib
import subprocess
import sys

S = pathlib.Path(sys.argv[1]).resolve()
REPO = pathlib.Path.cwd()
TESTS = {
 "cluster/pbs.py": ["test_pbs_submit_and_status.py", "test_pbs.py"],
 "machine/idle.py": ["test_idle.py"],
 "kinds/npb_output.py": ["test_nas_report.py", "test_npb_output.py"],
 "run/numa_maps.py": ["test_numa_maps_lines.py", "test_numa_maps.py"],
 "plan/launch.py": ["test_launch.py"],
 "plan/budget.py": ["test_budget.py"],
 "judge/fidelity.py": ["test_fidelity.py"],
 "plan/memory_specs.py": ["test_memory_specs.py"],
 "core/stats.py": ["test_stats.py"],
 "record/store.py": ["test_store.py", "test_records_kept.py"],
 "core/schema.py": ["test_schema_errors.py"],
 "machine/topology.py": ["test_topology.py"],
 "plan/placement.py": ["test_placement.py"],
 "plan/expand.py": ["test_expand.py"],
 "core/cpulist.py": ["test_cpulist.py"],
}
RECHECK_TIMEOUTS = set(os.environ.get("RECHECK_TIMEOUTS", "").split())
TIMEOUT_S = 120
env0 = dict(os.environ, PATH=f"{S}/child-site:" + os.environ["PATH"],
            PYTHONPATH=f"{S}/mutants/src:{S}/child-site")
def pytest(files, mutant, deselect=(), extra=()):
    cwd = S / "recheck" / (mutant or "baseline")    # an empty folder per run, as in the stage
    cwd.mkdir(parents=True, exist_ok=True)
    args = [f"{S}/.venv/bin/python", "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "unit",
            *extra, *[str(REPO / "tests" / f) for f in files]]
    for d in deselect: args += ["--deselect", d]
    return subprocess.run(args, cwd=cwd, env=dict(env0, MUTANT_UNDER_TEST=mutant), capture_output=True, text=True, timeout=TIMEOUT_S)
out = {}
for mod, files in TESTS.items():
    meta = json.load(open(S / "mutants/src/numaplace" / (mod + ".meta")))["exit_code_by_key"]
    # survivors and no-tests; timeouts only where named (an endless loop would wait here
    # until TIMEOUT_S: mutmut's own timeouts are caught, unless the run was paused then)
    todo = [k for k, v in meta.items() if v in (0, 33) or (v == -24 and k in RECHECK_TIMEOUTS)]
    if not todo: continue
    base = pytest(files, "", extra=["-rf"])
    # FAILED lines name the test from the working folder; --deselect wants its node id
    failing = [l.split()[1].split(f"{REPO.as_posix().lstrip('/')}/", 1)[-1]
               for l in base.stdout.splitlines() if l.startswith("FAILED ")]
    def one(k):
        try:
            p = pytest(files, k, failing, extra=["-x"])
            return k, ("killed" if p.returncode not in (0, 5) else "survived")
        except subprocess.TimeoutExpired:
            return k, "timeout"
    with cf.ThreadPoolExecutor(int(os.environ.get("J", "2"))) as ex:
        res = dict(ex.map(one, todo))
    out[mod] = {"baseline_failing": failing, "before": {k: meta[k] for k in todo}, "now": res}
    c = collections.Counter(res.values())
    print(mod, len(todo), dict(c), "deselected:", len(failing), flush=True)
json.dump(out, open(sys.argv[2] if len(sys.argv) > 2 else S / "recheck.json", "w"), indent=1)
