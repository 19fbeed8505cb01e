"""memory.csv rows from a memory run's record: the intended memory node of a cell, the
share of the buffer's pages there (from the benchmark's own move_pages), drift below 99 %."""
from pathlib import Path

from numaplace.kinds import membench_output
from numaplace.record.store import Record
from numaplace.kinds.memory import COLUMNS, matrix_table, record_rows
from numaplace.plan.placement import Memory, finish
from numaplace.machine.topology import load_platform

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "membench"


def record(placement, fixture="membw-serial-2threads.txt", status="ok"):
    return Record({"bench": "membw", "kind": {"family": "memory"}, "rep": 1, "run_id": "r", "status": status,
            "placement": placement.to_dict(), "topology": {"nodes": {"0": "0-1", "1": "2-3"}},
            "output": membench_output.parse((FIXTURES / fixture).read_text())})


def topo():
    return load_platform(REPO / "config" / "platforms" / "nehalem.yaml")


def test_first_touch_cell_pages_on_thread0s_node():
    p = finish((0, 1), Memory("local"), "threads", "numactl", "cpus 0,1", topo())
    rows = record_rows(record(p))
    assert rows and list(rows[0])[:12] == COLUMNS[:12]
    assert {r["memory_node"] for r in rows} == {0}
    assert all(r["pages_on_memory_node"] == 1.0 and r["status"] == "ok" for r in rows)


def test_pages_elsewhere_are_drift():
    p = finish((0,), Memory("membind", (1,)), "threads", "numactl", "cpus 0", topo())
    rows = record_rows(record(p))
    assert {r["memory_node"] for r in rows} == {1}
    assert all(r["pages_on_memory_node"] == 0.0 and r["status"] == "drift" for r in rows)
    assert matrix_table(__import__("pandas").DataFrame(rows, columns=COLUMNS)).empty


def test_thread_order_decides_the_memory_node():
    """Thread 0 on CPU 2 (node 1 in this record's topology) first-touched: node 1 is meant."""
    p = finish((2, 0), Memory("local"), "threads", "numactl", "order 2,0", topo())
    assert p.order == (2, 0)
    rows = record_rows(record(p))
    assert {r["memory_node"] for r in rows} == {1} and {r["status"] for r in rows} == {"drift"}


def test_only_membw_and_memlat_records_reach_the_memory_tables(tmp_path):
    """The tables stage hands each kind's own tables the records of its group only: an NPB
    record (or a STREAM one) never becomes a row of memory.csv."""
    from numaplace.kinds import groups
    from numaplace.tables import aggregate
    owners = {tuple(names) for _, names in groups("make_tables")}
    assert ("membw", "memlat") in owners
    p = finish((0,), Memory("local"), "process", "numactl", "cpus 0", topo())
    seen = []
    for bench in ("membw", "cg"):
        rec = record(p)
        rec["bench"] = bench
        seen.append(rec)
    import unittest.mock as mock
    with mock.patch.object(aggregate, "iter_records", return_value=seen):
        tables = aggregate.build_tables(tmp_path)
    assert set(tables["memory"]["bench"]) == {"membw"} and len(tables["memory"]) == len(record_rows(seen[0]))


def test_contention_runs_are_no_cells_of_the_node_by_node_matrix():
    """membw parallel with several threads measures contention, not one reader on one node:
    its rows neither change the matrix's medians nor its n. A one-reader parallel row is a
    cell of its own (n 1)."""
    import pandas as pd
    p = finish((0, 1), Memory("local"), "threads", "numactl", "cpus 0,1", topo())
    serial = record_rows(record(p))
    contention = record_rows(record(p, "membw-parallel-2threads.txt"))
    assert contention and all(r["mode"] == "parallel" and r["threads"] == 2 and r["status"] == "ok"
                              for r in contention)
    one_reader = {**contention[0], "threads": 1, "value": 1000.0}
    alone = matrix_table(pd.DataFrame(serial, columns=COLUMNS))
    both = matrix_table(pd.DataFrame(serial + contention + [one_reader], columns=COLUMNS))
    assert not alone.empty
    pd.testing.assert_frame_equal(both[both["mode"] == "serial"].reset_index(drop=True), alone)
    (cell,) = both[both["mode"] == "parallel"].itertuples()
    assert (cell.median, cell.n) == (1000.0, 1), both
