"""Validate numaplace's STREAM-style benchmark (microbench/src/stream) against likwid-bench on
this machine, side by side in one run:

  copy   ours (c[i] = a[i], 16 B per element counted)       vs likwid-bench -t copy   (16 B/element)
  triad  ours (a[i] = b[i] + q*c[i], 24 B per element)      vs likwid-bench -t stream (24 B/element)
         and, shown but not judged, likwid-bench -t triad   (A = B*C + D: 4 streams, 32 B/element)

likwid-bench's `triad` is a four-stream kernel; STREAM's triad (two loads, one store) is
likwid-bench's `stream`, which is the reference the triad is judged against. Both tools
count bytes as STREAM does: what the kernel names per element (8 per load, 8 per store),
not the write-allocate read of each stored line. The numbers compared are likwid-bench's
`MByte/s:` line (its `Data volume (Byte)` over `Time`, MB = 10^6 B: the "Bytes per
element" of `likwid-bench -l <test>` times elements times iterations) and our `value`
(bytes counted / one region's time), one sample each per likwid-bench run lasting >= S
seconds (-s S, then -i: its -s often undershoots) and per repetition of ours (a region
of >= S seconds, --min-time S).

Which statistic: the median of each side's samples, taken in alternating rounds (ours,
then likwid-bench, then ours, ...), so that both sides see the same load over time. On a
shared machine other load comes and goes; a sample it hits is slower, on either side,
and the median of interleaved samples cancels it best. The best sample of each side
(STREAM's own figure is its best repetition) is printed beside the medians: it is one
sample, which a quiet moment on one side alone can lift; the spread of each side's
samples says how noisy the run was.

Same work on both sides: the same N elements per array (likwid's -W size is the bytes of
all its streams: 16N for copy, 24N for stream, 32N for triad; ours is --sizes 24N, the
three arrays), the same threads on the same CPUs (ours --cpus 0[,1] under taskset, likwid
S0's first hwthreads; checked from both outputs), the same first touch (ours: each thread
its slice, likwid -W: each thread its chunks), scalar kernels on both sides (likwid's
copy/stream/triad are "only scalar operations"; ours compiled at make.def's -O2).
Target: median ours / median likwid within 0.85-1.15 for every (op, size, threads).

The measured part holds /tmp/numaplace-quiet.lock (the lock `flock /tmp/numaplace-quiet.lock`
takes, flock(2)); run under that flock yourself or not, either works:
    .venv/bin/python tests/benchmarks/validate_stream.py [--sizes DRAM 1G] [--threads 2 1]
        [--samples 15] [--seconds 0.2]
Exit status 0 when every judged row passed, 1 otherwise."""
from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import statistics
import subprocess
import sys

from _common import build_microbench, quiet_lock  # the script's folder is on sys.path

try:                              # the package is being restructured: kinds/ is its new home
    from numaplace.kinds import membench_output  # noqa: E402
except ImportError:
    from numaplace import membench_output  # noqa: E402

# our op -> [(likwid test, bytes per element it counts, judged)]
REFERENCES = {"copy": [("copy", 16, True)], "triad": [("stream", 24, True), ("triad", 32, False)]}
OURS_BYTES = {"copy": 16, "triad": 24}
ALIGN = 4096      # N a multiple of this: likwid's per-thread chunks are whole loop strides


def ours(binary, n, threads, ops, reps, min_time):
    cpus = ",".join(str(c) for c in range(threads))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env["OMP_NUM_THREADS"] = str(threads)
    r = subprocess.run(["taskset", "-c", cpus, str(binary), "--cpus", cpus, "--sizes", str(24 * n),
                        "--ops", ",".join(ops), "--reps", str(reps), "--min-time", str(min_time)],
                       capture_output=True, text=True, env=env)
    out = membench_output.parse(r.stdout)
    assert r.returncode == 0 and out["verified"], r.stdout[-2000:] + r.stderr
    for row in out["results"]:
        assert int(row["elements"]) == n and row["thread_cpus"] == cpus and not row["migrated"], row
    return out


_ITERATIONS = {}     # (test, n, threads) -> likwid-bench -i that last lasted long enough


def likwid(test, n, bytes_per_element, threads, seconds):
    """(MByte/s, Time) of one likwid-bench run lasting >= seconds, as our regions do: -s
    often undershoots (it estimates from a short trial), so a run found shorter is not
    kept, and runs again with proportionally more iterations per thread (-i)."""
    key = (test, n, threads)
    while True:
        how = ["-i", str(_ITERATIONS[key])] if key in _ITERATIONS else ["-s", str(seconds)]
        r = subprocess.run(["likwid-bench", "-t", test, *how, "-W", f"S0:{bytes_per_element * n}B:{threads}"],
                           capture_output=True, text=True, check=True)
        # "Global Thread t running on hwthread c - Vector length v", in any order
        placed = sorted((int(t), int(c), int(v)) for t, c, v in re.findall(
            r"Global Thread (\d+) running on hwthread (\d+) - Vector length (\d+)", r.stdout))
        assert [c for _, c, _ in placed] == list(range(threads)) and sum(v for _, _, v in placed) == n, \
            r.stdout[:2000]
        mbs = float(re.search(r"^MByte/s:\s+([0-9.]+)", r.stdout, re.M).group(1))
        secs = float(re.search(r"^Time:\s+([0-9.eE+-]+)", r.stdout, re.M).group(1))
        iters = int(re.search(r"^Iterations per thread:\s+(\d+)", r.stdout, re.M).group(1))
        if secs >= seconds:
            _ITERATIONS[key] = iters
            return mbs, secs
        _ITERATIONS[key] = max(iters + 1, math.ceil(iters * 1.2 * seconds / max(secs, 1e-6)))


def spread(values):
    return (max(values) - min(values)) / statistics.median(values)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["DRAM", "1G"],
                    help="total bytes of our three arrays: DRAM (4x all last-level caches) or e.g. 1G, 512M")
    ap.add_argument("--threads", nargs="+", type=int, default=[2, 1])
    ap.add_argument("--samples", type=int, default=15,
                    help="alternating rounds per case, one sample of each side per round (default 15)")
    ap.add_argument("--seconds", type=float, default=0.2,
                    help="one sample's least length: our --min-time, likwid-bench's run (default 0.2)")
    a = ap.parse_args()
    if not shutil.which("likwid-bench"):
        sys.exit("likwid-bench not found (Debian: apt-get install likwid)")
    if max(a.threads) > os.cpu_count():
        sys.exit(f"--threads {max(a.threads)}: this machine has {os.cpu_count()} CPUs")
    binary = build_microbench("stream")
    ops = ["copy", "triad"]
    rows, runs, lengths, ok = [], [], [], True
    with quiet_lock():
        load = [os.getloadavg()[0]]
        cache = ours(binary, ALIGN, 1, ["copy"], 1, 0.001)["cache"]
        units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
        for size in a.sizes:
            total = 4 * cache["llc_total"] if size == "DRAM" else \
                int(float(size[:-1]) * units[size[-1].upper()]) if size[-1].upper() in units else int(size)
            n = total // 24 // ALIGN * ALIGN
            for threads in a.threads:
                mine = {op: [] for op in ops}
                ref = {(op, t): [] for op in ops for t, _, _ in REFERENCES[op]}
                length = {"stream": [], "likwid": []}         # seconds per sample
                for _ in range(a.samples):        # one round: ours (one repetition), then likwid-bench
                    out = ours(binary, n, threads, ops, 1, a.seconds)
                    for op in ops:
                        mine[op] += [r["value"] for r in out["results"] if r["op"] == op]
                    length["stream"] += [r["seconds"] for r in out["results"]]
                    for op in ops:
                        for test, bpe, _ in REFERENCES[op]:
                            mbs, secs = likwid(test, n, bpe, threads, a.seconds)
                            ref[(op, test)].append(mbs)
                            length["likwid"].append(secs)
                    load.append(os.getloadavg()[0])
                for op in ops:
                    m, mb = statistics.median(mine[op]), max(mine[op])
                    for test, bpe, judged in REFERENCES[op]:
                        lk, lb = statistics.median(ref[(op, test)]), max(ref[(op, test)])
                        ratio = m / lk
                        passed = 0.85 <= ratio <= 1.15 if judged else None
                        ok &= passed is not False
                        rows.append((op, f"{24 * n:,} B (N={n:,})", str(threads), f"{m:,.0f}", f"{lk:,.0f}",
                                     f"{ratio:.3f}", f"{mb:,.0f} / {lb:,.0f} = {mb / lb:.3f}",
                                     f"{spread(mine[op]):.0%} / {spread(ref[(op, test)]):.0%}",
                                     f"likwid-bench -t {test} -W S0:{bpe * n}B:{threads} ({bpe} B/elem)",
                                     {True: "PASS", False: "FAIL", None: "info"}[passed]))
                    runs.append((op, 24 * n, threads, mine[op], {t: ref[(op, t)] for t, _, _ in REFERENCES[op]}))
                lengths.append((24 * n, threads, statistics.median(length["stream"]),
                                statistics.median(length["likwid"])))

    head = ("op", "size (ours: 3 arrays)", "threads", "stream MB/s", "likwid MB/s", "ratio",
            "best: stream / likwid", "spread s / l", "reference", "result")
    width = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    print("\n" + "  ".join(f"{h:<{w}}" for h, w in zip(head, width)))
    for r in rows:
        print("  ".join(f"{v:<{w}}" for v, w in zip(r, width)))
    print(f"\nMB/s = 10^6 B/s, bytes counted as STREAM does. stream MB/s, likwid MB/s: the median of {a.samples} "
          f"samples each, taken in alternating rounds (ours: one region of >= {a.seconds} s, one invocation with "
          f"--reps 1; likwid-bench: the MByte/s line of one run of >= {a.seconds} s); ratio = stream / likwid of "
          f"the medians (judged, target 0.85-1.15; info rows are not judged); best: the best sample of each "
          f"side (STREAM's own figure); spread = (max - min) / median of each side's samples. Load average "
          f"(1 min) over the measurement: {min(load):.2f}-{max(load):.2f} on {os.cpu_count()} CPUs.")
    print("median sample length (s), stream / likwid-bench: " + ", ".join(
        f"{size:,} B {threads} thr {ls:.2f} / {ll:.2f}" for size, threads, ls, ll in lengths))
    print("samples (MB/s), in the order taken:")
    for op, size, threads, m, refs in runs:
        print(f"  {op:<5} {size:>13,} B {threads} thr  stream {[round(v) for v in m]}")
        for t, vals in refs.items():
            print(f"  {'':<5} {'':>13} {'':>2}      likwid {t} {[round(v) for v in vals]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
