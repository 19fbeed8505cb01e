"""Benchmark kinds: everything numaplace knows about one benchmark, in one place.

A kind says how its binary is named and built (a bundled source tree with NPB's make
interface), how its stdout is parsed, what "verified" means, which metric it reports
(and whether higher is better), what a run costs a batch system, which `args` it takes,
and which tables and figures it adds to the report. Every stage asks the registry; no
stage tests a kind's name.

Every module of this folder is a kind's own (npb.py: cg, mg; memory.py: membw, memlat;
stream.py), imported when the registry is: adding a kind is adding its module (it calls
`register`), its source tree, and a study that runs it.

The report's outputs come from here too: the tables and figures made for every kind's
runs (COMMON_TABLES, COMMON_FIGURES: the placement comparison, for kinds whose runs are
`compared`), then each kind's own (`Kind.tables`, `Kind.figures`)."""
from __future__ import annotations

import importlib
import pkgutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[3]


class Kind:
    name = ""                  # the study's `benchmarks:` entry, the run id's first part
    family = ""                # "npb", "memory": which tables and figures it feeds
    title = ""
    metric = ""                # the output field compared across placements
    unit = ""
    higher_is_better = True
    source_dir = None          # bundled source tree (NPB's make interface)
    classes = ()
    variants = ("default",)
    tree_name = "tree"         # build tree folder beside the variant's (NPB kinds share one)
    follows_npb_source = True  # built from the study's npb.source (else always source_dir)
    builds_itself = False      # built by its own build_binary, not by NPB's make interface
    # which numa_maps sample is the run's working set, judged for memory placement:
    # "steady" (the footprint the run settled on) or "peak" (the largest one seen)
    footprint = "steady"
    compared = True            # one metric value per run: compared per placement (summary, best_worst)
    takes_args = False         # an experiment's `args` go to the binary
    class_steps = False        # a budget may step its class down (C -> B -> A)
    # a memory kind whose node x node cells are one of the machine's matrices (the report's
    # first screen, the answer's headline, compare's fingerprint, explain's costs): MatrixRole
    matrix = None
    # a compared kind whose placements the matrices explain (tables/explain.py): ExplainModel,
    # or None (its placements are not explained, and the report says so)
    explain = None
    # a control (EP: no memory traffic): the answer's words on what a placement effect on it
    # means (the machine's or noise, not memory placement); no best placement is recommended
    control = None
    # the arrays a serial-init build of NASA's tree zeroes on the master thread before the
    # parallel first touch (numaplace.builds.serial_init; allocation order of NPB's source)
    serial_init_arrays = ()
    tables: dict = {}          # its own tables: name → caption (results/<study>/tables/<name>.csv)
    figures: dict = {}         # its own figures: name → title (report/<study>/figures/<name>/)

    def binary_name(self, cls):
        return f"{self.name}.{cls}.x"

    def shown_program(self, cls):
        """The program as a launch line shows it (plan.tsv, the answer's launch lines)."""
        return "./" + self.binary_name(cls)

    def command_args(self, cls):
        """Arguments every run of class cls gives the program (before an experiment's args)."""
        return ()

    def thread_env(self, threads):
        """Environment beyond OpenMP's that tells the program its thread count."""
        return {}

    def case_name(self, cls):
        """How the answer names a case of this kind: 'CG class B'."""
        return f"{self.name.upper()} class {cls}"

    def complete_output(self, output, rec):
        """Fill what the parsed stdout lacks from the run's record (a program's wall time)."""

    def make_args(self, cls, variant, official=False):
        """The make command that builds binary_name(cls) in a prepared tree."""
        return ["make", self.name.upper(), f"CLASS={cls}"]

    def parse(self, stdout):
        """The benchmark's stdout → dict with at least `complete` and `verified`."""
        raise NotImplementedError

    def outcome(self, output, exit_status):
        """(status, reason) of a run that ended by itself, from its parsed output."""
        if output["complete"] and not output["verified"]:
            return "unverified", f"verification failed (exit status {exit_status})"
        if exit_status != 0:
            return "failed", ended(exit_status)
        if not output["complete"]:
            return "failed", f"no {self.title} report in stdout"
        return "ok", None

    def estimate(self, cls):
        """(seconds one thread needs, resident MiB) for batch-system requests."""
        raise NotImplementedError

    def working_set_bytes(self, output):
        """Bytes the run's judged footprint must hold to have seen its working set, from
        its parsed output; None when the output does not say."""
        return None

    def run_seconds(self, cls, threads, args, speed=1.0):
        """Seconds one run takes, estimated (numaplace.plan.budget), on a machine of `speed`
        times the reference machine's read bandwidth."""
        raise NotImplementedError

    def working_set_mb(self, cls):
        """Peak resident MiB of one run of class cls, or None when its args decide."""
        return None

    def cannot_run(self, placement):
        """Why this kind cannot measure anything on that placement, or None. A portable
        placement (a word such as `node` resolved on this machine) it cannot run is left
        out as not applicable; an explicit one is refused by check_args."""
        return None

    def fit_args(self, args, placements, topo):
        """(args, notes): the experiment's args sized for this machine, and one plan line
        per change (a buffer stepped down so the run fits its node); unchanged by default."""
        return args, []

    def check_args(self, args, benches, placements, topo, config, where, entry):
        """Refuse (ConfigError) an experiment's args this kind would not take (only kinds
        that take args get any: numaplace.plan.study.check_memory_experiment)."""

    # -- its own tables and figures: made once per group of kinds that share the method
    # (membw and memlat fill the same memory tables), from the records of that group
    def make_tables(self, records, thresholds):
        """{name: DataFrame} of its own tables from its group's records (each a
        numaplace.record.store.Record: the typed view of a record), judged under the study's fidelity
        thresholds (the schema's `fidelity` section, defaults filled in)."""
        return {}

    def figure_size(self, runs, cfg, char_in):
        """(width, height, what makes it tall) in inches of its own largest figure for these
        runs (the study's figures settings cfg, char_in inches a label character), or None;
        checked before the study runs (numaplace.plan.checks.check_figures)."""
        return None

    def draw(self, tables, writer):
        """Draw its own figures from every table ({name: DataFrame}) with writer.save."""

    def summary(self, tables, md_table):
        """Markdown lines of its section of summary.md (md_table: the report's table maker)."""
        return []

    def answer(self, tables):
        """Lines of the answer (report's first screen, the terminal) from its own tables."""
        return []


def ended(exit_status):
    """'exit status 3', or 'killed by SIGSEGV' (Popen's negative status)."""
    if exit_status < 0:
        try:
            return f"killed by {signal.Signals(-exit_status).name}"
        except ValueError:
            return f"killed by signal {-exit_status}"
    return f"exit status {exit_status}"


KINDS: dict[str, Kind] = {}


@dataclass(frozen=True)
class MatrixRole:
    """How a memory kind's node x node medians read as one of the machine's matrices."""
    what: str                   # "latency" | "read bandwidth": the matrix's name in the report
    unit: str                   # shown unit ("ns", "GB/s")
    scale: float                # table unit → shown unit (MB/s → GB/s: 1e-3)
    fmt: str                    # number format of a cell
    higher_is_better: bool
    cost: str                   # what a cell is to explain: "latency" (ns per load) | "bandwidth" (s per GB)
    not_cells: tuple = ()       # its modes whose runs are no cell (membw's parallel contention runs)

    def cells(self, table, bench):
        """The rows of memory_matrix.csv that are cells of this kind's matrix."""
        return table[(table["bench"] == bench) & ~table["mode"].astype(str).isin(self.not_cells)]


@dataclass(frozen=True)
class ExplainModel:
    """How a compared kind's placement costs follow from a matrix (numaplace.tables.explain):
    the kind whose matrix it reads, the share of a thread's loads that reach every thread's
    data (cls, threads → 0-1), and whether threads on one node contend for its bandwidth."""
    matrix_kind: str
    shared_share: Callable
    contends: bool = False


def matrix_kinds():
    """{kind name: MatrixRole} of the registered kinds that give the machine's matrices."""
    return {k.name: k.matrix for k in KINDS.values() if k.matrix}


def explained_kinds():
    """{kind name: ExplainModel} of the compared kinds the matrices explain."""
    return {k.name: k.explain for k in KINDS.values() if k.explain}


def register(kind):
    if kind.name in KINDS:
        raise ValueError(f"benchmark kind {kind.name!r} registered twice")
    KINDS[kind.name] = kind
    return kind


def kind(name):
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark kind {name!r} (known: {', '.join(KINDS)})") from None


COMMON_TABLES = {
    "runs": "One row per run record (set-aside attempts included): status, time, fidelity, captures",
    "summary": "Per placement: statistics of the compared metric over its ok runs",
    "best_worst": "Per (kind, class, variant, threads): the best and the worst placement",
    "numa_pages": "Data pages per NUMA node per run, at the judged footprint",
    "numastat": "numastat counters per run and per group",
    "explain": "Per placement: memory cost predicted from the node × node matrices vs measured time",
}
COMMON_FIGURES = {"duration": "Duration per placement", "best_worst": "Best vs worst placement",
                  "pages": "Pages per NUMA node", "serial_init": "Serial initialisation vs default",
                  "variability": "Run-to-run variability", "explain": "Predicted memory cost vs measured time"}


def groups(method):
    """[(kind that implements it, [names of the kinds sharing that implementation])] for a
    method of Kind (make_tables, draw, summary, answer), in registration order."""
    out = {}
    for k in KINDS.values():
        impl = getattr(type(k), method)
        if impl is not getattr(Kind, method):
            out.setdefault(impl, (k, []))[1].append(k.name)
    return list(out.values())


def _outputs(common, attr):
    """The common outputs, then each kind's own (Kind.tables or Kind.figures), first name wins."""
    out = dict(common)
    for k in KINDS.values():
        for name, text in getattr(k, attr).items():
            out.setdefault(name, text)
    return out


def table_captions():
    """name → caption of every table the tables stage writes: the common ones, then the kinds'."""
    return _outputs(COMMON_TABLES, "tables")


def figure_titles():
    """name → title of every kind of figure: the common ones, then the kinds' own."""
    return _outputs(COMMON_FIGURES, "figures")


def wildcard_constraints():
    """The Snakefile's bench, cls and variant patterns, from the registered kinds."""
    def alternatives(values):
        return "|".join(sorted(set(values)))
    return {"bench": alternatives(KINDS),
            "cls": alternatives(c for k in KINDS.values() for c in k.classes),
            "variant": alternatives(v for k in KINDS.values() for v in k.variants)}



def schema_words():
    """The study schema's benchmark, class and variant words, from the registry."""
    from numaplace.core.schema import register_words
    register_words("benchmark", KINDS)
    register_words("class", dict.fromkeys(c for k in KINDS.values() for c in ("S", "W", "A", "B", "C", "X")
                                          if c in k.classes))
    register_words("variant", dict.fromkeys(v for k in KINDS.values() for v in k.variants))


# every module of this folder is a kind's (or kinds' shared code): importing them registers
# them; the NPB kernels first (the order of the registry is the order studies and reports list)
for _module in sorted(pkgutil.iter_modules(__path__), key=lambda m: (m.name != "npb", m.name)):
    importlib.import_module(f"{__name__}.{_module.name}")
schema_words()
