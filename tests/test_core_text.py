"""The words every stage's messages share (numaplace.core.text): counts with their noun,
NPB's seconds, the tables' percentages and byte sizes, exactly as the reports print them."""
from __future__ import annotations

import math

import pytest

from numaplace.core.text import byte_size_text, counted, percent_text, seconds_text

pytestmark = pytest.mark.unit


def test_a_count_takes_the_plural_except_for_exactly_one():
    """'1 thread' but '0 threads', '2 threads': the reports' case names read them."""
    assert [counted(n, "thread") for n in (0, 1, 2, 16)] == ["0 threads", "1 thread", "2 threads", "16 threads"]
    assert counted(1.0, "run") == "1 run" and counted(3.0, "run") == "3 runs"


def test_seconds_are_shown_with_npbs_two_decimals():
    """The compare tables print median times as NPB does: 0.01 s, the resolution it measured."""
    assert [seconds_text(x) for x in (2.0, 2.345, 0.004, 12.5, 123.456)] == ["2.00", "2.35", "0.00", "12.50", "123.46"]
    assert seconds_text("1.5") == "1.50"


def test_percentages_have_one_decimal_and_no_space_before_the_sign():
    assert [percent_text(x) for x in (12.34, -3.04, 0, 100, 7.26)] == ["12.3%", "-3.0%", "0.0%", "100.0%", "7.3%"]


@pytest.mark.parametrize("missing", [None, float("nan"), math.nan, "not a number", [1]])
def test_a_missing_value_is_shown_as_nothing(missing):
    """A placement without runs leaves an empty cell, never 'nan' or 'None'."""
    assert seconds_text(missing) == "" and percent_text(missing) == ""


def test_a_missing_value_from_pandas_is_shown_as_nothing():
    pd = pytest.importorskip("pandas")
    assert seconds_text(pd.NA) == "" and percent_text(pd.NA) == "" and seconds_text(pd.NaT) == ""


@pytest.mark.parametrize("b, shown", [
    (0, "0 B"), (1, "1 B"), (1023, "1023 B"),
    (1024, "1 KiB"), (1536, "1.5 KiB"), (32 * 1024, "32 KiB"), (1000 * 1024, "1e+03 KiB"),
    ((1 << 20) - 1, "1.02e+03 KiB"), (1 << 20, "1 MiB"), (3 << 19, "1.5 MiB"), (4 << 20, "4 MiB"),
    (256 << 20, "256 MiB"), ((1 << 30) - (1 << 20), "1.02e+03 MiB"),
    (1 << 30, "1 GiB"), (3 << 29, "1.5 GiB"), (16 << 30, "16 GiB"), (1000 * (1 << 20), "1e+03 MiB"),
    (10**9, "954 MiB"), (1000, "1000 B"),
])
def test_byte_sizes_are_in_the_largest_binary_unit_that_keeps_one_or_more(b, shown):
    """membw's titles and the compare tables' caches say sizes in KiB/MiB/GiB (1024, not 1000)."""
    assert byte_size_text(b) == shown


def test_a_byte_size_given_as_text_or_float_is_read_as_whole_bytes():
    assert byte_size_text("2048") == "2 KiB" and byte_size_text(1048576.0) == "1 MiB"


def test_the_files_users_and_programs_open_keep_their_names():
    """The report's landing, the workflow's last lines and docs/answer.schema.json name these files."""
    from numaplace.core import artifacts
    assert (artifacts.NOT_APPLICABLE, artifacts.PLAN_ESTIMATE, artifacts.ANSWER_FILE, artifacts.ANSWER_JSON) == \
        ("not_applicable.txt", "estimate.json", "answer.txt", "answer.json")
