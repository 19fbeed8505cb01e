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
    p.add_argument("study", help="the study file (config/studies/<name>.yaml, or config/config.yaml)")
    p.add_argument("--out", help="plan.tsv to write (default: results/<study>/plan.tsv)")

    rf = sub.add_parser("retry-failed", help="set aside records that failed (every status but ok and not-needed) so they run again")
    rf.add_argument("results", help="results/<study>")
    rf.add_argument("--status", nargs="+", default=None,      # "+": a bare --status is refused
                    help="statuses to retry (default: every status but ok and not-needed; not-needed: decide again)")

    b = sub.add_parser("build", help="build one binary → its build record (the npb_build and program_build rules)")
    b.add_argument("--settings", required=True, help="JSON: the study's npb section, or {\"program\": a program's definition}")
    b.add_argument("--variant", required=True, help="default | serial-init | mcmodel-medium")
    b.add_argument("--bench", required=True, help="the kind: cg, mg, membw, memlat, loadlat, stream")
    b.add_argument("--cls", required=True, help="class: S, W, A, B, C (NPB), X (micro-benchmarks)")
    b.add_argument("--tree", required=True, help="the folder the source tree is copied to and built in")
    b.add_argument("--record", required=True, help="<dir>/<bench>.<cls>.build.json; the binary goes beside it")
    b.add_argument("--log", required=True, help="the build's log (make's output)")

    r = sub.add_parser("run", help="one measured run → record.json (the measure rule)")
    r.add_argument("--spec", required=True, help="JSON: the run's params from the plan")
    what = r.add_mutually_exclusive_group(required=True)
    what.add_argument("--build", help="the binary's build record (a failed build → a build-failed record)")
    what.add_argument("--binary", help="run this binary")
    r.add_argument("--record", required=True, help="results/<study>/runs/<run id>/record.json to write")

    m = sub.add_parser("measure", help="one chunk of a measurement round in one process → a record per "
                       "run, then the chunk's ledger (the measure rule)")
    m.add_argument("--runs", required=True, help='JSON: [{"spec": a run\'s params, "build": its build record}], '
                   "in the order to measure them; or @FILE holding it")
    m.add_argument("--chunk", default="{}", help="JSON: the chunk's id, round and seed (kept in each record)")
    m.add_argument("--results", required=True, help="results/<study>")
    m.add_argument("--ledger", required=True, help="results/<study>/rounds/<chunk>.json, written last")

    t = sub.add_parser("tables", help="run records → tables/*.csv")
    t.add_argument("--results", required=True, help="results/<study>")
    t.add_argument("--plan", help="results/<study>/plan.tsv (the runs not yet recorded are listed)")
    t.add_argument("--out", required=True, help="the tables' folder (results/<study>/tables)")
    t.add_argument("--fidelity", default="{}", help="JSON: the study's fidelity thresholds (the study schema's fidelity section)")
    f = sub.add_parser("figures", help="tables → figures/<kind>/*.svg|png + figures.csv")
    f.add_argument("--tables", required=True, help="results/<study>/tables")
    f.add_argument("--out", required=True, help="the figures' folder (report/<study>/figures)")
    f.add_argument("--settings", default="{}", help="JSON: plot settings (the study schema's figures section)")
    s = sub.add_parser("summary", help="tables + figures → summary.md")
    s.add_argument("--tables", required=True, help="results/<study>/tables")
    s.add_argument("--figures", required=True, help="report/<study>/figures")
    s.add_argument("--out", required=True, help="summary.md to write (answer.txt, answer.json, machine.txt beside it)")
    s.add_argument("--study", help="the study's name, for the title")
    s.add_argument("--description", help="the study's description, under the title")
    s.add_argument("--plan", help="results/<study>/plan.tsv")
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
    for opt, what in (("--results", "results/<study>"), ("--plan", "results/<study>/plan.tsv"),
                      ("--tables", "the tables' folder to write"), ("--figures", "the figures' folder to write"),
                      ("--summary", "summary.md to write"), ("--html", "report.html to write")):
        rp.add_argument(opt, required=True, help=what)
    rp.add_argument("--fidelity", default="{}", help="JSON: the study's fidelity thresholds")
    rp.add_argument("--settings", default="{}", help="JSON: plot settings (the study schema's figures section)")
    rp.add_argument("--study", help="the study's name, for the title")
    rp.add_argument("--description", help="the study's description, under the title")
    h = sub.add_parser("html", help="answer.txt + summary.md + figures + tables → one self-contained report.html")
    h.add_argument("--out", required=True, help="report.html to write")
    h.add_argument("--tables", required=True, help="results/<study>/tables")
    h.add_argument("--summary", required=True, help="summary.md (answer.txt and figures/ beside it)")
    h.add_argument("--study", required=True, help="the study's name, for the title")
    h.add_argument("--description", help="the study's description, under the title")
    h.add_argument("--plan", help="results/<study>/plan.tsv (the workflow section)")

    ps = sub.add_parser("pbs-submit", help="cluster-generic submit command: qsub one Snakemake jobscript, "
                        "print the job id")
    ps.add_argument("--dialect", choices=tuple(pbs.DIALECTS), default="pbspro", help="qsub's dialect")
    ps.add_argument("--log-dir", default="logs/pbs", help="where the jobs' stdout and stderr go")
    ps.add_argument("--extra", default="", help="more qsub arguments, for every job")
    ps.add_argument("--exclusive", default=None,
                    help="qsub arguments that make a whole-node job exclusive "
                         "(default: '-l place=excl' for pbspro, none for torque)")
    ps.add_argument("--print", action="store_true", help="print the qsub command line instead of running it")
    ps.add_argument("jobscript", help="the jobscript Snakemake wrote")
    st = sub.add_parser("pbs-status", help="cluster-generic status command: running|success|failed")
    st.add_argument("--dialect", choices=("auto", *pbs.DIALECTS), default="auto", help="qstat's dialect")
    st.add_argument("--vanished", choices=("success", "failed"), default="success",
                    help="verdict for a job qstat no longer knows (default success: "
                         "Snakemake still checks that its outputs exist)")
    st.add_argument("--verbose", action="store_true", help="print the reason to stderr")
    st.add_argument("--log-dir", default="logs/pbs", help="pbs-submit's --log-dir (its jobs.tsv names each job)")
    st.add_argument("jobid", help="the job id pbs-submit printed")

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


def _refused(command, e):
    """A command's argument refused: its one line on stderr, exit status 2."""
    from numaplace.core.loader import argument_refusal
    sys.stderr.write(argument_refusal(command, e) + "\n")
    return 2


def _json_argument(command, argument, text):
    """A JSON mapping given on the command line (--fidelity, --settings), or ConfigError."""
    from numaplace import ConfigError
    from numaplace.core.loader import shown
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ConfigError(shown(text), argument, f"not JSON ({str(e)[:80]}); give a mapping such as '{{}}'") from None
    if not isinstance(value, dict):
        raise ConfigError(shown(text), argument, "expected a JSON mapping such as '{}'")
    return value


def _plan(a):
    from numaplace import ConfigError
    from numaplace.core.loader import guard_out, refusal
    from numaplace.plan.study import load_study_file
    try:
        if a.out:                                       # before the study: nothing planned for naught
            guard_out(a.out, "--out")
    except ConfigError as e:
        return _refused("plan", e)
    try:
        st = load_study_file(a.study)
    except ConfigError as e:
        print(refusal(e), file=sys.stderr)
        return 2
    out = a.out or f"results/{st.name}/plan.tsv"
    try:
        if not a.out:
            guard_out(Path(out).parent, "plan folder", folder=True)
        st.write_plan(out)
    except ConfigError as e:
        return _refused("plan", e)
    except OSError as e:
        return _refused("plan", ConfigError(out, "--out", f"cannot be written ({e.strerror or e})"))
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
    if p.returncode != 0 or not out:             # numaplace's one line (numaplace.cluster.why)
        from numaplace.cluster import why
        what = why.what_of(props.get("rule") or "group", props.get("output") or [])[0]
        sys.stderr.write(why.line(why.pbs_rejection(p.returncode, p.stderr + p.stdout), what,
                                  partitions=why.known_queues("PBS")) + "\n")
        return p.returncode or 1
    jobid = out.splitlines()[-1].strip()
    from numaplace.cluster import why
    why.note_submission(logdir, jobid, props)    # pbs-status names the chunk by it
    print(jobid)                               # the job id, e.g. 1234.pbs-server
    return 0


def _pbs_status(a):
    from numaplace.cluster import pbs
    st = pbs.job_status(a.jobid, a.dialect, a.vanished)
    if a.verbose:
        sys.stderr.write(f"pbs job {a.jobid}: {st.status}: {st.reason}\n")
    if st.status == pbs.FAILED:                 # why, in numaplace's one line (numaplace.cluster.why)
        from numaplace.cluster import why
        sys.stderr.write(why.pbs_status_line(a.jobid, a.dialect, a.log_dir) + "\n")
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


def _guard_tables(folder, argument):
    """A tables folder (results/<study>/tables) as read_tables reads it: a folder whose
    every table is a regular file of bounded size (a FIFO there would block, a link to
    /dev/zero never end)."""
    import os
    from numaplace import ConfigError
    from numaplace.core.loader import MAX_TABLE_BYTES, guard_dir, guard_file
    from numaplace.kinds import table_captions
    folder = guard_dir(folder, argument)
    for name in table_captions():
        f = guard_file(folder / f"{name}.csv", argument, f"{name}.csv")
        if os.stat(f).st_size > MAX_TABLE_BYTES:
            raise ConfigError(str(f), argument, f"larger than {MAX_TABLE_BYTES >> 20} MiB; not a table numaplace wrote")
    return folder


def _read_tables(folder, argument):
    """read_tables behind _guard_tables; a table that is no CSV: ConfigError."""
    from numaplace import ConfigError
    from numaplace.tables import aggregate
    _guard_tables(folder, argument)
    try:
        return aggregate.read_tables(folder)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(str(folder), argument, f"a table does not read as CSV ({str(e)[:120]})") from None


def _explain(a):
    """explain.csv again, with the study's own matrices or another's; the verdicts and the
    placements the model does not explain, as Markdown on stdout."""
    import io
    import pandas as pd
    from numaplace import ConfigError
    from numaplace.core.loader import guard_out, read_file
    from numaplace.tables.explain import explain_table
    from numaplace.report.summary import explain_markdown
    try:
        if a.out:
            guard_out(a.out, "--out")
        raw = read_file(a.matrices, "--matrices", "memory_matrix.csv") if a.matrices else None
        t = _read_tables(a.tables, "--tables")
    except ConfigError as e:
        return _refused("explain", e)
    matrix = t.get("memory_matrix")
    if a.matrices:
        try:
            matrix = pd.read_csv(io.BytesIO(raw))
        except (ValueError, UnicodeDecodeError) as e:
            sys.stderr.write(f"numaplace explain: --matrices {a.matrices}: cannot read a memory_matrix.csv: "
                             f"{str(e)[:200]}\n")
            return 2
        missing = {"bench", "mode", "size_bytes", "via", "reader_node", "memory_node", "median"} - set(matrix)
        if missing:
            sys.stderr.write(f"numaplace explain: {a.matrices}: not a memory_matrix.csv: no column "
                             f"{', '.join(sorted(missing))}\n")
            return 2
    ex = explain_table(t["summary"], t["runs"], t["numa_pages"], matrix)
    if a.out:
        try:
            ex.to_csv(a.out, index=False)
        except OSError as e:
            return _refused("explain", ConfigError(a.out, "--out", f"cannot be written ({e.strerror or e})"))
    print("\n".join(explain_markdown(ex)[2:]))
    if a.out:
        print(f"explain: {a.out} ({len(ex)} rows)")
    return 0


# what retry-failed may set aside: a record's statuses (record.schema.yaml) and unreadable
# (a record.json that does not read)
def _statuses():
    from numaplace.core.schema import schema_file
    return tuple(schema_file("record")["properties"]["status"]["enum"]) + ("unreadable",)


def _retry_failed(a):
    from numaplace import ConfigError
    from numaplace.core.loader import guard_dir, shown
    from numaplace.record.store import NOT_FAILED, set_aside_failed
    try:
        folder = guard_dir(a.results, "results folder")
        if not (folder / "runs").is_dir():
            raise ConfigError(str(folder), "results folder", "has no runs/ folder: not a study's results "
                              "(give results/<study>)")
        allowed = _statuses()
        bad = [s for s in a.status or () if s not in allowed]
        if bad:
            raise ConfigError(shown(bad[0]), "--status", f"is not a status; the statuses are "
                              f"{', '.join(allowed)} (default: every one but {' and '.join(NOT_FAILED)})")
    except ConfigError as e:
        return _refused("retry-failed", e)
    moved = set_aside_failed(folder, a.status, say=print)
    for rid, status in moved:
        print(f"set aside {rid} ({status})")
    which = ", ".join(a.status) if a.status else f"every status but {' and '.join(NOT_FAILED)}"
    # the count on stderr (the console), beside the lines per record on stdout
    sys.stderr.write(f"numaplace retry-failed: set aside {len(moved)} record{'s' * (len(moved) != 1)} of "
                     f"{folder} ({which})" + ("; run the same snakemake command again to measure them"
                                              if moved else "") + "\n")
    return 0


def _compare(a):
    import os
    from numaplace import ConfigError
    from numaplace.core.loader import guard_dir, guard_out
    from numaplace.report.compare import compare
    try:
        seen = {}
        for i, d in enumerate(a.results):
            folder = guard_dir(d, f"results[{i + 1}]")
            real = os.path.realpath(folder)
            if real in seen:
                raise ConfigError(d, f"results[{i + 1}]", f"is the same folder as results[{seen[real] + 1}] "
                                  f"({a.results[seen[real]]}); compare each study once")
            seen[real] = i
        guard_out(a.out, "--out", folder=True)
    except ConfigError as e:
        return _refused("compare", e)
    try:
        lines = compare(a.results, a.out)
    except ConfigError as e:
        return _refused("compare", e)
    except ValueError as e:
        sys.stderr.write(f"numaplace compare: {e}\n")
        return 2
    except OSError as e:
        return _refused("compare", ConfigError(a.out, "--out", f"cannot be written ({e.strerror or e})"))
    print("\n".join(lines) + f"\nreport: {Path(a.out) / 'compare.html'}")
    return 0


def _report(a):
    from numaplace import ConfigError
    from numaplace.core.loader import guard_dir, guard_file, guard_out
    from numaplace.report.make import collect_less, make_report
    try:
        guard_dir(a.results, "--results")
        guard_file(a.plan, "--plan", "plan.tsv")
        fidelity = _json_argument("report", "--fidelity", a.fidelity)
        settings = _json_argument("report", "--settings", a.settings)
        for arg, path in (("--tables", a.tables), ("--figures", a.figures)):
            guard_out(path, arg, folder=True)
        for arg, path in (("--summary", a.summary), ("--html", a.html)):
            guard_out(path, arg, parents=True)
    except ConfigError as e:
        return _refused("report", e)
    collect_less()              # a process that ends with the report (issue 41.10)
    try:
        make_report(a.results, a.plan, a.tables, a.figures, a.summary, a.html, fidelity, settings, a.study,
                    a.description)
    except OSError as e:
        return _refused("report", ConfigError(e.filename or a.html, "output", f"cannot be written "
                                              f"({e.strerror or e})"))
    print(f"report: {a.html} (tables {a.tables}, figures {a.figures}, summary {a.summary})")
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
        return _retry_failed(a)
    elif a.cmd == "build":
        from numaplace.builds.tree import write_build_record
        from numaplace.kinds.program import from_spec
        settings = json.loads(a.settings)
        if settings.get("program"):            # a study's own program: defined from its definition
            from_spec({"bench": a.bench, "program": settings["program"]})
        out = write_build_record(settings, a.variant, a.bench, a.cls, a.tree, a.record, a.log)
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
        return _compare(a)
    elif a.cmd == "explain":
        return _explain(a)
    elif a.cmd == "report":
        return _report(a)
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
