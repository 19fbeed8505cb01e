"""What the firmware says about the machine's memory, set beside what numaplace measures.

The SLIT's distances are one relative number per node pair, and often a guess (a BIOS
writes 10/21 whatever the links). Newer firmware also has ACPI HMAT: latency and
bandwidth of each memory node as seen from its best initiators, in ns and MB/s. Linux
(Documentation/admin-guide/mm/numaperf.rst) shows it per memory target node Y:

    /sys/devices/system/node/nodeY/accessZ/initiators/{read,write}_{latency,bandwidth}
    /sys/devices/system/node/nodeY/accessZ/initiators/nodeX -> the initiator nodes

access0 counts any initiator (CPUs, GPUs, accelerators), access1 CPUs only; sysfs gives
only the best initiators' values, never the whole matrix. Since Linux 6.1 the kernel also
ranks memory in tiers (Documentation/ABI/testing/sysfs-kernel-mm-memory-tiers):
/sys/devices/virtual/memory_tiering/memory_tierN/nodelist, N derived from the nodes'
abstract distance (a smaller N is faster memory; DRAM is tier 4 on today's kernels).

read_firmware gathers all three (record field system.firmware, the platform file's
`firmware:`); firmware_ratios turns HMAT into the remote/local ratios the matrices give;
disagreements names the cells where firmware and measurement part. Where the kernel has
no such file the key is absent: most machines have a SLIT only, VMs often nothing.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

MAX_BYTES = 4096                # a sysfs attribute is at most a page; these are a line
TOLERANCE = 0.25                # firmware and measured ratios further apart than 25 % disagree
ACCESS = ("access0", "access1")
# sysfs attribute → the key it gets (latency in ns, bandwidth in MB/s, as the kernel gives them)
VALUES = {"read_latency": "read_latency_ns", "write_latency": "write_latency_ns",
          "read_bandwidth": "read_bandwidth_mbps", "write_bandwidth": "write_bandwidth_mbps"}
NODE = re.compile(r"^node([0-9]{1,7})$")
TIER = re.compile(r"^memory_tier([0-9]{1,7})$")


def _read(path):
    """A small sysfs file's text, or None where it is missing or unreadable."""
    try:
        with open(path, "rb") as f:
            return f.read(MAX_BYTES).decode("ascii", "replace").strip()
    except OSError:
        return None


def int_or_none(text):
    """An integer of a sysfs/procfs file's text, or None (missing, empty, not a number)."""
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _ids(folder, pattern):
    """{id: path} of the entries of folder whose names match pattern (none where it is missing)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return {}
    return {int(m.group(1)): Path(folder, n) for n in names if (m := pattern.match(n))}


def _nodelist(text):
    from numaplace.core.cpulist import parse_cpulist
    try:
        return parse_cpulist(text or "")
    except ValueError:
        return []


def _slit(nodes):
    """The distance rows in node id order, or None unless every node has a full row."""
    rows = []
    for n in sorted(nodes):
        row = [int_or_none(x) for x in (_read(nodes[n] / "distance") or "").split()]
        if len(row) != len(nodes) or None in row:
            return None
        rows.append(row)
    return rows or None


def _access(folder):
    """One access class of a target node: its initiators and the values the kernel has
    (a 0 is HMAT's 'not given', left out)."""
    init = folder / "initiators"
    entry = {"initiators": sorted(_ids(init, NODE))}
    for attr, key in VALUES.items():
        v = int_or_none(_read(init / attr))
        if v:
            entry[key] = v
    return entry if len(entry) > 1 or entry["initiators"] else None


def read_firmware(sys_root="/sys"):
    """{"nodes": [ids], "slit": rows or None, "hmat": {target node (text): {access class:
    {...}}}, "tiers": [{"tier": N, "nodes": [...]}]}: missing files are absent keys, never
    an error. Node ids are text as keys (as in a JSON record), numbers in lists."""
    node_root = Path(sys_root, "devices/system/node")
    nodes = _ids(node_root, NODE)
    fw = {"slit": _slit(nodes) if nodes else None}
    if nodes:
        fw["nodes"] = sorted(nodes)
    hmat = {}
    for n in sorted(nodes):
        classes = {a: e for a in ACCESS if (e := _access(nodes[n] / a)) is not None}
        if classes:
            hmat[str(n)] = classes
    if hmat:
        fw["hmat"] = hmat
    tiers = []
    for t, path in sorted(_ids(Path(sys_root, "devices/virtual/memory_tiering"), TIER).items()):
        tier = {"tier": t, "nodes": _nodelist(_read(path / "nodelist"))}
        adist = int_or_none(_read(path / "abstract_distance"))       # not in today's kernels' ABI
        if adist is not None:
            tier["abstract_distance"] = adist
        tiers.append(tier)
    if tiers:
        fw["tiers"] = tiers
    return fw


def _entry(fw, target, cls):
    return ((fw.get("hmat") or {}).get(str(target)) or {}).get(cls) or {}


def firmware_ratios(fw):
    """{(initiator, target): {"latency_ratio", "bandwidth_ratio", "access"}}: HMAT's read
    latency and read bandwidth from an initiator to another node over those to its own
    node (remote/local, as the matrices' ratios: latency > 1 and bandwidth < 1 is worse),
    wherever sysfs lists the initiator for both. CPU initiators (access1) first: the
    matrices are read by CPUs."""
    out = {}
    for target in (fw or {}).get("hmat") or {}:
        t = int(target)
        for cls in ("access1", "access0"):
            remote = _entry(fw, t, cls)
            for i in remote.get("initiators", []):
                local = _entry(fw, i, cls)
                if i == t or (i, t) in out or i not in local.get("initiators", []):
                    continue
                pair = {what: round(remote[key] / local[key], 3)
                        for what, key in (("latency_ratio", "read_latency_ns"), ("bandwidth_ratio", "read_bandwidth_mbps"))
                        if remote.get(key) and local.get(key)}
                if pair:
                    out[(i, t)] = {**pair, "access": cls}
    return dict(sorted(out.items()))


def _apart(a, b, tolerance):
    return a > 0 and b > 0 and max(a, b) / min(a, b) > 1 + tolerance


def disagreements(fw, measured, tolerance=TOLERANCE):
    """Lines naming the cells where the firmware's remote/local ratio and the measured one
    are more than `tolerance` apart: the SLIT's distance over the local distance and HMAT's
    latency against the measured latency ratio, HMAT's bandwidth against the measured
    bandwidth ratio. measured: {(reader node, memory node): {"latency_ratio": remote/local,
    "bandwidth_ratio": remote/local}}. A firmware that is wrong misleads every tool that
    trusts it (the kernel's balancing and demotion, numactl --preferred, MPI mappers)."""
    fw = fw or {}
    slit, ids = fw.get("slit"), fw.get("nodes") or list(range(len(fw.get("slit") or [])))
    hmat = firmware_ratios(fw)
    out = []
    for (r, m), got in sorted(measured.items()):
        if r == m:
            continue
        lat, bw = (got or {}).get("latency_ratio"), (got or {}).get("bandwidth_ratio")
        said = []
        if slit and r in ids and m in ids and lat is not None and lat == lat:
            i, j = ids.index(r), ids.index(m)
            said.append(("SLIT", slit[i][j] / slit[i][i], lat, "local latency"))
        h = hmat.get((r, m), {})
        if "latency_ratio" in h and lat is not None and lat == lat:
            said.append(("HMAT", h["latency_ratio"], lat, "local latency"))
        if "bandwidth_ratio" in h and bw is not None and bw == bw:
            said.append(("HMAT", h["bandwidth_ratio"], bw, "local bandwidth"))
        out += [f"node {r} -> node {m}: {who} says {f:.2g}x {what}, measured {x:.2g}x"
                for who, f, x, what in said if _apart(f, x, tolerance)]
    return out
