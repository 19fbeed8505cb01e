"""numaplace: NUMA placement studies with the NPB CG and MG kernels.

The folders are the pipeline's stages, in the order data flows; a module imports only
from its own stage, the ones before it, and the shared leaves (tests/test_layout.py):

  core     shared leaves: cpulist ('0-3,8'), limits, loader (strict YAML/JSON), schema
           (+ schemas/: study, platform, record), stats, artifacts (output names)
  kinds    the benchmark-kind registry: each kind's build, output parser, verification,
           metric, cost (npb_output, membench_output: their parsers)
  record   the run record's format: write, read, migrate, keep, set aside (store)
  machine  topology, platform_detect, system (page-shaping settings), idle, guard (locks)
  plan     study (the table of runs), placement (the placement language), expand (specs →
           placements), memory_specs, checks, budget, launch (placement → argv + env),
           sources (npb.source), frozen (the study as the workflow read it)
  build    tree (build trees and build records), serial_init
  run      runner (one measured run), capture, numa_maps, pages_over_time
  judge    fidelity (did threads and pages go where asked)
  tables   aggregate (records → CSV tables), memory
  figures  plots, memory
  report   answer (the answer in a few lines), summary (summary.md and the HTML)
  cluster  resources (what each job asks a batch system), pbs (PBS dialects)
  cli      the `numaplace` command the Snakemake rules call
"""

__version__ = "0.2.0"


class ConfigError(ValueError):
    """Bad user input: names the file, the entry and what is wrong."""

    def __init__(self, where, entry, problem):
        self.where, self.entry, self.problem = where, entry, problem
        super().__init__(f"{where}: {entry}: {problem}")
