"""Checks across the fields of a valid-looking study, before a single placement is made:
contradictions (two experiments with one name, keys a generator ignores, `distinct`
without distances, min above max) and the size of the plan, counted from the spec
rather than built, so a study asking for a billion runs is refused in milliseconds.
"""
from __future__ import annotations

from . import ConfigError, limits as limits_mod
from . import memory_specs
from .schema import setting
from .placement import MEMORY_SPECS, count_choices
from .cpulist import check_cpulist_text

# keys that only mean something with a given way of writing a placement
ONLY_WITH = {"nodes": "layout", "distinct": "layout"}


def check_study(config, topo, where):
    limits = limits_mod.of(config)
    _check_capture(config, where)
    names = {}
    total = 0
    for i, exp in enumerate(config["experiments"]):
        entry = f"experiments[{i}] ({exp['name']})"
        if exp["name"] in names:
            raise ConfigError(where, f"experiments[{i}].name", f"experiment name {exp['name']!r} "
                              f"is already used by experiments[{names[exp['name']]}]")
        names[exp["name"]] = i
        total += _experiment_runs(exp, config, topo, where, entry, limits)
    limits_mod.check(where, "experiments", "planned runs", total, "runs", limits)


def _check_capture(config, where):
    cap = config.get("capture", {})
    if cap.get("interval_min", 0) > cap.get("interval_max", float("inf")):
        raise ConfigError(where, "capture.interval_min", f"{cap['interval_min']} is above "
                          f"capture.interval_max {cap['interval_max']}")


def _experiment_runs(exp, c, topo, where, entry, limits):
    reps = setting("repetitions", c, exp)
    rep_entry = f"{entry}.repetitions" if "repetitions" in exp else "repetitions"
    limits_mod.check(where, rep_entry, "repetitions", reps, "repetitions", limits)
    memories = exp.get("memory") or c.get("memory") or ["local"]
    for j, m in enumerate(memories):
        if isinstance(m, dict):
            (policy, nodes), = m.items()
            m_entry = f"{entry}.memory[{j}].{policy}" if exp.get("memory") else f"memory[{j}].{policy}"
            check_cpulist_text(nodes, where, m_entry, limits["cpu_id"])
    placements = sum(_spec_placements(spec, topo, where, f"{entry}.placements[{k}]", limits)
                     for k, spec in enumerate(exp["placements"]))
    bindings = len(exp.get("binding") or [None])
    factor = len(setting("benchmarks", c, exp)) * \
        len(setting("classes", c, exp)) * len(setting("variants", c, exp))
    return placements * len(memories) * bindings * reps * factor


def _spec_placements(spec, topo, where, entry, limits):
    """How many placements one spec gives (an upper bound for all-choices), refusing
    contradictions and sizes above the limits on the way."""
    if MEMORY_SPECS & set(spec):            # the memory micro-benchmarks' sweeps and matrices
        return memory_specs.count(spec, topo, where, entry)
    form = next(k for k in ("cpus", "layout", "compact", "spread") if k in spec)
    for key, needs in ONLY_WITH.items():
        if key in spec and form != needs:
            raise ConfigError(where, f"{entry}.{key}", f"{key} only applies to a layout; "
                              f"{form} ignores it (remove {key})")
    if "threads" in spec:
        limits_mod.check(where, f"{entry}.threads", "threads", spec["threads"], "threads", limits)
    if form == "cpus":
        check_cpulist_text(spec["cpus"], where, f"{entry}.cpus", limits["cpu_id"])
        return 1
    if form in ("compact", "spread"):
        for t in spec[form]:
            limits_mod.check(where, f"{entry}.{form}", "threads", t, "threads", limits)
        return len(spec[form])
    counts = [int(x) for x in spec["layout"].split("/")]
    limits_mod.check(where, f"{entry}.layout", "threads", sum(counts), "threads", limits)
    nodes = spec.get("nodes", "all-choices")
    if nodes != "all-choices":
        if spec.get("distinct"):
            raise ConfigError(where, f"{entry}.distinct", "distinct only applies to nodes: "
                              "all-choices; with a node list there is one choice (remove distinct)")
        check_cpulist_text(nodes, where, f"{entry}.nodes", limits["cpu_id"])
        return 1
    choices = count_choices(counts, topo)
    limits_mod.check(where, f"{entry}.nodes", f"node choices of layout {spec['layout']!r} on "
                     f"platform {topo.name}", choices, "choices", limits)
    if spec.get("distinct"):
        if not topo.distances:
            raise ConfigError(where, f"{entry}.distinct", f"platform {topo.name} has no distances, "
                              "so every choice of nodes looks alike; add distances to the "
                              "platform or remove distinct")
        limit = limits["symmetries"]
        if len(topo.automorphisms(limit)) > limit:
            raise ConfigError(where, f"{entry}.distinct", f"platform {topo.name} has more than "
                              f"{limit} node symmetries to compare choices with "
                              + limits_mod.hint("symmetries", 10 * limit))
    return choices
