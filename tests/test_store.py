"""Records (numaplace.record.store): the workflow's last lines about a study, retry-failed
and set-aside, reading and writing a record, as a user meets them: each test pins what
the console or the results folder shows, not how the code gets there. Several pin what
the mutation run left alive (tests/benchmarks/mutation-survivors.md names the test that
kills each)."""
from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from numaplace.record import store
from numaplace.record.store import KEPT, workflow_outcome

pytestmark = pytest.mark.unit


# -- workflow_outcome: the last lines of `snakemake` / `numaplace run` --------------------

def _records(tmp_path, *statuses):
    """One record.json per status (None: a planned run without a record; a dict: the
    record as given; a str starting with '!': that text as the file; bytes: those bytes)."""
    paths = []
    for i, st in enumerate(statuses):
        p = tmp_path / "runs" / f"r{i}" / "record.json"
        paths.append(p)
        if st is None:
            continue
        p.parent.mkdir(parents=True)
        if isinstance(st, bytes):
            p.write_bytes(st)
        elif isinstance(st, str) and st.startswith("!"):
            p.write_text(st[1:])
        else:
            p.write_text(json.dumps(st if isinstance(st, dict) else {"status": st}))
    return paths


def _builds(tmp_path, *builds):
    paths = []
    for i, b in enumerate(builds):
        p = tmp_path / "build" / f"b{i}.build.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(b if isinstance(b, str) else json.dumps(b))
        paths.append(p)
    return paths


def test_every_run_ok_is_one_line_and_no_failure(tmp_path):
    lines, failed = workflow_outcome("s", _records(tmp_path, "ok", "ok", "ok"), [], "rep")
    assert (lines, failed) == (["numaplace: 3 of 3 runs of study s ok"], False)


def test_failed_runs_are_counted_by_status_and_listed_with_their_reasons(tmp_path):
    recs = _records(tmp_path, "ok", {"status": "timeout"}, {"status": "failed", "reason": "exit status 1"}, "ok")
    lines, failed = workflow_outcome("s", recs, [], "rep")
    assert lines == [
        "numaplace: 2 of 4 runs of study s failed (failed: 1, timeout: 1); they stay in the report "
        "(rep/summary.md: Failed and unverified runs); why, in each one's record.json:",
        f"  {recs[1]}: timeout",
        f"  {recs[2]}: failed: exit status 1"]
    assert failed is False                   # some runs succeeded: the study did not fail


def test_only_the_first_failed_runs_are_listed_and_long_reasons_cut(tmp_path):
    recs = _records(tmp_path, *[{"status": "failed", "reason": "x" * 300}] * 7, "ok")
    lines, failed = workflow_outcome("s", recs, [], "rep", shown=2)
    assert lines[1:] == [f"  {recs[0]}: failed: {'x' * 200}", f"  {recs[1]}: failed: {'x' * 200}",
                         "  ... and 5 more"]
    assert lines[0].startswith("numaplace: 7 of 8 runs of study s failed (failed: 7);")
    lines, _ = workflow_outcome("s", recs[:2], [], "rep", shown=2)
    assert not any("more" in line for line in lines)


def test_no_run_succeeded_fails_the_study_and_names_the_record_to_read(tmp_path):
    recs = _records(tmp_path, {"status": "failed", "reason": "exit status 2"}, "placement-failed")
    lines, failed = workflow_outcome("s", recs, [], "rep")
    assert failed is True
    assert lines[-1] == f"numaplace: study s failed: no run succeeded; read {recs[0]} (its reason)"
    (recs[0].parent / "stderr").write_text("Segmentation fault\n")
    lines, failed = workflow_outcome("s", recs, [], "rep")
    assert lines[-1] == (f"numaplace: study s failed: no run succeeded; read {recs[0]} (its reason) "
                         f"and {recs[0].parent / 'stderr'}")


def test_runs_without_records(tmp_path):
    """Planned runs with no record: said when this invocation made the runs; a study of
    which nothing was made or kept says nothing about its runs and does not fail."""
    recs = _records(tmp_path, "ok", None, None)
    lines, failed = workflow_outcome("s", recs, [], "rep")
    assert lines == ["numaplace: 2 of 3 runs of study s have no record (not measured, or their job "
                     "failed: see Snakemake's messages above)"]
    assert failed is False
    assert workflow_outcome("s", recs, [], "rep", runs_made=False) == ([], False)
    nothing = _records(tmp_path / "none", None, None)
    assert workflow_outcome("s", nothing, [], "rep", runs_made=False) == ([], False)
    lines, failed = workflow_outcome("s", nothing, [], "rep")
    assert failed is True and lines[-1] == "numaplace: study s failed: no run succeeded"


def test_a_report_only_invocation_never_fails_on_failed_runs(tmp_path):
    recs = _records(tmp_path, "failed")
    lines, failed = workflow_outcome("s", recs, [], "rep", runs_made=False)
    assert failed is False and lines[0].startswith("numaplace: 1 of 1 runs of study s failed (failed: 1)")


@pytest.mark.parametrize("text", ["!{not json", "![1, 2]", '!{"reason": "no status"}', b"\xff\xfe{}"])
def test_a_record_that_does_not_read_is_counted_unreadable(tmp_path, text):
    recs = _records(tmp_path, "ok", text)
    lines, _ = workflow_outcome("s", recs, [], "rep")
    assert "(unreadable: 1)" in lines[0]
    if text == '!{"reason": "no status"}':
        assert lines[1] == f"  {recs[1]}: unreadable: no status"
    else:
        assert lines[1] == f"  {recs[1]}: unreadable: {recs[1]} does not read as a record"


def test_failed_builds_are_listed_with_their_logs_and_fail_the_study(tmp_path):
    builds = _builds(tmp_path,
                     {"status": "ok", "bench": "cg", "class": "A", "variant": "default"},
                     {"status": "failed", "bench": "mg", "class": "B", "variant": "default",
                      "reason": "make exited 2", "log": "logs/mg.B.log"},
                     {"status": "failed", "bench": "cg", "class": "B", "variant": "serial-init",
                      "reason": "see logs/cg.B.log", "log": "logs/cg.B.log"},
                     {"bench": "ft"},
                     "{not json", "[1]")
    recs = _records(tmp_path, "ok")
    lines, failed = workflow_outcome("s", recs, builds, "rep")
    assert lines == ["numaplace: 3 of 6 builds of study s failed:",
                     "  mg.B (default): make exited 2 (log: logs/mg.B.log)",
                     "  cg.B (serial-init): see logs/cg.B.log",
                     "  ft.None (None): no reason recorded",
                     "numaplace: 1 of 1 runs of study s ok",
                     "numaplace: study s failed: 3 build(s) failed; read the build log logs/mg.B.log"]
    assert failed is True
    lines, failed = workflow_outcome("s", recs, builds, "rep", shown=1)
    assert lines[1:3] == ["  mg.B (default): make exited 2 (log: logs/mg.B.log)", "  ... and 2 more"]
    # builds this invocation did not make (a report of earlier results): said, not failed
    lines, failed = workflow_outcome("s", recs, builds, "rep", builds_made=False)
    assert failed is False and lines[0] == "numaplace: 3 of 6 builds of study s failed:"


def test_failed_build_and_no_run_succeeded_names_the_build_log(tmp_path):
    builds = _builds(tmp_path, {"status": "failed", "bench": "cg", "class": "A", "variant": "default",
                                "log": "logs/cg.A.log"})
    recs = _records(tmp_path, {"status": "build-failed", "reason": "the build failed"})
    lines, failed = workflow_outcome("s", recs, builds, "rep")
    assert failed is True
    assert lines[-1] == "numaplace: study s failed: 1 build(s) failed; read the build log logs/cg.A.log"
    assert lines[1] == "  cg.A (default): no reason recorded (log: logs/cg.A.log)"


def test_a_study_without_builds_or_runs_says_nothing(tmp_path):
    assert workflow_outcome("s", [], [], "rep") == ([], False)
    assert workflow_outcome("s", [], [tmp_path / "missing.build.json"], "rep") == ([], False)


# -- retry-failed and set-aside -----------------------------------------------------------

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "records" / "results" / "fixture"
RID = "cg.A.default.c0-3_loc_p_nc.r2"


def a_record(status="ok", **fields):
    return {**store.read_record(FIXTURE / "runs" / RID / "record.json"), "status": status, **fields}


def written(root, rec, rid=RID):
    """A run folder as the runner leaves it: record.json (+ KEPT), write-protected."""
    rundir = root / "runs" / rid
    rundir.mkdir(parents=True, exist_ok=True)
    store.write_record(rundir / "record.json", rec)
    (rundir / "stdout").write_text("NPB output\n")
    return rundir


def replaced_by_garbage(rundir):
    """record.json replaced (not rewritten in place) by a copy that does not read: an
    editor, a half-copied backup. KEPT still holds the measurement."""
    (rundir / "record.json").unlink()
    (rundir / "record.json").write_text('{"run_id": "half a rec')


def test_a_written_record_is_write_protected_but_readable(tmp_path):
    rundir = written(tmp_path, a_record())
    mode = stat.S_IMODE(os.stat(rundir / "record.json").st_mode)
    assert mode & 0o222 == 0 and mode & 0o444 == 0o444
    assert os.path.samefile(rundir / "record.json", rundir / KEPT)
    assert not list(rundir.glob("*.tmp"))


def test_retry_restores_an_intact_kept_record_instead_of_setting_an_ok_run_aside(tmp_path, capsys):
    rundir = written(tmp_path, a_record("ok"))
    replaced_by_garbage(rundir)
    assert store.set_aside_failed(tmp_path) == []
    err = capsys.readouterr().err
    assert err == (f"restored {RID} (ok) from its intact {rundir / KEPT}; the copy that did not read "
                   f"is kept as {rundir}/record.unreadable*.json\n")
    assert store.read_record(rundir / "record.json")["status"] == "ok"
    assert (rundir / "record.unreadable.json").read_text() == '{"run_id": "half a rec'
    assert not (rundir / "attempts").exists()


def test_retry_judges_a_restored_record_by_its_own_status(tmp_path):
    rundir = written(tmp_path, a_record("timeout", reason="timed out after 60 s"))
    replaced_by_garbage(rundir)
    said = []
    assert store.set_aside_failed(tmp_path, ["timeout"], say=said.append) == [(RID, "timeout")]
    assert len(said) == 1 and said[0].startswith(f"restored {RID} (timeout) from its intact")
    assert store.read_record(rundir / "attempts" / "1" / "record.json")["status"] == "timeout"
    assert (rundir / "attempts" / "1" / "record.unreadable.json").exists()
    assert not (rundir / "record.json").exists()


def test_an_unreadable_record_without_a_kept_copy_is_set_aside_as_unreadable(tmp_path):
    rundir = written(tmp_path, a_record("ok"))
    (rundir / KEPT).unlink()
    replaced_by_garbage(rundir)
    said = []
    assert store.set_aside_failed(tmp_path, say=said.append) == [(RID, "unreadable")]
    assert said == [] and (rundir / "attempts" / "1" / "record.json").read_text() == '{"run_id": "half a rec'


def test_a_restored_copy_never_overwrites_an_earlier_unreadable_one(tmp_path):
    rundir = written(tmp_path, a_record("ok"))
    (rundir / "record.unreadable.json").write_text("an earlier one")
    replaced_by_garbage(rundir)
    assert store.restore_kept(rundir)["status"] == "ok"
    assert (rundir / "record.unreadable.json").read_text() == "an earlier one"
    assert (rundir / "record.unreadable-2.json").read_text() == '{"run_id": "half a rec'


def test_restore_kept_leaves_a_run_alone_unless_its_record_is_broken(tmp_path):
    rundir = written(tmp_path, a_record("ok"))
    assert store.restore_kept(rundir) is None                      # the same file
    (rundir / KEPT).unlink()
    assert store.restore_kept(rundir) is None                      # no KEPT
    (rundir / KEPT).write_text((rundir / "record.json").read_text())
    assert store.restore_kept(rundir) is None                      # another file, but record.json reads
    replaced_by_garbage(rundir)
    (rundir / KEPT).write_text("also broken")
    assert store.restore_kept(rundir) is None                      # neither reads
    (rundir / "record.json").unlink()
    assert store.restore_kept(rundir) is None and not (rundir / "record.json").exists()


def test_retrying_a_build_failed_run_sets_its_failed_build_record_aside(tmp_path):
    binary = tmp_path / "build" / "bin" / "cg.A.x"
    binary.parent.mkdir(parents=True)
    build = binary.parent / "cg.A.build.json"
    build.write_text(json.dumps({"status": "failed", "reason": "make exited 2"}))
    written(tmp_path, a_record("build-failed", binary=str(binary)))
    assert store.set_aside_failed(tmp_path) == [(RID, "build-failed")]
    assert not build.exists()
    assert json.loads((binary.parent / "cg.A.build.failed-1.json").read_text())["reason"] == "make exited 2"
    # its build fails again: the next retry keeps both failed build records
    build.write_text(json.dumps({"status": "failed", "reason": "make exited 3"}))
    written(tmp_path, a_record("build-failed", binary=str(binary)))
    store.set_aside_failed(tmp_path)
    assert sorted(p.name for p in binary.parent.iterdir()) == ["cg.A.build.failed-1.json", "cg.A.build.failed-2.json"]
    assert json.loads((binary.parent / "cg.A.build.failed-2.json").read_text())["reason"] == "make exited 3"


def test_a_build_that_succeeded_since_is_not_built_again(tmp_path):
    binary = tmp_path / "bin" / "cg.A.x"
    binary.parent.mkdir(parents=True)
    (binary.parent / "cg.A.build.json").write_text(json.dumps({"status": "ok"}))
    written(tmp_path, a_record("build-failed", binary=str(binary)))
    written(tmp_path, a_record("failed", binary=str(binary)), rid="cg.A.default.c0-3_loc_p_nc.r3")
    store.set_aside_failed(tmp_path)
    assert [p.name for p in binary.parent.iterdir()] == ["cg.A.build.json"]


def test_a_failed_build_record_is_kept_when_another_status_is_retried(tmp_path):
    binary = tmp_path / "bin" / "cg.A.x"
    binary.parent.mkdir(parents=True)
    (binary.parent / "cg.A.build.json").write_text(json.dumps({"status": "failed"}))
    written(tmp_path, a_record("failed", binary=str(binary)))
    assert store.set_aside_failed(tmp_path) == [(RID, "failed")]
    assert [p.name for p in binary.parent.iterdir()] == ["cg.A.build.json"]


def test_an_interrupted_attempt_goes_to_interrupted_never_mixed_with_attempts(tmp_path):
    """A run folder with files but no record (the run was killed): its files go to
    interrupted/<date>T<time>/; a second one in the same second gets its own folder."""
    rundir = tmp_path / "runs" / RID
    (rundir / "attempts" / "1").mkdir(parents=True)
    (rundir / "interrupted").mkdir()
    (rundir / "stdout").write_text("half\n")
    first = store.set_aside(rundir)
    (rundir / "stdout").write_text("again\n")
    second = store.set_aside(rundir)
    assert first.parent == second.parent == rundir / "interrupted"
    assert re.fullmatch(r"\d{8}T\d{6}", first.name)
    assert second != first
    assert (first / "stdout").read_text() == "half\n" and (second / "stdout").read_text() == "again\n"
    assert sorted(p.name for p in rundir.iterdir()) == ["attempts", "interrupted"]
    assert store.set_aside(rundir) is None                         # nothing left to set aside
    assert store.set_aside(tmp_path / "runs" / "never-made") is None


def test_interrupted_attempts_in_the_same_second_are_numbered(tmp_path, monkeypatch):
    import datetime as dt

    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls(2026, 11, 26, 9, 5, 7)
    monkeypatch.setattr(dt, "datetime", Frozen)
    rundir = tmp_path / "runs" / RID
    names = []
    for i in range(3):
        rundir.mkdir(parents=True, exist_ok=True)
        (rundir / "stdout").write_text(f"{i}\n")
        names.append(store.set_aside(rundir).name)
    assert names == ["20261126T090507", "20261126T090507-2", "20261126T090507-3"]


def test_an_attempts_record_is_writable_again(tmp_path):
    """Snakemake write-protects a finished record; set aside as an attempt, it is its
    owner's to edit or remove again (its other files move as they are)."""
    rundir = written(tmp_path, a_record("failed"))
    protected = stat.S_IMODE(os.stat(rundir / "record.json").st_mode)
    dest = store.set_aside(rundir)
    assert stat.S_IMODE(os.stat(dest / "record.json").st_mode) == protected | stat.S_IWUSR
    assert sorted(p.name for p in dest.iterdir()) == ["record.json", "stdout"]


def test_a_record_and_a_different_kept_both_reading_are_both_kept(tmp_path):
    """record.json rewritten as a new file (both read): the attempt's record is
    record.json, the other copy stays beside it as record.kept.json."""
    rundir = written(tmp_path, a_record("failed"))
    (rundir / KEPT).unlink()
    (rundir / KEPT).write_text(json.dumps(a_record("timeout")))
    dest = store.set_aside(rundir)
    assert store.read_record(dest / "record.json")["status"] == "failed"
    assert store.read_record(dest / KEPT)["status"] == "timeout"


def test_kept_alone_becomes_the_attempts_record(tmp_path):
    """Snakemake removed record.json to run the job again: KEPT is the attempt's record."""
    rundir = written(tmp_path, a_record("failed"))
    (rundir / "record.json").unlink()
    dest = store.set_aside(rundir)
    assert store.read_record(dest / "record.json")["status"] == "failed"
    assert sorted(p.name for p in dest.iterdir()) == ["record.json", "stdout"]


def test_two_set_asides_at_once_never_share_an_attempt(tmp_path, monkeypatch):
    """Another process takes attempts/2 between this one's look and its mkdir: this one
    takes attempts/3."""
    rundir = written(tmp_path, a_record("failed"))
    (rundir / "attempts" / "1").mkdir(parents=True)
    real_iterdir, raced = Path.iterdir, []

    def iterdir(self):
        names = list(real_iterdir(self))
        if self.name == "attempts" and not raced:
            raced.append(True)
            (self / "2").mkdir()                                   # the other process
            return iter(p for p in names if p.name != "2")
        return iter(names)
    monkeypatch.setattr(Path, "iterdir", iterdir)
    assert store.set_aside(rundir) == rundir / "attempts" / "3"


# -- keep_records: every current record gets its second name -------------------------------

def test_keep_records_links_every_record_that_lacks_its_kept(tmp_path):
    rids = [f"cg.A.default.c0-3_loc_p_nc.r{i}" for i in range(1, 9)]
    for i, rid in enumerate(rids):
        if i % 3 == 0:
            (tmp_path / "runs" / rid).mkdir(parents=True)          # planned, not measured yet
            continue
        rundir = written(tmp_path, a_record("ok", run_id=rid), rid)
        if i % 3 == 1:
            (rundir / KEPT).unlink()                               # written before KEPT existed
    linked = store.keep_records(tmp_path)
    assert sorted(p.parent.name for p in linked) == [rid for i, rid in enumerate(rids) if i % 3 == 1]
    for i, rid in enumerate(rids):
        if i % 3:
            assert os.path.samefile(tmp_path / "runs" / rid / "record.json", tmp_path / "runs" / rid / KEPT)
    assert store.keep_records(tmp_path) == []
    assert store.keep_records(tmp_path / "nothing") == []


def test_keep_records_moves_aside_a_kept_that_is_another_file_or_a_dangling_link(tmp_path):
    rundir = written(tmp_path, a_record("ok"))
    (rundir / KEPT).unlink()
    (rundir / KEPT).write_text((rundir / "record.json").read_text())     # a copy, not a link
    other = written(tmp_path, a_record("ok", run_id="x"), "x")
    (other / KEPT).unlink()
    (other / KEPT).symlink_to(other / "gone.json")
    assert sorted(p.parent.name for p in store.keep_records(tmp_path)) == [RID, "x"]
    assert os.path.samefile(rundir / "record.json", rundir / KEPT)
    assert (rundir / "record.kept-2.json").is_file()
    assert os.path.samefile(other / "record.json", other / KEPT)
    assert (other / "record.kept-2.json").is_symlink()


def test_keep_records_leaves_restore_kepts_case_to_it(tmp_path):
    rundir = written(tmp_path, a_record("ok"))
    replaced_by_garbage(rundir)
    assert store.keep_records(tmp_path) == []
    assert store.read_record(rundir / KEPT)["status"] == "ok"


# -- reading a record: what a reader is told when one does not match --------------------

FIXTURE_RECORD = FIXTURE / "runs" / RID / "record.json"


def _stored(tmp_path, rec, name="record.json"):
    path = tmp_path / name
    path.write_text(rec if isinstance(rec, str) else json.dumps(rec))
    return path


def test_a_record_off_the_schema_is_refused_naming_its_file_and_field(tmp_path):
    """The one line a reader (tables, report, retry-failed) shows: the file, the field's
    path inside the record, what is wrong."""
    rec = json.loads(FIXTURE_RECORD.read_text())
    rec["placement"]["threads"] = 0
    path = _stored(tmp_path, rec)
    with pytest.raises(store.RecordError) as e:
        store.read_record(path)
    assert str(e.value) == f"{path}: placement/threads: 0 is less than the minimum of 1"


def test_a_record_without_a_required_field_is_refused_at_its_top_level(tmp_path):
    rec = json.loads(FIXTURE_RECORD.read_text())
    del rec["status"]
    path = _stored(tmp_path, rec)
    with pytest.raises(store.RecordError) as e:
        store.read_record(path)
    assert str(e.value) == f"{path}: (top level): 'status' is a required property"
    # validate() on a record held in memory, not told where it came from
    with pytest.raises(store.RecordError) as e:
        store.validate(rec)
    assert str(e.value) == "record: (top level): 'status' is a required property"


def test_a_json_file_that_is_no_object_is_refused_naming_it(tmp_path):
    path = _stored(tmp_path, "[1, 2]")
    with pytest.raises(store.RecordError) as e:
        store.read_record(path)
    assert str(e.value) == f"{path}: (top level): not a JSON object"


def test_a_version_1_record_reads_as_the_current_one(tmp_path):
    """numaplace 0.1/0.2 records: the parsed report under `npb`, no `kind`, 0.1's stored
    fidelity verdict (refused by the schema today) dropped; one that already holds
    `output` keeps it; one without either reads with no output."""
    current = store.read_record(FIXTURE_RECORD)
    v1 = {k: v for k, v in json.loads(FIXTURE_RECORD.read_text()).items() if k not in ("kind", "output")}
    v1.update(record_version=1, npb=current["output"], fidelity={"verdict": "ok"})
    assert store.read_record(_stored(tmp_path, v1)) == current
    both = {**v1, "output": current["output"], "npb": None}
    assert store.read_record(_stored(tmp_path, both))["output"] == current["output"]
    neither = {k: v for k, v in v1.items() if k != "npb"}
    assert store.read_record(_stored(tmp_path, neither)) == {**current, "output": None}


# -- writing a record --------------------------------------------------------------------

def test_a_record_is_written_in_its_stored_layout_keys_in_their_order(tmp_path):
    """A record written again from what it holds is the same bytes (one field a line,
    indent 1, fields in the runner's order, never re-sorted), so records
    diff cleanly against each other and the stored fixtures."""
    text = FIXTURE_RECORD.read_text()
    store.write_record(tmp_path / "record.json", json.loads(text))
    assert (tmp_path / "record.json").read_text() == text


# -- attempts: numbered, found, never taken for the current record ------------------------

def test_attempt_numbers_from_a_records_place_under_runs():
    assert store.attempt_of(f"{RID}/attempts/3/record.json") == 3
    assert store.attempt_of(f"{RID}/attempts/old/record.json") == 0      # no number: 0, never 1
    assert store.attempt_of(f"{RID}/record.json") is None
    assert store.attempt_of(f"{RID}/interrupted/20261126T090507/record.json") is None


def test_a_record_lying_in_attempts_is_never_taken_for_the_current_one(tmp_path):
    rundir = written(tmp_path, a_record("ok"))
    (rundir / "attempts").mkdir()
    (rundir / "attempts" / "record.json").write_text(json.dumps(a_record("failed")))
    recs = list(store.iter_records(tmp_path, attempts=True))
    assert sorted((r["status"], r.is_attempt) for r in recs) == [("failed", True), ("ok", False)]


def test_an_unreadable_kept_alone_is_set_aside_as_the_attempts_record_and_counted(tmp_path):
    """Snakemake removed record.json and KEPT does not read: it is still the attempt's
    record.json, so the tables list the attempt (unreadable, under its run id)."""
    rundir = written(tmp_path, a_record("failed"))
    (rundir / "record.json").unlink()
    (rundir / KEPT).unlink()
    (rundir / KEPT).write_text('{"run_id": "half')
    dest = store.set_aside(rundir)
    assert sorted(p.name for p in dest.iterdir()) == ["record.json", "stdout"]
    [rec] = store.iter_records(tmp_path, attempts=True)
    assert (rec["run_id"], rec["status"], rec.attempt) == (RID, "unreadable", 1)


def test_a_broken_copy_set_aside_beside_the_restored_record_moves_as_it_is(tmp_path):
    """Only the record.json that stays the attempt's record is made writable again; the
    copy that did not read (record.unreadable.json) keeps its mode."""
    rundir = written(tmp_path, a_record("failed"))
    (rundir / "record.json").unlink()
    (rundir / "record.json").write_text('{"run_id": "half')
    os.chmod(rundir / "record.json", 0o444)
    dest = store.set_aside(rundir)
    assert store.read_record(dest / "record.json")["status"] == "failed"
    assert stat.S_IMODE(os.stat(dest / "record.unreadable.json").st_mode) == 0o444


def test_keep_records_loses_no_stale_kept_when_its_free_name_is_taken_meanwhile(tmp_path, monkeypatch):
    """Another process takes record.kept-2.json between the look for a free name and the
    link: the stale KEPT goes to the next free name, never unlinked without a new name."""
    rundir = written(tmp_path, a_record("ok"))
    (rundir / KEPT).unlink()
    (rundir / KEPT).write_text("the stale copy")
    real, raced = store._free_name, []

    def free_name(path):
        name = real(path)
        if not raced:
            raced.append(name)
            name.write_text("the other process's")
        return name
    monkeypatch.setattr(store, "_free_name", free_name)
    assert store.keep_records(tmp_path) == [rundir / "record.json"]
    assert os.path.samefile(rundir / "record.json", rundir / KEPT)
    assert (rundir / "record.kept-2.json").read_text() == "the other process's"
    assert (rundir / "record.kept-3.json").read_text() == "the stale copy"


def test_restore_kept_leaves_a_run_whose_record_json_is_gone_to_set_aside(tmp_path):
    """Snakemake removed record.json (KEPT intact): nothing to restore; KEPT stays."""
    rundir = written(tmp_path, a_record("ok"))
    (rundir / "record.json").unlink()
    assert store.restore_kept(rundir) is None
    assert sorted(p.name for p in rundir.iterdir()) == [KEPT, "stdout"]


# -- workflow_outcome: more of the last lines ------------------------------------------------

def test_five_failed_runs_are_listed_by_default(tmp_path):
    recs = _records(tmp_path, *["failed"] * 7, "ok")
    lines, _ = workflow_outcome("s", recs, [], "rep")
    assert lines[1:] == [f"  {p}: failed" for p in recs[:5]] + ["  ... and 2 more"]


def test_a_build_record_that_does_not_read_hides_no_failed_build_after_it(tmp_path):
    builds = _builds(tmp_path, "{not json",
                     {"status": "failed", "bench": "mg", "class": "B", "variant": "default", "reason": "make exited 2"})
    lines, failed = workflow_outcome("s", _records(tmp_path, "ok"), builds, "rep")
    assert lines[:2] == ["numaplace: 1 of 2 builds of study s failed:", "  mg.B (default): make exited 2"]
    assert failed is True


def test_exactly_the_shown_number_of_failed_builds_has_no_more_line(tmp_path):
    builds = _builds(tmp_path, *[{"status": "failed", "bench": "cg", "class": c, "variant": "default"} for c in "AB"])
    lines, _ = workflow_outcome("s", [], builds, "rep", shown=2)
    assert lines[:3] == ["numaplace: 2 of 2 builds of study s failed:",
                         "  cg.A (default): no reason recorded", "  cg.B (default): no reason recorded"]
    assert not any("more" in line for line in lines)


def test_a_writer_killed_before_its_replace_never_blocks_the_next_record(tmp_path):
    """A writer killed between its chmod and its replace leaves a read-only tmp behind,
    which a user cannot write again (uid 65534 got PermissionError with one shared tmp
    name). Leftovers that nobody can write, root included (folders), of the old shared
    name and of another process's: the next record of that run is still written."""
    path = tmp_path / "run" / "record.json"
    for stale in (path.parent / "record.json.tmp", path.parent / "record.json.999999999.tmp"):
        stale.mkdir(parents=True)
    store.write_record(path, {"status": "failed"})
    assert json.loads(path.read_text()) == {"status": "failed"}
    assert not list(path.parent.glob(f"*.{os.getpid()}.tmp"))


@pytest.mark.parametrize("record_first", [True, False])
def test_a_dangling_record_link_never_takes_the_attempts_record_from_the_intact_kept(tmp_path, monkeypatch, record_first):
    """record.json a dangling symlink (a restore from elsewhere gone wrong) beside an
    intact KEPT: KEPT is the attempt's record.json, whatever order the folder lists
    them in, and the link stays beside it; the attempt is read back as a run."""
    rundir = written(tmp_path, a_record("failed"))
    (rundir / "record.json").unlink()
    (rundir / "record.json").symlink_to(tmp_path / "gone.json")
    listed = Path.iterdir
    monkeypatch.setattr(Path, "iterdir", lambda self: iter(sorted(
        listed(self), key=lambda p: (p.name != "record.json") == record_first)))
    dest = store.set_aside(rundir)
    assert store.read_record(dest / "record.json")["status"] == "failed"
    assert (dest / "record.unreadable.json").is_symlink()
    monkeypatch.setattr(Path, "iterdir", listed)
    assert [r["status"] for r in store.iter_records(tmp_path, attempts=True)] == ["failed"]


def test_an_attempts_record_from_kept_alone_is_writable_again_too(tmp_path):
    """Snakemake removed record.json (--forcerun) and KEPT alone is left: the attempt's
    record.json made of it is writable again, as one set aside from record.json is."""
    rundir = written(tmp_path, a_record("failed"))
    protected = stat.S_IMODE(os.stat(rundir / "record.json").st_mode)
    (rundir / "record.json").unlink()
    dest = store.set_aside(rundir)
    assert stat.S_IMODE(os.stat(dest / "record.json").st_mode) == protected | stat.S_IWUSR


# -- not-needed runs, attempt numbers, a record's machine ----------------------------------

def test_not_needed_runs_are_no_failure_and_are_said_apart(tmp_path):
    """Runs that adaptive repetitions skipped are neither ok nor failed: the last line
    counts them apart, they never make the study fail, and retry-failed leaves them."""
    recs = _records(tmp_path, "ok", "not-needed", "ok", "not-needed")
    assert workflow_outcome("s", recs, [], "rep") == (
        ["numaplace: 2 of 4 runs of study s ok; 2 not needed (adaptive repetitions: their case was decided)"], False)
    recs = _records(tmp_path / "b", "not-needed", {"status": "timeout"}, "ok")
    lines, failed = workflow_outcome("s", recs, [], "rep")
    assert lines[0] == ("numaplace: 1 of 3 runs of study s failed (timeout: 1); 1 not needed (adaptive "
                        "repetitions: their case was decided); they stay in the report (rep/summary.md: Failed "
                        "and unverified runs); why, in each one's record.json:")
    assert lines[1:] == [f"  {recs[1]}: timeout"] and failed is False


def test_retry_failed_leaves_ok_and_not_needed_runs(tmp_path):
    written(tmp_path, a_record("ok", run_id="a.r1"), rid="a.r1")
    written(tmp_path, a_record("not-needed", run_id="a.r2", reason="separated after 2 rounds"), rid="a.r2")
    written(tmp_path, a_record("timeout", run_id="a.r3", reason="killed after 60 s"), rid="a.r3")
    assert store.set_aside_failed(tmp_path, say=lambda line: None) == [("a.r3", "timeout")]
    assert sorted(r["run_id"] for r in store.iter_records(tmp_path)) == ["a.r1", "a.r2"]


def test_a_new_attempt_is_numbered_above_the_highest_even_after_a_gap(tmp_path):
    """attempts/1, 3 and 4 removed by hand: the next attempt is 6, never a number used before."""
    rundir = written(tmp_path, a_record("failed"))
    for n in ("2", "5", "notes"):
        (rundir / "attempts" / n).mkdir(parents=True)
    assert store.set_aside(rundir) == rundir / "attempts" / "6"
    assert sorted(p.name for p in (rundir / "attempts" / "6").iterdir()) == ["record.json", "stdout"]
    written(tmp_path, a_record("failed"))
    assert store.set_aside(rundir) == rundir / "attempts" / "7"


def test_a_records_cpus_map_to_the_nodes_of_its_own_topology():
    """node_of reads the machine the run was on, from its record; a node without CPUs (a
    memory-only node) maps none, and a CPU the record does not list maps to None."""
    node_of = store.Record({"topology": {"nodes": {"0": "0-1,4", "1": "2-3,5", "2": ""}}}).node_of()
    assert [node_of(c) for c in range(7)] == [0, 0, 1, 1, 0, 1, None]
    assert store.Record({}).node_of()(0) is None


def test_an_unreadable_record_is_listed_with_the_command_that_measures_it_again(tmp_path):
    rundir = tmp_path / "runs" / "a.r1"
    rundir.mkdir(parents=True)
    (rundir / "record.json").write_text('{"run_id": "a.r1", "stat')
    (rec,) = store.iter_records(tmp_path)
    assert (rec["run_id"], rec["status"]) == ("a.r1", "unreadable")
    assert rec["reason"].startswith(f"{rundir / 'record.json'}: unreadable record: ")
    assert rec["reason"].endswith(f"; to run it again: numaplace retry-failed {tmp_path} --status unreadable")
    assert (rec.path, rec.attempt, rec.is_attempt) == (str(rundir / "record.json"), None, False)


def test_record_of_keeps_a_record_and_wraps_a_plain_dict():
    r = store.Record({"run_id": "a.r1", "status": "ok"})
    assert store.Record.of(r) is r
    d = {"run_id": "a.r2", "bench": "cg", "class": "S", "rep": 2, "placement": None}
    w = store.Record.of(d)
    assert type(w) is store.Record and w == d
    assert (w.run_id, w.bench, w.cls, w.rep, w.status, w.placement, w.captures) == ("a.r2", "cg", "S", 2, None, {}, {})


def test_a_record_without_its_parsed_output_reads_it_again_from_its_stdout(tmp_path):
    rundir = tmp_path / "runs" / "a.r1"
    rundir.mkdir(parents=True)
    (rundir / "stdout").write_text(" CG Benchmark Completed.\n Class           =                        S\n"
                                   " Total threads   =                        1\n Time in seconds =                     1.25\n"
                                   " Mop/s total     =                   321.50\n Verification    =               SUCCESSFUL\n")
    r = store.Record({"bench": "cg", "output": None, "_path": str(rundir / "record.json")})
    assert (r.output["time_s"], r.output["mops"]) == (1.25, 321.5)
    assert store.Record({"bench": "cg", "output": {"mops": 1.0}, "_path": str(rundir / "record.json")}).output == {"mops": 1.0}
    assert store.Record({"bench": "cg", "output": None}).output is None
