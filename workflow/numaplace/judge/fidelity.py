"""Placement fidelity: did the threads and pages go where the placement asked?

Judged from a run's captures (capture.Sampler's summary in the record):

threads  every thread stayed on the placement's CPUs (CPU of each sample and the
         affinity mask it ran under). With per-thread binding (OMP_PLACES) each thread
         is bound to one CPU of its own; samples of a thread taken before libgomp bound
         it (the initial thread, in libgomp's constructor) are not judged. NPB's own
         thread count must equal the placement's.
memory   at the working-set footprint (the steady one the run settled on; for kinds whose
         buffers are freed before the process exits, the peak), the share of the
         process's data pages on the nodes the policy allows: membind/preferred/
         interleave their nodes, local the nodes of the placement's CPUs; interleave
         also evenly over its nodes (each within a tolerance of 1/k), weighted-interleave
         in the ratio of the kernel's weights the run recorded; and the pages'
         policy as numa_maps prints it must be the one asked for.

Verdict per aspect and overall: ok | drift (with the numbers, in `reasons`) | unknown
(capture unavailable, e.g. aprun, or the run too short for the sampler to see its
footprint settle with the whole thread team).

judge(record, thresholds) is a pure function called where records are read (tables,
report): records hold what was measured and observed, never a verdict. Thresholds:
the study schema's `fidelity` defaults, overridden by the study's `fidelity:` section, which no run depends on, so
changing them re-judges every run from its captures and re-runs none.
"""
from __future__ import annotations

from numaplace.kinds import KINDS
from numaplace.record.store import Record
from numaplace.core.cpulist import format_cpulist, parse_cpulist
from numaplace.plan.launch import MEMORY_POLICIES

# placement memory policy → numa_maps mode names that express it (each MemoryPolicy's own)
POLICY_MODES = {m.name: m.modes for m in MEMORY_POLICIES.values()}


# the thresholds a placement verdict is judged by (the fidelity section also holds the
# tables' bars for foreign load and memory cells, which are not part of a run's verdict)
JUDGED_BY = ("memory_share_min", "interleave_tolerance", "interleave_slack_bytes", "memory_min_bytes",
             "migration_moved_max")


def thresholds_of(thresholds=None):
    """The study's thresholds over the schema's defaults (the one place they are written)."""
    from numaplace.core.schema import Section
    return Section("fidelity", thresholds).whole()


def _mib(b):
    return f"{b / 2**20:.1f} MiB"


def _pct(x):
    return f"{100 * x:.1f}%"


def _threads(rec, cpus):
    caps = rec.captures
    threads = caps.get("threads") or {}
    p = rec.placement
    expected = int(p["threads"])
    if not threads:
        return {"verdict": "unknown", "reason": "no thread samples (thread capture off or the run "
                                                "ended before the first sample)"}
    pinned = p["binding"] == "threads"
    team = caps.get("team") or len(threads)
    out = {"threads_expected": expected, "threads_seen": len(threads), "team": team}
    reasons = []
    npb_threads = (rec.get("output") or {}).get("threads")
    if npb_threads is not None and int(npb_threads) != expected:
        reasons.append(f"NPB ran {npb_threads} threads, the placement has {expected}")
        out["npb_threads"] = npb_threads
    seen = _observe_threads(threads, set(cpus), pinned)
    if team < expected:
        # the team never seen: a thread still on the launch mask is the master before its
        # first parallel region bound it, not a thread that drifted
        for tid, mask in list(seen["unbound"].items()):
            if mask != "?" and set(parse_cpulist(mask)) == set(cpus):
                del seen["unbound"][tid]
    reasons += _thread_findings(seen, cpus, out)
    if pinned:
        out["bound_to"] = {t: c for t, c in sorted(seen["bound_to"].items())}
    if seen["before_binding"]:
        out["samples_before_binding"] = seen["before_binding"]
    if reasons:
        out["verdict"], out["reasons"] = "drift", reasons
    elif team < expected:
        out["verdict"] = "unknown"
        out["reason"] = (f"the capture saw at most {team} of {expected} threads at once "
                         "(the run ended before its parallel part was sampled)")
    else:
        out["verdict"] = "ok"
    return out


def _observe_threads(threads, allowed_cpus, pinned):
    """Per thread: CPUs it ran on outside the placement, a mask reaching outside it, and
    with per-thread binding the CPU it is bound to (or its mask when it is not bound to
    one), and how many samples came before libgomp bound it."""
    seen = {"outside": {}, "mask_outside": {}, "mask_lost": {}, "unbound": {}, "before_binding": {}, "bound_to": {}}
    for tid, t in threads.items():
        by_mask = t.get("by_allowed") or {t.get("allowed") or "": t["cpus"]}
        if pinned:
            final = t.get("allowed") or ""
            judged = {final: by_mask.get(final, t["cpus"])}
            skipped = sum(n for m, c in by_mask.items() if m != final for n in c.values())
            if skipped:
                seen["before_binding"][tid] = skipped
        else:
            judged = by_mask
        for mask, cpu_counts in judged.items():
            ran_on = {int(c) for c in cpu_counts}
            if ran_on - allowed_cpus:
                seen["outside"][tid] = sorted(set(seen["outside"].get(tid, [])) | (ran_on - allowed_cpus))
            m = set(parse_cpulist(mask)) if mask else None
            if m is not None and m - allowed_cpus:
                seen["mask_outside"][tid] = mask
            # a cpuset or an outer mask that took planned CPUs away: the threads shared fewer CPUs
            if m is not None and not pinned and allowed_cpus - m:
                seen["mask_lost"][tid] = mask
            if pinned:
                if m is None or len(m) != 1:
                    seen["unbound"][tid] = mask or "?"
                else:
                    seen["bound_to"][tid] = next(iter(m))
    return seen


def _thread_findings(seen, cpus, out):
    """What went wrong, into `out` (numbers) and as reasons (words)."""
    reasons = []
    if seen["outside"]:
        out["outside_cpus"] = seen["outside"]
        reasons.append("threads ran outside CPUs " + format_cpulist(cpus) + ": " +
                       ", ".join(f"tid {t} on {format_cpulist(c)}" for t, c in seen["outside"].items()))
    if seen["mask_outside"]:
        out["mask_outside"] = seen["mask_outside"]
        reasons.append("threads allowed outside CPUs " + format_cpulist(cpus) + ": " +
                       ", ".join(f"tid {t} mask {m}" for t, m in seen["mask_outside"].items()))
    if seen["mask_lost"]:
        out["mask_lost"] = seen["mask_lost"]
        reasons.append("threads' mask lost planned CPUs " + format_cpulist(cpus) + ": " +
                       ", ".join(f"tid {t} mask {m}" for t, m in seen["mask_lost"].items()))
    if seen["unbound"]:
        out["unbound"] = seen["unbound"]
        reasons.append("threads not bound to one CPU: " +
                       ", ".join(f"tid {t} mask {m}" for t, m in seen["unbound"].items()))
    by_cpu = {}
    for tid, c in seen["bound_to"].items():
        by_cpu.setdefault(c, []).append(tid)
    sharing = {str(c): tids for c, tids in sorted(by_cpu.items()) if len(tids) > 1}
    if sharing:
        out["sharing_cpu"] = sharing
        reasons.append("threads bound to the same CPU: " +
                       "; ".join(f"CPU {c}: tids {', '.join(t)}" for c, t in sharing.items()))
    return reasons


def _memory(rec, nodes_of_cpus, cfg):
    caps = rec.captures
    nm = caps.get("numa_maps") or {}
    p = rec.placement
    judged, basis, unknown = _judged_footprint(rec, nm, caps, int(p["threads"]), cfg, footprint_basis(rec))
    if unknown:
        return {"verdict": "unknown", "reason": unknown}
    by_node = {int(n): b for n, b in judged["data_bytes"].items()}
    total = sum(by_node.values())
    policy = p["memory"]
    spread = MEMORY_POLICIES[policy].spread if policy in MEMORY_POLICIES else ""
    if policy == "local":
        allowed = set(nodes_of_cpus)
    else:
        allowed = set(parse_cpulist(p["memory_nodes"]))
    share = sum(b for n, b in by_node.items() if n in allowed) / total
    dist = {str(n): round(b / total, 4) for n, b in sorted(by_node.items())}
    shown = " ".join(f"N{n}={_pct(s)}" for n, s in dist.items())
    out = {"policy": policy, "allowed_nodes": sorted(allowed), "basis": basis, "t": judged.get("t"),
           "bytes": total, "bytes_per_node": {str(n): b for n, b in sorted(by_node.items())},
           "distribution": dist, "share_on_allowed": round(share, 4),
           "min_share": cfg["memory_share_min"]}
    peak = nm["peak"]
    if peak is not judged and peak.get("data_bytes"):
        ptotal = sum(peak["data_bytes"].values())
        out["peak"] = {"t": peak.get("t"), "bytes": ptotal}
    reasons = []
    if share < cfg["memory_share_min"]:
        reasons.append(f"{_pct(share)} of {_mib(total)} data pages on {policy} node(s) "
                       f"{format_cpulist(allowed) or '-'} (min {_pct(cfg['memory_share_min'])}); "
                       f"per node {shown}")
        full = _full_nodes(rec, allowed, total)
        if full:
            out["spill"] = True
            reasons.append(full)
    unweighed = None
    if spread == "even" and len(allowed) > 1:
        reasons += _interleave_evenness(by_node, total, allowed, shown, cfg, out)
    elif spread == "weighted" and len(allowed) > 1:
        weights = (rec.system.get("weighted_interleave") or {})
        if all(str(n) in weights for n in allowed):
            reasons += _weighted_evenness(by_node, total, {n: weights[str(n)] for n in allowed},
                                          shown, cfg, out)
        else:
            unweighed = ("the kernel's weighted-interleave weights of node(s) "
                         f"{format_cpulist(n for n in allowed if str(n) not in weights)} were not recorded "
                         "(record field system.weighted_interleave): the share per node is not judged")
    if judged.get("policies"):
        reasons += _policy_share(judged["policies"], p, cfg, out)
    if reasons:
        out["verdict"], out["reasons"] = "drift", reasons
    elif unweighed:
        out["verdict"], out["reason"] = "unknown", unweighed
    else:
        out["verdict"] = "ok"
    return out


def _full_nodes(rec, allowed, total):
    """Why pages left their nodes when the reason is that those nodes were full: the free
    memory of the allowed nodes at the run's start (record `system.free_mb_by_node`)
    below the run's data. None when the record has no such figure or there was room."""
    free = rec.system.get("free_mb_by_node") or {}
    have = [free.get(str(n)) for n in sorted(allowed)]
    if not have or None in have or sum(have) * 2**20 >= total:
        return None
    return (f"spill: node(s) {format_cpulist(allowed)} had {sum(have)} MiB free at the start, "
            f"the run's data needed {_mib(total)}: the kernel put the rest on other nodes")


def footprint_basis(rec):
    """Which numa_maps sample holds the run's working set: "steady" or "peak".

    The kind says (kinds.Kind.footprint); records of captures without a steady sample
    (older ones) have only the peak."""
    rec = Record.of(rec)
    nm = rec.captures.get("numa_maps") or {}
    kind = KINDS.get(rec.bench)
    want = kind.footprint if kind else "steady"
    return want if want in nm else "peak"


def _judged_footprint(rec, nm, caps, expected, cfg, basis):
    """(the sample to judge, its name, None), or (None, None, why it cannot be judged)."""
    peak = nm.get("peak")
    judged = nm.get(basis)
    if not peak:
        errors = "; ".join(caps.get("errors") or [])
        return None, None, "no numa_maps sample" + (f" ({errors})" if errors else "")
    if not judged:
        n = nm.get("samples", 0)
        return None, None, (f"the footprint never settled while sampled "
                            f"({n} sample{'' if n == 1 else 's'}, peak {_mib(sum(peak['data_bytes'].values()))} "
                            f"at {peak['t']} s): the run is too short to judge")
    total = sum(judged["data_bytes"].values())
    if total < max(cfg["memory_min_bytes"], 1):
        return None, None, (f"only {total} bytes of data pages at the {basis} "
                            f"footprint (< memory_min_bytes {cfg['memory_min_bytes']}): too little to judge")
    kind = KINDS.get(rec.bench)
    needed = kind.working_set_bytes(rec.get("output")) if kind else None
    if needed and total < needed:
        return None, None, (f"the {basis} sample holds {_mib(total)} of data, less than the "
                            f"{_mib(needed)} buffer: the sampler caught it before it was all touched")
    team = judged.get("team")
    if team is not None and team < expected:
        return None, None, (f"the footprint settled at {_mib(total)} before the "
                            f"OpenMP team existed ({team} of {expected} threads)")
    return judged, basis, None


def _interleave_evenness(by_node, total, allowed, shown, cfg, out):
    even = 1 / len(allowed)
    dev = max(abs(by_node.get(n, 0) / total - even) for n in allowed)
    tol = cfg["interleave_tolerance"] + cfg["interleave_slack_bytes"] / total
    out["interleave_max_deviation"] = round(dev, 4)
    out["interleave_tolerance"] = round(tol, 4)
    if dev > tol:
        return [f"interleave over {len(allowed)} nodes is uneven: per node {shown} "
                f"(expected {_pct(even)} ± {_pct(tol)})"]
    return []


def _weighted_evenness(by_node, total, weights, shown, cfg, out):
    """Weighted interleave: each node's share within the tolerance of its weight's share
    (weights as the kernel had them when the run started, record system.weighted_interleave)."""
    whole = sum(weights.values())
    expected = {n: w / whole for n, w in sorted(weights.items())}
    dev = max(abs(by_node.get(n, 0) / total - e) for n, e in expected.items())
    tol = cfg["interleave_tolerance"] + cfg["interleave_slack_bytes"] / total
    out["weights"] = {str(n): w for n, w in sorted(weights.items())}
    out["expected_distribution"] = {str(n): round(e, 4) for n, e in expected.items()}
    out["interleave_max_deviation"] = round(dev, 4)
    out["interleave_tolerance"] = round(tol, 4)
    if dev > tol:
        want = " ".join(f"N{n}={_pct(e)}" for n, e in expected.items())
        ratio = ":".join(str(w) for _, w in sorted(weights.items()))
        return [f"weighted interleave over {len(weights)} nodes is off its weights {ratio}: per node {shown} "
                f"(expected {want} ± {_pct(tol)})"]
    return []


def _policy_share(policies, p, cfg, out):
    """Share of the data bytes placed under the asked policy (mode and nodes as printed)."""
    policy = p["memory"]
    want = set(parse_cpulist(p["memory_nodes"])) if p.get("memory_nodes") else None
    matching = 0
    for text, b in policies.items():
        mode, _, nodes = text.partition(":")
        mode = mode.split("=")[0]
        if mode in POLICY_MODES[policy] and (want is None or (nodes and set(parse_cpulist(nodes)) == want)):
            matching += b
    pshare = matching / max(sum(policies.values()), 1)
    out["policies"] = policies
    out["share_under_policy"] = round(pshare, 4)
    if pshare < cfg["memory_share_min"]:
        asked = policy + (f" {p['memory_nodes']}" if p.get("memory_nodes") else "")
        seen = ", ".join(f"{k} ({_mib(v)})" for k, v in sorted(policies.items(), key=lambda kv: -kv[1]))
        return [f"pages placed under policy {seen}, the placement asks for {asked}"]
    return []


def judge(rec, thresholds=None):
    """The fidelity verdict of a run record under these thresholds (see the module doc)."""
    rec = Record.of(rec)
    status = rec.status
    if status in ("placement-failed", "not-idle", "build-failed", "not-needed"):
        return {"verdict": "unknown", "reason": f"the run did not execute ({status})"}
    if rec.get("captures") is None:
        return {"verdict": "unknown", "reason": rec.get("captures_note") or "no capture for this run"}
    cfg = thresholds_of(thresholds)
    p = rec.placement
    cpus = parse_cpulist(p["cpus"])
    lookup = rec.node_of()
    node_of = {c: lookup(c) for c in cpus if lookup(c) is not None}
    out = {}
    if all(c in node_of for c in cpus):
        nodes_of_cpus = sorted({node_of[c] for c in cpus})
    else:                           # the measured topology lacks some CPU: trust the plan
        nodes_of_cpus = parse_cpulist(p["nodes"]) if p.get("nodes") else []
        out["note"] = (f"CPUs {format_cpulist(c for c in cpus if c not in node_of)} are not in the "
                       "measured topology; local nodes taken from the plan")
    th = _threads(rec, cpus)
    mem = _memory(rec, nodes_of_cpus, cfg)
    mig = migration(rec, cfg)       # pages moved by automatic NUMA balancing (None: n/a)
    # with balancing on, pages that could not be followed over time are not known to have stayed
    parts = (th["verdict"], mem["verdict"], (mig or {}).get("verdict", "ok"))
    overall = "drift" if "drift" in parts else ("unknown" if "unknown" in parts else "ok")
    out.update(verdict=overall, threads=th, memory=mem, settings={k: cfg[k] for k in JUDGED_BY})
    if mig is not None:
        out["migration"] = mig
    if overall == "drift":
        out["reasons"] = [f"{k}: {r}" for k, a in (("threads", th), ("memory", mem), ("migration", mig or {}))
                          for r in a.get("reasons", [])]
    elif overall == "unknown":
        out["reason"] = "; ".join(f"{k}: {a['reason']}" for k, a in (("threads", th), ("memory", mem),
                                                                    ("migration", mig or {}))
                                  if a.get("verdict") == "unknown")
    return out


# -- pages moved by the kernel (automatic NUMA balancing) ----------------------------

SETTLED = 0.05                  # samples within this of the final footprint: the settled part


def migration(rec, thresholds=None):
    """With kernel.numa_balancing on (record field `system`), did the kernel move the data
    pages of a first-touch (memory local: default or serial-init) run while it ran?

    From captures.pages_over_time (older records: the peak and last samples): over the
    samples of the settled footprint (the tail within SETTLED of the final size), the
    largest share of pages that changed node since the first of them. drift above
    `migration_moved_max` (the schema's default 5 %), with the numbers. None where it
    does not apply: balancing off or unknown, a membind/interleave/preferred placement."""
    from numaplace.machine.system import balancing_on
    rec = Record.of(rec)
    system = rec.system
    p = rec.placement
    if not balancing_on(system) or p.get("memory") != "local":
        return None
    limit = thresholds_of(thresholds)["migration_moved_max"]
    caps = rec.captures
    nm = caps.get("numa_maps") or {}
    points = caps.get("pages_over_time") or [v for v in (nm.get("peak"), nm.get("last")) if v]
    points = [(pt["t"], {int(n): b for n, b in pt["data_bytes"].items()}) for pt in points
              if pt.get("data_bytes")]
    out = {"balancing": {k: system.get(k) for k in ("numa_balancing", "numa_balancing_at_end")},
           "moved_max": limit}
    if (system.get("vmstat_delta") or {}).get("numa_pages_migrated") is not None:
        out["numa_pages_migrated_system"] = system["vmstat_delta"]["numa_pages_migrated"]
    final = sum(points[-1][1].values()) if points else 0
    settled = []
    for t, by_node in reversed(points):
        if abs(sum(by_node.values()) - final) > SETTLED * max(final, 1):
            break
        settled.insert(0, (t, by_node))
    if len(settled) < 2 or not final:
        return {**out, "verdict": "unknown", "reason": f"numa_balancing on, but {len(settled)} sample(s) "
                "of the settled footprint: cannot see pages move"}

    def shares(by_node):
        total = sum(by_node.values())
        return {n: b / total for n, b in by_node.items()}

    t0, first = settled[0][0], shares(settled[0][1])
    moved, t_moved, at = 0.0, t0, first
    for t, by_node in settled[1:]:
        s = shares(by_node)
        m = sum(max(0.0, s.get(n, 0) - first.get(n, 0)) for n in s)
        if m > moved:
            moved, t_moved, at = m, t, s
    nodes = sorted(set(first) | set(at))
    out.update(t_first=t0, t_moved=t_moved, t_last=settled[-1][0], samples=len(settled), bytes=final,
               moved_share=round(moved, 4),
               shares_first={str(n): round(first.get(n, 0), 4) for n in nodes},
               shares_moved={str(n): round(at.get(n, 0), 4) for n in nodes})
    if moved > limit:
        shown = " ".join(f"N{n} {_pct(first.get(n, 0))}→{_pct(at.get(n, 0))}" for n in nodes)
        out["verdict"] = "drift"
        out["reasons"] = [f"numa_balancing on: {_pct(moved)} of {_mib(final)} data pages changed node "
                          f"between t={t0:g} s and t={t_moved:g} s (max {_pct(limit)}): {shown}"]
    else:
        out["verdict"] = "ok"
    return out
