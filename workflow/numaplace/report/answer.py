"""The answer in a few lines: what the machine is (measured local vs remote latency and
bandwidth beside its SLIT distances) and, per kernel and class, the best and the worst
placement, what the wrong choice costs with a 95 % confidence interval, and whether that
is beyond noise. One text for the report's first screen, summary.md and the terminal at
the end of the workflow (artifacts.ANSWER_FILE beside summary.md).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from numaplace.kinds import KINDS, groups
from numaplace.core.text import counted
from numaplace.core.stats import ALPHA, compared_by
from numaplace.machine.firmware import disagreements, firmware_ratios
from numaplace.report.machine import node_matrices



def _mean(xs):
    return float(np.mean(xs)) if len(xs) else float("nan")


def machine_line(matrix, topology, runs=None, firmware=None):
    """One line on the machine: nodes, the SLIT's distance classes over local, and the
    measured local and remote values with their ratio; HMAT's ratios and the memory tiers
    where the records have them (firmware: a record's system.firmware); memory runs that
    shared their CPUs with other load are counted in the line they feed."""
    if (firmware or {}).get("tiers") and not (topology or {}).get("tiers"):
        topology = {**(topology or {}), "tiers": firmware["tiers"]}
    node_cpus = (topology or {}).get("nodes", {})
    nodes = len(node_cpus) or None
    memory_only = sorted(int(n) for n, c in node_cpus.items() if not c)
    dist = (topology or {}).get("distances")
    slit = ""
    if dist and len(dist) > 1:
        classes = sorted({dist[i][j] / dist[i][i] for i in range(len(dist)) for j in range(len(dist)) if i != j})
        slit = "SLIT remote/local " + ", ".join(f"{c:.2g}x" for c in classes) + \
            (f" ({len(classes)} distance classes)" if len(classes) > 1 else "")
    head = f"machine: {counted(nodes, 'NUMA node')}" if nodes else "machine"
    if nodes and memory_only:
        head += f" ({nodes - len(memory_only)} with CPUs, {len(memory_only)} memory only)"
    fw_words = firmware_words(firmware)
    if matrix is None or not len(matrix):
        return f"{head}{''.join(', ' + w for w in [slit] + fw_words if w)}; no memory matrix measured " \
               "(add a matrix experiment of memlat and membw to see local vs remote)"
    parts = [head]
    # the numbers of the matrices printed beside the answer (report.machine), one thread a cell
    grids = node_matrices(matrix)
    for what, m in grids.items():
        g, unit, fmt = m["grid"], m["unit"], m["fmt"]
        local = [g.loc[n, n] for n in g.index if n in g.columns and pd.notna(g.loc[n, n])]
        # remote over the interconnect; a memory-only node (CXL, HBM) is another kind of
        # memory, said apart, never averaged into "remote"
        remote = [g.loc[r, c] for r in g.index for c in g.columns
                  if r != c and c not in memory_only and pd.notna(g.loc[r, c])]
        if not local:
            continue
        own = f"node {g.index[0]} to {g.index[0]}" if len(local) == 1 else f"mean of {len(local)} nodes' own cells"
        if remote:
            parts.append(f"{what} local {_mean(local):{fmt}} {unit} (1 thread, {own}), remote {_mean(remote):{fmt}} {unit} "
                         f"(remote/local {_mean(remote) / _mean(local):.2f}x, mean of {len(remote)} cells)")
        else:
            parts.append(f"{what} {_mean(local):{fmt}} {unit} (1 thread, {own}; local only)")
    parts += memory_only_words(grids, memory_only, topology)
    if slit:
        parts.append(slit)
    parts += fw_words
    if runs is not None and len(runs) and "shared_cpus" in runs:
        mem = runs[runs["bench"].isin(set(matrix["bench"])) & runs["current"].astype(bool)]
        shared = int(mem["shared_cpus"].astype(bool).sum())
        if shared:
            parts.append(f"{shared} of these {len(mem)} memory runs shared their CPUs with other load")
    return " · ".join(parts)


def firmware_words(firmware, most=6):
    """The firmware beside the SLIT: HMAT's remote/local read latency and bandwidth per
    initiator and memory node ('HMAT node 0 -> 2: latency 1.9x, bandwidth 0.45x local'),
    and the kernel's memory tiers where there are several."""
    out = []
    pairs = [f"{i} -> {t}: " + ", ".join(f"{w.split('_')[0]} {r[w]:.2g}x" for w in ("latency_ratio", "bandwidth_ratio")
                                          if w in r) + " local"
             for (i, t), r in firmware_ratios(firmware).items()]
    if pairs:
        out.append("HMAT node " + "; ".join(pairs[:most]) + (f"; {len(pairs) - most} more" if len(pairs) > most else ""))
    tiers = (firmware or {}).get("tiers") or []
    if len(tiers) > 1:
        from numaplace.core.cpulist import format_cpulist
        out.append("memory tiers " + "; ".join(
            f"{t['tier']}: node{'s' * (len(t.get('nodes', [])) != 1)} {format_cpulist(t.get('nodes', [])) or '-'}"
            for t in tiers))
    return out


def measured_ratios(grids):
    """{(reader node, memory node): {"latency_ratio", "bandwidth_ratio"}}: each remote cell
    of the matrices printed beside the answer over its reader's local cell (remote/local,
    the ratios machine.firmware.disagreements compares with the firmware's)."""
    out = {}
    for m in grids.values():
        g, key = m["grid"], "bandwidth_ratio" if m["higher_is_better"] else "latency_ratio"
        for r in g.index:
            if r not in g.columns or pd.isna(g.loc[r, r]) or not g.loc[r, r]:
                continue
            for c in g.columns:
                if c != r and pd.notna(g.loc[r, c]):
                    out.setdefault((int(r), int(c)), {})[key] = float(g.loc[r, c] / g.loc[r, r])
    return out


def firmware_lines(matrix, firmware):
    """A line per cell where the firmware (SLIT, HMAT) and the measured matrices disagree
    by more than machine.firmware.TOLERANCE: a wrong SLIT or HMAT misleads the kernel's
    balancing and every tool that places by distance."""
    if not firmware or matrix is None or not len(matrix):
        return []
    return [f"firmware vs measured: {d}" for d in disagreements(firmware, measured_ratios(node_matrices(matrix)))]


def memory_only_words(grids, memory_only, topology):
    """Per memory-only node: its latency and bandwidth over each reader's local cell (of
    the matrices printed beside), and its memory tier where the kernel gave one ('node 2:
    memory only, tier 2: latency 1.9x local from node 0, bandwidth 0.52x')."""
    tiers = {}
    for t in (topology or {}).get("tiers") or []:
        if isinstance(t, dict):
            tiers.update({int(n): t.get("tier") for n in t.get("nodes", [])})
    out = []
    for node in memory_only:
        said = []
        for what, m in grids.items():
            g = m["grid"]
            if node not in g.columns:
                continue
            cells = [(r, g.loc[r, node] / g.loc[r, r]) for r in g.index
                     if r in g.columns and pd.notna(g.loc[r, node]) and pd.notna(g.loc[r, r])]
            if cells:
                readers = ",".join(str(r) for r, _ in cells)
                said.append(f"{what.split()[-1]} {_mean([x for _, x in cells]):.2g}x local from "
                            f"node{'s' * (len(cells) > 1)} {readers}")
        if said:
            tier = f", tier {tiers[node]}" if tiers.get(node) is not None else ""
            out.append(f"node {node}: memory only{tier}: " + ", ".join(said))
    return out


def cost_interval(best, worst, seed=0):
    """95 % percentile-bootstrap interval of the cost of the wrong choice in %, from the
    two placements' Mop/s (higher is better): 100 (1 - median(worst) / median(best))."""
    from scipy.stats import bootstrap
    best, worst = np.asarray(best, float), np.asarray(worst, float)
    if min(len(best), len(worst)) < 2:
        return None
    res = bootstrap((best, worst), lambda b, w, axis=-1: 100 * (1 - np.median(w, axis=axis) / np.median(b, axis=axis)),
                    vectorized=True, paired=False, confidence_level=0.95, n_resamples=2000,
                    method="percentile", random_state=np.random.default_rng(seed))
    lo, hi = res.confidence_interval
    return float(lo), float(hi)


def _group(runs, key, placement_id):
    return runs[(runs["placement_id"] == placement_id) & (runs["bench"] == key["bench"])
                & (runs["class"].astype(str) == str(key["class"])) & (runs["variant"] == key["variant"])
                & (runs["threads"] == key["threads"]) & runs["current"].astype(bool) & (runs["status"] == "ok")]


def _rates(a, b, by="mops"):
    """The rates of two groups of current ok runs, in one unit for both and in the
    measure the cost was computed by (stats.compared_by): Mop/s, or 1 / time."""
    if by == "mops" and a["mops"].notna().all() and b["mops"].notna().all():
        return list(a["mops"]), list(b["mops"])
    return list(1 / a["npb_time_s"].dropna()), list(1 / b["npb_time_s"].dropna())


def _measured(r, side):
    """A side's median as the cost was computed from it: '19.1 s', or for short runs
    '1234 Mop/s, 0.05 s' (the percentage follows from the first number)."""
    if r.get("compared_by") == "mops" and pd.notna(r.get(f"{side}_mops_median")):
        return f"{r[f'{side}_mops_median']:.4g} Mop/s, {r[f'{side}_median_s']:.3g} s"
    return f"{r[f'{side}_median_s']:.4g} s"


def same_cpus_and_memory(r, desc):
    """Best and worst of a best_worst row on the same CPUs with the same memory (desc:
    summary rows by placement id): a binding or launcher difference, not a placement."""
    b, w = desc.get(r["best_placement_id"], {}), desc.get(r["worst_placement_id"], {})
    return bool(b) and bool(w) and (b.get("cpus"), b.get("memory")) == (w.get("cpus"), w.get("memory"))


def rounds_words(r):
    """Where a case of adaptive repetitions stopped and why (best_worst's stopped_after,
    rounds_max, stopped_by, stop_p), in words; "" for fixed repetitions."""
    by = r.get("stopped_by")
    if not isinstance(by, str) or by == "fixed" or pd.isna(r.get("rounds_max")):
        return ""
    after, most, p = int(r["stopped_after"]), int(r["rounds_max"]), r.get("stop_p")
    p_words = f" (p {float(p):.2g})" if pd.notna(p) else ""
    if by == "separated":
        return f"stopped after {after} of at most {most} rounds: best and runner-up separated{p_words}"
    if by == "minimum":
        return f"stopped at the minimum, {after} of at most {most} rounds: {r['stop_reason']}"
    if by == "maximum":
        return f"not separated at the maximum, {most} rounds{p_words}"
    return f"{after} of at most {most} rounds so far"


def _rounds(r):
    words = rounds_words(r)
    return f"; {words}" if words else ""


def _noise(r):
    noise = {"yes": "beyond noise", "no": "within noise", "unknown": "too few runs to tell"}.get(
        str(r["differs"]), str(r["differs"]))
    if pd.notna(r.get("mwu_p")):
        noise += f", Mann-Whitney p={float(r['mwu_p']):.2g}"
    return noise


def answer_cases(best_worst, summary, runs):
    """Per kernel and class: the case (variant, threads) where the wrong placement costs
    most, as data (answer.json) with its line (answer.txt). Best and worst on the same CPUs
    with the same memory differ only in binding or launcher: that is said as such, never as
    a placement effect."""
    out = []
    if best_worst is None or not len(best_worst):
        return out
    bw = best_worst[best_worst["best_placement_id"] != best_worst["worst_placement_id"]]
    desc = {} if summary is None else {r["placement_id"]: r for r in summary.to_dict("records")}
    for (bench, cls), g in bw.groupby(["bench", "class"], sort=True):
        g = g.sort_values("improvement_pct", ascending=False)
        placed = g[[not same_cpus_and_memory(r, desc) for _, r in g.iterrows()]]
        r = (placed if len(placed) else g).iloc[0]
        case = f"{case_name(bench, cls)} ({r['variant']}, {counted(r['threads'], 'thread')})"
        data = {"bench": str(bench), "class": str(cls), "variant": str(r["variant"]), "threads": int(r["threads"]),
                "row": r, "best": desc.get(r["best_placement_id"]), "worst": desc.get(r["worst_placement_id"])}
        if not len(placed):
            data.update(verdict="binding or launcher only", interval=None, line=(
                f"{case}: no placement effect to show: best and worst run on the same CPUs with the same "
                f"memory, {_what_differs(data['best'], data['worst'])} "
                f"({r['best_placement']} / {r['worst_placement']}: {_cost(r, None)}, {_noise(r)}){_rounds(r)}"))
            out.append(data)
            continue
        bg, wg = _group(runs, r, r["best_placement_id"]), _group(runs, r, r["worst_placement_id"])
        bm, wm = _rates(bg, wg, r.get("compared_by", "mops"))
        verdict, ci = case_verdict(r, bg, wg), cost_interval(bm, wm)
        drift = "; rests on runs whose pages or threads drifted" if bool(r["rests_on_drift"]) else ""
        data.update(verdict=verdict, interval=ci, line=(
            f"{case}: {verdict}: best {r['best_placement']} ({_measured(r, 'best')}), worst "
            f"{r['worst_placement']} ({_measured(r, 'worst')}): the wrong choice costs "
            f"{_cost(r, ci)}, {_noise(r)}{_more(r.get('reps_needed'))}{_runner_up(r)}{drift}{_rounds(r)}"
            f"{figure_of_merit_words(bench, r)}{control_words(bench, verdict)}"))
        out.append(data)
    return out


def figure_of_merit_words(bench, r):
    """A program's figure of merit beside the time it is ranked by; where it ranks the
    best and the worst placement the other way, said (numaplace.kinds.program)."""
    k = KINDS.get(str(bench))
    unit = getattr(k, "fom_unit", None)
    b, w = r.get("best_fom_median"), r.get("worst_fom_median")
    if not unit or not (pd.notna(b) and pd.notna(w)):
        return ""
    words = f"; its figure of merit: best {b:.4g} {unit}, worst {w:.4g} {unit}"
    if b != w and (b > w) != bool(k.fom_higher_is_better):
        words += " (it ranks them the other way than the time: check what it measures)"
    return words


def kernel_lines(best_worst, summary, runs):
    """The answer's line per kernel and class (answer_cases)."""
    return [c["line"] for c in answer_cases(best_worst, summary, runs)]


def _shared(g):
    """The runs of a group that shared their CPUs with other load (above fidelity's
    foreign_load_max), and the range of that load's share."""
    if "shared_cpus" not in g or not len(g):
        return 0, ""
    hit = g[g["shared_cpus"].astype(bool)]
    if not len(hit) or "foreign_load_share" not in hit:
        return len(hit), ""
    lo, hi = 100 * hit["foreign_load_share"].min(), 100 * hit["foreign_load_share"].max()
    return len(hit), f"{lo:.0f} %" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} %"


def case_verdict(r, best_runs, worst_runs):
    """What the runs allow, said first: 'no conclusion: ...' when either side has fewer
    than 2 runs that had their CPUs to themselves, else the verdict of the numbers after
    it (beyond noise, within noise). Runs that shared their CPUs are counted unreliable
    whether the case claims an effect or not."""
    nb, nw = len(best_runs), len(worst_runs)
    sb, rb = _shared(best_runs)
    sw, rw = _shared(worst_runs)
    quiet_b, quiet_w = nb - sb, nw - sw
    if sb or sw:
        ranges = ", ".join(x for x in dict.fromkeys((rb, rw)) if x)
        shared = f"{'both' if sb == nb and sw == nw else f'{sb + sw} of {nb + nw}'} shared their CPUs" + \
            (f" ({ranges} of their time taken by other load)" if ranges else "")
    else:
        shared = ""
    if min(quiet_b, quiet_w) < 2:
        runs = f"{nb} run{'s' * (nb != 1)} a side" if nb == nw else f"{nb} and {nw} runs"
        return "no conclusion: " + ", ".join(x for x in (runs, shared) if x)
    head = {"yes": "beyond noise", "no": "within noise: no placement effect told apart",
            "unknown": "no conclusion: too few runs"}.get(str(r["differs"]), str(r["differs"]))
    return head + (f" ({shared}: unreliable)" if shared else "")


def busy_line(runs):
    """How much of the study ran beside other load (first screen), or None: said once for
    the whole study, effect or not."""
    if runs is None or not len(runs) or "shared_cpus" not in runs:
        return None
    cur = runs[runs["current"].astype(bool)]
    n, shared = len(cur), int(cur["shared_cpus"].astype(bool).sum())
    if not shared:
        return None
    _, span = _shared(cur)
    return (f"busy machine: {shared} of {n} runs shared their CPUs with other load"
            + (f" ({span} of their time)" if span else "") + "; their numbers are unreliable and no case "
            "rests a conclusion on them")


def _more(n):
    """How many repetitions would tell two placements apart, when these could not."""
    return f" (about {int(n)} repetitions each would tell)" if pd.notna(n) and n else ""


def _runner_up(r):
    """Is the best placement told apart from the next one, or only from the worst?"""
    if not isinstance(r.get("runner_up_placement"), str):
        return ""
    head = f"; runner-up {r['runner_up_placement']} ({r['runner_up_median_s']:.3g} s)"
    p = r.get("runner_up_mwu_p")
    if pd.notna(p) and p < ALPHA:
        return f"{head}: told apart from the best, Mann-Whitney p={float(p):.2g}"
    why = f"p={float(p):.2g}" if pd.notna(p) else "too few runs"
    n = r.get("runner_up_reps_needed")
    return f"{head}: not told apart from the best ({why}" + (
        f"; about {int(n)} repetitions each would tell)" if pd.notna(n) and n else ")")


def _what_differs(best, worst):
    """'only the launcher differs (numactl best, taskset worst)' for two summary rows on the
    same CPUs and memory: a placement label names neither launcher nor, for a mask, binding."""
    words = {"binding": {"process": "one mask for all threads", "threads": "one CPU per thread"}}
    diffs = [(k, (best or {}).get(k), (worst or {}).get(k)) for k in ("binding", "launcher")
             if (best or {}).get(k) != (worst or {}).get(k)]
    if not diffs:
        return "only the binding or the launcher differs"
    return "only the " + " and the ".join(k for k, _, _ in diffs) + " differ" + ("s" if len(diffs) == 1 else "") + \
        " (" + "; ".join(f"{words.get(k, {}).get(b, b)} best, {words.get(k, {}).get(w, w)} worst"
                         for k, b, w in diffs) + ")"


def _cost(r, ci):
    if bool(r["below_resolution"]):
        return "below the timer's resolution"
    return f"{r['improvement_pct']:.0f} %" + (f" [95 % CI {ci[0]:.0f} to {ci[1]:.0f} %]" if ci else "")


def serial_init_lines(summary, runs):
    """Per kernel and class: what serial initialisation (every page first written by the
    master thread) costs against NPB's parallel first touch on the same placement, where
    both were measured; the placement where it costs most."""
    out = []
    if summary is None or not len(summary) or "variant" not in summary:
        return out
    ok = summary[summary["n"].fillna(0) > 0]
    keys = ["bench", "class", "threads", "placement_id"]
    pairs = ok[ok["variant"] == "default"].merge(ok[ok["variant"] == "serial-init"], on=keys,
                                                   suffixes=("_par", "_ser"))
    if not len(pairs):
        return out
    # time saved by parallel first touch, relative to serial-init: from Mop/s where NPB
    # printed it (its timer's full precision), else from the printed times
    by_mops = pd.Series([compared_by(a, b, c, d) == "mops" for a, b, c, d in zip(
        pairs["time_median_s_par"], pairs["time_median_s_ser"], pairs["mops_median_par"], pairs["mops_median_ser"])],
        index=pairs.index, dtype=bool)
    # the cost, or (negative) the saving, as a share of the slower one's time: 1 - fast/slow,
    # so that "costs 6 %" and "saves 6 %" both follow from the two numbers printed beside them
    par_rate = np.where(by_mops, pairs["mops_median_par"], 1 / pairs["time_median_s_par"])
    ser_rate = np.where(by_mops, pairs["mops_median_ser"], 1 / pairs["time_median_s_ser"])
    pairs = pairs.assign(cost=np.where(ser_rate <= par_rate, 100 * (1 - ser_rate / par_rate),
                                       -100 * (1 - par_rate / ser_rate)))
    pairs = pairs.assign(by_mops=by_mops)[pairs["cost"].notna()]
    from numaplace.core.cpulist import parse_cpulist
    # on one node serial initialisation puts the pages where first touch does: no effect;
    # under a memory policy (interleave, membind) the policy places them, not the first touch
    first_touch = pairs["memory_par"].isna() | (pairs["memory_par"].astype(str) == "local")
    pairs = pairs.assign(spans=[len(parse_cpulist(str(x).split(" on ")[-1])) > 1 and bool(ft)
                                for x, ft in zip(pairs["layout_par"], first_touch)])
    for (bench, cls), g in pairs.groupby(["bench", "class"], sort=True):
        if not g["spans"].any():
            out.append(f"{str(bench).upper()} class {cls}: serial initialisation vs parallel first touch: no effect "
                       "to show: every placement measured with both runs on one NUMA node, or under a memory policy "
                       "that places the pages itself, where both put the pages alike")
            continue
        r = g[g["spans"]].sort_values("cost", ascending=False).iloc[0]
        key = {"bench": bench, "class": cls, "threads": r["threads"]}
        par = _group(runs, {**key, "variant": "default"}, r["placement_id"])
        ser = _group(runs, {**key, "variant": "serial-init"}, r["placement_id"])
        sign = 1 if r["cost"] >= 0 else -1          # "saves": serial-init is the faster one
        fast, slow = _rates(par, ser, "mops" if r["by_mops"] else "time")
        ci = cost_interval(fast, slow) if sign > 0 else cost_interval(slow, fast)
        cost = f"{sign * r['cost']:.0f} %" + (f" [95 % CI {ci[0]:.0f} to {ci[1]:.0f} %]" if ci else "")
        beyond = ("beyond noise" if min(len(par), len(ser)) >= 2 and
                  (r["time_max_s_par"] < r["time_min_s_ser"] or r["time_max_s_ser"] < r["time_min_s_par"])
                  else "within noise" if min(len(par), len(ser)) >= 2 else "too few runs to tell")
        out.append(f"{str(bench).upper()} class {cls}: serial initialisation (every page on the master's node) "
                   f"{'costs' if sign > 0 else 'saves'} {cost} against parallel first touch on "
                   f"{r['placement_par']} ({_pair_words(r)}), {beyond}")
    return out


def _pair_words(r):
    """Serial-init's and parallel first touch's medians in the measure the cost used."""
    if r["by_mops"]:
        return (f"{r['mops_median_ser']:.4g} vs {r['mops_median_par']:.4g} Mop/s, "
                f"{r['time_median_s_ser']:.3g} s vs {r['time_median_s_par']:.3g} s")
    return f"{r['time_median_s_ser']:.4g} s vs {r['time_median_s_par']:.4g} s"


def why_lines(explain):
    """One line on how far the node x node matrices explain the placements (explain.csv):
    the rank correlations, the cases where no difference was expected, and the placements
    the model does not explain, with what the records saw. None without matrices: the
    machine line already says what to add."""
    from numaplace.tables.explain import NO_MATRICES
    if explain is None or not len(explain):
        return []
    cases = explain.drop_duplicates(["bench", "class", "variant", "threads"])
    judged = cases[cases["case_verdict"] != NO_MATRICES]
    if judged.empty:
        return []
    ranked = judged[judged["case_spearman"].notna()]
    flat = judged[judged["case_verdict"].astype(str).str.startswith("no difference expected")]
    parts = []
    if 0 < len(ranked) <= 2:
        parts += [f"{str(r['bench']).upper()}.{r['class']} {counted(r['threads'], 'thread')}: "
                  f"{str(r['case_verdict']).split(';')[0]}" for _, r in ranked.iterrows()]
    elif len(ranked):
        rho = ranked["case_spearman"].astype(float)
        parts.append(f"Spearman {rho.min():+.2f} to {rho.max():+.2f} over {len(ranked)} cases")
    if len(flat):
        parts.append(f"{counted(len(flat), 'case')} where the matrices expect no difference")
    missed = explain[explain["explained"] == "no"]
    if len(missed):
        named = [f"{str(r['bench']).upper()}.{r['class']} {r['placement']} ({r['cause']})" for _, r in missed.iterrows()]
        parts.append("not explained: " + "; ".join(named[:3]) + (f"; {len(named) - 3} more" if len(named) > 3 else ""))
    elif len(ranked):
        parts.append("every placement on its line")
    return ["why (memory matrices): " + "; ".join(parts)] if parts else []


def decision_lines(decisions):
    """What the plan decided for this machine (plan's estimate.json "decisions"): every
    distinct reason something was left out, with how many entries it took, then what was
    sized or sampled; nothing cut, no study-file paths."""
    if not decisions:
        return []
    if isinstance(decisions, (list, tuple)):            # lines, as older callers give them
        from numaplace.plan.expand import not_applicable_record
        decisions = {"not_applicable": [not_applicable_record(x) for x in decisions]}
    out = []
    na = decisions.get("not_applicable") or []
    if na:
        reasons = {}
        for d in na:
            why = d["why"] if d["what"] == "not-applicable" else "an experiment with none of its placements here"
            reasons[why] = reasons.get(why, 0) + 1
        out.append(f"not applicable here ({counted(len(na), 'item')}; not_applicable.txt): " + "; ".join(
            why + (f" (x{n})" if n > 1 else "") for why, n in reasons.items()))
    decided = (decisions.get("sizing") or []) + (decisions.get("budget") or [])
    if decided:
        import re
        out.append("decided for this machine: " + "; ".join(
            re.sub(r"^experiments\[\d+\] \(([^)]*)\)[^:]*: ", r"\1: ", x) for x in decided))
    return out


def case_name(bench, cls):
    """'CG class B', or a study's program by its title (numaplace.kinds: Kind.case_name)."""
    k = KINDS.get(str(bench))
    return k.case_name(cls) if k else f"{str(bench).upper()} class {cls}"


def launch_words(case, placements):
    """'run it as: OMP_NUM_THREADS=2 ... numactl --physcpubind=0,2 --localalloc ./cg.B.x'
    for a case's best placement (its srun and aprun forms are in answer.json), or None."""
    lines = case_launch_lines(case, placements)
    line = (lines or {}).get("numactl", {}).get("line")
    return f"{case_name(case['bench'], case['class'])} ({counted(case['threads'], 'thread')}), to run it best: " \
           f"{line}" if line else None


def control_words(bench, verdict):
    """A control kind's words after its case (EP: it moves no memory): an effect on it is
    the machine's or noise, not memory placement; '' for every other kind."""
    k = KINDS.get(str(bench))
    words = k.control if k else None
    if not words:
        return ""
    if verdict.startswith("beyond noise"):
        return f"; {words}: this machine or its load moves the other kernels' numbers by as much"
    return f"; {words}" + ("; as expected, none told apart" if verdict.startswith("within noise") else "")


def case_launch_lines(case, placements):
    """The best placement of a case written as the commands a user runs it with
    (numaplace.plan.launch_lines), or None where the placement is not known."""
    from numaplace.plan.launch_lines import launch_lines
    best = (placements or {}).get(case["row"]["best_placement_id"])
    if not best or case["verdict"].startswith(("no conclusion", "binding")):
        return None
    k = KINDS.get(case["bench"])
    if k is not None and k.control:             # EP: no best placement to recommend
        return None
    if k is None:
        return launch_lines(best, f"./{case['bench']}.{case['class']}.x")
    return launch_lines(best, k.shown_program(case["class"]), k.command_args(case["class"]))


def answer_lines(tables, topology=None, not_applicable=(), estimate_line=None, placements=None, firmware=None):
    """The whole answer: the machine, each kernel, what was left out, the estimate vs real."""
    return answer_data(tables, topology, not_applicable, estimate_line, placements, firmware)["lines"]


def answer_data(tables, topology=None, not_applicable=(), estimate_line=None, placements=None, firmware=None):
    """The answer as data (answer.json: docs/answer.schema.json) with its lines; firmware:
    a record's system.firmware (SLIT, HMAT, memory tiers), None where not recorded."""
    lines = [machine_line(tables.get("memory_matrix"), topology, tables.get("runs"), firmware)]
    lines += firmware_lines(tables.get("memory_matrix"), firmware)
    busy = busy_line(tables.get("runs"))
    if busy:
        lines.append(busy)
    cases = answer_cases(tables.get("best_worst"), tables.get("summary"), tables.get("runs"))
    ks = []
    for c in cases:
        ks.append(c["line"])
        run_it = launch_words(c, placements)
        if run_it:
            ks.append(run_it)
    npb = tables.get("runs")
    lines += serial_init_lines(tables.get("summary"), tables.get("runs"))
    if ks:
        lines += ks + why_lines(tables.get("explain"))
    elif npb is not None and len(npb) and npb["bench"].isin(compared := [k for k, v in KINDS.items() if v.compared]).any():
        seen = npb[npb["bench"].isin(compared)]
        names = ", ".join(dict.fromkeys(case_name(b, c) for b, c in zip(
            seen["bench"], seen["class"] if "class" in seen else [""] * len(seen))))
        lines.append(f"{names}: no case (class, variant, thread count) has two placements with an ok run yet")
    for owner, _ in groups("answer"):              # each kind's own lines (e.g. STREAM's bandwidth)
        lines += owner.answer(tables)
    lines += decision_lines(not_applicable)
    if estimate_line:
        lines.append(estimate_line)
    return {"lines": lines, "busy": busy, "cases": [_case_json(c, placements) for c in cases],
            "not_applicable": decision_lines(not_applicable)}


def _num(x):
    """A JSON number, or None for NaN/NA."""
    try:
        return None if pd.isna(x) else float(x)
    except (TypeError, ValueError):
        return None


def _case_json(c, placements):
    r = c["row"]
    side = {s: {"placement": str(r[f"{s}_placement"]), "placement_id": str(r[f"{s}_placement_id"]),
                "n": int(r[f"{s}_n"]), "median_s": _num(r[f"{s}_median_s"]),
                "mops_median": _num(r.get(f"{s}_mops_median"))} for s in ("best", "worst")}
    lines = case_launch_lines(c, placements) or {}
    return {"bench": c["bench"], "class": c["class"], "variant": c["variant"], "threads": c["threads"],
            "verdict": c["verdict"], **side, "cost_pct": _num(r["improvement_pct"]),
            "interval_pct": list(c["interval"]) if c.get("interval") else None,
            "compared_by": str(r.get("compared_by", "")), "beyond_noise": str(r["differs"]),
            "mann_whitney_p": _num(r.get("mwu_p")), "line": c["line"],
            "launch": {k: v for k, v in lines.items()}}
