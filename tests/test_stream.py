"""numaplace's STREAM-style bandwidth benchmark (microbench/src/stream): the real binary,
built with make in a copy of microbench/src, and its output read by the same parser as
membw's and memlat's (numaplace.membench_output)."""
from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import need_rig

from numaplace.kinds import membench_output

REPO = Path(__file__).resolve().parents[1]
OPS = ["copy", "scale", "add", "triad"]
ARRAYS = {"copy": 2, "scale": 2, "add": 3, "triad": 3}   # arrays each kernel names per element


@pytest.fixture(scope="session")
def stream(microbench):
    """stream(cflags=None) -> the stream binary (conftest's microbench)."""
    return lambda cflags=None: microbench("stream", cflags)


def run(binary, *args, threads=2, status=0):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env["OMP_NUM_THREADS"] = str(threads)
    r = subprocess.run([str(binary), *args], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == status, r.stdout + r.stderr
    return membench_output.parse(r.stdout), r


def test_four_kernels_verified_with_bytes_counted_as_stream(stream):
    out, r = run(stream(), "--sizes", "3M", "--reps", "2", "--min-time", "0.01")
    for line in r.stdout.splitlines()[1:]:          # every field one key=value token
        tag, _, rest = line.partition(": ")
        assert tag in ("cache", "system", "run", "result", "best", "done") and all("=" in t for t in rest.split())
    assert out["bench"] == "stream" and out["format"] == 1 and out["complete"] and out["verified"]
    assert out["run"]["init"] == "parallel" and out["run"]["threads"] == 2 and out["run"]["reps"] == 2
    rows = out["results"]
    # STREAM's order within each repetition
    assert [(r["rep"], r["op"]) for r in rows] == [(k, op) for k in (0, 1) for op in OPS]
    page = out["system"]["page_size"]
    for r in rows:
        n = int(r["elements"])
        assert n == (3 << 20) // 24 and r["size_bytes"] == 3 * 8 * n      # the three arrays
        assert (r["bench"], r["mode"], r["threads"], r["thread"], r["unit"]) == ("stream", "parallel", 2, 0, "MB/s")
        # STREAM's count: 2 x 8 x N for copy and scale, 3 x 8 x N for add and triad, per pass
        assert r["bytes"] == r["passes"] * ARRAYS[r["op"]] * 8 * n
        assert r["value"] > 0 and r["seconds"] >= 0.01
        assert r["value"] == pytest.approx(r["bytes"] / r["seconds"] / 1e6, rel=1e-3)   # MB = 10^6 B
        # pages of all three arrays (b and c start ARRAY_SHIFT past a page: one more page
        # each at most), every one found on some node
        assert 3 * math.ceil(8 * n / page) <= r["pages"] <= 3 * math.ceil(8 * n / page) + 2
        assert r["pages"] == sum(r["pages_by_node"].values())
        assert r["memory_node"] in r["pages_by_node"] and r["reader_cpu"] >= 0
        assert len(r["thread_cpus"].split(",")) == 2


def test_wrong_triad_fails_the_verification(stream):
    """A test-only build whose triad adds 1 to every element (-DSTREAM_BREAK_TRIAD) must
    end with verified=0 and exit status 1 (the define exists for this test only)."""
    out, r = run(stream("-O2 -DSTREAM_BREAK_TRIAD"), "--sizes", "3M", "--reps", "2",
                 "--min-time", "0.01", status=1)
    assert out["complete"] and not out["verified"] and out["done"]["verified"] == 0
    assert len(out["results"]) == 8 and "verification failed" in r.stderr
    # the good build passes the same run (the first test): the failure is the triad's


def test_serial_init_and_a_subset_of_kernels(stream):
    out, _ = run(stream(), "--init", "serial", "--ops", "triad,copy", "--sizes", "1M,2M", "--reps", "1",
                 "--min-time", "0.01")
    assert out["verified"] and out["run"]["init"] == "serial" and out["run"]["ops"] == "copy,triad"
    assert [(r["size_bytes"], r["op"]) for r in out["results"]] == \
        [(s, op) for s in (1048560, 2097144) for op in ("copy", "triad")]   # 24 x N <= the size
    assert all(r["init"] == "serial" and r["alloc_node"] == r["memory_node"] for r in out["results"])


def test_copy_is_a_loop_of_loads_and_stores_not_memcpy(stream):
    """The compiler would turn c[i] = a[i] into a memcpy call (whose large copies use
    non-temporal stores): the kernel stays a loop that stores."""
    if not shutil.which("objdump"):
        need_rig("objdump not installed (binutils, which gfortran brings: bash .ci/setup)")
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(stream())],
                         capture_output=True, text=True, check=True).stdout
    body = dis.split("<stream_copy>:", 1)[1].split("\n\n", 1)[0]
    assert not re.search(r"\b(call|jmp)\b.*<(memcpy|memmove)", body), body
    stores = [l for l in body.splitlines() if "mov" in l and re.search(r",\s*-?\w*\(%", l)]
    assert stores, body


def test_bad_options_fail_with_one_line(stream):
    for args, word in ((["--ops", "copy,load"], "--ops"), (["--init", "local"], "--init"),
                       (["--reps", "500"], "--reps")):
        r = subprocess.run([str(stream()), *args], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and word in r.stderr, r.stderr


# -- its tables, summary and answer from the records (numaplace.kinds.stream) ------------
# Records as the runner writes them for `stream --ops triad --reps 3` on a 2-node machine
# (the same layout as tests/fixtures/membench/loadlat-record.json), their output being what
# stream.c prints, parsed by membench_output as the runner does.

STREAM_TOPOLOGY = {"name": "auto", "description": "read from sysfs", "launcher": "numactl",
                   "nodes": {"0": "0-1", "1": "2-3"}, "memory_mb": {"0": 7936, "1": 7936},
                   "distances": [[10, 21], [21, 10]]}
STREAM_PLACEMENTS = {
    "c0-1_loc_t_nc": {"id": "c0-1_loc_t_nc", "shape": "compact 2", "cpus": "0-1", "threads": 2, "nodes": "0",
                      "layout": "2 on 0", "memory": "local", "memory_nodes": "", "binding": "threads",
                      "launcher": "numactl"},
    "c0-1_mb1_t_nc": {"id": "c0-1_mb1_t_nc", "shape": "compact 2, memory on node 1", "cpus": "0-1", "threads": 2,
                      "nodes": "0", "layout": "2 on 0", "memory": "membind", "memory_nodes": "1",
                      "binding": "threads", "launcher": "numactl"}}


def stream_stdout(node, triad_mbs, n=1 << 25):
    """stream.c's output: triad at one size (3 arrays of n doubles), one result per repetition,
    every page on `node`."""
    size, pages = 3 * 8 * n, 3 * (8 * n // 4096)
    lines = ["# numaplace stream format 1 (key=value fields; see microbench/README.md)",
             "cache: l1d=32768 l2=1048576 l3=33554432 llc=33554432 llc_level=3 llc_total=67108864",
             "system: numa_balancing=0 thp=always_[madvise]_never governor=performance page_size=4096 hugepages=off",
             f"run: bench=stream mode=parallel init=parallel threads=2 ops=triad kernel=scalar scalar=3 "
             f"min_time=0.1 reps={len(triad_mbs)} flush=0"]
    for rep, mbs in enumerate(triad_mbs):
        passes = 4
        lines.append(
            f"result: bench=stream op=triad mode=parallel init=parallel size_bytes={size} elements={n} threads=2 "
            f"thread=0 reader_cpu=0 reader_node=0 alloc_cpu=0 alloc_node=0 memory_node={node} pages={pages} "
            f"pages_by_node={node}:{pages} pages_on_memory_node=1.000000 huge_kb=0 rep={rep} passes={passes} "
            f"bytes={passes * size} seconds={passes * size / mbs / 1e6:.6f} migrated=0 value={mbs:.2f} unit=MB/s "
            f"thread_cpus=0,1 thread_nodes=0,0")
    lines.append(f"done: bench=stream results={len(triad_mbs)} complete=1 verified=1")
    return "\n".join(lines) + "\n"


def write_stream_record(runs, pid, rep, node, triad_mbs, attempt=None):
    """runs/<id>/record.json, or runs/<id>/attempts/<attempt>/record.json (set aside)."""
    run_id = f"stream.X.default.{pid}.r{rep}"
    d = runs / run_id if attempt is None else runs / run_id / "attempts" / str(attempt)
    d.mkdir(parents=True)
    rec = {"record_version": 2, "run_id": run_id, "study": "memory", "bench": "stream", "class": "X",
           "variant": "default", "rep": rep, "placement": STREAM_PLACEMENTS[pid],
           "kind": {"family": "memory", "metric": "value", "unit": "MB/s", "higher_is_better": True},
           "argv": ["numactl", "--physcpubind=0-1", "stream.X.x", "--ops", "triad", "--reps", "3"],
           "env": {"OMP_NUM_THREADS": "2"}, "topology": STREAM_TOPOLOGY, "status": "ok", "reason": None,
           "exit_status": 0, "wall_s": 4.2, "output": membench_output.parse(stream_stdout(node, triad_mbs))}
    (d / "record.json").write_text(json.dumps(rec))


def test_a_set_aside_attempt_is_not_in_streams_medians_or_answer(tmp_path):
    """Each placement's current run: triad 12000-12200 MB/s local, 9000-9200 with memory on
    node 1. An earlier attempt of the local run, set aside (runs/<id>/attempts/1/), read
    2000-2200 MB/s. stream.csv keeps its rows (marked as an attempt), but the summary's
    median and the answer's triad line are of the current runs alone: 12100 MB/s local.
    (Fails when the attempt is counted: local's median drops to 7100 MB/s and the answer
    names the membind placement best.)"""
    from numaplace.kinds import kind
    from numaplace.report.summary import md_table
    from numaplace.tables.aggregate import read_tables, write_tables
    runs = tmp_path / "runs"
    write_stream_record(runs, "c0-1_loc_t_nc", 1, 0, [12000, 12100, 12200])
    write_stream_record(runs, "c0-1_loc_t_nc", 1, 0, [2000, 2100, 2200], attempt=1)
    write_stream_record(runs, "c0-1_mb1_t_nc", 1, 1, [9000, 9100, 9200])
    write_tables(tmp_path, tmp_path / "tables")
    tables = read_tables(tmp_path / "tables")            # as the report reads them
    stream = tables["stream"]
    assert len(stream) == 9 and stream["attempt"].astype(str).tolist().count("True") == 3
    assert set(stream["status"]) == {"ok"}
    k = kind("stream")
    assert k.answer(tables) == ["STREAM triad: 12100 MB/s on compact 2, 9100 MB/s on compact 2, memory on "
                                "node 1 (25% less)"]
    summary = "\n".join(k.summary(tables, md_table))
    assert "| 768 | compact 2 | 12100 |" in summary and "| 768 | compact 2, memory on node 1 | 9100 |" in summary
    assert "7100" not in summary


# -- exact values of its table, medians, summary, answer and figure size -----------------

def stream_output(results, init="parallel", node=0):
    """stream.c's output for results [(op, n elements, rep, MB/s)], every page on `node`."""
    lines = ["# numaplace stream format 1 (key=value fields; see microbench/README.md)",
             f"run: bench=stream mode=parallel init={init} threads=2 ops=copy,scale,add,triad reps=3 flush=0"]
    for op, n, rep, mbs in results:
        lines.append(f"result: bench=stream op={op} mode=parallel init={init} size_bytes={24 * n} elements={n} "
                     f"threads=2 thread=0 reader_cpu=0 reader_node=0 alloc_cpu=0 alloc_node=0 memory_node=0 "
                     f"pages=10 pages_by_node={node}:10 rep={rep} passes=4 bytes=1 seconds=0.1 migrated=0 "
                     f"value={mbs:.2f} unit=MB/s")
    lines.append(f"done: bench=stream results={len(results)} complete=1 verified=1")
    return membench_output.parse("\n".join(lines) + "\n")


def stream_record(pid, results, init="parallel", rep=1, status="ok", node=None):
    from numaplace.record.store import Record
    return Record({"bench": "stream", "rep": rep, "run_id": f"stream.X.default.{pid}.r{rep}", "status": status,
                   "placement": STREAM_PLACEMENTS[pid], "topology": STREAM_TOPOLOGY,
                   "output": stream_output(results, init, int(STREAM_PLACEMENTS[pid]["memory_nodes"] or 0)
                                           if node is None else node)})


N = 1 << 22        # 96 MiB of arrays


def stream_tables(records):
    from numaplace.kinds import kind
    return kind("stream").make_tables(records, {"memory_cell_share_min": 0.99})


def test_stream_csv_rows_are_sorted_and_say_a_serial_init():
    """stream.csv: one row per kernel, size, run and repetition, sorted by kernel, size,
    placement, rep and sample; a --init serial run's placement says so."""
    t = stream_tables([stream_record("c0-1_mb1_t_nc", [("triad", N, 0, 900.0), ("copy", N, 0, 800.0)]),
                       stream_record("c0-1_loc_t_nc", [("triad", N, 1, 1100.0), ("triad", N, 0, 1000.0),
                                                       ("triad", N // 2, 0, 1200.0)], init="serial")])["stream"]
    assert list(zip(t["op"], t["size_bytes"], t["placement_id"], t["sample"], t["value"])) == [
        ("copy", 24 * N, "c0-1_mb1_t_nc", 0, 800.0),
        ("triad", 12 * N, "c0-1_loc_t_nc", 0, 1200.0),
        ("triad", 24 * N, "c0-1_loc_t_nc", 0, 1000.0), ("triad", 24 * N, "c0-1_loc_t_nc", 1, 1100.0),
        ("triad", 24 * N, "c0-1_mb1_t_nc", 0, 900.0)]
    assert t["placement"].tolist()[1:4] == ["compact 2, serial init"] * 3
    assert t["placement"].tolist()[0] == "compact 2, memory on node 1"
    assert t["init"].tolist() == ["parallel", "serial", "serial", "serial", "parallel"]
    assert set(t["status"]) == {"ok"} and set(t["memory_node"]) == {0, 1} and set(t["unit"]) == {"MB/s"}
    r = stream_record("c0-1_loc_t_nc", [("triad", N, 0, 1.0)])
    del r["output"]["run"]                                   # no run: line: its init unknown, not serial
    t = stream_tables([r])["stream"]
    assert t["placement"].tolist() == ["compact 2"] and t["init"].tolist() == [None]


def test_the_summary_gives_each_kernels_median_per_placement_and_size():
    from numaplace.kinds import kind
    from numaplace.report.summary import md_table
    recs = [stream_record("c0-1_loc_t_nc", [(op, N, rep, v + 10 * rep) for rep in range(3)
                                            for op, v in (("copy", 1000.0), ("triad", 3000.0))]),
            stream_record("c0-1_loc_t_nc", [("triad", N, 0, 99999.0)], rep=2, status="failed"),
            stream_record("c0-1_loc_t_nc", [("triad", N, 0, 88888.0)] * 3, rep=3, node=1),     # drift
            stream_record("c0-1_mb1_t_nc", [("copy", N, 0, 500.0), ("copy", N, 1, 700.0), ("copy", N, 2, 5000.0)])]
    lines = kind("stream").summary(stream_tables(recs), md_table)
    assert lines[0] == "## STREAM bandwidth"
    assert lines[4].splitlines() == ["| size (MiB) | placement | copy MB/s | triad MB/s |", "|---|---|---|---|",
                                     "| 96 | compact 2 | 1010 | 3010 |", "| 96 | compact 2, memory on node 1 | 700 |  |"]


def test_the_answer_names_the_best_and_worst_triad_at_the_largest_size():
    """By median triad MB/s at the largest size measured (a smaller size, or copy, faster
    still, is not the answer's); the worst as a share less than the best."""
    from numaplace.kinds import kind
    recs = [stream_record("c0-1_loc_t_nc", [("triad", N, r, v) for r, v in enumerate((8000.0, 7000.0, 20000.0))]
                          + [("triad", N // 4, 0, 99000.0), ("copy", N, 0, 50000.0)]),
            stream_record("c0-1_mb1_t_nc", [("triad", N, r, v) for r, v in enumerate((6000.0, 5000.0, 1.0))]
                          + [("triad", N // 4, 0, 1.0)])]
    assert kind("stream").answer(stream_tables(recs)) == [
        "STREAM triad: 8000 MB/s on compact 2, 5000 MB/s on compact 2, memory on node 1 (38% less)"]
    one = stream_tables(recs[:1])
    assert kind("stream").answer(one) == ["STREAM triad: 8000 MB/s on compact 2"]
    no_triad = stream_tables([stream_record("c0-1_loc_t_nc", [("copy", N, 0, 1.0)])])
    assert kind("stream").answer(no_triad) == []


def test_ops_and_passes_of_a_stream_run():
    """--ops: some of the four kernels, each once, in the order given; one timed region per
    kernel (all four without --ops); every thread runs each kernel at once."""
    from numaplace.kinds import kind
    from numaplace.kinds.stream import _ops
    assert _ops("triad,copy") == ["triad", "copy"] and _ops("add") == ["add"]
    for bad in ("copy,copy", "load", "", "copy,", "Copy"):
        with pytest.raises(ValueError, match="each once"):
            _ops(bad)
    k = kind("stream")
    assert k.passes({}) == 4 and k.passes({"--ops": ["add", "triad"]}) == 2 and k.in_parallel({})


def test_the_figure_is_sized_for_every_placement_and_kernel():
    """figure_size: width + the longest label (', serial init' counted), 1.2 in + 0.45 in per
    pair of bars (placements x kernels / 2)."""
    from types import SimpleNamespace as NS
    from numaplace.kinds import kind
    def run(shape, *args):
        return NS(args=args, placement=NS(shape=shape, id="x"))
    k = kind("stream")
    w, h, why = k.figure_size([run("compact 2"), run("compact 2", "--init", "serial"),
                               run("spread 2", "--ops", "copy,triad")], {"width": 8.0}, 0.1)
    assert (w, h) == (pytest.approx(8.0 + 0.1 * 22), pytest.approx(1.2 + 0.45 * 3 * 4 / 2))
    assert why == "stream's figure: 3 placements x 4 kernels at 0.45 in a pair"
    w, h, why = k.figure_size([run("s", "--ops", "copy,triad")], {"width": 6.0}, 0.5)
    assert (w, h, why) == (6.5, pytest.approx(1.2 + 0.45), "stream's figure: 1 placements x 2 kernels at 0.45 in a pair")
    assert k.figure_size([], {"width": 6.0}, 0.5) is None


def test_the_figure_draws_each_kernels_median_per_placement():
    """stream_bandwidth: per size, a bar per placement and kernel (OPS order), its length the
    median MB/s of the repetitions; placements sorted by label; a missing pair no bar."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from numaplace.kinds import kind
    recs = [stream_record("c0-1_loc_t_nc", [(op, N, r, v * (r + 1)) for r in range(3)
                                            for op, v in (("add", 3000.0), ("copy", 1000.0))], init="serial"),
            stream_record("c0-1_mb1_t_nc", [("add", N, r, v) for r, v in enumerate((500.0, 700.0, 5000.0))])]
    saved = []

    class W:
        cfg = {"width": 8.0}

        def save(self, fig, name, stem, title, case):
            ax = fig.axes[0]
            saved.append((name, stem, title, [t.get_text() for t in ax.get_yticklabels()],
                          [float(p.get_width()) for p in ax.patches], [t.get_text() for t in ax.get_legend().get_texts()]))
            plt.close(fig)
    kind("stream").draw(stream_tables(recs), W())
    ((name, stem, title, labels, widths, legend),) = saved
    assert (name, stem, title) == ("stream_bandwidth", "stream.100663296", "STREAM bandwidth per kernel — 96 MiB of arrays")
    assert labels == ["compact 2, memory on node 1", "compact 2, serial init"] and legend == ["copy", "add"]
    assert widths[0] != widths[0] and widths[1:] == [2000.0, 700.0, 6000.0]
