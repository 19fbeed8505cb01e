"""The machine first (numaplace.report.machine): the facts line from a record's topology,
the reader node x memory node matrices from memory_matrix.csv (at the DRAM size, one
number a cell), as text and as a heat-mapped HTML table; every number pinned."""
from __future__ import annotations

import pandas as pd
import pytest

from numaplace.report import machine as mc

pytestmark = pytest.mark.unit


TOPOLOGY = {
    "model": "AMD EPYC 9654", "sockets": 2,
    "nodes": {"0": "0-3,8-11", "1": "4-7,12-15", "2": ""},
    "memory_mb": {"0": 65536, "1": 65536, "2": 131072},
    "smt_siblings": [f"{c},{c + 8}" for c in range(8)],
    "caches": [{"level": 2, "type": "Unified", "size_kb": 1024, "shared_cpus": [0, 8]},
               {"level": 1, "type": "Instruction", "size_kb": 32, "shared_cpus": [0, 8]},
               {"level": 1, "type": "Data", "size_kb": 48, "shared_cpus": [0, 8]},
               {"level": 3, "type": "Unified", "size_kb": 32768, "shared_cpus": list(range(16))}],
}


def test_cache_sizes_are_said_in_mib_when_whole_else_kib():
    assert [mc._size(kb) for kb in (32768, 1024, 1536, 48, 2048, 262144)] == [
        "32 MiB", "1 MiB", "1536 KiB", "48 KiB", "2 MiB", "256 MiB"]


def test_the_facts_line_counts_cores_threads_nodes_memory_and_caches():
    """16 hardware threads in 8 SMT pairs are 8 cores; 64 GiB a CPU node, a 128 GiB
    memory-only node; caches largest level first (instruction caches left out)."""
    assert mc.facts_line(TOPOLOGY) == (
        "AMD EPYC 9654 · 2 sockets · 8 cores, 16 hardware threads · 2 NUMA nodes with CPUs (64 GiB each), "
        "1 NUMA node memory only (128 GiB) · L3 32 MiB x 16, L2 1 MiB x 2, L1 48 KiB x 2")
    uneven = {"nodes": {"0": "0-1", "1": "2-3"}, "memory_mb": {"0": 3072, "1": 1536},
              "allowed": {"cpus": "0-1", "nodes": "0", "source": "cgroup"}}
    assert mc.facts_line(uneven) == ("CPU model not recorded · 4 cores · 2 NUMA nodes with CPUs (1.5-3 GiB) · "
                                     "runs restricted to CPUs 0-1, memory nodes 0 (cgroup)")
    assert mc.facts_line(None) == "not recorded (no run has a record yet)"


def cells(bench, size, values, mode="", via="first-touch"):
    return [{"bench": bench, "mode": mode, "via": via, "size_bytes": size, "reader_node": r, "memory_node": m,
             "median": v} for (r, m), v in values.items()]


MIB = 2 ** 20
LAT = {(0, 0): 90.0, (0, 1): 140.0, (1, 0): 150.0, (1, 1): 100.0}
BW = {(0, 0): 12000.0, (0, 1): 7000.0, (1, 0): 6000.0, (1, 1): 11000.0}


def matrix():
    """A 2-node study's memory_matrix.csv: memlat at 256 MiB on every cell (plus a curve on
    cell 0->0 at smaller sizes and a membind repeat of 0->0), membw serial and a contention run."""
    return pd.DataFrame(
        cells("memlat", 256 * MIB, LAT) + cells("memlat", 256 * MIB, {(0, 0): 110.0}, via="membind")
        + cells("memlat", 1 * MIB, {(0, 0): 5.0}) + cells("memlat", 512 * MIB, {(0, 0): 95.0})
        + cells("membw", 512 * MIB, BW, mode="serial")
        + cells("membw", 512 * MIB, {(0, 0): 40000.0}, mode="parallel"))


def test_node_matrices_take_the_size_of_the_most_cells_and_one_median_a_cell():
    """memlat: 256 MiB (4 cells) not 512 MiB (1 cell); 0->0 is the median of 90 and 110;
    membw in GB/s from MB/s, the contention run no cell."""
    m = mc.node_matrices(matrix())
    assert list(m) == ["latency", "read bandwidth"]            # latency (lower is better) first
    lat, bw = m["latency"], m["read bandwidth"]
    assert (lat["unit"], lat["size"], lat["higher_is_better"]) == ("ns", 256 * MIB, False)
    assert lat["grid"].to_dict("index") == {0: {0: 100.0, 1: 140.0}, 1: {0: 150.0, 1: 100.0}}
    assert (bw["unit"], bw["size"], bw["higher_is_better"]) == ("GB/s", 512 * MIB, True)
    assert bw["grid"].to_dict("index") == {0: {0: 12.0, 1: 7.0}, 1: {0: 6.0, 1: 11.0}}
    assert mc.node_matrices(None) == {} and mc.node_matrices(matrix().iloc[0:0]) == {}


def test_a_matrix_as_text_has_a_header_of_memory_nodes_and_a_row_per_reader():
    grids = mc.node_matrices(matrix())
    assert mc.machine_lines({"nodes": {"0": "0", "1": "1"}, "memory_mb": {"0": 1024, "1": 1024}}, matrix()) == [
        "CPU model not recorded · 2 cores · 2 NUMA nodes with CPUs (1 GiB each)",
        "latency (ns, 256 MiB buffers), reader node x memory node:",
        "  node    0    1",
        "     0  100  140",
        "     1  150  100",
        "read bandwidth (GB/s, 512 MiB buffers), reader node x memory node:",
        "  node    0    1",
        "     0 12.0  7.0",
        "     1  6.0 11.0"]
    g = grids["latency"]
    wide = {**g, "grid": g["grid"].map(lambda v: v * 1000)}
    assert mc.matrix_lines("latency", wide)[1:] == ["  node      0      1", "     0 100000 140000", "     1 150000 100000"]


def test_the_heat_map_is_darker_where_the_cell_is_worse():
    """Latency: the highest (150 ns) darkest; bandwidth: the lowest (6 GB/s) darkest; the
    alpha runs 0.08 (best) to 0.68 (worst)."""
    html = mc.matrix_html(matrix())
    shades = [(float(a), v) for a, v in
              __import__("re").findall(r'rgba\(214, 96, 77, ([\d.]+)\)">([\d.]+)</td>', html)]
    assert shades == [(0.08, "100"), (0.56, "140"), (0.68, "150"), (0.08, "100"),
                      (0.08, "12.0"), (0.58, "7.0"), (0.68, "6.0"), (0.18, "11.0")]
    assert "<caption>latency (ns, 256 MiB), reader node × memory node</caption>" in html
    assert "<tr><th>node</th><th>0</th><th>1</th></tr>" in html
