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
from numaplace.report.answer import kernel_lines, serial_init_lines
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
