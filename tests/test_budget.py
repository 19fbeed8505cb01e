"""What a study costs, said before anything is built (issue 28): the estimate from NPB's own
operation counts, the plan's lines, a `budget:` that steps classes C -> B -> A and then
repetitions and says what it dropped (never exceeded silently), and the memory check."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numaplace import ConfigError
from numaplace.kinds.npb import work_mop
from numaplace.machine import system
from numaplace.machine.topology import Topology
from numaplace.plan import budget
from numaplace.plan.budget import Estimate, Speed, Spill, format_duration, memory_spills, parse_minutes
from numaplace.plan.placement import Memory, finish
from numaplace.plan.study import Run, Study

REPO = Path(__file__).resolve().parents[1]


def test_work_is_npbs_operation_count():
    # NPB-FACTS: CG Mop = 2e-6 niter na (3 + nz(nz+1) + 25 (5 + nz(nz+1)) + 3); MG 58e-6 nit n^3
    assert work_mop("cg", "B") == pytest.approx(2e-6 * 75 * 75000 * (3 + 182 + 25 * 187 + 3))
    assert work_mop("mg", "B") == pytest.approx(58e-6 * 20 * 256 ** 3)
    assert work_mop("mg", "C") == pytest.approx(8 * work_mop("mg", "B"))


def study(classes, budget_=None, platform="x4600", reps=5, config_dir=REPO / "config"):
    s = {"study": "b", "platform": platform, "benchmarks": ["cg", "mg"], "classes": classes,
         "repetitions": reps, "variants": ["default"],
         "experiments": [{"name": "scaling", "placements": [{"compact": [1, 2, 4, 8, 16]}]},
                         {"name": "pairs", "classes": classes, "placements": [{"layout": "2", "nodes": "all-choices"}]}]}
    if budget_ is not None:
        s["budget"] = budget_
    return Study(s, "b.yaml", config_dir)


def test_plan_says_runs_time_and_classes_before_anything_is_built():
    st = study(["C"])
    lines = st.plan_summary()
    assert lines[0].startswith("study b on x4600: 8 NUMA nodes, 16 cores: 120 runs, estimated machine time ")
    assert "a named platform is not measured" in lines[0]
    assert lines[1] == "  classes: cg C, mg C"
    assert lines[2].startswith("  scaling: 50 runs, ~") and lines[3].startswith("  pairs: 80 runs, ~")
    assert any(line.startswith("  builds: 2, ~") for line in lines)


def test_budget_steps_classes_down_then_repetitions_and_says_so():
    full = study(["C"]).estimate().total
    st = study(["C"], budget_=f"{full / 60 * 0.2:.1f} min")
    assert {r.cls for r in st.runs} <= {"A", "B"}
    assert st.estimate().total <= full * 0.2
    (note,) = st.budget_notes
    assert note.startswith(f"budget {full / 60 * 0.2:.1f} min: estimated ") and "dropped: class C -> B" in note
    assert f"  {note}" in st.plan_summary()


def test_budget_that_fits_changes_nothing():
    plain = study(["B"])
    st = study(["B"], budget_="100 h")
    assert [r.run_id for r in st.runs] == [r.run_id for r in plain.runs] and st.budget_notes == []


def test_budget_reduces_repetitions_after_class_a_but_not_below_three():
    a = study(["A"], reps=6)
    three = study(["A"], reps=3).estimate().total
    st = study(["A"], budget_=f"{(three + 1) / 60:.3f} min", reps=6)
    assert {r.rep for r in st.runs} == {1, 2, 3} and "3 repetitions fewer where there were more than 3" in st.budget_notes[0]
    assert len(st.runs) < len(a.runs)


def test_budget_never_raises_repetitions_below_three_up_to_three():
    """An experiment with 1 repetition (the default study's memory ones) keeps 1 when the
    others step down: the budget only ever removes runs."""
    s = {"study": "b", "platform": "x4600", "benchmarks": ["cg"], "classes": ["A"], "variants": ["default"],
         "experiments": [{"name": "many", "repetitions": 6, "placements": [{"compact": [1, 2, 4, 8, 16]}]},
                         {"name": "once", "repetitions": 1, "placements": [{"spread": [2, 4]}]}]}
    full = Study(s, "b.yaml", REPO / "config")
    st = Study({**s, "budget": f"{full.estimate().total / 60 * 0.8:.3f} min"}, "b.yaml", REPO / "config")
    once = {r.rep for r in st.runs if r.experiments == ("once",)}
    assert once == {1} and len(st.runs) < len(full.runs) and st.estimate().total <= full.estimate().total * 0.8


def test_budget_that_cannot_be_met_is_one_line_before_any_job():
    with pytest.raises(ConfigError) as e:
        study(["C"], budget_="0.5 min")
    assert str(e.value).startswith("b.yaml: budget: 0.5 min: even class A with at most 3 repetitions is estimated at ")
    assert "\n" not in str(e.value)


def small_platform(tmp_path):
    (tmp_path / "platforms").mkdir()
    (tmp_path / "platforms" / "small.yaml").write_text(
        "name: small\nnodes:\n  - {id: 0, cpus: '0-3', memory_mb: 2048}\n  - {id: 1, cpus: '4-7', memory_mb: 2048}\n"
        "distances: [[10, 20], [20, 10]]\n")
    return tmp_path


SERIAL_INIT_C = {"study": "m", "platform": "small", "benchmarks": ["mg"], "classes": ["C"],
                 "variants": ["default", "serial-init"], "experiments": [{"name": "all", "placements": [{"compact": ["all"]}]}]}


def test_serial_init_working_set_that_a_node_cannot_hold_is_named(tmp_path):
    """Without a budget the study's class is what it asked for: the plan warns."""
    st = Study(SERIAL_INIT_C, "m.yaml", small_platform(tmp_path))
    lines = st.plan_summary()
    assert {r.cls for r in st.runs} == {"C"}
    assert "  mg.C serial-init: 3480 MiB of pages meant for node 0, which has 2048 MiB in all: they will spill" in lines
    # the default build spreads the same pages over both nodes: 1740 MiB each fits
    assert not [line for line in lines if "mg.C default" in line]


def test_machine_speed_is_measured_once_per_study_and_kept(tmp_path, monkeypatch):
    """Every process that plans a study (numaplace plan, Snakemake, cluster jobs) must plan it
    alike: the speed measured first is kept in results/<study>/speed.json and read back."""
    monkeypatch.setattr(budget, "read_bandwidth", lambda **kw: 16.0)
    monkeypatch.setattr(budget, "start_seconds", lambda: 4 * budget.REF_START_S)
    monkeypatch.setattr(budget, "machine_load", lambda: _load(0.0))      # a quiet machine's probe is kept
    first = budget.machine_speed(tmp_path / "s")
    assert first == (16.0 / budget.REF_READ_GBS, 0.25) and (tmp_path / "s" / budget.SPEED_FILE).exists()
    monkeypatch.setattr(budget, "read_bandwidth", lambda **kw: 1 / 0)          # never measured again
    monkeypatch.setattr(budget, "start_seconds", lambda: 1 / 0)
    assert budget.machine_speed(tmp_path / "s") == first


def test_a_slow_machine_pays_each_runs_fixed_cost_and_each_build_at_its_own_speed():
    """In the NUMA VM (QEMU without KVM) a Python starts in seconds, not 0.1 s: the estimate
    scaled only the kernels by bandwidth and was 4x below the real time there."""
    st = study(["B"])
    fast, slow = (budget.Estimate(st.runs, st.binaries(), budget.Speed(1.0, cpu)) for cpu in (1.0, 0.1))
    assert slow.builds == pytest.approx(10 * fast.builds)
    assert slow.total - fast.total == pytest.approx(9 * (len(st.runs) * budget.RUN_OVERHEAD_S + fast.builds))


def test_only_builds_not_done_yet_are_counted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    st = study(["S"])
    assert len(st.builds_to_do()) == 2
    done = Path(st.build_record("cg", "S", "default"))
    done.parent.mkdir(parents=True)
    done.write_text("{}")
    assert st.builds_to_do() == [("mg", "S", "default")]
    assert st.estimate().builds == pytest.approx(budget.BUILD_S)
    assert any(line.startswith("  builds: 2, 1 to do, ~") for line in st.plan_summary())


def test_budget_steps_down_a_class_whose_pages_a_node_cannot_hold(tmp_path):
    """With a budget numaplace chooses the classes: however long the budget, a kernel whose
    serial-init pages (all on the master's node) exceed that node's memory steps down,
    the plan says which run would have spilled where, and a kernel that fits keeps its
    class (cg.C's 891 MiB fit the 2048 MiB node; mg.C's 3480 do not)."""
    st = Study({**SERIAL_INIT_C, "benchmarks": ["cg", "mg"], "budget": "100 h"}, "m.yaml", small_platform(tmp_path))
    assert {(r.bench, r.cls) for r in st.runs} == {("cg", "C"), ("mg", "B")}
    (note,) = st.budget_notes
    assert ("dropped: class C -> B for mg (mg.C serial-init: 3480 MiB of pages meant for node 0, which has "
            "2048 MiB in all: it would spill)") in note
    assert not budget.memory_warnings(st.runs, st.topology)      # mg.B's 435 MiB fit
    assert "  classes: cg C, mg B" in st.plan_summary()


def test_free_memory_is_read_once_per_study_so_the_plan_stays(tmp_path, monkeypatch):
    """MemFree moves with the page cache: the classes a budget chose on this machine must
    not change when Snakemake or a cluster job reads the study again."""
    from types import SimpleNamespace
    auto = SimpleNamespace(name="auto")
    (tmp_path / budget.SPEED_FILE).write_text('{"host": "%s", "memory": 1, "cpu": 1}' % __import__("os").uname().nodename)
    monkeypatch.setattr(budget, "free_mb", lambda topo: {0: 4000})
    assert budget.kept_free_mb(auto, tmp_path) == {0: 4000}
    monkeypatch.setattr(budget, "free_mb", lambda topo: {0: 3000})
    assert budget.kept_free_mb(auto, tmp_path) == {0: 4000}


def test_summary_puts_the_measured_time_from_the_first_build_beside_the_estimate(tmp_path):
    """The estimate counts the builds still to do; the measured span starts at the first of
    those builds when it ran before the first run, so estimate and measurement cover the
    same work."""
    import json
    import pandas as pd
    from numaplace.report.summary import study_answer
    build = tmp_path / "cg.S.build.json"
    build.write_text(json.dumps({"status": "ok", "started": "2026-11-25T10:00:00.000+00:00", "seconds": 1.0}))
    (tmp_path / "estimate.json").write_text(json.dumps(
        {"runs": 2, "runs_s": 100.0, "builds_s": 20.0, "builds": [str(build)]}))
    runs = pd.DataFrame({"current": [True, True], "bench": ["cg", "cg"], "wall_s": [30.0, 30.0],
                         "started": ["2026-11-25T10:00:30.000+00:00", "2026-11-25T10:01:30.000+00:00"]})
    lines = study_answer({"runs": runs}, tmp_path)["lines"]
    assert lines[-1] == ("machine time: estimated 2 min before the study (1 build, 2 runs), measured 2 min "
                         "from the first build's start to the last run's end (2 of 2 runs recorded)")


def test_progress_says_runs_recorded_and_the_estimated_time_left(tmp_path):
    """After each run the console gets one line: runs recorded of the plan's, and the
    plan's estimate for the runs still without a record (issue 29)."""
    import json
    from numaplace.run.progress import progress_line
    assert progress_line(tmp_path) is None                      # no plan: a run outside a workflow
    (tmp_path / "estimate.json").write_text(json.dumps({"per_run_s": {"a.r1": 30.0, "a.r2": 30.0, "b.r1": 90.0}}))
    (tmp_path / "runs" / "a.r1").mkdir(parents=True)
    (tmp_path / "runs" / "a.r1" / "record.json").write_text("{}")
    assert progress_line(tmp_path, "a.r1: ok") == \
        "numaplace: 1 of 3 runs recorded (a.r1: ok); about 2 min of runs left"
    # re-estimated from what was measured: a.r1 took 3x its estimate, so do the rest (issue 41.5)
    assert progress_line(tmp_path, "a.r1: ok", [("a.r1", 90.0)]) == \
        "numaplace: 1 of 3 runs recorded (a.r1: ok); about 6 min of runs left (the plan's estimate x 3, from 1 run measured)"
    for rid in ("a.r2", "b.r1"):
        (tmp_path / "runs" / rid).mkdir()
        (tmp_path / "runs" / rid / "record.json").write_text("{}")
    assert progress_line(tmp_path) == "numaplace: 3 of 3 runs recorded"


def test_numaplace_run_prints_progress_to_the_console(tmp_path, monkeypatch, capsys):
    """The measure rule's stdout goes to the job's log: the progress line goes to stderr."""
    import json
    from numaplace import cli
    from numaplace.run import runner
    res = tmp_path / "results" / "s"
    record = res / "runs" / "a.r1" / "record.json"
    (res / "estimate.json").parent.mkdir(parents=True)
    (res / "estimate.json").write_text(json.dumps({"per_run_s": {"a.r1": 30.0, "b.r1": 120.0}}))

    def fake(spec, binary, record_path, window=None, held=None):
        Path(record_path).parent.mkdir(parents=True)
        Path(record_path).write_text("{}")
        return {"run_id": "a.r1", "status": "ok", "reason": None}
    monkeypatch.setattr(runner, "execute", fake)
    spec = {"run_id": "a.r1", "run": {"idle_check": "off"}, "placement": {"cpus": "0"}}
    assert cli.main(["run", "--spec", json.dumps(spec), "--binary", "/bin/true", "--record", str(record)]) == 0
    out = capsys.readouterr()
    assert out.out == "a.r1: ok\n"
    assert out.err == "numaplace: 1 of 2 runs recorded (a.r1: ok); about 2 min of runs left\n"
    # a record outside results/<study>/runs/: no progress, no error
    assert cli.main(["run", "--spec", json.dumps(spec), "--binary", "/bin/true", "--record", str(tmp_path / "x" / "r.json")]) == 0


# -- a busy machine is said before the study runs (issue 41) --------------------------------
def _load(busy):
    return budget.Load(busy, 15.0 if busy > 0.5 else 0.1, 2)


def test_a_busy_machine_is_said_before_any_run_and_the_study_decides():
    """go says it and goes on; stop says it and stops; wait waits until quiet. (Fails when
    the busy machine is only found out in the records at the end.)"""
    run = {"idle_busy_max": 0.15, "when_busy": "go", "busy_wait": 60}
    said = []
    assert budget.wait_for_quiet(run, said.append, load_of=lambda: _load(0.9)) is True
    assert said and "this machine is busy (load 15.0 on 2 CPUs, 90 % of their time taken by other processes)" in said[0]
    said.clear()
    assert budget.wait_for_quiet({**run, "when_busy": "stop"}, said.append, load_of=lambda: _load(0.9)) is False
    assert "run.when_busy: stop: nothing was run" in said[0]
    said.clear()
    loads, t = iter([_load(0.9), _load(0.8), _load(0.05)]), [0.0]
    assert budget.wait_for_quiet({**run, "when_busy": "wait"}, said.append, load_of=lambda: next(loads),
                                 sleep=lambda s: t.__setitem__(0, t[0] + s), clock=lambda: t[0]) is True
    assert "waiting for quiet" in said[0] and said[-1].startswith("numaplace: quiet now") and t[0] == 10
    said.clear()
    assert budget.wait_for_quiet(run, said.append, load_of=lambda: _load(0.02)) is True and said == []


def test_a_probe_taken_on_a_busy_machine_is_said_in_the_plan_and_not_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "machine_load", lambda: _load(0.9))
    monkeypatch.setattr(budget, "read_bandwidth", lambda probes=None: probes.extend([3.0, 8.0, 16.0]) or 16.0)
    monkeypatch.setattr(budget, "start_seconds", lambda: budget.REF_START_S)
    budget.machine_speed(tmp_path / "s")
    assert budget.busy_words(tmp_path / "s", 0.15).startswith("this machine is busy (load 15.0 on 2 CPUs")
    assert budget.slowest_speed(tmp_path / "s", budget.Speed(0.5, 1.0)) == budget.Speed(3.0 / budget.REF_READ_GBS, 1.0)
    monkeypatch.setattr(budget, "machine_load", lambda: _load(0.01))
    monkeypatch.setattr(budget, "read_bandwidth", lambda probes=None: 32.0)
    assert budget.machine_speed(tmp_path / "s").memory == 1.0          # measured again, quiet now
    assert budget.busy_words(tmp_path / "s", 0.15) is None


def test_a_long_chunk_says_each_run_on_the_console(tmp_path, monkeypatch, capsys):
    """Inside a chunk the console gets a line per run (at most one every
    PROGRESS_EVERY_S), with runs done, the current run and the time left: a chunk of 18
    class B runs is no 37 silent minutes (issue 41.5); the chunk's last line as before."""
    import argparse
    import json
    from numaplace import cli
    import numaplace.run.chunk as chunk_mod
    (tmp_path / "estimate.json").write_text(json.dumps({"per_run_s": {f"r{i}": 60.0 for i in range(3)}}))
    runs = [{"spec": {"run_id": f"r{i}"}} for i in range(3)]

    def fake_chunk(runs, results, ledger, chunk, say, decide=None, aside=None):
        for i in range(3):
            (tmp_path / "runs" / f"r{i}").mkdir(parents=True)
            (tmp_path / "runs" / f"r{i}" / "record.json").write_text("{}")
            say({"run_id": f"r{i}", "status": "ok", "reason": None, "wall_s": 120.0})
        return {"runs": [{"outcome": "ok"}] * 3}
    monkeypatch.setattr(chunk_mod, "measure_chunk", fake_chunk)
    monkeypatch.setattr(cli, "PROGRESS_EVERY_S", 0.0)
    a = argparse.Namespace(runs=json.dumps(runs), chunk=json.dumps({"chunk": "r1.c1"}), results=str(tmp_path),
                           ledger=str(tmp_path / "ledger.json"))
    assert cli._measure(a) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("numaplace: 1 of 3 runs recorded (r1.c1: 1 of its 3 runs, last r0 ok); about 4 min of runs "
                      "left (the plan's estimate x 2, from 1 run measured)")
    assert err[1].startswith("numaplace: 2 of 3 runs recorded (r1.c1: 2 of its 3 runs, last r1 ok)")
    assert err[-1] == "numaplace: 3 of 3 runs recorded (r1.c1: 3 ok)" and len(err) == 3


# -- the estimate's parts, one by one ------------------------------------------------------
# The budget's words, durations as the plan prints them, the machine time per experiment,
# this machine's speed (a faked clock: nothing is timed) kept in speed.json, and the memory
# a run's pages need on a node. Several pin what the mutation run left alive
# (tests/benchmarks/mutation-survivors.md).

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


# -- how busy the machine is, at the thresholds ----------------------------------------------

def test_the_load_is_the_mean_busy_share_of_this_process_cpus(monkeypatch):
    """CPUs this process may not use do not count; the share is their mean, not the busiest one."""
    from numaplace.machine import idle
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 0, 1})
    monkeypatch.setattr(os, "getloadavg", lambda: (1.23456, 9.0, 9.0))
    monkeypatch.setattr(idle, "cpu_busy", lambda seconds: {0: 0.1, 1: 0.5, 2: 0.0, 3: 1.0})
    assert budget.machine_load() == budget.Load(0.2, 1.23, 3)
    monkeypatch.setattr(idle, "cpu_busy", lambda seconds: {7: 1.0})          # none of ours measured
    assert budget.machine_load() == budget.Load(0.0, 1.23, 3)
    assert budget.Load(0.2, 1.23, 3).words() == "load 1.2 on 3 CPUs, 20 % of their time taken by other processes"
    assert budget.Load(0.004, 0.0, 1).words() == "load 0.0 on 1 CPU, 0 % of their time taken by other processes"


def test_a_machine_exactly_at_the_busy_threshold_is_quiet(tmp_path, monkeypatch):
    """run.idle_busy_max is the most others may take: at it the study starts unsaid, the probe
    is kept and the plan says nothing; just above it, it is busy."""
    said = []
    run = {"idle_busy_max": 0.15, "when_busy": "stop", "busy_wait": 60}
    assert budget.wait_for_quiet(run, said.append, load_of=lambda: _load(0.15)) is True and said == []
    assert budget.wait_for_quiet(run, said.append, load_of=lambda: _load(0.151)) is False and len(said) == 1
    assert budget.BUSY_MAX == 0.15
    monkeypatch.setattr(budget, "read_bandwidth", lambda probes=None: 32.0)
    monkeypatch.setattr(budget, "start_seconds", lambda: budget.REF_START_S)
    monkeypatch.setattr(budget, "machine_load", lambda: _load(0.15))
    budget.machine_speed(tmp_path / "s")
    kept = json.loads((tmp_path / "s" / budget.SPEED_FILE).read_text())
    assert kept["busy_when_probed"] is False and kept["busy"] == 0.15
    assert budget.busy_words(tmp_path / "s", 0.15) is None
    assert budget.busy_words(tmp_path / "s", 0.149) == (
        "this machine is busy (load 0.1 on 2 CPUs, 15 % of their time taken by other processes): the estimate "
        "and the measurements will not be reliable (run.when_busy: wait waits for quiet, stop stops)")
    monkeypatch.setattr(budget, "machine_load", lambda: _load(0.2))
    budget.machine_speed(tmp_path / "t")
    assert json.loads((tmp_path / "t" / budget.SPEED_FILE).read_text())["busy_when_probed"] is True


def test_the_slowest_speed_ignores_probes_that_are_no_bandwidth(tmp_path):
    """A zero, negative or non-number probe in speed.json is no slowest reading."""
    (tmp_path / budget.SPEED_FILE).write_text(json.dumps(
        {"host": os.uname().nodename, "read_gbs_probes": [0, -3.0, "2", None, 8.0, 24.0, 16]}))
    assert budget.slowest_speed(tmp_path, Speed(0.75, 2.0)) == Speed(8.0 / 32.0, 2.0)
    (tmp_path / budget.SPEED_FILE).write_text(json.dumps({"host": os.uname().nodename, "read_gbs_probes": [0]}))
    assert budget.slowest_speed(tmp_path, Speed(0.75, 2.0)) == Speed(0.75, 2.0)


def test_a_runs_fixed_cost_at_the_reference_is_a_third_of_a_second():
    """The measured gap between runs there (0.34 s in the default study): the estimate's base."""
    assert (budget.RUN_OVERHEAD_S, budget.BUILD_S, budget.REF_READ_GBS, budget.REF_START_S) == (0.35, 1.0, 32.0, 0.10)


def test_waiting_for_quiet_looks_every_5_s_until_run_busy_wait_has_passed_then_starts_anyway():
    """busy_wait 10 s: looks at 5 s and 10 s, then says it starts anyway; the wait is said in minutes."""
    run = {"idle_busy_max": 0.15, "when_busy": "wait", "busy_wait": 10}
    said, looks, t = [], [], [0.0]
    busy = lambda: looks.append(t[0]) or _load(0.9)                             # noqa: E731
    assert budget.wait_for_quiet(run, said.append, load_of=busy, sleep=lambda s: t.__setitem__(0, t[0] + s),
                                 clock=lambda: t[0]) is True
    assert looks == [0.0, 5.0, 10.0] and t[0] == 10.0
    assert said == [
        "numaplace: this machine is busy (load 15.0 on 2 CPUs, 90 % of their time taken by other processes): "
        "waiting for quiet, at most 10 s (run.busy_wait)",
        "numaplace: still busy after 10 s (load 15.0 on 2 CPUs, 90 % of their time taken by other processes): the "
        "study starts anyway; its runs are flagged where other load shared their CPUs"]
    said.clear()
    budget.wait_for_quiet({**run, "busy_wait": 600}, said.append, load_of=lambda: _load(0.9),
                          sleep=lambda s: t.__setitem__(0, t[0] + s), clock=lambda: t[0])
    assert said[0].endswith("waiting for quiet, at most 10 min (run.busy_wait)")
    assert said[1].startswith("numaplace: still busy after 10 min (")


def test_the_first_look_at_the_load_is_the_window_opened_as_the_workflow_started(monkeypatch):
    """The start costs no wait: the window opened earlier is read once; every later look is a fresh one."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "getloadavg", lambda: (0.5, 0.0, 0.0))
    window = type("W", (), {"foreign_busy": lambda self, cpus, seconds: 0.25 if cpus == [0, 1] else None})()
    fresh = []
    monkeypatch.setattr(budget, "machine_load", lambda since=None: fresh.append(since) or budget.Load(0.5, 0.5, 2))
    look = budget.load_since(window)
    look(), look(), look()
    assert fresh == [window, None, None]
    monkeypatch.undo()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1, 0})
    monkeypatch.setattr(os, "getloadavg", lambda: (0.456, 0.0, 0.0))
    assert budget.machine_load(since=window) == budget.Load(0.25, 0.46, 2)


def test_a_node_whose_free_memory_is_unknown_is_not_said_to_spill(monkeypatch):
    """Free memory read for node 0 only: node 1's share is not a spill; on platform auto the
    free memory is read from this machine (not the topology's totals) when none is given."""
    runs = [run("a", "cg", "C", place([0, 4]))]
    assert memory_spills(runs, TWO, {0: 4000}) == []
    auto = Topology("auto", {0: [0, 1], 1: [2, 3]}, {0: 4000, 1: 4000})
    monkeypatch.setattr(system, "free_mb_by_node", lambda: {"0": 100, "1": 5000})
    (s,) = memory_spills([run("a", "cg", "C", finish([0, 2], Memory("local"), "process", "numactl", "x", auto))], auto)
    assert (s.node, s.need_mb, s.free_mb, s.measured) == (0, 891 / 2, 100, True)
