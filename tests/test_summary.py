"""summary.md section by section (numaplace.report.summary): every number a section prints,
pinned on small hand-made tables shaped like the real ones (runs.csv, summary.csv,
best_worst.csv): the settings that differ between runs, the counts, the cut at LIST_MAX,
the per-placement statistics and the figures' links."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from numaplace.report import summary as sm

pytestmark = pytest.mark.unit


def runs_table(n=4, **cols):
    """n current ok runs of CG class A on one placement, as runs.csv has them."""
    base = {"bench": "cg", "class": "A", "variant": "default", "threads": 2, "placement_id": "p",
            "placement": "1/1 on 0,1", "current": True, "status": "ok", "attempt": 1, "fidelity": "ok"}
    rows = [{**base, "run_id": f"cg.A.default.p.r{i}"} for i in range(1, n + 1)]
    df = pd.DataFrame(rows)
    for k, v in cols.items():
        df[k] = v
    return df


def lines(out):
    """A section's lines as they are written to summary.md (tables are one item of many lines)."""
    return "\n".join(out).splitlines()


# -- markdown helpers ------------------------------------------------------------------

def test_a_markdown_table_escapes_pipes_and_leaves_missing_cells_empty():
    """A placement label with '|' or a reason over two lines must not break the table's columns."""
    df = pd.DataFrame([{"a": "x|y", "b": np.nan, "c": "two\nlines"}, {"a": None, "b": 1.5, "c": pd.NA}])
    assert sm.md_table(df, [("A", "a"), ("B", "b"), ("C", lambda r: r["c"])]).splitlines() == [
        "| A | B | C |", "|---|---|---|", "| x\\|y |  | two lines |", "|  | 1.5 |  |"]


def test_a_reason_is_cut_at_its_width_with_an_ellipsis():
    """A reason of exactly the width is whole; one longer is cut to width characters, the last an ellipsis."""
    assert sm._short("a" * 200) == "a" * 200
    assert sm._short("a" * 201) == "a" * 199 + "…"
    assert sm._short("b  c\n d", 10) == "b c d"
    assert sm._short(float("nan")) == "" and sm._short(None) == ""


def test_a_list_longer_than_list_max_says_how_many_more():
    """200 rows are listed whole; 203 are cut to 200 with '… and 3 more'."""
    df = pd.DataFrame({"x": range(sm.LIST_MAX)})
    assert sm._limited(df, "runs") == (df, "") or sm._limited(df, "runs")[1] == ""
    head, more = sm._limited(pd.DataFrame({"x": range(203)}), "runs")
    assert len(head) == 200 and list(head["x"])[-1] == 199
    assert more == "\n\n… and 3 more runs (see the CSV tables).\n"


# -- the answer's table ---------------------------------------------------------------

def bw_row(**kw):
    r = {"bench": "cg", "class": "A", "variant": "default", "threads": 4, "best_placement": "2/2 on 0,1",
         "best_placement_id": "b", "worst_placement": "4 on 0 · membind 1", "worst_placement_id": "w",
         "best_median_s": 5.1, "worst_median_s": 6.5, "best_n": 3, "worst_n": 2, "improvement_pct": 21.538,
         "below_resolution": False, "differs": "yes", "mwu_p": 0.1, "rests_on_drift": False,
         "best_n_drift": 0, "worst_n_drift": 0}
    r.update(kw)
    return r


def test_the_answer_rows_say_cost_noise_and_drift_per_case():
    """Per case: the cost, beyond/within noise or too few runs, drift; a one-placement case is left out."""
    bw = pd.DataFrame([bw_row(), bw_row(threads=2, differs="unknown", rests_on_drift=True, improvement_pct=39.29),
                       bw_row(threads=1, differs="no", below_resolution=True),
                       bw_row(threads=8, worst_placement_id="b")])
    rows = sm.answer_rows(bw)
    assert rows == [
        {"case": "CG class A · default · 4 threads", "best": "2/2 on 0,1", "worst": "4 on 0 · membind 1",
         "cost": "21.5%", "noise": "beyond noise", "drift": ""},
        {"case": "CG class A · default · 2 threads", "best": "2/2 on 0,1", "worst": "4 on 0 · membind 1",
         "cost": "39.3%", "noise": "too few runs to tell", "drift": "rests on drifted runs"},
        {"case": "CG class A · default · 1 thread", "best": "2/2 on 0,1", "worst": "4 on 0 · membind 1",
         "cost": "below resolution", "noise": "within noise", "drift": ""}]
    same = pd.DataFrame([{"placement_id": "b", "cpus": "0-3", "memory": "local"},
                         {"placement_id": "w", "cpus": "0-3", "memory": "local"}])
    assert sm.answer_rows(bw.iloc[:1], same)[0]["cost"] == \
        "21.5% (same CPUs and memory: binding only, not a placement effect)"
    assert sm._cost(bw_row(worst_placement_id="b")) == "one placement: nothing to compare"


def test_the_answer_markdown_lists_the_lines_then_the_table_and_the_best_worst_figures():
    """The answer's lines first, then the table, then each best-vs-worst figure (PNG where drawn, else SVG)."""
    bw = pd.DataFrame([bw_row()])
    manifest = pd.DataFrame([{"kind": "best_worst", "title": "BW", "svg": "best_worst/cg.A.default.svg", "png": np.nan},
                             {"kind": "duration", "title": "D", "svg": "duration/x.svg", "png": "duration/x.png"},
                             {"kind": "best_worst", "title": "BW2", "svg": "best_worst/y.svg", "png": "best_worst/y.png"}])
    out = sm.answer_markdown(bw, manifest, ["machine: 2 NUMA nodes"])
    assert out[:4] == ["## The answer", "", "- machine: 2 NUMA nodes", ""]
    assert "| CG class A · default · 4 threads | 2/2 on 0,1 | 4 on 0 · membind 1 | 21.5% | beyond noise |  |" in lines(out)
    assert [x for x in out if x.startswith("![")] == ["![BW](figures/best_worst/cg.A.default.svg)",
                                                       "![BW2](figures/best_worst/y.png)"]
    assert sm.answer_markdown(bw, None, [], npb=False) == ["## The answer", ""]
    assert sm.answer_markdown(bw.iloc[0:0], None)[-2].startswith("No comparison yet")


# -- the machine as the kernel saw it ----------------------------------------------------

def test_a_setting_that_differs_lists_the_runs_off_the_most_common_value():
    """3 runs with THP always, 1 with never: 'never' is the odd one and its run is listed
    (the most common value is the reference); a setting alike in every run says 'none'."""
    runs = runs_table(4, sys_thp_enabled=["always", "always", "never", "always"],
                      sys_numa_balancing=[0, 0, 0, 0], sys_smt_active=[np.nan] * 4)
    out = sm.system_markdown(runs)
    table = [x for x in lines(out) if x.startswith("| ")]
    assert table == [
        "| setting | value | runs not at the most common value |",
        "| automatic NUMA balancing (start) | 0 | none |",
        "| transparent huge pages | DIFFERS: always (3 runs); never (1 run) | cg.A.default.p.r3 |",
        "| SMT active | not recorded | none |"]
    assert "**The runs differ in transparent huge pages**: their times are not strictly comparable." in out
    assert not any("Automatic NUMA balancing was on" in x for x in out)
    # the other way round: the odd run is the 'always' one
    odd = sm.system_markdown(runs_table(4, sys_thp_enabled=["never", "never", "always", "never"]))
    assert "| transparent huge pages | DIFFERS: never (3 runs); always (1 run) | cg.A.default.p.r3 |" in lines(odd)


def test_more_than_twenty_odd_runs_are_cut_with_an_ellipsis():
    """21 runs off the common value: 20 named, then '…'; exactly 20: all named, no ellipsis."""
    for odd, tail in ((21, " …"), (20, "")):
        runs = runs_table(50, sys_thp_enabled=["never"] * odd + ["always"] * (50 - odd))
        (row,) = [x for x in lines(sm.system_markdown(runs)) if x.startswith("| transparent")]
        named = row.split(" | ")[2].rstrip(" |")
        assert named == ", ".join(f"cg.A.default.p.r{i}" for i in range(1, 21)) + tail


def test_balancing_on_is_said_with_how_many_runs_had_pages_moved():
    """numa_balancing 1 in 2 of 3 runs ('0' is off), one run's migration judged drift."""
    runs = runs_table(3, sys_numa_balancing=["1", "0", "1"], fidelity_migration=["drift", "ok", "unknown"])
    out = sm.system_markdown(runs)
    assert ("Automatic NUMA balancing was on in 2 run(s): the kernel may move first-touch and serial-init pages "
            "mid-run; 1 run(s) had pages moved (in the drift section, `migration`). Set `system: {numa_balancing: "
            "off}` to measure placements as asked.") in out
    assert sm.system_markdown(runs_table(2))[-2] == "Not recorded (records older than the `system` field)."


# -- facts, status, best/worst ------------------------------------------------------

def test_the_facts_count_records_set_aside_attempts_and_planned_runs():
    runs = runs_table(5, current=[True, True, True, False, False])
    summary = pd.DataFrame({"n_planned": [3, 4, np.nan], "n_missing": [1, 0, 2]})
    (line, _) = sm._facts_markdown(runs, runs[runs["current"]], summary)
    assert line == ("Built from 3 run records, 2 set-aside attempts, 7 planned runs, 3 without a record yet. "
                    "Times are NPB's own \"Time in seconds\"; statistics are over the current ok records of each placement.")
    assert sm._facts_markdown(runs, runs, pd.DataFrame(), npb=False)[0] == "Built from 5 run records, 0 set-aside attempts."


def test_runs_by_status_counts_current_and_set_aside_apart():
    runs = runs_table(5, current=[True, True, False, True, False], status=["ok", "ok", "failed", "failed", "failed"])
    assert sm._status_markdown(runs)[2].splitlines() == [
        "| status | current | set aside |", "|---|---|---|", "| failed | 1 | 2 |", "| ok | 2 | 0 |"]


def test_the_best_and_worst_table_prints_each_sides_numbers():
    """Best's median and n, worst's median and n, improvement, noise, p (3 digits), drift."""
    bw = pd.DataFrame([bw_row(mwu_p=0.028571, rests_on_drift=True),
                       bw_row(threads=1, worst_placement_id="b", mwu_p=np.nan, best_n=1)])
    table = sm._best_worst_markdown(bw)[-2].splitlines()
    assert table[2] == ("| CG | A | default | 4 | 2/2 on 0,1 | 5.10 | 3 | 4 on 0 · membind 1 | 6.50 | 2 | 21.5% "
                        "| yes | 0.0286 | yes |")
    assert table[3] == "| CG | A | default | 1 | 2/2 on 0,1 | 5.10 | 1 |  |  |  | one placement: nothing to compare |  |  |  |"


def test_adaptive_rounds_get_their_column():
    bw = pd.DataFrame([bw_row(stopped_by="separated", stopped_after=5, rounds_max=10, stop_p=0.012,
                              stop_reason="x"),
                       bw_row(threads=2, stopped_by="fixed", stopped_after=3, rounds_max=3, stop_p=np.nan,
                              stop_reason="fixed repetitions")])
    table = sm._best_worst_markdown(bw)[-2].splitlines()
    assert table[0].endswith("| drift | rounds |")
    assert table[2].endswith("| stopped after 5 of at most 10 rounds: best and runner-up separated (p 0.012) |")
    assert table[3].endswith("| 3 (fixed) |")


# -- why, failures, drift, counters -------------------------------------------------

def explain_rows():
    base = {"bench": "cg", "class": "A", "variant": "default", "threads": 2, "thread_nodes": "0:2",
            "page_shares": "0:100%", "cause": "", "fitted_s": 10.0, "off_pct": 0.0}
    return pd.DataFrame([
        {**base, "placement": "a", "case_verdict": "explained (Spearman +1.00)", "explained": "yes",
         "time_median_s": 10.0},
        {**base, "placement": "b", "case_verdict": "explained (Spearman +1.00)", "explained": "no",
         "time_median_s": 13.0, "fitted_s": 11.0, "off_pct": 18.18, "cause": "pages moved"},
        {**base, "threads": 4, "placement": "c", "case_verdict": "no difference expected", "explained": "flat",
         "time_median_s": 9.0}])


def test_why_lists_each_cases_verdict_and_the_placements_not_explained():
    out = sm.explain_markdown(explain_rows())
    assert [x for x in lines(out) if x.startswith("| CG | A | default")] == [
        "| CG | A | default | 2 | explained (Spearman +1.00) |", "| CG | A | default | 4 | no difference expected |"]
    assert out[-2].splitlines()[2:] == ["| CG | A | 2 | b | 0:2 | 0:100% | 13.00 | 11.00 | 18.2% | pages moved |"]
    one = explain_rows().assign(case_verdict="no memory matrix")
    assert sm.explain_markdown(one)[-2:] == ["Every case (2): no memory matrix.", ""]


def test_failed_runs_are_listed_and_not_needed_ones_counted():
    runs = runs_table(4, status=["ok", "failed", "not-needed", "timeout"], current=[True, True, True, False],
                      reason=["", "exit status 1", "", "x" * 250])
    table = sm._failed_markdown(runs)[-2].splitlines()
    assert table[2:] == ["| cg.A.default.p.r2 | 1 | current | 1/1 on 0,1 | failed | exit status 1 |",
                         f"| cg.A.default.p.r4 | 1 | set aside | 1/1 on 0,1 | timeout | {'x' * 199}… |"]
    fine = runs_table(3, status=["ok", "not-needed", "not-needed"])
    assert sm._failed_markdown(fine)[-2] == ("None: every record is ok, or not needed (2: adaptive repetitions "
                                             "stopped their case early).")
    assert sm._failed_markdown(runs_table(2))[-2] == "None: every record is ok."


def test_no_drift_says_how_many_records_could_not_be_judged():
    runs = runs_table(3, fidelity=["ok", "unknown", "unknown"])
    assert sm._drift_markdown(runs)[-2] == "None. (2 records have fidelity *unknown*: no capture to judge.)"
    drift = runs_table(2, fidelity=["drift", "ok"], fidelity_threads=["drift", "ok"], fidelity_memory=["ok", "ok"],
                       fidelity_reasons=["threads ran outside CPUs 0-1", ""])
    assert sm._drift_markdown(drift)[-2].splitlines()[2:] == [
        "| cg.A.default.p.r1 | 1/1 on 0,1 | ok | drift | ok | threads ran outside CPUs 0-1 |"]


def test_counted_remote_share_is_the_median_beside_the_predicted_one():
    """Counted 10 %, 12 %, 40 %: median 12 % (not the mean 20.7 %); predicted 5 %: +7.0 points."""
    runs = runs_table(3, counted_remote_share=[0.10, 0.40, 0.12], predicted_remote_share=[0.05, 0.05, np.nan],
                      counted_events="offcore_response.remote_dram:u")
    out = sm.counters_markdown(runs)
    assert "perf stat: offcore_response.remote_dram:u" in out[2]
    assert out[-2].splitlines()[2:] == ["| CG | A | default | 2 | 1/1 on 0,1 | 3 | 12.0% | 5.0% | +7.0 points |"]
    assert sm.counters_markdown(runs_table(2)) == []


def test_planned_runs_without_a_record_are_those_not_in_the_current_records():
    current = runs_table(2)
    plan = pd.DataFrame({"run_id": ["cg.A.default.p.r1", "cg.A.default.p.r2", "cg.A.default.p.r3"],
                         "placement": ["1/1 on 0,1"] * 3})
    assert sm._unrecorded_markdown(plan, current)[-2].splitlines()[2:] == ["| cg.A.default.p.r3 | 1/1 on 0,1 |"]
    assert sm._unrecorded_markdown(plan.iloc[:2], current)[-2] == "None: every planned run has a record."


def test_per_placement_prints_min_median_mean_max_and_cv_in_percent():
    s = pd.DataFrame([{"bench": "mg", "class": "B", "variant": "serial-init", "threads": 4, "placement": "2/2 on 0,1",
                       "n": 3, "n_failed": 1, "time_min_s": 4.0, "time_median_s": 4.1, "time_mean_s": 4.5,
                       "time_max_s": 5.4, "time_cv": 0.1234, "n_drift": 2},
                      {"bench": "mg", "class": "B", "variant": "serial-init", "threads": 4, "placement": "x",
                       "n": 1, "n_failed": 0, "time_min_s": 4.0, "time_median_s": 4.0, "time_mean_s": 4.0,
                       "time_max_s": 4.0, "time_cv": np.nan, "n_drift": 0}])
    assert sm._per_placement_markdown(s)[-2].splitlines()[2:] == [
        "| MG | B | serial-init | 4 | 2/2 on 0,1 | 3 | 1 | 4.00 | 4.10 | 4.50 | 5.40 | 12.3% | 2 |",
        "| MG | B | serial-init | 4 | x | 1 | 0 | 4.00 | 4.00 | 4.00 | 4.00 |  |  |"]


def test_figures_are_linked_by_kind_in_the_kinds_order_png_first():
    manifest = pd.DataFrame([
        {"kind": "variability", "title": "V", "svg": "variability/v.svg", "png": np.nan},
        {"kind": "duration", "title": "D", "svg": "duration/d.svg", "png": "duration/d.png"}])
    assert sm._figures_markdown(manifest) == [
        "## Figures", "", "### Duration per placement", "", "![D](figures/duration/d.png)", "",
        "### Run-to-run variability", "", "![V](figures/variability/v.svg)", ""]
    assert sm._figures_markdown(None)[-2] == "No figures."


def test_runs_that_shared_their_cpus_show_the_foreign_share_in_percent():
    runs = runs_table(3, shared_cpus=[False, True, "True"], foreign_load_share=[0.01, 0.456, 0.2],
                      problems=["", np.nan, "numa_maps: unreadable"], reason=["", "", ""], record=["r", "r", "r3"])
    out = sm._flagged_runs(runs)
    assert out[2].startswith("Runs whose CPUs spent more than 5% (fidelity.foreign_load_max)")
    assert out[4].splitlines()[2:] == ["| cg.A.default.p.r2 | 1 | 1/1 on 0,1 | 45.6% |",
                                       "| cg.A.default.p.r3 | 1 | 1/1 on 0,1 | 20.0% |"]
    assert out[-2].splitlines()[2:] == ["| cg.A.default.p.r3 | r3 | numa_maps: unreadable |"]


def test_the_estimate_is_set_beside_the_machine_time_measured_from_the_first_build(tmp_path):
    """The VM's 16 runs took 93 s from the first run's start to the last one's end; a
    build started 30 min before: 32 min measured, against 50 min of runs + 10 of builds."""
    import json
    import shutil
    from pathlib import Path
    from numaplace.tables.aggregate import build_tables
    results = tmp_path / "vm"
    shutil.copytree(Path(__file__).parent / "fixtures" / "real" / "vm", results)
    (tmp_path / "build.json").write_text(json.dumps({"started": "2026-11-22T20:36:29.596+00:00"}))
    (results / "estimate.json").write_text(json.dumps({"runs_s": 3000, "builds_s": 600, "runs": 20,
                                                       "builds": [str(tmp_path / "build.json")], "decisions": {}}))
    tables = build_tables(results)
    data = sm.study_answer(tables, results)
    assert data["lines"][-1] == ("machine time: estimated 1 h 00 min before the study (1 build, 20 runs), measured "
                                 "32 min from the first build's start to the last run's end (16 of 20 runs recorded)")
    (results / "estimate.json").write_text(json.dumps({"runs_s": 3000, "runs": 20, "builds": [], "decisions": {}}))
    assert sm.study_answer(tables, results)["lines"][-1] == (
        "machine time: estimated 50 min before the study (0 builds, 20 runs), measured 2 min from the first "
        "run's start to the last run's end (16 of 20 runs recorded)")
