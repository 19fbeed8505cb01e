"""Tables of the memory micro-benchmarks (membw, memlat) from their run records.

memory.csv: one row per measured value (a `result:` line of a run's output), with the
issue's columns first: bench, mode, size_bytes, threads, reader_cpu, reader_node,
memory_node (the node the cell meant the buffer to be on: membind node, else the node
of thread 0, which first-touched it), rep (the study's repetition), value, unit,
pages_on_memory_node (share of the buffer's pages on that node, from the benchmark's
own move_pages(2) right after the first touch), status (the run's status, or `drift`
when fewer than 99 % of the pages were on the intended node); then where it came from.

memory_matrix.csv: median per cell (bench, mode, size, via, reader_node, memory_node),
ok rows only; via = first-touch or membind."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from numaplace.kinds import membench_output
from numaplace.kinds import kind
from numaplace.plan.memory_specs import intended_memory_node
from numaplace.record.store import iter_records
from numaplace.core.cpulist import parse_cpulist

PAGE_SHARE_MIN = 0.99      # the fidelity bar for a memory cell
COLUMNS = ["bench", "mode", "size_bytes", "threads", "reader_cpu", "reader_node", "memory_node", "rep",
           "value", "unit", "pages_on_memory_node", "status",
           "run_id", "attempt", "experiment_placement", "placement_id", "via", "thread", "sample",
           "alloc_cpu", "pages_memory_majority", "migrated", "seconds", "hugepages", "huge_kb",
           "cache_l1d", "cache_l2", "cache_l3", "record"]
MATRIX_COLUMNS = ["bench", "mode", "size_bytes", "via", "reader_node", "memory_node", "median", "min", "max",
                  "n", "unit"]


def _node_of(rec):
    nodes = ((rec.get("topology") or {}).get("nodes") or {})
    table = {c: int(n) for n, cl in nodes.items() if cl for c in parse_cpulist(cl)}
    return table.get


def _output(rec):
    """The parsed output: the record's, else parsed again from stdout beside it."""
    if rec.get("output"):
        return rec["output"]
    path = Path(rec["_path"]).parent / "stdout" if rec.get("_path") else None
    return kind(rec["bench"]).parse(path.read_text(errors="replace")) if path and path.exists() else None


def intended_node(p, node_of, out):
    node = intended_memory_node(p, node_of)
    if node is None and p.get("memory") == "local" and out and out["results"]:
        node = out["results"][0].get("alloc_node")        # topology unknown: the binary's word
    return node


def record_rows(rec):
    if (rec.get("kind") or {}).get("family") != "memory":
        return []
    p = rec.get("placement") or {}
    out = _output(rec)
    if not out:
        return []
    node_of = _node_of(rec)
    want = intended_node(p, node_of, out)
    via = "membind" if p.get("memory") == "membind" else ("first-touch" if p.get("memory") == "local" else p.get("memory"))
    rows = []
    for r in out["results"]:
        share = membench_output.share_on(r, want) if want is not None else None
        status = rec.get("status")
        if status == "ok" and (share is None or share < PAGE_SHARE_MIN):
            status = "drift"
        rows.append({
            "bench": rec["bench"], "mode": r.get("mode"), "size_bytes": r.get("size_bytes"),
            "threads": r.get("threads"), "reader_cpu": r.get("reader_cpu"), "reader_node": r.get("reader_node"),
            "memory_node": want, "rep": rec.get("rep"), "value": r.get("value"), "unit": r.get("unit"),
            "pages_on_memory_node": None if share is None else round(share, 6), "status": status,
            "run_id": rec.get("run_id"), "attempt": bool(rec.get("_attempt")),
            "experiment_placement": p.get("shape"), "placement_id": p.get("id"), "via": via,
            "thread": r.get("thread"), "sample": r.get("rep"), "alloc_cpu": r.get("alloc_cpu"),
            "pages_memory_majority": r.get("memory_node"), "migrated": r.get("migrated"),
            "seconds": r.get("seconds"), "hugepages": out["system"].get("hugepages"),
            "huge_kb": r.get("huge_kb"), "cache_l1d": out["cache"].get("l1d"), "cache_l2": out["cache"].get("l2"),
            "cache_l3": out["cache"].get("l3"), "record": rec.get("_path")})
    return rows


def memory_table(results_dir):
    rows = [row for rec in iter_records(results_dir, attempts=True) for row in record_rows(rec)]
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df.sort_values(["bench", "mode", "via", "memory_node", "reader_node", "size_bytes", "threads",
                           "rep", "thread", "sample"], na_position="last", kind="stable").reset_index(drop=True)


def matrix_table(memory):
    """Median per (bench, mode, size, via, reader node, memory node) over ok rows. The
    contention runs (membw parallel, several threads) are not cells of a matrix."""
    ok = memory[(memory["status"] == "ok") & ~((memory["mode"] == "parallel") & (memory["threads"] > 1))]
    if ok.empty:
        return pd.DataFrame(columns=MATRIX_COLUMNS)
    g = ok.groupby(["bench", "mode", "size_bytes", "via", "reader_node", "memory_node", "unit"], dropna=False)["value"]
    out = g.agg(["median", "min", "max", "count"]).reset_index().rename(columns={"count": "n"})
    return out[MATRIX_COLUMNS]


def write_memory_tables(results_dir, out_dir):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    memory = memory_table(results_dir)
    memory.to_csv(out_dir / "memory.csv", index=False)
    matrix_table(memory).to_csv(out_dir / "memory_matrix.csv", index=False)
    return memory
