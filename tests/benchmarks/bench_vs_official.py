#!/usr/bin/env python3
"""numaplace's bundled CG and MG against NASA's own NPB 3.4.2 OMP, side by side in one run.

Both are built through numaplace's own build code with the same compiler and flags
(the bundled tree and NASA's tarball from ../shared/npb/). Two tables:

1. Memory traffic (--traffic classes, default W A), 1 thread: last-level-cache misses and
   data references under cachegrind with a 4 MiB 16-way LL (class W spills from it as B
   and C spill from a real L3), and peak resident memory of a native run; bundled /
   official ratios. Targets: LL misses 0.95-1.05, peak RSS within 5 %.
2. Speed (--classes, default W A B; --threads 1 2): run alternately (bundled, official,
   bundled, ...), pinned (1 thread: taskset -c 0; 2 threads: CPUs 0-1, one per thread
   through OMP_PLACES), N times each: best Mop/s of each, their ratio, and the run-to-run
   spread (coefficient of variation over the N runs, the larger of the two).
   Target: ratio >= 0.95 (equal is fine: the kernels must move NPB's bytes, not beat it).

    flock /tmp/numaplace-quiet.lock .venv/bin/python tests/benchmarks/bench_vs_official.py \
        [--traffic W A] [--classes W A B] [--threads 1 2] [--repeat 3]
"""
import argparse
import hashlib
import statistics
import subprocess
import sys

from _common import LL_4MIB, REPO, SCRATCH, cachegrind, peak_rss_mib
from numaplace.kinds import npb_output
from numaplace.builds.tree import build
from numaplace.plan.sources import bundled_digest

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


def traffic(benches, classes):
    print(f"memory traffic, 1 thread: cachegrind LL misses and data references (LL {LL_4MIB}), "
          "peak RSS of a native run; ratio = bundled / official")
    print(f"{'row':8} {'LL misses bundled':>18} {'official':>14} {'ratio':>6} {'data refs':>9} "
          f"{'RSS MiB b/o':>13} {'ratio':>6}  met")
    for cls in classes:
        for bench in benches:
            exe = binaries(bench, cls)
            cg = {impl: cachegrind(path) for impl, path in exe.items()}
            rss = {impl: peak_rss_mib(path) for impl, path in exe.items()}
            ll = cg["bundled"]["ll_misses"] / cg["official"]["ll_misses"]
            refs = cg["bundled"]["data_refs"] / cg["official"]["data_refs"]
            mem = rss["bundled"] / rss["official"]
            met = 0.95 <= ll <= 1.05 and abs(mem - 1) <= 0.05
            print(f"{bench}.{cls:6} {cg['bundled']['ll_misses']:18,} {cg['official']['ll_misses']:14,} {ll:6.3f} "
                  f"{refs:9.3f} {rss['bundled']:6.0f}/{rss['official']:<6.0f} {mem:6.3f}  {'yes' if met else 'NO'}",
                  flush=True)


def speed(benches, classes, threads_list, repeat):
    print(f"speed: -O3 -fopenmp, gfortran, alternating, pinned, best of {repeat}")
    print(f"{'row':14} {'bundled':>9} {'official':>9} {'ratio':>6} {'spread':>7}  met (ratio >= 0.95)")
    for cls in classes:
        for bench in benches:
            exe = binaries(bench, cls)
            for threads in threads_list:
                mops = {"bundled": [], "official": []}
                for _ in range(repeat):
                    for impl in ("bundled", "official"):
                        mops[impl].append(run(exe[impl], threads))
                best = {k: max(v) for k, v in mops.items()}
                spread = max(statistics.stdev(v) / statistics.mean(v) for v in mops.values()) if repeat > 1 else 0.0
                ratio = best["bundled"] / best["official"]
                print(f"{bench}.{cls} {threads} thr{'':4} {best['bundled']:9.1f} {best['official']:9.1f} "
                      f"{ratio:6.3f} {spread:7.1%}  {'yes' if ratio >= 0.95 else 'NO'}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traffic", nargs="*", default=["W", "A"], help="classes of the traffic table")
    ap.add_argument("--classes", nargs="*", default=["W", "A", "B"], help="classes of the speed table")
    ap.add_argument("--benches", nargs="+", default=["cg", "mg"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if not TARBALL.exists():
        sys.exit(f"{TARBALL} not found (NASA's NPB 3.4.2 as distributed; see ../shared/npb/README.md)")
    print(f"bundled vs NASA NPB 3.4.2-OMP, built by numaplace with {FFLAGS}, gfortran")
    if a.traffic:
        traffic(a.benches, a.traffic)
    if a.classes:
        speed(a.benches, a.classes, a.threads, a.repeat)


if __name__ == "__main__":
    main()
