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
    counters = property(lambda self: self.get("counters") or {})   # run.counters: perf stat's counts
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


# JOURNAL: a second, independent copy of every record written under runs/<id>/: one line
# per record appended to results/<study>/records.journal, {"sha256", "path" (relative to
# the study), "bytes" (the record's exact text)}, fsynced before the record is renamed into
# place. KEPT is a hard link (one inode): a record truncated in place (a torn write, a
# power loss) is truncated under both names, and the journal is what repairs it
# (check_records, as a workflow starts). A torn last line fails its checksum and is skipped.
JOURNAL = "records.journal"


def _fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:            # a file system that cannot sync a folder: the rename stands
        pass
    finally:
        os.close(fd)


def _journal_key(path):
    """(journal file, key) of a record at results/<study>/runs/<id>/<name>; (None, None)
    for a record elsewhere (a run by hand into any folder)."""
    path = Path(path).absolute()
    if path.parent.parent.name != "runs":
        return None, None
    return path.parents[2] / JOURNAL, f"runs/{path.parent.name}/{path.name}"


def _journal_line(key, data):
    import hashlib
    return (json.dumps({"sha256": hashlib.sha256(data).hexdigest(), "path": key,
                        "bytes": data.decode("utf-8")}) + "\n").encode()


def _journal_append(journal, lines):
    """Append lines to the journal (one write under an flock, then fsync)."""
    import fcntl
    fd = os.open(journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"".join(lines))
        os.fsync(fd)
    finally:
        os.close(fd)


def journal_entries(journal):
    """[(key, sha256, bytes)] of the journal's intact lines, in the order written."""
    import hashlib
    try:
        raw = Path(journal).read_bytes()
    except OSError:
        return []
    out = []
    for line in raw.splitlines():
        try:
            e = json.loads(line)
            data = e["bytes"].encode("utf-8")
            if hashlib.sha256(data).hexdigest() == e["sha256"]:
                out.append((e["path"], e["sha256"], data))
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeError):
            continue           # a torn or damaged line: the others still count
    return out


def write_record(path, rec):
    """Written durably, write-protected, and under its second name KEPT. Not checked against the schema
    here: a record is a measurement and is kept whatever its shape; readers check it
    (read_record), and one that does not match is shown as unreadable, never dropped.
    (Checking here could only lose what was measured, and importing jsonschema alone
    costs twice the launch overhead a run may have.)

    Durably: a temporary file, fsynced; its copy in the study's JOURNAL, fsynced; the
    rename; the folder fsynced. A crash before the rename leaves the earlier record.json
    as it was and this one complete in the temporary file (check_records completes the
    write at the next workflow start); a power loss after it leaves the record, or its
    journal copy to restore it from."""
    path = Path(path)
    # a name of this process's own: a writer killed between chmod and replace leaves its
    # tmp read-only, and a shared name would then refuse every later record of the run
    # (PermissionError for a non-root user). The same pid's leftover is a dead process's.
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    data = json.dumps(rec, indent=1, sort_keys=False).encode()
    with open(tmp, "xb") as f:
        f.write(data)
        f.flush()
        # write-protected, as Snakemake protects an output: no rule declares a record (a
        # chunk of runs writes them), and an editor or a script should not change one in place
        os.fchmod(f.fileno(), stat.S_IMODE(os.fstat(f.fileno()).st_mode) & ~0o222)
        os.fsync(f.fileno())
    journal, key = _journal_key(path)
    if journal is not None:
        _journal_append(journal, [_journal_line(key, data)])
    os.replace(tmp, path)
    kept = path.parent / KEPT
    kept.unlink(missing_ok=True)
    os.link(path, kept)
    _fsync_dir(path.parent)


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


# -- checking every record a study keeps, as a workflow starts -------------------------

def _parses(path):
    """The bytes of path when they read as a JSON object (a record, whatever its shape), else None."""
    try:
        data = Path(path).read_bytes()
        return data if isinstance(json.loads(data), dict) else None
    except (OSError, ValueError):
        return None


def _sha(data):
    import hashlib
    return hashlib.sha256(data).hexdigest()


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:            # another user's process: alive
        pass
    return True


def _install(data, target):
    """data as the file target, durably and write-protected (a tmp, fsync, rename)."""
    target = Path(target)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    with open(tmp, "xb") as f:
        f.write(data)
        f.flush()
        os.fchmod(f.fileno(), 0o444)
        os.fsync(f.fileno())
    os.replace(tmp, target)


def _journal_index(journal):
    """{sha256: key} of the journal's lines, read from each line's head (cheap: a study's
    journal holds every record it ever wrote)."""
    import re
    try:
        raw = Path(journal).read_bytes()
    except OSError:
        return {}
    return {m[1].decode(): m[2].decode() for m in
            re.finditer(rb'^\{"sha256": "([0-9a-f]{64})", "path": "([^"\\]*)"', raw, re.M)}


def check_records(results_dir, restore=True):
    """Every record a study keeps (runs/<id>/record.json, its KEPT, attempts/<n>/record.json),
    checked as a workflow starts, before anything else: each must read as a JSON object.

    A damaged one (truncated in place: both names of one inode; rewritten; a dangling
    link) is restored byte for byte from an independent copy: KEPT when it is another
    file that reads (restore_kept), else its JOURNAL copy (the latest one of its path that
    no other record of the run holds and of which the damaged bytes are a beginning; for
    an attempt only a single such copy). A record a stopped writer left complete in its
    temporary file, with no record.json or KEPT yet (a crash between the write and the
    rename), is put in place. What cannot be restored is named. Damaged bytes that the
    restored copy does not begin with are kept beside it (record.unreadable.json).
    Records without a journal copy (written before it existed) get one.
    With restore=False (a dry run) nothing changes; what would be restored is named too.
    Returns the lines to show."""
    results_dir = Path(results_dir)
    runs = results_dir / "runs"
    if not runs.is_dir():
        return []
    journal = results_dir / JOURNAL
    index = _journal_index(journal)
    entries = None                 # the journal's lines, read only when a record is damaged
    lines, append = [], []
    verb = "restored" if restore else "can restore"

    def candidates(key):
        nonlocal entries
        if entries is None:
            entries = journal_entries(journal)
        return [(sha, data) for k, sha, data in reversed(entries) if k == key]

    for entry in sorted(os.scandir(runs), key=lambda e: e.name):
        if not entry.is_dir(follow_symlinks=False):
            continue
        rundir, rid = Path(entry.path), entry.name
        record, kept, key = rundir / "record.json", rundir / KEPT, f"runs/{rid}/record.json"
        # a write a stopped process left before its rename: complete when nothing replaced it
        for tmp in sorted(rundir.glob("record.json.*.tmp")):
            pid = tmp.name.split(".")[-2]
            if not pid.isdigit() or _alive(int(pid)) or os.path.lexists(record) or os.path.lexists(kept):
                continue
            data = _parses(tmp)
            if data is None:
                continue           # incomplete: set aside with the run's next attempt
            lines.append(f"numaplace: {verb} {record} from {tmp.name}, complete but not yet renamed "
                         f"when its writer stopped")
            if restore:
                os.chmod(tmp, stat.S_IMODE(os.stat(tmp).st_mode) & ~0o222)
                os.replace(tmp, record)
                os.link(record, kept)
                _fsync_dir(rundir)
                if _sha(data) not in index:
                    append.append(_journal_line(key, data))
                    index[_sha(data)] = key
        attempts = sorted(rundir.glob("attempts/*/record.json"))
        held, damaged = set(), []
        for path in [record, kept, *attempts]:
            if not os.path.lexists(path):
                continue
            data = _parses(path)
            if data is None:
                damaged.append(path)
                continue
            held.add(sha := _sha(data))
            if sha not in index and path != kept and restore:
                append.append(_journal_line(key if path == record else
                                            str(path.relative_to(results_dir)), data))
                index[sha] = key
        if kept in damaged and record in damaged and _same_file(record, kept):
            damaged.remove(kept)   # one inode, two names: restored once, relinked
        for path in damaged:
            if _parses(path) is not None:
                continue           # a second name of a record restored just before
            if path == record and os.path.lexists(kept) and not _same_file(record, kept) and _parses(kept):
                lines.append(f"numaplace: {verb} {record} from its intact {kept.name}; the copy that did "
                             f"not read is kept as {rundir}/record.unreadable*.json")
                if restore:
                    restore_kept(rundir)
                continue
            try:
                bad = b"" if path.is_symlink() else path.read_bytes()
            except OSError:
                bad = b""
            found = [(sha, data) for sha, data in candidates(key) + (candidates(str(path.relative_to(results_dir)))
                                                                     if path in attempts else [])
                     if sha not in held]
            begun = [(sha, data) for sha, data in found if data.startswith(bad)]
            if path in attempts:
                pick = begun[0] if len({sha for sha, _ in begun}) == 1 else None
            else:
                pick = (begun or found or [None])[0]
            if pick is None:
                lines.append(f"numaplace: {path} does not read as a record and no intact copy of it is kept; "
                             f"it stays in the report as unreadable; to measure the run again: numaplace "
                             f"retry-failed {results_dir} --status unreadable")
                continue
            sha, data = pick
            lines.append(f"numaplace: {verb} {path} byte for byte from {journal}"
                         + ("" if not bad or data.startswith(bad) else
                            f"; the copy that did not read is kept as {path.parent}/record.unreadable*.json"))
            if not restore:
                continue
            held.add(sha)
            if bad and not data.startswith(bad):
                _move_aside_as(path, path.parent / "record.unreadable.json")
            _install(data, path)
            if path == record and os.path.lexists(kept) and not _same_file(record, kept):
                kept_data = _parses(kept)
                if kept_data is None:       # the damaged inode's second name, or a broken copy
                    try:
                        old = b"" if kept.is_symlink() else kept.read_bytes()
                    except OSError:
                        old = b""
                    if old and not data.startswith(old):
                        _move_aside_as(kept, rundir / "record.unreadable.json")
                    else:
                        kept.unlink()
            if path == record and not os.path.lexists(kept):
                os.link(record, kept)
            _fsync_dir(path.parent)
    if append:
        _journal_append(journal, append)
    return lines


def _move_aside_as(path, name):
    """Rename path to name, or the first free name _free_name gives for it, never overwriting."""
    while True:
        try:
            os.link(path, aside := _free_name(name), follow_symlinks=False)
            break
        except FileExistsError:
            continue
    os.unlink(path)
    return aside


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
