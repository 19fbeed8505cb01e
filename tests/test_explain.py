"""The explain model (numaplace.tables.explain): each NPB placement's memory cost from node
× node matrices, on real records (the NUMA VM fixtures) and on the reference thesis's
X4600 numbers (tests/benchmarks/explain_x4600.py builds the same matrix)."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numaplace.tables import aggregate
from numaplace.tables import explain as ex
from numaplace.tables.explain import (COLUMNS, NO_MATRICES, access_shares, explain_table, matrices,
                                      predicted_cost)

FIXTURES = Path(__file__).parent / "fixtures"
THESIS = FIXTURES / "thesis" / "x4600_memory_matrix.csv"


def square(values, unit="ns", bench="memlat"):
    """memory_matrix.csv rows of one bench from {(reader, memory): median}."""
    return pd.DataFrame([{"bench": bench, "mode": "serial", "size_bytes": 1 << 28, "via": "membind",
                          "reader_node": r, "memory_node": m, "median": v, "min": v, "max": v, "n": 1,
                          "unit": unit} for (r, m), v in values.items()])


def both(local, remote, nodes=4):
    """Latency and bandwidth matrices with one local and one remote value."""
    lat = square({(r, m): local if r == m else remote for r in range(nodes) for m in range(nodes)})
    bw = square({(r, m): 1e4 * local / (local if r == m else remote) for r in range(nodes) for m in range(nodes)},
                "MB/s", "membw")
    return pd.concat([lat, bw])


@pytest.fixture(scope="module")
def vm_tables():
    return aggregate.build_tables(FIXTURES / "real" / "vm")


@pytest.fixture(scope="module")
def moved_tables():
    return aggregate.build_tables(FIXTURES / "real" / "vm-balancing")


def explain(t, matrix):
    return explain_table(t["summary"], t["runs"], t["numa_pages"], matrix)


def test_runs_know_their_threads_per_node(vm_tables):
    runs = vm_tables["runs"].set_index("run_id")
    assert runs.loc["mg.W.default.l11-n0n3.r1", "thread_nodes"] == "0:1,3:1"   # cpus 0,6 on vm4
    assert runs.loc["mg.W.default.local-n1.r1", "thread_nodes"] == "1:2"


def test_flat_matrices_expect_no_difference(vm_tables):
    """The NUMA VM's nodes are one host's RAM: its matrices are flat, so the model must not
    rank MG.W's four real placements (measured 2.6-3.7 s under TCG) by memory."""
    ex = explain(vm_tables, both(95.0, 96.0))
    mg = ex[(ex["bench"] == "mg") & (ex["variant"] == "default")]
    assert len(mg) == 4 and mg["predicted"].notna().all()
    assert mg["case_verdict"].iloc[0].startswith("no difference expected")
    assert set(mg["explained"]) == {"flat"} and mg["case_spearman"].isna().all()


def test_no_matrices_say_which_experiment_adds_them(vm_tables):
    ex = vm_tables["explain"]                      # the study itself measured none
    assert len(ex) and set(ex["case_verdict"]) == {NO_MATRICES}
    assert "memory-quick.yaml" in NO_MATRICES and "--matrices" in NO_MATRICES


def test_remote_pages_cost_more_and_rank_the_real_placements(vm_tables):
    """Remote memory 2x local: of MG.W's real placements, local pages (local-n1: threads and
    pages on node 1) predict least, membind 2 from node 0 (all remote) most."""
    ex = explain(vm_tables, both(100.0, 200.0))
    mg = ex[(ex["bench"] == "mg") & (ex["variant"] == "default")].set_index("placement_id")
    assert mg.loc["local-n1", "predicted"] < mg.loc["interleave-all", "predicted"] < mg.loc["membind-n2", "predicted"]
    assert mg["case_spearman"].notna().all() and mg["case_verdict"].iloc[0].startswith("Spearman")


def test_pages_moved_by_hand_are_named(moved_tables):
    """The real run whose pages migratepages moved from node 0 to 3 mid-run
    (tests/fixtures/real/vm-balancing/runs/moved-by-hand): one footprint cannot stand for
    it, and the model says so by name."""
    ex = explain(moved_tables, both(100.0, 200.0))
    mg = ex[ex["bench"] == "mg"]
    assert list(mg["explained"]) == ["no"]
    assert "migration" in mg["cause"].iloc[0] and "not explained: 1/1 on 0,3" in mg["case_verdict"].iloc[0]
    cg = ex[ex["bench"] == "cg"]                     # its CG runs kept their pages
    assert "no" not in set(cg["explained"])


def test_owner_pages_short_on_a_node_are_read_where_they_landed():
    """First touch: a node holding less than its threads' share had the rest of their pages
    land on the nodes with a surplus."""
    nonzero = lambda d: {k: v for k, v in d.items() if v}
    mix = access_shares({0: 1, 1: 1}, {0: 0.25, 1: 0.5, 2: 0.25}, owner=True, shared=0.0)
    assert nonzero(mix[1]) == pytest.approx({1: 1.0})
    assert nonzero(mix[0]) == pytest.approx({0: 0.5, 2: 0.5})
    # without an owner (interleave, membind, serial init) a thread reads as the pages are
    assert nonzero(access_shares({0: 2}, {0: 0.5, 3: 0.5}, owner=False, shared=0.3)[0]) == \
        pytest.approx({0: 0.5, 3: 0.5})


def test_the_slowest_thread_counts():
    cells = {"cells": {(0, 0): 100.0, (1, 1): 150.0, (0, 1): 200.0, (1, 0): 200.0}}
    assert predicted_cost({0: 1, 1: 1}, {0: 0.5, 1: 0.5}, cells, owner=True, shared=0.0) == 150.0
    assert predicted_cost({0: 1, 1: 1}, {0: 0.5, 1: 0.5}, cells, owner=True, shared=1.0) == 175.0
    assert predicted_cost({0: 1}, {2: 1.0}, cells, owner=False, shared=0.0) is None     # no cell


def test_thesis_x4600_inner_nodes_rank_best():
    """The thesis's X4600 latencies (its text, as a memory_matrix.csv): CG.B on 2 threads of
    one node costs ~30 % more on the outer nodes (the thesis: inner nodes ~30 % faster), and
    of 2/2 on two nodes the inner pair 2,3 (measured best, 75.97 s) predicts below the outer
    pair 0,1 (93 s)."""
    m = pd.read_csv(THESIS)
    cells = {(int(r.reader_node), int(r.memory_node)): r.median for r in m.itertuples()}
    mat = {"cells": cells}
    one = {n: predicted_cost({n: 2}, {n: 1.0}, mat, owner=True, shared=1 / 3) for n in range(8)}
    inner, outer = [one[n] for n in (2, 3, 4, 5)], [one[n] for n in (0, 1, 6, 7)]
    assert max(inner) < min(outer) and min(outer) / max(inner) == pytest.approx(1.31, abs=0.01)
    pair = lambda a, b: predicted_cost({a: 2, b: 2}, {a: 0.5, b: 0.5}, mat, owner=True, shared=1 / 3)
    assert pair(2, 3) < pair(0, 1) < pair(0, 7)


def test_an_eight_percent_remote_penalty_is_not_flat(vm_tables):
    """Flat means within 5 %: remote memory 8 % dearer still ranks MG.W's placements."""
    ex = explain(vm_tables, both(100.0, 108.0))
    mg = ex[(ex["bench"] == "mg") & (ex["variant"] == "default")]
    assert mg["case_verdict"].iloc[0].startswith("Spearman"), mg["case_verdict"].iloc[0]


def test_shared_loads_follow_npb():
    """CG: the gathered p(colidx), 1 load in 3 of the mat-vec; MG: 2 halo planes of n/T."""
    from numaplace.tables.explain import shared_share
    assert shared_share("cg", "B", 4) == pytest.approx(1 / 3)
    assert shared_share("mg", "W", 2) == pytest.approx(2 * 2 / 128)
    assert shared_share("mg", "S", 32) == 1.0                        # capped: every plane is a halo


def test_the_answer_says_why_in_one_line(vm_tables, moved_tables):
    """The answer's 'why' line (report/answer.py): flat matrices say no difference is
    expected; pages moved by hand are named with their cause; no matrices: no line (the
    machine line already says which experiment to add)."""
    from numaplace.report.answer import why_lines
    (flat,) = why_lines(explain(vm_tables, both(95.0, 96.0)))
    assert flat.startswith("why (memory matrices): ") and "where the matrices expect no difference" in flat
    (moved,) = why_lines(explain(moved_tables, both(100.0, 200.0)))
    assert "not explained: MG.W 1/1 on 0,3 · pinned threads (migration: pages moved during the run)" in moved, moved
    assert why_lines(vm_tables["explain"]) == []
    (ranked,) = why_lines(explain(vm_tables, both(100.0, 200.0)))
    assert "Spearman" in ranked


def test_a_flat_matrix_draws_no_explained_points(tmp_path):
    """Issue 41.9: where the matrices are flat (or 1 x 1) the model expects no difference
    and explains nothing: its points are grey, never the green "explained"."""
    import pandas as pd
    from numaplace.figures import plots
    g = pd.DataFrame([{"bench": "cg", "class": "S", "variant": "default", "threads": 2, "placement": p,
                       "predicted": 100.0, "predicted_unit": "ns per load", "time_median_s": t, "time_min_s": t,
                       "time_max_s": t, "fitted_s": float("nan"), "explained": "flat",
                       "case_verdict": "no difference expected"} for p, t in (("a", 1.0), ("b", 1.2))])
    w = plots._Writer(tmp_path / "fig", plots.Section("figures", {"formats": ["svg"]}).whole())
    plots.explain_figures(g, w)
    svg = next((tmp_path / "fig").rglob("*.svg")).read_text()
    # matplotlib's SVG keeps each text as a comment beside its glyphs
    assert "<!-- no difference expected (flat matrices) -->" in svg and "<!-- explained -->" not in svg


# -- the model from a few synthetic rows ---------------------------------------------------
# The matrices read from memory_matrix.csv, the access model, the table's rows and each
# case's verdict, on tables built from a few synthetic rows with only the columns explain
# reads. Several pin what the mutation run left alive (tests/benchmarks/mutation-survivors.md).

BIG, SMALL = 1 << 28, 1 << 20


def cell(bench, r, m, v, via="membind", mode="serial", size=BIG):
    return {"bench": bench, "mode": mode, "size_bytes": size, "via": via, "reader_node": r, "memory_node": m,
            "median": v}


def test_matrices_read_the_largest_size_and_prefer_membind():
    """memlat cells of any mode, membw's serial (or mode-less) ones; the largest size of
    each bench; a membind cell over a first-touch one; bandwidth as s per GB."""
    m = pd.DataFrame([
        cell("memlat", 0, 1, 150.0),                                 # membind, listed first: still wins
        cell("memlat", 0, 1, 999.0, via="first-touch"),
        cell("memlat", 1, 0, 120.0, via="first-touch"),              # only first touch measured it
        cell("memlat", 0, 0, 90.0, mode="parallel"),                 # memlat: every mode counts
        cell("memlat", 1, 1, 1.0, size=SMALL),                       # a cache size: left out
        cell("memlat", 1, 1, 7.0, via="other"),                      # neither way: left out
        cell("membw", 0, 0, 2000.0, size=BIG // 2),
        cell("membw", 0, 1, 1000.0, mode=None, size=BIG // 2),      # no mode: serial
        cell("membw", 1, 1, 10.0, mode="parallel", size=BIG),       # parallel bandwidth: left out
        cell("membw", 1, 0, 1.0, size=SMALL),
        cell("stream", 0, 0, 5.0),
    ])
    assert matrices(m) == {
        "memlat": {"cells": {(0, 1): 150.0, (1, 0): 120.0, (0, 0): 90.0}, "size_bytes": BIG, "unit": "ns per load"},
        "membw": {"cells": {(0, 0): 0.5, (0, 1): 1.0}, "size_bytes": BIG // 2, "unit": "s per GB"}}
    cells = matrices(m)["memlat"]["cells"]
    assert all(type(k) is int for key in cells for k in key)
    assert type(matrices(m)["memlat"]["size_bytes"]) is int


def test_matrices_of_one_bench_or_none():
    only_bw = pd.DataFrame([cell("membw", 0, 0, 4000.0)])                 # no memlat: membw still read
    assert matrices(only_bw) == {"membw": {"cells": {(0, 0): 0.25}, "size_bytes": BIG, "unit": "s per GB"}}
    assert matrices(None) == {} and matrices(pd.DataFrame()) == {}
    neither = pd.DataFrame([cell("memlat", 0, 0, 1.0, via="other")])   # rows, but no cell: no matrix
    assert matrices(neither) == {}


def test_shared_share_of_an_unknown_class_is_none():
    assert ex.shared_share("mg", "X", 4) == 0.0
    assert ex.shared_share("cg", "X", 4) == pytest.approx(1 / 3)
    assert ex.shared_share("mg", "S", 16) == 1.0                         # 2*16/32: exactly every plane
    assert ex.shared_share("mg", "A", 8) == pytest.approx(16 / 256)


def test_access_shares_exactly():
    """Every reader's mix as computed, zero entries included: a node without pages is read
    nowhere, a thread node short of pages reads the rest where the surplus is."""
    assert access_shares({0: 1, 1: 1}, {0: 1.0, 1: 0.0}, owner=True, shared=0.0) == \
        {0: {0: 1.0}, 1: {1: 0.0, 0: 1.0}}
    # shared loads spread as the pages are; the own part of a node short by half, half local
    out = access_shares({0: 1, 1: 1}, {0: 0.75, 1: 0.25}, owner=True, shared=0.5)
    assert out[0] == pytest.approx({0: 0.375 + 0.5, 1: 0.125})
    assert out[1] == pytest.approx({0: 0.375 + 0.25, 1: 0.125 + 0.25})
    # a page node with no threads: all of it surplus
    out = access_shares({0: 2}, {0: 0.5, 2: 0.5}, owner=True, shared=0.0)
    assert out == {0: {0: 0.5, 2: 0.5}}
    # without an owner a thread reads as the pages are, shared or not
    out = access_shares({0: 1, 1: 3}, {0: 0.25, 1: 0.75}, owner=False, shared=0.2)
    assert list(out) == [0, 1] and all(out[n] == pytest.approx({0: 0.25, 1: 0.75}) for n in out)


def test_a_node_listed_without_threads_reads_nothing_of_its_own():
    assert access_shares({0: 1, 1: 0}, {0: 1.0}, owner=True, shared=0.0) == {0: {0: 1.0}, 1: {1: 0.0, 0: 0.0}}


def test_a_zero_share_needs_no_cell():
    """A reader with no loads to a node (its own node had no pages) is costed without that
    node's cell."""
    mat = {"cells": {(0, 0): 100.0, (1, 0): 200.0}}
    assert predicted_cost({0: 1, 1: 1}, {0: 1.0}, mat, owner=True, shared=0.0) == 200.0
    assert predicted_cost({0: 1, 1: 1}, {0: 1.0, 1: 0.0}, mat, owner=True, shared=0.0) == 200.0


def test_the_slowest_thread_counts_wherever_it_is_listed():
    mat = {"cells": {(0, 0): 300.0, (1, 1): 100.0}}
    assert predicted_cost({0: 1, 1: 1}, {0: 0.5, 1: 0.5}, mat, owner=True, shared=0.0) == 300.0


def test_counts_words_owner_and_group_rows():
    assert ex._counts("0:1.5,3:2") == {0: 1.5, 3: 2.0}
    assert ex._counts(None) == {} and ex._counts("") == {} and ex._counts(float("nan")) == {}
    assert ex._words({3: 2.0, 0: 1.5}) == "0:1.5,3:2"
    assert ex._owner(None, "default") and ex._owner("local", "default")
    assert not ex._owner("local", "serial-init") and not ex._owner("interleave 0-1", "default")
    assert not ex._owner("membind 1", "default")
    df = pd.DataFrame([{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}])
    assert ex._of(df, {"a": 1, "b": "x"}).index.tolist() == [0]
    assert ex._of(df, {"a": 1}).index.tolist() == [0, 1]
    empty = pd.DataFrame()
    assert ex._of(empty, {"a": 1}) is empty


def flags(**kw):
    return {"memory_share_on_allowed": 1.0, "fidelity_memory": "ok", "fidelity_migration": "ok",
            "shared_cpus": False, **kw}


def test_the_causes_the_records_saw():
    cause = lambda *rows: ex._cause(pd.DataFrame([flags(**r) for r in rows]))
    assert cause({}) == []
    assert cause({"memory_share_on_allowed": 0.98}) == ["spill: pages outside the placement's nodes"]
    assert cause({"memory_share_on_allowed": 0.99}) == []
    assert cause({"memory_share_on_allowed": np.nan}, {}) == []
    assert cause({"fidelity_memory": "drift"}) == ["spill: pages outside the placement's nodes"]
    assert cause({"fidelity_migration": "drift"}) == ["migration: pages moved during the run"]
    assert cause({"shared_cpus": None}, {}) == []
    assert cause({}, {"shared_cpus": True}) == ["foreign load on the placement's CPUs"]
    assert cause({"memory_share_on_allowed": 0.5, "fidelity_migration": "drift", "shared_cpus": True}) == [
        "spill: pages outside the placement's nodes", "migration: pages moved during the run",
        "foreign load on the placement's CPUs"]


# --- whole tables: one case of placements, each with its runs' thread nodes and pages ---

KEY = {"bench": "mg", "class": "W", "variant": "default", "threads": 2}


def tables(placements, bench="mg", cls="W", threads=2, variant="default", extra_summary=()):
    """summary, runs and numa_pages of one case; placements: (id, thread_nodes, {node:
    share}, (min, median, max), memory, run flags)."""
    key = {"bench": bench, "class": cls, "variant": variant, "threads": threads}
    summary, runs, pages = [], [], []
    for pid, tn, shares, (lo, med, hi), memory, fl in placements:
        summary.append({**key, "placement_id": pid, "placement": f"label {pid}", "memory": memory, "n": 2,
                        "time_median_s": med, "time_min_s": lo, "time_max_s": hi})
        for i in (1, 2):
            runs.append({**key, "placement_id": pid, "run_id": f"{pid}.r{i}", "status": "ok", "current": True,
                         "thread_nodes": tn, **flags(**fl)})
        pages += [{**key, "placement_id": pid, "level": "group", "node": n, "share": s} for n, s in shares.items()]
        pages.append({**key, "placement_id": pid, "level": "run", "node": 9, "share": 1.0})   # not a group row
    summary += list(extra_summary)
    return pd.DataFrame(summary), pd.DataFrame(runs), pd.DataFrame(pages)


def lat_bw(local=100.0, remote=200.0, nodes=2):
    lat = [cell("memlat", r, m, local if r == m else remote) for r in range(nodes) for m in range(nodes)]
    bw = [cell("membw", r, m, 1e3 * 100.0 / (local if r == m else remote)) for r in range(nodes) for m in range(nodes)]
    return pd.DataFrame(lat + bw)


def test_the_rows_of_a_case_and_its_line():
    """Three MG placements, remote pages 2x local (bandwidth: 1 s/GB local, 2 remote):
    local (1.0), half remote (1.5), all remote (2.0) predicted; measured 10, 15.5, 20 s: the
    line is 10.25 s per unit - 0.25, every placement within 10 % of it."""
    s, r, p = tables([
        ("loc", "0:2", {0: 1.0}, (9.9, 10.0, 10.1), "local", {}),
        ("half", "0:1,1:1", {0: 0.5, 1: 0.5}, (15.4, 15.5, 15.6), "interleave 0-1", {}),
        ("far", "0:2", {1: 1.0}, (19.9, 20.0, 20.1), "membind 1", {})], cls="S")
    shared = 4 / 32
    out = explain_table(s, r, p, lat_bw())
    assert list(out.columns) == COLUMNS and list(out.index) == [0, 1, 2]
    rows = out.set_index("placement_id")
    assert rows.loc["half", "thread_nodes"] == "0:1,1:1" and rows.loc["half", "page_shares"] == "0:0.500,1:0.500"
    assert rows.loc["far", "page_shares"] == "1:1.000"
    assert rows.loc["loc", "shared_share"] == round(shared, 4) == 0.125
    assert rows.loc["loc", "matrix"] == f"membw at {BIG} B" and rows.loc["loc", "predicted_unit"] == "s per GB"
    assert rows.loc["loc", "placement"] == "label loc" and rows.loc["far", "memory"] == "membind 1"
    assert rows["predicted"].tolist() == pytest.approx([1.0, 1.5, 2.0])
    assert rows["predicted_rank"].tolist() == [1, 2, 3] and rows["measured_rank"].tolist() == [1, 2, 3]
    assert str(out["predicted_rank"].dtype) == "Int64" and str(out["threads"].dtype) == "Int64"
    assert rows["fitted_s"].tolist() == pytest.approx([10.0, 15.0, 20.0], abs=0.2)
    assert rows.loc["half", "off_pct"] == pytest.approx(100 * (15.5 - rows.loc["half", "fitted_s"]) /
                                                         rows.loc["half", "fitted_s"])
    assert set(rows["explained"]) == {"yes"} and set(rows["cause"]) == {""}
    assert rows["case_spearman"].tolist() == pytest.approx([1.0] * 3)
    verdict = rows["case_verdict"].iloc[0]
    assert verdict == f"Spearman +1.00 over 3 placements (p {rows['case_spearman_p'].iloc[0]:.2g}); " \
                      "every placement on the line"
    assert (out["time_min_s"].tolist(), out["time_max_s"].tolist()) == ([9.9, 15.4, 19.9], [10.1, 15.6, 20.1])


def test_cg_reads_latency_and_the_owner_model():
    """CG: memlat's ns per load, a third shared. Local memory with its pages all on node 1
    while the threads are on 0: the own part lands where the pages are."""
    s, r, p = tables([
        ("loc", "0:2", {0: 1.0}, (1.0, 1.0, 1.0), None, {}),
        ("away", "0:2", {1: 1.0}, (2.0, 2.0, 2.0), "local", {})], bench="cg", cls="A")
    out = explain_table(s, r, p, lat_bw(100.0, 300.0)).set_index("placement_id")
    assert out.loc["loc", "predicted"] == 100.0 and out.loc["away", "predicted"] == 300.0
    assert out.loc["loc", "predicted_unit"] == "ns per load" and out.loc["loc", "matrix"] == f"memlat at {BIG} B"
    assert out.loc["loc", "shared_share"] == 0.3333


def test_predictions_are_rounded_to_six_digits():
    s, r, p = tables([("a", "0:1", {0: 1 / 3, 1: 2 / 3}, (1, 1, 1), "interleave 0-1", {}),
                      ("b", "0:1", {0: 1.0}, (2, 2, 2), "interleave 0-1", {})], bench="cg", cls="A", threads=1)
    out = explain_table(s, r, p, lat_bw(100.0, 200.0))
    assert out["predicted"].iloc[0] == 166.667


def test_only_measured_npb_groups_get_a_row():
    s, r, p = tables([("a", "0:2", {0: 1.0}, (1, 1, 1), None, {})], extra_summary=[
        {**KEY, "bench": "stream", "placement_id": "s", "placement": "s", "memory": None, "n": 2,
         "time_median_s": 1.0, "time_min_s": 1.0, "time_max_s": 1.0},
        {**KEY, "placement_id": "none", "placement": "none", "memory": None, "n": 0,
         "time_median_s": np.nan, "time_min_s": np.nan, "time_max_s": np.nan},
        {**KEY, "placement_id": "nan", "placement": "nan", "memory": None, "n": np.nan,
         "time_median_s": np.nan, "time_min_s": np.nan, "time_max_s": np.nan}])
    out = explain_table(s, r, p, lat_bw())
    assert out["placement_id"].tolist() == ["a"]
    assert out["case_verdict"].tolist() == ["one placement with a prediction: nothing to rank"]
    assert out["explained"].isna().all() and out["fitted_s"].isna().all()
    empty = explain_table(s[s["bench"] == "stream"], r, p, lat_bw())
    assert list(empty.columns) == COLUMNS and empty.empty


def test_a_group_without_runs_or_pages_has_no_prediction():
    """Runs not ok or not current, or a group without page rows: no prediction, and the
    case has one placement with one."""
    s, r, p = tables([("a", "0:2", {0: 1.0}, (1, 1, 1), None, {}),
                      ("b", "0:2", {0: 1.0}, (2, 2, 2), None, {}),
                      ("c", "0:2", {}, (3, 3, 3), None, {}),
                      ("d", "0:2", {0: 1.0}, (4, 4, 4), None, {})])
    r.loc[r["placement_id"] == "b", "status"] = "failed"
    r.loc[r["placement_id"] == "d", "current"] = False
    out = explain_table(s, r, p, lat_bw()).set_index("placement_id")
    assert out["predicted"].notna().tolist() == [True, False, False, False]
    assert out.loc["b", "thread_nodes"] == "" and out.loc["c", "page_shares"] == ""
    assert out.loc["a", "case_verdict"] == "one placement with a prediction: nothing to rank"
    assert out["measured_rank"].tolist() == [1, 2, 3, 4]
    assert out["predicted_rank"].isna().tolist() == [False, True, True, True]


def test_a_missing_share_is_left_out_of_the_pages():
    s, r, p = tables([("a", "0:2", {0: 1.0, 1: np.nan}, (1, 1, 1), None, {})])
    out = explain_table(s, r, p, lat_bw())
    assert out["page_shares"].tolist() == ["0:1.000"] and out["predicted"].tolist() == [1.0]


def test_no_matrix_for_the_bench_says_which_to_add():
    s, r, p = tables([("a", "0:2", {0: 1.0}, (1, 1, 1), None, {}), ("b", "0:2", {1: 1.0}, (2, 2, 2), None, {})])
    only_lat = lat_bw()[lambda d: d["bench"] == "memlat"]
    out = explain_table(s, r, p, only_lat)
    assert set(out["case_verdict"]) == {NO_MATRICES}
    assert out["predicted"].isna().all() and out["matrix"].isna().all() and out["predicted_unit"].isna().all()
    assert out["explained"].isna().all() and set(out["cause"]) == {""}
    assert out["measured_rank"].tolist() == [1, 2]
    # the numbers of a case without a line stay numbers (NaN), not empty objects
    for c in ("fitted_s", "off_pct", "case_spearman", "case_spearman_p"):
        assert out[c].dtype == float and out[c].isna().all(), c


def test_flat_is_within_five_percent_of_the_least():
    """Predictions 1.0 and 1.05: flat (no difference expected); 1.0 and 1.06: ranked."""
    def case(remote):
        s, r, p = tables([("a", "0:2", {0: 1.0}, (2.0, 2.0, 2.0), None, {}),
                          ("b", "0:2", {1: 1.0}, (2.0, 3.0, 4.0), None, {})])
        return explain_table(s, r, p, lat_bw(100.0, 100.0 * remote))
    flat = case(1.05)
    assert set(flat["explained"]) == {"flat"} and flat["case_spearman"].isna().all()
    assert flat["case_verdict"].iloc[0] == ("no difference expected: the matrices give these placements costs "
                                            "within 5% of each other; measured spread 50.0%")
    assert flat["fitted_s"].isna().all() and flat["off_pct"].isna().all()
    assert case(1.06)["case_verdict"].iloc[0].startswith("Spearman +1.00 over 2 placements")


def test_equal_medians_cannot_be_ranked():
    s, r, p = tables([("a", "0:2", {0: 1.0}, (1.0, 5.0, 9.0), None, {}),
                      ("b", "0:2", {1: 1.0}, (1.0, 5.0, 9.0), None, {})])
    out = explain_table(s, r, p, lat_bw())
    assert out["case_verdict"].iloc[0] == "every placement measured the same median: nothing to rank"
    assert out["case_spearman"].isna().all() and out["explained"].isna().all()


def off_line(per_node_threads=2, bench="mg", lo_hi=(30.0, 31.0), flags_c=None, memory=None):
    """Four placements predicted 1, 1.5, 2 (pages all remote on node 1) and a fourth at 1.5
    measured far off the line of the others."""
    tn = f"0:{per_node_threads}" if per_node_threads > 1 else "0:1,1:1"
    return tables([
        ("a", "0:2", {0: 1.0}, (10.0, 10.0, 10.0), memory, {}),
        ("b", "0:1,1:1", {0: 0.5, 1: 0.5}, (15.0, 15.0, 15.0), "interleave 0-1", {}),
        ("c", tn, {0: 0.5, 1: 0.5}, (lo_hi[0], (lo_hi[0] + lo_hi[1]) / 2, lo_hi[1]), "interleave 0-1",
         flags_c or {}),
        ("d", "0:2", {1: 1.0}, (20.0, 20.0, 20.0), "membind 1", {})], bench=bench, cls="S")


def test_a_placement_off_the_line_is_named_with_what_was_seen():
    s, r, p = off_line(flags_c={"memory_share_on_allowed": 0.5})
    out = explain_table(s, r, p, lat_bw()).set_index("placement_id")
    assert out["explained"].tolist() == ["yes", "no", "no", "yes"] or out.loc["c", "explained"] == "no"
    assert out.loc["c", "explained"] == "no"
    assert out.loc["c", "cause"] == ("spill: pages outside the placement's nodes; "
                                     "contention: 2 threads share a node's bandwidth")
    assert out.loc["c", "off_pct"] > 10
    assert out.loc["a", "case_verdict"].endswith("; not explained: " + ", ".join(
        f"label {i}" for i in out.index[out["explained"] == "no"]))


def test_contention_is_named_for_mg_only_and_above_the_line_only():
    s, r, p = off_line(per_node_threads=1)                       # 1 thread per node: no contention
    out = explain_table(s, r, p, lat_bw()).set_index("placement_id")
    assert out.loc["c", "cause"] == "not seen in the records (not memory placement alone)"
    s, r, p = off_line(bench="cg")
    out = explain_table(s, r, p, lat_bw()).set_index("placement_id")
    assert out.loc["c", "explained"] == "no" and "contention" not in out.loc["c", "cause"]
    s, r, p = off_line(lo_hi=(0.5, 0.7))                         # below the line: not contention
    out = explain_table(s, r, p, lat_bw()).set_index("placement_id")
    assert out.loc["c", "explained"] == "no" and out.loc["c", "off_pct"] < -10
    assert "contention" not in out.loc["c", "cause"]


def test_off_the_line_but_within_its_own_range_is_explained():
    s, r, p = off_line(lo_hi=(5.0, 60.0))
    out = explain_table(s, r, p, lat_bw()).set_index("placement_id")
    assert abs(out.loc["c", "off_pct"]) > 10 and out.loc["c", "explained"] == "yes"


def test_ten_percent_off_is_the_edge():
    """One placement off the line by just under and just over 10 % of the fitted value
    (its range a point)."""
    def case(t):
        s, r, p = tables([("a", "0:2", {0: 1.0}, (10.0, 10.0, 10.0), None, {}),
                          ("b", "0:1,1:1", {0: 0.5, 1: 0.5}, (t, t, t), "interleave 0-1", {}),
                          ("d", "0:2", {1: 1.0}, (20.0, 20.0, 20.0), "membind 1", {})], cls="S")
        return explain_table(s, r, p, lat_bw()).set_index("placement_id")
    near, far = case(17.36), case(17.38)           # the line through (1, 10), (1.5, t), (2, 20)
    assert 9.9 < near.loc["b", "off_pct"] < 10 and near.loc["b", "explained"] == "yes"
    assert 10 < far.loc["b", "off_pct"] < 10.1 and far.loc["b", "explained"] == "no"


def test_moved_pages_are_not_explained_whatever_the_line():
    s, r, p = tables([("a", "0:2", {0: 1.0}, (10.0, 10.0, 10.0), None,
                       {"fidelity_migration": "drift", "fidelity_memory": "drift"}),
                      ("d", "0:2", {1: 1.0}, (20.0, 20.0, 20.0), "membind 1", {})], cls="S")
    out = explain_table(s, r, p, lat_bw()).set_index("placement_id")
    assert out["explained"].tolist() == ["no", "yes"]
    assert out.loc["a", "cause"] == "spill: pages outside the placement's nodes; migration: pages moved during the run"
    assert out.loc["a", "case_verdict"].endswith("; not explained: label a")
    # flat matrices too: the moved one is still not explained
    out = explain_table(s, r, p, lat_bw(100.0, 100.0)).set_index("placement_id")
    assert out["explained"].tolist() == ["no", "flat"]
    assert out.loc["a", "case_verdict"].endswith("; not explained: label a")
    # and a moved placement without a prediction stays as it was
    s2, r2, p2 = tables([("a", "0:2", {}, (10.0, 10.0, 10.0), None, {"fidelity_migration": "drift"}),
                         ("d", "0:2", {1: 1.0}, (20.0, 20.0, 20.0), "membind 1", {})], cls="S")
    out = explain_table(s2, r2, p2, lat_bw()).set_index("placement_id")
    assert pd.isna(out.loc["a", "explained"]) and out.loc["a", "cause"] == ""


def on_a_line(medians, ranges, fitted):
    """CG on one thread, its pages all on node k (membind): predicted k+1 ns exactly; the
    medians are chosen so that the least-squares line is `fitted` to the last bit."""
    n = len(medians)
    lat = pd.DataFrame([cell("memlat", 0, k, float(k + 1)) for k in range(n)])
    s, r, p = tables([(f"p{k}", "0:1", {k: 1.0}, (lo, med, hi), f"membind {k}", {})
                      for k, (med, (lo, hi)) in enumerate(zip(medians, ranges))], bench="cg", cls="A", threads=1)
    out = explain_table(s, r, p, lat).set_index("placement_id")
    assert out["predicted"].tolist() == [float(k + 1) for k in range(n)]
    # exact on this machine's BLAS, to 1e-12 on another's (Debian 13's numpy: 80.00000000000004)
    assert out["fitted_s"].tolist() == pytest.approx(fitted, rel=1e-12)
    return out


def test_exactly_ten_percent_off_is_explained():
    """p0 measured 88 s where the line says 80: 10 % off, not more."""
    med = [88.0, 116.0, 152.0, 196.0, 248.0]
    out = on_a_line(med, [(m, m) for m in med], [80.0, 120.0, 160.0, 200.0, 240.0])
    assert out.loc["p0", "off_pct"] == pytest.approx(10.0, rel=1e-12) and out.loc["p0", "explained"] == "yes"


def test_a_line_through_a_runs_min_or_max_is_within_its_range():
    """p0 37.5 % and p1 25 % off the line, but the line meets p0's fastest run and p1's
    slowest: both explained; p2 and p3, their ranges a point, are not."""
    out = on_a_line([11.0, 9.0, 13.0, 23.0], [(8.0, 12.0), (8.0, 12.0), (13.0, 13.0), (23.0, 23.0)],
                    [8.0, 12.0, 16.0, 20.0])
    assert out["off_pct"].tolist() == pytest.approx([37.5, -25.0, -18.75, 15.0], rel=1e-12)
    assert out["explained"].tolist() == ["yes", "yes", "no", "no"]
    assert out.loc["p0", "case_verdict"].endswith("; not explained: label p2, label p3")


def test_a_study_without_records_has_an_empty_table():
    """Only planned placements (n 0) and no runs or pages at all: tables without columns."""
    s = pd.DataFrame([{**KEY, "placement_id": "a", "placement": "a", "memory": None, "n": 0,
                       "time_median_s": np.nan, "time_min_s": np.nan, "time_max_s": np.nan}])
    out = explain_table(s, pd.DataFrame(), pd.DataFrame(), None)
    assert list(out.columns) == COLUMNS and out.empty


def test_first_touch_pages_are_the_threads_own():
    """Threads on nodes 0 and 1, pages half on each: under first touch (memory local,
    default variant) a thread's own loads are local (a third shared: 1/3 x 200 + 2/3 x 100
    ns); interleaved, or initialised serially, half are remote (200 ns)."""
    spread = lambda pid, memory: (pid, "0:1,1:1", {0: 0.5, 1: 0.5}, (1.0, 1.0, 1.0), memory, {})
    s, r, p = tables([spread("local", "local"), spread("inter", "interleave 0-1")], bench="cg", cls="A")
    s2, r2, p2 = tables([spread("local", "local")], bench="cg", cls="A", variant="serial-init")
    out = explain_table(pd.concat([s, s2]), pd.concat([r, r2]), pd.concat([p, p2]), lat_bw(100.0, 300.0))
    got = {(v, i): x for v, i, x in zip(out["variant"], out["placement_id"], out["predicted"])}
    assert got == {("default", "local"): 133.333, ("default", "inter"): 200.0, ("serial-init", "local"): 200.0}


def test_a_placement_without_a_memory_policy_is_first_touch_even_as_nan():
    """pandas stores a missing memory word beside others as NaN: still no policy, so each
    thread first-touches its own partition (the model's owner rule)."""
    from numaplace.tables.explain import _owner
    assert _owner(float("nan"), "default") and _owner(None, "default") and _owner("local", "default")
    assert not _owner(float("nan"), "serial-init") and not _owner("interleave", "default")


def test_owner_pages_beyond_a_nodes_share_stay_local_and_read_nothing_remote():
    """First touch, node 0 holding more than its threads' share (0.6 of 0.5): its threads read
    their own pages all locally (no negative shortfall), node 1's threads read theirs where
    they landed, in proportion to each node's surplus."""
    mix = access_shares({0: 1, 1: 1}, {0: 0.6, 2: 0.4}, owner=True, shared=0.0)
    assert mix[0] == pytest.approx({0: 1.0, 2: 0.0})
    assert mix[1] == pytest.approx({1: 0.0, 0: 0.2, 2: 0.8})
    cells = {"cells": {(0, 0): 100.0, (0, 2): 300.0, (1, 0): 200.0, (1, 1): 100.0, (1, 2): 300.0}}
    assert predicted_cost({0: 1, 1: 1}, {0: 0.6, 2: 0.4}, cells, owner=True, shared=0.0) == pytest.approx(280.0)


def test_tied_medians_share_the_best_rank():
    """Two placements measured alike rank 1 and 1, the next 3 (ranked as sports tables rank)."""
    s, r, p = tables([("a", "0:2", {0: 1.0}, (9.0, 10.0, 11.0), None, {}),
                      ("b", "0:2", {1: 1.0}, (9.0, 10.0, 11.0), "membind 1", {}),
                      ("c", "0:1,1:1", {0: 0.5, 1: 0.5}, (19.0, 20.0, 21.0), "interleave 0-1", {})])
    out = explain_table(s, r, p, lat_bw()).set_index("placement_id")
    assert out["measured_rank"].tolist() == [1, 1, 3]
    assert out["predicted_rank"].tolist() == [1, 3, 2]


def test_a_placement_without_a_prediction_is_left_unjudged_on_the_line():
    """A placement whose pages lie on a node the matrices lack gets no prediction, so no
    fitted value and no explained/unexplained word, while the others are judged."""
    s, r, p = tables([("a", "0:2", {0: 1.0}, (9.9, 10.0, 10.1), None, {}),
                      ("b", "0:1,1:1", {0: 0.5, 1: 0.5}, (14.9, 15.0, 15.1), "interleave 0-1", {}),
                      ("c", "0:2", {1: 1.0}, (19.9, 20.0, 20.1), "membind 1", {}),
                      ("d", "0:2", {5: 1.0}, (29.0, 30.0, 31.0), "membind 5", {})])
    out = explain_table(s, r, p, lat_bw()).set_index("placement_id")
    assert pd.isna(out.loc["d", "predicted"]) and pd.isna(out.loc["d", "fitted_s"])
    assert out.loc["d", "explained"] is None and pd.isna(out.loc["d", "predicted_rank"])
    assert out.loc[["a", "b", "c"], "explained"].tolist() == ["yes", "yes", "yes"]
    assert out.loc["d", "measured_rank"] == 4
