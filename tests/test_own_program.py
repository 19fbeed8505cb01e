"""Study your own program (issue 44.1): a study's `programs:` entry is a benchmark kind
like CG: planned on every placement, built by its own command, run with its command's
argv, judged by its patterns, compared, answered with launch lines; and every way it can
go wrong is one line before any job, or a record that is shown."""
from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
import yaml

from numaplace import ConfigError
from numaplace.core.loader import refusal
from numaplace.kinds import KINDS, kind, schema_words
from numaplace.kinds.program import Program
from numaplace.plan.launch_lines import launch_lines
from numaplace.plan.study import Study, load_study_file

from conftest import copy_workflow, read_records, run_snakemake

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "config" / "studies" / "own-program.yaml"


def script(folder, name, text):
    path = folder / name
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def study_with(tmp_path, program, **more):
    """A study file in tmp_path running one program on compact 1 and 2 (magny-cours)."""
    cfg = {"study": "own", "platform": "magny-cours", "programs": {"prog": program},
           "benchmarks": ["prog"], "repetitions": 2,
           "experiments": [{"name": "e", "placements": [{"compact": [1, 2]}]}], **more}
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(cfg))
    shutil.copytree(REPO / "config" / "platforms", tmp_path / "platforms", dirs_exist_ok=True)
    return path


def plan(path):
    return load_study_file(path, path.parent)


@pytest.fixture
def ok_program(tmp_path):
    script(tmp_path, "prog", 'echo "result 12.5 GB/s"; echo "time 1.5 s"; echo PASSED\n')
    return {"command": ["./prog", "--size", "big one"], "success": "^PASSED$", "time": r"^time ([0-9.]+) s$",
            "figure_of_merit": {"pattern": r"^result ([0-9.]+) GB/s$", "unit": "GB/s"}, "seconds": 3}


def test_a_program_is_planned_on_every_placement_with_its_argv(tmp_path, ok_program):
    st = plan(study_with(tmp_path, ok_program))
    assert {r.bench for r in st.runs} == {"prog"} and {r.cls for r in st.runs} == {"X"}
    assert len(st.runs) == 2 * 2                     # compact 1 and 2, two repetitions
    spec = st.run_params(st.runs[0].run_id)
    assert spec["argv"][-3:] == ["BINARY", "--size", "big one"]
    assert spec["program"]["executable"] == str(tmp_path / "prog")
    row = st.runs[0].row()
    # plan.tsv's command runs as written: the program's own path, its arguments quoted
    assert row["command"].endswith(f"{tmp_path / 'prog'} --size 'big one'")
    assert st.estimate().total >= 4 * 3              # its own estimate, per run


def test_a_programs_thread_variable_is_set_beside_openmps(tmp_path, ok_program):
    st = plan(study_with(tmp_path, {**ok_program, "threads_env": "NTHREADS"}))
    spec = {r.placement.threads: st.run_params(r.run_id) for r in st.runs}
    assert spec[2]["env"]["NTHREADS"] == "2" and spec[2]["env"]["OMP_NUM_THREADS"] == "2"


def test_a_programs_launch_lines_carry_its_command(tmp_path, ok_program):
    st = plan(study_with(tmp_path, ok_program))
    r = next(r for r in st.runs if r.placement.threads == 2)
    k = kind("prog")
    line = launch_lines(r.placement, k.shown_program("X"), k.command_args("X"))["numactl"]["line"]
    assert line.endswith(f"{tmp_path / 'prog'} --size 'big one'") and "--physcpubind=0-1" in line


def test_a_programs_output_is_judged_by_its_patterns(tmp_path, ok_program):
    plan(study_with(tmp_path, ok_program))
    k = kind("prog")
    out = k.parse("result 12.5 GB/s\ntime 1.5 s\nPASSED\n")
    assert (out["time_s"], out["fom"], out["verified"]) == (1.5, 12.5, True)
    assert k.outcome(out, 0) == ("ok", None)
    status, reason = k.outcome(k.parse("result 12.5 GB/s\ntime 1.5 s\nFAILED\n"), 0)
    assert status == "unverified" and "success pattern" in reason
    assert k.outcome(out, 3) == ("failed", "exit status 3")
    assert k.outcome(out, -9) == ("failed", "killed by SIGKILL")
    status, reason = k.outcome(k.parse("time 1.5 s\nPASSED\n"), 0)
    assert status == "failed" and "no figure of merit" in reason


def test_without_a_time_pattern_the_wall_time_is_compared(tmp_path, ok_program):
    plan(study_with(tmp_path, {k: v for k, v in ok_program.items() if k != "time"}))
    k = kind("prog")
    out = k.parse("result 1 GB/s\nPASSED\n")
    k.complete_output(out, {"wall_s": 2.25})
    assert (out["time_s"], out["time_from"]) == (2.25, "wall")


def test_the_last_report_line_counts(tmp_path, ok_program):
    plan(study_with(tmp_path, ok_program))
    assert kind("prog").parse("time 9 s\ntime 2 s\nPASSED\n")["time_s"] == 2.0


def test_a_new_study_drops_the_last_ones_programs(tmp_path, ok_program):
    plan(study_with(tmp_path, ok_program))
    assert isinstance(KINDS.get("prog"), Program)
    cfg = {"study": "plain", "platform": "magny-cours", "benchmarks": ["cg"],
           "experiments": [{"name": "e", "placements": [{"compact": [1]}]}]}
    Study(cfg, tmp_path / "plain.yaml", REPO / "config")
    assert "prog" not in KINDS


BAD = [
    ("name-clash", {"cg": None}, "programs.cg", "one of numaplace's own benchmarks"),
    ("unsafe-name", {"../x": None}, "programs", "'../x' is not allowed here"),
    ("bad-regex", {"success": "(unclosed"}, "programs.prog.success", "no regular expression"),
    ("two-groups", {"time": "(a)(b)"}, "programs.prog.time", "2 groups"),
    ("exponential-pattern", {"success": "^(\\w+\\s?)+$"}, "programs.prog.success", "exponentially"),
    ("no-folder", {"directory": "nowhere"}, "programs.prog.directory", "no such folder"),
    ("not-on-path", {"command": ["no-such-program-xyz"]}, "programs.prog.command", "not found on PATH"),
    ("missing-binary", {"command": ["./absent"]}, "programs.prog.command", "no executable file"),
    ("shell-line", {"command": "make && ./prog"}, "programs.prog.command", "list"),
    ("no-success", {"success": None}, "programs.prog", "success"),
    ("unknown-key", {"threads": 4}, "programs.prog", "threads"),
    ("bad-explain", {"explain": "compute-bound"}, "programs.prog.explain", "latency-bound"),
]


@pytest.mark.parametrize("name,change,entry,words", BAD, ids=[b[0] for b in BAD])
def test_a_bad_program_entry_is_one_line_before_any_job(tmp_path, ok_program, name, change, entry, words):
    program = dict(ok_program)
    if name in ("name-clash", "unsafe-name"):
        (new_name, _), = change.items()
        path = study_with(tmp_path, program)
        cfg = yaml.safe_load(path.read_text())
        cfg["programs"] = {new_name: program}
        cfg["benchmarks"] = ["cg"]
        path.write_text(yaml.safe_dump(cfg))
    else:
        for k, v in change.items():
            if v is None:
                program.pop(k)
            else:
                program[k] = v
        path = study_with(tmp_path, program)
    with pytest.raises(ConfigError) as e:
        plan(path)
    line = refusal(e.value)
    assert "\n" not in line and entry in line and words in line, line
    assert not (tmp_path / "results").exists()


def test_benchmarks_may_not_name_a_program_the_study_does_not_define(tmp_path, ok_program):
    path = study_with(tmp_path, ok_program, benchmarks=["other"])
    with pytest.raises(ConfigError) as e:
        plan(path)
    assert "benchmarks[0]" in refusal(e.value) and "prog" in refusal(e.value)


def test_a_programs_build_key_follows_its_sources_not_its_build_products(tmp_path, ok_program):
    (tmp_path / "src.c").write_text("int main(){return 0;}\n")
    st = plan(study_with(tmp_path, ok_program))
    first = st.build_record("prog", "X", "default")
    (tmp_path / "prog.o").write_bytes(b"\x7fELF object")      # what a build leaves beside it
    (tmp_path / "a.out").write_bytes(b"\x7fELF binary")
    assert plan(study_with(tmp_path, ok_program)).build_record("prog", "X", "default") == first
    (tmp_path / "src.c").write_text("int main(){return 1;}\n")
    assert plan(study_with(tmp_path, ok_program)).build_record("prog", "X", "default") != first


def test_a_programs_build_key_ignores_what_its_hidden_folders_hold(tmp_path, ok_program):
    """A program's folder is often a git checkout: a commit, a fetch or an editor's swap
    file rewrites what .git/ and other hidden folders hold, which is not the program's
    source and must not make it a new build; a changed source file still does."""
    (tmp_path / "src.c").write_text("int main(){return 0;}\n")
    (tmp_path / ".git" / "refs").mkdir(parents=True)
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tmp_path / ".git" / "refs" / "main").write_text("1" * 40 + "\n")
    first = plan(study_with(tmp_path, ok_program)).build_record("prog", "X", "default")
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/topic\n")        # a checkout
    (tmp_path / ".git" / "refs" / "main").write_text("2" * 40 + "\n")        # a commit
    (tmp_path / ".git" / "index").write_bytes(b"DIRC\0\0\0\2")
    assert plan(study_with(tmp_path, ok_program)).build_record("prog", "X", "default") == first
    (tmp_path / "src.c").write_text("int main(){return 1;}\n")
    assert plan(study_with(tmp_path, ok_program)).build_record("prog", "X", "default") != first


@pytest.mark.parametrize("higher_is_better, best, worst, other_way", [
    (True, 12.5, 10.0, False),      # GB/s: the faster placement moves more, as it should
    (True, 10.0, 12.5, True),       # ... the faster one moves less: said
    (False, 10.0, 12.5, False),     # ms per step: the faster placement takes fewer
    (False, 12.5, 10.0, True),
    (True, 11.0, 11.0, False),      # the same figure on both: no ranking to disagree with
], ids=["higher-agrees", "higher-disagrees", "lower-agrees", "lower-disagrees", "equal"])
def test_the_answer_says_when_the_figure_of_merit_ranks_the_placements_the_other_way(
        tmp_path, ok_program, higher_is_better, best, worst, other_way):
    """Placements are ranked by time; the figure of merit is shown beside it, and only where
    its own direction ranks the best and the worst placement the other way round does the
    answer say so."""
    from numaplace.report.answer import figure_of_merit_words
    unit = "GB/s" if higher_is_better else "ms/step"
    ok_program["figure_of_merit"].update(unit=unit, higher_is_better=higher_is_better)
    plan(study_with(tmp_path, ok_program))
    words = figure_of_merit_words("prog", {"best_fom_median": best, "worst_fom_median": worst})
    assert words.startswith(f"; its figure of merit: best {best:.4g} {unit}, worst {worst:.4g} {unit}"), words
    assert ("(it ranks them the other way than the time: check what it measures)" in words) is other_way, words


def test_the_example_study_plans_the_stencil_here():
    st = load_study_file(EXAMPLE, REPO / "config")
    assert {r.bench for r in st.runs} == {"stencil"}
    k = kind("stencil")
    assert k.executable == str(REPO / "config" / "programs" / "stencil" / "stencil")
    assert k.explain is not None and k.explain.matrix_kind == "membw"


# -- through the workflow: the example, and three programs that go wrong ------------------
def test_own_programs_through_the_workflow_are_recorded_and_shown(tmp_path):
    """The stencil example (tiny), and a program whose stdout does not match, one that
    exits non-zero, one that hangs: each run is recorded and the terminal says so."""
    wf = copy_workflow(REPO, tmp_path / "wf")
    progs = wf / "progs"
    progs.mkdir()
    script(progs, "mismatch", 'echo "time 0.1 s"; echo "Verification = UNSUCCESSFUL"\n')
    script(progs, "crash", 'echo "time 0.1 s"; echo "Verification = SUCCESSFUL"; exit 3\n')
    script(progs, "hang", 'sleep 60\n')
    check = {"success": "^Verification = SUCCESSFUL$", "time": r"^time ([0-9.]+) s$", "seconds": 1}
    cfg = yaml.safe_load(EXAMPLE.read_text())
    cfg["study"] = "own-test"
    cfg["programs"]["stencil"]["command"] = ["./stencil", "48", "4"]
    cfg["programs"]["stencil"]["directory"] = "../programs/stencil"
    for name in ("mismatch", "crash", "hang"):
        cfg["programs"][name] = {"directory": "../../progs", "command": [f"./{name}"], **check}
    cfg.update(benchmarks=["stencil", "mismatch", "crash", "hang"], repetitions=2,
               run={"timeout": 5, "idle_check": "off"})
    cfg["experiments"] = [{"name": "two", "placements": [{"compact": [1, 2]}]}]
    cfg["experiments"].append({"name": "binding", "benchmarks": ["stencil"], "repetitions": 3,
                               "binding": ["threads", "process"], "placements": [{"compact": [2]}]})
    study = wf / "config" / "studies" / "own-test.yaml"
    study.write_text(yaml.safe_dump(cfg))
    r = run_snakemake(wf, "--cores", "1", "--config", "study=config/studies/own-test.yaml", check=False,
                      timeout=600)
    recs = read_records(wf, "own-test")
    by = {}
    for rec in recs.values():
        by.setdefault(rec["bench"], set()).add(rec["status"])
    assert by == {"stencil": {"ok"}, "mismatch": {"unverified"}, "crash": {"failed"}, "hang": {"timeout"}}, (by, r.out[-3000:])
    stencil = [rec for rec in recs.values() if rec["bench"] == "stencil"]
    assert all(rec["output"]["fom"] > 0 and rec["output"]["time_from"] == "stdout" for rec in stencil)
    assert all(rec["program"]["command"] == ["./stencil", "48", "4"] for rec in stencil)
    # pages and threads were checked: the fidelity judge read the stencil's captures
    assert all((rec.get("captures") or {}).get("numa_maps") for rec in stencil)
    build = json.loads(next((wf / "results" / "build" / "programs").glob("stencil-*/stencil.X.build.json")).read_text())
    assert build["status"] == "ok" and len(build["binary_sha256"]) == 64
    # the terminal says what failed, and the answer names the program
    assert r.returncode != 0 or "failed" in r.out
    assert "mismatch" in r.out and "unverified" in r.out and "timeout" in r.out, r.out[-3000:]
    answer = (wf / "report" / "own-test" / "answer.txt").read_text()
    assert "7-point stencil" in answer, answer
    runs = (wf / "results" / "own-test" / "tables" / "runs.csv").read_text()
    assert all(f"{name}.X.default" in runs for name in ("mismatch", "crash", "hang"))   # shown, never dropped


def test_a_programs_time_is_told_apart_to_its_printed_digit(tmp_path, ok_program):
    """NPB prints 0.01 s; a program printing microseconds is not 'below the timer's
    resolution' at 12 ms apart (it was, with NPB's resolution for every kind)."""
    from numaplace.core.stats import improvement
    plan(study_with(tmp_path, ok_program))
    out = kind("prog").parse("time 0.352812 s\nresult 1 GB/s\nPASSED\n")
    assert out["time_resolution_s"] == pytest.approx(1e-6)
    from numaplace.kinds.program import resolution
    assert [resolution(x) for x in ("3.5e-1", "12", "0.50")] == pytest.approx([0.01, 1, 0.01])
    best = {"time_median_s": 0.3528, "mops_median": float("nan"), "time_resolution_s": 1e-6}
    worst = {"time_median_s": 0.3652, "mops_median": float("nan"), "time_resolution_s": 1e-6}
    assert improvement(best, worst)["below_resolution"] is False
    npb = {k: v for k, v in best.items() if k != "time_resolution_s"}
    assert improvement(npb, {k: v for k, v in worst.items() if k != "time_resolution_s"})["below_resolution"] is True


# -- a program kind's own numbers, from its definition alone ------------------------------

def prog(**more):
    return Program("p", {"command": ["./p", "-n", "4"], "executable": "/opt/p/bin/p", "directory": "/opt/p",
                         "success": "^OK$", **more})


def test_a_printed_numbers_resolution_is_its_last_digit():
    """Two times closer than the printed last digit cannot be told apart."""
    from numaplace.kinds.program import resolution
    assert [resolution(t) for t in ("0.352812", "12", "1.5e3", "2.50E-2", " 7.0 ", "3.")] == pytest.approx(
        [1e-6, 1.0, 100.0, 1e-4, 0.1, 1.0])


def test_the_patterns_last_match_is_the_programs_number():
    """The number of the last match (a final report), its group where it has one, else the
    whole match; none, or no number: None (and no resolution)."""
    import re
    from numaplace.kinds.program import _number
    text = "time 9.5 s\nstep 3\ntime 2.25 s\n"
    assert _number(re.compile(r"^time ([0-9.]+) s$", re.M), text, printed=True) == (2.25, "2.25")
    assert _number(re.compile(r"(?<=step )\d+"), text) == 3.0
    assert _number(re.compile(r"^time (\S+)", re.M), "time fast\n") is None
    assert _number(None, text, printed=True) == (None, None)
    k = prog(time=r"^time ([0-9.]+) s$", figure_of_merit={"pattern": r"^rate (\S+)$", "unit": "GB/s",
                                                          "higher_is_better": False})
    out = k.parse("time 9.5 s\nrate 1.0\ntime 2.250 s\nrate 3.5\nOK\n")
    assert out == {"complete": True, "verified": True, "time_s": 2.25, "fom": 3.5, "fom_unit": "GB/s",
                   "time_from": "stdout", "time_resolution_s": pytest.approx(1e-3)}
    assert k.fom_higher_is_better is False and prog().fom_higher_is_better is True
    assert prog().parse("OK\n") == {"complete": True, "verified": True, "time_s": None, "fom": None,
                                    "fom_unit": None, "time_from": None, "time_resolution_s": None}


def test_the_patterns_read_the_tail_of_a_long_stdout():
    """Only the last 4 MiB of stdout are read (a final report is at its end)."""
    k = prog(time=r"^time (\S+) s$")
    filler = ("." * 99 + "\n") * ((4 << 20) // 100 + 10)
    out = k.parse("time 9 s\n" + filler + "time 2 s\nOK\n")
    assert (out["time_s"], out["verified"]) == (2.0, True)
    assert k.parse("OK\n" + filler)["verified"] is False


def test_the_wall_time_stands_in_only_without_a_time_pattern():
    k = prog()
    out = k.parse("OK\n")
    k.complete_output(out, {"wall_s": 3.5})
    assert (out["time_s"], out["time_from"], out["time_resolution_s"]) == (3.5, "wall", 1e-4)
    timed = prog(time=r"^t (\S+)$")
    out = timed.parse("OK\n")
    timed.complete_output(out, {"wall_s": 3.5})
    assert out["time_s"] is None and timed.outcome(out, 0) == ("failed", "no time in stdout (pattern '^t (\\\\S+)$')")
    out = k.parse("OK\n")
    k.complete_output(out, {})
    assert out["time_s"] is None


def test_the_build_key_reads_the_sources_not_the_executable(tmp_path):
    """folder_digest: the program's own executable (a script here, no ELF) is no source:
    rebuilding it keeps the key; a changed source changes it."""
    from numaplace.kinds.program import folder_digest
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    exe = script(tmp_path, "run.sh", "echo one\n")
    before = folder_digest(tmp_path, exe)
    exe.write_text("#!/bin/sh\necho two\n")
    assert folder_digest(tmp_path, exe) == before
    assert folder_digest(tmp_path) != before                 # without it named, it is read
    (tmp_path / "main.c").write_text("int main(void) { return 1; }\n")
    assert folder_digest(tmp_path, exe) != before


def test_a_failed_exit_outranks_a_missing_success_line():
    k = prog()
    assert k.outcome({"verified": False}, 2) == ("failed", "exit status 2")
    assert k.outcome({"verified": False}, 0) == ("unverified", "stdout does not match its success pattern '^OK$'")
    assert k.outcome({"verified": True}, 0) == ("ok", None)


def test_a_programs_command_threads_and_costs_come_from_its_definition():
    """Its command as given, its thread variable beside OpenMP's (none when it is OpenMP's),
    60 s and 1024 MiB when the study gives no seconds or working set."""
    k = prog(title="my stencil")
    assert (k.binary_name("X"), k.shown_program("X"), k.command_args("X"), k.case_name("X")) == (
        "p", "/opt/p/bin/p", ("-n", "4"), "my stencil")
    assert prog().case_name("X") == "p"
    assert k.thread_env(4) == {} and prog(threads_env="OMP_NUM_THREADS").thread_env(4) == {}
    assert prog(threads_env="NTHREADS").thread_env(8) == {"NTHREADS": "8"}
    assert (k.run_seconds("X", 4, ()), k.estimate("X"), k.working_set_mb("X")) == (60.0, (60.0, 1024), None)
    sized = prog(seconds=12, working_set_mb=300)
    assert (sized.run_seconds("X", 1, ()), sized.estimate("X"), sized.working_set_mb("X")) == (12.0, (12.0, 300), 300)
    assert (k.metric, k.unit, k.higher_is_better, k.classes, k.variants) == ("time_s", "s", False, ("X",),
                                                                             ("default",))
    assert prog(explain="bandwidth-bound").explain.contends and prog(explain="bandwidth-bound").explain_said == \
        "bandwidth-bound"
    lat = prog(explain="latency-bound").explain
    assert (lat.matrix_kind, lat.contends, lat.shared_share("X", 4)) == ("memlat", False, 0.0)
    assert (k.explain, k.explain_said) == (None, "none declared")


@pytest.mark.parametrize("pattern, nested", [("(a+)+", True), ("(a|b+)*", True), ("(?:x\\d*){2,}", True),
                                             ("a+b+", False), ("(ab)+", False), ("(a{1,1})+", False),
                                             ("(a+)?", False), ("^time ([0-9.]+) s$", False)])
def test_a_pattern_repeating_a_repetition_is_found(pattern, nested):
    from numaplace.kinds.program import _nested_repeat
    assert _nested_repeat(pattern) is nested


def test_a_programs_definition_travels_to_the_later_stages(tmp_path):
    """programs.json beside the tables holds every defined program; read back, each is the
    same kind again; the same definition twice changes nothing; a program never replaces
    one of numaplace's own kinds; with no programs the file goes."""
    from numaplace.kinds.program import define, defined, from_spec, read_programs, write_programs
    d = {"command": ["./p"], "executable": "/opt/p/p", "directory": "/opt/p", "success": "^OK$", "seconds": 7}
    earlier = {n: KINDS.pop(n) for n in [n for n, k in KINDS.items() if isinstance(k, Program)]}
    try:
        k = define("mine", d)
        assert define("mine", dict(d)) is k and kind("mine") is k and defined() == {"mine": d}
        k2 = define("mine", {**d, "seconds": 8})
        assert k2 is not k and kind("mine").run_seconds("X", 1, ()) == 8.0
        with pytest.raises(ValueError, match="program 'cg' would replace numaplace's own kind"):
            define("cg", d)
        write_programs(tmp_path)
        assert json.loads((tmp_path / "programs.json").read_text()) == {"mine": {**d, "seconds": 8}}
        del KINDS["mine"]
        read_programs(tmp_path)
        assert kind("mine").estimate("X") == (8.0, 1024)
        assert from_spec({"bench": "mine2", "program": d}).name == "mine2" and from_spec({"bench": "cg"}) is kind("cg")
        KINDS.pop("mine", None)
        KINDS.pop("mine2", None)
        write_programs(tmp_path)
        assert not (tmp_path / "programs.json").exists()
    finally:
        KINDS.pop("mine", None)
        KINDS.pop("mine2", None)
        KINDS.update(earlier)
        schema_words()          # the schema's benchmark words follow the registry again
