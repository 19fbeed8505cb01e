"""schema.check: what a wrong study or platform file is told, word for word, and the
defaults it fills in (the study as the workflow then sees it)."""
import pytest

from numaplace import ConfigError
from numaplace.core.schema import check, validate_platform, validate_study

BASE = {"study": "s", "platform": "x4600", "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}]}]}


@pytest.mark.parametrize("data, name", [([1, 2], "list"), ("study: s", "str"), (None, "NoneType")])
def test_not_a_mapping(data, name):
    with pytest.raises(ConfigError) as e:
        validate_study(data, "s.yaml")
    assert str(e.value) == f"s.yaml: (top level): expected a mapping of settings, got {name}"
    assert (e.value.where, e.value.entry) == ("s.yaml", "(top level)")


def test_defaults_are_filled_in():
    d = validate_study({**BASE}, "s.yaml")
    assert d["repetitions"] == 3 and d["benchmarks"] == ["cg", "mg"] and d["classes"] == ["S"]
    assert d["variants"] == ["default"] and d["platform"] == "x4600"


ONE_OF = "a placement gives exactly one of cpus, layout, compact, spread, unpinned, sweep, matrix or contention"


@pytest.mark.parametrize("placement, entry, problem", [
    ({"cpus": "0-1", "layout": "2"}, "experiments[0].placements[0]", "gives cpus, layout: " + ONE_OF),
    ({"layout": "2/x"}, "experiments[0].placements[0].layout",
     "'2/x' is not a layout like '2/2' (threads per node, separated by /)"),
    # a placement is one of seven kinds: say which, not "not valid under any of the given schemas"
    ({}, "experiments[0].placements[0]", ONE_OF),
    ({"nodes": "0-1"}, "experiments[0].placements[0]", ONE_OF),
])
def test_placement_errors(placement, entry, problem):
    bad = {**BASE, "experiments": [{"name": "e", "placements": [placement]}]}
    with pytest.raises(ConfigError) as e:
        validate_study(bad, "s.yaml")
    assert e.value.entry == entry
    assert e.value.problem == problem


def test_memory_spec_error_points_into_the_spec():
    bad = {**BASE, "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}], "memory": [{"membind": "a"}]}]}
    with pytest.raises(ConfigError) as e:
        validate_study(bad, "s.yaml")
    assert e.value.entry == "experiments[0].memory[0]"


def test_platform_check():
    ok = {"name": "p", "nodes": [{"id": 0, "cpus": "0-1"}]}
    assert validate_platform(ok, "p.yaml") is ok
    with pytest.raises(ConfigError) as e:
        check({"name": "p"}, "platform", "p.yaml")
    assert str(e.value) == "p.yaml: (top level): 'nodes' is a required property"
