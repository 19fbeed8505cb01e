"""The counters capture (numaplace.run.counters): perf stat -x, parsed from fixtures written
from perf-stat(1)'s CSV FORMAT (tests/fixtures/perf, each says so at its top), what the
plan says where a machine cannot count, the run under perf stat, and the tables' and
report's counters parts."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import single_run_spec

from numaplace.machine import pmu
from numaplace.machine.pmu import EVENTS, Availability, EventSet, detect, parse
from numaplace.run import counters
from numaplace.run.counters import counts

FIXTURES = Path(__file__).parent / "fixtures" / "perf"
SKX, ZEN4, ARM = EVENTS["intel"][0], EVENTS["amd"][0], EVENTS["arm"][0]


def fixture(name):
    return (FIXTURES / name).read_text()


# -- the parser, on output in perf-stat(1)'s documented format ------------------------------

def test_every_fixture_says_it_was_written_from_the_format_not_recorded():
    files = sorted(FIXTURES.glob("*.csv"))
    assert len(files) >= 6
    for f in files:
        head = f.read_text().splitlines()[:2]
        assert "Written by hand from the CSV FORMAT section of perf-stat(1)" in head[0], f
        assert "not recorded on a machine" in head[1], f


def test_user_space_counts_with_their_modifier():
    events = [e + ":u" for e in (SKX.first, SKX.remote)]
    p = parse(fixture("intel_skx_user.csv"), events)
    assert p["mem_load_l3_miss_retired.local_dram"] == {
        "value": 1843220, "status": "counted", "unit": "",
        "printed": "mem_load_l3_miss_retired.local_dram:u", "running_pct": 100.0}
    c = counts(p, SKX)
    assert (c["local"], c["remote"]) == (1843220, 612004)
    assert c["remote_share"] == pytest.approx(612004 / (1843220 + 612004))
    assert c["running_pct"] == 100.0


def test_multiplexed_counts_keep_the_smallest_running_share():
    c = counts(parse(fixture("amd_zen4_multiplexed.csv"), [ZEN4.first, ZEN4.remote]), ZEN4)
    assert (c["local"], c["remote"], c["running_pct"]) == (52345678, 1234567, 49.98)
    assert c["remote_share"] == pytest.approx(1234567 / 53580245)


@pytest.mark.parametrize("name, events, status", [
    ("intel_not_counted.csv", SKX, "not counted"),
    ("amd_not_supported.csv", ZEN4, "not supported"),
])
def test_an_event_not_counted_gives_no_counts(name, events, status):
    p = parse(fixture(name), [events.first, events.remote])
    assert p[pmu.event_name(events.remote)]["value"] is None
    assert p[pmu.event_name(events.remote)]["status"] == status
    assert counts(p, events) is None


def test_arm_local_is_the_total_less_remote_and_metric_lines_are_skipped():
    p = parse(fixture("arm_total.csv"), [ARM.first, ARM.remote])
    assert set(p) == {"ll_cache_miss_rd", "remote_access"}          # not the metric-only line
    c = counts(p, ARM)
    assert (c["local"], c["remote"], c["remote_share"]) == (3000000, 1000000, 0.25)


def test_optional_leading_fields_are_found_by_the_event_name_and_lines_summed():
    p = parse(fixture("intel_interval_per_cpu.csv"), [SKX.first, SKX.remote])
    c = counts(p, SKX)
    assert (c["local"], c["remote"]) == (1000 + 3000 + 2000 + 4000, 100 + 300 + 200 + 400)


def test_event_names_lose_pmu_prefix_and_modifiers():
    assert pmu.event_name("cpu_core/MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM/") == \
        "mem_load_l3_miss_retired.local_dram"
    assert pmu.event_name("remote_access:u") == "remote_access"


def test_both_zero_has_no_share():
    p = parse("0,,a,1,100.00,,\n0,,b,1,100.00,,\n", ["a", "b"])
    assert counts(p, EventSet("x", "a", "b"))["remote_share"] is None


# -- can this machine count? ----------------------------------------------------------------

def fake_machine(tmp_path, vendor="AuthenticAMD", hypervisor=False, pmus=("cpu",), paranoid="2", caps="0"):
    root = tmp_path / "root"
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/self").mkdir(parents=True)
    flags = "fpu sse2" + (" hypervisor" if hypervisor else "")
    (root / "proc/cpuinfo").write_text(f"processor\t: 0\nvendor_id\t: {vendor}\nflags\t\t: {flags}\n")
    (root / "proc/sys/kernel/perf_event_paranoid").write_text(paranoid + "\n")
    (root / "proc/self/status").write_text(f"Name:\tx\nCapEff:\t{caps}\n")
    devices = root / "sys/bus/event_source/devices"
    for name in ("software", "tracepoint", "breakpoint", "msr", "uprobe", *pmus):
        (devices / name).mkdir(parents=True)
    return root


def fake_perf(accepts, output=None):
    """A stand-in for subprocess.run of `perf stat -x, -o FILE -e EVENTS -- true`: exits
    129 on events it does not know (perf's syntax error), else writes output (default: 1 of each)."""
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        events = argv[argv.index("-e") + 1].split(",")
        if not all(pmu.event_name(e) in accepts for e in events):
            return SimpleNamespace(returncode=129, stdout="", stderr=f"event syntax error: '{events[0]}'\n")
        out = Path(argv[argv.index("-o") + 1])
        out.write_text(output if output is not None else
                       "# started on x\n\n" + "".join(f"1,,{e},10,100.00,,\n" for e in events))
        return SimpleNamespace(returncode=0, stdout="", stderr="")
    run.calls = calls
    return run


def test_this_vm_without_a_hardware_pmu_gets_one_plain_line(tmp_path):
    # this machine as the session found it: an AMD EPYC guest, only software PMUs in sysfs
    root = fake_machine(tmp_path, hypervisor=True, pmus=())
    run = fake_perf(accepts=set())
    a = detect(root, which=lambda _: "/usr/bin/perf", run=run, euid=0)
    assert a.line() == "counters: not captured: this machine exposes no hardware PMU (VM)"
    assert run.calls == []                         # nothing probed


@pytest.mark.parametrize("paranoid, caps, why", [
    ("3", "0", "perf_event_paranoid 3"),
    ("4", "0", "perf_event_paranoid 4"),
])
def test_paranoid_above_2_without_privilege_is_one_line(tmp_path, paranoid, caps, why):
    a = detect(fake_machine(tmp_path, paranoid=paranoid, caps=caps), which=lambda _: "/usr/bin/perf",
               run=fake_perf({"ls_any_fills_from_sys.dram_io_near", "ls_any_fills_from_sys.dram_io_far"}), euid=1000)
    assert not a.ok and a.line().startswith(f"counters: not captured: {why} ")


def test_cap_perfmon_counts_despite_paranoid_3_and_kernel_too(tmp_path):
    caps = format(1 << pmu.CAP_PERFMON, "x")
    a = detect(fake_machine(tmp_path, paranoid="3", caps=caps), which=lambda _: "/usr/bin/perf",
               run=fake_perf({"ls_any_fills_from_sys.dram_io_near", "ls_any_fills_from_sys.dram_io_far"}), euid=1000)
    assert a.ok and a.modifier == ""


def test_paranoid_2_counts_user_space_only(tmp_path):
    run = fake_perf({"ls_any_fills_from_sys.dram_io_near", "ls_any_fills_from_sys.dram_io_far"})
    a = detect(fake_machine(tmp_path, paranoid="2"), which=lambda _: "/usr/bin/perf", run=run, euid=1000)
    assert a.ok and a.modifier == ":u" and a.events == ZEN4
    assert a.event_list() == ["ls_any_fills_from_sys.dram_io_near:u", "ls_any_fills_from_sys.dram_io_far:u"]
    assert run.calls[0][-2:] == ["--", "true"] and run.calls[0][1:3] == ["stat", "-x,"]
    assert "user space only (perf_event_paranoid 2)" in a.line()


def test_an_older_cpu_gets_the_first_pair_perf_opens(tmp_path):
    zen3 = EVENTS["amd"][1]
    run = fake_perf({zen3.first, zen3.remote})
    a = detect(fake_machine(tmp_path, paranoid="1"), which=lambda _: "/usr/bin/perf", run=run, euid=1000)
    assert a.ok and a.events == zen3 and a.modifier == ""
    assert len(run.calls) == 2


def test_perf_missing_or_refusing_is_one_line(tmp_path):
    root = fake_machine(tmp_path, vendor="GenuineIntel", paranoid="1")
    a = detect(root, which=lambda _: None, run=fake_perf(set()), euid=1000)
    assert a.line() == "counters: not captured: perf is not installed (Debian: apt-get install linux-perf)"
    a = detect(root, which=lambda _: "/usr/bin/perf", run=fake_perf(set()), euid=1000)
    assert a.line().startswith("counters: not captured: perf stat refused mem_load_l3_miss_retired.local_dram,")
    both = "".join(f"<not supported>,,{e},0,100.00,,\n" for e in (SKX.first, SKX.remote))
    unsupported = fake_perf({e for s in EVENTS["intel"] for e in (s.first, s.remote)}, output=both)
    a = detect(root, which=lambda _: "/usr/bin/perf", run=unsupported, euid=1000)
    assert "cannot count" in a.why and "(not supported)" in a.why


def test_a_cpu_without_known_events_is_one_line(tmp_path):
    a = detect(fake_machine(tmp_path, vendor="HygonGenuine"), which=lambda _: "/usr/bin/perf",
               run=fake_perf(set()), euid=0)
    assert a.line() == "counters: not captured: no local/remote DRAM events known for this CPU (vendor HygonGenuine)"


# -- the plan's line ------------------------------------------------------------------------

def plan_of(capture, launchers=("numactl",), platform="auto"):
    from numaplace.plan.launch import LAUNCHERS
    return pmu.plan_lines(capture, {LAUNCHERS[name] for name in launchers}, platform)


def test_the_plan_says_nothing_unless_asked(monkeypatch):
    monkeypatch.setattr(pmu, "availability", lambda: pytest.fail("probed unasked"))
    assert plan_of({}) == []
    assert plan_of({"counters": False}) == []


def test_the_plan_line_is_this_machines_one_line(monkeypatch):
    no_pmu = Availability(False, "this machine exposes no hardware PMU (VM)")
    monkeypatch.setattr(pmu, "availability", lambda: no_pmu)
    assert plan_of({"counters": True}) == ["counters: not captured: this machine exposes no hardware PMU (VM)"]
    assert plan_of({"counters": True}, ("aprun",)) == [
        "counters: not captured: aprun starts the process on a compute node"]
    assert plan_of({"counters": True}, platform="nehalem")[0].startswith(
        "counters: asked for; platform nehalem is not this machine")
    ok = Availability(True, events=SKX, modifier=":u", perf="/usr/bin/perf", paranoid=2)
    monkeypatch.setattr(pmu, "availability", lambda: ok)
    line, = plan_of({"counters": True}, ("numactl", "aprun"))
    assert line.startswith("counters: local and remote DRAM accesses per run, from "
                           "mem_load_l3_miss_retired.local_dram and mem_load_l3_miss_retired.remote_dram")
    assert line.endswith("; not for aprun runs (their process runs on a compute node)")


# -- a run under perf stat (the real perf, counting two software events in their place) ---------

STAND_IN = EventSet("software stand-in", "page-faults", "minor-faults")


@pytest.fixture
def real_perf(monkeypatch, tmp_path):
    """counters.availability as a machine that counts, with perf's software events in place of
    the DRAM ones (this VM has no hardware PMU): what the runner does with perf is real."""
    from conftest import need_rig
    perf = shutil.which("perf")
    if perf is None:
        need_rig("perf is not installed (bash .ci/setup --tests installs linux-perf)")
    probe = subprocess.run([perf, "stat", "-x,", "-e", "page-faults", "--", "true"], capture_output=True, text=True)
    if probe.returncode != 0:             # a setting of the machine (Debian's perf_event_paranoid 3), not a rig
        pytest.skip(f"perf stat may not count a process here: {probe.stderr.strip()[:200]}")
    avail = Availability(True, events=STAND_IN, perf=perf, paranoid=2)
    monkeypatch.setattr(pmu, "availability", lambda: avail)
    return avail


def program(tmp_path, name, source="/bin/sleep"):
    """A copy of a system binary as the run's benchmark (the sampler waits for its exe)."""
    exe = tmp_path / name
    shutil.copy(source, exe)
    exe.chmod(0o755)
    return exe


def counted_spec(args, **capture):
    spec = single_run_spec()
    spec["argv"] = spec["argv"] + list(args)
    spec["capture"] = {"counters": True, "interval_min": 0.005, **capture}
    return spec


def test_a_run_under_perf_stat_is_counted_and_its_benchmark_sampled(real_perf, tmp_path):
    from numaplace.run.runner import execute
    rec = execute(counted_spec(["0.3"]), program(tmp_path, "sleep.x"), tmp_path / "r" / "record.json")
    c = rec["counters"]
    assert c["captured"] is True and c["events"] == {"first": "page-faults", "remote": "minor-faults"}
    assert c["local"] > 0 and c["remote"] > 0 and 0 < c["remote_share"] < 1
    assert (tmp_path / "r" / counters.OUTPUT).exists()
    assert rec["exit_status"] == 0
    # the sampler watched perf's child (the benchmark), not perf
    caps = rec["captures"]
    assert caps["numa_maps"]["exec_seen_s"] is not None and caps["errors"] == []
    assert caps["threads"] and caps["numa_maps"]["samples"] > 0
    assert rec["argv"][0] == "taskset"                       # the run's own argv, as planned
    assert json.loads((tmp_path / "r" / "record.json").read_text())["counters"] == c


def test_a_run_killed_by_a_signal_keeps_its_status_under_perf(real_perf, tmp_path):
    from numaplace.run.runner import execute
    rec = execute(counted_spec(["-c", "kill -SEGV $$"]), program(tmp_path, "crash.x", "/bin/sh"),
                  tmp_path / "r" / "record.json")
    stderr = (tmp_path / "r" / "stderr").read_text(errors="replace")[-1000:]
    assert rec["exit_status"] == -11 and rec["status"] == "failed", (rec["status"], rec["reason"], stderr)


def test_exit_status_is_perfs_when_no_signal_line(tmp_path):
    c = counters.Counting(Availability(True, events=STAND_IN, perf="perf"), tmp_path)
    c.wrap(["numactl", "--physcpubind=0", "/x/cg.S.x"])
    err = tmp_path / "stderr"
    err.write_text("some output\nnumactl: Segmentation fault\n")
    assert c.exit_status(0, err) == -11
    assert c.exit_status(3, err) == 3                          # perf passed the launch line's own status
    err.write_text("cg.S.x: Segmentation fault\n")             # not the launch line's argv0
    assert c.exit_status(0, err) == 0


def test_the_launch_line_is_wrapped_as_an_argv_never_a_shell(tmp_path):
    a = Availability(True, events=SKX, modifier=":u", perf="/usr/bin/perf", paranoid=2)
    argv = ["numactl", "--physcpubind=0-3", "--membind=1", "/b/cg.A.x", "a b; rm -rf /"]
    wrapped = counters.Counting(a, tmp_path).wrap(argv)
    assert wrapped == ["/usr/bin/perf", "stat", "-x,", "-o", str(tmp_path / counters.OUTPUT), "-e",
                       "mem_load_l3_miss_retired.local_dram:u,mem_load_l3_miss_retired.remote_dram:u",
                       "--", *argv]


def test_not_asked_not_wrapped_and_unavailable_is_a_note(monkeypatch, tmp_path):
    from numaplace.plan.launch import LAUNCHERS
    monkeypatch.setattr(pmu, "availability", lambda: Availability(False, "perf_event_paranoid 3"))
    assert counters.for_run({}, LAUNCHERS["numactl"], tmp_path) == (None, None)
    assert counters.for_run({"counters": True}, LAUNCHERS["numactl"], tmp_path) == (
        None, {"captured": False, "why": "perf_event_paranoid 3"})
    assert counters.for_run({"counters": True}, LAUNCHERS["aprun"], tmp_path)[1]["captured"] is False


# -- the record in the tables and the report -------------------------------------------------

def record(run_id, cpus, data_pages, counted, topology_nodes=None, status="ok"):
    c = {"captured": True, "events": {"first": SKX.first + ":u", "remote": SKX.remote + ":u"},
         "local": counted[0], "remote": counted[1], "remote_share": counted[1] / sum(counted)} \
        if counted else {"captured": False, "why": "perf_event_paranoid 3"}
    view = {"t": 1.0, "data_bytes": {n: 4096 * k for n, k in data_pages.items()},
            "data_pages": dict(data_pages), "total_bytes": {}, "policies": {}}
    return {"run_id": run_id, "study": "t", "bench": "cg", "class": "S", "variant": "default", "rep": 1,
            "status": status, "_path": None, "_attempt": False, "_attempt_n": None,
            "placement": {"id": f"p{cpus}", "cpus": cpus, "threads": 2, "layout": "", "binding": "process",
                          "launcher": "numactl", "memory": "local", "shape": cpus},
            "topology": {"nodes": topology_nodes or {"0": "0-1", "1": "2-3"}},
            "captures": {"numa_maps": {"steady": view, "peak": view}}, "counters": c}


def test_runs_table_puts_the_counted_share_beside_the_predicted_one():
    from numaplace.tables.aggregate import COUNTER_COLUMNS, load_rows, runs_table
    rows = load_rows([record("a", "0-1", {"0": 750, "1": 250}, (900, 100)),
                      record("b", "2-3", {"0": 1000}, None)])
    runs = runs_table(rows).set_index("run_id")
    assert set(COUNTER_COLUMNS) <= set(runs.columns)
    assert runs.loc["a", "counted_remote_share"] == pytest.approx(0.1)
    assert runs.loc["a", "predicted_remote_share"] == pytest.approx(0.25)    # node 1 pages, threads on 0
    assert (runs.loc["a", "counted_local"], runs.loc["a", "counted_remote"]) == (900, 100)
    assert runs.loc["b"][COUNTER_COLUMNS].isna().all()                       # not counted: empty cells


def test_no_counts_no_columns_and_no_report_section():
    from numaplace.report.summary import counters_markdown
    from numaplace.tables.aggregate import COUNTER_COLUMNS, load_rows, runs_table
    runs = runs_table(load_rows([record("b", "2-3", {"0": 1000}, None)]))
    assert not set(COUNTER_COLUMNS) & set(runs.columns)
    assert counters_markdown(runs) == []


def test_the_report_shows_counted_against_predicted_per_placement():
    from numaplace.report.summary import counters_markdown
    from numaplace.tables.aggregate import load_rows, runs_table
    recs = [record("a1", "0-1", {"0": 1000}, (900, 100)), record("a2", "0-1", {"0": 1000}, (800, 200)),
            record("a3", "0-1", {"0": 1000}, (400, 600)), record("c", "2-3", {"0": 1000}, (100, 900))]
    text = "\n".join(counters_markdown(runs_table(load_rows(recs))))
    assert "## Where the accesses went: counted against predicted" in text
    assert "mem_load_l3_miss_retired.local_dram:u / mem_load_l3_miss_retired.remote_dram:u" in text
    lines = [l for l in text.splitlines() if l.startswith("| CG")]
    assert lines == [
        # threads and pages on node 0, three runs: the median of 10, 20 and 60 % counted remote
        "| CG | S | default | 2 | 0-1 | 3 | 20.0% | 0.0% | +20.0 points |",
        # threads on node 1, every page on node 0
        "| CG | S | default | 2 | 2-3 | 1 | 90.0% | 100.0% | -10.0 points |"]


def test_a_record_carries_its_counters_as_a_typed_field():
    from numaplace.record.store import Record
    assert Record({"counters": {"captured": True}}).counters == {"captured": True}
    assert Record({}).counters == {}


def summary_of(recs):
    from numaplace.report.summary import summary_markdown
    from numaplace.tables.aggregate import best_worst_table, load_rows, runs_table, summary_table
    runs = runs_table(load_rows(recs))
    summary = summary_table(runs)
    return summary_markdown({"runs": runs, "summary": summary, "best_worst": best_worst_table(summary, runs)},
                            None, "t")


def test_summary_md_has_the_section_only_where_runs_were_counted():
    counted = summary_of([record("a", "0-1", {"0": 1000}, (900, 100))])
    assert "## Where the accesses went: counted against predicted" in counted
    # where the machine could not count: not a word of counters in the report
    text = summary_of([record("a", "0-1", {"0": 1000}, None)]).lower()
    assert "counted against" not in text and "counters" not in text and "perf" not in text


def test_the_plan_summary_carries_the_line_only_when_asked(monkeypatch):
    from numaplace.plan.study import Study
    repo = Path(__file__).resolve().parents[1]
    monkeypatch.setattr(pmu, "availability", lambda: pytest.fail("a named platform is not this machine"))
    s = {"study": "a", "platform": "x4600", "benchmarks": ["cg"], "classes": ["S"],
         "experiments": [{"name": "two", "placements": [{"compact": [2]}]}]}
    asked = Study({**s, "capture": {"counters": True}}, "a.yaml", repo / "config").plan_summary()
    assert [x for x in asked if "counters" in x] == [
        "  counters: asked for; platform x4600 is not this machine: each run checks its own CPU as it "
        "starts (the record says when it cannot count)"]
    assert not any("counters" in x for x in Study(s, "a.yaml", repo / "config").plan_summary())
    # not asked: the runs' definitions are as before (no capture.counters filled in by a default)
    st = Study(s, "a.yaml", repo / "config")
    assert "counters" not in st.run_params(st.runs[0].run_id)["capture"]
