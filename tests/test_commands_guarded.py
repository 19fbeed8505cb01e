"""The commands beside the workflow (plan, explain, compare, retry-failed, report) take
their paths through the study loader's guards: a link to /dev/zero, a FIFO, a directory,
a missing file or an unwritable --out is one line naming the argument and the path, exit
status 2, no traceback, at once (a FIFO never blocks). And the study's own arguments are
checked where they are declared: a kind's cap, a figure too large to draw, loaded latency
with no loader, budgets and echoed values in messages that name the allowed form.

Issue 45, items 4 and 6. Every command runs in-process (cli.main) under an alarm: a
refusal that blocks or reads forever fails the test instead of hanging it."""
import os
import shutil
import signal
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from numaplace import ConfigError, cli
from numaplace.core.loader import refusal
from numaplace.plan.study import load_study_file

REAL = Path(__file__).parent / "fixtures" / "real"


class _TooSlow(Exception):
    pass


class within:
    """SIGALRM after `seconds`: interrupts even a blocking open() of a FIFO."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        def ring(signum, frame):
            raise _TooSlow(f"no answer within {self.seconds} s (blocked, or reading forever?)")
        self.old = signal.signal(signal.SIGALRM, ring)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)


def command(capsys, *argv, seconds=5):
    """cli.main(argv) in-process: (exit status, stdout, stderr)."""
    with within(seconds):
        rc = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(rc, err, *words):
    """Exit 2 and exactly one line on stderr, no traceback, holding every word."""
    assert rc == 2, (rc, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert str(w) in err, (w, err)
    return err


# -- what the paths are -----------------------------------------------------------------
@pytest.fixture
def paths(tmp_path):
    p = SimpleNamespace(tmp=tmp_path, fifo=tmp_path / "fifo.csv", zero=tmp_path / "zero.csv",
                        folder=tmp_path / "folder.csv", missing=tmp_path / "missing.csv",
                        file=tmp_path / "a-file")
    os.mkfifo(p.fifo)
    p.zero.symlink_to("/dev/zero")
    p.folder.mkdir()
    p.file.write_text("x\n")
    p.unwritable = p.file / "out.csv"          # below a file: unwritable as root as well
    return p


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """results/<study>/tables of the NUMA VM fixture's study, as the tables stage writes them."""
    from numaplace.tables import aggregate
    out = tmp_path_factory.mktemp("tables") / "tables"
    aggregate.write_tables(REAL / "vm", out)
    return out


# -- explain ----------------------------------------------------------------------------
@pytest.mark.parametrize("what, words", [("zero", ["character device", "/dev/zero"]),
                                         ("fifo", ["named pipe"]), ("folder", ["directory"]),
                                         ("missing", ["no such file"])])
def test_explain_matrices_that_are_no_file_are_one_line(capsys, paths, tables, what, words):
    path = getattr(paths, what)
    rc, out, err = command(capsys, "explain", "--tables", tables, "--matrices", path)
    refused(rc, err, "numaplace explain: --matrices", path, *words)


@pytest.mark.parametrize("what, words", [("missing", ["no such folder"]), ("fifo", ["named pipe", "not a folder"]),
                                         ("file", ["is a file, not a folder"])])
def test_explain_tables_that_are_no_folder_are_one_line(capsys, paths, what, words):
    path = getattr(paths, what)
    rc, out, err = command(capsys, "explain", "--tables", path)
    refused(rc, err, "numaplace explain: --tables", path, *words)


def test_explain_a_table_that_is_a_fifo_is_one_line(capsys, tmp_path, tables):
    copy = tmp_path / "tables"
    shutil.copytree(tables, copy)
    (copy / "runs.csv").unlink()
    os.mkfifo(copy / "runs.csv")
    rc, out, err = command(capsys, "explain", "--tables", copy)
    refused(rc, err, "numaplace explain: --tables", copy / "runs.csv", "named pipe")


def test_explain_an_unwritable_out_is_one_line_before_any_work(capsys, paths, tables):
    rc, out, err = command(capsys, "explain", "--tables", tables, "--out", paths.unwritable)
    refused(rc, err, "numaplace explain: --out", paths.unwritable, "cannot be written", "not a folder")


def test_explain_says_what_it_wrote(capsys, tmp_path, tables):
    rc, out, err = command(capsys, "explain", "--tables", tables, "--out", tmp_path / "explain.csv", seconds=30)
    assert rc == 0, err
    assert f"explain: {tmp_path / 'explain.csv'} (" in out and (tmp_path / "explain.csv").exists()


# -- compare ----------------------------------------------------------------------------
def test_compare_refuses_the_same_folder_twice(capsys, tmp_path):
    again = REAL / "vm" / ".." / "vm"
    rc, out, err = command(capsys, "compare", REAL / "vm", again, "--out", tmp_path / "out")
    refused(rc, err, "numaplace compare: results[2]", again, "same folder as results[1]")
    assert not (tmp_path / "out").exists()


def test_compare_refuses_a_link_to_the_same_folder(capsys, tmp_path):
    (tmp_path / "link").symlink_to(REAL / "vm")
    rc, out, err = command(capsys, "compare", tmp_path / "link", REAL / "vm", "--out", tmp_path / "out")
    refused(rc, err, "results[2]", "same folder as results[1]")


@pytest.mark.parametrize("what, words", [("missing", ["no such folder"]), ("fifo", ["named pipe"]),
                                         ("zero", ["character device"])])
def test_compare_a_results_path_that_is_no_folder_is_one_line(capsys, paths, what, words):
    path = getattr(paths, what)
    rc, out, err = command(capsys, "compare", REAL / "vm", path, "--out", paths.tmp / "out")
    refused(rc, err, "numaplace compare: results[2]", path, *words)


def test_compare_an_unwritable_out_is_one_line(capsys, paths):
    rc, out, err = command(capsys, "compare", REAL / "vm", REAL / "vm-balancing", "--out", paths.file / "out")
    refused(rc, err, "numaplace compare: --out", paths.file / "out", "is a file, not a folder")


def _summary(study, rows):
    """A study as side_by_side reads it: summary rows (placement id, label, median) and runs."""
    case = {"bench": "cg", "class": "W", "variant": "default", "threads": 2}
    summary = pd.DataFrame([{**case, "placement_id": pid, "placement": label, "n": 3, "time_median_s": t,
                             "time_min_s": t - 0.1, "time_max_s": t + 0.1} for pid, label, t in rows])
    runs = pd.DataFrame([{**case, "placement_id": pid, "status": "ok", "current": True, "npb_time_s": t + d}
                         for pid, _, t in rows for d in (-0.1, 0.0, 0.1)])
    return SimpleNamespace(name=study, tables={"summary": summary, "runs": runs})


def test_compare_matches_placements_by_id_when_two_share_a_label(tmp_path):
    """taskset's and numactl's `compact 2` share their words: matched by id, the figure
    draws both (pandas refused: cannot reindex on an axis with duplicate labels)."""
    from numaplace.report.compare import _figure, side_by_side
    a = _summary("a", [("ts-c2", "compact 2", 1.0), ("nm-c2", "compact 2", 2.0)])
    b = _summary("b", [("ts-c2", "compact 2", 1.5), ("nm-c2", "compact 2", 2.0)])
    side = side_by_side([a, b])
    assert len(side) == 4 and set(side["placement_id"]) == {"ts-c2", "nm-c2"}
    ts = side[(side["placement_id"] == "ts-c2") & (side["study"] == "b")].iloc[0]
    assert ts["change_pct"] == pytest.approx(50.0)                      # against its own id, not the other
    assert set(side["placement"]) == {"compact 2 (ts-c2)", "compact 2 (nm-c2)"}
    files = _figure(side, tmp_path)
    assert len(files) == 1 and (tmp_path / files[0][1]).stat().st_size > 0


# -- retry-failed -----------------------------------------------------------------------
@pytest.fixture
def study_copy(tmp_path):
    copy = tmp_path / "results" / "vm"
    shutil.copytree(REAL / "vm", copy)
    return copy


def test_retry_failed_on_a_mistyped_folder_is_one_line(capsys, tmp_path):
    rc, out, err = command(capsys, "retry-failed", tmp_path / "results" / "vmm")
    refused(rc, err, "numaplace retry-failed: results folder", tmp_path / "results" / "vmm", "no such folder")


def test_retry_failed_on_a_folder_that_is_no_study_is_one_line(capsys, tmp_path):
    rc, out, err = command(capsys, "retry-failed", tmp_path)
    refused(rc, err, "numaplace retry-failed: results folder", "no runs/ folder")


def test_retry_failed_refuses_an_unknown_status_naming_the_allowed(capsys, study_copy):
    before = sorted(p.relative_to(study_copy) for p in study_copy.rglob("*"))
    rc, out, err = command(capsys, "retry-failed", study_copy, "--status", "timeout", "faild")
    refused(rc, err, "numaplace retry-failed: --status 'faild'", "is not a status",
            "ok, unverified, failed, timeout", "build-failed", "not-needed", "unreadable")
    assert sorted(p.relative_to(study_copy) for p in study_copy.rglob("*")) == before


def test_retry_failed_says_what_it_did_even_when_nothing(capsys, study_copy):
    rc, out, err = command(capsys, "retry-failed", study_copy, "--status", "timeout")
    assert rc == 0, err
    assert out == "" and err == f"numaplace retry-failed: set aside 0 records of {study_copy} (timeout)\n"


# -- report -----------------------------------------------------------------------------
def report_argv(tmp_path, **change):
    args = {"--results": REAL / "vm", "--plan": tmp_path / "plan.tsv", "--tables": tmp_path / "r" / "tables",
            "--figures": tmp_path / "r" / "figures", "--summary": tmp_path / "r" / "summary.md",
            "--html": tmp_path / "r" / "report.html", **change}
    return ["report"] + [x for k, v in args.items() for x in (k, v)]


@pytest.mark.parametrize("arg, what, words", [
    ("--plan", "fifo", ["named pipe"]), ("--plan", "zero", ["character device"]),
    ("--plan", "missing", ["no such file"]), ("--plan", "folder", ["directory"]),
    ("--results", "missing", ["no such folder"]), ("--html", "unwritable", ["cannot be written"]),
    ("--summary", "folder", ["is a directory, not a file to write"]), ("--tables", "file", ["is a file, not a folder"]),
])
def test_report_paths_are_guarded(capsys, paths, arg, what, words):
    path = getattr(paths, what)
    (paths.tmp / "plan.tsv").write_text("run_id\n")
    rc, out, err = command(capsys, *report_argv(paths.tmp, **{arg: path}))
    refused(rc, err, f"numaplace report: {arg}", path, *words)
    assert not (paths.tmp / "r").exists()


def test_report_settings_that_are_no_json_are_one_line(capsys, paths):
    (paths.tmp / "plan.tsv").write_text("run_id\n")
    rc, out, err = command(capsys, *report_argv(paths.tmp), "--settings", "{dpi: 300")
    refused(rc, err, "numaplace report: --settings", "not JSON")


# -- plan -------------------------------------------------------------------------------
BASE = {"study": "bad", "platform": "x4600", "repetitions": 1,
        "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}]}]}


@pytest.fixture
def study_file(tmp_path, repo):
    shutil.copytree(repo / "config" / "platforms", tmp_path / "config" / "platforms")

    def write(data):
        f = tmp_path / "study.yaml"
        f.write_text(yaml.safe_dump(data, width=10**9))
        return f
    return write


def test_plan_an_unwritable_out_is_one_line(capsys, monkeypatch, paths, study_file):
    f = study_file(BASE)
    monkeypatch.chdir(paths.tmp)
    rc, out, err = command(capsys, "plan", f, "--out", paths.unwritable)
    refused(rc, err, "numaplace plan: --out", paths.unwritable, "cannot be written")


@pytest.mark.parametrize("what, words", [("fifo", ["named pipe"]), ("zero", ["character device"]),
                                         ("folder", ["directory"])])
def test_plan_a_study_that_is_no_file_is_one_line(capsys, monkeypatch, paths, what, words):
    monkeypatch.chdir(paths.tmp)
    path = getattr(paths, what)
    rc, out, err = command(capsys, "plan", path)
    refused(rc, err, f"invalid study: {path}: study: ", *words)


def plan_refusal(f, cwd):
    with within(10):
        with pytest.raises(ConfigError) as e:
            load_study_file(f, cwd / "config")
    line = refusal(e.value)
    assert "\n" not in line
    return line


def mem(bench, args, placements=({"cpus": "0-1"},), **extra):
    return [{"name": "e", "benchmarks": [bench], "classes": ["X"], "args": list(args),
             "placements": list(placements), **extra}]


# -- every argument checked where declared ----------------------------------------------
def test_stream_reps_past_its_own_cap_is_refused_at_plan_time(tmp_path, study_file):
    """stream.py declares --reps up to 200; the common check (INT_MAX) was the only one applied."""
    line = plan_refusal(study_file({**BASE, "experiments": mem("stream", ["--reps", "201"])}), tmp_path)
    assert "experiments[0] (e).args[1]: --reps '201': expected a whole number from 1 to 200" in line, line
    assert "stream" in line
    f = study_file({**BASE, "experiments": mem("stream", ["--reps", "200"])})
    assert load_study_file(f, tmp_path / "config").runs


def test_a_figure_beyond_what_can_be_drawn_is_refused_at_plan_time(tmp_path, study_file):
    """Each value within its bound (width 7 in, dpi 1200), the product not: stream's figure
    of 28 placements x 4 kernels is 26 in tall, 31,680 px at dpi 1200."""
    data = {**BASE, "launcher": "numactl", "figures": {"width": 7, "dpi": 1200, "formats": ["png"]},
            "experiments": mem("stream", ["--sizes", "1M"], [{"layout": "1/1"}])}
    line = plan_refusal(study_file(data), tmp_path)
    assert "figures.dpi: a figure would be 31680 px tall" in line and "stream's figure: 28 placements" in line, line
    assert "limit of 10000 px per side" in line
    data["figures"]["dpi"] = 300                                           # 7920 px: drawn
    assert load_study_file(study_file(data), tmp_path / "config").runs


def test_loaded_latency_on_one_cpu_is_refused_at_plan_time(tmp_path, study_file):
    data = {**BASE, "experiments": mem("loadlat", ["--sizes", "1M"], [{"cpus": "0"}], binding=["threads"])}
    line = plan_refusal(study_file(data), tmp_path)
    assert "experiments[0] (e).placements: placement" in line and "runs 1 thread" in line, line
    assert "2 or more CPUs" in line and "memlat" in line


@pytest.mark.parametrize("budget, words", [
    (0, ["budget: 0 is not positive", '"90 min"', "at most 1000000 minutes"]),
    ("-5 min", ["'-5 min' is negative", "min or h", '"1.5 h"']),
    ("90 days", ["the unit 'days' is not allowed (min or h)", "at most 1000000 minutes"]),
])
def test_budget_messages_name_the_allowed_form(tmp_path, study_file, budget, words):
    line = plan_refusal(study_file({**BASE, "budget": budget}), tmp_path)
    assert "expected text" not in line and "expected a number" not in line, line
    for w in words:
        assert w in line, line


def test_a_huge_value_is_echoed_short_and_the_problem_kept(tmp_path, study_file):
    """590 kB of digits: the line keeps what is wrong, the value is cut (was echoed whole
    until refusal cut the line, problem and all)."""
    line = plan_refusal(study_file({**BASE, "experiments": mem("membw", ["--reps", "1" * 590_000])}), tmp_path)
    assert len(line) < 400 and line.endswith("expected a whole number from 1 to 2147483647"), line


def test_a_huge_size_is_refused_at_once(tmp_path, study_file):
    """--sizes of 590,000 digits and a letter: the number pattern backtracked for minutes."""
    line = plan_refusal(study_file({**BASE, "experiments": mem("membw", ["--sizes", "1" * 590_000 + "T"])}),
                        tmp_path)
    assert "is not a size" in line and len(line) < 400, line


def test_a_study_path_that_is_a_directory_names_the_path(tmp_path):
    (tmp_path / "study.yaml").mkdir()
    line = plan_refusal(tmp_path / "study.yaml", tmp_path)
    assert line == f"invalid study: {tmp_path / 'study.yaml'}: study: is a directory, not a regular study file"


def test_an_npb_source_whose_name_is_too_long_is_one_line():
    """A 590 kB path in npb.source: the OS refuses the name (ENAMETOOLONG); the study
    check says so in one line, its echo cut, no OSError traceback."""
    from numaplace import ConfigError
    from numaplace.plan.sources import check_source
    with pytest.raises(ConfigError) as e:
        check_source({"source": "/nonexist/" + "a" * 590_000}, "s.yaml")
    assert str(e.value).endswith("...: cannot be read (File name too long)") and len(str(e.value)) < 200
