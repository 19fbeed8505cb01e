"""The study file as the workflow read it (numaplace.plan.frozen): the bytes frozen at the
start and their sha256, the copy every later process reads instead of the file it names, and
the line said at the end when the file no longer holds what was measured."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import yaml

from numaplace import ConfigError
from numaplace.core.loader import MAX_FILE_BYTES
from numaplace.plan import frozen

pytestmark = pytest.mark.unit

CONFIG = Path(__file__).resolve().parents[1] / "config"
STUDY = {"study": "a", "platform": "x4600", "benchmarks": ["cg"], "classes": ["S"], "repetitions": 3,
         "experiments": [{"name": "two", "placements": [{"compact": [2]}]}]}


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.setenv(frozen.ENV, "")             # restored after the test: freeze() sets it
    monkeypatch.chdir(tmp_path)
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    return tmp_path


def test_what_was_read_is_the_exact_bytes_with_their_sha256(here):
    study, read = frozen.read_study(here / "study.yaml", CONFIG)
    data = (here / "study.yaml").read_bytes()
    assert read.file == str(here / "study.yaml") and read.data == data
    assert read.sha256 == hashlib.sha256(data).hexdigest() and len(read.at) == len("2026-01-01 12:00:00")
    assert study.config["repetitions"] == 3


def test_freezing_writes_the_copy_its_digest_and_tells_every_later_process(here, monkeypatch):
    """sha256sum -c reads the digest file; NUMAPLACE_FROZEN_STUDY names the study file, the copy and when."""
    _, read = frozen.read_study("study.yaml", CONFIG)
    target = frozen.freeze(read, here / "results" / "a")
    assert target == here / "results" / "a" / "study.frozen.yaml" and target.read_bytes() == read.data
    assert (here / "results" / "a" / "study.frozen.yaml.sha256").read_text() == f"{read.sha256}  study.frozen.yaml\n"
    assert json.loads(os.environ[frozen.ENV]) == {"study_file": str(here / "study.yaml"), "frozen": str(target),
                                                  "read_at": read.at}
    assert sorted(p.name for p in (here / "results" / "a").iterdir()) == ["study.frozen.yaml", "study.frozen.yaml.sha256"]
    os.link(here / "study.yaml", here / "alias.yaml")             # the same file by another name
    (here / "study.yaml").write_text(yaml.safe_dump({**STUDY, "repetitions": 7}))
    monkeypatch.setattr(frozen.time, "strftime", lambda fmt: "later")
    study, again = frozen.read_study("study.yaml", CONFIG)
    assert again.data == read.data and again.at == read.at and study.config["repetitions"] == 3
    assert again.file == "study.yaml"                               # the file as named, not the copy
    assert frozen._frozen_copy_for(here / "other.yaml") is None
    _, other = frozen.read_study(here / "alias.yaml", CONFIG)
    assert other.data == read.data and other.file == str(here / "alias.yaml")


@pytest.mark.parametrize("env", ["", "null", "{not json", json.dumps({"frozen": "x"}), json.dumps([1])])
def test_without_a_usable_freeze_the_study_file_itself_is_read(here, monkeypatch, env):
    monkeypatch.setenv(frozen.ENV, env)
    assert frozen._frozen_copy_for(here / "study.yaml") is None
    _, read = frozen.read_study(here / "study.yaml", CONFIG)
    assert read.data == (here / "study.yaml").read_bytes()


def test_only_a_regular_files_bytes_are_read_and_at_most_one_past_the_limit(here):
    big = here / "big.yaml"
    big.write_bytes(b"#" * (MAX_FILE_BYTES + 10))
    assert len(frozen._bytes(big)) == MAX_FILE_BYTES + 1
    assert frozen._bytes(here / "study.yaml") == (here / "study.yaml").read_bytes()
    assert frozen._bytes(here / "absent.yaml") is None
    os.mkfifo(here / "fifo")
    assert frozen._bytes(here / "fifo") is None                     # never blocks


def test_a_changed_study_file_is_said_once_the_study_ends(here):
    _, read = frozen.read_study("study.yaml", CONFIG)
    assert frozen.changed_note(read, "a", "results/a") is None
    (here / "study.yaml").write_text(yaml.safe_dump({**STUDY, "repetitions": 4}))
    assert frozen.changed_note(read, "a", "results/a") == (
        f"numaplace: study.yaml changed while study a ran; this run followed the version read at {read.at} "
        "(results/a/study.frozen.yaml); run the workflow again to measure the new version")


def test_a_study_file_that_keeps_changing_while_read_is_refused(here, monkeypatch):
    reads = iter(range(100))
    monkeypatch.setattr(frozen, "_bytes", lambda path: str(next(reads)).encode())
    with pytest.raises(ConfigError) as e:
        frozen.read_study(here / "study.yaml", CONFIG)
    assert str(e.value) == (f"{here / 'study.yaml'}: study: changed while it was read; start the workflow again "
                            "once it is saved")
    assert next(reads) == 10                       # five tries, each reading the bytes before and after


def test_a_study_path_that_is_a_folder_is_one_line_not_a_traceback(here):
    """`numaplace run some-folder/` is refused by the loader's one line, like any other
    non-regular study file, instead of an IsADirectoryError from the freezing step."""
    (here / "studies").mkdir()
    with pytest.raises(ConfigError, match="is a directory, not a regular study file"):
        frozen.read_study(str(here / "studies"), str(CONFIG))
