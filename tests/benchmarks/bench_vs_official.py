#!/usr/bin/env python3
"""numaplace's bundled CG and MG against NASA's own NPB 3.4.2 OMP, side by side in one run.

Both are built through numaplace's own build code with the same compiler and flags
(the bundled tree and NASA's tarball from ../shared/npb/), then run alternately
(bundled, official, bundled, ...), pinned (1 thread: taskset -c 0; 2 threads: CPUs 0-1,
one per thread through OMP_PLACES), N times each. Printed per row: best Mop/s of each,
their ratio, and the run-to-run spread (coefficient of variation of Mop/s over the N runs,
the larger of the two implementations').
Target: ratio ≥ 1.00 with a margin (ratio - 1) larger than the spread.

    .venv/bin/python tests/benchmarks/bench_vs_official.py [--classes A B] [--threads 1 2] [--repeat 3]
"""
import argparse
import hashlib
import statistics
import subprocess
import sys

from _common import REPO, SCRATCH
from numaplace import npb_output
from numaplace.build import build, bundled_digest

TARBALL = REPO.parent / "shared" / "npb" / "NPB3.4.2.tar.gz"
FFLAGS = "-O3 -fopenmp"


def binaries(bench, cls):
    sha = hashlib.sha256(TARBALL.read_bytes()).hexdigest()
    out = {}
    # the bundled build's folder is keyed by its tree's contents: an edited kernel is rebuilt
    for impl, name, settings in (("bundled", f"bundled-{bundled_digest({})[:10]}", {"fflags": FFLAGS}),
                                 ("official", "official",
                                  {"source": str(TARBALL), "sha256": sha, "fflags": FFLAGS})):
        d = SCRATCH / "vs-official" / name
        exe = d / "bin" / f"{bench}.{cls}.x"
        if not exe.exists():
            build(settings, "default", bench, cls, d / "tree", exe, d / "logs" / f"{bench}.{cls}.log")
        out[impl] = exe
    return out


def run(exe, threads):
    cpus = ",".join(str(c) for c in range(threads))
    env = {"OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"}
    if threads > 1:
        env.update(OMP_PLACES=",".join(f"{{{c}}}" for c in range(threads)), OMP_PROC_BIND="true")
    r = subprocess.run(["taskset", "-c", cpus, str(exe)], env=env, capture_output=True, text=True,
                       cwd=exe.parent, timeout=1800)
    out = npb_output.parse(r.stdout)
    if r.returncode != 0 or not out["verified"]:
        sys.exit(f"{exe}: exit {r.returncode}, verified={out['verified']}\n{r.stdout[-1000:]}")
    return out["mops"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--classes", nargs="+", default=["A", "B"])
    ap.add_argument("--benches", nargs="+", default=["cg", "mg"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if not TARBALL.exists():
        sys.exit(f"{TARBALL} not found (NASA's NPB 3.4.2 as distributed; see ../shared/npb/README.md)")
    print(f"bundled vs NASA NPB 3.4.2-OMP, {FFLAGS}, gfortran, alternating, best of {a.repeat}")
    print(f"{'row':14} {'bundled':>9} {'official':>9} {'ratio':>6} {'spread':>7} {'margin':>7}  met")
    for cls in a.classes:
        for bench in a.benches:
            exe = binaries(bench, cls)
            for threads in a.threads:
                mops = {"bundled": [], "official": []}
                for _ in range(a.repeat):
                    for impl in ("bundled", "official"):
                        mops[impl].append(run(exe[impl], threads))
                best = {k: max(v) for k, v in mops.items()}
                spread = max(statistics.stdev(v) / statistics.mean(v) for v in mops.values())
                ratio = best["bundled"] / best["official"]
                met = ratio >= 1.0 and ratio - 1 > spread
                print(f"{bench}.{cls} {threads} thr{'':4} {best['bundled']:9.1f} {best['official']:9.1f} "
                      f"{ratio:6.3f} {spread:7.1%} {ratio - 1:+7.1%}  {'yes' if met else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
