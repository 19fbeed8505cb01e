"""What numaplace's C micro-benchmarks (microbench/src: one folder each, NPB's make
interface, class X) have in common: the output format (membench_output), the options an
experiment's `args` pass to them, checked before any run, and the node a run's buffer
was meant to be on. The kinds themselves (memory.py: membw, memlat; stream.py) say which
options they take, how long a run lasts at least, and their tables and figures."""
from __future__ import annotations

import re

from numaplace import ConfigError
from numaplace.core.cpulist import format_cpulist, parse_cpulist
from numaplace.kinds import REPO, Kind
from numaplace.kinds import membench_output

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
# What microbench/src accepts (common/mb_options.c and each benchmark's own options):
# anything else there ends every run with a usage text, so it is refused at plan time.
# Each kind lists its options (MicroBench.flags: flag → what its value must be, or None
# for a switch); COMMON_FLAGS are mb_options.c's, taken by all of them.
INT_MAX, LONG_MAX, ULLONG_MAX = 2**31 - 1, 2**63 - 1, 2**64 - 1
MAX_SIZES = 256                 # MB_MAX_SIZES (mb_common.h)
SIZE_NAMES = ("DRAM", "LLC", "L1", "L2")
SIZE_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}

# A run's duration, estimated from below: every region lasts at least --min-time (a
# shorter one is repeated, not counted), reads its buffer at least once (at a generous
# 100 GB/s per reading thread: one core reads 10-20 GB/s), and costs at least 1 µs
# (its clock and getcpu calls and the result line it prints); a dependent load of
# memlat at least 0.5 ns (an L1 hit is ~4 cycles).
GENEROUS_BYTES_PER_S = 100e9
REGION_MIN_S = 1e-6
LOAD_MIN_S = 0.5e-9


def whole(lo, hi, what="a whole number"):
    def check(text):
        # the length first: int() of thousands of digits is refused by Python itself
        if not text.isascii() or not text.isdigit() or len(text) > len(str(hi)) + 2 or not lo <= int(text) <= hi:
            raise ValueError(f"expected {what} from {lo} to {hi}")
        return int(text)
    return check


# what strtod reads, decimal; no two ways to match a digit (`[0-9]+\.?[0-9]*` had n: a
# value of 590,000 digits and a letter backtracked for minutes)
NUMBER = re.compile(r"\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,3})?")


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


def choice(*words):
    def check(text):
        if text not in words:
            raise ValueError(f"expected {' or '.join(words)}")
        return text
    return check


def _cpu_ids(text):
    items = text.split(",")
    if len(items) > 1024 or not all(i.isascii() and i.isdigit() and len(i) <= 7 for i in items):
        raise ValueError("expected CPU ids separated by commas, such as 0,1,2 (at most 1024)")
    return [int(i) for i in items]


def stride(text):
    n = whole(8, LONG_MAX)(text)
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
            raise ValueError(f"{_echo(item)} is not a size: expected sizes such as 32K,1M,128M "
                             "(K/M/G = 2^10/2^20/2^30 bytes) or the names L1,L2,LLC,DRAM")
        out.append((item, int(value * SIZE_UNITS[unit])))
    return out


def named_size(name, cpu=0, sysfs="/sys/devices/system/cpu"):
    """Bytes of a size name on this machine, as mb_parse_sizes resolves it (DRAM = 4 x all
    last-level caches, LLC/L2/L1 = half of that cache of CPU `cpu`), or None unknown."""
    from pathlib import Path
    found = []                      # (level, CPUs sharing it, bytes, a cache of CPU `cpu`)
    for index in Path(sysfs).glob("cpu[0-9]*/cache/index[0-9]*"):
        try:
            if (index / "type").read_text().strip() not in ("Data", "Unified"):
                continue
            level, size = int((index / "level").read_text()), (index / "size").read_text().strip()
            shared = (index / "shared_cpu_list").read_text().strip()
            n = int(size[:-1]) * SIZE_UNITS[size[-1]] if size[-1] in SIZE_UNITS else int(size)
        except (OSError, ValueError, KeyError):
            continue
        found.append((level, shared, n, index.parent.parent.name == f"cpu{cpu}"))
    if not found:
        return None
    top = max(level for level, _, _, _ in found)
    if name == "DRAM":              # each last-level cache once, however many CPUs share it
        return 4 * sum({shared: n for level, shared, n, _ in found if level == top}.values())
    level = {"L1": 1, "L2": 2, "LLC": top}.get(name)
    mine = [n for lv, _, n, own in found if own and lv == level]
    return mine[0] // 2 if mine else None


def _sizes(text):
    return parse_sizes(text)


# options the benchmarks take that no measured run may have


def _echo(text):
    """A value as a refusal quotes it: repr, at most ~80 characters (a value of 590 kB
    would push what is wrong with it out of the line)."""
    text = repr(str(text))
    return text if len(text) <= 80 else text[:79] + "…"


def _flags(benches):
    """flag → (benchmarks of the registry that take it, {benchmark: its check}), over every
    micro-benchmark: each kind's own check (stream caps --reps at 200 where the others take
    up to INT_MAX), not the first registered kind's."""
    from numaplace.kinds import KINDS
    out = {}
    for k in KINDS.values():
        for flag, check in getattr(k, "flags", {}).items():
            who, checks = out.setdefault(flag, ([], {}))
            who.append(k.name)
            checks[k.name] = check
    return out


def _not_measuring(benches):
    from numaplace.kinds import kind
    return {f: why for b in benches for f, why in getattr(kind(b), "not_measuring", {}).items()}


def parse_args(args, benches, where, entry):
    """flag → value of an experiment's args, refusing what the benchmarks would refuse:
    unknown flags, flags one of the experiment's benchmarks does not take, missing or
    malformed values, a flag given twice. Each refusal names args[i]."""
    FLAGS, NOT_MEASURING = _flags(benches), _not_measuring(benches)
    out, at = {}, {}
    i = 0
    while i < len(args):
        a = str(args[i])
        here = f"{entry}.args[{i}]"
        if a not in FLAGS:
            flag = a.split("=", 1)[0]
            hint = f" (write {flag} and its value as two entries)" if "=" in a and flag in FLAGS else ""
            known = sorted(f for f, (who, _) in FLAGS.items() if set(benches) <= set(who))
            raise ConfigError(where, here, f"{_echo(a)} is not an option of {' and '.join(benches)}{hint}; "
                              f"the options are {', '.join(known)} (microbench/README.md)")
        if a in NOT_MEASURING:
            raise ConfigError(where, here, f"{a} {NOT_MEASURING[a]}")
        who, checks = FLAGS[a]
        others = [b for b in benches if b not in who]
        if others:
            owners = " and ".join(filter(None, [", ".join(who[:-1]), who[-1]]))
            raise ConfigError(where, here, f"{a} is an option of {owners} only; {', '.join(others)} "
                              f"would stop with a usage text (put {', '.join(others)} in an experiment of its own)")
        if a in out:
            raise ConfigError(where, here, f"{a} is given twice (args[{at[a]}] and args[{i}]); give it once")
        at[a] = i
        mine = [(b, checks[b]) for b in benches if b in checks] or [(who[0], checks[who[0]])]
        if mine[0][1] is None:
            out[a] = True
            i += 1
            continue
        if i + 1 >= len(args):
            raise ConfigError(where, here, f"{a} needs a value after it")
        done = []
        for bench, check in mine:               # every benchmark of the experiment: its own cap
            if check in done:
                continue
            done.append(check)
            try:
                value = check(str(args[i + 1]))
            except ValueError as e:
                whose = f" ({bench}'s own limit)" if a in COMMON_FLAGS and check is not COMMON_FLAGS[a] else ""
                # the value once: where the reason already quotes it (a one-item value), not again
                value = "" if str(e).startswith(_echo(args[i + 1])) else f" {_echo(args[i + 1])}"
                raise ConfigError(where, f"{entry}.args[{i + 1}]", f"{a}{value}: {e}{whose}") from None
            out.setdefault(a, value)
        i += 2
    return out, at


def bytes_text(n):
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def machine_memory(topo, auto, meminfo="/proc/meminfo"):
    """(bytes, words naming it) of the memory one buffer must fit in, or None if the
    platform does not say: the sum of the nodes' memory (for platform auto their sysfs
    MemTotal, only the nodes this process may use; /proc/meminfo without NUMA sysfs),
    else the sum of the platform's memory_mb."""
    mb = sum(topo.memory_mb.values())
    if auto and mb > 0:              # the nodes' MemTotal, those this process may use
        return mb << 20, (f"this machine's memory (MemTotal {bytes_text(mb << 20)}"
                          + (f" on the allowed nodes {format_cpulist(topo.memory_nodes)})" if topo.allowed else ")"))
    if auto:
        try:
            with open(meminfo) as f:
                for line in f:
                    if line.startswith("MemTotal:"):
                        kb = int(line.split()[1])
                        return kb * 1024, f"this machine's memory (MemTotal {bytes_text(kb * 1024)})"
        except (OSError, ValueError, IndexError):
            pass
    mb = sum(topo.memory_mb.values())
    if mb > 0:
        return mb << 20, f"platform {topo.name}'s memory ({bytes_text(mb << 20)})"
    return None


def check_args(args, benches, placements, topo, config, where, entry):
    """A memory experiment's args, before any run: options the benchmarks take, buffers
    that fit in the machine's memory, and runs that can end before run.timeout."""
    from numaplace.core.schema import Section, setting
    opts, at = parse_args(args, benches, where, entry)
    memory = machine_memory(topo, setting("platform", config) == "auto")
    largest = max((size or 0 for _, size in opts.get("--sizes", ())), default=0)
    text = next((t for t, size in opts.get("--sizes", ()) if size == largest), "")
    if memory and largest > memory[0]:
        raise ConfigError(where, f"{entry}.args[{at['--sizes'] + 1}]", f"--sizes {text}: a buffer of "
                          f"{bytes_text(largest)} is more than {memory[1]}")
    for p in placements:            # numactl --membind: a full node fails instead of spilling
        bound = sum(topo.memory_mb.get(n, 0) for n in p.memory.nodes) << 20
        if p.memory.policy == "membind" and 0 < bound < largest:
            raise ConfigError(where, f"{entry}.args[{at['--sizes'] + 1}]", f"--sizes {text}: a buffer of "
                              f"{bytes_text(largest)} is more than the {bytes_text(bound)} of node "
                              f"{format_cpulist(p.memory.nodes)} of platform {topo.name}, which placement "
                              f"{p.id} binds it to (numactl --membind fails instead of spilling)")
    from numaplace.kinds import kind
    for bench in benches:
        kind(bench).check_options(opts, at, where, entry)
    threads = max((p.threads for p in placements), default=1)
    if "--cpus" in opts and len(opts["--cpus"]) < threads:
        n = len(opts["--cpus"])
        raise ConfigError(where, f"{entry}.args[{at['--cpus'] + 1}]", f"--cpus lists {n} CPU{'s' * (n > 1)} "
                          f"for placements of up to {threads} threads (thread t is pinned to its t-th CPU)")
    timeout = Section("run", config.get("run"))["timeout"]
    for bench in benches:
        seconds, how = kind(bench).seconds_at_least(opts, threads)
        if seconds > timeout:
            arg = "--reps" if "--reps" in opts else "--sizes" if "--sizes" in opts else None
            here = f"{entry}.args[{at[arg] + 1}]" if arg else f"{entry}.args"
            raise ConfigError(where, here, f"a {bench} run would last at least {seconds:.3g} s ({how}), "
                              f"past run.timeout {timeout:g} s: it would time out; lower --reps, "
                              "--min-time or --sizes, or raise run.timeout")

COMMON_FLAGS = {"--sizes": _sizes, "--min-time": _positive, "--reps": whole(1, INT_MAX), "--hugepages": None,
                "--flush": None, "--cpus": _cpu_ids}


class MicroBench(Kind):
    """A micro-benchmark of microbench/src: one class, X, whose sizes, modes and
    repetitions are the experiment's `args`. Its output holds many values (one per size,
    reader and repetition: `results`); its own tables take them apart. Built from
    microbench/src whatever the study's npb.source says."""
    family = "memory"
    compared = False
    takes_args = True
    source_dir = REPO / "microbench" / "src"
    classes = ("X",)
    tree_name = "microbench-tree"
    follows_npb_source = False
    # each size's buffer is freed once measured, with the thread team still alive: a
    # steady tail after the last free is the runtime, not the buffer under test
    footprint = "peak"
    flags = COMMON_FLAGS
    not_measuring = {}          # options it takes that no measured run may have: flag → why
    default_sizes = 1           # sizes measured without --sizes
    run_s = 2.0                 # one run's estimated seconds per thread, measured on the reference machine

    def __init__(self, name, title, metric, unit, higher_is_better, matrix=None):
        self.name, self.title, self.metric, self.unit = name, title, metric, unit
        self.higher_is_better, self.matrix = higher_is_better, matrix

    def parse(self, stdout):
        return membench_output.parse(stdout)

    def outcome(self, output, exit_status):
        if output["complete"] and not output["verified"]:
            return "unverified", (f"{self.name}'s own check failed (buffer changed or chain broken; "
                                  f"exit status {exit_status})")
        return super().outcome(output, exit_status)

    def working_set_bytes(self, output):
        # the largest buffer measured: a sample that holds less caught it mid first touch
        sizes = [r.get("size_bytes") or 0 for r in (output or {}).get("results") or []]
        return max(sizes) if sizes else None

    def estimate(self, cls):
        # time and size depend on the args; a full latency sweep to 4x a large LLC with 5
        # repetitions and 2 readers takes a few minutes; buffers stay below 2 GiB
        return (300, 2048)

    def run_seconds(self, cls, threads, args, speed=1.0):
        return self.run_s * max(1, threads)

    def check_args(self, args, benches, placements, topo, config, where, entry):
        check_args(args, benches, placements, topo, config, where, entry)

    def check_options(self, opts, at, where, entry):
        """What this benchmark alone refuses among options it takes (after parse_args)."""

    def in_parallel(self, opts):
        """Whether the threads measure at once (else one at a time)."""
        return False

    def floor_s(self, opts):
        """The least time one timed region of this benchmark takes, beyond --min-time."""
        return 0.0

    def passes(self, opts):
        """Passes over the buffer per timed region and repetition."""
        return 1

    def seconds_at_least(self, opts, threads):
        """(seconds, how) one run with these options lasts at least (see GENEROUS_BYTES_PER_S)."""
        sizes = [b or 0 for _, b in opts.get("--sizes", ())] or [0] * self.default_sizes
        reps = opts.get("--reps", 5)
        min_time = opts.get("--min-time", 0.1)
        parallel = self.in_parallel(opts)
        readers = 1 if parallel else threads        # one thread at a time, else all at once
        bandwidth = GENEROUS_BYTES_PER_S * (threads if parallel else 1)
        floor = max(min_time, REGION_MIN_S, self.floor_s(opts))
        total = sum(readers * reps * self.passes(opts) * max(floor, b / bandwidth) for b in sizes)
        who = f"{threads} threads reading at once" if parallel else \
            f"{readers} threads reading in turn" if readers > 1 else "1 thread reading"
        how = (f"{len(sizes)} size{'s' * (len(sizes) > 1)} x {who} x {reps} regions (--reps) of at least "
               f"{floor:g} s each" + (", a buffer read at a generous 100 GB/s per thread" if any(sizes) else ""))
        return total, how
