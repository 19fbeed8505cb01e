"""Placement fidelity verdicts on synthetic run records: ok, drift (with numbers), unknown."""
from __future__ import annotations

import copy
import json

import pytest

from numaplace.core.cpulist import parse_cpulist
from numaplace.judge import fidelity
from numaplace.judge.fidelity import judge, thresholds_of
from numaplace.record.store import Record

MiB = 2**20
TOPO = {"name": "auto", "nodes": {"0": "0-1", "1": "2-3", "2": "4-5", "3": "6-7"}}


def record(cpus="2-3", memory="local", memory_nodes="", binding="process", nodes="1",
           data=None, policies=None, threads=None, team=None, npb_threads=None, steady=True,
           capture_settings=None):
    """A run record as runner.execute writes it, reduced to what fidelity reads."""
    ncpu = len(threads) if threads else 2
    data = data if data is not None else {1: 64 * MiB}
    if threads is None:
        threads = {"100": {"cpus": {"2": 40}, "allowed": "2-3", "by_allowed": {"2-3": {"2": 40}}},
                   "101": {"cpus": {"3": 40}, "allowed": "2-3", "by_allowed": {"2-3": {"3": 40}}}}
    expected = len(parse_cpulist(cpus))
    view = {"t": 1.5, "data_bytes": {str(n): b for n, b in data.items()},
            "total_bytes": {str(n): b for n, b in data.items()},
            "policies": policies if policies is not None else {"local": sum(data.values())},
            "threads": ncpu, "team": team if team is not None else ncpu}
    return {
        "run_id": "cg.W.default.x.r1", "status": "ok",
        "placement": {"cpus": cpus, "threads": expected, "nodes": nodes, "memory": memory,
                      "memory_nodes": memory_nodes, "binding": binding, "launcher": "numactl"},
        "topology": TOPO,
        "capture_settings": capture_settings or {"numa_maps": True},
        "output": {"threads": npb_threads if npb_threads is not None else expected},
        "captures": {
            "numa_maps": {"samples": 12, "peak": view, "steady": view if steady else None, "last": view},
            "threads": threads, "team": team if team is not None else ncpu,
            "numastat_process_taken": True, "errors": []},
    }


def pinned(*pairs, early=None):
    """Threads bound one per CPU: pairs of (tid, cpu); early: {tid: {mask: {cpu: n}}}."""
    out = {}
    for tid, cpu in pairs:
        by = {str(cpu): {str(cpu): 30}}
        by.update((early or {}).get(tid, {}))
        cpus = {}
        for counts in by.values():
            for c, n in counts.items():
                cpus[c] = cpus.get(c, 0) + n
        out[str(tid)] = {"cpus": cpus, "allowed": str(cpu), "by_allowed": by}
    return out


# -- ok ------------------------------------------------------------------------------

def test_local_ok():
    v = judge(record())
    assert v["verdict"] == "ok", v
    assert v["threads"]["verdict"] == "ok" and v["threads"]["threads_seen"] == 2
    m = v["memory"]
    assert m["verdict"] == "ok" and m["allowed_nodes"] == [1] and m["share_on_allowed"] == 1.0
    assert m["distribution"] == {"1": 1.0} and m["bytes"] == 64 * MiB and m["basis"] == "steady"
    json.dumps(v)                                   # goes into record.json as is


def test_membind_ok():
    v = judge(record(cpus="0-1", nodes="0", memory="membind", memory_nodes="2",
                       data={2: 99 * MiB, 0: 1 * MiB}, policies={"bind:2": 100 * MiB},
                       threads={"1": {"cpus": {"0": 5}, "allowed": "0-1"},
                                "2": {"cpus": {"1": 5, "0": 1}, "allowed": "0-1"}}))
    assert v["verdict"] == "ok", v
    assert v["memory"]["share_on_allowed"] == 0.99 and v["memory"]["share_under_policy"] == 1.0


def test_interleave_ok_within_tolerance():
    data = {0: 26 * MiB, 1: 24 * MiB, 2: 25 * MiB, 3: 25 * MiB}
    v = judge(record(cpus="0-1", nodes="0", memory="interleave", memory_nodes="0-3", data=data,
                       policies={"interleave:0-3": 100 * MiB},
                       threads={"1": {"cpus": {"0": 5}, "allowed": "0-1"}, "2": {"cpus": {"1": 5}, "allowed": "0-1"}}))
    assert v["verdict"] == "ok", v
    assert v["memory"]["interleave_max_deviation"] == 0.01


def test_local_two_nodes_split_by_first_touch_is_ok():
    # 1/1 on nodes 0 and 3: local allows both nodes; how pages split is the result
    v = judge(record(cpus="0,6", nodes="0,3", binding="threads", data={0: 30 * MiB, 3: 20 * MiB},
                       threads=pinned((10, 0), (11, 6))))
    assert v["verdict"] == "ok", v
    assert v["memory"]["allowed_nodes"] == [0, 3]
    assert v["threads"]["bound_to"] == {"10": 0, "11": 6}


def test_pinned_master_samples_before_binding_are_not_judged():
    # libgomp binds the initial thread in its constructor: before that it may run anywhere
    v = judge(record(cpus="0,6", nodes="0,3", binding="threads", data={0: 50 * MiB},
                       threads=pinned((10, 0), (11, 6), early={10: {"0-7": {"5": 2}}})))
    assert v["verdict"] == "ok", v
    assert v["threads"]["samples_before_binding"] == {"10": 2}


def test_first_touch_default_policy_counts_as_local():
    v = judge(record(policies={"default": 64 * MiB}))
    assert v["verdict"] == "ok"


# -- drift, with the numbers ---------------------------------------------------------------

def test_membind_overridden_is_drift_with_numbers():
    # the plan says membind 2, the run was started with --membind=3
    v = judge(record(cpus="0-1", nodes="0", memory="membind", memory_nodes="2",
                       data={3: 80 * MiB}, policies={"bind:3": 80 * MiB},
                       threads={"1": {"cpus": {"0": 5}, "allowed": "0-1"}, "2": {"cpus": {"1": 5}, "allowed": "0-1"}}))
    assert v["verdict"] == "drift"
    m = v["memory"]
    assert m["verdict"] == "drift" and m["share_on_allowed"] == 0.0 and m["distribution"] == {"3": 1.0}
    assert m["bytes_per_node"] == {"3": 80 * MiB} and m["share_under_policy"] == 0.0
    text = " ".join(v["reasons"])
    assert "0.0% of 80.0 MiB data pages on membind node(s) 2" in text and "N3=100.0%" in text
    assert "bind:3 (80.0 MiB)" in text and "asks for membind 2" in text
    assert v["threads"]["verdict"] == "ok"


def test_pages_elsewhere_than_local_nodes_is_drift():
    v = judge(record(data={1: 70 * MiB, 0: 30 * MiB}))
    assert v["verdict"] == "drift" and v["memory"]["share_on_allowed"] == 0.7
    assert "70.0% of 100.0 MiB" in v["reasons"][0] and "N0=30.0% N1=70.0%" in v["reasons"][0]


def test_policy_not_applied_is_drift_even_if_pages_happen_to_be_right():
    # asked membind 1, but the pages were placed by first touch (policy default)
    v = judge(record(memory="membind", memory_nodes="1", policies={"default": 64 * MiB}))
    assert v["verdict"] == "drift" and v["memory"]["share_on_allowed"] == 1.0
    assert "asks for membind 1" in v["reasons"][0]


def test_uneven_interleave_is_drift():
    data = {0: 40 * MiB, 1: 20 * MiB, 2: 20 * MiB, 3: 20 * MiB}
    rec = record(cpus="0-1", nodes="0", memory="interleave", memory_nodes="0-3", data=data,
                 policies={"interleave:0-3": 100 * MiB},
                 threads={"1": {"cpus": {"0": 5}, "allowed": "0-1"}, "2": {"cpus": {"1": 5}, "allowed": "0-1"}})
    v = judge(rec)
    assert v["verdict"] == "drift" and v["memory"]["interleave_max_deviation"] == 0.15
    assert v["memory"]["interleave_tolerance"] == 0.14         # 0.1 + 4 MiB of 100 MiB
    assert "uneven" in v["reasons"][0] and "N0=40.0%" in v["reasons"][0] and "± 14.0%" in v["reasons"][0]
    # the tolerance is a threshold of the judgement (the study's fidelity section), not of
    # the record: a threshold stored in an old record's capture settings is not read
    assert judge(rec, {"interleave_tolerance": 0.2})["verdict"] == "ok"
    assert judge(rec, {"interleave_tolerance": 0.05})["verdict"] == "drift"
    rec["capture_settings"] = {"fidelity": {"interleave_tolerance": 0.2}}
    assert judge(rec)["verdict"] == "drift"


def test_interleave_slack_for_huge_page_granularity():
    # 24 MiB interleaved over 4 nodes in 2 MiB transparent huge pages: 4/3/3/2 pages
    data = {0: 8 * MiB, 1: 6 * MiB, 2: 6 * MiB, 3: 4 * MiB}
    rec = record(cpus="0-1", nodes="0", memory="interleave", memory_nodes="0-3", data=data,
                 policies={"interleave:0-3": 24 * MiB},
                 threads={"1": {"cpus": {"0": 5}, "allowed": "0-1"}, "2": {"cpus": {"1": 5}, "allowed": "0-1"}})
    v = judge(rec)          # deviation 1/12 ≈ 0.083: within 0.1 + 4/24
    assert v["verdict"] == "ok" and v["memory"]["interleave_tolerance"] == round(0.1 + 4 / 24, 4)
    assert judge(rec, {"interleave_tolerance": 0.0, "interleave_slack_bytes": 0})["verdict"] == "drift"


def test_memory_share_threshold_is_configurable():
    rec = record(data={1: 85 * MiB, 0: 15 * MiB})
    assert judge(rec)["verdict"] == "drift"
    assert judge(rec, {"memory_share_min": 0.8})["verdict"] == "ok"
    v = judge(rec, {"memory_share_min": 0.8})
    assert v["verdict"] == "ok" and v["settings"]["memory_share_min"] == 0.8
    assert v["settings"]["interleave_tolerance"] == thresholds_of()["interleave_tolerance"]


def test_thread_outside_the_placement_is_drift():
    threads = {"100": {"cpus": {"2": 40}, "allowed": "2-3"},
               "101": {"cpus": {"3": 30, "5": 2}, "allowed": "2-3,5", "by_allowed": {"2-3,5": {"3": 30, "5": 2}}}}
    v = judge(record(threads=threads))
    assert v["verdict"] == "drift" and v["memory"]["verdict"] == "ok"
    t = v["threads"]
    assert t["outside_cpus"] == {"101": [5]} and t["mask_outside"] == {"101": "2-3,5"}
    assert "tid 101 on 5" in v["reasons"][0]


def test_pinned_threads_sharing_a_cpu_is_drift():
    v = judge(record(cpus="0,6", nodes="0,3", binding="threads", data={0: 50 * MiB},
                       threads=pinned((10, 0), (11, 0))))
    assert v["verdict"] == "drift" and v["threads"]["sharing_cpu"] == {"0": ["10", "11"]}


def test_pinned_thread_left_unbound_is_drift():
    threads = pinned((10, 0))
    threads["11"] = {"cpus": {"0": 3, "6": 3}, "allowed": "0,6", "by_allowed": {"0,6": {"0": 3, "6": 3}}}
    v = judge(record(cpus="0,6", nodes="0,3", binding="threads", data={0: 50 * MiB}, threads=threads))
    assert v["verdict"] == "drift" and v["threads"]["unbound"] == {"11": "0,6"}


def test_a_master_seen_only_before_its_team_started_is_unknown_not_drift():
    """Pinned threads, but the capture saw only the master, still on the launch mask,
    before its first parallel region bound it (a short run on a slow machine): the run
    ended before its team was seen, which is unknown; a mask wider than the placement's
    CPUs is still drift."""
    early = {"10": {"cpus": {"0": 2}, "allowed": "0,6", "by_allowed": {"0,6": {"0": 2}}}}
    v = judge(record(cpus="0,6", nodes="0,3", binding="threads", data={0: 50 * MiB}, threads=early, team=1))
    assert v["threads"]["verdict"] == "unknown" and "ended before its parallel part" in v["threads"]["reason"], v
    wide = {"10": {"cpus": {"0": 2}, "allowed": "0-7", "by_allowed": {"0-7": {"0": 2}}}}
    v = judge(record(cpus="0,6", nodes="0,3", binding="threads", data={0: 50 * MiB}, threads=wide, team=1))
    assert v["threads"]["verdict"] == "drift", v


def test_npb_thread_count_differs_is_drift():
    v = judge(record(npb_threads=1))
    assert v["verdict"] == "drift" and "NPB ran 1 threads, the placement has 2" in v["reasons"][0]


# -- unknown --------------------------------------------------------------------------------

def test_aprun_has_no_capture():
    rec = record()
    rec["captures"] = None
    rec["captures_note"] = "aprun: the process runs on a compute node; capture not available"
    v = judge(rec)
    assert v == {"verdict": "unknown", "reason": rec["captures_note"]}


@pytest.mark.parametrize("status", ["placement-failed", "not-idle"])
def test_runs_that_did_not_execute(status):
    rec = record()
    rec["status"] = status
    rec.pop("captures")
    assert judge(rec)["verdict"] == "unknown" and status in judge(rec)["reason"]


def test_footprint_never_steady_is_unknown():
    v = judge(record(steady=False))
    assert v["verdict"] == "unknown" and v["memory"]["verdict"] == "unknown"
    assert "never settled" in v["memory"]["reason"] and "64.0 MiB" in v["memory"]["reason"]
    assert v["threads"]["verdict"] == "ok"


def test_too_little_data_is_unknown():
    v = judge(record(data={0: 8192}))
    assert v["verdict"] == "unknown" and "8192 bytes" in v["memory"]["reason"]


def test_team_not_seen_is_unknown():
    # the sampler saw only the initial thread: the run ended before its parallel part
    threads = {"100": {"cpus": {"2": 1}, "allowed": "2-3"}}
    v = judge(record(threads=threads, team=1))
    assert v["verdict"] == "unknown"
    assert "1 of 2 threads" in v["threads"]["reason"] and "1 of 2 threads" in v["memory"]["reason"]


def test_no_samples_at_all_is_unknown():
    rec = record()
    rec["captures"] = {"numa_maps": {"samples": 0, "peak": None, "steady": None, "last": None},
                       "threads": {}, "errors": ["the process never ran /x/cg.W.x while sampled"]}
    v = judge(rec)
    assert v["verdict"] == "unknown" and v["threads"]["verdict"] == v["memory"]["verdict"] == "unknown"
    assert "never ran /x/cg.W.x" in v["memory"]["reason"]


def test_drift_wins_over_unknown():
    rec = record(data={0: 64 * MiB}, steady=True)
    rec["captures"]["threads"] = {}
    v = judge(rec)
    assert v["verdict"] == "drift" and v["threads"]["verdict"] == "unknown"


def test_records_without_steady_sample_fall_back_to_peak():
    rec = record()
    del rec["captures"]["numa_maps"]["steady"]
    for t in rec["captures"]["threads"].values():
        t.pop("by_allowed")
    old = copy.deepcopy(rec)
    v = judge(rec)
    assert v["verdict"] == "ok" and v["memory"]["basis"] == "peak"
    assert rec == old                               # the record is not modified


def _freed_tail(kind):
    """A run whose buffer (64 MiB on node 2, the membind node) was freed before the end:
    the last steady samples hold only the runtime's 1 MiB, mostly on the reader's node 0."""
    rec = record(cpus="0-1", nodes="0", memory="membind", memory_nodes="2",
                 data={2: 64 * MiB}, policies={"bind:2": 64 * MiB})
    rec["bench"] = kind
    tail = copy.deepcopy(rec["captures"]["numa_maps"]["peak"])
    tail.update(t=9.0, data_bytes={"0": 120 * 1024, "2": 900 * 1024}, policies={"bind:2": 1020 * 1024})
    rec["captures"]["numa_maps"]["steady"] = tail
    rec["placement"]["threads"] = 2
    rec["captures"]["threads"] = pinned((1, 0), (2, 1))
    return rec


def test_memory_benchmarks_are_judged_at_their_peak_not_the_tail_after_free():
    """memlat/membw free each size's buffer with the team alive: their working set is the
    peak sample; judging the steady tail called a perfect membind run drift (CI, numa-vm)."""
    v = judge(_freed_tail("memlat"))
    assert v["memory"]["basis"] == "peak" and v["memory"]["bytes"] == 64 * MiB, v
    assert v["memory"]["verdict"] == "ok" and v["memory"]["share_on_allowed"] == 1.0


def test_npb_kernels_are_still_judged_at_the_steady_footprint():
    v = judge(_freed_tail("cg"))
    assert v["memory"]["basis"] == "steady" and v["memory"]["bytes"] == 1020 * 1024


def test_memory_benchmark_peak_below_its_buffer_is_unknown_not_drift():
    """The sampler caught the 8 MiB buffer mid first touch (1.04 MiB of it on the memory
    node, the reader's 120 KiB runtime on its own node): numa-vm CI, memlat r2 m1."""
    rec = record(cpus="4-5", nodes="2", memory="local", data={1: 1093632, 2: 122880},
                 policies={"default": 1216512})
    rec["bench"] = "memlat"
    rec["captures"]["threads"] = pinned((1, 4), (2, 5))
    rec["output"] = {"threads": 2, "results": [{"size_bytes": 8 << 20, "thread": t} for t in (0, 1)]}
    m = judge(rec)["memory"]
    assert m["verdict"] == "unknown" and "less than the 8.0 MiB buffer" in m["reason"], m
    rec["captures"]["numa_maps"]["peak"]["data_bytes"] = {"1": 8 << 20, "2": 122880}
    assert judge(rec)["memory"]["verdict"] != "unknown"


# -- pages put down to full nodes, migration, and the whole verdict ------------------------
# When pages that left their nodes are put down to those nodes being full, when pages moved
# during the run are drift, and what the verdict says of a run not needed. Several pin what
# the mutation run left alive (tests/benchmarks/mutation-survivors.md).

def spill_reason(free_by_node, allowed, data_bytes):
    return fidelity._full_nodes(Record({"system": {"free_mb_by_node": free_by_node}}), allowed, data_bytes)


def test_nodes_with_room_for_the_data_are_not_full():
    assert spill_reason({"0": 100, "1": 50}, [0, 1], 150 * MiB) is None        # exactly room
    assert spill_reason({"0": 100}, [0], 60 * MiB) is None


def test_nodes_without_room_explain_the_spill():
    why = spill_reason({"0": 100, "1": 50}, [0, 1], 150 * MiB + 1)
    assert why.startswith("spill: node(s) 0-1 had 150 MiB free at the start, the run's data needed ")
    assert why.endswith(": the kernel put the rest on other nodes")
    assert spill_reason({"0": 100}, [0], 150 * MiB) is not None                # 100 MiB for 150


def test_no_reason_without_the_free_memory_of_every_allowed_node():
    assert spill_reason({"0": 100}, [0, 1], 500 * MiB) is None
    assert fidelity._full_nodes(Record({}), [0], 500 * MiB) is None


# -- pages that changed node while numa_balancing was on ----------------------------------

def balancing_run(samples, balancing=(1, 0), memory="local", migrated=777):
    """A first-touch run's record with numa_balancing on and its pages over time
    ({t: {node: MiB}})."""
    return Record({"system": {"numa_balancing": balancing[0], "numa_balancing_at_end": balancing[1],
                              "vmstat_delta": {"numa_pages_migrated": migrated}},
                   "placement": {"memory": memory},
                   "captures": {"pages_over_time": [{"t": t, "data_bytes": {str(n): mib * MiB for n, mib in d.items()}}
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
                 "samples": 5, "bytes": 300 * MiB, "moved_share": 0.3333,
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
    pot = [{"t": 1.0, "data_bytes": {"1": 100 * MiB}}, {"t": 2.0, "data_bytes": {"1": 75 * MiB, "0": 25 * MiB}}]
    rec = judged_run({1: 75 * MiB, 0: 25 * MiB}, system={"numa_balancing": 1}, pages_over_time=pot)
    strict = fidelity.judge(rec, {"memory_share_min": 0.7})
    assert strict["verdict"] == "drift" and strict["migration"]["verdict"] == "drift"
    assert strict["migration"]["moved_max"] == 0.05
    loose = fidelity.judge(rec, {"memory_share_min": 0.7, "migration_moved_max": 0.3})
    assert loose["migration"]["moved_max"] == 0.3 and loose["migration"]["verdict"] == "ok"
    assert loose["verdict"] == "ok" and loose["settings"]["migration_moved_max"] == 0.3


def test_a_memory_benchmark_sample_holding_exactly_its_buffer_is_judged():
    """memlat's largest buffer 8 MiB: a peak sample of exactly 8 MiB saw it all (judged,
    here ok); one byte less caught it mid first touch (unknown)."""
    out = {"threads": 2, "results": [{"size_bytes": 8 * MiB, "thread": 0}]}
    m = fidelity.judge(judged_run({1: 8 * MiB}, bench="memlat", output=out))["memory"]
    assert m["verdict"] == "ok" and m["bytes"] == 8 * MiB, m
    m = fidelity.judge(judged_run({1: 8 * MiB - 1}, bench="memlat", output=out))["memory"]
    assert m["verdict"] == "unknown" and "less than the 8.0 MiB buffer" in m["reason"], m
