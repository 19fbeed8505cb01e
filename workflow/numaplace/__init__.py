"""numaplace: NUMA placement studies with the NPB CG and MG kernels.

One module per concept: topology, placement, launch, study (config → plan), build
(NPB trees), npb_output, numa_maps, capture, runner (one measured run → record),
aggregate, plots, report; cli ties them to the Snakemake rules.
"""

__version__ = "0.1.0"


class ConfigError(ValueError):
    """Bad user input: names the file, the entry and what is wrong."""

    def __init__(self, where, entry, problem):
        self.where, self.entry, self.problem = where, entry, problem
        super().__init__(f"{where}: {entry}: {problem}")
