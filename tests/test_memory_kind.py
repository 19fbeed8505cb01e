"""The memory kinds membw and memlat (numaplace.kinds.memory): the exact rows, cells,
medians, figure data and summary numbers their tables, figures and summary give for
records shaped as the runner writes them (outputs parsed by membench_output from the
benchmarks' own `result:` lines)."""
from __future__ import annotations

import pandas as pd
import pytest

from numaplace.kinds import kind, membench_output
from numaplace.kinds.memory import COLUMNS, matrix_table, memory_markdown, memory_table, record_rows
from numaplace.record.store import Record

TOPOLOGY = {"nodes": {"0": "0-1", "1": "2-3"}}
LOCAL = {"id": "c0-1_loc_t_nc", "shape": "compact 2", "cpus": "0-1", "threads": 2, "memory": "local",
         "memory_nodes": "", "order": ""}
BIND1 = {"id": "c0-1_mb1_t_nc", "shape": "compact 2, memory on node 1", "cpus": "0-1", "threads": 2,
         "memory": "membind", "memory_nodes": "1", "order": ""}


def result(bench="membw", mode="serial", size=1 << 20, threads=2, thread=0, cpu=0, node=0, rep=0, value=1000.0,
           pages_by_node="0:256", pages=256, alloc_node=0, unit="MB/s"):
    return (f"result: bench={bench} mode={mode} size_bytes={size} threads={threads} thread={thread} reader_cpu={cpu} "
            f"reader_node={node} alloc_cpu=0 alloc_node={alloc_node} memory_node=0 pages={pages} "
            f"pages_by_node={pages_by_node} pages_on_memory_node=1.000000 rep={rep} passes=10 bytes=1 seconds=0.1 "
            f"migrated=0 value={value} unit={unit}")


def output(results, bench="membw"):
    lines = [f"# numaplace {bench} format 1 (key=value fields; see microbench/README.md)",
             "cache: l1d=32768 l2=524288 l3=33554432 llc=33554432 llc_level=3 llc_total=33554432",
             "system: numa_balancing=0 thp=always_[madvise]_never governor=unknown page_size=4096 hugepages=off",
             f"run: bench={bench} mode=serial threads=2 min_time=0.1 reps=2 flush=0", *results,
             f"done: bench={bench} results={len(results)} complete=1 verified=1"]
    return membench_output.parse("\n".join(lines) + "\n")


def rec(results, placement=LOCAL, bench="membw", rep=1, run_id="membw.X.default.p.r1", status="ok", attempt=False):
    r = Record({"bench": bench, "kind": {"family": "memory"}, "rep": rep, "run_id": run_id, "status": status,
                "placement": placement, "topology": TOPOLOGY, "output": output(results, bench)})
    if attempt:
        r["_attempt"] = 1
    return r


def test_a_rows_share_status_and_sample_are_the_benchmarks_own():
    """memory.csv's numbers: the share of pages on the intended node to 6 decimals, drift
    strictly below the threshold, the benchmark's repetition as `sample`, the study's as `rep`."""
    rows = record_rows(rec([result(rep=0, pages_by_node="0:255,1:1"), result(rep=3, pages_by_node="0:198,1:58"),
                            result(rep=1, pages_by_node="0:99,1:1", pages=100)], rep=2))
    assert [r["pages_on_memory_node"] for r in rows] == [0.996094, 0.773438, 0.99]
    assert [r["status"] for r in rows] == ["ok", "drift", "ok"]          # 0.99 is not below 0.99
    assert [(r["rep"], r["sample"]) for r in rows] == [(2, 0), (2, 3), (2, 1)]
    assert {(r["memory_node"], r["via"], r["bench"], r["unit"], r["value"]) for r in rows} == \
        {(0, "first-touch", "membw", "MB/s", 1000.0)}
    assert [r["pages_on_memory_node"] for r in record_rows(rec([result(pages_by_node="0:100", pages=0)]))] == [1.0]
    strict = record_rows(rec([result(pages_by_node="0:99,1:1", pages=100)]), share_min=0.995)
    assert strict[0]["status"] == "drift"
    failed = record_rows(rec([result()], status="failed"))
    assert failed[0]["status"] == "failed"                               # the run's status first


def test_membind_rows_mean_the_bound_node_and_say_membind():
    """A membind cell's buffer is meant to be on its bound node (pages there: ok), a local one
    on thread 0's node; via names the policy."""
    rows = record_rows(rec([result(pages_by_node="1:256")], placement=BIND1))
    assert (rows[0]["memory_node"], rows[0]["via"], rows[0]["status"], rows[0]["pages_on_memory_node"]) == \
        (1, "membind", "ok", 1.0)
    two = dict(BIND1, memory_nodes="0-1")                   # bound to two nodes: no one intended node
    rows = record_rows(rec([result(pages_by_node="1:256")], placement=two))
    assert (rows[0]["memory_node"], rows[0]["pages_on_memory_node"], rows[0]["status"]) == (None, None, "drift")
    preferred = dict(BIND1, memory="preferred")
    assert record_rows(rec([result()], placement=preferred))[0]["via"] == "preferred"
    ordered = dict(LOCAL, cpus="0-3", order="2,0")          # thread 0 on CPU 2: node 1
    assert record_rows(rec([result(pages_by_node="1:256")], placement=ordered))[0]["memory_node"] == 1


def test_memory_csv_is_sorted_by_bench_mode_via_nodes_size_and_repetition():
    """memory.csv's order: bench, mode, via, memory node, reader node, size, threads, rep,
    thread, sample (stable, missing last)."""
    records = [rec([result(size=2 << 20, rep=1, thread=1, cpu=1), result(size=2 << 20, rep=0),
                    result(size=1 << 20, rep=0, cpu=2, node=1)], rep=2),
               rec([result(size=1 << 20, rep=0)], rep=1),
               rec([result(size=1 << 20, rep=0, pages_by_node="1:256")], placement=dict(BIND1, memory="membind"), rep=3),
               rec([result(bench="memlat", mode="chase", size=1 << 20, unit="ns", value=90.0)], bench="memlat", rep=1)]
    t = memory_table(records)
    assert list(t.columns) == COLUMNS
    assert list(zip(t["bench"], t["via"], t["reader_node"], t["size_bytes"], t["rep"], t["thread"], t["sample"])) == [
        ("membw", "first-touch", 0, 1 << 20, 1, 0, 0), ("membw", "first-touch", 0, 2 << 20, 2, 0, 0),
        ("membw", "first-touch", 0, 2 << 20, 2, 1, 1), ("membw", "first-touch", 1, 1 << 20, 2, 0, 0),
        ("membw", "membind", 0, 1 << 20, 3, 0, 0), ("memlat", "first-touch", 0, 1 << 20, 1, 0, 0)]
    # within a via: memory node before reader node
    bind = memory_table([rec([result(cpu=2, node=1, pages_by_node="0:256")], placement=dict(BIND1, memory_nodes="0")),
                         rec([result(cpu=0, node=0, pages_by_node="1:256")], placement=BIND1)])
    assert list(zip(bind["memory_node"], bind["reader_node"])) == [(0, 1), (1, 0)]


def test_a_cell_is_the_median_min_max_and_count_of_its_ok_values():
    """memory_matrix.csv: per (bench, mode, size, via, reader node, memory node) the median
    (not the mean) of its ok values, their min, max and n; drift and failed rows are no values."""
    vals = [1000.0, 1100.0, 5000.0]
    records = [rec([result(value=v, rep=i) for i, v in enumerate(vals)]),
               rec([result(value=10.0, pages_by_node="1:256")]),                  # drift
               rec([result(value=20.0)], status="failed"),
               rec([result(value=300.0, cpu=2, node=1, size=2 << 20)])]
    m = matrix_table(memory_table(records))
    assert list(m.columns) == ["bench", "mode", "size_bytes", "via", "reader_node", "memory_node", "median", "min",
                               "max", "n", "unit"]
    assert m[["size_bytes", "reader_node", "memory_node", "median", "min", "max", "n"]].values.tolist() == \
        [[1 << 20, 0, 0, 1100.0, 1000.0, 5000.0, 3], [2 << 20, 1, 0, 300.0, 300.0, 300.0, 1]]
    assert matrix_table(memory_table([rec([result()], status="failed")])).empty


def test_the_matrix_role_cells_leave_out_the_contention_runs():
    """membw's matrix is its serial cells (its parallel runs measure contention), memlat's
    every cell of memlat."""
    t = pd.DataFrame({"bench": ["membw", "membw", "memlat", "membw"], "mode": ["serial", "parallel", "chase", "serial"],
                      "median": [1.0, 2.0, 3.0, 4.0]})
    assert kind("membw").matrix.cells(t, "membw")["median"].tolist() == [1.0, 4.0]
    assert kind("memlat").matrix.cells(t, "memlat")["median"].tolist() == [3.0]
    bw, lat = kind("membw").matrix, kind("memlat").matrix
    assert (bw.what, bw.unit, bw.scale, bw.higher_is_better, bw.cost) == ("read bandwidth", "GB/s", 1e-3, True,
                                                                          "bandwidth")
    assert (lat.what, lat.unit, lat.scale, lat.higher_is_better, lat.cost) == ("latency", "ns", 1.0, False, "latency")


class Writer:
    """A figure writer that keeps what each figure plotted."""
    cfg = {"width": 8.0}

    def __init__(self):
        self.saved = []

    def save(self, fig, name, stem, title, case):
        import matplotlib
        import matplotlib.pyplot as plt
        ax = fig.axes[0]
        self.saved.append({"name": name, "stem": stem, "title": title, "case": case,
                           "lines": {l.get_label(): (list(l.get_xdata()), list(l.get_ydata())) for l in ax.lines},
                           "bars": [p.get_height() for p in ax.patches],
                           "colors": [matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches], "texts": [t.get_text() for t in ax.texts],
                           "xticks": [t.get_text() for t in ax.get_xticklabels()]})
        plt.close(fig)


def test_contention_plots_the_median_per_thread_and_the_median_total_per_run():
    """memory_contention: per thread count the median of the threads' MB/s and the median
    over runs of their summed MB/s (runs summing 10, 10, 100 MB/s: 10, not the mean 40)."""
    import matplotlib
    matplotlib.use("Agg")
    from numaplace.kinds.memory import contention_figures
    records = []
    for i, (a, b) in enumerate([(4.0, 6.0), (5.0, 5.0), (40.0, 60.0)]):
        records.append(rec([result(mode="parallel", thread=0, value=a, size=64 << 20),
                            result(mode="parallel", thread=1, cpu=1, value=b, size=64 << 20)],
                           run_id=f"membw.X.default.p.r{i + 1}", rep=i + 1))
    records.append(rec([result(mode="parallel", threads=1, value=30.0, size=64 << 20)], run_id="one", rep=1))
    records.append(rec([result(mode="parallel", threads=1, value=1e6, size=64 << 20)], run_id="bad", rep=2,
                       status="failed"))                                   # not ok: not drawn
    w = Writer()
    contention_figures(memory_table(records), w)
    (fig,) = w.saved
    assert (fig["name"], fig["stem"]) == ("memory_contention", "membw.67108864.m0")
    assert fig["title"] == "membw contention — 64 MiB first-touched on node 0"
    assert fig["lines"]["per thread (median)"] == ([1, 2], [30.0, 5.5])
    assert fig["lines"]["sum of threads (median)"] == ([1, 2], [30.0, 10.0])


def test_bandwidth_bars_are_each_cpus_median():
    """memory_bandwidth: one bar per reading CPU, its median MB/s, one figure per (size,
    memory node, via), ok serial rows only."""
    import matplotlib
    matplotlib.use("Agg")
    from numaplace.kinds.memory import bandwidth_figures
    records = [rec([result(cpu=0, value=v, rep=i) for i, v in enumerate((100.0, 200.0, 900.0))]
                   + [result(cpu=2, node=1, thread=1, value=v, rep=i) for i, v in enumerate((50.0, 70.0))]),
               rec([result(cpu=0, value=1.0, pages_by_node="1:256")])]               # drift: not drawn
    w = Writer()
    bandwidth_figures(memory_table(records), w)
    (fig,) = w.saved
    assert fig["stem"] == "membw.1048576.m0.first-touch" and fig["xticks"] == ["0", "2"]
    assert fig["bars"] == [200.0, 60.0]
    assert fig["colors"] == ["#2ca02c", "#4c72b0"]                  # green: the CPU on the memory node
    assert fig["title"] == "membw serial read bandwidth per CPU — 1 MiB on node 0 (first-touch)"


def test_the_heatmap_is_drawn_at_each_benchs_largest_size():
    import matplotlib
    matplotlib.use("Agg")
    from numaplace.kinds.memory import heatmap_figures
    records = [rec([result(size=s, value=v, cpu=c, node=n) for s, v in ((1 << 20, 9.0), (4 << 20, 7.0))
                    for c, n in ((0, 0), (2, 1))])]
    w = Writer()
    heatmap_figures(matrix_table(memory_table(records)), w)
    assert [f["stem"] for f in w.saved] == ["membw.serial.4194304.first-touch"]
    assert w.saved[0]["title"] == "membw serial 4 MiB (first-touch): median MB/s"
    assert w.saved[0]["texts"] == ["7.0", "7.0"]                    # reader node 0, 1 on memory node 0
    records = [rec([result(size=4 << 20, value=v, cpu=c, node=n, rep=i) for c, n in ((0, 0), (2, 1))
                    for i, v in enumerate((1234.4, 1300.0, 99.0))])]
    w = Writer()
    heatmap_figures(matrix_table(memory_table(records)), w)
    assert w.saved[0]["texts"] == ["1234", "1234"]
    w = Writer()
    heatmap_figures(matrix_table(memory_table([rec([result(value=10.0), result(value=9.96, cpu=2, node=1)])])), w)
    assert w.saved[0]["texts"] == ["10", "10.0"]                     # 10 and over: no decimal


def test_the_summary_says_the_lowest_page_share_and_the_drift_count_and_the_largest_cells():
    from numaplace.report.summary import md_table
    records = [rec([result(size=1 << 20, value=500.0, pages_by_node="0:250,1:6"),
                    result(size=4 << 20, value=400.0), result(size=4 << 20, value=420.0, rep=1),
                    result(size=1 << 20, value=600.0, rep=1)]),
               rec([result(size=4 << 20, value=1.0, pages_by_node="0:128,1:128")]),
               rec([result(size=4 << 20, value=2.0)], status="failed")]
    memory = memory_table(records)
    lines = memory_markdown(memory, matrix_table(memory), md_table)
    assert lines[0] == "## Memory micro-benchmarks"
    assert "Pages on the intended memory node: min 50.00% over 6 values; 2 values drift (below the study's fidelity.memory_cell_share_min, 99 % unless set)." in lines[2]
    table = lines[4]
    assert "| membw | serial | 4194304 | first-touch | 0 | 0 | 410 | 2 | MB/s |" in table
    assert "1048576" not in table                       # the largest size of each (bench, mode, via) only
    assert memory_markdown(memory.iloc[0:0], None, md_table) == []


def test_memlat_estimates_and_refusals():
    """memlat: 3 s a thread with --sizes, the whole curve's 25 s without; a size under 2
    lines of the stride is refused, 2 lines are taken. membw measures at once in parallel mode."""
    from numaplace import ConfigError
    lat, bw = kind("memlat"), kind("membw")
    assert lat.run_seconds("X", 2, ["--sizes", "1M"]) == 6.0 and lat.run_seconds("X", 0, []) == 25.0
    assert lat.run_seconds("X", 3, []) == 75.0
    assert lat.floor_s({}) == pytest.approx(5e-4) and lat.floor_s({"--min-loads": 2000}) == pytest.approx(1e-6)
    lat.check_options({"--sizes": [("128", 128)], "--stride": 64}, {"--sizes": 0}, "s.yaml", "e")
    with pytest.raises(ConfigError) as e:
        lat.check_options({"--sizes": [("127", 127)]}, {"--sizes": 0}, "s.yaml", "e")
    assert "e.args[1]: --sizes 127: memlat needs at least 2 lines of 64 B" in str(e.value)
    assert bw.in_parallel({"--mode": "parallel"}) and not bw.in_parallel({"--mode": "serial"})
    assert not bw.in_parallel({}) and bw.default_sizes == 4


def test_without_a_topology_the_binarys_allocating_node_is_meant():
    """A record with no topology (node of CPU unknown): a local cell's buffer is meant for
    the node the benchmark says its allocating thread was on."""
    r = rec([result(alloc_node=1, node=0, pages_by_node="1:250,0:6")])        # read from node 0
    r["topology"] = {}
    (row,) = record_rows(r)
    assert (row["memory_node"], row["pages_on_memory_node"], row["status"]) == (1, 0.976562, "drift")
    r = rec([result(alloc_node=1, pages_by_node="1:256")], placement=BIND1)
    r["topology"] = {}
    assert record_rows(r)[0]["memory_node"] == 1


def test_latency_curves_are_medians_per_size_for_each_reader_and_memory_node():
    """memory_latency: one line per (reader node, memory node) with 2 or more sizes, each
    point the median ns of its size; one figure per via."""
    import matplotlib
    matplotlib.use("Agg")
    from numaplace.kinds.memory import latency_figures
    def lat(size, v, rep=0, cpu=0, node=0):
        return result(bench="memlat", mode="chase", size=size, value=v, rep=rep, cpu=cpu, node=node, unit="ns")
    records = [rec([lat(4096, v, i) for i, v in enumerate((1.0, 2.0, 9.0))] + [lat(1 << 26, 90.0), lat(1 << 26, 110.0, 1)]
                   + [lat(4096, 5.0, cpu=2, node=1)], bench="memlat")]
    w = Writer()
    latency_figures(memory_table(records), w)
    (fig,) = w.saved
    assert (fig["name"], fig["stem"], fig["title"]) == ("memory_latency", "memlat.first-touch",
                                                         "memlat pointer-chase latency vs size (first-touch)")
    assert fig["lines"]["node 0 reads node 0"] == ([4096, 1 << 26], [2.0, 100.0])
    assert "node 1 reads node 0" not in fig["lines"]                     # one size: no curve


def test_a_test_mode_option_is_refused_for_a_measured_run():
    from numaplace import ConfigError
    from numaplace.kinds.microbench import _echo, parse_args
    with pytest.raises(ConfigError) as e:
        parse_args(["--sizes", "1M", "--dump-chain"], ["memlat"], "s.yaml", "experiments[1]")
    assert "experiments[1].args[2]: --dump-chain prints memlat's chain and measures nothing" in str(e.value)
    assert parse_args(["--sizes", "1M,2K", "--hugepages"], ["memlat"], "s", "e") == (
        {"--sizes": [("1M", 1 << 20), ("2K", 2048)], "--hugepages": True}, {"--sizes": 0, "--hugepages": 2})
    assert _echo("x" * 78) == repr("x" * 78) and _echo("x" * 100) == "'" + "x" * 78 + "…"
