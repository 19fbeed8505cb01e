"""`numaplace platform detect`: a platform file (config/platforms/<name>.yaml) written
from the live machine, so that adding a platform never means typing CPU lists and a
SLIT by hand.

Nodes, their OS CPU ids, memory and SLIT distances come from sysfs exactly as
`platform: auto` reads them (topology.from_sysfs), so a study plans the same runs with
either; caches and SMT siblings from the CPUs' sysfs entries; hwloc, where installed,
is asked for the same nodes and CPUs and its agreement (or not) goes into the header;
HMAT and the memory tiers, where the kernel shows them, go into `firmware:`
(machine.firmware), for the reader and the report: plans do not read them.
The YAML is written here by hand (no PyYAML needed: the NUMA-VM guest has none).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

from numaplace import ConfigError
from numaplace.core.cpulist import format_cpulist, parse_cpulist
from numaplace.machine.firmware import read_firmware
from numaplace.machine.topology import from_sysfs, process_allowed, read_caches as caches, read_text

NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def smt_siblings(cpu_root):
    """Sets of hardware threads sharing a core (only cores with more than one)."""
    sets = set()
    for f in Path(cpu_root).glob("cpu[0-9]*/topology/thread_siblings_list"):
        cpus = parse_cpulist(read_text(f) or "")
        if len(cpus) > 1:
            sets.add(format_cpulist(cpus))
    return sorted(sets, key=lambda s: parse_cpulist(s)[0])


def hwloc_cpuset(text):
    """hwloc's cpuset '0x00000003,0xffffffff' (32-bit words, most significant first) → CPUs.
    An empty word is a zero word ('0x000000ff,,,0x0', hwloc 2's XML); a leading '0xf...f'
    (an infinite set, hwloc 1's allowed sets) counts as one full word."""
    bits = 0
    for word in text.split(","):
        word = word.strip()
        bits = (bits << 32) | (0xffffffff if word == "0xf...f" else int(word or "0", 16))
    return [i for i in range(bits.bit_length()) if bits >> i & 1]


def hwloc_nodes():
    """(version, {node: [CPUs]}) from hwloc's XML of this machine, or None without hwloc."""
    tool = shutil.which("lstopo-no-graphics") or shutil.which("hwloc-ls")
    if not tool:
        return None
    try:
        xml = subprocess.run([tool, "--of", "xml", "-"], capture_output=True, text=True, timeout=60).stdout
        ver = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    nodes = {}
    for m in re.finditer(r'<object type="NUMANode"([^>]*)>', xml):
        attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        if "os_index" in attrs and "cpuset" in attrs:
            nodes[int(attrs["os_index"])] = hwloc_cpuset(attrs["cpuset"])
    return (ver[-1] if ver else "?"), nodes


def _q(text):
    return json.dumps(text)          # a JSON string is a YAML double-quoted scalar


def platform_body(name, description, nodes, memory_mb, distances, cache_list, smt):
    """The platform file's lines after its header: name, description, launcher, nodes
    ({node: [CPUs]}, in id order; [] is a memory-only node), distances (rows in node id
    order, or None), caches and SMT siblings (numaplace platform detect and from-hwloc)."""
    lines = [f"name: {name}", f"description: {_q(description)}", "launcher: numactl", "nodes:"]
    for n in sorted(nodes):
        cpus = format_cpulist(nodes[n])
        note = "   # memory only" if not cpus else ""
        lines.append(f"  - {{id: {n}, cpus: {_q(cpus)}, memory_mb: {memory_mb.get(n, 0)}}}{note}")
    if distances:
        lines.append("distances:")
        lines += [f"  - [{', '.join(str(d) for d in row)}]" for row in distances]
    lines.append("caches:" if cache_list else "caches: []")
    for c in cache_list:
        lines.append(f"  - {{level: {c['level']}, type: {c['type']}, size_kb: {c['size_kb']}, "
                     f"shared_cpus: [{', '.join(_q(s) for s in c['shared_cpus'])}]}}")
    lines.append(f"smt_siblings: [{', '.join(_q(s) for s in smt)}]")
    return lines


def firmware_body(fw):
    """The platform file's `firmware:` lines (HMAT and memory tiers; the SLIT is
    `distances:`), none where sysfs has neither. Information for the reader and the
    report beside the measured matrices: plans do not read it."""
    if not fw.get("hmat") and not fw.get("tiers"):
        return []
    lines = ["firmware:"]
    if fw.get("hmat"):
        lines.append("  hmat:           # memory node: its best initiators' read/write latency (ns), bandwidth (MB/s)")
        lines += [f"    {_q(n)}: {json.dumps(classes)}" for n, classes in sorted(fw["hmat"].items(), key=lambda kv: int(kv[0]))]
    if fw.get("tiers"):
        lines.append("  tiers:          # the kernel's memory tiers, fastest first")
        lines += [f"    - {json.dumps(t)}" for t in fw["tiers"]]
    return lines


def detect(name, sys_root="/sys", use_hwloc=None):
    """The platform file's text for this machine (use_hwloc: default only on the live /sys)."""
    if not NAME.match(name or ""):
        raise ConfigError("numaplace platform detect", "--name",
                          f"{name!r}: use letters, digits, '_', '.', '-' (it names config/platforms/<name>.yaml)")
    node_root = Path(sys_root, "devices/system/node")
    cpu_root = Path(sys_root, "devices/system/cpu")
    topo = from_sysfs(node_root, name, allowed=False)        # the whole machine; the allocation apart
    live = str(sys_root) == "/sys"
    limited = topo.restrict(*process_allowed()) if live else topo
    numa_sysfs = any(node_root.glob("node[0-9]*"))
    cache_list, smt = caches(cpu_root), smt_siblings(cpu_root)
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    head = [f"numaplace platform file, written by `numaplace platform detect --name {name}`",
            f"from {socket.gethostname()} (kernel {os.uname().release}) on {now}. Sources:"]
    if numa_sysfs:
        head += [f"  nodes, cpus   sysfs {node_root}/node*/cpulist",
                 f"  memory_mb     sysfs {node_root}/node*/meminfo (MemTotal)",
                 f"  distances     sysfs {node_root}/node*/distance (the firmware's ACPI SLIT)"
                 if topo.distances else "  distances     none in sysfs"]
    else:
        head += ["  nodes         no NUMA sysfs: one node of every CPU this process may use "
                 "(as platform: auto)"]
    fw = read_firmware(sys_root)
    if fw.get("hmat"):
        head.append(f"  firmware.hmat sysfs {node_root}/node*/access[01]/initiators (the firmware's ACPI HMAT)")
    if fw.get("tiers"):
        head.append(f"  firmware.tiers sysfs {Path(sys_root, 'devices/virtual/memory_tiering')}/memory_tier*/nodelist")
    head += [f"  caches        sysfs {cpu_root}/cpu*/cache/index*/{{level,type,size,shared_cpu_list}}",
             f"  smt_siblings  sysfs {cpu_root}/cpu*/topology/thread_siblings_list"]
    if use_hwloc is None:
        use_hwloc = str(sys_root) == "/sys"
    hw = hwloc_nodes() if use_hwloc else None
    if hw is None:
        head.append("  hwloc         not consulted (not installed, or not the live /sys)")
    else:
        version, hw_nodes = hw
        # hwloc gives a memory-only node the CPUs of the object it hangs from: compare
        # the CPU lists of nodes with CPUs, and the node ids of all
        agree = set(hw_nodes) == set(topo.nodes) and all(hw_nodes[n] == c for n, c in topo.nodes.items() if c)
        if agree:
            memory_only = [n for n, c in topo.nodes.items() if not c]
            head.append(f"  hwloc {version}  lstopo --of xml: the same nodes and CPUs per node"
                        + (f" (memory-only node(s) {format_cpulist(memory_only)} too)" if memory_only else ""))
        else:
            head.append(f"  hwloc {version}  lstopo --of xml DISAGREES: "
                        + ", ".join(f"node {n}: {format_cpulist(c) or '-'}" for n, c in sorted(hw_nodes.items()))
                        + " (this file keeps sysfs's)")
    head.append("Check it, then save as config/platforms/<name>.yaml; a study names it as `platform: <name>`.")

    lines = [f"# {h}" if h else "#" for h in head]
    lines += platform_body(name, f"{socket.gethostname()}: {len(topo.nodes)} NUMA nodes, {len(topo.cpus)} CPUs (detected)",
                           topo.nodes, topo.memory_mb, topo.distances, cache_list, smt)
    lines += firmware_body(fw)
    if limited.allowed:
        a = limited.allowed
        lines += [f"# this process may use only part of the machine ({a['source']}): plans stay inside it;",
                  "# delete these lines to plan for the whole machine",
                  f"allowed: {{cpus: {_q(format_cpulist(a['cpus']))}, nodes: {_q(format_cpulist(a['nodes']))}, "
                  f"source: {_q(a['source'])}}}"]
    return "\n".join(lines) + "\n"
