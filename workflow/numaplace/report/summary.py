"""summary.md: the answer, then the key tables, failures, drift, each kind's own
section and the figures' links; answer.txt beside it (numaplace.report.answer). The
report rules reach it through `numaplace summary` (numaplace.cli); report.html is made
from both by numaplace.report.html."""
from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd

from numaplace.kinds import KINDS, groups, table_captions
from numaplace.judge.fidelity import thresholds_of
from numaplace.tables import aggregate
from numaplace.figures import plots
from numaplace.report.machine import MACHINE_FILE, facts_line, machine_lines, node_matrices
from numaplace.core.text import counted, percent_text, seconds_text

LIST_MAX = 200          # rows listed per section of summary.md (the CSVs hold them all)


# -- markdown helpers --------------------------------------------------------------

def _cell(v):
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    try:
        if pd.isna(v):
            return ""
    except (TypeError, ValueError):
        pass
    return str(v).replace("|", "\\|").replace("\n", " ")


def md_table(df, columns):
    """columns: [(header, column or function of the row)] → a Markdown table."""
    head = "| " + " | ".join(h for h, _ in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    lines = [head, rule]
    for _, r in df.iterrows():
        cells = [_cell(c(r) if callable(c) else r[c]) for _, c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)






def _short(text, width=200):
    """A reason on one line, cut at width (the record keeps it whole)."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return ""
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _truthy(v):
    return v is True or str(v) == "True"


def _limited(df, what):
    if len(df) <= LIST_MAX:
        return df, ""
    return df.head(LIST_MAX), f"\n\n… and {len(df) - LIST_MAX} more {what} (see the CSV tables).\n"


# -- the answer: first screen of summary.md and of the HTML report --------------------

def _cost(r):
    if r.get("best_placement_id") == r.get("worst_placement_id"):
        return "one placement: nothing to compare"
    if _truthy(r["below_resolution"]):
        return "below resolution"
    return percent_text(r["improvement_pct"])


def answer_rows(best_worst, summary=None):
    """One line per (kernel, class, variant, threads): best and worst placement, the cost
    of the wrong choice, whether it is beyond run-to-run noise, and drift flags. Best and
    worst on the same CPUs with the same memory are marked as a binding difference."""
    from numaplace.report.answer import same_cpus_and_memory
    desc = {} if summary is None else {r["placement_id"]: r for r in summary.to_dict("records")}
    rows = []
    for _, r in best_worst.iterrows():
        if r["best_placement_id"] == r["worst_placement_id"]:
            continue                              # one placement: no choice to answer
        noise = {"yes": "beyond noise", "no": "within noise", "unknown": "too few runs to tell"}.get(
            str(r["differs"]), str(r["differs"]))
        rows.append({"case": f"{str(r['bench']).upper()} class {r['class']} · {r['variant']} · "
                             f"{counted(r['threads'], 'thread')}",
                     "best": r["best_placement"], "worst": r["worst_placement"],
                     "cost": _cost(r) + (" (same CPUs and memory: binding only, not a placement effect)"
                                         if same_cpus_and_memory(r, desc) else ""),
                     "noise": noise, "drift": "rests on drifted runs" if _truthy(r["rests_on_drift"]) else ""})
    return rows


def answer_markdown(best_worst, manifest, lines=(), npb=True, summary=None):
    out = ["## The answer", ""] + [f"- {line}" for line in lines] + ([""] if lines else [])
    if not npb:
        return out
    rows = answer_rows(best_worst, summary)
    if not rows:
        return out + ["No comparison yet: no kernel/class/variant/thread count has two placements with an ok run.", ""]
    out += ["Per kernel, class, variant and thread count: the best and the worst placement by median "
            "time, and what the wrong choice costs (time saved by the best, relative to the worst; "
            "from NPB's Mop/s, which keeps the timer's full precision).", ""]
    out += [md_table(pd.DataFrame(rows), [("case", "case"), ("best placement", "best"),
                                          ("worst placement", "worst"), ("cost of the wrong choice", "cost"),
                                          ("", "noise"), ("flags", "drift")]), ""]
    if manifest is not None and len(manifest):
        for _, r in manifest[manifest["kind"] == "best_worst"].iterrows():
            img = r.get("png") if isinstance(r.get("png"), str) else r.get("svg")
            out += [f"![{r['title']}](figures/{img})", ""]
    return out



# -- the machine as the kernel saw it (record field `system`, numaplace.machine.system) ----------
SYSTEM_LABELS = {"numa_balancing": "automatic NUMA balancing (start)",
                 "numa_balancing_at_end": "automatic NUMA balancing (end)",
                 "thp_enabled": "transparent huge pages", "thp_defrag": "THP defrag",
                 "zone_reclaim_mode": "zone_reclaim_mode", "cpufreq_governor": "cpufreq governor",
                 "smt_active": "SMT active", "kernel_cmdline": "kernel command line"}


def system_markdown(runs):
    """One line per setting: its value in every run, or the values and the runs that
    differ from the most common one (such a study compares unlike runs)."""
    out = ["## The machine as the kernel saw it", ""]
    cols = [c for c in (f"sys_{k}" for k in SYSTEM_LABELS) if c in runs]
    if not len(runs) or not cols or runs[cols].isna().all().all():
        return out + ["Not recorded (records older than the `system` field).", ""]
    out += ["Settings that move pages or change times, read from /proc and /sys as each run "
            "started (balancing again as it ended).", ""]
    rows, flagged = [], []
    for key, label in SYSTEM_LABELS.items():
        col = runs[f"sys_{key}"].map(lambda v: "not recorded" if _cell(v) == "" else _cell(v)) \
            if f"sys_{key}" in runs else None
        if col is None:
            continue
        counts = col.value_counts()
        if len(counts) == 1:
            rows.append({"setting": label, "value": _short(counts.index[0], 300), "runs": "none"})
            continue
        common = counts.index[0]
        odd = runs.loc[col != common, "run_id"].tolist()
        rows.append({"setting": label, "value": "DIFFERS: " + "; ".join(
            f"{_short(v, 120)} ({counted(n, 'run')})" for v, n in counts.items()),
            "runs": ", ".join(odd[:20]) + (" …" if len(odd) > 20 else "")})
        flagged.append(label)
    out += [md_table(pd.DataFrame(rows), [("setting", "setting"), ("value", "value"),
                                          ("runs not at the most common value", "runs")]), ""]
    if flagged:
        out += [f"**The runs differ in {', '.join(flagged)}**: their times are not strictly comparable.", ""]
    on = runs["sys_numa_balancing"].map(lambda v: _cell(v) not in ("", "0", "0.0")) \
        if "sys_numa_balancing" in runs else None
    if on is not None and on.any():
        moved = int((runs.get("fidelity_migration") == "drift").sum()) if "fidelity_migration" in runs else 0
        out += [f"Automatic NUMA balancing was on in {int(on.sum())} run(s): the kernel may move "
                f"first-touch and serial-init pages mid-run; {moved} run(s) had pages moved (in the "
                "drift section, `migration`). Set `system: {numa_balancing: off}` to measure placements "
                "as asked.", ""]
    return out


# -- summary.md ----------------------------------------------------------------------

def summary_markdown(tables, manifest, study=None, description=None, tables_link=None, plan=None, answer=(),
                     machine=()):
    """summary.md: the answer first, then the evidence behind it, section by section. A
    study of kinds that are not compared per placement (the memory micro-benchmarks) leads
    with their own sections and has no placement-comparison sections."""
    runs, summary, bw = tables["runs"], tables["summary"], tables["best_worst"]
    compared = [k for k, v in KINDS.items() if v.compared]
    npb = bool(len(runs)) and runs["bench"].isin(compared).any() or \
        (plan is not None and len(plan) and plan["bench"].isin(compared).any())
    current = runs[runs["current"].map(_truthy)] if len(runs) else runs
    name = study or (runs["study"].dropna().iloc[0] if len(runs) and runs["study"].notna().any() else "study")
    out = [f"# Placement study `{name}`: summary", ""]
    if description:
        out += [description, ""]
    out += _facts_markdown(runs, current, summary, npb)
    if machine:                       # the machine first, then the answer (as MLC prints it)
        out += ["## The machine", "", f"Ran on: {machine[0]}", ""] + (["```", *machine[1:], "```", ""] if machine[1:] else [])
    out += answer_markdown(bw, manifest, answer, npb, summary)
    if not npb:
        out += kinds_markdown(tables)
    out += _status_markdown(runs)
    out += system_markdown(current)
    if npb:
        out += _best_worst_markdown(bw)
        out += explain_markdown(tables.get("explain"))
    out += _failed_markdown(runs)
    out += _drift_markdown(runs)
    out += counters_markdown(runs)
    out += _flagged_runs(runs)
    out += _unrecorded_markdown(plan, current)
    if npb:
        out += _per_placement_markdown(summary)
        out += kinds_markdown(tables)
    out += _figures_markdown(manifest)
    if tables_link:
        out += ["## Tables", "", "All numbers, as CSV: " + ", ".join(
            f"[{n}.csv]({tables_link}/{n}.csv)" for n in table_captions()) + ".", ""]
    return "\n".join(out)


def _facts_markdown(runs, current, summary, npb=True):
    planned = int(summary["n_planned"].fillna(0).sum()) if "n_planned" in summary else 0
    missing = int(summary["n_missing"].fillna(0).sum()) if "n_missing" in summary else 0
    facts = [f"{len(current)} run records", f"{len(runs) - len(current)} set-aside attempts"]
    if planned:
        facts.append(f"{planned} planned runs, {missing} without a record yet")
    return ["Built from " + ", ".join(facts) + "." + (" Times are NPB's own \"Time in seconds\"; "
            "statistics are over the current ok records of each placement." if npb else ""), ""]


def _status_markdown(runs):
    out = ["## Runs by status", ""]
    if not len(runs):
        return out + ["No run records yet.", ""]
    counts = runs.assign(kind=runs["current"].map(lambda c: "current" if _truthy(c) else "set aside"))
    counts = counts.pivot_table(index="status", columns="kind", values="run_id", aggfunc="count",
                                fill_value=0).reset_index()
    cols = [("status", "status")] + [(c, c) for c in ("current", "set aside") if c in counts]
    return out + [md_table(counts, cols), ""]


def _one(r):
    """A case of one placement: its best is no better than anything."""
    return r["best_placement_id"] == r["worst_placement_id"]


def _best_worst_markdown(bw):
    out = ["## Best and worst placement", "",
           "Per (benchmark, class, variant, threads), by median time. *Improvement* is the time "
           "saved by moving from the worst placement to the best, relative to the worst. "
           "*Beyond noise*: yes when the min–max ranges of the two placements do not overlap, "
           "unknown when either has fewer than 2 ok runs; *p* is the exact two-sided "
           "Mann-Whitney U p-value (≥ 3 runs each). *Drift*: a run of either placement did "
           "not keep its threads or pages where asked.", ""]
    if not len(bw):
        return out + ["No placement has an ok run yet.", ""]
    from numaplace.report.answer import rounds_words
    # adaptive repetitions: where each case stopped and why (a study of fixed ones has no column)
    adaptive = "stopped_by" in bw and (bw["stopped_by"].fillna("fixed") != "fixed").any()
    rounds = [("rounds", lambda r: rounds_words(r) or f"{r['stopped_after']} (fixed)")] if adaptive else []
    if adaptive:
        out[-2] += (" *Rounds*: adaptive repetitions, where each case stopped and why "
                    "(best_worst.csv: stopped_after, stop_reason).")
    return out + [md_table(bw, [
        ("bench", lambda r: str(r["bench"]).upper()), ("class", "class"), ("variant", "variant"),
        ("threads", "threads"), ("best placement", "best_placement"),
        ("median (s)", lambda r: seconds_text(r["best_median_s"])), ("n", "best_n"),
        ("worst placement", lambda r: "" if _one(r) else r["worst_placement"]),
        ("median (s)", lambda r: "" if _one(r) else seconds_text(r["worst_median_s"])),
        ("n", lambda r: "" if _one(r) else r["worst_n"]), ("improvement", _cost),
        ("beyond noise", lambda r: "" if _one(r) else r["differs"]),
        ("p", lambda r: "" if pd.isna(r["mwu_p"]) else f"{float(r['mwu_p']):.3g}"),
        ("drift", lambda r: "yes" if _truthy(r["rests_on_drift"]) else "")] + rounds), ""]


def explain_markdown(ex):
    """Why: each case's placements ranked by the memory model and by measured time."""
    out = ["## Why: placements explained by the memory matrices", "",
           "Each placement's memory cost predicted from this study's node × node matrices (memlat "
           "latency for CG, membw bandwidth for MG), weighted by where its runs' pages were and where "
           "its threads ran; the slowest thread's cost counts (a barrier ends each step). Spearman: rank "
           "correlation of predicted cost and measured median. *Not explained*: more than 10 % off the "
           "least-squares line and the line outside the runs' min–max (the model in explain.csv's "
           "caption and numaplace/tables/explain.py).", ""]
    if ex is None or not len(ex):
        return out + ["No NPB placement has an ok run yet.", ""]
    cases = ex.drop_duplicates(["bench", "class", "variant", "threads"])
    if cases["case_verdict"].nunique() == 1:             # e.g. no matrices: said once, not per case
        return out + [f"Every case ({len(cases)}): {cases['case_verdict'].iloc[0]}.", ""]
    out += [md_table(cases, [("bench", lambda r: str(r["bench"]).upper()), ("class", "class"),
                             ("variant", "variant"), ("threads", "threads"), ("verdict", "case_verdict")]), ""]
    missed = ex[ex["explained"] == "no"]
    if len(missed):
        m, more = _limited(missed, "placements")
        out += ["Placements the model does not explain:", "", md_table(m, [
            ("bench", lambda r: str(r["bench"]).upper()), ("class", "class"), ("threads", "threads"),
            ("placement", "placement"), ("threads per node", "thread_nodes"), ("pages per node", "page_shares"),
            ("measured (s)", lambda r: seconds_text(r["time_median_s"])), ("line (s)", lambda r: seconds_text(r["fitted_s"])),
            ("off", lambda r: percent_text(r["off_pct"])), ("what the records saw", "cause")]) + more, ""]
    return out


def _failed_markdown(runs):
    from numaplace.record.store import NOT_FAILED
    bad = runs[~runs["status"].isin(NOT_FAILED)] if len(runs) else runs
    out = ["## Failed and unverified runs", ""]
    if not len(bad):
        skipped = int((runs["status"] == "not-needed").sum()) if len(runs) else 0
        return out + ["None: every record is ok." if not skipped else
                      f"None: every record is ok, or not needed ({skipped}: adaptive repetitions stopped "
                      "their case early).", ""]
    bad, more = _limited(bad, "runs")
    return out + [md_table(bad, [("run", "run_id"), ("attempt", "attempt"),
                                 ("record", lambda r: "current" if _truthy(r["current"]) else "set aside"),
                                 ("placement", "placement"), ("status", "status"),
                                 ("reason", lambda r: _short(r["reason"]))]) + more, ""]


def _drift_markdown(runs):
    drift = runs[runs["fidelity"] == "drift"] if len(runs) else runs
    out = ["## Placement fidelity drift", "",
           "Runs whose threads or data pages did not stay where the placement asked "
           "(record field `fidelity`); their times are in the statistics but flagged.", ""]
    if not len(drift):
        unknown = int((runs["fidelity"] == "unknown").sum()) if len(runs) else 0
        return out + ["None." + (f" ({unknown} records have fidelity *unknown*: no capture to judge.)"
                                 if unknown else ""), ""]
    drift, more = _limited(drift, "runs")
    return out + [md_table(drift, [("run", "run_id"), ("placement", "placement"), ("status", "status"),
                                   ("threads", "fidelity_threads"), ("memory", "fidelity_memory"),
                                   ("why", lambda r: _short(r["fidelity_reasons"], 300))]) + more, ""]


def counters_markdown(runs):
    """Where the accesses went: per placement, the remote share of DRAM accesses the CPU
    counted (capture counters, numaplace.run.counters) beside the one numa_maps predicts.
    Nothing at all in a study without counts (the plan said why in one line)."""
    if not len(runs) or "counted_remote_share" not in runs or runs["counted_remote_share"].isna().all():
        return []
    ok = runs[runs["current"].map(_truthy) & (runs["status"] == "ok") & runs["counted_remote_share"].notna()]
    if not len(ok):
        return []
    keys = ["bench", "class", "variant", "threads", "placement_id"]
    rows = []
    for _, g in ok.groupby(keys, sort=True, dropna=False):
        counted = float(g["counted_remote_share"].astype(float).median())
        predicted = g["predicted_remote_share"].astype(float).dropna()
        pred = float(predicted.median()) if len(predicted) else None
        rows.append({**{k: g[k].iloc[0] for k in keys}, "placement": g["placement"].iloc[0], "n": len(g),
                     "counted": percent_text(100 * counted), "predicted": "" if pred is None else percent_text(100 * pred),
                     "off": "" if pred is None else f"{100 * (counted - pred):+.1f} points"})
    events = ", ".join(sorted(ok["counted_events"].dropna().astype(str).unique()))
    out = ["## Where the accesses went: counted against predicted", "",
           f"Remote share of the DRAM accesses the CPU counted (perf stat: {events}; `:u`: user space "
           "only), median over each placement's current ok runs, beside the remote share numa_maps "
           "predicts (the run's data pages on nodes where none of its threads ran; for threads on several "
           "nodes a lower bound). Per run: runs.csv, counted_* and predicted_remote_share.", ""]
    table = pd.DataFrame(rows)
    table, more = _limited(table, "placements")
    return out + [md_table(table, [("bench", lambda r: str(r["bench"]).upper()), ("class", "class"),
                                   ("variant", "variant"), ("threads", "threads"), ("placement", "placement"),
                                   ("runs", "n"), ("counted remote", "counted"),
                                   ("predicted remote (numa_maps)", "predicted"),
                                   ("counted − predicted", "off")]) + more, ""]


def _unrecorded_markdown(plan, current):
    if plan is None or not len(plan):
        return []
    have = set(current["run_id"]) if len(current) else set()
    absent = plan[~plan["run_id"].isin(have)]
    out = ["## Planned runs without a record", ""]
    if not len(absent):
        return out + ["None: every planned run has a record.", ""]
    absent, more = _limited(absent, "runs")
    return out + [md_table(absent, [("run", "run_id"), ("placement", "placement")]) + more, ""]


def _per_placement_markdown(summary):
    out = ["## Per placement", ""]
    if not len(summary):
        return out
    s, more = _limited(summary, "placements")
    return out + [md_table(s, [
        ("bench", lambda r: str(r["bench"]).upper()), ("class", "class"), ("variant", "variant"),
        ("threads", "threads"), ("placement", "placement"), ("n", "n"), ("failed", "n_failed"),
        ("min", lambda r: seconds_text(r["time_min_s"])), ("median", lambda r: seconds_text(r["time_median_s"])),
        ("mean", lambda r: seconds_text(r["time_mean_s"])), ("max", lambda r: seconds_text(r["time_max_s"])),
        ("CV", lambda r: percent_text(100 * r["time_cv"]) if pd.notna(r["time_cv"]) else ""),
        ("drift", lambda r: r["n_drift"] or "")]) + more, ""]


def _figures_markdown(manifest):
    out = ["## Figures", ""]
    if manifest is None or not len(manifest):
        return out + ["No figures.", ""]
    for kind in plots.KINDS:
        rows = manifest[manifest["kind"] == kind]
        if not len(rows):
            continue
        out += [f"### {plots.FIGURES[kind]}", ""]
        for _, r in rows.iterrows():
            img = r.get("png") if isinstance(r.get("png"), str) else r.get("svg")
            out += [f"![{r['title']}](figures/{img})", ""]
    return out


def kinds_markdown(tables):
    """Each kind's own section (Kind.summary), once per group of kinds sharing it."""
    return [line for owner, _ in groups("summary") for line in owner.summary(tables, md_table)]


def _flagged_runs(runs):
    """Runs whose CPUs were shared during the run, and files that could not be read."""
    out = ["## Runs that shared their CPUs", "",
           f"Runs whose CPUs spent more than {thresholds_of()['foreign_load_max']:.0%} (fidelity.foreign_load_max) of their time on "
           "other processes while the benchmark ran (record field `foreign_load`).", ""]
    shared = runs[runs["shared_cpus"].map(_truthy)] if len(runs) and "shared_cpus" in runs else runs.iloc[0:0]
    if len(shared):
        shared, more = _limited(shared, "runs")
        out += [md_table(shared, [("run", "run_id"), ("attempt", "attempt"), ("placement", "placement"),
                                  ("foreign share", lambda r: percent_text(100 * float(r["foreign_load_share"])))])
                + more, ""]
    else:
        out += ["None.", ""]
    bad = runs[(runs["status"] == "unreadable") | runs["problems"].map(lambda x: isinstance(x, str) and x != "")] \
        if len(runs) and "problems" in runs else runs.iloc[0:0]
    out += ["## Files that could not be read", ""]
    if len(bad):
        bad, more = _limited(bad, "files")
        out += [md_table(bad, [("run", "run_id"), ("record", "record"),
                               ("problem", lambda r: _short(r["problems"] if isinstance(r["problems"], str) and r["problems"]
                                           else r["reason"], 400))]) + more, ""]
    else:
        out += ["None.", ""]
    return out


def _read_json(path):
    import json
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def study_topology(results_dir):
    """The machine the study's runs recorded (their topology), or None before any run."""
    from numaplace.record.store import iter_records
    return next((r.get("topology") for r in iter_records(Path(results_dir)) if r.get("topology")), None)


def study_answer(tables, results_dir):
    """The answer's lines for a study's results folder: its tables, the machine of its
    records, what the plan left out as not applicable, and the estimate beside the real
    machine time; written to answer.txt beside summary.md (the terminal's and the
    landing's text)."""
    import json
    from numaplace.report.answer import answer_lines
    from numaplace.record.store import iter_records
    from numaplace.core.artifacts import NOT_APPLICABLE, PLAN_ESTIMATE
    results_dir = Path(results_dir)
    topology = study_topology(results_dir)
    est = results_dir / PLAN_ESTIMATE
    decisions = (_read_json(est) or {}).get("decisions") if est.exists() else None
    if decisions is None:             # a plan of an older version: its text lines
        na = results_dir / NOT_APPLICABLE
        from numaplace.plan.expand import not_applicable_record
        decisions = {"not_applicable": [not_applicable_record(x) for x in
                                        (na.read_text().splitlines() if na.exists() else [])]}
    estimate_line = None
    runs = tables["runs"]
    if est.exists() and len(runs):
        e = json.loads(est.read_text())
        current = runs[runs["current"].map(_truthy)]
        start = pd.to_datetime(current.get("started"), errors="coerce", utc=True)
        end = start + pd.to_timedelta(pd.to_numeric(current.get("wall_s"), errors="coerce"), unit="s")
        if start.notna().any() and end.notna().any():
            from numaplace.plan.budget import format_duration
            # the builds the plan counted, where they ran before the first run
            built = pd.to_datetime([b.get("started") for b in map(_read_json, e.get("builds", []))],
                                   errors="coerce", utc=True).dropna().tolist()
            first = min([start.min()] + built)
            span = (end.max() - first).total_seconds()
            estimate_line = (f"machine time: estimated {format_duration(e['runs_s'] + e.get('builds_s', 0))} "
                             f"before the study ({counted(len(e.get('builds', [])), 'build')}, {counted(e['runs'], 'run')}), measured "
                             f"{format_duration(span)} from the first {'build' if built and first < start.min() else 'run'}"
                             f"'s start to the last run's end ({len(current)} of {e['runs']} runs recorded)")
    from numaplace.report.answer import answer_data
    placements, firmware = {}, None
    for rec in iter_records(results_dir):               # each placement as its runs recorded it
        p = rec.get("placement") or {}
        placements.setdefault(p.get("id"), p)
        firmware = firmware or (rec.get("system") or {}).get("firmware")   # SLIT, HMAT, tiers
    data = answer_data(tables, topology, decisions, estimate_line, placements, firmware)
    data["machine"] = {"facts": facts_line(topology), "topology": topology,
                       "matrices": {what: {"unit": m["unit"], "size_bytes": m["size"],
                                           "nodes": [int(c) for c in m["grid"].columns],
                                           "readers": [int(r) for r in m["grid"].index],
                                           "values": [[None if pd.isna(v) else float(v) for v in row]
                                                      for row in m["grid"].to_numpy()]}
                                    for what, m in node_matrices(tables.get("memory_matrix")).items()}}
    return data


def write_summary(tables_dir, figures_dir, out, study=None, description=None, plan_path=None):
    tables = aggregate.read_tables(tables_dir)
    mpath = Path(figures_dir) / plots.MANIFEST
    manifest = pd.read_csv(mpath) if mpath.exists() else None
    link = os.path.relpath(tables_dir, Path(out).parent)
    plan = aggregate.read_plan(plan_path)
    from numaplace.core.artifacts import ANSWER_FILE, ANSWER_JSON
    data = study_answer(tables, Path(plan_path).parent) if plan_path else {"lines": []}
    answer = data["lines"]
    machine = machine_lines(study_topology(Path(plan_path).parent) if plan_path else None,
                            tables.get("memory_matrix"))
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    (Path(out).parent / MACHINE_FILE).write_text("".join(line + "\n" for line in machine))
    (Path(out).parent / ANSWER_FILE).write_text("".join(line + "\n" for line in answer))
    import json                      # the same answer for programs (docs/answer.schema.json)
    (Path(out).parent / ANSWER_JSON).write_text(json.dumps({"study": study, **data}, indent=1, default=str) + "\n")
    text = summary_markdown(tables, manifest, study, description, link, plan, answer, machine)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text)
    return out
