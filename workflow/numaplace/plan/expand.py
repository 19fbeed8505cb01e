"""A study's placement specs, expanded into concrete placements: CPU lists (explicit,
layouts, compact/spread/unpinned counts) and the memory micro-benchmarks' cells
(numaplace.plan.memory_specs), each with every memory policy and binding of its
experiment."""
from __future__ import annotations

import itertools

from numaplace import ConfigError
from numaplace.core.cpulist import format_cpulist, parse_cpulist
from numaplace.plan import memory_specs
from numaplace.plan.launch import LAUNCHERS
from numaplace.plan.placement import (MEMORY_SPECS, Memory, NotApplicable, SameAs, compact, finish, layout_cpus,
                                      node_choices, nodes_phrase, per_node, resolve_count, spread)


def expand_spec(spec, topo, where, entry):
    """One placement spec → list of (cpus, shape, explicit id or None, team: threads when
    fewer than the CPUs, else 0), and NotApplicable for what cannot exist here."""
    out = []
    if "cpus" in spec:
        cpus = parse_cpulist(spec["cpus"], where, entry + ".cpus")
        bad = [c for c in cpus if topo.node_of(c) is None]
        outside = topo.outside_allocation(cpus=bad)
        if outside:
            raise NotApplicable(f"cpus {format_cpulist(cpus)}: {outside}")
        if bad:
            raise ConfigError(where, entry + ".cpus", f"CPU {format_cpulist(bad)} is not in platform "
                              f"{topo.name} (CPUs {format_cpulist(topo.cpus)})")
        out.append((cpus, "cpus " + format_cpulist(cpus), spec.get("id"), 0))
    elif "layout" in spec:
        counts = [int(x) for x in spec["layout"].split("/")]
        if 0 in counts:
            raise ConfigError(where, entry + ".layout", f"{spec['layout']!r}: every node needs at least one thread")
        nodes = spec.get("nodes", "all-choices")
        if nodes == "all-choices":
            choices = node_choices(counts, topo, spec.get("distinct", False))
            if not choices and len(counts) > len(topo.cpu_nodes):
                raise NotApplicable(f"{nodes_phrase(len(topo.cpu_nodes))}: layout {spec['layout']!r} needs "
                                    f"{len(counts)} nodes")
            if not choices:
                raise ConfigError(where, entry, f"layout {spec['layout']!r} fits on no choice of nodes of platform {topo.name}")
            if spec.get("id") and len(choices) > 1:
                raise ConfigError(where, entry + ".id", "an explicit id needs a single placement, "
                                  f"but nodes: all-choices gives {len(choices)}")
            for ch in choices:
                ns, ks = [n for n, _ in ch], [k for _, k in ch]
                cpus = layout_cpus(ks, ns, topo, where, entry)
                out.append((cpus, f"{'/'.join(map(str, ks))} on {','.join(map(str, ns))}", spec.get("id"), 0))
        else:
            nodes = nodes if isinstance(nodes, list) else parse_cpulist(nodes, where, entry + ".nodes")
            if len(nodes) != len(counts):
                raise ConfigError(where, entry, f"layout {spec['layout']!r} has {len(counts)} entries "
                                  f"but nodes has {len(nodes)}")
            if len(set(nodes)) != len(nodes):
                raise ConfigError(where, entry + ".nodes", "a node appears twice")
            cpus = layout_cpus(counts, nodes, topo, where, entry + ".layout")
            if nodes != sorted(nodes):    # the shape names nodes ascending: counts follow them
                pairs = sorted(zip(nodes, counts))
                shape = f"{'/'.join(str(k) for _, k in pairs)} on {','.join(str(n) for n, _ in pairs)}"
            else:
                shape = f"{spec['layout']} on {format_cpulist(nodes)}"
            out.append((cpus, shape, spec.get("id"), 0))
    elif "unpinned" in spec:
        # Porterfield's baseline: t threads in a mask of every CPU; the OS places them
        every = sorted(topo.cpus)
        for count in spec["unpinned"]:
            t = resolve_count(count, topo, spec.get("smt", False))
            if t > len(every) and topo.allowed:
                out.append(NotApplicable(f"unpinned {count}: {topo.allocation_words()}"))
                continue
            if t > len(every):
                raise ConfigError(where, f"{entry}.unpinned", f"{t} threads but platform {topo.name} "
                                  f"has {len(every)} CPUs")
            shape = f"unpinned {count}" + (f" ({t})" if not isinstance(count, int) else "")
            out.append((every, shape, spec.get("id"), t if t < len(every) else 0))
    else:
        kind = "compact" if "compact" in spec else "spread"
        gen = compact if kind == "compact" else spread
        smt = spec.get("smt", False)
        if spec.get("id") and len(spec[kind]) > 1:
            raise ConfigError(where, entry + ".id", f"an explicit id needs a single placement, but {kind} lists {len(spec[kind])} thread counts")
        cores = len(topo.cores(smt))
        unit = "CPUs" if smt or not topo.siblings else "cores (smt: true counts every hardware thread)"
        for count in spec[kind]:
            t = resolve_count(count, topo, smt)
            k = per_node(count)
            if t > cores or (k and any(len(topo.node_cpus(n, smt)) < k for n in topo.cpu_nodes)):
                if isinstance(count, int) and not topo.allowed:
                    raise ConfigError(where, f"{entry}.{kind}", f"{t} threads but platform {topo.name} has {cores} {unit}")
                if isinstance(count, int):    # the machine has them; this job does not
                    out.append(NotApplicable(f"{kind} {count}: {topo.allocation_words()}"))
                    continue
                out.append(NotApplicable(f"{kind} {count} needs {t} threads, {k or t} on a node; platform "
                                         f"{topo.name} has {cores} {unit.split(' (')[0]}"))
                continue
            if kind == "spread" and len(topo.cpu_nodes) == 1:
                out.append(NotApplicable(f"1 NUMA node: spread {count} would be compact {count}"))
                continue
            cpus = ([c for n in topo.cpu_nodes for c in topo.node_cpus(n, smt)[:k]] if k
                    else gen(t, topo, smt))
            if kind == "spread" and not k and set(cpus) == set(compact(t, topo, smt)):
                out.append(NotApplicable(f"spread {count} runs on the same CPUs as compact {count} here"))
                continue
            shape = f"{kind} {count}" + (f" ({t})" if not isinstance(count, int) else "") + (" smt" if smt else "")
            out.append((cpus, shape, spec.get("id"), 0))
    if "threads" in spec:
        for cpus, shape, _, team in (o for o in out if not isinstance(o, NotApplicable)):
            if (team or len(cpus)) != spec["threads"]:
                raise ConfigError(where, entry, f"{shape} places {len(cpus)} threads, "
                                  f"but threads: {spec['threads']}")
    return out


NOT_HERE, LEFT_OUT = ": not applicable here: ", ": left out: "


def not_applicable_record(line):
    """A not-applicable line as data for the report: {entry, what: not-applicable |
    left-out, why} (the lines are written by skip() below and by the study, nowhere else)."""
    for sep, what in ((NOT_HERE, "not-applicable"), (LEFT_OUT, "left-out")):
        if sep in line:
            entry, why = line.split(sep, 1)
            return {"entry": entry, "what": what, "why": why}
    return {"entry": "", "what": "note", "why": line}


def expand_experiment(exp, defaults, topo, where, entry, not_applicable=None, notes=None):
    """All concrete placements of one experiment (specs × memory policies × bindings).
    What cannot exist on this machine is left out, with one line per spec and memory
    target appended to not_applicable ("<entry>: not applicable here: <why>"); what was
    decided for this machine (a sampled matrix) appended to notes."""
    def skip(e, why):
        line = f"{e}{NOT_HERE}{why}"
        if not_applicable is not None and line not in not_applicable:
            not_applicable.append(line)

    launcher_name = exp.get("launcher") or defaults.get("launcher") or topo.launcher
    launcher = LAUNCHERS[launcher_name]
    memories = exp.get("memory") or defaults.get("memory") or ["local"]
    bindings = exp.get("binding") or ([defaults["binding"]] if defaults.get("binding") else [launcher.default_binding])
    out = []
    for i, spec in enumerate(exp["placements"]):
        e = f"{entry}.placements[{i}]"
        if MEMORY_SPECS & set(spec):      # memory micro-benchmark cells
            cells = memory_specs.expand(spec, topo, where, e)
            sampled = memory_specs.sampled_note(spec, topo, where, e)
            if sampled and notes is not None and sampled not in notes:
                notes.append(sampled)
            if any(m for *_, m in cells) and exp.get("memory"):
                raise ConfigError(where, e, "matrix via membind sets each cell's memory policy itself: "
                                  "drop the experiment's memory list")
        else:
            try:
                specs = expand_spec(spec, topo, where, e)
            except NotApplicable as why:
                skip(e, why)
                continue
            for why in (o for o in specs if isinstance(o, NotApplicable)):
                skip(e, why)
            cells = [(cpus, shape, pid, None, team) for cpus, shape, pid, team in
                     (o for o in specs if not isinstance(o, NotApplicable))]
        cell_bindings = bindings
        if MEMORY_SPECS & set(spec):
            # thread 0 must sit on the memory CPU: only per-thread binding keeps it there
            if exp.get("binding") and exp["binding"] != ["threads"]:
                raise ConfigError(where, e, "sweep and matrix cells pin thread 0 to the memory CPU: "
                                  "they need binding [threads]")
            cell_bindings = ["threads"]
            cells = [(*c, 0) for c in cells]
        elif "unpinned" in spec:
            if exp.get("binding") and exp["binding"] != ["process"]:
                raise ConfigError(where, e, "unpinned placements leave the threads to the OS within a mask "
                                  "of every CPU: they need binding [process]")
            cell_bindings = ["process"]
        for cpus, shape, pid, cell_memory, team in cells:
            master = topo.node_of(cpus[0])          # thread 0's node first: "nearest" is from the threads
            thread_nodes = [master] + sorted({topo.node_of(c) for c in cpus} - {master})
            for j, mspec in enumerate(memories if cell_memory is None else ["cell"]):
                mem_entry = f"{entry}.memory[{j}]" if exp.get("memory") else "memory"
                why = launcher.not_applicable(next(iter(mspec)) if isinstance(mspec, dict) else "local", topo)
                if why:             # the kernel or numactl lacks the policy: one line per memory entry
                    skip(f"{entry}.memory[{j}]" if exp.get("memory") else f"memory[{j}]", why)
                    continue
                try:
                    mems = [cell_memory] if cell_memory else Memory.resolve(mspec, thread_nodes, topo, where, mem_entry)
                except SameAs:
                    continue
                except NotApplicable as why:
                    skip(f"{mem_entry if exp.get('memory') else entry + ' memory[' + str(j) + ']'} for {shape}", why)
                    continue
                for mem, binding in itertools.product(mems, cell_bindings):
                    # a cell that sets its own memory (a membind matrix) is one placement
                    # whatever the experiment's memory list: only its own choices count
                    n_memories = 1 if cell_memory is not None else len(memories)
                    if pid and (n_memories > 1 or len(cell_bindings) > 1 or len(mems) > 1):
                        raise ConfigError(where, e + ".id", "an explicit id needs a single placement, "
                                          "but the experiment lists several memory policies or bindings")
                    p = finish(cpus, mem, binding, launcher_name, shape, topo, pid, team)
                    problem = launcher.cannot_express(p)
                    if problem:
                        raise ConfigError(where, e, f"launcher {launcher_name} cannot express "
                                          f"{p.label}: {problem}")
                    out.append(p)
    return out
