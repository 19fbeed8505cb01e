"""Figures of the memory micro-benchmarks (tables memory.csv / memory_matrix.csv), drawn
into the same figures directory and manifest as the NPB figures (plots._Writer):

  memory_bandwidth   membw serial MB/s per reading CPU, memory on one node (the thesis's
                     bar charts), per (size, memory node, via)
  memory_latency     memlat ns per load vs working-set size per (reader node, memory node),
                     sysfs L1d/L2/L3 sizes marked
  memory_heatmap     reader node × memory node medians (latency and bandwidth), per size
  memory_contention  membw parallel per-thread MB/s (median) and their sum vs thread count
Only ok rows (pages on the intended node, run ok) are drawn."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from numaplace.kinds import kind

KINDS = ("memory_bandwidth", "memory_latency", "memory_heatmap", "memory_contention")


def _size(b):
    b = int(b)
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << k:
            return f"{b / (1 << k):.3g} {unit}"
    return f"{b / 1024:.0f} KiB" if b >= 1024 else f"{b} B"


def _case(bench, size=None, threads=None):
    return {"bench": bench, "class": "X", "variant": "default", "threads": threads}


def bandwidth_figures(memory, w):
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
        title = f"membw serial read bandwidth per CPU — {_size(size)} on node {int(mnode)} ({via})"
        ax.set_title(title, loc="left", fontsize=10)
        ax.grid(axis="y", alpha=0.3, zorder=0)
        w.save(fig, "memory_bandwidth", f"membw.{int(size)}.m{int(mnode)}.{via}", title, _case("membw"))


def latency_figures(memory, w):
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
        title = f"{bench} {mode} {_size(size)} ({via}): median {unit}"
        ax.set_title(title, loc="left", fontsize=9)
        w.save(fig, "memory_heatmap", f"{bench}.{mode}.{int(size)}.{via}", title, _case(bench))


def contention_figures(memory, w):
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
        title = f"membw contention — {_size(size)} first-touched on node {int(mnode)}"
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
