#!/usr/bin/env python3
"""The quick study's fixed cost per workflow call, beside the kernels' own time in the same
runs (issue 41.10: at most 3 s a call on a quiet machine).

In a private copy of the workflow, the quick study is built and measured once; then, N
times each (the median printed beside min and max):
  measure   the records and reports removed, builds kept: the whole call's wall time, the
            kernels' own (the records' wall_s summed), and the difference: the fixed cost
            of a call that measures (Snakemake start and plan, runners, captures, records,
            tables, figures, report);
  no-op     the same command again with everything up to date;
  report    `snakemake report` from the records on disk.
Run it under the quiet lock (flock /tmp/numaplace-quiet.lock): the numbers are a busy
machine's otherwise, and the first line says how busy it was.

    .venv/bin/python tests/benchmarks/bench_overhead.py [--repeat 3]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import RUN_PARTS, copy_workflow

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--cores", "1"]
QUICK = ["--config", "study=config/studies/quick.yaml"]


def call(wf, *args):
    t0 = time.monotonic()
    r = subprocess.run(SNAKEMAKE + list(args), cwd=wf, capture_output=True, text=True,
                       env={**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"})
    dt = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"snakemake {' '.join(args)} failed:\n{r.stderr[-3000:]}")
    return dt


def kernels_s(wf):
    """The kernels' own time: the records' wall_s (the benchmark process, start to exit)."""
    return sum(json.loads(f.read_text()).get("wall_s") or 0
               for f in (wf / "results" / "quick" / "runs").glob("*/record.json"))


def spread(xs):
    return f"{statistics.median(xs):6.2f} s (min {min(xs):.2f}, max {max(xs):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    with tempfile.TemporaryDirectory() as d:
        wf = copy_workflow(d, RUN_PARTS)
        first = call(wf, *QUICK)                              # builds and measures once
        print(f"first call (builds + 14 runs): {first:.1f} s", flush=True)
        totals, kernels, fixed, noop, report = [], [], [], [], []
        for _ in range(a.repeat):
            for sub in ("runs", "rounds", "tables", "chunks"):
                shutil.rmtree(wf / "results" / "quick" / sub, ignore_errors=True)
            shutil.rmtree(wf / "report", ignore_errors=True)
            for f in (wf / "results" / "quick").glob("records.journal"):
                f.unlink()
            t = call(wf, *QUICK)
            k = kernels_s(wf)
            totals.append(t), kernels.append(k), fixed.append(t - k)
            noop.append(call(wf, *QUICK))
            report.append(call(wf, "report", *QUICK))
        print(f"measure call:  {spread(totals)} of which kernels {spread(kernels)}")
        print(f"fixed cost:    {spread(fixed)}  (reference: at most 3 s a workflow call)")
        print(f"no-op call:    {spread(noop)}")
        print(f"report call:   {spread(report)}")


if __name__ == "__main__":
    main()
