"""Measurement rounds (issue 29): runs grouped into chunks, round by round."""
import hashlib
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from numaplace.plan.rounds import MAX_CHUNK_BYTES, Chunk, Repetitions, chunks, waits_for
from numaplace.plan.study import Study

REPO = Path(__file__).resolve().parents[1]


def study(reps=3, **extra):
    s = {"study": "r", "platform": "x4600", "benchmarks": ["cg", "mg"], "classes": ["B"], "repetitions": reps,
         "variants": ["default"], "experiments": [{"name": "scaling", "placements": [{"compact": [1, 2, 4, 8, 16]}]}],
         **extra}
    return Study(s, "r.yaml", REPO / "config")


def test_every_run_is_in_one_chunk_and_a_chunk_holds_one_repetition():
    st = study()
    cs = st.chunks
    ids = [i for c in cs for i in c.run_ids]
    assert sorted(ids) == sorted(r.run_id for r in st.runs) and len(ids) == len(set(ids))
    rep = {r.run_id: r.rep for r in st.runs}
    for c in cs:
        assert {rep[i] for i in c.run_ids} == {c.round}
    assert [c.round for c in cs] == sorted(c.round for c in cs)          # round 1's chunks first


def test_chunks_are_cut_by_count_and_by_estimated_time():
    st = study(reps=1)
    per_run = st.estimate().per_run
    by_count = chunks(st.runs, per_run, {"chunk_runs": 3, "chunk_minutes": 1440})
    assert [len(c.run_ids) for c in by_count] == [3, 3, 3, 1]
    by_time = chunks(st.runs, {k: 60.0 for k in per_run}, {"chunk_runs": 100, "chunk_minutes": 2.5})
    assert [len(c.run_ids) for c in by_time] == [2, 2, 2, 2, 2] and all(c.seconds == 120 for c in by_time)
    # a run longer than the limit is a chunk of its own, never dropped
    (one,) = chunks(st.runs[:1], {st.runs[0].run_id: 10_000.0}, {"chunk_minutes": 1})
    assert one.run_ids == (st.runs[0].run_id,)


def test_the_order_inside_a_chunk_is_shuffled_alike_in_every_process():
    st = study(reps=1)
    (c, *_) = chunks(st.runs, st.estimate().per_run, {"chunk_runs": 10})
    again = chunks(study(reps=1).runs, st.estimate().per_run, {"chunk_runs": 10})[0]
    assert c.seed == again.seed and c.order() == again.order()
    assert sorted(c.order()) == sorted(c.run_ids) and c.order() != list(c.run_ids)
    assert c.id == "r1.c1"


def test_a_chunk_measures_only_runs_without_their_record(tmp_path, monkeypatch):
    """Started again after an interruption, a chunk keeps every record that holds its run's
    definition and measures the rest; a record of another definition is measured again."""
    import json
    import os
    from numaplace.run import chunk, runner
    measured = []

    def fake(spec, build, record, window=None, held_lock=None, **more):
        os.close(held_lock)
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"run_id": spec["run_id"], "status": "ok", **more["extra"],
                                      "definition_sha256": runner.definition_digest(spec)}))
        measured.append(spec["run_id"])
        return {"run_id": spec["run_id"], "status": "ok"}
    monkeypatch.setattr(runner, "execute_build", fake)
    monkeypatch.setattr("numaplace.machine.guard.lock_path", lambda: tmp_path / "machine.lock")
    runs = [{"spec": {"run_id": f"a.r{i}", "run": {"idle_check": "off"}, "placement": {"cpus": "0"},
                      "argv": [str(i)]}, "build": "b.json"} for i in (1, 2, 3)]
    chunk.measure_chunk(runs[:2], tmp_path, tmp_path / "ledger.json")      # interrupted after two
    assert measured == ["a.r1", "a.r2"]
    changed = [runs[0], {**runs[1], "spec": {**runs[1]["spec"], "argv": ["other"]}}, runs[2]]
    ledger = chunk.measure_chunk(changed, tmp_path, tmp_path / "ledger.json", {"chunk": "r1.c1", "seed": 7})
    assert measured == ["a.r1", "a.r2", "a.r2", "a.r3"]
    assert [e["outcome"] for e in ledger["runs"]] == ["kept", "ok", "ok"]
    rec = json.loads((tmp_path / "runs" / "a.r3" / "record.json").read_text())
    assert rec["round"] == {"chunk": "r1.c1", "seed": 7, "position": 3, "runs": 3}


def test_every_measure_job_waits_for_every_build(repo, tmp_path):
    """The default study's chunks all become ready after the last build, so that the
    rounds' priority orders them (round 1 first). With only its own binaries as input, a
    chunk of round 4 (CG and MG alone) ran before round 1 (which also waits for the
    micro-benchmarks' builds): seen in a fresh Debian's default study at 26107c3."""
    import re
    from conftest import copy_workflow, run_snakemake
    wf = copy_workflow(repo, tmp_path / "wf")
    dag = run_snakemake(wf, "-n", "--dag").stdout
    label = dict(re.findall(r'(\d+)\[label = "(\w+)', dag))
    edges = set(re.findall(r"(\d+) -> (\d+)", dag))
    builds = {n for n, rule in label.items() if rule == "npb_build"}
    chunks = {n for n, rule in label.items() if rule == "measure"}
    assert len(builds) >= 5 and len(chunks) >= 4, dag[-1500:]
    assert all((b, c) in edges for b in builds for c in chunks)


# -- where a chunk is cut, its order, and what a deciding chunk waits for ------------------
# Runs are stand-ins with a run id and a repetition. Several pin what the mutation run left
# alive (tests/benchmarks/mutation-survivors.md).

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


def test_adaptive_repetitions_default_to_alpha_five_percent_and_say_it():
    """{min, max} without alpha stops at the report's own "beyond noise" level, 0.05."""
    r = Repetitions.of({"min": 4, "max": 12})
    assert (r.least, r.most, r.alpha, r.adaptive) == (4, 12, 0.05, True)
    assert r.words() == ("4 to 12 rounds, stopping a case early once its best and runner-up are separated "
                         "(Mann-Whitney p < 0.05)")
    assert Repetitions.of({"min": 2, "max": 6, "alpha": 0.01}).alpha == 0.01
    fixed = Repetitions.of(5)
    assert (fixed.least, fixed.most, fixed.alpha, fixed.adaptive) == (5, 5, None, False)


@pytest.mark.parametrize("reps, can", [
    (Repetitions(2, 2), False), (Repetitions(3, 3), False), (Repetitions(4, 4), True), (Repetitions(9, 9), True),
    (Repetitions(2, 4, 0.05), False),      # 4 a side: the least an exact p < 0.05 can come from
    (Repetitions(2, 5, 0.05), True), (Repetitions(3, 5, 0.05), True),
    (Repetitions(5, 5, 0.05), False), (Repetitions(5, 6, 0.05), True), (Repetitions(6, 6, 0.05), False),
])
def test_a_budget_steps_repetitions_down_to_three_and_an_adaptive_max_to_four_or_its_min(reps, can):
    """Below 4 rounds a side no adaptive case could ever stop early; below min it is no longer {min, max}."""
    assert reps.can_step_down() is can


def test_a_round_is_cut_in_run_id_order_whatever_order_the_runs_come_in():
    """Chunks must be the same in every process that plans the study: by run id, not by plan order."""
    rs = runs(5)
    shuffled = [rs[3], rs[0], rs[4], rs[2], rs[1]]
    cs = chunks(shuffled, {}, {"chunk_runs": 2})
    assert [c.run_ids for c in cs] == [("x.r1.00", "x.r1.01"), ("x.r1.02", "x.r1.03"), ("x.r1.04",)]
    assert [c.id for c in cs] == ["r1.c1", "r1.c2", "r1.c3"]


def test_a_chunk_is_cut_below_linuxs_128_kib_argument_with_room_to_spare():
    """A chunk's runs travel as one argument; MAX_ARG_STRLEN is 128 KiB: the chunk is cut at 100,000 bytes."""
    assert MAX_CHUNK_BYTES == 100_000
