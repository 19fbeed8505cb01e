#!/usr/bin/env python3
"""The report after the last run (issue 29): the quick study's tables, figures, summary and
HTML, as Snakemake makes them after its last run, timed from `snakemake --forcerun
make_report` to its end, and each step's own command beside it. Target: <= 5 s on a
quiet machine. Run it under the quiet lock:

    flock /tmp/numaplace-quiet.lock .venv/bin/python tests/benchmarks/report_time.py [--repeat 5]
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import RUN_PARTS, copy_workflow  # the script's folder is on sys.path

STUDY = "config/studies/quick.yaml"
TARGET_S = 5.0


def snakemake(wf, *args):
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args, "--config", f"study={STUDY}"],
                       cwd=wf, capture_output=True, text=True)
    dt = time.monotonic() - t0
    if r.returncode:
        sys.exit(f"snakemake {' '.join(args)} failed:\n{(r.stdout + r.stderr)[-3000:]}")
    return dt


def steps(wf):
    """Each report step's own command, as the rules run it: seconds per step."""
    res, rep = wf / "results" / "quick", wf / "report" / "quick"
    cmds = {
        "tables": ["tables", "--results", res, "--plan", res / "plan.tsv", "--out", res / "tables", "--fidelity", "{}"],
        "figures": ["figures", "--tables", res / "tables", "--out", rep / "figures", "--settings", "{}"],
        "summary": ["summary", "--tables", res / "tables", "--figures", rep / "figures", "--plan", res / "plan.tsv",
                    "--study", "quick", "--description=", "--out", rep / "summary.md"],
        "html": ["html", "--out", rep / "report.html", "--tables", res / "tables", "--summary", rep / "summary.md",
                 "--plan", res / "plan.tsv", "--study", "quick", "--description="],
    }
    cmds["report (the make_report job: all four in one process)"] = [
        "report", "--results", res, "--plan", res / "plan.tsv", "--tables", res / "tables", "--figures",
        rep / "figures", "--summary", rep / "summary.md", "--html", rep / "report.html", "--study", "quick",
        "--description="]
    out = {}
    for name, args in cmds.items():
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-m", "numaplace.cli", *map(str, args)], cwd=wf, check=True,
                       capture_output=True)
        out[name] = time.monotonic() - t0
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        wf = copy_workflow(Path(d) / "wf", RUN_PARTS)
        first = snakemake(wf)
        print(f"quick study, first run (builds, {STUDY}): {first:.1f} s")
        whole = [snakemake(wf, "--forcerun", "make_report") for _ in range(a.repeat)]
        per_step = [steps(wf) for _ in range(a.repeat)]
    job = statistics.median(s[list(s)[-1]] for s in per_step)
    print(f"report after the last run: the make_report job's command, median {job:.2f} s of {a.repeat}; "
          f"target <= {TARGET_S:.0f} s: {'met' if job <= TARGET_S else 'NOT met'}")
    print(f"  for information, a whole `snakemake --forcerun make_report` (Snakemake's own start and "
          f"DAG included, which a workflow after its last run has already paid): median "
          f"{statistics.median(whole):.2f} s (min {min(whole):.2f}, max {max(whole):.2f})")
    for name in per_step[0]:
        print(f"  numaplace {name}: median {statistics.median(s[name] for s in per_step):.2f} s")


if __name__ == "__main__":
    main()
