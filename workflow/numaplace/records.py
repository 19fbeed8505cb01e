"""Run records: their format (schemas/record.schema.yaml, checked where a record is read,
never at write time, where a check could only lose a measurement; older versions migrated
on read), writing them so that
nothing measured is lost, reading them, and setting failed ones aside so Snakemake runs
them again.

A record is never deleted: retry moves it (and the run's files) into
runs/<run-id>/attempts/<n>/, where aggregation still finds and counts it.
"""
from __future__ import annotations

import json
import os
import stat
from functools import lru_cache
from pathlib import Path

from .kinds import kind

VERSION = 2
SCHEMA = Path(__file__).resolve().parent / "schemas" / "record.schema.yaml"
# KEPT: a second name (hard link) of every record written: when Snakemake deletes
# record.json to run the job again (its write protection does not stop root, nor
# --forcerun), the measurement survives under it and is set aside as an attempt.
KEPT = "record.kept.json"


class RecordError(ValueError):
    """A record that does not match the record schema (one line: path and problem)."""


@lru_cache(maxsize=1)
def _validator():
    import jsonschema          # here, not at the top: see schema._strict_validator
    import yaml
    return jsonschema.Draft202012Validator(
        yaml.load(SCHEMA.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))  # noqa: S506


def validate(rec, where="record"):
    from jsonschema.exceptions import best_match
    err = best_match(_validator().iter_errors(
        {k: v for k, v in rec.items() if not k.startswith("_")}))
    if err is not None:
        at = "/".join(map(str, err.absolute_path)) or "(top level)"
        raise RecordError(f"{where}: {at}: {err.message}")
    return rec


def kind_facts(bench):
    k = kind(bench)
    return {"family": k.family, "metric": k.metric, "unit": k.unit, "higher_is_better": k.higher_is_better}


def migrate(rec):
    """A record of an older version, read as the current one. Version 1 (numaplace 0.1,
    0.2): the parsed NPB report was `npb`, the benchmark kind implicit; 0.1 stored a
    fidelity verdict, which is judged afresh where records are read."""
    if rec.get("record_version") == 1:
        rec = dict(rec)
        rec.pop("fidelity", None)
        rec["output"] = rec.pop("npb", None) if "output" not in rec else rec["output"]
        rec["kind"] = kind_facts(rec["bench"])
        rec["record_version"] = VERSION
    return rec


def write_record(path, rec):
    """Written atomically, and under its second name KEPT. Not checked against the schema
    here: a record is a measurement and is kept whatever its shape; readers check it
    (read_record), and one that does not match is shown as unreadable, never dropped.
    (Checking here could only lose what was measured, and importing jsonschema alone
    costs twice the launch overhead a run may have.)"""
    path = Path(path)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rec, indent=1, sort_keys=False))
    os.replace(tmp, path)
    kept = path.parent / KEPT
    kept.unlink(missing_ok=True)
    os.link(path, kept)


def read_record(path):
    """The record at path (migrated, checked); RecordError names the file and what is wrong."""
    path = Path(path)
    try:
        rec = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise RecordError(f"{path}: unreadable record: {e}") from None
    if not isinstance(rec, dict):
        raise RecordError(f"{path}: (top level): not a JSON object")
    return validate(migrate(rec), str(path))


def attempt_of(rel):
    """The attempt number of a record from its path relative to results/<study>/runs:
    <id>/attempts/<n>/record.json → n (0 if <n> is no number); <id>/record.json → None.
    Only the run folder's own attempts/ counts, never a folder above the study."""
    parts = Path(rel).parts
    if len(parts) > 2 and parts[1] == "attempts":
        try:
            return int(parts[2])
        except ValueError:
            return 0
    return None


def iter_records(results_dir, attempts=False):
    """Every record.json under results/<study>/runs (with attempts: set-aside ones too;
    `_attempt` tells them, `_attempt_n` numbers them, see attempt_of)."""
    runs = Path(results_dir) / "runs"
    pattern = "**/record.json" if attempts else "*/record.json"
    for path in sorted(runs.glob(pattern)):
        try:
            rec = read_record(path)
        except RecordError as e:
            # named in the tables and the report, never skipped: `numaplace retry-failed
            # --status unreadable` sets it aside (kept) so that the run is made again
            rec = {"run_id": path.parent.name if path.parent.parent.name == "runs" else
                   path.parents[2].name, "status": "unreadable",
                   "reason": f"{e}; to run it again: numaplace retry-failed {results_dir} --status unreadable"}
        rec["_path"] = str(path)
        rec["_attempt_n"] = attempt_of(path.relative_to(runs))
        rec["_attempt"] = rec["_attempt_n"] is not None
        yield rec


def set_aside_failed(results_dir, statuses=None):
    import shutil              # here: the runner, which imports this module, does without
    moved = []
    for rec in iter_records(results_dir):
        # statuses None: every status but ok; an empty list: none (never "no filter")
        if (statuses is None and rec["status"] == "ok") or (statuses is not None and rec["status"] not in statuses):
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
