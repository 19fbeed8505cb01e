"""numaplace's STREAM-style bandwidth benchmark (microbench/src/stream): the real binary,
built with make in a copy of microbench/src, and its output read by the same parser as
membw's and memlat's (numaplace.membench_output)."""
from __future__ import annotations

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
