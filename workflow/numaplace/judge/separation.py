"""Adaptive repetitions: is a run of round r still needed, or are its case's best and
runner-up placements already told apart by the rounds before?

A case is what the report compares (numaplace.tables.aggregate.best_worst_table): one
kind, class, variant and thread count, every placement of it. Its placements are ranked
by the median of the value the tables compare (NPB's time, lower is better; a kind that
prints no time: its metric, in the direction of Kind.higher_is_better) over their ok
records of the earlier rounds; the best and the runner-up are separated when the
two-sided Mann-Whitney p of their values (numaplace.core.stats, as the report computes
it) is below alpha split over the looks (Bonferroni: a case is looked at before each of
the rounds min+1..max, so each look tests at alpha / (max - min) and the chance of
stopping on chance alone stays below alpha), with every placement of the case at min ok
runs or more (a placement short of runs, ranked by a noisy median, could be the best).
The decision reads only
records of rounds before r, which every chunk of round r sees alike (the measure jobs
wait for the earlier rounds' ledgers: numaplace.plan.rounds.waits_for)."""
from __future__ import annotations

from typing import NamedTuple

from numaplace.core.text import counted
from numaplace.kinds.program import from_spec
from numaplace.record.store import Record

NOT_NEEDED = "not-needed"      # the status of a run its case no longer needed


class Decision(NamedTuple):
    stop: bool                 # the run is not needed
    reason: str                # one sentence, kept in a not-needed record
    p: float | None = None     # best vs runner-up, when they were compared
    rounds: int = 0            # rounds of the case measured before this one


def case_of(rec):
    """(kind, class, variant, threads) of a record or a run's params."""
    return (rec.get("bench"), rec.get("class"), rec.get("variant"), (rec.get("placement") or {}).get("threads"))


def compared_value(rec):
    """(value, higher is better) the case's placements are ranked by: NPB's time, as the
    tables compare it, else the kind's metric; value None when the output has neither."""
    out = rec.get("output") or {}
    if out.get("time_s") is not None:
        return float(out["time_s"]), False
    k = from_spec(rec)
    value = out.get(k.metric)
    return (float(value) if isinstance(value, (int, float)) else None), k.higher_is_better


def decide(records, spec, least, alpha, most=None):
    """Is the run of these params (spec: its bench, class, variant, rep, placement) still
    needed? records: the study's current records (any case, round and status; only its
    case's of earlier rounds count); least, alpha, most: its repetitions' min, alpha and
    max (None: one look, alpha itself). A round
    within min is always needed; a kind whose runs are not compared, or a case of one
    placement, needs no more than min; else the run is not needed once the best and the
    runner-up are separated."""
    rnd, case = spec["rep"], case_of(spec)
    if rnd <= least:
        return Decision(False, f"round {rnd} is within the minimum of {least}")
    earlier = [Record.of(r) for r in records if case_of(r) == case and isinstance(r.get("rep"), int)
               and r["rep"] < rnd and r.get("status") != NOT_NEEDED]
    rounds = max((r["rep"] for r in earlier), default=0)
    k = from_spec(spec)
    if not k.compared:
        return Decision(True, f"{spec['bench']} runs are not compared between placements: "
                        f"{counted(least, 'round')}, the minimum", rounds=least)
    placements = {r.placement.get("id") for r in earlier} | {spec["placement"].get("id")}
    if len(placements) == 1:
        return Decision(True, f"one placement in its case, nothing to separate: {counted(least, 'round')}, the minimum",
                        rounds=least)
    values, labels, higher = {}, {}, k.higher_is_better
    for r in earlier:
        if r.status != "ok":
            continue
        value, higher = compared_value(r)
        if value is not None:
            values.setdefault(r.placement.get("id"), []).append(value)
            labels[r.placement.get("id")] = _label(r.placement)
    if len(values) < 2:
        return Decision(False, f"fewer than two placements with ok runs after {counted(rounds, 'round')}", rounds=rounds)
    import numpy as np
    sign = -1 if higher else 1
    ranked = sorted(values, key=lambda pid: (sign * float(np.median(values[pid])), pid))
    best, second = ranked[0], ranked[1]
    pair = f"best {labels[best]} and runner-up {labels[second]}"
    short = sorted((len(values.get(pid, [])), pid) for pid in placements)[0]
    if short[0] < least:
        who = labels.get(short[1], short[1])
        return Decision(False, f"{pair}: {who} has {short[0]} ok runs after {counted(rounds, 'round')}, "
                        f"fewer than the minimum of {least}", rounds=rounds)
    from numaplace.core.stats import mann_whitney_p
    p = mann_whitney_p(values[best], values[second])
    looks = max(1, (most or 0) - least)
    level = alpha / looks
    bar = f"{level:.2g}" + (f" ({alpha:g} over {looks} looks)" if looks > 1 else "")
    if p < level:
        return Decision(True, f"{pair} separated after {counted(rounds, 'round')}: Mann-Whitney p {p:.2g} < {bar}",
                        p, rounds)
    return Decision(False, f"{pair} not separated after {counted(rounds, 'round')}: Mann-Whitney p {p:.2g} >= {bar}",
                    p, rounds)


def _label(placement):
    from numaplace.plan.placement import label_of
    try:
        return label_of(placement)
    except (KeyError, TypeError, ValueError):
        return placement.get("shape") or placement.get("id")
