"""captures.pages_over_time (numaplace.run.pages_over_time): where a run's data pages were
over time, compacted for the record: every sample when there are few, else 60 evenly
spread ones with the first and the last; nodes in numeric order."""
from __future__ import annotations

import pytest

from numaplace.run.pages_over_time import MAX_POINTS, pages_over_time

pytestmark = pytest.mark.unit


def sample(t, **nodes):
    return {"t": t, "data_bytes": {int(n[1:]): b for n, b in nodes.items()}, "threads": 4}


def test_few_samples_are_kept_whole_without_those_lacking_a_numa_maps_reading():
    """Samples of the threads alone (no numa_maps) or with no data yet carry nothing to place."""
    samples = [{"t": 0.0, "threads": 1}, sample(0.01), sample(0.02, n0=4096),
               sample(0.5, n10=8192, n2=4096, n0=0), {"t": 0.9, "threads": 4}, sample(1.5, n1=12288)]
    out = pages_over_time(samples)
    assert out == [{"t": 0.02, "data_bytes": {"0": 4096}},
                   {"t": 0.5, "data_bytes": {"0": 0, "2": 4096, "10": 8192}},
                   {"t": 1.5, "data_bytes": {"1": 12288}}]
    assert list(out[1]["data_bytes"]) == ["0", "2", "10"]             # node 10 after node 2


def test_many_samples_are_thinned_to_60_evenly_spread_keeping_the_first_and_last():
    samples = [sample(i / 100, n0=4096 * i) for i in range(200)]
    out = pages_over_time(samples)
    assert MAX_POINTS == 60 and len(out) == 60
    assert out[0]["t"] == 0.0 and out[-1]["t"] == 1.99
    # index round(i * 199 / 59): 0, 3, 7, 10, 13, 17, ...
    assert [o["data_bytes"]["0"] // 4096 for o in out[:8]] == [0, 3, 7, 10, 13, 17, 20, 24]
    assert [o["data_bytes"]["0"] // 4096 for o in out[-4:]] == [189, 192, 196, 199]


def test_the_number_of_points_is_a_parameter():
    samples = [sample(float(i), n0=i) for i in range(11)]
    assert [o["t"] for o in pages_over_time(samples, max_points=4)] == [0.0, 3.0, 7.0, 10.0]   # step 10/3
    assert [o["t"] for o in pages_over_time(samples, max_points=11)] == [float(i) for i in range(11)]
    assert [o["t"] for o in pages_over_time(samples[:5], max_points=4)] == [0.0, 1.0, 3.0, 4.0]   # step 4/3
