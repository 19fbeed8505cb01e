#!/usr/bin/env python3
"""Runs every case of the bad-input corpus (tests/test_bad_input.py) as a user would:
`snakemake -n --cores 1 plan --config study=<file>` in a fresh copy of the workflow.
Prints, per kind, how many are refused with numaplace's one line (exit ≠ 0, exactly one
`invalid study: ` line, no traceback, no job listed, nothing written under results/),
refused otherwise, or accepted; and the slowest wall time and largest peak RSS."""
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
    a = ap.parse_args()
    counts, worst_wall, worst_rss = Counter(), 0.0, 0
    for case in CASES:
        if a.k not in case[1]:
            continue
        verdict, wall, rss, line = run_case(case, a.timeout)
        counts[case[0], verdict] += 1
        worst_wall, worst_rss = max(worst_wall, wall), max(worst_rss, rss)
        print(f"{case[0]:15} {case[1]:32} {verdict:9} {wall:5.1f} s {rss:4d} MB  {line}", flush=True)
    print()
    for kind in KINDS:
        total = sum(n for (k, _), n in counts.items() if k == kind)
        print(f"{kind:15} {counts[kind, 'one line']:3d} of {total:3d} refused with numaplace's line"
              f" ({counts[kind, 'unclear']} unclear, {counts[kind, 'accepted']} accepted, {counts[kind, 'hangs']} hang)")
    total = sum(counts.values())
    print(f"{'all':15} {sum(n for (_, v), n in counts.items() if v == 'one line'):3d} of {total:3d}; "
          f"slowest {worst_wall:.1f} s wall, largest peak RSS {worst_rss} MB (whole snakemake process)")


if __name__ == "__main__":
    main()
