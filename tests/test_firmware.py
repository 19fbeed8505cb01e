"""What the firmware says beside what is measured (numaplace.machine.firmware, issue 40
item 6): the SLIT, ACPI HMAT and the kernel's memory tiers read from a fake sysfs laid
out as Linux lays it out (Documentation/admin-guide/mm/numaperf.rst,
Documentation/ABI/testing/sysfs-kernel-mm-memory-tiers), recorded with the system
state, written by `numaplace platform detect`, and set beside the measured matrices."""
from __future__ import annotations

import os

import pandas as pd
import pytest

from numaplace import ConfigError
from numaplace.machine import firmware, system
from numaplace.machine.firmware import disagreements, firmware_ratios, read_firmware
from numaplace.machine.platform_detect import detect
from numaplace.machine.topology import load_platform

pytestmark = pytest.mark.unit

# two CPU nodes with DRAM, node 2 memory only (a CXL expander): SLIT rows in node order
SLIT = {0: [10, 21, 40], 1: [21, 10, 40], 2: [40, 40, 10]}
# HMAT per memory node: its best initiators, read/write latency (ns), bandwidth (MB/s)
HMAT = {0: ([0], 80, 85, 100000, 90000), 1: ([1], 80, 85, 100000, 90000),
        2: ([0, 1], 200, 250, 30000, 20000)}
TIERS = {4: "0-1", 22: "2"}       # DRAM's tier is 4 on today's kernels; CXL further down


def fake_sysfs(sys_root, slit, hmat=None, tiers=None, cpus=None):
    """sys_root/devices/system/node/nodeN/{cpulist,meminfo,distance}, HMAT's
    nodeY/accessZ/initiators/{read,write}_{latency,bandwidth} with nodeX symlinks to the
    initiators (and nodeX/accessZ/targets/nodeY back), and
    devices/virtual/memory_tiering/memory_tierN/nodelist, all as the kernel writes them."""
    node_root = sys_root / "devices" / "system" / "node"
    cpus = cpus or {0: "0-1", 1: "2-3"}
    for n, row in slit.items():
        d = node_root / f"node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus.get(n, "") + "\n")
        (d / "meminfo").write_text(f"Node {n} MemTotal:       1048576 kB\nNode {n} MemFree:        524288 kB\n")
        (d / "distance").write_text(" ".join(str(x) for x in row) + "\n")
    for target, (initiators, rl, wl, rb, wb) in (hmat or {}).items():
        for access in ("access0", "access1"):
            init = node_root / f"node{target}" / access / "initiators"
            init.mkdir(parents=True)
            for attr, v in (("read_latency", rl), ("write_latency", wl),
                            ("read_bandwidth", rb), ("write_bandwidth", wb)):
                (init / attr).write_text(f"{v}\n")
            for i in initiators:
                os.symlink(f"../../../node{i}", init / f"node{i}")
                targets = node_root / f"node{i}" / access / "targets"
                targets.mkdir(parents=True, exist_ok=True)
                os.symlink(f"../../../node{target}", targets / f"node{target}")
    for t, nodelist in (tiers or {}).items():
        d = sys_root / "devices" / "virtual" / "memory_tiering" / f"memory_tier{t}"
        d.mkdir(parents=True)
        (d / "nodelist").write_text(nodelist + "\n")
    return sys_root


def test_hmat_and_tiers_of_two_cpu_nodes_and_a_memory_only_node(tmp_path):
    fw = read_firmware(fake_sysfs(tmp_path, SLIT, HMAT, TIERS))
    assert fw["slit"] == [SLIT[0], SLIT[1], SLIT[2]] and fw["nodes"] == [0, 1, 2]
    assert set(fw["hmat"]) == {"0", "1", "2"}              # node ids as text: a JSON record's keys
    assert fw["hmat"]["2"]["access0"] == fw["hmat"]["2"]["access1"] == {
        "initiators": [0, 1], "read_latency_ns": 200, "write_latency_ns": 250,
        "read_bandwidth_mbps": 30000, "write_bandwidth_mbps": 20000}
    assert fw["hmat"]["0"]["access1"]["initiators"] == [0]
    assert fw["tiers"] == [{"tier": 4, "nodes": [0, 1]}, {"tier": 22, "nodes": [2]}]
    # remote over local, CPU initiators: only the pairs sysfs gives (never 0 -> 1)
    assert firmware_ratios(fw) == {
        (0, 2): {"latency_ratio": 2.5, "bandwidth_ratio": 0.3, "access": "access1"},
        (1, 2): {"latency_ratio": 2.5, "bandwidth_ratio": 0.3, "access": "access1"}}


def test_a_machine_with_a_slit_only_has_no_hmat_and_no_tiers(tmp_path):
    fw = read_firmware(fake_sysfs(tmp_path, {0: [10, 21], 1: [21, 10]}))
    assert fw == {"slit": [[10, 21], [21, 10]], "nodes": [0, 1]}
    assert firmware_ratios(fw) == {}
    assert disagreements(fw, {(0, 1): {"latency_ratio": 2.0, "bandwidth_ratio": 0.5}}) == []
    assert read_firmware(tmp_path / "nothing") == {"slit": None}     # no NUMA sysfs at all: no error


def test_partial_and_odd_files_are_absent_keys_never_errors(tmp_path):
    """A node without its distance row (no SLIT), an HMAT attribute of 0 (not given by the
    firmware), an unreadable nodelist, and a file bigger than a page (read up to the cap)."""
    root = fake_sysfs(tmp_path, {0: [10, 21], 1: [21, 10]}, {1: ([1], 0, 0, 5000, 0)}, {4: "0-1"})
    (root / "devices/system/node/node0/distance").unlink()
    (root / "devices/virtual/memory_tiering/memory_tier4/nodelist").write_text("garbage\n")
    (root / "devices/system/node/node1/access0/initiators/read_bandwidth").write_text("7" * 100000)
    fw = read_firmware(root)
    assert fw["slit"] is None
    assert fw["hmat"]["1"]["access1"] == {"initiators": [1], "read_bandwidth_mbps": 5000}
    assert fw["hmat"]["1"]["access0"]["read_bandwidth_mbps"] == int("7" * firmware.MAX_BYTES)
    assert fw["tiers"] == [{"tier": 4, "nodes": []}]


def test_disagreements_name_the_cells_apart_and_not_those_that_agree(tmp_path):
    fw = read_firmware(fake_sysfs(tmp_path, SLIT, HMAT, TIERS))
    measured = {(0, 1): {"latency_ratio": 1.3, "bandwidth_ratio": 0.6},    # SLIT 2.1x: apart
                (1, 0): {"latency_ratio": 1.9, "bandwidth_ratio": 0.6},    # SLIT 2.1x: agrees
                (0, 2): {"latency_ratio": 2.4, "bandwidth_ratio": 0.31},   # HMAT agrees; SLIT 4x apart
                (1, 2): {"latency_ratio": 2.5, "bandwidth_ratio": 0.1},    # HMAT bandwidth 0.3x apart
                (0, 0): {"latency_ratio": 1.0, "bandwidth_ratio": 1.0}}
    assert disagreements(fw, measured) == [
        "node 0 -> node 1: SLIT says 2.1x local latency, measured 1.3x",
        "node 0 -> node 2: SLIT says 4x local latency, measured 2.4x",
        "node 1 -> node 2: SLIT says 4x local latency, measured 2.5x",
        "node 1 -> node 2: HMAT says 0.3x local bandwidth, measured 0.1x"]
    # a wider tolerance lets the SLIT's 2.1x against 1.3x pass
    assert not any("node 0 -> node 1" in d for d in disagreements(fw, measured, tolerance=0.7))


def test_the_run_records_system_state_carries_the_firmware(tmp_path):
    fake_sysfs(tmp_path / "sys", SLIT, HMAT, TIERS)
    rec = system.at_start(tmp_path)
    assert rec["firmware"] == read_firmware(tmp_path / "sys")
    assert rec["firmware"]["tiers"][1] == {"tier": 22, "nodes": [2]}


def test_platform_detect_writes_a_firmware_section_load_platform_accepts(tmp_path):
    import yaml
    root = fake_sysfs(tmp_path / "sys", SLIT, HMAT, TIERS)
    text = detect("fw-box", sys_root=root, use_hwloc=False)
    path = tmp_path / "fw-box.yaml"
    path.write_text(text)
    topo = load_platform(path)
    assert topo.nodes == {0: [0, 1], 1: [2, 3], 2: []} and topo.distances == [SLIT[0], SLIT[1], SLIT[2]]
    fw = yaml.safe_load(text)["firmware"]
    assert fw == {"hmat": read_firmware(root)["hmat"], "tiers": [{"tier": 4, "nodes": [0, 1]}, {"tier": 22, "nodes": [2]}]}
    assert "firmware.hmat" in text and "ACPI HMAT" in text
    # the schema checks the section: an access class the kernel does not have is refused
    path.write_text(text.replace('"access1"', '"access7"'))
    with pytest.raises(ConfigError):
        load_platform(path)
    # a machine with a SLIT only: no firmware section, as before
    only = detect("slit-box", sys_root=fake_sysfs(tmp_path / "other", {0: [10, 21], 1: [21, 10]}), use_hwloc=False)
    assert "firmware:" not in only


def _matrix(lat, bw):
    """memory_matrix.csv rows: memlat (ns) and membw (MB/s) per reader x memory node."""
    rows = [{"bench": "memlat", "mode": "serial", "size_bytes": 1 << 28, "reader_node": r, "memory_node": m,
             "median": v, "via": "first-touch", "status": "ok"} for (r, m), v in lat.items()]
    rows += [{"bench": "membw", "mode": "serial", "size_bytes": 1 << 28, "reader_node": r, "memory_node": m,
              "median": v, "via": "first-touch", "status": "ok"} for (r, m), v in bw.items()]
    return pd.DataFrame(rows)


def test_the_answer_sets_hmat_and_tiers_beside_the_measured_ratios(tmp_path):
    from numaplace.report.answer import firmware_lines, machine_line
    fw = read_firmware(fake_sysfs(tmp_path, SLIT, HMAT, TIERS))
    lat = {(0, 0): 100, (0, 1): 190, (0, 2): 240, (1, 0): 190, (1, 1): 100, (1, 2): 250}
    bw = {(0, 0): 10000, (0, 1): 6000, (0, 2): 3100, (1, 0): 6000, (1, 1): 10000, (1, 2): 1000}
    matrix = _matrix(lat, bw)
    topology = {"nodes": {"0": "0-1", "1": "2-3", "2": ""}, "distances": [SLIT[0], SLIT[1], SLIT[2]]}
    line = machine_line(matrix, topology, firmware=fw)
    assert "HMAT node 0 -> 2: latency 2.5x, bandwidth 0.3x local; 1 -> 2: latency 2.5x, bandwidth 0.3x local" in line
    assert "memory tiers 4: nodes 0-1; 22: node 2" in line and "node 2: memory only, tier 22" in line
    assert firmware_lines(matrix, fw) == [
        "firmware vs measured: node 0 -> node 2: SLIT says 4x local latency, measured 2.4x",
        "firmware vs measured: node 1 -> node 2: SLIT says 4x local latency, measured 2.5x",
        "firmware vs measured: node 1 -> node 2: HMAT says 0.3x local bandwidth, measured 0.1x"]
    assert "HMAT" not in machine_line(matrix, topology) and firmware_lines(matrix, None) == []


def test_compare_fingerprint_sets_the_firmware_beside_the_measured_ratios(tmp_path):
    """fingerprints.csv's firmware columns: HMAT in the measured columns' conventions
    (latency remote/local, bandwidth local/remote), the tiers, the disagreements."""
    from numaplace.report.compare import firmware_columns
    fw = read_firmware(fake_sysfs(tmp_path, SLIT, HMAT, TIERS))
    lat = {(0, 0): 100, (0, 2): 240, (1, 1): 100, (1, 2): 250}
    bw = {(0, 0): 10000, (0, 2): 3100, (1, 1): 10000, (1, 2): 3000}
    row = firmware_columns(fw, _matrix(lat, bw))
    assert row["hmat_latency_remote_local"] == "0->2:2.5x 1->2:2.5x"
    assert row["hmat_bandwidth_remote_local"] == "0->2:3.3x 1->2:3.3x"
    assert row["memory_tiers"] == "4:0-1 22:2"
    assert row["firmware_disagrees"] == ("node 0 -> node 2: SLIT says 4x local latency, measured 2.4x; "
                                         "node 1 -> node 2: SLIT says 4x local latency, measured 2.5x")
    assert firmware_columns(None, _matrix(lat, bw)) == {}


def test_a_ratio_needs_the_initiators_own_node_value(tmp_path):
    """Node 1's memory is best reached from node 0 (node 1 an accelerator's node): HMAT
    gives no 1 -> 1 value, so 1 -> 2 has no local to divide by and gets no ratio."""
    slit = {0: [10, 20, 30], 1: [20, 10, 30], 2: [30, 30, 10]}
    hmat = {0: ([0], 80, 80, 100000, 100000), 1: ([0], 90, 90, 80000, 80000),
            2: ([0, 1], 200, 200, 30000, 30000)}
    fw = read_firmware(fake_sysfs(tmp_path, slit, hmat))
    assert list(firmware_ratios(fw)) == [(0, 1), (0, 2)]


def test_disagreement_lines_at_the_tolerance_edge_with_their_printed_digits(tmp_path):
    """Apart means more than 25 % apart (2.5 against 2.0 is exactly 25 %: not apart; 2.0
    against 1.6: 25 %, not apart; 1.3 against 1.0: apart); a ratio is the distance over
    the reader's own local distance; figures print with 2 significant digits; a cell of a
    node to itself, or without a measured value (None, NaN), is never a line."""
    slit = {0: [10, 25, 13], 1: [25, 10, 20], 2: [13, 20, 10]}
    fw = read_firmware(fake_sysfs(tmp_path, slit))
    nan = float("nan")
    measured = {(0, 1): {"latency_ratio": 2.0},         # SLIT 2.5: exactly 25 % apart, not more
                (1, 2): {"latency_ratio": 1.6},         # SLIT 2.0: 25 %
                (0, 2): {"latency_ratio": 1.0},         # SLIT 1.3: 30 %
                (1, 0): {"latency_ratio": 2.126},       # SLIT 2.5: 17.6 %
                (2, 0): {"latency_ratio": 1.04},        # SLIT 1.3: exactly 25 %
                (2, 1): {"latency_ratio": nan, "bandwidth_ratio": 0.5},
                (1, 1): {"latency_ratio": 1.4, "bandwidth_ratio": 0.7}}
    assert disagreements(fw, measured) == ["node 0 -> node 2: SLIT says 1.3x local latency, measured 1x"]
    assert disagreements(fw, measured, tolerance=0.2) == [
        "node 0 -> node 1: SLIT says 2.5x local latency, measured 2x",
        "node 0 -> node 2: SLIT says 1.3x local latency, measured 1x",
        "node 1 -> node 2: SLIT says 2x local latency, measured 1.6x",
        "node 2 -> node 0: SLIT says 1.3x local latency, measured 1x"]
    assert disagreements(fw, {(1, 0): {"latency_ratio": 1.5}}) == [
        "node 1 -> node 0: SLIT says 2.5x local latency, measured 1.5x"]
    assert disagreements(fw, {(0, 1): {"latency_ratio": 3.456}}) == [
        "node 0 -> node 1: SLIT says 2.5x local latency, measured 3.5x"]
    assert disagreements(fw, {(0, 1): {"latency_ratio": None, "bandwidth_ratio": 0.1}}) == []


def test_a_slit_ratio_is_over_the_readers_own_distance(tmp_path):
    """A firmware giving node 1 a local distance of 12 (not 10): 1 -> 0 is 24/12 = 2x."""
    fw = read_firmware(fake_sysfs(tmp_path, {0: [10, 24], 1: [24, 12]}))
    assert fw["slit"] == [[10, 24], [24, 12]]
    assert disagreements(fw, {(1, 0): {"latency_ratio": 2.0}, (0, 1): {"latency_ratio": 2.4}}) == []
    assert disagreements(fw, {(1, 0): {"latency_ratio": 2.4}}) == []
    assert disagreements(fw, {(1, 0): {"latency_ratio": 2.6}}) == [
        "node 1 -> node 0: SLIT says 2x local latency, measured 2.6x"]


def test_a_distance_row_of_another_length_is_no_slit_and_odd_access_classes(tmp_path):
    """A row with a value for a node sysfs does not show (3 values, 2 nodes) is no SLIT; an
    access class with initiators but no values keeps its initiators; values without any
    initiator are kept too; a class with neither is absent; a tier's abstract distance is
    kept where the kernel shows it."""
    root = fake_sysfs(tmp_path, {0: [10, 21, 30], 1: [21, 10, 30]}, {0: ([0], 0, 0, 0, 0), 1: ([], 90, 0, 0, 0)},
                      {4: "0-1"})
    (root / "devices/virtual/memory_tiering/memory_tier4/abstract_distance").write_text("512\n")
    empty = root / "devices/system/node/node1/access9/initiators"      # not an access class read
    empty.mkdir(parents=True)
    fw = read_firmware(root)
    assert fw["slit"] is None and fw["nodes"] == [0, 1]
    assert fw["hmat"] == {"0": {"access0": {"initiators": [0]}, "access1": {"initiators": [0]}},
                          "1": {"access0": {"initiators": [], "read_latency_ns": 90},
                                "access1": {"initiators": [], "read_latency_ns": 90}}}
    assert fw["tiers"] == [{"tier": 4, "nodes": [0, 1], "abstract_distance": 512}]
    for f in (root / "devices/system/node/node1").glob("access*/initiators/read_latency"):
        f.write_text("0\n")
    assert "1" not in read_firmware(root)["hmat"]


def test_nodes_numbered_from_ten_up_and_a_failed_measurement(tmp_path):
    """Nodes 2 and 10 (numbers, not text order: 2 first); a measured ratio of 0 (a cell that
    failed) is never compared (no line, no division by zero); a sysfs value is read up to
    a page, 4096 bytes."""
    fw = read_firmware(fake_sysfs(tmp_path / "a", {10: [10, 21], 2: [21, 10]}, cpus={2: "0-1", 10: "2-3"}))
    assert fw["nodes"] == [2, 10] and fw["slit"] == [[21, 10], [10, 21]]
    fw = read_firmware(fake_sysfs(tmp_path / "b", SLIT, HMAT))
    assert disagreements(fw, {(0, 1): {"latency_ratio": 0.0, "bandwidth_ratio": 0.0},
                              (0, 2): {"latency_ratio": 2.5, "bandwidth_ratio": 0.0}}) == [
        "node 0 -> node 2: SLIT says 4x local latency, measured 2.5x"]
    big = tmp_path / "big"
    big.write_text("9" * 10000)
    assert firmware._read(big) == "9" * 4096
    assert firmware._read(tmp_path / "none") is None
    assert firmware.int_or_none(" 42\n") == 42 and firmware.int_or_none("") is None and firmware.int_or_none(None) is None
