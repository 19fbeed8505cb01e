"""numaplace: NUMA placement studies with the NPB CG and MG kernels.

The folders are the pipeline's stages, in the order data flows; a module imports only
from its own stage, the ones before it, and the shared leaves (tests/test_layout.py):

  core     shared leaves: cpulist ('0-3,8'), limits, loader (strict YAML/JSON), schema
           (+ schemas/: study, platform, record), stats, artifacts (output names)
  kinds    the benchmark-kind registry (__init__) and one module per kind, each with its
           build, output parser, verification, metric, cost, args, and its own tables,
           figures and summary section: npb (cg, mg), memory (membw, memlat), stream;
           microbench (what the C micro-benchmarks share), npb_output, membench_output
  record   the run record's format: write, read, migrate, keep, set aside (store)
  machine  topology, platform_detect, system (page-shaping settings), idle, guard (locks)
  plan     study (the table of runs), placement (the placement language), expand (specs →
           placements), memory_specs, checks, budget, launch (placement → argv + env),
           sources (npb.source), frozen (the study as the workflow read it)
  build    tree (build trees and build records), serial_init
  run      runner (one measured run), capture, numa_maps, pages_over_time
  judge    fidelity (did threads and pages go where asked), separation (adaptive repetitions:
           is a run still needed, or are its case's best and runner-up separated)
  tables   aggregate (records → the common CSV tables, then each kind's own)
  figures  plots (the common figures, then each kind's own)
  report   answer (the answer in a few lines), summary (summary.md), html (report.html)
  cluster  resources (what each job asks a batch system), pbs (PBS dialects)
  cli      the `numaplace` command the Snakemake rules call
"""

__version__ = "0.2.0"


class BuildError(RuntimeError):
    """A build that did not produce its binary; the message is one line."""


class ConfigError(ValueError):
    """Bad user input: names the file, the entry and what is wrong."""

    def __init__(self, where, entry, problem):
        self.where, self.entry, self.problem = where, entry, problem
        super().__init__(f"{where}: {entry}: {problem}")
