"""Placement fidelity: did the threads and pages go where the placement asked?

Computed from a run's captures: thread CPU samples (each thread within the placement's
CPUs; with per-thread binding, each on one CPU of its own) and the numa_maps data
pages at the run's peak footprint (share on the nodes the memory policy allows;
interleave additionally even across its nodes). Verdict per aspect and overall:
ok | drift (with the numbers) | unknown (capture unavailable).
"""
from __future__ import annotations

from .topology import parse_cpulist

DEFAULTS = {"memory_share_min": 0.9, "interleave_tolerance": 0.1}


def _threads(rec, cpus):
    caps = rec.get("captures") or {}
    threads = caps.get("threads") or {}
    if not threads:
        return {"verdict": "unknown", "reason": "no thread samples"}
    outside, shared = {}, []
    seen_single = {}
    for tid, t in threads.items():
        used = {int(c) for c in t["cpus"]}
        bad = sorted(used - set(cpus))
        if bad:
            outside[tid] = bad
        if rec["placement"]["binding"] == "threads" and len(used) == 1:
            c = next(iter(used))
            if c in seen_single.values():
                shared.append(tid)
            seen_single[tid] = c
    moved = []
    if rec["placement"]["binding"] == "threads":
        # the master may have run elsewhere briefly before libgomp pinned it: judge
        # only threads with more than one sample that left their CPU
        moved = [tid for tid, t in threads.items() if len(t["cpus"]) > 1]
    drift = bool(outside) or bool(moved)
    out = {"verdict": "drift" if drift else "ok", "threads_seen": len(threads)}
    if outside:
        out["outside_cpus"] = outside
    if moved:
        out["moved"] = {tid: threads[tid]["cpus"] for tid in moved}
    if shared:
        out["sharing_cpu"] = shared
    return out


def _memory(rec, cpus, nodes_of_cpus, cfg):
    caps = rec.get("captures") or {}
    peak = (caps.get("numa_maps") or {}).get("peak")
    if not peak or not peak.get("data_bytes"):
        return {"verdict": "unknown", "reason": "no numa_maps sample"}
    by_node = {int(n): b for n, b in peak["data_bytes"].items()}
    total = sum(by_node.values())
    if total == 0:
        return {"verdict": "unknown", "reason": "no data pages"}
    p = rec["placement"]
    policy = p["memory"]
    allowed = set(parse_cpulist(p["memory_nodes"])) if p.get("memory_nodes") else set(nodes_of_cpus)
    share = sum(b for n, b in by_node.items() if n in allowed) / total
    dist = {str(n): round(b / total, 4) for n, b in sorted(by_node.items())}
    out = {"policy": policy, "allowed_nodes": sorted(allowed), "share_on_allowed": round(share, 4),
           "distribution": dist, "bytes": total, "min_share": cfg["memory_share_min"]}
    drift = share < cfg["memory_share_min"]
    if policy == "interleave" and len(allowed) > 1:
        even = 1 / len(allowed)
        dev = max(abs(by_node.get(n, 0) / total - even) for n in allowed)
        out["interleave_max_deviation"] = round(dev, 4)
        drift = drift or dev > cfg["interleave_tolerance"]
    out["verdict"] = "drift" if drift else "ok"
    return out


def verdict(rec):
    if rec.get("status") in ("placement-failed", "not-idle") or rec.get("captures") is None:
        return {"verdict": "unknown", "reason": rec.get("captures_note") or "run did not execute under capture"}
    cfg = {**DEFAULTS, **(rec.get("fidelity_settings") or {})}
    cpus = parse_cpulist(rec["placement"]["cpus"])
    topo = rec.get("topology") or {}
    node_of = {c: int(n) for n, cl in (topo.get("nodes") or {}).items() for c in parse_cpulist(cl) if cl}
    nodes_of_cpus = sorted({node_of[c] for c in cpus if c in node_of})
    th = _threads(rec, cpus)
    mem = _memory(rec, cpus, nodes_of_cpus, cfg)
    parts = (th["verdict"], mem["verdict"])
    overall = "drift" if "drift" in parts else ("unknown" if "unknown" in parts else "ok")
    return {"verdict": overall, "threads": th, "memory": mem}
