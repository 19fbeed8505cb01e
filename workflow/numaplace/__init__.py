"""numaplace: NUMA placement studies with the NPB CG and MG kernels.

One module per concept, in the order data flows (plan → build → run → record →
judge/aggregate → plot → report):

  plan     loader (strict parsing of study/platform files), schema (JSON schemas and
           their defaults), limits and checks (plan size bounds, cross-field checks),
           cpulist ('0-3,8' lists), topology (nodes, CPUs, distances; platform_detect
           writes a platform file),
           placement and memory_specs (a study's placements, expanded), launch (launcher
           registry: placement → argv + env), kinds (benchmark-kind registry: build,
           parse, verify, metric, cost), study (config → the table of runs)
  build    build (NPB and micro-benchmark trees, build records), serial_init
  run      runner (one measured run), guard (machine lock, death with the job), idle
           (idle check, foreign load), system (page-shaping kernel settings, numa_balancing),
           capture (sampler), numa_maps, pages_over_time, npb_output, membench_output
  record   records (the record format: schema, write, read, migrate, set aside)
  judge    fidelity (did threads and pages go where asked), stats (summaries, tests)
  tables   aggregate (records → CSV tables), memory_tables; artifacts (their names)
  report   plots, memory_plots (figures), report (summary.md, HTML)
  cluster  cluster (batch resources per job), pbs (PBS dialects: qsub, qstat)
  cli      the `numaplace` command the Snakemake rules call
"""

__version__ = "0.2.0"


class ConfigError(ValueError):
    """Bad user input: names the file, the entry and what is wrong."""

    def __init__(self, where, entry, problem):
        self.where, self.entry, self.problem = where, entry, problem
        super().__init__(f"{where}: {entry}: {problem}")
