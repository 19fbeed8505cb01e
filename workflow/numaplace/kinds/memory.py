"""The memory micro-benchmarks membw (read bandwidth) and memlat (pointer-chase
latency), microbench/src: the reference thesis's B1-B4. Their own tables, figures and
summary section:

Tables of the memory micro-benchmarks (membw, memlat) from their run records.

memory.csv: one row per measured value (a `result:` line of a run's output), with the
issue's columns first: bench, mode, size_bytes, threads, reader_cpu, reader_node,
memory_node (the node the cell meant the buffer to be on: membind node, else the node
of thread 0, which first-touched it), rep (the study's repetition), value, unit,
pages_on_memory_node (share of the buffer's pages on that node, from the benchmark's
own move_pages(2) right after the first touch), status (the run's status, or `drift`
when fewer than 99 % of the pages were on the intended node); then where it came from.

memory_matrix.csv: median per cell (bench, mode, size, via, reader_node, memory_node),
ok rows only; via = first-touch or membind.

Figures (report/<study>/figures/<name>/), ok rows only (pages on the intended node, run ok):
  memory_bandwidth   membw serial MB/s per reading CPU, memory on one node (the thesis's
                     bar charts), per (size, memory node, via)
  memory_latency     memlat ns per load vs working-set size per (reader node, memory node),
                     sysfs L1d/L2/L3 sizes marked
  memory_heatmap     reader node × memory node medians (latency and bandwidth), per size
  memory_contention  membw parallel per-thread MB/s (median) and their sum vs thread count"""
from __future__ import annotations

from numaplace.kinds import MatrixRole, kind, register
from numaplace.kinds import membench_output
from numaplace.core.text import byte_size_text
from numaplace.kinds.microbench import (COMMON_FLAGS, LOAD_MIN_S, LONG_MAX, ULLONG_MAX, MicroBench, choice,
                                        stride, whole, intended_memory_node)


class MemoryBench(MicroBench):
    tables = {"memory": "memory.csv: one row per value measured by membw and memlat",
              "memory_matrix": "memory_matrix.csv: median per reader node × memory node"}
    figures = {"memory_bandwidth": "Memory: read bandwidth per CPU", "memory_latency": "Memory: latency vs size",
               "memory_heatmap": "Memory: reader node × memory node", "memory_contention": "Memory: contention"}

    def make_tables(self, records, thresholds):
        memory = memory_table(records, thresholds["memory_cell_share_min"])
        return {"memory": memory, "memory_matrix": matrix_table(memory)}

    def draw(self, tables, writer):
        memory_figures(tables, writer)

    def summary(self, tables, md_table):
        return memory_markdown(tables.get("memory"), tables.get("memory_matrix"), md_table)


class Membw(MemoryBench):
    flags = {**COMMON_FLAGS, "--mode": choice("serial", "parallel"), "--share": choice("slice", "whole")}
    default_sizes = 4

    def in_parallel(self, opts):
        return opts.get("--mode") == "parallel"


class Memlat(MemoryBench):
    run_s = 3.0
    curve_s = 25.0              # without --sizes: the whole latency curve, L1 to 4 x the LLC
    flags = {**COMMON_FLAGS, "--stride": stride, "--per-octave": whole(1, 32), "--min-loads": whole(0, LONG_MAX),
             "--seed": whole(0, ULLONG_MAX), "--dump-chain": None}
    not_measuring = {"--dump-chain": "prints memlat's chain and measures nothing (a test mode of "
                                     "tests/test_membench.py); remove it"}

    def floor_s(self, opts):
        return opts.get("--min-loads", 10**6) * LOAD_MIN_S

    def run_seconds(self, cls, threads, args, speed=1.0):
        return (self.run_s if "--sizes" in args else self.curve_s) * max(1, threads)

    def check_options(self, opts, at, where, entry):
        from numaplace import ConfigError
        stride = opts.get("--stride", 64)
        for text, size in opts.get("--sizes", ()):
            if size is not None and size < 2 * stride:
                raise ConfigError(where, f"{entry}.args[{at['--sizes'] + 1}]", f"--sizes {text}: memlat needs "
                                  f"at least 2 lines of {stride} B (--stride) to chase")


register(Membw("membw", "membw read bandwidth", "value", "MB/s", True,
               matrix=MatrixRole("read bandwidth", "GB/s", 1e-3, ".1f", True, "bandwidth", ("parallel",))))
register(Memlat("memlat", "memlat pointer-chase latency", "value", "ns", False,
                matrix=MatrixRole("latency", "ns", 1.0, ".0f", False, "latency")))


# -- tables ---------------------------------------------------------------------------

PAGE_SHARE_MIN = 0.99      # fidelity.memory_cell_share_min's default (study schema)
COLUMNS = ["bench", "mode", "size_bytes", "threads", "reader_cpu", "reader_node", "memory_node", "rep",
           "value", "unit", "pages_on_memory_node", "status",
           "run_id", "attempt", "experiment_placement", "placement_id", "via", "thread", "sample",
           "alloc_cpu", "pages_memory_majority", "migrated", "seconds", "hugepages", "huge_kb",
           "cache_l1d", "cache_l2", "cache_l3", "record"]
MATRIX_COLUMNS = ["bench", "mode", "size_bytes", "via", "reader_node", "memory_node", "median", "min", "max",
                  "n", "unit"]


def intended_node(p, node_of, out):
    node = intended_memory_node(p, node_of)
    if node is None and p.get("memory") == "local" and out and out["results"]:
        node = out["results"][0].get("alloc_node")        # topology unknown: the binary's word
    return node


def record_rows(rec, share_min=PAGE_SHARE_MIN):
    """A run's values as rows of memory.csv; rec: a numaplace.record.store.Record."""
    p = rec.placement
    out = rec.output
    if not out:
        return []
    node_of = rec.node_of()
    want = intended_node(p, node_of, out)
    via = "membind" if p.get("memory") == "membind" else ("first-touch" if p.get("memory") == "local" else p.get("memory"))
    rows = []
    for r in out["results"]:
        share = membench_output.share_on(r, want) if want is not None else None
        status = rec.status
        if status == "ok" and (share is None or share < share_min):
            status = "drift"
        rows.append({
            "bench": rec.bench, "mode": r.get("mode"), "size_bytes": r.get("size_bytes"),
            "threads": r.get("threads"), "reader_cpu": r.get("reader_cpu"), "reader_node": r.get("reader_node"),
            "memory_node": want, "rep": rec.rep, "value": r.get("value"), "unit": r.get("unit"),
            "pages_on_memory_node": None if share is None else round(share, 6), "status": status,
            "run_id": rec.run_id, "attempt": rec.is_attempt,
            "experiment_placement": p.get("shape"), "placement_id": p.get("id"), "via": via,
            "thread": r.get("thread"), "sample": r.get("rep"), "alloc_cpu": r.get("alloc_cpu"),
            "pages_memory_majority": r.get("memory_node"), "migrated": r.get("migrated"),
            "seconds": r.get("seconds"), "hugepages": out["system"].get("hugepages"),
            "huge_kb": r.get("huge_kb"), "op": r.get("op"), "cache_l1d": out["cache"].get("l1d"), "cache_l2": out["cache"].get("l2"),
            "cache_l3": out["cache"].get("l3"), "record": rec.path})
    return rows


def memory_table(records, share_min=PAGE_SHARE_MIN):
    import pandas as pd
    rows = [row for rec in records for row in record_rows(rec, share_min)]
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.sort_values(["bench", "mode", "via", "memory_node", "reader_node", "size_bytes", "threads",
                           "rep", "thread", "sample"], na_position="last", kind="stable").reset_index(drop=True)


def matrix_table(memory):
    """Median per (bench, mode, size, via, reader node, memory node) over ok rows. The
    contention runs (membw parallel, several threads) are not cells of a matrix."""
    import pandas as pd
    ok = memory[(memory["status"] == "ok") & ~((memory["mode"] == "parallel") & (memory["threads"] > 1))]
    if ok.empty:
        return pd.DataFrame(columns=MATRIX_COLUMNS)
    g = ok.groupby(["bench", "mode", "size_bytes", "via", "reader_node", "memory_node", "unit"], dropna=False)["value"]
    out = g.agg(["median", "min", "max", "count"]).reset_index().rename(columns={"count": "n"})
    return out[MATRIX_COLUMNS]


# -- figures (matplotlib imported when drawn: the Snakefile imports the registry) ------



def _case(bench, size=None, threads=None):
    return {"bench": bench, "class": "X", "variant": "default", "threads": threads}


def bandwidth_figures(memory, w):
    import matplotlib.pyplot as plt
    import numpy as np
    d = memory[(memory["bench"] == "membw") & (memory["mode"] == "serial") & (memory["status"] == "ok")]
    for (size, mnode, via), g in d.groupby(["size_bytes", "memory_node", "via"]):
        per_cpu = g.groupby("reader_cpu")["value"].agg(["median", "min", "max"]).reset_index()
        fig, ax = plt.subplots(figsize=(w.cfg["width"], 3.6))
        local = [int(c) for c in g[g["reader_node"] == g["memory_node"]]["reader_cpu"].unique()]
        colors = ["#2ca02c" if int(c) in local else "#4c72b0" for c in per_cpu["reader_cpu"]]
        x = np.arange(len(per_cpu))
        ax.bar(x, per_cpu["median"], color=colors, zorder=3)
        ax.errorbar(x, per_cpu["median"], yerr=[per_cpu["median"] - per_cpu["min"], per_cpu["max"] - per_cpu["median"]],
                    fmt="none", ecolor="black", capsize=2, zorder=4)
        ax.set_xticks(x, [str(int(c)) for c in per_cpu["reader_cpu"]])
        ax.set_xlabel("reading CPU (green: on the memory node)")
        ax.set_ylabel("read bandwidth (MB/s, 10^6 B/s)")
        title = f"membw serial read bandwidth per CPU — {byte_size_text(size)} on node {int(mnode)} ({via})"
        ax.set_title(title, loc="left", fontsize=10)
        ax.grid(axis="y", alpha=0.3, zorder=0)
        w.save(fig, "memory_bandwidth", f"membw.{int(size)}.m{int(mnode)}.{via}", title, _case("membw"))


def latency_figures(memory, w):
    import matplotlib.pyplot as plt
    d = memory[(memory["bench"] == "memlat") & (memory["status"] == "ok")]
    if d.empty:
        return
    for via, gv in d.groupby("via"):
        fig, ax = plt.subplots(figsize=(w.cfg["width"], 4.2))
        for (r, m), g in gv.groupby(["reader_node", "memory_node"]):
            med = g.groupby("size_bytes")["value"].median()
            if len(med) < 2:
                continue
            ax.plot(med.index, med.values, marker=".", label=f"node {int(r)} reads node {int(m)}")
        for col, name in (("cache_l1d", "L1d"), ("cache_l2", "L2"), ("cache_l3", "L3")):
            vals = gv[col].dropna()
            if len(vals) and vals.iloc[0] > 0:
                ax.axvline(vals.iloc[0], color="grey", ls="--", lw=0.8)
                ax.text(vals.iloc[0], ax.get_ylim()[1] if ax.lines else 1, f" {name}", fontsize=8, va="top")
        if not ax.lines:
            plt.close(fig)
            continue
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("working set (bytes; dashed: sysfs cache sizes)")
        ax.set_ylabel("latency (ns per dependent load)")
        title = f"memlat pointer-chase latency vs size ({via})"
        ax.set_title(title, loc="left", fontsize=10)
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
        w.save(fig, "memory_latency", f"memlat.{via}", title, _case("memlat"))


def heatmap_figures(matrix, w):
    import matplotlib.pyplot as plt
    import numpy as np
    # one heatmap per (bench, mode, via): at its largest size (DRAM, the thesis's 32 MB role)
    largest = matrix.groupby(["bench", "mode", "via"])["size_bytes"].transform("max")
    for (bench, mode, size, via), g in matrix[matrix["size_bytes"] == largest].groupby(
            ["bench", "mode", "size_bytes", "via"]):
        readers = sorted(g["reader_node"].astype(int).unique())
        mems = sorted(g["memory_node"].astype(int).unique())
        grid = np.full((len(readers), len(mems)), np.nan)
        for _, row in g.iterrows():
            grid[readers.index(int(row["reader_node"])), mems.index(int(row["memory_node"]))] = row["median"]
        fig, ax = plt.subplots(figsize=(1.6 + 0.7 * len(mems), 1.4 + 0.6 * len(readers)))
        # bright = good: high bandwidth, low latency
        im = ax.imshow(grid, cmap="viridis" if kind(bench).higher_is_better else "viridis_r")
        for i in range(len(readers)):
            for j in range(len(mems)):
                if not np.isnan(grid[i, j]):
                    ax.text(j, i, f"{grid[i, j]:.0f}" if grid[i, j] >= 10 else f"{grid[i, j]:.1f}",
                            ha="center", va="center", fontsize=8, color="white")
        ax.set_xticks(range(len(mems)), mems)
        ax.set_yticks(range(len(readers)), readers)
        ax.set_xlabel("memory node")
        ax.set_ylabel("reader node")
        unit = g["unit"].iloc[0]
        fig.colorbar(im, ax=ax, label=unit)
        title = f"{bench} {mode} {byte_size_text(size)} ({via}): median {unit}"
        ax.set_title(title, loc="left", fontsize=9)
        w.save(fig, "memory_heatmap", f"{bench}.{mode}.{int(size)}.{via}", title, _case(bench))


def contention_figures(memory, w):
    import matplotlib.pyplot as plt
    d = memory[(memory["bench"] == "membw") & (memory["mode"] == "parallel") & (memory["status"] == "ok")]
    for (size, mnode), g in d.groupby(["size_bytes", "memory_node"]):
        per = g.groupby("threads")["value"].median()
        total = g.groupby(["threads", "run_id", "sample"])["value"].sum().groupby("threads").median()
        fig, ax = plt.subplots(figsize=(w.cfg["width"] * 0.7, 3.6))
        ax.plot(per.index, per.values, marker="o", label="per thread (median)")
        ax.plot(total.index, total.values, marker="s", label="sum of threads (median)")
        ax.set_xlabel("reading threads (all at once)")
        ax.set_ylabel("MB/s")
        ax.set_xticks(list(per.index))
        title = f"membw contention — {byte_size_text(size)} first-touched on node {int(mnode)}"
        ax.set_title(title, loc="left", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        w.save(fig, "memory_contention", f"membw.{int(size)}.m{int(mnode)}", title, _case("membw"))


def memory_figures(tables, w):
    memory, matrix = tables.get("memory"), tables.get("memory_matrix")
    if memory is None or memory.empty:
        return
    bandwidth_figures(memory, w)
    latency_figures(memory, w)
    if matrix is not None and not matrix.empty:
        heatmap_figures(matrix, w)
    contention_figures(memory, w)


# -- summary.md's section ----------------------------------------------------------------

def memory_markdown(memory, matrix, md_table):
    """The memory micro-benchmarks' section: median per reader × memory node at the
    largest size of each (bench, mode, via), and the page placement of every cell."""
    if memory is None or not len(memory):
        return []
    out = ["## Memory micro-benchmarks", "",
           "membw (MB/s, 10^6 B/s) and memlat (ns per load), median per reader node × memory node "
           "at the largest size measured; full rows in memory.csv, all sizes in memory_matrix.csv. "
           f"Pages on the intended memory node: min {memory['pages_on_memory_node'].min():.2%} over "
           f"{len(memory)} values; {int((memory['status'] == 'drift').sum())} values drift "
           "(below the study's fidelity.memory_cell_share_min, 99 % unless set).", ""]
    if matrix is not None and len(matrix):
        top = matrix[matrix["size_bytes"] == matrix.groupby(["bench", "mode", "via"])["size_bytes"].transform("max")]
        out += [md_table(top, [("bench", "bench"), ("mode", "mode"), ("size (B)", "size_bytes"), ("via", "via"),
                               ("reader node", "reader_node"), ("memory node", "memory_node"),
                               ("median", lambda r: f"{float(r['median']):.4g}"), ("n", "n"), ("unit", "unit")]), ""]
    return out
