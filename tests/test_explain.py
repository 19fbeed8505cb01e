"""The explain model (numaplace.tables.explain): each NPB placement's memory cost from node
× node matrices, on real records (the NUMA VM fixtures) and on the reference thesis's
X4600 numbers (tests/benchmarks/explain_x4600.py builds the same matrix)."""
from pathlib import Path

import pandas as pd
import pytest

from numaplace.tables import aggregate
from numaplace.tables.explain import NO_MATRICES, access_shares, explain_table, predicted_cost

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
