"""A record, once written, is the study's: write-protected for everyone, whatever umask
the user runs under (numaplace.record.store.write_record). Issue 42, behaviour 11
(tests/benchmarks/behaviour_bugs.py shows the test failing on the mistake)."""
from __future__ import annotations

import os
import stat

import pytest

from numaplace.record.store import KEPT, write_record

pytestmark = pytest.mark.unit


@pytest.fixture
def umask_002():
    """A shared group's umask (002: files 0664): restored after the test."""
    old = os.umask(0o002)
    yield
    os.umask(old)


def test_a_record_is_not_group_writable_under_umask_002(tmp_path, umask_002):
    """Under umask 002 a new file is group-writable; a record is not: neither record.json
    nor its second name KEPT has a write bit for anyone, and both stay readable. (Fails when
    only the owner's write bit is taken away: 0o464.)"""
    rundir = tmp_path / "results" / "s" / "runs" / "cg.S.default.c0.r1"
    rundir.mkdir(parents=True)
    write_record(rundir / "record.json", {"run_id": "cg.S.default.c0.r1", "status": "ok"})
    for name in ("record.json", KEPT):
        mode = stat.S_IMODE(os.stat(rundir / name).st_mode)
        assert mode & 0o222 == 0, f"{name}: {oct(mode)}"
        assert mode & 0o444 == 0o444, f"{name}: {oct(mode)}"
