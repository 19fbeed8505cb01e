"""The machine first (issue 41.6): before the answer, the report and the terminal name the
machine (CPU model, sockets, cores and hardware threads, memory per node by kind, caches)
and print the reader x memory node matrices as numbers, as MLC does."""
import pandas as pd

from numaplace.machine.topology import Topology
from numaplace.report.machine import facts_line, machine_lines, matrix_html, node_matrices

SPR = Topology("auto", {0: [0, 1, 4, 5], 1: [2, 3, 6, 7], 2: []}, {0: 65536, 1: 65536, 2: 262144},
               [[10, 21, 24], [21, 10, 24], [24, 24, 10]], siblings={c: (c % 4, c % 4 + 4) for c in range(8)},
               caches=[{"level": 2, "type": "Unified", "size_kb": 2048, "shared_cpus": ["0,4", "1,5", "2,6", "3,7"]},
                       {"level": 3, "type": "Unified", "size_kb": 107520, "shared_cpus": ["0-1,4-5", "2-3,6-7"]}],
               model="Intel(R) Xeon(R) Platinum 8480+", sockets=2)


def matrix():
    rows = []
    for r in (0, 1):
        for m in (0, 1, 2):
            lat = 100.0 if r == m else 150.0 if m < 2 else 230.0
            rows.append({"bench": "memlat", "mode": "chase", "size_bytes": 1 << 28, "via": "first-touch",
                         "reader_node": r, "memory_node": m, "median": lat})
            rows.append({"bench": "membw", "mode": "serial", "size_bytes": 1 << 28, "via": "membind",
                         "reader_node": r, "memory_node": m, "median": 12000.0 if r == m else 8000.0})
        # a latency curve: more sizes, one cell; and a contention run: no cell of the matrix
        rows.append({"bench": "memlat", "mode": "chase", "size_bytes": 1 << 30, "via": "first-touch",
                     "reader_node": 0, "memory_node": 0, "median": 110.0})
    rows.append({"bench": "membw", "mode": "parallel", "size_bytes": 1 << 28, "via": "first-touch",
                 "reader_node": 0, "memory_node": 0, "median": 90000.0})
    return pd.DataFrame(rows)


def test_the_machine_is_named_from_the_records_topology():
    line = facts_line(SPR.to_dict())
    assert line == ("Intel(R) Xeon(R) Platinum 8480+ · 2 sockets · 4 cores, 8 hardware threads · "
                    "2 NUMA nodes with CPUs (64 GiB each), 1 NUMA node memory only (256 GiB) · L3 105 MiB x 2, "
                    "L2 2 MiB x 4")


def test_the_node_matrices_are_printed_as_numbers_in_ns_and_gb_per_s():
    """Each matrix at the size with the most cells (not the latency curve's larger one),
    bandwidth without contention runs. (Fails when the largest size is taken: a 1 x 1
    matrix of the curve's last point.)"""
    m = node_matrices(matrix())
    assert m["latency"]["grid"].shape == (2, 3) and m["latency"]["grid"].loc[1, 2] == 230.0
    assert m["read bandwidth"]["grid"].loc[0, 0] == 12.0
    lines = machine_lines(SPR.to_dict(), matrix())
    assert lines[1] == "latency (ns, 256 MiB buffers), reader node x memory node:"
    assert lines[2:5] == ["  node    0    1    2", "     0  100  150  230", "     1  150  100  230"]
    assert "  node    0    1    2" in lines[5:] and "     0 12.0  8.0  8.0" in lines
    html = matrix_html(matrix())
    assert html.count("<table") == 2 and ">230</td>" in html and ">12.0</td>" in html


def test_the_node_matrices_are_of_main_memory_when_every_cell_has_a_cache_size_too():
    """Every cell measured at 32 KiB (inside L1: the same few ns and many GB/s from any
    node) and at 256 MiB (DRAM). The machine's matrices, and the answer's local/remote
    line read from them, are the 256 MiB numbers: 100 ns local, 150 ns remote.
    (Fails when the smallest of the sizes with the most cells is taken: a 32 KiB matrix
    of 2 ns everywhere, 'remote/local 1.00x'.)"""
    from numaplace.report.answer import machine_line
    rows = []
    for size, local_ns, remote_ns, local_mbs, remote_mbs in ((32 << 10, 2.0, 2.0, 90000.0, 90000.0),
                                                            (256 << 20, 100.0, 150.0, 12000.0, 8000.0)):
        for r in (0, 1):
            for m in (0, 1):
                rows.append({"bench": "memlat", "mode": "chase", "size_bytes": size, "via": "first-touch",
                             "reader_node": r, "memory_node": m, "median": local_ns if r == m else remote_ns})
                rows.append({"bench": "membw", "mode": "serial", "size_bytes": size, "via": "membind",
                             "reader_node": r, "memory_node": m, "median": local_mbs if r == m else remote_mbs})
    matrix = pd.DataFrame(rows)
    m = node_matrices(matrix)
    assert m["latency"]["size"] == m["read bandwidth"]["size"] == 256 << 20
    assert m["latency"]["grid"].to_numpy().tolist() == [[100.0, 150.0], [150.0, 100.0]]
    assert m["read bandwidth"]["grid"].to_numpy().tolist() == [[12.0, 8.0], [8.0, 12.0]]
    lines = machine_lines(SPR.to_dict(), matrix)
    assert "latency (ns, 256 MiB buffers), reader node x memory node:" in lines
    topo = {"nodes": {"0": "0-3", "1": "4-7"}, "distances": [[10, 21], [21, 10]]}
    assert machine_line(matrix, topo) == (
        "machine: 2 NUMA nodes · latency local 100 ns (1 thread, mean of 2 nodes' own cells), remote 150 ns "
        "(remote/local 1.50x, mean of 2 cells) · read bandwidth local 12.0 GB/s (1 thread, mean of 2 nodes' own "
        "cells), remote 8.0 GB/s (remote/local 0.67x, mean of 2 cells) · SLIT remote/local 2.1x")
