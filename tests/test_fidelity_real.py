"""fidelity.judge as a specification: the whole verdict (numbers, reasons, keys) on records the
real runner wrote on the 4-node NUMA VM (tests/fixtures/real/vm), and on small adversarial
variants of them: one thing changed each, the verdict and its words pinned."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from numaplace.judge.fidelity import judge, JUDGED_BY, thresholds_of
from numaplace.record.store import read_record

REAL = Path(__file__).parent / "fixtures" / "real" / "vm" / "runs"
SETTINGS = {"memory_share_min": 0.9, "interleave_tolerance": 0.1, "interleave_slack_bytes": 4194304,
            "memory_min_bytes": 524288, "migration_moved_max": 0.05}


def load(name):
    return read_record(REAL / name / "record.json")       # migrated to the current format


PINNED = "cg.W.default.l11-n0n3.r1"        # 1/1 on nodes 0,3, pinned threads (CPUs 0 and 6), local
INTERLEAVE = "mg.W.default.interleave-all.r1"   # CPUs 0-1, interleave 0-3
MEMBIND = "mg.W.default.membind-n2.r1"     # CPUs 0-1, membind 2
DRIFT = "drift-membind3"                   # asked membind 2, pages bound to node 3


def test_defaults_are_the_documented_ones():
    assert {k: thresholds_of()[k] for k in JUDGED_BY} == SETTINGS
    assert thresholds_of()["foreign_load_max"] == 0.05 and thresholds_of()["memory_cell_share_min"] == 0.99


# -- whole verdicts on real records ---------------------------------------------------------

def test_pinned_local_run_whole_verdict():
    """The master thread's first sample ran under the team mask 0,6 before libgomp bound it:
    not judged, counted; both threads bound to their own CPU; 51/49 on the two local nodes."""
    assert judge(load(PINNED)) == {
        "verdict": "ok",
        "threads": {"threads_expected": 2, "threads_seen": 2, "team": 2, "bound_to": {"221": 0, "224": 6},
                    "samples_before_binding": {"221": 1}, "verdict": "ok"},
        "memory": {"policy": "local", "allowed_nodes": [0, 3], "basis": "steady", "t": 3.1544, "bytes": 6660096,
                   "bytes_per_node": {"0": 3416064, "3": 3244032}, "distribution": {"0": 0.5129, "3": 0.4871},
                   "share_on_allowed": 1.0, "min_share": 0.9, "peak": {"t": 0.3683, "bytes": 7159808},
                   "policies": {"local": 6660096}, "share_under_policy": 1.0, "verdict": "ok"},
        "settings": SETTINGS}


def test_interleave_run_whole_verdict():
    """Deviation from 1/4: node 3's 14561280 of 58327040 bytes = 0.24965 → 0.0004 (4 decimals);
    tolerance 0.1 + 4 MiB / 55.6 MiB = 0.1719."""
    assert judge(load(INTERLEAVE))["memory"] == {
        "policy": "interleave", "allowed_nodes": [0, 1, 2, 3], "basis": "steady", "t": 3.147, "bytes": 58327040,
        "bytes_per_node": {"0": 14594048, "1": 14589952, "2": 14581760, "3": 14561280},
        "distribution": {"0": 0.2502, "1": 0.2501, "2": 0.25, "3": 0.2496}, "share_on_allowed": 1.0,
        "min_share": 0.9, "peak": {"t": 3.147, "bytes": 58327040}, "interleave_max_deviation": 0.0004,
        "interleave_tolerance": 0.1719, "policies": {"interleave:0-3": 58327040}, "share_under_policy": 1.0,
        "verdict": "ok"}


def test_drifted_membind_whole_verdict():
    v = judge(load(DRIFT))
    reasons = ["0.0% of 55.6 MiB data pages on membind node(s) 2 (min 90.0%); per node N3=100.0%",
               "pages placed under policy bind:3 (55.6 MiB), the placement asks for membind 2"]
    assert v["verdict"] == "drift" and v["memory"]["reasons"] == reasons
    assert v["reasons"] == ["memory: " + r for r in reasons]
    assert v["threads"] == {"threads_expected": 2, "threads_seen": 2, "team": 2, "verdict": "ok"}
    assert "reason" not in v


# -- adversarial variants: threads ------------------------------------------------------------

def pinned_with(**threads):
    rec = load(PINNED)
    rec["captures"]["threads"].update(threads)
    return rec


def bound(cpu, n=6):
    return {"cpus": {str(cpu): n}, "allowed": str(cpu), "by_allowed": {str(cpu): {str(cpu): n}}}


@pytest.mark.parametrize("threads, npb, reasons, extra", [
    # a thread bound to a CPU outside the placement (mask and CPU both outside)
    ({"224": bound(2)}, None,
     ["threads ran outside CPUs 0,6: tid 224 on 2", "threads allowed outside CPUs 0,6: tid 224 mask 2"],
     {"outside_cpus": {"224": [2]}, "mask_outside": {"224": "2"}, "bound_to": {"221": 0, "224": 2}}),
    # two threads outside: both named, comma-separated
    ({"221": bound(1), "224": bound(7)}, None,
     ["threads ran outside CPUs 0,6: tid 221 on 1, tid 224 on 7",
      "threads allowed outside CPUs 0,6: tid 221 mask 1, tid 224 mask 7"],
     {"outside_cpus": {"221": [1], "224": [7]}, "mask_outside": {"221": "1", "224": "7"},
      "bound_to": {"221": 1, "224": 7}}),
    # left unbound under the team mask (one mask, two CPUs), and a thread without any mask
    ({"224": {"cpus": {"6": 6}, "allowed": "0,6", "by_allowed": {"0,6": {"6": 6}}},
      "225": {"cpus": {"0": 2}}}, None,
     ["threads not bound to one CPU: tid 224 mask 0,6, tid 225 mask ?"],
     {"unbound": {"224": "0,6", "225": "?"}, "bound_to": {"221": 0}}),
    # every thread on one CPU, twice over (4 samples' worth of threads, 2 CPUs shared)
    ({"224": bound(0), "230": bound(6), "231": bound(6)}, 4,
     ["NPB ran 4 threads, the placement has 2", "threads bound to the same CPU: CPU 0: tids 221, 224; CPU 6: tids 230, 231"],
     {"npb_threads": 4, "sharing_cpu": {"0": ["221", "224"], "6": ["230", "231"]},
      "bound_to": {"221": 0, "224": 0, "230": 6, "231": 6}}),
], ids=["one-outside", "two-outside", "unbound", "sharing+npb-threads"])
def test_pinned_thread_drift(threads, npb, reasons, extra):
    rec = pinned_with(**threads)
    if npb is not None:
        rec["output"]["threads"] = npb
    th = judge(rec)["threads"]
    seen = len(rec["captures"]["threads"])
    early = {} if "221" in threads else {"samples_before_binding": {"221": 1}}   # the real master's
    want = {"threads_expected": 2, "threads_seen": seen, "team": 2, **extra, **early,
            "verdict": "drift", "reasons": reasons}
    assert th == want
    assert judge(rec)["reasons"] == ["threads: " + r for r in reasons]


def test_pinned_thread_whose_final_mask_has_no_samples_is_judged_on_all_its_cpus():
    rec = pinned_with(**{"224": {"cpus": {"6": 6}, "allowed": "6", "by_allowed": {"0,6": {"6": 6}}}})
    assert judge(rec)["threads"]["bound_to"] == {"221": 0, "224": 6}
    assert judge(rec)["threads"]["samples_before_binding"] == {"221": 1, "224": 6}
    assert judge(rec)["verdict"] == "ok"


def process_with(**threads):
    rec = load(INTERLEAVE)                          # CPUs 0-1, process mask
    rec["captures"]["threads"] = threads
    return rec


@pytest.mark.parametrize("threads, verdict, extra", [
    # older captures: no per-mask split, the mask the thread ran under is `allowed`
    ({"1": {"cpus": {"0": 3}, "allowed": "0-7"}, "2": {"cpus": {"1": 3}, "allowed": "0-1"}}, "drift",
     {"mask_outside": {"1": "0-7"}, "reasons": ["threads allowed outside CPUs 0-1: tid 1 mask 0-7"]}),
    # no mask at all: only the CPUs are judged
    ({"1": {"cpus": {"0": 3}}, "2": {"cpus": {"1": 3}}}, "ok", {}),
    # one thread under two masks, outside the placement under each: every CPU it ran on named
    ({"1": {"cpus": {"2": 1, "3": 1}, "allowed": "0-7", "by_allowed": {"0-1,2": {"2": 1}, "0-1,3": {"3": 1}}},
      "2": {"cpus": {"1": 3}, "allowed": "0-1"}}, "drift",
     {"outside_cpus": {"1": [2, 3]}, "mask_outside": {"1": "0-1,3"},
      "reasons": ["threads ran outside CPUs 0-1: tid 1 on 2-3", "threads allowed outside CPUs 0-1: tid 1 mask 0-1,3"]}),
], ids=["mask-without-split", "no-mask", "two-masks"])
def test_process_mask_threads(threads, verdict, extra):
    th = judge(process_with(**threads))["threads"]
    assert th == {"threads_expected": 2, "threads_seen": 2, "team": 2, **extra, "verdict": verdict}


@pytest.mark.parametrize("team, want", [
    (None, {"threads_expected": 2, "threads_seen": 2, "team": 2, "verdict": "ok"}),     # team: threads seen
    (3, {"threads_expected": 2, "threads_seen": 2, "team": 3, "verdict": "ok"}),
    (1, {"threads_expected": 2, "threads_seen": 2, "team": 1, "verdict": "unknown",
         "reason": "the capture saw at most 1 of 2 threads at once (the run ended before its parallel part was sampled)"}),
])
def test_team_size(team, want):
    rec = load(INTERLEAVE)
    rec["captures"].pop("team")
    if team is not None:
        rec["captures"]["team"] = team
    assert judge(rec)["threads"] == want


def test_no_thread_samples():
    rec = load(INTERLEAVE)
    rec["captures"]["threads"] = {}
    v = judge(rec)
    assert v["threads"] == {"verdict": "unknown", "reason": "no thread samples (thread capture off or the run "
                                                            "ended before the first sample)"}
    assert v["verdict"] == "unknown"
    assert v["reason"] == "threads: no thread samples (thread capture off or the run ended before the first sample)"


# -- adversarial variants: memory --------------------------------------------------------------

def with_steady(name, data, policies=None, team=2, placement=None, thresholds=None, peak_too=False):
    """Record `name` with its steady footprint replaced (data bytes per node, policies)."""
    rec = load(name)
    nm = rec["captures"]["numa_maps"]
    view = {"t": 1.25, "data_bytes": {str(n): b for n, b in data.items()}, "team": team,
            "policies": policies if policies is not None else {}}
    nm["steady"] = view
    if peak_too:
        nm["peak"] = view
    rec["placement"].update(placement or {})
    return judge(rec, thresholds)["memory"]


SMALL = {"memory_min_bytes": 0, "interleave_slack_bytes": 0}    # judge even a few bytes, exactly


@pytest.mark.parametrize("name, data, policies, placement, thresholds, verdict, extra", [
    # exactly at the minimum share (9 of 10 bytes) is enough
    (MEMBIND, {2: 9, 3: 1}, {"bind:2": 9, "default": 1}, None, SMALL, "ok",
     {"share_on_allowed": 0.9, "share_under_policy": 0.9}),
    # flags in the printed policy, two entries under it: both count; listed by bytes (ties: as recorded)
    (MEMBIND, {2: 8}, {"bind=static:2": 3, "bind:2": 3, "default": 2}, None, SMALL, "drift",
     {"share_on_allowed": 1.0, "share_under_policy": 0.75,
      "reasons": ["pages placed under policy bind=static:2 (0.0 MiB), bind:2 (0.0 MiB), default (0.0 MiB), "
                  "the placement asks for membind 2"]}),
    # one byte under one policy: the share is 1, not 1/2
    (PINNED, {0: 1}, {"local": 1}, None, SMALL, "ok", {"share_on_allowed": 1.0, "share_under_policy": 1.0}),
    # a policy's nodes must be the asked ones: bind:2-3 is not membind 2; listed by bytes, largest first
    (MEMBIND, {2: 3 * 2**20}, {"bind:2-3": 2 * 2**20, "bind:2": 2**20}, None, None, "drift",
     {"share_on_allowed": 1.0, "share_under_policy": 0.3333,
      "reasons": ["pages placed under policy bind:2-3 (2.0 MiB), bind:2 (1.0 MiB), the placement asks for membind 2"]}),
    # local asks for no nodes: "asks for local"
    (PINNED, {0: 2**20, 3: 2**20}, {"bind:0": 2 * 2**20}, None, None, "drift",
     {"share_on_allowed": 1.0, "share_under_policy": 0.0,
      "reasons": ["pages placed under policy bind:0 (2.0 MiB), the placement asks for local"]}),
    # interleave over 0-2 with nothing on node 2: node 2 is the largest deviation (1/3)
    (INTERLEAVE, {0: 2, 1: 2}, {"interleave:0-2": 4}, {"memory_nodes": "0-2"}, SMALL, "drift",
     {"share_on_allowed": 1.0, "interleave_max_deviation": 0.3333, "interleave_tolerance": 0.1,
      "share_under_policy": 1.0,
      "reasons": ["interleave over 3 nodes is uneven: per node N0=50.0% N1=50.0% (expected 33.3% ± 10.0%)"]}),
    # exactly at the tolerance is still even; two nodes are judged for evenness
    (INTERLEAVE, {0: 3, 1: 1}, {"interleave:0-1": 4}, {"memory_nodes": "0-1"},
     {**SMALL, "interleave_tolerance": 0.25}, "ok",
     {"share_on_allowed": 1.0, "interleave_max_deviation": 0.25, "interleave_tolerance": 0.25,
      "share_under_policy": 1.0}),
    # interleave on a single node: nothing to be even about
    (INTERLEAVE, {1: 5}, {"interleave:1": 5}, {"memory_nodes": "1"}, SMALL, "ok",
     {"share_on_allowed": 1.0, "share_under_policy": 1.0}),
    # deviation and shares keep 4 decimals: 1/7 of the pages off the even share
    (INTERLEAVE, {0: 4, 1: 3}, {"interleave:0-1": 6, "default": 1}, {"memory_nodes": "0-1"}, SMALL, "drift",
     {"share_on_allowed": 1.0, "interleave_max_deviation": 0.0714, "interleave_tolerance": 0.1,
      "share_under_policy": 0.8571,
      "reasons": ["pages placed under policy interleave:0-1 (0.0 MiB), default (0.0 MiB), "
                  "the placement asks for interleave 0-1"]}),
    # pages mostly off the interleave nodes and uneven on them: both reasons
    (INTERLEAVE, {0: 1, 2: 9}, {"interleave:0-1": 10}, {"memory_nodes": "0-1"}, SMALL, "drift",
     {"share_on_allowed": 0.1, "interleave_max_deviation": 0.5, "interleave_tolerance": 0.1,
      "share_under_policy": 1.0,
      "reasons": ["10.0% of 0.0 MiB data pages on interleave node(s) 0-1 (min 90.0%); per node N0=10.0% N2=90.0%",
                  "interleave over 2 nodes is uneven: per node N0=10.0% N2=90.0% (expected 50.0% ± 10.0%)"]}),
], ids=["share-at-min", "flags-and-two-entries", "one-byte", "wrong-nodes", "local-asks-local",
        "interleave-empty-node", "interleave-at-tolerance", "interleave-one-node", "four-decimals",
        "off-nodes-and-uneven"])
def test_memory_variants(name, data, policies, placement, thresholds, verdict, extra):
    m = with_steady(name, data, policies, placement=placement, thresholds=thresholds)
    total = sum(data.values())
    assert m["verdict"] == verdict, m
    assert m["bytes"] == total and m["t"] == 1.25 and m["basis"] == "steady"
    assert m["bytes_per_node"] == {str(n): b for n, b in sorted(data.items())}
    assert m["distribution"] == {str(n): round(b / total, 4) for n, b in sorted(data.items())}
    got = {k: m[k] for k in ("share_on_allowed", "interleave_max_deviation", "interleave_tolerance",
                             "share_under_policy", "reasons") if k in m}
    assert got == extra


def test_distribution_keeps_four_decimals():
    m = with_steady(MEMBIND, {2: 2, 3: 1}, {"bind:2": 3}, thresholds={"memory_min_bytes": 0})
    assert m["distribution"] == {"2": 0.6667, "3": 0.3333} and m["share_on_allowed"] == 0.6667
    assert m["reasons"] == ["66.7% of 0.0 MiB data pages on membind node(s) 2 (min 90.0%); per node N2=66.7% N3=33.3%"]


def test_peak_is_reported_only_when_it_is_not_the_judged_sample():
    m = with_steady(MEMBIND, {2: 2**20}, {"bind:2": 2**20}, peak_too=True)
    assert "peak" not in m and m["verdict"] == "ok"
    m = with_steady(MEMBIND, {2: 2**20}, {"bind:2": 2**20})
    assert m["peak"] == {"t": load(MEMBIND)["captures"]["numa_maps"]["peak"]["t"],
                         "bytes": sum(load(MEMBIND)["captures"]["numa_maps"]["peak"]["data_bytes"].values())}


@pytest.mark.parametrize("edit, reason", [
    (lambda nm, caps: nm.clear(), "no numa_maps sample"),
    (lambda nm, caps: (nm.clear(), caps.__setitem__("errors", ["numa_maps: gone", "numastat: denied"])),
     "no numa_maps sample (numa_maps: gone; numastat: denied)"),
    (lambda nm, caps: nm.update(steady=None, samples=1),
     "the footprint never settled while sampled (1 sample, peak 55.6 MiB at 2.97 s): the run is too short to judge"),
    (lambda nm, caps: (nm.update(steady=None), nm.pop("samples")),
     "the footprint never settled while sampled (0 samples, peak 55.6 MiB at 2.97 s): the run is too short to judge"),
    (lambda nm, caps: nm.update(steady=None, samples=2),
     "the footprint never settled while sampled (2 samples, peak 55.6 MiB at 2.97 s): the run is too short to judge"),
], ids=["no-sample", "no-sample-errors", "one-sample", "no-count", "two-samples"])
def test_memory_unknown_reasons(edit, reason):
    rec = load(MEMBIND)
    edit(rec["captures"]["numa_maps"], rec["captures"])
    v = judge(rec)
    assert v["memory"] == {"verdict": "unknown", "reason": reason}
    assert v["reason"] == "memory: " + reason


@pytest.mark.parametrize("total, minimum, verdict", [(524288, 524288, "ok"), (524287, 524288, "unknown"),
                                                     (1, 0, "ok")])
def test_memory_min_bytes_boundary(total, minimum, verdict):
    m = with_steady(MEMBIND, {2: total}, {"bind:2": total}, thresholds={"memory_min_bytes": minimum})
    assert m["verdict"] == verdict
    if verdict == "unknown":
        assert m["reason"] == (f"only {total} bytes of data pages at the steady footprint "
                               f"(< memory_min_bytes {minimum}): too little to judge")


def test_footprint_before_the_team_existed():
    m = with_steady(MEMBIND, {2: 2**20}, {"bind:2": 2**20}, team=1)
    assert m == {"verdict": "unknown", "reason": "the footprint settled at 1.0 MiB before the OpenMP team existed "
                                                 "(1 of 2 threads)"}


# -- the record as a whole ----------------------------------------------------------------------

@pytest.mark.parametrize("status", ["placement-failed", "not-idle", "build-failed"])
def test_runs_that_did_not_execute(status):
    rec = load(MEMBIND)
    rec["status"] = status
    assert judge(rec) == {"verdict": "unknown", "reason": f"the run did not execute ({status})"}


def test_records_without_captures():
    rec = load(MEMBIND)
    rec["captures"] = None
    assert judge(rec) == {"verdict": "unknown", "reason": "no capture for this run"}
    rec["captures_note"] = "aprun: no capture on the compute node"
    assert judge(rec) == {"verdict": "unknown", "reason": "aprun: no capture on the compute node"}


def test_local_nodes_come_from_the_measured_topology():
    """The plan says node 0 (as the real record does); the measured topology puts CPUs 0-1 on
    node 3: local means node 3."""
    rec = load(PINNED)
    rec["topology"]["nodes"] = {"0": "", "1": "2-3", "2": "4-5", "3": "0-1,6-7"}
    v = judge(rec)
    assert v["memory"]["allowed_nodes"] == [3] and "note" not in v
    assert v["memory"]["reasons"][0].startswith("48.7% of 6.4 MiB data pages on local node(s) 3 (min 90.0%)")


@pytest.mark.parametrize("topology, plan_nodes, allowed, shown", [
    ({"nodes": {"0": "0-1"}}, "0,3", [0, 3], "0,3"),       # CPU 6 unknown to the topology: the plan's nodes
    (None, "3", [3], "3"),
    (None, None, [], "-"),
])
def test_topology_lacking_cpus_falls_back_to_the_plan(topology, plan_nodes, allowed, shown):
    rec = load(PINNED)
    if topology is None:
        rec.pop("topology")
    else:
        rec["topology"] = topology
    if plan_nodes is None:
        rec["placement"].pop("nodes")
    else:
        rec["placement"]["nodes"] = plan_nodes
    v = judge(rec)
    missing = "6" if topology else "0,6"
    assert v["note"] == (f"CPUs {missing} are not in the measured topology; local nodes taken from the plan")
    assert v["memory"]["allowed_nodes"] == allowed
    if allowed != [0, 3]:
        share = {(3,): "48.7%", (): "0.0%"}[tuple(allowed)]
        assert v["memory"]["reasons"][0].startswith(f"{share} of 6.4 MiB data pages on local node(s) {shown} (min")


def test_drift_and_unknown_together():
    """Drift in one aspect wins over unknown in the other; two unknowns are both named."""
    rec = pinned_with(**{"224": bound(2)})
    rec["captures"]["numa_maps"] = {}
    v = judge(rec)
    assert v["verdict"] == "drift" and "reason" not in v
    assert v["reasons"] == ["threads: threads ran outside CPUs 0,6: tid 224 on 2",
                            "threads: threads allowed outside CPUs 0,6: tid 224 mask 2"]
    rec = load(PINNED)
    rec["captures"]["threads"] = {}
    rec["captures"]["numa_maps"] = {}
    v = judge(rec)
    assert v["verdict"] == "unknown" and "reasons" not in v
    assert v["reason"] == ("threads: no thread samples (thread capture off or the run ended before the first "
                           "sample); memory: no numa_maps sample")


def test_settings_are_reported_with_overrides():
    v = judge(load(MEMBIND), {"memory_share_min": 0.5})
    assert v["settings"] == {**SETTINGS, "memory_share_min": 0.5}
    assert v["memory"]["min_share"] == 0.5


def test_the_record_is_not_changed():
    rec = load(DRIFT)
    before = copy.deepcopy(rec)
    judge(rec)
    assert rec == before


# -- a node that was full when the run started (issue 28) -------------------------------------

def test_pages_off_their_node_because_it_was_full_are_named_spill():
    """The real drift record (asked membind 2, pages on node 3): with the record's free memory
    per node at the start saying node 2 had less than the run's data, the verdict names the
    spill; with room on node 2 (or no such figure in an older record) it does not."""
    rec = load(DRIFT)
    total = judge(rec)["memory"]["bytes"]
    full = copy.deepcopy(rec)
    full["system"] = {**(full.get("system") or {}), "free_mb_by_node": {"0": 900, "1": 900, "2": 1, "3": 900}}
    v = judge(full)
    assert v["verdict"] == "drift" and v["memory"]["spill"] is True
    assert (f"spill: node(s) 2 had 1 MiB free at the start, the run's data needed "
            f"{total / 2**20:.1f} MiB: the kernel put the rest on other nodes") in v["memory"]["reasons"]
    room = copy.deepcopy(full)
    room["system"]["free_mb_by_node"]["2"] = 900
    assert "spill" not in judge(room)["memory"] and judge(room)["verdict"] == "drift"
    assert "spill" not in judge(rec)["memory"]
