"""Loaded latency (microbench/src/loadlat): the bandwidth-latency curve. Thread 0 chases
memlat's random pointer chain while the run's other threads read buffers of their own
with membw's scalar loads, pausing a set number of spin iterations after every 512 B:
one point per delay, the chaser's ns per load against the MB/s the loaders drew in the
same timed region, and first the idle latency (no load). Written from the published
description of Intel MLC's --loaded_latency, not its code.

Where the load falls is the placement's: the chain and (by default) the loaders' buffers
are first-touched by thread 0, so on its node or the membind node ("local" or "remote"
latency under load on that memory); `--load-memory own` puts each loader's buffer on the
loader's own node (load on another node's memory while the chaser reads its own).

Its own table, loaded_latency.csv: one row per point and repetition, with where the
chaser, its memory and the loaders were; its figure, loaded_latency: latency against
load bandwidth per placement (MLC's curve); the answer says, per placement, the idle
latency and the latency at the heaviest load."""
from __future__ import annotations

from numaplace import ConfigError
from numaplace.kinds import register
from numaplace.kinds.memory import record_rows
from numaplace.core.cpulist import format_cpulist
from numaplace.core.text import counted
from numaplace.kinds.microbench import (COMMON_FLAGS, LOAD_MIN_S, LONG_MAX, ULLONG_MAX, MicroBench, bytes_text,
                                        choice, stride, whole, machine_memory, named_size, parse_args,
                                        parse_sizes)

MAX_DELAYS = 64                     # loadlat.c's
MAX_DELAY = 100_000_000
DEFAULT_DELAYS = (0, 50, 100, 200, 400, 800, 1600, 3200, 6400, 12800)
COLUMNS = ["size_bytes", "placement_id", "placement", "load_memory", "reader_cpu", "reader_node", "memory_node",
           "load_threads", "load_active", "load_nodes", "load_pages_by_node", "delay", "rep", "sample", "load_mbps", "value",
           "unit", "status", "pages_on_memory_node", "migrated", "run_id", "attempt", "record"]


def _delays(text):
    items = text.split(",")
    if not 1 <= len(items) <= MAX_DELAYS or not all(i.isascii() and i.isdigit() and len(i) <= 12 and int(i) <= MAX_DELAY
                                                     for i in items):
        raise ValueError(f"expected spin counts from 0 to {MAX_DELAY} separated by commas, such as 0,100,1000 "
                         f"(at most {MAX_DELAYS})")
    return [int(i) for i in items]


def _nodes(value):
    """load_nodes as words ('?' when unknown): read back from the CSV, '0' is the number 0."""
    if value is None or value != value or str(value) == "":
        return "?"
    return str(int(value)) if isinstance(value, float) else str(value)


def _load_nodes(result):
    """The loaders' nodes as they started (thread_nodes without the chaser's): '1,1'."""
    nodes = str(result.get("thread_nodes") or "").split(",")[1:]
    return ",".join(n for n in nodes if n not in ("", "-1"))


def point_status(result, row, share_min):
    """A point's status: its run's and its chain's (memory.record_rows: drift when the chain
    is not on the intended node), then `idle-loader` when a loader drew nothing during the
    region (the load is not what the point says), `drift` when the loaders' buffers, meant
    for the chaser's memory (--load-memory chaser), are not there either (a node too full)."""
    status = row["status"]
    if status != "ok" or result.get("delay", -1) < 0:
        return status
    if result.get("load_active") is not None and result["load_active"] < (result.get("load_threads") or 0):
        return "idle-loader"
    if result.get("load_memory") == "chaser" and row.get("memory_node") is not None:
        pages = {int(n): c for n, c in (result.get("load_pages_by_node") or {}).items()}
        if sum(pages.values()) and pages.get(int(row["memory_node"]), 0) / sum(pages.values()) < share_min:
            return "drift"
    return status


class LoadLat(MicroBench):
    flags = {**COMMON_FLAGS, "--delays": _delays, "--load-memory": choice("chaser", "own"),
             "--stride": stride, "--min-loads": whole(0, LONG_MAX), "--seed": whole(0, ULLONG_MAX)}
    tables = {"loaded_latency": "loaded_latency.csv: chaser latency against the loaders' bandwidth, per delay, "
                                "placement and repetition"}
    figures = {"loaded_latency": "Memory: loaded latency (latency vs bandwidth)"}

    def in_parallel(self, opts):
        return True                         # the loaders read while the chaser chases

    def passes(self, opts):
        return 1 + len(opts.get("--delays", DEFAULT_DELAYS))      # the idle point and one per delay

    def floor_s(self, opts):
        return opts.get("--min-loads", 10**6) * LOAD_MIN_S

    def run_seconds(self, cls, threads, args, speed=1.0):
        # measured here: 11 points x (5 + 1 warm-up) regions of ~0.12 s and a 128 MiB chain: ~9 s
        delays = len(DEFAULT_DELAYS)
        if "--delays" in args and args.index("--delays") + 1 < len(args):
            delays = len(str(args[args.index("--delays") + 1]).split(","))
        reps = int(args[args.index("--reps") + 1]) if "--reps" in args and args.index("--reps") + 1 < len(args) else 5
        return 2.0 + (1 + delays) * (reps + 1) * 0.13

    def fit_args(self, args, placements, topo):
        """A named size (DRAM...) whose buffers, one per thread, would take more than half of
        the node they land on is stepped down to the largest size that fits there, for every
        placement of the experiment alike (their curves stay comparable); said in the plan.
        Sized from the topology's own caches and memory, so a platform file detected on a
        machine plans as platform auto does on it."""
        args = list(args)
        if "--sizes" not in args or args.index("--sizes") + 1 >= len(args):
            return tuple(args), []
        at = args.index("--sizes") + 1
        try:
            opts, _ = parse_args(args, [self.name], "", "")
        except ConfigError:
            return tuple(args), []            # check_args names what is wrong
        land = []                             # (bytes the buffers may take, threads, placement)
        for p in placements:
            own = opts.get("--load-memory") == "own" and p.memory.policy != "membind"
            nodes = p.memory.nodes if p.memory.policy == "membind" else () if own else \
                (topo.node_of(p.cpus[0]),) if p.memory.policy == "local" else ()
            bound = sum(topo.memory_mb.get(n, 0) for n in nodes) << 20
            if bound:
                land.append((bound // 2, p.threads, p, nodes))
        if not land:
            return tuple(args), []
        fit = min(b // t for b, t, _, _ in land) >> 20 << 20
        items, notes = [], []
        for text, size in parse_sizes(args[at]):
            named = topo.named_size(text) if size is None else None
            if named and named > fit > 0:
                b, t, p, nodes = min(land, key=lambda x: x[0] // x[1])
                items.append(f"{fit >> 20}M")
                notes.append(f"--sizes {text} stepped down to {fit >> 20} MiB a buffer: {counted(t, 'buffer')} of "
                             f"{bytes_text(named)} ({p.shape}) would take more than half of node "
                             f"{format_cpulist(nodes)}'s {bytes_text(2 * b)}")
            else:
                items.append(text)
        args[at] = ",".join(items)
        return tuple(args), notes

    def cannot_run(self, placement):
        if placement.threads < 2:           # thread 0 chases, the others load: one thread, no load
            return "one thread is a chaser with no loader (loaded latency needs 2 or more threads)"

    def check_args(self, args, benches, placements, topo, config, where, entry):
        """Beyond what every micro-benchmark checks: a run holds one buffer per thread (the
        chain and one per loader), all of them on the chaser's node or its membind nodes
        unless --load-memory own: they must fit the machine, and that node, or the run is
        killed (membind) or its load spills elsewhere (first touch)."""
        lone = next((p for p in placements if p.threads < 2), None)
        if lone is not None:                # thread 0 chases, the others load: one thread, no load
            raise ConfigError(where, f"{entry}.placements", f"placement {lone.id} ({lone.shape}) runs 1 thread: "
                              "loadlat's thread 0 chases and the other threads are the load, so one thread "
                              "measures no loaded latency (only the idle latency, which memlat measures); give "
                              "it 2 or more CPUs (cpus: '0,1', compact: [2]) or use memlat")
        super().check_args(args, benches, placements, topo, config, where, entry)
        from numaplace.kinds.microbench import parse_args
        from numaplace.core.schema import setting
        opts, at = parse_args(args, benches, where, entry)
        auto = setting("platform", config) == "auto"
        sizes = [(text, size if size is not None else topo.named_size(text) or (named_size(text) if auto else None))
                 for text, size in opts.get("--sizes", [("DRAM", None)])]
        known = [(size, text) for text, size in sizes if size]
        if not known or not placements:
            return
        largest, text = max(known)
        here = f"{entry}.args[{at['--sizes'] + 1}]" if "--sizes" in at else f"{entry}.args"
        memory = machine_memory(topo, auto)
        for p in placements:
            total = largest * p.threads
            if memory and total > memory[0]:
                raise ConfigError(where, here, f"--sizes {text}: {counted(p.threads, 'buffer')} of {bytes_text(largest)} "
                                  f"(the chain and one per loader) are more than {memory[1]}")
            own = opts.get("--load-memory") == "own" and p.memory.policy != "membind"
            nodes = p.memory.nodes if p.memory.policy == "membind" else () if own else \
                (topo.node_of(p.cpus[0]),) if p.memory.policy == "local" else ()
            bound = sum(topo.memory_mb.get(n, 0) for n in nodes) << 20
            if 0 < bound < total:
                raise ConfigError(where, here, f"--sizes {text}: placement {p.id} puts {counted(p.threads, 'buffer')} of "
                                  f"{bytes_text(largest)} on node {format_cpulist(nodes)}, which holds "
                                  f"{bytes_text(bound)}; give smaller --sizes, fewer threads, or "
                                  "--load-memory own (each loader's buffer on its own node)")

    # -- its table, figure, summary and answer ------------------------------------------
    def make_tables(self, records, thresholds):
        import pandas as pd
        rows = []
        for rec in records:
            p = rec.placement
            results = (rec.output or {}).get("results") or []
            share_min = thresholds["memory_cell_share_min"]
            for r, row in zip(results, record_rows(rec, share_min)):
                rows.append({**{c: row.get(c) for c in COLUMNS if c in row},
                             "status": point_status(r, row, share_min),
                             "placement": p.get("shape") or p.get("id"), "load_memory": r.get("load_memory"),
                             "load_threads": r.get("load_threads"), "load_active": r.get("load_active"),
                             "load_nodes": _load_nodes(r),
                             "load_pages_by_node": ",".join(f"{n}:{c}" for n, c in
                                                            (r.get("load_pages_by_node") or {}).items()),
                             "delay": r.get("delay"), "load_mbps": r.get("load_mbps"), "attempt": rec.is_attempt})
        df = pd.DataFrame(rows, columns=COLUMNS)
        return {"loaded_latency": df.sort_values(["size_bytes", "placement_id", "load_memory", "delay", "rep",
                                                  "sample"], kind="stable").reset_index(drop=True)}

    @staticmethod
    def curves(table):
        """Median latency and load MB/s per (size, placement, load memory, delay), ok rows of
        current records, from the idle point (delay -1) to the heaviest load (delay 0)."""
        ok = table[(table["status"] == "ok") & ~table["attempt"].astype(str).isin(["True", "true"])]
        keys = ["size_bytes", "placement_id", "placement", "load_memory", "memory_node", "delay"]
        med = ok.groupby(keys, dropna=False).agg(latency_ns=("value", "median"), latency_min=("value", "min"),
                                                 latency_max=("value", "max"), load_mbps=("load_mbps", "median"),
                                                 load_nodes=("load_nodes", "first"), n=("value", "count"))
        return med.reset_index()

    def draw(self, tables, w):
        import matplotlib.pyplot as plt
        table = tables.get("loaded_latency")
        if table is None or table.empty:
            return
        curves = self.curves(table)
        for size, g in curves.groupby("size_bytes"):
            fig, ax = plt.subplots(figsize=(w.cfg["width"], 4.2))
            for (_, label, load_memory, mnode), c in g.groupby(["placement_id", "placement", "load_memory",
                                                                 "memory_node"], dropna=False):
                c = c.sort_values("load_mbps")
                loaders = _nodes(c.sort_values("delay")["load_nodes"].iloc[-1])
                ax.errorbar(c["load_mbps"] / 1000, c["latency_ns"],
                            yerr=[c["latency_ns"] - c["latency_min"], c["latency_max"] - c["latency_ns"]],
                            marker="o", capsize=2, label=f"{label}: memory node {mnode}, loaders on nodes "
                                                          f"{loaders} ({load_memory} memory)")
            ax.set_xlabel("load bandwidth drawn by the loaders (GB/s, 10^9 B/s; median)")
            ax.set_ylabel("chaser latency (ns per dependent load; median, min-max)")
            title = f"loadlat loaded latency — {int(size) / 2**20:.0f} MiB buffers"
            ax.set_title(title, loc="left", fontsize=10)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            w.save(fig, "loaded_latency", f"loadlat.{int(size)}", title,
                   {"bench": "loadlat", "class": "X", "variant": "default", "threads": None})

    def _ends(self, table):
        """Per (size, placement, load memory): its idle point and its heaviest load."""
        curves = self.curves(table)
        out = []
        for _, c in curves.groupby(["size_bytes", "placement_id", "load_memory", "memory_node"], dropna=False):
            idle, loaded = c[c["delay"] == -1], c[c["delay"] >= 0]
            if idle.empty or loaded.empty:
                continue
            heavy = loaded.loc[loaded["load_mbps"].idxmax()]
            out.append((idle.iloc[0], heavy))
        return out

    def summary(self, tables, md_table):
        table = tables.get("loaded_latency")
        if table is None or table.empty:
            return []
        curves = self.curves(table)
        cols = [("size (MiB)", lambda r: f"{int(r['size_bytes']) / 2**20:.0f}"), ("placement", "placement"),
                ("memory node", "memory_node"), ("loaders' nodes", lambda r: _nodes(r["load_nodes"]) if r["delay"] >= 0 else ""), ("load memory", "load_memory"),
                ("delay", lambda r: "idle" if r["delay"] == -1 else f"{int(r['delay'])}"),
                ("load MB/s", lambda r: f"{r['load_mbps']:.0f}"), ("latency ns", lambda r: f"{r['latency_ns']:.1f}"),
                ("n", "n")]
        return ["## Loaded latency", "",
                "The chaser's latency (median ns per dependent load) while the other threads of the run read "
                "memory, throttled by a delay (spin iterations after every 512 B; idle: no load); load MB/s is "
                "what the loaders drew during the same timed regions. Full rows in loaded_latency.csv.", "",
                md_table(curves, cols), ""]

    def answer(self, tables):
        table = tables.get("loaded_latency")
        if table is None or table.empty:
            return []
        runs = tables.get("runs")
        lines = []
        for idle, heavy in self._ends(table):
            numbers = (f"idle {idle['latency_ns']:.0f} ns; {heavy['latency_ns']:.0f} ns "
                       f"({heavy['latency_ns'] / idle['latency_ns'] - 1:+.0%}) under "
                       f"{heavy['load_mbps'] / 1000:.1f} GB/s of load from nodes {_nodes(heavy['load_nodes'])}")
            doubts = implausible(idle, heavy, tables.get("memory_matrix"))
            where = f"loaded latency ({heavy['placement']}, memory on node {heavy['memory_node']})"
            # a curve physics rules out is said first and kept out of the headline
            line = f"{where}: not a result: {'; '.join(doubts)} ({numbers})" if doubts else f"{where}: {numbers}"
            if runs is not None and "shared_cpus" in runs:
                mine = runs[(runs["bench"] == self.name) & (runs["placement_id"] == heavy["placement_id"])
                            & runs["current"].astype(bool)]
                if mine["shared_cpus"].astype(bool).any():   # another process's load is in the curve
                    line += "; measured while other load shared its CPUs"
            lines.append(line)
        return lines


FELL_UNDER_LOAD = 0.95              # the heaviest load's latency below 95 % of idle: no curve
IDLE_VS_MEMLAT = 2.0                # idle latency beyond 2x (or under 1/2) memlat's own cell


def implausible(idle, heavy, memory_matrix):
    """Why a curve's ends cannot be what they say, or []: a latency that falls under load
    (a loader that drew nothing, a chain that fits a cache), an idle latency far from
    memlat's own measurement of the same node at the nearest size (the same chase)."""
    out = []
    if heavy["latency_ns"] < FELL_UNDER_LOAD * idle["latency_ns"]:
        out.append(f"the latency fell under load ({idle['latency_ns']:.0f} ns idle, "
                   f"{heavy['latency_ns']:.0f} ns loaded)")
    m = memory_matrix
    if m is not None and len(m) and "bench" in m:
        node = heavy["memory_node"]
        cells = m[(m["bench"] == "memlat") & (m["memory_node"] == node) & (m["reader_node"] == node)]
        if len(cells) and node == node:
            near = cells.iloc[(cells["size_bytes"] - idle["size_bytes"]).abs().argsort()[:1]].iloc[0]
            ratio = idle["latency_ns"] / near["median"]
            if not 1 / IDLE_VS_MEMLAT <= ratio <= IDLE_VS_MEMLAT:
                out.append(f"idle {idle['latency_ns']:.0f} ns is {ratio:.1f}x memlat's {near['median']:.0f} ns on node "
                           f"{int(node)} at {int(near['size_bytes']) / 2**20:.0f} MiB")
    return out


register(LoadLat("loadlat", "loadlat loaded latency", "value", "ns", False))
