"""Parse the report that NPB (official or numaplace's own) prints on stdout."""
from __future__ import annotations

import re

_FIELDS = {
    "time_s": (r"^\s*Time in seconds =\s+([0-9.]+)", float),
    "mops": (r"^\s*Mop/s total\s+=\s+([0-9.]+)", float),
    "verification": (r"^\s*Verification\s+=\s+(SUCCESSFUL|UNSUCCESSFUL)", str),
    "class": (r"^\s*Class\s+=\s+(\S)", str),
    "threads": (r"^\s*Total threads\s+=\s+(\d+)", int),
    "init_time_s": (r"^\s*Initialization time\s*[=:]\s*([0-9.]+)", float),
    "iterations": (r"^\s*Iterations\s+=\s+(\d+)", int),
    "size": (r"^\s*Size\s+=\s+(.+?)\s*$", str),
    "benchmark": (r"^\s*(\w+) Benchmark Completed", str),
    "version": (r"^\s*Version\s+=\s+(\S+)", str),
    "init_order": (r"^\s*INIT\s+=\s+(\S+)", str),
    "fflags": (r"^\s*FFLAGS\s+=\s+(.*?)\s*$", str),
}
_COMPILED = {k: (re.compile(p, re.M), conv) for k, (p, conv) in _FIELDS.items()}


def parse(text):
    """Fields of an NPB report; missing fields are None. `verified` is True only for an
    explicit SUCCESSFUL line (NPB's exit status says nothing about verification)."""
    out = {}
    for key, (rx, conv) in _COMPILED.items():
        m = rx.search(text)
        out[key] = conv(m.group(1)) if m else None
    out["verified"] = out["verification"] == "SUCCESSFUL"
    out["complete"] = out["time_s"] is not None and out["verification"] is not None
    out["implementation"] = "numaplace" if "numaplace" in text[:400] else ("nasa" if "NAS Parallel" in text[:400] else None)
    return out
