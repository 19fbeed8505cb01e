"""numaplace.machine.system: the page-shaping settings of a run, and control of automatic NUMA
balancing (set for the run, restored after: on return, on an exception, on SIGINT, and
by the next run after a SIGKILL); platform detect on this machine.

The control tests point `root` at a tree of the real files' formats (never the host's
own /proc/sys: other people's work runs on this machine); the NUMA VM tests
(test_numa_vm_system.py) set the real sysctl in a guest."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO, single_run_spec

from numaplace import ConfigError
from numaplace.machine import system
from numaplace.judge.fidelity import judge, migration
from numaplace.plan.study import Study
from numaplace.machine.topology import load_platform

VMSTAT = """nr_free_pages 123
numa_hit 115008884
numa_pte_updates {pte}
numa_huge_pte_updates 0
numa_hint_faults 10
numa_hint_faults_local 5
numa_pages_migrated {migrated}
pgmigrate_success {migrated}
pgmigrate_fail 0
"""


def fake_root(tmp_path, balancing=1, smt=None, governors=("performance", "performance")):
    """A /proc + /sys tree with the kernel's own file formats."""
    r = tmp_path / "root"
    files = {"proc/sys/kernel/numa_balancing": f"{balancing}\n",
             "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never\n",
             "sys/kernel/mm/transparent_hugepage/defrag": "always defer defer+madvise [madvise] never\n",
             "proc/sys/vm/zone_reclaim_mode": "0\n",
             "proc/cmdline": "BOOT_IMAGE=/vmlinuz-6.1.0 root=/dev/sda1 ro quiet\n",
             "proc/vmstat": VMSTAT.format(pte=0, migrated=0)}
    for i, g in enumerate(governors):
        files[f"sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor"] = g + "\n"
        files[f"sys/devices/system/cpu/cpu{i}/topology/thread_siblings_list"] = f"{i}\n"
    if smt is not None:
        files["sys/devices/system/cpu/smt/active"] = f"{int(smt)}\n"
    for rel, text in files.items():
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_text(text)
    return r


def balancing_of(root):
    return int((root / system.BALANCING).read_text())


def test_settings_from_a_tree(tmp_path):
    r = fake_root(tmp_path, balancing=1, smt=True)
    s = system.settings(r)
    assert s == {"numa_balancing": 1, "thp_enabled": "madvise", "thp_defrag": "madvise",
                 "zone_reclaim_mode": 0, "cpufreq_governor": "performance", "smt_active": True,
                 "kernel_cmdline": "BOOT_IMAGE=/vmlinuz-6.1.0 root=/dev/sda1 ro quiet"}


def test_absent_files_are_null_and_mixed_governors_are_named(tmp_path):
    r = fake_root(tmp_path, governors=("performance", "powersave"))
    (r / system.BALANCING).unlink()
    shutil.rmtree(r / "sys/kernel/mm")
    s = system.settings(r)
    assert s["numa_balancing"] is None and s["thp_enabled"] is None and s["thp_defrag"] is None
    assert s["cpufreq_governor"] == "performance (0); powersave (1)"
    assert s["smt_active"] is False            # no smt/active: from thread_siblings_list
    for d in (r / "sys/devices/system/cpu").glob("cpu*/cpufreq"):
        shutil.rmtree(d)
    assert system.settings(r)["cpufreq_governor"] is None


def test_settings_of_this_machine_match_its_files():
    s = system.settings()
    assert s["numa_balancing"] == int(Path("/proc/sys/kernel/numa_balancing").read_text())
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    assert f"[{s['thp_enabled']}]" in thp
    assert s["zone_reclaim_mode"] == int(Path("/proc/sys/vm/zone_reclaim_mode").read_text())
    assert s["kernel_cmdline"] == Path("/proc/cmdline").read_text().strip()
    assert s["smt_active"] == (Path("/sys/devices/system/cpu/smt/active").read_text().strip() == "1")
    gov = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    assert s["cpufreq_governor"] == (gov.read_text().strip() if gov.exists() else None)


def test_at_end_reads_balancing_again_and_the_migration_counters(tmp_path):
    r = fake_root(tmp_path, balancing=1)
    rec = system.at_start(r)
    (r / system.BALANCING).write_text("0\n")             # changed during the run
    (r / "proc/vmstat").write_text(VMSTAT.format(pte=5000, migrated=1234))
    system.at_end(rec, r)
    assert rec["numa_balancing"] == 1 and rec["numa_balancing_at_end"] == 0
    assert rec["vmstat_delta"]["numa_pages_migrated"] == 1234
    assert rec["vmstat_delta"]["numa_pte_updates"] == 5000 and "vmstat_start" not in rec
    assert system.balancing_on(rec) is True and system.balancing_on({}) is None


@pytest.mark.parametrize("asked, want", [("off", 0), (False, 0), ("on", 1), (True, 1)])
def test_balancing_set_for_the_run_and_restored(tmp_path, asked, want):
    r = fake_root(tmp_path, balancing=1 - want)
    state = tmp_path / "results" / "s" / system.STATE_FILE
    with system.balancing_for_run({"numa_balancing": asked}, state, r):
        assert balancing_of(r) == want
        # the previous value is on disk before the change
        assert json.loads(state.read_text())["numa_balancing"] == 1 - want
    assert balancing_of(r) == 1 - want and not state.exists()


def test_balancing_restored_when_the_run_raises(tmp_path):
    r = fake_root(tmp_path, balancing=1)
    state = tmp_path / system.STATE_FILE
    with pytest.raises(RuntimeError):
        with system.balancing_for_run({"numa_balancing": "off"}, state, r):
            assert balancing_of(r) == 0
            raise RuntimeError("the benchmark crashed")
    assert balancing_of(r) == 1 and not state.exists()


def test_nothing_changes_when_the_machine_already_has_the_setting(tmp_path):
    r = fake_root(tmp_path, balancing=0)
    state = tmp_path / system.STATE_FILE
    with system.balancing_for_run({"numa_balancing": "off"}, state, r):
        assert not state.exists()
    assert balancing_of(r) == 0


HOLD = """import time
from numaplace.machine import system
with system.balancing_for_run({{"numa_balancing": "off"}}, {state!r}, {root!r}):
    print("set", flush=True)
    time.sleep(60)
"""


def _hold(tmp_path, r, state):
    # SIGINT as a terminal's job has it: a suite started in the background (`pytest &`)
    # hands its children SIGINT ignored, and Python then installs no KeyboardInterrupt
    p = subprocess.Popen([sys.executable, "-c", HOLD.format(state=str(state), root=str(r))],
                         stdout=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert p.stdout.readline().strip() == "set"
    return p


@pytest.mark.workflow      # times a Python child's start and its SIGINT (p.wait(30)): not a unit test (MARKERS.md)
def test_ctrl_c_restores(tmp_path):
    r = fake_root(tmp_path, balancing=1)
    state = tmp_path / system.STATE_FILE
    p = _hold(tmp_path, r, state)
    assert balancing_of(r) == 0
    p.send_signal(signal.SIGINT)
    p.wait(30)
    assert balancing_of(r) == 1 and not state.exists()


def test_a_killed_run_is_restored_by_the_next_start(tmp_path):
    r = fake_root(tmp_path, balancing=1)
    state = tmp_path / system.STATE_FILE
    p = _hold(tmp_path, r, state)
    p.kill()                                   # SIGKILL: no chance to clean up
    p.wait(30)
    assert balancing_of(r) == 0 and json.loads(state.read_text())["numa_balancing"] == 1
    with system.balancing_for_run(None, state, r):      # the next run, without a setting
        assert balancing_of(r) == 1
    assert not state.exists()


def test_a_leftover_this_process_may_not_restore_stays_and_the_run_goes_on(tmp_path, monkeypatch):
    """The restore file is the machine's: a run of another study, by a user without the
    rights, neither fails nor loses the file; one whose value is already back drops it."""
    r = fake_root(tmp_path, balancing=0)
    state = tmp_path / system.STATE_FILE
    state.write_text(json.dumps({"numa_balancing": 1, "set_to": 0, "pid": 1}))

    def refused(*a, **k):
        raise PermissionError("not root")

    monkeypatch.setattr(system, "set_balancing", refused)
    with system.balancing_for_run(None, state, r):
        assert balancing_of(r) == 0
    assert state.exists()
    (r / system.BALANCING).write_text("1\n")              # put back by hand: nothing to set
    with system.balancing_for_run(None, state, r):
        pass
    assert not state.exists() and balancing_of(r) == 1


def test_state_file_is_beside_the_machine_lock(tmp_path, monkeypatch):
    """One per machine, whatever study ran: the next run of any study restores it."""
    from numaplace.machine import guard
    monkeypatch.setattr(guard, "lock_path", lambda: tmp_path / guard.LOCK_NAME)
    assert system.state_file() == tmp_path / "numaplace-system-restore.json"


def test_balancing_is_set_and_the_system_read_only_under_the_machine_lock(tmp_path, monkeypatch):
    """Two studies on one machine: a run waiting for the lock must not change the sysctl
    (nor restore another run's leftover) while the other run measures."""
    import fcntl
    from contextlib import contextmanager
    from numaplace.machine import guard
    from numaplace.run import runner
    lock = tmp_path / guard.LOCK_NAME
    monkeypatch.setattr(guard, "lock_path", lambda: lock)
    seen = []

    def held():
        with open(lock) as other:
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(other, fcntl.LOCK_UN)
            return False

    @contextmanager
    def balancing(cfg, state):
        seen.append(("balancing", held()))
        yield

    class Run:
        def __init__(self, *a, **k):
            seen.append(("settings read", held()))

        def execute(self):
            return {}

    monkeypatch.setattr(system, "balancing_for_run", balancing)
    monkeypatch.setattr(runner, "_Run", Run)
    runner.execute({"system": {"numa_balancing": "off"}}, "/bin/true", tmp_path / "r/record.json")
    assert seen == [("balancing", True), ("settings read", True)]


def test_refused_before_any_run_where_numaplace_may_not(tmp_path, monkeypatch):
    r = fake_root(tmp_path, balancing=1)
    monkeypatch.setattr(system, "how_to_set", lambda root=None: (None, "not root and no sudo rule"))
    with pytest.raises(ConfigError) as e:
        system.check_study({"numa_balancing": "off"}, "s.yaml", r)
    assert str(e.value) == ("s.yaml: system.numa_balancing: cannot set kernel.numa_balancing to 0 "
                            "here (it is 1): not root and no sudo rule")
    system.check_study({"numa_balancing": "on"}, "s.yaml", r)   # already so: nothing to set


def _as_nobody():
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root to drop to nobody (setpriv)")
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    numaplace = Path(sys.executable).parent / "numaplace"
    reach = subprocess.run([*drop, str(numaplace), "--help"], capture_output=True, text=True)
    if reach.returncode != 0:      # e.g. a checkout under /root (mode 0700): nobody cannot run it
        pytest.skip(f"user nobody cannot run {numaplace} (the checkout's folders are closed to "
                    f"other users): {reach.stderr.strip()[-200:]}")
    return drop


def test_plan_as_an_unprivileged_user_refuses_with_one_line(tmp_path):
    """A real refusal: `numaplace plan` as nobody (cannot write /proc/sys, no sudo rule)."""
    drop = _as_nobody()
    current = int(Path("/proc/sys/kernel/numa_balancing").read_text())
    asked = "on" if current == 0 else "off"
    study = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    study["system"] = {"numa_balancing": asked}
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="numaplace-nobody-"))     # pytest's tmp is root-only
    os.chmod(d, 0o755)
    f = d / "s.yaml"
    f.write_text(yaml.safe_dump(study))
    os.chmod(f, 0o644)
    p = subprocess.run([*drop, str(Path(sys.executable).parent / "numaplace"), "plan", str(f),
                        "--out", "/dev/null"], capture_output=True, text=True, cwd=REPO)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"invalid study: {f}: system.numa_balancing: cannot set "
                               "kernel.numa_balancing"), lines[0]
    shutil.rmtree(d)


def test_study_passes_the_setting_to_its_runs_only_when_set():
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    plain = Study(base, "q.yaml", REPO / "config")
    assert "system" not in plain.run_params(plain.runs[0].run_id)
    cur = int(Path("/proc/sys/kernel/numa_balancing").read_text())
    with_it = Study({**base, "system": {"numa_balancing": "off" if cur == 0 else "on"}}, "q.yaml", REPO / "config")
    assert with_it.run_params(with_it.runs[0].run_id)["system"] == {"numa_balancing": "off" if cur == 0 else "on"}


def test_older_capture_fidelity_is_not_hidden_by_the_schema_defaults():
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    st = Study({**base, "capture": {"fidelity": {"interleave_tolerance": 0.2}},
                "fidelity": {"memory_share_min": 0.8}}, "q.yaml", REPO / "config")
    t = st.fidelity_thresholds
    assert (t["interleave_tolerance"], t["memory_share_min"]) == (0.2, 0.8)
    st = Study({**base, "capture": {"fidelity": {"interleave_tolerance": 0.2}},
                "fidelity": {"interleave_tolerance": 0.3}}, "q.yaml", REPO / "config")
    assert st.fidelity_thresholds["interleave_tolerance"] == 0.3


def test_bad_setting_is_one_config_error():
    base = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    with pytest.raises(ConfigError) as e:
        Study({**base, "system": {"numa_balancing": "sometimes"}}, "q.yaml", REPO / "config")
    assert "system.numa_balancing" in str(e.value)


# -- a real run's record carries the system object and the pages over time ----------------

def test_record_has_system_and_pages_over_time(npb_build, tmp_path):
    from numaplace.run.runner import execute
    # class W (~0.3 s here): CG.S (~30 ms) may end before a loaded machine's first sample
    spec = {**single_run_spec(0), "class": "W", "run_id": "cg.W.default.c0.r1"}
    rec = execute(spec, npb_build("cg", "W"), tmp_path / "results/t/runs/x/record.json")
    assert rec["status"] == "ok", rec["reason"]
    s = rec["system"]
    assert set(system.REPORTED) <= set(s) and "vmstat_start" not in s
    # free memory per node when the run started: a full node explains pages that spilled
    assert set(s["free_mb_by_node"]) == {p.name[4:] for p in Path("/sys/devices/system/node").glob("node[0-9]*")}
    assert all(0 < mb < 10**8 for mb in s["free_mb_by_node"].values())
    assert s["numa_balancing_at_end"] == int(Path("/proc/sys/kernel/numa_balancing").read_text())
    pts = rec["captures"]["pages_over_time"]
    assert pts and all(set(p) == {"t", "data_bytes"} for p in pts)
    assert pts[-1]["data_bytes"] == rec["captures"]["numa_maps"]["last"]["data_bytes"]
    assert not system.state_file().exists()


# -- migration judging ---------------------------------------------------------------------

FIXTURE = REPO / "tests/fixtures/real/vm/runs/mg.W.serial-init.l11-n0n3.r1/record.json"


def _with_balancing(rec, on, timeline):
    rec = json.loads(json.dumps(rec))
    rec["system"] = {"numa_balancing": on, "numa_balancing_at_end": on}
    rec["captures"]["pages_over_time"] = [{"t": t, "data_bytes": {str(n): b for n, b in d.items()}}
                                          for t, d in timeline]
    return rec


def test_migration_is_drift_with_the_numbers_when_balancing_moved_pages():
    rec = json.loads(FIXTURE.read_text())
    total = sum(rec["captures"]["numa_maps"]["steady"]["data_bytes"].values())
    moved = _with_balancing(rec, 1, [(0.5, {0: total // 4}), (1.0, {0: total}),
                                     (2.0, {0: int(total * 0.8), 3: total - int(total * 0.8)}),
                                     (3.0, {0: total // 2, 3: total - total // 2})])
    f = judge(moved)
    assert f["verdict"] == "drift" and f["migration"]["verdict"] == "drift"
    m = f["migration"]
    assert m["moved_share"] == pytest.approx(0.5, abs=0.001) and m["t_first"] == 1.0 and m["t_moved"] == 3.0
    assert m["shares_first"] == {"0": 1.0, "3": 0.0}
    why = [r for r in f["reasons"] if r.startswith("migration:")]
    assert why and "numa_balancing on: 50.0%" in why[0] and "N0 100.0%→50.0% N3 0.0%→50.0%" in why[0], why
    # the same pages with balancing off: not judged for migration
    off = _with_balancing(rec, 0, [(1.0, {0: total}), (3.0, {0: total // 2, 3: total - total // 2})])
    assert migration(off) is None and "migration" not in judge(off)


def test_migration_ok_when_pages_stayed_and_not_for_membind():
    rec = json.loads(FIXTURE.read_text())
    total = sum(rec["captures"]["numa_maps"]["steady"]["data_bytes"].values())
    stayed = _with_balancing(rec, 1, [(1.0, {0: total}), (2.0, {0: total - 4096, 3: 4096}), (3.0, {0: total})])
    m = migration(stayed)
    assert m["verdict"] == "ok" and m["moved_share"] < 0.001
    assert judge(stayed)["verdict"] == judge(json.loads(FIXTURE.read_text()))["verdict"]
    bound = json.loads(json.dumps(stayed))
    bound["placement"].update(memory="membind", memory_nodes="0")
    assert migration(bound) is None
    one = _with_balancing(rec, 1, [(1.0, {0: total})])
    assert migration(one)["verdict"] == "unknown"
    # balancing on and the pages not followed: the run is not known to have kept them
    if judge(json.loads(FIXTURE.read_text()))["verdict"] == "ok":
        j = judge(one)
        assert j["verdict"] == "unknown" and "migration: numa_balancing on, but 1 sample(s)" in j["reason"]


def test_migration_of_an_older_record_uses_peak_and_last():
    rec = json.loads(FIXTURE.read_text())
    rec["system"] = {"numa_balancing": 1}
    nm = rec["captures"]["numa_maps"]
    assert "pages_over_time" not in rec["captures"]
    m = migration(rec)
    assert m["verdict"] in ("ok", "unknown")
    if nm.get("last"):
        last = json.loads(json.dumps(nm["last"]))
        total = sum(last["data_bytes"].values())
        last["data_bytes"] = {"0": total // 2, "3": total - total // 2}
        nm["last"] = last
        nm["peak"] = {**nm["peak"], "data_bytes": {"0": total}}
        assert migration(rec)["verdict"] == "drift"


# -- platform detect on this machine ---------------------------------------------------------

def test_detect_here_validates_and_plans_like_auto(tmp_path):
    out = subprocess.run([str(Path(sys.executable).parent / "numaplace"), "platform", "detect", "--name", "here"],
                         capture_output=True, text=True, check=True).stdout
    config = tmp_path / "config"
    shutil.copytree(REPO / "config", config)
    (config / "platforms" / "here.yaml").write_text(out)
    topo = load_platform(config / "platforms" / "here.yaml")
    from numaplace.machine.topology import from_sysfs
    live = from_sysfs()
    assert topo.nodes == live.nodes and topo.distances == live.distances
    assert out.startswith("# numaplace platform file") and "/sys/devices/system/node" in out
    data = yaml.safe_load(out)
    assert data["caches"] and all(c["size_kb"] > 0 for c in data["caches"])
    base = yaml.safe_load((REPO / "config" / "studies" / "quick.yaml").read_text())
    plans = {}
    for name in ("auto", "here"):
        st = Study({**base, "platform": name}, "quick.yaml", config)
        st.write_plan(tmp_path / f"{name}.tsv")
        plans[name] = (tmp_path / f"{name}.tsv").read_text()
    assert plans["auto"] == plans["here"]


def test_detect_rejects_a_bad_name():
    p = subprocess.run([str(Path(sys.executable).parent / "numaplace"), "platform", "detect", "--name", "a b;rm"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "--name" in p.stderr


# -- the report, on the VM balancing experiment's real records ------------------------------

BALANCING_RUNS = REPO / "tests/fixtures/real/vm-balancing/runs"   # test_numa_vm_system.py, kept


def test_real_records_carry_the_system_object():
    recs = {p.parent.name: json.loads(p.read_text()) for p in BALANCING_RUNS.glob("*/record.json")}
    assert len(recs) == 5
    for name, rec in recs.items():
        want = 0 if name.endswith("balancing-off") else 1
        assert rec["system"]["numa_balancing"] == rec["system"]["numa_balancing_at_end"] == want
        assert rec["system"]["thp_enabled"] == "never"
        assert len(rec["captures"]["pages_over_time"]) >= 5
        f = judge(rec)
        assert ("migration" in f) == bool(want)
        # the kernel's own balancing moved (almost) nothing in these runs; migratepages did
        assert (f["verdict"] == "drift") == (name == "moved-by-hand"), (name, f.get("reasons"))
    m = judge(recs["moved-by-hand"])["migration"]
    assert m["shares_first"]["0"] >= 0.95 and m["shares_moved"]["3"] >= 0.5


def test_summary_shows_the_settings_and_flags_a_study_whose_runs_differ(tmp_path):
    from numaplace.tables import aggregate
    from numaplace.report import summary as report
    results = tmp_path / "results" / "vmbalancing"
    shutil.copytree(BALANCING_RUNS, results / "runs")
    aggregate.write_tables(results, tmp_path / "tables")
    tables = aggregate.read_tables(tmp_path / "tables")
    runs = tables["runs"]
    assert sorted(runs["sys_numa_balancing"].tolist()) == [0, 0, 1, 1, 1]
    text = report.summary_markdown(tables, None, "vmbalancing")
    section = text.split("## The machine as the kernel saw it")[1].split("\n## ")[0]
    assert "| automatic NUMA balancing (start) | DIFFERS: " in section, section
    assert "| transparent huge pages | never | none |" in section, section
    assert "**The runs differ in automatic NUMA balancing (start), automatic NUMA balancing (end)**" in section
    assert "Automatic NUMA balancing was on in 3 run(s)" in section and "1 run(s) had pages moved" in section
    # one setting throughout: nothing flagged
    same = runs[runs["sys_numa_balancing"] == 0]
    text = report.system_markdown(same)
    assert not any("DIFFERS" in line for line in text) and not any("was on in" in line for line in text)


# -- platform detect on the NUMA VM guests' sysfs (test_numa_vm_system.py, kept) -------------

VM_DETECT = REPO / "tests/fixtures/real/vm-detect"


@pytest.mark.parametrize("name, nodes, dist", [
    ("vm-unequal", {0: [0, 1], 1: [2, 3], 2: []}, [[10, 20, 20], [20, 10, 20], [20, 20, 10]]),
    ("vm-mc8", {n: [n] for n in range(8)}, None)])
def test_detect_from_a_guests_sysfs(tmp_path, name, nodes, dist):
    from numaplace.machine.platform_detect import detect
    text = detect(name, VM_DETECT / name / "sysfs", use_hwloc=False)
    (tmp_path / f"{name}.yaml").write_text(text)
    topo = load_platform(tmp_path / f"{name}.yaml")
    guest = load_platform(VM_DETECT / name / f"{name}.yaml")        # what the guest printed
    assert topo.nodes == guest.nodes == nodes
    assert topo.distances == guest.distances
    if dist:
        assert topo.distances == dist
    assert "hwloc         not consulted" in text and "hwloc 2." in (VM_DETECT / name / f"{name}.yaml").read_text()


def test_hwloc_cpuset_words():
    from numaplace.machine.platform_detect import hwloc_cpuset
    assert hwloc_cpuset("0x00000003") == [0, 1]
    assert hwloc_cpuset("0x00000001,0x80000000") == [31, 32]
    assert hwloc_cpuset("0x0") == []


# -- what a record keeps of the kernel's settings: exact values ------------------------------

def test_three_governors_are_named_with_their_cpus_in_name_order(tmp_path):
    """CPUs 0-1 and 10 ondemand, 2 performance, 3 powersave: each name once, its CPUs as a
    CPU list (10 after 1, by number), names in alphabetical order."""
    r = fake_root(tmp_path, governors=("ondemand", "ondemand", "performance", "powersave"))
    d = r / "sys/devices/system/cpu/cpu10/cpufreq"
    d.mkdir(parents=True)
    (d / "scaling_governor").write_text("ondemand\n")
    assert system.settings(r)["cpufreq_governor"] == "ondemand (0-1,10); performance (2); powersave (3)"


def test_smt_from_smt_active_or_from_sibling_lists_in_either_form(tmp_path):
    """smt/active 1 or 0 where the kernel has it; else a sibling list naming two threads,
    '0,4' or '0-1', means SMT; lists of one thread do not; no lists at all: unknown."""
    r = fake_root(tmp_path, smt=False)
    assert system.settings(r)["smt_active"] is False
    (r / "sys/devices/system/cpu/smt/active").unlink()
    assert system.settings(r)["smt_active"] is False                  # '0', '1': one thread each
    (r / "sys/devices/system/cpu/cpu0/topology/thread_siblings_list").write_text("0-1\n")
    assert system.settings(r)["smt_active"] is True
    (r / "sys/devices/system/cpu/cpu0/topology/thread_siblings_list").write_text("0,4\n")
    assert system.settings(r)["smt_active"] is True
    shutil.rmtree(r / "sys/devices/system/cpu")
    assert system.settings(r)["smt_active"] is None


def test_thp_choice_is_the_bracketed_word():
    assert system._chosen("always [madvise] never") == "madvise"
    assert system._chosen("[always] madvise never") == "always"
    assert system._chosen("always defer defer+madvise madvise [never]") == "never"
    assert system._chosen("madvise") == "madvise" and system._chosen(None) is None


def test_free_memory_per_node_in_mib_and_the_migration_counters(tmp_path):
    """MemFree (not MemTotal) of each node, kB to MiB (1024), node ids as text; only the
    migration counters of /proc/vmstat, as numbers."""
    r = fake_root(tmp_path)
    for n, (total, free) in {0: (16777216, 2097151), 1: (16777216, 1048576), 10: (8388608, 5120)}.items():
        d = r / f"sys/devices/system/node/node{n}"
        d.mkdir(parents=True)
        (d / "meminfo").write_text(f"Node {n} MemTotal:       {total} kB\nNode {n} MemFree:        {free} kB\n"
                                   f"Node {n} MemUsed:        {total - free} kB\n")
    assert system.free_mb_by_node(r) == {"0": 2047, "1": 1024, "10": 5}
    (r / "proc/vmstat").write_text(VMSTAT.format(pte=77, migrated=9) + "numa_foo 5\npgmigrate_fail x\n")
    assert system.migration_counters(r) == {"numa_pte_updates": 77, "numa_hint_faults": 10,
                                            "numa_hint_faults_local": 5, "numa_pages_migrated": 9,
                                            "pgmigrate_success": 9, "pgmigrate_fail": 0}
    assert system.free_mb_by_node(tmp_path / "none") == {} and system.migration_counters(tmp_path / "none") == {}


def test_at_end_counts_what_changed_and_only_once(tmp_path):
    """The change of each counter since the start (end - start); a counter absent at the
    start is left out; calling at_end again leaves the record as it is."""
    r = fake_root(tmp_path, balancing=0)
    (r / "proc/vmstat").write_text(VMSTAT.format(pte=100, migrated=40))
    rec = system.at_start(r)
    rec["vmstat_start"].pop("numa_hint_faults_local")
    (r / "proc/vmstat").write_text(VMSTAT.format(pte=350, migrated=41))
    (r / system.BALANCING).write_text("2\n")
    system.at_end(rec, r)
    assert rec["numa_balancing"] == 0 and rec["numa_balancing_at_end"] == 2
    assert rec["vmstat_delta"] == {"numa_pte_updates": 250, "numa_hint_faults": 0, "numa_pages_migrated": 1,
                                   "pgmigrate_success": 1, "pgmigrate_fail": 0}
    (r / system.BALANCING).write_text("1\n")
    assert system.at_end(rec, r)["numa_balancing_at_end"] == 2


def test_balancing_was_on_if_on_at_either_end():
    on = system.balancing_on
    assert on({"numa_balancing": 0, "numa_balancing_at_end": 0}) is False
    assert on({"numa_balancing": 0, "numa_balancing_at_end": 1}) is True
    assert on({"numa_balancing": 2, "numa_balancing_at_end": 0}) is True      # 2: tiering mode
    assert on({"numa_balancing": None, "numa_balancing_at_end": 0}) is False
    assert on({"numa_balancing": None}) is None and on(None) is None and on({}) is None


def test_the_studys_setting_as_the_sysctl_value():
    """off/on as text or YAML's booleans; absent: no setting."""
    assert [system.wanted({"numa_balancing": v}) for v in ("off", "on", False, True)] == [0, 1, 0, 1]
    assert system.wanted({}) is None and system.wanted(None) is None and system.wanted({"numa_balancing": None}) is None
    assert system.BALANCING_VALUES == {"off": 0, "on": 1}


def test_where_numaplace_may_not_set_it_and_a_machine_without_it(tmp_path, monkeypatch):
    """A kernel without the sysctl: numaplace cannot set it, and a study asking for off is
    fine (it never balances) while one asking for on is refused, 'absent'."""
    r = fake_root(tmp_path, balancing=1)
    assert system.how_to_set(r) == ("write", None)
    (r / system.BALANCING).unlink()
    assert system.how_to_set(r) == (None, "this kernel has no kernel.numa_balancing (/proc/sys/kernel/numa_balancing)")
    system.check_study({"numa_balancing": "off"}, "s.yaml", r)
    with pytest.raises(ConfigError) as e:
        system.check_study({"numa_balancing": "on"}, "s.yaml", r)
    assert str(e.value) == ("s.yaml: system.numa_balancing: cannot set kernel.numa_balancing to 1 here (it is "
                            "absent): this kernel has no kernel.numa_balancing (/proc/sys/kernel/numa_balancing)")
    system.check_study(None, "s.yaml", r)
    with system.balancing_for_run({"numa_balancing": "off"}, tmp_path / "state.json", r):   # never balances: run
        pass
    assert not (tmp_path / "state.json").exists()
    r2 = fake_root(tmp_path / "b", balancing=0)
    monkeypatch.setattr(system.os, "access", lambda path, mode: False)
    assert system.how_to_set(r2) == (None, "not root and no sudo rule for `sysctl -qw kernel.numa_balancing=N` "
                                           "(README: Before you measure)")
    with pytest.raises(PermissionError, match="cannot set kernel.numa_balancing: not root and no sudo rule"):
        system.set_balancing(1, r2)
    with pytest.raises(PermissionError, match="cannot set kernel.numa_balancing to 1: not root"):
        with system.balancing_for_run({"numa_balancing": "on"}, tmp_path / "state.json", r2):
            pass
    assert system._sudo_argv(1)[:2] == ["sudo", "-n"] and system._sudo_argv(1)[-2:] == ["-qw", "kernel.numa_balancing=1"]


def test_the_state_file_says_what_was_there_and_what_was_set(tmp_path):
    """Before the change: {"numa_balancing": previous, "set_to": wanted, "pid": this}; a
    leftover of 2 (tiering) is put back as 2 by the next run, which returns it."""
    r = fake_root(tmp_path, balancing=2)
    state = tmp_path / system.STATE_FILE
    with system.balancing_for_run({"numa_balancing": "on"}, state, r):
        assert json.loads(state.read_text()) == {"numa_balancing": 2, "set_to": 1, "pid": os.getpid()}
        assert (r / system.BALANCING).read_text() == "1\n"
    assert balancing_of(r) == 2 and not state.exists()
    state.write_text(json.dumps({"numa_balancing": 2, "set_to": 0, "pid": 1}))
    (r / system.BALANCING).write_text("0\n")
    assert system.restore_leftover(state, r) == {"numa_balancing": 2, "set_to": 0, "pid": 1}
    assert balancing_of(r) == 2 and not state.exists()
    assert system.restore_leftover(state, r) is None
    state.write_text("{not json")
    assert system.restore_leftover(state, r) is None


def test_the_settings_the_report_shows_per_run():
    """runs.csv's sys_<name> columns and the report's machine table: every setting read."""
    assert system.REPORTED == ("numa_balancing", "numa_balancing_at_end", "thp_enabled", "thp_defrag",
                               "zone_reclaim_mode", "cpufreq_governor", "smt_active", "kernel_cmdline")
    assert set(system.REPORTED) - {"numa_balancing_at_end"} == set(system.settings("/nonexistent"))
