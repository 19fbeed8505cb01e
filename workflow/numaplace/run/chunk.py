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

The records stay one per run and are no rule's output, so Snakemake never deletes one
(--forcerun, root). The job's output is the ledger, written last: every run of the chunk
and what became of it."""
from __future__ import annotations

import json
import os
from pathlib import Path


def recorded(record_path, spec):
    """Does the record at record_path hold this definition of the run?"""
    from numaplace.run.runner import definition_digest
    try:
        rec = json.loads(Path(record_path).read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(rec, dict) and rec.get("definition_sha256") == definition_digest(spec)


def _window(spec, affinity):
    """The idle window of a run about to come (numaplace.machine.idle.IdleWindow), opened now."""
    if spec.get("run", {}).get("idle_check") == "off":
        return None
    from numaplace.core.cpulist import parse_cpulist
    from numaplace.machine.idle import IdleWindow
    return IdleWindow.leave(parse_cpulist(spec["placement"]["cpus"]), affinity)


def measure_chunk(runs, results_dir, ledger, chunk=None, say=None):
    """Measure `runs` ([{"spec": the run's params, "build": its build record}], in the
    order given: the chunk's shuffled order) into results_dir/runs/<id>/record.json;
    keep the ones already recorded; write the ledger last and return it. `chunk`: its id,
    round and seed, kept in each record; `say(record)`: after each run measured."""
    import fcntl
    import time
    from numaplace.machine.guard import _open_lock
    from numaplace.run.runner import execute_build, now
    results_dir, chunk = Path(results_dir), dict(chunk or {})
    record_of = {r["spec"]["run_id"]: results_dir / "runs" / r["spec"]["run_id"] / "record.json" for r in runs}
    kept = {r["spec"]["run_id"] for r in runs if recorded(record_of[r["spec"]["run_id"]], r["spec"])}
    todo = [r for r in runs if r["spec"]["run_id"] not in kept]
    outcome = {rid: "kept" for rid in kept}
    if todo:
        fd = _open_lock(None)
        try:
            t0 = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX)              # the machine, for the whole chunk
            waited = {"lock_wait_s": round(time.monotonic() - t0, 3)}
            affinity, probed = os.sched_getaffinity(0), set()
            window = _window(todo[0]["spec"], affinity)
            for i, run in enumerate(todo):
                spec, following = run["spec"], todo[i + 1]["spec"] if i + 1 < len(todo) else None
                opened = []
                place = {"round": {**chunk, "position": runs.index(run) + 1, "runs": len(runs)}}
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
        finally:
            os.close(fd)
    out = {**chunk, "finished": now(),
           "runs": [{"run_id": r["spec"]["run_id"], "outcome": outcome[r["spec"]["run_id"]],
                     "record": str(record_of[r["spec"]["run_id"]])} for r in runs]}
    ledger = Path(ledger)
    ledger.parent.mkdir(parents=True, exist_ok=True)
    tmp = ledger.with_name(ledger.name + ".tmp")
    tmp.write_text(json.dumps(out, indent=1))
    os.replace(tmp, ledger)
    return out
