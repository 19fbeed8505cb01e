"""Integration: the quick study through profiles/slurm (snakemake-executor-plugin-slurm)
on a real one-node Slurm started here (tests/cluster/slurm_local.py).

Checks that every measure job (a chunk of a round: here the quick study's 14 runs cut
into chunks of 5) was one Slurm job holding the whole node exclusively (every CPU in the
job step's cpuset, so a run could pin anywhere), its runs back to back, with the walltime
(its runs' sum) and memory (its largest run's) numaplace.cluster.resources derives from
kernel/class, that each record names its Slurm job and node, that builds are ordinary
one-CPU jobs, that the report was built, and that runs whose records are gone are
measured again in one job of their chunk, their siblings' records untouched.
Skips (with the reason) without root or without Debian's slurm-wlm + munge.
Run it under the benchmark lock on a shared machine:
  flock /tmp/numaplace-bench.lock python3 -m pytest tests/test_slurm.py
"""
from __future__ import annotations

import re
import subprocess
from datetime import datetime

import pytest

from cluster import common, slurm_local
from cluster.common import slurm  # noqa: F401  (the shared local-Slurm fixture)

from numaplace.cluster import resources as cluster
from numaplace.cluster import pbs
from numaplace.judge.fidelity import judge  # noqa: E402
from numaplace.core.cpulist import parse_cpulist  # noqa: E402

# installed by .ci/setup from requirements.txt: part of numaplace's install, not a rig
import snakemake_executor_plugin_slurm  # noqa: E402,F401

STUDY = "config/studies/quick.yaml"
CHUNK_RUNS = 5
SLURM_ARGS = ("--profile", "profiles/slurm", "--configfile", STUDY,
              # first status poll after 5 s (default 40 s); squeue stays trusted because
              # the test cluster keeps ended jobs for an hour (MinJobAge)
              "--slurm-init-seconds-before-status-checks", "5", "--latency-wait", "5")




@pytest.fixture(scope="module")
def quick(slurm, repo, tmp_path_factory):
    wf = common.copy_workflow(repo, tmp_path_factory.mktemp("slurm-quick"))
    with open(wf / STUDY, "a") as f:
        f.write(f"rounds: {{chunk_runs: {CHUNK_RUNS}}}\n")     # 14 runs: three measure jobs
    r, seconds = common.snakemake(wf, *SLURM_ARGS, timeout=900)
    print(f"quick study through profiles/slurm: {seconds:.0f} s")
    return wf, r.stdout + r.stderr, seconds


def submitted(log):
    """{slurm job id: (kind, name)} from the plugin's 'submitted with SLURM jobid' lines."""
    out = {}
    for m in re.finditer(r"submitted with SLURM jobid (\d+) \(log: \S*/(rule|group)_([^/]+)/", log):
        out[m.group(1)] = (m.group(2), m.group(3))
    return out


def allowed_cpus(rec):
    """The CPUs the run's threads were allowed on (union of their Cpus_allowed_list)."""
    threads = (rec.get("captures") or {}).get("threads") or {}
    return {c for t in threads.values() if t.get("allowed") for c in parse_cpulist(t["allowed"])}


def by_job(recs):
    out = {}
    for rid, r in recs.items():
        out.setdefault(r.get("slurm_job_id"), []).append(r)
    return out


def test_every_chunk_is_its_own_exclusive_whole_node_job(quick, slurm):
    wf, log, _ = quick
    recs = common.records(wf, "quick")
    assert sorted(recs) == sorted(common.plan_ids(wf, "quick")) and len(recs) >= 10
    jobs = by_job(recs)
    ledgers = sorted((wf / "results/quick/rounds").glob("*.json"))
    assert None not in jobs and len(jobs) == len(ledgers) == -(-len(recs) // CHUNK_RUNS), sorted(jobs)
    settings = cluster.ClusterSettings(slurm["cpus"])
    for jid, group in jobs.items():
        job = common.scontrol_job(jid)
        chunks = {r["round"]["chunk"] for r in group}
        assert len(chunks) == 1 and chunks.pop() in job["Comment"]     # the plugin names the wildcards
        assert int(job["NumCPUs"]) == slurm["cpus"] and job["OverSubscribe"] == "NO", (jid, "not exclusive")
        minutes = cluster.chunk_runtime_minutes([(r["bench"], r["class"], r["placement"]["threads"])
                                                 for r in group], settings)
        assert job["TimeLimit"] == pbs.walltime(minutes), (jid, job["TimeLimit"])
        mem = max(cluster.run_mem_mb(r["bench"], r["class"], settings) for r in group)
        assert job["MinMemoryNode"] == f"{mem}M", (jid, job["MinMemoryNode"])
        spans = sorted((r["started"], r["ended"]) for r in group)
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans     # back to back
    node_cpus = parse_cpulist(f"0-{slurm['cpus'] - 1}")
    for rid, r in recs.items():
        assert r["status"] == "ok" and r["output"]["verified"], (rid, r["reason"])
        assert r["slurmd_nodename"] == slurm["node"]
        # the threads got exactly the placement's CPUs: a job step holding fewer CPUs
        # would have cut the mask down (taskset/numactl intersect it with the cpuset)
        cpus = set(parse_cpulist(r["placement"]["cpus"]))
        seen = allowed_cpus(r)
        assert seen <= cpus, (rid, seen)
        if seen and r["placement"]["binding"] == "process":
            assert seen == cpus, (rid, seen)
        threads = judge(r)["threads"]
        assert threads["verdict"] in ("ok", "unknown"), (rid, threads)
    whole = [rid for rid, r in recs.items() if r["placement"]["binding"] == "process"
             and parse_cpulist(r["placement"]["cpus"]) == node_cpus and allowed_cpus(r)]
    if whole:   # runs whose threads were allowed on every CPU of the node
        assert all(allowed_cpus(recs[rid]) == set(node_cpus) for rid in whole), whole
    else:   # a node with more CPUs than the quick study uses: pin one run to the last CPU
        last = node_cpus[-1]
        (wf / "edge.yaml").write_text(
            "study: edge\nplatform: auto\nbenchmarks: [cg]\nclasses: [S]\nvariants: [default]\n"
            "repetitions: 1\nlauncher: numactl\nexperiments:\n  - name: last-cpu\n"
            f"    binding: [threads]\n    placements:\n      - {{cpus: \"{last}\"}}\n")
        common.snakemake(wf, *SLURM_ARGS[:2], "--configfile", "edge.yaml", *SLURM_ARGS[4:], "runs")
        (edge,) = common.records(wf, "edge").values()
        assert edge["status"] == "ok" and allowed_cpus(edge) == {str(last)}, edge.get("captures")


def test_builds_are_ordinary_jobs(quick, slurm):
    wf, log, _ = quick
    builds = [j for j, (kind, name) in submitted(log).items() if name == "npb_build"]
    assert len(builds) == 4, submitted(log)
    for j in builds:
        job = common.scontrol_job(j)
        assert job["JobState"] == "COMPLETED" and int(job["NumCPUs"]) == 1
        assert job["OverSubscribe"] != "NO"
        assert job["TimeLimit"] == pbs.walltime(cluster.BUILD_RUNTIME_MIN)


def test_report_was_built_and_nothing_is_left_to_do(quick):
    wf, log, _ = quick
    r, _ = common.snakemake(wf, *SLURM_ARGS, "-n")
    assert "Nothing to be done" in r.stdout + r.stderr
    # the default target includes the report: built (locally: localrules) from the records
    made = list((wf / "report" / "quick").glob("*.html")) + list((wf / "report" / "quick").glob("*.md"))
    assert len(made) >= 2 and all(p.stat().st_size > 0 for p in made), made


def test_runs_without_a_record_are_measured_again_in_one_job_of_their_chunk(quick, slurm):
    """Two records of one chunk removed (by hand): the next workflow submits that chunk
    alone, one Slurm job measures the two, back to back; every other record is untouched."""
    wf, _, _ = quick
    before = common.records(wf, "quick")
    first_bytes = {p.parent.name: p.read_bytes() for p in (wf / "results/quick/runs").glob("*/record.json")}
    chunk = sorted(before.values(), key=lambda r: r["round"]["chunk"])[0]["round"]["chunk"]
    again = sorted(rid for rid, r in before.items() if r["round"]["chunk"] == chunk)[:2]
    for rid in again:                                  # the records are write-protected
        subprocess.run(["rm", "-rf", str(wf / "results/quick/runs" / rid)], check=True)
    r, seconds = common.snakemake(wf, *SLURM_ARGS)
    print(f"2 runs of chunk {chunk} measured again in one Slurm job: {seconds:.0f} s")
    recs = common.records(wf, "quick")
    jobs = {recs[rid]["slurm_job_id"] for rid in again}
    assert len(jobs) == 1 and jobs.isdisjoint({before[rid]["slurm_job_id"] for rid in before}), jobs
    log = r.stdout + r.stderr
    assert len([1 for kind, name in submitted(log).values() if name == "measure"]) == 1, submitted(log)
    spans = sorted((datetime.fromisoformat(recs[rid]["started"]), datetime.fromisoformat(recs[rid]["ended"]))
                   for rid in again)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans     # never two at once
    now = {p.parent.name: p.read_bytes() for p in (wf / "results/quick/runs").glob("*/record.json")}
    assert all(now[rid] == b for rid, b in first_bytes.items() if rid not in again)
    for rid in again:
        assert recs[rid]["status"] == "ok", (rid, recs[rid]["reason"])


def test_cgroup_detection_reads_mountinfo(tmp_path):
    """The rig's precondition: lines as this host's /proc/self/mountinfo has them (cgroup
    v1 under a tmpfs), as a v2 host has them, and as a chroot without /sys/fs/cgroup."""
    host_v1 = ("31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
               "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n")
    host_v2 = "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate\n"
    chroot = ("580 571 0:21 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw\n"
              "581 571 0:5 / /dev rw,nosuid - devtmpfs udev rw,size=4096k\n")
    for text, want in ((host_v1, True), (host_v2, True), (chroot, False)):
        (tmp_path / "mi").write_text(text)
        assert slurm_local.cgroup_mounted(tmp_path / "mi") is want, text
    assert slurm_local.cgroup_mounted(tmp_path / "absent") is False
