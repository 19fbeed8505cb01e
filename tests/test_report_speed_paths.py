"""The report's fast paths give what the slow ones gave (issue 41.10; the time itself is
measured in tests/benchmarks/bench_overhead.py, never here): figures drawn by several
processes are the same files, byte for byte, and the same figures.csv as one process's;
a drawing process that fails fails the report; every figure is drawn exactly once. And
the cancelled Snakemake timer at exit is the scheduler's own wake-up."""
import ast
import threading
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from numaplace.figures import plots  # noqa: E402
from numaplace.tables import aggregate  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "records" / "results" / "fixture"
VM = REPO / "tests" / "fixtures" / "real" / "vm"


def files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(Path(folder).rglob("*")) if p.is_file()}


@pytest.mark.parametrize("results", [FIXTURE, VM], ids=["fixture", "real-vm"])
def test_two_drawers_write_the_same_bytes_as_one(results, tmp_path):
    aggregate.write_tables(results, tmp_path / "tables", results / "plan.tsv")
    tables = aggregate.read_tables(tmp_path / "tables")
    settings = {"formats": ["svg", "png"]}
    one = plots.make_figures(tables, tmp_path / "one", settings, drawers=1)
    two = plots.make_figures(tables, tmp_path / "two", settings, drawers=2)
    three = plots.make_figures(tables, tmp_path / "three", settings, drawers=3)
    assert len(one) > 3
    assert one.equals(two) and one.equals(three)
    assert files(tmp_path / "one") == files(tmp_path / "two") == files(tmp_path / "three")


def test_the_report_process_forks_its_drawers_with_no_other_thread():
    """`numaplace report` loads its libraries with one BLAS thread, so the process that
    forks the drawers has no thread but its own (a fork beside a BLAS pool is what
    Python 3.13 warns of), and it still draws in as many processes as its CPUs allow;
    a process with a thread beside it draws alone."""
    import os
    import subprocess
    import sys
    code = ("import threading, time\n"
            "from numaplace.report.make import collect_less\n"
            "collect_less()\n"
            "from numaplace.figures import plots\n"
            "print(plots._os_threads(), plots._drawers())\n"
            "threading.Thread(target=time.sleep, args=(1,), daemon=True).start()\n"
            "print(plots._drawers())\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env).stdout.split()
    assert out == ["1", str(min(plots.DRAWERS, len(os.sched_getaffinity(0)))), "1"], out


def test_a_failing_drawer_fails_the_figures(tmp_path, monkeypatch):
    tables = aggregate.build_tables(FIXTURE, FIXTURE / "plan.tsv")
    real = plots.variability_figures

    def broken(summary, w):
        if w.part == 1:                 # only in the forked drawer
            raise ValueError("drawer one broke")
        return real(summary, w)

    monkeypatch.setattr(plots, "variability_figures", broken)
    with pytest.raises(RuntimeError, match="drawer one broke"):
        plots.make_figures(tables, tmp_path, drawers=2)


def test_every_figure_is_drawn_by_exactly_one_drawer(tmp_path):
    """A kind asks mine() before making a figure (and may skip it), or only saves (the
    kinds' own draw functions): either way each drawer counts the figures alike."""
    cfg = plots.Section("figures", {"formats": ["svg"]}).whole()
    # a script of figures: "m" asked first, then saved; "s" saved without asking
    script = ["m", "s", "m", "m", "s", "s", "m", "s"]
    saved = []
    for part in range(3):
        w = plots._Writer(tmp_path / str(part), cfg, part, 3)
        for n, how in enumerate(script):
            if how == "m" and not w.mine():
                continue
            fig, _ = plt.subplots()
            w.save(fig, "duration", f"f{n}", f"figure {n}", {})
        saved.append(w.order)
    assert sorted(i for part in saved for i in part) == list(range(len(script)))
    assert all(i % 3 == part for part, order in enumerate(saved) for i in order)


def _common_smk_function(name):
    tree = ast.parse((REPO / "workflow" / "rules" / "common.smk").read_text())
    (fn,) = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
    scope = {}
    exec(compile(ast.Module([fn], []), "common.smk", "exec"), scope)
    return scope[name]


def test_the_timer_cancelled_at_exit_is_the_schedulers_wake_up():
    """Snakemake's scheduler wakes itself with a non-daemon threading.Timer, which kept
    every workflow call alive a second after its last line; common.smk cancels exactly
    that one at exit (named by the installed Snakemake's own method) and no other."""
    from snakemake.scheduling.job_scheduler import JobScheduler

    class Scheduler:                    # what _schedule_reevalutation touches
        _open_jobs = threading.Semaphore(0)

    JobScheduler._schedule_reevalutation(Scheduler(), 3600)
    wake_up = [t for t in threading.enumerate() if isinstance(t, threading.Timer)
               and "_schedule_reevalutation" in t.function.__qualname__]
    other = threading.Timer(3600, lambda: None)
    other.start()
    try:
        assert len(wake_up) == 1 and not wake_up[0].daemon
        _common_smk_function("drop_scheduler_timers")()
        wake_up[0].join(10)
        assert not wake_up[0].is_alive() and other.is_alive()
    finally:
        other.cancel()
        for t in wake_up:
            t.cancel()
