"""Five named mutations of the result logic, applied one at a time (the file is restored
afterwards): each must make a named test fail. Prints the tests that caught each.

    .venv/bin/python tests/benchmarks/named_mutations.py   (from the repository root)
"""
import subprocess, sys
from pathlib import Path
M = {
 "median->mean": ("workflow/numaplace/tables/aggregate.py",
   'ranked = g.sort_values(["time_median_s", "_mops", "placement"], ascending=[True, False, True])',
   'ranked = g.sort_values(["time_mean_s", "_mops", "placement"], ascending=[True, False, True])',
   "tests/test_real_records.py tests/test_aggregate.py"),
 "mops tie-break reversed": ("workflow/numaplace/tables/aggregate.py",
   'ranked = g.sort_values(["time_median_s", "_mops", "placement"], ascending=[True, False, True])',
   'ranked = g.sort_values(["time_median_s", "_mops", "placement"], ascending=[True, True, True])',
   "tests/test_real_records.py tests/test_aggregate.py"),
 "placement additionalProperties removed": ("workflow/numaplace/core/schemas/study.schema.yaml",
   "  placement:\n    type: object\n    additionalProperties: false\n", "  placement:\n    type: object\n",
   "tests/test_placement.py tests/test_bad_input.py"),
 "membind keeps first node": ("workflow/numaplace/plan/placement.py",
   "return cls(policy, tuple(sorted(set(nodes))))", "return cls(policy, tuple(sorted(set(nodes)))[:1] if policy == 'membind' else tuple(sorted(set(nodes))))",
   "tests/test_placement.py tests/test_fidelity.py"),
 "page size only for hugetlb": ("workflow/numaplace/run/numa_maps.py",
   "return {n: p * self.page_kb * 1024 for n, p in self.pages.items()}",
   "return {n: p * (self.page_kb if self.kind == \"huge\" else 4) * 1024 for n, p in self.pages.items()}",
   "tests/test_numa_maps.py tests/test_fidelity.py"),
}
missed = []
for name, (path, old, new, tests) in M.items():
    clean = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests.split()],
                           capture_output=True, text=True)
    if clean.returncode != 0:           # a test that fails unmutated catches nothing
        sys.exit(f"{name}: the tests fail without the mutation:\n{clean.stdout[-2000:]}")
    p = Path(path); orig = p.read_text()
    assert old in orig, name
    p.write_text(orig.replace(old, new, 1))
    try:
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests.split()],
                           capture_output=True, text=True)
    finally:
        p.write_text(orig)
    failed = [l.split(" - ")[0].split(" ", 1)[1] for l in r.stdout.splitlines() if l.startswith(("FAILED", "ERROR"))]
    print(f"{name}: {'CAUGHT by ' + ', '.join(failed) if failed else 'NOT CAUGHT'}")
    if not failed:
        missed.append(name)
sys.exit(f"not caught: {', '.join(missed)}" if missed else 0)
