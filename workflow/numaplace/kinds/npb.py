"""The NPB kernels CG and MG (numaplace's own, npb/src, or NASA's official trees): NPB's
make interface, NPB's report on stdout, Mop/s compared across placements."""
from __future__ import annotations

from numaplace.kinds import REPO, Kind, register
from numaplace.kinds import npb_output


class NPBKernel(Kind):
    family = "npb"
    metric = "mops"
    unit = "Mop/s"
    source_dir = REPO / "npb" / "src"
    classes = ("S", "W", "A", "B", "C")
    variants = ("default", "serial-init", "mcmodel-medium")

    def __init__(self, name, title, cost):
        self.name, self.title, self._cost = name, title, cost

    def make_args(self, cls, variant, official=False):
        args = super().make_args(cls, variant)
        if variant == "serial-init" and not official:   # official trees are transformed instead
            args.append("INIT=serial")
        return args

    def parse(self, stdout):
        return npb_output.parse(stdout)

    def outcome(self, output, exit_status):
        if output["complete"] and not output["verified"]:
            return "unverified", f"NPB verification UNSUCCESSFUL (exit status {exit_status})"
        return super().outcome(output, exit_status)

    def estimate(self, cls):
        return self._cost[cls]


# Per class: (seconds one thread needs, resident MiB). Generous round estimates for a
# ~2010 node (the reference study's Magny-Cours era); resident sizes follow NPB's array
# sizes. For scale, on the 2-core 2026 development machine with numaplace's own kernels,
# one thread: CG.A 0.7 s / 48 MiB, MG.A 0.6 s / 445 MiB.
register(NPBKernel("cg", "NPB CG", {"S": (1, 8), "W": (5, 16), "A": (15, 60), "B": (600, 420),
                                    "C": (1800, 1100)}))
register(NPBKernel("mg", "NPB MG", {"S": (1, 8), "W": (10, 60), "A": (30, 460), "B": (120, 460),
                                    "C": (900, 3500)}))
