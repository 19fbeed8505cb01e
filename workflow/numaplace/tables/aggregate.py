"""Run records → tidy tables: runs, summary, best_worst, numa_pages, numastat (CSV).

Reads every record of a study on disk, set-aside attempts (runs/<id>/attempts/<n>/)
included, and works for partial studies: missing, failed or single runs.

Conventions (also in the report's captions):
- Time is NPB's own "Time in seconds". Statistics per group (bench, class, variant,
  threads, placement) are over the group's *current* ok records; every record that is
  not ok counts in n_failed, set-aside attempts included. A set-aside ok record (the
  user retried it on purpose) is counted in n_records only.
- std is the sample standard deviation (ddof=1; empty for n < 2); cv = std / mean.
- Best/worst per (bench, class, variant, threads): lowest/highest median time (ties:
  higher/lower median Mop/s, then label). improvement_pct = 100·(worst − best)/worst,
  the time saved by moving from the worst placement to the best; speedup = worst/best;
  both from the median times where both are ≥ 1 s, else from the median Mop/s where
  there is one (NPB derives it from its full-precision timer, while it prints the time
  to 0.01 s): compared_by says which, and the answer prints that measure beside the
  cost; below_resolution when the two differ by less than two printed units.
- "Beyond run-to-run noise" (differs): yes when the best and worst min–max ranges do
  not overlap, no when they do, unknown when either has fewer than 2 ok runs. With
  ≥ 3 runs on both sides mwu_p also gives the exact two-sided Mann-Whitney U
  (permutation) p-value; note that with 3 vs 3 runs p ≥ 0.1 whatever the data, and
  non-overlapping ranges of 5 vs 5 runs give p = 0.008.
- Fidelity is judged here, from each record's captures, with the study's thresholds
  (fidelity.judge): records hold no verdict. rests_on_drift: a run of the best or worst
  group was judged drift.
- numa_maps pages are the process's data pages at the footprint fidelity judges (the
  steady one for NPB, the peak for the memory benchmarks or when no steady state was
  seen), as numa_maps counts them (pages of kernelpagesize_kB
  each), from the capture summary (older records: the numa_maps file next to the
  record); bytes come from the record. numastat deltas are system-wide counters
  (every process on the machine), kept apart and labelled so.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pandas as pd

from numaplace.run import numa_maps
from numaplace.run.capture import NUMASTAT_COUNTERS
from numaplace.judge.fidelity import footprint_basis, judge, thresholds_of
from numaplace.plan.placement import label_of, memory_label_of
from numaplace.record.store import NOT_FAILED, Record, iter_records
from numaplace.core.stats import ALPHA, improvement, mann_whitney_p, repetitions_needed, summary_stats
from numaplace.kinds import KINDS, groups, table_captions
from numaplace.kinds.program import define_programs, read_programs, write_programs
from numaplace.tables.explain import explain_table
from numaplace.machine.system import REPORTED

GROUP_KEYS = ["bench", "class", "variant", "threads", "placement_id"]
CASE_KEYS = ["bench", "class", "variant", "threads"]
# a run whose CPUs gave more than this share of their time to other processes is flagged
GIB = 2 ** 30

PLACEMENT_COLUMNS = ["placement", "cpus", "layout", "memory", "binding", "launcher"]


# -- reading -----------------------------------------------------------------------

def footprint_pages(view, rundir, which, same_as_peak):
    """Per-node data pages (numa_maps' own page counts) of the sample the tables use: from
    the capture summary (records since data_pages was recorded), else from the sample's
    numa_maps file (FileNotFoundError naming it when it is gone). The sampler writes no
    numa_maps.steady.txt when the steady sample is the peak one: then the peak file is
    that sample."""
    if view.get("data_pages") is not None:
        return {int(n): int(k) for n, k in view["data_pages"].items()}
    if rundir is None:
        return None
    names = [which] + (["peak"] if which == "steady" and same_as_peak else [])
    for name in names:
        try:
            text = (Path(rundir) / f"numa_maps.{name}.txt").read_text()
        except OSError:
            continue
        return numa_maps.summarize(numa_maps.parse(text))["data_pages"]
    raise FileNotFoundError(Path(rundir) / f"numa_maps.{names[-1]}.txt")


def _fidelity_reasons(fid):
    if fid.get("reasons"):
        return "; ".join(fid["reasons"])
    parts = []
    for aspect in ("threads", "memory"):
        a = fid.get(aspect) or {}
        if a.get("verdict") == "drift":
            parts.append(f"{aspect}: " + ("; ".join(a.get("reasons", [])) or "drift"))
    return "; ".join(parts) or fid.get("reason") or ""


def record_row(rec, thresholds=None):
    """One row of runs.csv (+ per-node dicts under private keys) from a record, judged
    under these fidelity thresholds."""
    rec = Record.of(rec)
    p = rec.placement
    npb = rec.get("output") or {}
    fid = judge(rec, thresholds) if p else {}
    caps = rec.captures
    # the working-set footprint fidelity judges (steady for NPB: CG's generation
    # temporaries are freed by then; the peak for the memory benchmarks, or where no
    # steady state was seen)
    nm = caps.get("numa_maps") or {}
    which = footprint_basis(rec)
    which = which if nm.get(which) else "peak"
    view = nm.get(which) or {}
    data_bytes = {int(n): int(b) for n, b in (view.get("data_bytes") or {}).items()}
    rundir = Path(rec.path).parent if rec.path else None
    same_as_peak = bool(nm.get("steady") and nm.get("peak") and nm["steady"].get("t") == nm["peak"].get("t"))
    problems = []
    try:
        pages = footprint_pages(view, rundir, which, same_as_peak) if data_bytes else None
    except FileNotFoundError as e:
        pages = None
        problems.append(f"capture file missing: {e.args[0]}: the run's page columns are empty")
    foreign = rec.get("foreign_load") or {}
    topo_nodes = sorted(int(n) for n in (rec.topology.get("nodes") or {}))
    delta = (rec.get("numastat") or {}).get("system_delta") or {}
    adaptive, decision = rec.get("adaptive") or {}, rec.get("decision") or {}
    return {
        "run_id": rec.run_id,
        "attempt": rec.attempt,                   # record.store.attempt_of, set by iter_records
        "current": not rec.is_attempt,
        "study": rec.get("study"),
        "bench": rec.bench, "class": rec.cls, "variant": rec.variant,
        "rep": rec.rep,
        "threads": int(p["threads"]) if p.get("threads") is not None else None,
        "placement_id": p.get("id"),
        "placement": label_of(p) if p else None,
        "cpus": p.get("cpus"), "layout": p.get("layout"),
        "thread_nodes": thread_nodes(p, rec.node_of()) if p else None,
        "memory": memory_label_of(p) if p.get("memory") else None,
        "binding": p.get("binding"), "launcher": p.get("launcher"),
        "status": rec.status, "reason": rec.get("reason"),
        # adaptive repetitions (numaplace.judge.separation): the run's min, max and alpha;
        # a not-needed record's decision: rounds measured before it, best vs runner-up p
        "reps_min": adaptive.get("min"), "reps_max": adaptive.get("max"), "reps_alpha": adaptive.get("alpha"),
        "decision_p": decision.get("p"),
        "npb_time_s": npb.get("time_s"), "mops": npb.get("mops"), "fom": npb.get("fom"),
        "time_resolution_s": npb.get("time_resolution_s"),
        "verification": npb.get("verification"), "npb_threads": npb.get("threads"),
        "wall_s": rec.get("wall_s"), "exit_status": rec.get("exit_status"),
        "fidelity": fid.get("verdict"),
        "fidelity_threads": (fid.get("threads") or {}).get("verdict"),
        "fidelity_memory": (fid.get("memory") or {}).get("verdict"),
        "memory_share_on_allowed": (fid.get("memory") or {}).get("share_on_allowed"),
        "fidelity_reasons": _fidelity_reasons(fid) if fid.get("verdict") == "drift" else "",
        "fidelity_migration": (fid.get("migration") or {}).get("verdict"),
        **{f"sys_{k}": rec.system.get(k) for k in REPORTED},   # machine/system.py
        "foreign_load_share": foreign.get("share"),
        "shared_cpus": bool(foreign.get("share") is not None
                            and foreign["share"] > thresholds_of(thresholds)["foreign_load_max"]),
        "problems": "; ".join(problems),
        "host": rec.get("host"), "started": rec.get("started"),
        "footprint": which if data_bytes else None,
        "data_bytes": sum(data_bytes.values()) if data_bytes else None,
        "data_pages": sum(pages.values()) if pages else None,
        "record": rec.path,
        "_nodes": topo_nodes,
        "_data_bytes": data_bytes,
        "_data_pages": pages,
        "_numastat": delta,
        "_counters": counter_columns(rec, pages or data_bytes),
    }


def thread_nodes(p, node_of):
    """Threads per node, "node:threads,..." (e.g. "2:2,3:2"), from the placement's CPUs
    on the run's machine: one thread per CPU where there are as many, else the threads
    spread over the CPUs' nodes in proportion (the kernel schedules them within)."""
    from numaplace.core.cpulist import parse_cpulist
    try:
        cpus = parse_cpulist(str(p.get("cpus") or ""))
    except ValueError:
        return None
    nodes = [node_of(c) for c in cpus]
    if not cpus or None in nodes or not p.get("threads"):
        return None
    per = {n: nodes.count(n) * int(p["threads"]) / len(cpus) for n in sorted(set(nodes))}
    return ",".join(f"{n}:{k:g}" for n, k in per.items())


# runs.csv's columns of the counters capture (numaplace.run.counters), only in a study
# that has a run with counts: local and remote DRAM accesses as the CPU counted them, their
# remote share, and beside it the share numa_maps predicts (data on nodes without the run's threads)
COUNTER_COLUMNS = ["counted_events", "counted_local", "counted_remote", "counted_remote_share",
                   "predicted_remote_share"]


def counter_columns(rec, data_by_node):
    """A record's COUNTER_COLUMNS where its counters were captured, else None."""
    from numaplace.run.counters import predicted_remote_share
    c = rec.counters
    if not c.get("captured"):
        return None
    nodes = thread_nodes(rec.placement, rec.node_of()) if rec.placement else None
    ran_on = {int(float(k)) for k, _ in (x.split(":") for x in nodes.split(","))} if nodes else set()
    events = c.get("events") or {}
    return {"counted_events": f"{events.get('first')} / {events.get('remote')}",
            "counted_local": c.get("local"), "counted_remote": c.get("remote"),
            "counted_remote_share": c.get("remote_share"),
            "predicted_remote_share": predicted_remote_share(data_by_node, ran_on)}


def load_rows(records, thresholds=None):
    """Every record of a study (set-aside attempts included: iter_records(..., attempts=True))
    as row dicts."""
    rows = [record_row(rec, thresholds) for rec in records]
    # the current record is the latest attempt of its run: number it after the set-aside ones
    last = {}
    for r in rows:
        if r["attempt"] is not None:
            last[r["run_id"]] = max(last.get(r["run_id"], 0), r["attempt"])
    for r in rows:
        if r["attempt"] is None:
            r["attempt"] = last.get(r["run_id"], 0) + 1
    rows.sort(key=lambda r: (r["bench"] or "", r["class"] or "", r["variant"] or "",
                             r["threads"] or 0, r["placement_id"] or "", r["rep"] or 0, r["attempt"]))
    return rows


def read_plan(path):
    """plan.tsv → DataFrame, or None when there is none."""
    if path is None or not Path(path).exists():
        return None
    plan = pd.read_csv(path, sep="\t", dtype={"class": str, "cpus": str, "run_id": str})
    return plan if len(plan) else None


# -- tables ------------------------------------------------------------------------

def runs_table(rows):
    """runs.csv: one row per record, per-node data bytes/pages as node<k> columns."""
    nodes = sorted({n for r in rows for n in r["_nodes"]} |
                   {n for r in rows for n in r["_data_bytes"]} |
                   {n for r in rows for n in (r["_data_pages"] or {})})
    out = []
    counted = any(r.get("_counters") for r in rows)       # else no counters columns at all
    for r in rows:
        row = {k: v for k, v in r.items() if not k.startswith("_")}
        if counted:
            row.update(r["_counters"] or dict.fromkeys(COUNTER_COLUMNS))
        for n in nodes:
            has = bool(r["_data_bytes"])
            row[f"data_bytes_node{n}"] = r["_data_bytes"].get(n, 0) if has else None
            row[f"data_pages_node{n}"] = (r["_data_pages"] or {}).get(n, 0) if r["_data_pages"] is not None else None
        out.append(row)
    df = pd.DataFrame(out)
    if df.empty:
        df = pd.DataFrame(columns=[k for k in _empty_row() if not k.startswith("_")])
    for c in ("threads", "rep", "attempt", "npb_threads", "exit_status", "data_bytes", "data_pages",
              "reps_min", "reps_max", "counted_local", "counted_remote"):
        if c in df:
            df[c] = df[c].astype("Int64")
    for c in df.columns:
        if c.startswith("data_"):
            df[c] = df[c].astype("Int64")
    return df


def _empty_row():
    return record_row({"_path": None})


def summary_table(runs, plan=None):
    """summary.csv: statistics of NPB time per (bench, class, variant, threads, placement)."""
    groups = {}
    for r in runs.to_dict("records"):
        key = tuple(r[k] for k in GROUP_KEYS)
        groups.setdefault(key, {"rows": [], "desc": {c: r[c] for c in PLACEMENT_COLUMNS}})["rows"].append(r)
    planned = {}
    if plan is not None:
        for r in plan.to_dict("records"):
            key = (r["bench"], str(r["class"]), r["variant"], int(r["threads"]), r["placement_id"])
            planned.setdefault(key, set()).add(r["run_id"])
            if key not in groups:
                groups[key] = {"rows": [], "desc": {c: r.get(c) for c in PLACEMENT_COLUMNS}}
    out = []
    for key, g in groups.items():
        rows = g["rows"]
        current = [r for r in rows if r["current"]]
        ok = [r for r in current if r["status"] == "ok" and not _isnan(r["npb_time_s"])]
        failed = [r for r in rows if r["status"] not in NOT_FAILED]
        statuses = {}
        for r in failed:
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        row = dict(zip(GROUP_KEYS, key))
        row.update(g["desc"])
        n_planned = len(planned[key]) if key in planned else None
        have = {r["run_id"] for r in current}
        row.update(
            n_planned=n_planned,
            n_missing=len(planned[key] - have) if key in planned else None,
            n_records=len(rows),
            n=len(ok),
            n_failed=len(failed),
            failed_statuses=" ".join(f"{s}:{k}" for s, k in sorted(statuses.items())),
            n_set_aside=sum(1 for r in rows if not r["current"]),
            n_drift=sum(1 for r in ok if r["fidelity"] == "drift"),
            **summary_stats([r["npb_time_s"] for r in ok]),
            mops_median=float(np.median([r["mops"] for r in ok if not _isnan(r["mops"])]))
            if any(not _isnan(r["mops"]) for r in ok) else np.nan,
            # a program's figure of merit (numaplace.kinds.program), beside its time
            fom_median=float(np.median([r["fom"] for r in ok if not _isnan(r.get("fom"))]))
            if any(not _isnan(r.get("fom")) for r in ok) else np.nan,
            # the coarsest printed time of its runs, where they say (else NPB's 0.01 s)
            time_resolution_s=max((r["time_resolution_s"] for r in ok if not _isnan(r.get("time_resolution_s"))),
                                  default=np.nan),
        )
        out.append(row)
    cols = GROUP_KEYS + PLACEMENT_COLUMNS + [
        "n_planned", "n_missing", "n_records", "n", "n_failed", "failed_statuses", "n_set_aside",
        "n_drift", "time_min_s", "time_median_s", "time_mean_s", "time_max_s", "time_std_s",
        "time_cv", "time_median_lo_s", "time_median_hi_s", "time_median_level", "mops_median", "fom_median",
        "time_resolution_s"]
    df = pd.DataFrame(out, columns=cols)
    for c in ("threads", "n_planned", "n_missing", "n_records", "n", "n_failed", "n_set_aside", "n_drift"):
        df[c] = df[c].astype("Int64")
    return df.sort_values(CASE_KEYS + ["time_median_s", "placement"], na_position="last",
                          kind="stable").reset_index(drop=True)


def _isnan(x):
    return x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA


def best_worst_table(summary, runs):
    """best_worst.csv: best and worst placement per (bench, class, variant, threads)."""
    ok_times = {}
    for r in runs.to_dict("records"):
        if r["current"] and r["status"] == "ok" and not _isnan(r["npb_time_s"]):
            ok_times.setdefault(tuple(r[k] for k in GROUP_KEYS), []).append(float(r["npb_time_s"]))
    out = []
    stops = case_stops(runs)
    measured = summary[summary["n"] > 0]
    for case, g in measured.groupby(CASE_KEYS, sort=True):
        g = g.assign(_mops=g["mops_median"].fillna(-np.inf))
        ranked = g.sort_values(["time_median_s", "_mops", "placement"], ascending=[True, False, True])
        best = ranked.iloc[0]
        worst = g.sort_values(["time_median_s", "_mops", "placement"], ascending=[False, True, False]).iloc[0]
        row = dict(zip(CASE_KEYS, case))
        row["n_placements"] = len(g)
        row["n_placements_planned"] = int((summary[CASE_KEYS] == pd.Series(case, index=CASE_KEYS)).all(axis=1).sum())
        for side, s in (("best", best), ("worst", worst)):
            row.update({f"{side}_placement": s["placement"], f"{side}_placement_id": s["placement_id"],
                        f"{side}_n": int(s["n"]), f"{side}_median_s": s["time_median_s"],
                        f"{side}_min_s": s["time_min_s"], f"{side}_max_s": s["time_max_s"],
                        f"{side}_n_drift": int(s["n_drift"]), f"{side}_mops_median": s["mops_median"],
                        f"{side}_fom_median": s.get("fom_median", np.nan)})
        row.update(improvement(best, worst))
        bt = ok_times.get(tuple(best[k] for k in GROUP_KEYS), [])
        wt = ok_times.get(tuple(worst[k] for k in GROUP_KEYS), [])
        if best["placement_id"] == worst["placement_id"]:
            row["ranges_overlap"], row["differs"], row["mwu_p"] = pd.NA, "n/a", np.nan
            row["reps_needed"] = pd.NA
        else:
            overlap = bool(best["time_max_s"] >= worst["time_min_s"])
            row["ranges_overlap"] = overlap
            row["differs"] = "unknown" if min(len(bt), len(wt)) < 2 else ("no" if overlap else "yes")
            row["mwu_p"] = mann_whitney_p(bt, wt) if min(len(bt), len(wt)) >= 3 else np.nan
            row["reps_needed"] = _more_needed(bt, wt, row["differs"] == "yes" or row["mwu_p"] < ALPHA)
        # the runner-up: is the best placement told apart from the next one, or only from the worst?
        second = ranked.iloc[1] if len(ranked) > 2 else None
        st = ok_times.get(tuple(second[k] for k in GROUP_KEYS), []) if second is not None else []
        p_second = mann_whitney_p(bt, st) if min(len(bt), len(st)) >= 3 else np.nan
        row.update(runner_up_placement=None if second is None else second["placement"],
                   runner_up_placement_id=None if second is None else second["placement_id"],
                   runner_up_median_s=np.nan if second is None else second["time_median_s"],
                   runner_up_mwu_p=p_second,
                   runner_up_reps_needed=pd.NA if second is None else _more_needed(bt, st, p_second < ALPHA))
        row["rests_on_drift"] = bool(best["n_drift"] or worst["n_drift"])
        # where the case's rounds stopped, and why; at the maximum, p of the best against
        # the next placement (the runner-up, or with two placements the worst)
        row.update(stops.get(case, _FIXED_UNKNOWN))
        if row["stopped_by"] == "maximum":
            p_next = p_second if second is not None else row["mwu_p"]
            row["stop_p"] = p_next
            row["stop_reason"] += f": Mann-Whitney p {p_next:.2g}" if pd.notna(p_next) else ": too few runs to test"
        out.append(row)
    cols = CASE_KEYS + ["n_placements", "n_placements_planned"] + [
        f"{side}_{c}" for side in ("best", "worst")
        for c in ("placement", "placement_id", "n", "median_s", "min_s", "max_s", "n_drift", "mops_median")] + [
        "improvement_pct", "speedup", "compared_by", "below_resolution", "ranges_overlap", "differs", "mwu_p",
        "reps_needed", "runner_up_placement", "runner_up_placement_id", "runner_up_median_s", "runner_up_mwu_p",
        "runner_up_reps_needed", "rests_on_drift", "stopped_after", "rounds_max", "stopped_by", "stop_reason",
        "stop_p", "best_fom_median", "worst_fom_median"]
    df = pd.DataFrame(out, columns=cols)
    for c in ("threads", "reps_needed", "runner_up_reps_needed", "stopped_after", "rounds_max"):
        df[c] = df[c].astype("Int64")
    return df


_FIXED_UNKNOWN = {"stopped_after": pd.NA, "rounds_max": pd.NA, "stopped_by": "fixed",
                  "stop_reason": "fixed repetitions", "stop_p": np.nan}


def case_stops(runs):
    """{case: stopped_after, rounds_max, stopped_by, stop_reason, stop_p}: how many rounds
    of each case were measured (the highest round of a current record that is not
    not-needed) and why no more: `fixed` repetitions; adaptive repetitions
    (numaplace.judge.separation) stopped early, its best and runner-up `separated` or at
    the `minimum` (one placement, a kind not compared), with the first not-needed record's
    reason; at the `maximum` without separating; `unfinished` while rounds are missing."""
    need = {"rep", "status", "current"}
    if not len(runs) or not need <= set(runs.columns):
        return {}
    out = {}
    current = runs[runs["current"].astype(bool)]
    for case, g in current.groupby(CASE_KEYS, sort=True):
        measured = g[(g["status"] != "not-needed") & g["rep"].notna()]
        after = int(measured["rep"].max()) if len(measured) else 0
        most = g["reps_max"].dropna().max() if "reps_max" in g else np.nan
        skipped = g[g["status"] == "not-needed"].sort_values("rep")
        if pd.isna(most):
            row = {"rounds_max": after, "stopped_by": "fixed", "stop_reason": "fixed repetitions", "stop_p": np.nan}
        elif len(skipped):
            first = skipped.iloc[0]
            p = first.get("decision_p")
            row = {"rounds_max": int(most), "stopped_by": "separated" if pd.notna(p) else "minimum",
                   "stop_reason": str(first["reason"]), "stop_p": p if pd.notna(p) else np.nan}
        elif after >= most:
            row = {"rounds_max": int(most), "stopped_by": "maximum",
                   "stop_reason": f"not separated at the maximum, {int(most)} rounds", "stop_p": np.nan}
        else:
            row = {"rounds_max": int(most), "stopped_by": "unfinished",
                   "stop_reason": f"{after} of at most {int(most)} rounds measured so far", "stop_p": np.nan}
        out[case] = {"stopped_after": after, **row}
    return out


def _more_needed(a, b, told_apart):
    """The repetitions per placement that would tell a from b, when these runs did not and
    more than they have would be needed (else NA: a p-value above 0.05 at the size the
    estimate asks for is chance, not a reason to ask for fewer)."""
    if told_apart:
        return pd.NA
    n = repetitions_needed(a, b)
    return n if n is not None and n > min(len(a), len(b)) else pd.NA


def _case_cols(r):
    return {k: r[k] for k in ("bench", "class", "variant", "threads", "placement_id", "placement")}


def numa_pages_table(rows):
    """numa_pages.csv: per-node data pages at the steady footprint, per run (every record
    with a numa_maps sample) and per group (median over the group's current ok runs)."""
    out = []
    by_group = {}
    for r in rows:
        if not r["_data_bytes"]:
            continue
        nodes = sorted(set(r["_nodes"]) | set(r["_data_bytes"]))
        total = sum(r["_data_bytes"].values())
        for n in nodes:
            b = r["_data_bytes"].get(n, 0)
            pages = (r["_data_pages"] or {}).get(n, 0) if r["_data_pages"] is not None else None
            out.append({"level": "run", "run_id": r["run_id"], "attempt": r["attempt"],
                        "status": r["status"], **_case_cols(r), "n_runs": 1, "node": n,
                        "pages": pages, "bytes": b, "gib": b / GIB, "share": b / total if total else np.nan})
        if r["current"] and r["status"] == "ok":
            by_group.setdefault(tuple(r[k] for k in GROUP_KEYS), []).append(r)
    for key, rs in by_group.items():
        nodes = sorted({n for r in rs for n in set(r["_nodes"]) | set(r["_data_bytes"])})
        med_bytes = {n: float(np.median([r["_data_bytes"].get(n, 0) for r in rs])) for n in nodes}
        with_pages = [r for r in rs if r["_data_pages"] is not None]
        total = sum(med_bytes.values())
        for n in nodes:
            pages = float(np.median([r["_data_pages"].get(n, 0) for r in with_pages])) if with_pages else None
            out.append({"level": "group", "run_id": None, "attempt": None, "status": "ok",
                        **_case_cols(rs[0]), "n_runs": len(rs), "node": n, "pages": pages,
                        "bytes": med_bytes[n], "gib": med_bytes[n] / GIB,
                        "share": med_bytes[n] / total if total else np.nan})
    cols = ["level", "run_id", "attempt", "status", "bench", "class", "variant", "threads",
            "placement_id", "placement", "n_runs", "node", "pages", "bytes", "gib", "share"]
    df = pd.DataFrame(out, columns=cols)
    for c in ("attempt", "threads", "n_runs", "node"):
        df[c] = df[c].astype("Int64")
    df["pages"] = df["pages"].astype("Float64")
    return df


def numastat_table(rows):
    """numastat.csv: system-wide numastat counter deltas (pages) per node, per run and
    per group (median over current ok runs). System-wide: every process counts."""
    out = []
    by_group = {}
    for r in rows:
        d = r["_numastat"]
        if not d:
            continue
        nodes = sorted({int(n) for c in d.values() for n in c})
        for n in nodes:
            out.append({"scope": "system-wide", "level": "run", "run_id": r["run_id"],
                        "attempt": r["attempt"], "status": r["status"], **_case_cols(r),
                        "n_runs": 1, "node": n,
                        **{c: (d.get(c) or {}).get(str(n)) for c in NUMASTAT_COUNTERS}})
        if r["current"] and r["status"] == "ok":
            by_group.setdefault(tuple(r[k] for k in GROUP_KEYS), []).append(r)
    for key, rs in by_group.items():
        nodes = sorted({int(n) for r in rs for c in r["_numastat"].values() for n in c})
        for n in nodes:
            row = {"scope": "system-wide", "level": "group", "run_id": None, "attempt": None,
                   "status": "ok", **_case_cols(rs[0]), "n_runs": len(rs), "node": n}
            for c in NUMASTAT_COUNTERS:
                vals = [(r["_numastat"].get(c) or {}).get(str(n)) for r in rs]
                vals = [v for v in vals if v is not None]
                row[c] = float(np.median(vals)) if vals else None
            out.append(row)
    cols = ["scope", "level", "run_id", "attempt", "status", "bench", "class", "variant", "threads",
            "placement_id", "placement", "n_runs", "node", *NUMASTAT_COUNTERS]
    df = pd.DataFrame(out, columns=cols)
    for c in ("attempt", "threads", "n_runs", "node"):
        df[c] = df[c].astype("Int64")
    return df


# -- all together ------------------------------------------------------------------

def build_tables(results_dir, plan_path=None, thresholds=None):
    """{name: DataFrame} for every table of the registry (numaplace.kinds.table_captions):
    the common ones from every record, fidelity judged under `thresholds`, then each
    kind's own from its records. Every record is read once."""
    records = list(iter_records(results_dir, attempts=True))
    define_programs(records)            # a program's runs carry its definition
    rows = load_rows(records, thresholds)
    runs = runs_table(rows)
    # summary and best/worst are about the kinds compared per placement (NPB): a memory
    # run is never shown there as a missing NPB run; its kind makes its own tables
    compared = [k for k, v in KINDS.items() if v.compared]
    plan = read_plan(plan_path)
    summary = summary_table(runs[runs["bench"].isin(compared)] if len(runs) else runs,
                            plan[plan["bench"].isin(compared)] if plan is not None and len(plan) else plan)
    tables = {"runs": runs, "summary": summary, "best_worst": best_worst_table(summary, runs),
              "numa_pages": numa_pages_table(rows), "numastat": numastat_table(rows)}
    for owner, names in groups("make_tables"):
        tables.update(owner.make_tables([r for r in records if r.get("bench") in names], thresholds_of(thresholds)))
    # the NPB placements explained by the memory matrices measured beside them
    tables["explain"] = explain_table(summary, runs, tables["numa_pages"], tables.get("memory_matrix"))
    return {name: tables[name] for name in table_captions()}


def write_tables(results_dir, out_dir, plan_path=None, thresholds=None):
    """Write tables/<name>.csv for every table; return {name: path}."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, df in build_tables(results_dir, plan_path, thresholds).items():
        paths[name] = out_dir / f"{name}.csv"
        df.to_csv(paths[name], index=False, quoting=csv.QUOTE_MINIMAL)
    write_programs(out_dir)             # the programs' definitions, for the stages after
    return paths


def read_tables(tables_dir):
    """The CSV tables back as DataFrames (class and cpus kept as text)."""
    read_programs(tables_dir)
    text = {"class": str, "cpus": str, "placement_id": str, "run_id": str}
    # only empty cells are missing: "n/a" (differs) and "None" are values
    return {name: pd.read_csv(Path(tables_dir) / f"{name}.csv", dtype=text, keep_default_na=False,
                              na_values=[""]) for name in table_captions()}
