"""numa_maps lines as the kernel writes them, read field by field: the newline a reader keeps,
a mapping without resident pages, the errors' words, data pages summed per node."""
import pytest

from numaplace.run.numa_maps import parse, parse_line, summarize


def test_line_with_its_newline():
    """Lines read from the file keep their newline: the last field (here N1=) still counts."""
    m = parse_line("7f00 bind:1 anon=3 dirty=3 kernelpagesize_kB=2048 N1=3\n")
    assert (m.start, m.policy, m.policy_nodes, m.page_kb, m.pages, m.counters) == \
        ("7f00", "bind", "1", 2048, {1: 3}, {"anon": 3, "dirty": 3})
    m = parse_line("7f00 default anon=3 N1=3 kernelpagesize_kB=64\n")
    assert m.page_kb == 64 and m.bytes_per_node == {1: 3 * 64 * 1024}


def test_mapping_without_resident_pages():
    m = parse_line("7ffc1d5e4000 default stack")
    assert (m.start, m.kind, m.page_kb, m.pages, m.n_pages, m.bytes_per_node) == \
        ("7ffc1d5e4000", "stack", 4, {}, 0, {})


@pytest.mark.parametrize("line, message", [
    ("   x", "malformed numa_maps line: '   x'"),
    ("zz00 default anon=1", "malformed numa_maps line: 'zz00 default anon=1'"),
    ("7f00 anon=1 N0=1", "no memory policy in numa_maps line: '7f00 anon=1 N0=1'"),
])
def test_errors_name_the_line(line, message):
    with pytest.raises(ValueError) as e:
        parse_line(line)
    assert str(e.value) == message


def test_data_pages_are_summed_per_node_over_mappings():
    s = summarize(parse("1000 default heap anon=5 N0=5 N1=1 kernelpagesize_kB=4\n"
                        "2000 default anon=7 N0=7 kernelpagesize_kB=4\n"
                        "3000 default file=/lib/x.so mapped=9 N0=9 kernelpagesize_kB=4\n"))
    assert s["data_pages"] == {0: 12, 1: 1}
    assert s["data_bytes"] == {0: 12 * 4096, 1: 4096}
    assert s["total_bytes"] == {0: 21 * 4096, 1: 4096}
    assert s["policies"] == {"default": 13 * 4096}


def test_file_mapping_without_pages_keeps_its_whole_path():
    """Such a line ends with the path: only the newline is cut, whatever the path ends with."""
    m = parse_line("7f2a10000000 default file=/opt/app/lib/libMAX\n")
    assert (m.kind, m.path, m.pages) == ("file", "/opt/app/lib/libMAX", {})


# -- a mapping's kind and a newer kernel's counters ----------------------------------------
# Both pin what the mutation run left alive (tests/benchmarks/mutation-survivors.md).

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


def test_a_private_file_mapping_is_data_only_when_its_anonymous_pages_are_all_its_pages():
    """A file mapping's pages count as the process's data only when every resident page is
    a copy-on-write one (anon equal to the pages on the nodes); with no resident page at
    all, or anon counting other than what is resident, it is the file's (page cache)."""
    lines = {
        "all copies": "55d0 default file=/w/cg.W.x anon=3 dirty=3 N0=2 N1=1 kernelpagesize_kB=4",
        "no pages": "55d0 default file=/w/cg.W.x",
        "more anon than resident": "55d0 default file=/w/cg.W.x anon=5 dirty=5 N0=3 kernelpagesize_kB=4",
        "page cache": "55d0 default file=/w/cg.W.x mapped=3 N0=3 kernelpagesize_kB=4",
    }
    assert {k: parse_line(v).is_data for k, v in lines.items()} == {
        "all copies": True, "no pages": False, "more anon than resident": False, "page cache": False}
    s = summarize(parse("\n".join(lines.values())))
    assert s["data_bytes"] == {0: 2 * 4096, 1: 4096} and s["data_pages"] == {0: 2, 1: 1}
    assert s["total_bytes"] == {0: 8 * 4096, 1: 4096}
