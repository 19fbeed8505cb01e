"""Explain each NPB placement from the machine's own node × node matrices.

explain.csv: per placement with ok runs, a predicted memory cost from the study's
memory_matrix.csv (memlat latency for CG, membw read bandwidth for MG), weighted by where
the runs' pages were (numa_maps, numa_pages.csv) and where their threads ran (the
placement's CPUs and the record's topology); placements ranked by prediction and by
measured median time, Spearman's rank correlation per case, and the placements the
model fails to explain, named with what the records saw.

The model (NPB-FACTS.md; the reference thesis's reasoning, made a formula):
- A thread's loads go to its own partition of the arrays and to data every thread
  shares. CG's sparse mat-vec loads a value, a column index (its own rows) and the
  gathered vector entry p(colidx) (anyone's): shared = 1/3 of its loads. MG's 27-point
  stencils read two halo planes per partition of n/T planes: shared = 2T/n.
- Own partition: under first touch (memory local, default variant) the pages a thread
  touched are on its node; a node short of pages (the measured share below its threads'
  share) had the rest of its threads' pages land on the nodes with a surplus. Under
  interleave, membind or serial initialisation no page has an owner: a thread's loads
  go to the nodes as the pages are.
- Shared data is spread as all the pages are.
- A thread's cost is the mean over its loads of the matrix cell (reader node, memory
  node): ns per load (memlat), or seconds per GB (1/membw). OpenMP's static schedule
  ends at a barrier, so the placement's cost is its slowest thread's.
A case whose predictions differ by less than FLAT (the matrices are flat, as on a
machine whose nodes all have one memory speed) expects no difference from memory.

A placement is unexplained when its measured median is off the least-squares line of
measured against predicted (over the case's placements) by more than MISS of the line's
value and the line's value lies outside its runs' min-max range; the records then name
a cause where they saw one (spill, migration, foreign load, contention on a node).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from numaplace.kinds import explained_kinds, matrix_kinds

FLAT = 0.05          # predictions within 5 %: no difference expected from memory
FIT_SLACK = 1e-9     # relative: what a least-squares fit may differ by from one BLAS to another
MISS = 0.10          # measured off the fitted line by more than 10 %: not explained
COLUMNS = ["bench", "class", "variant", "threads", "placement_id", "placement", "memory", "thread_nodes",
           "page_shares", "shared_share", "matrix", "predicted", "predicted_unit", "predicted_rank",
           "time_median_s", "time_min_s", "time_max_s", "measured_rank", "fitted_s", "off_pct",
           "explained", "cause", "case_spearman", "case_spearman_p", "case_verdict"]
NO_MATRICES = ("no node × node matrices: add memlat (latency, for CG) and membw (read bandwidth, for MG) "
               "cells of every reader node × memory node to the study, as config/studies/memory-quick.yaml's "
               "`matrix` experiment does, or give another study's with `numaplace explain --matrices "
               "results/<study>/tables/memory_matrix.csv`")


def matrix_of():
    """{compared kind: (the kind whose matrix its cost is read from, how a cell becomes a
    cost per load)}, from the kinds' own explain models (numaplace.kinds)."""
    roles = matrix_kinds()
    return {name: (m.matrix_kind, roles[m.matrix_kind].cost) for name, m in explained_kinds().items()
            if m.matrix_kind in roles}


def shared_share(bench, cls, threads):
    """The share of a thread's loads that reach data of every thread (see the module)."""
    return explained_kinds()[bench].shared_share(cls, threads)


def matrices(memory_matrix):
    """{bench: {(reader, memory): cost per load}} from memory_matrix.csv at the largest
    size each bench measured (DRAM, where the kernels' working sets live); membind cells
    preferred to first-touch ones (the node is then the kernel's word, not the page
    count's). Costs: ns per load (memlat), s per GB (membw)."""
    out = {}
    if memory_matrix is None or not len(memory_matrix):
        return out
    m = memory_matrix
    roles = matrix_kinds()
    for bench, kind in matrix_of().values():
        d = roles[bench].cells(m, bench)
        if d.empty:
            continue
        d = d[d["size_bytes"] == d["size_bytes"].max()]
        cells = {}
        for via in ("first-touch", "membind"):         # membind last: it wins
            for r in d[d["via"] == via].itertuples():
                v = float(r.median)
                cells[(int(r.reader_node), int(r.memory_node))] = v if kind == "latency" else 1e3 / v
        if cells:
            out[bench] = {"cells": cells, "size_bytes": int(d["size_bytes"].iloc[0]),
                          "unit": "ns per load" if kind == "latency" else "s per GB"}
    return out


def access_shares(thread_nodes, page_shares, owner, shared):
    """{reader node: {memory node: share of its threads' loads}} (see the module)."""
    total_t = sum(thread_nodes.values())
    pages = {m: s for m, s in page_shares.items() if s > 0}
    out = {}
    if owner:
        want = {r: k / total_t for r, k in thread_nodes.items()}
        short = {r: max(0.0, want[r] - pages.get(r, 0.0)) for r in want}
        surplus = {m: max(0.0, s - want.get(m, 0.0)) for m, s in pages.items()}
        spill = sum(surplus.values())
    for r in thread_nodes:
        mix = {m: shared * s for m, s in pages.items()}
        if owner:
            own_local = 1 - short[r] / want[r] if want[r] else 0.0
            mix[r] = mix.get(r, 0.0) + (1 - shared) * own_local
            for m, s in surplus.items():
                mix[m] = mix.get(m, 0.0) + (1 - shared) * (1 - own_local) * (s / spill if spill else 0.0)
        else:
            for m, s in pages.items():
                mix[m] = mix.get(m, 0.0) + (1 - shared) * s
        out[r] = mix
    return out


def predicted_cost(thread_nodes, page_shares, matrix, owner, shared):
    """The slowest thread's mean cost per load, or None where a cell is missing."""
    worst = None
    for r, mix in access_shares(thread_nodes, page_shares, owner, shared).items():
        total = 0.0
        for m, share in mix.items():
            if share <= 0:
                continue
            cell = matrix["cells"].get((r, m))
            if cell is None:
                return None
            total += share * cell
        worst = total if worst is None else max(worst, total)
    return worst


def _counts(text):
    """"2:2,3:2" → {2: 2, 3: 2}."""
    return {int(k): float(v) for k, v in (p.split(":") for p in str(text).split(",") if ":" in p)}


def _words(d):
    return ",".join(f"{k}:{v:g}" for k, v in sorted(d.items()))


def _owner(memory, variant):
    """Does each thread first-touch its own partition? No memory policy (None, or NaN as
    pandas stores a missing string beside others) or local, and NPB's parallel init."""
    return (memory is None or memory != memory or memory == "local") and variant != "serial-init"


def _of(df, key):
    """The rows of df of one placement group."""
    if not len(df):
        return df
    mask = np.ones(len(df), dtype=bool)
    for k, v in key.items():
        mask &= (df[k] == v).to_numpy()
    return df[mask]


def _cause(runs):
    """What the group's ok runs saw that the model leaves out."""
    causes = []
    if (runs["memory_share_on_allowed"].dropna() < 0.99).any() or (runs["fidelity_memory"] == "drift").any():
        causes.append("spill: pages outside the placement's nodes")
    if (runs["fidelity_migration"] == "drift").any():
        causes.append("migration: pages moved during the run")
    if runs["shared_cpus"].fillna(False).astype(bool).any():
        causes.append("foreign load on the placement's CPUs")
    return causes


def explain_table(summary, runs, numa_pages, memory_matrix):
    """explain.csv (see the module); an empty table when there are no NPB groups."""
    mats = matrices(memory_matrix)
    ok_runs = runs[(runs["status"] == "ok") & runs["current"].astype(bool)] if len(runs) else runs
    groups = numa_pages[numa_pages["level"] == "group"] if len(numa_pages) else numa_pages
    rows = []
    explained = matrix_of()
    npb = summary[summary["bench"].isin(list(explained)) & (summary["n"].fillna(0) > 0)]
    for s in npb.to_dict("records"):
        key = {k: s[k] for k in ("bench", "class", "variant", "threads", "placement_id")}
        g_runs = _of(ok_runs, key)
        g_pages = _of(groups, key)
        threads = _counts(g_runs["thread_nodes"].iloc[0]) if len(g_runs) else {}
        pages = {int(r["node"]): float(r["share"]) for r in g_pages.to_dict("records") if not pd.isna(r["share"])}
        bench_m = explained[s["bench"]][0]
        shared = shared_share(s["bench"], s["class"], int(s["threads"]))
        mat = mats.get(bench_m)
        pred = (predicted_cost(threads, pages, mat, _owner(s["memory"], s["variant"]), shared)
                if mat and threads and pages else None)
        pred = None if pred is None else float(f"{pred:.6g}")     # ties stay ties when ranked
        rows.append({**key, "placement": s["placement"], "memory": s["memory"], "thread_nodes": _words(threads),
                     "page_shares": ",".join(f"{k}:{v:.3f}" for k, v in sorted(pages.items())),
                     "shared_share": round(shared, 4),
                     "matrix": f"{bench_m} at {mat['size_bytes']} B" if mat else None,
                     "predicted": pred, "predicted_unit": mat["unit"] if mat else None,
                     "time_median_s": s["time_median_s"], "time_min_s": s["time_min_s"],
                     "time_max_s": s["time_max_s"], "_cause": _cause(g_runs) if len(g_runs) else [],
                     "_moved": bool(len(g_runs)) and (g_runs["fidelity_migration"] == "drift").any(),
                     "_per_node": max(threads.values()) if threads else 0})
    df = pd.DataFrame(rows)
    if df.empty:
        return pd.DataFrame(columns=COLUMNS)
    out = []
    for _, case in df.groupby(["bench", "class", "variant", "threads"], sort=True):
        out.append(_judge_case(case.copy(), mats))
    df = pd.concat(out)
    for c in ("threads", "predicted_rank", "measured_rank"):
        df[c] = df[c].astype("Int64")
    return df[COLUMNS].reset_index(drop=True)


def _judge_case(case, mats):
    """Ranks, Spearman, the fitted line and the unexplained placements of one case."""
    case["measured_rank"] = case["time_median_s"].rank(method="min")
    have = case["predicted"].notna()
    case["predicted_rank"] = case["predicted"].rank(method="min")
    case["fitted_s"] = np.nan
    case["off_pct"] = np.nan
    case["explained"] = None
    case["cause"] = ""
    case["case_spearman"] = np.nan
    case["case_spearman_p"] = np.nan
    bench = case["bench"].iloc[0]
    if not mats.get(matrix_of()[bench][0]):
        case["case_verdict"] = NO_MATRICES
        return case
    verdict = _line(case, have, bench)
    # pages that moved during a run: one footprint cannot stand for the run, whatever the line
    moved = case.index[have & case["_moved"]]
    for i in moved:
        case.at[i, "explained"] = "no"
        case.at[i, "cause"] = "; ".join(case.at[i, "_cause"])
    missed = case.loc[case["explained"] == "no", "placement"]
    if len(missed):
        verdict += "; not explained: " + ", ".join(str(x) for x in missed)
    elif case["case_spearman"].notna().any():
        verdict += "; every placement on the line"
    case["case_verdict"] = verdict
    return case


def _line(case, have, bench):
    """The case's verdict; fills the ranks' line, off_pct and explained (see the module)."""
    from scipy.stats import spearmanr
    pred, meas = case.loc[have, "predicted"].astype(float), case.loc[have, "time_median_s"].astype(float)
    spread = meas.max() / meas.min() - 1 if len(meas) else math.nan
    if len(pred) < 2:
        return "one placement with a prediction: nothing to rank"
    if pred.max() <= pred.min() * (1 + FLAT):
        case.loc[have, "explained"] = "flat"
        return (f"no difference expected: the matrices give these placements costs within {FLAT:.0%} "
                f"of each other; measured spread {spread:.1%}")
    if meas.max() == meas.min():
        return "every placement measured the same median: nothing to rank"
    rho, p = spearmanr(pred, meas)
    case["case_spearman"], case["case_spearman_p"] = rho, p
    slope, icpt = np.polyfit(pred, meas, 1)
    fitted = icpt + slope * case.loc[have, "predicted"].astype(float)
    case.loc[have, "fitted_s"] = fitted
    case.loc[have, "off_pct"] = 100 * (case.loc[have, "time_median_s"] - fitted) / fitted
    for i in case.index[have]:
        r = case.loc[i]
        # the least-squares line is exact only to the last bits of the platform's BLAS: a
        # boundary (exactly 10 % off, a line through a run's min) holds to a relative 1e-9
        slack = FIT_SLACK * abs(r["fitted_s"])
        outside = not (r["time_min_s"] - slack <= r["fitted_s"] <= r["time_max_s"] + slack)
        if abs(r["off_pct"]) > 100 * MISS * (1 + FIT_SLACK) and outside:
            causes = list(r["_cause"])
            if r["off_pct"] > 0 and r["_per_node"] > 1 and explained_kinds()[bench].contends:
                causes.append(f"contention: {r['_per_node']:g} threads share a node's bandwidth")
            case.at[i, "explained"] = "no"
            case.at[i, "cause"] = "; ".join(causes) or "not seen in the records (not memory placement alone)"
        else:
            case.at[i, "explained"] = "yes"
    return f"Spearman {rho:+.2f} over {len(pred)} placements (p {p:.2g})"
