"""The benchmark kinds' registry (numaplace.kinds): which kinds exist and in which order,
the words the schema and the Snakefile take from it, the tables and figures the report
makes, the shared implementations stages call once per group, and a run's outcome and
exit status in words."""
from __future__ import annotations

import pandas as pd
import pytest

import numaplace.kinds as K
from numaplace.kinds import Kind, ended, kind


def test_the_registry_lists_npb_first_then_the_other_kinds():
    """Studies and reports list kinds in registration order: the NPB kernels first."""
    assert [k for k in K.KINDS if not K.KINDS[k].family == "program"][:9] == \
        ["cg", "mg", "membw", "memlat", "loadlat", "ep", "is", "ft", "stream"]


def test_an_unknown_or_twice_registered_kind_is_refused():
    with pytest.raises(ValueError) as e:
        kind("cgg")
    assert str(e.value).startswith("unknown benchmark kind 'cgg' (known: cg, mg, membw, memlat, loadlat, ep, is, ft, "
                                   "stream")
    with pytest.raises(ValueError, match="benchmark kind 'cg' registered twice"):
        K.register(kind("cg"))
    assert kind("cg") is K.KINDS["cg"]


def test_the_snakefile_and_schema_words_come_from_the_kinds():
    from numaplace.core import schema
    w = K.wildcard_constraints()
    assert w["cls"] == "A|B|C|S|W|X" and w["variant"] == "default|mcmodel-medium|serial-init"
    own = [b for b in w["bench"].split("|") if K.KINDS[b].family != "program"]     # a study's programs aside
    assert own == ["cg", "ep", "ft", "is", "loadlat", "membw", "memlat", "mg", "stream"]
    K.schema_words()
    assert schema.WORDS["class"] == ("S", "W", "A", "B", "C", "X")           # NPB's order, not the alphabet's
    assert schema.WORDS["variant"] == ("default", "serial-init", "mcmodel-medium")
    assert schema.WORDS["benchmark"][:3] == ("cg", "mg", "membw")


def test_the_reports_tables_and_figures_common_ones_first():
    """Captions and titles of every output: the common ones, then each kind's own; a name
    given twice keeps its first caption."""
    assert list(K.table_captions()) == ["runs", "summary", "best_worst", "numa_pages", "numastat", "explain", "memory",
                                        "memory_matrix", "loaded_latency", "stream"]
    assert list(K.figure_titles()) == ["duration", "best_worst", "pages", "serial_init", "variability", "explain",
                                       "memory_bandwidth", "memory_latency", "memory_heatmap", "memory_contention",
                                       "loaded_latency", "stream_bandwidth"]
    assert K.table_captions()["summary"] == K.COMMON_TABLES["summary"]
    assert K.figure_titles()["memory_contention"] == "Memory: contention"

    class Clash(Kind):
        name = "clash"
        tables = {"summary": "not the common caption", "clash_own": "its own"}
    K.KINDS["clash"] = Clash()
    try:
        captions = K.table_captions()
        assert captions["summary"] == K.COMMON_TABLES["summary"] and list(captions)[-1] == "clash_own"
    finally:
        del K.KINDS["clash"]


def test_a_shared_implementation_is_called_once_for_its_group():
    """membw and memlat share their tables: one call for both; kinds without their own
    method are in no group."""
    assert [(k.name, names) for k, names in K.groups("make_tables")] == [
        ("membw", ["membw", "memlat"]), ("loadlat", ["loadlat"]), ("stream", ["stream"])]
    assert [(k.name, names) for k, names in K.groups("answer")] == [("loadlat", ["loadlat"]), ("stream", ["stream"])]
    assert list(K.matrix_kinds()) == ["membw", "memlat"] and list(K.explained_kinds()) == ["cg", "mg"]


def test_an_exit_status_in_words():
    assert [ended(s) for s in (0, 2, -9, -11, -15, -200)] == [
        "exit status 0", "exit status 2", "killed by SIGKILL", "killed by SIGSEGV", "killed by SIGTERM",
        "killed by signal 200"]


def test_a_kinds_default_outcome_and_names():
    """Verification failed outranks the exit status; then the exit status; then a missing
    report; a base kind's binary is name.CLASS.x, its case 'NAME class C'."""
    class Demo(Kind):
        name, title = "demo", "Demo bench"
    k = Demo()
    assert k.outcome({"complete": True, "verified": False}, 1) == ("unverified", "verification failed (exit status 1)")
    assert k.outcome({"complete": True, "verified": True}, -6) == ("failed", "killed by SIGABRT")
    assert k.outcome({"complete": False, "verified": False}, 0) == ("failed", "no Demo bench report in stdout")
    assert k.outcome({"complete": True, "verified": True}, 0) == ("ok", None)
    assert (k.binary_name("B"), k.shown_program("B"), k.case_name("B")) == ("demo.B.x", "./demo.B.x", "DEMO class B")
    assert k.make_args("A", "default")[1:] == ["DEMO", "CLASS=A"]
    assert (k.command_args("A"), k.thread_env(4), k.working_set_bytes({}), k.working_set_mb("A"),
            k.cannot_run(None), k.fit_args(("x",), [], None)) == ((), {}, None, None, None, (("x",), []))


def test_a_matrix_role_takes_its_kinds_cells_only():
    role = K.MatrixRole("read bandwidth", "GB/s", 1e-3, ".1f", True, "bandwidth", ("parallel",))
    t = pd.DataFrame({"bench": ["membw", "membw", "memlat", "membw"], "mode": ["serial", "parallel", "serial", None],
                      "v": [1, 2, 3, 4]})
    assert role.cells(t, "membw")["v"].tolist() == [1, 4]
    assert K.MatrixRole("latency", "ns", 1.0, ".0f", False, "latency").cells(t, "memlat")["v"].tolist() == [3]
