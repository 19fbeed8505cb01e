"""Issue 42, item 4: the twelve behaviours that had no test, each with the small realistic
mistake that got through, made by hand. For each mistake: a copy of the package
(workflow/numaplace, as it is in the working tree) gets the mistake, the behaviour's test
runs against the copy (PYTHONPATH puts it before the installed package), and must fail.
The working tree is never edited: other work in it is neither disturbed nor able to
leave a mistake behind. The same tests pass on the copy without the mistake (checked first).

    .venv/bin/python tests/benchmarks/behaviour_bugs.py [names...]   (from the repository root)

Prints one row per mistake: behaviour, test, the mistake (file:line, what), the failure's
first line; exits non-zero when a test does not fail on its mistake.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "workflow" / "numaplace"

# name: (behaviour, package file, text as it is, the mistake, test node ids (spaces between), what it is)
BUGS = {
    "1-least-cost-case": (
        "the answer names the case where the wrong choice costs most",
        "report/answer.py", 'g = g.sort_values("improvement_pct", ascending=False)',
        'g = g.sort_values("improvement_pct", ascending=True)',
        "tests/test_answer_behaviours.py::test_the_answer_names_the_case_where_the_wrong_choice_costs_most",
        "cases ranked ascending: the cheapest case is named"),
    "2-saving-interval-reversed": (
        "the serial-initialisation interval is in order and holds its point",
        "report/answer.py", "ci = cost_interval(fast, slow) if sign > 0 else cost_interval(slow, fast)",
        "ci = cost_interval(fast, slow)",
        "tests/test_answer_behaviours.py::test_the_serial_initialisation_interval_is_in_order_and_holds_its_cost",
        "a saving's interval computed as a cost's (the wrong direction)"),
    "2b-interval-printed-reversed": (
        "the serial-initialisation interval is in order and holds its point",
        "report/answer.py",
        "cost = f\"{sign * r['cost']:.0f} %\" + (f\" [95 % CI {ci[0]:.0f} to {ci[1]:.0f} %]\" if ci else \"\")",
        "cost = f\"{sign * r['cost']:.0f} %\" + (f\" [95 % CI {ci[1]:.0f} to {ci[0]:.0f} %]\" if ci else \"\")",
        "tests/test_answer_behaviours.py::test_the_serial_initialisation_interval_is_in_order_and_holds_its_cost",
        "the interval's ends printed high to low ('25 to -2 %')"),
    "3-compare-speed-up": (
        "`numaplace compare` reports a speed-up beyond noise as well as a slow-down",
        "report/compare.py",
        'apart = r["time_min_s"] > b["time_max_s"] or r["time_max_s"] < b["time_min_s"]',
        'apart = r["time_min_s"] > b["time_max_s"]',
        "tests/test_compare_behaviours.py",
        "only a slower study's ranges count as apart"),
    "4-mwu-ties-between": (
        "Mann-Whitney p with ties between the groups is scipy's exact over every split",
        "core/stats.py", "if len(set(a + b)) == len(a + b):",
        "if len(set(a)) == len(a) and len(set(b)) == len(b):",
        "tests/test_stats_behaviours.py",
        "ties looked for within each group only: scipy's 'exact' (no ties) used, 0.056 for 0.040"),
    "5-k-per-node-unequal": (
        "on unequal nodes 'spread 3/node' is not applicable in one line",
        "plan/expand.py",
        "if t > cores or (k and any(len(topo.node_cpus(n, smt)) < k for n in topo.cpu_nodes)):",
        "if t > cores:",
        "tests/test_plan_behaviours.py::test_k_per_node_on_unequal_nodes_is_not_applicable_in_one_line_never_fewer_threads",
        "the short node not checked: 8 threads labelled 9"),
    "5b-node-of-node-0": (
        "on unequal nodes 'node' is the placement's own node",
        "plan/placement.py", "return len(topo.node_cpus(nodes[0] if node is None else node, smt))",
        "return len(topo.node_cpus(nodes[0], smt))",
        "tests/test_todays_servers.py::test_node_is_the_placements_own_node_on_unequal_nodes",
        "'node' is node 0's cores for every placement"),
    "6-user-affinity-env": (
        "the user's GOMP_CPU_AFFINITY / KMP_AFFINITY / OMP_* never reach the benchmarks",
        "plan/launch.py", 'SCRUBBED_ENV = ("OMP_", "GOMP_", "KMP_", "NPB_TIMER_FLAG", "NUMAPLACE_")',
        'SCRUBBED_ENV = ("OMP_", "NPB_TIMER_FLAG", "NUMAPLACE_")',
        "tests/test_run_behaviours.py",
        "GOMP_ and KMP_ not scrubbed"),
    "7-adaptive-two-rounds": (
        "a budget never cuts an adaptive experiment to 2 rounds (refused instead)",
        "plan/rounds.py", "return self.most > max(3, self.least if self.adaptive else 0)",
        "return self.most > (self.least if self.adaptive else 3)",
        "tests/test_plan_behaviours.py::test_a_budget_never_cuts_an_adaptive_experiment_to_two_rounds",
        "an adaptive max may step down to its min (2)"),
    "8-stream-smallest-size": (
        "STREAM's answer is read at the largest (DRAM) size",
        "kinds/stream.py", '(med["size_bytes"] == med["size_bytes"].max())',
        '(med["size_bytes"] == med["size_bytes"].min())',
        "tests/test_answer_behaviours.py::test_streams_answer_is_read_at_its_largest_size_from_main_memory",
        "the smallest, cache-resident size read"),
    "9-arg-given-twice": (
        "a kind's argument given twice is refused",
        "kinds/microbench.py",
        '        if a in out:\n            raise ConfigError(where, here, f"{a} is given twice',
        '        if False:\n            raise ConfigError(where, here, f"{a} is given twice',
        "tests/test_bad_input.py::test_bad_input_refused_in_one_line[contradictions-membw-flag-twice]",
        "the given-twice check dropped (the last value wins; loadlat's estimate reads the first)"),
    "10-free-mb-kb-as-1000": (
        "free memory per node is read exactly",
        "machine/system.py", "out[f.parent.name[4:]] = int(m.group(1)) // 1024",
        "out[f.parent.name[4:]] = int(m.group(1)) // 1000",
        "tests/test_plan_behaviours.py::test_free_memory_per_node_is_read_exactly_in_mib "
        "tests/test_plan_behaviours.py::test_a_kernel_a_little_larger_than_a_nodes_free_memory_spills",
        "kB divided by 1000: 2.4 % high"),
    "11-group-writable-record": (
        "records are not group-writable under umask 002",
        "record/store.py", "os.fchmod(f.fileno(), stat.S_IMODE(os.fstat(f.fileno()).st_mode) & ~0o222)",
        "os.fchmod(f.fileno(), stat.S_IMODE(os.fstat(f.fileno()).st_mode) & ~0o200)",
        "tests/test_records_behaviours.py",
        "only the owner's write bit taken away"),
    "12-frozen-other-path": (
        "a job reaching the frozen study by another path reads the frozen copy",
        "plan/frozen.py",
        "same = given == named or (given.exists() and named.exists() and os.path.samefile(given, named))",
        "same = given == named",
        "tests/test_plan_behaviours.py::test_a_job_reaching_the_frozen_study_by_another_path_reads_the_frozen_copy",
        "only the same path string counts"),
}


def shadow(root):
    """A copy of the package under root/workflow/numaplace, the rest of the checkout linked."""
    (root / "workflow").mkdir()
    shutil.copytree(PKG, root / "workflow" / "numaplace", ignore=shutil.ignore_patterns("__pycache__"))
    for p in REPO.iterdir():
        if p.name not in ("workflow", ".git", ".venv"):
            (root / p.name).symlink_to(p)
    return root / "workflow"


def pytest(tests, path, timeout=None):
    env = {**os.environ, "PYTHONPATH": str(path), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q",
                           "--tb=short", *tests], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def first_failure(out):
    for line in out.splitlines():
        if line.startswith("E "):
            return line[1:].strip()
    return next((line for line in out.splitlines() if line.startswith(("FAILED", "ERROR"))), "?")


def main(names):
    chosen = {n: BUGS[n] for n in (names or BUGS)}
    with tempfile.TemporaryDirectory() as tmp:
        path = shadow(Path(tmp))
        check = subprocess.run([sys.executable, "-c", "import numaplace; print(numaplace.__file__)"],
                               env={**os.environ, "PYTHONPATH": str(path)}, capture_output=True, text=True)
        assert check.stdout.strip().startswith(str(path)), f"the copy is not the package imported: {check.stdout}"
        clean = pytest(sorted({t for b in chosen.values() for t in b[4].split()}), path)
        if clean.returncode:
            sys.exit(f"the tests fail without a mistake:\n{clean.stdout[-3000:]}")
        rows, missed = [], []
        for name, (behaviour, rel, old, new, test, what) in chosen.items():
            f = path / "numaplace" / rel
            text = f.read_text()
            assert text.count(old) == 1, f"{name}: {rel} holds the text {text.count(old)} times"
            line = text[:text.index(old)].count("\n") + 1
            f.write_text(text.replace(old, new))
            try:
                r = pytest(test.split(), path)
            finally:
                f.write_text(text)
            failed = r.returncode != 0
            if not failed:
                missed.append(name)
            rows.append((behaviour, " ".join(x.split("/")[-1] for x in test.split()), f"{rel}:{line} {what}",
                         first_failure(r.stdout) if failed else "NOT CAUGHT"))
            print(f"{name}: {'fails' if failed else 'NOT CAUGHT'}", file=sys.stderr, flush=True)
    print("| behaviour | test | mistake (file:line, what) | first line of the failure |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(re.sub(r"\|", r"\\|", x)[:300] for x in row) + " |")
    sys.exit(f"not caught: {', '.join(missed)}" if missed else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
