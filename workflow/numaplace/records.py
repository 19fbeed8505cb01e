"""Reading run records, and setting failed ones aside so Snakemake runs them again.

A record is never deleted: retry moves it (and the run's files) into
runs/<run-id>/attempts/<n>/, where aggregation still finds and counts it.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

KEPT = "record.kept.json"   # each record's second name (hard link): see runner._write_record


def iter_records(results_dir, attempts=False):
    """Every record.json under results/<study>/runs (with attempts: set-aside ones too)."""
    runs = Path(results_dir) / "runs"
    pattern = "**/record.json" if attempts else "*/record.json"
    for path in sorted(runs.glob(pattern)):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        rec["_path"] = str(path)
        rec["_attempt"] = "attempts" in path.parts
        yield rec


def set_aside_failed(results_dir, statuses=None):
    moved = []
    for rec in iter_records(results_dir):
        if (statuses is None and rec["status"] == "ok") or (statuses and rec["status"] not in statuses):
            continue
        rundir = Path(rec["_path"]).parent
        attempts = rundir / "attempts"
        n = len(list(attempts.glob("*"))) + 1 if attempts.exists() else 1
        dest = attempts / str(n)
        dest.mkdir(parents=True)
        for p in list(rundir.iterdir()):
            if p.name == KEPT:
                p.unlink()
            elif p.name != "attempts":
                if p.name == "record.json":   # Snakemake write-protects finished records
                    os.chmod(p, p.stat().st_mode | stat.S_IWUSR)
                shutil.move(str(p), dest / p.name)
        if rec["status"] == "build-failed":
            _set_aside_failed_build(rec)
        moved.append((rec["run_id"], rec["status"]))
    return moved


def _set_aside_failed_build(rec):
    """Retrying a build-failed run tries its build again: the failed build record is
    renamed (kept beside the log), so Snakemake builds that binary once more."""
    build = Path(rec["binary"]).with_suffix(".build.json")
    if build.exists() and json.loads(build.read_text()).get("status") != "ok":
        n = 1
        while build.with_suffix(f".failed-{n}.json").exists():
            n += 1
        build.rename(build.with_suffix(f".failed-{n}.json"))
