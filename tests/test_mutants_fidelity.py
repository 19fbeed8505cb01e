"""Fidelity (numaplace.judge.fidelity): when pages that left their nodes are put down to
those nodes being full. Written against the mutants mutmut left alive
(tests/benchmarks/mutation_score.sh)."""
from __future__ import annotations

import pytest

from numaplace.judge import fidelity
from numaplace.record.store import Record

pytestmark = pytest.mark.unit

MIB = 2**20


def spill_reason(free_by_node, allowed, data_bytes):
    return fidelity._full_nodes(Record({"system": {"free_mb_by_node": free_by_node}}), allowed, data_bytes)


def test_nodes_with_room_for_the_data_are_not_full():
    assert spill_reason({"0": 100, "1": 50}, [0, 1], 150 * MIB) is None        # exactly room
    assert spill_reason({"0": 100}, [0], 60 * MIB) is None


def test_nodes_without_room_explain_the_spill():
    why = spill_reason({"0": 100, "1": 50}, [0, 1], 150 * MIB + 1)
    assert why.startswith("spill: node(s) 0-1 had 150 MiB free at the start, the run's data needed ")
    assert why.endswith(": the kernel put the rest on other nodes")
    assert spill_reason({"0": 100}, [0], 150 * MIB) is not None                # 100 MiB for 150


def test_no_reason_without_the_free_memory_of_every_allowed_node():
    assert spill_reason({"0": 100}, [0, 1], 500 * MIB) is None
    assert fidelity._full_nodes(Record({}), [0], 500 * MIB) is None


# -- pages that changed node while numa_balancing was on ----------------------------------

def balancing_run(samples, balancing=(1, 0), memory="local", migrated=777):
    """A first-touch run's record with numa_balancing on and its pages over time
    ({t: {node: MiB}})."""
    return Record({"system": {"numa_balancing": balancing[0], "numa_balancing_at_end": balancing[1],
                              "vmstat_delta": {"numa_pages_migrated": migrated}},
                   "placement": {"memory": memory},
                   "captures": {"pages_over_time": [{"t": t, "data_bytes": {str(n): mib * MIB for n, mib in d.items()}}
                                                    for t, d in samples.items()]}})


def test_migration_as_a_record_shows_it():
    """300 MiB settled from t=0.8 s (285 MiB: exactly 5 % short still counts as settled;
    30 MiB at 0.5 s does not); a third of the pages moved from node 0 to node 1 at 2 s
    (the same share at 3 s is not a later move), node 2's pages left."""
    rec = balancing_run({0.5: {0: 30}, 0.8: {0: 270, 2: 15}, 1.0: {0: 285, 2: 15}, 2.0: {0: 200, 1: 100},
                         3.0: {0: 200, 1: 100}, 4.0: {0: 210, 1: 90}})
    m = fidelity.migration(rec)
    reasons = m.pop("reasons")
    assert m == {"balancing": {"numa_balancing": 1, "numa_balancing_at_end": 0}, "moved_max": 0.05,
                 "numa_pages_migrated_system": 777, "t_first": 0.8, "t_moved": 2.0, "t_last": 4.0,
                 "samples": 5, "bytes": 300 * MIB, "moved_share": 0.3333,
                 "shares_first": {"0": 0.9474, "1": 0, "2": 0.0526},
                 "shares_moved": {"0": 0.6667, "1": 0.3333, "2": 0}, "verdict": "drift"}
    assert reasons == ["numa_balancing on: 33.3% of 300.0 MiB data pages changed node between t=0.8 s and "
                       "t=2 s (max 5.0%): N0 94.7%→66.7% N1 0.0%→33.3% N2 5.3%→0.0%"]


def test_migration_at_the_studys_limit_is_no_drift():
    rec = balancing_run({1.0: {0: 100}, 2.0: {0: 75, 1: 25}})
    assert fidelity.migration(rec)["verdict"] == "drift"
    m = fidelity.migration(rec, {"migration_moved_max": 0.25})
    assert (m["verdict"], m["moved_max"], m["moved_share"]) == ("ok", 0.25, 0.25)


def test_migration_needs_two_settled_samples_and_balancing_on_and_first_touch():
    m = fidelity.migration(balancing_run({1.0: {0: 100}}, migrated=None))
    assert m == {"balancing": {"numa_balancing": 1, "numa_balancing_at_end": 0}, "moved_max": 0.05,
                 "verdict": "unknown",
                 "reason": "numa_balancing on, but 1 sample(s) of the settled footprint: cannot see pages move"}
    assert fidelity.migration(balancing_run({}))["reason"].startswith("numa_balancing on, but 0 sample(s)")
    assert fidelity.migration(balancing_run({1.0: {0: 100}, 2.0: {1: 100}}, balancing=(0, 0))) is None
    assert fidelity.migration(balancing_run({1.0: {0: 100}, 2.0: {1: 100}}, balancing=(0, 1)))["verdict"] == "drift"
    assert fidelity.migration(balancing_run({1.0: {0: 100}, 2.0: {1: 100}}, memory="membind")) is None


# -- the whole verdict (judge) ----------------------------------------------------------

def judged_run(data_by_node, bench="cg", output=None, system=None, pages_over_time=None):
    """An executed run on CPUs 2-3 (node 1), memory local, its steady and peak footprint
    `data_by_node` ({node: bytes}); two threads that stayed on their CPUs."""
    view = {"t": 1.5, "data_bytes": {str(n): b for n, b in data_by_node.items()},
            "policies": {"default": sum(data_by_node.values())}, "team": 2}
    caps = {"numa_maps": {"samples": 9, "peak": view, "steady": view, "last": view},
            "threads": {"100": {"cpus": {"2": 40}, "allowed": "2-3"}, "101": {"cpus": {"3": 40}, "allowed": "2-3"}},
            "team": 2, "errors": []}
    if pages_over_time is not None:
        caps["pages_over_time"] = pages_over_time
    return {"run_id": f"{bench}.x.r1", "status": "ok", "bench": bench,
            "placement": {"cpus": "2-3", "threads": 2, "nodes": "1", "memory": "local", "memory_nodes": "",
                          "binding": "process"},
            "topology": {"nodes": {"0": "0-1", "1": "2-3"}}, "system": system or {},
            "output": output if output is not None else {"threads": 2}, "captures": caps}


def test_a_run_found_not_needed_is_said_not_to_have_run():
    """A record of status not-needed (as runner.record_not_needed writes it) did not
    execute: its verdict says so by its status, not by its missing capture."""
    rec = {"run_id": "cg.x.r3", "status": "not-needed", "reason": "case decided", "output": None,
           "captures": None, "captures_note": "the run did not execute: adaptive repetitions found it not needed"}
    assert fidelity.judge(rec) == {"verdict": "unknown", "reason": "the run did not execute (not-needed)"}


def test_the_studys_migration_limit_reaches_the_whole_verdict():
    """judge() judges pages moved by numa_balancing under the study's migration_moved_max,
    not the schema's default: 25 % moved is drift at 5 % and ok at 30 %."""
    pot = [{"t": 1.0, "data_bytes": {"1": 100 * MIB}}, {"t": 2.0, "data_bytes": {"1": 75 * MIB, "0": 25 * MIB}}]
    rec = judged_run({1: 75 * MIB, 0: 25 * MIB}, system={"numa_balancing": 1}, pages_over_time=pot)
    strict = fidelity.judge(rec, {"memory_share_min": 0.7})
    assert strict["verdict"] == "drift" and strict["migration"]["verdict"] == "drift"
    assert strict["migration"]["moved_max"] == 0.05
    loose = fidelity.judge(rec, {"memory_share_min": 0.7, "migration_moved_max": 0.3})
    assert loose["migration"]["moved_max"] == 0.3 and loose["migration"]["verdict"] == "ok"
    assert loose["verdict"] == "ok" and loose["settings"]["migration_moved_max"] == 0.3


def test_a_memory_benchmark_sample_holding_exactly_its_buffer_is_judged():
    """memlat's largest buffer 8 MiB: a peak sample of exactly 8 MiB saw it all (judged,
    here ok); one byte less caught it mid first touch (unknown)."""
    out = {"threads": 2, "results": [{"size_bytes": 8 * MIB, "thread": 0}]}
    m = fidelity.judge(judged_run({1: 8 * MIB}, bench="memlat", output=out))["memory"]
    assert m["verdict"] == "ok" and m["bytes"] == 8 * MIB, m
    m = fidelity.judge(judged_run({1: 8 * MIB - 1}, bench="memlat", output=out))["memory"]
    assert m["verdict"] == "unknown" and "less than the 8.0 MiB buffer" in m["reason"], m
