"""The study file as the workflow read it (issue 30, fault 5).

Snakemake reads a workflow's files more than once: the main process when it starts,
then every job it starts as a process of its own (the plan's `run:` job, every cluster
job) parses the Snakefile again, and so the study file. A study file edited while its study runs gave plan.tsv from the new file and
runs from the old one. So the main process freezes what it read (onstart): the exact
bytes go to results/<study>/study.frozen.yaml (and its sha256), and the environment
variable NUMAPLACE_FROZEN_STUDY, which every process it starts inherits (locally, and on a
cluster: Slurm's --export=ALL, qsub -V), tells them to read that copy instead of the study
file it names. At the end, a study file that no longer holds those bytes is said.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from pathlib import Path
from typing import NamedTuple

from numaplace import ConfigError
from numaplace.core.loader import MAX_FILE_BYTES
from numaplace.plan.study import load_study_file

ENV = "NUMAPLACE_FROZEN_STUDY"
FROZEN = "study.frozen.yaml"


class Read(NamedTuple):
    """What the workflow read: the study file as named, its bytes and when they were read."""
    file: str
    data: bytes
    at: str

    @property
    def sha256(self):
        return hashlib.sha256(self.data).hexdigest()


def _bytes(path):
    """A regular file's bytes, or None (missing, no regular file, unreadable). Never
    blocks: a FIFO is not read (the loader says what is wrong with it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):    # before open(): io refuses a directory's fd
        os.close(fd)
        return None
    with open(fd, "rb") as f:
        try:
            return f.read(MAX_FILE_BYTES + 1)
        except OSError:
            return None


def _frozen_copy_for(path):
    """(frozen copy, time read) when this process belongs to a workflow that froze the study
    file `path`, else None."""
    try:
        frozen = json.loads(os.environ.get(ENV) or "null")
        given, named = Path(path).absolute(), Path(frozen["study_file"])
        same = given == named or (given.exists() and named.exists() and os.path.samefile(given, named))
        return (frozen["frozen"], frozen["read_at"]) if same else None
    except (ValueError, TypeError, KeyError, OSError):
        return None


def read_study(path, config_dir):
    """(Study, Read): the study in `path` and the exact bytes it was made from; in a
    process of a workflow that froze it, from the frozen copy."""
    frozen = _frozen_copy_for(path)
    source, at = frozen if frozen else (path, None)
    for _ in range(5):
        read_at = at or time.strftime("%Y-%m-%d %H:%M:%S")
        before = _bytes(source)
        # refuses what is no study, in one line; relative paths from the file as named
        study = load_study_file(source, config_dir, origin=Path(path).absolute().parent)
        if before is not None and _bytes(source) == before:   # not saved while being read
            return study, Read(str(path), before, read_at)
    raise ConfigError(str(source), "study", "changed while it was read; start the workflow again "
                      "once it is saved")


def freeze(read, results_dir):
    """At the workflow's start (main process): the bytes read, as results/<study>/study.
    frozen.yaml and its sha256; every process started from now on reads that copy."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    target = results_dir / FROZEN
    for name, data in ((FROZEN, read.data), (FROZEN + ".sha256", f"{read.sha256}  {FROZEN}\n".encode())):
        part = results_dir / f".{name}.part"
        part.write_bytes(data)
        os.replace(part, results_dir / name)
    os.environ[ENV] = json.dumps({"study_file": str(Path(read.file).absolute()),
                                  "frozen": str(target.absolute()), "read_at": read.at})
    return target


def changed_note(read, study_name, results_dir):
    """The warning line when the study file no longer holds what the workflow read, else None."""
    now = _bytes(read.file)
    if now is not None and hashlib.sha256(now).hexdigest() == read.sha256:
        return None
    shown = Path(read.file).absolute()
    if shown.is_relative_to(Path.cwd()):          # as the person named it (Snakemake: absolute)
        shown = shown.relative_to(Path.cwd())
    return (f"numaplace: {shown} changed while study {study_name} ran; this run followed the version "
            f"read at {read.at} ({Path(results_dir) / FROZEN}); run the workflow again to measure the "
            "new version")
