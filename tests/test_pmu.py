"""numaplace.machine.pmu: the reader of `perf stat -x,` output (every field of what it
keeps), the CPU vendor and privilege as /proc says them, the checks of detect() in their
order with their exact words, and the plan's one line. /proc, /sys and perf are faked
in their real formats (perf-stat(1) CSV FORMAT, proc(5))."""
from __future__ import annotations

from types import SimpleNamespace
from pathlib import Path

import pytest

from numaplace.machine import pmu
from numaplace.machine.pmu import EVENTS, Availability, detect, parse

pytestmark = pytest.mark.unit

SKX, HSW = EVENTS["intel"]
ZEN4, ZEN3, ZEN2 = EVENTS["amd"]
ARM = EVENTS["arm"][0]


def test_every_field_of_a_perf_stat_line_is_kept():
    """value, unit, the event as printed, the running share; a hybrid CPU's two core PMUs
    summed keeping the smaller share; a line of another event or a metric-only line
    skipped; a float count kept as a float."""
    text = ("# started on Mon Mar  2 10:00:00 2026\n\n"
            "1200,,cpu_core/mem_load_l3_miss_retired.local_dram:u/,2013455120,80.00,,\n"
            "300,,cpu_atom/mem_load_l3_miss_retired.local_dram:u/,2013455120,60.00,,\n"
            "612004,MiB,mem_load_l3_miss_retired.remote_dram:u,2013455120,100.00,,\n"
            "77,,cycles:u,2013455120,100.00,,\n"
            ",,,,,25.00,% remote\n")
    got = parse(text, [SKX.first + ":u", SKX.remote + ":u"])
    assert got == {
        "mem_load_l3_miss_retired.local_dram": {
            "value": 1500, "status": "counted", "unit": "",
            "printed": "cpu_core/mem_load_l3_miss_retired.local_dram:u/", "running_pct": 60.0},
        "mem_load_l3_miss_retired.remote_dram": {
            "value": 612004, "status": "counted", "unit": "MiB",
            "printed": "mem_load_l3_miss_retired.remote_dram:u", "running_pct": 100.0}}
    assert type(got["mem_load_l3_miss_retired.remote_dram"]["value"]) is int      # a count, exactly
    assert parse("12.5,msec,task-clock,1000,100.00,1.25,CPUs utilized\n") == {
        "task-clock": {"value": 12.5, "status": "counted", "unit": "msec", "printed": "task-clock",
                       "running_pct": 100.0}}


def test_without_wanted_events_the_third_field_is_the_event():
    text = ("5,,a,10,50.00,,\n"
            "<not supported>,,b,0,0.00,,\n"
            "<not counted>,,c,0,,,\n"
            "x,,d,1,100.00,,\n"
            "7,,e\n")
    assert parse(text) == {
        "a": {"value": 5, "status": "counted", "unit": "", "printed": "a", "running_pct": 50.0},
        "b": {"value": None, "status": "not supported", "unit": "", "printed": "b", "running_pct": 0.0},
        "c": {"value": None, "status": "not counted", "unit": "", "printed": "c", "running_pct": None},
        "e": {"value": 7, "status": "counted", "unit": "", "printed": "e", "running_pct": None}}


def test_a_counted_line_after_a_not_counted_one_of_the_same_event_wins():
    """One PMU of a hybrid CPU could not count, the other did: its value is kept; a second
    line not counted never replaces a count; running shares: the smaller, None ignored."""
    text = "<not counted>,,cpu_atom/a/,0,0.00,,\n40,,cpu_core/a/,10,90.00,,\n<not counted>,,cpu_atom/a/,0,0.00,,\n"
    assert parse(text, ["a"])["a"] == {"value": 40, "status": "counted", "unit": "", "printed": "cpu_core/a/",
                                       "running_pct": 90.0}
    assert parse("4,,a,1,,,\n6,,a,1,70.00,,\n", ["a"])["a"]["running_pct"] == 70.0
    assert parse("4,,a,1,,,\n6,,a,1,,,\n", ["a"])["a"] == {
        "value": 10, "status": "counted", "unit": "", "printed": "a", "running_pct": None}


def test_event_names_as_this_module_spells_them():
    en = pmu.event_name
    assert en("cpu_core/MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM/") == "mem_load_l3_miss_retired.local_dram"
    assert en("  ls_any_fills_from_sys.dram_io_near:u ") == "ls_any_fills_from_sys.dram_io_near"
    assert en("armv8_pmuv3_0/ll_cache_miss_rd/") == "ll_cache_miss_rd"
    assert en("/remote_access/") == "remote_access"
    assert en("cycles:ukp") == "cycles"
    assert en("cpu_core/mem_load_l3_miss_retired.local_dram/u") == "mem_load_l3_miss_retired.local_dram"


CPUINFO_AMD = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 hypervisor lahf_lm\n"
CPUINFO_INTEL = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 hypervisor_x\n"
CPUINFO_ARM = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n"


def test_the_cpu_vendor_and_a_hypervisor_from_proc_cpuinfo():
    assert pmu.cpu_vendor(CPUINFO_AMD) == ("amd", "AuthenticAMD", True)
    assert pmu.cpu_vendor(CPUINFO_INTEL) == ("intel", "GenuineIntel", False)   # a flag named alike: no
    assert pmu.cpu_vendor(CPUINFO_ARM) == ("arm", "arm64", False)
    assert pmu.cpu_vendor("vendor_id\t: HygonGenuine\nflags\t: hypervisor\n") == (None, "HygonGenuine", True)
    assert pmu.cpu_vendor("") == (None, None, False) and pmu.cpu_vendor(None) == (None, None, False)


def status_root(tmp_path, caps):
    (tmp_path / "proc/self").mkdir(parents=True, exist_ok=True)
    (tmp_path / "proc/self/status").write_text(f"Name:\tpython3\nCapInh:\t0000000000000000\nCapPrm:\t{caps}\n"
                                               f"CapEff:\t{caps}\nCapBnd:\t000001ffffffffff\n")
    return tmp_path


def test_privilege_is_root_or_cap_perfmon_or_cap_sys_admin(tmp_path):
    assert pmu._privileged(tmp_path / "none", 0) is True
    assert pmu._privileged(tmp_path / "none", 1000) is False
    assert pmu._privileged(status_root(tmp_path, format(1 << 38, "016x")), 1000) is True     # CAP_PERFMON
    assert pmu._privileged(status_root(tmp_path, format(1 << 21, "016x")), 1000) is True     # CAP_SYS_ADMIN
    assert pmu._privileged(status_root(tmp_path, format((1 << 39) | (1 << 20) | (1 << 22), "016x")), 1000) is False
    assert pmu._privileged(status_root(tmp_path, "0000000000000000"), 1000) is False


def fake_machine(tmp_path, cpuinfo=CPUINFO_AMD, pmus=("cpu",), paranoid="2", caps="0"):
    root = tmp_path / "root"
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/cpuinfo").write_text(cpuinfo)
    if paranoid is not None:
        (root / "proc/sys/kernel/perf_event_paranoid").write_text(paranoid + "\n")
    (root / "proc/self/status").write_text(f"Name:\tx\nCapEff:\t{caps}\n")
    for name in ("software", "tracepoint", "breakpoint", "msr", *pmus):
        (root / "sys/bus/event_source/devices" / name).mkdir(parents=True)
    return root


def fake_perf(accepts, output=None, rc=0, stderr=""):
    calls, kws = [], []

    def run(argv, **kw):
        calls.append(argv)
        kws.append(kw)
        events = argv[argv.index("-e") + 1].split(",")
        if not all(pmu.event_name(e) in accepts for e in events):
            return SimpleNamespace(returncode=129, stdout="", stderr=f"\nevent syntax error: '{events[0]}'\n")
        Path(argv[argv.index("-o") + 1]).write_text(
            output if output is not None else "".join(f"1,,{e},10,100.00,,\n" for e in events))
        return SimpleNamespace(returncode=rc, stdout="", stderr=stderr)
    run.calls, run.kws = calls, kws
    return run


PERF = lambda _: "/usr/bin/perf"          # noqa: E731


def test_detect_checks_in_order_and_says_each_reason(tmp_path):
    """No PMU (a VM, or not); no events for the vendor; paranoid unreadable, 3 for a user;
    no perf: each its own line, with the paranoid value it read."""
    a = detect(fake_machine(tmp_path / "a", pmus=()), which=PERF, run=fake_perf(set()), euid=0)
    assert a == Availability(False, "this machine exposes no hardware PMU (VM)")
    a = detect(fake_machine(tmp_path / "b", cpuinfo=CPUINFO_INTEL, pmus=("power",)), which=PERF,
               run=fake_perf(set()), euid=0)
    assert a.why == "this machine exposes no hardware PMU (no cpu, cpu_core or armv8_* under /sys/bus/event_source/devices)"
    a = detect(fake_machine(tmp_path / "b2", cpuinfo=CPUINFO_INTEL, pmus=("cpu_atom",)), which=lambda _: None,
               run=fake_perf(set()), euid=0)
    assert a.why == "perf is not installed (Debian: apt-get install linux-perf)"     # an E-core PMU is a PMU
    a = detect(fake_machine(tmp_path / "c", cpuinfo="vendor_id\t: HygonGenuine\n"), which=PERF, run=fake_perf(set()), euid=0)
    assert a.why == "no local/remote DRAM events known for this CPU (vendor HygonGenuine)"
    a = detect(fake_machine(tmp_path / "d", paranoid=None), which=PERF, run=fake_perf(set()), euid=1000)
    assert a.why == "perf_event_paranoid is unreadable (no perf events in this kernel?)"
    a = detect(fake_machine(tmp_path / "e", paranoid="3"), which=PERF, run=fake_perf(set()), euid=1000)
    assert a == Availability(False, "perf_event_paranoid 3 (2 or lower lets a user count its own processes; "
                                    "or grant perf CAP_PERFMON)", paranoid=3)
    a = detect(fake_machine(tmp_path / "f", paranoid="-1"), which=lambda _: None, run=fake_perf(set()), euid=1000)
    assert a == Availability(False, "perf is not installed (Debian: apt-get install linux-perf)", paranoid=-1)


def test_detect_takes_the_first_event_pair_perf_counts(tmp_path):
    """Zen 4's pair refused, Zen 3's counted: Zen 3's, all of kernel and user (paranoid 1);
    an arm64 CPU with its armv8 PMU counts its total and remote events, user space only
    for a user at paranoid 2 (but root counts the kernel too)."""
    run = fake_perf({ZEN3.first, ZEN3.remote})
    a = detect(fake_machine(tmp_path / "a", paranoid="1"), which=PERF, run=run, euid=1000)
    assert a == Availability(True, None, ZEN3, "", "/usr/bin/perf", 1)
    assert [c[c.index("-e") + 1] for c in run.calls] == [f"{ZEN4.first},{ZEN4.remote}", f"{ZEN3.first},{ZEN3.remote}"]
    assert run.calls[0][:3] == ["/usr/bin/perf", "stat", "-x,"] and run.calls[0][-2:] == ["--", "true"]
    assert run.kws[0] == {"capture_output": True, "text": True, "timeout": 30}     # a hung perf is not waited on forever
    run = fake_perf({ARM.first, ARM.remote})
    root = fake_machine(tmp_path / "b", cpuinfo=CPUINFO_ARM, pmus=("armv8_pmuv3_0",))
    a = detect(root, which=PERF, run=run, euid=1000)
    assert a == Availability(True, None, ARM, ":u", "/usr/bin/perf", 2)
    assert run.calls[0][run.calls[0].index("-e") + 1] == "ll_cache_miss_rd:u,remote_access:u"
    assert detect(root, which=PERF, run=fake_perf({ARM.first, ARM.remote}), euid=0).modifier == ""


def test_when_no_pair_counts_the_first_reason_is_said(tmp_path):
    """Every Intel pair refused: the Skylake pair's refusal, with perf's first words; a
    pair that perf runs but cannot count: which event and why."""
    root = fake_machine(tmp_path, cpuinfo=CPUINFO_INTEL, paranoid="0")
    a = detect(root, which=PERF, run=fake_perf(set()), euid=1000)
    assert a == Availability(False, f"perf stat refused {SKX.first},{SKX.remote}: event syntax error: "
                                    f"'{SKX.first}'", perf="/usr/bin/perf", paranoid=0)
    out = f"5,,{SKX.first},1,100.00,,\n<not counted>,,{SKX.remote},0,0.00,,\n"
    a = detect(root, which=PERF, run=fake_perf({SKX.first, SKX.remote}, output=out), euid=1000)
    assert a.why == f"perf stat cannot count {SKX.remote} here (not counted)"
    a = detect(root, which=PERF, run=fake_perf({SKX.first, SKX.remote}, output=f"5,,{SKX.first},1,100.00,,\n"),
               euid=1000)
    assert a.why == f"perf stat cannot count {SKX.remote} here (absent from its output)"
    a = detect(root, which=PERF, run=fake_perf({SKX.first, SKX.remote}, rc=1, stderr="  \nno permission\n"),
               euid=1000)
    assert a.why == f"perf stat refused {SKX.first},{SKX.remote}: no permission"
    long = "Error: " + "x" * 300
    a = detect(root, which=PERF, run=fake_perf({SKX.first, SKX.remote}, rc=1, stderr=long + "\n"), euid=1000)
    assert a.why == f"perf stat refused {SKX.first},{SKX.remote}: " + long[:160]


def test_the_plan_line_of_each_availability():
    ok = Availability(True, None, SKX, ":u", "/usr/bin/perf", 2)
    assert ok.event_list() == [SKX.first + ":u", SKX.remote + ":u"]
    assert ok.line() == ("counters: local and remote DRAM accesses per run, from mem_load_l3_miss_retired.local_dram "
                         "and mem_load_l3_miss_retired.remote_dram (Intel Skylake-SP and later; perf stat, "
                         "user space only (perf_event_paranoid 2))")
    arm = Availability(True, None, ARM, "", "/usr/bin/perf", 3)
    assert arm.line() == ("counters: DRAM reads (local = all less remote) and remote accesses per run, from "
                          "ll_cache_miss_rd and remote_access (Arm PMUv3; perf stat, user space and kernel)")
    assert Availability(False, "perf is not installed").line() == "counters: not captured: perf is not installed"


def test_the_plan_line_for_launchers_off_the_measured_node(monkeypatch):
    """Launchers that start the process on a compute node (aprun, a stand-in 'mpiexec-remote')
    are named, sorted, in the line; where every run is off the node nothing is probed."""
    L = lambda name, here: SimpleNamespace(name=name, on_measured_node=here)   # noqa: E731
    ok = Availability(True, None, ZEN4, "", "/usr/bin/perf", 0)
    monkeypatch.setattr(pmu, "availability", lambda: ok)
    lines = lambda ls, platform="auto": pmu.plan_lines({"counters": True}, ls, platform)  # noqa: E731
    assert lines([L("numactl", True)]) == [ok.line()]
    assert lines([L("numactl", True), L("mpiexec-remote", False), L("qrsh", False), L("aprun", False),
                  L("blaunch", False)]) == [
        ok.line() + "; not for aprun, blaunch, mpiexec-remote, qrsh runs (their process runs on a compute node)"]
    assert lines([L("numactl", True)], "x4600") == [
        "counters: asked for; platform x4600 is not this machine: each run checks "
        "its own CPU as it starts (the record says when it cannot count)"]
    no = Availability(False, "perf is not installed")
    monkeypatch.setattr(pmu, "availability", lambda: no)
    assert lines([L("numactl", True), L("aprun", False)]) == ["counters: not captured: perf is not installed"]
    monkeypatch.setattr(pmu, "availability", lambda: pytest.fail("probed for runs that are all elsewhere"))
    assert lines([L("mpiexec-remote", False), L("aprun", False)], "x4600") == [
        "counters: not captured: aprun, mpiexec-remote starts the process on a compute node"]


def test_the_event_pairs_per_vendor_in_the_order_they_are_tried():
    """perf's own names (tools/perf/pmu-events): local first, remote second; newest CPUs
    first; Arm's first event counts every DRAM read ('total')."""
    table = {v: [(e.cpu, e.first, e.remote, e.measures) for e in sets] for v, sets in EVENTS.items()}
    assert table == {
        "intel": [("Intel Skylake-SP and later", "mem_load_l3_miss_retired.local_dram",
                   "mem_load_l3_miss_retired.remote_dram", "local"),
                  ("Intel Haswell-EP, Broadwell-EP", "mem_load_uops_l3_miss_retired.local_dram",
                   "mem_load_uops_l3_miss_retired.remote_dram", "local")],
        "amd": [("AMD Zen 4, Zen 5", "ls_any_fills_from_sys.dram_io_near", "ls_any_fills_from_sys.dram_io_far", "local"),
                ("AMD Zen 3", "ls_any_fills_from_sys.mem_io_local", "ls_any_fills_from_sys.mem_io_remote", "local"),
                ("AMD Zen 2", "ls_refills_from_sys.ls_mabresp_lcl_dram", "ls_refills_from_sys.ls_mabresp_rmt_dram",
                 "local")],
        "arm": [("Arm PMUv3", "ll_cache_miss_rd", "remote_access", "total")]}
    assert pmu.VENDORS == {"GenuineIntel": "intel", "AuthenticAMD": "amd"}
    assert (pmu.OUTPUT, pmu.SEP) == ("perf.stat.csv", ",")
