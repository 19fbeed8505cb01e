#!/usr/bin/env bash
# Mutation score of the package's core logic (pyproject's [tool.mutmut] only_mutate:
# placement expansion and symmetry, CPU lists, launchers' argv, the schema, numa_maps and
# NPB output parsing, fidelity, statistics and best/worst, records and retry/set-aside, the
# idle check, PBS status mapping, the budget) against the unit tests (pytest -m unit), with mutmut 3 (slow: not in CI). mutmut wants its sources
# under src/ and numaplace not installed, so this stages a copy in a scratch folder:
#   bash tests/benchmarks/mutation_score.sh [SCRATCH]      (from the repository root)
#   MUTATION_CHILDREN=1 bash tests/benchmarks/mutation_score.sh ...   (one core only)
#   MUTATION_MODULES="workflow/numaplace/tables/explain.py workflow/numaplace/plan/rounds.py" \
#       bash tests/benchmarks/mutation_score.sh ...   (only these of only_mutate's modules,
#       as spelled there, space-separated; default: all of them. aggregate.py keeps its
#       function filter below; the score is then over the selected modules only)
#   MUTATION_DESELECT="tests/test_x.py::test_y tests/test_z.py" ...   (unit tests left out,
#       as pytest --deselect prefixes: only for tests that fail unmutated, e.g. while
#       another change is half done; the run then says which were left out)
set -euo pipefail
repo=$(pwd)
stage=$(realpath -m "${1:-/tmp/numaplace-mutation}")
rm -rf "$stage" && mkdir -p "$stage/src"
cp -r workflow/numaplace "$stage/src/"
# what the unit tests read besides the package: the study files, the pins and conda env
# (test_envs_in_step), the PBS profiles (test_pbs), the bundled NPB and micro-benchmark
# sources (test_npb_kernels), and pyproject.toml itself (its [project] table)
extra=(requirements.txt envs profiles npb microbench)
cp -r tests config "${extra[@]}" "$stage/"
# the shared docs beside the clone (NPB's sample output, test_npb_output): mutmut runs the
# tests in $stage/mutants, so ../shared is $stage/shared
[ -d "$repo/../shared" ] && ln -s "$(realpath "$repo/../shared")" "$stage/shared"
python3 - "$repo/pyproject.toml" "$stage/pyproject.toml" "${extra[@]}" <<'PY'
import os, re, sys, tomllib
text = open(sys.argv[1]).read()
mut = tomllib.loads(text)["tool"]["mutmut"]
# MUTATION_MODULES: a part of only_mutate (mutmut then creates no mutants for the rest)
chosen = os.environ.get("MUTATION_MODULES", "").split()
unknown = [m for m in chosen if m not in mut["only_mutate"]]
if unknown:
    raise SystemExit(f"MUTATION_MODULES: not in [tool.mutmut] only_mutate: {' '.join(unknown)}")
only = [p.replace("workflow/", "src/") for p in mut["only_mutate"] if not chosen or p in chosen]
sel = mut["pytest_add_cli_args_test_selection"]
deselect = [a for t in os.environ.get("MUTATION_DESELECT", "").split() for a in ("--deselect", t)]
copy = ["tests/", "config/"] + [x + ("" if "." in x else "/") for x in sys.argv[3:]]
q = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"
# the repository's pyproject.toml with its [tool.mutmut] table replaced by the stage's
kept = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[|\Z)", "", text)
open(sys.argv[2], "w").write(kept.rstrip("\n") + f"""

[tool.mutmut]
source_paths = ["src/"]
only_mutate = {q(only)}
pytest_add_cli_args_test_selection = {q(sel)}
pytest_add_cli_args = {q(["-p", "no:cacheprovider", "-p", "stage_cwd_guard", "-q"] + deselect)}
also_copy = {q(copy)}
""")
PY
[ -z "${MUTATION_DESELECT:-}" ] || echo "mutation_score.sh: unit tests left out: $MUTATION_DESELECT" >&2
venv="$stage/.venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q -r requirements.txt mutmut==3.8.1
cd "$stage"
# mutmut exits non-zero when it finds survivors; a suite that fails unmutated shows up
# below as mutants "not checked", and then there is no score
# The scope: every function of the modules in pyproject's only_mutate, but of aggregate
# only the statistics per placement and the best/worst choice (its other functions read
# files and shape tables)
mapfile -t scope < <(python3 - "$repo/pyproject.toml" <<'PY'
import os, sys, tomllib
chosen = os.environ.get("MUTATION_MODULES", "").split()
for path in tomllib.load(open(sys.argv[1], "rb"))["tool"]["mutmut"]["only_mutate"]:
    if chosen and path not in chosen:
        continue
    mod = path.removeprefix("workflow/").removesuffix(".py").replace("/", ".")
    if mod == "numaplace.tables.aggregate":
        print("\n".join(f"{mod}.x_{f}__*" for f in ("summary_table", "best_worst_table", "_isnan")))
    else:
        print(f"{mod}.*")
PY
)
# MUTATION_CHILDREN: mutmut's parallel children (default: every core).
# A test's own Python child (test_bad_input's bounded loader) and the `numaplace` command
# that the PBS profile's scripts call (test_pbs) must run the mutated numaplace too: it is
# not installed in this venv (mutmut puts mutants/src on its own sys.path only), so
# PYTHONPATH names it, and child-site/numaplace is the command. The folder must exist
# before mutmut starts, else Python caches the missing entry as unusable and mutmut's own
# imports fail. In such a child, mutmut's statistics pass (MUTANT_UNDER_TEST=stats) would
# need mutmut's config in the child's folder, and its hits are lost with the child anyway:
# child-site/sitecustomize.py runs the child unmutated during that pass only (mutants and
# mutmut's forced-fail check still reach it)
mkdir -p mutants/src child-site
cat > child-site/sitecustomize.py <<'PY'
import os
if os.environ.get("MUTANT_UNDER_TEST") == "stats":
    os.environ["MUTANT_UNDER_TEST"] = ""
PY
# Each test runs in an empty folder of its own (pytest -p stage_cwd_guard): mutmut runs
# the tests in mutants/, and a mutant that turns a run's path into '.' (iter_records'
# _path as "None") would set aside mutants/ itself, sources and results, as an attempt
cat > child-site/stage_cwd_guard.py <<'PY'
import pytest


@pytest.fixture(autouse=True)
def _own_empty_cwd(tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
PY
printf '#!/bin/sh\nexec "%s" -m numaplace "$@"\n' "$venv/bin/python" > child-site/numaplace
chmod +x child-site/numaplace
PATH="$PWD/child-site:$PATH" PYTHONPATH="$PWD/mutants/src:$PWD/child-site${PYTHONPATH:+:$PYTHONPATH}" \
    "$venv/bin/mutmut" run --max-children "${MUTATION_CHILDREN:-$(nproc)}" "${scope[@]}" || true
"$venv/bin/mutmut" results --all true > results.txt
python3 - "${scope[@]}" <<'PY'
import collections, fnmatch, re, sys
counts = collections.Counter()
for line in open("results.txt"):
    m = re.match(r"\s*(\S+): (\w[\w ]*)$", line.rstrip())
    if m and any(fnmatch.fnmatch(m.group(1), pat) for pat in sys.argv[1:]):
        counts[m.group(2)] += 1
killed, total = counts.get("killed", 0), sum(counts.values())
print(dict(counts))
if counts.get("not checked") or not total:
    raise SystemExit(f"no score: {counts.get('not checked', 0)} mutants not checked "
                     "(the selected tests fail without any mutation: see mutmut's output above)")
print(f"mutation score: {killed}/{total} killed = {100 * killed / max(total, 1):.1f}%")
PY
