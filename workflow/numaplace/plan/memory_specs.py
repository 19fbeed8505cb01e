"""Placement specs of the memory micro-benchmarks (membw, memlat): the thesis's sweeps and
node × node matrices, as concrete cells for the ordinary placement machinery.

Both benchmarks first-touch their buffer on OpenMP thread 0 and read it from thread 0
(local) and then thread 1 (the other CPU), so a cell fixes the *order* of its CPUs:
thread 0 on the memory CPU, thread 1 on the reader. The launchers express that order
with per-thread binding (OMP_PLACES lists the places in thread order; aprun -cc too).

  sweep:  {memory_cpu: 0 | all, readers: all | self | "0-15"}
      memory first-touched by memory_cpu, read from every reader CPU (thesis B1/B4):
      a reader equal to memory_cpu is the local cell, one thread (readers: self = only
      that one: B1 local on every CPU with memory_cpu: all).
  contention: {memory_cpu: 4, threads: [2, 4, 16]}
      B2: thread 0 on memory_cpu first-touches, then t threads (memory_cpu and the next
      CPUs node by node) read at once (membw --mode parallel).
  matrix: {via: first-touch | membind, readers: all | nodes, memory: all | nodes}
      reader node × memory node, each node represented by its first CPU. first-touch:
      thread 0 on the memory node's CPU writes, thread 1 on the reader's CPU reads (as
      the thesis did); membind: one thread on the reader's CPU, memory bound to the
      memory node (numactl --membind: a full node fails instead of spilling).

expand(spec, topo, where, entry) → [(cpus in thread order, shape, id, Memory or None)];
Memory None = the experiment's memory policies apply (first touch: local)."""
from __future__ import annotations

import re

from numaplace import ConfigError
from numaplace.core.cpulist import format_cpulist, parse_cpulist
from numaplace.plan.placement import Memory, resolve_count


def _nodes(value, topo, where, entry):
    usable = [n for n in topo.node_ids if topo.nodes[n]]
    if value in (None, "all"):
        return usable
    nodes = value if isinstance(value, list) else parse_cpulist(str(value), where, entry)
    for n in nodes:
        if n not in usable:
            raise ConfigError(where, entry, f"node {n} is not a node with CPUs in platform {topo.name} "
                              f"(nodes {format_cpulist(usable)})")
    return list(nodes)


def _cpus(value, topo, where, entry):
    if value in (None, "all"):
        return list(topo.cpus)
    cpus = [value] if isinstance(value, int) else parse_cpulist(str(value), where, entry)
    bad = [c for c in cpus if topo.node_of(c) is None]
    if bad:
        raise ConfigError(where, entry, f"CPU {format_cpulist(bad)} is not in platform {topo.name} "
                          f"(CPUs {format_cpulist(topo.cpus)})")
    return cpus


def sweep(spec, topo, where, entry):
    out = []
    for x in _cpus(spec["memory_cpu"], topo, where, entry + ".memory_cpu"):
        readers = [x] if spec.get("readers") == "self" else \
            _cpus(spec.get("readers", "all"), topo, where, entry + ".readers")
        for y in readers:
            order = (x,) if y == x else (x, y)
            out.append((order, f"memory on cpu {x}, read by cpu {y}", f"sw-m{x}-r{y}", None))
    return out


def contention(spec, topo, where, entry):
    """B2: memory first-touched by memory_cpu (thread 0), then t threads reading at once:
    memory_cpu and the next CPUs in compact order (node by node), for each t."""
    x = spec["memory_cpu"]
    _cpus(x, topo, where, entry + ".memory_cpu")
    others = [c for n in topo.node_ids for c in topo.nodes[n] if c != x]
    out = []
    for count in spec["threads"]:
        t = resolve_count(count, topo)              # node, all: physical cores, as the NPB placements
        if t > len(others) + 1:
            raise ConfigError(where, entry + ".threads", f"{t} threads but platform {topo.name} "
                              f"has {len(others) + 1} CPUs")
        order = (x, *others[:t - 1])
        out.append((order, f"{t} readers, memory on cpu {x}", f"ct-m{x}-t{t}", None))
    return out


def matrix(spec, topo, where, entry):
    via = spec.get("via", "first-touch")
    readers = _nodes(spec.get("readers", "all"), topo, where, entry + ".readers")
    memories = _nodes(spec.get("memory", "all"), topo, where, entry + ".memory")
    first = {n: topo.nodes[n][0] for n in set(readers) | set(memories)}
    out = []
    for r in readers:
        for m in memories:
            if via == "membind":
                if topo.memory_mb.get(m) == 0:
                    raise ConfigError(where, entry + ".memory", f"node {m} of platform {topo.name} has no memory")
                out.append(((first[r],), f"node {r} reads node {m} (membind)", f"mx-mb-r{r}-m{m}",
                            Memory("membind", (m,))))
            else:
                order = (first[m],) if r == m else (first[m], first[r])
                out.append((order, f"node {r} reads node {m} (first touch)", f"mx-ft-r{r}-m{m}", None))
    return out


def count(spec, topo, where, entry):
    """How many cells a spec gives, counted before any is made (planning stays bounded
    on a platform of thousands of CPUs: a sweep of all × all is their square)."""
    if "sweep" in spec:
        s, e = spec["sweep"], entry + ".sweep"
        memory = len(_cpus(s["memory_cpu"], topo, where, e + ".memory_cpu"))
        readers = 1 if s.get("readers") == "self" else len(_cpus(s.get("readers", "all"), topo, where, e + ".readers"))
        return memory * readers
    if "contention" in spec:
        return len(spec["contention"]["threads"])
    m, e = spec["matrix"], entry + ".matrix"
    return len(_nodes(m.get("readers", "all"), topo, where, e + ".readers")) * \
        len(_nodes(m.get("memory", "all"), topo, where, e + ".memory"))


def expand(spec, topo, where, entry):
    if "sweep" in spec:
        return sweep(spec["sweep"], topo, where, entry + ".sweep")
    if "contention" in spec:
        return contention(spec["contention"], topo, where, entry + ".contention")
    return matrix(spec["matrix"], topo, where, entry + ".matrix")


def intended_memory_node(placement, topology_node_of):
    """The node a memory cell's buffer should be on: the membind node, else the node of
    thread 0's CPU (the first-touching thread)."""
    if placement.get("memory") == "membind" and placement.get("memory_nodes"):
        nodes = parse_cpulist(placement["memory_nodes"])
        return nodes[0] if len(nodes) == 1 else None
    if placement.get("memory") != "local":
        return None
    first = int(placement["order"].split(",")[0]) if placement.get("order") else parse_cpulist(placement["cpus"])[0]
    return topology_node_of(first)


# -- the benchmarks' own arguments (an experiment's `args`) ----------------------------
# What microbench/src accepts (common/mb_options.c, membw/membw.c, memlat/memlat.c):
# anything else there ends every run with a usage text, so it is refused at plan time.
# flag → (benchmarks that take it, what its value must be, or None for a switch)
INT_MAX, LONG_MAX, ULLONG_MAX = 2**31 - 1, 2**63 - 1, 2**64 - 1
MAX_SIZES = 256                 # MB_MAX_SIZES (mb_common.h)
SIZE_NAMES = ("DRAM", "LLC", "L1", "L2")
SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}
BOTH = ("membw", "memlat")

# A run's duration, estimated from below: every region lasts at least --min-time (a
# shorter one is repeated, not counted), reads its buffer at least once (at a generous
# 100 GB/s per reading thread: one core reads 10-20 GB/s), and costs at least 1 µs
# (its clock and getcpu calls and the result line it prints); a dependent load of
# memlat at least 0.5 ns (an L1 hit is ~4 cycles).
GENEROUS_BYTES_PER_S = 100e9
REGION_MIN_S = 1e-6
LOAD_MIN_S = 0.5e-9


def _whole(lo, hi, what="a whole number"):
    def check(text):
        if not text.isascii() or not text.isdigit() or not lo <= int(text) <= hi:
            raise ValueError(f"expected {what} from {lo} to {hi}")
        return int(text)
    return check


NUMBER = re.compile(r"\+?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]{1,3})?")   # what strtod reads, decimal


def _number(text):
    """A positive finite decimal number, or None."""
    if not NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if 0 < value < float("inf") else None


def _positive(text):
    value = _number(text)
    if value is None:
        raise ValueError("expected a number of seconds above 0, such as 0.1")
    return value


def _choice(*words):
    def check(text):
        if text not in words:
            raise ValueError(f"expected {' or '.join(words)}")
        return text
    return check


def _cpu_ids(text):
    items = text.split(",")
    if not all(i.isascii() and i.isdigit() for i in items) or len(items) > 1024:
        raise ValueError("expected CPU ids separated by commas, such as 0,1,2 (at most 1024)")
    return [int(i) for i in items]


def _stride(text):
    n = _whole(8, LONG_MAX)(text)
    if n % 8:
        raise ValueError("expected a multiple of 8 bytes (one pointer), such as 64")
    return n


def parse_sizes(text):
    """--sizes as mb_parse_sizes reads it: [(text, bytes or None for a cache name)]."""
    items = text.split(",")
    if len(items) > 1 and items[-1] == "":      # a trailing comma, as the C parser allows
        items.pop()
    if len(items) > MAX_SIZES:
        raise ValueError(f"more than {MAX_SIZES} sizes")
    out = []
    for item in items:
        if item in SIZE_NAMES:
            out.append((item, None))
            continue
        number, unit = (item[:-1], item[-1].upper()) if item[-1:] in tuple("KkMmGg") else (item, "")
        value = _number(number)
        if value is None:
            raise ValueError(f"{item!r} is not a size: expected sizes such as 32K,1M,128M "
                             "(K/M/G = 2^10/2^20/2^30 bytes) or the names L1,L2,LLC,DRAM")
        out.append((item, int(value * SIZE_UNITS[unit])))
    return out


def _sizes(text):
    return parse_sizes(text)


FLAGS = {
    "--sizes": (BOTH, _sizes),
    "--min-time": (BOTH, _positive),
    "--reps": (BOTH, _whole(1, INT_MAX)),
    "--hugepages": (BOTH, None),
    "--flush": (BOTH, None),
    "--cpus": (BOTH, _cpu_ids),
    "--mode": (("membw",), _choice("serial", "parallel")),
    "--share": (("membw",), _choice("slice", "whole")),
    "--stride": (("memlat",), _stride),
    "--per-octave": (("memlat",), _whole(1, 32)),
    "--min-loads": (("memlat",), _whole(0, LONG_MAX)),
    "--seed": (("memlat",), _whole(0, ULLONG_MAX)),
    "--dump-chain": (("memlat",), None),
}
# options the benchmarks take that no measured run may have
NOT_MEASURING = {"--dump-chain": "prints memlat's chain and measures nothing (a test mode of "
                                 "tests/test_membench.py); remove it"}


def parse_args(args, benches, where, entry):
    """flag → value of an experiment's args, refusing what the benchmarks would refuse:
    unknown flags, flags one of the experiment's benchmarks does not take, missing or
    malformed values, a flag given twice. Each refusal names args[i]."""
    out, at = {}, {}
    i = 0
    while i < len(args):
        a = str(args[i])
        here = f"{entry}.args[{i}]"
        if a not in FLAGS:
            flag = a.split("=", 1)[0]
            hint = f" (write {flag} and its value as two entries)" if "=" in a and flag in FLAGS else ""
            known = sorted(f for f, (who, _) in FLAGS.items() if set(benches) <= set(who))
            raise ConfigError(where, here, f"{a!r} is not an option of {' and '.join(benches)}{hint}; "
                              f"the options are {', '.join(known)} (microbench/README.md)")
        if a in NOT_MEASURING:
            raise ConfigError(where, here, f"{a} {NOT_MEASURING[a]}")
        who, check = FLAGS[a]
        others = [b for b in benches if b not in who]
        if others:
            raise ConfigError(where, here, f"{a} is an option of {', '.join(who)} only; {', '.join(others)} "
                              f"would stop with a usage text (put {', '.join(others)} in an experiment of its own)")
        if a in out:
            raise ConfigError(where, here, f"{a} is given twice (args[{at[a]}] and args[{i}]); give it once")
        at[a] = i
        if check is None:
            out[a] = True
            i += 1
            continue
        if i + 1 >= len(args):
            raise ConfigError(where, here, f"{a} needs a value after it")
        try:
            out[a] = check(str(args[i + 1]))
        except ValueError as e:
            raise ConfigError(where, f"{entry}.args[{i + 1}]", f"{a} {str(args[i + 1])!r}: {e}") from None
        i += 2
    return out, at


def _bytes_text(n):
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def machine_memory(topo, auto, meminfo="/proc/meminfo"):
    """(bytes, words naming it) of the memory one buffer must fit in, or None if the
    platform does not say: this machine's MemTotal for platform auto, else the sum of
    the platform's memory_mb."""
    if auto:
        try:
            with open(meminfo) as f:
                for line in f:
                    if line.startswith("MemTotal:"):
                        kb = int(line.split()[1])
                        return kb * 1024, f"this machine's memory (MemTotal {_bytes_text(kb * 1024)})"
        except (OSError, ValueError, IndexError):
            pass
    mb = sum(topo.memory_mb.values())
    if mb > 0:
        return mb << 20, f"platform {topo.name}'s memory ({_bytes_text(mb << 20)})"
    return None


def run_seconds_at_least(bench, opts, threads):
    """(seconds, how) one run of bench with these options lasts at least (see
    GENEROUS_BYTES_PER_S)."""
    sizes = [b or 0 for _, b in opts.get("--sizes", ())] or [0] * (4 if bench == "membw" else 1)
    reps = opts.get("--reps", 5)
    min_time = opts.get("--min-time", 0.1)
    parallel = bench == "membw" and opts.get("--mode") == "parallel"
    readers = 1 if parallel else threads        # serial mode and memlat: one thread at a time
    bandwidth = GENEROUS_BYTES_PER_S * (threads if parallel else 1)
    floor = max(min_time, REGION_MIN_S, opts.get("--min-loads", 10**6) * LOAD_MIN_S if bench == "memlat" else 0)
    total = sum(readers * reps * max(floor, b / bandwidth) for b in sizes)
    who = f"{threads} threads reading at once" if parallel else \
        f"{readers} threads reading in turn" if readers > 1 else "1 thread reading"
    how = (f"{len(sizes)} size{'s' * (len(sizes) > 1)} x {who} x {reps} regions (--reps) of at least "
           f"{floor:g} s each" + (", a buffer read at a generous 100 GB/s per thread" if any(sizes) else ""))
    return total, how


def check_args(args, benches, placements, topo, config, where, entry):
    """A memory experiment's args, before any run: options the benchmarks take, buffers
    that fit in the machine's memory, and runs that can end before run.timeout."""
    from numaplace.core.schema import defaults, setting
    opts, at = parse_args(args, benches, where, entry)
    memory = machine_memory(topo, setting("platform", config) == "auto")
    largest = max((size or 0 for _, size in opts.get("--sizes", ())), default=0)
    text = next((t for t, size in opts.get("--sizes", ()) if size == largest), "")
    if memory and largest > memory[0]:
        raise ConfigError(where, f"{entry}.args[{at['--sizes'] + 1}]", f"--sizes {text}: a buffer of "
                          f"{_bytes_text(largest)} is more than {memory[1]}")
    for p in placements:            # numactl --membind: a full node fails instead of spilling
        bound = sum(topo.memory_mb.get(n, 0) for n in p.memory.nodes) << 20
        if p.memory.policy == "membind" and 0 < bound < largest:
            raise ConfigError(where, f"{entry}.args[{at['--sizes'] + 1}]", f"--sizes {text}: a buffer of "
                              f"{_bytes_text(largest)} is more than the {_bytes_text(bound)} of node "
                              f"{format_cpulist(p.memory.nodes)} of platform {topo.name}, which placement "
                              f"{p.id} binds it to (numactl --membind fails instead of spilling)")
    if "memlat" in benches and "--sizes" in opts:
        stride = opts.get("--stride", 64)
        for text, size in opts["--sizes"]:
            if size is not None and size < 2 * stride:
                raise ConfigError(where, f"{entry}.args[{at['--sizes'] + 1}]", f"--sizes {text}: memlat needs "
                                  f"at least 2 lines of {stride} B (--stride) to chase")
    threads = max((p.threads for p in placements), default=1)
    if "--cpus" in opts and len(opts["--cpus"]) < threads:
        n = len(opts["--cpus"])
        raise ConfigError(where, f"{entry}.args[{at['--cpus'] + 1}]", f"--cpus lists {n} CPU{'s' * (n > 1)} "
                          f"for placements of up to {threads} threads (thread t is pinned to its t-th CPU)")
    timeout = {**defaults("run"), **config.get("run", {})}["timeout"]
    for bench in benches:
        seconds, how = run_seconds_at_least(bench, opts, threads)
        if seconds > timeout:
            arg = "--reps" if "--reps" in opts else "--sizes" if "--sizes" in opts else None
            here = f"{entry}.args[{at[arg] + 1}]" if arg else f"{entry}.args"
            raise ConfigError(where, here, f"a {bench} run would last at least {seconds:.3g} s ({how}), "
                              f"past run.timeout {timeout:g} s: it would time out; lower --reps, "
                              "--min-time or --sizes, or raise run.timeout")
