# Load and check the study before anything is built or run; name the files and runs.
import json
import shlex
import sys
from pathlib import Path

WORKFLOW_DIR = str(Path(workflow.basedir) / "workflow")
sys.path.insert(0, WORKFLOW_DIR)

from numaplace import ConfigError
from numaplace.study import Study

import yaml
from snakemake.exceptions import WorkflowError

if workflow.configfiles:
    _STUDY_FILE = workflow.configfiles[-1]
else:
    # the embedded default study; not a `configfile:` directive, so that keys of the
    # default never leak into a study given with --configfile
    _STUDY_FILE = str(Path(workflow.basedir) / "config" / "config.yaml")
    config.update(yaml.safe_load(open(_STUDY_FILE)))

try:
    STUDY = Study(config, _STUDY_FILE, Path(workflow.basedir) / "config")
except ConfigError as e:
    raise WorkflowError(f"invalid study: {e}") from None

PY = sys.executable
RESULTS = f"results/{STUDY.name}"
BUILD_DIR = f"results/build/{STUDY.build_key()}"
PLAN = f"{RESULTS}/plan.tsv"


def binary_path(bench, cls, variant):
    return f"{BUILD_DIR}/{variant}/bin/{bench}.{cls}.x"


BINARIES = [binary_path(b, c, v) for b, c, v in STUDY.binaries()]
RECORDS = [f"{RESULTS}/runs/{r.run_id}/record.json" for r in STUDY.runs]
_RUNS = {r.run_id: r for r in STUDY.runs}

wildcard_constraints:
    run=r"[A-Za-z0-9_.-]+",
    bench="cg|mg",
    cls="[SWABC]",
    variant="default|serial-init|mcmodel-medium",


# the package CLI, run by this interpreter (paths quoted for the shell)
NUMAPLACE = f"PYTHONPATH={shlex.quote(WORKFLOW_DIR)} {shlex.quote(PY)} -m numaplace.cli"
