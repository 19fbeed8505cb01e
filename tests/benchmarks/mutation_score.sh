#!/usr/bin/env bash
# Mutation score of the package's core logic (pyproject's [tool.mutmut] only_mutate:
# placement expansion and symmetry, CPU lists, launchers' argv, the schema, numa_maps and
# NPB output parsing, fidelity, statistics and best/worst, records and retry/set-aside, the
# idle check, PBS status mapping, the budget) against the unit tests (pytest -m unit), with mutmut 3 (slow: not in CI). mutmut wants its sources
# under src/ and numaplace not installed, so this stages a copy in a scratch folder:
#   bash tests/benchmarks/mutation_score.sh [SCRATCH]      (from the repository root)
set -euo pipefail
repo=$(pwd)
stage=${1:-/tmp/numaplace-mutation}
rm -rf "$stage" && mkdir -p "$stage/src"
cp -r workflow/numaplace "$stage/src/"
cp -r tests config "$stage/"
python3 - "$repo/pyproject.toml" "$stage/pyproject.toml" <<'PY'
import sys, tomllib
cfg = tomllib.load(open(sys.argv[1], "rb"))
mut = cfg["tool"]["mutmut"]
only = [p.replace("workflow/", "src/") for p in mut["only_mutate"]]
sel = mut["pytest_add_cli_args_test_selection"]
q = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"
open(sys.argv[2], "w").write(f"""[tool.pytest.ini_options]
pythonpath = ["tests"]
[tool.mutmut]
source_paths = ["src/"]
only_mutate = {q(only)}
pytest_add_cli_args_test_selection = {q(sel)}
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]
also_copy = ["tests/", "config/"]
""")
PY
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
import sys, tomllib
for path in tomllib.load(open(sys.argv[1], "rb"))["tool"]["mutmut"]["only_mutate"]:
    mod = path.removeprefix("workflow/").removesuffix(".py").replace("/", ".")
    if mod == "numaplace.tables.aggregate":
        print("\n".join(f"{mod}.x_{f}__*" for f in ("summary_table", "best_worst_table", "_isnan")))
    else:
        print(f"{mod}.*")
PY
)
"$venv/bin/mutmut" run --max-children "$(nproc)" "${scope[@]}" || true
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
