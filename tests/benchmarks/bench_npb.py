#!/usr/bin/env python3
"""numaplace's NPB-compatible kernels against the official NPB 3.4.2 reference figures
(NPB-FACTS.md §6: gfortran 12.2, -O3 -fopenmp, 1 thread pinned to CPU 0, best of 3)."""
import argparse
import re
import subprocess

from _common import binary
from numaplace.kinds import npb_output

REFERENCE = {  # kernel.class: (seconds, Mop/s, peak RSS MiB) at 1 thread
    "cg.A": (0.81, 1857, 50), "cg.B": (46.9, 1167, 344), "cg.C": (124.2, 1154, 891),
    "mg.A": (0.93, 4173, 435), "mg.B": (4.06, 4798, 435), "mg.C": (33.4, 4656, 3412),
}


def measure(exe, cpu=0):
    r = subprocess.run(["/usr/bin/time", "-v", "taskset", "-c", str(cpu), str(exe)],
                       env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, cwd=exe.parent)
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    return npb_output.parse(r.stdout), rss_kb / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--classes", nargs="+", default=["B"])
    ap.add_argument("--benches", nargs="+", default=["cg", "mg"])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"{'kernel':8} {'time s':>8} {'Mop/s':>9} {'ref Mop/s':>9} {'ratio':>6} "
          f"{'RSS MiB':>8} {'ref RSS':>8} {'RSS ratio':>9} verified")
    for cls in a.classes:
        for bench in a.benches:
            exe = binary(bench, cls)
            runs = [measure(exe) for _ in range(a.repeat)]
            best = min(runs, key=lambda r: r[0]["time_s"] or 1e9)
            npb, rss = best
            ref = REFERENCE[f"{bench}.{cls}"]
            print(f"{bench}.{cls:6} {npb['time_s']:8.2f} {npb['mops']:9.1f} {ref[1]:9d} "
                  f"{npb['mops'] / ref[1]:6.2f} {rss:8.1f} {ref[2]:8d} {rss / ref[2]:9.2f} "
                  f"{all(r[0]['verified'] for r in runs)}")


if __name__ == "__main__":
    main()
