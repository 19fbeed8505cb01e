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
from functools import lru_cache
from pathlib import Path

from . import ConfigError, limits
from .build import bundled_digest, check_source
from .kinds import kind
from .checks import check_study
from .launch import command
from .loader import load_mapping
from .placement import MEMORY_SPECS, expand_experiment
from .schema import setting, validate_study
from .system import check_study as check_system
from .topology import from_sysfs, load_platform, platform_path



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

    def row(self):
        return {"run_id": self.run_id, "experiment": ",".join(self.experiments),
                "bench": self.bench, "class": self.cls, "variant": self.variant, "rep": self.rep,
                **_plan_columns(self.placement), "command": _shown_command(self.placement, self.binary_name, tuple(self.args))}


# Per placement, computed once: a study has few placements and many runs of each
# (benchmarks × classes × variants × repetitions), and Snakemake asks for every run's
# definition while it plans.

@lru_cache(maxsize=None)
def _plan_columns(p):
    return {"placement_id": p.id, "placement": p.label, "threads": p.threads, "cpus": p.cpulist,
            "layout": p.layout_label, "memory": p.memory.label, "binding": p.binding,
            "launcher": p.launcher}


@lru_cache(maxsize=None)
def _shown_command(p, binary_name, args=()):
    argv, env = command(p, "./" + binary_name)
    return shlex.join([f"{k}={v}" for k, v in env.items()] + argv + [str(a) for a in args])


@lru_cache(maxsize=None)
def _definition(p):
    argv, env = command(p, "BINARY")
    return p.to_dict(), tuple(argv), tuple(env.items())


def args_tag(args):
    """Run-id part telling apart runs of one placement with different benchmark args."""
    return "" if not args else ".a" + hashlib.sha256(json.dumps(list(args)).encode()).hexdigest()[:6]


def check_memory_experiment(exp, benches, classes, placements, where, entry):
    """Memory micro-benchmarks have one class (X) and take args; NPB kernels neither;
    sweep/matrix cells are memory cells."""
    memory = [b for b in benches if kind(b).family == "memory"]
    if memory and len(memory) != len(benches):
        raise ConfigError(where, entry + ".benchmarks", "NPB kernels and memory micro-benchmarks "
                          f"({', '.join(memory)}) go in separate experiments")
    if memory and classes != ["X"]:
        raise ConfigError(where, entry + ".classes", f"{', '.join(memory)} have one class, X "
                          "(sizes are args): write classes: [X]")
    if not memory and "X" in classes:
        raise ConfigError(where, entry + ".classes", "class X is the memory micro-benchmarks' class")
    if not memory and exp.get("args"):
        raise ConfigError(where, entry + ".args", "args are for the memory micro-benchmarks (membw, memlat)")
    if not memory and any(s for s in exp["placements"] if MEMORY_SPECS & set(s)):
        raise ConfigError(where, entry + ".placements", "sweep, matrix and contention placements are for the "
                          "memory micro-benchmarks (membw, memlat)")


class Study:
    def __init__(self, config, where, config_dir="config"):
        self.where = str(where)
        self.config = validate_study(config, self.where)
        self.name = self.config["study"]
        check_system(self.config.get("system"), self.where)     # before any run: may we?
        check_source(self.npb, self.where)
        self.config_dir = Path(config_dir)
        self.topology = self._topology()
        check_study(self.config, self.topology, self.where)
        self.runs = self._expand()

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
        for i, exp in enumerate(c["experiments"]):
            entry = f"experiments[{i}] ({exp['name']})"
            placements = expand_experiment(exp, c, self.topology, self.where, entry)
            for p in placements:
                other = by_placement_id.setdefault(p.id, p)
                if (other.cpus, other.memory, other.binding, other.launcher) != \
                        (p.cpus, p.memory, p.binding, p.launcher):
                    raise ConfigError(self.where, entry, f"duplicate placement id {p.id!r} "
                                      f"for two different placements ({other.label} / {p.label})")
            reps = setting("repetitions", c, exp)
            args = tuple(str(a) for a in exp.get("args", ()))
            benches = setting("benchmarks", c, exp)
            classes = setting("classes", c, exp)
            check_memory_experiment(exp, benches, classes, placements, self.where, entry)
            for bench in benches:
                for cls in classes:
                    for variant in setting("variants", c, exp):
                        for p in placements:
                            for rep in range(1, reps + 1):
                                rid = f"{bench}.{cls}.{variant}.{p.id}{args_tag(args)}.r{rep}"
                                old = runs.get(rid)
                                exps = (old.experiments if old else ()) + \
                                    ((exp["name"],) if not old or exp["name"] not in old.experiments else ())
                                runs[rid] = Run(rid, exps, bench, cls, variant, rep, by_placement_id[p.id], args)
        return list(runs.values())

    # -- builds --------------------------------------------------------------------
    @property
    def npb(self):
        return self.config.get("npb", {})

    def build_key(self):
        """Short hash of everything that changes the binaries (source, bundled trees' contents, flags)."""
        n = self.npb
        key = {k: n.get(k) for k in ("source", "sha256", "fc", "fflags", "flinkflags", "rand")}
        key["bundled"] = bundled_digest(n)
        return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]

    def binaries(self):
        return sorted({(r.bench, r.cls, r.variant) for r in self.runs})

    def run(self, run_id):
        if not hasattr(self, "_by_id"):
            self._by_id = {r.run_id: r for r in self.runs}
        return self._by_id[run_id]

    def run_params(self, run_id):
        """Everything that defines one measured run (its rule's params): changes here, and
        only here, make Snakemake re-run it."""
        r = self.run(run_id)
        placement, argv, env = _definition(r.placement)
        argv = list(argv) + list(r.args)
        # what is captured, not how it is judged: fidelity thresholds are no run's params
        capture = {k: v for k, v in self.config.get("capture", {}).items() if k != "fidelity"}
        return {"run_id": r.run_id, "study": self.name, "bench": r.bench, "class": r.cls,
                "variant": r.variant, "rep": r.rep, "placement": dict(placement),
                "argv": list(argv), "env": dict(env), "capture": capture, "run": self.config.get("run", {}),
                # only when set: studies without it keep their params (and their records)
                **({"system": self.config["system"]} if self.config.get("system") else {})}

    @property
    def fidelity_thresholds(self):
        """The study's fidelity thresholds: `fidelity:`, or the older `capture.fidelity`. The
        schema fills its defaults into both: a default in `fidelity:` does not hide a value
        the study set in `capture.fidelity`."""
        from .schema import defaults
        older = self.config.get("capture", {}).get("fidelity", {})
        given = {k: v for k, v in self.config.get("fidelity", {}).items()
                 if not (k in older and v == defaults("fidelity").get(k))}
        return {**older, **given}

    def plan_digest(self):
        return hashlib.sha256(json.dumps([r.row() for r in self.runs]).encode()).hexdigest()[:16]

    def write_plan(self, path):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [r.row() for r in self.runs]
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter="\t", lineterminator="\n")
            w.writeheader()
            w.writerows(rows)


def load_study_file(path, config_dir="config"):
    """The study in a file, read strictly (numaplace.loader) and checked whole."""
    return Study(load_mapping(path, "study"), path, config_dir)
