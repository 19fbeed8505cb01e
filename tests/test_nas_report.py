"""NPB's report (numaplace.kinds.npb_output): when a run's output is complete, and which
implementation printed it (NASA's or numaplace's own kernels), read from its header.
tests/test_npb_output.py has the parse of recorded outputs. Several tests pin what the
mutation run left alive (tests/benchmarks/mutation-survivors.md names the test that kills
each)."""
from __future__ import annotations

import pytest

from numaplace.kinds.npb_output import parse

pytestmark = pytest.mark.unit

REPORT = """

 NAS Parallel Benchmarks (NPB3.4-OMP) - CG Benchmark

 Size:      14000
 Iterations:    15
 Number of available threads:     2

 CG Benchmark Completed.
 Class           =                        A
 Size            =                    14000
 Iterations      =                       15
 Time in seconds =                     1.23
 Total threads   =                        2
 Mop/s total     =                  1216.40
 Verification    =               SUCCESSFUL
 Version         =                    3.4.2
"""


def test_an_official_report_is_nasas_and_complete():
    r = parse(REPORT)
    assert (r["implementation"], r["complete"], r["verified"], r["time_s"]) == ("nasa", True, True, 1.23)


def test_numaplaces_own_kernels_say_so_in_their_header():
    r = parse(REPORT.replace("NAS Parallel Benchmarks (NPB3.4-OMP)", "numaplace CG (NPB3.4-OMP, bundled)"))
    assert r["implementation"] == "numaplace"


def test_output_of_neither_has_no_implementation():
    assert parse(" CG Benchmark Completed.\n Time in seconds = 1.0\n")["implementation"] is None
    assert parse("\n" * 400 + " NAS Parallel Benchmarks\n")["implementation"] is None     # not in its header


def test_a_report_cut_before_its_verification_is_not_complete():
    cut = REPORT.split(" Mop/s total")[0]
    r = parse(cut)
    assert r["time_s"] == 1.23 and r["verification"] is None and r["complete"] is False
    assert parse(REPORT.replace(" Time in seconds =                     1.23\n", ""))["complete"] is False


@pytest.mark.parametrize("banner, implementation", [("numaplace", "numaplace"), ("NAS Parallel", "nasa")])
def test_the_header_is_the_first_400_characters(banner, implementation):
    """A banner that ends at the header's last character counts; one a character later,
    past the header, does not."""
    inside = " " * (400 - len(banner)) + banner + "\n CG Benchmark Completed.\n"
    assert parse(inside)["implementation"] == implementation
    assert parse(" " + inside)["implementation"] is None


FULL = """ NAS Parallel Benchmarks (NPB3.3-OMP) - MG Benchmark

 Initialization time:           0.412 seconds

 MG Benchmark Completed.
 Class           =                        B
 Size            =              256x 256x 256
 Iterations      =                       20
 Time in seconds =                    12.50
 Total threads   =                        4
 Avail threads   =                        8
 Mop/s total     =                  1556.92
 Mop/s/thread    =                   389.23
 Operation type  =           floating point
 Verification    =             UNSUCCESSFUL
 Version         =                    3.3.1
 INIT            =                   serial
 FFLAGS          =       -O3 -fopenmp -mcmodel=medium   
"""


def test_every_field_of_a_report_is_read_with_its_type():
    """What the tables show of an NPB run: each field typed, the size and flags whole (their
    trailing blanks cut), the first `Time in seconds` line; a missing field is None."""
    r = parse(FULL)
    assert {k: r[k] for k in ("time_s", "mops", "verification", "class", "threads", "init_time_s", "iterations",
                              "size", "benchmark", "version", "init_order", "fflags")} == {
        "time_s": 12.5, "mops": 1556.92, "verification": "UNSUCCESSFUL", "class": "B", "threads": 4,
        "init_time_s": 0.412, "iterations": 20, "size": "256x 256x 256", "benchmark": "MG", "version": "3.3.1",
        "init_order": "serial", "fflags": "-O3 -fopenmp -mcmodel=medium"}
    assert (r["complete"], r["verified"], r["implementation"]) == (True, False, "nasa")
    r = parse(" CG Benchmark Completed.\n Initialization time =  1.5\n Time in seconds = 2\n Verification = SUCCESSFUL\n")
    assert (r["init_time_s"], r["time_s"], r["complete"], r["verified"], r["mops"], r["threads"], r["class"]) == \
        (1.5, 2.0, True, True, None, None, None)
    assert parse(" Verification = SUCCESSFUL\n")["complete"] is False          # no time: not complete
    both = " numaplace MG (NAS Parallel Benchmarks 3.4 format)\n" + FULL
    assert parse(both)["implementation"] == "numaplace"                        # its own kernels say so first
