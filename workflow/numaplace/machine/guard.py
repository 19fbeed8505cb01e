"""What keeps a measured run to itself, and says when it was not.

* one measured run at a time on a machine, across Snakemake processes and studies
  (an flock that the kernel drops when its holder dies);
* the benchmark dies with its runner (parent-death signal), and the runner stops the
  benchmark when the Snakemake process that started it is gone (kill -9 of Snakemake
  would otherwise leave both running, overlapping the next run); a chunk of runs
  (numaplace.run.chunk) watches its Snakemake for the whole chunk with the same
  AncestorWatch, and decides what to keep only once it holds the machine lock;
(the idle check before a run and the foreign load during it: numaplace.machine.idle)
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = "numaplace-measure.lock"
PR_SET_PDEATHSIG = 1


def lock_path():
    """Machine-wide: /run/lock (world-writable, sticky, on tmpfs), else the temp dir."""
    base = Path("/run/lock")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        import tempfile        # here: the runner's start-up does without it
        base = Path(tempfile.gettempdir())
    return base / LOCK_NAME


def open_lock(path):
    # read-only, so that a lock file created by root still serves other users
    path = Path(path or lock_path())
    try:
        return os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
    except PermissionError:
        return os.open(path, os.O_RDONLY)


def try_machine_lock(path=None):
    """The machine's measurement lock, taken now if it is free (its fd, to hand to
    machine_lock), else None."""
    fd = open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except BlockingIOError:
        os.close(fd)
        return None


@contextmanager
def machine_lock(path=None, held=None):
    """Hold the machine's measurement lock; yields the seconds spent waiting for it.
    `held`: the fd of a lock try_machine_lock already took (released here at the end)."""
    fd = held if held is not None else open_lock(path)
    try:
        t0 = time.monotonic()
        if held is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield round(time.monotonic() - t0, 3)
    finally:
        os.close(fd)                 # releases the lock


STUDY_LOCK = ".numaplace-workflow.lock"


def hold_study(results_dir):
    """One workflow at a time on a study's results, whichever checkout (working
    directory) it runs from: Snakemake's own lock lives in the working directory's
    .snakemake/, so two checkouts sharing results/ (a symlink, a shared disk) would both
    measure the same runs, each setting aside the other's files. An flock on
    results/<study>/.numaplace-workflow.lock, held by the Snakemake process until it exits
    (the kernel drops it when it dies). Returns (fd, None), or (None, who holds it)."""
    path = Path(results_dir) / STUDY_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        try:
            holder = path.read_text().strip()
        except OSError:
            holder = ""
        return None, holder or "a process that did not say which"
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"Snakemake pid {os.getpid()} on {os.uname().nodename} in {os.getcwd()}\n".encode())
    except OSError:
        pass                     # opened read-only: the lock holds all the same
    return fd, None


def die_with_parent():
    """preexec_fn of the benchmark: SIGKILL when the runner dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def _start_time(pid):
    """A live process's start time (clock ticks since boot): a pid plus this names one
    process, even after the pid is reused. None for a process that is gone or a zombie
    (killed, not yet reaped by its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def snakemake_ancestor(pid=None):
    """(pid, start time) of the nearest ancestor that is a Snakemake process, or None."""
    pid = os.getppid() if pid is None else pid
    while pid > 1:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        if b"snakemake" in cmdline:
            return pid, _start_time(pid)
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
    return None


class AncestorWatch(threading.Thread):
    """Calls on_gone() once if the watched process ends (polled: no pidfd for a
    non-child before Linux 5.3's pidfd_open, and polling costs ~10 µs a second)."""

    def __init__(self, ancestor, on_gone, interval=0.5):
        super().__init__(daemon=True)
        self.ancestor, self.on_gone, self.interval = ancestor, on_gone, interval
        self.gone = False
        # not `_stop`: threading.Thread has a method of that name, which a fork (a
        # subprocess with preexec_fn, while the watch runs) calls in the child
        self._halt = threading.Event()

    def run(self):
        pid, started = self.ancestor
        while not self._halt.wait(self.interval):
            if _start_time(pid) != started:
                self.gone = True
                self.on_gone()
                return

    def stop(self):
        self._halt.set()


def is_disk_full(e):
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)
