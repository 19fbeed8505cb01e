"""What a study will cost, said before anything is built (numaplace.plan.budget): the
budget's words, durations as the plan prints them, the machine time per experiment, the
speed kept in speed.json, and the memory a run's pages need on a node. Written against
the mutants mutmut left alive (tests/benchmarks/mutation_score.sh)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from numaplace.machine import system
from numaplace.machine.topology import Topology
from numaplace.plan import budget
from numaplace.plan.budget import Estimate, Speed, Spill, format_duration, memory_spills, parse_minutes
from numaplace.plan.placement import Memory, finish
from numaplace.plan.study import Run

pytestmark = pytest.mark.unit

TWO = Topology("two", {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}, {0: 400, 1: 400})


@pytest.mark.parametrize("text, minutes", [(45, 45.0), (2.5, 2.5), ("90 min", 90.0), ("1.5 h", 90.0), (" 2h ", 120.0)])
def test_budget_words(text, minutes):
    assert parse_minutes(text) == minutes


@pytest.mark.parametrize("seconds, shown", [
    (0.4, "0 s"), (29, "29 s"), (31, "1 min"), (3540, "59 min"), (3600, "1 h 00 min"), (3629, "1 h 00 min"),
    (5430, "1 h 30 min"), (7260, "2 h 01 min"), (36000, "10 h 00 min")])
def test_durations_as_the_plan_prints_them(seconds, shown):
    assert format_duration(seconds) == shown


def test_next_smaller_class():
    assert budget.step_down(["A", "C", "B"]) == {"C": "B"}
    assert budget.step_down(["B", "S"]) == {"B": "A"}
    assert budget.step_down(["S", "W", "A"]) is None


def run(rid, bench, cls, placement, variant="default", experiments=("e",)):
    return Run(rid, tuple(experiments), bench, cls, variant, 1, placement)


def place(cpus, memory=Memory("local"), shape="x"):
    return finish(cpus, memory, "process", "numactl", shape, TWO)


def test_estimate_per_experiment_and_total():
    """A run two experiments share counts in both, once in the total; each binary is built
    once, its cost scaled by this machine's start-up speed."""
    p = place([0, 1])
    runs = [run("a", "cg", "S", p, experiments=("e1", "e2")), run("b", "cg", "S", p, experiments=("e2",))]
    speed = Speed(memory=2.0, cpu=0.5)
    est = Estimate(runs, ["cg.S.x", "mg.S.x"], speed)
    a, b = est.per_run["a"], est.per_run["b"]
    assert a == b == budget.run_seconds(runs[0], speed) and a > budget.RUN_OVERHEAD_S / 0.5
    assert est.per_experiment == {"e1": a, "e2": a + b}
    assert est.builds == budget.BUILD_S / 0.5 * 2
    assert est.total == pytest.approx(a + b + est.builds)
    assert est.speed == speed


# -- this machine's speed, measured -------------------------------------------------------

def clock(monkeypatch, durations):
    """time.perf_counter, faked: try i starts at second i and lasts durations[i] (exact
    binary fractions); a read past the last try fails the test."""
    ticks = iter([t for i, d in enumerate(durations) for t in (float(i), i + d)])

    def perf_counter():
        t = next(ticks, None)
        assert t is not None, f"timed more than {len(durations)} tries"
        return t
    monkeypatch.setattr(time, "perf_counter", perf_counter)
    return ticks


def test_read_bandwidth_is_the_fastest_of_five_sums_in_gb_per_s(monkeypatch):
    """GB/s of the best of (by default) five timed sums over nbytes of float64: the bytes
    read over the fastest sum's seconds, in 1e9 bytes per second (here below 1 GB/s)."""
    ticks = clock(monkeypatch, [2**-14, 2**-16, 2**-15, 2**-14, 2**-15])
    gbs = budget.read_bandwidth(nbytes=8192)
    assert gbs == 8192 * 2**16 / 1e9                        # 0.54 GB/s: the 2**-16 s sum
    assert next(ticks, None) is None                        # five sums, two clock reads each
    clock(monkeypatch, [2**-10, 2**-12])
    assert budget.read_bandwidth(nbytes=8192, tries=2) == 8192 * 2**12 / 1e9


def test_start_seconds_is_the_quickest_of_three_python_starts_importing_the_runner(monkeypatch):
    """Each try starts this Python importing numaplace.run.runner (checked: a failure is an
    error); the result is the quickest try's seconds."""
    started = []

    def run(argv, check=False):
        started.append(list(argv))
        return subprocess.CompletedProcess(argv, 0)
    monkeypatch.setattr(subprocess, "run", run)
    ticks = clock(monkeypatch, [0.25, 0.125, 0.5])
    assert budget.start_seconds() == 0.125
    assert next(ticks, None) is None
    assert started == [[sys.executable, "-c", "import numaplace.run.runner"]] * 3


def test_a_python_that_cannot_import_the_runner_is_an_error_not_a_start_up_time(monkeypatch):
    def run(argv, check=False):
        if check:
            raise subprocess.CalledProcessError(1, argv)
        return subprocess.CompletedProcess(argv, 1)
    monkeypatch.setattr(subprocess, "run", run)
    clock(monkeypatch, [0.25, 0.125, 0.5])
    with pytest.raises(subprocess.CalledProcessError):
        budget.start_seconds()


def test_a_runs_estimate_scales_its_kind_by_bandwidth_and_its_fixed_cost_by_start_up():
    """A run costs what its kind says for its class, threads and args on a machine of this
    read bandwidth (twice the reference's: an NPB kernel in half the time), plus the fixed
    cost of a run over this machine's start-up speed (half the reference's: twice as long);
    a memory micro-benchmark's args reach its kind (memlat over --sizes: not the whole curve)."""
    from numaplace.kinds import kind
    cg = run("a", "cg", "B", place([0, 1]))
    ref = kind("cg").run_seconds("B", 2, (), 1.0)
    assert ref > kind("cg").run_seconds("S", 2, (), 1.0) > 0
    assert budget.run_seconds(cg) == pytest.approx(ref + budget.RUN_OVERHEAD_S)
    assert budget.run_seconds(cg, Speed(memory=2.0, cpu=0.5)) == pytest.approx(ref / 2 + budget.RUN_OVERHEAD_S / 0.5)
    curve = Run("m", ("e",), "memlat", "S", "default", 1, place([0]))
    points = Run("m", ("e",), "memlat", "S", "default", 1, place([0]), ("--sizes", "4K,1M"))
    assert budget.run_seconds(curve) == pytest.approx(25.0 + budget.RUN_OVERHEAD_S)
    assert budget.run_seconds(points) == pytest.approx(3.0 + budget.RUN_OVERHEAD_S)


# -- speed.json ---------------------------------------------------------------------------

@pytest.fixture
def measured(monkeypatch):
    """This machine measured as half the reference's speed (16 GB/s, 0.2 s to start)."""
    calls = []
    monkeypatch.setattr(budget, "read_bandwidth", lambda **kw: calls.append("read") or 16.0)
    monkeypatch.setattr(budget, "start_seconds", lambda: calls.append("start") or 0.2)
    monkeypatch.setattr(budget, "machine_load", lambda: budget.Load(0.0, 0.1, 2))   # quiet
    return calls


def test_speed_is_measured_once_and_kept(tmp_path, measured):
    results = tmp_path / "results" / "study"                 # not made yet
    assert budget.machine_speed(results) == Speed(0.5, 0.5)
    assert json.loads((results / "speed.json").read_text()) == {
        "host": os.uname().nodename, "memory": 0.5, "cpu": 0.5, "read_gbs": 16.0, "read_gbs_probes": [],
        "reference_read_gbs": budget.REF_READ_GBS, "start_s": 0.2, "reference_start_s": budget.REF_START_S,
        "busy": 0.0, "loadavg": 0.1, "cpus": 2, "busy_when_probed": False}
    assert budget.machine_speed(results) == Speed(0.5, 0.5) and measured == ["read", "start"]


@pytest.mark.parametrize("kept", [{"memory": 0, "cpu": 2.0}, {"memory": 2.0, "cpu": 0}, {"memory": 2.0},
                                  {"memory": 2.0, "cpu": 2.0, "host": "login01"}, [1, 2]])
def test_a_kept_speed_that_cannot_be_used_is_measured_again(tmp_path, measured, kept):
    if isinstance(kept, dict):
        kept = {"host": os.uname().nodename, **kept}
    (tmp_path / "speed.json").write_text(json.dumps(kept))
    assert budget.machine_speed(tmp_path) == Speed(0.5, 0.5) and measured == ["read", "start"]


def test_free_memory_is_this_machines_for_platform_auto_and_kept(tmp_path, monkeypatch):
    auto = Topology("auto", {0: [0], 1: [1]}, {0: 4000, 1: 4000})
    monkeypatch.setattr(system, "free_mb_by_node", lambda: {"0": 100, "1": 250})
    assert budget.free_mb(auto) == {0: 100, 1: 250}
    assert budget.free_mb(TWO) == {0: 400, 1: 400}           # a platform file: its memory_mb
    assert budget.kept_free_mb(auto, tmp_path) == {0: 100, 1: 250}
    monkeypatch.setattr(system, "free_mb_by_node", lambda: {"0": 1, "1": 2})
    assert budget.kept_free_mb(auto, tmp_path) == {0: 100, 1: 250}     # kept: the plan reads alike
    assert budget.kept_free_mb(TWO, tmp_path) == {0: 400, 1: 400}
    monkeypatch.setattr(system, "free_mb_by_node", lambda: {})
    assert budget.free_mb(auto) == {0: 4000, 1: 4000}        # nothing measured: the topology's


# -- where a run's pages go ----------------------------------------------------------------

def test_pages_go_where_the_placement_puts_them():
    """cg.C (891 MiB) on 400 MiB nodes: first touch spreads it by threads per node (3/1:
    668 and 223), membind over the bound nodes, serial-init all on thread 0's node."""
    runs = [run("ft", "cg", "C", place([0, 1, 2, 4])),
            run("mb", "cg", "C", place([0, 1], Memory("membind", (0, 1))), variant="v-mb"),
            run("si", "cg", "B", place([4, 0]), variant="serial-init")]
    spills = memory_spills(runs, TWO, {0: 400, 1: 300})
    assert [(s.variant, s.node, s.need_mb, s.free_mb) for s in spills] == [
        ("default", 0, 891 * 3 / 4, 400), ("v-mb", 0, 891 / 2, 400), ("v-mb", 1, 891 / 2, 300),
        ("serial-init", 1, 344, 300)]


def test_a_node_with_exactly_enough_memory_holds_the_pages():
    runs = [run("a", "cg", "B", place([0, 1], Memory("membind", (0,))))]
    assert memory_spills(runs, TWO, {0: 344, 1: 0}) == []
    assert len(memory_spills(runs, TWO, {0: 343, 1: 0})) == 1


def test_each_kind_of_run_and_node_is_said_once_and_runs_without_a_working_set_skipped():
    p = place([0, 1])
    runs = [run("s", "stream", "S", p), run("a", "cg", "C", p), run("b", "cg", "C", p), run("c", "mg", "C", p)]
    spills = memory_spills(runs, TWO, {0: 400})
    assert [(s.bench, s.node) for s in spills] == [("cg", 0), ("mg", 0)]
    assert budget.memory_warnings(runs[:2], TWO) == [
        "cg.C default: 891 MiB of pages meant for node 0, which has 400 MiB in all: they will spill"]


def test_a_spill_on_this_machine_says_free_memory():
    auto = Topology("auto", {0: [0, 1]}, {0: 4000})
    (s,) = memory_spills([run("a", "cg", "C", finish([0, 1], Memory("local"), "process", "numactl", "x", auto))],
                         auto, {0: 500})
    assert s.measured is True and str(s) == "cg.C default: 891 MiB of pages meant for node 0, which has 500 MiB free"
    assert str(Spill("mg", "B", "default", 1, 435.4, 400, False)) == \
        "mg.B default: 435 MiB of pages meant for node 1, which has 400 MiB in all"
