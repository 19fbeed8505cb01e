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
from pathlib import Path

import yaml

from . import ConfigError
from .build import check_source
from .kinds import kind
from .launch import command
from .placement import expand_experiment
from .schema import validate_study
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
        p = self.placement
        argv, env = command(p, "./" + self.binary_name)
        shown = [f"{k}={v}" for k, v in env.items()] + argv + list(self.args)
        return {"run_id": self.run_id, "experiment": ",".join(self.experiments),
                "bench": self.bench, "class": self.cls, "variant": self.variant,
                "rep": self.rep, "placement_id": p.id, "placement": p.label,
                "threads": p.threads, "cpus": p.cpulist, "layout": p.layout_label,
                "memory": p.memory.label, "binding": p.binding, "launcher": p.launcher,
                "command": shlex.join(shown)}


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
    if not memory and any(s for s in exp["placements"] if {"sweep", "matrix", "contention"} & set(s)):
        raise ConfigError(where, entry + ".placements", "sweep, matrix and contention placements are for the "
                          "memory micro-benchmarks (membw, memlat)")


class Study:
    def __init__(self, config, where, config_dir="config"):
        self.where = str(where)
        self.config = validate_study(config, self.where)
        self.name = self.config["study"]
        check_source(self.npb, self.where)
        self.config_dir = Path(config_dir)
        self.topology = self._topology()
        self.runs = self._expand()

    def _topology(self):
        name = self.config.get("platform", "auto")
        if name == "auto":
            return from_sysfs()
        path = platform_path(name, self.config_dir)
        if not path.exists():
            known = sorted(p.stem for p in (self.config_dir / "platforms").glob("*.yaml"))
            raise ConfigError(self.where, "platform", f"unknown platform {name!r}: no {path} "
                              f"(known: auto, {', '.join(known)})")
        return load_platform(path)

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
            reps = exp.get("repetitions", c.get("repetitions", 3))
            args = tuple(str(a) for a in exp.get("args", ()))
            benches = exp.get("benchmarks", c.get("benchmarks", ["cg", "mg"]))
            classes = exp.get("classes", c.get("classes", ["S"]))
            check_memory_experiment(exp, benches, classes, placements, self.where, entry)
            for bench in benches:
                for cls in classes:
                    for variant in exp.get("variants", c.get("variants", ["default"])):
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
        """Short hash of everything that changes the binaries (source and flags)."""
        n = self.npb
        key = {k: n.get(k) for k in ("source", "sha256", "fc", "fflags", "flinkflags", "rand")}
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
        argv, env = command(r.placement, "BINARY")
        argv = argv + list(r.args)
        # what is captured, not how it is judged: fidelity thresholds are no run's params
        capture = {k: v for k, v in self.config.get("capture", {}).items() if k != "fidelity"}
        return {"run_id": r.run_id, "study": self.name, "bench": r.bench, "class": r.cls,
                "variant": r.variant, "rep": r.rep, "placement": r.placement.to_dict(),
                "argv": argv, "env": env, "capture": capture, "run": self.config.get("run", {})}

    @property
    def fidelity_thresholds(self):
        """The study's fidelity thresholds: `fidelity:`, or the older `capture.fidelity`."""
        return {**self.config.get("capture", {}).get("fidelity", {}), **self.config.get("fidelity", {})}

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
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(str(path), "study", "no such file") from None
    except yaml.YAMLError as e:
        raise ConfigError(str(path), "YAML", f"malformed YAML: {e}") from None
    return Study(data, path, config_dir)
