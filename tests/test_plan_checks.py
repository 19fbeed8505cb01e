"""Checks across a study's fields before any placement is made (numaplace.plan.checks):
contradictions refused in one line naming the entry, the size of the plan counted from the
spec (so a billion runs is refused in milliseconds), and the largest figure the plan would
draw, against numaplace's limits. Exact values on the bundled platforms."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from numaplace import ConfigError
from numaplace.core import limits
from numaplace.core.schema import defaults
from numaplace.machine.topology import Topology
from numaplace.plan import checks
from numaplace.plan.study import Study

pytestmark = pytest.mark.unit

CONFIG = Path(__file__).resolve().parents[1] / "config"
BASE = {"study": "s", "platform": "x4600", "repetitions": 1, "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}]}]}


def plan(**changes):
    d = json.loads(json.dumps(BASE))
    d.update(changes)
    return Study(d, "s.yaml", CONFIG)


def refusal(**changes):
    with pytest.raises(ConfigError) as e:
        plan(**changes)
    return str(e.value)


def exp(*placements, **extra):
    return [{"name": "e", "placements": list(placements), **extra}]


# -- repetitions -----------------------------------------------------------------------------

def test_adaptive_repetitions_with_min_equal_to_max_are_accepted_and_min_above_max_refused():
    """{min: 5, max: 5} is a fixed count written as a range: planned (5 rounds); min 6 max 5 is a contradiction."""
    assert len(plan(repetitions={"min": 5, "max": 5}).runs) == 2 * 5
    assert len(plan(experiments=exp({"cpus": "0"}, repetitions={"min": 3, "max": 3})).runs) == 2 * 3
    assert refusal(repetitions={"min": 6, "max": 5}) == (
        "s.yaml: repetitions: min 6 is above max 5: an experiment repeats at least min and at most max times")
    assert refusal(experiments=exp({"cpus": "0"}, repetitions={"min": 4, "max": 3})) == (
        "s.yaml: experiments[0] (e).repetitions: min 4 is above max 3: an experiment repeats at least min and "
        "at most max times")


def test_the_planned_runs_multiply_placements_memories_bindings_rounds_benchmarks_classes_and_variants():
    """The count that refuses a billion-run study before planning it: every factor counts, an adaptive
    experiment's max rounds, all-choices as C(8,2) node pairs (a: 5·2·2·5·2 = 200; b: 28·3·2 = 168)."""
    line = refusal(benchmarks=["cg", "mg"], classes=["S"], repetitions={"min": 2, "max": 5}, limits={"runs": 1},
                   experiments=[{"name": "a", "launcher": "numactl", "memory": ["local", {"interleave": "all"}],
                                 "binding": ["process", "threads"],
                                 "placements": [{"compact": [1, 2, 4]}, {"cpus": "0-1"}, {"layout": "1/1", "nodes": "0,1"}]},
                                {"name": "b", "repetitions": 3, "placements": [{"layout": "2/2"}]}])
    assert line == ("s.yaml: experiments: planned runs: 368, above numaplace's limit of 1 "
                    "(runs; a study that needs more sets `limits: {runs: 368}`)")
    assert len(plan(repetitions=7, limits={"runs": 14}).runs) == 14           # exactly the limit: planned


# -- contradictions and settings too small to mean anything ----------------------------------

@pytest.mark.parametrize("changes, line", [
    (dict(capture={"interval_min": 0.5, "interval_max": 0.4}),
     "capture.interval_min: 0.5 is above capture.interval_max 0.4"),
    (dict(capture={"interval_max": 0.0005}),
     "capture.interval_max: 0.0005 s is below numaplace's smallest sampling interval of 0.001 s (one sample of "
     "numa_maps takes about that long; shorter makes the sampler spin)"),
    (dict(run={"timeout": 4.5}),
     "run.timeout: 4.5 s would end runs before they finish: numaplace's smallest timeout is 5 s (NPB class S takes "
     "up to ~1 s, membw's defaults 2 s a thread, plus start-up; a timeout is for hung runs)"),
    (dict(experiments=exp({"cpus": "0", "nodes": "0"})),
     "experiments[0] (e).placements[0].nodes: nodes only applies to a layout; cpus ignores it (remove nodes)"),
    (dict(experiments=exp({"compact": [2], "distinct": True})),
     "experiments[0] (e).placements[0].distinct: distinct only applies to a layout; compact ignores it (remove distinct)"),
    (dict(experiments=exp({"layout": "1/1", "smt": True})),
     "experiments[0] (e).placements[0].smt: smt only applies to compact, spread and unpinned; layout ignores it "
     "(remove smt)"),
    (dict(experiments=exp({"layout": "1/1", "nodes": "0,1", "distinct": True})),
     "experiments[0] (e).placements[0].distinct: distinct only applies to nodes: all-choices; with a node list "
     "there is one choice (remove distinct)"),
    (dict(experiments=exp({"cpus": "0"}) + exp({"cpus": "1"})),
     "experiments[1].name: experiment name 'e' is already used by experiments[0]"),
    (dict(study="README.md"),
     "study: 'README.md' is a name numaplace uses itself: results/README.md and report/README.md are the "
     "folders' own notes; give the study another name"),
    (dict(variants=["serial-init"], experiments=[{"name": "e", "benchmarks": ["membw"], "classes": ["X"],
                                                  "placements": [{"cpus": "0"}]}]),
     "experiments[0] (e).variants: variant serial-init (the study's variants) does not apply to membw, which is "
     "built only as default; serial-init is for cg, mg: give this experiment variants: [default]"),
    (dict(experiments=[{"name": "e", "benchmarks": ["membw"], "classes": ["X"], "variants": ["mcmodel-medium"],
                        "placements": [{"cpus": "0"}]}]),
     "experiments[0] (e).variants: variant mcmodel-medium does not apply to membw, which is built only as default; "
     "mcmodel-medium is for cg, ep, ft, is, mg"),
    (dict(launcher="numactl", experiments=exp({"cpus": "0"}, memory=[{"membind": "0-9000"}])),
     "experiments[0] (e).memory[0].membind: id: 9000, above numaplace's limit of 8191 (cpu_id; a study that needs "
     "more sets `limits: {cpu_id: 9000}`)"),
    (dict(launcher="numactl", memory=[{"membind": "0,0"}]), "memory[0].membind: 0 is listed twice in '0,0'"),
    (dict(limits={"threads": 5}, experiments=exp({"layout": "3/3", "nodes": "0,1"})),
     "experiments[0] (e).placements[0].layout: threads: 6, above numaplace's limit of 5 (threads; a study that "
     "needs more sets `limits: {threads: 6}`)"),
    (dict(limits={"threads": 2}, experiments=exp({"cpus": "0-3", "threads": 3})),
     "experiments[0] (e).placements[0].threads: threads: 3, above numaplace's limit of 2 (threads; a study that "
     "needs more sets `limits: {threads: 3}`)"),
    (dict(limits={"threads": 2}, experiments=exp({"compact": [1, 3]})),
     "experiments[0] (e).placements[0].compact: threads: 3, above numaplace's limit of 2 (threads; a study that "
     "needs more sets `limits: {threads: 3}`)"),
    (dict(limits={"choices": 55}, experiments=exp({"layout": "2/2/2"})),
     "experiments[0] (e).placements[0].nodes: node choices of layout '2/2/2' on platform x4600: 56, above "
     "numaplace's limit of 55 (choices; a study that needs more sets `limits: {choices: 56}`)"),
    (dict(experiments=exp({"cpus": "0"}, repetitions={"min": 2, "max": 1001})),
     "experiments[0] (e).repetitions.max: repetitions: 1001, above numaplace's limit of 1000 (repetitions; a study "
     "that needs more sets `limits: {repetitions: 1001}`)"),
], ids=["interval-min-above-max", "interval-below-1ms", "timeout-below-5s", "nodes-without-layout",
        "distinct-without-layout", "smt-with-layout", "distinct-with-node-list", "duplicate-name", "reserved-name",
        "study-variant", "experiment-variant", "membind-id-limit", "membind-twice", "layout-threads-summed",
        "threads-limit", "compact-limit", "choices-limit", "adaptive-max-limit"])
def test_a_contradiction_or_a_setting_past_its_bound_is_one_line_naming_its_entry(changes, line):
    assert refusal(**changes) == "s.yaml: " + line


@pytest.mark.parametrize("changes", [
    dict(capture={"interval_min": 0.5, "interval_max": 0.5}), dict(capture={"interval_min": 0.001}),
    dict(run={"timeout": 5}), dict(study="Builds"), dict(limits={"threads": 6}, experiments=exp({"layout": "1/1"})),
    dict(limits={"choices": 56}, experiments=exp({"layout": "2/2/2"})),
], ids=["interval-min-equal-max", "interval-1ms", "timeout-5s", "name-near-reserved", "layout-at-limit", "choices-at-limit"])
def test_settings_exactly_at_their_bound_are_planned(changes):
    assert plan(**changes).runs


def test_a_name_numaplace_uses_is_refused_whatever_its_case():
    """On a case-insensitive file system Build is build: results/build/ holds every study's binaries."""
    assert refusal(study="Build").startswith("s.yaml: study: 'Build' is a name numaplace uses itself: results/build/")


def symmetric(n):
    """n one-CPU nodes, every pair at one distance: n! node symmetries."""
    return Topology("sym", {i: [i] for i in range(n)}, {i: 1000 for i in range(n)},
                    [[10 if i == j else 20 for j in range(n)] for i in range(n)])


def test_distinct_compares_choices_by_up_to_the_symmetries_limit():
    """3 nodes have 3! = 6 symmetries: at a limit of 6 their 3 choices are compared; 4 nodes (24) are refused
    with the limit that would do (ten times it)."""
    lim = {**limits.of({}), "symmetries": 6}
    assert checks._spec_placements({"layout": "1/1", "distinct": True}, symmetric(3), "s.yaml", "p", lim) == 3
    with pytest.raises(ConfigError) as e:
        checks._spec_placements({"layout": "1/1", "distinct": True}, symmetric(4), "s.yaml", "p", lim)
    assert str(e.value) == ("s.yaml: p.distinct: platform sym has more than 6 node symmetries to compare choices "
                            "with (symmetries; a study that needs more sets `limits: {symmetries: 60}`)")
    flat = Topology("flat", {0: [0], 1: [1]}, {0: 1, 1: 1})
    with pytest.raises(ConfigError, match="platform flat has no distances, so every choice of nodes looks alike"):
        checks._spec_placements({"layout": "1/1", "distinct": True}, flat, "s.yaml", "p", lim)


# -- the largest figure ----------------------------------------------------------------------

def test_a_figure_draws_every_row_up_to_max_rows_then_both_ends_and_a_gap():
    assert [checks._drawn(n, 40) for n in (0, 3, 39, 40, 41, 100)] == [0, 3, 39, 40, 41, 41]
    assert [checks._drawn(n, 41) for n in (41, 42, 100)] == [41, 41, 41]
    assert checks._drawn(10, 5) == 5 and checks._drawn(10, 4) == 5


def study_runs(exps, **kw):
    s = Study({"study": "s", "platform": "x4600", "repetitions": 1, **kw, "experiments": exps}, "s.yaml", CONFIG)
    return s.topology, s.runs


D = defaults("figures")


def sized(cfg, topo, runs):
    """largest_figure's (width, height, why), inches rounded to a millionth."""
    w, h, why = checks.largest_figure(cfg, topo, runs)
    return round(w, 6), round(h, 6), why


def test_the_largest_figure_of_a_plan_is_sized_by_its_rows_labels_thread_counts_and_serial_init_pairs():
    """The figures check refuses a plan whose figure would be too large to draw: its size must be the
    one numaplace.figures would draw (inches, and what makes it tall)."""
    topo, runs = study_runs([{"name": "e", "placements": [{"compact": [1, 2, 4, 8, 16]}, {"spread": [2, 4]},
                                                          {"layout": "2/2"}]}],
                            benchmarks=["cg", "mg"], classes=["S"], variants=["default", "serial-init"])
    assert sized(D, topo, runs) == (10.14, 17.15, "21 serial-init rows")
    small = {**D, "max_rows": 10, "label_width": 20, "bar_height": 0.5}
    assert sized(small, topo, runs) == (10.14, 6.8, 
        "11 rows of 1 label line x bar_height 0.5 in")
    assert sized({**D, "max_rows": 200}, topo, runs) == (10.14, 52.4, 
        "68 serial-init rows")
    assert sized({**D, "label_width": 10}, topo, runs) == (9.6, 29.86, 
        "34 rows of 2 label lines x bar_height 0.42 in")


def test_many_thread_counts_or_a_heatmap_make_a_figure_tall():
    topo, runs = study_runs([{"name": "e", "placements": [{"compact": list(range(1, 17))}]}],
                            benchmarks=["cg"], classes=["S"])
    assert sized(D, topo, runs) == (10.14, 16.4, "16 thread counts")
    # one variant: no serial-init pairs, however narrow the labels
    assert sized({**D, "label_width": 5, "bar_height": 0.1}, topo, runs) == (9.3, 16.4, "16 thread counts")
    topo, runs = study_runs([{"name": "e", "placements": [{"compact": [1, 2]}]}], benchmarks=["cg"], classes=["S"])
    assert sized(D, topo, runs) == (10.02, 3.1, "2 thread counts")
    assert sized(D, topo, []) == (9.54, 2.4, "0 thread counts")
    topo, runs = study_runs([{"name": "e", "benchmarks": ["membw"], "classes": ["X"],
                              "placements": [{"matrix": {"via": "first-touch"}}]}])
    assert sized(D, topo, runs) == (9.54, 6.2, "a heatmap of 8 nodes")
    sixteen = Topology("t", {i: [i] for i in range(16)}, {i: 1000 for i in range(16)})
    assert sized(D, sixteen, runs) == (12.8, 11.0, "a heatmap of 16 nodes")


def fig(figures, runs=(), topo=None):
    try:
        checks.check_figures({"figures": figures}, topo, list(runs), "s.yaml")
    except ConfigError as e:
        return str(e)
    return None


def test_a_figure_may_be_exactly_the_largest_numaplace_draws():
    """10,000 px a side in PNG (10.0 in at dpi 1000), 200 in for svg and pdf: at the limit it is drawn."""
    assert fig({"width": 9.46, "dpi": 1000, "formats": ["png"]}) is None
    assert fig({"width": 199.46, "formats": ["svg"]}) is None
    assert fig({"dpi": 1200, "formats": ["svg"]}) is None                     # dpi means nothing without png
    assert fig({"width": 9.47, "dpi": 1000, "formats": ["png"]}) == (
        "s.yaml: figures.width: a figure would be 10010 px wide (10 in: width 9.47 in and labels of up to 46 "
        "characters; at dpi 1000), above numaplace's limit of 10000 px per side; lower figures.width, figures.dpi "
        "or figures.label_width")
    assert fig({"width": 199.47, "formats": ["pdf"]}) == (
        "s.yaml: figures.width: a figure would be 200 in wide (width 199.47 in and labels of up to 46 characters), "
        "above numaplace's limit of 200 in per side for svg, pdf (PDF's largest page); lower figures.width or "
        "figures.label_width")


def test_a_figure_too_large_names_the_setting_the_study_changed():
    """The study set only dpi: the refusal points at figures.dpi, not at the width it left alone."""
    assert fig({"dpi": 1200, "formats": ["png"]}) == (
        "s.yaml: figures.dpi: a figure would be 11448 px wide (9.54 in: width 9 in and labels of up to 46 "
        "characters; at dpi 1200), above numaplace's limit of 10000 px per side; lower figures.width, figures.dpi "
        "or figures.label_width")
    topo, runs = study_runs([{"name": "e", "placements": [{"compact": [1, 2, 4, 8, 16]}, {"spread": [2, 4]},
                                                          {"layout": "2/2"}]}],
                            benchmarks=["cg", "mg"], classes=["S"], variants=["default", "serial-init"])
    assert fig({"max_rows": 1000, "bar_height": 10, "formats": ["svg"]}, runs, topo) == (
        "s.yaml: figures.bar_height: a figure would be 341 in tall (34 rows of 1 label line x bar_height 10 in), "
        "above numaplace's limit of 200 in per side for svg, pdf (PDF's largest page); lower figures.bar_height, "
        "figures.max_rows or figures.label_width")


def test_the_tallest_case_sets_the_rows_of_a_figure():
    """cg with 8 placements beside mg with 2: the figure is as tall as cg's rows."""
    topo, runs = study_runs([{"name": "a", "benchmarks": ["cg"], "placements": [{"compact": [1, 2, 4, 8, 16]},
                                                                               {"spread": [2, 4, 8]}]},
                             {"name": "b", "benchmarks": ["mg"], "placements": [{"compact": [1, 2]}]}], classes=["S"])
    assert sized({**D, "bar_height": 1.0}, topo, runs) == (10.14, 9.3, "8 rows of 1 label line x bar_height 1 in")
