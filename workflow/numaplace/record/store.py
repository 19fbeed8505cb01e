"""Run records: their format (schemas/record.schema.yaml, checked where a record is read,
never at write time, where a check could only lose a measurement; older versions migrated
on read), writing them so that
nothing measured is lost, reading them, and setting failed ones aside so Snakemake runs
them again.

A record is never deleted: a re-run or a retry moves it (and the run's files) into
runs/<run-id>/attempts/<n>/ (set_aside, the one helper for both), where aggregation still
finds and counts it.
"""
from __future__ import annotations

import json
import os
import stat
import sys
from functools import lru_cache
from pathlib import Path

from numaplace.kinds import kind

VERSION = 2
from numaplace.core.schema import SCHEMA_DIR

SCHEMA = SCHEMA_DIR / "record.schema.yaml"
# KEPT: a second name (hard link) of every record written: when Snakemake deletes
# record.json to run the job again (its write protection does not stop root, nor
# --forcerun), the measurement survives under it and is set aside as an attempt. A record
# without it (older, or the link removed) gets it as the workflow starts (keep_records).
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


class Record(dict):
    """A run record as readers take it: the stored JSON, migrated to VERSION (migrate, the
    one place older records are converted), with where it was found, and its fields as
    typed attributes. A dict still, so that code and tests holding a plain record dict
    read it alike (Record.of wraps one)."""

    @classmethod
    def of(cls, rec):
        return rec if isinstance(rec, Record) else cls(rec)

    run_id = property(lambda self: self.get("run_id"))
    bench = property(lambda self: self.get("bench"))
    cls = property(lambda self: self.get("class"))
    variant = property(lambda self: self.get("variant"))
    rep = property(lambda self: self.get("rep"))
    status = property(lambda self: self.get("status"))
    placement = property(lambda self: self.get("placement") or {})
    captures = property(lambda self: self.get("captures") or {})
    topology = property(lambda self: self.get("topology") or {})
    system = property(lambda self: self.get("system") or {})
    path = property(lambda self: self.get("_path"))            # where iter_records found it
    attempt = property(lambda self: self.get("_attempt_n"))    # attempts/<n>/ (attempt_of), else None
    is_attempt = property(lambda self: bool(self.get("_attempt")))

    @property
    def output(self):
        """The parsed output: the record's own, else parsed again by its kind from the
        stdout beside it (a record whose output was not kept parsed); None when neither."""
        if self.get("output"):
            return self["output"]
        stdout = Path(self.path).parent / "stdout" if self.path else None
        if stdout is None or not stdout.exists() or not self.bench:
            return None
        return kind(self.bench).parse(stdout.read_text(errors="replace"))

    def node_of(self):
        """cpu → NUMA node of the machine the run was on (its record's topology)."""
        from numaplace.core.cpulist import parse_cpulist
        nodes = self.topology.get("nodes") or {}
        return {c: int(n) for n, cl in nodes.items() if cl for c in parse_cpulist(cl)}.get


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
    """Written atomically, write-protected, and under its second name KEPT. Not checked against the schema
    here: a record is a measurement and is kept whatever its shape; readers check it
    (read_record), and one that does not match is shown as unreadable, never dropped.
    (Checking here could only lose what was measured, and importing jsonschema alone
    costs twice the launch overhead a run may have.)"""
    path = Path(path)
    # a name of this process's own: a writer killed between chmod and replace leaves its
    # tmp read-only, and a shared name would then refuse every later record of the run
    # (PermissionError for a non-root user). The same pid's leftover is a dead process's.
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    tmp.write_text(json.dumps(rec, indent=1, sort_keys=False))
    # write-protected, as Snakemake protects an output: no rule declares a record (a
    # chunk of runs writes them), and an editor or a script should not change one in place
    os.chmod(tmp, stat.S_IMODE(os.stat(tmp).st_mode) & ~0o222)
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
    return Record(validate(migrate(rec), str(path)))


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
            rec = Record({"run_id": path.parent.name if path.parent.parent.name == "runs" else
                          path.parents[2].name, "status": "unreadable",
                          "reason": f"{e}; to run it again: numaplace retry-failed {results_dir} --status unreadable"})
        rec["_path"] = str(path)
        rec["_attempt_n"] = attempt_of(path.relative_to(runs))
        rec["_attempt"] = rec["_attempt_n"] is not None
        yield rec


def _next_attempt(rundir):
    """A new, empty runs/<id>/attempts/<n>/: n one above the highest number there (a gap
    left by a removed attempt is never reused), made by mkdir alone, so that two
    set-asides at once never share one (EEXIST: the next number)."""
    attempts = Path(rundir) / "attempts"
    attempts.mkdir(parents=True, exist_ok=True)
    while True:
        taken = [0]
        for p in attempts.iterdir():
            try:
                taken.append(int(p.name))
            except ValueError:
                pass
        dest = attempts / str(max(taken) + 1)
        try:
            dest.mkdir()
            return dest
        except FileExistsError:
            continue


def _new_dir(path):
    """A new folder at path, or at path-2, path-3, ... when that is taken (mkdir alone)."""
    path, n = Path(path), 1
    while True:
        try:
            name = path if n == 1 else path.with_name(f"{path.name}-{n}")
            name.mkdir(parents=True)
            return name
        except FileExistsError:
            n += 1


def _free_name(path):
    """path, or path-2, path-3, ... (before the suffix): the first name not taken."""
    path, n = Path(path), 1
    while os.path.lexists(name := path if n == 1 else path.with_name(f"{path.stem}-{n}{path.suffix}")):
        n += 1
    return name


def _reads(path):
    try:
        read_record(path)
        return True
    except RecordError:
        return False


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def set_aside(rundir):
    """Set aside the files of a run's folder (all but attempts/ and interrupted/), the one
    way a run's earlier attempt is moved before it is made again (numaplace run, retry-failed).

    With a record (record.json, or KEPT alone: Snakemake removed record.json to run the
    job again) they go to attempts/<n>/, the record as record.json; an interrupted
    attempt (no record) goes to interrupted/<when>/, not mixed in. Nothing is deleted
    but KEPT when it is a second name of the record.json moved. When record.json and KEPT
    are two different files, both stay: the one that reads is the attempt's record.json,
    the other beside it (record.unreadable.json, or record.kept.json when both read or
    neither does). Returns the folder they went to, or None when there was nothing."""
    import shutil              # here: most runs start in an empty folder (shutil is slow to import)
    rundir = Path(rundir)
    if not rundir.is_dir():
        return None
    leftovers = [p for p in rundir.iterdir() if p.name not in ("attempts", "interrupted")]
    if not leftovers:
        return None
    record, kept = rundir / "record.json", rundir / KEPT
    names = {}                 # leftover name -> its name in the attempt
    # a dangling link named record.json is a record that does not read, not none: else
    # it and KEPT would both claim the attempt's record.json, in directory order
    if (record.exists() or record.is_symlink()) and kept.exists():
        if _same_file(record, kept):
            kept.unlink()      # a second name of the record that moves: nothing is lost
            leftovers.remove(kept)
        elif not _reads(record) and _reads(kept):
            names = {KEPT: "record.json", "record.json": "record.unreadable.json"}
    elif kept.exists():
        names = {KEPT: "record.json"}
    if record.exists() or kept.exists():
        dest = _next_attempt(rundir)
    else:
        import datetime as dt
        dest = _new_dir(rundir / "interrupted" / dt.datetime.now().strftime("%Y%m%dT%H%M%S"))
    # every name in the attempt is a free one (an earlier restore_kept may have left a
    # record.unreadable.json that record.json is renamed to): nothing is overwritten; the
    # attempt's record takes record.json first
    for p in sorted(leftovers, key=lambda p: names.get(p.name, p.name) != "record.json"):
        target = _free_name(dest / names.get(p.name, p.name))
        if target.name == "record.json" and not p.is_symlink():   # KEPT too, when it is the record
            try:               # Snakemake write-protects finished records
                os.chmod(p, p.stat().st_mode | stat.S_IWUSR)
            except OSError:    # another user's record: it moves as it is
                pass
        shutil.move(str(p), target)
    return dest


def keep_records(results_dir):
    """Give every current record of a study its second name KEPT where it has none
    (records written before KEPT existed, or whose KEPT was removed), so that a record
    Snakemake deletes to run its job again (--forcerun, or as root) is still set aside
    as an attempt by the run that replaces it. Called as a workflow starts, before
    Snakemake removes any output. A KEPT that is another file than record.json (record.json
    rewritten as a new file: an editor, a copy from a backup) is moved aside under a free
    name (record.kept-2.json, ...) and record.json linked as KEPT, so that both are kept;
    unless record.json does not read while KEPT does: restore_kept's case, left to it.
    Returns the records linked; one that cannot be (another user's, a read-only disk) is
    left as it is: Snakemake cannot remove it either."""
    linked = []
    runs = Path(results_dir) / "runs"
    if not runs.is_dir():
        return linked
    for entry in os.scandir(runs):
        record = Path(entry.path) / "record.json"
        kept = record.parent / KEPT
        if not record.exists():
            continue
        try:
            if os.path.lexists(kept):
                if _same_file(record, kept) or (not _reads(record) and _reads(kept)):
                    continue
                _move_aside(kept)
            os.link(record, kept)
            linked.append(record)
        except OSError:
            pass
    return linked


def _move_aside(path):
    """Rename path to the first free name _free_name gives beside it, never overwriting
    (a hard link made first, which fails on a taken name, then path unlinked)."""
    while True:
        try:
            os.link(path, aside := _free_name(path), follow_symlinks=False)
            break
        except FileExistsError:
            continue
    os.unlink(path)
    return aside


def restore_kept(rundir):
    """A run whose record.json does not read while its KEPT is another file that does
    (record.json was replaced, not rewritten in place): KEPT is the measurement. It
    becomes record.json again; the copy that does not read is kept beside it, as
    record.unreadable.json. Returns the restored record, or None."""
    rundir = Path(rundir)
    record, kept = rundir / "record.json", rundir / KEPT
    if not (record.exists() and kept.exists()) or _same_file(record, kept) or _reads(record):
        return None
    try:
        rec = read_record(kept)
    except RecordError:
        return None
    record.rename(_free_name(rundir / "record.unreadable.json"))
    os.link(kept, record)
    return rec


# statuses that are no failure: an ok run, and one adaptive repetitions found not needed
# (numaplace.judge.separation); retry-failed leaves them by default, the workflow's last
# lines count neither as failed
NOT_FAILED = ("ok", "not-needed")


def set_aside_failed(results_dir, statuses=None, say=None):
    """Set aside the current records of a study whose status is in `statuses` (None:
    every status but ok and not-needed; an empty list: none, never "no filter"), so that Snakemake
    measures those runs again; returns [(run id, status)] of those set aside. An
    unreadable record.json beside an intact KEPT is no failed run: KEPT is restored
    (said through `say`, default stderr) and judged by its own status."""
    if say is None:
        def say(line):
            sys.stderr.write(line + "\n")
    wanted = (lambda s: s not in NOT_FAILED) if statuses is None else (lambda s: s in statuses)
    moved = []
    for rec in iter_records(results_dir):
        rundir = Path(rec["_path"]).parent
        if rec["status"] == "unreadable":
            restored = restore_kept(rundir)
            if restored is not None:
                say(f"restored {rec['run_id']} ({restored['status']}) from its intact {rundir / KEPT}; "
                    f"the copy that did not read is kept as {rundir}/record.unreadable*.json")
                rec = {**restored, "_path": rec["_path"]}
        if not wanted(rec["status"]):
            continue
        set_aside(rundir)
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


# -- how a workflow ended -------------------------------------------------------------

def _status_of(path):
    """A record's status, read without the schema (the workflow's last step reads them
    all: a status is enough); unreadable when it does not read as a JSON object."""
    try:
        rec = json.loads(Path(path).read_text())
        return rec.get("status") or "unreadable", rec.get("reason")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return "unreadable", f"{path} does not read as a record"


def workflow_outcome(study, records, builds, report_dir, runs_made=True, builds_made=True, shown=5):
    """The workflow's last lines about the study and whether it failed: (lines, failed).

    Failed and unverified runs are data (their records stay, the report lists them),
    yet the console says how many there are and where to read why. The study failed
    (the workflow exits non-zero) when a build it needed failed, or when none of its runs
    succeeded; the last line then names the log or record to read. `records`, `builds`:
    the study's planned run records and build records; `runs_made`, `builds_made`: this
    invocation made (or was asked for) the runs, the builds."""
    lines, why = [], None
    failed_builds = []
    for path in builds:
        try:
            b = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            continue
        if isinstance(b, dict) and b.get("status") != "ok":
            failed_builds.append(b)
    if failed_builds:
        lines.append(f"numaplace: {len(failed_builds)} of {len(builds)} builds of study {study} failed:")
        for b in failed_builds[:shown]:
            reason, log = b.get("reason") or "no reason recorded", b.get("log")
            lines.append(f"  {b.get('bench')}.{b.get('class')} ({b.get('variant')}): {reason}"
                         + (f" (log: {log})" if log and str(log) not in reason else ""))
        if len(failed_builds) > shown:
            lines.append(f"  ... and {len(failed_builds) - shown} more")
        if builds_made:
            why = f"{len(failed_builds)} build(s) failed; read the build log {failed_builds[0].get('log')}"
    statuses, bad, missing = {}, [], 0
    for path in records:
        if not Path(path).exists():
            missing += 1
            continue
        status, reason = _status_of(path)
        statuses[status] = statuses.get(status, 0) + 1
        if status not in NOT_FAILED:
            bad.append((path, status, reason))
    n, ok = len(records), statuses.get("ok", 0)
    skipped = statuses.get("not-needed", 0)
    not_needed = f"; {skipped} not needed (adaptive repetitions: their case was decided)" if skipped else ""
    if n and (runs_made or n - missing):
        if bad:
            counts = ", ".join(f"{s}: {k}" for s, k in sorted(statuses.items()) if s not in NOT_FAILED)
            lines.append(f"numaplace: {len(bad)} of {n} runs of study {study} failed ({counts}){not_needed}; they stay "
                         f"in the report ({report_dir}/summary.md: Failed and unverified runs); why, in "
                         f"each one's record.json:")
            for path, status, reason in bad[:shown]:
                lines.append(f"  {path}: {status}" + (f": {str(reason)[:200]}" if reason else ""))
            if len(bad) > shown:
                lines.append(f"  ... and {len(bad) - shown} more")
        if missing and runs_made:
            lines.append(f"numaplace: {missing} of {n} runs of study {study} have no record (not measured, "
                         "or their job failed: see Snakemake's messages above)")
        if not bad and not missing:
            lines.append(f"numaplace: {ok} of {n} runs of study {study} ok{not_needed}")
        if runs_made and ok == 0 and why is None:
            first = bad[0][0] if bad else None
            stderr = Path(first).parent / "stderr" if first else None
            why = "no run succeeded" + (f"; read {first} (its reason)" if first else "") + \
                (f" and {stderr}" if stderr and stderr.exists() else "")
    if why:
        lines.append(f"numaplace: study {study} failed: {why}")
    return lines, why is not None
