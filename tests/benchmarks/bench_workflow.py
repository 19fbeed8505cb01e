#!/usr/bin/env python3
"""Workflow costs: dry-run time of a 10,000-run study, the runner's per-run launch
overhead, and the effect of numa_maps sampling on NPB's own measured time."""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import REPO, binary, copy_workflow

from numaplace.plan.study import Study


def generated_study(runs_wanted):
    """The scale study: x4600 (8 nodes x 2 cores), CG and MG, classes B and C, two
    variants, 1,000 runs per repetition; repetitions set to reach runs_wanted (100,000
    asked: 100 repetitions, 98,400 runs)."""
    placements = [{"layout": "2/2", "nodes": "all-choices"}, {"layout": "2/2/2/2", "nodes": "all-choices"},
                  {"compact": list(range(1, 17))}, {"spread": list(range(2, 13))}]
    per_rep = 2 * 2 * 2 * 125
    return {"study": "generated", "platform": "x4600", "benchmarks": ["cg", "mg"], "classes": ["B", "C"],
            "variants": ["default", "serial-init"], "repetitions": max(1, -(-runs_wanted // per_rep)),
            "limits": {"runs": max(20000, runs_wanted + per_rep)},   # above the default cap
            "experiments": [{"name": "many", "placements": placements}]}


def dry_run(n, quiet=False):
    """(runs, seconds) of `snakemake -n` on a generated study of about n runs."""
    with tempfile.TemporaryDirectory() as d:
        wf = copy_workflow(d)
        data = generated_study(n)
        (wf / "gen.yaml").write_text(yaml.safe_dump(data))
        runs = len(Study(data, wf / "gen.yaml", wf / "config").runs)
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--quiet", "--cores", "1",
                            "--configfile", "gen.yaml"], cwd=wf, capture_output=True, text=True)
        dt = time.monotonic() - t0
        assert r.returncode == 0, r.stderr[-2000:]
    if not quiet:
        print(f"dry-run of a {runs}-run study: {dt:.1f} s (target <= 20 s)")
    return runs, dt


TRIVIAL = """
N = int(config["jobs"])
rule all:
    input: expand("out/{i}.txt", i=range(N))
rule one:
    output: "out/{i}.txt"
    shell: "touch {output}"
"""


# Snakemake alone on jobs of the measure rule's shape: an input function, a params
# function, two resource functions, a log, a conda env and a protected output, all
# constant. What separates this from TRIVIAL is what Snakemake itself pays for those
# directives; what separates the study from this is numaplace's own share.
SHAPED = """
N = int(config["jobs"])
rule all:
    input: expand("out/{i}/record.json", i=range(N))
rule build:
    output: "build/{b}.json"
    shell: "touch {output}"
rule one:
    input: build=lambda wc: "build/" + str(int(wc.i) % 8) + ".json"
    output: protected("out/{i}/record.json")
    params: spec=lambda wc: '{"run_id": "' + wc.i + '"}'
    log: "logs/{i}.log"
    threads: 2
    resources:
        machine=1,
        runtime=lambda wc: 10,
        mem_mb=lambda wc: 100,
    conda: "env.yaml"
    shell: "touch {output} > {log:q}"
"""


def dry_run_alone(n, shaped=False):
    """Seconds of `snakemake -n` of Snakemake alone on n trivial jobs (the reference), or
    on n jobs of the measure rule's shape."""
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "Snakefile").write_text(SHAPED if shaped else TRIVIAL)
        (Path(d) / "env.yaml").write_text("dependencies: [python]\n")
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--quiet", "--cores", "1",
                            "--config", f"jobs={n}"], cwd=d, capture_output=True, text=True)
        dt = time.monotonic() - t0
        assert r.returncode == 0, r.stderr[-2000:]
    return dt


def run_once(exe, spec, rundir):
    """One run as rule measure starts it (`numaplace run --spec --build --record`)."""
    rundir.mkdir(parents=True)
    build = rundir.parent / f"{rundir.name}.build.json"
    build.write_text(json.dumps({"status": "ok", "binary": str(exe), "reason": None}))
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "numaplace", "run", "--spec", json.dumps(spec),
                    "--build", str(build), "--record", str(rundir / "record.json")],
                   check=True, capture_output=True, env={"PATH": "/usr/bin:/bin:/usr/local/bin"})
    wall = time.monotonic() - t0
    return wall, json.loads((rundir / "record.json").read_text())


def spec_for(bench, cls, cpus="0", numa_maps=True, idle="flag"):
    data = {"study": "bench", "benchmarks": [bench], "classes": [cls], "repetitions": 1,
            "launcher": "taskset", "capture": {"numa_maps": numa_maps},
            "run": {"idle_check": idle}, "experiments": [{"name": "one", "placements": [{"cpus": cpus}]}]}
    st = Study(data, "bench.yaml", REPO / "config")
    return st.run_params(st.runs[0].run_id)


def overhead(n, quiet=False):
    """{idle check mode: median seconds the runner adds to a run}."""
    exe = binary("cg", "S")
    out = {}
    with tempfile.TemporaryDirectory() as d:
        for idle in ("flag", "off"):
            over = []
            for i in range(n):
                wall, rec = run_once(exe, spec_for("cg", "S", idle=idle), Path(d) / f"{idle}{i}")
                over.append(wall - rec["wall_s"])
            out[idle] = statistics.median(over)
            if not quiet:
                print(f"launch overhead per run (idle check {idle}): median {out[idle]:.3f} s, "
                      f"max {max(over):.3f} s over {n} runs (target <= 0.3 s)")
    return out


def sampling_effect(cls, pairs, quiet=False):
    exe = binary("cg", cls)
    on, off = [], []
    with tempfile.TemporaryDirectory() as d:
        for i in range(pairs):
            for flag, acc in ((True, on), (False, off)) if i % 2 == 0 else ((False, off), (True, on)):
                _, rec = run_once(exe, spec_for("cg", cls, numa_maps=flag, idle="off"), Path(d) / f"{flag}{i}")
                assert rec["status"] == "ok", rec["reason"]
                acc.append(rec["output"]["time_s"])
                if flag:
                    samples = rec["captures"]["numa_maps"]["samples"]
    diff = (statistics.median(on) - statistics.median(off)) / statistics.median(off) * 100
    if quiet:       # with the run-to-run spread of the unsampled runs, which bounds what can be seen
        return diff, (max(off) - min(off)) / statistics.median(off) * 100
    print(f"CG.{cls} NPB time, numa_maps sampling on vs off ({pairs} pairs): median {statistics.median(on):.2f} s"
          f" vs {statistics.median(off):.2f} s: {diff:+.2f}% ({samples} samples per run; target < 1%)")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--launches", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--classes", nargs="+", default=["A", "B"])
    a = ap.parse_args()
    dry_run(a.runs)
    overhead(a.launches)
    for cls in a.classes:
        sampling_effect(cls, a.pairs)


if __name__ == "__main__":
    main()
