"""`numaplace platform from-hwloc FILE.xml --name NAME`: a platform file
(config/platforms/<name>.yaml) from an hwloc XML topology (`lstopo --of xml`), so a study
can be planned for a machine one is not on, in exactly the form `numaplace platform
detect` writes on the machine itself.

Read from the XML (hwloc 1.x's format, v1, and hwloc 2.x/3.x's, v2/v3):

- nodes: every NUMANode object, its id the os_index; memory_mb its local_memory (bytes)
  in MiB.
- CPUs: the os_index of the PU objects. Each PU belongs to the NUMA node with the
  smallest cpuset that holds it. A v1 memory-only node has an empty cpuset, so it gets
  none. In v2/v3 a NUMA node is a memory child of an object and carries that object's
  cpuset, so a memory-only node (MCDRAM, HBM, NVM, CXL, GPU memory) shares its cpuset
  with the node that owns those CPUs, or hangs higher up (for example from the Machine)
  with a larger cpuset. Among nodes with the same cpuset, one node owns its CPUs: the
  lowest os_index of those whose subtype is none or DRAM, or the lowest os_index of all
  when every one has another subtype (MCDRAM, HBM, NVM, SPM, GPUMemory, ...). Linux
  numbers a memory-only node after the CPU nodes it is near, and hwloc marks it with one
  of those subtypes. A node that owns no PU is memory-only (cpus "").
- distances: v2/v3 take a NUMANode <distances2> whose kind means latency, preferring
  name="NUMALatency"; its 'indexes' are os or gp indexes and its 'u64values' the
  matrix, row by row. v1 takes a <distances> over every NUMA node, listed in
  document (logical) order: distance = latency value × latency_base. A matrix that is not
  SLIT-shaped (integers 0-255, symmetric, each row's smallest value on the diagonal) is
  left out, and the header says why.
- caches: L<n>Cache / L<n>iCache (v2/v3) or Cache (v1) objects. Their level comes from
  the type or the depth, their type from cache_type (0 Unified, 1 Data, 2 Instruction),
  their size from cache_size, and shared_cpus from the PUs below them. Memory-side caches
  (MemCache, subtype MemorySideCache) are left out.
- smt_siblings: the PUs under one Core object, where it has more than one.

Input is bounded. A file over MAX_BYTES is refused, as is one that declares entities. A
file that is not XML, is not an hwloc topology, or has no NUMANode is refused with one
ConfigError naming the file.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from numaplace import ConfigError
from numaplace.core.cpulist import format_cpulist
from numaplace.machine.platform_detect import NAME, hwloc_cpuset, platform_body

MAX_BYTES = 64 * 1024 * 1024
CPU_SUBTYPES = ("", "DRAM")                  # a node with one of these may own its cpuset's CPUs
CACHE_TYPES = {"0": "Unified", "1": "Data", "2": "Instruction"}
_CACHE_V2 = re.compile(r"^L(\d+)(i?)Cache$")


def _fail(path, problem):
    raise ConfigError(str(path), "hwloc XML", problem)


def read_xml(path):
    """The <topology> root of an hwloc XML file, or ConfigError naming the file."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            _fail(path, f"{size} bytes: larger than {MAX_BYTES // 2 ** 20} MiB, refused")
        data = path.read_bytes()
    except OSError as e:
        _fail(path, f"cannot read it ({e.strerror or e})")
    if b"<!ENTITY" in data:
        _fail(path, "declares XML entities (hwloc never writes any), refused")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        _fail(path, f"not XML ({e})")
    if root.tag != "topology":
        _fail(path, f"not an hwloc topology (root element <{root.tag}>, expected <topology>)")
    return root


def _walk(elem, parent=None):
    """(object element, its nearest object ancestor) in document order."""
    for child in elem:
        if child.tag == "object":
            yield child, parent
            yield from _walk(child, child)


def _pus_below(obj):
    return sorted(int(o.get("os_index")) for o in obj.iter("object")
                  if o.get("type") == "PU" and o.get("os_index") is not None)


def _int(text, default=0):
    try:
        return int(text)
    except (TypeError, ValueError):
        return default


def _cpu_owner(group):
    """Of NUMA nodes sharing one cpuset, the one that owns its CPUs (see the module doc)."""
    plain = [n for n in group if n["subtype"] in CPU_SUBTYPES]
    return min(plain or group, key=lambda n: n["id"])["id"]


def _slit_problem(matrix):
    n = len(matrix)
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            if not 0 <= v <= 255:
                return f"value {v} is outside 0-255"
            if v != matrix[j][i]:
                return f"not symmetric at row {i}, column {j}"
            if j != i and v < row[i]:
                return f"row {i}: {v} is below the node's own distance {row[i]}"
        if row[i] <= 0:
            return f"node {i}'s distance to itself is {row[i]}"
    return None if n else "empty"


def _distances_v2(root, nodes):
    """(matrix rows in node id order, words) from a NUMANode <distances2>, or (None, why)."""
    by_gp = {n["gp"]: n["id"] for n in nodes if n["gp"] is not None}
    found = []
    for d in root.iter("distances2"):
        if d.get("type") != "NUMANode" or not _int(d.get("kind")) & 4:   # 4: HWLOC_DISTANCES_KIND_MEANS_LATENCY
            continue
        found.append(d)
    if not found:
        return None, "none in the XML"
    found.sort(key=lambda d: d.get("name") != "NUMALatency")
    d = found[0]
    label = f"<distances2 name={d.get('name') or '(none)'}>"
    idx = [int(x) for i in d.iter("indexes") for x in (i.text or "").split()]
    vals = [int(x) for v in d.iter("u64values") for x in (v.text or "").split()]
    if d.get("indexing") == "gp":
        idx = [by_gp.get(i, -1) for i in idx]
    ids = sorted(n["id"] for n in nodes)
    if sorted(idx) != ids or len(vals) != len(idx) ** 2:
        return None, f"{label} does not cover exactly the {len(ids)} NUMA nodes: left out"
    pos = {nid: k for k, nid in enumerate(idx)}
    n = len(idx)
    return [[vals[pos[a] * n + pos[b]] for b in ids] for a in ids], label


def _distances_v1(root, nodes):
    """v1: a <distances> over all NUMA nodes (logical = document order), value x latency_base."""
    ids = [n["id"] for n in nodes]           # document order
    for d in root.iter("distances"):
        if _int(d.get("nbobjs")) != len(ids):
            continue
        try:
            base = float(d.get("latency_base") or 1)
            vals = [float(v.get("value")) * base for v in d.iter("latency")]
        except (TypeError, ValueError):
            continue
        if len(vals) != len(ids) ** 2:
            continue
        n = len(ids)
        pos = {nid: k for k, nid in enumerate(ids)}
        order = sorted(ids)
        return ([[round(vals[pos[a] * n + pos[b]]) for b in order] for a in order],
                f"<distances> latency x latency_base {base:g}")
    return None, "none over all NUMA nodes in the XML"


def convert(path, name):
    """The platform file's text for the machine an hwloc XML describes."""
    if not NAME.match(name or ""):
        raise ConfigError("numaplace platform from-hwloc", "--name",
                          f"{name!r}: use letters, digits, '_', '.', '-' (it names config/platforms/<name>.yaml)")
    path = Path(path)
    root = read_xml(path)
    v1 = root.get("version") is None
    fmt = "v1" if v1 else f"v{root.get('version')}"
    objs = list(_walk(root))
    machine = next((o for o, _ in objs if o.get("type") == "Machine"), None)
    info = {} if machine is None else {i.get("name"): i.get("value", "") for i in machine.findall("info")}

    pus = sorted({int(o.get("os_index")) for o, _ in objs if o.get("type") == "PU" and o.get("os_index") is not None})
    nodes = []
    for o, _ in objs:
        if o.get("type") != "NUMANode":
            continue
        if o.get("os_index") is None:
            _fail(path, "a NUMANode without os_index")
        nodes.append({"id": int(o.get("os_index")), "gp": _int(o.get("gp_index"), None),
                      "subtype": o.get("subtype") or "", "cpuset": frozenset(hwloc_cpuset(o.get("cpuset") or "0x0")),
                      "memory_mb": _int(o.get("local_memory")) // 2 ** 20})
    if not nodes:
        _fail(path, "no NUMANode object: not a NUMA topology hwloc could describe (or not lstopo's XML)")
    if len({n["id"] for n in nodes}) != len(nodes):
        _fail(path, "two NUMANode objects with the same os_index")
    if not pus:
        _fail(path, "no PU object")

    # each PU to the node with the smallest cpuset holding it; a cpuset shared by several
    # nodes belongs to one of them (_cpu_owner)
    groups = {}
    for n in nodes:
        groups.setdefault(n["cpuset"], []).append(n)
    owner = {cs: _cpu_owner(g) for cs, g in groups.items() if cs}
    cpus_of = {n["id"]: [] for n in nodes}
    homeless = []
    for pu in pus:
        holders = [cs for cs in owner if pu in cs]
        if not holders:
            homeless.append(pu)
            continue
        cpus_of[owner[min(holders, key=len)]].append(pu)
    if homeless:
        _fail(path, f"PU {format_cpulist(homeless)} is in no NUMANode's cpuset")
    memory_only = [n for n in sorted(nodes, key=lambda n: n["id"]) if not cpus_of[n["id"]]]

    dist, dist_words = (_distances_v1 if v1 else _distances_v2)(root, nodes)
    if dist is not None:
        problem = _slit_problem(dist)
        if problem:
            dist, dist_words = None, f"{dist_words}: not a SLIT ({problem}): left out"

    found = {}
    for o, _ in objs:
        t = o.get("type") or ""
        m = _CACHE_V2.match(t)
        if not (m or t == "Cache") or o.get("subtype") == "MemorySideCache":
            continue
        level = int(m.group(1)) if m else _int(o.get("depth"))
        kind = "Instruction" if m and m.group(2) else CACHE_TYPES.get(o.get("cache_type") or "0", "Unified")
        size_kb = _int(o.get("cache_size")) // 1024
        shared = _pus_below(o)
        if level and size_kb and shared:
            found.setdefault((level, kind, size_kb), set()).add(tuple(shared))
    cache_list = [{"level": lv, "type": kind, "size_kb": size,
                   "shared_cpus": [format_cpulist(s) for s in sorted(sets)]}
                  for (lv, kind, size), sets in sorted(found.items())]
    cores = (_pus_below(o) for o, _ in objs if o.get("type") == "Core")
    smt = [format_cpulist(s) for s in sorted({tuple(p) for p in cores if len(p) > 1})]

    packages = [o for o, _ in objs if o.get("type") in ("Package", "Socket")]
    models = [next((i.get("value", "").strip() for i in p.findall("info") if i.get("name") == "CPUModel"), "")
              for p in packages]
    models = [" ".join(m.split()) for m in models if m]
    machine_words = " ".join(w for w in (info.get("DMISysVendor", "").strip(),
                                          info.get("DMIProductName", "").strip() or info.get("PlatformModel", "").strip())
                             if w) or info.get("HostName") or path.name
    cpu_words = (f"{len(packages)} x {models[0]}, " if models and len(set(models)) == 1
                 else f"{len(packages)} packages, " if packages else "")
    description = (f"{machine_words}: {cpu_words}{len(nodes)} NUMA nodes"
                   + (f" ({len(memory_only)} memory-only)" if memory_only else "")
                   + f", {len(pus)} CPUs (from hwloc XML {path.name})")

    written = ", ".join(w for w in (f"hwloc {info['hwlocVersion']}" if info.get("hwlocVersion") else "",
                                     f"host {info['HostName']}" if info.get("HostName") else "",
                                     f"{info.get('OSName', '')} {info.get('OSRelease', '')}".strip()) if w)
    head = [f"numaplace platform file, written by `numaplace platform from-hwloc {path.name} --name {name}`",
            f"from an hwloc XML topology (format {fmt}" + (f"; {written}" if written else "") + "). Sources:",
            "  nodes         NUMANode os_index; memory_mb its local_memory",
            "  cpus          PU os_index, each in the node with the smallest cpuset holding it (a cpuset",
            "                shared by several nodes: the lowest id without a subtype or with DRAM)",
            f"  distances     {dist_words}",
            "  caches        " + ("Cache objects" if v1 else "L*Cache objects") + " (memory-side caches left out)",
            "  smt_siblings  the PUs of each Core object"]
    if memory_only:
        head.append("  memory-only   " + ", ".join(f"node {n['id']}" + (f" ({n['subtype']})" if n["subtype"] else "")
                                                  for n in memory_only))
    head.append("Check it, then save as config/platforms/<name>.yaml; a study names it as `platform: <name>`.")
    lines = [f"# {h}" for h in head]
    lines += platform_body(name, description, cpus_of, {n["id"]: n["memory_mb"] for n in nodes},
                           dist, cache_list, smt)
    return "\n".join(lines) + "\n"

