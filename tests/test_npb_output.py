"""One parser reads official NPB output and numaplace's own kernels' output alike."""
import re

import pytest
from conftest import need_rig

from numaplace.kinds import npb_output

SAMPLE = "../shared/docs/npb-sample-output.txt"


def sections(repo):
    text = (repo / SAMPLE).read_text()
    parts = re.split(r"^# ---- (.+?) ----$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


@pytest.fixture(scope="module")
def official(repo):
    if not (repo / SAMPLE).exists():
        need_rig(f"{SAMPLE} not present (the shared docs sit beside the clone)")
    return sections(repo)


def test_official_cg_s(official):
    r = npb_output.parse(official["cg.S.x"])
    assert (r["benchmark"], r["class"], r["time_s"], r["mops"], r["threads"]) == ("CG", "S", 0.03, 1970.96, 2)
    assert r["verified"] and r["complete"] and r["init_time_s"] == 0.009 and r["iterations"] == 15
    assert r["implementation"] == "nasa" and r["version"] == "3.4.2"


def test_official_mg(official):
    s = npb_output.parse(official["mg.S.x"])
    assert (s["benchmark"], s["class"], s["size"], s["init_time_s"]) == ("MG", "S", "32x  32x  32", 0.002)
    c = npb_output.parse(official["mg.C.x, 2 threads"])
    assert (c["time_s"], c["mops"], c["iterations"], c["verified"]) == (32.70, 4761.09, 20, True)


def test_official_cg_b_one_thread(official):
    r = npb_output.parse(official["cg.B.x, 1 thread (OMP_NUM_THREADS=1 taskset -c 0)"])
    assert (r["class"], r["threads"], r["time_s"], r["init_time_s"]) == ("B", 1, 48.22, 6.108)


def test_unsuccessful_and_truncated(official):
    bad = official["cg.S.x"].replace("=               SUCCESSFUL", "=             UNSUCCESSFUL")
    r = npb_output.parse(bad)
    assert r["complete"] and not r["verified"]
    cut = npb_output.parse(official["cg.S.x"].split(" CG Benchmark Completed.")[0])
    assert not cut["complete"] and not cut["verified"] and cut["time_s"] is None
    assert npb_output.parse("")["complete"] is False
