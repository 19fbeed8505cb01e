"""One chunk of a measurement round, measured in one process (the measure rule; the chunks:
numaplace.plan.rounds).

* The machine lock is taken once and held for the whole chunk: no other study's run
  slips in between two of its runs.
* Each placement is probed once per chunk (the probe applies the placement to `true`).
* The next run's idle window opens as soon as a benchmark has been reaped, while its
  record is written: the idle check costs nothing on top of what the chunk does anyway.
* A run whose record already holds its definition (the digest of its params) is kept,
  not measured again: a chunk interrupted (kill -9, Ctrl-C, a walltime, a full disk) and
  started again measures only what is missing, and a record of another definition is
  set aside as an attempt (numaplace.record.store.set_aside) by the run that replaces it.
* A run of adaptive repetitions past its minimum is first asked about: when the records of
  the earlier rounds already separate its case's best and runner-up (the judge's
  decision, given by the caller: numaplace.judge.separation.decide), it gets a not-needed
  record with the reason instead of a measurement.

The records stay one per run and are no rule's output, so Snakemake never deletes one
(--forcerun, root). The job's output is the ledger, written last: every run of the chunk
and what became of it."""
from __future__ import annotations

import json
import os
from pathlib import Path


def recorded(record_path, spec, adaptive=None):
    """Does the record at record_path hold this definition of the run? A not-needed record
    holds it only under the repetitions it was decided with (adaptive: the run's {min, max,
    alpha}): a study that now asks for more evidence, or fixed repetitions, decides or
    measures again, and the old record is set aside as an attempt."""
    from numaplace.run.runner import definition_digest
    try:
        rec = json.loads(Path(record_path).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    if not isinstance(rec, dict) or rec.get("definition_sha256") != definition_digest(spec):
        return False
    return rec.get("status") != "not-needed" or rec.get("adaptive") == adaptive


def _window(spec, affinity):
    """The idle window of a run about to come (numaplace.machine.idle.IdleWindow), opened now."""
    if spec.get("run", {}).get("idle_check") == "off":
        return None
    from numaplace.core.cpulist import parse_cpulist
    from numaplace.machine.idle import IdleWindow
    return IdleWindow.leave(parse_cpulist(spec["placement"]["cpus"]), affinity)


def not_needed(runs, results_dir, record_of, places, decide, say=None):
    """The runs of `runs` that adaptive repetitions no longer need, each given its
    not-needed record now: {run id: record}. A run is asked about when its entry has
    `adaptive` ({min, max, alpha}) and its round is past min; decide(records, spec, min,
    alpha, max) -> numaplace.judge.separation.Decision judges it from the study's current
    records, read once (through numaplace.record.store) and only when a run is asked about."""
    from numaplace.run.runner import record_not_needed
    out, records = {}, None
    for run in runs:
        spec, reps = run["spec"], run.get("adaptive")
        if not reps or decide is None or spec["rep"] <= reps["min"]:
            continue
        if records is None:
            from numaplace.record.store import iter_records
            records = list(iter_records(results_dir))
        decision = decide(records, spec, reps["min"], reps["alpha"], reps["max"])
        if decision.stop:
            extra = {**places[spec["run_id"]], "adaptive": reps,
                     "decision": {"rounds": decision.rounds, "p": decision.p}}
            out[spec["run_id"]] = rec = record_not_needed(spec, record_of[spec["run_id"]], decision.reason, extra)
            if say:
                say(rec)
    return out


def _stop_on_signals():
    """Handlers for the whole chunk (SIGTERM, SIGINT, SIGHUP raise runner.Interrupted), so
    that an interrupt between two runs stops the chunk as one during a run does (the
    runner's own handlers, for the run, are the chunk's again afterwards). Returns the
    previous handlers; none where this is not the main thread."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return {}
    from numaplace.run.runner import on_interrupt
    return {sig: signal.signal(sig, on_interrupt) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}


def _watch_snakemake():
    """Watch the Snakemake process this chunk runs under, for the whole chunk: when it is
    gone (kill -9, a crash), the chunk stops (SIGTERM to itself: the benchmark running is
    killed, no record is written for it, no further run starts). None when there is no
    Snakemake above (a chunk measured by hand)."""
    import signal
    from numaplace.machine.guard import AncestorWatch, snakemake_ancestor
    ancestor = snakemake_ancestor()
    if ancestor is None or ancestor[1] is None:
        return None
    watch = AncestorWatch(ancestor, lambda: os.kill(os.getpid(), signal.SIGTERM), interval=0.25)
    try:
        watch.cmdline = [a.decode(errors="replace") for a in
                         Path(f"/proc/{ancestor[0]}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        watch.cmdline = []
    watch.start()
    return watch


def measure_chunk(runs, results_dir, ledger, chunk=None, say=None, decide=None, aside=None):
    """Measure `runs` ([{"spec": the run's params, "build": its build record, and for
    adaptive repetitions "adaptive": {min, max, alpha}}], in the order given: the chunk's
    shuffled order) into results_dir/runs/<id>/record.json; keep the ones already
    recorded; give a not-needed record to the adaptive runs `decide` finds not needed
    (not_needed; without decide every run is measured); write the ledger last and return
    it. `chunk`: its id, round and seed, kept in each record; `say(record)`: after each
    run recorded; `aside(run ids)`: once, the runs whose record holds another definition
    (an older numaplace, a changed study): set aside and measured again.

    The machine lock is taken first, always: what is kept is decided under it, so that a
    chunk started again while an earlier one still measures (its Snakemake killed) sees
    every record that one wrote. The Snakemake process above is watched for the whole
    chunk (_watch_snakemake): a chunk whose workflow is gone stops (runner.Interrupted
    naming it), never measures on its own."""
    import fcntl
    import time
    from numaplace.machine.guard import open_lock
    from numaplace.run.runner import Interrupted, execute_build, now
    results_dir, chunk = Path(results_dir), dict(chunk or {})
    record_of = {r["spec"]["run_id"]: results_dir / "runs" / r["spec"]["run_id"] / "record.json" for r in runs}
    places = {r["spec"]["run_id"]: {"round": {**chunk, "position": i, "runs": len(runs)}}
              for i, r in enumerate(runs, 1)}
    previous = _stop_on_signals()
    watch = _watch_snakemake()
    fd = None
    try:
        fd = open_lock(None)
        t0 = time.monotonic()
        fcntl.flock(fd, fcntl.LOCK_EX)              # the machine, for the whole chunk
        waited = {"lock_wait_s": round(time.monotonic() - t0, 3)}
        kept = {r["spec"]["run_id"] for r in runs
                if recorded(record_of[r["spec"]["run_id"]], r["spec"], r.get("adaptive"))}
        todo = [r for r in runs if r["spec"]["run_id"] not in kept]
        outcome = {rid: "kept" for rid in kept}
        other = [r["spec"]["run_id"] for r in todo if os.path.lexists(record_of[r["spec"]["run_id"]])]
        if other and aside:
            aside(other)
        if todo:
            # decided under the lock: reading every record of the study is no load to put
            # on a run of another chunk being measured meanwhile
            skipped = not_needed(todo, results_dir, record_of, places, decide, say)
            outcome.update({rid: rec["status"] for rid, rec in skipped.items()})
            todo = [r for r in todo if r["spec"]["run_id"] not in skipped]
            affinity, probed = os.sched_getaffinity(0), set()
            window = _window(todo[0]["spec"], affinity) if todo else None
            for i, run in enumerate(todo):
                spec, following = run["spec"], todo[i + 1]["spec"] if i + 1 < len(todo) else None
                opened = []
                place = {**places[spec["run_id"]], **({"adaptive": run["adaptive"]} if run.get("adaptive") else {})}
                # each run gets its own descriptor of the one lock: closing it (the runner
                # does, at its end) leaves the chunk's lock held
                rec = execute_build(spec, run["build"], record_of[spec["run_id"]], window, os.dup(fd),
                                    probed=probed, extra={**waited, **place},
                                    ended=lambda s=following: opened.append(s and _window(s, affinity)))
                waited = {}
                # the window opened as the benchmark ended, or now (a run that never
                # launched one: placement-failed, not-idle, build-failed)
                window = opened[0] if opened else (following and _window(following, affinity))
                if window:
                    window.stay_off()                   # the runner gave this thread its CPUs back
                outcome[spec["run_id"]] = rec["status"]
                if say:
                    say(rec)
                if watch and watch.gone:
                    raise Interrupted("gone")
        out = {**chunk, "finished": now(),
               "runs": [{"run_id": r["spec"]["run_id"], "outcome": outcome[r["spec"]["run_id"]],
                         "record": str(record_of[r["spec"]["run_id"]])} for r in runs]}
        ledger = Path(ledger)
        ledger.parent.mkdir(parents=True, exist_ok=True)
        tmp = ledger.with_name(ledger.name + ".tmp")
        tmp.write_text(json.dumps(out, indent=1))
        os.replace(tmp, ledger)
    except (Interrupted, KeyboardInterrupt):
        if watch and watch.gone:
            raise SnakemakeGone(watch.ancestor[0], watch.cmdline) from None
        raise
    finally:
        if watch:
            watch.stop()
        if fd is not None:
            os.close(fd)
        import signal
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return out


class SnakemakeGone(Exception):
    """The Snakemake process above the chunk ended while the chunk measured: its pid and
    command line (argv), to say the exact command that recovers."""

    def __init__(self, pid, argv):
        super().__init__(f"Snakemake (pid {pid}) is gone")
        self.pid, self.argv = pid, argv
