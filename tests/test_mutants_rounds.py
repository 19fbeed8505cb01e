"""Measurement rounds (numaplace.plan.rounds): where a chunk is cut, the shuffled order,
which earlier chunks a deciding chunk waits for, the repetitions' study-file form. Written
against the mutants mutmut left alive (tests/benchmarks/mutation_score.sh); runs are
stand-ins with a run id and a repetition."""
from __future__ import annotations

import hashlib
import random
from types import SimpleNamespace

import pytest

from numaplace.plan.rounds import MAX_CHUNK_BYTES, Chunk, Repetitions, chunks, waits_for

pytestmark = pytest.mark.unit


def runs(n, rep=1):
    return [SimpleNamespace(run_id=f"x.r{rep}.{i:02d}", rep=rep) for i in range(n)]


def sizes(cs):
    return [len(c.run_ids) for c in cs]


def test_a_chunk_holds_up_to_its_minutes_exactly():
    """chunk_minutes 1 is 60 s: two runs of 30 s fill it (not past it), two of 30.5 s do not
    fit together."""
    rs = runs(4)
    wide = {"chunk_runs": 100, "chunk_minutes": 1}
    assert sizes(chunks(rs, {r.run_id: 30.0 for r in rs}, wide)) == [2, 2]
    assert sizes(chunks(rs, {r.run_id: 30.5 for r in rs}, wide)) == [1, 1, 1, 1]


def test_a_run_without_an_estimate_costs_nothing():
    rs = runs(3)
    (c,) = chunks(rs, {}, {"chunk_runs": 100, "chunk_minutes": 1})
    assert c.seconds == 0.0 and c.run_ids == tuple(r.run_id for r in rs)
    (c,) = chunks(rs, {rs[0].run_id: 7.5}, {"chunk_runs": 100, "chunk_minutes": 1})
    assert c.seconds == 7.5


def test_a_chunk_holds_up_to_its_bytes_exactly():
    """Two runs of half MAX_CHUNK_BYTES fill a chunk, in every chunk of the round; a run of
    unknown size counts nothing."""
    rs = runs(4)
    half = {r.run_id: MAX_CHUNK_BYTES // 2 for r in rs}
    assert MAX_CHUNK_BYTES % 2 == 0
    assert sizes(chunks(rs, {}, {"chunk_runs": 100}, half)) == [2, 2]
    assert sizes(chunks(rs, {}, {"chunk_runs": 100}, {**half, rs[1].run_id: MAX_CHUNK_BYTES // 2 + 1})) == [1, 1, 2]
    full = {rs[0].run_id: MAX_CHUNK_BYTES}                                  # the others: size unknown
    assert sizes(chunks(rs, {}, {"chunk_runs": 100}, full)) == [4]
    assert [c.index for c in chunks(rs, {}, {"chunk_runs": 100}, half)] == [1, 2]


def test_the_order_is_the_chunks_own_seed():
    ids = tuple(f"cg.B.default.p{i}.r1" for i in range(12))
    c = Chunk(1, 1, ids, 0.0)
    assert c.seed == int(hashlib.sha256("\n".join(ids).encode()).hexdigest()[:12], 16)
    expected = list(ids)
    random.Random(c.seed).shuffle(expected)
    assert c.order() == expected == c.order()


def test_a_deciding_chunk_waits_back_to_the_first_round_that_all_decides():
    """Round 4 decides; round 3 does not all decide, so round 2 is waited for too, and as
    round 2 all decides (its chunks wait in turn) the walk stops there, before round 1."""
    cs = [Chunk(r, i, (f"r{r}.{i}",), 1.0) for r in (1, 2, 3, 4) for i in (1, 2)]
    deciding = {"r1.c1", "r1.c2", "r2.c1", "r2.c2", "r3.c1", "r4.c1", "r4.c2"}
    w = waits_for(cs, lambda c: c.id in deciding)
    assert [c.id for c in w["r4.c1"]] == ["r3.c1", "r3.c2", "r2.c1", "r2.c2"]
    assert [c.id for c in w["r3.c1"]] == ["r2.c1", "r2.c2"] and w["r3.c2"] == []
    assert w["r1.c1"] == []


def test_the_study_file_form_of_repetitions():
    assert Repetitions(5, 5).setting(4) == 4
    assert Repetitions(2, 9, 0.01).setting(6) == {"min": 2, "max": 6, "alpha": 0.01}
    assert Repetitions(2, 9, 0.01).facts() == {"min": 2, "max": 9, "alpha": 0.01}
    assert Repetitions(4, 4).can_step_down() and not Repetitions(3, 3).can_step_down()
    assert not Repetitions(5, 5, 0.05).can_step_down() and Repetitions(5, 6, 0.05).can_step_down()
