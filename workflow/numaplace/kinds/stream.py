"""STREAM-style sustained bandwidth (microbench/src/stream): McCalpin's four kernels copy,
scale, add and triad over three arrays, written here from STREAM's published definition.
Unlike membw and memlat it writes: copy and scale move 2 x 8 bytes per element, add and
triad 3 x 8 (STREAM's counting: write-allocate traffic not counted). Every thread runs
each kernel at once on its own slice, first-touched by itself (`--init serial`: all of it
by thread 0), so a placement's bandwidth is that of the nodes its threads and pages are on.

Its own table, stream.csv: one row per kernel, size, run and repetition (MB/s, MB = 10^6 B),
with the run's placement and the share of pages on the node the first thread wrote;
its figure, stream_bandwidth: per size, every placement's median MB/s per kernel
(min-max whiskers); the answer names the best and the worst placement by triad."""
from __future__ import annotations

from numaplace.kinds import register
from numaplace.kinds.memory import record_rows
from numaplace.kinds.microbench import COMMON_FLAGS, MicroBench, choice, whole

OPS = ("copy", "scale", "add", "triad")
COLUMNS = ["op", "size_bytes", "threads", "placement_id", "placement", "init", "rep", "sample", "value",
           "unit", "status", "reader_node", "memory_node", "pages_on_memory_node", "migrated", "run_id",
           "attempt", "record"]


def _ops(text):
    ops = text.split(",")
    if not ops or any(op not in OPS for op in ops) or len(set(ops)) != len(ops):
        raise ValueError(f"expected some of {','.join(OPS)}, each once, separated by commas")
    return ops


class Stream(MicroBench):
    flags = {**COMMON_FLAGS, "--init": choice("parallel", "serial"), "--ops": _ops,
             "--reps": whole(1, 200)}          # stream.c's cap: each repetition multiplies the values by 15
    tables = {"stream": "stream.csv: STREAM copy/scale/add/triad MB/s per kernel, size, placement and repetition"}
    figures = {"stream_bandwidth": "STREAM: bandwidth per kernel and placement"}

    def in_parallel(self, opts):
        return True                      # every thread runs every kernel at once

    def passes(self, opts):
        return len(opts.get("--ops", OPS))   # one timed region per kernel and repetition

    def make_tables(self, records, thresholds):
        import pandas as pd
        rows = []
        for rec in records:
            p = rec.placement
            init = ((rec.output or {}).get("run") or {}).get("init")    # its run: line
            for r in record_rows(rec, thresholds["memory_cell_share_min"]):
                label = p.get("shape") or p.get("id")
                rows.append({**{c: r.get(c) for c in COLUMNS if c in r}, "placement_id": p.get("id"),
                             "placement": label + (", serial init" if init == "serial" else ""), "init": init,
                             "attempt": rec.is_attempt})
        df = pd.DataFrame(rows, columns=COLUMNS)
        return {"stream": df.sort_values(["op", "size_bytes", "placement_id", "rep", "sample"],
                                         kind="stable").reset_index(drop=True)}

    def _medians(self, stream):
        ok = stream[(stream["status"] == "ok") & ~stream["attempt"].astype(str).isin(["True", "true"])]
        return ok.groupby(["size_bytes", "op", "placement_id", "placement", "init"])["value"].agg(
            ["median", "min", "max", "count"]).reset_index()

    def figure_size(self, runs, cfg, char_in):
        # draw's layout: a bar per placement and kernel, 0.45 in a pair; labels not wrapped
        rows, ops = set(), 0
        for r in runs:
            args = list(r.args)
            value = (lambda f: args[args.index(f) + 1] if f in args and args.index(f) + 1 < len(args) else None)
            rows.add((r.placement.shape or r.placement.id, value("--init") == "serial"))
            ops = max(ops, len(str(value("--ops")).split(",")) if value("--ops") else 4)
        if not rows:
            return None
        longest = max(len(label) + len(", serial init") * serial for label, serial in rows)
        return (cfg["width"] + longest * char_in, 1.2 + 0.45 * len(rows) * ops / 2,
                f"stream's figure: {len(rows)} placements x {ops} kernels at 0.45 in a pair")

    def draw(self, tables, w):
        import matplotlib.pyplot as plt
        import numpy as np
        stream = tables.get("stream")
        if stream is None or stream.empty:
            return
        med = self._medians(stream)
        for size, g in med.groupby("size_bytes"):
            places = sorted(g["placement"].unique())
            ops = [op for op in OPS if op in set(g["op"])]
            fig, ax = plt.subplots(figsize=(w.cfg["width"], 1.2 + 0.45 * len(places) * len(ops) / 2))
            height = 0.8 / max(len(ops), 1)
            for i, op in enumerate(ops):
                d = g[g["op"] == op].set_index("placement").reindex(places)
                y = np.arange(len(places)) + i * height
                ax.barh(y, d["median"], height=height, label=op, zorder=3)
                ax.errorbar(d["median"], y, xerr=[d["median"] - d["min"], d["max"] - d["median"]],
                            fmt="none", ecolor="black", capsize=2, zorder=4)
            ax.set_yticks(np.arange(len(places)) + 0.4 - height / 2, places)
            ax.set_xlabel("MB/s (10^6 B/s, STREAM's byte count; median, min-max)")
            title = f"STREAM bandwidth per kernel — {int(size) / 2**20:.0f} MiB of arrays"
            ax.set_title(title, loc="left", fontsize=10)
            ax.grid(axis="x", alpha=0.3, zorder=0)
            ax.legend(fontsize=8)
            w.save(fig, "stream_bandwidth", f"stream.{int(size)}", title,
                   {"bench": "stream", "class": "X", "variant": "default", "threads": None})

    def summary(self, tables, md_table):
        stream = tables.get("stream")
        if stream is None or stream.empty:
            return []
        med = self._medians(stream)
        wide = med.pivot_table(index=["size_bytes", "placement"], columns="op", values="median").reset_index()
        cols = [("size (MiB)", lambda r: f"{int(r['size_bytes']) / 2**20:.0f}"), ("placement", "placement")]
        cols += [(f"{op} MB/s", lambda r, op=op: "" if op not in r or r[op] != r[op] else f"{r[op]:.0f}")
                 for op in OPS if op in wide]
        return ["## STREAM bandwidth", "",
                "Median MB/s (10^6 B/s) over the repetitions of ok runs, per kernel; bytes counted as STREAM "
                "counts them (copy, scale 16 B per element; add, triad 24 B); full rows in stream.csv.", "",
                md_table(wide, cols), ""]

    def answer(self, tables):
        stream = tables.get("stream")
        if stream is None or stream.empty:
            return []
        med = self._medians(stream)
        triad = med[(med["op"] == "triad") & (med["size_bytes"] == med["size_bytes"].max())]
        if triad.empty:
            return []
        best, worst = triad.loc[triad["median"].idxmax()], triad.loc[triad["median"].idxmin()]
        line = f"STREAM triad: {best['median']:.0f} MB/s on {best['placement']}"
        if len(triad) > 1:
            line += (f", {worst['median']:.0f} MB/s on {worst['placement']} "
                     f"({1 - worst['median'] / best['median']:.0%} less)")
        return [line]


register(Stream("stream", "STREAM copy/scale/add/triad bandwidth", "value", "MB/s", True))
