"""Measurement rounds: a study's runs grouped into the jobs that measure them.

Round r holds repetition r of every run; each round is cut into chunks of consecutive runs
(by run id) of at most `rounds.chunk_runs` runs and about `rounds.chunk_minutes` of
estimated machine time. One job measures one chunk, in one process, in an order shuffled
with the chunk's seed (kept in every record); the chunks of round r+1 come after those of
round r, so drift lands on every placement alike.

Adaptive repetitions (`repetitions: {min: 4, max: 12}`): rounds 1..max are planned; a
chunk of a round past min waits for the ledgers of the rounds before it (waits_for), so
that the decision whether its runs are still needed (numaplace.judge.separation) sees
their records on any executor."""
from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from operator import itemgetter

from numaplace.core.schema import Section


# the aggregate's "beyond noise" level (numaplace.core.stats.ALPHA), written here again:
# importing core.stats (scipy) costs a second of every process that plans a study
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class Repetitions:
    """An experiment's `repetitions`: a fixed count (least == most, alpha None), or
    adaptive, {min, max, alpha}: at least `least` rounds, at most `most`, stopping a case
    once its best and runner-up placements are separated at `alpha`."""
    least: int
    most: int
    alpha: float | None = None

    @classmethod
    def of(cls, value):
        if isinstance(value, dict):
            return cls(value["min"], value["max"], value.get("alpha", DEFAULT_ALPHA))
        return cls(value, value)

    @property
    def adaptive(self):
        return self.alpha is not None

    def can_step_down(self):
        """May a budget plan one repetition fewer? Never below 3 (nor up to 3 from fewer),
        nor an adaptive max below its min or below ADAPTIVE_MAX_FLOOR: with 3 runs a side
        Mann-Whitney's exact p cannot fall below 0.10, so no case could ever stop early."""
        return self.most > max(3, max(self.least, ADAPTIVE_MAX_FLOOR) if self.adaptive else 0)

    def setting(self, most):
        """The study-file form of these repetitions with `most` as the largest count (the
        budget steps it down)."""
        return {"min": self.least, "max": most, "alpha": self.alpha} if self.adaptive else most

    def words(self):
        return (f"{self.least} to {self.most} rounds, stopping a case early once its best and runner-up "
                f"are separated (Mann-Whitney p < {self.alpha:g})")

    def facts(self):
        """What a record of an adaptive run keeps of its setting."""
        return {"min": self.least, "max": self.most, "alpha": self.alpha}


ADAPTIVE_MAX_FLOOR = 4     # 4 runs a side: exact two-sided p can reach 2/70 = 0.029 < 0.05


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
    out, by_round = [], {}
    for r in runs:                    # one pass: a study of 100 rounds is not read 100 times
        by_round.setdefault(r.rep, []).append(r)
    for rnd in sorted(by_round):
        current, seconds, size, index = [], 0.0, 0, 1
        for r in sorted(by_round[rnd], key=lambda r: r.run_id):
            s, b = per_run_s.get(r.run_id, 0.0), size_of.get(r.run_id, 0)
            if current and (len(current) >= limit_n or seconds + s > limit_s or size + b > MAX_CHUNK_BYTES):
                out.append(Chunk(rnd, index, tuple(current), seconds))
                current, seconds, size, index = [], 0.0, 0, index + 1
            current.append(r.run_id)
            seconds, size = seconds + s, size + b
        if current:
            out.append(Chunk(rnd, index, tuple(current), seconds))
    return out


class RunTexts:
    """json.dumps(make(run), sort_keys=sort_keys) of a study's runs, made once per shape:
    the runs that differ only in their id and repetition (one benchmark, class, variant,
    placement... in every round) share one text, the two put in. A study of 100,000 runs
    dumps a few hundred, not 100,000 each time a chunk's size or its runs' file is asked
    for. Each shape's text is checked against its second run dumped whole: a shape where
    anything else changes with the id or repetition is dumped run by run (the texts are
    always what json.dumps writes)."""

    def __init__(self, make, sort_keys=False):
        self._make, self._sort_keys = make, sort_keys
        self._shapes = {}       # shape -> (run it was made from, its template, checked) | None
        self._shape_of = {}     # run type -> the getter of its fields but the id and repetition

    def _whole(self, run):
        return json.dumps(self._make(run), sort_keys=self._sort_keys)

    @staticmethod
    def _template(text, run):
        """(the texts between, what stands between them: 0 the run's id, 1 its `"rep": N`),
        or None when `"rep": N` is not there exactly once."""
        rid, rep = json.dumps(run.run_id), re.escape(f'"rep": {run.rep}') + "(?=[,}])"
        parts = re.split(rep, text)
        if len(parts) != 2:
            return None
        texts, slots = [], []
        for i, part in enumerate(parts):
            pieces = part.split(rid)
            texts += pieces
            slots += [0] * (len(pieces) - 1) + [1] * (i == 0)
        return tuple(texts), tuple(slots)

    @staticmethod
    def _put(template, run):
        texts, slots = template
        values = (json.dumps(run.run_id), f'"rep": {run.rep}')
        if len(slots) == 2:           # the id once, the repetition once
            return texts[0] + values[slots[0]] + texts[1] + values[slots[1]] + texts[2]
        out = [texts[0]]
        for slot, text in zip(slots, texts[1:]):
            out += (values[slot], text)
        return "".join(out)

    def text(self, run):
        fields = vars(run)
        shape_of = self._shape_of.get(type(run))
        if shape_of is None:          # runs of one type have the same fields (plan.study.Run)
            others = [k for k in fields if k not in ("run_id", "rep")]
            shape_of = self._shape_of[type(run)] = itemgetter(*others) if others else (lambda f: ())
        shape = shape_of(fields)
        known = self._shapes.get(shape, False)
        if known is None:
            return self._whole(run)
        if known is False:
            text = self._whole(run)
            template = self._template(text, run)
            self._shapes[shape] = (run.run_id, template, False) if template else None
            return text
        first, template, checked = known
        if checked or run.run_id == first:
            return self._put(template, run)
        text = self._whole(run)
        self._shapes[shape] = (first, template, True) if text == self._put(template, run) else None
        return text

    def listed(self, runs):
        """The pieces of json.dumps([make(run) for run in runs], sort_keys=...), in order:
        their join is that text (hashed piece by piece, it is never whole in memory)."""
        yield "["
        for i, run in enumerate(runs):
            yield (", " if i else "") + self.text(run)
        yield "]"


def waits_for(chunks, decides):
    """{chunk id: [chunks whose ledgers it waits for]}. A chunk that decides (it holds an
    adaptive run past its minimum: decides(chunk)) waits for every chunk of the round
    before it, and of the rounds before that up to one whose chunks all decide themselves
    (and so wait in turn): every record of every earlier round is on disk when it starts,
    whatever the executor runs at once. Other chunks wait for nothing (no edge: a study
    without adaptive repetitions keeps its jobs' inputs)."""
    by_round = {}
    for c in chunks:
        by_round.setdefault(c.round, []).append(c)
    deciding = {c.id: decides(c) for c in chunks}          # asked once a chunk, not once a walk
    waited = {}                     # round -> what a deciding chunk of it waits for (alike in a round)
    out = {}
    for c in chunks:
        if deciding[c.id] and c.round not in waited:
            earlier, rnd = [], c.round - 1
            while rnd in by_round:
                earlier += by_round[rnd]
                if all(deciding[x.id] for x in by_round[rnd]):
                    break
                rnd -= 1
            waited[c.round] = earlier
        out[c.id] = list(waited[c.round]) if deciding[c.id] else []
    return out
