"""Where a run's data pages were over time: the sampler's numa_maps samples, compacted
for the record (captures.pages_over_time) so that judging sees migrations (automatic
NUMA balancing moving pages mid-run) from the record alone."""
from __future__ import annotations

MAX_POINTS = 60


def pages_over_time(samples, max_points=MAX_POINTS):
    """[{"t": s, "data_bytes": {node: bytes}}] from samples with a numa_maps reading:
    every one when there are few, else evenly spread ones, always the first and last."""
    have = [s for s in samples if s.get("data_bytes")]
    if len(have) > max_points:
        step = (len(have) - 1) / (max_points - 1)
        have = [have[round(i * step)] for i in range(max_points)]
    return [{"t": s["t"], "data_bytes": {str(n): b for n, b in sorted(s["data_bytes"].items(), key=lambda kv: int(kv[0]))}}
            for s in have]
