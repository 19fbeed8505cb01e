"""Measurement rounds: a study's runs grouped into the jobs that measure them.

Round r holds repetition r of every run; each round is cut into chunks of consecutive runs
(by run id) of at most `rounds.chunk_runs` runs and about `rounds.chunk_minutes` of
estimated machine time. One job measures one chunk, in one process, in an order shuffled
with the chunk's seed (kept in every record); the chunks of round r+1 come after those of
round r, so drift lands on every placement alike."""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from numaplace.core.schema import Section


@dataclass(frozen=True)
class Chunk:
    round: int
    index: int
    run_ids: tuple
    seconds: float                  # the plan's estimate of its runs

    @property
    def id(self):
        return f"r{self.round}.c{self.index}"

    @property
    def seed(self):
        """Stable: the same runs shuffle alike in every process that plans the study."""
        return int(hashlib.sha256("\n".join(self.run_ids).encode()).hexdigest()[:12], 16)

    def order(self):
        """The run ids in the order the job measures them."""
        ids = list(self.run_ids)
        random.Random(self.seed).shuffle(ids)
        return ids


# A chunk's runs reach its job as one JSON argument of the shell command, and Linux takes
# at most 128 KiB in one argument (MAX_ARG_STRLEN): a chunk is cut below that
MAX_CHUNK_BYTES = 100_000


def chunks(runs, per_run_s, settings=None, size_of=None):
    """The study's runs (numaplace.plan.study.Run) as Chunks, round by round;
    per_run_s: {run id: estimated seconds} (numaplace.plan.budget.run_seconds, at the
    reference machine's speed: the chunks must not change with what this machine
    measures); size_of: {run id: bytes of its params as the job receives them}."""
    cfg = Section("rounds", settings).whole()
    limit_n, limit_s = cfg["chunk_runs"], 60 * cfg["chunk_minutes"]
    size_of = size_of or {}
    out = []
    for rnd in sorted({r.rep for r in runs}):
        current, seconds, size, index = [], 0.0, 0, 1
        for r in sorted((r for r in runs if r.rep == rnd), key=lambda r: r.run_id):
            s, b = per_run_s.get(r.run_id, 0.0), size_of.get(r.run_id, 0)
            if current and (len(current) >= limit_n or seconds + s > limit_s or size + b > MAX_CHUNK_BYTES):
                out.append(Chunk(rnd, index, tuple(current), seconds))
                current, seconds, size, index = [], 0.0, 0, index + 1
            current.append(r.run_id)
            seconds, size = seconds + s, size + b
        if current:
            out.append(Chunk(rnd, index, tuple(current), seconds))
    return out
