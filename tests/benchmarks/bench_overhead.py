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
The measuring call's fixed cost is also cut where it is spent (medians): from the call's
start to the first run's start (Python and Snakemake starting, the Snakefile read, the
DAG, onstart, the measure job's process), the measure job beyond its kernels (each run's
launch, idle window, captures and record), from the last run's end to the report job's
end (tables, figures, summary, HTML in one process), and from then to the process's exit.

Then the floors, measured in the same run: Snakemake alone running two shell jobs (to its
last line), a Python importing the report's libraries, and the runs' idle windows; their
sum is what the fixed cost cannot go below while those three stay.

--baseline DIR: another checkout (a `git worktree` of the commit before, say) measured in
the same run, its calls alternating with this checkout's, each figure printed for both
with their ratio (numaplace is imported from DIR/workflow for its calls). Run it under
the quiet lock (flock /tmp/numaplace-quiet.lock): the numbers are a busy machine's
otherwise, and the first line says how busy it was.

    .venv/bin/python tests/benchmarks/bench_overhead.py [--repeat 3] [--baseline DIR]
"""
import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO, RUN_PARTS, _build_products, copy_workflow

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--cores", "1"]
QUICK = ["--config", "study=config/studies/quick.yaml"]


class Checkout:
    """A private copy of one checkout's workflow, and the environment its calls run in."""

    def __init__(self, scratch, source=REPO):
        self.source = Path(source).resolve()
        self.wf = self._copy(Path(scratch), self.source)
        path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
        self.env = {**os.environ, "PATH": path}
        if self.source != REPO:             # its own numaplace, not the installed one
            self.env["PYTHONPATH"] = os.pathsep.join(
                [str(self.source / "workflow"), *filter(None, [os.environ.get("PYTHONPATH")])])

    @staticmethod
    def _copy(dest, source):
        if source == REPO:
            return copy_workflow(dest, RUN_PARTS)
        dest.mkdir(parents=True, exist_ok=True)
        for name in RUN_PARTS:
            if (source / name).is_dir():
                shutil.copytree(source / name, dest / name, ignore=_build_products)
            elif (source / name).exists():
                shutil.copy(source / name, dest / name)
        return dest

    def call(self, *args):
        """(wall seconds, {mark: seconds since the start}) of one snakemake call; marks are
        taken from the lines it prints as they come."""
        marks = {}
        t0 = time.monotonic()
        p = subprocess.Popen(SNAKEMAKE + list(args), cwd=self.wf, env=self.env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        lines = []
        for line in p.stdout:
            lines.append(line)
            for mark in ("Rule: measure)", "Rule: make_report)"):
                if mark in line:
                    marks.setdefault(mark, time.monotonic() - t0)
        p.wait()
        dt_ = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(f"snakemake {' '.join(args)} in {self.wf} failed:\n{''.join(lines)[-3000:]}")
        marks["t0_wall"] = time.time() - dt_
        return dt_, marks

    def clear(self):
        """The records and reports removed, builds and plan kept."""
        for sub in ("runs", "rounds", "tables", "chunks"):
            shutil.rmtree(self.wf / "results" / "quick" / sub, ignore_errors=True)
        shutil.rmtree(self.wf / "report", ignore_errors=True)
        for f in (self.wf / "results" / "quick").glob("records.journal"):
            f.unlink()

    def records(self):
        return [json.loads(f.read_text()) for f in (self.wf / "results" / "quick" / "runs").glob("*/record.json")]


def kernels_s(records):
    """The kernels' own time: the records' wall_s (the benchmark process, start to exit)."""
    return sum(r.get("wall_s") or 0 for r in records)


def parts(total, marks, records):
    """The measuring call's fixed cost, cut where it is spent (seconds)."""
    def at(stamp):
        return dt.datetime.fromisoformat(stamp).timestamp() - marks["t0_wall"]
    first = min(at(r["started"]) for r in records)
    last = max(at(r.get("finished") or r["ended"]) for r in records)
    report_end = marks.get("Rule: make_report)", float("nan"))
    return {"start to first run": first,
            "measure job beyond kernels": last - first - kernels_s(records),
            "last run to report's end": report_end - last,
            "report's end to exit": total - report_end}


def spread(xs):
    return f"{statistics.median(xs):6.2f} s (min {min(xs):.2f}, max {max(xs):.2f})"


class Series:
    def __init__(self):
        self.totals, self.kernels, self.fixed, self.noop, self.report = [], [], [], [], []
        self.parts = {}

    def measure(self, c):
        c.clear()
        t, marks = c.call(*QUICK)
        recs = c.records()
        k = kernels_s(recs)
        self.totals.append(t), self.kernels.append(k), self.fixed.append(t - k)
        for name, v in parts(t, marks, recs).items():
            self.parts.setdefault(name, []).append(v)
        self.noop.append(c.call(*QUICK)[0])
        self.report.append(c.call("report", *QUICK)[0])

    def rows(self):
        yield "measure call", self.totals, f" of which kernels {spread(self.kernels)}"
        yield "fixed cost", self.fixed, "  (reference: at most 3 s a workflow call)"
        for name, xs in self.parts.items():
            yield f"  {name}", xs, ""
        yield "no-op call", self.noop, ""
        yield "report call", self.report, ""


TWO_JOBS = """rule all:
    input: "b"
rule a:
    output: "a"
    shell: "touch {output}"
rule b:
    input: "a"
    output: "b"
    shell: "touch {output}"
"""


def floors(scratch, repeat, runs):
    """What the fixed cost cannot go below while the workflow is Snakemake, the report is
    pandas and matplotlib, and each run has its idle window: {floor: [seconds]}."""
    from numaplace.machine.idle import IDLE_WINDOW_S
    wf = Path(scratch) / "two-jobs"
    wf.mkdir()
    (wf / "Snakefile").write_text(TWO_JOBS)
    out = {"Snakemake alone, 2 shell jobs, to its last line": [],
           "the report's libraries imported (pandas, pyplot)": []}
    for _ in range(repeat):
        for f in ("a", "b"):
            (wf / f).unlink(missing_ok=True)
        t0 = time.monotonic()
        p = subprocess.Popen([*SNAKEMAKE, "-q"], cwd=wf, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        last = t0
        for _line in p.stdout:
            last = time.monotonic()
        p.wait()
        out["Snakemake alone, 2 shell jobs, to its last line"].append(last - t0)
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-c", "import pandas, matplotlib; matplotlib.use('Agg'); "
                        "import matplotlib.pyplot"], check=True)
        out["the report's libraries imported (pandas, pyplot)"].append(time.monotonic() - t0)
    out[f"idle windows: {runs} runs x {IDLE_WINDOW_S} s"] = [runs * IDLE_WINDOW_S]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline", help="another checkout measured alternately (its ratio printed)")
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    with tempfile.TemporaryDirectory() as d:
        this = Checkout(Path(d) / "this")
        base = Checkout(Path(d) / "base", a.baseline) if a.baseline else None
        for c, name in ((this, "this checkout"), (base, f"baseline {a.baseline}")):
            if c is not None:
                first, _ = c.call(*QUICK)                   # builds and measures once
                print(f"first call (builds + 14 runs), {name}: {first:.1f} s", flush=True)
        mine, theirs = Series(), Series()
        for _ in range(a.repeat):
            mine.measure(this)
            if base is not None:
                theirs.measure(base)
        low = floors(d, a.repeat, len(this.records()))
        if base is None:
            for label, xs, extra in mine.rows():
                print(f"{label + ':':<30}{spread(xs)}{extra}")
        else:
            print(f"{'':<30}{'this checkout':<34}{'baseline':<34}this/baseline (median)")
            for (label, xs, _), (_, ys, _) in zip(mine.rows(), theirs.rows()):
                ratio = statistics.median(xs) / statistics.median(ys) if statistics.median(ys) else float("nan")
                print(f"{label + ':':<30}{spread(xs):<34}{spread(ys):<34}{ratio:.2f}")
            print(f"kernels:{'':<22}{spread(mine.kernels):<34}{spread(theirs.kernels):<34}")
        print("floors of the fixed cost, measured in this run:")
        for label, xs in low.items():
            print(f"  {label + ':':<52}{spread(xs)}")
        total = sum(statistics.median(xs) for xs in low.values())
        print(f"  {'sum of the floors:':<52}{total:6.2f} s, beside the fixed cost's "
              f"{statistics.median(mine.fixed):.2f} s and the 3 s reference")


if __name__ == "__main__":
    main()
