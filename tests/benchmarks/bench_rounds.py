#!/usr/bin/env python3
"""Measurement rounds (issue 29): what share of a study's machine time goes to measuring.

    flock /tmp/numaplace-quiet.lock .venv/bin/python tests/benchmarks/bench_rounds.py \
        [--reps 10] [--plan 10000 100000] [--workflow DIR]

Prints, beside each target:
  * the median gap between one run's end and the next run's start, and the share of the
    runs phase (first run's start to last run's end) spent inside runs, for a class S
    study measured by `snakemake --cores 1`, with the idle check off and on (flag);
  * `snakemake -n` of a generated study against Snakemake alone on as many trivial jobs
    as the study has runs.
--workflow: another checkout to measure the same way (the figures before a change:
`git worktree add /tmp/before <commit>`; its package is put first on PYTHONPATH)."""
import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import REPO, RUN_PARTS, _build_products
from bench_workflow import dry_run_alone, generated_study


def copy_of(src, dest, parts):
    """_common.copy_workflow, from the checkout src."""
    import shutil
    for name in parts:
        if (src / name).is_dir():
            shutil.copytree(src / name, dest / name, ignore=_build_products)
        elif (src / name).exists():
            shutil.copy(src / name, dest / name)
    return dest


def env_for(src):
    env = dict(os.environ)
    if src != REPO:
        env["PYTHONPATH"] = os.pathsep.join([str(src / "workflow"), env.get("PYTHONPATH", "")])
    return env


def class_s_study(idle, reps, cls="S"):
    return {"study": f"rounds-{idle}", "platform": "auto", "benchmarks": ["cg", "mg"], "classes": [cls],
            "variants": ["default"], "repetitions": reps, "launcher": "taskset", "run": {"idle_check": idle},
            "experiments": [{"name": "three", "placements": [{"cpus": "0"}, {"cpus": "1"}, {"cpus": "0-1"}]}]}


def stamp(s):
    return dt.datetime.fromisoformat(s).timestamp()


def runs_phase(src, idle, reps, cls="S"):
    """(runs, median gap s, share inside runs, wall s of the runs phase, median run s)."""
    with tempfile.TemporaryDirectory() as d:
        wf = copy_of(src, Path(d), RUN_PARTS)
        (wf / "s.yaml").write_text(yaml.safe_dump(class_s_study(idle, reps, cls)))
        env = env_for(src)
        subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "build", "--configfile", "s.yaml"],
                       cwd=wf, env=env, check=True, capture_output=True)
        r = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "runs", "--configfile", "s.yaml"],
                           cwd=wf, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        import json
        recs = [json.loads(p.read_text()) for p in (wf / "results" / f"rounds-{idle}" / "runs").glob("*/record.json")]
    assert recs and all(x["status"] == "ok" for x in recs), [x["status"] for x in recs]
    recs.sort(key=lambda x: stamp(x["started"]))
    gaps = [stamp(b["started"]) - stamp(a["ended"]) for a, b in zip(recs, recs[1:])]
    phase = stamp(recs[-1]["ended"]) - stamp(recs[0]["started"])
    inside = sum(x["wall_s"] for x in recs)
    return len(recs), statistics.median(gaps), inside / phase, phase, statistics.median(x["wall_s"] for x in recs)


def dry_run_study(src, n):
    """(runs, seconds) of `snakemake -n` on a generated study of about n runs."""
    from numaplace.plan.study import Study
    with tempfile.TemporaryDirectory() as d:
        wf = copy_of(src, Path(d), ("Snakefile", "config", "workflow", "profiles", "envs"))
        data = generated_study(n)
        (wf / "gen.yaml").write_text(yaml.safe_dump(data))
        runs = len(Study(data, wf / "gen.yaml", wf / "config").runs)
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--quiet", "--cores", "1",
                            "--configfile", "gen.yaml"], cwd=wf, env=env_for(src), capture_output=True, text=True)
        seconds = time.monotonic() - t0
        assert r.returncode == 0, r.stderr[-2000:]
    return runs, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=10, help="repetitions of the class S study (6 runs each)")
    ap.add_argument("--plan", type=int, nargs="*", default=[10000, 100000], help="dry-run sizes (runs)")
    ap.add_argument("--workflow", type=Path, default=REPO, help="the checkout to measure")
    ap.add_argument("--cls", default="S", help="the NPB class of the study (the target is for S)")
    a = ap.parse_args()
    src = a.workflow.resolve()
    print(f"workflow: {src}")
    for idle, target in (("off", 0.02), ("flag", 0.11)):
        n, gap, share, phase, run = runs_phase(src, idle, a.reps, a.cls)
        print(f"class {a.cls} study, {n} runs of {run:.3f} s (median), idle check {idle}: median gap between runs {gap:.3f} s "
              f"(target <= {target} s); {100 * share:.0f} % of the runs phase ({phase:.1f} s) inside runs "
              f"(target >= 80 %)")
    for n in a.plan:
        runs, seconds = dry_run_study(src, n)
        alone = dry_run_alone(runs)
        print(f"snakemake -n, {runs} runs: {seconds:.1f} s; Snakemake alone on {runs} trivial jobs: "
              f"{alone:.1f} s; ratio {seconds / alone:.2f} (target <= 1.3)")


if __name__ == "__main__":
    main()
