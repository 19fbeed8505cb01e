"""NPB's other OpenMP kernels, EP, IS and FT, built from NASA's own NPB3.3/3.4-OMP tree
(numaplace bundles only CG and MG, written from the published specification): the tree is
npb.official, or npb.source when that is official (numaplace.plan.sources.official_source);
a study that names them without either has their runs left out of the plan, one line
saying why. Same make interface, same stdout report (class, verification, Mop/s) as CG and
MG, so every placement, capture, statistic and answer line applies to them.

- EP (embarrassingly parallel): Gaussian pairs from NPB's random-number generator, no
  memory traffic to speak of (a few KiB per thread). It is the study's control: a
  placement effect on EP is the machine's (clock, shared cores, other load) or noise,
  never memory placement; the answer says so.
- IS (integer sort, C): a bucket sort of random keys, random access over arrays of the
  keys' size (IS.C: 2^27 keys).
- FT (3-D FFT): all-to-all transposes of a complex grid (FT.C: 512^3).

None has an explain model (numaplace.tables.explain): EP moves no memory; IS's random
access and FT's transposes reach every thread's data in ways no one share of the node x
node matrices describes without a measured model, which numaplace does not have yet.
Their placements are measured and compared, not explained.

Variants: default and mcmodel-medium. Not serial-init: numaplace.builds.serial_init
transforms CG's and MG's allocation only; EP, IS and FT would be built unchanged under
that name."""
from __future__ import annotations

import math

from numaplace.kinds import register
from numaplace.kinds.npb import NPBKernel

# NPB's classes (sys/setparams.c, IS/is.c of NPB 3.3.1 and 3.4.2):
EP = {"S": 24, "W": 25, "A": 28, "B": 30, "C": 32}                    # m: 2^m pairs
IS = {"S": (16, 11), "W": (20, 16), "A": (23, 19), "B": (25, 21), "C": (27, 23)}   # log2 keys, log2 max key
IS_ITERATIONS = 10
FT = {"S": (64, 64, 64, 6), "W": (128, 128, 32, 6), "A": (256, 256, 128, 6),
      "B": (512, 256, 256, 20), "C": (512, 512, 512, 20)}              # nx, ny, nz, niter


def work_mop(bench, cls):
    """NPB's own operation count of the timed section in millions (what its Mop/s
    divides): EP 2^(m+1) random numbers, IS keys x 10 rankings, FT its flop formula."""
    if bench == "ep":
        return 2.0 ** (EP[cls] + 1) * 1e-6
    if bench == "is":
        return 2.0 ** IS[cls][0] * IS_ITERATIONS * 1e-6
    nx, ny, nz, niter = FT[cls]
    n = nx * ny * nz
    return 1e-6 * n * (14.8157 + 7.19641 * math.log(n) + (5.23518 + 7.21113 * math.log(n)) * niter)


class OfficialKernel(NPBKernel):
    """An NPB kernel numaplace does not bundle: always built from an official tree."""
    source_dir = None
    official_only = True          # numaplace.plan.sources.official_source gives its tree
    tree_name = "official"        # its own build tree beside the bundled one
    variants = ("default", "mcmodel-medium")

    def __init__(self, name, title, mops_1t, efficiency, init_share, working_set_mb, control=None):
        super().__init__(name, title, cost=None, mops_1t=mops_1t, efficiency=efficiency,
                         init_share=init_share, working_set_mb=working_set_mb)
        self.control = control    # the answer's words on what a placement effect on it means

    def run_seconds(self, cls, threads, args, speed=1.0):
        rate = self.mops_1t * speed * threads ** self.efficiency
        return work_mop(self.name, cls) / rate * (1 + self.init_share)

    def estimate(self, cls):
        """(seconds one thread needs, resident MiB), generous: twice the reference
        machine's one-thread time (at least 1 s) and the working set with 10 MiB over."""
        return max(1, math.ceil(2 * self.run_seconds(cls, 1, ()))), self._working_set_mb[cls] + 10


# The estimate before a study (numaplace.plan.budget): Mop/s on one pinned thread of the
# reference machine, parallel efficiency, the share of set-up (IS: key generation; FT: the
# initial grid) beside the timed section, and the peak resident MiB per class. Measured on
# the 2-core development machine (NPB 3.4.2, gfortran/gcc 12 -O3 -fopenmp, taskset-pinned,
# classes S, W and A at 1 and 2 threads, 3 runs each, 2026-11-28; EP.A 200 Mop/s on one
# thread, IS.A 600, FT.A 7200) and scaled to the reference machine by the read-bandwidth
# ratio the plan scales by (20.5 vs 32.0 GB/s). Resident MiB: measured (GNU time's maximum
# RSS) for S, W and A, B and C by NPB's array sizes (4x and 16x A).
# NPB 3.3.1's EP (randdp) is about 5x slower than 3.4.2's (randi8): its estimates are low.
register(OfficialKernel(
    "ep", "NPB EP", mops_1t=310.0, efficiency=0.9, init_share=0.02,
    working_set_mb={"S": 5, "W": 5, "A": 5, "B": 5, "C": 5},
    control="EP is the control: it moves no memory, so a placement effect on it is the machine's "
            "(clock, shared cores, other load) or noise, not memory placement"))
register(OfficialKernel(
    "is", "NPB IS", mops_1t=940.0, efficiency=0.5, init_share=5.0,
    working_set_mb={"S": 3, "W": 10, "A": 68, "B": 270, "C": 1080}))
register(OfficialKernel(
    "ft", "NPB FT", mops_1t=11000.0, efficiency=0.9, init_share=0.35,
    working_set_mb={"S": 14, "W": 24, "A": 325, "B": 1300, "C": 5200}))
