"""What the answer tells a user (numaplace.report.answer, and a kind's own answer line):
the case where the wrong placement costs most, an interval that holds the cost it is
printed beside, and STREAM's bandwidth from main memory. Issue 42, behaviours 1, 2 and 8;
each test names the small mistake it fails on (tests/benchmarks/behaviour_bugs.py makes
each mistake in a copy of the package and shows the test failing)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from numaplace.kinds import kind
from numaplace.report.answer import case_verdict, cost_interval, kernel_lines, serial_init_lines
from numaplace.tables.aggregate import best_worst_table, build_tables, summary_table

pytestmark = pytest.mark.unit

VM = Path(__file__).parent / "fixtures" / "real" / "vm"


def run(pid, cpus, t, threads, rep):
    """One current ok run of CG class A, as the runs table has it (the columns the tables read)."""
    return {"bench": "cg", "class": "A", "variant": "default", "threads": threads, "placement_id": pid,
            "placement": f"cpus {cpus}", "cpus": cpus, "layout": f"{threads} on 0", "memory": "local",
            "binding": "process", "launcher": "numactl", "run_id": f"{pid}.r{rep}", "rep": rep,
            "current": True, "status": "ok", "npb_time_s": t, "mops": np.nan, "fidelity": "ok"}


def test_the_answer_names_the_case_where_the_wrong_choice_costs_most():
    """CG class A at 2 threads: the worst placement costs 5 %; at 4 threads 38 %. The one
    line the answer gives CG class A is about 4 threads, with its 38 %. (Fails when the
    cases are ranked the wrong way round and the answer names the 5 % case.)"""
    runs = pd.DataFrame(
        [run("two-near", "0-1", t, 2, i) for i, t in enumerate((10.0, 10.1, 10.2), 1)]
        + [run("two-far", "2-3", t, 2, i) for i, t in enumerate((10.5, 10.6, 10.7), 1)]
        + [run("four-near", "0-3", t, 4, i) for i, t in enumerate((10.0, 10.1, 10.2), 1)]
        + [run("four-far", "4-7", t, 4, i) for i, t in enumerate((16.2, 16.3, 16.4), 1)])
    summary = summary_table(runs)
    best_worst = best_worst_table(summary, runs)
    assert sorted(best_worst["improvement_pct"].round().astype(int)) == [5, 38]     # the two cases, as planted
    (line,) = kernel_lines(best_worst, summary, runs)
    assert line.startswith("CG class A (default, 4 threads): beyond noise: best cpus 0-3 (10.1 s), "
                           "worst cpus 4-7 (16.3 s): the wrong choice costs 38 % [95 % CI "), line


def _cost_and_interval(line):
    m = re.search(r"(?P<verb>costs|saves) (?P<p>-?\d+) % \[95 % CI (?P<lo>-?\d+) to (?P<hi>-?\d+) %\]", line)
    assert m, line
    return int(m["p"]), int(m["lo"]), int(m["hi"])


def test_the_serial_initialisation_interval_is_in_order_and_holds_its_cost():
    """The VM's records: CG saves 6 % (serial-init the faster), MG costs 6 %. Each 95 %
    interval is printed low to high and holds the percentage printed before it. (Fails
    with the saving's interval taken the wrong way round: "saves 6 % [95 % CI 25 to -2 %]"
    or "[-25 to 2 %]".)"""
    t = build_tables(VM)
    lines = serial_init_lines(t["summary"], t["runs"])
    assert [line.split(":")[0] for line in lines] == ["CG class W", "MG class W"]
    verbs = [re.search(r"\b(costs|saves)\b", line)[1] for line in lines]
    assert verbs == ["saves", "costs"]                 # both branches are shown
    for line in lines:
        point, lo, hi = _cost_and_interval(line)
        assert lo <= point <= hi, line


def test_the_cost_interval_is_of_the_medians_the_cost_is():
    """The cost printed is 1 - median(worst) / median(best), and its 95 % interval is the
    bootstrap of that same statistic: one disturbed run of the worst placement (8 Mop/s
    among 80-87) leaves the median cost at 20 % and its interval around it; an interval of
    the means would stretch out to the means' 28 % cost, which is not the one printed."""
    best = [100.0, 101.0, 102.0, 103.0, 104.0, 105.0, 106.0, 107.0, 108.0]
    worst = [80.0, 81.0, 82.0, 83.0, 84.0, 85.0, 86.0, 87.0, 8.0]
    cost = 100 * (1 - np.median(worst) / np.median(best))
    of_means = 100 * (1 - np.mean(worst) / np.mean(best))
    assert round(cost) == 20 and round(of_means) == 28
    lo, hi = cost_interval(best, worst)
    assert lo <= cost <= hi < of_means, (lo, hi)


def busy(r, shared):
    """A run as the runs table has it with fidelity's load check: shared_cpus, and the
    share of its CPUs' time other load took."""
    return {**r, "shared_cpus": shared, "foreign_load_share": 0.5 if shared else 0.02}


@pytest.mark.parametrize("shared, verdict", [
    (3, "no conclusion: 3 runs a side, 3 of 6 shared their CPUs (50 % of their time taken by other load)"),
    (2, "no conclusion: 3 runs a side, 2 of 6 shared their CPUs (50 % of their time taken by other load)"),
    (1, "beyond noise (1 of 6 shared their CPUs (50 % of their time taken by other load): unreliable)"),
    (0, "beyond noise"),
], ids=["all-shared", "two-shared", "one-shared", "none-shared"])
def test_a_conclusion_needs_two_runs_a_side_that_had_their_cpus_to_themselves(shared, verdict):
    """3 runs a side, the worst placement's first `shared` runs beside other load: only the
    quiet runs count toward the two a side a conclusion needs, so with one quiet run (or
    none) the case leads with 'no conclusion', however far apart the medians are."""
    runs = pd.DataFrame([busy(run("near", "0-1", t, 2, i), False) for i, t in enumerate((10.0, 10.1, 10.2), 1)]
                        + [busy(run("far", "2-3", t, 2, i), i <= shared) for i, t in enumerate((12.0, 12.1, 12.2), 1)])
    summary = summary_table(runs)
    (line,) = kernel_lines(best_worst_table(summary, runs), summary, runs)
    assert line.startswith(f"CG class A (default, 2 threads): {verdict}: best cpus 0-1 (10.1 s), "), line
    near, far = runs[runs["placement_id"] == "near"], runs[runs["placement_id"] == "far"]
    assert case_verdict({"differs": "yes"}, near, far) == verdict


def stream_rows(size, placement, triad, reps=3):
    return [{"op": "triad", "size_bytes": size, "threads": 2, "placement_id": placement, "placement": placement,
             "init": "parallel", "rep": r, "sample": 1, "value": triad + r, "unit": "MB/s", "status": "ok",
             "attempt": False} for r in range(reps)]


def test_streams_answer_is_read_at_its_largest_size_from_main_memory():
    """At 1 MiB (cache-resident) the arrays never leave the cores' caches: 2 threads on two
    nodes read more (two caches) than on one. At 1 GiB (DRAM) the local placement wins. The
    answer is about main memory: the 1 GiB numbers. (Fails when the smallest size is read:
    'STREAM triad: 90001 MB/s on spread'.)"""
    mib, gib = 2**20, 2**30
    stream = pd.DataFrame(stream_rows(mib, "spread", 90000) + stream_rows(mib, "local", 60000)
                          + stream_rows(gib, "spread", 9000) + stream_rows(gib, "local", 12000))
    (line,) = kind("stream").answer({"stream": stream})
    assert line == "STREAM triad: 12001 MB/s on local, 9001 MB/s on spread (25% less)", line


# -- the answer's words, helper by helper ------------------------------------------------

def test_adaptive_rounds_are_said_by_where_each_case_stopped():
    """Separated, at the minimum, at the maximum, still running, fixed: each its own words and numbers."""
    from numaplace.report.answer import rounds_words
    base = {"stopped_after": 3, "rounds_max": 10, "stop_p": 0.0712, "stop_reason": "3 rounds at least"}
    assert [rounds_words({**base, "stopped_by": by}) for by in ("separated", "minimum", "maximum", "running", "fixed")] == [
        "stopped after 3 of at most 10 rounds: best and runner-up separated (p 0.071)",
        "stopped at the minimum, 3 of at most 10 rounds: 3 rounds at least",
        "not separated at the maximum, 10 rounds (p 0.071)",
        "3 of at most 10 rounds so far", ""]
    assert rounds_words({**base, "stopped_by": "maximum", "stop_p": np.nan}) == "not separated at the maximum, 10 rounds"


def test_the_runner_up_is_told_apart_only_below_alpha():
    """p 0.0286 is told apart; p 0.05 (= ALPHA) is not, and asks for the repetitions that would tell."""
    from numaplace.report.answer import _runner_up
    r = {"runner_up_placement": "2/2 on 0,1", "runner_up_median_s": 10.234, "runner_up_reps_needed": np.nan}
    assert _runner_up({**r, "runner_up_mwu_p": 0.0286}) == \
        "; runner-up 2/2 on 0,1 (10.2 s): told apart from the best, Mann-Whitney p=0.029"
    assert _runner_up({**r, "runner_up_mwu_p": 0.05, "runner_up_reps_needed": 7.0}) == \
        "; runner-up 2/2 on 0,1 (10.2 s): not told apart from the best (p=0.05; about 7 repetitions each would tell)"
    assert _runner_up({**r, "runner_up_mwu_p": np.nan}) == \
        "; runner-up 2/2 on 0,1 (10.2 s): not told apart from the best (too few runs)"
    assert _runner_up({"runner_up_placement": np.nan}) == ""


def test_the_numbers_beside_a_cost_are_in_the_measure_it_was_computed_by():
    from numaplace.report.answer import _cost, _measured, _more, _noise
    r = {"compared_by": "mops", "best_mops_median": 1234.56, "best_median_s": 0.0512, "worst_mops_median": np.nan,
         "worst_median_s": 0.07123}
    assert (_measured(r, "best"), _measured(r, "worst")) == ("1235 Mop/s, 0.0512 s", "0.07123 s")
    assert _measured({**r, "compared_by": "time"}, "best") == "0.0512 s"
    assert _noise({"differs": "no", "mwu_p": 0.3429}) == "within noise, Mann-Whitney p=0.34"
    assert _noise({"differs": "unknown", "mwu_p": np.nan}) == "too few runs to tell"
    assert _noise({"differs": "yes", "mwu_p": 0.0286}) == "beyond noise, Mann-Whitney p=0.029"
    assert (_more(12.0), _more(np.nan), _more(0)) == (" (about 12 repetitions each would tell)", "", "")
    assert _cost({"below_resolution": False, "improvement_pct": 21.538}, (15.2, 27.8)) == "22 % [95 % CI 15 to 28 %]"
    assert _cost({"below_resolution": True, "improvement_pct": 1.0}, None) == "below the timer's resolution"


def test_runs_beside_other_load_are_counted_with_the_range_of_that_load():
    from numaplace.report.answer import _shared, busy_line
    g = pd.DataFrame({"shared_cpus": [True, False, True], "foreign_load_share": [0.2, 0.01, 0.456]})
    assert _shared(g) == (2, "20-46 %")
    assert _shared(g.assign(foreign_load_share=[0.2, 0.0, 0.204])) == (2, "20 %")
    runs = pd.DataFrame({"current": [True, True, True, False], "shared_cpus": [True, False, False, True],
                         "foreign_load_share": [0.3, 0.0, 0.0, 0.9]})
    assert busy_line(runs) == ("busy machine: 1 of 3 runs shared their CPUs with other load (30 % of their time); "
                               "their numbers are unreliable and no case rests a conclusion on them")
    assert busy_line(runs.assign(shared_cpus=False)) is None


def test_hmat_and_the_memory_tiers_are_said_beside_the_slit():
    """HMAT: node 2's read latency 200 ns over 80 local (2.5x), bandwidth 30 over 100 GB/s (0.3x); at most `most` pairs."""
    from numaplace.report.answer import firmware_words
    fw = {"hmat": {"0": {"access1": {"initiators": [0], "read_latency_ns": 80, "read_bandwidth_mbps": 100000}},
                   "1": {"access1": {"initiators": [1], "read_latency_ns": 80, "read_bandwidth_mbps": 100000}},
                   "2": {"access1": {"initiators": [0, 1], "read_latency_ns": 200, "read_bandwidth_mbps": 30000}}},
          "tiers": [{"tier": 4, "nodes": [0, 1]}, {"tier": 22, "nodes": [2]}]}
    assert firmware_words(fw) == ["HMAT node 0 -> 2: latency 2.5x, bandwidth 0.3x local; 1 -> 2: latency 2.5x, "
                                  "bandwidth 0.3x local", "memory tiers 4: nodes 0-1; 22: node 2"]
    assert firmware_words(fw, most=1)[0] == "HMAT node 0 -> 2: latency 2.5x, bandwidth 0.3x local; 1 more"
    assert firmware_words({"tiers": [{"tier": 4, "nodes": [0, 1]}]}) == []


def test_the_control_kernel_says_an_effect_is_the_machines():
    from numaplace.report.answer import case_name, control_words
    beyond, within, none = (control_words("ep", v) for v in ("beyond noise", "within noise: x", "no conclusion: 1 run"))
    assert beyond.endswith(": this machine or its load moves the other kernels' numbers by as much")
    assert within.endswith("; as expected, none told apart") and none.startswith("; EP is the control")
    assert none + "; as expected, none told apart" == within and control_words("cg", "beyond noise") == ""
    assert (case_name("cg", "B"), case_name("zz", "S")) == ("CG class B", "ZZ class S")


def test_why_says_the_rank_correlations_and_names_three_unexplained_placements():
    from numaplace.report.answer import why_lines
    rows = []
    for t, rho in ((1, 0.5), (2, -0.25), (4, 0.9)):
        rows += [{"bench": "cg", "class": "A", "variant": "default", "threads": t, "case_verdict": f"explained; rho {rho}",
                  "case_spearman": rho, "placement": f"p{t}{i}", "explained": "no" if i < 2 else "yes",
                  "cause": "pages moved"} for i in range(3)]
    rows.append({"bench": "mg", "class": "A", "variant": "default", "threads": 2, "case_verdict": "no difference expected",
                 "case_spearman": np.nan, "placement": "q", "explained": "flat", "cause": ""})
    ex = pd.DataFrame(rows)
    assert why_lines(ex) == ["why (memory matrices): Spearman -0.25 to +0.90 over 3 cases; 1 case where the matrices "
                             "expect no difference; not explained: CG.A p10 (pages moved); CG.A p11 (pages moved); "
                             "CG.A p20 (pages moved); 3 more"]
    two = ex[ex["threads"] <= 2].assign(explained="yes")
    assert why_lines(two) == ["why (memory matrices): CG.A 1 thread: explained; CG.A 2 threads: explained; 1 case "
                              "where the matrices expect no difference; every placement on its line"]


def test_answer_json_carries_each_sides_median_runs_and_the_cost():
    """answer.json's case: best and worst with their placement, runs and median seconds, the cost and the noise verdict."""
    from numaplace.report.answer import answer_data
    runs = pd.DataFrame([run("four-near", "0-3", t, 4, i) for i, t in enumerate((10.0, 10.1, 10.4), 1)]
                        + [run("four-far", "4-7", t, 4, i) for i, t in enumerate((16.0, 16.3, 16.4, 16.5), 1)])
    summary = summary_table(runs)
    (case,) = answer_data({"runs": runs, "summary": summary, "best_worst": best_worst_table(summary, runs)})["cases"]
    assert (case["bench"], case["class"], case["variant"], case["threads"]) == ("cg", "A", "default", 4)
    assert case["best"] == {"placement": "cpus 0-3", "placement_id": "four-near", "n": 3, "median_s": 10.1,
                            "mops_median": None}
    assert case["worst"] == {"placement": "cpus 4-7", "placement_id": "four-far", "n": 4, "median_s": 16.35,
                             "mops_median": None}
    assert case["cost_pct"] == pytest.approx(100 * (1 - 10.1 / 16.35))
    assert (case["beyond_noise"], case["compared_by"]) == ("yes", "time")
    assert case["mann_whitney_p"] == pytest.approx(2 / 35)
    assert case["verdict"] == "beyond noise" and case["line"].startswith("CG class A (default, 4 threads): beyond noise")


def test_the_machine_line_of_one_node_and_of_a_tiered_memory_only_node():
    """One node measured: its own cell, 'local only'. A CXL node 2 whose tier only the
    firmware recorded: said with that tier."""
    from numaplace.report.answer import machine_line
    one = pd.DataFrame([{"bench": "memlat", "mode": "", "via": "first-touch", "size_bytes": 1 << 28, "reader_node": 0,
                         "memory_node": 0, "median": 101.4}])
    assert machine_line(one, {"nodes": {"0": "0-3"}}) == \
        "machine: 1 NUMA node · latency 101 ns (1 thread, node 0 to 0; local only)"
    lat = {(0, 0): 100.0, (1, 1): 100.0, (0, 1): 150.0, (1, 0): 150.0, (0, 2): 200.0, (1, 2): 210.0}
    matrix = pd.DataFrame([{"bench": "memlat", "mode": "", "via": "first-touch", "size_bytes": 1 << 28, "reader_node": r,
                            "memory_node": m, "median": v} for (r, m), v in lat.items()])
    topo = {"nodes": {"0": "0-1", "1": "2-3", "2": ""}}
    fw = {"tiers": [{"tier": 4, "nodes": [0, 1]}, {"tier": 22, "nodes": [2]}]}
    assert machine_line(matrix, topo, firmware=fw) == (
        "machine: 3 NUMA nodes (2 with CPUs, 1 memory only) · latency local 100 ns (1 thread, mean of 2 nodes' own "
        "cells), remote 150 ns (remote/local 1.50x, mean of 2 cells) · node 2: memory only, tier 22: latency 2x local "
        "from nodes 0,1 · memory tiers 4: nodes 0-1; 22: node 2")
