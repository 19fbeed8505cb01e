"""numaplace.machine.platform_detect: the platform file written from a machine's sysfs,
line by line (its header's sources, the nodes, distances, caches, SMT siblings and the
firmware's section), hwloc's cpusets and its agreement or not. The NUMA VM guest's kept
sysfs (tests/fixtures/real/vm-detect) and the kernel's own formats."""
from __future__ import annotations

import datetime as real_dt
from pathlib import Path
from types import SimpleNamespace

import pytest

from numaplace import ConfigError
from numaplace.machine import platform_detect as pd

pytestmark = pytest.mark.unit

VM = Path(__file__).resolve().parent / "fixtures" / "real" / "vm-detect"


def test_hwloc_cpusets_of_every_form():
    """32-bit words, most significant first; an empty word is zero (hwloc 2's XML); hwloc
    1's infinite '0xf...f' one full word."""
    cs = pd.hwloc_cpuset
    assert cs("0x0000000f") == [0, 1, 2, 3]
    assert cs("0x00000003,0xffffffff") == list(range(34))
    assert cs("0x00000100,,0x00000001") == [0, 72]
    assert cs("0x000000ff,,,0x0") == [96, 97, 98, 99, 100, 101, 102, 103]
    assert cs("0xf...f,0x00000000") == list(range(32, 64))
    assert cs("0x80000000") == [31] and cs("0x0") == [] and cs("") == []


def test_smt_siblings_are_the_cores_with_more_than_one_thread_in_first_cpu_order(tmp_path):
    for cpu, text in ((0, "0,10"), (10, "0,10"), (2, "2-3"), (3, "2-3"), (4, "4"), (9, "9,19"), (19, "9,19"), (12, "12,22"), (22, "12,22")):
        d = tmp_path / f"cpu{cpu}" / "topology"
        d.mkdir(parents=True)
        (d / "thread_siblings_list").write_text(text + "\n")
    assert pd.smt_siblings(tmp_path) == ["0,10", "2-3", "9,19", "12,22"]     # by first CPU
    assert pd.smt_siblings(tmp_path / "none") == []


def test_the_platform_body_line_by_line():
    """Nodes in id order with their CPU lists and MiB (a node missing from memory_mb: 0; a
    node without CPUs says so), the SLIT rows, caches and SMT siblings as YAML flow lines."""
    caches = [{"level": 1, "type": "Data", "size_kb": 48, "shared_cpus": ["0", "1"]},
              {"level": 3, "type": "Unified", "size_kb": 32768, "shared_cpus": ["0-1,8-9"]}]
    lines = pd.platform_body("box", 'a "quoted" box', {10: [4, 5], 2: [0, 1, 8, 9], 3: []}, {2: 1024, 3: 512},
                             [[10, 21, 30], [21, 10, 30], [30, 30, 10]], caches, ["0,8", "1,9"])
    assert lines == [
        "name: box", 'description: "a \\"quoted\\" box"', "launcher: numactl", "nodes:",
        '  - {id: 2, cpus: "0-1,8-9", memory_mb: 1024}',
        '  - {id: 3, cpus: "", memory_mb: 512}   # memory only',
        '  - {id: 10, cpus: "4-5", memory_mb: 0}',
        "distances:", "  - [10, 21, 30]", "  - [21, 10, 30]", "  - [30, 30, 10]",
        "caches:",
        '  - {level: 1, type: Data, size_kb: 48, shared_cpus: ["0", "1"]}',
        '  - {level: 3, type: Unified, size_kb: 32768, shared_cpus: ["0-1,8-9"]}',
        'smt_siblings: ["0,8", "1,9"]']
    assert pd.platform_body("one", "d", {0: [0]}, {0: 1}, None, [], []) == [
        "name: one", 'description: "d"', "launcher: numactl", "nodes:", '  - {id: 0, cpus: "0", memory_mb: 1}',
        "caches: []", "smt_siblings: []"]


def test_the_firmware_section_line_by_line():
    """HMAT's memory nodes in number order (2 before 10), the tiers as given; none without
    either; either alone gets its own lines."""
    fw = {"slit": [[10]], "hmat": {"10": {"access1": {"initiators": [0], "read_latency_ns": 200}},
                                   "2": {"access0": {"initiators": [0, 1]}}},
          "tiers": [{"tier": 4, "nodes": [0, 1]}, {"tier": 22, "nodes": [2]}]}
    assert pd.firmware_body(fw) == [
        "firmware:",
        "  hmat:           # memory node: its best initiators' read/write latency (ns), bandwidth (MB/s)",
        '    "2": {"access0": {"initiators": [0, 1]}}',
        '    "10": {"access1": {"initiators": [0], "read_latency_ns": 200}}',
        "  tiers:          # the kernel's memory tiers, fastest first",
        '    - {"tier": 4, "nodes": [0, 1]}',
        '    - {"tier": 22, "nodes": [2]}']
    assert pd.firmware_body({"slit": [[10]]}) == [] and pd.firmware_body({"hmat": {}, "tiers": []}) == []
    assert pd.firmware_body({"tiers": [{"tier": 4, "nodes": [0]}]}) == [
        "firmware:", "  tiers:          # the kernel's memory tiers, fastest first", '    - {"tier": 4, "nodes": [0]}']
    assert pd.firmware_body({"hmat": {"0": {}}})[:2] == [
        "firmware:", "  hmat:           # memory node: its best initiators' read/write latency (ns), bandwidth (MB/s)"]


def _frozen(monkeypatch):
    class DT(real_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return real_dt.datetime(2026, 11, 22, 23, 34, 56, tzinfo=tz)
    monkeypatch.setattr(pd.dt, "datetime", DT)
    monkeypatch.setattr(pd.socket, "gethostname", lambda: "numa-vm")
    monkeypatch.setattr(pd.os, "uname", lambda: SimpleNamespace(release="6.1.0-56-amd64", nodename="numa-vm"))


def test_detect_writes_the_guests_file_with_hwloc_agreeing(monkeypatch):
    """The guest with a memory-only node: what `platform detect` printed there, with this
    tree's paths; hwloc giving the memory-only node its parent's CPUs still agrees."""
    _frozen(monkeypatch)
    monkeypatch.setattr(pd, "hwloc_nodes", lambda: ("2.9.0", {0: [0, 1], 1: [2, 3], 2: [0, 1, 2, 3]}))
    sys_root = VM / "vm-unequal" / "sysfs"
    text = pd.detect("vm-unequal", sys_root, use_hwloc=True)
    node, cpu = sys_root / "devices/system/node", sys_root / "devices/system/cpu"
    assert text.splitlines() == [
        "# numaplace platform file, written by `numaplace platform detect --name vm-unequal`",
        "# from numa-vm (kernel 6.1.0-56-amd64) on 2026-11-22 23:34 UTC. Sources:",
        f"#   nodes, cpus   sysfs {node}/node*/cpulist",
        f"#   memory_mb     sysfs {node}/node*/meminfo (MemTotal)",
        f"#   distances     sysfs {node}/node*/distance (the firmware's ACPI SLIT)",
        f"#   caches        sysfs {cpu}/cpu*/cache/index*/{{level,type,size,shared_cpu_list}}",
        f"#   smt_siblings  sysfs {cpu}/cpu*/topology/thread_siblings_list",
        "#   hwloc 2.9.0  lstopo --of xml: the same nodes and CPUs per node (memory-only node(s) 2 too)",
        "# Check it, then save as config/platforms/<name>.yaml; a study names it as `platform: <name>`.",
        "name: vm-unequal",
        'description: "numa-vm: 3 NUMA nodes, 4 CPUs (detected)"',
        "launcher: numactl",
        "nodes:",
        '  - {id: 0, cpus: "0-1", memory_mb: 962}',
        '  - {id: 1, cpus: "2-3", memory_mb: 1007}',
        '  - {id: 2, cpus: "", memory_mb: 503}   # memory only',
        "distances:", "  - [10, 20, 20]", "  - [20, 10, 20]", "  - [20, 20, 10]",
        "caches: []",
        "smt_siblings: []"]
    assert text.endswith("smt_siblings: []\n")


def test_detect_says_where_hwloc_disagrees_and_when_it_was_not_asked(monkeypatch, tmp_path):
    _frozen(monkeypatch)
    monkeypatch.setattr(pd, "hwloc_nodes", lambda: ("2.10.0", {2: [], 1: [2], 0: [0, 1]}))
    text = pd.detect("vm-unequal", VM / "vm-unequal" / "sysfs", use_hwloc=True)
    assert "#   hwloc 2.10.0  lstopo --of xml DISAGREES: node 0: 0-1, node 1: 2, node 2: - (this file keeps sysfs's)" \
        in text.splitlines()
    monkeypatch.setattr(pd, "hwloc_nodes", lambda: ("2.10.0", {0: [0, 1], 1: [2, 3]}))
    assert "DISAGREES: node 0: 0-1, node 1: 2-3 (" in pd.detect("x", VM / "vm-unequal" / "sysfs", use_hwloc=True)
    monkeypatch.setattr(pd, "hwloc_nodes", lambda: pytest.fail("hwloc asked of a tree that is not /sys"))
    text = pd.detect("vm-mc8", VM / "vm-mc8" / "sysfs")
    assert "#   hwloc         not consulted (not installed, or not the live /sys)" in text.splitlines()
    assert 'description: "numa-vm: 8 NUMA nodes, 8 CPUs (detected)"' in text.splitlines()
    assert "#   distances     sysfs " in text and "distances:" in text
    import shutil
    shutil.copytree(VM / "vm-mc8" / "sysfs", tmp_path / "sysfs")
    (tmp_path / "sysfs/devices/system/node/node3/distance").unlink()
    text = pd.detect("vm-mc8", tmp_path / "sysfs")
    assert "#   distances     none in sysfs" in text.splitlines() and "distances:" not in text


def test_detect_without_numa_sysfs_and_with_firmware(monkeypatch, tmp_path):
    """No node folders: one node of this process's CPUs, said in the header; HMAT and tiers
    name their sysfs sources and get their section; a bad name is refused by name."""
    _frozen(monkeypatch)
    monkeypatch.setattr(pd.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(pd, "read_firmware", lambda root: {"slit": None, "hmat": {"0": {"access1": {"initiators": [0]}}},
                                                           "tiers": [{"tier": 4, "nodes": [0]}]})
    lines = pd.detect("bare", tmp_path, use_hwloc=False).splitlines()
    assert "#   nodes         no NUMA sysfs: one node of every CPU this process may use (as platform: auto)" in lines
    assert f"#   firmware.hmat sysfs {tmp_path}/devices/system/node/node*/access[01]/initiators (the firmware's ACPI HMAT)" in lines
    assert f"#   firmware.tiers sysfs {tmp_path}/devices/virtual/memory_tiering/memory_tier*/nodelist" in lines
    assert lines[-5:] == ["firmware:",
                          "  hmat:           # memory node: its best initiators' read/write latency (ns), bandwidth (MB/s)",
                          '    "0": {"access1": {"initiators": [0]}}',
                          "  tiers:          # the kernel's memory tiers, fastest first",
                          '    - {"tier": 4, "nodes": [0]}']
    assert '  - {id: 0, cpus: "0-1", memory_mb: ' in "\n".join(lines)
    with pytest.raises(ConfigError) as e:
        pd.detect("a b", tmp_path)
    assert str(e.value) == ("numaplace platform detect: --name: 'a b': use letters, digits, '_', '.', '-' "
                            "(it names config/platforms/<name>.yaml)")


def test_hwloc_is_asked_for_its_xml_and_version(monkeypatch):
    """lstopo's NUMANode objects with os_index and cpuset (attributes in any order); the
    version is the last word of --version; an object without a cpuset is left out."""
    xml = ('<topology version="2.0"><object type="Machine" os_index="0" cpuset="0x0000000f">'
           '<object type="NUMANode" cpuset="0x00000003" os_index="0" local_memory="1"/>'
           '<object type="NUMANode" os_index="1" cpuset="0x0000000c"/>'
           '<object type="NUMANode" os_index="2"/></object></topology>')
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        return SimpleNamespace(stdout=xml if "--of" in argv else "lstopo-no-graphics 2.9.0\n")
    monkeypatch.setattr(pd.shutil, "which", lambda name: "/usr/bin/" + name if name == "lstopo-no-graphics" else None)
    monkeypatch.setattr(pd.subprocess, "run", run)
    assert pd.hwloc_nodes() == ("2.9.0", {0: [0, 1], 1: [2, 3]})
    assert calls == [["/usr/bin/lstopo-no-graphics", "--of", "xml", "-"], ["/usr/bin/lstopo-no-graphics", "--version"]]
    monkeypatch.setattr(pd.shutil, "which", lambda name: None)
    assert pd.hwloc_nodes() is None


def test_detect_on_the_live_sys_inside_a_job_writes_its_allocation(monkeypatch):
    """On /sys inside a Slurm job (CPUs 2-3, memory on node 1): the whole machine's nodes
    and the job's part as `allowed:`, with the lines that say how to plan for all of it."""
    from numaplace.machine.topology import Topology
    _frozen(monkeypatch)
    machine = Topology("live", {0: [0, 1], 1: [2, 3]}, {0: 1024, 1: 2048}, [[10, 21], [21, 10]])
    monkeypatch.setattr(pd, "from_sysfs", lambda root, name, allowed=None: machine)
    monkeypatch.setattr(pd, "process_allowed", lambda: ([2, 3], [1], "cpuset"))
    monkeypatch.setattr(pd, "caches", lambda root: [])
    monkeypatch.setattr(pd, "smt_siblings", lambda root: [])
    monkeypatch.setattr(pd, "read_firmware", lambda root: {"slit": None})
    monkeypatch.setattr(pd, "hwloc_nodes", lambda: None)
    lines = pd.detect("live", "/sys").splitlines()
    assert "#   hwloc         not consulted (not installed, or not the live /sys)" in lines
    assert lines[-3:] == ["# this process may use only part of the machine (cpuset): plans stay inside it;",
                          "# delete these lines to plan for the whole machine",
                          'allowed: {cpus: "2-3", nodes: "1", source: "cpuset"}']
    assert '  - {id: 0, cpus: "0-1", memory_mb: 1024}' in lines
    monkeypatch.setattr(pd, "process_allowed", lambda: ([0, 1, 2, 3], [0, 1], "affinity mask"))
    assert pd.detect("live", "/sys").splitlines()[-1] == "smt_siblings: []"
