"""One report over several studies: one machine over time (settings, kernels) or several
machines side by side, as the reference thesis set its three platforms side by side.

    numaplace compare results/a results/b ... [--out report/compare]

Every study is read from its records (tables built afresh, as the report stage does), so
studies of older numaplace versions compare too. Written to --out:
- fingerprints.csv: per study, the machine as measured: nodes, the SLIT's remote/local
  classes beside the measured latency and bandwidth ratios, local read bandwidth per node,
  the latency curve's knees beside the sysfs cache sizes, and the kernel settings its runs
  saw (numa_balancing, THP, ...); where the records have them, HMAT's ratios, the memory
  tiers and the cells where the firmware and the measurement disagree (machine.firmware).
- compare.csv: every NPB placement measured in more than one study (matched by kernel,
  class, variant, threads and placement words), its median per study, and against the
  first study: the change and whether it is beyond noise (the min-max ranges do not
  overlap; with 3 or more runs a side, Mann-Whitney's p as well).
- compare.md and compare.html (figures embedded): the fingerprints, what changed beyond
  noise, each case's best placement per study, and every shared placement side by side.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from numaplace.core.stats import mann_whitney_p
from numaplace.core.text import byte_size_text, counted, percent_text, seconds_text
from numaplace.kinds import matrix_kinds
from numaplace.machine.system import REPORTED

CASE = ["bench", "class", "variant", "threads"]
KNEE = 1.3              # a latency curve's knee: a size whose latency is 1.3x the size before's
SETTINGS = ("numa_balancing", "thp_enabled", "thp_defrag", "zone_reclaim_mode", "cpufreq_governor", "smt_active")


class Compared:
    """One study as the comparison reads it: its name, tables and one record's machine."""

    def __init__(self, results_dir):
        from numaplace.record.store import iter_records
        from numaplace.tables.aggregate import build_tables
        self.dir = Path(results_dir)
        records = list(iter_records(self.dir))
        if not records:
            raise ValueError(f"{self.dir}: no run records (is it results/<study>?)")
        self.tables = build_tables(self.dir)
        first = records[0]
        self.name = first.get("study") or self.dir.name
        self.host, self.kernel = first.get("host"), first.get("kernel")
        self.topology = first.topology
        self.firmware = next((r["system"]["firmware"] for r in records
                              if (r.get("system") or {}).get("firmware")), None)


def _mean(xs):
    return float(np.mean(xs)) if len(xs) else float("nan")


def _setting(v):
    """A setting as its runs wrote it: 0, not 0.0 (a column with empty cells, of records
    that never ran, is read back as floats)."""
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def knees(memory):
    """Sizes (bytes) where memlat's local latency curve jumps by KNEE or more."""
    latency = [b for b, role in matrix_kinds().items() if role.cost == "latency"]
    d = memory[memory["bench"].isin(latency) & (memory["status"] == "ok")
               & (memory["reader_node"] == memory["memory_node"])] if len(memory) else memory
    if not len(d):
        return []
    curve = d.groupby("size_bytes")["value"].median().sort_index()
    return [int(s) for s, prev, now in zip(curve.index[1:], curve.values[:-1], curve.values[1:]) if now >= KNEE * prev]


def fingerprint(s):
    """The machine of one study as measured (fingerprints.csv's row)."""
    t = s.tables
    matrix, memory, runs = t.get("memory_matrix"), t.get("memory"), t["runs"]
    nodes = s.topology.get("nodes") or {}
    dist = s.topology.get("distances")
    row = {"study": s.name, "host": s.host, "kernel": s.kernel, "nodes": len(nodes)}
    if dist and len(dist) > 1:
        row["slit_remote_local"] = " ".join(f"{c:.2g}x" for c in sorted(
            {dist[i][j] / dist[i][i] for i in range(len(dist)) for j in range(len(dist)) if i != j}))
    if matrix is not None and len(matrix):
        top = matrix[matrix["size_bytes"] == matrix.groupby(["bench", "mode", "via"])["size_bytes"].transform("max")]
        # each matrix kind's cells (numaplace.kinds: MatrixRole), columns named by what they are
        for bench, role in sorted(matrix_kinds().items(), key=lambda kv: kv[1].higher_is_better):
            what = "latency_ns" if role.cost == "latency" else "bandwidth_gbs"
            m = role.cells(top, bench)
            if not len(m):
                continue
            local = m[m["reader_node"] == m["memory_node"]]
            remote = m[m["reader_node"] != m["memory_node"]]["median"]
            row[f"{what}_local"] = round(_mean(local["median"]) * role.scale, 3)
            if len(remote):
                row[f"{what}_remote"] = round(_mean(remote) * role.scale, 3)
                ratio = _mean(remote) / _mean(local["median"])
                # how many times worse remote is: latency over local, local bandwidth over remote
                row[f"{what.split('_')[0]}_remote_local"] = round(1 / ratio if role.higher_is_better else ratio, 3)
            if role.higher_is_better:
                row[f"{what}_per_node"] = " ".join(
                    f"n{int(n)}:{v * role.scale:.1f}" for n, v in local.groupby("memory_node")["median"].median().items())
    if memory is not None and len(memory):
        caches = memory[["cache_l1d", "cache_l2", "cache_l3"]].dropna(how="all")
        if len(caches):
            c = caches.iloc[0]
            row["caches_sysfs"] = " ".join(f"{k[6:]}:{byte_size_text(v)}" for k, v in c.items() if pd.notna(v) and v)
        row["latency_knees"] = " ".join(byte_size_text(k) for k in knees(memory))
    row.update(firmware_columns(getattr(s, "firmware", None), matrix))
    current = runs[runs["current"].astype(bool)] if len(runs) else runs
    for k in SETTINGS:
        col = f"sys_{k}"
        if col in current and current[col].notna().any():
            row[k] = " / ".join(sorted({_setting(v) for v in current[col].dropna()}))
    return row


def firmware_columns(fw, matrix):
    """The firmware beside the measured ratios: HMAT's remote/local read latency and
    local/remote read bandwidth per initiator -> memory node (the conventions of the
    measured columns), the memory tiers, and the cells where SLIT or HMAT and the matrices
    disagree (machine.firmware.disagreements)."""
    from numaplace.machine.firmware import disagreements, firmware_ratios
    from numaplace.report.answer import measured_ratios
    from numaplace.report.machine import node_matrices
    if not fw:
        return {}
    row = {}
    ratios = firmware_ratios(fw)
    for what, key, inv in (("latency", "latency_ratio", False), ("bandwidth", "bandwidth_ratio", True)):
        cells = [f"{i}->{t}:{(1 / r[key] if inv else r[key]):.2g}x" for (i, t), r in ratios.items() if r.get(key)]
        if cells:
            row[f"hmat_{what}_remote_local"] = " ".join(cells)
    if fw.get("tiers"):
        from numaplace.core.cpulist import format_cpulist
        row["memory_tiers"] = " ".join(f"{t['tier']}:{format_cpulist(t.get('nodes', [])) or '-'}" for t in fw["tiers"])
    if matrix is not None and len(matrix):
        row["firmware_disagrees"] = "; ".join(disagreements(fw, measured_ratios(node_matrices(matrix))))
    return row


def _times(runs, key):
    ok = runs[(runs["status"] == "ok") & runs["current"].astype(bool)]
    mask = np.ones(len(ok), dtype=bool)
    for k, v in key.items():
        mask &= (ok[k] == v).to_numpy()
    return ok[mask]["npb_time_s"].dropna().astype(float).tolist()


def side_by_side(studies):
    """compare.csv: placements measured (ok) in two or more studies, against the first,
    matched by placement id: two placements may share their words (taskset's and
    numactl's compact 2), never their id; such a label is told apart by its id."""
    keys = CASE + ["placement_id"]
    frames = []
    for s in studies:
        d = s.tables["summary"]
        d = d[d["n"].fillna(0) > 0][keys + ["placement", "n", "time_median_s", "time_min_s", "time_max_s"]]
        frames.append(d.assign(study=s.name))
    if not frames:
        return pd.DataFrame()
    allrows = pd.concat(frames)
    # a label two ids of one case share: "<label> (<id>)" (the figure's rows are its labels)
    ids_of = allrows.groupby(CASE + ["placement"], sort=False)["placement_id"].nunique()
    shared = {k for k, n in ids_of.items() if n > 1}
    base = studies[0]
    out = []
    for key, rows in allrows.groupby(keys, sort=True):
        if rows["study"].nunique() < 2:
            continue
        k = dict(zip(keys, key))
        ref_rows = rows[rows["study"] == base.name]
        label = str((ref_rows if len(ref_rows) else rows)["placement"].iloc[0])
        if (*key[:len(CASE)], label) in shared:
            label = f"{label} ({k['placement_id']})"
        k["placement"] = label
        ref = ref_rows
        ref_times = _times(base.tables["runs"], {**{c: k[c] for c in CASE}, "placement_id": k["placement_id"]}) \
            if len(ref) else []
        for r in rows.to_dict("records"):
            s = next(x for x in studies if x.name == r["study"])
            row = {**k, "study": r["study"], "n": int(r["n"]), "time_median_s": r["time_median_s"],
                   "time_min_s": r["time_min_s"], "time_max_s": r["time_max_s"], "change_pct": np.nan,
                   "beyond_noise": "", "mwu_p": np.nan}
            if len(ref) and r["study"] != base.name:
                b = ref.iloc[0]
                row["change_pct"] = 100 * (r["time_median_s"] - b["time_median_s"]) / b["time_median_s"]
                if r["n"] >= 2 and b["n"] >= 2:
                    apart = r["time_min_s"] > b["time_max_s"] or r["time_max_s"] < b["time_min_s"]
                    row["beyond_noise"] = "yes" if apart else "no"
                else:
                    row["beyond_noise"] = "unknown"
                times = _times(s.tables["runs"], {**{c: k[c] for c in CASE}, "placement_id": r["placement_id"]})
                if len(times) >= 3 and len(ref_times) >= 3:
                    row["mwu_p"] = mann_whitney_p(times, ref_times)
            out.append(row)
    cols = CASE + ["placement", "placement_id", "study", "n", "time_median_s", "time_min_s", "time_max_s", "change_pct", "beyond_noise", "mwu_p"]
    return pd.DataFrame(out, columns=cols)


def best_per_study(studies):
    rows = []
    for s in studies:
        for r in s.tables["best_worst"].to_dict("records"):
            if r["best_placement_id"] == r["worst_placement_id"]:
                continue                                   # one placement: no best to name
            rows.append({**{c: r[c] for c in CASE}, "study": s.name, "best": r["best_placement"],
                         "best_median_s": r["best_median_s"], "worst": r["worst_placement"],
                         "worst_median_s": r["worst_median_s"], "improvement_pct": r["improvement_pct"],
                         "differs": r["differs"]})
    return pd.DataFrame(rows)


def _figure(side, out_dir):
    """compare_<case>.svg: per shared placement, each study's median and min-max."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    files = []
    for case, g in side.groupby(CASE, sort=True):
        ids = list(dict.fromkeys(g["placement_id"]))          # rows by id: labels may repeat
        labels = [g[g["placement_id"] == i]["placement"].iloc[0] for i in ids]
        studies = list(dict.fromkeys(g["study"]))
        fig, ax = plt.subplots(figsize=(8, 1.2 + 0.45 * len(labels) * max(1, len(studies)) ** 0.5))
        for i, st in enumerate(studies):
            d = g[g["study"] == st].set_index("placement_id").reindex(ids)
            y = np.arange(len(labels)) + (i - (len(studies) - 1) / 2) * 0.8 / max(1, len(studies))
            med = d["time_median_s"].astype(float)
            ax.errorbar(med, y, xerr=[med - d["time_min_s"].astype(float), d["time_max_s"].astype(float) - med],
                        fmt="o", capsize=2, label=st)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("NPB time (s): median, whiskers min–max")
        bench, cls, variant, threads = case
        ax.set_title(f"{str(bench).upper()} class {cls} ({variant}), {counted(int(threads), 'thread')}: the same placements",
                     loc="left", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=8)
        name = f"compare.{bench}.{cls}.{variant}.t{int(threads)}.svg"
        fig.savefig(out_dir / name, bbox_inches="tight", metadata={"Date": None})
        plt.close(fig)
        files.append((case, name))
    return files


def _md(df, cols):
    from numaplace.report.summary import md_table
    return md_table(df, cols)


def compare(results_dirs, out_dir):
    """Write the comparison (see the module) into out_dir; return the lines for the terminal."""
    studies = [Compared(d) for d in results_dirs]
    names = [s.name for s in studies]
    if len(set(names)) < len(names):                 # two checkouts' studies of one name
        for s in studies:
            s.name = f"{s.name} ({s.dir})"
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fp = pd.DataFrame([fingerprint(s) for s in studies])
    side = side_by_side(studies)
    best = best_per_study(studies)
    fp.to_csv(out_dir / "fingerprints.csv", index=False)
    side.to_csv(out_dir / "compare.csv", index=False)
    figures = _figure(side, out_dir) if len(side) else []

    changed = side[side["beyond_noise"] == "yes"] if len(side) else side
    lines = [f"compared {len(studies)} studies: {', '.join(s.name for s in studies)} (against {studies[0].name})"]
    for r in changed.to_dict("records"):
        lines.append(f"{str(r['bench']).upper()}.{r['class']} {r['variant']} {int(r['threads'])} threads, "
                     f"{r['placement']}: {r['study']} {percent_text(r['change_pct'])} ({seconds_text(r['time_median_s'])} s), "
                     f"beyond noise" + (f", p {r['mwu_p']:.3g}" if pd.notna(r["mwu_p"]) else ""))
    if len(side) and not len(changed):
        lines.append(f"no shared placement changed beyond noise ({side['placement_id'].nunique()} placements "
                     f"measured in more than one study)")
    elif not len(side):
        lines.append("no NPB placement was measured in more than one of these studies")
    if "firmware_disagrees" in fp:
        lines += [f"{r['study']}: firmware vs measured: {d}" for r in fp.to_dict("records")
                  if isinstance(r["firmware_disagrees"], str) and r["firmware_disagrees"]
                  for d in r["firmware_disagrees"].split("; ")]
    differ = [k for k in SETTINGS if k in fp and fp[k].nunique(dropna=False) > 1]
    if differ:
        lines.append("settings that differ: " + "; ".join(
            f"{k}: " + ", ".join(f"{r['study']} {r[k] if pd.notna(r[k]) else 'not recorded'}"
                                 for r in fp.to_dict("records")) for k in differ))

    md = ["# numaplace comparison", "", *[f"- {x}" for x in lines], "",
          "## The machines as measured", "",
          "Measured latency and read-bandwidth ratios (remote over local, local over remote) beside the "
          "SLIT's distance classes and, where recorded, HMAT's and the memory tiers; local bandwidth per node; knees of the local latency curve (a size "
          f"whose latency is {KNEE}x the size before's) beside the sysfs cache sizes; the kernel settings "
          "the runs saw.", ""]
    fp_cols = [(c, c) for c in fp.columns]
    md += [_md(fp, fp_cols), ""]
    md += ["## What changed beyond noise", "",
           f"Against {studies[0].name}: the min–max ranges do not overlap (p: Mann-Whitney, 3 or more runs a side).", ""]
    md += [_md(changed, [("bench", "bench"), ("class", "class"), ("variant", "variant"), ("threads", "threads"),
                         ("placement", "placement"), ("study", "study"), ("median (s)", lambda r: seconds_text(r["time_median_s"])),
                         ("change", lambda r: percent_text(r["change_pct"])),
                         ("p", lambda r: "" if pd.isna(r["mwu_p"]) else f"{r['mwu_p']:.3g}")])
           if len(changed) else "Nothing.", ""]
    md += ["## Best placement per study", ""]
    md += [_md(best, [("bench", "bench"), ("class", "class"), ("variant", "variant"), ("threads", "threads"),
                      ("study", "study"), ("best", "best"), ("median (s)", lambda r: seconds_text(r["best_median_s"])),
                      ("worst", "worst"), ("median (s)", lambda r: seconds_text(r["worst_median_s"])),
                      ("improvement", lambda r: percent_text(r["improvement_pct"])), ("beyond noise", "differs")])
           if len(best) else "No case of any study has two placements with an ok run.", ""]
    md += ["## The same placements side by side", ""]
    for case, name in figures:
        md += [f"![{name}]({name})", ""]
    if len(side):
        md += [_md(side, [("bench", "bench"), ("class", "class"), ("threads", "threads"), ("placement", "placement"),
                          ("study", "study"), ("n", "n"), ("median (s)", lambda r: seconds_text(r["time_median_s"])),
                          ("min", lambda r: seconds_text(r["time_min_s"])), ("max", lambda r: seconds_text(r["time_max_s"])),
                          ("change", lambda r: percent_text(r["change_pct"])), ("beyond noise", "beyond_noise")]), ""]
    text = "\n".join(md)
    (out_dir / "compare.md").write_text(text)
    _html(text, out_dir)
    return lines


def _html(text, out_dir):
    import markdown
    from numaplace.report.html import embed_images
    body = embed_images(markdown.markdown(text, extensions=["tables"]), out_dir)
    style = ("body{font-family:sans-serif;max-width:78rem;margin:2rem auto;padding:0 1rem}"
             "table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #ccc;padding:.2rem .4rem}"
             "img{max-width:100%}")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>numaplace comparison</title>"
            f"<style>{style}</style></head><body>{body}</body></html>")
    tmp = out_dir / "compare.html.part"
    tmp.write_text(page)
    tmp.replace(out_dir / "compare.html")
