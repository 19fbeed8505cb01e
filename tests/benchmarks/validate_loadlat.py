"""loadlat's bandwidth-latency curve on this machine, side by side with its references:

  - the load: at delay 0, the MB/s its loaders draw (median over the repetitions of every
    run) beside Debian's `likwid-bench -t load` (scalar loads, as ours) with the same
    number of threads on the loaders' CPUs, the same bytes per thread; target ±15 %
    (the chaser's own misses share the memory: ours may sit a little below);
  - the idle point: loadlat's idle latency beside memlat's on the chaser's CPU at the
    same size (both chase the same kind of chain): within ±15 %;
  - the curve itself: every delay's median latency and load, and how much the heaviest
    load raises latency over idle.

The chaser runs on CPU 0, the loaders on CPUs 1..N (`--loaders 1 3` for several counts);
runs alternate (loadlat, likwid-bench, memlat, ...) `--rounds` times. It takes
/tmp/numaplace-quiet.lock itself for the measured part (or runs under yours):

    .venv/bin/python tests/benchmarks/validate_loadlat.py [--loaders 1] [--rounds 3] [--size 128M]

Exit status 0 when every check passed, 1 otherwise."""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

from _common import build_microbench, quiet_lock  # the script's folder is on sys.path

from numaplace.kinds import membench_output  # noqa: E402

UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def run(binary, cpus, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env["OMP_NUM_THREADS"] = str(len(cpus.split(",")))
    r = subprocess.run(["taskset", "-c", cpus, str(binary), "--cpus", cpus, *args], capture_output=True, text=True,
                       env=env)
    out = membench_output.parse(r.stdout)
    assert r.returncode == 0 and out["verified"], r.stdout[-2000:] + r.stderr
    return out["results"]


def likwid_on(cpus, size, threads):
    r = subprocess.run(["taskset", "-c", cpus, "likwid-bench", "-t", "load", "-s", "1",
                        "-w", f"N:{threads * size}B:{threads}"], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"likwid-bench failed: {r.stderr[-500:]}")
    ran = sorted({int(c) for c in re.findall(r"running on hwthread (\d+)", r.stdout)})
    return float(re.search(r"^MByte/s:\s+([0-9.]+)", r.stdout, re.M).group(1)), ran


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loaders", type=int, nargs="+", default=[1])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", default="128M", help="chain and each loader's buffer (K/M/G)")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if not shutil.which("likwid-bench"):
        sys.exit("likwid-bench not found: apt-get install likwid")
    if max(a.loaders) + 1 > os.cpu_count():
        sys.exit(f"--loaders {max(a.loaders)}: this machine has {os.cpu_count()} CPUs (one is the chaser's)")
    size = int(a.size[:-1]) * UNITS[a.size[-1].upper()] if a.size[-1:].upper() in UNITS else int(a.size)
    loadlat, memlat = build_microbench("loadlat"), build_microbench("memlat")
    failed = []
    with quiet_lock():
        load_before = os.getloadavg()[0]
        for n in a.loaders:
            cpus = ",".join(str(c) for c in range(n + 1))
            loaders = ",".join(str(c) for c in range(1, n + 1))
            curve, ref, idle_ref, ran = {}, [], [], None
            for _ in range(a.rounds):
                for r in run(loadlat, cpus, "--sizes", str(size), "--reps", str(a.reps)):
                    curve.setdefault(r["delay"], []).append((r["value"], r["load_mbps"]))
                mbs, ran = likwid_on(loaders, size, n)
                ref.append(mbs)
                idle_ref += [r["value"] for r in run(memlat, "0", "--sizes", str(size), "--reps", str(a.reps))]
            print(f"\nloadlat, chaser on CPU 0, {n} loader{'s' * (n > 1)} on CPUs {loaders}, "
                  f"{size / 2**20:.0f} MiB per buffer, {a.rounds} runs x {a.reps} repetitions (medians):")
            print(f"  {'delay':>8} {'load MB/s':>10} {'latency ns':>11}")
            for delay in sorted(curve, key=lambda d: (d != -1, d)):
                lat = statistics.median(v for v, _ in curve[delay])
                mbs = statistics.median(m for _, m in curve[delay])
                print(f"  {'idle' if delay == -1 else delay:>8} {mbs:>10.0f} {lat:>11.1f}")
            heavy = statistics.median(m for _, m in curve[0])
            idle = statistics.median(v for v, _ in curve[-1])
            loaded = statistics.median(v for v, _ in curve[0])
            ratio_bw = heavy / statistics.median(ref)
            ratio_idle = idle / statistics.median(idle_ref)
            print(f"  load at delay 0: {heavy:.0f} MB/s; likwid-bench -t load, {n} thread{'s' * (n > 1)} on "
                  f"hwthreads {ran}: {statistics.median(ref):.0f} MB/s (runs {', '.join(f'{x:.0f}' for x in ref)}); "
                  f"ratio {ratio_bw:.3f} (target 0.85-1.15)")
            print(f"  idle latency {idle:.1f} ns; memlat on CPU 0, same size: {statistics.median(idle_ref):.1f} ns; "
                  f"ratio {ratio_idle:.3f} (target 0.85-1.15)")
            print(f"  latency under the heaviest load {loaded:.1f} ns: {loaded / idle - 1:+.0%} over idle")
            for name, ratio in (("load vs likwid-bench", ratio_bw), ("idle vs memlat", ratio_idle)):
                if not 0.85 <= ratio <= 1.15:
                    failed.append(f"{n} loaders: {name} {ratio:.3f}")
        print(f"\nload average (1 min) before/after: {load_before:.2f}/{os.getloadavg()[0]:.2f} "
              f"on {os.cpu_count()} CPUs")
    print("FAILED: " + "; ".join(failed) if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
