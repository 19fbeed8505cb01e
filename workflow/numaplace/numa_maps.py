"""Parse /proc/<pid>/numa_maps: pages per NUMA node, weighted by their real page size.

Line form: <start> <policy>[=flags][:nodes] [file=<path>|heap|stack|huge] [key=value ...]
Policies include forms with a space ("weighted interleave:0-3", "prefer (many):0-1").
Nk= counts pages of kernelpagesize_kB each (huge pages for hugetlb mappings).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_POLICY = re.compile(r"^(?P<name>weighted interleave|prefer \(many\)|[a-z]+)"
                     r"(?:=(?P<flags>[a-z,]+))?(?::(?P<nodes>[0-9,\-]+))?$")
_NODE = re.compile(r"^N(\d+)=(\d+)$")


@dataclass
class Mapping:
    start: str
    policy: str
    policy_nodes: str | None
    policy_flags: str | None
    kind: str                      # anon | heap | stack | file | huge
    path: str | None
    page_kb: int
    pages: dict = field(default_factory=dict)     # node → pages (of page_kb each)
    anon: int = 0

    @property
    def bytes_per_node(self):
        return {n: p * self.page_kb * 1024 for n, p in self.pages.items()}


def parse_line(line):
    line = line.rstrip("\n")
    if not line.strip():
        return None
    start, _, rest = line.partition(" ")
    # the policy may contain one space; find the split where the policy regex matches
    words = rest.split(" ")
    for n in (2, 1):
        cand = " ".join(words[:n])
        m = _POLICY.match(cand)
        if m and (n == 1 or m.group("name") in ("weighted interleave", "prefer (many)")):
            tokens = words[n:]
            break
    else:
        raise ValueError(f"unrecognised numa_maps policy in: {line!r}")
    mp = Mapping(start, m.group("name"), m.group("nodes"), m.group("flags"), "anon", None, 4)
    for tok in tokens:
        if not tok:
            continue
        if tok in ("heap", "stack", "huge"):
            mp.kind = tok
        elif tok.startswith("file="):
            mp.kind, mp.path = "file", tok[5:]
        elif (nm := _NODE.match(tok)):
            mp.pages[int(nm.group(1))] = int(nm.group(2))
        elif tok.startswith("kernelpagesize_kB="):
            mp.page_kb = int(tok.split("=", 1)[1])
        elif tok.startswith("anon="):
            mp.anon = int(tok[5:])
    if mp.kind == "file" and " huge " in f" {rest} ":
        mp.kind = "huge"
    return mp


def parse(text):
    return [m for m in (parse_line(l) for l in text.splitlines()) if m is not None]


def summarize(mappings):
    """Bytes per node: all mappings, and the process's own data (anonymous, heap,
    stack, huge: what the benchmark allocated and first-touched)."""
    total, data = {}, {}
    for m in mappings:
        for n, b in m.bytes_per_node.items():
            total[n] = total.get(n, 0) + b
            if m.kind != "file":
                data[n] = data.get(n, 0) + b
    return {"total_bytes": total, "data_bytes": data}
