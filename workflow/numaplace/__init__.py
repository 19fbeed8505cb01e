"""numaplace: NUMA placement studies with the NPB CG and MG kernels.

One module per concept, in the order data flows (plan → build → run → record →
judge/aggregate → plot → report):

  plan     schema (study/platform files), topology (nodes, CPUs, distances), placement
           (a study's placements, expanded), launch (launcher registry: placement →
           argv + env), kinds (benchmark-kind registry: build, parse, verify, metric),
           study (config → the table of runs)
  build    build (NPB trees and binaries, build records), serial_init (official trees)
  run      runner (one measured run), capture (numa_maps/numastat/thread sampler),
           npb_output (NPB's report), numa_maps (its format)
  record   records (the record format: schema, write, read, migrate, set aside)
  judge    fidelity (did threads and pages go where asked), stats (summaries, tests)
  tables   aggregate (records → CSV tables)
  report   plots (figures), report (summary.md, HTML)
  cluster  cluster (batch resources per job), pbs (PBS dialects: qsub, qstat)
  cli      the `numaplace` command the Snakemake rules call
"""

__version__ = "0.2.0"


class ConfigError(ValueError):
    """Bad user input: names the file, the entry and what is wrong."""

    def __init__(self, where, entry, problem):
        self.where, self.entry, self.problem = where, entry, problem
        super().__init__(f"{where}: {entry}: {problem}")
