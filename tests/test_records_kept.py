"""Records kept under two names (KEPT) and set aside as attempts: nothing measured is
lost when record.json and KEPT are two different files. Pure Python on a tmp results
folder written with numaplace.record.store' own functions; no Snakemake."""
from __future__ import annotations

import json
import os
from pathlib import Path

from numaplace.record.store import (KEPT, iter_records, keep_records, read_record, restore_kept,
                               set_aside, write_record)

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "records" / "results" / "fixture"
RID = "cg.A.default.c0-1_loc_p_nc.r1"


def _rec(wall_s):
    return {**read_record(FIXTURE / "runs" / RID / "record.json"), "wall_s": wall_s}


def _rewrite_as_a_new_file(path, text):
    """What an editor or `cp backup record.json` does: a new inode under the old name."""
    tmp = path.with_name(path.name + ".new")
    tmp.write_text(text)
    os.replace(tmp, path)


def _contents(folder):
    return sorted(p.read_text() for p in Path(folder).rglob("*") if p.is_file())


def test_keep_records_relinks_a_rewritten_record_and_keeps_the_stale_copy(tmp_path):
    """Guards keep_records skipping a run whose KEPT exists but is another file than
    record.json: on --forcerun Snakemake deletes record.json and set_aside keeps only the
    stale KEPT, so the current measurement is lost."""
    rundir = tmp_path / "runs" / RID
    rundir.mkdir(parents=True)
    record, kept = rundir / "record.json", rundir / KEPT
    write_record(record, _rec(1.0))
    _rewrite_as_a_new_file(record, json.dumps(_rec(2.0)))
    assert not os.path.samefile(record, kept)

    assert keep_records(tmp_path) == [record]
    assert os.path.samefile(record, kept)
    asides = [p for p in rundir.iterdir() if p.name not in ("record.json", KEPT)]
    assert [read_record(p)["wall_s"] for p in asides] == [1.0]      # the stale copy, kept
    assert keep_records(tmp_path) == []                              # once only

    record.unlink()                                                  # --forcerun
    dest = set_aside(rundir)
    assert read_record(dest / "record.json")["wall_s"] == 2.0       # the current measurement
    assert sorted(read_record(p)["wall_s"] for p in dest.iterdir()) == [1.0, 2.0]
    assert [r["wall_s"] for r in iter_records(tmp_path, attempts=True)] == [2.0]


def test_keep_records_leaves_an_unreadable_record_to_restore_kept(tmp_path):
    """Guards the fix above linking any record.json: an unreadable one would become KEPT
    and the intact copy be no longer restored."""
    rundir = tmp_path / "runs" / RID
    rundir.mkdir(parents=True)
    record = rundir / "record.json"
    write_record(record, _rec(1.0))
    _rewrite_as_a_new_file(record, "{ truncated")

    assert keep_records(tmp_path) == []
    assert sorted(p.name for p in rundir.iterdir()) == sorted(["record.json", KEPT])
    assert restore_kept(rundir)["wall_s"] == 1.0
    assert (rundir / "record.unreadable.json").read_text() == "{ truncated"


def test_set_aside_never_overwrites_in_the_attempt_folder(tmp_path):
    """Guards set_aside moving record.json to record.unreadable.json over the
    record.unreadable.json an earlier restore_kept left: one of the two is lost."""
    rundir = tmp_path / "runs" / RID
    rundir.mkdir(parents=True)
    record = rundir / "record.json"
    write_record(record, _rec(1.0))
    _rewrite_as_a_new_file(record, "broken one")
    assert restore_kept(rundir)["wall_s"] == 1.0                    # leaves record.unreadable.json
    _rewrite_as_a_new_file(record, "broken two")                    # and again
    before = _contents(rundir)

    dest = set_aside(rundir)
    assert read_record(dest / "record.json")["wall_s"] == 1.0
    assert _contents(dest) == before
    assert sorted(p.read_text() for p in dest.glob("record.unreadable*.json")) == \
        ["broken one", "broken two"]
