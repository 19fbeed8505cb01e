"""What numaplace's micro-benchmark kinds share (numaplace.kinds.microbench): the node a
cell's buffer is meant for, the values an experiment's args may take (as mb_options.c
reads them), sizes and byte counts in words, the memory a buffer must fit, and a run's
least duration checked against run.timeout. Exact values, on the Nehalem platform file."""
from __future__ import annotations

from pathlib import Path

import pytest

from numaplace import ConfigError
from numaplace.kinds import kind
from numaplace.kinds import microbench as mb
from numaplace.machine.topology import load_platform
from numaplace.plan.placement import Memory, finish

REPO = Path(__file__).resolve().parents[1]


def topo():
    return load_platform(REPO / "config" / "platforms" / "nehalem.yaml")     # 2 nodes x 4 CPUs x 12 GiB


def node_of(cpu):
    return cpu // 4


def test_the_intended_node_is_the_membind_node_else_thread_0s():
    """A cell's buffer is meant for its one membind node (several: no one node), else for the
    node of thread 0's CPU: the first of `order`, else the lowest CPU; interleave: none."""
    f = mb.intended_memory_node
    assert f({"memory": "membind", "memory_nodes": "1"}, node_of) == 1
    assert f({"memory": "membind", "memory_nodes": "0-1"}, node_of) is None
    assert f({"memory": "local", "cpus": "4-7"}, node_of) == 1
    assert f({"memory": "local", "cpus": "0,4", "order": "4,0"}, node_of) == 1
    assert f({"memory": "local", "cpus": "0,4", "order": "0,4"}, node_of) == 0
    assert f({"memory": "interleave", "memory_nodes": "0-1", "cpus": "0"}, node_of) is None


def test_option_values_are_checked_as_the_binaries_read_them():
    """Whole numbers within their bounds (both ends taken), strides of whole pointers,
    positive finite seconds, CPU lists, one of a set of words."""
    reps = mb.whole(1, 200)
    assert (reps("1"), reps("200")) == (1, 200)
    for bad in ("0", "201", "-1", "1.5", "", "١"):
        with pytest.raises(ValueError, match="expected a whole number from 1 to 200"):
            reps(bad)
    assert mb.stride("8") == 8 and mb.stride("24") == 24
    for bad in ("4", "12", "0"):
        with pytest.raises(ValueError):
            mb.stride(bad)
    assert mb._positive("0.1") == 0.1 and mb._positive("1e-3") == 0.001 and mb._positive(".5") == 0.5
    for bad in ("0", "0.0", "-1", "inf", "1e999", "x", "1,5"):
        with pytest.raises(ValueError, match="above 0"):
            mb._positive(bad)
    assert mb._cpu_ids("0,3,12") == [0, 3, 12] and mb._cpu_ids("1234567") == [1234567]
    for bad in ("0-3", "12345678", ",".join(["1"] * 1025)):
        with pytest.raises(ValueError):
            mb._cpu_ids(bad)
    assert mb.choice("serial", "parallel")("parallel") == "parallel"
    with pytest.raises(ValueError, match="expected serial or parallel"):
        mb.choice("serial", "parallel")("both")


def test_sizes_read_binary_units_and_cache_names():
    """--sizes: K, M, G are 2^10, 2^20, 2^30 bytes (either case), a fraction is cut to whole
    bytes, a trailing comma is allowed, cache names stay names (sized by the machine)."""
    assert mb.parse_sizes("32K,1m,1.5M,2G,100,LLC,") == [
        ("32K", 32768), ("1m", 1048576), ("1.5M", 1572864), ("2G", 2147483648), ("100", 100), ("LLC", None)]
    assert mb.parse_sizes("1K,") == [("1K", 1024)] and mb.parse_sizes("64") == [("64", 64)]
    assert mb.parse_sizes("DRAM,L1,L2") == [("DRAM", None), ("L1", None), ("L2", None)]
    for bad in ("1T", "0", "-1M", "M", "1,,2"):
        with pytest.raises(ValueError, match="is not a size"):
            mb.parse_sizes(bad)
    assert len(mb.parse_sizes(",".join(["1K"] * 256))) == 256
    with pytest.raises(ValueError, match="more than 256 sizes"):
        mb.parse_sizes(",".join(["1K"] * 257))


def test_bytes_are_said_in_binary_units_to_three_digits():
    assert [mb.bytes_text(n) for n in (0, 1023, 1024, 1536, 2**20 - 1, 2**20, 600 << 20, 1200 << 20, 2**30,
                                       12288 << 20, 2**40, 3 * 2**40)] == [
        "0 B", "1023 B", "1 KiB", "1.5 KiB", "1.02e+03 KiB", "1 MiB", "600 MiB", "1.17 GiB", "1 GiB",
        "12 GiB", "1 TiB", "3 TiB"]


def test_the_machines_memory_is_its_nodes_else_meminfo(tmp_path):
    """A buffer must fit the nodes' memory (platform auto: their MemTotal; a platform file:
    its memory_mb); auto without node sizes: /proc/meminfo's MemTotal in KiB."""
    t = topo()
    assert mb.machine_memory(t, False) == (24 << 30, "platform nehalem's memory (24 GiB)")
    assert mb.machine_memory(t, True) == (24 << 30, "this machine's memory (MemTotal 24 GiB)")
    t.memory_mb = {0: 1}
    assert mb.machine_memory(t, True)[0] == 1 << 20
    t.memory_mb = {}
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemFree:  1000 kB\nMemTotal:       16384000 kB\n")
    assert mb.machine_memory(t, True, meminfo=meminfo) == (16384000 * 1024, "this machine's memory (MemTotal 15.6 GiB)")
    assert mb.machine_memory(t, True, meminfo=tmp_path / "none") is None
    assert mb.machine_memory(t, False, meminfo=meminfo) is None


def test_a_runs_least_duration_counts_sizes_readers_repetitions_and_passes():
    """seconds_at_least: per size, readers (serial: every thread in turn; parallel: one
    region for all) x reps (default 5) x passes x the longer of --min-time (default 0.1 s)
    and the buffer read at 100 GB/s per reading thread."""
    bw, st, lat = kind("membw"), kind("stream"), kind("memlat")
    s, how = bw.seconds_at_least({"--sizes": [("1M", 1 << 20), ("DRAM", None)]}, 3)
    assert s == pytest.approx(2 * 3 * 5 * 0.1)
    assert how == "2 sizes x 3 threads reading in turn x 5 regions (--reps) of at least 0.1 s each, a buffer read " \
                  "at a generous 100 GB/s per thread"
    s, how = bw.seconds_at_least({"--mode": "parallel", "--reps": 2, "--min-time": 0.01,
                                  "--sizes": [("80G", 80 << 30)]}, 4)
    assert s == pytest.approx(2 * (80 << 30) / 400e9) and how.startswith("1 size x 4 threads reading at once x 2")
    s, how = bw.seconds_at_least({"--reps": 1, "--min-time": 0.5}, 1)
    assert s == pytest.approx(4 * 0.5) and how == "4 sizes x 1 thread reading x 1 regions (--reps) of at least 0.5 s each"
    s, _ = st.seconds_at_least({"--ops": ["copy", "triad"], "--reps": 3, "--sizes": [("1M", 1 << 20)]}, 2)
    assert s == pytest.approx(2 * 3 * 0.1)                        # two kernels, all threads at once
    s, _ = st.seconds_at_least({"--reps": 1, "--sizes": [("1M", 1 << 20)]}, 2)
    assert s == pytest.approx(4 * 0.1)                            # the four kernels
    s, _ = lat.seconds_at_least({"--min-loads": 10**9, "--sizes": [("1M", 1 << 20)]}, 1)
    assert s == pytest.approx(5 * 0.5)                            # 10^9 loads of 0.5 ns each


def test_the_working_set_is_the_largest_buffer_measured():
    k = kind("membw")
    assert k.working_set_bytes({"results": [{"size_bytes": 4096}, {"size_bytes": 1 << 26}, {"size_bytes": 8192}]}) \
        == 1 << 26
    assert k.working_set_bytes({"results": []}) is None and k.working_set_bytes(None) is None


def test_a_micro_benchmarks_own_check_failing_is_unverified_and_a_cut_run_failed():
    k = kind("memlat")
    assert k.outcome({"complete": True, "verified": False}, 1) == (
        "unverified", "memlat's own check failed (buffer changed or chain broken; exit status 1)")
    assert k.outcome({"complete": False, "verified": False}, -9) == ("failed", "killed by SIGKILL")
    assert k.outcome({"complete": False, "verified": False}, 0) == ("failed", "no memlat pointer-chase latency report "
                                                                              "in stdout")
    assert k.outcome({"complete": True, "verified": True}, 0) == ("ok", None)
    assert k.estimate("X") == (300, 2048) and kind("membw").run_seconds("X", 3, []) == 6.0
    assert kind("membw").run_seconds("X", 0, []) == 2.0


CONFIG = {"platform": "nehalem", "run": {"timeout": 60}}


def check(args, placements, benches=("membw",), config=CONFIG):
    mb.check_args(list(args), list(benches), placements, topo(), config, "s.yaml", "experiments[0]")


def test_a_buffer_bound_to_a_node_must_fit_that_node():
    """numactl --membind fails on a full node: a buffer larger than the bound node's 12 GiB
    is refused, one of exactly 12 GiB is taken; the machine's 24 GiB bound every buffer."""
    bound = [finish((0,), Memory("membind", (1,)), "threads", "numactl", "cpus 0", topo(), pid="p1")]
    check(["--sizes", "12G", "--reps", "1", "--min-time", "0.01"], bound)
    with pytest.raises(ConfigError) as e:
        check(["--sizes", "1M,13G", "--reps", "1", "--min-time", "0.01"], bound)
    assert str(e.value).endswith("experiments[0].args[1]: --sizes 13G: a buffer of 13 GiB is more than the 12 GiB of "
                                 "node 1 of platform nehalem, which placement p1 binds it to (numactl --membind "
                                 "fails instead of spilling)")
    preferred = [finish((0,), Memory("preferred", (1,)), "threads", "numactl", "cpus 0", topo())]
    check(["--sizes", "13G", "--reps", "1", "--min-time", "0.01"], preferred)    # preferred spills: taken
    local = [finish((0,), Memory("local"), "threads", "numactl", "cpus 0", topo())]
    check(["--sizes", "24G", "--reps", "1", "--min-time", "0.01"], local)
    with pytest.raises(ConfigError) as e:
        check(["--sizes", "25G", "--reps", "1", "--min-time", "0.01"], local)
    assert "--sizes 25G: a buffer of 25 GiB is more than platform nehalem's memory (24 GiB)" in str(e.value)


def test_cpus_must_list_a_cpu_for_every_thread_and_a_run_must_end_before_the_timeout():
    two = [finish((0, 1), Memory("local"), "threads", "numactl", "cpus 0,1", topo())]
    check(["--cpus", "0,1", "--reps", "1"], two)
    with pytest.raises(ConfigError) as e:
        check(["--cpus", "0", "--reps", "1"], two)
    assert "experiments[0].args[1]: --cpus lists 1 CPU for placements of up to 2 threads" in str(e.value)
    three = [finish((0,), Memory("local"), "threads", "numactl", "cpus 0", topo()),
             finish((0, 1, 2), Memory("local"), "threads", "numactl", "cpus 0-2", topo())]
    with pytest.raises(ConfigError) as e:                     # the largest placement counts
        check(["--cpus", "0,1", "--reps", "1"], three)
    assert "--cpus lists 2 CPUs for placements of up to 3 threads (thread t is pinned to its t-th CPU)" in str(e.value)
    # 4 sizes x 2 threads in turn x 75 regions of 0.1 s = 60 s: at the timeout, not past it
    check(["--reps", "75"], two)
    with pytest.raises(ConfigError) as e:
        check(["--reps", "76"], two)
    assert "experiments[0].args[1]: a membw run would last at least 60.8 s (4 sizes x 2 threads reading in turn x " \
           "76 regions (--reps) of at least 0.1 s each), past run.timeout 60 s" in str(e.value)


def test_args_are_refused_naming_the_entry_and_the_cure():
    one = [finish((0,), Memory("local"), "threads", "numactl", "cpus 0", topo())]
    cases = [(["--mode=serial"], "experiments[0].args[0]: '--mode=serial' is not an option of membw (write --mode "
                                 "and its value as two entries)"),
             (["--bogus=1"], "experiments[0].args[0]: '--bogus=1' is not an option of membw; the options are "
                               "--cpus, --flush, --hugepages, --min-time, --mode, --reps, --share, --sizes"),
             (["--sizes", "1M", "--sizes", "2M"], "experiments[0].args[2]: --sizes is given twice (args[0] and args[2])"),
             (["--reps", "2", "--reps", "3"], "experiments[0].args[2]: --reps is given twice (args[0] and args[2])"),
             (["--reps"], "experiments[0].args[0]: --reps needs a value after it"),
             (["--reps", "0"], "experiments[0].args[1]: --reps '0': expected a whole number from 1 to 2147483647"),
             (["--stride", "64"], "experiments[0].args[0]: --stride is an option of memlat and loadlat only; membw "
                                  "would stop with a usage text")]
    for args, says in cases:
        with pytest.raises(ConfigError) as e:
            check(args, one)
        assert says in str(e.value), str(e.value)
    with pytest.raises(ConfigError) as e:
        check(["--reps", "201"], one, benches=("membw", "stream"))
    assert "--reps '201': expected a whole number from 1 to 200 (stream's own limit)" in str(e.value)
