"""numa_maps lines (numaplace.run.numa_maps). Written against the mutants mutmut left alive
(tests/benchmarks/mutation_score.sh)."""
from __future__ import annotations

import pytest

from numaplace.run.numa_maps import parse_line

pytestmark = pytest.mark.unit


def test_a_hugetlb_mapping_without_a_file_ends_its_policy_at_huge():
    """`huge` right after the policy (no file=, heap or stack before it) is the mapping's
    kind, not a word of a policy name like "weighted interleave"."""
    m = parse_line("7f4a00000000 default huge anon=1 dirty=1 N0=1 kernelpagesize_kB=2048\n")
    assert (m.policy, m.policy_text, m.kind, m.page_kb, m.bytes_per_node) == \
        ("default", "default", "huge", 2048, {0: 2 << 20})
    m = parse_line("7f4a00000000 bind:1 huge dirty=3 N1=3 kernelpagesize_kB=2048\n")
    assert (m.policy, m.policy_nodes, m.kind) == ("bind", "1", "huge")


def test_an_unknown_counter_of_a_newer_kernel_is_kept_as_a_counter_not_a_node():
    """Only `N<digits>=` counts pages on a node: another `key=<count>` (a keyword a newer
    kernel adds, even one starting with N or ending in a digit) is kept in counters, never
    crashes the parse nor adds pages to a node."""
    m = parse_line("7f4a00000000 default anon=3 Nthp=2 zone2=7 N0=3 kernelpagesize_kB=4")
    assert m.pages == {0: 3}
    assert m.counters == {"anon": 3, "Nthp": 2, "zone2": 7}
    assert m.bytes_per_node == {0: 3 * 4096}
