"""Planning work done once (issue 43.5): each run's chunk entry and plan row are dumped once
per shape (numaplace.plan.rounds.RunTexts), and the texts are json.dumps' own, byte for byte."""
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from numaplace.plan.rounds import RunTexts, waits_for
from numaplace.plan.study import Study

REPO = Path(__file__).resolve().parents[1]


def study(**extra):
    s = {"study": "t", "platform": "x4600", "benchmarks": ["cg", "mg"], "classes": ["B"], "repetitions": 3,
         "variants": ["default", "serial-init"],
         "experiments": [{"name": "a", "placements": [{"compact": [1, 2, 16]}, {"layout": "2/2"}]},
                         {"name": "b", "placements": [{"compact": [2]}], "memory": ["local", {"interleave": "all"}], "launcher": "numactl"}],
         **extra}
    return Study(s, "t.yaml", REPO / "config")


def test_every_chunk_text_and_size_is_json_dumps_own():
    for st in (study(), study(repetitions={"min": 4, "max": 6})):
        sizes = {}
        for c in st.chunks:
            runs = [st.run(rid) for rid in c.order()]
            whole = json.dumps([st.chunk_entry(r.run_id) for r in runs], sort_keys=True)
            assert "".join(st.entry_texts.listed(runs)) == whole
            for r in runs:
                sizes[r.run_id] = len(json.dumps(st.chunk_entry(r.run_id)))
        assert sum(len(c.run_ids) for c in st.chunks) == len(st.runs) == len(sizes)
        assert "".join(st.entry_texts.listed([])) == "[]"


def test_the_plan_digest_hashes_every_row_as_json_dumps_writes_it():
    st = study()
    rows = json.dumps([r.row() for r in st.runs]).encode()
    assert st.plan_digest() == hashlib.sha256(rows).hexdigest()[:16]


@dataclass(frozen=True)
class R:
    run_id: str
    rep: int
    what: str


def test_a_shape_whose_text_changes_with_more_than_the_id_is_dumped_whole():
    """The second run of a shape is dumped whole and compared: where something else follows
    the id or the repetition, every run of that shape is dumped."""
    made = []

    def plain(r):
        made.append(r.run_id)
        return {"run_id": r.run_id, "rep": r.rep, "what": r.what, "text": "{x} \"rep\": 1, {0}"}

    texts = RunTexts(plain, sort_keys=True)
    runs = [R(f"{w}.r{i}", i, w) for w in ("a", "b") for i in range(1, 11)]
    assert [texts.text(r) for r in runs] == [json.dumps(plain(r), sort_keys=True) for r in runs]
    expected = [json.dumps(plain(r), sort_keys=True) for r in runs]
    made.clear()
    assert [texts.text(r) for r in runs] == expected
    assert made == []                        # each shape made and checked once: now only put together
    fresh = RunTexts(plain, sort_keys=True)
    assert [fresh.text(r) for r in runs] == expected and made == ["a.r1", "a.r2", "b.r1", "b.r2"]

    def odd(r):                              # the repetition shows elsewhere too
        return {"run_id": r.run_id, "rep": r.rep, "seed": 7 * r.rep, "path": f"runs/{r.run_id}"}

    texts = RunTexts(odd)
    assert [texts.text(r) for r in runs] == [json.dumps(odd(r)) for r in runs]
    twice = lambda r: {"rep": r.rep, "again": {"rep": r.rep}, "run_id": r.run_id}
    texts = RunTexts(twice)
    assert [texts.text(r) for r in runs] == [json.dumps(twice(r)) for r in runs]


def test_a_chunk_is_asked_once_whether_it_decides():
    from numaplace.plan.rounds import Chunk
    cs = [Chunk(r, i, (f"r{r}.{i}",), 1.0) for r in (1, 2, 3) for i in (1, 2)]
    asked = []
    w = waits_for(cs, lambda c: asked.append(c.id) or c.round > 1)
    assert sorted(asked) == sorted(c.id for c in cs)
    assert [c.id for c in w["r3.c2"]] == ["r2.c1", "r2.c2"] and w["r1.c1"] == []
    assert [c.id for c in w["r2.c1"]] == ["r1.c1", "r1.c2"]
    w["r3.c1"].append("x")                   # each chunk's own list
    assert len(w["r3.c2"]) == 2


def test_counts_are_said_with_their_plural_zero_included():
    """'0 runs', '1 run', '2 runs': every line that counts says it as English does."""
    from numaplace.core.text import counted
    assert [counted(n, "run") for n in (0, 1, 2)] == ["0 runs", "1 run", "2 runs"]
