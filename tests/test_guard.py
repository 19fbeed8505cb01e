"""numaplace.machine.guard: which process a pid and start time name (/proc/<pid>/stat),
the Snakemake ancestor a measurement watches, the machine's and the study's locks, and
which errors mean a full disk. /proc is faked with the kernel's own line formats."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from numaplace.machine import guard

pytestmark = pytest.mark.unit


def stat_line(pid, comm, state, ppid, starttime):
    """/proc/<pid>/stat as the kernel writes it (proc(5)): pid (comm) state ppid pgrp
    session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime
    priority nice num_threads itrealvalue starttime(22) vsize(23) rss(24) ..."""
    return (f"{pid} ({comm}) {state} {ppid} {pid + 10000} {pid + 20000} 34816 {pid + 10000} 4194560 8123 5 0 0 "
            f"1543 211 0 0 20 0 3 0 {starttime} 157286400 10240 18446744073709551615 "
            "94773449330688 94773449402497 140724130318976 0 0 0 65536 4 65538 1 0 0 17 2 0 0 0 0 0\n")


class FakeProc:
    """Path() of guard with /proc/<pid>/{stat,cmdline} from a dict; other paths real."""

    def __init__(self, procs):
        self.procs = procs      # pid: (stat text, cmdline bytes)

    def __call__(self, p, *rest):
        p = str(p)
        if not p.startswith("/proc/"):
            return Path(p, *rest)
        _, _, pid, what = p.split("/")
        procs = self.procs

        class F:
            def read_text(self):
                if int(pid) not in procs:
                    raise FileNotFoundError(p)
                return procs[int(pid)][0]

            def read_bytes(self):
                if int(pid) not in procs:
                    raise FileNotFoundError(p)
                return procs[int(pid)][1]
        assert what in ("stat", "cmdline")
        return F()


def test_start_time_is_stat_field_22_counted_after_a_comm_with_spaces_and_parentheses(monkeypatch):
    """A pid plus its start time names one process: field 22 (starttime) of its stat line,
    counted after the last ')' of a comm such as 'tmux: (server) x'. Another field (vsize,
    num_threads) would change as the process runs and make the watch think it is gone."""
    monkeypatch.setattr(guard, "Path", FakeProc({
        4242: (stat_line(4242, "tmux: (server) x", "S", 1, 98765432), b""),
        77: (stat_line(77, "python3", "R", 4242, 123), b""),
        78: (stat_line(78, "bash) (x", "D", 4242, 5555), b""),
        900: (stat_line(900, "snakemake", "Z", 1, 42), b""),
        901: (stat_line(901, "snakemake", "X", 1, 43), b""),
        902: (stat_line(902, "sleep", "t", 1, 44), b"")}))
    assert guard._start_time(4242) == 98765432
    assert guard._start_time(77) == 123
    assert guard._start_time(78) == 5555
    assert guard._start_time(902) == 44                 # stopped by a tracer: alive
    assert guard._start_time(900) is None               # zombie: killed, not yet reaped
    assert guard._start_time(901) is None               # dead
    assert guard._start_time(31337) is None             # gone


def test_start_time_of_this_process_is_its_stat_field_22():
    """On the live /proc: the same field as proc(5) counts it."""
    text = Path(f"/proc/{os.getpid()}/stat").read_text()
    want = int(text[text.rindex(")") + 2:].split()[22 - 3])
    assert guard._start_time(os.getpid()) == want


def test_the_nearest_snakemake_ancestor_is_found_through_the_ppid_field(monkeypatch):
    """The runner (pid 300) under a shell (200) under Snakemake (100) under init: the
    watch names Snakemake's pid and start time, walking stat field 4 (ppid) upward; a
    process chain without Snakemake, or one broken by a vanished parent, gives None."""
    procs = {
        300: (stat_line(300, "python3 (runner)", "S", 200, 3000), b"python3\0-m\0numaplace\0run\0"),
        200: (stat_line(200, "sh", "S", 100, 2000), b"/bin/sh\0-c\0numaplace run\0"),
        100: (stat_line(100, "snakemake (x)", "S", 1, 1000), b"python3\0/usr/bin/snakemake\0--cores\0"),
        1: (stat_line(1, "systemd", "S", 0, 1), b"/sbin/init\0"),
        50: (stat_line(50, "bash", "S", 40, 500), b"bash\0"),
        40: (stat_line(40, "sshd", "S", 1, 400), b"sshd: user\0"),
        60: (stat_line(60, "x", "S", 61, 600), b"x\0"),           # its parent 61 is gone
        2: (stat_line(2, "snakemake", "S", 1, 20), b"snakemake\0"),
    }
    monkeypatch.setattr(guard, "Path", FakeProc(procs))
    assert guard.snakemake_ancestor(300) == (100, 1000)
    assert guard.snakemake_ancestor(200) == (100, 1000)
    assert guard.snakemake_ancestor(100) == (100, 1000)
    assert guard.snakemake_ancestor(50) is None
    assert guard.snakemake_ancestor(60) is None
    assert guard.snakemake_ancestor(2) == (2, 20)        # pid 2 is still walked; 1 is not
    assert guard.snakemake_ancestor(1) is None


def test_the_watch_calls_on_gone_once_when_the_watched_process_is_replaced(monkeypatch):
    """A pid reused by another process (another start time) is gone for the watch."""
    times = iter([1000, 1000, 1001, 1001])
    monkeypatch.setattr(guard, "_start_time", lambda pid: next(times))
    calls = []
    w = guard.AncestorWatch((100, 1000), lambda: calls.append("gone"), interval=0.001)
    w.run()
    assert calls == ["gone"] and w.gone is True
    times = iter([1000, None])
    w = guard.AncestorWatch((100, 1000), lambda: calls.append("gone2"), interval=0.001)
    w.run()
    assert calls == ["gone", "gone2"]
    w = guard.AncestorWatch((100, 1000), lambda: calls.append("never"), interval=0.001)
    w.stop()
    w.run()
    assert calls == ["gone", "gone2"] and w.gone is False
    assert guard.AncestorWatch((1, 2), print).interval == 0.5


def test_a_full_disk_is_enospc_or_a_quota_and_nothing_else():
    """A disk full (or a user's quota) stops the study with its own words; other errors do not."""
    assert guard.is_disk_full(OSError(errno.ENOSPC, "No space left on device")) is True
    assert guard.is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded")) is True
    assert guard.is_disk_full(OSError(errno.EACCES, "Permission denied")) is False
    assert guard.is_disk_full(OSError(errno.EIO, "I/O error")) is False
    assert guard.is_disk_full(ValueError(errno.ENOSPC)) is False


def test_the_machine_lock_is_taken_once_and_says_how_long_it_waited(tmp_path):
    """One measured run at a time: a second try while the lock is held gets None; a held
    lock handed to machine_lock waits 0 s; released at the end, it is free again."""
    lock = tmp_path / guard.LOCK_NAME
    fd = guard.try_machine_lock(lock)
    assert fd is not None
    assert guard.try_machine_lock(lock) is None
    with guard.machine_lock(lock, held=fd) as waited:
        assert waited == 0.0
        assert guard.try_machine_lock(lock) is None
    again = guard.try_machine_lock(lock)
    assert again is not None
    os.close(again)
    with guard.machine_lock(lock) as waited:
        assert isinstance(waited, float) and 0 <= waited < 1


def test_the_lock_lives_in_run_lock_or_the_temp_dir(monkeypatch, tmp_path):
    """Machine-wide: /run/lock where it is writable, else the temp dir, named LOCK_NAME."""
    assert guard.LOCK_NAME == "numaplace-measure.lock"
    p = guard.lock_path()
    assert p.name == "numaplace-measure.lock"
    import tempfile
    if Path("/run/lock").is_dir() and os.access("/run/lock", os.W_OK):
        assert p == Path("/run/lock/numaplace-measure.lock")
    monkeypatch.setattr(guard.os, "access", lambda path, mode: False)
    assert guard.lock_path() == Path(tempfile.gettempdir()) / "numaplace-measure.lock"


def test_a_second_workflow_on_one_study_is_told_who_holds_it(tmp_path):
    """One workflow at a time on a study's results: the holder writes who it is, the second
    gets (None, that line); a lock file without words says so."""
    results = tmp_path / "results" / "s"
    results.mkdir(parents=True)
    (results / ".numaplace-workflow.lock").write_text("Snakemake pid 1 on a-much-longer-host-name in /a/much/longer/folder\n" * 3)
    fd, who = guard.hold_study(results)
    assert fd is not None and who is None
    line = (results / ".numaplace-workflow.lock").read_text()
    assert line == f"Snakemake pid {os.getpid()} on {os.uname().nodename} in {os.getcwd()}\n"
    assert guard.hold_study(results) == (None, line.strip())
    (results / guard.STUDY_LOCK).write_text("")
    assert guard.hold_study(results) == (None, "a process that did not say which")
    os.close(fd)
    fd2, who = guard.hold_study(results)
    assert fd2 is not None and who is None
    os.close(fd2)
