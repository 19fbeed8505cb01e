"""Checks across the fields of a valid-looking study, before a single placement is made:
contradictions (two experiments with one name, keys a generator ignores, `distinct`
without distances, min above max) and the size of the plan, counted from the spec
rather than built, so a study asking for a billion runs is refused in milliseconds.
"""
from __future__ import annotations

from numaplace import ConfigError
from numaplace.core import limits as limits_mod
from numaplace.plan import memory_specs
from numaplace.core.schema import setting
from numaplace.plan.placement import MEMORY_SPECS, MEMORY_WORDS, count_choices, resolve_count
from numaplace.core.cpulist import check_cpulist_text
from numaplace.kinds import KINDS, kind
from numaplace.plan.rounds import Repetitions

# keys that only mean something with a given way of writing a placement
ONLY_WITH = {"nodes": "layout", "distinct": "layout"}


def check_study(config, topo, where):
    limits = limits_mod.of(config)
    _check_name(config, where)
    _check_capture(config, where)
    _check_run(config, where)
    _check_repetitions(config, where, limits)
    names = {}
    total = 0
    for i, exp in enumerate(config["experiments"]):
        entry = f"experiments[{i}] ({exp['name']})"
        if exp["name"] in names:
            raise ConfigError(where, f"experiments[{i}].name", f"experiment name {exp['name']!r} "
                              f"is already used by experiments[{names[exp['name']]}]")
        names[exp["name"]] = i
        _check_variants(exp, config, where, entry)
        total += _experiment_runs(exp, config, topo, where, entry, limits)
    limits_mod.check(where, "experiments", "planned runs", total, "runs", limits)


# Folders under results/ and report/ that numaplace writes itself, beside the studies'
# results/<study>/ and report/<study>/: a study of that name would write into them.
RESERVED_NAMES = {
    "build": "results/build/ holds the binaries every study shares",
    "readme.md": "results/README.md and report/README.md are the folders' own notes",
}


def _check_name(config, where):
    # case-blind: on a case-insensitive file system (macOS, Windows) Build is build
    why = RESERVED_NAMES.get(config["study"].lower())
    if why:
        raise ConfigError(where, "study", f"{config['study']!r} is a name numaplace uses itself: "
                          f"{why}; give the study another name")


# Capture and run settings too small to mean anything.
# interval_min: one sample reads /proc/<pid>/numa_maps (a page-table walk under the
# process's mmap lock) and every thread's stat, which takes ~0.1-1 ms even for a small
# process; below 1 ms the sampler never sleeps, it only spins on its duty-cycle cap,
# and the samples are spaced by their own cost, not by the interval asked for.
INTERVAL_MIN_S = 0.001
# timeout: it is there to end hung runs. The cheapest runs numaplace plans need about 1 s
# (NPB class S on one thread of a 2010 node: kinds' cost table) or 2 s per reading thread
# (membw with its defaults: 4 sizes x 5 regions of at least 0.1 s), plus the launcher's
# and OpenMP's start-up and the sampler's first samples; below 5 s runs time out that
# merely ran, and nothing is saved by ending a hung run sooner than that.
RUN_TIMEOUT_MIN_S = 5


def _check_capture(config, where):
    cap = config.get("capture", {})
    for key in ("interval_min", "interval_max"):
        if key in cap and cap[key] < INTERVAL_MIN_S:
            raise ConfigError(where, f"capture.{key}", f"{cap[key]:g} s is below numaplace's "
                              f"smallest sampling interval of {INTERVAL_MIN_S:g} s (one sample "
                              "of numa_maps takes about that long; shorter makes the sampler spin)")
    if cap.get("interval_min", 0) > cap.get("interval_max", float("inf")):
        raise ConfigError(where, "capture.interval_min", f"{cap['interval_min']} is above "
                          f"capture.interval_max {cap['interval_max']}")


def _check_run(config, where):
    timeout = config.get("run", {}).get("timeout")
    if timeout is not None and timeout < RUN_TIMEOUT_MIN_S:
        raise ConfigError(where, "run.timeout", f"{timeout:g} s would end runs before they finish: "
                          f"numaplace's smallest timeout is {RUN_TIMEOUT_MIN_S} s (NPB class S takes up "
                          "to ~1 s, membw's defaults 2 s a thread, plus start-up; a timeout is for hung runs)")


def _check_variants(exp, c, where, entry):
    """Every variant of the experiment must be one its benchmarks are built in (the
    NPB-only serial-init and mcmodel-medium mean nothing to membw and memlat)."""
    variants = setting("variants", c, exp)
    where_from = "" if "variants" in exp else " (the study's variants)"
    for bench in setting("benchmarks", c, exp):
        k = kind(bench)
        bad = [v for v in variants if v not in k.variants]
        if bad:
            for_whom = sorted(b for b, kk in KINDS.items() if bad[0] in kk.variants)
            raise ConfigError(where, f"{entry}.variants", f"variant {bad[0]}{where_from} does not "
                              f"apply to {bench}, which is built only as {', '.join(k.variants)}"
                              + (f"; {bad[0]} is for {', '.join(for_whom)}" if for_whom else "")
                              + (f": give this experiment variants: [{', '.join(k.variants)}]"
                                 if where_from else ""))


def _check_repetitions(config, where, limits):
    """Every `repetitions` the study gives (its own, each experiment's): a count within
    the limit, or {min, max} with min <= max and max within the limit (max is what is
    planned)."""
    given = [("repetitions", config["repetitions"])] if "repetitions" in config else []
    given += [(f"experiments[{i}] ({e['name']}).repetitions", e["repetitions"])
              for i, e in enumerate(config["experiments"]) if "repetitions" in e]
    for entry, value in given:
        reps = Repetitions.of(value)
        if reps.adaptive and reps.least > reps.most:
            raise ConfigError(where, entry, f"min {reps.least} is above max {reps.most}: an experiment "
                              "repeats at least min and at most max times")
        limits_mod.check(where, entry + (".max" if reps.adaptive else ""), "repetitions", reps.most,
                         "repetitions", limits)


def _experiment_runs(exp, c, topo, where, entry, limits):
    reps = Repetitions.of(setting("repetitions", c, exp)).most     # adaptive: max is planned
    memories = exp.get("memory") or c.get("memory") or ["local"]
    for j, m in enumerate(memories):
        if isinstance(m, dict):
            (policy, nodes), = m.items()
            m_entry = f"{entry}.memory[{j}].{policy}" if exp.get("memory") else f"memory[{j}].{policy}"
            if nodes not in MEMORY_WORDS.get(policy, ()):       # the portable words: resolved later
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
    form = next(k for k in ("cpus", "layout", "compact", "spread", "unpinned") if k in spec)
    for key, needs in ONLY_WITH.items():
        if key in spec and form != needs:
            raise ConfigError(where, f"{entry}.{key}", f"{key} only applies to a layout; "
                              f"{form} ignores it (remove {key})")
    if "threads" in spec:
        limits_mod.check(where, f"{entry}.threads", "threads", spec["threads"], "threads", limits)
    if form == "cpus":
        check_cpulist_text(spec["cpus"], where, f"{entry}.cpus", limits["cpu_id"])
        return 1
    if "smt" in spec and form not in ("compact", "spread", "unpinned"):
        raise ConfigError(where, f"{entry}.smt", f"smt only applies to compact, spread and unpinned; "
                          f"{form} ignores it (remove smt)")
    if form in ("compact", "spread", "unpinned"):
        for t in spec[form]:
            t = resolve_count(t, topo, spec.get("smt", False))
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


# -- figures -----------------------------------------------------------------------------
# A figure is at most FIGURE_MAX_PX pixels on a side in PNG (inches x figures.dpi): a
# 10,000 x 10,000 RGBA canvas is already 400 MB while matplotlib draws it; a gigapixel
# one would not fit. Without png (svg, pdf only: vectors), at most FIGURE_MAX_IN inches
# a side, PDF's largest page (14,400 pt).
FIGURE_MAX_PX = 10_000
FIGURE_MAX_IN = 200
LABEL_CHAR_IN = 0.06        # one character of a 9-pt tick label (~0.6 em)


def _drawn(n, limit):
    """Rows a figure draws of n: all up to limit, else the first and last limit/2 and a
    gap row (plots.elide)."""
    return n if n <= limit else 2 * (limit // 2) + 1


def largest_figure(cfg, topo, runs):
    """(width, height, what makes it tall) in inches of the largest figure numaplace.figures.plots
    and memory_plots would draw for these runs (their layout rules, in brief)."""
    cases, threads, both, label_len = {}, {}, {}, {}
    matrix = False
    for r in runs:
        p = r.placement
        if not kind(r.bench).compared:
            matrix = matrix or p.id.startswith("mx-")
            continue
        if p.id not in label_len:
            label_len[p.id] = len(p.label)
        cases.setdefault((r.bench, r.cls, r.variant), set()).add((p.threads, p.id))
        threads.setdefault((r.bench, r.cls, r.variant), set()).add(p.threads)
        if r.variant in ("default", "serial-init"):
            both.setdefault((r.bench, r.cls, p.threads, p.id), set()).add(r.variant)
    most = max((t for ts in threads.values() for t in ts), default=1)
    longest = max(label_len.values(), default=1) + len(f"{most} thr · ")   # variability's labels
    lines = -(-longest // cfg["label_width"])                           # wrapped (plots._wrap)
    rows = _drawn(max(map(len, cases.values()), default=0), cfg["max_rows"])
    tall = [(max(2.0, 1.3 + cfg["bar_height"] * rows * lines),
             f"{rows} rows of {lines} label line{'s' * (lines > 1)} x bar_height {cfg['bar_height']:g} in")]
    counts = max(map(len, threads.values()), default=0)
    tall.append((max(2.4, 1.2 + 0.95 * counts), f"{counts} thread counts"))
    pairs = sum(1 for v in both.values() if len(v) == 2)
    if pairs:
        k = cfg["max_rows"] // 4
        n = _drawn(pairs, 2 * k)
        tall.append((1.4 + 0.75 * n + 0.2 * n * (lines - 1), f"{n} serial-init rows"))
    width = cfg["width"] + min(cfg["label_width"], longest) * LABEL_CHAR_IN
    for k in {kind(r.bench) for r in runs}:     # a kind's own figures (Kind.figure_size)
        own = k.figure_size([r for r in runs if r.bench == k.name], cfg, LABEL_CHAR_IN)
        if own:
            width = max(width, own[0])
            tall.append(own[1:])
    if matrix:                                  # memory_plots' heatmaps: 0.7 in a node
        n = len(topo.node_ids)
        width = max(width, 1.6 + 0.7 * n)
        tall.append((1.4 + 0.6 * n, f"a heatmap of {n} nodes"))
    height, what = max(tall)
    return width, height, what


def check_figures(config, topo, runs, where):
    from numaplace.core.schema import defaults
    default = defaults("figures")
    cfg = {**default, **(config.get("figures") or {})}
    changed = {k for k in cfg if cfg[k] != default.get(k)}      # the schema filled in the rest
    width, height, what = largest_figure(cfg, topo, runs)
    png = "png" in cfg["formats"]
    for side, inches, keys, how in (("wide", width, ("width", "dpi", "label_width"),
                                     f"width {cfg['width']:g} in and labels of up to {cfg['label_width']} characters"),
                                    ("tall", height, ("dpi", "bar_height", "max_rows", "label_width"), what)):
        keys = keys if png else tuple(k for k in keys if k != "dpi")
        key = next((k for k in keys if k in changed), None)
        entry = f"figures.{key}" if key else "figures"
        lower = ", ".join(f"figures.{k}" for k in keys[:-1]) + f" or figures.{keys[-1]}"
        if png and inches * cfg["dpi"] > FIGURE_MAX_PX:
            raise ConfigError(where, entry, f"a figure would be {inches * cfg['dpi']:.0f} px {side} "
                              f"({inches:.3g} in: {how}; at dpi {cfg['dpi']}), above numaplace's limit "
                              f"of {FIGURE_MAX_PX} px per side; lower {lower}")
        if not png and inches > FIGURE_MAX_IN:
            raise ConfigError(where, entry, f"a figure would be {inches:.0f} in {side} ({how}), above "
                              f"numaplace's limit of {FIGURE_MAX_IN} in per side for svg, pdf (PDF's "
                              f"largest page); lower {lower}")
