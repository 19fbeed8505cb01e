"""The machine as the kernel sees it: the settings that move pages or change times,
read from /proc and /sys when a run starts (record field `system`), and control of
automatic NUMA balancing for a study's measured runs.

Since Linux 3.8 the kernel may migrate a process's pages to the node of the threads
that touch them (kernel.numa_balancing), undoing a first-touch or serial-init
placement mid-run; transparent huge pages make first touch place 2 MiB at a time;
zone_reclaim_mode decides whether an allocation reclaims locally before falling back
to another node; the frequency governor and SMT change the times.

Control (`system: {numa_balancing: off|on}` in a study): set for each measured run
where numaplace may (root, or the sudo rule in README "Before you measure"), and put
back afterwards. The previous value is written to a state file *before* the change, so
that a run killed without a chance to clean up (SIGKILL) is put right by the next
measured run on the machine, of any study, which restores it first. The state file
sits beside the machine's measurement lock (guard.py), on tmpfs: a reboot, which also
resets the sysctl, clears it. Runs hold that lock while they set, measure and restore,
so two studies on one machine never see each other's setting.

Every path is under `root` ("/" on a live machine), so tests can point it at a tree.
"""
from __future__ import annotations

import json
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

from numaplace import ConfigError
from numaplace.machine.firmware import int_or_none, read_firmware

ROOT = "/"
BALANCING = "proc/sys/kernel/numa_balancing"
BALANCING_KEY = "kernel.numa_balancing"
BALANCING_VALUES = {"off": 0, "on": 1}
THP = "sys/kernel/mm/transparent_hugepage"
# /proc/vmstat counters that show balancing at work (system-wide)
MIGRATION_COUNTERS = ("numa_pte_updates", "numa_hint_faults", "numa_hint_faults_local",
                      "numa_pages_migrated", "pgmigrate_success", "pgmigrate_fail")
STATE_FILE = "numaplace-system-restore.json"
SUDO_RULE = "ALL=(root) NOPASSWD: /usr/sbin/sysctl -qw kernel.numa_balancing=[0-3]"


def _read(root, rel):
    try:
        return (Path(root) / rel).read_text().strip()
    except OSError:
        return None


def _chosen(text):
    """'always [madvise] never' → 'madvise' (the kernel marks the active choice)."""
    if text is None:
        return None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            return word[1:-1]
    return text


def _governor(root):
    """The CPUs' cpufreq governor: one name, 'name (cpus); name (cpus)' when they
    differ, None without cpufreq (VMs, containers)."""
    from numaplace.core.cpulist import format_cpulist
    by = {}
    for d in Path(root, "sys/devices/system/cpu").glob("cpu[0-9]*"):
        g = _read(root, d.relative_to(root) / "cpufreq" / "scaling_governor")
        if g:
            by.setdefault(g, []).append(int(d.name[3:]))
    if len(by) <= 1:
        return next(iter(by), None)
    return "; ".join(f"{g} ({format_cpulist(c)})" for g, c in sorted(by.items()))


def _smt_active(root):
    active = _read(root, "sys/devices/system/cpu/smt/active")
    if active is not None:
        return active == "1"
    sib = [_read(root, p.relative_to(root)) for p in
           Path(root, "sys/devices/system/cpu").glob("cpu[0-9]*/topology/thread_siblings_list")]
    sib = [s for s in sib if s]
    return any("," in s or "-" in s for s in sib) if sib else None


def settings(root=ROOT):
    """The page-shaping settings now; a value is None where the kernel has no such file."""
    return {"numa_balancing": int_or_none(_read(root, BALANCING)),
            "thp_enabled": _chosen(_read(root, f"{THP}/enabled")),
            "thp_defrag": _chosen(_read(root, f"{THP}/defrag")),
            "zone_reclaim_mode": int_or_none(_read(root, "proc/sys/vm/zone_reclaim_mode")),
            "cpufreq_governor": _governor(root),
            "smt_active": _smt_active(root),
            "kernel_cmdline": _read(root, "proc/cmdline")}


def migration_counters(root=ROOT):
    out = {}
    for line in (_read(root, "proc/vmstat") or "").splitlines():
        k, _, v = line.partition(" ")
        if k in MIGRATION_COUNTERS and v.strip().isdigit():
            out[k] = int(v)
    return out


def free_mb_by_node(root=ROOT):
    """MemFree of every NUMA node in MiB ({node id as text: MiB}; empty without NUMA sysfs):
    a node that is full when a run starts makes its pages spill to another node."""
    import re
    out = {}
    for f in sorted(Path(root, "sys/devices/system/node").glob("node[0-9]*/meminfo")):
        m = re.search(r"MemFree:\s+(\d+) kB", _read(root, f.relative_to(root)) or "")
        if m:
            out[f.parent.name[4:]] = int(m.group(1)) // 1024
    return out


def at_start(root=ROOT):
    """The record's `system` object when the run starts (counters kept for at_end), with
    what the firmware says of the memory (SLIT, HMAT, memory tiers: machine.firmware),
    so the report can set it beside what was measured."""
    return {**settings(root), "free_mb_by_node": free_mb_by_node(root), "vmstat_start": migration_counters(root),
            "firmware": read_firmware(Path(root, "sys"))}


def at_end(system, root=ROOT):
    """When the run ends: numa_balancing again, and the migration counters' change
    (system-wide: every process's migrations count)."""
    if "numa_balancing_at_end" in system:
        return system
    system["numa_balancing_at_end"] = int_or_none(_read(root, BALANCING))
    start = system.pop("vmstat_start", None) or {}
    now = migration_counters(root)
    system["vmstat_delta"] = {k: now[k] - start[k] for k in now if k in start}
    return system


def balancing_on(system):
    """Was automatic NUMA balancing on at the start or the end of the run? (None: unknown)"""
    vals = [system.get(k) for k in ("numa_balancing", "numa_balancing_at_end")] if system else []
    vals = [v for v in vals if v is not None]
    return any(v != 0 for v in vals) if vals else None


# -- control ---------------------------------------------------------------------

def wanted(system_cfg):
    """The study's numa_balancing as 0/1, or None (YAML reads bare off/on as booleans)."""
    want = (system_cfg or {}).get("numa_balancing")
    if want is None:
        return None
    return int(want) if isinstance(want, bool) else BALANCING_VALUES[want]


def _sysctl():
    from shutil import which   # here: the runner's start-up does without shutil
    return which("sysctl", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or "/usr/sbin/sysctl"


def _sudo_argv(value):
    return ["sudo", "-n", _sysctl(), "-qw", f"{BALANCING_KEY}={value}"]


def how_to_set(root=ROOT):
    """('write', None) or ('sudo', None) where numaplace may set kernel.numa_balancing,
    else (None, why not)."""
    path = Path(root) / BALANCING
    if not path.exists():
        return None, f"this kernel has no {BALANCING_KEY} (/{BALANCING})"
    if os.access(path, os.W_OK):
        return "write", None
    from shutil import which
    if str(root) == ROOT and which("sudo"):
        # `sudo -l CMD` exits 0 when the rule allows exactly that command
        ok = all(subprocess.run(["sudo", "-n", "-l", *_sudo_argv(v)[2:]], capture_output=True).returncode == 0
                 for v in BALANCING_VALUES.values())
        if ok:
            return "sudo", None
    return None, (f"not root and no sudo rule for `sysctl -qw {BALANCING_KEY}=N` "
                  "(README: Before you measure)")


def set_balancing(value, root=ROOT, how=None):
    how = how or how_to_set(root)[0]
    if how == "write":
        (Path(root) / BALANCING).write_text(f"{int(value)}\n")
    elif how == "sudo":
        subprocess.run(_sudo_argv(int(value)), check=True, capture_output=True)
    else:
        raise PermissionError(f"cannot set {BALANCING_KEY}: {how_to_set(root)[1]}")


def check_study(system_cfg, where, root=ROOT):
    """Before any run: refuse a study asking for a balancing setting numaplace may not
    make (unless the machine already has it)."""
    want = wanted(system_cfg)
    if want is None:
        return
    now = int_or_none(_read(root, BALANCING))
    how, why = how_to_set(root)
    if how is None and (now or 0) != want:     # no such sysctl: never balances
        state = "absent" if now is None else now
        raise ConfigError(where, "system.numa_balancing", f"cannot set {BALANCING_KEY} to {want} "
                          f"here (it is {state}): {why}")


def state_file():
    """The machine's restore file, beside its measurement lock (one per node of a cluster,
    whatever results/ folder the studies share)."""
    from numaplace.machine.guard import lock_path
    return lock_path().with_name(STATE_FILE)


# record fields of `system` the report shows per study (runs.csv columns sys_<name>)
REPORTED = ("numa_balancing", "numa_balancing_at_end", "thp_enabled", "thp_defrag", "zone_reclaim_mode",
            "cpufreq_governor", "smt_active", "kernel_cmdline")


def restore_leftover(state_file, root=ROOT):
    """A state file left by a run that could not clean up: put its value back. Where this
    process may not set it, the file stays for one that may (root, the sudo rule) and the
    run goes on: its record states the value it ran with."""
    state_file = Path(state_file)
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return None
    if int_or_none(_read(root, BALANCING)) != state["numa_balancing"]:
        try:
            set_balancing(state["numa_balancing"], root)
        except (PermissionError, subprocess.CalledProcessError):
            return None
    _forget(state_file)
    return state


def _forget(state_file):
    try:
        state_file.unlink(missing_ok=True)
    except PermissionError:     # another user's file in a sticky folder: restored all the same
        pass


@contextmanager
def balancing_for_run(system_cfg, state_file, root=ROOT):
    """Set kernel.numa_balancing as the study asks for the body, restore it afterwards
    (exceptions, SIGINT/SIGTERM turned into exceptions by the runner, included)."""
    state_file = Path(state_file)
    restore_leftover(state_file, root)
    want = wanted(system_cfg)
    now = int_or_none(_read(root, BALANCING))
    if want is None or (now or 0) == want:
        yield
        return
    how, why = how_to_set(root)
    if how is None:
        raise PermissionError(f"cannot set {BALANCING_KEY} to {want}: {why}")
    state_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps({"numa_balancing": now, "set_to": want,
                               "pid": os.getpid()}))
    os.replace(tmp, state_file)             # on disk before the change
    try:
        set_balancing(want, root, how)
        yield
    finally:
        set_balancing(now, root, how)
        _forget(state_file)
