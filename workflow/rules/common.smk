# Load and check the study before anything is built or run; name the files and runs.
import json
import os
import shlex
import sys
from pathlib import Path

# numaplace is installed in the environment that runs Snakemake (.ci/setup: .venv/). Its
# `numaplace` command sits beside this interpreter: put that first on PATH so the jobs and
# the cluster profiles' submit/status commands find it without an activated venv.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

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

RESULTS = f"results/{STUDY.name}"
BUILD_DIR = f"results/build/{STUDY.build_key()}"
PLAN = f"{RESULTS}/plan.tsv"


def build_record_path(bench, cls, variant):
    # the build's record; the binary, when the build succeeded, is beside it
    return f"{BUILD_DIR}/{variant}/bin/{bench}.{cls}.build.json"


BUILDS = [build_record_path(b, c, v) for b, c, v in STUDY.binaries()]
RECORDS = [f"{RESULTS}/runs/{r.run_id}/record.json" for r in STUDY.runs]
_RUNS = {r.run_id: r for r in STUDY.runs}

wildcard_constraints:
    run=r"[A-Za-z0-9_.-]+",
    bench="cg|mg",
    cls="[SWABC]",
    variant="default|serial-init|mcmodel-medium",


# the package's command (numaplace.cli), found through PATH above
NUMAPLACE = "numaplace"
