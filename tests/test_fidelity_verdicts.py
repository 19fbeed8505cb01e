"""Placement fidelity: the exact numbers, boundaries and words of each verdict
(numaplace.judge.fidelity), on the synthetic records of test_fidelity."""
from __future__ import annotations

from test_fidelity import MiB, balancing_run, judged_run, pinned, record

from numaplace.judge import fidelity
from numaplace.judge.fidelity import judge

TWO = {"1": {"cpus": {"0": 5}, "allowed": "0-1"}, "2": {"cpus": {"1": 5}, "allowed": "0-1"}}
SETTINGS = {"memory_share_min": 0.9, "interleave_tolerance": 0.1, "interleave_slack_bytes": 4 * MiB,
            "memory_min_bytes": 512 * 1024, "migration_moved_max": 0.05}


# -- threads -------------------------------------------------------------------------

def test_npb_running_more_threads_than_planned_is_drift():
    """NPB's own thread count must equal the placement's, above as well as below."""
    v = judge(record(npb_threads=3))
    assert v["verdict"] == "drift" and v["threads"]["npb_threads"] == 3
    assert v["reasons"] == ["threads: NPB ran 3 threads, the placement has 2"]
    assert "npb_threads" not in judge(record(npb_threads=2))["threads"]


def test_a_mask_that_lost_planned_cpus_is_drift_with_the_whole_record():
    """A cpuset that took a planned CPU away made the threads share fewer CPUs than planned."""
    th = {"100": {"cpus": {"2": 40}, "allowed": "2-3"}, "101": {"cpus": {"2": 40}, "allowed": "2"}}
    v = judge(record(threads=th))
    assert v["verdict"] == "drift"
    assert v["threads"] == {"threads_expected": 2, "threads_seen": 2, "team": 2, "mask_lost": {"101": "2"},
                            "verdict": "drift",
                            "reasons": ["threads' mask lost planned CPUs 2-3: tid 101 mask 2"]}
    assert v["reasons"] == ["threads: threads' mask lost planned CPUs 2-3: tid 101 mask 2"]
    assert v["settings"] == SETTINGS


def test_an_unbound_pinned_master_on_part_of_the_placement_is_still_drift():
    """Only a thread still on the whole launch mask is the master before binding; a mask of
    two of the three planned CPUs is a thread that was never bound to one."""
    early = {"10": {"cpus": {"0": 2}, "allowed": "0-1", "by_allowed": {"0-1": {"0": 2}}}}
    v = judge(record(cpus="0-1,6", nodes="0,3", binding="threads", data={0: 50 * MiB}, threads=early, team=1))
    assert v["threads"]["verdict"] == "drift" and v["threads"]["unbound"] == {"10": "0-1"}, v
    assert v["threads"]["reasons"] == ["threads not bound to one CPU: tid 10 mask 0-1"]


def test_thread_findings_say_which_cpus_and_masks_in_order():
    """The reasons name every finding: CPUs outside, masks outside, a CPU shared by two threads."""
    th = pinned((10, 0), (11, 0))
    th["12"] = {"cpus": {"0": 1, "5": 2, "4": 1}, "allowed": "4-5", "by_allowed": {"4-5": {"5": 2, "4": 1}}}
    v = judge(record(cpus="0,6,7", nodes="0,3", binding="threads", data={0: 50 * MiB}, threads=th))
    t = v["threads"]
    assert t["outside_cpus"] == {"12": [4, 5]} and t["mask_outside"] == {"12": "4-5"}
    assert t["unbound"] == {"12": "4-5"} and t["sharing_cpu"] == {"0": ["10", "11"]}
    assert t["bound_to"] == {"10": 0, "11": 0}
    assert t["reasons"] == ["threads ran outside CPUs 0,6-7: tid 12 on 4-5",
                            "threads allowed outside CPUs 0,6-7: tid 12 mask 4-5",
                            "threads not bound to one CPU: tid 12 mask 4-5",
                            "threads bound to the same CPU: CPU 0: tids 10, 11"]


# -- memory: shares, boundaries ---------------------------------------------------------

def test_memory_distribution_is_rounded_to_four_places_and_reasoned_in_mib():
    """A third of 90 MiB off the local node: the numbers the tables and report print."""
    v = judge(record(data={1: 60 * MiB, 0: 30 * MiB}))
    m = v["memory"]
    assert m["distribution"] == {"0": 0.3333, "1": 0.6667} and m["share_on_allowed"] == 0.6667
    assert m["bytes"] == 90 * MiB and m["bytes_per_node"] == {"0": 30 * MiB, "1": 60 * MiB}
    assert m["min_share"] == 0.9 and m["t"] == 1.5 and m["policy"] == "local"
    assert m["reasons"] == ["66.7% of 90.0 MiB data pages on local node(s) 1 (min 90.0%); per node N0=33.3% N1=66.7%"]


def test_exactly_the_minimum_share_on_the_allowed_nodes_is_ok():
    """memory_share_min is the least share that passes: 90 % of the pages on node 1 is ok."""
    assert judge(record(data={1: 90 * MiB, 0: 10 * MiB}))["memory"]["verdict"] == "ok"
    assert judge(record(data={1: 89 * MiB, 0: 11 * MiB}))["memory"]["verdict"] == "drift"


def test_exactly_the_minimum_bytes_is_judged():
    """memory_min_bytes (512 KiB) is the least footprint judged; one byte less is unknown."""
    assert judge(record(data={1: 512 * 1024}))["memory"]["verdict"] == "ok"
    m = judge(record(data={1: 512 * 1024 - 1}))["memory"]
    assert m == {"verdict": "unknown", "reason": "only 524287 bytes of data pages at the steady footprint "
                                                 "(< memory_min_bytes 524288): too little to judge"}


def test_interleave_over_two_nodes_is_judged_for_evenness():
    """Two interleave nodes are already a spread to check: 70/30 is uneven."""
    v = judge(record(cpus="0-1", nodes="0", memory="interleave", memory_nodes="0-1",
                     data={0: 70 * MiB, 1: 30 * MiB}, policies={"interleave:0-1": 100 * MiB}, threads=TWO))
    m = v["memory"]
    assert m["verdict"] == "drift" and m["interleave_max_deviation"] == 0.2 and m["interleave_tolerance"] == 0.14
    assert m["reasons"] == ["interleave over 2 nodes is uneven: per node N0=70.0% N1=30.0% (expected 50.0% ± 14.0%)"]


def test_interleave_exactly_at_its_tolerance_is_ok():
    """The tolerance is the largest deviation that passes (75/25 over 2 nodes, tolerance 0.25)."""
    rec = record(cpus="0-1", nodes="0", memory="interleave", memory_nodes="0-1",
                 data={0: 75 * MiB, 1: 25 * MiB}, policies={"interleave:0-1": 100 * MiB}, threads=TWO)
    v = judge(rec, {"interleave_tolerance": 0.25, "interleave_slack_bytes": 0})
    assert v["memory"]["verdict"] == "ok" and v["memory"]["interleave_max_deviation"] == 0.25
    assert judge(rec, {"interleave_tolerance": 0.24, "interleave_slack_bytes": 0})["memory"]["verdict"] == "drift"


def test_weighted_interleave_is_judged_against_the_kernels_weights():
    """Weights 3:1 expect 75 %/25 %: an even 50/50 split is off its weights, in those numbers."""
    rec = record(cpus="0-1", nodes="0", memory="weighted-interleave", memory_nodes="0-1",
                 data={0: 50 * MiB, 1: 50 * MiB}, policies={"weighted interleave:0-1": 100 * MiB}, threads=TWO)
    rec["system"] = {"weighted_interleave": {"0": 3, "1": 1}}
    m = judge(rec)["memory"]
    assert m["weights"] == {"0": 3, "1": 1} and m["expected_distribution"] == {"0": 0.75, "1": 0.25}
    assert m["interleave_max_deviation"] == 0.25 and m["interleave_tolerance"] == 0.14
    assert m["reasons"] == ["weighted interleave over 2 nodes is off its weights 3:1: per node N0=50.0% N1=50.0% "
                            "(expected N0=75.0% N1=25.0% ± 14.0%)"]
    rec["captures"]["numa_maps"]["steady"]["data_bytes"] = {"0": 72 * MiB, "1": 28 * MiB}
    m = judge(rec)["memory"]
    assert m["verdict"] == "ok" and m["interleave_max_deviation"] == 0.03
    rec["system"] = {"weighted_interleave": {"0": 3}}
    m = judge(rec)["memory"]
    assert m["verdict"] == "unknown" and "weights of node(s) 1 were not recorded" in m["reason"]


def test_policy_with_flags_counts_under_its_mode_and_the_share_is_of_all_pages():
    """numa_maps writes 'bind=static:2'; the share under the policy is of every policy's bytes,
    the reason lists the policies largest first."""
    rec = record(cpus="0-1", nodes="0", memory="membind", memory_nodes="2", data={2: 100 * MiB},
                 policies={"bind=static:2": 95 * MiB, "default": 5 * MiB}, threads=TWO)
    m = judge(rec)["memory"]
    assert m["verdict"] == "ok" and m["share_under_policy"] == 0.95
    rec["captures"]["numa_maps"]["steady"]["policies"] = {"bind=static:2": 90 * MiB, "default": 10 * MiB}
    assert judge(rec)["memory"]["verdict"] == "ok"                   # exactly the minimum
    rec["captures"]["numa_maps"]["steady"]["policies"] = {"bind=static:2": 40 * MiB, "default": 60 * MiB}
    m = judge(rec)["memory"]
    assert m["verdict"] == "drift" and m["share_under_policy"] == 0.4
    assert m["reasons"] == ["pages placed under policy default (60.0 MiB), bind=static:2 (40.0 MiB), "
                            "the placement asks for membind 2"]


def test_a_footprint_that_never_settled_says_how_many_samples():
    """The reason counts the samples (one 'sample', else 'samples') and gives the peak."""
    rec = record(steady=False)
    assert judge(rec)["memory"]["reason"] == ("the footprint never settled while sampled (12 samples, peak 64.0 MiB "
                                              "at 1.5 s): the run is too short to judge")
    rec["captures"]["numa_maps"]["samples"] = 1
    assert "(1 sample, peak" in judge(rec)["memory"]["reason"]
    del rec["captures"]["numa_maps"]["samples"]
    assert "(0 samples, peak" in judge(rec)["memory"]["reason"]


def test_local_nodes_come_from_the_measured_topology():
    """A machine numbering its CPUs round robin (node 0: even CPUs): CPUs 1,3 are node 1's."""
    rec = record(cpus="1,3", data={1: 64 * MiB}, threads={"100": {"cpus": {"1": 40}, "allowed": "1,3"},
                                                          "101": {"cpus": {"3": 40}, "allowed": "1,3"}})
    rec["topology"] = {"nodes": {"0": "0,2", "1": "1,3"}}
    v = judge(rec)
    assert v["memory"]["allowed_nodes"] == [1] and v["verdict"] == "ok" and "note" not in v
    rec["topology"] = {"nodes": {"0": "0,2"}}
    v = judge(rec)                                  # CPUs missing from the topology: the plan's node 1
    assert v["memory"]["allowed_nodes"] == [1]
    assert v["note"] == "CPUs 1,3 are not in the measured topology; local nodes taken from the plan"


def test_unknown_verdict_joins_the_reasons_of_each_unknown_aspect():
    """The overall reason names each unknown aspect, threads first."""
    rec = record(steady=False)
    rec["captures"]["threads"] = {}
    v = judge(rec)
    assert v["verdict"] == "unknown"
    assert v["reason"] == ("threads: no thread samples (thread capture off or the run ended before the first sample); "
                           "memory: the footprint never settled while sampled (12 samples, peak 64.0 MiB at 1.5 s): "
                           "the run is too short to judge")


# -- migration ---------------------------------------------------------------------------

def test_migration_settled_part_is_within_five_percent_of_the_final_size():
    """A sample 20 % short of the final footprint is still growing: not part of the settled tail."""
    rec = balancing_run({1.0: {0: 80}, 2.0: {0: 100}, 3.0: {0: 100}})
    m = fidelity.migration(rec)
    assert (m["t_first"], m["samples"], m["moved_share"], m["verdict"]) == (2.0, 2, 0.0, "ok")
    assert m["shares_first"] == {"0": 1.0} and m["shares_moved"] == {"0": 1.0}


def test_a_team_never_seen_at_once_is_unknown_even_if_each_thread_was_seen():
    """The capture's team (threads alive at once) is what tells a run's parallel part was
    sampled, not how many thread ids were seen over the run."""
    v = judge(record(team=1))
    assert v["threads"]["verdict"] == "unknown" and v["threads"]["team"] == 1
    assert v["threads"]["reason"] == ("the capture saw at most 1 of 2 threads at once "
                                      "(the run ended before its parallel part was sampled)")


def test_full_nodes_and_the_peak_are_in_the_memory_verdict():
    """Pages off their node because it was full: the verdict says spill and gives the peak beside the steady sample."""
    rec = record(cpus="0-1", nodes="0", memory="membind", memory_nodes="2", data={2: 50 * MiB, 3: 50 * MiB},
                 policies={"bind:2": 100 * MiB}, threads=TWO)
    rec["system"] = {"free_mb_by_node": {"2": 40}}
    peak = dict(rec["captures"]["numa_maps"]["peak"], t=0.9, data_bytes={"2": 70 * MiB, "3": 50 * MiB})
    rec["captures"]["numa_maps"]["peak"] = peak
    m = judge(rec)["memory"]
    assert m["spill"] is True and m["peak"] == {"t": 0.9, "bytes": 120 * MiB}
    assert m["reasons"] == ["50.0% of 100.0 MiB data pages on membind node(s) 2 (min 90.0%); per node N2=50.0% N3=50.0%",
                            "spill: node(s) 2 had 40 MiB free at the start, the run's data needed 100.0 MiB: "
                            "the kernel put the rest on other nodes"]
    rec["system"] = {"free_mb_by_node": {"2": 4000}}
    assert "spill" not in judge(rec)["memory"]


def test_cpus_outside_are_gathered_over_every_mask_a_thread_ran_under():
    """An unpinned thread seen under two masks, outside on CPU 5 under one and 6 under the other: both named."""
    th = {"100": {"cpus": {"2": 40}, "allowed": "2-3"},
          "101": {"cpus": {"3": 30, "5": 2, "6": 1}, "allowed": "2-3,6",
                  "by_allowed": {"2-3,5": {"3": 20, "5": 2}, "2-3,6": {"3": 10, "6": 1}}}}
    t = judge(record(threads=th))["threads"]
    assert t["outside_cpus"] == {"101": [5, 6]} and t["mask_outside"] == {"101": "2-3,6"}
    assert t["reasons"][0] == "threads ran outside CPUs 2-3: tid 101 on 5-6"


def test_pages_bound_to_fewer_or_more_nodes_than_asked_are_another_policy():
    """membind 0-1 asks for bind:0-1 exactly: pages that numa_maps shows under bind:0 (a
    subset of the nodes) or bind:0-2 (a superset) were placed by another policy, whatever
    node they landed on."""
    def membind_01(policies):
        return judge(record(cpus="0-1", nodes="0", memory="membind", memory_nodes="0-1", data={0: 100 * MiB},
                            policies=policies, threads=TWO))["memory"]
    assert membind_01({"bind:0-1": 100 * MiB})["share_under_policy"] == 1.0
    for other in ("bind:0", "bind:1", "bind:0-2"):
        m = membind_01({other: 100 * MiB})
        assert m["verdict"] == "drift" and m["share_under_policy"] == 0.0, other
        assert m["reasons"] == [f"pages placed under policy {other} (100.0 MiB), the placement asks for membind 0-1"]
