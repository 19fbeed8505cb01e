"""Progress a person can read, after each measured run: runs recorded of the plan's, and
the machine time the plan estimated for the runs still without a record."""
from __future__ import annotations

import json
import os
from pathlib import Path

from numaplace.core.text import counted


def progress_line(results_dir, just_done=None, measured=()):
    """'numaplace: 12 of 45 runs recorded (r1.c2: 19 ok, 1 failed); about 6 min of runs left', from
    results/<study>/estimate.json (written with the plan) and the records on disk; None
    when there is no estimate to read (a run outside a workflow)."""
    from numaplace.plan.budget import format_duration
    from numaplace.core.artifacts import PLAN_ESTIMATE
    results_dir = Path(results_dir)
    try:
        per_run = json.loads((results_dir / PLAN_ESTIMATE).read_text())["per_run_s"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    runs = results_dir / "runs"
    try:
        started = set(os.listdir(runs))      # one listing; a record is looked for only where a run began
    except OSError:
        started = set()
    left = [s for rid, s in per_run.items()
            if rid not in started or not os.path.exists(runs / rid / "record.json")]
    done = f" ({just_done})" if just_done else ""
    # re-estimated from the runs measured so far (run id, wall seconds): the plan's estimate
    # scaled by how long those took against what it said for them
    pairs = [(per_run[rid], wall) for rid, wall in measured if rid in per_run and wall and per_run[rid] > 0]
    scale = sum(w for _, w in pairs) / sum(e for e, _ in pairs) if pairs else 1.0
    how = f" (the plan's estimate x {scale:.2g}, from {counted(len(pairs), 'run')} measured)" \
        if pairs and abs(scale - 1) > 0.1 else ""
    tail = f"; about {format_duration(sum(left) * scale)} of runs left{how}" if left else ""
    return f"numaplace: {len(per_run) - len(left)} of {counted(len(per_run), 'run')} recorded{done}{tail}"
