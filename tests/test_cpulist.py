"""CPU lists (numaplace.core.cpulist): what a wrong list is told, and the checks made before
a user's list is expanded. Several tests pin what the mutation run left alive
(tests/benchmarks/mutation-survivors.md names the test that kills each)."""
from __future__ import annotations

import pytest

from numaplace import ConfigError
from numaplace.core.cpulist import check_cpulist_text, parse_cpulist

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("text, line", [
    ("", "cpu list: cpus: expected a CPU list like '0-3,8', got ''"),
    ("  ", "cpu list: cpus: expected a CPU list like '0-3,8', got '  '"),
    (None, "cpu list: cpus: expected a CPU list like '0-3,8', got None"),
    ("0-x", "cpu list: cpus: bad CPU list element '0-x' in '0-x' (use numbers and ranges like '0-3,8')"),
])
def test_a_wrong_list_without_a_file_is_named_as_a_cpu_list(text, line):
    with pytest.raises(ConfigError) as e:
        parse_cpulist(text)
    assert str(e.value) == line


def test_a_wrong_list_names_its_file_and_entry():
    with pytest.raises(ConfigError) as e:
        parse_cpulist("1,,2", "s.yaml", "experiments[0].placements[0].cpus")
    assert str(e.value) == ("s.yaml: experiments[0].placements[0].cpus: bad CPU list element '' in '1,,2' "
                            "(use numbers and ranges like '0-3,8')")


def test_spaces_and_lists_are_read():
    assert parse_cpulist("0, 2-3") == [0, 2, 3] and parse_cpulist([0, "2-3"]) == [0, 2, 3]


@pytest.mark.parametrize("text, line", [
    ("0-3,3", "3 is listed twice in '0-3,3'"),
    ([1, "0-1"], "1 is listed twice in '1,0-1'"),
    ("0, x, 1-2, 2", "2 is listed twice in '0, x, 1-2, 2'"),        # the bad element is parse_cpulist's
    ("8", "id: 8, above numaplace's limit of 7 (cpu_id; a study that needs more sets `limits: {cpu_id: 8}`)"),
    (8, "id: 8, above numaplace's limit of 7 (cpu_id; a study that needs more sets `limits: {cpu_id: 8}`)"),
])
def test_ids_past_the_limit_and_ids_listed_twice_are_refused_before_expanding(text, line):
    with pytest.raises(ConfigError) as e:
        check_cpulist_text(text, "p.yaml", "nodes[0].cpus", 7)
    assert str(e.value) == "p.yaml: nodes[0].cpus: " + line


def test_ids_up_to_the_limit_pass():
    check_cpulist_text("0-7", "p.yaml", "nodes[0].cpus", 7)
    check_cpulist_text(7, "p.yaml", "nodes[0].cpus", 7)
