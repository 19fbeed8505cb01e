"""The sampler's loop (numaplace.run.capture.Sampler.run), driven by a scripted process: its
numa_maps, its threads, the CPU time each read costs and the clock are given in advance,
so that every interval it waits, every sample it keeps and its summary are exact values.
Nothing is sampled live here (tests/test_numa_maps.py does that)."""
from __future__ import annotations

import itertools
import json
import subprocess
from types import SimpleNamespace

import pytest

from numaplace.run import capture

pytestmark = pytest.mark.unit

PAGE = 4096


def numa_maps_text(n0, n1=0):
    """A benchmark's numa_maps: its binary's page cache (never data) and its anonymous data,
    n0 pages on node 0 and n1 on node 1 (no data line at all while it has none)."""
    lines = ["55d0e4c00000 bind:0-1 file=/work/bin/cg.W.x mapped=20 N0=20 kernelpagesize_kB=4"]
    if n0 + n1:
        pages = " ".join(f"N{n}={k}" for n, k in ((0, n0), (1, n1)) if k)
        lines.append(f"7f1000000000 bind:0-1 anon={n0 + n1} dirty={n0 + n1} {pages} kernelpagesize_kB=4")
    return "\n".join(lines) + "\n"


class Waits:
    """The sampler's stop_event: never set; notes each interval it is asked to wait."""

    def __init__(self):
        self.waits = []

    def is_set(self):
        return False

    def wait(self, seconds):
        self.waits.append(seconds)


def scripted(monkeypatch, footprints, threads=None, read_cost=0.0, cost=0.0, own_cpus=(0, 1),
             numastat=None, texts=None, clock_step=0.25, **settings):
    """A Sampler of pid 4242 whose process shows footprints[i] ((pages on node 0, on node 1))
    and threads[i] ({tid: (cpu, mask)}) at sample i, then exits. Each sample costs read_cost
    of CPU time to read numa_maps and cost in all; the clock starts at 100.0 and moves on
    0.25 s each time it is read (t0, exec seen, then one per sample)."""
    texts = iter(texts if texts is not None else [numa_maps_text(*f) for f in footprints])
    team = iter(threads or [])

    def thread_cpus(pid):
        try:
            return next(team)
        except StopIteration:
            raise ProcessLookupError(pid) from None
    calls = itertools.count()

    def read(pid):
        assert pid == 4242
        try:
            return next(texts)
        except StopIteration:
            raise ProcessLookupError(pid) from None

    def thread_time():
        if not (read_cost or cost):
            return 0.0
        i, step = divmod(next(calls), 3)    # per sample: its start, after the read, its end
        return 10.0 * i + (0.0, read_cost, cost)[step]

    monkeypatch.setattr(capture, "read_numa_maps", read)
    monkeypatch.setattr(capture, "thread_cpus", thread_cpus)
    monkeypatch.setattr(capture, "time", SimpleNamespace(monotonic=itertools.count(100.0, clock_step).__next__,
                                                         thread_time=thread_time))
    monkeypatch.setattr(capture.os, "sched_getaffinity", lambda pid: set(own_cpus))
    taken = []
    if numastat is not None:
        def run(argv, **kw):
            taken.append(argv)
            return SimpleNamespace(stdout=f"numastat -p take {len(taken)}\n")
        monkeypatch.setattr(capture, "subprocess", SimpleNamespace(run=run, SubprocessError=subprocess.SubprocessError))
    s = capture.Sampler(4242, settings.pop("outdir", "/nonexistent"), numastat_on=numastat is not None,
                        threads_on=threads is not None, **settings)
    s.stop_event = Waits()
    s.numastat_taken = taken
    s.run()
    return s


def test_the_interval_doubles_while_steady_up_to_interval_max_and_drops_to_interval_min_on_change(monkeypatch):
    """Dense sampling while first touch places pages, geometric back-off once the footprint
    holds still (within 1 %, the limit included), never past interval_max, and back to
    interval_min the moment it moves again: what decides whether a migration is seen."""
    s = scripted(monkeypatch, [(1000,), (1050,), (1060,), (1060,), (1060,), (1060,), (1060,), (1500,),
                               (1500,), (1515,), (1531,)],
                 interval_min=0.01, interval_max=0.08)
    assert s.stop_event.waits == pytest.approx([
        0.01,          # the first sample: nothing to compare with
        0.01,          # +5 %: pages still being placed
        0.02,          # +0.95 %: steady
        0.04, 0.08,
        0.08, 0.08,    # held at interval_max
        0.01,          # the footprint moved: back to interval_min
        0.02,
        0.04,          # +1 % exactly: still steady
        0.01])         # +1.06 %: moved
    assert len(s.samples) == 11 and s.errors == []


def test_the_interval_never_drops_below_what_the_reads_cost(monkeypatch):
    """Off the benchmark's CPUs the wait is at least 1/duty_max of the numa_maps read's CPU
    time (the page-table walk the benchmark feels) and 1/duty_free of the whole sample's."""
    s = scripted(monkeypatch, [(100,), (200,), (200,), (200,), (200,), (200,), (200,)],
                 threads=[{7: (2, "2-3")}] * 7, read_cost=0.0002, cost=0.0005,
                 interval_min=0.002, interval_max=0.032)
    assert s.shared_cpus is False
    # 0.0002 / 0.05 = 0.004 (the read); 0.0005 / 0.25 = 0.002 (the sample)
    assert s.stop_event.waits == pytest.approx([0.004, 0.004, 0.008, 0.016, 0.032, 0.032, 0.032])
    assert s.read_seconds == pytest.approx(7 * 0.0002) and s.sample_seconds == pytest.approx(7 * 0.0005)
    assert s.summary()["numa_maps"]["read_seconds"] == 0.0014
    assert s.summary()["numa_maps"]["sample_seconds"] == 0.0035


def test_sharing_the_benchmarks_cpus_holds_a_sample_to_duty_max_and_stays_away_once_the_team_is_up(monkeypatch):
    """One thread may use the sampler's CPUs (mask 0-3 against the sampler's 0-1): the whole
    sample is held to duty_max (0.003 / 0.05 = 0.06 s), and once the footprint is confirmed
    steady with the same team of more than one thread alive twice in a row, the sampler
    waits interval_max (each wake-up preempts a team member)."""
    team = {11: (0, "0-3"), 12: (2, "2")}
    s = scripted(monkeypatch, [(500,), (500,), (500,), (600,), (600,), (600,)],
                 threads=[{11: (0, "0-3")}, {**team, 13: (3, "3")}, {**team, 13: (3, "3")}, {**team, 13: (3, "3")},
                          team, team],
                 read_cost=0.002, cost=0.003, interval_min=0.001, interval_max=1.0)
    assert s.shared_cpus is True
    assert s.stop_event.waits == pytest.approx([
        0.06,          # first sample: interval_min, held to 0.06
        0.12,          # steady, but the team grew (1 -> 3 threads): doubled
        1.0,           # steady, 3 threads as before: interval_max
        0.06,          # the footprint moved
        0.12,          # steady, the team shrank (3 -> 2): doubled
        1.0])          # steady, 2 threads as before
    assert [x["threads"] for x in s.samples] == [1, 3, 3, 3, 2, 2]
    assert [x["team"] for x in s.samples] == [1, 3, 3, 3, 3, 3]
    assert s.team == 3


def test_a_steady_footprint_with_one_thread_only_backs_off_geometrically(monkeypatch):
    """A single thread is no OpenMP team: the sampler keeps doubling, never jumps to
    interval_max (the team rule needs more than one thread)."""
    s = scripted(monkeypatch, [(500,)] * 4, threads=[{11: (0, "0-3")}] * 4, interval_min=0.01, interval_max=1.0)
    assert s.stop_event.waits == pytest.approx([0.01, 0.02, 0.04, 0.08])


def test_a_team_off_the_samplers_cpus_is_sampled_with_the_geometric_back_off(monkeypatch):
    """When the sampler runs on CPUs no benchmark thread may use, its wake-ups preempt
    nobody: a steady footprint with a whole team alive still backs off only by doubling."""
    team = {11: (2, "2-3"), 12: (3, "2-3")}
    s = scripted(monkeypatch, [(500,)] * 4, threads=[team] * 4, interval_min=0.01, interval_max=1.0)
    assert s.shared_cpus is False
    assert s.stop_event.waits == pytest.approx([0.01, 0.02, 0.04, 0.08])


def test_numastat_p_is_taken_once_steady_then_only_after_5_percent_growth_three_times_at_most(monkeypatch):
    """The per-process numastat costs a subprocess next to the run: taken when the footprint
    is first steady, again only when it has grown by more than 5 % since, and three times
    in all; numastat_p_bytes is the footprint it was taken at."""
    s = scripted(monkeypatch, [(1000,), (1000,), (1000,), (1040,), (1040,), (1200,), (1200,), (1400,),
                               (1400,), (1700,), (1700,)], numastat={}, interval_min=0.01, interval_max=1.0)
    assert s.numastat_taken == [["numastat", "-p", "4242"]] * 3
    assert s.numastat_p_takes == 3 and s.numastat_p == "numastat -p take 3\n"
    assert s.numastat_p_bytes == 1400 * PAGE
    assert s.summary()["numastat_process_taken"] is True
    assert s.summary()["team"] is None and s.summary()["threads"] == {}      # threads not sampled


def test_a_process_without_data_is_never_steady(monkeypatch):
    """Before the benchmark has touched any data (a footprint of 0 bytes twice) there is no
    steady working set yet: fidelity must not judge an empty one."""
    s = scripted(monkeypatch, [(0,), (0,)], threads=[{1: (0, "0-3"), 2: (1, "0-3")}] * 2,
                 interval_min=0.01, interval_max=1.0, numastat={})
    assert s.numastat_taken == [] and s.numastat_p is None     # no per-process numastat of nothing
    assert s.stop_event.waits == pytest.approx([0.01, 0.02])     # backs off, but no team rule without data
    assert s.steady is None and s.summary()["numa_maps"]["steady"] is None
    assert s.peak is s.samples[0]


def test_the_summary_names_peak_steady_and_last_samples_and_each_threads_cpus(monkeypatch, tmp_path):
    """The record's captures: the first sample at the largest footprint (peak), the last one
    equal to the one before it (steady: what fidelity judges), the last one read, and per
    thread how many samples saw it on each CPU, in all and per affinity mask."""
    s = scripted(monkeypatch, [(600, 0), (800, 400), (800, 400), (900, 300), (700, 300)],
                 threads=[{21: (0, "0-1")}, {21: (1, "0-1"), 22: (2, "2-3")}, {21: (1, "0-1"), 22: (3, "2-3")},
                          {21: (1, "1"), 22: (3, "2-3")}, {21: (1, "1")}],
                 interval_min=0.01, interval_max=1.0, outdir=tmp_path)
    view = lambda t, n0, n1, threads, team: {                                     # noqa: E731
        "t": t, "data_bytes": {"0": n0 * PAGE, **({"1": n1 * PAGE} if n1 else {})},
        "data_pages": {"0": n0, **({"1": n1} if n1 else {})},
        "total_bytes": {"0": (n0 + 20) * PAGE, **({"1": n1 * PAGE} if n1 else {})},
        "policies": {"bind:0-1": (n0 + n1) * PAGE}, "threads": threads, "team": team}
    summary = s.summary()
    assert summary["numa_maps"] == {
        "samples": 5, "read_seconds": 0.0, "sample_seconds": 0.0, "exec_seen_s": 0.25,
        "peak": view(0.75, 800, 400, 2, 2),         # 1200 pages, first seen at t=0.75 (not the later 1200)
        "steady": view(1.25, 900, 300, 2, 2),       # the last whose total equals the one before it
        "last": view(1.5, 700, 300, 1, 2)}
    assert summary["threads"] == {
        "21": {"cpus": {"0": 1, "1": 4}, "allowed": "1", "by_allowed": {"0-1": {"0": 1, "1": 2}, "1": {"1": 2}}},
        "22": {"cpus": {"2": 1, "3": 2}, "allowed": "2-3", "by_allowed": {"2-3": {"2": 1, "3": 2}}}}
    assert (summary["team"], summary["sampler_cpus"], summary["sampler_shared_cpus"]) == (2, "0-1", True)
    assert summary["numastat_process_taken"] is False and summary["errors"] == []
    assert [x["t"] for x in s.samples] == [0.5, 0.75, 1.0, 1.25, 1.5]
    # the raw evidence beside the record: every sample, and the peak's and steady's numa_maps
    s.write()
    lines = (tmp_path / "numa_maps.samples.jsonl").read_text().splitlines()
    assert [json.loads(l)["t"] for l in lines] == [0.5, 0.75, 1.0, 1.25, 1.5]
    assert (tmp_path / "numa_maps.peak.txt").read_text() == numa_maps_text(800, 400)
    assert (tmp_path / "numa_maps.steady.txt").read_text() == numa_maps_text(900, 300)
    assert not (tmp_path / "numastat.process.txt").exists()


def test_a_steady_sample_that_is_the_peak_is_written_once(monkeypatch, tmp_path):
    """The peak's numa_maps is written; the steady one only when it is another sample."""
    s = scripted(monkeypatch, [(100,), (300,), (301,)], interval_min=0.01, interval_max=1.0, outdir=tmp_path)
    s.write()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["numa_maps.peak.txt", "numa_maps.samples.jsonl"]
    s = scripted(monkeypatch, [(100,), (300,), (300,), (300,), (200,), (200,)], interval_min=0.01,
                 interval_max=1.0, outdir=tmp_path / "b")
    s.write()
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [
        "numa_maps.peak.txt", "numa_maps.samples.jsonl", "numa_maps.steady.txt"]
    assert (tmp_path / "b" / "numa_maps.steady.txt").read_text() == numa_maps_text(200)


def test_steady_is_within_one_percent_of_the_sample_before():
    assert capture._steady(1000, 1010) and capture._steady(1010, 1000)
    assert not capture._steady(1000, 1011) and not capture._steady(1000, 989)
    assert capture._steady(0, 0) and not capture._steady(0, 1)


def test_interval_max_below_interval_min_is_raised_to_it():
    s = capture.Sampler(1, "/nonexistent", interval_min=0.5, interval_max=0.1)
    assert (s.imin, s.imax) == (0.5, 0.5)
    s = capture.Sampler(1, "/nonexistent", interval_min=0.01, interval_max=3.0)
    assert (s.imin, s.imax) == (0.01, 3.0)


def test_numastat_delta_is_after_less_before_per_counter_and_node():
    """A node new in `after` counts from 0; a counter missing from `before` is left out;
    without either reading there is no delta."""
    before = {"numa_hit": {"0": 100, "1": 50}, "other_node": {"0": 7}}
    after = {"numa_hit": {"0": 130, "1": 50, "2": 9}, "other_node": {"0": 10}, "numa_miss": {"0": 4}}
    assert capture.numastat_delta(before, after) == {"numa_hit": {"0": 30, "1": 0, "2": 9}, "other_node": {"0": 3}}
    assert capture.numastat_delta(None, after) is None and capture.numastat_delta(before, None) is None
    assert capture.numastat_delta({}, after) is None


def test_numastat_from_sysfs_keeps_only_its_six_counters(tmp_path):
    """Newer kernels add lines to nodeN/numastat; only the numastat command's six are kept."""
    for n in (1, 0):
        d = tmp_path / f"node{n}"
        d.mkdir()
        (d / "numastat").write_text(f"numa_hit {10 + n}\nnuma_miss 0\nnuma_foreign 0\ninterleave_hit 1\n"
                                    f"local_node {10 + n}\nother_node {n}\nlocal_cpu_hit 99\nzone x\n")
    (tmp_path / "nodefoo").mkdir()
    assert capture.numastat_system(tmp_path) == {
        "numa_hit": {"0": 10, "1": 11}, "numa_miss": {"0": 0, "1": 0}, "numa_foreign": {"0": 0, "1": 0},
        "interleave_hit": {"0": 1, "1": 1}, "local_node": {"0": 10, "1": 11}, "other_node": {"0": 0, "1": 1}}


def test_numa_maps_that_do_not_parse_stop_its_reading_and_the_threads_are_still_sampled(monkeypatch):
    """A line this parser cannot read is said once in the errors (prefixed numa_maps:),
    numa_maps is not read again, and the threads' CPUs are sampled to the end."""
    texts = ["zz00 default anon=1\n", numa_maps_text(100)]
    s = scripted(monkeypatch, [], texts=texts, threads=[{5: (1, "0-3")}] * 3, interval_min=0.01, interval_max=1.0)
    assert s.errors == ["numa_maps: malformed numa_maps line: 'zz00 default anon=1'"]
    assert s.numa_maps_on is False and len(s.samples) == 3
    assert [sorted(x) for x in s.samples] == [["t", "team", "threads"]] * 3
    assert s.summary()["numa_maps"]["peak"] is None and s.summary()["threads"]["5"]["cpus"] == {"1": 3}
    assert s.stop_event.waits == pytest.approx([0.02, 0.04, 0.08])        # no footprint: backing off


def test_sample_times_are_seconds_since_the_sampler_started_to_a_tenth_of_a_millisecond(monkeypatch):
    s = scripted(monkeypatch, [(10,), (10,)], clock_step=0.123456, interval_min=0.01, interval_max=1.0)
    assert s.exec_seen == 0.1235
    assert [x["t"] for x in s.samples] == [0.2469, 0.3704]


def test_sampling_starts_once_the_benchmark_is_execd_polled_from_0_2_ms_up_to_every_2_ms(monkeypatch):
    """Before the exec /proc/<pid> is the launcher's (numactl, taskset): not sampled. A
    process that exits first is said in the errors with the last exe seen."""
    seen = iter(["/usr/bin/taskset"] * 5 + ["/x/bench.x"])
    monkeypatch.setattr(capture.os, "readlink", lambda path: next(seen))
    s = capture.Sampler(4242, "/nonexistent", exe="/x/bench.x")
    s.stop_event = Waits()
    assert s._wait_for_exec() is True
    assert s.stop_event.waits == pytest.approx([0.0002, 0.0004, 0.0008, 0.0016, 0.002])
    gone = iter(["/usr/bin/numactl"])

    def readlink(path):
        assert path == "/proc/4242/exe"
        try:
            return next(gone)
        except StopIteration:
            raise FileNotFoundError(path) from None
    monkeypatch.setattr(capture.os, "readlink", readlink)
    s = capture.Sampler(4242, "/nonexistent", exe="/x/bench.x")
    s.stop_event = Waits()
    assert s._wait_for_exec() is False
    assert s.errors == ["the process never ran /x/bench.x while sampled (last exe: /usr/bin/numactl)"]
