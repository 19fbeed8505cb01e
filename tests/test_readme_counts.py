"""The README's and the default study's run counts are the plan's (issue 43.4): every
count they print is computed here from the study files, on the machine shape they name
(this project's CI machine: 1 node x 2 cores; the named platforms; 2 sockets x 8 cores),
so that a changed study cannot leave them stale."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

import numaplace.plan.study as study_mod
from numaplace.machine.topology import Topology
from numaplace.plan.study import Study

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
DEFAULT = REPO / "config" / "config.yaml"
CI_MACHINE = Topology("auto", {0: [0, 1]}, {0: 24576}, [[10]])      # 1 node x 2 cores, 24 GiB
TWO_SOCKETS = "name: two-socket-16\nnodes:\n  - {id: 0, cpus: '0-7', memory_mb: 65536}\n" \
              "  - {id: 1, cpus: '8-15', memory_mb: 65536}\ndistances: [[10, 21], [21, 10]]\n"


@pytest.fixture(scope="module")
def config_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("config")
    shutil.copytree(REPO / "config" / "platforms", d / "platforms")
    (d / "platforms" / "two-socket-16.yaml").write_text(TWO_SOCKETS)
    return d


def planned(study_file, config_dir, platform=None):
    """The study planned on a named platform, or (platform None) on the CI machine's shape."""
    config = yaml.safe_load(Path(study_file).read_text())
    if platform:
        return Study({**config, "platform": platform}, study_file, config_dir)
    orig = study_mod.from_sysfs
    study_mod.from_sysfs = lambda: CI_MACHINE
    try:
        return Study({**config, "platform": "auto"}, study_file, config_dir)
    finally:
        study_mod.from_sysfs = orig


def said(pattern, text=README):
    m = re.search(pattern, text, re.S)
    assert m, f"the README no longer says {pattern!r}"
    return [int(g) for g in m.groups()]


def test_the_readmes_default_study_counts_are_the_plans(config_dir):
    runs, left_out = said(r"Planned runs: (\d+) on this project's CI machine \(1 node × 2 cores; (\d+) comparisons")
    here = planned(DEFAULT, config_dir)
    assert (runs, left_out) == (len(here.runs), len(here.not_applicable))
    runs_here, builds = said(r"here (\d+) runs and (\d+) builds")
    assert (runs_here, builds) == (len(here.runs), len(here.binaries()))
    for count, platform in (said(r"(\d+) on the Xeon E5504\s+\(`nehalem`")[0], "nehalem"), \
            (said(r"(\d+) on\s+a Cray XE6 node\s+\(`magny-cours`")[0], "magny-cours"), \
            (said(r"(\d+) on the Sun Fire X4600 M2\s+\(`x4600`")[0], "x4600"), \
            (said(r"(\d+) on 2 sockets × 8 cores")[0], "two-socket-16"):
        assert count == len(planned(DEFAULT, config_dir, platform).runs), platform


def test_the_default_study_files_own_counts_are_the_plans(config_dir):
    text = DEFAULT.read_text()
    counts = dict(zip(("here", "two-socket-16", "nehalem", "magny-cours", "x4600"), said(
        r"this 1-node 2-core machine (\d+); 2 nodes x 8 cores (\d+); Nehalem (\d+);\s*#?\s*Magny-Cours (\d+); "
        r"X4600 \(8 nodes x 2 cores\) (\d+)", text)))
    assert counts.pop("here") == len(planned(DEFAULT, config_dir).runs)
    for platform, count in counts.items():
        assert count == len(planned(DEFAULT, config_dir, platform).runs), platform


@pytest.mark.parametrize("study, pattern", [
    ("quick", r"`config/studies/quick.yaml` \| [^|]*?; (\d+) runs"),
    ("memory-quick", r"`config/studies/memory-quick.yaml` \| [^|]*?; (\d+) runs"),
    ("own-program", r"Here \(1 node, 2 cores\) that is (\d+) runs"),
])
def test_the_readmes_named_study_counts_are_the_plans(config_dir, study, pattern):
    count, = said(pattern)
    assert count == len(planned(REPO / "config" / "studies" / f"{study}.yaml", config_dir).runs)


def test_the_readmes_whole_study_table_is_the_plans(config_dir):
    """'How long things take': runs here, and runs and estimates at reference speed."""
    from numaplace.plan.budget import format_duration
    studies = REPO / "config" / "studies"
    for name, file in (("quick", studies / "quick.yaml"), ("memory-quick", studies / "memory-quick.yaml"),
                       ("default", DEFAULT)):
        count, = said(rf"\| {name}, here[^|]*\| (\d+) \|")
        assert count == len(planned(file, config_dir).runs), name
    row = re.search(r"\| default on x4600 / magny-cours / nehalem \| ([^|]+) \| ([^|]+) at reference speed \|", README)
    thesis = re.search(r"\| thesis-x4600 / thesis-magny-cours / thesis-nehalem \| ([^|]+) \| ([^|]+) at reference speed \|",
                       README)
    assert row and thesis, "the README's whole-study table changed its rows"
    default = [planned(DEFAULT, config_dir, p) for p in ("x4600", "magny-cours", "nehalem")]
    theses = [Study(yaml.safe_load((studies / f"thesis-{p}.yaml").read_text()), studies / f"thesis-{p}.yaml", config_dir)
              for p in ("x4600", "magny-cours", "nehalem")]
    for m, plans in ((row, default), (thesis, theses)):
        assert m.group(1).strip() == " / ".join(str(len(st.runs)) for st in plans)
        # '27 / 18 / 15 min', '3 h 29 / 2 h 52 / 1 h 18': minutes written once, or not at all
        shown = [format_duration(st.estimate().total).replace(" min", "") for st in plans]
        assert m.group(2).strip().replace(" min", "").split(" / ") == shown
