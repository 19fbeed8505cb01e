"""Figures from the aggregated tables (matplotlib, Agg; SVG + PNG), in the style of the
reference study: horizontal bars so that long placement labels stay readable.

Kinds (one sub-directory each under report/<study>/figures/):
  duration     NPB time per placement (median, min–max whiskers) per (bench, class,
               variant, threads)
  best_worst   best vs worst placement per thread count, per (bench, class, variant)
  pages        data pages per NUMA node per placement at the steady footprint (stacked),
               per (bench, class, variant, threads)
  serial_init  serial-initialisation vs default variant for the same placements,
               per (bench, class)
  variability  CV of NPB time per placement, per (bench, class, variant)
then every kind's own figures (Kind.figures, drawn by Kind.draw: the memory
micro-benchmarks' memory_* in numaplace.kinds.memory).
figures.csv in the figures directory lists every figure written (kind, case, title,
files), for the summary and the tests.

A group with more placements than `max_rows` (the thesis's X4600 studies have 70 choices
of four nodes, generated studies hundreds) draws the best and the worst max_rows/2 and
one row summarising those between, so that the best and the worst stay findable on one
screen; the tables keep every placement.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from numaplace.core.schema import Section  # noqa: E402
from numaplace.kinds import figure_titles, groups  # noqa: E402
from numaplace.core.text import counted  # noqa: E402

FIGURES = figure_titles()
KINDS = tuple(FIGURES)
COLORS = {"bar": "#4c72b0", "best": "#2ca02c", "worst": "#d62728", "default": "#4c72b0",
          "serial-init": "#dd8452", "drift": "#7f7f7f", "one": "#9e9e9e"}
MANIFEST = "figures.csv"


def _rc():
    plt.rcParams.update({"svg.hashsalt": "numaplace", "svg.fonttype": "path",
                         "font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
                         "axes.spines.right": False})


def _wrap(label, width):
    return "\n".join(textwrap.wrap(str(label), width)) or str(label)


def display_labels(df):
    """Placement labels of df's rows, unique within one figure: two placements with the
    same label (e.g. the same CPUs under taskset and numactl) get their launcher, then
    their id, appended."""
    labels = df["placement"].astype(str).tolist()
    for extra, form in (("launcher", "{} ({})"), ("placement_id", "{} [{}]")):
        dup = pd.Series(labels).duplicated(keep=False).tolist()
        if any(dup) and extra in df:
            labels = [form.format(lab, x) if d else lab for lab, x, d in zip(labels, df[extra], dup)]
    return labels


def _case_title(bench, cls, variant=None, threads=None):
    parts = [f"{str(bench).upper()} class {cls}"]
    if variant is not None:
        parts.append(str(variant))
    if threads is not None:
        parts.append(counted(threads, 'thread'))
    return " · ".join(parts)


def _stem(*parts):
    return ".".join(str(p) for p in parts if p is not None)


def _height(labels, cfg, extra=1.3):
    lines = sum(str(lab).count("\n") + 1 for lab in labels)
    return max(2.0, extra + cfg["bar_height"] * max(lines, len(labels)))


class _Writer:
    """Saves the figures and lists them (rows). With several drawers (make_figures) each
    process runs every kind's code over the same tables, so every one meets the figures
    in the same order: figure i is drawn by drawer i % parts alone, and the others skip
    it, before making it where the kind asks first (mine) and at least before saving."""

    def __init__(self, out_dir, cfg, part=0, parts=1):
        self.out_dir, self.cfg, self.rows = Path(out_dir), cfg, []
        self.part, self.parts = part, parts
        self.met, self.claimed, self.order = 0, None, []    # figures met; the one mine() let through

    def mine(self):
        """Called before a figure is made, when it will be saved: is it this drawer's? The
        kinds' own draw functions need not call it (their figures are then skipped at save)."""
        i, self.met = self.met, self.met + 1
        ours = i % self.parts == self.part
        self.claimed = i if ours else None
        return ours

    def save(self, fig, kind, stem, title, case):
        if self.claimed is None:
            i, self.met = self.met, self.met + 1
        else:
            i, self.claimed = self.claimed, None
        if i % self.parts != self.part:         # another drawer's
            plt.close(fig)
            return
        self.order.append(i)
        d = self.out_dir / kind
        d.mkdir(parents=True, exist_ok=True)
        files = {}
        for fmt in self.cfg["formats"]:
            path = d / f"{stem}.{fmt}"
            meta = {"Date": None} if fmt == "svg" else ({"Software": None} if fmt == "png" else None)
            fig.savefig(path, format=fmt, dpi=self.cfg["dpi"], bbox_inches="tight", metadata=meta)
            files[fmt] = f"{kind}/{stem}.{fmt}"
        plt.close(fig)
        self.rows.append({"kind": kind, **case, "title": title, **files})


def _whisker_bars(ax, y, med, lo, hi, color, height):
    """Horizontal bars at the medians with min–max whiskers (NaN: no bar)."""
    med, lo, hi = (np.asarray(v, dtype=float) for v in (med, lo, hi))
    ok = ~np.isnan(med)
    ax.barh(np.asarray(y)[ok], med[ok], height=height, color=np.asarray(color, dtype=object)[ok]
            if not isinstance(color, str) else color, zorder=2)
    err = np.vstack([med - lo, hi - med])[:, ok]
    ax.errorbar(med[ok], np.asarray(y)[ok], xerr=np.clip(err, 0, None), fmt="none", ecolor="black",
                elinewidth=1, capsize=3, zorder=3)


def _rows(ax, n):
    """y limits with half a bar of room around n rows (labels never touch the title)."""
    ax.set_ylim(-0.7, n - 0.3)


def _legend(ax, items):
    ax.legend(handles=[Patch(color=c, label=lab) for lab, c in items], loc="lower right",
              fontsize=8, frameon=False)


def elide(g, max_rows):
    """(rows to draw, the rows left out or None) of g, ordered best first: the first and
    last max_rows // 2 rows of g (the gap row goes between them, see _gap_rows). Rows
    with no ok run are kept in the shown tail: they are what went wrong, never
    summarised away."""
    if len(g) <= max_rows:
        return g, None
    k = max_rows // 2
    measured = g[g["n"] > 0] if "n" in g else g
    unmeasured = g.drop(measured.index)
    tail_k = max(k - len(unmeasured), 1)
    head, tail = measured.iloc[:k], measured.iloc[len(measured) - tail_k:] if len(measured) > k else measured.iloc[:0]
    hidden = measured.drop(head.index).drop(tail.index)
    if hidden.empty:
        return g, None
    return pd.concat([head, tail, unmeasured]), hidden


def _gap_text(hidden, vals, what, table="summary.csv"):
    """What the summary row says about the placements left out (vals: their values of
    what the figure shows, `what` naming them with their unit, e.g. "medians {} s")."""
    bits = [f"{len(hidden)} more placements"]
    vals = np.asarray(vals, dtype=float)
    if np.isfinite(vals).any():
        bits.append(what.format(f"{np.nanmin(vals):.3g}–{np.nanmax(vals):.3g}"))
    for col, what in (("n_failed", "with failed runs"), ("n_drift", "with drift")):
        if col in hidden and hidden[col].fillna(0).astype(bool).any():
            bits.append(f"{int(hidden[col].fillna(0).astype(bool).sum())} {what}")
    return "; ".join(bits) + f": every one is in tables/{table}"


def _cut_middle(df, k, limit):
    """(the first and the last k rows of df, the rows between them), or (df, None) when
    df has no more than limit rows."""
    if len(df) <= limit:
        return df, None
    return pd.concat([df.iloc[:k], df.iloc[len(df) - k:]]), df.iloc[k:len(df) - k]


def _gap_rows(labels, k, hidden):
    """(tick labels, y of the drawn rows from the top, y of the gap row or None): with
    rows left out, a gap row "⋮ N more" follows the first k."""
    if hidden is None:
        return labels, np.arange(len(labels))[::-1], None
    ys = np.arange(len(labels) + 1)[::-1]
    return labels[:k] + [f"⋮ {len(hidden)} more"] + labels[k:], np.delete(ys, k), ys[k]


def _draw_gap(ax, y_gap, text):
    ax.text(0, y_gap, text, va="center", fontsize=8, style="italic")


# -- duration per placement ----------------------------------------------------------

def duration_figures(summary, w):
    cfg = w.cfg
    for (bench, cls, variant, threads), g in summary.groupby(["bench", "class", "variant", "threads"], sort=True):
        if not w.mine():
            continue
        g = g.sort_values(["time_median_s", "placement"], na_position="last")
        measured = g[g["n"] > 0]
        best = measured["time_median_s"].idxmin() if len(measured) > 1 else None
        worst = measured["time_median_s"].idxmax() if len(measured) > 1 else None
        names = dict(zip(g.index, display_labels(g)))
        g, hidden = elide(g, cfg["max_rows"])
        labels, y, y_gap = _gap_rows([_wrap(names[i], cfg["label_width"]) for i in g.index],
                                     cfg["max_rows"] // 2, hidden)
        fig, ax = plt.subplots(figsize=(cfg["width"], _height(labels, cfg)))
        colors = [COLORS["best"] if i == best else COLORS["worst"] if i == worst else COLORS["bar"]
                  for i in g.index]
        _whisker_bars(ax, y, g["time_median_s"], g["time_min_s"], g["time_max_s"], colors, 0.6)
        xmax = np.nanmax(g["time_max_s"].to_numpy(dtype=float)) if g["n"].sum() else 1.0
        xmax = xmax if xmax > 0 else 1.0
        if hidden is not None:
            _draw_gap(ax, y_gap, _gap_text(hidden, hidden["time_median_s"], "medians {} s"))
        for yi, (_, r) in zip(y, g.iterrows()):
            bits = [f"n={int(r['n'])}"]
            if r["n_failed"]:
                bits.append(f"{int(r['n_failed'])} failed")
            if pd.notna(r.get("n_missing")) and r["n_missing"]:
                bits.append(f"{int(r['n_missing'])} missing")
            if r["n_drift"]:
                bits.append(f"{int(r['n_drift'])} drift")
            if r["n"] > 0:
                x = r["time_max_s"] if pd.notna(r["time_max_s"]) else r["time_median_s"]
                text = f"{r['time_median_s']:.2f} s  (" + ", ".join(bits) + ")"
            else:
                x, text = 0, "no ok run (" + ", ".join(bits[1:] or ["not run"]) + ")"
            ax.text(x + 0.01 * xmax, yi, text, va="center", fontsize=8)
        _finish_barh(w, fig, ax, "duration",
                     f"{FIGURES['duration']} — {_case_title(bench, cls, variant, threads)}",
                     (bench, cls, variant, threads), np.arange(len(labels))[::-1], labels, xmax,
                     "NPB time (s): median, whiskers min–max over ok runs")


def _finish_barh(w, fig, ax, kind, title, case, y, labels, xmax, xlabel, xspan=1.35):
    """Axes, title and file of a horizontal-bar figure; case = (bench, class, variant,
    threads) with None for what the figure spans."""
    bench, cls, variant, threads = case
    ax.set_yticks(y, labels)
    _rows(ax, len(labels))
    ax.set_xlim(0, xmax * xspan)
    ax.set_xlabel(xlabel)
    ax.set_title(title, loc="left")
    ax.grid(axis="x", alpha=0.3, zorder=0)
    parts = [p for p in (variant, None if threads is None else f"t{int(threads)}") if p is not None]
    w.save(fig, kind, _stem(bench, cls, *parts), title,
           {"bench": bench, "class": cls, "variant": variant,
            "threads": None if threads is None else int(threads)})


# -- best vs worst per thread count --------------------------------------------------

def best_worst_figures(best_worst, w):
    cfg = w.cfg
    for (bench, cls, variant), g in best_worst.groupby(["bench", "class", "variant"], sort=True):
        if not w.mine():
            continue
        g = g.sort_values("threads")
        fig, ax = plt.subplots(figsize=(cfg["width"], max(2.4, 1.2 + 0.95 * len(g))))
        y = np.arange(len(g))[::-1].astype(float)
        h = 0.36
        xmax = np.nanmax(g[["best_max_s", "worst_max_s"]].to_numpy(dtype=float)) if len(g) else 1.0
        xmax = xmax if np.isfinite(xmax) and xmax > 0 else 1.0
        one = (g["best_placement_id"] == g["worst_placement_id"]).to_numpy()
        for side, off in (("best", h / 2), ("worst", -h / 2)):
            # a case of one placement is one grey bar: neither best nor worst of anything
            keep = ~one if side == "worst" else np.ones(len(g), bool)
            colors = [COLORS["one"] if o and side == "best" else COLORS[side] for o in one]
            _whisker_bars(ax, (y + np.where(one, 0.0, off))[keep], g[f"{side}_median_s"][keep],
                          g[f"{side}_min_s"][keep], g[f"{side}_max_s"][keep], [c for c, k in zip(colors, keep) if k],
                          h * 0.95)
            for yi, o, (_, r) in zip(y, one, g.iterrows()):
                if o and side == "worst":
                    continue
                off_i = 0.0 if o else off
                x = r[f"{side}_max_s"] if pd.notna(r[f"{side}_max_s"]) else 0
                label = textwrap.shorten(str(r[f"{side}_placement"]), 70, placeholder="…")
                ax.text(x + 0.01 * xmax, yi + off_i, f"{label}  {r[f'{side}_median_s']:.2f} s",
                        va="center", fontsize=8)
        ticks = []
        for _, r in g.iterrows():
            t = int(r["threads"])
            tick = counted(t, 'thread')
            if r["best_placement_id"] == r["worst_placement_id"]:
                tick += "\none placement:\nnothing to compare"
            elif r["best_median_s"] == r["worst_median_s"]:
                tick += "\nsame median"
            elif r["below_resolution"] in (True, "True"):
                tick += "\nbelow resolution"
            elif pd.notna(r["improvement_pct"]):
                flag = {"yes": "beyond noise", "no": "within noise", "unknown": "noise unknown"}.get(r["differs"], "")
                drift = "\nrests on drift" if r["rests_on_drift"] in (True, "True") else ""
                tick += f"\n−{r['improvement_pct']:.1f}%\n({flag}){drift}"
            ticks.append(tick)
        _legend(ax, [("best placement", COLORS["best"]), ("worst placement", COLORS["worst"])])
        _finish_barh(w, fig, ax, "best_worst", f"{FIGURES['best_worst']} — {_case_title(bench, cls, variant)}",
                     (bench, cls, variant, None), y, ticks, xmax, "NPB time (s): median, whiskers min–max",
                     xspan=1.6)


# -- pages per node ------------------------------------------------------------------

def pages_figures(numa_pages, summary, w):
    cfg = w.cfg
    grp = numa_pages[numa_pages["level"] == "group"]
    if grp.empty:
        return
    order = summary.set_index(["bench", "class", "variant", "threads", "placement_id"])["time_median_s"]
    cmap = plt.get_cmap("tab10" if grp["node"].nunique() <= 10 else "tab20")
    for (bench, cls, variant, threads), g in grp.groupby(["bench", "class", "variant", "threads"], sort=True):
        if not w.mine():
            continue
        table = g.pivot_table(index=["placement_id", "placement"], columns="node", values="bytes",
                              aggfunc="sum", fill_value=0)
        pages = g.groupby(["placement_id", "placement"])["pages"].sum(min_count=1)
        keys = [(bench, cls, variant, threads, pid) for pid, _ in table.index]
        med = [order.get(k, np.nan) for k in keys]
        table = table.assign(_m=med).sort_values("_m", na_position="last").drop(columns="_m")
        k = cfg["max_rows"] // 2
        table, hidden = _cut_middle(table, k, cfg["max_rows"])   # best and worst by time
        big = table.to_numpy().sum(axis=1).max() >= 2 ** 30
        unit, div = ("GiB", 2 ** 30) if big else ("MiB", 2 ** 20)
        case = summary[(summary["bench"] == bench) & (summary["class"] == cls) &
                       (summary["variant"] == variant) & (summary["threads"] == threads)]
        shown = dict(zip(case["placement_id"], display_labels(case)))
        labels, y, y_gap = _gap_rows([_wrap(shown.get(pid, p), cfg["label_width"]) for pid, p in table.index],
                                     k, hidden)
        fig, ax = plt.subplots(figsize=(cfg["width"], _height(labels, cfg)))
        left = np.zeros(len(table))
        for j, node in enumerate(table.columns):
            vals = table[node].to_numpy(dtype=float) / div
            ax.barh(y, vals, left=left, height=0.6, color=cmap(j % cmap.N), label=f"node {node}", zorder=2)
            left += vals
        xmax = left.max() if left.max() > 0 else 1.0
        for yi, idx, tot in zip(y, table.index, left):
            p = pages.get(idx, np.nan)
            txt = f"{tot:.3g} {unit}" + (f", {int(p):,} pages" if pd.notna(p) else "")
            ax.text(tot + 0.01 * xmax, yi, txt, va="center", fontsize=8)
        if hidden is not None:
            _draw_gap(ax, y_gap, _gap_text(hidden, hidden.to_numpy().sum(axis=1) / div, "{} " + unit,
                                           "numa_pages.csv"))
        ax.legend(loc="lower right", fontsize=8, frameon=False, ncol=min(len(table.columns), 4))
        _finish_barh(w, fig, ax, "pages",
                     f"{FIGURES['pages']} — {_case_title(bench, cls, variant, threads)}",
                     (bench, cls, variant, threads), np.arange(len(labels))[::-1], labels, xmax,
                     f"data pages at the steady footprint per NUMA node ({unit}; median over ok runs)")


# -- serial-init vs default ----------------------------------------------------------

def serial_init_figures(summary, w):
    cfg = w.cfg
    s = summary[summary["variant"].isin(["default", "serial-init"])]
    for (bench, cls), g in s.groupby(["bench", "class"], sort=True):
        wide = g.pivot_table(index=["threads", "placement_id", "placement"], columns="variant",
                             values=["time_median_s", "time_min_s", "time_max_s", "n"], aggfunc="first")
        if "default" not in wide["n"] or "serial-init" not in wide["n"]:
            continue
        both = wide[(wide["n"]["default"] > 0) & (wide["n"]["serial-init"] > 0)]
        if both.empty or not w.mine():
            continue
        both = both.sort_index(level=["threads", "placement"])
        k = cfg["max_rows"] // 4                    # two bars a row: half as many rows
        si_over_default = both[("time_median_s", "serial-init")] / both[("time_median_s", "default")]
        if len(both) > 2 * k:                       # the k most and least helped by serial init
            both = both.loc[si_over_default.sort_values().index]
        both, hidden = _cut_middle(both, k, 2 * k)
        one = g.drop_duplicates(["threads", "placement_id"])        # both variants share labels
        shown = dict(zip(zip(one["threads"], one["placement_id"]), display_labels(one)))
        labels, y, y_gap = _gap_rows([_wrap(f"{t} thr · {shown.get((t, pid), p)}", cfg["label_width"])
                                      for t, pid, p in both.index], k, hidden)
        fig, ax = plt.subplots(figsize=(cfg["width"], 1.4 + 0.75 * len(labels) + 0.2 * sum(lab.count("\n") for lab in labels)))
        h = 0.38
        xmax = np.nanmax(both["time_max_s"].to_numpy(dtype=float))
        xmax = xmax if np.isfinite(xmax) and xmax > 0 else 1.0
        for variant, off in (("default", h / 2), ("serial-init", -h / 2)):
            _whisker_bars(ax, y + off, both["time_median_s"][variant], both["time_min_s"][variant],
                          both["time_max_s"][variant], COLORS[variant], h * 0.95)
        for yi, (_, r) in zip(y, both.iterrows()):
            d, si = r[("time_median_s", "default")], r[("time_median_s", "serial-init")]
            ratio = f"×{si / d:.2f}" if d > 0 else ""
            ax.text(r[("time_max_s", "serial-init")] + 0.01 * xmax, yi - h / 2,
                    f"{si:.2f} s {ratio}", va="center", fontsize=8)
            ax.text(r[("time_max_s", "default")] + 0.01 * xmax, yi + h / 2, f"{d:.2f} s",
                    va="center", fontsize=8)
        if hidden is not None:
            _draw_gap(ax, y_gap, _gap_text(hidden, si_over_default[hidden.index], "serial-init/default ×{}"))
        _legend(ax, [("default", COLORS["default"]), ("serial-init", COLORS["serial-init"])])
        _finish_barh(w, fig, ax, "serial_init", f"{FIGURES['serial_init']} — {_case_title(bench, cls)}",
                     (bench, cls, None, None), np.arange(len(labels))[::-1], labels, xmax,
                     "NPB time (s): median, whiskers min–max", xspan=1.3)


# -- variability ---------------------------------------------------------------------

def variability_figures(summary, w):
    cfg = w.cfg
    for (bench, cls, variant), g in summary.groupby(["bench", "class", "variant"], sort=True):
        if not w.mine():
            continue
        names = dict(zip(g.index, display_labels(g)))
        k = cfg["max_rows"] // 2
        if len(g) > cfg["max_rows"]:               # the most and the least variable
            g = g.sort_values(["time_cv", "threads", "placement"], ascending=[False, True, True],
                              na_position="last")
        else:
            g = g.sort_values(["threads", "placement"])
        g, hidden = _cut_middle(g, k, cfg["max_rows"])
        labels, y, y_gap = _gap_rows([_wrap(f"{int(t)} thr · {names[i]}", cfg["label_width"])
                                      for i, t in zip(g.index, g["threads"])], k, hidden)
        fig, ax = plt.subplots(figsize=(cfg["width"], _height(labels, cfg)))
        cv = 100 * g["time_cv"].to_numpy(dtype=float)
        ok = ~np.isnan(cv)
        ax.barh(y[ok], cv[ok], height=0.6, color=COLORS["bar"], zorder=2)
        xmax = np.nanmax(cv) if ok.any() and np.nanmax(cv) > 0 else 1.0
        for yi, (_, r), c in zip(y, g.iterrows(), cv):
            text = f"{c:.1f}% (n={int(r['n'])})" if not np.isnan(c) else f"n={int(r['n'])}: CV needs ≥ 2 ok runs"
            ax.text((0 if np.isnan(c) else c) + 0.01 * xmax, yi, text, va="center", fontsize=8)
        if hidden is not None:
            _draw_gap(ax, y_gap, _gap_text(hidden, 100 * hidden["time_cv"], "CV {} %"))
        ax.set_yticks(np.arange(len(labels))[::-1], labels)
        _rows(ax, len(labels))
        ax.set_xlim(0, xmax * 1.4)
        ax.set_xlabel("coefficient of variation of NPB time (%, std/mean over ok runs)")
        title = f"{FIGURES['variability']} — {_case_title(bench, cls, variant)}"
        ax.set_title(title, loc="left")
        ax.grid(axis="x", alpha=0.3, zorder=0)
        w.save(fig, "variability", _stem(bench, cls, variant), title,
               {"bench": bench, "class": cls, "variant": variant, "threads": None})


# -- predicted memory cost vs measured time (tables/explain.py) ---------------------------

def explain_figures(explain, w):
    """One point per placement: the model's predicted cost against the measured median
    (whiskers min-max), the fitted line, unexplained placements in red and named."""
    d = explain[explain["predicted"].notna()] if len(explain) else explain
    for (bench, cls, variant, threads), g in d.groupby(["bench", "class", "variant", "threads"], sort=True):
        if len(g) < 2 or not w.mine():
            continue
        fig, ax = plt.subplots(figsize=(w.cfg["width"] * 0.75, 4.0))
        x, y = g["predicted"].astype(float), g["time_median_s"].astype(float)
        missed = (g["explained"] == "no").to_numpy()
        fits = (g["explained"] == "yes").to_numpy()
        ax.errorbar(x, y, yerr=[y - g["time_min_s"].astype(float), g["time_max_s"].astype(float) - y],
                    fmt="none", ecolor="grey", capsize=2, zorder=2)
        # "explained" only where the model was judged against the line: a flat matrix (or
        # a 1 x 1 one) expects no difference and explains nothing
        if fits.any():
            ax.scatter(x[fits], y[fits], color=COLORS["best"], zorder=3, label="explained")
        if missed.any():
            ax.scatter(x[missed], y[missed], color=COLORS["worst"], zorder=3, label="not explained")
        rest = ~(fits | missed)
        if rest.any():
            flat = (g["explained"] == "flat").to_numpy()
            ax.scatter(x[rest], y[rest], color=COLORS["one"], zorder=3,
                       label="no difference expected (flat matrices)" if flat[rest].all() else "not judged")
        if g["fitted_s"].notna().any():
            order = np.argsort(x.to_numpy())
            ax.plot(x.to_numpy()[order], g["fitted_s"].astype(float).to_numpy()[order], color="black", lw=0.8,
                    ls="--", label="least-squares line")
        for xi, yi, lab, m in zip(x, y, g["placement"], missed):
            if m or len(g) <= 12:
                ax.annotate(textwrap.shorten(str(lab), 40, placeholder="…"), (xi, yi), fontsize=7,
                            xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel(f"predicted memory cost of the slowest thread ({g['predicted_unit'].iloc[0]})")
        ax.set_ylabel("NPB time (s): median, whiskers min–max")
        verdict = str(g["case_verdict"].iloc[0])
        title = f"{FIGURES['explain']} — {_case_title(bench, cls, variant, int(threads))}"
        ax.set_title(title + "\n" + textwrap.shorten(verdict, 90, placeholder="…"), loc="left", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        w.save(fig, "explain", _stem(bench, cls, variant, f"t{int(threads)}"), title,
               {"bench": bench, "class": cls, "variant": variant, "threads": int(threads)})


# Drawing (matplotlib's layout and SVG text as paths) is most of the report's time: the
# quick study's 26 figures took 1.1-1.4 s of its 2 s on one core. They are independent, so
# the report draws them in up to DRAWERS processes, forked once the tables are read (the
# imports and the tables are shared, nothing is pickled but the figures' rows). The report
# is the workflow's last job and runs alone, after the last measured run: the second
# core is otherwise idle. The files and figures.csv are the same bytes as one drawer's.
DRAWERS = 2


def _os_threads():
    """Threads of this process as the system counts them (a BLAS pool's too, which
    threading.active_count does not see)."""
    import os
    import threading
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _drawers():
    """How many processes draw: DRAWERS, at most the CPUs this process may use; one where
    fork is not the way to start a process (fork after threads, other systems)."""
    import os
    import sys
    if not sys.platform.startswith("linux") or _os_threads() > 1:
        return 1
    return max(1, min(DRAWERS, len(os.sched_getaffinity(0))))


def _draw(tables, out_dir, cfg, part=0, parts=1):
    """Every kind's figures, this drawer's part of them: [(figure number, figures.csv row)]."""
    w = _Writer(out_dir, cfg, part, parts)
    summary = tables["summary"]
    duration_figures(summary, w)
    best_worst_figures(tables["best_worst"], w)
    pages_figures(tables["numa_pages"], summary, w)
    serial_init_figures(summary, w)
    variability_figures(summary, w)
    explain_figures(tables["explain"], w)
    for owner, _ in groups("draw"):         # each kind's own figures
        owner.draw(tables, w)
    return list(zip(w.order, w.rows))


def _draw_in_parts(tables, out_dir, cfg, parts):
    """_draw in `parts` processes: this one draws part 0 while forked children draw the
    others; their rows come back through a pipe. A child's error is raised here, with its
    traceback, after every child has ended."""
    import os
    import pickle
    import traceback
    children = []
    for part in range(1, parts):
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:                        # the child: draw, send the rows, leave at once
            os.close(r)
            code = 0
            try:
                try:
                    out = ("ok", _draw(tables, out_dir, cfg, part, parts))
                except BaseException:
                    out, code = ("error", traceback.format_exc()), 1
                with os.fdopen(wfd, "wb") as f:
                    pickle.dump(out, f)
            finally:
                os._exit(code)
        os.close(wfd)
        children.append((pid, r))
    rows, errors = [], []
    try:
        rows = _draw(tables, out_dir, cfg, 0, parts)
    finally:
        for pid, r in children:             # always reaped, even when this part failed
            with os.fdopen(r, "rb") as f:
                data = f.read()
            _, status = os.waitpid(pid, 0)
            try:
                what, got = pickle.loads(data)
            except Exception:
                what, got = "error", f"a drawing process ended without its figures (wait status {status})"
            if what == "ok":
                rows += got
            else:
                errors.append(got)
    if errors:
        raise RuntimeError("drawing the figures failed:\n" + "\n".join(errors))
    return rows


def make_figures(tables, out_dir, settings=None, drawers=None):
    """Every figure of KINDS from the tables ({name: DataFrame}, see aggregate.read_tables)
    into out_dir/<kind>/; writes out_dir/figures.csv and returns it as a DataFrame.
    drawers: how many processes draw (default _drawers(): up to DRAWERS)."""
    cfg = Section("figures", settings).whole()
    out_dir = Path(out_dir)
    for kind in KINDS:                      # a rerun never leaves figures of vanished cases
        d = out_dir / kind
        d.mkdir(parents=True, exist_ok=True)
        for old in d.iterdir():
            if old.suffix.lstrip(".") in ("svg", "png", "pdf"):
                old.unlink()
    _rc()
    parts = drawers if drawers is not None else _drawers()
    rows = _draw_in_parts(tables, out_dir, cfg, parts) if parts > 1 else _draw(tables, out_dir, cfg)
    cols = ["kind", "bench", "class", "variant", "threads", "title", *cfg["formats"]]
    manifest = pd.DataFrame([row for _, row in sorted(rows, key=lambda r: r[0])], columns=cols)
    manifest["threads"] = manifest["threads"].astype("Int64")
    manifest.to_csv(out_dir / MANIFEST, index=False)
    return manifest
