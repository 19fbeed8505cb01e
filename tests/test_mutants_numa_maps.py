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
