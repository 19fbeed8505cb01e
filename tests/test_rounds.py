"""Measurement rounds (issue 29): runs grouped into chunks, round by round."""
from pathlib import Path

from numaplace.plan.rounds import chunks
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
