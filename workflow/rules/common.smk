# Load and check the study before anything is built or run; name the files and runs.
# Every input function and path lives here, so that the files of rules only declare.
import json
import os
import sys
from glob import glob
from pathlib import Path

from numaplace.machine.idle import LoadWindow

# the machine's load, watched from here on: onstart's busy check reads it without a wait
# of its own (numaplace itself works meanwhile: its own CPU time is taken off)
_LOAD_WINDOW = LoadWindow()

from numaplace import ConfigError
from numaplace.cluster import resources as cluster
from numaplace.core.artifacts import ANSWER_FILE, NOT_APPLICABLE, PLAN_ESTIMATE
from numaplace.plan.frozen import changed_note, freeze, read_study
from numaplace.machine.guard import hold_study
from numaplace.kinds import figure_titles, table_captions, wildcard_constraints
from numaplace.core.loader import refusal
from numaplace.record.store import check_records, keep_records, workflow_outcome
from numaplace.plan import budget
from numaplace.plan.launch import missing_tools
from numaplace.plan.study import PROGRAM_BUILDS
from numaplace.report.machine import MACHINE_FILE
from numaplace.core.schema import Section, setting

# numaplace is installed in the environment that runs Snakemake (.ci/setup: .venv/). Its
# `numaplace` command sits beside this interpreter: put that first on PATH so the jobs and
# the cluster profiles' submit/status commands find it without an activated venv.
_search_path = os.environ["PATH"]
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), _search_path])

# The study file is read by numaplace alone (numaplace.core.loader: strict YAML/JSON, no
# templates), never from Snakemake's `config`: the documented way is
#   --config study=<file>
# `--configfile <file>` still works, but Snakemake reads that file first with its own
# loader (YTE templates run, a syntax error gets Snakemake's message naming no line);
# numaplace then reads it again strictly. Without either, the embedded default study.
def _refuse(err):
    # one line, no traceback, before Snakemake lists a job
    sys.stderr.write(refusal(err) + "\n")
    sys.exit(1)


_CONFIGFILES = [str(c) for c in workflow.configfiles]
_GIVEN = dict(getattr(workflow.config_settings, "config", None) or {})   # --config key=value
try:
    if set(_GIVEN) - {"study"}:
        raise ConfigError("--config", sorted(set(_GIVEN) - {"study"})[0], "only study=<file> is "
                          "read from --config; put settings in the study file")
    if "study" in _GIVEN and _CONFIGFILES:
        raise ConfigError("--config", "study", "give the study once: --config study=<file> "
                          "or --configfile <file>, not both")
    if len(_CONFIGFILES) > 1:
        raise ConfigError("--configfile", "study", f"{len(_CONFIGFILES)} files given; a run "
                          "reads one study file")
    if "study" in _GIVEN:
        _STUDY_FILE = str(_GIVEN["study"])
    elif _CONFIGFILES:
        _STUDY_FILE = _CONFIGFILES[0]
    else:
        _STUDY_FILE = str(Path(workflow.basedir) / "config" / "config.yaml")
    # every process of a workflow reads the version its start read (numaplace.plan.frozen:
    # frozen at onstart, named to the jobs by NUMAPLACE_FROZEN_STUDY)
    STUDY, _STUDY_READ = read_study(_STUDY_FILE, Path(workflow.basedir) / "config")
except ConfigError as e:
    _refuse(e)

# `config` is what numaplace read, not Snakemake's copy
config.clear()
config.update(STUDY.config)

KIND_WILDCARDS = wildcard_constraints()    # bench, cls and variant patterns
ENV = "../../envs/numaplace.yaml"          # conda env of every rule (--sdm conda)

# -- plan, builds, runs ---------------------------------------------------------------
RESULTS = f"results/{STUDY.name}"
BUILD_DIR = STUDY.build_dir
PLAN = f"{RESULTS}/plan.tsv"
LOGS = f"{RESULTS}/logs"


build_record_path = STUDY.build_record
BUILDS = [build_record_path(b, c, v) for b, c, v in STUDY.binaries()]
RECORDS = [f"{RESULTS}/runs/{r.run_id}/record.json" for r in STUDY.runs]
NODE_CPUS = cluster.node_cpus(STUDY)      # a measured run's threads: the whole node
# the measure jobs: one per chunk of a round (numaplace.plan.rounds), each writing a ledger
LEDGERS = [f"{RESULTS}/rounds/{c.id}.json" for c in STUDY.chunks]
_ROUNDS = max((c.round for c in STUDY.chunks), default=0)


_CHUNK_RUNS = {}      # chunk id -> its runs in order: asked for by its runtime and its memory


def chunk_of(wc):
    """The chunk's runs (numaplace.plan.study.Run), in the order they are measured."""
    if wc.chunk not in _CHUNK_RUNS:
        _CHUNK_RUNS[wc.chunk] = [STUDY.run(rid) for rid in STUDY.chunk(wc.chunk).order()]
    return list(_CHUNK_RUNS[wc.chunk])


def chunk_builds(wc):
    # every build of the study, not only the chunk's binaries: the measure jobs then become
    # ready together, after the last build, and the rounds' priority orders them (round 1
    # first); with only its own, a later round whose binaries were built first ran first
    return BUILDS


def chunk_waits(wc):
    """Adaptive repetitions: a chunk that decides whether its runs are still needed waits
    for the ledgers of the rounds before it (numaplace.plan.rounds.waits_for); none else."""
    return [f"{RESULTS}/rounds/{c.id}.json" for c in STUDY.waits_for(wc.chunk)]


def chunk_runs(wc):
    """`@<file>`: the chunk's runs (their specs and builds) in a file, not on the command
    line, which Snakemake prints whole when a job fails (23 kB for 14 runs). The file is
    named by the digest of its content: a changed run definition is another file name,
    so Snakemake's params trigger still measures the chunk again."""
    import hashlib
    # json.dumps([STUDY.chunk_entry(rid) ...], sort_keys=True), each run's text made once per shape
    text = "".join(STUDY.entry_texts.listed(chunk_of(wc)))
    path = Path(RESULTS) / "chunks" / f"{wc.chunk}.{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return f"@{path}"


def chunk_facts(wc):
    c = STUDY.chunk(wc.chunk)
    return json.dumps({"chunk": c.id, "round": c.round, "seed": c.seed})


def chunk_priority(wc):
    """Round 1's chunks first, then round 2's, ..."""
    return _ROUNDS - STUDY.chunk(wc.chunk).round


# -- tables, figures, report ----------------------------------------------------------
TABLES_DIR = f"{RESULTS}/tables"
# every table and kind of figure the report stage makes: the registry of numaplace.kinds
TABLES = {name: f"{TABLES_DIR}/{name}.csv" for name in table_captions()}
FIGURE_TITLES = figure_titles()
REPORT_DIR = f"report/{STUDY.name}"
FIGURES_DIR = f"{REPORT_DIR}/figures"
FIGURE_INDEX = f"{FIGURES_DIR}/figures.csv"
SUMMARY_MD = f"{REPORT_DIR}/summary.md"
REPORT_HTML = f"{REPORT_DIR}/report.html"
REPORT_LOGS = f"{LOGS}/report"


def runs_requested():
    """Does this invocation make runs too (default target, all, runs, a chunk's ledger)?"""
    targets = workflow.dag_settings.targets
    return not targets or any(t in ("all", "runs") or "/rounds/" in t for t in targets)


def drop_stale_ledgers():
    """A chunk whose ledger is there while one of its runs has no record (set aside by
    numaplace retry-failed, removed by hand) must run again, and Snakemake cannot see it:
    the records are no rule's output, and an older date on the ledger does not move it
    (it compares checksums). The ledger, a list that is no longer true and no
    measurement, is removed as the workflow is read, so that Snakemake makes it again."""
    try:
        started = set(os.listdir(f"{RESULTS}/runs"))
    except OSError:
        started = set()
    stale = [ledger for c, ledger in zip(STUDY.chunks, LEDGERS) if os.path.exists(ledger) and any(
             rid not in started or not os.path.exists(f"{RESULTS}/runs/{rid}/record.json") for rid in c.run_ids)]
    for ledger in stale:
        try:
            os.unlink(ledger)
        except OSError as e:          # another user's: say so, the runs stay missing
            sys.stderr.write(f"numaplace: {ledger} lists runs that have no record, and it cannot be "
                             f"removed to measure them again ({e.strerror})\n")
    return stale


_HELD = []      # the study's workflow lock (numaplace.machine.guard.hold_study), held until exit


def check_kept_records():
    """Before anything else (as the workflow is read, in the Snakemake process that runs it,
    not in a job's): every record the study keeps is checked, a damaged one restored byte
    for byte from its independent copy, and what cannot be restored named
    (numaplace.record.store.check_records). Under the study's lock, taken here and kept
    (start_of_workflow), so that no other workflow on this study writes meanwhile; when
    another holds it, nothing is touched (start_of_workflow refuses this one)."""
    if workflow.remote_exec or workflow.subprocess_exec or not os.path.isdir(f"{RESULTS}/runs"):
        return
    try:
        fd, holder = hold_study(RESULTS)
    except OSError:
        fd, holder = None, None             # a read-only results folder: named, not restored
    if holder is not None:
        return
    if fd is not None:
        _HELD.append(fd)
    try:
        lines = check_records(RESULTS, restore=fd is not None)
    except OSError as e:
        lines = [f"numaplace: could not check every record of {RESULTS}: {e}"]
    for line in lines:
        sys.stderr.write(f"{line}\n")


check_kept_records()
drop_stale_ledgers()


def say_plan_when_up_to_date():
    """`snakemake plan` with plan.tsv up to date (numaplace plan wrote it) runs no job, so
    onstart never says the plan: say it here, in the main process only."""
    # the targets are not known yet while the Snakefile is read: the command line's words
    if workflow.remote_exec or workflow.subprocess_exec or "plan" not in sys.argv[1:] or not os.path.exists(PLAN):
        return
    if os.path.getmtime(PLAN) >= os.path.getmtime(_STUDY_FILE):
        for line in STUDY.plan_summary():
            sys.stderr.write(f"{line}\n")
        sys.stderr.write(f"numaplace: {PLAN} is up to date\n")


say_plan_when_up_to_date()


def drop_scheduler_timers():
    """Snakemake's scheduler, after each round that started jobs, wakes itself again
    after its rate limit's timespan (--max-jobs-per-timespan, 100/1s by default) with a
    threading.Timer: a non-daemon thread, which Python waits for on the way out. Every
    call that ran a job ended a second after its last line (issue 41.10). At exit the
    scheduler has returned and nothing waits for the wake-up: its timers are cancelled
    before Python joins the threads (threading's own exit hook, which runs before that
    join; the atexit module's runs after it)."""
    import threading
    for t in threading.enumerate():
        if isinstance(t, threading.Timer) and "_schedule_reevalutation" in getattr(
                getattr(t, "function", None), "__qualname__", ""):
            t.cancel()


if not (workflow.remote_exec or workflow.subprocess_exec):
    import threading as _threading
    if hasattr(_threading, "_register_atexit"):        # CPython 3.9+
        _threading._register_atexit(drop_scheduler_timers)


def builds_requested():
    """Does this invocation make (or need) the builds too?"""
    targets = workflow.dag_settings.targets
    return runs_requested() or any(t == "build" or t.endswith(".build.json") for t in targets)


_FROZEN = []    # results/<study>/study.frozen.yaml, once written (numaplace.plan.frozen.freeze)


def start_of_workflow():
    """Before any job (onstart): refuse when another workflow, from another checkout
    sharing results/, works on this study; freeze the study as read (numaplace.plan.frozen:
    results/<study>/study.frozen.yaml, which every job reads); give every record its
    second name (keep_records)."""
    fd, holder = (_HELD[0], None) if _HELD else hold_study(RESULTS)
    if fd is None:
        sys.stderr.write(f"numaplace: {RESULTS} is in use by another workflow ({holder}); one workflow "
                         f"at a time works on a study, whichever checkout it runs from: run this one "
                         f"again when that one has ended\n")
        sys.exit(1)          # Snakemake releases its own lock on the way out
    if not _HELD:
        _HELD.append(fd)
    try:
        _FROZEN.append(freeze(_STUDY_READ, RESULTS))     # the study as read, for every job from now on
    except OSError as e:
        sys.stderr.write(f"numaplace: cannot keep the study as read in {RESULTS} ({e.strerror or e}); "
                         f"nothing was run\n")
        sys.exit(1)
    keep_records(RESULTS)
    from snakemake.logging import logger
    for line in STUDY.plan_summary():        # runs, classes, estimated time, what is left out
        logger.info(line)
    # a busy machine is said (and waited for, or refused, as the study says) before any run
    to_measure = runs_requested() and any(not os.path.exists(ledger) for ledger in LEDGERS)
    if to_measure and setting("platform", STUDY.config) == "auto" and not budget.wait_for_quiet(
            Section("run", STUDY.config.get("run")), logger.warning, budget.load_since(_LOAD_WINDOW)):
        sys.exit(1)
    # the launchers' tools, before the first job here (a cluster's are on its nodes)
    if to_measure and (workflow.executor_plugin is None or workflow.local_exec):
        missing = missing_tools({r.placement.launcher for r in STUDY.runs})
        for line in missing:
            logger.error(f"numaplace: {line}")
        if missing:
            sys.exit(1)
    on_a_cluster(logger)


def on_a_cluster(logger):
    """A cluster executor's jobs, before any is submitted (numaplace.cluster.why): refuse a
    partition/queue the scheduler does not know and a chunk's walltime below the plan's
    estimate; from then on, say in one line why a job the scheduler ended failed."""
    from numaplace.cluster import why
    plugin = workflow.executor_plugin
    if plugin is None or workflow.local_exec:
        return
    scheduler = why.scheduler_of(plugin.name, getattr(workflow.executor_settings, "submit_cmd", ""))
    chunks = {c.id: c for c in STUDY.chunks}
    jobs = []
    for job in workflow.dag.needrun_jobs():
        if job.is_local:
            continue                  # localrules: never submitted
        chunk = chunks.get(job.wildcards.get("chunk")) if job.rule.name == "measure" else None
        res = job.resources
        jobs.append(why.Submission(job.rule.name, chunk and chunk.id, res.get("runtime"),
                                   res.get("pbs_queue") or res.get("slurm_partition") or "",
                                   chunk and chunk.seconds, chunk and len(chunk.run_ids),
                                   chunk and why.killed_at(RESULTS, chunk.id)))
    problems = why.preflight(jobs, scheduler)
    for line in problems:
        logger.error(line)
    if problems:
        sys.exit(1)
    why.watch(logger)


def end_of_workflow(completed=True):
    """The workflow's last lines (onsuccess, onerror): how many runs failed and where to
    read why, which builds failed and their logs (numaplace.record.store.workflow_outcome);
    whether the study file was edited meanwhile (the workflow followed its frozen copy:
    numaplace.plan.frozen.changed_note). A study whose builds failed, or none of whose runs
    succeeded, exits non-zero although every job "succeeded": the records of those runs
    are data, kept and reported."""
    from snakemake.logging import logger

    machine = Path(REPORT_DIR) / MACHINE_FILE      # the machine first, as MLC prints it
    if machine.exists() and machine.read_text().strip():
        facts, *matrices = machine.read_text().splitlines()
        logger.info(f"numaplace: the machine: {facts}")
        for line in matrices:
            logger.info(f"  {line}")
    answer = Path(REPORT_DIR) / ANSWER_FILE        # written with summary.md
    if answer.exists():
        logger.info(f"numaplace: the answer (report: {REPORT_HTML}; summary: {SUMMARY_MD}):")
        for line in answer.read_text().splitlines():
            logger.info(f"  {line}")
    changed = _FROZEN and changed_note(_STUDY_READ, STUDY.name, RESULTS)   # edited while this ran
    if changed:
        logger.warning(changed)
    lines, failed = workflow_outcome(STUDY.name, RECORDS, BUILDS, REPORT_DIR,
                                     runs_made=runs_requested(), builds_made=builds_requested())
    say = logger.warning if failed or any(" failed" in line for line in lines) else logger.info
    for line in lines:
        say(line)
    if failed and completed:
        sys.exit(1)          # Snakemake releases its lock on the way out


def records_for_tables(wildcards):
    # When this invocation makes the runs, the tables wait for the chunks' ledgers (a
    # ledger is written after its chunk's records). Otherwise they are made from the
    # records on disk, named by their absolute paths, which no job makes (a report
    # never runs or builds anything). Set-aside attempts are no rule's output either way.
    # (Switching between the two rebuilds the tables once: their input list changed.)
    current = glob(f"{RESULTS}/runs/*/record.json")
    attempts = glob(f"{RESULTS}/runs/*/attempts/*/record.json")
    if runs_requested():
        planned = set(RECORDS)
        unplanned = [os.path.abspath(r) for r in current if r not in planned]
        return LEDGERS + sorted(unplanned) + sorted(attempts)
    return sorted(os.path.abspath(r) for r in current) + sorted(attempts)


def _caption(folder, name, generic):
    """A table's or figure's caption (workflow/report/<folder>/<name>.rst), else the
    generic one of a kind's own outputs."""
    own = Path(workflow.basedir) / "workflow" / "report" / folder / f"{name}.rst"
    return f"../report/{folder}/{own.name if own.exists() else generic}"


def table_file(name):
    return report(TABLES[name], caption=_caption("tables", name, "kind_table.rst"), category="Tables")


def figure_dir(name):
    return report(directory(f"{FIGURES_DIR}/{name}"), patterns=["{figure}.svg"],
                  caption=_caption("figures", name, "kind_figure.rst"), category="Figures",
                  subcategory=FIGURE_TITLES[name])


def parent_of(which, name):
    """A param: the folder of the job's input or output file `name`."""
    def folder(wildcards, input, output):
        files = dict((input if which == "input" else output).items())
        return os.path.dirname(files[name])
    return folder

