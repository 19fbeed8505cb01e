"""`numaplace compare` (numaplace.report.compare): a placement that got faster between two
studies is reported beyond noise as a slower one is. Issue 42, behaviour 3
(tests/benchmarks/behaviour_bugs.py shows the test failing on the mistake)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import numaplace.report.compare as compare_mod
from numaplace.tables.aggregate import summary_table

pytestmark = pytest.mark.unit


def study(name, times):
    """A study of one placement (CG class A, 2 threads, cpus 0-1) with these NPB times."""
    runs = pd.DataFrame([{"bench": "cg", "class": "A", "variant": "default", "threads": 2, "placement_id": "p",
                          "placement": "cpus 0-1", "cpus": "0-1", "layout": "2 on 0", "memory": "local",
                          "binding": "process", "launcher": "numactl", "run_id": f"p.r{i}", "current": True,
                          "status": "ok", "npb_time_s": t, "mops": np.nan, "fidelity": "ok"}
                         for i, t in enumerate(times, 1)])
    empty = pd.DataFrame()
    tables = {"runs": runs, "summary": summary_table(runs), "best_worst": pd.DataFrame(columns=[
        "best_placement_id", "worst_placement_id"]), "memory_matrix": empty, "memory": empty}
    return SimpleNamespace(name=name, dir=name, tables=tables, topology={"nodes": {"0": "0-1"}},
                           host="h", kernel="k")


BEFORE = (20.0, 20.1, 20.2, 20.3)
FASTER = (15.0, 15.1, 15.2, 15.3)      # 25 % less time: ranges apart
SLOWER = (25.0, 25.1, 25.2, 25.3)


@pytest.mark.parametrize("after, change", [(FASTER, -25), (SLOWER, 25)], ids=["speed-up", "slow-down"])
def test_compare_reports_a_speed_up_beyond_noise_as_it_reports_a_slow_down(after, change):
    """Against the first study, a placement 25 % faster and one 25 % slower, each with
    ranges apart from the first's: both are beyond noise, with Mann-Whitney's p. (Fails
    when only a later study's slower runs count as apart: the speed-up is 'no'.)"""
    side = compare_mod.side_by_side([study("before", BEFORE), study("after", after)])
    (row,) = side[side["study"] == "after"].to_dict("records")
    assert round(row["change_pct"]) == change
    assert row["beyond_noise"] == "yes", f"beyond_noise {row['beyond_noise']!r}"
    assert row["mwu_p"] == pytest.approx(2 / 70)        # 4 vs 4, apart: 2 of C(8, 4) splits


def test_the_compare_command_says_a_speed_up_beyond_noise(monkeypatch, tmp_path):
    """What `numaplace compare before after` prints: the faster placement's line, beyond
    noise, not 'no shared placement changed beyond noise'."""
    studies = {"before": study("before", BEFORE), "after": study("after", FASTER)}
    monkeypatch.setattr(compare_mod, "Compared", lambda d: studies[str(d)])
    monkeypatch.setattr(compare_mod, "_figure", lambda side, out: [])      # no matplotlib: the lines are the point
    monkeypatch.setattr(compare_mod, "_html", lambda text, out: None)
    lines = compare_mod.compare(["before", "after"], tmp_path)
    assert lines[1:] == ["CG.A default 2 threads, cpus 0-1: after -24.8% (15.15 s), beyond noise, p 0.0286"], lines
