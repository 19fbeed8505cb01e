"""The machine first (before the answer, as MLC prints it): what the runs ran on (CPU
model, sockets, cores and hardware threads, memory per node and its kind, caches) and the
reader node x memory node matrices of the study's memory runs as numbers, latency in ns
and read bandwidth in GB/s. Text for the terminal and machine.txt, a heat-mapped table for
the report's first screen; numbers from memory_matrix.csv, facts from the records'
topology."""
from __future__ import annotations

import html

import pandas as pd

from numaplace.core.cpulist import parse_cpulist
from numaplace.kinds import matrix_kinds
from numaplace.core.text import counted

MACHINE_FILE = "machine.txt"          # beside answer.txt: the terminal prints it first



def _size(kb):
    return f"{kb // 1024} MiB" if kb >= 1024 and kb % 1024 == 0 else f"{kb} KiB"


def facts_line(topology):
    """'AMD EPYC 9654 · 2 sockets · 192 cores, 384 hardware threads · 8 NUMA nodes with
    CPUs of 96 GiB · L3 32 MiB x 24, L2 1 MiB x 192', from a record's topology."""
    if not topology:
        return "not recorded (no run has a record yet)"
    nodes = {int(n): parse_cpulist(c) if c else [] for n, c in (topology.get("nodes") or {}).items()}
    mem = {int(n): int(m) for n, m in (topology.get("memory_mb") or {}).items()}
    threads = sum(len(c) for c in nodes.values())
    smt = [parse_cpulist(s) for s in topology.get("smt_siblings") or []]
    cores = threads - sum(len(s) - 1 for s in smt)
    parts = [topology.get("model") or "CPU model not recorded"]
    if topology.get("sockets"):
        parts.append(counted(topology["sockets"], "socket"))
    parts.append(f"{counted(cores, 'core')}" + (f", {threads} hardware threads" if threads != cores else ""))
    kinds = {}
    for n, cpus in sorted(nodes.items()):
        kinds.setdefault("with CPUs" if cpus else "memory only", []).append(mem.get(n, 0) / 1024)
    parts.append(", ".join(f"{counted(len(gib), 'NUMA node')} {kind} ("
                           + (f"{min(gib):.3g} GiB" + (" each" if len(gib) > 1 else "") if f"{min(gib):.3g}" == f"{max(gib):.3g}"
                              else f"{min(gib):.3g}-{max(gib):.3g} GiB") + ")" for kind, gib in kinds.items()))
    caches = [c for c in topology.get("caches") or [] if c.get("type") in ("Data", "Unified")]
    if caches:
        parts.append(", ".join(f"L{c['level']} {_size(c['size_kb'])} x {len(c['shared_cpus'])}"
                               for c in sorted(caches, key=lambda c: -c["level"])))
    if topology.get("allowed"):
        a = topology["allowed"]
        parts.append(f"runs restricted to CPUs {a['cpus']}, memory nodes {a['nodes']} ({a['source']})")
    return " · ".join(parts)


def node_matrices(memory_matrix):
    """{what: DataFrame reader node x memory node} at each bench's largest size of the
    matrix (DRAM), the median of its cells' medians (first touch and membind alike: one
    cell, one number); serial bandwidth only (a contention run is no cell)."""
    out = {}
    if memory_matrix is None or not len(memory_matrix):
        return out
    m = memory_matrix
    for bench, role in sorted(matrix_kinds().items(), key=lambda kv: kv[1].higher_is_better):
        what, unit, scale, fmt = role.what, role.unit, role.scale, role.fmt
        d = role.cells(m, bench)
        if d.empty:
            continue
        # the size of the most cells (a latency curve adds sizes on one cell only), largest of those
        cells = d.groupby("size_bytes").apply(lambda g: len(g[["reader_node", "memory_node"]].drop_duplicates()),
                                              include_groups=False)
        d = d[d["size_bytes"] == max(cells[cells == cells.max()].index)]
        grid = d.groupby(["reader_node", "memory_node"])["median"].median().unstack() * scale
        grid.index = grid.index.astype(int)
        grid.columns = grid.columns.astype(int)
        out[what] = {"grid": grid, "unit": unit, "fmt": fmt, "size": int(d["size_bytes"].iloc[0]),
                     "higher_is_better": role.higher_is_better}
    return out


def matrix_lines(what, m):
    """A matrix as text, MLC-like: a header of memory nodes, a row per reader node."""
    grid, fmt = m["grid"], m["fmt"]
    cells = [[("-" if pd.isna(v) else f"{v:{fmt}}") for v in row] for row in grid.to_numpy()]
    width = max([len(c) for row in cells for c in row] + [len(str(c)) for c in grid.columns] + [4])
    lines = [f"{what} ({m['unit']}, {m['size'] / 2**20:.0f} MiB buffers), reader node x memory node:",
             "  node " + " ".join(f"{c:>{width}}" for c in grid.columns)]
    lines += [f"  {r:>4} " + " ".join(f"{c:>{width}}" for c in row) for r, row in zip(grid.index, cells)]
    return lines


def machine_lines(topology, memory_matrix):
    """The machine block: the facts line, then each matrix as text."""
    lines = [facts_line(topology)]
    for what, m in node_matrices(memory_matrix).items():
        lines += matrix_lines(what, m)
    return lines


def matrix_html(memory_matrix):
    """Each matrix as an HTML table whose cells are shaded by their value (a heat map
    that keeps the numbers readable): darker is worse (higher latency, lower bandwidth)."""
    out = []
    for what, m in node_matrices(memory_matrix).items():
        grid = m["grid"]
        higher_better = m["higher_is_better"]
        lo, hi = grid.min().min(), grid.max().max()
        rows = []
        for r, row in grid.iterrows():
            tds = []
            for v in row:
                if pd.isna(v):
                    tds.append("<td>-</td>")
                    continue
                bad = 0.0 if hi == lo else (v - lo) / (hi - lo)
                bad = 1 - bad if higher_better else bad
                tds.append(f'<td style="background: rgba(214, 96, 77, {0.08 + 0.6 * bad:.2f})">{v:{m["fmt"]}}</td>')
            rows.append(f"<tr><th>{r}</th>{''.join(tds)}</tr>")
        head = "".join(f"<th>{c}</th>" for c in grid.columns)
        out.append(f'<table class="data matrix"><caption>{html.escape(what)} ({m["unit"]}, '
                   f'{m["size"] / 2**20:.0f} MiB), reader node \u00d7 memory node</caption>'
                   f"<tr><th>node</th>{head}</tr>{''.join(rows)}</table>")
    return "".join(out)
