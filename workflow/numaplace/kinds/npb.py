"""The NPB kernels CG and MG (numaplace's own, npb/src, or NASA's official trees): NPB's
make interface, NPB's report on stdout, Mop/s compared across placements."""
from __future__ import annotations

from numaplace.kinds import REPO, ExplainModel, Kind, register
from numaplace.kinds import npb_output


# NPB's classes (NPB-FACTS): CG (na, nonzer, niter), MG (n, nit)
CG = {"S": (1400, 7, 15), "W": (7000, 8, 15), "A": (14000, 11, 15), "B": (75000, 13, 75), "C": (150000, 15, 75)}
MG = {"S": (32, 4), "W": (128, 4), "A": (256, 4), "B": (256, 20), "C": (512, 20)}


def work_mop(bench, cls):
    """NPB's operation count of one run's timed section, in millions."""
    if bench == "cg":
        na, nonzer, niter = CG[cls]
        return 2e-6 * niter * na * (3 + nonzer * (nonzer + 1) + 25 * (5 + nonzer * (nonzer + 1)) + 3)
    n, nit = MG[cls]
    return 58e-6 * nit * n ** 3


class NPBKernel(Kind):
    family = "npb"
    class_steps = True
    metric = "mops"
    unit = "Mop/s"
    source_dir = REPO / "npb" / "src"
    classes = ("S", "W", "A", "B", "C")
    variants = ("default", "serial-init", "mcmodel-medium")

    def __init__(self, name, title, cost, mops_1t, efficiency, init_share, working_set_mb, explain=None,
                 serial_init_arrays=()):
        self.name, self.title, self._cost, self.explain = name, title, cost, explain
        self.serial_init_arrays = serial_init_arrays
        self.mops_1t, self.efficiency, self.init_share = mops_1t, efficiency, init_share
        self._working_set_mb = working_set_mb

    def run_seconds(self, cls, threads, args, speed=1.0):
        # NPB's operation count over the reference machine's Mop/s, scaled by speed and by
        # the thread count with a parallel efficiency: rate(t) = rate(1) * t**efficiency
        rate = self.mops_1t * speed * threads ** self.efficiency
        return work_mop(self.name, cls) / rate * (1 + self.init_share)

    def working_set_mb(self, cls):
        return self._working_set_mb.get(cls)

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
# The estimate before a study (numaplace.plan.budget): the bundled kernels' Mop/s at class B
# on one pinned thread of the reference machine (2 vCPUs of an EPYC guest;
# tests/benchmarks/bench_vs_official.py, 2026-11-25), the parallel efficiency, the share of
# set-up and warm-up beside the timed section, and the peak resident MiB per class
# (NPB-FACTS and bench_vs_official; MG.C's three 514^3 grids with their coarser levels).
def mg_shared_share(cls, threads):
    """MG: a thread's halo exchange reaches its neighbours' planes, 2 of the grid's n per
    thread (every thread's data once the threads outnumber half the planes)."""
    n = MG.get(cls, (None,))[0]
    return min(1.0, 2 * threads / n) if n else 0.0


# the matrices explain them (numaplace.tables.explain): CG's sparse matrix-vector product
# reads its own rows and a third of its loads reach the whole vector (latency-bound); MG's
# stencils stream their own planes and share halos (bandwidth-bound, contended per node)
CG_EXPLAIN = ExplainModel("memlat", lambda cls, threads: 1 / 3)
MG_EXPLAIN = ExplainModel("membw", mg_shared_share, contends=True)

register(NPBKernel("cg", "NPB CG", {"S": (1, 8), "W": (5, 16), "A": (15, 60), "B": (600, 420),
                                    "C": (1800, 1100)}, mops_1t=1840.0, efficiency=0.9, init_share=0.15,
                   working_set_mb={"S": 5, "W": 17, "A": 50, "B": 344, "C": 891}, explain=CG_EXPLAIN,
                   serial_init_arrays=("colidx", "rowstr", "iv", "arow", "acol", "v", "aelt", "a", "x", "z",
                                       "p", "q", "r")))
register(NPBKernel("mg", "NPB MG", {"S": (1, 8), "W": (10, 60), "A": (30, 460), "B": (120, 460),
                                    "C": (900, 3500)}, mops_1t=5830.0, efficiency=0.8, init_share=0.10,
                   working_set_mb={"S": 5, "W": 58, "A": 435, "B": 435, "C": 3480}, explain=MG_EXPLAIN,
                   serial_init_arrays=("u", "v", "r")))
