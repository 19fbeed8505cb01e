#!/usr/bin/env python3
"""Performance at scale, one table: planning against Snakemake alone, tables + figures +
summary from many records, the runner's per-run overhead and the cost of sampling.

    .venv/bin/python tests/benchmarks/run_all.py [--plan 10000 100000] [--records 10000]
                                                 [--launches 10] [--sampling-pairs 3]

Run it on an otherwise idle machine (it takes the cores for itself)."""
import argparse
import copy
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import REPO
from bench_workflow import dry_run, dry_run_alone, overhead, sampling_effect

TEMPLATE = REPO / "tests/fixtures/real/local/runs/cg.W.default.c0-1_loc_p_nc.r1/record.json"


def synthetic_records(root, n, placements=120):
    """n records copied from a real one (captures as the runner wrote them), over
    `placements` placements of one case, with times spread as real ones are."""
    template = json.loads(TEMPLATE.read_text())
    rng = random.Random(1)
    reps = max(1, n // placements)
    for i in range(placements):
        base = 1.0 + i / placements
        for rep in range(1, reps + 1):
            rec = copy.deepcopy(template)
            pid = f"p{i:03d}"
            rec["placement"] = {**rec["placement"], "id": pid, "shape": f"placement {i}"}
            rec["run_id"] = f"cg.W.default.{pid}.r{rep}"
            rec["rep"] = rep
            t = base * rng.uniform(0.97, 1.05)
            rec["npb"] = {**rec["npb"], "time_s": round(t, 2), "mops": round(1000 / t, 2)}
            d = root / "runs" / rec["run_id"]
            d.mkdir(parents=True)
            (d / "record.json").write_text(json.dumps(rec))
    return placements * reps


def report_steps(n):
    """Seconds of numaplace tables, figures and summary on n synthetic records."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d) / "results" / "synthetic"
        made = synthetic_records(root, n)
        t0 = time.monotonic()
        for args in (["tables", "--results", str(root), "--out", str(root / "tables")],
                     ["figures", "--tables", str(root / "tables"), "--out", str(Path(d) / "figures")],
                     ["summary", "--tables", str(root / "tables"), "--figures", str(Path(d) / "figures"),
                      "--out", str(Path(d) / "summary.md")]):
            subprocess.run([sys.executable, "-m", "numaplace", *args], check=True, capture_output=True)
        return made, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plan", type=int, nargs="*", default=[10000, 100000])
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--sampling-pairs", type=int, default=3)
    a = ap.parse_args()
    rows = []   # (figure, measured, reference, ratio, target, met)
    for n in a.plan:
        runs, ours = dry_run(n, quiet=True)
        alone = dry_run_alone(runs)
        rows.append((f"snakemake -n, {runs} runs (s)", ours, alone, ours / alone, "<= 1.3x", ours / alone <= 1.3))
        shaped = dry_run_alone(runs, shaped=True)
        rows.append(("  same, vs the rule's shape alone (s)", ours, shaped, ours / shaped, "(info)", None))
    if a.records:
        made, secs = report_steps(a.records)
        rows.append((f"tables+figures+summary, {made} records (s)", secs, None, None, "<= 60 s", secs <= 60))
    if a.launches:
        over = overhead(a.launches, quiet=True)
        rows.append(("launch overhead, idle check off (s)", over["off"], None, None, "<= 0.05 s", over["off"] <= 0.05))
        rows.append(("launch overhead, idle check on (s)", over["flag"], None, None, "<= 0.15 s", over["flag"] <= 0.15))
    if a.sampling_pairs:
        diff, noise = sampling_effect("B", a.sampling_pairs, quiet=True)
        # reference column: the unsampled runs' own spread (max-min)/median, in %
        rows.append(("numa_maps sampling, CG.B NPB time (%)", diff, noise, None, "< 1 %", diff < 1))
    print(f"{'figure':45} {'measured':>10} {'reference':>10} {'ratio':>7}  {'target':10} met")
    for fig, meas, ref, ratio, target, met in rows:
        print(f"{fig:45} {meas:10.3f} {'' if ref is None else f'{ref:10.3f}':>10} "
              f"{'' if ratio is None else f'{ratio:7.2f}':>7}  {target:10} "
              f"{'' if met is None else 'yes' if met else 'NO'}")


if __name__ == "__main__":
    main()
