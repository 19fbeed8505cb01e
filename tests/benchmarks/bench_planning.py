#!/usr/bin/env python3
"""Planning against Snakemake alone (issue 43.5): `snakemake -n --cores 1 --config
study=<file>` of a generated study of about 100,000 runs, beside Snakemake alone on a
trivial Snakefile with the same DAG (as many jobs of each rule, the same edges and files:
a plan job, one build job per binary, one measure job per chunk of a round needing every
build, the report needing the plan and every ledger, `all`). Wall time, CPU time (user +
system) and peak RSS of the whole Snakemake process (os.wait4's rusage), best of
--repeat runs taken alternately, and numaplace / Snakemake alone against the 2x target.

    flock /tmp/numaplace-quiet.lock .venv/bin/python tests/benchmarks/bench_planning.py \\
        [--runs 100000] [--repeat 3] [--workflow DIR] [--profile FILE]

--workflow DIR plans with another checkout (its Snakefile, config/ and workflow/numaplace
through PYTHONPATH): the figures before a change, from a copy of the older tree.
--profile FILE also writes cProfile's statistics of one numaplace dry run to FILE
(`python -m cProfile -o FILE -m snakemake ...`), after the timed runs."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import REPO, copy_workflow, quiet_lock
from bench_workflow import generated_study   # the scale study of bench_workflow/run_all: 98,400 runs asked 100,000

SNAKEMAKE = REPO / ".venv" / "bin" / "snakemake"


# Snakemake alone, the same DAG as numaplace's dry run with trivial rules: no input
# function, no params, resources or priority functions
ALONE = """
N, B = int(config["chunks"]), int(config["builds"])
LEDGERS = [f"results/s/rounds/r{i // 1000}.c{i % 1000}.json" for i in range(N)]
BUILDS = [f"results/build/k/v/bin/b{j}.B.build.json" for j in range(B)]
rule all:
    input: "results/s/plan.tsv", LEDGERS, "report/s/summary.md", "report/s/report.html"
rule plan_table:
    output: "results/s/plan.tsv"
    shell: "touch {output}"
rule npb_build:
    output: "results/build/k/v/bin/{bench}.{cls}.build.json"
    shell: "touch {output}"
rule measure:
    input: BUILDS
    output: "results/s/rounds/{chunk}.json"
    log: "results/s/logs/measure/{chunk}.log"
    shell: "touch {output}"
rule make_report:
    input: "results/s/plan.tsv", LEDGERS
    output: "report/s/summary.md", "report/s/report.html"
    shell: "touch {output}"
"""


# For information: the same DAG with the directives numaplace's measure rule has (input and
# params functions, resources and priority functions, threads, log, conda env), all
# constant and cheap. Between ALONE and this is what Snakemake itself pays for them; between
# this and numaplace is numaplace's own work.
SHAPED = ALONE.replace("""rule measure:
    input: BUILDS
    output: "results/s/rounds/{chunk}.json"
    log: "results/s/logs/measure/{chunk}.log"
    shell: "touch {output}"
""", """rule measure:
    input:
        builds=lambda wc: BUILDS,
        earlier=lambda wc: [],
    output: "results/s/rounds/{chunk}.json"
    params:
        runs=lambda wc: "@results/s/chunks/" + wc.chunk + ".json",
        chunk=lambda wc: '{"chunk": "' + wc.chunk + '"}',
        results=lambda wc, output: "results/s",
    log: "results/s/logs/measure/{chunk}.log"
    priority: lambda wc: 1
    threads: 2
    resources:
        machine=1,
        exclusive=1,
        slurm_extra="--exclusive",
        cpus_per_task=2,
        runtime=lambda wc: 10,
        mem_mb=lambda wc: 1000,
    conda: "env.yaml"
    shell: "touch {output}"
""")


def measured(cmd, cwd, env=None):
    """(wall s, CPU s, peak RSS MiB, output) of one command, from its own rusage."""
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {p.returncode}\n{text[-3000:]}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, text


def job_stats(text):
    """{rule: jobs} from Snakemake's "Job stats" table."""
    block = text.split("Job stats:", 1)[1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)\s*$", block, re.M)
            if m.group(1) != "total"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workflow", type=Path, default=REPO, help="the checkout whose planning is measured")
    ap.add_argument("--profile", type=Path, help="cProfile statistics of one numaplace dry run, to this file")
    a = ap.parse_args()
    src = a.workflow.resolve()
    env = {**os.environ, "PYTHONPATH": str(src / "workflow")}
    with tempfile.TemporaryDirectory() as d, quiet_lock():
        d = Path(d)
        wf = copy_workflow(d / "wf")
        if src != REPO:          # the other checkout's workflow, on this checkout's venv
            import shutil
            for name in ("Snakefile", "config", "workflow"):
                target = wf / name
                shutil.rmtree(target) if target.is_dir() else target.unlink()
                (shutil.copytree if (src / name).is_dir() else shutil.copy)(src / name, target)
        study = d / "generated.yaml"
        study.write_text(yaml.safe_dump(generated_study(a.runs)))
        ours_cmd = [str(SNAKEMAKE), "-n", "--cores", "1", "--config", f"study={study}"]
        # the DAG's shape from a first dry run (not timed: it also warms the caches)
        *_, text = measured(ours_cmd, wf, env)
        jobs = job_stats(text)
        runs = int(subprocess.run(
            [sys.executable, "-c", "import sys; from numaplace.plan.study import load_study_file; "
             "print(len(load_study_file(sys.argv[1], sys.argv[2]).runs))", str(study), str(wf / "config")],
            env=env, check=True, capture_output=True, text=True).stdout)
        alone_dir = d / "alone"
        alone_dir.mkdir()
        (alone_dir / "Snakefile").write_text(ALONE)
        alone_cmd = [str(SNAKEMAKE), "-n", "--cores", "1", "--config",
                     f"chunks={jobs['measure']}", f"builds={jobs['npb_build']}"]
        *_, alone_text = measured(alone_cmd, alone_dir)
        if job_stats(alone_text) != jobs:
            raise RuntimeError(f"not the same jobs: numaplace {jobs}, alone {job_stats(alone_text)}")
        shaped_dir = d / "shaped"
        shaped_dir.mkdir()
        (shaped_dir / "Snakefile").write_text(SHAPED)
        (shaped_dir / "env.yaml").write_text("dependencies: [python]\n")
        ours, alone, shaped = [], [], []
        for i in range(a.repeat):          # alternately, so that drift lands on all three
            for cmd, cwd, e, acc in ((ours_cmd, wf, env, ours), (alone_cmd, alone_dir, None, alone),
                                     (alone_cmd, shaped_dir, None, shaped))[::1 if i % 2 == 0 else -1]:
                acc.append(measured(cmd, cwd, e)[:3])
        if a.profile:
            subprocess.run([sys.executable, "-m", "cProfile", "-o", str(a.profile.resolve()), "-m", "snakemake",
                            *ours_cmd[1:]], cwd=wf, env=env, check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    where = "this checkout" if src == REPO else str(src)
    print(f"numaplace ({where}): snakemake -n --cores 1 --config study=<generated>: "
          f"{runs} runs, {sum(jobs.values())} jobs ({', '.join(f'{k} {v}' for k, v in jobs.items())}); "
          f"best of {a.repeat}, alternating; load {os.getloadavg()[0]:.2f}")
    print(f"{'figure':16} {'numaplace':>10} {'alone':>10} {'ratio':>6}  {'target':6} {'met':3}   "
          f"{'alone, the rules shape (info)':>16}")
    for k, name in enumerate(("wall (s)", "CPU (s)", "peak RSS (MiB)")):
        mine, ref, like = (min(x[k] for x in xs) for xs in (ours, alone, shaped))
        met = "" if k == 0 else ("yes" if mine / ref <= 2 else "NO")
        print(f"{name:16} {mine:10.2f} {ref:10.2f} {mine / ref:6.2f}  {'(info)' if k == 0 else '<= 2x':6} {met:3}   "
              f"{like:10.2f} (numaplace {mine / like:.2f}x)")


if __name__ == "__main__":
    main()
