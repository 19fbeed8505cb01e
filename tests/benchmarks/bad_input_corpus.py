#!/usr/bin/env python3
"""Runs every case of the bad-input corpus (tests/test_bad_input.py) as a user would:
`snakemake -n --cores 1 plan --config study=<file>` in a fresh copy of the workflow.
Prints, per kind, how many are refused with numaplace's one line (exit ≠ 0, exactly one
`invalid study: ` line, no traceback, no job listed, nothing written under results/),
refused otherwise, or accepted; and the slowest wall time and largest peak RSS.

Then (issue 45, items 4 and 6) the cases of tests/test_commands_guarded.py: the study
arguments checked where declared (EXTRA, through snakemake as above), and the commands
beside the workflow (COMMANDS: `python -m numaplace <command> ...` on a link to /dev/zero,
a FIFO, a folder, a missing file, an unwritable --out, the same folder twice, an unknown
status), each judged: exit 2, exactly one line on stderr naming the argument, no
traceback, within --timeout; with its wall time and peak RSS."""
import argparse
import importlib.util
import os
import sys
import tempfile
import time
from collections import Counter

from _common import REPO, copy_workflow  # the script's folder is on sys.path


def _corpus():
    """The cases of tests/test_bad_input.py, loaded from its file (tests/ is no package)."""
    spec = importlib.util.spec_from_file_location("bad_input_cases", REPO / "tests" / "test_bad_input.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_cases = _corpus()
CASES, KINDS, write_case = _cases.CASES, _cases.KINDS, _cases.write_case
study, exp = _cases.study, _cases.exp


def _mem(bench, args, placements=({"cpus": "0-1"},), **extra):
    return [{"name": "e", "benchmarks": [bench], "classes": ["X"], "args": list(args),
             "placements": list(placements), **extra}]


# the study's arguments checked where declared (issue 45, item 6): same form as CASES
EXTRA = [
    ("declared", "stream-reps-past-its-cap", study(experiments=_mem("stream", ["--reps", "201"])), None,
     "args[1]", ["from 1 to 200"]),
    ("declared", "stream-figure-too-tall", study(launcher="numactl", figures={"width": 7, "dpi": 1200, "formats": ["png"]},
                                                 experiments=_mem("stream", ["--sizes", "1M"], [{"layout": "1/1"}])),
     None, "figures.dpi", ["px tall", "stream's figure"]),
    ("declared", "loadlat-one-cpu", study(experiments=_mem("loadlat", ["--sizes", "1M"], [{"cpus": "0"}],
                                                           binding=["threads"])), None, "placements", ["1 thread"]),
    ("declared", "budget-zero", study(budget=0), None, "budget", ["not positive", "90 min"]),
    ("declared", "budget-negative", study(budget="-5 min"), None, "budget", ["negative", "min or h"]),
    ("declared", "budget-days", study(budget="90 days"), None, "budget", ["'days' is not allowed"]),
    ("declared", "value-of-590-kB", study(experiments=_mem("membw", ["--reps", "1" * 590_000])), None, "args[1]",
     ["expected a whole number"]),
    ("declared", "size-of-590-kB", study(experiments=_mem("membw", ["--sizes", "1" * 590_000 + "T"])), None,
     "args[1]", ["is not a size"]),
]

def _program(**entry):
    """A study running a program of its own (numaplace.kinds.program), its entry changed."""
    return study(programs={"own": {"command": ["true"], "success": "ok", **entry}}, benchmarks=["own"])


EXTRA += [
    ("program", "program-shell-line", _program(command="make && ./own"), None, "programs.own.command", ["list"]),
    ("program", "program-bad-regex", _program(success="(unclosed"), None, "programs.own.success",
     ["no regular expression"]),
    ("program", "program-exponential-regex", _program(success="^(\\w+\\s?)+$"), None, "programs.own.success",
     ["exponentially"]),
    ("program", "program-not-on-path", _program(command=["no-such-program-xyz"]), None, "programs.own.command",
     ["not found on PATH"]),
    ("program", "program-named-cg", study(programs={"cg": {"command": ["true"], "success": "ok"}}), None,
     "programs.cg", ["numaplace's own benchmarks"]),
]
EXTRA_KINDS = ("declared", "program")
REAL = REPO / "tests" / "fixtures" / "real"


def _commands(d):
    """(name, argv after `numaplace`, words the one line holds) in folder d: each path made."""
    os.mkfifo(d / "fifo.csv")
    (d / "zero.csv").symlink_to("/dev/zero")
    (d / "folder.csv").mkdir()
    (d / "a-file").write_text("x\n")
    (d / "plan.tsv").write_text("run_id\n")
    (d / "study.yaml").write_text("study: s\nplatform: x4600\nexperiments: [{name: e, placements: [{cpus: '0'}]}]\n")
    tables = d / "tables"
    from numaplace.tables import aggregate
    aggregate.write_tables(REAL / "vm", tables)
    study = d / "results" / "vm"
    import shutil
    shutil.copytree(REAL / "vm", study)
    report = ["report", "--results", study, "--plan", d / "plan.tsv", "--tables", d / "r/tables", "--figures",
              d / "r/figures", "--summary", d / "r/summary.md", "--html", d / "r/report.html"]

    def with_(argv, opt, value):
        argv = list(argv)
        argv[argv.index(opt) + 1] = value
        return argv
    return [
        ("explain-matrices-dev-zero", ["explain", "--tables", tables, "--matrices", d / "zero.csv"], ["--matrices"]),
        ("explain-matrices-fifo", ["explain", "--tables", tables, "--matrices", d / "fifo.csv"], ["--matrices"]),
        ("explain-matrices-folder", ["explain", "--tables", tables, "--matrices", d / "folder.csv"], ["--matrices"]),
        ("explain-matrices-missing", ["explain", "--tables", tables, "--matrices", d / "missing.csv"], ["--matrices"]),
        ("explain-tables-missing", ["explain", "--tables", d / "no-tables"], ["--tables"]),
        ("explain-tables-fifo", ["explain", "--tables", d / "fifo.csv"], ["--tables"]),
        ("explain-out-unwritable", ["explain", "--tables", tables, "--out", d / "a-file" / "x.csv"], ["--out"]),
        ("compare-same-folder", ["compare", study, study / ".." / "vm", "--out", d / "cmp"], ["results[2]"]),
        ("compare-missing-folder", ["compare", study, d / "results" / "vmm", "--out", d / "cmp"], ["results[2]"]),
        ("compare-dev-zero", ["compare", study, d / "zero.csv", "--out", d / "cmp"], ["results[2]"]),
        ("compare-out-unwritable", ["compare", study, REAL / "vm-balancing", "--out", d / "a-file" / "cmp"], ["--out"]),
        ("retry-failed-mistyped", ["retry-failed", d / "results" / "vmm"], ["results folder"]),
        ("retry-failed-unknown-status", ["retry-failed", study, "--status", "faild"], ["--status", "timeout"]),
        ("report-plan-fifo", with_(report, "--plan", d / "fifo.csv"), ["--plan"]),
        ("report-plan-dev-zero", with_(report, "--plan", d / "zero.csv"), ["--plan"]),
        ("report-plan-missing", with_(report, "--plan", d / "missing.tsv"), ["--plan"]),
        ("report-results-missing", with_(report, "--results", d / "results" / "vmm"), ["--results"]),
        ("report-html-unwritable", with_(report, "--html", d / "a-file" / "r.html"), ["--html"]),
        ("plan-out-unwritable", ["plan", d / "study.yaml", "--out", d / "a-file" / "plan.tsv"], ["--out"]),
        ("plan-study-fifo", ["plan", d / "fifo.csv"], ["named pipe"]),
        ("plan-study-dev-zero", ["plan", d / "zero.csv"], ["character device"]),
    ]


def _spawn(argv, cwd, out, timeout):
    """Run argv with stdout+stderr to out (stderr alone to out.err): (exit status or
    'hangs', wall s, peak RSS MB of the child)."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.chdir(cwd)
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        err = os.open(str(out) + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(err, 2)
        os.execv(sys.executable, [sys.executable, *map(str, argv)])
    deadline = t0 + timeout
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            _, _, usage = os.wait4(pid, 0)
            return "hangs", timeout, usage.ru_maxrss // 1024
        time.sleep(0.02)
    return os.waitstatus_to_exitcode(status), time.monotonic() - t0, usage.ru_maxrss // 1024


def run_commands(timeout):
    """Each command case in a fresh folder: verdict, wall, RSS, its line."""
    counts, worst_wall, worst_rss = Counter(), 0.0, 0
    with tempfile.TemporaryDirectory() as top:
        from pathlib import Path
        top = Path(top)
        for name, argv, words in _commands(top):
            out = top / f"{name}.out"
            code, wall, rss = _spawn(["-m", "numaplace", *argv], top, out, timeout)
            err = (out.with_name(out.name + ".err")).read_text(errors="replace") if code != "hangs" else ""
            lines = err.strip().splitlines()
            ok = code == 2 and len(lines) == 1 and "Traceback" not in err and all(w in lines[0] for w in words)
            verdict = "one line" if ok else "hangs" if code == "hangs" else "unclear" if code else "accepted"
            counts[verdict] += 1
            worst_wall, worst_rss = max(worst_wall, wall), max(worst_rss, rss)
            shown = lines[-1] if lines else ""
            print(f"{'command':15} {name:32} {verdict:9} {wall:5.1f} s {rss:4d} MB  "
                  f"{shown[:160] + ('…' if len(shown) > 160 else '')}", flush=True)
    print()
    total = sum(counts.values())
    print(f"{'commands':15} {counts['one line']:3d} of {total:3d} refused with numaplace's line "
          f"({counts['unclear']} unclear, {counts['accepted']} accepted, {counts['hangs']} hang); "
          f"slowest {worst_wall:.1f} s wall, largest peak RSS {worst_rss} MB (whole python process)")


def run_case(case, timeout):
    kind, name, data, plat, entry, words = case
    with tempfile.TemporaryDirectory() as d:
        wf = copy_workflow(d)
        f, _ = write_case(wf, wf / "config", data, plat)
        out = wf / "out.txt"
        t0 = time.monotonic()
        out.write_text("")
        # fork/exec by hand: os.wait4 gives this child's own peak RSS
        pid = os.fork()
        if pid == 0:
            os.chdir(wf)
            fd = os.open(out, os.O_WRONLY | os.O_TRUNC)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.execv(sys.executable, [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "plan",
                                      "--config", f"study={f.name}"])
        deadline = t0 + timeout
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.wait4(pid, 0)
                return "hangs", timeout, 0, ""
            time.sleep(0.05)
        wall = time.monotonic() - t0
        text = out.read_text(errors="replace")
        code = os.waitstatus_to_exitcode(status)
        lines = [ln for ln in text.splitlines() if ln.startswith("invalid study: ")]
        wrote = (wf / "results").exists() or (wf / "report").exists()
        if code != 0 and len(lines) == 1 and "Traceback" not in text and "Job stats" not in text and not wrote:
            verdict = "one line"
        elif code != 0:
            verdict = "unclear"
        else:
            verdict = "accepted"
        return verdict, wall, usage.ru_maxrss // 1024, (lines[0] if lines else text.strip().splitlines()[-1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("-k", default="", help="only cases whose name contains this")
    ap.add_argument("--only", choices=("corpus", "declared", "commands"), default=None,
                    help="only the original corpus, only the arguments checked where declared (EXTRA), "
                         "or only the commands beside the workflow")
    a = ap.parse_args()
    if a.only in (None, "commands"):
        run_commands(a.timeout)
        print()
        if a.only:
            return
    cases = {None: CASES + EXTRA, "corpus": CASES, "declared": EXTRA}[a.only]
    kinds = {None: KINDS + EXTRA_KINDS, "corpus": KINDS, "declared": EXTRA_KINDS}[a.only]
    counts, worst_wall, worst_rss = Counter(), 0.0, 0
    for case in cases:
        if a.k not in case[1]:
            continue
        verdict, wall, rss, line = run_case(case, a.timeout)
        counts[case[0], verdict] += 1
        worst_wall, worst_rss = max(worst_wall, wall), max(worst_rss, rss)
        print(f"{case[0]:15} {case[1]:32} {verdict:9} {wall:5.1f} s {rss:4d} MB  {line}", flush=True)
    print()
    for kind in kinds:
        total = sum(n for (k, _), n in counts.items() if k == kind)
        print(f"{kind:15} {counts[kind, 'one line']:3d} of {total:3d} refused with numaplace's line"
              f" ({counts[kind, 'unclear']} unclear, {counts[kind, 'accepted']} accepted, {counts[kind, 'hangs']} hang)")
    total = sum(counts.values())
    print(f"{'all':15} {sum(n for (_, v), n in counts.items() if v == 'one line'):3d} of {total:3d}; "
          f"slowest {worst_wall:.1f} s wall, largest peak RSS {worst_rss} MB (whole snakemake process)")


if __name__ == "__main__":
    main()
