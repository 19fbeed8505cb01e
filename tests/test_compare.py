"""numaplace compare over real records: the NUMA VM's placement study and its balancing
study (same guest, other settings and capture rate)."""
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from numaplace.report.compare import compare

REAL = Path(__file__).parent / "fixtures" / "real"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare")
    lines = compare([REAL / "vm", REAL / "vm-balancing"], out)
    return out, lines


def test_shared_placements_side_by_side_against_the_first(compared):
    out, lines = compared
    side = pd.read_csv(out / "compare.csv", dtype={"class": str})
    # 1/1 on 0,3 of CG.W and MG.W serial-init ran in both studies; nothing else did
    assert sorted(set(zip(side["bench"], side["variant"]))) == [("cg", "serial-init"), ("mg", "serial-init")]
    cg = side[(side["bench"] == "cg") & (side["study"] == "vmbalancing")].iloc[0]
    # vmtest: 2.01-2.22 s (3 runs); vmbalancing: 13.00 and 13.42 s: beyond noise
    assert cg["beyond_noise"] == "yes" and cg["change_pct"] > 400
    assert side[side["study"] == "vmtest"]["change_pct"].isna().all()       # the reference
    assert any(line.startswith("CG.W serial-init 2 threads, 1/1 on 0,3") and "beyond noise" in line
               for line in lines), lines


def test_fingerprints_and_the_settings_that_differ(compared):
    out, lines = compared
    fp = pd.read_csv(out / "fingerprints.csv")
    assert list(fp["study"]) == ["vmtest", "vmbalancing"] and set(fp["nodes"]) == {4}
    assert fp.loc[1, "thp_enabled"] == "never"
    assert any(line.startswith("settings that differ: numa_balancing: vmtest not recorded, vmbalancing 0 / 1")
               for line in lines), lines
    html = (out / "compare.html").read_text()
    assert "data:image/svg+xml;base64," in html and "What changed beyond noise" in html


def test_a_study_against_itself_changes_nothing(tmp_path):
    copy = tmp_path / "again" / "vm"
    shutil.copytree(REAL / "vm", copy)
    lines = compare([REAL / "vm", copy], tmp_path / "out")
    assert any(line.startswith("no shared placement changed beyond noise") for line in lines), lines


def test_a_folder_without_records_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "numaplace", "compare", str(REAL / "vm"), str(tmp_path),
                        "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.strip() == f"numaplace compare: {tmp_path}: no run records " \
        "(is it results/<study>?)", p.stderr
    assert not (tmp_path / "out").exists()
