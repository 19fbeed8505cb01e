"""The explain model against the reference thesis's X4600 (issue 31's proof): the thesis's
own memory numbers as a node x node latency matrix, its CG.B placements planned by
config/studies/thesis-x4600.yaml, the model's ranking printed beside the thesis's measured
ranking, with Spearman's rank correlation.

    .venv/bin/python tests/benchmarks/explain_x4600.py [--write-matrix]

How the thesis's numbers become a study's memory results: a memory_matrix.csv
(tests/fixtures/thesis/x4600_memory_matrix.csv, written by --write-matrix) in the columns
numaplace's tables stage writes, which `numaplace explain --tables results/<study>/tables
--matrices <that file>` reads in place of a study's own. The cells, DRAM latency in ns
(MEMORY-BENCHMARKS.md section 3, the thesis's lmbench3 and B3 numbers):
- local: inner nodes 2-5 93 ns, outer nodes 0, 1, 6, 7 122 ns;
- remote: the memory node's local latency plus 20 ns for one HyperTransport hop, +16 ns
  more for the second and +30 ns more for the third ("the second hop adds ~16 ns and the
  third ~30 ns more"); the 20 ns of the first hop puts node 0's memory read from 1, 2
  and 3 hops away at 142, 158 and 188 ns, inside the thesis's remote range of 100-160
  ns (CPU15, 3 hops: 135-190 ns).
Pages: the thesis ran these placements under first touch (taskset, NPB's parallel
initialisation): each node holds its threads' share of the pages.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from numaplace.plan.study import load_study_file
from numaplace.tables.aggregate import thread_nodes
from numaplace.tables.explain import explain_table

REPO = Path(__file__).resolve().parents[2]

MATRIX = REPO / "tests" / "fixtures" / "thesis" / "x4600_memory_matrix.csv"
INNER = {2, 3, 4, 5}
LOCAL_NS = {n: 93.0 if n in INNER else 122.0 for n in range(8)}
HOP_NS = {0: 0.0, 1: 20.0, 2: 36.0, 3: 66.0}
HOPS = ["01122223", "10212212", "12021122", "21201122", "22110212", "22112021", "21221201", "32222110"]
DRAM = 64 << 20            # the thesis's DRAM-sized point (lmbench3's 64M)

# What the thesis measured, CG.B (REFERENCE-STUDY.md): nodes → seconds, or a class of
# placements → (rank class, what it said)
MEASURED_4 = [((2, 3), 75.97, "best: inner nodes 2,3 (numactl local 75.97 s; taskset 75 s)"),
              ((0, 1), 93.0, "nodes 0,1 local (numactl)"),
              ("inner+outer with CPU 0", 119.0, "worst: mixing inner and outer nodes, CPU 0 in every slow run")]


def matrix():
    rows = []
    for r in range(8):
        for m in range(8):
            ns = LOCAL_NS[m] + HOP_NS[int(HOPS[r][m])]
            rows.append({"bench": "memlat", "mode": "serial", "size_bytes": DRAM, "via": "first-touch",
                         "reader_node": r, "memory_node": m, "median": ns, "min": ns, "max": ns, "n": 1,
                         "unit": "ns"})
    return pd.DataFrame(rows)


def placements(study, experiment):
    """{placement id: (placement dict, {node: threads})} of one experiment's CG.B runs."""
    out = {}
    for r in study.runs:
        if experiment in r.experiments and r.bench == "cg" and r.cls == "B" and r.rep == 1:
            p = study.run_params(r.run_id)["placement"]
            counts = {int(k): float(v) for k, v in (x.split(":") for x in
                                                     thread_nodes(p, study.topology.node_of).split(","))}
            out[p["id"]] = (p, counts)
    return out


def frames(chosen, times):
    """summary, runs and numa_pages frames of a study whose placements ran once, with these
    times (s) per placement id, pages on the threads' nodes (first touch)."""
    summary, runs, pages = [], [], []
    for pid, (p, counts) in chosen.items():
        key = {"bench": "cg", "class": "B", "variant": "default", "threads": int(p["threads"]), "placement_id": pid}
        t = times.get(pid)
        summary.append({**key, "placement": p["shape"], "memory": "local", "n": 1 if t else 0,
                        "time_median_s": t, "time_min_s": t, "time_max_s": t})
        runs.append({**key, "status": "ok", "current": True,
                     "thread_nodes": ",".join(f"{n}:{k:g}" for n, k in sorted(counts.items())),
                     "memory_share_on_allowed": 1.0, "fidelity_memory": "ok", "fidelity_migration": "ok",
                     "shared_cpus": False})
        total = sum(counts.values())
        pages += [{**key, "level": "group", "node": n, "share": k / total} for n, k in counts.items()]
    return pd.DataFrame(summary), pd.DataFrame(runs), pd.DataFrame(pages)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-matrix", action="store_true", help=f"write {MATRIX.relative_to(REPO)}")
    a = ap.parse_args()
    m = matrix()
    if a.write_matrix:
        MATRIX.parent.mkdir(parents=True, exist_ok=True)
        m.to_csv(MATRIX, index=False)
    study = load_study_file(REPO / "config" / "studies" / "thesis-x4600.yaml", REPO / "config")

    # every 2/2 pair: the model's ranking, all 28 pairs (times unknown: predicted only)
    pairs = placements(study, "cg-b-4-threads-two-nodes")
    s, r, p = frames(pairs, {pid: 1.0 for pid in pairs})
    ex = explain_table(s, r, p, m).sort_values("predicted")
    print("CG.B, 4 threads, 2/2 on two nodes: the model's ranking of all pairs (ns per load, slowest thread)")
    for row in ex.itertuples():
        nodes = sorted(int(k.split(":")[0]) for k in row.thread_nodes.split(","))
        kind = "+".join("inner" if n in INNER else "outer" for n in nodes)
        print(f"  {int(row.predicted_rank):2d}. nodes {nodes[0]},{nodes[1]} ({kind}, "
              f"{HOPS[nodes[0]][nodes[1]]} hop): {row.predicted:.1f}")

    # the thesis's measured points beside the model's
    by_nodes = {tuple(sorted(int(k.split(":")[0]) for k in row.thread_nodes.split(","))): row
                for row in ex.itertuples()}
    mixes = [v for k, v in by_nodes.items() if 0 in k and len(set(k) & INNER) == 1]
    mix = max(mixes, key=lambda v: v.predicted)          # the slow mix the model likes least
    known = {by_nodes[(2, 3)].placement_id: 75.97, by_nodes[(0, 1)].placement_id: 93.0, mix.placement_id: 119.0}
    s, r, p = frames({pid: pairs[pid] for pid in known}, known)
    ex3 = explain_table(s, r, p, m)
    print("\nbeside the thesis (CG.B, 4 threads; the inner+outer mix with CPU 0 the model ranks worst stands "
          "for the thesis's unnamed 119 s mix):")
    print(f"  {'placement':24s} {'model (ns)':>10s} {'rank':>4s}   {'thesis (s)':>10s} {'rank':>4s}")
    for row in ex3.sort_values("measured_rank").itertuples():
        print(f"  {row.thread_nodes:24s} {row.predicted:10.1f} {int(row.predicted_rank):4d}   "
              f"{row.time_median_s:10.2f} {int(row.measured_rank):4d}   {row.cause}")
    print(f"  verdict: {ex3['case_verdict'].iloc[0]}")

    # 2 threads on one node, every node: inner ~30 % faster than outer
    per_node = placements(study, "cg-b-2-threads-per-node")
    s, r, p = frames(per_node, {pid: 1.0 for pid in per_node})
    ex2 = explain_table(s, r, p, m).sort_values("predicted")
    inner = ex2[ex2["thread_nodes"].str.split(":").str[0].astype(int).isin(INNER)]["predicted"]
    outer = ex2[~ex2["thread_nodes"].str.split(":").str[0].astype(int).isin(INNER)]["predicted"]
    print(f"\nCG.B, 2 threads on one node: model inner {inner.mean():.1f} ns, outer {outer.mean():.1f} ns: "
          f"outer {100 * (outer.mean() / inner.mean() - 1):.0f} % costlier; the thesis: inner nodes ~30 % faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
