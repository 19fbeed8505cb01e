"""Parse /proc/<pid>/numa_maps: pages per NUMA node, weighted by their real page size.

One line per mapping (the kernel's show_numa_map()):

    <start> <policy> [file=<path> | heap | stack] [huge] [anon=N] [dirty=N] [mapped=N]
    [mapmax=N] [swapcache=N] [active=N] [writeback=N] [N<node>=pages ...] [kernelpagesize_kB=K]

- <policy> is mpol_to_str(): a mode name, optionally `=<flags>` and `:<nodelist>`.
  Modes: default, local, bind, interleave, prefer, "weighted interleave",
  "prefer (many)" (the last two contain a space). Flags: static | relative, and
  balancing, joined with `|` (e.g. `bind=static|balancing:0-1`).
- The path of a file mapping is escaped by seq_path(): space, tab, newline and `=` are
  written as octal (`\\040`), so a line splits on spaces safely. Deleted files and the
  objects behind shared anonymous memory read `/dev/zero (deleted)`, `/SYSV…`,
  `/memfd:…`, `/anon_hugepage (deleted)`.
- Kernels up to 4.x printed thread stacks as `stack:<tid>`.
- `N<k>=` counts pages of kernelpagesize_kB each: 4 for normal pages (a transparent huge
  page is counted as 512 of them), the huge page size (2048, 1048576) for hugetlb
  mappings, which carry the `huge` keyword. A mapping without resident pages ends after
  its policy/kind and has no kernelpagesize_kB.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

_POLICY = re.compile(r"^(?P<name>[a-z]+(?: \([a-z]+\)| [a-z]+)?)"
                     r"(?:=(?P<flags>[a-z|,]+))?(?::(?P<nodes>[0-9,\-]+))?$")
_OCTAL = re.compile(r"\\([0-7]{3})")
_ADDR = re.compile(r"^[0-9a-f]+$")

POLICIES = ("default", "local", "bind", "interleave", "prefer", "weighted interleave",
            "prefer (many)")
# file mappings whose pages are the process's own anonymous data (shared anonymous
# memory, SysV shm, memfd, MAP_HUGETLB)
ANON_OBJECTS = ("/dev/zero", "/SYSV", "/memfd:", "/anon_hugepage")


def _unescape(path):
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), path)


@functools.lru_cache(maxsize=64)
def parse_policy(text):
    """'bind=static|balancing:0-1' → ('bind', 'static|balancing', '0-1').

    An unknown mode (a newer kernel's) is kept as written rather than rejected."""
    m = _POLICY.match(text)
    if not m:
        return text, None, None
    return m.group("name"), m.group("flags"), m.group("nodes")


def _ends_policy(tok):
    """True for the first token after the policy (which may itself contain '=' and ' ')."""
    if tok in ("heap", "stack", "huge") or tok.startswith(("file=", "stack:")):
        return True
    k, eq, v = tok.partition("=")
    return bool(eq) and v.isdigit()                 # anon=, dirty=, N0=, kernelpagesize_kB=


@dataclass
class Mapping:
    start: str
    policy: str                    # mode: default, local, bind, interleave, prefer, ...
    policy_nodes: str | None       # the policy's node list as printed ("0-1,3"), if any
    policy_flags: str | None       # "static", "relative", "balancing", "static|balancing"
    kind: str                      # anon | heap | stack | file | huge
    path: str | None               # file mappings (unescaped), also hugetlbfs files
    page_kb: int                   # kernelpagesize_kB (4 if the line has no pages)
    pages: dict = field(default_factory=dict)     # node → pages (of page_kb each)
    counters: dict = field(default_factory=dict)  # anon, dirty, mapped, mapmax, active, ...

    @property
    def anon(self):
        return self.counters.get("anon", 0)

    @property
    def policy_text(self):
        """The policy as the kernel printed it."""
        return self.policy + (f"={self.policy_flags}" if self.policy_flags else "") + \
            (f":{self.policy_nodes}" if self.policy_nodes else "")

    @property
    def n_pages(self):
        return sum(self.pages.values())

    @property
    def bytes_per_node(self):
        return {n: p * self.page_kb * 1024 for n, p in self.pages.items()}

    @property
    def is_data(self):
        """Pages the process itself allocated and first-touched: anonymous memory, heap,
        stacks, hugetlb, shared anonymous objects, and private file mappings whose every
        resident page is a copy-on-write (anonymous) page. Page-cache pages of the binary
        and its libraries are not: where they are says who read the file first."""
        if self.kind != "file":
            return True
        if self.path and self.path.startswith(ANON_OBJECTS):
            return True
        return self.anon > 0 and self.anon == self.n_pages


def parse_line(line):
    """One numa_maps line → Mapping (None for a blank line; ValueError if malformed)."""
    words = line.rstrip("\n").split(" ")
    if not words or not words[0]:
        if line.strip():
            raise ValueError(f"malformed numa_maps line: {line!r}")
        return None
    start = words[0]
    if not _ADDR.match(start) or len(words) < 2 or not words[1]:
        raise ValueError(f"malformed numa_maps line: {line!r}")
    i = 1
    while i < len(words) and not _ends_policy(words[i]):
        i += 1
    if i == 1:
        raise ValueError(f"no memory policy in numa_maps line: {line!r}")
    name, flags, nodes = parse_policy(" ".join(words[1:i]))
    mp = Mapping(start, name, nodes, flags, "anon", None, 4)
    huge = False
    for tok in words[i:]:                          # str methods, not regexes: sampled often
        k, eq, v = tok.partition("=")
        if not eq:
            if tok == "huge":
                huge = True
            elif tok == "heap" or tok == "stack" or tok.startswith("stack:"):
                mp.kind = "stack" if tok != "heap" else "heap"
            # anything else (a future keyword) is ignored
        elif k == "file":
            mp.kind, mp.path = "file", _unescape(v) if "\\" in v else v
        elif v.isdigit():
            if k[:1] == "N" and k[1:].isdigit():
                mp.pages[int(k[1:])] = int(v)
            elif k == "kernelpagesize_kB":
                mp.page_kb = int(v)
            else:
                mp.counters[k] = int(v)
    if huge:
        mp.kind = "huge"
    return mp


def parse(text):
    return [m for m in (parse_line(l) for l in text.splitlines()) if m is not None]


def summarize(mappings):
    """Bytes per node of every mapping (total_bytes) and of the process's own data
    (data_bytes, see Mapping.is_data; data_pages: the same in numa_maps' own page counts,
    each of its mapping's page size), and data bytes per memory policy as printed
    (policies: tells which policy the pages were placed under)."""
    total, data, data_pages, policies = {}, {}, {}, {}
    for m in mappings:
        is_data = m.is_data
        for n, b in m.bytes_per_node.items():
            total[n] = total.get(n, 0) + b
            if is_data:
                data[n] = data.get(n, 0) + b
        if is_data:
            for n, k in m.pages.items():
                data_pages[n] = data_pages.get(n, 0) + k
        if is_data and m.pages:
            pol = m.policy_text
            policies[pol] = policies.get(pol, 0) + sum(m.bytes_per_node.values())
    return {"total_bytes": total, "data_bytes": data, "data_pages": data_pages, "policies": policies}
