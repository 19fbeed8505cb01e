"""CPU and node lists in the kernel's text form ('0-3,8'): what sysfs, taskset, numactl
and aprun read and write. A light module: the runner parses its placement's CPUs with it
before anything else is imported (see cli._run)."""
from __future__ import annotations

import itertools
import re

from numaplace import ConfigError

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def parse_cpulist(text, where="cpu list", entry="cpus"):
    """'0-3,8' → [0, 1, 2, 3, 8] (sorted, unique); raises ConfigError on bad syntax."""
    if isinstance(text, int):
        return [text]
    if isinstance(text, list):
        text = ",".join(str(x) for x in text)
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(where, entry, f"expected a CPU list like '0-3,8', got {text!r}")
    cpus = set()
    for part in text.replace(" ", "").split(","):
        m = _RANGE.match(part)
        if not m:
            raise ConfigError(where, entry, f"bad CPU list element {part!r} in {text!r} "
                              "(use numbers and ranges like '0-3,8')")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ConfigError(where, entry, f"descending range {part!r} in {text!r}")
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def check_cpulist_text(text, where, entry, max_id, limit_name="cpu_id"):
    """Before a user's list is expanded: ids within the limit, no id listed twice.
    Works on the ranges, so '0-99999999' costs nothing to refuse."""
    from numaplace.core import limits
    if isinstance(text, int):
        text = str(text)
    if isinstance(text, list):
        text = ",".join(str(x) for x in text)
    if not isinstance(text, str):
        return
    spans = []
    for part in text.replace(" ", "").split(","):
        m = _RANGE.match(part)
        if not m:
            continue                 # parse_cpulist names the bad element
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi > max_id:
            limits.refuse(where, entry, "id", hi, limit_name, max_id)
        spans.append((lo, hi))
    spans.sort()
    for (lo1, hi1), (lo2, hi2) in zip(spans, spans[1:]):
        if lo2 <= hi1:
            raise ConfigError(where, entry, f"{lo2} is listed twice in {text!r}")


def format_cpulist(cpus, sep=","):
    """[0, 1, 2, 3, 8] → '0-3,8' (the form taskset, numactl and aprun accept)."""
    out = []
    for _, grp in itertools.groupby(enumerate(sorted(set(cpus))), lambda p: p[1] - p[0]):
        vals = [v for _, v in grp]
        out.append(str(vals[0]) if len(vals) == 1 else f"{vals[0]}-{vals[-1]}")
    return sep.join(out)
