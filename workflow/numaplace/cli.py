"""The `numaplace` command: what the Snakemake rules, the cluster profiles and a user call.

    numaplace plan STUDY [--out plan.tsv]        expand a study file into its plan
    numaplace retry-failed results/<study>       set aside records that failed
    numaplace build | measure                    one NPB build / one chunk of runs (rules)
    numaplace run                                one measured run, by hand
    numaplace tables | figures | summary | html  the report's steps (rules)
    numaplace explain --tables DIR [--matrices CSV]  placements explained by memory matrices
    numaplace compare results/a results/b ...    one report over several studies
    numaplace pbs-submit | pbs-status            PBS Pro / Torque glue (profiles/pbs*)
    numaplace platform detect --name NAME        a platform file for this machine (stdout)
    numaplace platform from-hwloc X.xml --name N a platform file from an hwloc XML (stdout)
"""
from __future__ import annotations

import json
from pathlib import Path
import sys
import time
from types import SimpleNamespace

from numaplace import __version__


def _parser():
    import argparse            # here: `numaplace run` (once per measured run) does without
    from numaplace.cluster import pbs          # its dialect names (a light module)
    ap = argparse.ArgumentParser(prog="numaplace", description="NUMA placement studies with the NPB "
                                 "CG and MG kernels. The workflow itself runs with snakemake.")
    ap.add_argument("--version", action="version", version=f"numaplace {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    p = sub.add_parser("plan", help="expand a study file and write its plan.tsv")
    p.add_argument("study")
    p.add_argument("--out")

    rf = sub.add_parser("retry-failed", help="set aside records that failed (every status but ok and not-needed) so they run again")
    rf.add_argument("results", help="results/<study>")
    rf.add_argument("--status", nargs="+", default=None,      # "+": a bare --status is refused
                    help="statuses to retry (default: every status but ok and not-needed; not-needed: decide again)")

    b = sub.add_parser("build", help="build one NPB binary → its build record (the npb_build rule)")
    b.add_argument("--settings", required=True, help="JSON: the study's npb section")
    b.add_argument("--variant", required=True)
    b.add_argument("--bench", required=True)
    b.add_argument("--cls", required=True)
    b.add_argument("--tree", required=True)
    b.add_argument("--record", required=True, help="<dir>/<bench>.<cls>.build.json; the binary goes beside it")
    b.add_argument("--log", required=True)

    r = sub.add_parser("run", help="one measured run → record.json (the measure rule)")
    r.add_argument("--spec", required=True, help="JSON: the run's params from the plan")
    what = r.add_mutually_exclusive_group(required=True)
    what.add_argument("--build", help="the binary's build record (a failed build → a build-failed record)")
    what.add_argument("--binary", help="run this binary")
    r.add_argument("--record", required=True)

    m = sub.add_parser("measure", help="one chunk of a measurement round in one process → a record per "
                       "run, then the chunk's ledger (the measure rule)")
    m.add_argument("--runs", required=True, help='JSON: [{"spec": a run\'s params, "build": its build record}], '
                   "in the order to measure them; or @FILE holding it")
    m.add_argument("--chunk", default="{}", help="JSON: the chunk's id, round and seed (kept in each record)")
    m.add_argument("--results", required=True, help="results/<study>")
    m.add_argument("--ledger", required=True, help="results/<study>/rounds/<chunk>.json, written last")

    t = sub.add_parser("tables", help="run records → tables/*.csv")
    t.add_argument("--results", required=True, help="results/<study>")
    t.add_argument("--plan")
    t.add_argument("--out", required=True)
    t.add_argument("--fidelity", default="{}", help="JSON: the study's fidelity thresholds (the study schema's fidelity section)")
    f = sub.add_parser("figures", help="tables → figures/<kind>/*.svg|png + figures.csv")
    f.add_argument("--tables", required=True)
    f.add_argument("--out", required=True)
    f.add_argument("--settings", default="{}", help="JSON: plot settings (the study schema's figures section)")
    s = sub.add_parser("summary", help="tables + figures → summary.md")
    s.add_argument("--tables", required=True)
    s.add_argument("--figures", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--study")
    s.add_argument("--description")
    s.add_argument("--plan")
    x = sub.add_parser("explain", help="a study's NPB placements explained by node × node memory matrices: "
                       "its own, or another study's of the same machine")
    x.add_argument("--tables", required=True, help="results/<study>/tables")
    x.add_argument("--matrices", help="memory_matrix.csv to use (default: the study's own)")
    x.add_argument("--out", help="write explain.csv here as well")
    c = sub.add_parser("compare", help="one report over several studies: one machine over time, or several "
                       "machines side by side")
    c.add_argument("results", nargs="+", help="results/<study> folders; the first is the reference")
    c.add_argument("--out", default="report/compare", help="folder for compare.html, compare.md and the CSVs")
    rp = sub.add_parser("report", help="records → tables → figures → summary.md → report.html, in one process "
                        "(the make_report rule)")
    for opt in ("--results", "--plan", "--tables", "--figures", "--summary", "--html"):
        rp.add_argument(opt, required=True)
    rp.add_argument("--fidelity", default="{}", help="JSON: the study's fidelity thresholds")
    rp.add_argument("--settings", default="{}", help="JSON: plot settings (the study schema's figures section)")
    rp.add_argument("--study")
    rp.add_argument("--description")
    h = sub.add_parser("html", help="answer.txt + summary.md + figures + tables → one self-contained report.html")
    h.add_argument("--out", required=True)
    h.add_argument("--tables", required=True)
    h.add_argument("--summary", required=True, help="summary.md (answer.txt and figures/ beside it)")
    h.add_argument("--study", required=True)
    h.add_argument("--description")
    h.add_argument("--plan")

    ps = sub.add_parser("pbs-submit", help="cluster-generic submit command: qsub one Snakemake jobscript, "
                        "print the job id")
    ps.add_argument("--dialect", choices=tuple(pbs.DIALECTS), default="pbspro")
    ps.add_argument("--log-dir", default="logs/pbs")
    ps.add_argument("--extra", default="", help="more qsub arguments, for every job")
    ps.add_argument("--exclusive", default=None,
                    help="qsub arguments that make a whole-node job exclusive "
                         "(default: '-l place=excl' for pbspro, none for torque)")
    ps.add_argument("--print", action="store_true", help="print the qsub command line instead of running it")
    ps.add_argument("jobscript")
    st = sub.add_parser("pbs-status", help="cluster-generic status command: running|success|failed")
    st.add_argument("--dialect", choices=("auto", *pbs.DIALECTS), default="auto")
    st.add_argument("--vanished", choices=("success", "failed"), default="success",
                    help="verdict for a job qstat no longer knows (default success: "
                         "Snakemake still checks that its outputs exist)")
    st.add_argument("--verbose", action="store_true", help="print the reason to stderr")
    st.add_argument("jobid")

    pl = sub.add_parser("platform", help="platform files (config/platforms/<name>.yaml)")
    pd_ = pl.add_subparsers(dest="platform_cmd", required=True, metavar="ACTION")
    d = pd_.add_parser("detect", help="print a platform file for this machine (nodes, CPUs, memory, "
                       "SLIT, caches, SMT siblings; sources in its header)")
    d.add_argument("--name", required=True, help="the platform's name (config/platforms/<name>.yaml)")
    d.add_argument("--sysfs", default="/sys", help=argparse.SUPPRESS)    # tests: a copied tree
    fh = pd_.add_parser("from-hwloc", help="print a platform file for the machine an hwloc XML "
                        "(lstopo --of xml) describes, to plan for a machine you are not on")
    fh.add_argument("xml", metavar="FILE.xml", help="hwloc XML topology (v1, v2 or v3 format)")
    fh.add_argument("--name", required=True, help="the platform's name (config/platforms/<name>.yaml)")
    return ap


def _platform_detect(a):
    from numaplace import ConfigError
    try:
        if a.platform_cmd == "from-hwloc":
            from numaplace.machine.hwloc_xml import convert
            text = convert(a.xml, a.name)
        else:
            from numaplace.machine.platform_detect import detect
            text = detect(a.name, a.sysfs)
        sys.stdout.write(text)
    except ConfigError as e:
        print(f"numaplace: {e}", file=sys.stderr)
        return 2
    return 0


def _plan(a):
    from numaplace import ConfigError
    from numaplace.plan.study import load_study_file
    try:
        st = load_study_file(a.study)
    except ConfigError as e:
        from numaplace.core.loader import refusal
        print(refusal(e), file=sys.stderr)
        return 2
    out = a.out or f"results/{st.name}/plan.tsv"
    st.write_plan(out)
    print("\n".join(st.plan_summary() + [f"plan: {out}"]))
    return 0


def _pbs_submit(a):
    import subprocess
    from pathlib import Path   # here, as the other imports: `numaplace run` starts without them
    from numaplace.cluster import pbs
    props = pbs.read_job_properties(a.jobscript)
    logdir = Path(a.log_dir).resolve()
    log = logdir / f"{pbs.job_name(props)}.{props.get('jobid', 'x')}.{int(time.time())}.log"
    argv = pbs.qsub_argv(props, a.dialect, log, pbs.split_args(a.extra),
                         None if a.exclusive is None else pbs.split_args(a.exclusive))
    argv.append(a.jobscript)
    if a.print:
        print(" ".join(argv))
        return 0
    logdir.mkdir(parents=True, exist_ok=True)
    p = subprocess.run(argv, capture_output=True, text=True)
    out = p.stdout.strip()
    if p.returncode != 0 or not out:
        sys.stderr.write(f"qsub failed (exit {p.returncode}): {' '.join(argv)}\n{p.stdout}{p.stderr}")
        return p.returncode or 1
    print(out.splitlines()[-1].strip())        # the job id, e.g. 1234.pbs-server
    return 0


def _pbs_status(a):
    from numaplace.cluster import pbs
    st = pbs.job_status(a.jobid, a.dialect, a.vanished)
    if a.verbose or st.status == pbs.FAILED:
        sys.stderr.write(f"pbs job {a.jobid}: {st.status}: {st.reason}\n")
    print(st.status)
    return 0


def _run(a):
    """One measured run. Its outcome goes to stdout (the job's log); what stopped it from
    writing a record goes to stderr in one line (the console: a full disk cannot eat it)."""
    spec = json.loads(a.spec)
    from numaplace.machine.guard import try_machine_lock
    window = held = None
    if spec.get("run", {}).get("idle_check") != "off" and (held := try_machine_lock()) is not None:
        # first thing, when no other run holds the machine: leave the placement's CPUs,
        # so that the idle check's window runs while the runner starts up, not after it
        from numaplace.core.cpulist import parse_cpulist
        from numaplace.machine.idle import IdleWindow
        window = IdleWindow.leave(parse_cpulist(spec["placement"]["cpus"]))
    from numaplace.run.runner import Interrupted, execute, execute_build
    try:
        rec = (execute_build(spec, a.build, a.record, window, held) if a.build
               else execute(spec, a.binary, a.record, window, held))
    except Interrupted as e:
        sys.stderr.write(f"numaplace run: {spec['run_id']}: interrupted ({e}); the benchmark was "
                         f"stopped and no record written; to measure it, run the same snakemake "
                         f"command again (with --unlock first if Snakemake says the directory is "
                         f"locked); this attempt's files are then set aside\n")
        return 130
    except OSError as e:
        sys.stderr.write(f"numaplace run: {spec['run_id']}: {_no_record(e)}\n")
        return 1
    _said(rec)
    from numaplace.run.progress import progress_line
    record = Path(a.record).absolute()                      # results/<study>/runs/<id>/record.json
    line = (progress_line(record.parents[2], f"{rec['run_id']}: {rec['status']}")
            if record.parent.parent.name == "runs" else None)
    if line:
        sys.stderr.write(line + "\n")                         # the console, past the job's log
    return 0


def _no_record(e):
    """What an OSError while measuring means for the user (run and measure alike)."""
    from numaplace.machine.guard import is_disk_full
    cause = "the disk is full" if is_disk_full(e) else "an operating-system error"
    return f"no record written: {cause}: {e}"


PROGRESS_EVERY_S = 10.0


def _walls(records):
    """(run id, wall seconds) of the records a chunk wrote, for the re-estimate."""
    return [(r.get("run_id"), r.get("wall_s")) for r in records if isinstance(r.get("wall_s"), (int, float))]


def _said(rec):
    print(f"{rec['run_id']}: {rec['status']}" + (f" ({rec['reason']})" if rec["reason"] else ""), flush=True)


def _snakemake_command(argv):
    """`<argv with --unlock> && <argv>`, shell-quoted: what recovers a workflow whose
    Snakemake was killed (it left its lock); None for a command line no user typed."""
    import shlex
    argv = list(argv)
    if len(argv) > 1 and Path(argv[0]).name.startswith("python") and not argv[1].startswith("-"):
        argv = argv[1:]                      # the interpreter of a .venv/bin/snakemake script
    n = 3 if len(argv) > 2 and argv[1] == "-m" else 1
    again = shlex.join(argv)
    if "\n" in again or len(again) > 1500:   # not one a user typed: said in words
        return None
    return f"{shlex.join(argv[:n] + ['--unlock'] + argv[n:])} && {again}"


def _read_runs(value):
    """--runs: the runs as JSON, or @FILE holding that JSON (the measure rule passes a file:
    a command line with every run spec is what Snakemake prints when a job fails)."""
    if value.startswith("@"):
        return json.loads(Path(value[1:]).read_text())
    return json.loads(value)


def _measure(a):
    """One chunk of a round (the measure rule). Each run's outcome goes to stdout (the
    job's log); the chunk's progress, and what stopped it, to stderr (the console), in
    one line each."""
    from collections import Counter
    from numaplace.run.chunk import SnakemakeGone, measure_chunk
    from numaplace.run.progress import progress_line
    from numaplace.run.runner import Interrupted
    # the judge decides whether an adaptive run is still needed (run/ may not import judge/)
    from numaplace.judge.separation import decide
    chunk = json.loads(a.chunk)
    name = chunk.get("chunk", "chunk")
    try:
        runs = _read_runs(a.runs)
    except (OSError, ValueError) as e:
        sys.stderr.write(f"numaplace measure: {name}: cannot read its runs ({str(e)[:200]}); nothing was "
                         f"measured; run the same snakemake command again (the workflow writes them anew)\n")
        return 2
    done, said = [], [time.monotonic()]

    def tick(rec):
        """A line on the console per run, at most one every PROGRESS_EVERY_S: a long chunk
        is never silent, a chunk of class-S runs never floods it."""
        done.append(rec)
        _said(rec)
        if time.monotonic() - said[0] >= PROGRESS_EVERY_S and len(done) < len(runs):
            said[0] = time.monotonic()
            line = progress_line(a.results, f"{name}: {len(done)} of its {len(runs)} runs, last "
                                            f"{rec['run_id']} {rec['status']}", _walls(done))
            if line:
                sys.stderr.write(line + "\n")

    def aside(ids):
        sys.stderr.write(f"numaplace measure: {name}: {len(ids)} of its {len(runs)} runs have a record of "
                         f"another definition (an older numaplace or a changed study: {', '.join(ids[:3])}"
                         f"{', ...' if len(ids) > 3 else ''}); each is set aside into attempts/ (kept, still "
                         f"counted) and measured again\n")
    try:
        ledger = measure_chunk(runs, a.results, a.ledger, chunk, say=tick, decide=decide, aside=aside)
    except SnakemakeGone as e:
        command = _snakemake_command(e.argv) if e.argv else None
        sys.stderr.write(f"numaplace measure: {name}: stopped after {len(done)} of its {len(runs)} runs: "
                         f"its Snakemake (pid {e.pid}) is gone; their records are kept, the benchmark running "
                         f"was stopped and wrote none. To measure the rest (Snakemake left its lock): "
                         f"{command or 'snakemake --unlock with the same arguments, then the same command'}\n")
        return 130
    except (Interrupted, KeyboardInterrupt) as e:
        sys.stderr.write(f"numaplace measure: {name}: interrupted ({e or 'Ctrl-C'}) after "
                         f"{len(done)} of its {len(runs)} runs; their records are kept, the benchmark "
                         f"running was stopped and wrote none. To measure the rest, run the same "
                         f"snakemake command again (with --unlock first if Snakemake says the directory "
                         f"is locked)\n")
        return 130
    except OSError as e:
        sys.stderr.write(f"numaplace measure: {name}: {_no_record(e)}; the {len(done)} "
                         f"of its {len(runs)} runs recorded before are kept\n")
        return 1
    except Exception as e:                   # a bug: one line on the console, the traceback in the log
        import traceback
        traceback.print_exc(file=sys.stdout)
        sys.stdout.flush()
        sys.stderr.write(f"numaplace measure: {name}: stopped by an internal error after {len(done)} of its "
                         f"{len(runs)} runs ({type(e).__name__}: {str(e)[:200]}); their records are kept; "
                         f"the traceback is in the job's log ({Path(a.results) / 'logs' / 'measure' / (name + '.log')}): "
                         f"please report it\n")
        return 1
    counts = Counter(r["outcome"] for r in ledger["runs"])
    what = ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
    line = progress_line(a.results, f"{name}: {what}", _walls(done))
    sys.stderr.write((line or f"numaplace: {name}: {what}") + "\n")
    return 0


def _explain(a):
    """explain.csv again, with the study's own matrices or another's; the verdicts and the
    placements the model does not explain, as Markdown on stdout."""
    import pandas as pd
    from numaplace.tables import aggregate
    from numaplace.tables.explain import explain_table
    from numaplace.report.summary import explain_markdown
    t = aggregate.read_tables(a.tables)
    matrix = t.get("memory_matrix")
    if a.matrices:
        try:
            matrix = pd.read_csv(a.matrices)
        except (OSError, ValueError) as e:
            sys.stderr.write(f"numaplace explain: {a.matrices}: cannot read a memory_matrix.csv: {e}\n")
            return 2
        missing = {"bench", "mode", "size_bytes", "via", "reader_node", "memory_node", "median"} - set(matrix)
        if missing:
            sys.stderr.write(f"numaplace explain: {a.matrices}: not a memory_matrix.csv: no column "
                             f"{', '.join(sorted(missing))}\n")
            return 2
    ex = explain_table(t["summary"], t["runs"], t["numa_pages"], matrix)
    if a.out:
        ex.to_csv(a.out, index=False)
    print("\n".join(explain_markdown(ex)[2:]))
    return 0


def _run_args(argv):
    """`run --spec S (--build B | --binary X) --record R`, read without argparse: the
    measure rule starts one runner per run, and building the whole parser costs more
    than the rest of the launch. Anything else (help, a mistake) goes to argparse."""
    if len(argv) != 7 or argv[0] != "run":
        return None
    opts = dict(zip(argv[1::2], argv[2::2]))
    if set(opts) not in ({"--spec", "--build", "--record"}, {"--spec", "--binary", "--record"}):
        return None
    return SimpleNamespace(cmd="run", spec=opts["--spec"], build=opts.get("--build"),
                           binary=opts.get("--binary"), record=opts["--record"])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    fast = _run_args(argv)
    if fast:
        return _run(fast)
    a = _parser().parse_args(argv)
    if a.cmd == "plan":
        return _plan(a)
    if a.cmd == "retry-failed":
        from numaplace.record.store import set_aside_failed
        for rid, status in set_aside_failed(a.results, a.status, say=print):
            print(f"set aside {rid} ({status})")
    elif a.cmd == "build":
        from numaplace.build.tree import write_build_record
        out = write_build_record(json.loads(a.settings), a.variant, a.bench, a.cls, a.tree, a.record, a.log)
        print(f"{a.bench}.{a.cls} ({a.variant}): {out['status']}" + (f": {out['reason']}" if out["reason"] else ""))
    elif a.cmd == "run":
        return _run(a)
    elif a.cmd == "measure":
        return _measure(a)
    elif a.cmd == "tables":
        from numaplace.tables import aggregate
        aggregate.write_tables(a.results, a.out, a.plan, json.loads(a.fidelity))
    elif a.cmd == "figures":
        from numaplace.tables import aggregate
        from numaplace.figures import plots
        plots.make_figures(aggregate.read_tables(a.tables), a.out, json.loads(a.settings))
    elif a.cmd == "summary":
        from numaplace.report.summary import write_summary
        write_summary(a.tables, a.figures, a.out, a.study, a.description, a.plan)
    elif a.cmd == "compare":
        from numaplace.report.compare import compare
        try:
            lines = compare(a.results, a.out)
        except ValueError as e:
            sys.stderr.write(f"numaplace compare: {e}\n")
            return 2
        print("\n".join(lines) + f"\nreport: {Path(a.out) / 'compare.html'}")
    elif a.cmd == "explain":
        return _explain(a)
    elif a.cmd == "report":
        from numaplace.report.make import make_report
        make_report(a.results, a.plan, a.tables, a.figures, a.summary, a.html, json.loads(a.fidelity),
                    json.loads(a.settings), a.study, a.description)
    elif a.cmd == "html":
        from numaplace.report.html import write_html
        from numaplace.tables.aggregate import read_plan
        plan = read_plan(a.plan)
        write_html(a.out, a.tables, a.summary, a.study, a.description, None if plan is None else len(plan))
    elif a.cmd == "pbs-submit":
        return _pbs_submit(a)
    elif a.cmd == "pbs-status":
        return _pbs_status(a)
    elif a.cmd == "platform":
        return _platform_detect(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
