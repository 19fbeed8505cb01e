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


def test_the_id_listed_twice_is_the_first_one_the_overlap_repeats():
    """'0-5,3-7' names 3 (where the second range starts inside the first), not 5."""
    with pytest.raises(ConfigError) as e:
        check_cpulist_text("0-5,3-7", "p.yaml", "cpus", 100)
    assert e.value.problem == "3 is listed twice in '0-5,3-7'"
    with pytest.raises(ConfigError) as e:
        check_cpulist_text("8-9,0-4,4", "p.yaml", "cpus", 100)
    assert e.value.problem == "4 is listed twice in '8-9,0-4,4'"
    check_cpulist_text("0-3,4-7, 9", "p.yaml", "cpus", 9)       # adjacent ranges share no id


def test_cpu_lists_are_expanded_sorted_once_each_and_written_back_in_ranges():
    """What taskset and numactl are given: '0-3,8' both ways, whatever order the user wrote."""
    from numaplace.core.cpulist import format_cpulist
    assert parse_cpulist("8,0-3") == [0, 1, 2, 3, 8]
    assert parse_cpulist("1,64") == [1, 64] and parse_cpulist("64-65,1") == [1, 64, 65]
    assert parse_cpulist("5") == [5] and parse_cpulist(5) == [5] and parse_cpulist("3-3") == [3]
    assert parse_cpulist([7, 1, "2-4"]) == [1, 2, 3, 4, 7]
    assert format_cpulist([8, 3, 2, 1, 0]) == "0-3,8"
    assert format_cpulist([0, 2, 4, 5, 6, 7, 9, 10]) == "0,2,4-7,9-10"
    assert format_cpulist({1, 3}, sep=" ") == "1 3" and format_cpulist([]) == ""
    assert format_cpulist([4, 4, 5]) == "4-5"


def test_a_descending_range_is_refused_and_says_which():
    with pytest.raises(ConfigError) as e:
        parse_cpulist("0,5-3", "s.yaml", "cpus")
    assert str(e.value) == "s.yaml: cpus: descending range '5-3' in '0,5-3'"
