"""numaplace.machine.hwloc_xml on small hand-written topologies in hwloc's own XML forms
(v2: memory children with their parent's cpuset, <distances2>; v1: <distances> with
latency_base): which node owns which CPUs, the matrix, caches, SMT and the header's
words, and the SLIT checks' exact reasons."""
from __future__ import annotations

import pytest
import yaml

from numaplace import ConfigError
from numaplace.machine import hwloc_xml
from numaplace.machine.hwloc_xml import convert

pytestmark = pytest.mark.unit

GiB = 2 ** 30


def pu(i):
    return f'<object type="PU" os_index="{i}" cpuset="0x{1 << i:08x}"/>'


def core(*pus):
    return '<object type="Core">' + "".join(pu(i) for i in pus) + "</object>"


V2 = f"""<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
 <object type="Machine" os_index="0" cpuset="0x000000ff">
  <info name="DMISysVendor" value="Dell Inc."/><info name="DMIProductName" value=" PowerEdge R7525 "/>
  <info name="HostName" value="node17"/><info name="hwlocVersion" value="2.9.0"/>
  <info name="OSName" value="Linux"/><info name="OSRelease" value="6.1.0-18-amd64"/>
  <object type="NUMANode" os_index="7" gp_index="70" cpuset="0x000000ff" subtype="CXL-DRAM" local_memory="{64 * GiB}"/>
  <object type="Package" os_index="0" cpuset="0x0000000f">
   <info name="CPUModel" value="AMD EPYC  7543 32-Core Processor"/>
   <object type="NUMANode" os_index="2" gp_index="20" cpuset="0x0000000f" subtype="HBM" local_memory="{16 * GiB}"/>
   <object type="NUMANode" os_index="0" gp_index="10" cpuset="0x0000000f" local_memory="{128 * GiB + 5}"/>
   <object type="L3Cache" cache_size="{32 * 2 ** 20}" cache_type="0" depth="3">
    <object type="L2Cache" cache_size="524288" depth="2"><object type="L1Cache" cache_size="32768" cache_type="1" depth="1">
     <object type="L1iCache" cache_size="32768" cache_type="2" depth="1">{core(0, 1)}</object></object></object>
    <object type="L2Cache" cache_size="524288" depth="2"><object type="L1Cache" cache_size="32768" cache_type="1" depth="1">
     <object type="L1iCache" cache_size="32768" cache_type="2" depth="1">{core(2, 3)}</object></object></object>
   </object>
  </object>
  <object type="Package" os_index="1" cpuset="0x000000f0">
   <info name="CPUModel" value="AMD EPYC 7543 32-Core Processor"/>
   <object type="NUMANode" os_index="1" gp_index="11" cpuset="0x000000f0" subtype="DRAM" local_memory="{128 * GiB}"/>
   <object type="MemCache" subtype="MemorySideCache" cache_size="{8 * GiB}" depth="1" cpuset="0x000000f0"/>
   <object type="L3Cache" cache_size="{32 * 2 ** 20}" cache_type="0" depth="3">{core(4, 5)}{core(6)}{core(7)}</object>
  </object>
 </object>
 <distances2 type="NUMANode" nbobjs="4" kind="4" name="Other" indexing="os">
  <indexes length="7">0 1 2 7</indexes>
  <u64values length="47">10 99 99 99 99 10 99 99 99 99 10 99 99 99 99 10</u64values>
 </distances2>
 <distances2 type="NUMANode" nbobjs="4" kind="5" name="NUMALatency" indexing="gp">
  <indexes length="11">70 10 11 20</indexes>
  <u64values length="47">10 40 40 40 40 10 21 12 40 21 10 21 40 12 21 10</u64values>
 </distances2>
</topology>
"""


def write(tmp_path, text, name="box.xml"):
    f = tmp_path / name
    f.write_text(text)
    return f


def test_a_v2_topology_with_hbm_and_cxl_memory_only_nodes(tmp_path):
    """Node 0 (no subtype) owns package 0's CPUs, not HBM node 2 of the same cpuset; node 1 (DRAM) owns package 1's; CXL node 7, hanging
    from the Machine with the largest cpuset, owns none; memory in MiB (2^20 bytes, whole);
    the NUMALatency matrix by gp index, in node id order; caches per (level, type, size),
    the memory-side cache left out; SMT from Cores with two PUs."""
    text = convert(write(tmp_path, V2), "r7525")
    data = yaml.safe_load(text)
    assert data["description"] == ("Dell Inc. PowerEdge R7525: 2 x AMD EPYC 7543 32-Core Processor, 4 NUMA nodes "
                                   "(2 memory-only), 8 CPUs (from hwloc XML box.xml)")
    assert data["nodes"] == [{"id": 0, "cpus": "0-3", "memory_mb": 131072}, {"id": 1, "cpus": "4-7", "memory_mb": 131072},
                             {"id": 2, "cpus": "", "memory_mb": 16384}, {"id": 7, "cpus": "", "memory_mb": 65536}]
    assert data["distances"] == [[10, 21, 12, 40], [21, 10, 21, 40], [12, 21, 10, 40], [40, 40, 40, 10]]
    assert data["caches"] == [
        {"level": 1, "type": "Data", "size_kb": 32, "shared_cpus": ["0-1", "2-3"]},
        {"level": 1, "type": "Instruction", "size_kb": 32, "shared_cpus": ["0-1", "2-3"]},
        {"level": 2, "type": "Unified", "size_kb": 512, "shared_cpus": ["0-1", "2-3"]},
        {"level": 3, "type": "Unified", "size_kb": 32768, "shared_cpus": ["0-3", "4-7"]}]
    assert data["smt_siblings"] == ["0-1", "2-3", "4-5"]
    head = [l for l in text.splitlines() if l.startswith("#")]
    assert head[1] == "# from an hwloc XML topology (format v2.0; hwloc 2.9.0, host node17, Linux 6.1.0-18-amd64). Sources:"
    assert "#   distances     <distances2 name=NUMALatency>" in head
    assert "#   caches        L*Cache objects (memory-side caches left out)" in head
    assert "#   memory-only   node 2 (HBM), node 7 (CXL-DRAM)" in head
    mixed = V2.replace('value="AMD EPYC 7543 32-Core Processor"', 'value="AMD EPYC 7513 32-Core Processor"')
    assert yaml.safe_load(convert(write(tmp_path, mixed, "m.xml"), "m"))["description"].startswith(
        "Dell Inc. PowerEdge R7525: 2 packages, 4 NUMA nodes (2 memory-only)")


def test_when_every_node_of_a_cpuset_has_a_memory_subtype_the_lowest_id_owns_it():
    group = [{"id": 5, "subtype": "HBM"}, {"id": 3, "subtype": "MCDRAM"}, {"id": 4, "subtype": "NVM"}]
    assert hwloc_xml._cpu_owner(group) == 3
    assert hwloc_xml._cpu_owner(group + [{"id": 9, "subtype": "DRAM"}, {"id": 8, "subtype": ""}]) == 8
    assert hwloc_xml._cpu_owner([{"id": 2, "subtype": "HBM"}, {"id": 6, "subtype": "DRAM"}]) == 6


@pytest.mark.parametrize("matrix, problem", [
    ([[10, 20], [20, 10]], None),
    ([[10, 255], [255, 10]], None),
    ([[10, 10], [10, 10]], None),
    ([[10, 256], [256, 10]], "value 256 is outside 0-255"),
    ([[10, -1], [-1, 10]], "value -1 is outside 0-255"),
    ([[10, 20], [21, 10]], "not symmetric at row 0, column 1"),
    ([[10, 9], [9, 10]], "row 0: 9 is below the node's own distance 10"),
    ([[0, 20], [20, 0]], "node 0's distance to itself is 0"),
    ([], "empty"),
])
def test_the_slit_checks_reasons(matrix, problem):
    assert hwloc_xml._slit_problem(matrix) == problem


V1 = f"""<?xml version="1.0" encoding="UTF-8"?>
<topology>
 <object type="Machine" os_index="0" cpuset="0x0000000f" local_memory="0">
  <info name="HostName" value="old"/>
  <object type="Socket" os_index="0" cpuset="0x00000003">
   <object type="NUMANode" os_index="1" cpuset="0x00000003" local_memory="{4 * GiB}">
    <object type="Cache" subtype="MemorySideCache" cache_size="{16 * GiB}" depth="3" cache_type="0">
    <object type="Cache" cache_size="2097152" depth="2" cache_type="0">{core(0)}{core(1)}</object></object></object></object>
  <object type="Socket" os_index="1" cpuset="0x0000000c">
   <object type="NUMANode" os_index="0" cpuset="0x0000000c" local_memory="{2 * GiB}">
    <object type="Cache" cache_size="2097152" depth="2" cache_type="0">{core(2)}{core(3)}</object></object></object>
  <distances nbobjs="2" relative_depth="1" latency_base="10.000000">
   <latency value="1.000000"/><latency value="2.160000"/><latency value="2.140000"/><latency value="1.000000"/>
  </distances>
 </object>
</topology>
"""


def test_a_v1_topology_reads_latency_times_its_base_in_document_order(tmp_path):
    """v1 numbers its matrix in document (logical) order: node 1 comes first here, so
    the rows are swapped into node id order; 2.16 x 10 rounds to 22, 2.14 x 10 to 21,
    which is no SLIT (not symmetric): left out, and the header says why."""
    text = convert(write(tmp_path, V1, "old.xml"), "old")
    data = yaml.safe_load(text)
    assert data["nodes"] == [{"id": 0, "cpus": "2-3", "memory_mb": 2048}, {"id": 1, "cpus": "0-1", "memory_mb": 4096}]
    assert "distances" not in data
    assert ("#   distances     <distances> latency x latency_base 10: not a SLIT (not symmetric at row 0, "
            "column 1): left out") in text.splitlines()
    assert data["caches"] == [{"level": 2, "type": "Unified", "size_kb": 2048, "shared_cpus": ["0-1", "2-3"]}]
    assert data["description"] == "old: 2 packages, 2 NUMA nodes, 4 CPUs (from hwloc XML old.xml)"
    assert "# from an hwloc XML topology (format v1; host old). Sources:" in text.splitlines()
    ok = V1.replace('<latency value="2.140000"/>', '<latency value="2.160000"/>')
    data = yaml.safe_load(convert(write(tmp_path, ok, "ok.xml"), "ok"))
    assert data["distances"] == [[10, 22], [22, 10]]
    doubled = ok.replace('latency_base="10.000000"', 'latency_base="20.000000"')
    assert yaml.safe_load(convert(write(tmp_path, doubled, "d.xml"), "d"))["distances"] == [[20, 43], [43, 20]]


def test_a_matrix_not_over_every_node_is_left_out_and_a_bad_name_refused(tmp_path):
    for wrong in ('<indexes length="11">70 10 11 99</indexes>',          # gp 99: no such node
                  '<indexes length="11">70 12 11 20</indexes>'):         # gp 12: none either (not node 0)
        part = V2.replace('<indexes length="11">70 10 11 20</indexes>', wrong)
        text = convert(write(tmp_path, part), "x")
        assert ("#   distances     <distances2 name=NUMALatency> does not cover exactly the 4 NUMA nodes: left out"
                in text.splitlines())
    short = V2.replace("40 12 21 10</u64values>", "40 12 21</u64values>")
    assert ("#   distances     <distances2 name=NUMALatency> does not cover exactly the 4 NUMA nodes: left out"
            in convert(write(tmp_path, short), "x").splitlines())
    unnamed = V2.replace(' name="NUMALatency"', "").replace(' name="Other"', "").replace('kind="4"', 'kind="1"')
    assert "#   distances     <distances2 name=(none)>" in convert(write(tmp_path, unnamed), "x").splitlines()
    none = V2.replace('kind="5"', 'kind="1"').replace('kind="4"', 'kind="2"')
    assert "#   distances     none in the XML" in convert(write(tmp_path, none), "x").splitlines()
    with pytest.raises(ConfigError) as e:
        convert(write(tmp_path, V2), "bad name")
    assert str(e.value) == ("numaplace platform from-hwloc: --name: 'bad name': use letters, digits, '_', '.', '-' "
                            "(it names config/platforms/<name>.yaml)")
    homeless = V2.replace('cpuset="0x000000ff" subtype="CXL-DRAM"', 'cpuset="0x0000000f" subtype="CXL-DRAM"') \
                 .replace('os_index="1" gp_index="11" cpuset="0x000000f0"', 'os_index="1" gp_index="11" cpuset="0x00000030"')
    with pytest.raises(ConfigError, match="PU 6-7 is in no NUMANode's cpuset"):
        convert(write(tmp_path, homeless), "x")


def test_a_file_over_64_mib_is_refused_naming_the_bound(tmp_path):
    """Refused by its size, unread (a sparse file: nothing is written or read)."""
    assert hwloc_xml.MAX_BYTES == 64 * 2 ** 20
    big = tmp_path / "big.xml"
    with open(big, "wb") as f:
        f.truncate(64 * 2 ** 20 + 1)
    with pytest.raises(ConfigError) as e:
        convert(big, "x")
    assert str(e.value) == f"{big}: hwloc XML: {64 * 2 ** 20 + 1} bytes: larger than 64 MiB, refused"
    at = tmp_path / "at.xml"
    with open(at, "wb") as f:
        f.truncate(64 * 2 ** 20)                  # exactly the bound: read (and found not XML)
    with pytest.raises(ConfigError, match="not XML"):
        convert(at, "x")


def test_nodes_without_pus_or_with_one_id_twice_are_refused(tmp_path):
    no_pu = ('<topology version="2.0"><object type="Machine" os_index="0" cpuset="0x1">'
             '<object type="NUMANode" os_index="0" cpuset="0x1" local_memory="1"/></object></topology>')
    with pytest.raises(ConfigError) as e:
        convert(write(tmp_path, no_pu, "n.xml"), "x")
    assert str(e.value) == f"{tmp_path / 'n.xml'}: hwloc XML: no PU object"
    twice = V2.replace('os_index="1" gp_index="11"', 'os_index="0" gp_index="11"')
    with pytest.raises(ConfigError, match="two NUMANode objects with the same os_index"):
        convert(write(tmp_path, twice), "x")


def test_a_v1_matrix_without_a_latency_base_and_a_cache_of_unknown_size(tmp_path):
    """No latency_base: the values as they are; a Cache with size 0 (hwloc's unknown) is
    no cache."""
    v = V1.replace(' latency_base="10.000000"', "").replace('value="1.000000"', 'value="10"') \
          .replace('value="2.160000"', 'value="21"').replace('value="2.140000"', 'value="21"')
    v = v.replace('<object type="Cache" cache_size="2097152" depth="2" cache_type="0">{0}{1}</object>'.format(core(2), core(3)),
                  '<object type="Cache" cache_size="0" depth="3" cache_type="0">'
                  '<object type="Cache" cache_size="2097152" depth="2" cache_type="0">{0}{1}</object></object>'.format(core(2), core(3)))
    text = convert(write(tmp_path, v, "v.xml"), "v")
    data = yaml.safe_load(text)
    assert data["distances"] == [[10, 21], [21, 10]]
    assert "#   distances     <distances> latency x latency_base 1" in text.splitlines()
    assert data["caches"] == [{"level": 2, "type": "Unified", "size_kb": 2048, "shared_cpus": ["0-1", "2-3"]}]
