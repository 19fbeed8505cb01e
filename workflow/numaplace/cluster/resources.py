"""Cluster resources: what each job asks of the batch system.

A measure job (one chunk of a round: numaplace.plan.rounds) takes one whole node for itself (every CPU of the node in its cpuset,
exclusive), for a walltime (the sum of its runs') and memory (its largest run's)
estimated from each run's benchmark kind, class and thread count; builds are ordinary one-CPU jobs. The platform file's `cluster:` section
supplies the node size, partition/account and a runtime scale. The rules'
`threads:`/`resources:` lambdas call these functions; the profiles (profiles/slurm,
profiles/pbs, profiles/pbs-torque) turn them into sbatch/qsub options (PBS: numaplace.cluster.pbs).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from numaplace.kinds import kind

# Per-kind costs (seconds one thread needs, resident MiB) live in numaplace.kinds.
RUN_SAFETY = 3           # × the estimate: bad placements (all memory remote) run slower
SPEEDUP_CAP = 4          # never assume more than 4× from threads (memory-bound kernels)
JOB_OVERHEAD_S = 120     # Snakemake's start in the job, the runner's imports
RUN_OVERHEAD_S = 30      # per run of a chunk: idle check (≤ idle_wait), probe, captures
RUN_MEM_OVERHEAD_MB = 1024   # runner, Snakemake in the job, numa_maps/numastat copies
BUILD_RUNTIME_MIN = 20
BUILD_MEM_MB = 2048


@dataclass(frozen=True)
class ClusterSettings:
    cpus_per_node: int
    mem_mb_per_node: int | None = None
    partition: str = ""
    account: str = ""
    runtime_scale: float = 1.0

    @classmethod
    def of(cls, topology):
        """From a platform topology: its `cluster:` section, else the topology's CPUs
        (for `platform: auto` that is the machine Snakemake starts on)."""
        c = getattr(topology, "cluster", None) or {}
        return cls(cpus_per_node=int(c.get("cpus_per_node") or len(topology.cpus)),
                   mem_mb_per_node=c.get("mem_mb_per_node"),
                   partition=c.get("partition", "") or "",
                   account=c.get("account", "") or "",
                   runtime_scale=float(c.get("runtime_scale", 1.0)))


def _settings(study):
    return ClusterSettings.of(study.topology)


def _cost(bench, cls):
    try:
        return kind(bench).estimate(cls)
    except KeyError:
        raise ValueError(f"no runtime/memory estimate for {bench}.{cls}") from None


def chunk_runtime_minutes(runs, settings):
    """Walltime (minutes) of a job measuring `runs` ((bench, class, threads) each), with
    the job's and each run's overhead."""
    seconds = JOB_OVERHEAD_S
    for bench, cls, threads in runs:
        serial_s, _ = _cost(bench, cls)
        seconds += RUN_OVERHEAD_S + RUN_SAFETY * serial_s / max(1, min(threads, SPEEDUP_CAP))
    return max(1, math.ceil(seconds * settings.runtime_scale / 60))


def run_runtime_minutes(bench, cls, threads, settings):
    """Walltime (minutes) of a job measuring one run."""
    return chunk_runtime_minutes([(bench, cls, threads)], settings)


def run_mem_mb(bench, cls, settings):
    """Memory (MiB) for one measured run, at most the node's memory."""
    _, resident = _cost(bench, cls)
    mem = math.ceil(resident * 1.25) + RUN_MEM_OVERHEAD_MB
    if settings.mem_mb_per_node:
        mem = min(mem, settings.mem_mb_per_node)
    return mem


# The functions the rules' lambdas call (the Study and a study.Run in, a number out).

def node_cpus(study):
    """All CPUs of a node: a measured job's threads and cpus_per_task."""
    return _settings(study).cpus_per_node


def measure_runtime(study, runs, chunk=None):
    """A measure job's walltime: its runs' (study.Run) one after the other; twice the
    limit its chunk (its id, else found from its runs) was last killed at, when that is
    more (numaplace.cluster.why)."""
    from numaplace.cluster import why
    asked = chunk_runtime_minutes([(r.bench, r.cls, r.placement.threads) for r in runs], _settings(study))
    if chunk is None and getattr(study, "chunks", None):
        first = runs[0].run_id if runs else None
        chunk = next((c.id for c in study.chunks if first in c.run_ids
                      and set(c.run_ids) == {r.run_id for r in runs}), None)
    return why.longer(asked, f"results/{study.name}", chunk) if chunk else asked


def measure_mem_mb(study, runs):
    """A measure job's memory: its largest run's (one run at a time)."""
    return max(run_mem_mb(r.bench, r.cls, _settings(study)) for r in runs)


def queue_resources(study):
    """slurm_partition / slurm_account from the platform, only where it sets them (so
    that --default-resources on the command line applies otherwise); the PBS
    profiles read the same two resources as queue (-q) and account (-A)."""
    s = _settings(study)
    out = {}
    if s.partition:
        out["slurm_partition"] = s.partition
    if s.account:
        out["slurm_account"] = s.account
    return out
