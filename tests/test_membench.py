"""numaplace's memory micro-benchmarks (microbench/src: membw, memlat): the real binaries,
built through their make interface, and the parser of what they print.

The chase construction is tested through memlat's own --dump-chain output (the chain as
it sits in memory after the allocating thread wrote it), not through a Python port."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import need_rig

from numaplace.kinds import membench_output

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "membench"


def run(binary, *args, threads=1):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env["OMP_NUM_THREADS"] = str(threads)
    r = subprocess.run([str(binary), *args], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return membench_output.parse(r.stdout)


def sysfs_cache(cpu, level, kinds=("Data", "Unified")):
    base = Path(f"/sys/devices/system/cpu/cpu{cpu}/cache")
    for d in sorted(base.glob("index*")):
        if int((d / "level").read_text()) == level and (d / "type").read_text().strip() in kinds:
            s = (d / "size").read_text().strip()
            return int(s[:-1]) * {"K": 1024, "M": 1 << 20}[s[-1]] if s[-1] in "KM" else int(s)
    return None


# -- chase construction: one cycle, every line once ------------------------------------

def assert_one_cycle(nxt):
    n = len(nxt)
    assert sorted(nxt) == list(range(n)), "next[] is not a permutation of the lines"
    seen, i = set(), 0
    for _ in range(n):
        assert i not in seen, f"cycle closes after {len(seen)} of {n} lines"
        seen.add(i)
        i = nxt[i]
    assert i == 0 and len(seen) == n


@pytest.mark.parametrize("stride", [64, 128])
def test_chase_is_one_random_cycle_over_every_line(microbench, stride):
    sizes = ["2K", "4K", "100K", "1M"]            # 100K: not a power of two
    out = run(microbench("memlat"), "--dump-chain", "--stride", str(stride), "--sizes", ",".join(sizes))
    assert out["complete"] and out["verified"] and len(out["chains"]) == len(sizes)
    for chain in out["chains"]:
        nxt = chain["next"]
        assert chain["lines"] == len(nxt) == chain["size_bytes"] // stride and chain["stride"] == stride
        assert_one_cycle(nxt)
        # no prefetchable pattern: a random cycle has ~2 steps to a neighbouring line, whatever n
        forward = sum(1 for i, j in enumerate(nxt) if j in (i + 1, i - 1))
        assert forward <= 10, f"{forward} of {len(nxt)} steps go to a neighbour"


def test_chase_seed_changes_the_order(microbench):
    a = run(microbench("memlat"), "--dump-chain", "--sizes", "64K", "--seed", "1")["chains"][0]
    b = run(microbench("memlat"), "--dump-chain", "--sizes", "64K", "--seed", "2")["chains"][0]
    assert a["seed"] == 1 and b["seed"] == 2 and a["next"] != b["next"]
    assert_one_cycle(a["next"]) or assert_one_cycle(b["next"])


# -- the binaries' measurements ---------------------------------------------------------

def test_membw_kernel_keeps_its_loads(microbench):
    """The compiler kept 8 loads per unrolled step (volatile), not one or none."""
    if not shutil.which("objdump"):
        need_rig("objdump not installed (binutils, which gfortran brings: bash .ci/setup)")
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(microbench("membw"))],
                         capture_output=True, text=True, check=True).stdout
    body = dis.split("<membw_load_kernel>:", 1)[1].split("\n\n", 1)[0]
    loads = [l for l in body.splitlines() if "mov" in l and "(%" in l.split(",")[0]]
    assert len(loads) >= 9, body                  # 8 unrolled + the remainder loop


def test_membw_serial_each_thread_reads_alone_long_enough(microbench):
    out = run(microbench("membw"), "--sizes", "64K,8M", "--reps", "2", "--min-time", "0.05", threads=2)
    assert out["complete"] and out["verified"] and out["run"]["mode"] == "serial"
    rows = out["results"]
    assert [(r["size_bytes"], r["thread"], r["rep"]) for r in rows] == \
        [(s, t, k) for s in (65536, 8 << 20) for t in (0, 1) for k in (0, 1)]
    for r in rows:
        assert r["seconds"] >= 0.05 and r["bytes"] == r["passes"] * r["size_bytes"]
        assert abs(r["value"] - r["bytes"] / r["seconds"] / 1e6) <= 0.01 * r["value"]   # MB = 10^6 B
        assert r["alloc_cpu"] >= 0 and r["reader_node"] >= 0 and r["pages_on_memory_node"] == 1.0


def test_membw_parallel_reads_slices_at_once(microbench):
    out = run(microbench("membw"), "--mode", "parallel", "--sizes", "8M", "--reps", "1", "--min-time", "0.05",
              threads=2)
    rows = out["results"]
    assert out["verified"] and [r["thread"] for r in rows] == [0, 1]
    assert all(r["bytes"] == r["passes"] * (4 << 20) for r in rows)       # each its half


def test_default_sizes_come_from_sysfs(microbench):
    l1d, l2 = sysfs_cache(0, 1, ("Data",)), sysfs_cache(0, 2)
    if not l1d or not l2:
        pytest.skip("no sysfs cache information here")
    out = run(microbench("memlat"), "--dump-chain", "--cpus", "0")
    c = out["cache"]
    assert (c["l1d"], c["l2"]) == (l1d, l2)
    sizes = [ch["size_bytes"] for ch in out["chains"]]
    assert sizes[0] < l1d and sizes[-1] >= 4 * c["llc_total"] and sizes == sorted(sizes)


def test_memlat_reports_ns_per_load_and_where(microbench):
    out = run(microbench("memlat"), "--sizes", "16K,32M", "--reps", "2", "--min-time", "0.05", "--hugepages",
              threads=2)
    assert out["verified"] and out["system"]["hugepages"] == "madvise"
    rows = out["results"]
    assert len(rows) == 8 and {r["thread"] for r in rows} == {0, 1}
    for r in rows:
        assert r["loads"] >= 1_000_000 and r["seconds"] >= 0.05
        assert r["value"] == pytest.approx(r["seconds"] / r["loads"] * 1e9, rel=1e-3)
    small = [r["value"] for r in rows if r["size_bytes"] == 16384]
    big = [r["value"] for r in rows if r["size_bytes"] == 32 << 20]
    assert min(big) > 2 * max(small)


def test_huge_pages_backing_is_reported_as_the_kernel_gave_it(microbench):
    """huge_kb is AnonHugePages of the buffer: with --hugepages under THP madvise or always
    the 32 MiB buffer is (mostly) 2 MiB pages; without it, under madvise, none."""
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    mode = thp.read_text().split("[")[1].split("]")[0] if thp.exists() else "absent"
    if mode not in ("madvise", "always"):
        pytest.skip(f"transparent huge pages are {mode} here: nothing to back the buffer with")
    for flag, want in ((["--hugepages"], "huge"), ([], "none" if mode == "madvise" else None)):
        out = run(microbench("membw"), "--sizes", "32M", "--reps", "1", "--min-time", "0.01", *flag)
        huge = {r["huge_kb"] for r in out["results"]}
        if want == "huge":
            assert min(huge) >= 16 * 1024, huge          # at least half of 32 MiB in 2 MiB pages
        elif want == "none":
            assert huge == {0}, huge


def test_bad_options_fail_with_one_line(microbench):
    r = subprocess.run([str(microbench("membw")), "--sizes", "12Q"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--sizes" in r.stderr


# -- the parser, on real output ---------------------------------------------------------

def test_parse_real_serial_output():
    out = membench_output.parse((FIXTURES / "membw-serial-2threads.txt").read_text())
    assert out["bench"] == "membw" and out["format"] == 1 and out["complete"] and out["verified"]
    assert len(out["results"]) == 8 and out["cache"]["llc_level"] == 3
    r = out["results"][-1]
    assert (r["thread"], r["reader_cpu"], r["size_bytes"], r["unit"]) == (1, 1, 67108864, "MB/s")
    assert isinstance(r["value"], float) and r["pages_on_memory_node"] == 1.0


def test_parse_real_memlat_output():
    out = membench_output.parse((FIXTURES / "memlat-2threads-hugepages.txt").read_text())
    assert out["complete"] and out["system"]["hugepages"] == "madvise"
    assert {r["unit"] for r in out["results"]} == {"ns"} and len(out["results"]) == 12


def test_parse_killed_run_keeps_values_but_is_incomplete():
    out = membench_output.parse((FIXTURES / "memlat-killed.txt").read_text())
    assert out["results"] and not out["complete"] and not out["verified"]


def test_parse_done_line_must_count_the_results():
    text = (FIXTURES / "membw-serial-2threads.txt").read_text()
    lines = [l for l in text.splitlines() if not (l.startswith("result:") and "rep=0" in l)]
    assert not membench_output.parse("\n".join(lines))["complete"]
    bad = text.replace("verified=1", "verified=0")
    assert membench_output.parse(bad)["complete"] and not membench_output.parse(bad)["verified"]


def test_parse_pages_by_node():
    out = membench_output.parse((FIXTURES / "membw-serial-2threads.txt").read_text())
    r = out["results"][-1]
    assert r["pages_by_node"] == {0: 16384} and membench_output.share_on(r, 0) == 1.0
    assert membench_output.share_on(r, 1) == 0.0
    line = "result: size_bytes=8 value=1.0 pages=4 pages_by_node=0:1,3:3"
    assert membench_output.share_on(membench_output.parse(line)["results"][0], 3) == 0.75


def test_parse_keeps_only_whole_result_lines_and_types_every_field():
    """A result line needs its value and size (a line torn by a kill is no value); numbers
    are typed (ints, floats, node maps, chains), the header gives bench and format."""
    text = "\n".join([
        "# numaplace memlat format 2 (key=value fields)",
        "run: bench=memlat threads=3 min_time=0.25 kernel=chase",
        "result: size_bytes=4096 value=7.5 pages=2 pages_by_node=0:1,2:1 load_pages_by_node=none "
        "load_mbps=12.5 delay=-1 thread_nodes=0,-1 unit=ns",
        "result: value=9.0 unit=ns",                    # no size: not a value
        "result: size_bytes=8192 unit=ns",              # no value: not a value
        "result: size_bytes=8192 value=1.x unit=ns",    # torn: not a value
        "chain: size_bytes=256 lines=4 next=2,3,1,0",
        "chain: size_bytes=128 lines=2 next=1,0,",
        "noise: size_bytes=1 value=2",
        "done: bench=memlat results=1 complete=1 verified=1"])
    out = membench_output.parse(text)
    assert (out["bench"], out["format"]) == ("memlat", 2)
    assert out["run"] == {"bench": "memlat", "threads": 3, "min_time": 0.25, "kernel": "chase"}
    (r,) = out["results"]
    assert r == {"size_bytes": 4096, "value": 7.5, "pages": 2, "pages_by_node": {0: 1, 2: 1}, "load_pages_by_node": {},
                 "load_mbps": 12.5, "delay": -1, "thread_nodes": "0,-1", "unit": "ns"}
    assert out["chains"] == [{"size_bytes": 256, "lines": 4, "next": [2, 3, 1, 0]},
                             {"size_bytes": 128, "lines": 2, "next": [1, 0]}]
    assert out["complete"] and out["verified"]
    assert membench_output.parse("# numaplace membw format x")["format"] is None


def test_parse_verified_needs_a_complete_run():
    """A done line claiming verified=1 with a result missing is neither complete nor verified;
    no done line at all: neither; complete=0: neither."""
    head = "result: size_bytes=8 value=1.0\nresult: size_bytes=16 value=2.0\n"
    for done in ("done: results=3 complete=1 verified=1", "done: results=2 complete=0 verified=1", ""):
        out = membench_output.parse(head + done)
        assert (out["complete"], out["verified"]) == (False, False), done
    assert membench_output.parse(head + "done: results=2 complete=1 verified=1")["verified"] is True


def test_share_on_counts_the_pages_the_benchmark_counted():
    """The share of the buffer on a node: pages there over `pages` (else the map's sum);
    nothing counted is a share of 0, never 100 %; JSON's string node keys read alike."""
    share = membench_output.share_on
    assert share({"pages": 10, "pages_by_node": {0: 4, 1: 4}}, 0) == 0.4        # 2 pages not found
    assert share({"pages_by_node": {"0": 1, "1": 3}}, "1") == 0.75
    assert share({"pages": 0, "pages_by_node": {}}, 0) == 0.0
    assert share({}, 0) == 0.0
