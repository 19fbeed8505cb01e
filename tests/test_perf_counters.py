"""numaplace.run.counters without perf: the counts taken from parsed perf stat output, the
record's `counters` when perf wrote nothing, the benchmark perf forked (found in a scripted
/proc), and the remote share numa_maps predicts. Exact values on hand-made inputs."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from numaplace.machine.pmu import EVENTS, OUTPUT, Availability, EventSet
from numaplace.run import counters

pytestmark = pytest.mark.unit

SKX, ARM = EVENTS["intel"][0], EVENTS["arm"][0]


def counted(value, running_pct=100.0):
    return {"value": value, "status": "counted", "unit": "", "printed": "", "running_pct": running_pct}


def test_counts_are_rounded_to_whole_accesses_and_local_never_drops_below_zero():
    """perf scales a multiplexed count (a fraction); the record keeps whole accesses. On
    a CPU whose first event counts every DRAM access, local is that total less remote,
    and 0 (never negative) where remote was scaled above it."""
    p = {"mem_load_l3_miss_retired.local_dram": counted(1000.6, 62.5),
         "mem_load_l3_miss_retired.remote_dram": counted(299.5, 61.25)}
    assert counters.counts(p, SKX) == {"local": 1001, "remote": 300, "remote_share": 300 / 1301, "running_pct": 61.25}
    total = {"ll_cache_miss_rd": counted(4000.4), "remote_access": counted(1000.0, None)}
    assert counters.counts(total, ARM) == {"local": 3000, "remote": 1000, "remote_share": 0.25, "running_pct": 100.0}
    over = {"ll_cache_miss_rd": counted(900.0), "remote_access": counted(1000.0)}
    assert counters.counts(over, ARM) == {"local": 0, "remote": 1000, "remote_share": 1.0, "running_pct": 100.0}
    neither = {"ll_cache_miss_rd": counted(10.0, None), "remote_access": counted(3.0, None)}
    assert counters.counts(neither, ARM)["running_pct"] is None


def test_either_event_missing_gives_no_counts():
    first = {"mem_load_l3_miss_retired.local_dram": counted(1000.0)}
    remote = {"mem_load_l3_miss_retired.remote_dram": counted(10.0)}
    assert counters.counts(first, SKX) is None and counters.counts(remote, SKX) is None
    assert counters.counts({**first, "mem_load_l3_miss_retired.remote_dram": counted(None)}, SKX) is None
    assert counters.counts({}, SKX) is None


def counting(tmp_path, modifier=":u", paranoid=2):
    a = Availability(True, events=SKX, modifier=modifier, perf="/usr/bin/perf", paranoid=paranoid)
    return counters.Counting(a, tmp_path)


def test_the_records_counters_say_why_nothing_was_counted(tmp_path):
    """No counts of both events: the record says whether perf was killed first, wrote no
    file, or wrote one without both events, with the events and scope it was asked for."""
    c = counting(tmp_path)
    base = {"events": {"first": "mem_load_l3_miss_retired.local_dram:u",
                       "remote": "mem_load_l3_miss_retired.remote_dram:u"},
            "measures": "local", "cpu": SKX.cpu, "scope": "user space only (perf_event_paranoid 2)",
            "file": OUTPUT}
    assert c.result() == {"captured": False, "why": f"perf stat wrote no counts of both events ({OUTPUT} is missing)",
                          **base}
    assert c.result(timed_out=True) == {
        "captured": False, "why": "the run was killed at its timeout before perf stat wrote its counts", **base}
    (tmp_path / OUTPUT).write_text("# started on Mon\n\n<not counted>,,mem_load_l3_miss_retired.local_dram:u,0,0.00,,\n")
    assert c.result() == {"captured": False, "why": f"perf stat wrote no counts of both events to {OUTPUT}", **base}
    (tmp_path / OUTPUT).write_text("# started on Mon\n\n1500,,mem_load_l3_miss_retired.local_dram:u,10,100.00,,\n"
                                   "500,,mem_load_l3_miss_retired.remote_dram:u,10,100.00,,\n")
    assert c.result() == {"captured": True, **base, "local": 1500, "remote": 500, "remote_share": 0.25,
                          "running_pct": 100.0}
    assert counting(tmp_path, modifier="").result()["scope"] == "user space and kernel"


def test_a_launcher_that_runs_elsewhere_is_not_counted_and_says_where(tmp_path):
    aprun = SimpleNamespace(name="aprun", on_measured_node=False)
    assert counters.for_run({"counters": True}, aprun, tmp_path) == (
        None, {"captured": False, "why": "aprun starts the process on a compute node"})
    assert counters.for_run({"counters": False}, aprun, tmp_path) == (None, None)


def fake_proc(tmp_path, procs, children=None):
    """A /proc of (pid, ppid, state) entries; children: {pid: "812 815"} where the kernel
    has CONFIG_PROC_CHILDREN."""
    proc = tmp_path / "proc"
    for pid, ppid, state in procs:
        (proc / str(pid) / "task" / str(pid)).mkdir(parents=True)
        # comm with a space and a ')' in it: the fields after the last ')' are state, ppid, ...
        (proc / str(pid) / "stat").write_text(f"{pid} (perf) x) {state} {ppid} {pid} {pid} 0 -1 4194560 0\n")
    for pid, text in (children or {}).items():
        (proc / str(pid) / "task" / str(pid) / "children").write_text(text)
    (proc / "self").mkdir()
    return proc


def test_the_benchmark_is_the_process_perf_forked(tmp_path):
    """The sampler must watch perf's child, not perf: the first child the kernel lists, or
    without a children file, the lowest pid whose parent (stat field 4) is perf."""
    proc = fake_proc(tmp_path, [(700, 1, "S"), (812, 700, "R"), (815, 700, "S"), (900, 812, "S"), (701, 2, "S")],
                     children={700: "815 812 "})
    assert counters._children(700, proc) == [815, 812]
    assert counters.Counting.workload_pid(700, timeout=1.0, proc=proc) == 815
    (proc / "700" / "task" / "700" / "children").unlink()
    assert counters._children(700, proc) == [812, 815]
    assert counters._children(812, proc) == [900]
    assert counters.Counting.workload_pid(700, timeout=1.0, proc=proc) == 812
    assert counters._children(900, proc) == []


def test_without_a_child_the_pid_itself_is_watched(tmp_path):
    """perf gone (a zombie, or no process at all) before it forked: its own pid comes back."""
    import os
    pid = os.getpid()
    proc = fake_proc(tmp_path, [(pid, 1, "Z")], children={pid: ""})
    assert counters.Counting.workload_pid(pid, timeout=5.0, proc=proc) == pid


def test_the_predicted_remote_share_is_the_data_on_nodes_without_the_runs_threads():
    assert counters.predicted_remote_share({"0": 600, "1": 300, "2": 100}, {0}) == 0.4
    assert counters.predicted_remote_share({"0": 600, "1": 300, "2": 100}, {0, 2}) == 0.3
    assert counters.predicted_remote_share({"0": 600}, {1}) == 1.0
    assert counters.predicted_remote_share({"0": 600, "1": 200}, {0, 1}) == 0.0
    assert counters.predicted_remote_share({}, {0}) is None
    assert counters.predicted_remote_share({"0": 0}, {0}) is None
    assert counters.predicted_remote_share({"0": 600}, set()) is None
    assert counters.predicted_remote_share(None, {0}) is None


def test_exit_status_reads_the_signal_from_the_last_line_of_stderr(tmp_path):
    """perf exits 0 for a launch line killed by a signal and prints `<argv0>: <signal>`:
    the status becomes minus the signal's number, whatever the line was before it."""
    c = counters.Counting(Availability(True, events=EventSet("x", "a", "b"), perf="perf"), tmp_path)
    err = tmp_path / "stderr"
    err.write_text("numactl: Killed\n")
    assert c.exit_status(0, err) == 0                     # no launch line wrapped yet
    c.wrap(["numactl", "--physcpubind=0", "/x/cg.S.x"])
    assert c.exit_status(0, err) == -9
    err.write_text("x" * 5000 + "\nnumactl: Aborted\n\n  \n")
    assert c.exit_status(0, err) == -6
    assert c.exit_status(0, tmp_path / "missing") == 0


def test_waiting_for_perfs_child_polls_ever_less_often_up_to_5_ms_and_stops_when_perf_is_a_zombie(tmp_path, monkeypatch):
    """perf starts its child within ms: polled from 0.2 ms, doubling, at most every 5 ms,
    until the timeout; a perf already gone (state Z) is not waited for at all."""
    import itertools
    import os
    pid = os.getpid()
    proc = fake_proc(tmp_path, [(pid, 1, "S")], children={pid: ""})
    sleeps = []
    monkeypatch.setattr(counters, "time", SimpleNamespace(monotonic=itertools.count(0.0, 0.001).__next__,
                                                          sleep=sleeps.append))
    assert counters.Counting.workload_pid(pid, timeout=0.0095, proc=proc) == pid
    assert sleeps == pytest.approx([0.0002, 0.0004, 0.0008, 0.0016, 0.0032, 0.005, 0.005, 0.005, 0.005])
    sleeps.clear()
    (proc / str(pid) / "stat").write_text(f"{pid} (perf) Z 1 {pid} {pid} 0 -1 4194560 0\n")
    assert counters.Counting.workload_pid(pid, timeout=0.0095, proc=proc) == pid
    assert sleeps == []
