"""The idle check and the foreign load (numaplace.machine.idle): what a record keeps of
them (`idle`, `foreign_load`) and how long `idle_check: refuse` waits. The clock, the
sleeps, /proc/stat and the CPU mask are faked: nothing here waits or moves this process.
Several tests pin what the mutation run left alive (tests/benchmarks/mutation-survivors.md
names the test that kills each)."""
from __future__ import annotations

import io

import pytest

from numaplace.machine import idle

pytestmark = pytest.mark.unit


class Clock:
    """time.monotonic and time.sleep of a clock that moves only when slept on."""

    def __init__(self, now=1000.0):
        self.now, self.slept = now, []

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.slept.append(s)
        self.now += s


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(idle.time, "monotonic", c.monotonic)
    monkeypatch.setattr(idle.time, "sleep", c.sleep)
    monkeypatch.setattr(idle.os, "getloadavg", lambda: (0.5, 0.25, 0.125))
    return c


def windows(monkeypatch, clock, *shares, length=0.1):
    """cpu_busy giving these busy shares, one window each, `length` seconds long."""
    it = iter(shares)

    def cpu_busy(seconds=idle.IDLE_WINDOW_S, since=None):
        clock.now += length
        return dict(next(it))
    monkeypatch.setattr(idle, "cpu_busy", cpu_busy)


BUSY, IDLE = {0: 0.9, 1: 0.0}, {0: 0.0, 1: 0.0}


def test_flag_mode_records_one_window_and_never_waits(monkeypatch, clock):
    windows(monkeypatch, clock, BUSY, length=0.12345)
    ok, ev = idle.idle_check((0,), 0.15, 30, "flag")
    assert (ok, clock.slept) == (False, [])
    assert ev == {"busy": {"0": 0.9, "1": 0.0}, "loadavg": (0.5, 0.25, 0.125), "busy_max": 0.15,
                  "busy_cpus": {"0": 0.9}, "window_s": 0.123, "window_opened": "check"}


def test_refuse_on_idle_cpus_returns_at_once(monkeypatch, clock):
    windows(monkeypatch, clock, IDLE)
    assert idle.idle_check((0,), 0.15, 30, "refuse")[0] is True and clock.slept == []


def test_refuse_waits_for_the_cpus_to_become_idle(monkeypatch, clock):
    windows(monkeypatch, clock, BUSY, BUSY, IDLE)
    ok, ev = idle.idle_check((0,), 0.15, 30, "refuse")
    assert ok is True and ev["busy_cpus"] == {} and clock.slept == [2, 2]


def test_refuse_gives_up_after_its_wait_and_never_waits_longer(monkeypatch, clock):
    windows(monkeypatch, clock, *[BUSY] * 10, length=0.0)
    ok, ev = idle.idle_check((0,), 0.15, 4, "refuse")
    assert ok is False and ev["busy_cpus"] == {"0": 0.9}
    assert sum(clock.slept) == 4                      # checked at 0, 2 and 4 s: not at 6


def test_the_start_up_window_counts_from_when_it_was_opened(monkeypatch, clock):
    """The runner's start-up window (an IdleWindow opened 0.07 s before the check) is
    recorded as such and as long as it was; a second window, after waiting, is a check."""
    since = idle.IdleWindow({0, 1}, {}, clock.now - 0.07)
    windows(monkeypatch, clock, BUSY, IDLE, length=0.03)
    ok, ev = idle.idle_check((0,), 0.15, 30, "refuse", since=since)
    assert ok is True and (ev["window_opened"], ev["window_s"]) == ("check", 0.03)
    windows(monkeypatch, clock, IDLE, length=0.03)
    since = idle.IdleWindow({0, 1}, {}, clock.now - 0.07)
    ok, ev = idle.idle_check((0,), 0.15, 30, "flag", since=since)
    assert (ev["window_opened"], ev["window_s"]) == ("start-up", 0.1)


# -- busy shares from /proc/stat ----------------------------------------------------------

def stat_text(*cpus):
    """/proc/stat with one line per CPU: user nice system idle iowait irq softirq steal
    guest guest_nice."""
    return "cpu  0 0 0 0 0 0 0 0 0 0\n" + "".join(
        f"cpu{i} " + " ".join(map(str, v)) + "\n" for i, v in enumerate(cpus)) + "intr 1 2 3\nctxt 5\n"


def fake_proc_stat(monkeypatch, *texts):
    it = iter(texts)
    real_open = open
    monkeypatch.setattr(idle, "open", lambda path, *a, **k: io.StringIO(next(it))
                        if path == "/proc/stat" else real_open(path, *a, **k), raising=False)


def test_guest_time_is_not_counted_twice(monkeypatch):
    """The kernel counts a guest's time in `user` already: guest and guest_nice are left
    out of busy and total."""
    fake_proc_stat(monkeypatch, stat_text((100, 1, 20, 500, 7, 2, 3, 4, 60, 5)))
    assert idle.cpu_jiffies() == {0: (130, 637)}


def test_busy_shares_of_a_window(monkeypatch, clock):
    """Shares per CPU over the window, rounded to 3 digits; a CPU that saw one jiffy,
    busy, was fully busy; a CPU that went offline meanwhile is left out."""
    before = stat_text((0, 0, 0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, 0, 0, 0), (0,) * 10)
    after = stat_text((1, 0, 0, 2, 0, 0, 0, 0, 0, 0), (1, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    fake_proc_stat(monkeypatch, before, after)
    assert idle.cpu_busy(0.1) == {0: 0.333, 1: 1.0}
    assert clock.slept == [0.1]


def test_busy_shares_over_an_open_window_wait_only_for_the_rest_of_it(monkeypatch, clock):
    fake_proc_stat(monkeypatch, stat_text((0, 0, 0, 8, 0, 0, 0, 0, 0, 0)))
    since = idle.IdleWindow({0}, {0: (0, 4)}, clock.now - 0.03)
    assert idle.cpu_busy(0.1, since=since) == {0: 0.0}
    assert clock.slept == [pytest.approx(0.07)]
    fake_proc_stat(monkeypatch, stat_text((0, 0, 0, 8, 0, 0, 0, 0, 0, 0)))
    late = idle.IdleWindow({0}, {0: (0, 4)}, clock.now - 5)
    idle.cpu_busy(0.1, since=late)
    assert clock.slept[-1] == 0.0                     # opened long ago: no wait at all


def own_times(monkeypatch, *seconds):
    """os.times of this process: user time `seconds` (one value per call), the rest 0."""
    it = iter(seconds)
    monkeypatch.setattr(idle.os, "times", lambda: type("T", (), {
        "user": next(it), "system": 0.0, "children_user": 0.0, "children_system": 0.0})())


def test_the_starts_busy_check_takes_numaplaces_own_work_off(monkeypatch, clock):
    """The workflow's start reads the load over the window it spent reading the study:
    of 2 CPUs x 30 jiffies, 40 busy, 0.3 s of them its own: the others took 10 of 60."""
    monkeypatch.setattr(idle, "CLK_TCK", 100)
    fake_proc_stat(monkeypatch, stat_text((0,) * 10, (0,) * 10),
                   stat_text((20, 0, 0, 10, 0, 0, 0, 0, 0, 0), (20, 0, 0, 10, 0, 0, 0, 0, 0, 0)))
    own_times(monkeypatch, 1.0, 1.3)
    window = idle.LoadWindow()
    clock.now += 0.4                                    # the study read, the DAG built
    assert window.foreign_busy([0, 1], 0.3) == pytest.approx(10 / 60, abs=1e-3)
    assert clock.slept == [0.0]                         # long enough: no wait of its own


def test_the_starts_busy_check_never_reads_below_zero_and_waits_out_a_short_window(monkeypatch, clock):
    """Its own time counted to more than the CPUs' busy jiffies (a tick's rounding): 0, not
    negative; a window 0.1 s old waits 0.2 s more for its 0.3 s."""
    monkeypatch.setattr(idle, "CLK_TCK", 100)
    fake_proc_stat(monkeypatch, stat_text((0,) * 10), stat_text((9, 0, 0, 21, 0, 0, 0, 0, 0, 0)))
    own_times(monkeypatch, 0.0, 0.1)
    window = idle.LoadWindow()
    clock.now += 0.1
    assert window.foreign_busy([0], 0.3) == 0.0
    assert clock.slept == [pytest.approx(0.2)]


# -- moving off the run's CPUs ------------------------------------------------------------

@pytest.fixture
def mask(monkeypatch):
    """This thread's CPU mask, faked: {0..3}; the masks set are recorded."""
    state = {"mask": {0, 1, 2, 3}, "set": []}

    def setaffinity(pid, cpus):
        state["set"].append(set(cpus))
        state["mask"] = set(cpus)
    monkeypatch.setattr(idle.os, "sched_getaffinity", lambda pid: set(state["mask"]))
    monkeypatch.setattr(idle.os, "sched_setaffinity", setaffinity)
    monkeypatch.setattr(idle, "cpu_jiffies", lambda: {0: (1, 2)})
    return state


def test_leaving_the_runs_cpus_opens_the_window(mask, clock):
    w = idle.IdleWindow.leave([2, 3])
    assert mask["set"] == [{0, 1}]
    assert (w.affinity, w.free, w.jiffies, w.opened) == ({0, 1, 2, 3}, {0, 1}, {0: (1, 2)}, clock.now)
    mask["mask"] = {3}
    w.stay_off()
    assert mask["set"][-1] == {0, 1}


def test_leaving_with_a_jobs_mask(mask, clock):
    w = idle.IdleWindow.leave([2, 3], affinity={0, 1, 2, 3, 4, 5})
    assert (w.affinity, w.free, mask["set"]) == ({0, 1, 2, 3, 4, 5}, {0, 1, 4, 5}, [{0, 1, 4, 5}])


def test_only_this_thread_is_moved_and_its_own_mask_read(monkeypatch, clock):
    """leave() and stay_off() read and set the mask of this thread (pid 0) only: never
    another process's (pid 1 is init), never a pid the kernel would refuse."""
    theirs, set_ = [], []

    def getaffinity(pid):
        if pid != 0:
            theirs.append(("get", pid))
            return {0, 1, 2, 3, 4, 5, 6, 7}
        return {0, 1, 2, 3}

    def setaffinity(pid, cpus):
        (set_ if pid == 0 else theirs).append(set(cpus) if pid == 0 else ("set", pid))
    monkeypatch.setattr(idle.os, "sched_getaffinity", getaffinity)
    monkeypatch.setattr(idle.os, "sched_setaffinity", setaffinity)
    monkeypatch.setattr(idle, "cpu_jiffies", lambda: {})
    w = idle.IdleWindow.leave([2, 3])
    w.stay_off()
    assert (w.affinity, w.free, set_, theirs) == ({0, 1, 2, 3}, {0, 1}, [{0, 1}, {0, 1}], [])


def test_no_window_where_no_other_cpu_is_allowed(mask):
    assert idle.IdleWindow.leave([0, 1, 2, 3]) is None and mask["set"] == []


def test_a_window_without_a_free_mask_stays_on_its_affinity():
    w = idle.IdleWindow({0, 1}, {}, 0.0)
    assert w.free == {0, 1}
    assert idle.IdleWindow({0, 1}, {}, 0.0, free={1}).free == {1}


# -- what others spent on the run's CPUs --------------------------------------------------

def test_foreign_load_as_recorded():
    """A 0.4 s run on CPUs 2-3 that spent 0.61 CPU-s itself, while its CPUs were busy for
    0.8 CPU-s: 0.19 CPU-s were someone else's, 23.75 % of the CPUs' 0.8 CPU-s."""
    hz = idle.CLK_TCK
    before = {c: (0, 0) for c in range(4)}
    after = {0: (hz, hz), 1: (hz, hz), 2: (0.5 * hz, hz), 3: (0.3 * hz, hz)}
    fl = idle.foreign_load(before, after, (2, 3), 0.4, 0.61)
    assert fl == {"cpu_s": 0.19, "share": 0.2375, "busy_cpu_s": 0.8, "run_cpu_s": 0.61,
                  "note": "jiffy resolution (1/%d s): shares below ~%.0f%% of short runs are noise"
                          % (hz, 500 / hz)}
    fl = idle.foreign_load(before, after, (2, 3), 0.4, 0.123456)
    assert (fl["cpu_s"], fl["share"], fl["run_cpu_s"]) == (0.677, 0.8457, 0.123)
    fl = idle.foreign_load(before, {**after, 2: (0.4567891 * hz, hz)}, (2, 3), 0.4, 0.0)
    assert fl["busy_cpu_s"] == 0.757


def test_foreign_load_share_is_at_most_the_whole_time():
    """Jiffy noise can make the foreign CPU time exceed the CPUs' time: the share stops
    at 1; a run of no measurable length with foreign work counts as fully shared."""
    hz = idle.CLK_TCK
    before, after = {0: (0, 0)}, {0: (3 * hz, 3 * hz)}
    assert idle.foreign_load(before, after, (0,), 1.0, 0.5)["share"] == 1.0
    small = {0: (0.2 * hz, hz)}
    assert idle.foreign_load(before, small, (0,), 0.0, 0.0)["share"] == 1.0


def test_foreign_load_skips_a_cpu_missing_from_a_sample():
    """A CPU that went offline during the run is in one sample only: left out."""
    hz = idle.CLK_TCK
    fl = idle.foreign_load({0: (0, 0)}, {0: (hz, hz), 1: (hz, hz)}, (0, 1), 2.0, 0.0)
    assert (fl["busy_cpu_s"], fl["cpu_s"]) == (1.0, 1.0)
    fl = idle.foreign_load({0: (0, 0), 1: (0, 0)}, {0: (hz, hz)}, (0, 1), 2.0, 0.0)
    assert fl["busy_cpu_s"] == 1.0


def test_foreign_load_note_says_two_jiffies_of_the_run_are_noise():
    """The note's threshold is two jiffies as a percentage of the run: 100 % for a run two
    jiffies long."""
    hz = idle.CLK_TCK
    note = idle.foreign_load({0: (0, 0)}, {0: (0, 0)}, (0,), 2 / hz, 0.0)["note"]
    assert note == f"jiffy resolution (1/{hz} s): shares below ~100% of short runs are noise"


def test_the_default_window_is_a_tenth_of_a_second(monkeypatch, clock):
    """An idle check not given a length samples /proc/stat 0.1 s apart."""
    fake_proc_stat(monkeypatch, stat_text((0,) * 10), stat_text((1, 0, 0, 9, 0, 0, 0, 0, 0, 0)))
    assert idle.cpu_busy() == {0: 0.1}
    assert clock.slept == [0.1] and idle.IDLE_WINDOW_S == 0.1


def test_own_cpu_time_counts_every_thread_and_reaped_children_in_user_and_system(monkeypatch):
    """The benchmark is a reaped child: its user and system time are the run's own, and
    so are this process's."""
    monkeypatch.setattr(idle.os, "times", lambda: type("T", (), {
        "user": 1.5, "system": 0.25, "children_user": 4.0, "children_system": 0.125, "elapsed": 99.0})())
    assert idle.own_cpu_s() == 5.875


def test_a_cpu_that_came_online_during_a_window_is_left_out(monkeypatch, clock):
    """CPU 1 in the second sample only: no share for it (nothing to subtract), and the
    start's load window leaves it out of both sums."""
    fake_proc_stat(monkeypatch, stat_text((0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                   stat_text((1, 0, 0, 3, 0, 0, 0, 0, 0, 0), (50, 0, 0, 50, 0, 0, 0, 0, 0, 0)))
    assert idle.cpu_busy(0.1) == {0: 0.25}
    monkeypatch.setattr(idle, "CLK_TCK", 100)
    fake_proc_stat(monkeypatch, stat_text((0,) * 10),
                   stat_text((10, 0, 0, 30, 0, 0, 0, 0, 0, 0), (50, 0, 0, 50, 0, 0, 0, 0, 0, 0)))
    own_times(monkeypatch, 0.0, 0.0)
    window = idle.LoadWindow()
    assert window.foreign_busy([0, 1], 0.0) == 0.25


def test_foreign_load_is_never_negative():
    """The run's own CPU time read above its CPUs' busy jiffies (a tick's rounding): no
    one else's work, 0 and 0 %, not a negative share."""
    hz = idle.CLK_TCK
    fl = idle.foreign_load({0: (0, 0)}, {0: (0.5 * hz, hz)}, (0,), 1.0, 0.7)
    assert (fl["cpu_s"], fl["share"], fl["busy_cpu_s"], fl["run_cpu_s"]) == (0.0, 0.0, 0.5, 0.7)
