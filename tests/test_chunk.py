"""One chunk measured in one process (numaplace.run.chunk): each run's idle window, opened
as the run before it is reaped; the lock wait; the ledger; the not-needed runs of adaptive
repetitions. Nothing is measured: the runner's execute_build and record_not_needed are
stand-ins that note what they were given. Several tests pin what the mutation run left
alive (tests/benchmarks/mutation-survivors.md names the test that kills each)."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from numaplace.run import chunk, runner

pytestmark = pytest.mark.unit


class Window:
    """An idle window as measure_chunk handles it: opened (by _window), then stay_off()."""

    def __init__(self, run_id, affinity, log):
        self.run_id, self.affinity, self.log = run_id, affinity, log
        log.append(("open", run_id))

    def stay_off(self):
        self.log.append(("stay_off", self.run_id))


def test_a_window_leaves_the_placements_cpus_unless_the_idle_check_is_off(monkeypatch):
    from numaplace.machine.idle import IdleWindow
    got = []
    monkeypatch.setattr(IdleWindow, "leave", classmethod(lambda cls, cpus, affinity: got.append((cpus, affinity))
                                                        or "window"))
    assert chunk._window({"run": {"idle_check": "off"}, "placement": {"cpus": "0"}}, {0, 1}) is None
    assert got == []
    assert chunk._window({"run": {"idle_check": "on"}, "placement": {"cpus": "0-1,4"}}, {0, 1, 4, 5}) == "window"
    assert chunk._window({"placement": {"cpus": "2"}}, {9}) == "window"          # no run settings: checked
    assert [(list(c), a) for c, a in got] == [([0, 1, 4], {0, 1, 4, 5}), ([2], {9})]


@pytest.fixture
def rig(tmp_path, monkeypatch):
    """measure_chunk with stand-ins: execute_build notes what it got and reaps its
    benchmark (calls `ended`) unless the run is in `rig.unreaped`; _window opens a Window."""
    log, calls = [], []
    rig = SimpleNamespace(log=log, calls=calls, unreaped=set(), said=[])

    def execute_build(spec, build, record, window=None, held_lock=None, probed=None, extra=None, ended=None):
        os.close(held_lock)
        rid = spec["run_id"]
        calls.append({"run_id": rid, "build": build, "record": record, "window": window, "probed": probed,
                      "extra": extra})
        log.append(("run", rid))
        if rid not in rig.unreaped:
            ended()
        log.append(("returned", rid))
        return {"run_id": rid, "status": "ok" if rid not in rig.unreaped else "placement-failed"}

    monkeypatch.setattr(runner, "execute_build", execute_build)
    monkeypatch.setattr(chunk, "_window", lambda spec, affinity: Window(spec["run_id"], affinity, log))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1} if pid == 0 else {"pid", pid})
    monkeypatch.setattr("numaplace.machine.guard.lock_path", lambda: tmp_path / "machine.lock")
    rig.runs = [{"spec": {"run_id": f"a.r{i}", "run": {}, "placement": {"cpus": "0"}, "argv": [str(i)]},
                 "build": f"b{i}.json"} for i in (1, 2, 3)]
    rig.results = tmp_path / "results"
    return rig


def test_each_run_gets_the_window_opened_as_the_run_before_it_ended(rig, tmp_path):
    """a.r1's window opens before the loop; a.r2's as a.r1's benchmark is reaped (inside the
    runner); a.r2 launched nothing, so a.r3's opens after it returns; none opens after the
    last run. Each window is turned off after the run that opened it, with the chunk's
    affinity, and every run gets the chunk's one probed set and its own build."""
    rig.unreaped = {"a.r2"}
    ledger = tmp_path / "deep" / "er" / "ledger.json"
    out = chunk.measure_chunk(rig.runs, rig.results, ledger, {"chunk": "r1.c1", "round": 1, "seed": 5},
                              say=rig.said.append)
    assert rig.log == [("open", "a.r1"), ("run", "a.r1"), ("open", "a.r2"), ("returned", "a.r1"),
                       ("stay_off", "a.r2"), ("run", "a.r2"), ("returned", "a.r2"), ("open", "a.r3"),
                       ("stay_off", "a.r3"), ("run", "a.r3"), ("returned", "a.r3")]
    assert [c["window"].run_id for c in rig.calls] == ["a.r1", "a.r2", "a.r3"]
    assert all(c["window"].affinity == {0, 1} for c in rig.calls)
    assert [c["build"] for c in rig.calls] == ["b1.json", "b2.json", "b3.json"]
    assert [c["record"] for c in rig.calls] == [rig.results / "runs" / f"a.r{i}" / "record.json" for i in (1, 2, 3)]
    probed = [c["probed"] for c in rig.calls]
    assert isinstance(probed[0], set) and all(p is probed[0] for p in probed)
    assert [r["run_id"] for r in rig.said] == ["a.r1", "a.r2", "a.r3"]
    # the ledger, written last in one piece (a temporary file renamed), in a new folder
    assert json.loads(ledger.read_text()) == out and ledger.read_text() == json.dumps(out, indent=1)
    assert sorted(p.name for p in ledger.parent.iterdir()) == ["ledger.json"]
    assert set(out) == {"chunk", "round", "seed", "finished", "runs"}
    assert (out["chunk"], out["round"], out["seed"]) == ("r1.c1", 1, 5) and out["finished"].startswith("20")
    assert out["runs"] == [{"run_id": f"a.r{i}", "outcome": o,
                            "record": str(rig.results / "runs" / f"a.r{i}" / "record.json")}
                           for i, o in ((1, "ok"), (2, "placement-failed"), (3, "ok"))]


def test_the_ledger_is_renamed_from_a_tmp_file(rig, tmp_path, monkeypatch):
    moves, replace = [], os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: moves.append((os.path.basename(a), os.path.basename(b)))
                        or replace(a, b))
    chunk.measure_chunk(rig.runs[:1], rig.results, tmp_path / "ledger.json")
    assert moves == [("ledger.json.tmp", "ledger.json")]


def test_the_first_run_carries_the_lock_wait(rig, tmp_path, monkeypatch):
    """The wait for the machine lock, in seconds to the millisecond, on the chunk's first
    run only; every run carries its place in the chunk."""
    import time
    ticks = [100.0, 100.12345]                       # before and after taking the lock
    monkeypatch.setattr(time, "monotonic", lambda: ticks.pop(0) if len(ticks) > 1 else ticks[0])
    chunk.measure_chunk(rig.runs[:2], rig.results, tmp_path / "ledger.json", {"chunk": "r2.c3"})
    first, second = (c["extra"] for c in rig.calls)
    assert first == {"lock_wait_s": 0.123, "round": {"chunk": "r2.c3", "position": 1, "runs": 2}}
    assert second == {"round": {"chunk": "r2.c3", "position": 2, "runs": 2}}


def test_not_needed_records_are_said_too(rig, tmp_path, monkeypatch):
    """A run past an adaptive min that the decision finds not needed gets its record from
    record_not_needed (nothing measured) and is said like a measured one; a fixed run
    before it in the chunk does not stop the asking."""
    made = []

    def record_not_needed(spec, record, reason, extra):
        made.append((spec["run_id"], reason, extra))
        return {"run_id": spec["run_id"], "status": "not-needed"}
    monkeypatch.setattr(runner, "record_not_needed", record_not_needed)
    monkeypatch.setattr("numaplace.record.store.iter_records", lambda d: iter([]))
    reps = {"min": 1, "max": 3, "alpha": 0.05}
    runs = [rig.runs[0], *({**r, "spec": {**r["spec"], "rep": 2}, "adaptive": reps} for r in rig.runs[1:])]
    decision = SimpleNamespace(stop=True, rounds=1, p=0.01, reason="separated")
    out = chunk.measure_chunk(runs, rig.results, tmp_path / "ledger.json", {"chunk": "r2.c1"},
                              say=rig.said.append, decide=lambda records, spec, least, alpha, most=None: decision)
    assert [m[0] for m in made] == ["a.r2", "a.r3"]
    assert [r["run_id"] for r in rig.said] == ["a.r2", "a.r3", "a.r1"]
    assert [r["status"] for r in rig.said] == ["not-needed", "not-needed", "ok"]
    assert [e["outcome"] for e in out["runs"]] == ["ok", "not-needed", "not-needed"]


def test_only_runs_with_a_record_of_another_definition_are_set_aside(rig, tmp_path):
    """aside() is told, once, the runs about to be measured whose folder holds a record
    that is not theirs (an older numaplace, a changed study); a run without any record
    and a run already recorded are not in it."""
    from numaplace.run.runner import definition_digest
    runs_dir = rig.results / "runs"
    for rid, rec in (("a.r1", {"definition_sha256": definition_digest(rig.runs[0]["spec"]), "status": "ok"}),
                     ("a.r3", {"definition_sha256": "0" * 64, "status": "ok"})):
        (runs_dir / rid).mkdir(parents=True)
        (runs_dir / rid / "record.json").write_text(json.dumps(rec))
    asides = []
    out = chunk.measure_chunk(rig.runs, rig.results, tmp_path / "ledger.json", aside=asides.append)
    assert asides == [["a.r3"]]
    assert [c["run_id"] for c in rig.calls] == ["a.r2", "a.r3"]
    assert [e["outcome"] for e in out["runs"]] == ["kept", "ok", "ok"]
