"""Can this machine count a process's local and remote DRAM accesses? Its CPU's events,
its hardware PMU, perf_event_paranoid and perf, probed once per process; and the reader
of `perf stat -x,` output (the probe's and a run's: numaplace.run.counters).

The events, per CPU (perf's own names, tools/perf/pmu-events/arch/*; the first pair
this perf can open is used):

  Intel Skylake-SP and later   mem_load_l3_miss_retired.local_dram / .remote_dram
  Intel Haswell-EP, Broadwell  mem_load_uops_l3_miss_retired.local_dram / .remote_dram
                               (retired loads that missed L3: demand loads only)
  AMD Zen 4, Zen 5             ls_any_fills_from_sys.dram_io_near / .dram_io_far
  AMD Zen 3                    ls_any_fills_from_sys.mem_io_local / .mem_io_remote
  AMD Zen 2                    ls_refills_from_sys.ls_mabresp_lcl_dram / .ls_mabresp_rmt_dram
                               (L1D fills from DRAM; Zen 3-5's `any` counts prefetches too)
  Arm (PMUv3 common events)    ll_cache_miss_rd (all last-level read misses) and
                               remote_access (to another socket): local = the first less
                               the second, an estimate (remote_access counts remote
                               caches as well)

Where the capture cannot be had, the plan says so in one line (plan_lines) and nothing
else is shown: no hardware PMU (a VM that exposes none), perf_event_paranoid above 2
without CAP_PERFMON, no perf, a CPU without known events, or perf refusing them (a dry
`perf stat ... -- true`). With perf_event_paranoid 2 (Debian's upstream default; Debian's
own kernels default to 3) a user counts user space only (`:u`): the kernel's page
zeroing on first touch is then not counted.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

OUTPUT = "perf.stat.csv"          # perf stat's output file (-o), in a run's folder
SEP = ","
NOT_COUNTED, NOT_SUPPORTED = "<not counted>", "<not supported>"
PROBE_TIMEOUT_S = 30


@dataclass(frozen=True)
class EventSet:
    """Two events of one CPU family: `first` counts local accesses (measures "local") or
    every DRAM access (measures "total", the local ones are first less remote)."""
    cpu: str
    first: str
    remote: str
    measures: str = "local"


EVENTS = {
    "intel": (EventSet("Intel Skylake-SP and later", "mem_load_l3_miss_retired.local_dram",
                       "mem_load_l3_miss_retired.remote_dram"),
              EventSet("Intel Haswell-EP, Broadwell-EP", "mem_load_uops_l3_miss_retired.local_dram",
                       "mem_load_uops_l3_miss_retired.remote_dram")),
    "amd": (EventSet("AMD Zen 4, Zen 5", "ls_any_fills_from_sys.dram_io_near", "ls_any_fills_from_sys.dram_io_far"),
            EventSet("AMD Zen 3", "ls_any_fills_from_sys.mem_io_local", "ls_any_fills_from_sys.mem_io_remote"),
            EventSet("AMD Zen 2", "ls_refills_from_sys.ls_mabresp_lcl_dram",
                     "ls_refills_from_sys.ls_mabresp_rmt_dram")),
    "arm": (EventSet("Arm PMUv3", "ll_cache_miss_rd", "remote_access", "total"),),
}
VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}

# the CPU's own (core) PMU in sysfs: x86 `cpu` (hybrid Intel: cpu_core, cpu_atom), arm64 armv8_*/armv9_*
CORE_PMUS = re.compile(r"^(cpu|cpu_core|cpu_atom|armv[89]_.*)$")
CAP_SYS_ADMIN, CAP_PERFMON = 21, 38


# -- perf stat -x, output ------------------------------------------------------------------

def event_name(field):
    """The event a CSV event field names, as this module spells it: lower case, without a
    PMU prefix (`cpu_core/<event>/`) or modifiers (`:u`)."""
    name = field.strip().lower()
    if "/" in name:
        parts = [p for p in name.split("/") if p]
        name = parts[1] if len(parts) > 1 else parts[0]
    return name.split(":")[0]


def _number(text):
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse(text, wanted=None, sep=SEP):
    """`perf stat -x<sep>` output → {event: {"value", "status", "unit", "printed",
    "running_pct"}}. The fields of a line (perf-stat(1), CSV FORMAT): optional time stamp,
    optional CPU/core/socket id and number of CPUs aggregated, counter value (or
    <not counted>, <not supported>), unit, event name, run time of the counter,
    percentage of the time it was running, optional variance, metric value and metric
    unit. The event field is found by name where `wanted` names the events (any optional
    leading fields then shift it), else it is the third. Comment lines (`# started on`,
    written with -o) and metric-only lines (empty event field) are skipped; an event on
    several lines (a hybrid CPU's two core PMUs) is summed. value: a number, None where
    not counted or not supported (status says which)."""
    want = {event_name(w) for w in wanted} if wanted else None
    out = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split(sep)
        if want is None:
            at = 2
        else:
            at = next((i for i in range(2, len(fields)) if event_name(fields[i]) in want), None)
            if at is None:
                continue
        if len(fields) <= at or not fields[at].strip():
            continue
        raw = fields[at - 2].strip()
        name = event_name(fields[at])
        if raw in (NOT_COUNTED, NOT_SUPPORTED):
            value, status = None, raw.strip("<>")
        else:
            try:
                value, status = _number(raw), "counted"
            except ValueError:
                continue                       # not a counter line
        try:
            pct = float(fields[at + 2]) if len(fields) > at + 2 and fields[at + 2].strip() else None
        except ValueError:
            pct = None
        entry = {"value": value, "status": status, "unit": fields[at - 1].strip(),
                 "printed": fields[at].strip(), "running_pct": pct}
        if name in out:                        # a second line of one event: summed
            prev = out[name]
            if prev["value"] is not None and value is not None:
                prev["value"] += value
                prev["running_pct"] = min(p for p in (prev["running_pct"], pct) if p is not None) \
                    if prev["running_pct"] is not None or pct is not None else None
            elif value is not None:
                out[name] = entry
            continue
        out[name] = entry
    return out


# -- can this machine count them? -----------------------------------------------------------

@dataclass(frozen=True)
class Availability:
    ok: bool
    why: str | None = None           # when not ok: the plan line's reason
    events: EventSet | None = None
    modifier: str = ""               # ":u" where only user space may be counted
    perf: str | None = None
    paranoid: int | None = None

    def event_list(self):
        return [f"{self.events.first}{self.modifier}", f"{self.events.remote}{self.modifier}"]

    def scope(self):
        return (f"user space only (perf_event_paranoid {self.paranoid})" if self.modifier
                else "user space and kernel")

    def line(self):
        """The plan's one line."""
        if not self.ok:
            return f"counters: not captured: {self.why}"
        e = self.events
        what = ("local and remote DRAM accesses" if e.measures == "local"
                else "DRAM reads (local = all less remote) and remote accesses")
        return (f"counters: {what} per run, from {e.first} and {e.remote} ({e.cpu}; "
                f"perf stat, {self.scope()})")


def _read(root, rel):
    try:
        return (Path(root) / rel).read_text()
    except OSError:
        return None


def cpu_vendor(cpuinfo):
    """(vendor key of EVENTS or None, the vendor as /proc/cpuinfo says it, a hypervisor?)"""
    text = cpuinfo or ""
    m = re.search(r"^vendor_id\s*:\s*(\S+)", text, re.M)
    flags = re.search(r"^flags\s*:(.*)$", text, re.M)
    vm = bool(flags and "hypervisor" in flags.group(1).split())
    if m:
        return VENDORS.get(m.group(1)), m.group(1), vm
    if re.search(r"^CPU implementer\s*:", text, re.M):
        return "arm", "arm64", vm
    return None, None, vm


def _privileged(root, euid):
    if euid == 0:
        return True
    status = _read(root, "proc/self/status") or ""
    m = re.search(r"^CapEff:\s*([0-9a-f]+)", status, re.M)
    caps = int(m.group(1), 16) if m else 0
    return bool(caps & (1 << CAP_PERFMON) or caps & (1 << CAP_SYS_ADMIN))


def _probe(perf, events, modifier, run):
    """Can perf open and count both events of a set for a process? (None, or why not)."""
    names = [f"{events.first}{modifier}", f"{events.remote}{modifier}"]
    with tempfile.TemporaryDirectory(prefix="numaplace-perf-") as tmp:
        out = Path(tmp) / OUTPUT
        try:
            pr = run([perf, "stat", "-x" + SEP, "-o", str(out), "-e", ",".join(names), "--", "true"],
                     capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        except (OSError, subprocess.SubprocessError) as e:
            return f"perf stat could not be run: {e}"
        text = out.read_text(errors="replace") if out.exists() else ""
    parsed = parse(text, names)
    if pr.returncode != 0 or not parsed:
        said = next((l.strip() for l in (pr.stderr or "").splitlines() if l.strip()), "")
        return f"perf stat refused {','.join(names)}" + (f": {said[:160]}" if said else "")
    missing = [n for n in names if (parsed.get(event_name(n)) or {}).get("value") is None]
    if missing:
        how = (parsed.get(event_name(missing[0])) or {}).get("status") or "absent from its output"
        return f"perf stat cannot count {', '.join(missing)} here ({how})"
    return None


def detect(root="/", which=shutil.which, run=subprocess.run, euid=None):
    """Availability of the counters capture on this machine (root: where /proc and /sys
    are read, for tests). The checks in order: the CPU's vendor has known events, a
    hardware PMU is exposed, perf_event_paranoid lets this user count a process, perf is
    installed, and perf opens one of the vendor's event pairs (a dry run of `true`)."""
    euid = os.geteuid() if euid is None else euid
    key, vendor, vm = cpu_vendor(_read(root, "proc/cpuinfo"))
    devices = Path(root) / "sys/bus/event_source/devices"
    try:
        pmus = sorted(p.name for p in devices.iterdir() if CORE_PMUS.match(p.name))
    except OSError:
        pmus = []
    if not pmus:
        return Availability(False, "this machine exposes no hardware PMU" + (
            " (VM)" if vm else " (no cpu, cpu_core or armv8_* under /sys/bus/event_source/devices)"))
    if key is None:
        return Availability(False, f"no local/remote DRAM events known for this CPU (vendor {vendor or 'unknown'})")
    text = (_read(root, "proc/sys/kernel/perf_event_paranoid") or "").strip()
    paranoid = int(text) if re.fullmatch(r"-?\d+", text) else None
    privileged = _privileged(root, euid)
    if paranoid is None and not privileged:
        return Availability(False, "perf_event_paranoid is unreadable (no perf events in this kernel?)")
    if not privileged and paranoid > 2:
        return Availability(False, f"perf_event_paranoid {paranoid} (2 or lower lets a user count "
                                   "its own processes; or grant perf CAP_PERFMON)", paranoid=paranoid)
    modifier = ":u" if not privileged and paranoid == 2 else ""
    perf = which("perf")
    if perf is None:
        return Availability(False, "perf is not installed (Debian: apt-get install linux-perf)", paranoid=paranoid)
    first_why = None
    for events in EVENTS[key]:
        why = _probe(perf, events, modifier, run)
        if why is None:
            return Availability(True, None, events, modifier, perf, paranoid)
        first_why = first_why or why
    return Availability(False, first_why, perf=perf, paranoid=paranoid)


@functools.lru_cache(maxsize=1)
def availability():
    """detect() on this machine, once per process (a chunk of runs asks once)."""
    return detect()


# -- the plan's line -------------------------------------------------------------------------

def plan_lines(capture, launchers, platform):
    """The plan's one line about counters when the study asks for them (capture.counters),
    else none. launchers: the plan's runs' launchers (numaplace.plan.launch); platform:
    the study's (`auto`: this machine)."""
    if not capture.get("counters"):
        return []
    away = sorted({l.name for l in launchers if not l.on_measured_node})
    if away and all(not l.on_measured_node for l in launchers):
        return [f"counters: not captured: {', '.join(away)} starts the process on a compute node"]
    if platform != "auto":
        return [f"counters: asked for; platform {platform} is not this machine: each run checks its "
                "own CPU as it starts (the record says when it cannot count)"]
    a = availability()
    return [a.line() + (f"; not for {', '.join(away)} runs (their process runs on a compute node)"
                        if a.ok and away else "")]
