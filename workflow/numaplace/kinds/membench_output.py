"""Parse what numaplace's memory micro-benchmarks (microbench/: membw, memlat, stream, loadlat) print.

Format (microbench/README.md): a `# numaplace <bench> format <n>` line, then lines
`<tag>: key=value key=value ...` with tags cache, system, run, result (one per measured
value), chain (memlat --dump-chain only) and done (the last line of a complete run)."""
from __future__ import annotations

_INT_KEYS = {"size_bytes", "threads", "thread", "reader_cpu", "reader_node", "alloc_cpu", "alloc_node",
             "memory_node", "pages", "huge_kb", "rep", "passes", "bytes", "loads", "stride", "lines", "migrated",
             "l1d", "l2", "l3", "llc", "llc_level", "llc_total", "reps", "results", "complete", "verified",
             "flush", "per_octave", "min_loads", "page_size", "seed",
             "delay", "load_threads", "load_active", "load_bytes", "block_bytes"}
_FLOAT_KEYS = {"value", "seconds", "pages_on_memory_node", "min_time", "load_mbps"}


def _fields(rest):
    out = {}
    for token in rest.split():
        key, sep, value = token.partition("=")
        if not sep:
            continue
        if key in _INT_KEYS:
            out[key] = int(value)
        elif key in _FLOAT_KEYS:
            out[key] = float(value)
        elif key in ("pages_by_node", "load_pages_by_node"):
            out[key] = {} if value == "none" else {int(n): int(c) for n, c in (kv.split(":") for kv in value.split(","))}
        elif key == "next":
            out[key] = [int(v) for v in value.split(",") if v]
        else:
            out[key] = value
    return out


def parse(text):
    """{"bench", "format", "cache", "system", "run", "results": [...], "chains": [...],
    "complete", "verified"}: complete only when the closing `done:` line is there (a run
    killed half-way keeps its results but is not complete); verified only when that line
    says the buffer still held what was written (membw) or the chain was still one cycle
    (memlat)."""
    out = {"bench": None, "format": None, "cache": {}, "system": {}, "run": {}, "results": [],
           "chains": [], "done": None}
    for line in text.splitlines():
        if line.startswith("# numaplace "):
            words = line.split()
            out["bench"] = words[2] if len(words) > 2 else None
            out["format"] = int(words[4]) if len(words) > 4 and words[4].isdigit() else None
            continue
        tag, sep, rest = line.partition(":")
        if not sep or tag not in ("cache", "system", "run", "result", "chain", "done"):
            continue
        try:
            fields = _fields(rest)
        except ValueError:
            continue                      # a torn line (killed mid-write): not a value
        if tag == "result":
            if "value" in fields and "size_bytes" in fields:
                out["results"].append(fields)
        elif tag == "chain":
            out["chains"].append(fields)
        elif tag == "done":
            out["done"] = fields
        else:
            out[tag] = fields
    done = out["done"] or {}
    out["complete"] = bool(done) and done.get("complete") == 1 and done.get("results") == len(out["results"])
    out["verified"] = out["complete"] and done.get("verified") == 1
    return out


def share_on(result, node):
    """Share of the buffer's pages that were on `node` right after the first touch."""
    by_node = {int(n): c for n, c in (result.get("pages_by_node") or {}).items()}   # JSON: str keys
    total = result.get("pages") or sum(by_node.values())
    return by_node.get(int(node), 0) / total if total else 0.0

