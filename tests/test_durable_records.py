"""Records durable and independently kept (issue 45, item 1): write_record syncs the file,
its journal copy and the folder; a record damaged in place (both names of its one inode)
is restored byte for byte from the study's journal as a workflow starts (check_records);
a crash between the write and the rename leaves the earlier record as it was, and the
next start completes the write. Pure Python on a tmp results tree, except one child
process killed before its rename."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from numaplace.record import store
from numaplace.record.store import JOURNAL, KEPT, check_records, read_record, set_aside, write_record

pytestmark = pytest.mark.unit

from conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "records" / "results" / "fixture"
RID = "cg.A.default.c0-3_loc_p_nc.r2"


def a_record(status="ok", **more):
    """A real record (a fixture of tests/fixtures/records) with another status."""
    return {**json.loads((FIXTURE / "runs" / RID / "record.json").read_text()), "status": status, **more}


@pytest.fixture
def results(tmp_path):
    return tmp_path / "results" / "s"


def written(results, rec=None):
    path = results / "runs" / RID / "record.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_record(path, rec or a_record())
    return path, path.read_bytes()


def damage(path, size):
    """Truncate the file in place (as a torn write or a power loss leaves it): its inode,
    so every hard link of it, keeps only `size` bytes."""
    os.chmod(path, 0o644)
    os.truncate(path, size)
    os.chmod(path, 0o444)


@pytest.mark.parametrize("cut", ["empty", "half"])
def test_a_record_truncated_in_place_is_restored_byte_for_byte(results, cut):
    """Before: KEPT was a hard link of record.json, so a record truncated in place lost both
    names (2 of 2 copies), and nothing restored it."""
    record, original = written(results)
    kept = record.parent / KEPT
    damage(record, 0 if cut == "empty" else len(original) // 2)
    assert kept.read_bytes() != original            # one inode: the second name is damaged too
    lines = check_records(results)
    assert record.read_bytes() == original and kept.read_bytes() == original
    assert os.path.samefile(record, kept)
    assert stat.S_IMODE(record.stat().st_mode) & 0o222 == 0      # write-protected again
    assert read_record(record)["status"] == "ok"
    assert len(lines) == 1 and f"restored {record} byte for byte from {results / JOURNAL}" in lines[0]
    # a prefix of the record is no loss: nothing else is left beside it
    assert sorted(p.name for p in record.parent.iterdir()) == sorted(["record.json", KEPT])
    assert check_records(results) == []                          # checked again: nothing to do


def test_a_crash_between_write_and_rename_keeps_the_earlier_record_and_the_next_start_completes_it(results):
    """A writer killed after its write, before its rename (a child process: its pid is dead
    afterwards). With an earlier record.json, that one stays byte for byte; in the runner's
    order (the earlier attempt set aside first, so no record.json) the next workflow start
    puts the complete new record in place, byte for byte. Before: nothing completed it; the
    run was measured again and the complete measurement went to interrupted/."""
    record, earlier = written(results)
    new = a_record("failed", reason="exit status 3")
    crash = ("import os, sys, json; from numaplace.record import store\n"
             "os.replace = lambda a, b: os._exit(9)\n"
             "store.write_record(sys.argv[1], json.loads(sys.argv[2]))\n")
    p = subprocess.run([sys.executable, "-c", crash, str(record), json.dumps(new)])
    assert p.returncode == 9
    (tmp,) = record.parent.glob("record.json.*.tmp")
    assert record.read_bytes() == earlier and (record.parent / KEPT).read_bytes() == earlier
    assert check_records(results) == []                          # the earlier record stands
    assert record.read_bytes() == earlier and tmp.exists()       # the tmp is left for set_aside

    set_aside(record.parent)                                     # the runner's first step
    p = subprocess.run([sys.executable, "-c", crash, str(record), json.dumps(new)])
    assert p.returncode == 9 and not record.exists()
    (tmp,) = record.parent.glob("record.json.*.tmp")
    expected = tmp.read_bytes()
    assert json.loads(expected) == new
    lines = check_records(results)
    assert len(lines) == 1 and "complete but not yet renamed" in lines[0]
    assert record.read_bytes() == expected and os.path.samefile(record, record.parent / KEPT)
    assert not list(record.parent.glob("record.json.*.tmp"))
    assert read_record(record)["status"] == "failed"
    assert read_record(record.parent / "attempts" / "1" / "record.json")["status"] == "ok"


def test_an_incomplete_tmp_is_left_for_set_aside(results):
    """A tmp cut short (the crash came before its data was on disk) is no record: left."""
    record, _ = written(results)
    set_aside(record.parent)
    tmp = record.with_name("record.json.999999999.tmp")            # no such pid
    tmp.write_text('{"run_id": "cg')
    assert check_records(results) == [] and not record.exists() and tmp.exists()


def test_write_record_syncs_the_file_and_the_journal_before_the_rename_and_the_folder_after(results, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                 real_fsync(fd)))
    monkeypatch.setattr(os, "replace", lambda a, b: (calls.append(("replace", str(b))), real_replace(a, b)))
    record, _ = written(results)
    names = [(c, os.path.basename(p)) for c, p in calls]
    assert names[0][0] == "fsync" and names[0][1].startswith("record.json.") and names[0][1].endswith(".tmp")
    assert names[1:] == [("fsync", JOURNAL), ("replace", "record.json"), ("fsync", RID)]


def test_a_replaced_record_is_restored_from_its_intact_kept_copy_at_start(results):
    """record.json rewritten as a new file that does not read (an editor, a bad copy) while
    KEPT holds the measurement: the start restores it (before: only retry-failed did)."""
    record, original = written(results)
    record.unlink()
    record.write_text("garbage")
    lines = check_records(results)
    assert record.read_bytes() == original and os.path.samefile(record, record.parent / KEPT)
    assert (record.parent / "record.unreadable.json").read_text() == "garbage"
    assert len(lines) == 1 and f"from its intact {KEPT}" in lines[0]


def test_damaged_bytes_that_are_no_beginning_of_the_copy_are_kept_beside_it(results):
    record, original = written(results)
    os.chmod(record, 0o644)
    record.write_bytes(b"\x00\x01 overwritten")                  # in place: both names
    os.chmod(record, 0o444)
    lines = check_records(results)
    assert record.read_bytes() == original and (record.parent / KEPT).read_bytes() == original
    assert (record.parent / "record.unreadable.json").read_bytes() == b"\x00\x01 overwritten"
    assert "record.unreadable" in lines[0]


def test_a_record_with_no_intact_copy_is_named_with_what_to_do(results):
    record, original = written(results)
    (results / JOURNAL).unlink()
    damage(record, 10)
    lines = check_records(results)
    assert lines == [f"numaplace: {record} does not read as a record and no intact copy of it is kept; it "
                     f"stays in the report as unreadable; to measure the run again: numaplace retry-failed "
                     f"{results} --status unreadable"]
    assert record.read_bytes() == original[:10]                    # nothing else touched


def test_records_written_before_the_journal_get_their_copy_at_start(results):
    record, original = written(results)
    (results / JOURNAL).unlink()                                   # an older numaplace's record
    assert check_records(results) == []
    assert [(k, data) for k, _, data in store.journal_entries(results / JOURNAL)] == \
        [(f"runs/{RID}/record.json", original)]
    damage(record, 0)
    check_records(results)
    assert record.read_bytes() == original


def test_an_attempts_record_is_restored_from_the_one_copy_it_begins(results):
    """A set-aside attempt damaged in place: of the run's journal copies, the one no other
    record holds and whose beginning the damaged bytes are."""
    record, first = written(results, a_record("timeout", reason="killed after 60 s"))
    set_aside(record.parent)
    _, second = written(results)
    attempt = record.parent / "attempts" / "1" / "record.json"
    assert attempt.read_bytes() == first
    damage(attempt, len(first) // 3)
    lines = check_records(results)
    assert attempt.read_bytes() == first and record.read_bytes() == second
    assert len(lines) == 1 and str(attempt) in lines[0]


def test_a_torn_journal_line_is_skipped_and_the_rest_still_restores(results):
    record, original = written(results)
    with open(results / JOURNAL, "ab") as j:
        j.write(b'{"sha256": "' + b"0" * 64 + b'", "path": "runs/x/record.json", "bytes": "{\\"ru')
    damage(record, 0)
    check_records(results)
    assert record.read_bytes() == original


def test_a_dry_check_changes_nothing(results):
    record, original = written(results)
    damage(record, 5)
    lines = check_records(results, restore=False)
    assert record.read_bytes() == original[:5] and "can restore" in lines[0]


def test_a_journal_line_whose_bytes_do_not_match_its_checksum_is_no_copy(results):
    """Bit rot inside a line that still parses as JSON: its checksum tells, and the line
    is never used to restore a record."""
    record, original = written(results)
    good = store._journal_line("runs/x/record.json", b'{"status": "ok"}')
    bad = json.loads(store._journal_line("runs/y/record.json", b'{"status": "ok"}'))
    bad["bytes"] = '{"status": "no"}'
    (results / JOURNAL).write_bytes(good + (json.dumps(bad) + "\n").encode())
    assert store.journal_entries(results / JOURNAL) == [
        ("runs/x/record.json", store._sha(b'{"status": "ok"}'), b'{"status": "ok"}')]
    assert store.journal_entries(results / "missing.journal") == []


def test_an_emptied_record_is_restored_from_its_latest_journal_copy(results):
    """A record written twice in place (the run measured again): its journal has both; an
    empty file is the beginning of either, and the latest is the record."""
    record, first = written(results, a_record("timeout", reason="killed after 60 s"))
    _, second = written(results)
    damage(record, 0)
    check_records(results)
    assert record.read_bytes() == second and first != second


def test_the_journal_copy_restored_is_the_one_the_damaged_bytes_begin(results):
    """A later copy journaled whose rename never happened (a crash in between): the record
    on disk is the earlier one; truncated, it is restored from the copy it begins, not
    from the latest one."""
    record, first = written(results, a_record("timeout", reason="killed after 60 s"))
    second = json.dumps(a_record("ok"), indent=1).encode()
    store._journal_append(results / JOURNAL, [store._journal_line(f"runs/{RID}/record.json", second)])
    damage(record, len(first) - 3)
    check_records(results)
    assert record.read_bytes() == first


def test_an_attempt_is_restored_only_from_a_copy_that_tells_it_apart(results):
    """Two attempts damaged at once: emptied, each is the beginning of both journal copies,
    and neither is guessed (both named); cut past where they differ, each gets its own."""
    record, first = written(results, a_record("timeout", reason="killed after 60 s"))
    set_aside(record.parent)
    _, second = written(results, a_record("failed", reason="exit status 1"))
    set_aside(record.parent)
    written(results)
    attempts = [record.parent / "attempts" / n / "record.json" for n in ("1", "2")]
    assert [a.read_bytes() for a in attempts] == [first, second]
    for a in attempts:
        damage(a, 0)
    lines = check_records(results)
    assert [a.read_bytes() for a in attempts] == [b"", b""]
    assert lines == [f"numaplace: {a} does not read as a record and no intact copy of it is kept; it stays in "
                     f"the report as unreadable; to measure the run again: numaplace retry-failed {results} "
                     f"--status unreadable" for a in attempts]
    differ = next(i for i, (x, y) in enumerate(zip(first, second)) if x != y) + 1
    for a, data in zip(attempts, (first, second)):
        os.chmod(a, 0o644)
        a.write_bytes(data[:differ])                 # torn: its beginning only
    check_records(results)
    assert [a.read_bytes() for a in attempts] == [first, second]
