"""What the figures say (numaplace.figures.plots), not only that they exist: the labels,
ratios, orderings and the summary row of the placements left out, read back from the SVG
drawn with text kept as text, and the helpers that compute them pinned directly."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from numaplace.figures import plots

pytestmark = pytest.mark.unit


def writer(tmp_path, monkeypatch, **cfg):
    """A one-drawer writer of SVG with text kept as <text> (the words can be read back)."""
    w = plots._Writer(tmp_path, plots.Section("figures", {"formats": ["svg"], **cfg}).whole())
    plots._rc()
    monkeypatch.setitem(plots.plt.rcParams, "svg.fonttype", "none")
    return w


def texts(tmp_path, row):
    svg = (tmp_path / row["svg"]).read_text()
    return [t.strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def srow(pid, label, t, variant="default", threads=2, n=3, **kw):
    r = {"bench": "cg", "class": "A", "variant": variant, "threads": threads, "placement_id": pid,
         "placement": label, "n": n, "n_failed": 0, "n_missing": 0, "n_drift": 0,
         "time_min_s": t - 0.1, "time_median_s": t, "time_mean_s": t, "time_max_s": t + 0.1, "time_cv": 0.01}
    r.update(kw)
    return r


# -- helpers ---------------------------------------------------------------------------

def test_two_placements_of_one_label_get_their_launcher_then_their_id():
    df = pd.DataFrame({"placement": ["compact 2", "compact 2", "spread 2", "x", "x"],
                       "launcher": ["taskset", "numactl", "numactl", "omp", "omp"],
                       "placement_id": ["a", "b", "c", "d", "e"]})
    assert plots.display_labels(df) == ["compact 2 (taskset)", "compact 2 (numactl)", "spread 2",
                                        "x (omp) [d]", "x (omp) [e]"]


def test_a_case_title_and_a_figure_file_stem():
    assert plots._case_title("cg", "B", "serial-init", 1) == "CG class B · serial-init · 1 thread"
    assert plots._case_title("mg", "A", threads=4) == "MG class A · 4 threads"
    assert plots._stem("cg", "B", None, "t4") == "cg.B.t4"


def test_a_figure_is_as_tall_as_its_label_lines():
    cfg = {"bar_height": 0.5}
    assert plots._height(["a", "b\nc", "d"], cfg) == pytest.approx(1.3 + 0.5 * 4)
    assert plots._height(["a"], cfg) == 2.0
    assert plots._height(["a"] * 10, cfg, extra=1.0) == pytest.approx(6.0)


def test_eliding_keeps_the_first_and_last_half_and_every_unmeasured_row():
    """10 rows, max 6: the best 3, the worst 2 measured and the unmeasured one; 4 hidden."""
    g = pd.DataFrame({"n": [3] * 9 + [0], "time_median_s": list(range(9)) + [np.nan]})
    shown, hidden = plots.elide(g, 6)
    assert list(shown.index) == [0, 1, 2, 7, 8, 9] and list(hidden.index) == [3, 4, 5, 6]
    four_unmeasured = pd.DataFrame({"n": [3] * 6 + [0] * 4, "time_median_s": range(10)})
    shown, hidden = plots.elide(four_unmeasured, 6)
    assert list(shown.index) == [0, 1, 2, 5, 6, 7, 8, 9] and list(hidden.index) == [3, 4]
    assert plots.elide(g.iloc[:6], 6)[1] is None


def test_cutting_the_middle_keeps_k_rows_each_end():
    df = pd.DataFrame({"x": range(7)})
    kept, hidden = plots._cut_middle(df, 2, 6)
    assert list(kept["x"]) == [0, 1, 5, 6] and list(hidden["x"]) == [2, 3, 4]
    assert plots._cut_middle(df.iloc[:6], 2, 6)[1] is None


def test_the_gap_row_follows_the_first_k_rows():
    labels, ys, gap = plots._gap_rows(["a", "b", "c", "d"], 2, pd.DataFrame({"x": range(5)}))
    assert labels == ["a", "b", "⋮ 5 more", "c", "d"]
    assert list(ys) == [4, 3, 1, 0] and gap == 2
    labels, ys, gap = plots._gap_rows(["a", "b"], 1, None)
    assert labels == ["a", "b"] and list(ys) == [1, 0] and gap is None


def test_the_gap_text_says_how_many_their_range_and_their_failures():
    hidden = pd.DataFrame({"n_failed": [0, 2, 1], "n_drift": [0, 0, np.nan]})
    assert plots._gap_text(hidden, [1.23456, 9.87654, np.nan], "medians {} s") == (
        "3 more placements; medians 1.23–9.88 s; 2 with failed runs: every one is in tables/summary.csv")
    assert plots._gap_text(hidden.assign(n_failed=0, n_drift=[1, 1, 0]), [np.nan] * 3, "x {}", "numa_pages.csv") == (
        "3 more placements; 2 with drift: every one is in tables/numa_pages.csv")


def test_each_drawer_draws_every_parts_th_figure(monkeypatch):
    """Drawer 1 of 3 draws figures 1, 4, 7...; as many drawers as DRAWERS and the CPUs allow,
    one when this process already has threads (fork beside a thread is unsafe)."""
    import os
    cfg = plots.Section("figures", {"formats": ["svg"]}).whole()
    w = plots._Writer("/nonexistent", cfg, part=1, parts=3)
    assert [w.mine() for _ in range(7)] == [False, True, False, False, True, False, False]
    monkeypatch.setattr(plots, "_os_threads", lambda: 1)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert plots._drawers() == plots.DRAWERS
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {5})
    assert plots._drawers() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setattr(plots, "_os_threads", lambda: 3)
    assert plots._drawers() == 1


# -- the figures' words ------------------------------------------------------------------

def test_the_serial_init_label_is_serial_init_over_default(tmp_path, monkeypatch):
    """Serial-init 2 s against default 1 s on one placement: '2.00 s ×2.00' (serial-init
    twice as long), 0.5 s against 1 s: '×0.50'."""
    s = pd.DataFrame([srow("p", "1/1 on 0,1", 1.0), srow("p", "1/1 on 0,1", 2.0, variant="serial-init"),
                      srow("q", "2 on 0", 1.0), srow("q", "2 on 0", 0.5, variant="serial-init")])
    w = writer(tmp_path, monkeypatch)
    plots.serial_init_figures(s, w)
    (row,) = w.rows
    assert (row["kind"], row["svg"]) == ("serial_init", "serial_init/cg.A.svg")
    t = texts(tmp_path, row)
    assert "2.00 s ×2.00" in t and "0.50 s ×0.50" in t and "1.00 s" in t
    assert [x for x in t if " thr · " in x] == ["2 thr · 1/1 on 0,1", "2 thr · 2 on 0"]


def test_the_serial_init_figure_keeps_the_most_and_least_helped(tmp_path, monkeypatch):
    """max_rows 8: two bars a row, 2 rows each end by serial-init/default; the 2 between
    summarised with their ratios."""
    ratios = {"a": 1.5, "b": 0.8, "c": 1.1, "d": 2.0, "e": 0.9, "f": 1.0}
    s = pd.DataFrame([srow(p, f"pl {p}", 10.0) for p in ratios]
                     + [srow(p, f"pl {p}", 10.0 * r, variant="serial-init") for p, r in ratios.items()])
    w = writer(tmp_path, monkeypatch, max_rows=8)
    plots.serial_init_figures(s, w)
    t = texts(tmp_path, w.rows[0])
    assert [x for x in t if " thr · " in x] == ["2 thr · pl b", "2 thr · pl e", "2 thr · pl a", "2 thr · pl d"]
    assert "2 more placements; serial-init/default ×1–1.1: every one is in tables/summary.csv" in t


def test_the_duration_labels_say_median_runs_failures_and_missing(tmp_path, monkeypatch):
    s = pd.DataFrame([srow("a", "fast", 12.5, n=3, n_failed=1, n_missing=2, n_drift=1),
                      srow("b", "slow", 20.0), srow("c", "broken", np.nan, n=0, n_failed=2, time_min_s=np.nan,
                                                   time_max_s=np.nan)])
    w = writer(tmp_path, monkeypatch)
    plots.duration_figures(s, w)
    (row,) = w.rows
    assert row["svg"] == "duration/cg.A.default.t2.svg"
    t = texts(tmp_path, row)
    assert "12.50 s  (n=3, 1 failed, 2 missing, 1 drift)" in t and "20.00 s  (n=3)" in t
    assert "no ok run (2 failed)" in t
    assert [x for x in t if x in ("fast", "slow", "broken")] == ["fast", "slow", "broken"]


def test_the_best_worst_ticks_say_the_cost_and_the_noise(tmp_path, monkeypatch):
    base = {"bench": "cg", "class": "A", "variant": "default", "best_placement": "near", "worst_placement": "far",
            "best_placement_id": "n", "worst_placement_id": "f", "best_median_s": 5.1, "worst_median_s": 6.5,
            "best_min_s": 5.0, "best_max_s": 5.2, "worst_min_s": 6.4, "worst_max_s": 6.6,
            "below_resolution": False, "rests_on_drift": False, "differs": "yes", "improvement_pct": 21.538}
    bw = pd.DataFrame([{**base, "threads": 4},
                       {**base, "threads": 2, "differs": "no", "rests_on_drift": True, "improvement_pct": 3.04},
                       {**base, "threads": 8, "differs": "unknown"},
                       {**base, "threads": 1, "worst_placement_id": "n"},
                       {**base, "threads": 16, "below_resolution": "True"}])
    w = writer(tmp_path, monkeypatch)
    plots.best_worst_figures(bw, w)
    t = texts(tmp_path, w.rows[0])
    for words in ("−21.5%", "(beyond noise)", "−3.0%", "(within noise)", "rests on drift", "(noise unknown)",
                  "one placement:", "below resolution", "near  5.10 s", "far  6.50 s"):
        assert words in t, (words, t)
    assert w.rows[0]["svg"] == "best_worst/cg.A.default.svg"
    # each tick's lines in order: thread count, cost, noise verdict (drift)
    assert t[t.index("2 threads"):t.index("2 threads") + 4] == ["2 threads", "−3.0%", "(within noise)", "rests on drift"]
    assert t[t.index("8 threads"):t.index("8 threads") + 3] == ["8 threads", "−21.5%", "(noise unknown)"]


def test_the_variability_figure_keeps_the_most_and_least_variable(tmp_path, monkeypatch):
    """6 placements, max_rows 4: the 2 most variable first, then the 2 least; CV in % with one decimal."""
    cvs = {"a": 0.05, "b": 0.01, "c": 0.123, "d": 0.02, "e": 0.002, "f": 0.03}
    s = pd.DataFrame([srow(p, f"pl {p}", 10.0, time_cv=cv) for p, cv in cvs.items()])
    w = writer(tmp_path, monkeypatch, max_rows=4)
    plots.variability_figures(s, w)
    (row,) = w.rows
    assert row["svg"] == "variability/cg.A.default.svg"
    t = texts(tmp_path, row)
    assert [x for x in t if " thr · " in x] == ["2 thr · pl c", "2 thr · pl a", "2 thr · pl b", "2 thr · pl e"]
    assert "12.3% (n=3)" in t and "0.2% (n=3)" in t
    assert "2 more placements; CV 2–3 %: every one is in tables/summary.csv" in t
    few = writer(tmp_path / "few", monkeypatch)
    plots.variability_figures(s.iloc[:3].assign(time_cv=[0.05, np.nan, 0.01]), few)
    t = texts(tmp_path / "few", few.rows[0])
    assert [x for x in t if " thr · " in x] == ["2 thr · pl a", "2 thr · pl b", "2 thr · pl c"]
    assert "n=3: CV needs ≥ 2 ok runs" in t


def test_the_pages_figure_says_each_placements_footprint_in_gib_or_mib(tmp_path, monkeypatch):
    """1.5 GiB over two nodes (393,216 pages of 4 KiB) is said in GiB; a case whose largest
    footprint is 1000 MiB (under 1 GiB, over 10^9 bytes) in MiB; placements fastest first."""
    def pages(threads, pid, label, per_node):
        return [{"level": "group", "bench": "cg", "class": "A", "variant": "default", "threads": threads,
                 "placement_id": pid, "placement": label, "node": n, "bytes": b, "pages": b // 4096}
                for n, b in per_node.items()]
    gib, mib = 2 ** 30, 2 ** 20
    numa = pd.DataFrame(pages(2, "s", "slow one", {0: gib, 1: gib // 2}) + pages(2, "f", "fast one", {0: 600 * mib})
                        + pages(4, "m", "mid", {0: 1000 * mib}))
    summary = pd.DataFrame([srow("s", "slow one", 9.0), srow("f", "fast one", 4.0), srow("m", "mid", 5.0, threads=4)])
    w = writer(tmp_path, monkeypatch)
    plots.pages_figures(numa, summary, w)
    assert [r["svg"] for r in w.rows] == ["pages/cg.A.default.t2.svg", "pages/cg.A.default.t4.svg"]
    two, four = texts(tmp_path, w.rows[0]), texts(tmp_path, w.rows[1])
    assert "1.5 GiB, 393,216 pages" in two and "0.586 GiB, 153,600 pages" in two
    assert [x for x in two if x in ("slow one", "fast one")] == ["fast one", "slow one"]
    assert "data pages at the steady footprint per NUMA node (GiB; median over ok runs)" in two
    assert "1e+03 MiB, 256,000 pages" in four
    assert "data pages at the steady footprint per NUMA node (MiB; median over ok runs)" in four


def test_a_single_measured_placement_is_neither_best_nor_worst(tmp_path, monkeypatch):
    """One placement with ok runs (the other never ran): a plain bar, no green or red; two: green and red."""
    w = writer(tmp_path, monkeypatch)
    plots.duration_figures(pd.DataFrame([srow("a", "only", 10.0), srow("b", "none", np.nan, n=0, time_min_s=np.nan,
                                                                       time_max_s=np.nan)]), w)
    svg = (tmp_path / w.rows[0]["svg"]).read_text()
    assert plots.COLORS["bar"] in svg and plots.COLORS["best"] not in svg and plots.COLORS["worst"] not in svg
    w2 = writer(tmp_path / "two", monkeypatch)
    plots.duration_figures(pd.DataFrame([srow("a", "one", 10.0), srow("b", "two", 12.0)]), w2)
    svg = (tmp_path / "two" / w2.rows[0]["svg"]).read_text()
    assert plots.COLORS["best"] in svg and plots.COLORS["worst"] in svg and plots.COLORS["bar"] not in svg
