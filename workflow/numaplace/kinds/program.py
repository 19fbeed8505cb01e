"""The engineer's own program as a benchmark kind: a study's `programs:` entry.

A study names a command (argv, never a shell line), optionally how to build it, its
thread-count variable, a pattern its stdout must match to count as a correct run, where
its timed section's seconds are (else the run's wall time), a figure of merit with unit and
direction, its working set and the model that explains it. From then on it is a kind like
CG: every placement, capture, fidelity judgement, repetition, round, statistic, answer
line, launch line and compare applies to it.

One definition of best (as for NPB): placements are ranked by the program's time; the
figure of merit is parsed, kept and shown beside it, and where it ranks the best and the
worst placement the other way than the time, the answer says so.

A program kind is defined in every process that handles its runs from the definition
itself (`define`): the study (plan), the build job (its --settings), the measure job (the
run spec), the tables stage (the records), the later stages (tables/programs.json).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from numaplace import BuildError, ConfigError
from numaplace.core.schema import check
from numaplace.kinds import KINDS, ExplainModel, Kind, ended, kind, register, schema_words

PROGRAM_CLASS = "X"             # one class: the program's size is in its command
STDOUT_SCANNED = 4 << 20        # characters of stdout the patterns read (its tail): bounded time
LINE_SCANNED = 4096             # ... and of each of its lines
DIGEST_FILES, DIGEST_BYTES = 2000, 256 << 20   # what of the program's folder its build key reads
BUILD_PRODUCTS = ("*.o", "*.obj", "*.mod", "*.a", "*.so", "*.x", "*.pyc", "__pycache__")
WALL_RESOLUTION_S = 1e-4        # the runner's wall time is kept to 4 decimals
DEFAULT_SECONDS = 60.0          # a run's estimate when the study gives none
DEFAULT_WORKING_SET_MB = 1024   # a batch job's memory request when the study gives none

# the explain models a study may declare (numaplace.tables.explain): each thread reads its
# own data (no share of its loads reaches the others'); bandwidth-bound threads on one node
# contend for its bandwidth
EXPLAIN = {"latency-bound": ExplainModel("memlat", lambda cls, threads: 0.0),
           "bandwidth-bound": ExplainModel("membw", lambda cls, threads: 0.0, contends=True)}


class Program(Kind):
    family = "program"
    classes = (PROGRAM_CLASS,)
    variants = ("default",)
    follows_npb_source = False
    builds_itself = True
    metric = "time_s"
    unit = "s"
    higher_is_better = False

    def __init__(self, name, definition):
        self.name, self.definition = name, definition
        self.title = definition.get("title") or name
        self.explain = EXPLAIN.get(definition.get("explain"))
        self.explain_said = definition.get("explain") or "none declared"
        self._success = re.compile(definition["success"], re.M)
        self._time = re.compile(definition["time"], re.M) if definition.get("time") else None
        fom = definition.get("figure_of_merit") or {}
        self._fom = re.compile(fom["pattern"], re.M) if fom else None
        self.fom_unit = fom.get("unit", "")
        self.fom_higher_is_better = fom.get("higher_is_better", True)

    # -- its command ---------------------------------------------------------------
    @property
    def executable(self):
        return self.definition["executable"]

    def binary_name(self, cls):
        return Path(self.executable).name

    def shown_program(self, cls):
        return self.executable

    def command_args(self, cls):
        return tuple(self.definition["command"][1:])

    def thread_env(self, threads):
        var = self.definition.get("threads_env", "OMP_NUM_THREADS")
        return {} if var == "OMP_NUM_THREADS" else {var: str(threads)}

    def case_name(self, cls):
        return self.title

    # -- its build: its own command in its own folder --------------------------------
    def build_binary(self, binary, log):
        """Run the study's build command (argv, no shell) in the program's folder; the
        binary is the command's executable there, not copied (its sha256 is recorded)."""
        d = self.definition
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as f:
            if d.get("build"):
                f.write("$ " + " ".join(d["build"]) + f"   (in {d['directory']})\n")
                f.flush()
                rc = subprocess.run(d["build"], cwd=d["directory"], stdout=f, stderr=subprocess.STDOUT).returncode
                if rc != 0:
                    raise BuildError(f"{self.name}: build command failed ({ended(rc)}; log: {log})")
            else:
                f.write("(no build command: the program is run as it is)\n")
        exe = Path(self.executable)
        if not (exe.is_file() and os.access(exe, os.X_OK)):
            raise BuildError(f"{self.name}: {exe} is not an executable file"
                             + (" after its build" if d.get("build") else "") + f" (log: {log})")
        return exe

    # -- its output -----------------------------------------------------------------
    def parse(self, stdout):
        # the tail, each line cut to LINE_SCANNED characters: a pattern's time stays bounded
        text = "\n".join(line[:LINE_SCANNED] for line in stdout[-STDOUT_SCANNED:].splitlines())
        time_s, printed = _number(self._time, text, printed=True)
        out = {"complete": True, "verified": bool(self._success.search(text)),
               "time_s": time_s, "fom": _number(self._fom, text), "fom_unit": self.fom_unit or None,
               "time_from": "stdout" if time_s is not None else None,
               # the last printed digit: two times closer than that cannot be told apart
               "time_resolution_s": resolution(printed) if time_s is not None else None}
        return out

    def complete_output(self, output, rec):
        """The run's wall time where the study gave no time pattern."""
        if self._time is None and output.get("time_s") is None and rec.get("wall_s") is not None:
            output["time_s"], output["time_from"] = rec["wall_s"], "wall"
            output["time_resolution_s"] = WALL_RESOLUTION_S

    def outcome(self, output, exit_status):
        if exit_status != 0:
            return "failed", ended(exit_status)
        if not output["verified"]:
            return "unverified", f"stdout does not match its success pattern {self.definition['success']!r}"
        if self._time is not None and output.get("time_s") is None:
            return "failed", f"no time in stdout (pattern {self.definition['time']!r})"
        if self._fom is not None and output.get("fom") is None:
            return "failed", f"no figure of merit in stdout (pattern {self.definition['figure_of_merit']['pattern']!r})"
        return "ok", None

    # -- what it costs ----------------------------------------------------------------
    def run_seconds(self, cls, threads, args, speed=1.0):
        return float(self.definition.get("seconds", DEFAULT_SECONDS))

    def estimate(self, cls):
        return (float(self.definition.get("seconds", DEFAULT_SECONDS)),
                int(self.definition.get("working_set_mb", DEFAULT_WORKING_SET_MB)))

    def working_set_mb(self, cls):
        return self.definition.get("working_set_mb")

    def build_digest(self):
        """Its definition and the sources in its folder: a changed source is a new build
        (read once per process: every run of a plan asks)."""
        if getattr(self, "_digest", None) is None:
            self._digest = self._build_digest()
        return self._digest

    def _build_digest(self):
        h = hashlib.sha256(json.dumps(self.definition, sort_keys=True).encode())
        h.update(folder_digest(self.definition["directory"], self.executable).encode())
        return h.hexdigest()[:12]


def _number(rx, text, printed=False):
    """The number of the pattern's last match (a program's final report), or None; with
    printed, (number, its text)."""
    value, shown = None, None
    m = None
    for m in (rx.finditer(text) if rx is not None else ()):
        pass
    if m is not None:
        shown = m.group(1) if rx.groups else m.group(0)
        try:
            value = float(shown)
        except ValueError:
            value = None
    return (value, shown) if printed else value


def resolution(printed):
    """The value of the last digit of a printed number: '0.352812' → 1e-06, '12' → 1."""
    mantissa = printed.strip().lower().split("e")[0]
    exponent = int(printed.lower().split("e")[1]) if "e" in printed.lower() else 0
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (exponent - decimals)


def folder_digest(directory, executable=None):
    """sha256 of the source files under a program's folder (depth 3): build products
    (ELF files, objects, the executable itself) are not sources, so that building does
    not change the key it was built under."""
    import fnmatch
    h, total = hashlib.sha256(), 0
    root = Path(directory)
    files = sorted(p for level in range(1, 5) for p in root.glob("/".join(["*"] * level)))[:DIGEST_FILES]
    for p in files:
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts) or \
                any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in BUILD_PRODUCTS):
            continue
        try:
            st = p.lstat()
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or (executable and str(p) == str(executable)) \
                or total + st.st_size > DIGEST_BYTES:
            continue
        with open(p, "rb") as f:
            data = f.read()
        if data[:4] == b"\x7fELF":
            continue
        total += st.st_size
        h.update(f"{rel}\0".encode())
        h.update(data)
    return h.hexdigest()


# -- definitions: from a study, a build's settings, a run spec, a record ----------------
def resolve(name, given, base, where):
    """A study's program entry (schema-checked) as its definition: folder and executable
    as absolute paths, patterns compiled once here so a bad one is refused in one line."""
    entry = f"programs.{name}"
    if name in KINDS and not isinstance(KINDS[name], Program):
        raise ConfigError(where, entry, f"{name!r} is one of numaplace's own benchmarks; name the program otherwise")
    d = dict(given)
    folder = Path(d.get("directory", ".")).expanduser()
    folder = (Path(base) / folder) if not folder.is_absolute() else folder
    try:
        folder = folder.resolve()
        if not folder.is_dir():
            raise ConfigError(where, f"{entry}.directory", f"{folder}: no such folder")
    except OSError as e:
        raise ConfigError(where, f"{entry}.directory", f"{folder}: cannot be read ({e.strerror or e})") from None
    d["directory"] = str(folder)
    for key in ("success", "time"):
        _compile(d.get(key), where, f"{entry}.{key}")
    if d.get("figure_of_merit"):
        _compile(d["figure_of_merit"]["pattern"], where, f"{entry}.figure_of_merit.pattern")
    first = d["command"][0]
    if "/" in first:
        exe = (folder / first).resolve()
    else:                                # a command on PATH (python3, a module's binary)
        found = shutil.which(first)
        if not found:
            raise ConfigError(where, f"{entry}.command", f"{first}: not found on PATH (write ./{first} for "
                              f"a file in {folder})")
        exe = Path(found).resolve()
    if not d.get("build") and not (exe.is_file() and os.access(exe, os.X_OK)):
        raise ConfigError(where, f"{entry}.command", f"{exe}: no executable file there; give the program's "
                          "build command (build: [make]) or build it first")
    d["executable"] = str(exe)
    return d


def _compile(pattern, where, entry):
    if pattern is None:
        return
    try:
        rx = re.compile(pattern, re.M)
    except re.error as e:
        raise ConfigError(where, entry, f"{pattern!r} is no regular expression: {e}") from None
    if entry.endswith((".time", ".pattern")) and rx.groups > 1:
        raise ConfigError(where, entry, f"{pattern!r} has {rx.groups} groups: give one, around the number")
    if _nested_repeat(pattern):
        # (a+)+ backtracks exponentially on a line that almost matches: a run's parse would hang
        raise ConfigError(where, entry, f"{pattern!r} repeats a repetition (like (a+)+): its matching time "
                          "can grow exponentially; write the inner part once")


def _nested_repeat(pattern):
    """Does a repeated part of the pattern hold a repetition itself (star height > 1)?"""
    try:
        import re._parser as parser                  # Python 3.11+
    except ImportError:                              # pragma: no cover - older Pythons
        import sre_parse as parser
    repeats = {parser.MAX_REPEAT, parser.MIN_REPEAT, getattr(parser, "POSSESSIVE_REPEAT", None)}

    def walk(items, inside):
        for op, arg in items:
            if op in repeats:
                lo, hi, sub = arg
                many = hi is parser.MAXREPEAT or hi > 1
                if inside and many:
                    return True
                if walk(sub, inside or many):
                    return True
            elif op is parser.SUBPATTERN:
                if walk(arg[-1], inside):
                    return True
            elif op is parser.BRANCH:
                if any(walk(b, inside) for b in arg[1]):
                    return True
            elif op in (parser.ASSERT, parser.ASSERT_NOT):
                if walk(arg[1], inside):
                    return True
        return False
    return walk(parser.parse(pattern), False)


def define(name, definition):
    """Register (or replace) the program kind `name` from its resolved definition; the
    same definition again changes nothing."""
    old = KINDS.get(name)
    if isinstance(old, Program) and old.definition == definition:
        return old
    if old is not None and not isinstance(old, Program):
        raise ValueError(f"program {name!r} would replace numaplace's own kind")
    KINDS.pop(name, None)
    k = register(Program(name, definition))
    schema_words()
    return k


def define_study(config, where, base):
    """The study's programs, checked (their part of the schema first, so that `benchmarks`
    may name them) and defined; the programs of an earlier study in this process are
    dropped."""
    given = config.get("programs") if isinstance(config, dict) else None
    for name in [n for n, k in KINDS.items() if isinstance(k, Program) and n not in (given or {})]:
        del KINDS[name]
    if given is not None:
        check({"programs": given}, "programs", where)
        for name, entry in given.items():
            define(name, resolve(name, entry, base, where))._digest = None   # its sources read afresh
    schema_words()


def from_spec(spec):
    """The kind of a run spec or record: a program's definition travels with it."""
    if spec.get("program"):
        define(spec["bench"], spec["program"])
    return kind(spec["bench"])


def defined():
    """{name: definition} of the program kinds defined in this process."""
    return {n: k.definition for n, k in KINDS.items() if isinstance(k, Program)}


def define_programs(records):
    """Define the programs whose runs these records are (each carries its definition)."""
    for r in records:
        if r.get("program") and r.get("bench"):
            define(r["bench"], r["program"])


PROGRAMS_FILE = "programs.json"     # beside the tables: the stages after them read it


def write_programs(tables_dir):
    path = Path(tables_dir) / PROGRAMS_FILE
    if defined():
        path.write_text(json.dumps(defined(), indent=1, sort_keys=True))
    elif path.exists():
        path.unlink()


def read_programs(tables_dir):
    path = Path(tables_dir) / PROGRAMS_FILE
    if path.is_file():
        for name, definition in json.loads(path.read_text()).items():
            define(name, definition)
