"""NPB's other OpenMP kernels, EP, IS and FT (numaplace.kinds.npb_official): built from
NASA's own tree (npb.official, or npb.source when official), never bundled; left out of
the plan with one line when no official tree is given; EP is the default study's control,
and the answer says what a placement effect on it means.

The rig tests build and run NASA's code from ../shared/npb/ in pytest's temp dirs (class S
and W, seconds each); nothing of NASA's is copied into the repository. The report texts
parsed by the unit tests are written here from NPB's report format, not recorded."""
from __future__ import annotations

import copy
import subprocess
from pathlib import Path

import pytest
import yaml

from numaplace import ConfigError
from numaplace.builds.tree import make_def
from numaplace.kinds import kind
from numaplace.kinds.npb_official import work_mop
from numaplace.machine.topology import Topology
from numaplace.plan.sources import NOT_BUNDLED, bundled_digest, check_source, official_source, tree_settings
from numaplace.plan.study import Study

REPO = Path(__file__).resolve().parents[1]
ONE_NODE = Topology("auto", {0: [0, 1]}, {0: 24576}, [[10]])


def study(config, topo=ONE_NODE):
    import numaplace.plan.study as study_mod
    orig = study_mod.from_sysfs
    study_mod.from_sysfs = lambda: topo
    try:
        return Study(copy.deepcopy(config), "s.yaml", REPO / "config")
    finally:
        study_mod.from_sysfs = orig


def small(benches=("ep",), **npb):
    return {"study": "t", "benchmarks": list(benches), "classes": ["S"], "repetitions": 3,
            "npb": npb, "experiments": [{"name": "e", "placements": [{"compact": [1, 2]}]}]}


# -- where their tree comes from ---------------------------------------------------------

def test_official_tree_is_npb_official_else_an_official_npb_source(tmp_path):
    tar = str(tmp_path / "NPB3.4.2.tar.gz")
    assert official_source({"source": "bundled"}) is None
    assert official_source({"source": tar, "sha256": "a" * 64}) == (tar, "a" * 64)
    assert official_source({"source": tar, "official": "/x.tar.gz", "official_sha256": "b" * 64}) == \
        ("/x.tar.gz", "b" * 64)
    ep, cg = kind("ep"), kind("cg")
    assert tree_settings(ep, {"source": "bundled", "official": tar, "fc": "gfortran"}) == \
        {"source": tar, "sha256": None, "official": tar, "fc": "gfortran"}
    assert tree_settings(cg, {"source": "bundled", "official": tar}) == {"source": "bundled", "official": tar}
    assert tree_settings(ep, {"source": "bundled"}) is None
    assert ep.variants == ("default", "mcmodel-medium") and ep.source_dir is None and ep.tree_name == "official"


def test_without_an_official_tree_their_runs_are_left_out_with_one_line():
    """Nothing downloaded unasked, no build that fails the workflow: the plan says why.
    (Fails with the hook in Study._expand removed: ep runs planned, no line.)"""
    st = study(small(("ep", "is", "ft", "cg")))
    assert {r.bench for r in st.runs} == {"cg"}
    lines = [x for x in st.not_applicable if "numaplace does not bundle" in x]
    assert lines == [f"experiments[0] (e).benchmarks: not applicable here: {NOT_BUNDLED.format(bench=b)}"
                     for b in ("EP", "IS", "FT")]
    assert all("\n" not in x for x in lines)
    with pytest.raises(ConfigError, match="nothing of this study exists on this machine: .*EP is NASA's code"):
        study(small(("ep",)))


def test_with_an_official_tree_they_are_planned(tmp_path):
    url = "https://www.nas.nasa.gov/assets/npb/NPB3.4.2.tar.gz"
    st = study(small(("ep", "is", "ft"), official=url, official_sha256="c" * 64))
    assert {(r.bench, r.cls, r.placement.threads) for r in st.runs} == \
        {(b, "S", t) for b in ("ep", "is", "ft") for t in (1, 2)}
    assert not st.not_applicable


def test_official_settings_are_checked_before_anything_is_built(tmp_path):
    url = "https://www.nas.nasa.gov/assets/npb/NPB3.4.2.tar.gz"
    with pytest.raises(ConfigError, match=r"^s.yaml: npb.official_sha256: a URL source"):
        check_source({"source": "bundled", "official": url}, "s.yaml")
    with pytest.raises(ConfigError, match=r"^s.yaml: npb.official_sha256: is the digest of npb.official"):
        check_source({"source": "bundled", "official_sha256": "d" * 64}, "s.yaml")
    with pytest.raises(ConfigError, match=r"^s.yaml: npb.official: .*no such file or directory"):
        check_source({"source": "bundled", "official": str(tmp_path / "absent.tar.gz")}, "s.yaml")
    with pytest.raises(ConfigError, match=r"^s.yaml: npb.official: names an official tree"):
        check_source({"source": "bundled", "official": "bundled"}, "s.yaml")
    with pytest.raises(ConfigError, match=r"npb.official"):             # the schema's pattern: no shell words
        study(small(official="x;rm -rf ~"))


def test_serial_init_is_not_offered():
    """builds/serial_init.py transforms CG's and MG's allocation only."""
    config = small(("ep",), official="https://h/NPB3.4.2.tar.gz", official_sha256="c" * 64)
    config["variants"] = ["serial-init"]
    with pytest.raises(ConfigError, match="serial-init"):
        study(config)


def test_another_official_tree_gets_other_build_folders():
    base = {"source": "bundled"}
    assert bundled_digest(base) == bundled_digest({**base, "fc": "gfortran"})     # untouched without it
    a = bundled_digest({**base, "official": "/a/NPB3.4.2.tar.gz"})
    assert a != bundled_digest(base) and a != bundled_digest({**base, "official": "/b/NPB3.4.2.tar.gz"})


def test_official_trees_compile_is_with_openmp_and_the_bundled_tree_as_before():
    settings = {"fc": "gfortran", "fflags": "-O3 -fopenmp"}
    assert "CFLAGS = -O2\n" in make_def(settings, "default")
    assert "CFLAGS = -O3 -fopenmp\n" in make_def(settings, "default", "3.4")
    assert "CFLAGS = -O3 -fopenmp -mcmodel=medium\n" in make_def(settings, "mcmodel-medium", "3.3")
    assert "CFLAGS = -O3\n" in make_def({**settings, "fflags": "-O3"}, "default", "3.4")


def test_mcmodel_medium_links_with_the_medium_code_model_too():
    """Large classes fail at the link (relocation truncated to fit) unless the link has
    -mcmodel=medium too: FLINKFLAGS carries it, also when the study sets no flinkflags."""
    for version in (None, "3.4"):
        text = make_def({"fc": "gfortran", "fflags": "-O3 -fopenmp"}, "mcmodel-medium", version)
        assert "FFLAGS = -O3 -fopenmp -mcmodel=medium\n" in text, text
        assert "FLINKFLAGS = -O3 -fopenmp -mcmodel=medium\n" in text, text
        own = make_def({"fc": "gfortran", "fflags": "-O3", "flinkflags": "-O2 -fopenmp"}, "mcmodel-medium", version)
        assert "FLINKFLAGS = -O2 -fopenmp -mcmodel=medium\n" in own, own
        assert "mcmodel" not in make_def({"fc": "gfortran", "fflags": "-O3"}, "default", version)


# -- what a run says ------------------------------------------------------------------------

# written from NPB's report format (print_results.f90, c_print_results.c): not recorded
REPORT = """
 NAS Parallel Benchmarks (NPB3.4-OMP) - {B} Benchmark

 {B} Benchmark Completed.
 Class           =                        {c}
 Size            =                 {size}
 Iterations      =                        {it}
 Time in seconds =                     {t}
 Total threads   =                        2
 Avail threads   =                        2
 Mop/s total     =                   {mops}
 Mop/s/thread    =                    1.00
 Operation type  = {op}
 Verification    =               {v}
 Version         =                    3.4.2
"""


@pytest.mark.parametrize("bench,size,it,op", [("EP", "33554432", "0", "Random numbers generated"),
                                             ("IS", "65536", "10", "keys ranked"),
                                             ("FT", "64x  64x  64", "6", "floating point")])
def test_their_report_gives_class_verification_and_mops(bench, size, it, op):
    text = REPORT.format(B=bench, c="S", size=size, it=it, t="0.24", mops="142.18", op=op, v="SUCCESSFUL")
    out = kind(bench.lower()).parse(text)
    assert (out["class"], out["verified"], out["mops"], out["threads"], out["benchmark"], out["size"]) == \
        ("S", True, 142.18, 2, bench, size)
    assert out["complete"] and out["implementation"] == "nasa"
    bad = kind(bench.lower()).parse(text.replace("SUCCESSFUL", "UNSUCCESSFUL"))
    assert kind(bench.lower()).outcome(bad, 0)[0] == "unverified"


def test_estimates_follow_npbs_operation_counts():
    # EP: 2^(m+1) random numbers (S: 2^25, as EP.S prints "Number of random numbers generated: 33554432")
    assert work_mop("ep", "S") == pytest.approx(33.554432)
    assert work_mop("is", "A") == pytest.approx(2 ** 23 * 10 / 1e6)
    for b in ("ep", "is", "ft"):
        k = kind(b)
        secs = [k.run_seconds(c, 1, ()) for c in "SWABC"]
        assert secs == sorted(secs) and k.run_seconds("A", 2, ()) < k.run_seconds("A", 1, ())
        assert [k.working_set_mb(c) for c in "SWABC"] == sorted(k.working_set_mb(c) for c in "SWABC")
        assert k.explain is None
    assert kind("ep").run_seconds("A", 1, (), 20.5 / 32.0) == pytest.approx(2.7, rel=0.25)  # measured 2.7 s here


# -- the default study's control ---------------------------------------------------------------

def default_config(**npb):
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    if npb:
        config["npb"] = npb
    return config


def test_the_default_study_names_ep_as_its_control():
    """Stock (no official tree): 46 runs as before, and one line on EP; with NASA's tarball
    given, 15 EP runs of class A more on this 1-node 2-core machine."""
    stock = study(default_config())
    assert len(stock.runs) == 46 and not [r for r in stock.runs if r.bench == "ep"]
    assert [x for x in stock.not_applicable if "EP" in x] == [
        f"experiments[{i}] ({name}).benchmarks: not applicable here: " + NOT_BUNDLED.format(bench="EP")
        for i, name in ((13, "control-memory"), (14, "control-placement"))]
    given = study(default_config(official="https://www.nas.nasa.gov/assets/npb/NPB3.4.2.tar.gz",
                                 official_sha256="c" * 64))
    ep = [r for r in given.runs if r.bench == "ep"]
    assert len(given.runs) == 61 and len(ep) == 15 and {r.cls for r in ep} == {"A"}
    # compact 1, compact 2 and unpinned 1 (ids shared with CG and MG's same placements)
    assert sorted((r.placement.threads, r.placement.cpulist) for r in ep if r.rep == 1) == \
        [(1, "0"), (1, "0-1"), (2, "0-1")]
    est = given.estimate()
    extra = sum(v for k, v in est.per_run.items() if k.startswith("ep."))
    assert extra < 3 * 60                                 # a few minutes at most on 2 cores


def test_the_answer_says_a_placement_effect_on_ep_is_the_machines_or_noise():
    """(Fails without control_words: the EP line reads like CG's.)"""
    from numaplace.report.answer import answer_cases, case_launch_lines, control_words
    from numaplace.tables.aggregate import build_tables
    t = build_tables(Path(__file__).parent / "fixtures" / "real" / "vm")
    relabel = {k: v.assign(bench=v["bench"].replace({"mg": "ep"})) if v is not None and "bench" in v else v
               for k, v in t.items()}
    case = [c for c in answer_cases(relabel["best_worst"], relabel["summary"], relabel["runs"])
            if c["bench"] == "ep"][0]
    assert case["line"].startswith("EP class W") and case["line"].endswith(
        "; EP is the control: it moves no memory, so a placement effect on it is the machine's "
        "(clock, shared cores, other load) or noise, not memory placement")
    assert case_launch_lines({**case, "verdict": "beyond noise"}, {case["row"]["best_placement_id"]: {}}) is None
    assert control_words("ep", "beyond noise").endswith("this machine or its load moves the other kernels' "
                                                       "numbers by as much")
    assert control_words("ep", "within noise: no placement effect told apart").endswith("as expected, none told apart")
    assert control_words("cg", "beyond noise") == ""


def test_the_answer_recommends_no_placement_to_run_ep_with():
    """EP is the control: an effect on it is the machine's or noise, so even beyond noise
    and with its best placement known, the answer gives no 'to run it best' line for it;
    the same case as MG's, with the same placement, gets one."""
    import json
    from numaplace.report.answer import answer_cases, case_launch_lines, launch_words
    from numaplace.tables.aggregate import build_tables
    vm = Path(__file__).parent / "fixtures" / "real" / "vm"
    t = build_tables(vm)
    placements = {}
    for f in sorted(vm.glob("runs/*/record.json")):
        placement = json.loads(f.read_text())["placement"]
        placements.setdefault(placement["id"], placement)
    relabel = {k: v.assign(bench=v["bench"].replace({"mg": "ep"})) if v is not None and "bench" in v else v
               for k, v in t.items()}
    mg = [c for c in answer_cases(t["best_worst"], t["summary"], t["runs"]) if c["bench"] == "mg"][0]
    ep = [c for c in answer_cases(relabel["best_worst"], relabel["summary"], relabel["runs"]) if c["bench"] == "ep"][0]
    mg, ep = {**mg, "verdict": "beyond noise"}, {**ep, "verdict": "beyond noise"}
    assert ep["row"]["best_placement_id"] == mg["row"]["best_placement_id"] in placements
    assert launch_words(mg, placements).startswith("MG class W (2 threads), to run it best: OMP_NUM_THREADS=2 ")
    assert case_launch_lines(ep, placements) is None and launch_words(ep, placements) is None


# -- NASA's code, built and run (rig: ../shared/npb/) ---------------------------------------

@pytest.fixture(scope="module")
def built(nasa_npb, tmp_path_factory):
    """(release, bench, cls) → binary, built by numaplace.builds.tree.build with npb.source
    bundled and npb.official the tarball, as the default study builds EP."""
    from numaplace.builds.tree import build
    root = tmp_path_factory.mktemp("official-kernels")
    out = {}

    def _build(release, bench, cls):
        if (release, bench, cls) not in out:
            npb = nasa_npb(release)
            settings = {"source": "bundled", "official": str(npb["tarball"]), "official_sha256": npb["sha256"]}
            d = root / release / "default"
            log = d / "logs" / f"{bench}.{cls}.log"
            try:
                out[release, bench, cls] = build(settings, "default", bench, cls, d / "tree",
                                                 d / "bin" / f"{bench}.{cls}.x", log)
            except RuntimeError as e:
                pytest.fail(f"{e}\n{log.read_text(errors='replace')[-3000:] if log.exists() else ''}")
        return out[release, bench, cls]
    return _build


CASES = [(r, b, c) for r in ("3.4.2", "3.3.1") for b in ("ep", "is", "ft") for c in ("S", "W")
         if r == "3.4.2" or c == "S"]


@pytest.mark.parametrize("release,bench,cls", CASES, ids=[f"{r}-{b}-{c}" for r, b, c in CASES])
def test_nasas_kernels_build_and_verify_at_1_and_2_threads(built, tmp_path, release, bench, cls):
    exe = built(release, bench, cls)
    assert exe.parent.parent.joinpath("official", "bin", exe.name).exists()   # its own tree beside the bundled one
    for threads in (1, 2):
        r = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                           env={"OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"})
        assert r.returncode == 0, r.stdout[-1500:] + r.stderr
        out = kind(bench).parse(r.stdout)
        assert out["implementation"] == "nasa" and out["version"].startswith(release[:3])
        assert (out["benchmark"], out["class"], out["threads"], out["verified"]) == (bench.upper(), cls, threads, True)
        assert kind(bench).outcome(out, r.returncode) == ("ok", None)
        # NPB's Mop/s is our operation count over its time (its time printed to 0.01 s)
        if out["time_s"] >= 0.05:
            assert out["mops"] * out["time_s"] == pytest.approx(work_mop(bench, cls), rel=0.2 + 0.01 / out["time_s"])


def test_a_build_without_an_official_tree_fails_in_one_line(tmp_path):
    """A build asked for anyway (the plan leaves such runs out): the record says why."""
    from numaplace.builds.tree import write_build_record
    rec = write_build_record({"source": "bundled"}, "default", "ep", "S", tmp_path / "tree",
                             tmp_path / "bin" / "ep.S.build.json", tmp_path / "logs" / "ep.S.log")
    assert rec["status"] == "failed" and rec["reason"] == NOT_BUNDLED.format(bench="EP")


def test_their_operation_counts_and_estimates_per_class():
    """work_mop: EP 2^(m+1) random numbers, IS 2^k keys x 10 rankings, FT NPB's flop formula;
    estimate: twice one thread's seconds on the reference machine, rounded up, at least 1 s,
    and the working set with 10 MiB over."""
    assert [work_mop("ep", c) for c in "SWABC"] == pytest.approx([2 ** (m + 1) / 1e6 for m in (24, 25, 28, 30, 32)])
    assert [work_mop("is", c) for c in "SWABC"] == pytest.approx([2 ** k * 10 / 1e6 for k in (16, 20, 23, 25, 27)])
    assert [work_mop("ft", c) for c in "SA"] == pytest.approx([177.1669557530053, 7136.443763977819])
    assert kind("ep").run_seconds("C", 1, ()) == pytest.approx(2 ** 33 / 1e6 / 310 * 1.02)
    assert kind("is").run_seconds("B", 2, (), 2.0) == pytest.approx(2 ** 25 * 10 / 1e6 / (940 * 2 * 2 ** 0.5) * 6)
    assert kind("ft").run_seconds("A", 4, ()) == pytest.approx(7136.443763977819 / (11000 * 4 ** 0.9) * 1.35)
    assert [kind(b).estimate(c) for b in ("ep", "is", "ft") for c in "SC"] == [
        (1, 15), (57, 15), (1, 13), (18, 1090), (1, 24), (98, 5210)]


def test_they_are_built_only_from_an_official_tree_without_serial_init():
    for b in ("ep", "is", "ft"):
        k = kind(b)
        assert (k.source_dir, k.tree_name, k.variants, k.official_only) == (None, "official",
                                                                            ("default", "mcmodel-medium"), True)
        assert (k.metric, k.unit, k.higher_is_better, k.family, k.classes) == ("mops", "Mop/s", True, "npb",
                                                                               ("S", "W", "A", "B", "C"))
        assert k.make_args("A", "default", official=True)[1:] == [b.upper(), "CLASS=A"]
    assert kind("ep").control.startswith("EP is the control: it moves no memory")
    assert kind("is").control is None and kind("ft").control is None
    assert (kind("ep").efficiency, kind("is").init_share, kind("ft").mops_1t) == (0.9, 5.0, 11000.0)
