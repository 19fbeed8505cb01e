"""Strict reading of study and platform files: the only place their text becomes data.

A study file is plain data written by a person: UTF-8 text holding one YAML (or JSON)
mapping. Anything YAML or Snakemake could make of it beyond that (tags that build
objects, duplicate keys where the last silently wins, aliases that expand to gigabytes,
YTE templates that run code) is refused here, in one line naming the file and where.
"""
from __future__ import annotations

import json
import math
import os
import stat
import unicodedata
from pathlib import Path

import yaml

from numaplace import ConfigError

MAX_FILE_BYTES = 1 << 20       # a study of thousands of placements is far smaller
MAX_DEPTH = 32                 # nesting of mappings/lists; a study needs about 8
MAX_EXPANDED_NODES = 200_000   # values once aliases are expanded (billion laughs)
MAX_TEXT_SHOWN = 60            # characters of a bad value quoted in a message


def shown(value):
    """A value as a message quotes it: repr, control characters escaped, bounded."""
    text = repr(value)
    return text if len(text) <= MAX_TEXT_SHOWN else text[:MAX_TEXT_SHOWN] + "…"


def one_line(text):
    """Escape what would break the one-line refusal (newline, NUL, other controls)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def refusal(err):
    """The single line a ConfigError is shown as."""
    entry, problem = (str(x) if len(str(x)) <= 400 else str(x)[:400] + "…" for x in (err.entry, err.problem))
    return one_line(f"invalid study: {err.where}: {entry}: {problem}")


# libyaml's parser when PyYAML has it (ten times faster on a large file), else PyYAML's own
_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_events(text):
    """A first pass over the parser's events, before any value is built: no explicit
    tags, bounded nesting (so composing never recurses deeply)."""
    depth = 0
    for event in yaml.parse(text, Loader=_BASE):
        if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)) and event.tag is not None:
            raise yaml.MarkedYAMLError(None, None, f"YAML tag {shown(event.tag)} is not allowed "
                                       "(write plain values)", event.start_mark)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(None, None, f"nested more than {MAX_DEPTH} levels deep",
                                           event.start_mark)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


class _StrictLoader(_BASE):
    """A SafeLoader without merge keys or duplicate keys, whose aliases may not expand
    beyond a bound (tags and nesting: _check_events)."""

    def construct_document(self, node):
        _check_expansion(node)
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise yaml.MarkedYAMLError(None, None, "merge keys (<<) are not allowed "
                                           "(write the settings out)", key_node.start_mark)
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise yaml.MarkedYAMLError(None, None, f"key {shown(key)} is not text "
                                           "(quote it)", key_node.start_mark)
            if key in seen:
                raise yaml.MarkedYAMLError(None, None, f"key {shown(key)} appears twice in one "
                                           f"mapping (first on line {seen[key] + 1})",
                                           key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


def _check_expansion(root):
    """Count the values the document holds once every alias is expanded (memoised per
    node, so the count itself stays cheap), and refuse cycles."""
    sizes, open_nodes = {}, set()

    def size(node):
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise yaml.MarkedYAMLError(None, None, "an alias refers to the value that "
                                       "contains it", node.start_mark)
        open_nodes.add(key)
        if isinstance(node, yaml.MappingNode):
            n = 1 + sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            n = 1 + sum(size(v) for v in node.value)
        else:
            n = 1
        open_nodes.discard(key)
        if n > MAX_EXPANDED_NODES:
            raise yaml.MarkedYAMLError(None, None, "aliases expand to more than "
                                       f"{MAX_EXPANDED_NODES} values", node.start_mark)
        sizes[key] = n
        return n

    if root is not None:
        size(root)


FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
              (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISSOCK, "a socket"))


def _file_type(mode):
    return next((name for test, name in FILE_TYPES if test(mode)), "not a regular file")


def _not_regular(where, what, mode, path, entry=None):
    """The refusal of a path that is no regular file: opening a FIFO or a terminal
    blocks forever, a device is endless (or has side effects on open)."""
    kind = _file_type(mode)
    link = ""
    if path.is_symlink():
        try:
            link = f" (a symbolic link to {os.path.realpath(path)})"
        except OSError:
            link = " (a symbolic link)"
    raise ConfigError(where, what if entry is None else entry, f"is {kind}{link}, not a regular {what} file")


def read_regular(path, entry, what, limit):
    """Up to limit + 1 bytes of a regular file (more than limit: the caller says what is too
    large); ConfigError(path, entry, ...) for anything else, in words naming the path's kind.
    Stat before opening: nothing but a regular file is ever opened (a FIFO would block
    forever, a device is endless); the opened file is checked again (it may have been
    swapped since), without blocking, before Python wraps it (a directory opened by a race
    would say "Is a directory: 3", its descriptor, not the file)."""
    path = Path(path)
    where = str(path)
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            _not_regular(where, what, mode, path, entry)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                _not_regular(where, what, mode, path, entry)
        except BaseException:
            os.close(fd)
            raise
        with open(fd, "rb") as f:
            return f.read(limit + 1)
    except FileNotFoundError:
        broken = " (a symbolic link to a missing file)" if path.is_symlink() else ""
        raise ConfigError(where, entry, f"no such file{broken}") from None
    except OSError as e:
        raise ConfigError(where, entry, f"cannot be read ({e.strerror or e})") from None


def _read_text(path, what):
    where = str(path)
    raw = read_regular(path, what, what, MAX_FILE_BYTES)
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(where, what, f"larger than {MAX_FILE_BYTES // 1024} KiB; a {what} "
                          "file is a few settings, not data")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise ConfigError(where, f"line {line}", f"byte 0x{raw[e.start]:02x} is not UTF-8 text "
                          "(save the file as UTF-8)") from None
    return text.removeprefix("\ufeff")


def _yaml_problem(e, text):
    if isinstance(e, yaml.reader.ReaderError):
        char = e.character if isinstance(e.character, int) else ord(str(e.character)[:1] or "?")
        return "YAML", f"character #x{char:04x} is not allowed in a study or platform file"
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    entry = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
    problem = getattr(e, "problem", None) or str(e)
    lines = text.splitlines()
    if "'\\t'" in problem or (mark and mark.line < len(lines) and "\t" in lines[mark.line]):
        problem = "a tab character; indent with spaces"
    elif getattr(e, "context", None) and not problem.startswith(("YAML tag", "key ", "merge")):
        problem = f"{e.context}, {problem}"
    return entry, f"malformed YAML: {problem}"


def _parse_yaml(text, where):
    try:
        _check_events(text)
        return yaml.load(text, Loader=_StrictLoader)       # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as e:
        entry, problem = _yaml_problem(e, text)
        raise ConfigError(where, entry, problem) from None
    except (ValueError, RecursionError):   # e.g. an integer of 5000 digits
        raise ConfigError(where, "YAML", "a value cannot be read as a number (thousands of "
                          "digits?)") from None


def _parse_yaml_or_json(text, where):
    # JSON first, as Snakemake reads config files, for a document opening with '{'
    # (a duplicate key refused there, NaN/Infinity where _check_values finds it); YAML
    # when it is no JSON at all
    if text.lstrip().startswith("{"):
        try:
            return _parse_json(text, where)
        except ConfigError as e:
            if not e.problem.startswith("malformed JSON"):
                raise
    return _parse_yaml(text, where)


class _Constant(float):
    """NaN, Infinity or -Infinity as a JSON file spells it: kept until _check_values,
    which names the entry that holds it."""

    def __new__(cls, text):
        value = super().__new__(cls, text)
        value.text = text
        return value


def _refuse_constant(name):
    # not refused here: the JSON parser knows no entry, _check_values does
    return _Constant(name)


def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"key {shown(k)} appears twice in one object")
        out[k] = v
    return out


def _parse_json(text, where):
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise ConfigError(where, f"line {e.lineno}, column {e.colno}", f"malformed JSON: {e.msg}") from None
    except (ValueError, RecursionError) as e:
        raise ConfigError(where, "JSON", str(e) if isinstance(e, ValueError) else "nested too deeply") from None


def _has_control(text):
    return any(not c.isprintable() for c in text)


FREE_TEXT = ("description",)       # keys whose text is prose: may span lines
FREE_TEXT_CONTROLS = "\t\n"        # the only control characters prose may hold


def _free_text_control(text):
    """The first control character (C0, DEL, C1) of prose other than tab and newline:
    a NUL ends the text where C and argv read it, escapes rewrite the terminal."""
    return next((c for c in text if unicodedata.category(c) == "Cc" and c not in FREE_TEXT_CONTROLS), None)


def _check_values(value, where, entry="(top level)"):
    """Finite numbers only; no control characters (newline, NUL, ...) in keys or in
    values, which become names, paths and arguments; descriptions may span lines and
    hold tabs, but no other control character either."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(where, entry, f"{getattr(value, 'text', value)} is not a number numaplace "
                          "can use (give a finite number)")
    if isinstance(value, str) and entry.rsplit(".", 1)[-1] in FREE_TEXT:
        c = _free_text_control(value)
        if c is not None:
            raise ConfigError(where, entry, f"contains the control character {repr(c)[1:-1]} at "
                              f"character {value.index(c) + 1}; free text may hold tabs and "
                              "newlines, no other control character")
    elif isinstance(value, str) and _has_control(value):
        raise ConfigError(where, entry, f"{shown(value)} contains a control character "
                          "(newline, tab, NUL ...); write it on one line")
    if isinstance(value, dict):
        for k, v in value.items():
            sub = k if entry == "(top level)" else f"{entry}.{k}"
            if _has_control(k):
                raise ConfigError(where, one_line(sub), "a key contains a control character")
            _check_values(v, where, sub)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_values(v, where, f"{entry}[{i}]")


def load_mapping(path, what="study"):
    """The mapping a study or platform file holds; ConfigError for anything else."""
    path = Path(path)
    where = str(path)
    text = _read_text(path, what)
    if not text.strip():
        raise ConfigError(where, "(top level)", f"the file is empty; a {what} file is a mapping "
                          "of settings")
    data = _parse_json(text, where) if path.suffix == ".json" else _parse_yaml_or_json(text, where)
    if not isinstance(data, dict):
        kind = {list: "a list", str: "a single text value", type(None): "nothing"}.get(
            type(data), f"a single {type(data).__name__}")
        raise ConfigError(where, "(top level)", f"expected a mapping of settings (key: value "
                          f"lines), found {kind}")
    if "__use_yte__" in data:
        raise ConfigError(where, "__use_yte__", "YTE templates are not read: numaplace runs no "
                          "code from a study file; write the values out")
    _check_values(data, where)
    return data


# -- paths a command's arguments name (numaplace plan, explain, compare, retry-failed,
# report): the same guards as a study file's, refused in one line naming the argument
MAX_TABLE_BYTES = 256 << 20    # a CSV a command reads (memory_matrix.csv): far larger than any study's


def guard_file(path, argument, what="file"):
    """A file an argument names, to be read: it exists and is a regular file (checked
    without opening it). ConfigError(path, argument, ...) otherwise."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        broken = " (a symbolic link to a missing file)" if path.is_symlink() else ""
        raise ConfigError(str(path), argument, f"no such file{broken}") from None
    except OSError as e:
        raise ConfigError(str(path), argument, f"cannot be read ({e.strerror or e})") from None
    if not stat.S_ISREG(mode):
        _not_regular(str(path), what, mode, path, argument)
    return path


def read_file(path, argument, what="file", limit=MAX_TABLE_BYTES):
    """The bytes of a file an argument names, through read_regular's guards, at most
    limit of them."""
    raw = read_regular(path, argument, what, limit)
    if len(raw) > limit:
        raise ConfigError(str(path), argument, f"larger than {limit >> 20} MiB; not a {what}")
    return raw


def _mode(target, path, argument, missing, doing):
    """stat(target)'s mode, or the argument's one line about `path`: `missing` when there is
    nothing, else what `doing` met."""
    try:
        return os.stat(target).st_mode
    except FileNotFoundError:
        raise ConfigError(str(path), argument, missing) from None
    except OSError as e:
        raise ConfigError(str(path), argument, f"{doing} ({e.strerror or e})") from None


def guard_dir(path, argument, what="folder"):
    """A folder an argument names, to be read: it exists and is a directory."""
    path = Path(path)
    mode = _mode(path, path, argument, f"no such {what}", "cannot be read")
    if not stat.S_ISDIR(mode):
        raise ConfigError(str(path), argument, f"is {_file_type(mode) if not stat.S_ISREG(mode) else 'a file'}, "
                          f"not a {what}")
    if not os.access(path, os.R_OK | os.X_OK):
        raise ConfigError(str(path), argument, f"cannot be read (permission denied)")
    return path


def guard_out(path, argument, folder=False, parents=False):
    """A path an argument names, to be written: a regular file (or, folder=True, a
    directory) or nothing yet, in a folder that exists (for a folder, or parents=True: whose
    nearest existing ancestor is one, the command creates the rest) and may be written.
    Nothing is created here."""
    path = Path(path)
    want = "folder" if folder else "file"
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):     # the folder says why (below)
        mode = None
    except OSError as e:
        raise ConfigError(str(path), argument, f"cannot be written ({e.strerror or e})") from None
    if mode is not None:
        # /dev/null is where a user sends what they do not want kept: a file to write
        ok = stat.S_ISDIR(mode) if folder else (stat.S_ISREG(mode) or os.path.realpath(path) == os.devnull)
        if not ok:
            kind = "a file" if stat.S_ISREG(mode) else _file_type(mode)
            raise ConfigError(str(path), argument, f"is {kind}, not a {want} to write")
        if not os.access(path, os.W_OK | (os.X_OK if folder else 0)):
            raise ConfigError(str(path), argument, f"cannot be written (permission denied)")
        return path
    parent = path.absolute().parent
    if folder or parents:                    # created with its parents: the nearest that exists
        while not os.path.lexists(parent) and parent != parent.parent:
            parent = parent.parent
    else:                                    # a file below a file: that file is no folder
        while not os.path.lexists(parent) and os.path.lexists(parent.parent) and \
                not os.path.isdir(parent.parent):
            parent = parent.parent
    pmode = _mode(parent, path, argument, f"cannot be written: its folder {parent} does not exist",
                  "cannot be written")
    if not stat.S_ISDIR(pmode):
        raise ConfigError(str(path), argument, f"cannot be written: {parent} is "
                          f"{'a file' if stat.S_ISREG(pmode) else _file_type(pmode)}, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(str(path), argument, f"cannot be written: its folder {parent} is not writable")
    return path


def argument_refusal(command, err):
    """The single line a ConfigError about a command's argument is shown as:
    `numaplace <command>: <argument> <path>: <problem>`."""
    where = err.where if len(err.where) <= 400 else err.where[:400] + "…"
    problem = err.problem if len(err.problem) <= 400 else err.problem[:400] + "…"
    return one_line(f"numaplace {command}: {err.entry} {where}: {problem}")
