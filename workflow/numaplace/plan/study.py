"""A study: the validated YAML, its platform topology and the table of measured runs.

Everything a run needs is decided here, before any build or run starts; every problem
is a ConfigError naming the file, the entry and what is wrong.
"""
from __future__ import annotations

import csv
import hashlib
import json
import shlex
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from numaplace import ConfigError
from numaplace.core import limits
from numaplace.core.artifacts import NOT_APPLICABLE, PLAN_ESTIMATE
from numaplace.plan.sources import bundled_digest, check_source, not_buildable
from numaplace.kinds import KINDS, kind
from numaplace.kinds.program import define_study as define_programs
from numaplace.plan.checks import check_figures, check_study
from numaplace.plan.launch import command
from numaplace.core.loader import load_mapping
from numaplace.plan import budget
from numaplace.plan.placement import MEMORY_SPECS
from numaplace.plan.expand import LEFT_OUT, NOT_HERE, expand_experiment, not_applicable_record
from numaplace.plan.rounds import Repetitions
from numaplace.core.schema import Section, setting, validate_study
from numaplace.machine.system import check_study as check_system
from numaplace.machine.topology import from_sysfs, load_platform, platform_path
from numaplace.core.cpulist import format_cpulist
from numaplace.core.text import counted



PROGRAM_BUILDS = "results/build/programs"     # a program's build records: one folder per program and build key


@dataclass(frozen=True)
class Run:
    run_id: str
    experiments: tuple
    bench: str
    cls: str
    variant: str
    rep: int
    placement: object
    args: tuple = ()            # extra argv of a memory micro-benchmark (experiment `args`)

    @property
    def binary_name(self):
        return kind(self.bench).binary_name(self.cls)

    @property
    def program_args(self):
        """The argv after the program: its kind's own (a study's program's command), then
        the experiment's args."""
        return kind(self.bench).command_args(self.cls) + tuple(self.args)

    def row(self):
        return {"run_id": self.run_id, "experiment": ",".join(self.experiments),
                "bench": self.bench, "class": self.cls, "variant": self.variant, "rep": self.rep,
                **_plan_columns(self.placement),
                "command": _shown_command(self.placement, kind(self.bench).shown_program(self.cls), self.program_args)}


# Per placement, computed once: a study has few placements and many runs of each
# (benchmarks × classes × variants × repetitions), and Snakemake asks for every run's
# definition while it plans.

@lru_cache(maxsize=None)
def _plan_columns(p):
    return {"placement_id": p.id, "placement": p.label, "threads": p.threads, "cpus": p.cpulist,
            "layout": p.layout_label, "memory": p.memory.label, "binding": p.binding,
            "launcher": p.launcher}


@lru_cache(maxsize=None)
def _shown_command(p, program, args=()):
    # NAME='value' (the value quoted, not the assignment): bash runs the line as written;
    # a bare binary name is the one in the run's folder
    argv, env = command(p, program if "/" in program else "./" + program)
    return " ".join([f"{k}={shlex.quote(str(v))}" for k, v in env.items()]
                    + [shlex.quote(str(a)) for a in argv + list(args)])


@lru_cache(maxsize=None)
def _definition(p):
    argv, env = command(p, "BINARY")
    return p.to_dict(), tuple(argv), tuple(env.items())


def args_tag(args):
    """Run-id part telling apart runs of one placement with different benchmark args."""
    return "" if not args else ".a" + hashlib.sha256(json.dumps(list(args)).encode()).hexdigest()[:6]


def check_memory_experiment(exp, benches, classes, placements, where, entry):
    """Micro-benchmarks have one class (X) and take args; NPB kernels neither;
    sweep/matrix cells are memory cells."""
    memory = [b for b in benches if kind(b).takes_args]
    if memory and len(memory) != len(benches):
        raise ConfigError(where, entry + ".benchmarks", "NPB kernels and memory micro-benchmarks "
                          f"({', '.join(memory)}) go in separate experiments")
    if memory and classes != ["X"]:
        raise ConfigError(where, entry + ".classes", f"{', '.join(memory)} have one class, X "
                          "(sizes are args): write classes: [X]")
    if not memory and "X" in classes and any(len(kind(b).classes) > 1 for b in benches):
        raise ConfigError(where, entry + ".classes", "class X is the memory micro-benchmarks' class")
    if not memory and exp.get("args"):
        raise ConfigError(where, entry + ".args", "args are for the memory micro-benchmarks ("
                          f"{', '.join(k for k, v in KINDS.items() if v.takes_args)})")
    if not memory and any(s for s in exp["placements"] if MEMORY_SPECS & set(s)):
        raise ConfigError(where, entry + ".placements", "sweep, matrix and contention placements are for the "
                          "memory micro-benchmarks (membw, memlat)")


class Study:
    def __init__(self, config, where, config_dir="config", origin=None):
        """origin: the folder a study's relative paths (a program's) are read from: the
        study file's own, also when a workflow reads its frozen copy."""
        self.where = str(where)
        define_programs(config, self.where, origin or Path(where).parent)   # before the schema: benchmarks may name them
        self.config = validate_study(config, self.where)
        self.name = self.config["study"]
        check_system(self.config.get("system"), self.where)     # before any run: may we?
        check_source(self.npb, self.where)
        self.config_dir = Path(config_dir)
        self.topology = self._topology()
        check_study(self.config, self.topology, self.where)
        self.class_of = {}                # (kernel, class asked for) -> class a budget chose
        self.runs = self._expand()
        self.budget_notes = []
        if self.config.get("budget") is not None:
            self._fit_budget()
        check_figures(self.config, self.topology, self.runs, self.where)

    def _topology(self):
        name = setting("platform", self.config)
        if name == "auto":
            return from_sysfs()
        path = platform_path(name, self.config_dir)
        if not path.exists():
            known = sorted(p.stem for p in (self.config_dir / "platforms").glob("*.yaml"))
            raise ConfigError(self.where, "platform", f"unknown platform {name!r}: no {path} "
                              f"(known: auto, {', '.join(known)})")
        return load_platform(path, limits.of(self.config))

    def _expand(self):
        c = self.config
        runs, by_placement_id = {}, {}
        self.not_applicable = []          # what this machine cannot have, one line each
        self.repetitions = {}             # experiment name -> its Repetitions
        self.sizing_notes = []            # what the plan decided for this machine (a buffer stepped down, a sampled matrix)
        for i, exp in enumerate(c["experiments"]):
            entry = f"experiments[{i}] ({exp['name']})"
            # a kernel numaplace does not bundle (EP, IS, FT) with no official tree given: its
            # runs are left out, one line (numaplace.plan.sources.not_buildable), nothing fetched
            unbuilt = {b: why for b in setting("benchmarks", c, exp) if (why := not_buildable(kind(b), self.npb))}
            for why in dict.fromkeys(unbuilt.values()):
                self.not_applicable.append(f"{entry}.benchmarks{NOT_HERE}{why}")
            if len(unbuilt) == len(setting("benchmarks", c, exp)):
                continue
            placements = expand_experiment(exp, c, self.topology, self.where, entry, self.not_applicable,
                                           self.sizing_notes)
            # a portable placement its kind cannot run here (loaded latency on a one-core node)
            # is not applicable; an explicit one stays, for check_args to refuse
            first = kind(setting("benchmarks", c, exp)[0])
            cannot = {p.id: why for p in placements if "(" in p.shape and (why := first.cannot_run(p))}
            for p in placements:
                if p.id in cannot:
                    line = f"{entry}{NOT_HERE}{p.shape}: {cannot[p.id]}"
                    if line not in self.not_applicable:
                        self.not_applicable.append(line)
            placements = [p for p in placements if p.id not in cannot]
            if not placements:
                self.not_applicable.append(f"{entry}{LEFT_OUT}none of its placements exists on this "
                                           f"machine ({self.topology.name})")
                continue
            for p in placements:
                other = by_placement_id.setdefault(p.id, p)
                if (other.cpus, other.memory, other.binding, other.launcher, other.threads) != \
                        (p.cpus, p.memory, p.binding, p.launcher, p.threads):
                    raise ConfigError(self.where, entry, f"duplicate placement id {p.id!r} "
                                      f"for two different placements ({other.label} / {p.label})")
            reps = self.repetitions[exp["name"]] = Repetitions.of(setting("repetitions", c, exp))
            args = tuple(str(a) for a in exp.get("args", ()))
            benches = setting("benchmarks", c, exp)
            classes = setting("classes", c, exp)
            check_memory_experiment(exp, benches, classes, placements, self.where, entry)
            args, notes = kind(benches[0]).fit_args(args, placements, self.topology)
            self.sizing_notes += [f"{entry}: {n}" for n in notes]
            kind(benches[0]).check_args(args, benches, placements, self.topology, c, self.where, entry)
            benches = [b for b in benches if b not in unbuilt]
            for bench in benches:
                # a kind of one class (a program) runs at it, whatever the experiment's classes
                own = classes if len(kind(bench).classes) > 1 else kind(bench).classes
                for cls in dict.fromkeys(self.class_of.get((bench, c), c) for c in own):
                    for variant in setting("variants", c, exp):
                        for p in placements:
                            for rep in range(1, reps.most + 1):
                                rid = f"{bench}.{cls}.{variant}.{p.id}{args_tag(args)}.r{rep}"
                                old = runs.get(rid)
                                exps = (old.experiments if old else ()) + \
                                    ((exp["name"],) if not old or exp["name"] not in old.experiments else ())
                                runs[rid] = Run(rid, exps, bench, cls, variant, rep, by_placement_id[p.id], args)
        if not runs:
            raise ConfigError(self.where, "experiments", "nothing of this study exists on this machine: "
                              + "; ".join(self.not_applicable))
        return list(runs.values())

    # -- what it costs --------------------------------------------------------------
    @cached_property
    def speed(self):
        """This machine's budget.Speed against the reference machine's, for the estimate;
        the reference's own for a named platform (planned elsewhere: nothing to measure)."""
        return (budget.machine_speed(Path("results") / self.name)
                if setting("platform", self.config) == "auto" else budget.Speed())

    def estimate(self):
        return budget.Estimate(self.runs, self.builds_to_do(), self.speed)

    def _fit_budget(self):
        """Step NPB classes down (C -> B -> A), per kernel, while a kernel's pages do not fit
        the node they are meant for (free memory per node and class, kept per study: a
        serial-init run puts its whole working set on one node), then every kernel's
        largest class while the estimate is above the study's budget, then repetitions (to
        3, and never below an adaptive experiment's min or 4: its max steps down). Each step is
        said in budget_notes."""
        import copy
        text = self.config["budget"]
        limit = budget.parse_minutes(text) * 60
        first = self.estimate().total
        free = budget.kept_free_mb(self.topology, Path("results") / self.name)
        steps = []
        while True:
            spills = [s for s in budget.memory_spills(self.runs, self.topology, free)
                      if kind(s.bench).class_steps and budget.step_down([s.cls])]
            if not spills and self.estimate().total <= limit:
                break
            if spills:                          # the kernel whose pages do not fit
                worst = max(spills, key=lambda s: budget.CLASS_ORDER.index(s.cls))
                step, benches = budget.step_down([worst.cls]), [worst.bench]
                why = f" for {worst.bench} ({worst}: it would spill)"
            else:                               # time: every kernel's largest class
                step = budget.step_down([r.cls for r in self.runs if kind(r.bench).class_steps])
                benches, why = sorted({r.bench for r in self.runs if kind(r.bench).class_steps}), ""
            if step:
                (old, new), = step.items()
                for bench in benches:
                    for key, cls in list(self.class_of.items()):     # C -> B, then B -> A: C -> A
                        if key[0] == bench and cls == old:
                            self.class_of[key] = new
                    self.class_of[(bench, old)] = new
                steps.append(f"class {old} -> {new}{why}")
            else:
                c = self.config = copy.deepcopy(self.config)
                exps = c["experiments"]
                reps = {e["name"]: Repetitions.of(setting("repetitions", c, e)) for e in exps}
                # never below 3, never up to 3 from fewer, never below an adaptive min or 4
                fewer = {n: r for n, r in reps.items() if r.can_step_down()}
                if not fewer:
                    floor = "3 repetitions" + (" (or an adaptive experiment's min, and at least 4 rounds: with "
                                               "3 runs a side no case could stop early at p < 0.05)"
                                               if any(r.adaptive for r in reps.values()) else "")
                    raise ConfigError(self.where, "budget", f"{text}: even class A with at most {floor} is "
                                      f"estimated at {budget.format_duration(self.estimate().total)}; "
                                      "raise the budget or leave experiments out")
                for e in exps:
                    if e["name"] in fewer:
                        r = fewer[e["name"]]
                        e["repetitions"] = r.setting(r.most - 1)
                steps.append("one repetition fewer")
            self.runs = self._expand()
        if steps:
            fewer = steps.count("one repetition fewer")
            steps = [x for x in steps if x != "one repetition fewer"] + \
                ([f"{fewer} repetition{'s' if fewer > 1 else ''} fewer where there were more than 3"] if fewer else [])
            self.budget_notes.append(f"budget {text}: estimated {budget.format_duration(first)} before; "
                                     f"dropped: {'; '.join(steps)}; now {budget.format_duration(self.estimate().total)}")

    # -- builds --------------------------------------------------------------------
    @property
    def npb(self):
        return self.config.get("npb", {})

    def build_key(self):
        """Short hash of everything that changes the binaries (source, bundled trees' contents,
        flags); computed once (it hashes the bundled trees; Snakemake asks per run)."""
        return self._build_key

    @cached_property
    def _build_key(self):
        n = self.npb
        key = {k: n.get(k) for k in ("source", "sha256", "fc", "fflags", "flinkflags", "rand")}
        key["bundled"] = bundled_digest(n)
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]

    def binaries(self):
        return sorted({(r.bench, r.cls, r.variant) for r in self.runs})

    @property
    def build_dir(self):
        """results/build/<build key>: the binaries of every study with the same key."""
        return f"results/build/{self.build_key()}"

    def build_record(self, bench, cls, variant):
        """A binary's build record; the binary, when the build succeeded, is beside it (a
        program's is in its own folder, and its record under its own key)."""
        k = kind(bench)
        if k.builds_itself:
            return f"{PROGRAM_BUILDS}/{bench}-{k.build_digest()}/{bench}.{cls}.build.json"
        return f"{self.build_dir}/{variant}/bin/{bench}.{cls}.build.json"

    def build_settings(self, bench):
        """What a build job is given: the study's npb settings, or a program's definition."""
        k = kind(bench)
        return {"program": k.definition} if k.builds_itself else self.npb

    def builds_to_do(self):
        """The binaries without a build record yet (a failed build is not tried again)."""
        return [b for b in self.binaries() if not Path(self.build_record(*b)).exists()]

    def run(self, run_id):
        if not hasattr(self, "_by_id"):
            self._by_id = {r.run_id: r for r in self.runs}
        return self._by_id[run_id]

    def run_params(self, run_id):
        """Everything that defines one measured run (its rule's params): changes here, and
        only here, make Snakemake re-run it."""
        r = self.run(run_id)
        placement, argv, env = _definition(r.placement)
        argv = list(argv) + list(r.program_args)
        k = kind(r.bench)
        env = {**dict(env), **k.thread_env(r.placement.threads)}
        # what is captured, not how it is judged: fidelity thresholds are no run's params
        capture = {k: v for k, v in self.config.get("capture", {}).items() if k != "fidelity"}
        return {"run_id": r.run_id, "study": self.name, "bench": r.bench, "class": r.cls,
                "variant": r.variant, "rep": r.rep, "placement": dict(placement),
                "argv": list(argv), "env": dict(env), "capture": capture, "run": self.config.get("run", {}),
                "build": self.build_key(),       # the binary: other flags or sources, another run
                # only when set: studies without it keep their params (and their records)
                **({"system": self.config["system"]} if self.config.get("system") else {}),
                # a program's definition travels with its runs (numaplace.kinds.program)
                **({"program": k.definition} if k.builds_itself else {})}

    # -- the jobs that measure: chunks of rounds (numaplace.plan.rounds) ------------------
    @cached_property
    def chunks(self):
        """The measure jobs' chunks, round by round, cut at the reference machine's speed
        (every process that plans the study must cut them alike)."""
        from numaplace.plan import rounds
        size = {r.run_id: len(self.entry_texts.text(r)) for r in self.runs}
        return rounds.chunks(self.runs, {r.run_id: budget.run_seconds(r) for r in self.runs},
                             self.config.get("rounds"), size)

    @cached_property
    def entry_texts(self):
        """Each run's chunk_entry as JSON (sort_keys), made once per shape (rounds.RunTexts)."""
        from numaplace.plan import rounds
        return rounds.RunTexts(lambda r: self.chunk_entry(r.run_id), sort_keys=True)

    def chunk(self, chunk_id):
        if not hasattr(self, "_chunk_by_id"):
            self._chunk_by_id = {c.id: c for c in self.chunks}
        return self._chunk_by_id[chunk_id]

    def chunk_entry(self, run_id):
        """One run as its chunk's job receives it: its params and its binary's build record;
        for an adaptive run also its repetitions (beside the params, not in them: they are
        no part of the run's definition, and changing max measures nothing again)."""
        r = self.run(run_id)
        entry = {"spec": self.run_params(run_id), "build": self.build_record(r.bench, r.cls, r.variant)}
        reps = self.adaptive(run_id)
        if reps:
            entry["adaptive"] = reps.facts()
        return entry

    def adaptive(self, run_id):
        """The adaptive Repetitions a run is measured under, or None: a run that any of its
        experiments repeats a fixed number of times is always measured. Shared by several
        adaptive experiments: the largest min and max, the smallest alpha."""
        reps = [self.repetitions[e] for e in self.run(run_id).experiments]
        if not all(r.adaptive for r in reps):
            return None
        return Repetitions(max(r.least for r in reps), max(r.most for r in reps), min(r.alpha for r in reps))

    def decides(self, chunk):
        """Does a chunk hold a run that is measured only if its case is not yet decided
        (adaptive, past its min)?"""
        if not any(r.adaptive for r in self.repetitions.values()):      # no run is adaptive
            return False
        return any((reps := self.adaptive(rid)) and self.run(rid).rep > reps.least for rid in chunk.run_ids)

    @cached_property
    def _waits(self):
        from numaplace.plan import rounds
        return rounds.waits_for(self.chunks, self.decides)

    def waits_for(self, chunk_id):
        """The chunks whose ledgers a chunk's job waits for (numaplace.plan.rounds.waits_for)."""
        return self._waits[chunk_id]

    @property
    def fidelity_thresholds(self):
        """The study's fidelity thresholds: `fidelity:`, or the older `capture.fidelity`. The
        schema fills its defaults into both: a default in `fidelity:` does not hide a value
        the study set in `capture.fidelity`."""
        from numaplace.core.schema import defaults
        older = self.config.get("capture", {}).get("fidelity", {})
        given = {k: v for k, v in self.config.get("fidelity", {}).items()
                 if not (k in older and v == defaults("fidelity").get(k))}
        return {**older, **given}

    def plan_digest(self):
        from numaplace.plan.rounds import RunTexts      # json.dumps of every row, hashed piece by piece
        digest = hashlib.sha256()
        for piece in RunTexts(Run.row).listed(self.runs):
            digest.update(piece.encode())
        return digest.hexdigest()[:16]

    def write_plan(self, path):
        """plan.tsv, one row per run, and beside it not_applicable.txt: what the study asks
        for that this machine cannot have (one line each; empty when everything applies)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [r.row() for r in self.runs]
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        (path.parent / NOT_APPLICABLE).write_text("".join(line + "\n" for line in self.not_applicable))
        est = self.estimate()
        (path.parent / PLAN_ESTIMATE).write_text(json.dumps(
            {"runs": len(self.runs), "runs_s": est.total - est.builds, "builds_s": est.builds,
             "builds": [str(Path(self.build_record(*b)).resolve()) for b in self.builds_to_do()],
             "speed": self.speed._asdict(), "per_experiment_s": est.per_experiment,
             "per_run_s": {k: round(v, 2) for k, v in est.per_run.items()},
             # what the plan decided for this machine, as data the report reads (never its text parsed back)
             "decisions": {"not_applicable": [not_applicable_record(x) for x in self.not_applicable],
                           "machine": self.machine_notes(), "sizing": self.sizing_notes,
                           "budget": self.budget_notes}}, indent=1))

    def machine_notes(self):
        """What about the machine shapes the plan: an allocation, memory-only nodes,
        unequal nodes (where `node` is each placement's own node's cores)."""
        topo, notes = self.topology, []
        if topo.memory_only_nodes:
            notes.append(f"memory-only node{'s' * (len(topo.memory_only_nodes) > 1)} "
                         f"{format_cpulist(topo.memory_only_nodes)}: memory targets of the matrices (membind from "
                         "every CPU node), of interleave all and of nearest/farthest (by SLIT distance)")
        if topo.node_sizes_differ():
            sizes = ", ".join(f"node {n} {len(topo.node_cpus(n))}" for n in topo.cpu_nodes)
            notes.append(f"nodes differ in cores ({sizes}): `node` counts the placement's own node")
        return notes

    def plan_summary(self):
        """What `numaplace plan` and the workflow's first lines say: runs per experiment,
        the classes per kernel, and what was left out as not applicable here."""
        topo = self.topology
        # adaptive repetitions: every round up to max is planned and counted, but a case may stop early
        adaptive = {n for n, r in self.repetitions.items() if r.adaptive}
        upto = "up to " if adaptive else ""
        head = (f"study {self.name} on {topo.name}"
                + (f", {topo.restriction_words()}" if topo.allowed else "") + f": {topo.nodes_words()}, "
                f"{counted(len(topo.cores()), 'core')}"
                + (f" ({len(topo.cpus)} CPUs)" if topo.siblings else "") + f": {upto}{len(self.runs)} runs")
        per_exp = {e["name"]: 0 for e in self.config["experiments"]}
        for r in self.runs:
            for e in r.experiments:
                per_exp[e] = per_exp.get(e, 0) + 1
        classes = {}
        for r in self.runs:
            classes.setdefault(r.bench, set()).add(r.cls)
        est = self.estimate()
        speed = (f"this machine reads {self.speed.memory * budget.REF_READ_GBS:.1f} GB/s and starts a "
                 f"run in {budget.REF_START_S / self.speed.cpu:.2f} s, the reference {budget.REF_READ_GBS:.1f} "
                 f"and {budget.REF_START_S:.2f}" if setting("platform", self.config) == "auto"
                 else "at the reference machine's speed: a named platform is not measured")
        auto = setting("platform", self.config) == "auto"
        slowest = budget.slowest_speed(Path("results") / self.name, self.speed) if auto else self.speed
        slow = budget.Estimate(self.runs, self.builds_to_do(), slowest).total if slowest != self.speed else est.total
        spread = (f" (up to {budget.format_duration(slow)} at the slowest of its speed probes)"
                  if budget.format_duration(slow) != budget.format_duration(est.total) else "")
        lines = [head + f", estimated machine time {upto}{budget.format_duration(est.total)}{spread} ({speed})",
                 "  classes: " + ", ".join(f"{b} {'/'.join(sorted(c))}" for b, c in sorted(classes.items()))]
        lines += [f"  {e}: " + ("up to " if e in adaptive else "") + f"{counted(n, 'run')}, ~"
                  + ("up to " if e in adaptive else "") + budget.format_duration(est.per_experiment.get(e, 0))
                  + (f"; repeats {self.repetitions[e].words()}" if e in adaptive else "")
                  for e, n in per_exp.items() if n]
        if any(len(r.experiments) > 1 for r in self.runs):
            lines.append("  (a run that experiments share counts in each of them, once in the total)")
        todo = len(self.builds_to_do())
        lines += [f"  builds: {len(self.binaries())}"
                  + (f", {todo} to do" if todo != len(self.binaries()) else "") + f", ~{budget.format_duration(est.builds)}"]
        busy = budget.busy_words(Path("results") / self.name, Section("run", self.config.get("run"))["idle_busy_max"]) \
            if auto else None
        if busy:                          # said first, before any run is spent on it
            lines.insert(1, f"  {busy}")
        lines += [f"  {line}" for line in self.machine_notes() + self.sizing_notes + self.budget_notes
                  + budget.memory_warnings(self.runs, self.topology) + self.not_applicable]
        from numaplace.machine.pmu import plan_lines     # capture.counters: one line, counted or why not
        from numaplace.plan.launch import LAUNCHERS
        lines += [f"  {line}" for line in plan_lines(self.config.get("capture") or {}, {
            LAUNCHERS[r.placement.launcher] for r in self.runs}, setting("platform", self.config))]
        return lines




def load_study_file(path, config_dir="config", origin=None):
    """The study in a file, read strictly (numaplace.core.loader) and checked whole."""
    return Study(load_mapping(path, "study"), path, config_dir, origin)
