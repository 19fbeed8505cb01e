"""The bundled CG and MG move NASA's bytes: last-level-cache misses under cachegrind within
0.95-1.05x those of NPB 3.4.2-OMP built from ../shared/npb/ with the same flags.

Class W with a 4 MiB last-level cache, so that W spills from it as B and C spill from a real
L3 (tests/benchmarks/bench_vs_official.py prints W and A the same way). A kernel that skips
or fuses a pass over its grids or vectors, keeps a grid in cache that NPB streams again, or
leaves out NPB's ghost copies or norms, leaves the band: the fused MG of e3dd687 reads 0.65
here, its unfused predecessor (ghost copies inside the operators' sweeps, no unread norms)
0.925. Class S is too small to tell: most of its misses are start-up and set-up."""
import shutil

import pytest

from benchmarks._common import LL_4MIB, cachegrind
from conftest import need_rig



@pytest.fixture(scope="module")
def valgrind():
    if not shutil.which("valgrind"):
        need_rig("valgrind is not installed: the kernels' memory traffic is measured under cachegrind "
                 "(bash .ci/setup --tests installs it)")


@pytest.mark.parametrize("bench", ["cg", "mg"])
def test_bundled_kernel_moves_nasas_bytes(valgrind, npb_build, official_build, bench):
    ours = cachegrind(npb_build(bench, "W"), ll=LL_4MIB)
    nasa = cachegrind(official_build("3.4.2", bench, "W", "default"), ll=LL_4MIB)
    ratio = ours["ll_misses"] / nasa["ll_misses"]
    assert 0.95 <= ratio <= 1.05, (
        f"{bench}.W: {ours['ll_misses']:,} LL misses against NASA's {nasa['ll_misses']:,} (ratio {ratio:.3f}): "
        "the bundled kernel no longer makes NPB's passes over its arrays")
