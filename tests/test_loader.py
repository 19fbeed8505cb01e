"""Strict reading of study and platform files and of the paths a command names
(numaplace.core.loader): each refusal word for word, at the bounds it sets (nesting, aliases,
size, characters), and the one line every refusal is shown as."""
from __future__ import annotations

import os

import pytest

from numaplace import ConfigError
from numaplace.core import loader
from numaplace.core.loader import MAX_FILE_BYTES, argument_refusal, load_mapping, one_line, refusal, shown

pytestmark = pytest.mark.unit


def read(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return load_mapping(p)


def told(tmp_path, text, name="s.yaml"):
    with pytest.raises(ConfigError) as e:
        read(tmp_path, text, name)
    assert e.value.where == str(tmp_path / name)
    return e.value.entry, e.value.problem


def test_a_value_is_quoted_whole_up_to_60_characters_then_cut():
    assert shown("a" * 58) == "'" + "a" * 58 + "'"                         # 60 with its quotes
    assert shown("a" * 59) == "'" + "a" * 59 + "…"
    assert shown(3) == "3" and shown("x\ny") == "'x\\ny'"


def test_a_refusal_is_one_printable_line_with_long_parts_cut_at_400():
    assert one_line("a\nb\x00c\x1b") == "a\\nb\\x00c\\x1b"
    assert refusal(ConfigError("s.yaml", "e" * 400, "p" * 400)) == f"invalid study: s.yaml: {'e' * 400}: {'p' * 400}"
    assert refusal(ConfigError("s.yaml", "e" * 401, "bad\nvalue")) == f"invalid study: s.yaml: {'e' * 400}…: bad\\nvalue"
    assert refusal(ConfigError("s.yaml", "x", "p" * 401)) == f"invalid study: s.yaml: x: {'p' * 400}…"


def test_a_commands_argument_is_refused_naming_the_argument_then_the_path():
    assert argument_refusal("plan", ConfigError("/a/b.csv", "--table", "no such file")) == \
        "numaplace plan: --table /a/b.csv: no such file"
    w = "/" + "d" * 400
    assert argument_refusal("report", ConfigError(w, "--out", "x")) == f"numaplace report: --out {w[:400]}…: x"
    assert argument_refusal("report", ConfigError(w[:400], "--out", "p" * 401)) == \
        f"numaplace report: --out {w[:400]}: {'p' * 400}…"


def test_nesting_up_to_32_levels_is_read_and_one_more_refused(tmp_path):
    assert read(tmp_path, "x: " + "[" * 31 + "]" * 31 + "\n")["x"] != []
    assert told(tmp_path, "x: " + "[" * 32 + "]" * 32 + "\n") == ("line 1, column 35", "malformed YAML: nested more than 32 levels deep")


def test_aliases_may_expand_up_to_the_bound_counting_keys_and_values(tmp_path, monkeypatch):
    """{a: 1, b: 2, c: 3} is 7 values once expanded (the mapping, three keys, three values)."""
    monkeypatch.setattr(loader, "MAX_EXPANDED_NODES", 7)
    assert read(tmp_path, "{a: 1, b: 2, c: 3}\n") == {"a": 1, "b": 2, "c": 3}
    monkeypatch.setattr(loader, "MAX_EXPANDED_NODES", 6)
    assert told(tmp_path, "{a: 1, b: 2, c: 3}\n") == ("line 1, column 1", "malformed YAML: aliases expand to more than 6 values")
    monkeypatch.setattr(loader, "MAX_EXPANDED_NODES", 13)           # an alias counts what it expands to
    assert read(tmp_path, "a: &x [1, 2]\nb: [*x, *x]\n") == {"a": [1, 2], "b": [[1, 2], [1, 2]]}
    monkeypatch.setattr(loader, "MAX_EXPANDED_NODES", 12)
    assert told(tmp_path, "a: &x [1, 2]\nb: [*x, *x]\n")[1] == "malformed YAML: aliases expand to more than 12 values"


def test_a_file_may_be_1_mib_and_no_larger(tmp_path):
    (tmp_path / "s.yaml").write_bytes(b"study: a\n" + b"#" * (MAX_FILE_BYTES - 10) + b"\n")
    assert load_mapping(tmp_path / "s.yaml") == {"study": "a"}
    (tmp_path / "s.yaml").write_bytes(b"study: a\n" + b"#" * (MAX_FILE_BYTES - 9) + b"\n")
    with pytest.raises(ConfigError) as e:
        load_mapping(tmp_path / "s.yaml")
    assert (e.value.entry, e.value.problem) == ("study", "larger than 1024 KiB; a study file is a few settings, not data")
    assert MAX_FILE_BYTES == 1 << 20


@pytest.mark.parametrize("text, entry, problem", [
    (b"study: a\ndesc: caf\xe9\n", "line 2", "byte 0xe9 is not UTF-8 text (save the file as UTF-8)"),
    (b"\xff\n", "line 1", "byte 0xff is not UTF-8 text (save the file as UTF-8)"),
    ("study: bad\n  platform: x4600\n", "line 2, column 11", "malformed YAML: mapping values are not allowed in this context"),
    ("study: [a, b\n", "line 2, column 1", "malformed YAML: while parsing a flow sequence, did not find expected ',' or ']'"),
    ("3\n", "(top level)", "expected a mapping of settings (key: value lines), found a single int"),
    ("just text\n", "(top level)", "expected a mapping of settings (key: value lines), found a single text value"),
    ("- 1\n", "(top level)", "expected a mapping of settings (key: value lines), found a list"),
    ("# nothing\n", "(top level)", "expected a mapping of settings (key: value lines), found nothing"),
    ("  \n", "(top level)", "the file is empty; a study file is a mapping of settings"),
    ('  {"a": 1, "a": 2}', "JSON", "key 'a' appears twice in one object"),
    ("run: {timeout: .inf}\n", "run.timeout", "inf is not a number numaplace can use (give a finite number)"),
    ('x: [1, {"y\\tz": 1}]\n', "x[1].y\\tz", "a key contains a control character"),
    ('x: [1, {y: "a\\x01"}]\n', "x[1].y", "'a\\x01' contains a control character (newline, tab, NUL ...); write it on one line"),
    ('description: "a\\rb"\n', "description", "contains the control character \\r at character 2; free text may hold "
                                              "tabs and newlines, no other control character"),
    ("a: 1\nb: 2\na: 3\n", "line 3", "malformed YAML: key 'a' appears twice in one mapping (first on line 1)"),
], ids=["latin1", "first-byte", "bad-indent", "unclosed", "int", "text", "list", "nothing", "blank", "json-after-spaces",
        "infinite", "key-control", "value-control", "description-cr", "duplicate"])
def test_what_is_no_study_is_refused_naming_where(tmp_path, text, entry, problem):
    got = told(tmp_path, text)
    assert got[0].startswith(entry) and got[1] == problem


def test_a_byte_order_mark_is_not_part_of_the_first_key(tmp_path):
    """Editors on Windows save UTF-8 with a BOM: a JSON study so saved is read all the same."""
    assert read(tmp_path, "\ufeffstudy: a\n") == {"study": "a"}
    assert read(tmp_path, '\ufeff{"study": "a"}', "s.json") == {"study": "a"}


def test_a_character_yaml_does_not_allow_is_named_by_its_code_point(tmp_path):
    assert told(tmp_path, "study: bad\x00\n") == ("YAML", "character #x0000 is not allowed in a study or platform file")
    assert told(tmp_path, "study: bad\x07\n") == ("YAML", "character #x0007 is not allowed in a study or platform file")


def test_a_table_a_command_reads_may_be_256_mib_and_is_read_up_to_its_limit(tmp_path):
    assert loader.MAX_TABLE_BYTES == 256 << 20
    f = tmp_path / "m.csv"
    f.write_bytes(b"x" * 1024)
    assert loader.read_file(f, "--table", "table", limit=1024) == b"x" * 1024
    f.write_bytes(b"x" * (1024 + 1))
    with pytest.raises(ConfigError) as e:
        loader.read_file(f, "--table", "table", limit=1024)
    assert str(e.value) == f"{f}: --table: larger than 0 MiB; not a table"
    f.write_bytes(b"x" * ((1 << 20) + 1))
    with pytest.raises(ConfigError, match=r"larger than 1 MiB; not a table$"):
        loader.read_file(f, "--table", "table", limit=1 << 20)


def test_dev_null_is_a_file_a_command_may_write_and_a_directory_is_not(tmp_path):
    assert str(loader.guard_out("/dev/null", "--out")) == "/dev/null"
    with pytest.raises(ConfigError) as e:
        loader.guard_out(tmp_path, "--out")
    assert str(e.value) == f"{tmp_path}: --out: is a directory, not a file to write"
    with pytest.raises(ConfigError) as e:
        loader.guard_out(tmp_path / "a" / "b.txt", "--out")
    assert str(e.value) == f"{tmp_path / 'a' / 'b.txt'}: --out: cannot be written: its folder {tmp_path / 'a'} does not exist"
    assert loader.guard_out(tmp_path / "a" / "b", "--out", folder=True) == tmp_path / "a" / "b"


def test_a_path_a_command_names_is_refused_saying_what_it_is(tmp_path):
    """A dangling link says so; a file where a folder should be names that file."""
    (tmp_path / "gone").symlink_to(tmp_path / "absent.csv")
    with pytest.raises(ConfigError) as e:
        loader.guard_file(tmp_path / "gone", "--table")
    assert str(e.value) == f"{tmp_path / 'gone'}: --table: no such file (a symbolic link to a missing file)"
    with pytest.raises(ConfigError) as e:
        loader.guard_file(tmp_path / "none.csv", "--table")
    assert str(e.value) == f"{tmp_path / 'none.csv'}: --table: no such file"
    with pytest.raises(ConfigError) as e:
        loader.guard_file(tmp_path, "--table", "table")
    assert str(e.value) == f"{tmp_path}: --table: is a directory, not a regular table file"
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(ConfigError) as e:
        loader.guard_out(tmp_path / "f.txt" / "out.csv", "--out")
    assert str(e.value) == f"{tmp_path / 'f.txt' / 'out.csv'}: --out: cannot be written: {tmp_path / 'f.txt'} is a file, not a folder"
    with pytest.raises(ConfigError) as e:
        loader.guard_dir(tmp_path / "f.txt", "--results")
    assert str(e.value) == f"{tmp_path / 'f.txt'}: --results: is a file, not a folder"
    with pytest.raises(ConfigError) as e:
        loader.guard_dir(tmp_path / "nowhere", "--results", "results folder")
    assert str(e.value) == f"{tmp_path / 'nowhere'}: --results: no such results folder"
    assert loader.guard_dir(tmp_path, "--results") == tmp_path


def test_a_json_file_is_json_and_a_yte_template_is_never_run(tmp_path):
    """study.json holding YAML is malformed JSON (as Snakemake reads it), not a YAML study;
    __use_yte__ alone is refused as much as beside settings."""
    assert told(tmp_path, "study: a\n", "s.json") == ("line 1, column 1", "malformed JSON: Expecting value")
    assert told(tmp_path, "__use_yte__: true\n") == (
        "__use_yte__", "YTE templates are not read: numaplace runs no code from a study file; write the values out")
