# Load and check the study before anything is built or run; name the files and runs.
# Every input function and path lives here, so that the files of rules only declare.
import json
import os
import shlex
import sys
from glob import glob
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError

from numaplace import ConfigError
from numaplace import cluster
from numaplace.study import Study

# numaplace is installed in the environment that runs Snakemake (.ci/setup: .venv/). Its
# `numaplace` command sits beside this interpreter: put that first on PATH so the jobs and
# the cluster profiles' submit/status commands find it without an activated venv.
_search_path = os.environ["PATH"]
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), _search_path])

# the report's own config file (numaplace.report.build_html) is no study
_CONFIGFILES = [c for c in workflow.configfiles if not str(c).endswith(".report-answer.yaml")]
if _CONFIGFILES:
    _STUDY_FILE = _CONFIGFILES[-1]
else:
    # the embedded default study; not a `configfile:` directive, so that keys of the
    # default never leak into a study given with --configfile
    _STUDY_FILE = str(Path(workflow.basedir) / "config" / "config.yaml")
    config.update(yaml.safe_load(open(_STUDY_FILE)))

try:
    STUDY = Study({k: v for k, v in config.items() if k != "report_answer"}, _STUDY_FILE,
                  Path(workflow.basedir) / "config")
except ConfigError as e:
    raise WorkflowError(f"invalid study: {e}") from None

ENV = "../../envs/numaplace.yaml"          # conda env of every rule (--sdm conda)

# -- plan, builds, runs ---------------------------------------------------------------
RESULTS = f"results/{STUDY.name}"
BUILD_DIR = f"results/build/{STUDY.build_key()}"
PLAN = f"{RESULTS}/plan.tsv"
LOGS = f"{RESULTS}/logs"


def build_record_path(bench, cls, variant):
    # the build's record; the binary, when the build succeeded, is beside it
    return f"{BUILD_DIR}/{variant}/bin/{bench}.{cls}.build.json"


BUILDS = [build_record_path(b, c, v) for b, c, v in STUDY.binaries()]
RECORDS = [f"{RESULTS}/runs/{r.run_id}/record.json" for r in STUDY.runs]
_RUNS = {r.run_id: r for r in STUDY.runs}


def run_build(wc):
    r = _RUNS[wc.run]
    return build_record_path(r.bench, r.cls, r.variant)


def run_spec(wc):
    return json.dumps(STUDY.run_params(wc.run), sort_keys=True)


# -- tables, figures, report ----------------------------------------------------------
TABLES_DIR = f"{RESULTS}/tables"
TABLES = [f"{TABLES_DIR}/{name}.csv" for name in ("runs", "summary", "best_worst", "numa_pages", "numastat",
                                                  "memory", "memory_matrix")]
REPORT_DIR = f"report/{STUDY.name}"
FIGURES_DIR = f"{REPORT_DIR}/figures"
FIGURE_INDEX = f"{FIGURES_DIR}/figures.csv"
SUMMARY_MD = f"{REPORT_DIR}/summary.md"
REPORT_HTML = f"{REPORT_DIR}/report.html"
REPORT_LOGS = f"{LOGS}/report"


def runs_requested():
    """Does this invocation make runs too (default target, all, runs, a record file)?"""
    targets = workflow.dag_settings.targets
    return not targets or any(t in ("all", "runs") or t.endswith("record.json") for t in targets)


def records_for_tables(wildcards):
    # A record named as measure's output ties the tables to its run: Snakemake would
    # re-run it if the study changed its params. So the planned records are named that
    # way only when this invocation makes the runs anyway (the tables then wait for
    # them); otherwise every record on disk is named by its absolute path, which no
    # rule produces. Set-aside attempts are no rule's output either way. (Switching
    # between the two rebuilds the tables once: their input list changed.)
    current = glob(f"{RESULTS}/runs/*/record.json")
    attempts = glob(f"{RESULTS}/runs/*/attempts/*/record.json")
    if runs_requested():
        planned = set(RECORDS)
        unplanned = [os.path.abspath(r) for r in current if r not in planned]
        return sorted(planned) + sorted(unplanned) + sorted(attempts)
    return sorted(os.path.abspath(r) for r in current) + sorted(attempts)


def figure_dir(kind, caption, title):
    return report(directory(f"{FIGURES_DIR}/{kind}"), patterns=["{figure}.svg"],
                  caption=f"../report/{caption}", category="Figures", subcategory=title)


def parent_of(which, name):
    """A param: the folder of the job's input or output file `name`."""
    def folder(wildcards, input, output):
        files = dict((input if which == "input" else output).items())
        return os.path.dirname(files[name])
    return folder


def report_configfiles():
    return " ".join(f"--configfile {shlex.quote(str(c))}" for c in _CONFIGFILES)
