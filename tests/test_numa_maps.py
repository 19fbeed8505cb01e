"""numa_maps parsing: every policy form the kernel prints, mapping kinds, page sizes."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap

import pytest

from numaplace.run import capture
from numaplace.run.numa_maps import parse, parse_line, parse_policy, summarize

KiB, MiB, GiB = 1024, 2**20, 2**30


@pytest.mark.parametrize("line, policy, flags, nodes", [
    ("7f0c4a000000 default anon=16 dirty=16 N0=16 kernelpagesize_kB=4", "default", None, None),
    ("7f0c4a000000 local anon=16 dirty=16 N1=16 kernelpagesize_kB=4", "local", None, None),
    ("7f0c4a000000 bind:0-1 anon=16 dirty=16 N0=8 N1=8 kernelpagesize_kB=4", "bind", None, "0-1"),
    ("7f0c4a000000 interleave:0,2 anon=16 dirty=16 N0=8 N2=8 kernelpagesize_kB=4",
     "interleave", None, "0,2"),
    ("7f0c4a000000 prefer:1 anon=16 dirty=16 N1=16 kernelpagesize_kB=4", "prefer", None, "1"),
    ("7f0c4a000000 weighted interleave:0-3 anon=16 dirty=16 N0=4 N1=4 N2=4 N3=4 kernelpagesize_kB=4",
     "weighted interleave", None, "0-3"),
    ("7f0c4a000000 prefer (many):0-1 anon=16 dirty=16 N0=10 N1=6 kernelpagesize_kB=4",
     "prefer (many)", None, "0-1"),
    ("7f0c4a000000 bind=static:1 anon=16 dirty=16 N1=16 kernelpagesize_kB=4", "bind", "static", "1"),
    ("7f0c4a000000 interleave=relative:0-3 anon=16 dirty=16 N0=4 N1=4 N2=4 N3=4 kernelpagesize_kB=4",
     "interleave", "relative", "0-3"),
    ("7f0c4a000000 bind=balancing:0-1 anon=16 dirty=16 N0=16 kernelpagesize_kB=4",
     "bind", "balancing", "0-1"),
    ("7f0c4a000000 bind=static|balancing:0-1 anon=16 dirty=16 N1=16 kernelpagesize_kB=4",
     "bind", "static|balancing", "0-1"),
    ("7f0c4a000000 prefer (many)=static:2-3 anon=16 dirty=16 N2=16 kernelpagesize_kB=4",
     "prefer (many)", "static", "2-3"),
    ("7f0c4a000000 weighted interleave=relative:0,2 anon=16 dirty=16 N0=8 N2=8 kernelpagesize_kB=4",
     "weighted interleave", "relative", "0,2"),
])
def test_policy_forms(line, policy, flags, nodes):
    m = parse_line(line)
    assert (m.policy, m.policy_flags, m.policy_nodes) == (policy, flags, nodes)
    assert m.kind == "anon" and m.anon == 16 and m.n_pages == 16 and m.page_kb == 4
    assert sum(m.bytes_per_node.values()) == 16 * 4 * KiB
    assert m.policy_text == line.split(" anon=")[0].split(" ", 1)[1]      # round trip
    assert m.is_data


def test_policy_without_pages_or_keywords():
    # a mapping without resident pages stops after its policy (no kernelpagesize_kB)
    for text, pol in [("7ffd1c9e0000 default", "default"), ("7ffd1c9e0000 prefer (many):1-2", "prefer (many)"),
                      ("7ffd1c9e0000 weighted interleave:0-3", "weighted interleave")]:
        m = parse_line(text)
        assert m.policy == pol and m.pages == {} and m.bytes_per_node == {} and m.kind == "anon"


def test_unknown_policy_is_kept_not_rejected():
    m = parse_line("7f0c4a000000 fancy=new:0-1 anon=2 N0=2 kernelpagesize_kB=4")
    assert (m.policy, m.policy_flags, m.policy_nodes) == ("fancy", "new", "0-1")
    assert parse_policy("something odd") == ("something odd", None, None)


@pytest.mark.parametrize("line", ["", "   ", "\n"])
def test_blank_lines(line):
    assert parse_line(line) is None


@pytest.mark.parametrize("line", ["not-an-address default N0=1", "7f0c4a000000", "7f0c4a000000 N0=1",
                                  " 7f0c4a000000 default"])
def test_malformed_lines(line):
    with pytest.raises(ValueError):
        parse_line(line)


def test_kinds_and_counters():
    heap = parse_line("5581e3a0e000 default heap anon=33 dirty=33 active=20 N0=33 kernelpagesize_kB=4")
    assert heap.kind == "heap" and heap.is_data and heap.counters["active"] == 20
    stack = parse_line("7ffd1c9c0000 default stack anon=9 dirty=9 N0=9 kernelpagesize_kB=4")
    assert stack.kind == "stack" and stack.is_data
    old_stack = parse_line("7f1b2b7fe000 default stack:4242 anon=3 dirty=3 N1=3 kernelpagesize_kB=4")
    assert old_stack.kind == "stack" and old_stack.bytes_per_node == {1: 3 * 4 * KiB}
    lib = parse_line("7f1b2c000000 default file=/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0 mapped=40 "
                     "mapmax=12 swapcache=1 writeback=2 N0=38 N3=2 kernelpagesize_kB=4")
    assert lib.kind == "file" and lib.path.endswith("libgomp.so.1.0.0") and not lib.is_data
    assert lib.counters == {"mapped": 40, "mapmax": 12, "swapcache": 1, "writeback": 2}
    assert lib.bytes_per_node == {0: 38 * 4 * KiB, 3: 2 * 4 * KiB}


def test_file_paths_are_unescaped():
    m = parse_line(r"7f00 default file=/tmp/my\040data\075x.bin\040(deleted) mapped=1 N0=1 kernelpagesize_kB=4")
    assert m.path == "/tmp/my data=x.bin (deleted)"
    assert m.kind == "file" and m.n_pages == 1


def test_private_file_pages_count_as_data_only_when_all_are_copies():
    # the binary's .data: every resident page copied on write → the process's data
    cow = parse_line("55627950d000 local file=/x/mg.W.x anon=3 dirty=3 active=0 N1=3 kernelpagesize_kB=4")
    assert cow.is_data
    # part page cache, part copies: the split per node is unknown → not counted as data
    mixed = parse_line("55627950d000 local file=/x/mg.W.x anon=1 dirty=1 mapped=3 N1=3 kernelpagesize_kB=4")
    assert not mixed.is_data
    # shared anonymous memory, SysV shm and memfd are the process's data too
    for path in (r"/dev/zero\040(deleted)", "/SYSV00000000", r"/memfd:pool\040(deleted)"):
        m = parse_line(f"7f00 interleave:0-1 file={path} dirty=4 N0=2 N1=2 kernelpagesize_kB=4")
        assert m.kind == "file" and m.is_data


def test_transparent_huge_pages_are_counted_in_base_pages():
    # THP: the kernel counts a 2 MiB page as 512 pages of 4 kB in an anonymous mapping
    m = parse_line("7f5a00000000 default anon=1024 dirty=1024 N2=1024 kernelpagesize_kB=4")
    assert m.bytes_per_node == {2: 4 * MiB}


def test_hugetlb_2m_pages():
    m = parse_line(r"7f3a00000000 default file=/anon_hugepage\040(deleted) huge anon=4 dirty=4 "
                   "N1=3 N2=1 kernelpagesize_kB=2048")
    assert m.kind == "huge" and m.path == "/anon_hugepage (deleted)" and m.is_data
    assert m.page_kb == 2048
    assert m.bytes_per_node == {1: 3 * 2 * MiB, 2: 2 * MiB}


def test_hugetlb_1g_pages():
    m = parse_line(r"7f4000000000 bind:0 file=/dev/hugepages/seg\040(deleted) huge dirty=2 N0=2 "
                   "kernelpagesize_kB=1048576")
    assert m.kind == "huge" and m.policy == "bind" and m.policy_nodes == "0" and m.is_data
    assert m.bytes_per_node == {0: 2 * GiB}


PROCESS = textwrap.dedent(r"""
    55d0e4c00000 bind:2 file=/work/bin/cg.W.x mapped=3 N0=3 kernelpagesize_kB=4
    55d0e4c03000 bind:2 file=/work/bin/cg.W.x mapped=20 mapmax=2 N0=20 kernelpagesize_kB=4
    55d0e4c20000 bind:2 file=/work/bin/cg.W.x anon=2 dirty=2 N2=2 kernelpagesize_kB=4
    55d0e4c22000 bind:2
    55d0e5000000 bind:2 heap anon=100 dirty=100 N2=100 kernelpagesize_kB=4
    7f1000000000 bind:2 anon=2560 dirty=2560 N2=2560 kernelpagesize_kB=4
    7f2000000000 bind:2 file=/anon_hugepage\040(deleted) huge anon=3 dirty=3 N2=2 N3=1 kernelpagesize_kB=2048
    7f3000000000 bind:2 file=/usr/lib/x86_64-linux-gnu/libc.so.6 mapped=300 mapmax=40 N0=300 kernelpagesize_kB=4
    7f3000200000 bind:2 file=/usr/lib/x86_64-linux-gnu/libc.so.6 anon=4 dirty=4 N2=4 kernelpagesize_kB=4
    7f4000000000 bind:2 anon=8 dirty=8 N3=8 kernelpagesize_kB=4
    7ffd00000000 bind:2 stack anon=6 dirty=6 N2=6 kernelpagesize_kB=4
    7ffd00100000 bind:2
""")


def test_summary_bytes_per_node():
    maps = parse(PROCESS)
    assert len(maps) == 12
    s = summarize(maps)
    page = 4 * KiB
    data2 = (2 + 100 + 2560 + 4 + 6) * page + 2 * 2 * MiB
    data3 = 8 * page + 1 * 2 * MiB
    assert s["data_bytes"] == {2: data2, 3: data3}
    assert s["total_bytes"] == {0: (3 + 20 + 300) * page, 2: data2, 3: data3}
    assert s["policies"] == {"bind:2": data2 + data3}


def test_summary_groups_policies_as_printed():
    s = summarize(parse("1000 bind=static:1 anon=2 N1=2 kernelpagesize_kB=4\n"
                        "2000 local anon=1 N0=1 kernelpagesize_kB=4\n"
                        "3000 bind=static:1 anon=1 N1=1 kernelpagesize_kB=4\n"))
    assert s["policies"] == {"bind=static:1": 3 * 4 * KiB, "local": 4 * KiB}


# -- the live kernel: this process, and a child sampled by capture.Sampler -------------

def test_live_numa_maps_of_this_process():
    if not os.path.exists(f"/proc/{os.getpid()}/numa_maps"):
        pytest.skip("kernel without NUMA support: no /proc/<pid>/numa_maps")
    maps = parse(capture.read_numa_maps(os.getpid()))
    assert maps and any(m.kind == "heap" for m in maps) and any(m.kind == "stack" for m in maps)
    assert sum(summarize(maps)["data_bytes"].values()) > 1 * MiB


def test_sampler_sees_a_child_footprint_and_threads(tmp_path):
    if not os.path.exists(f"/proc/{os.getpid()}/numa_maps"):
        pytest.skip("kernel without NUMA support: no /proc/<pid>/numa_maps")
    child = textwrap.dedent("""
        import threading, time
        buf = bytearray(48 * 2**20)                  # zero pages: touch one byte per page
        for i in range(0, len(buf), 4096):
            buf[i] = 1
        t = threading.Thread(target=time.sleep, args=(1.0,)); t.start()
        time.sleep(1.0); t.join()
    """)
    proc = subprocess.Popen([sys.executable, "-c", child])
    s = capture.Sampler(proc.pid, tmp_path, 0.005, 0.2, exe=os.path.realpath(sys.executable))
    s.start()
    proc.wait()
    s.stop()
    s.join(5)
    s.write()
    summary = s.summary()
    nm = summary["numa_maps"]
    assert summary["errors"] == []
    assert nm["samples"] >= 3 and nm["steady"] is not None
    assert sum(nm["steady"]["data_bytes"].values()) >= 48 * MiB
    assert summary["team"] == 2 and len(summary["threads"]) == 2
    assert summary["sampler_shared_cpus"] is True          # the child may run anywhere
    for t in summary["threads"].values():
        assert t["by_allowed"] and sum(t["cpus"].values()) >= 1
    assert (tmp_path / "numa_maps.samples.jsonl").exists() and (tmp_path / "numa_maps.peak.txt").exists()
    # sampling stays cheap: well under the 5 % duty limit over the child's ~2 s life
    assert nm["sample_seconds"] < 0.1 * 2


@pytest.mark.workflow      # times a child's sleep against the sampler's start (exec_seen >= 0.2 s): not a unit test (MARKERS.md)
def test_sampler_waits_for_the_exec(tmp_path):
    # `sh -c 'sleep 0.3; exec python3 ...'`: nothing is sampled while the pid is sh
    proc = subprocess.Popen(["sh", "-c", f"sleep 0.3; exec {sys.executable} -c 'import time; time.sleep(0.5)'"])
    s = capture.Sampler(proc.pid, tmp_path, 0.005, 0.1, exe=os.path.realpath(sys.executable),
                        numastat_on=False)
    s.start()
    proc.wait()
    s.stop()
    s.join(5)
    assert s.exec_seen is not None and s.exec_seen >= 0.2
    assert s.samples and all(x["t"] >= s.exec_seen for x in s.samples)


def test_sampler_notes_a_process_that_never_execs(tmp_path):
    proc = subprocess.Popen(["sh", "-c", "exit 3"])
    s = capture.Sampler(proc.pid, tmp_path, exe="/nonexistent/bench.x", numastat_on=False)
    s.start()
    proc.wait()
    s.stop()
    s.join(5)
    assert s.samples == [] and "never ran /nonexistent/bench.x" in s.errors[0]
    assert s.summary()["numa_maps"]["peak"] is None


def test_numastat_system_from_sysfs_matches_the_numastat_layout(tmp_path):
    for n, hit in ((0, 100), (2, 300), (10, 7)):
        d = tmp_path / f"node{n}"
        d.mkdir()
        (d / "numastat").write_text(f"numa_hit {hit}\nnuma_miss 1\nnuma_foreign 2\ninterleave_hit 3\n"
                                    f"local_node {hit}\nother_node 4\n")
    s = capture.numastat_system(tmp_path)
    assert s["numa_hit"] == {"0": 100, "2": 300, "10": 7} and list(s["numa_hit"]) == ["0", "2", "10"]
    text = ("                           node0           node2          node10\n"
            "numa_hit                     100             300               7\n"
            "numa_miss                      1               1               1\n"
            "numa_foreign                   2               2               2\n"
            "interleave_hit                 3               3               3\n"
            "local_node                   100             300               7\n"
            "other_node                     4               4               4\n")
    assert capture.parse_numastat(text) == s
    after = {k: {n: v + 5 for n, v in c.items()} for k, c in s.items()}
    assert capture.numastat_delta(s, after)["other_node"] == {"0": 5, "2": 5, "10": 5}


@pytest.mark.workflow      # samples a child that lives 0.6 s: on a busy machine it may be gone first; not a unit test (MARKERS.md)
def test_sampler_knows_when_it_runs_off_the_benchmarks_cpus(tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    bench_cpu, own_cpu = cpus[0], cpus[1]
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.6)"],
                            preexec_fn=lambda: os.sched_setaffinity(0, {bench_cpu}))
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {own_cpu})          # as the runner does; the thread inherits it
    try:
        s = capture.Sampler(proc.pid, tmp_path, 0.005, 0.1, numastat_on=False)
        s.start()
    finally:
        os.sched_setaffinity(0, saved)
    proc.wait()
    s.stop()
    s.join(5)
    summary = s.summary()
    assert summary["sampler_cpus"] == str(own_cpu) and summary["sampler_shared_cpus"] is False
    (t,) = summary["threads"].values()
    assert t["allowed"] == str(bench_cpu) and set(t["cpus"]) == {str(bench_cpu)}


@pytest.mark.parametrize("page_kb", [4, 16, 64])
def test_base_page_size_of_the_kernel_is_honoured(page_kb):
    """arm64/ppc64 kernels use 16/64 KiB base pages: an ordinary anonymous mapping's
    N<k>= counts pages of kernelpagesize_kB, not of 4 KiB."""
    mp = parse_line(f"7f00 default anon=30 dirty=30 N0=10 N1=20 kernelpagesize_kB={page_kb}")
    assert mp.bytes_per_node == {0: 10 * page_kb * 1024, 1: 20 * page_kb * 1024}
    assert summarize([mp])["data_bytes"] == {0: 10 * page_kb * 1024, 1: 20 * page_kb * 1024}


# -- the CPU each thread runs on: /proc/<pid>/task/<tid>/stat (capture.thread_cpus) ------

def task_stat(tid, comm, processor, rt_priority=0, policy=0):
    """A thread's /proc/<pid>/task/<tid>/stat as Linux 6.x prints it (52 fields), with the
    fields that tell the CPU apart: 38 exit_signal, 39 processor, 40 rt_priority, 41 policy."""
    after = ("S 4242 4242 4100 34816 4242 1077936192 3120 0 0 0 912 3 0 0 {prio} 0 3 0 2870331 "
             "1260650496 25161 18446744073709551615 94526694002688 94526694022569 140731656983840 0 0 0 0 0 "
             "0 0 0 0 -1 {processor} {rt_priority} {policy} 0 0 0 94526694038576 94526694040192 "
             "94527580753920 140731656985086 140731656985106 140731656985106 140731656986603 0")
    text = f"{tid} ({comm}) " + after.format(prio=-51 if policy else 20, processor=processor,
                                            rt_priority=rt_priority, policy=policy)
    assert len(text[text.rindex(")") + 2:].split()) == 52 - 2
    return text + "\n"


def test_a_threads_cpu_is_the_processor_field_of_its_stat(monkeypatch):
    """Field 39 of a thread's stat is the CPU it last ran on; field 40 beside it is its
    real-time priority. A benchmark's two threads, one under SCHED_FIFO at priority 50 on
    CPU 3, its name with a space and a ')' in it: each is on its field 39 CPU, under its
    own mask. (Fails when field 40 is read: CPU 50, and CPU 0 for the other thread.)"""
    pid = 4242
    stats = {4242: task_stat(4242, "bench) x", processor=3, rt_priority=50, policy=1),
             4243: task_stat(4243, "bench) x", processor=2)}
    masks = {4242: {3}, 4243: {0, 1, 2, 3}}

    class ThisProc:                       # os, as thread_cpus sees it, with this pid's /proc
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def listdir(path):
            assert path == f"/proc/{pid}/task"
            return [str(t) for t in stats]

        @staticmethod
        def sched_getaffinity(tid):
            return masks[tid]

    def proc_open(path, *args, **kw):
        prefix = f"/proc/{pid}/task/"
        assert path.startswith(prefix) and path.endswith("/stat"), path
        return io.StringIO(stats[int(path[len(prefix):-len("/stat")])])

    monkeypatch.setattr(capture, "os", ThisProc())
    monkeypatch.setattr(capture, "open", proc_open, raising=False)
    assert capture.thread_cpus(pid) == {4242: (3, "3"), 4243: (2, "0-3")}


def test_this_threads_cpu_is_the_one_it_is_pinned_to():
    """The live kernel: this thread pinned to the last CPU it may use (not CPU 0, where a
    wrong field that reads 0 would pass) is seen there, under that one-CPU mask."""
    import threading
    cpus = sorted(os.sched_getaffinity(0))
    if cpus[-1] == 0:
        pytest.skip("this process may use CPU 0 only")
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpus[-1]})        # returns once the thread runs there
    try:
        seen = capture.thread_cpus(os.getpid())[threading.get_native_id()]
    finally:
        os.sched_setaffinity(0, saved)
    assert seen == (cpus[-1], str(cpus[-1]))
