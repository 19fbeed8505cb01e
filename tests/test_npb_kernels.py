"""numaplace's NPB-compatible CG and MG: NPB verification at S and W in both
initialisation orders, the report format, and a failed verification's exit status."""
import re
import shutil
import subprocess

import pytest
from conftest import need_rig, single_run_spec

from numaplace.kinds import npb_output
from numaplace.run.runner import execute

REFERENCE = {("cg", "S"): 8.5971775078648, ("cg", "W"): 10.362595087124,
             ("mg", "S"): 0.5307707005734e-04, ("mg", "W"): 0.6467329375339e-05}
TOLERANCE = {"cg": 1e-10, "mg": 1e-8}


def run(exe, threads, cwd):
    return subprocess.run([str(exe)], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={"OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"})


def reported_value(stdout):
    m = re.search(r"^\s*(?:Zeta|L2 Norm) is\s+(\S+)", stdout, re.M)
    return float(m.group(1).replace("D", "E"))


@pytest.mark.parametrize("variant", ["default", "serial-init"])
@pytest.mark.parametrize("cls", ["S", "W"])
@pytest.mark.parametrize("bench", ["cg", "mg"])
def test_verifies_at_1_2_3_threads(npb_build, tmp_path, bench, cls, variant):
    exe = npb_build(bench, cls, variant)
    for threads in (1, 2, 3):                 # 3 oversubscribes this 2-core machine on purpose
        r = run(exe, threads, tmp_path)
        assert r.returncode == 0, r.stdout[-1500:] + r.stderr
        out = npb_output.parse(r.stdout)
        assert out["verified"] and out["class"] == cls and out["threads"] == threads
        assert out["init_order"] == ("serial" if variant == "serial-init" else "parallel")
        ref = REFERENCE[(bench, cls)]
        assert abs(reported_value(r.stdout) - ref) / ref <= TOLERANCE[bench]
        assert out["implementation"] == "numaplace"


def test_mg_verifies_with_more_threads_than_coarse_planes(npb_build, tmp_path):
    """MG's plane partition at its edges: at 17 threads class S's 16 coarse planes leave a
    thread without any; at 5, the 32 fine planes split unevenly (6-7 per thread)."""
    exe = npb_build("mg", "S", "default")
    for threads in (5, 17):
        r = run(exe, threads, tmp_path)
        assert r.returncode == 0, r.stdout[-1500:] + r.stderr
        out = npb_output.parse(r.stdout)
        assert out["verified"] and out["threads"] == threads


def test_mcmodel_medium_builds_and_verifies(npb_build, tmp_path):
    for bench in ("cg", "mg"):
        exe = npb_build(bench, "S", "mcmodel-medium")
        r = run(exe, 2, tmp_path)
        assert r.returncode == 0 and "-mcmodel=medium" in npb_output.parse(r.stdout)["fflags"]


def test_report_layout_matches_official(npb_build, tmp_path, repo):
    sample = (repo / "../shared/docs/npb-sample-output.txt")
    if not sample.exists():
        need_rig("../shared/docs/npb-sample-output.txt not present (the shared docs sit beside the clone)")
    official = sample.read_text().split("# ---- mg.S.x ----")[0]
    ours = run(npb_build("cg", "S"), 2, tmp_path).stdout
    shape = re.compile(r"^ (Class|Size|Iterations|Time in seconds|Total threads|Avail threads|Mop/s total|"
                       r"Mop/s/thread|Operation type|Verification|Version|Compile date)\s*=.*$", re.M)
    ours_lines = {m.group(1): m.group(0) for m in shape.finditer(ours)}
    official_lines = {m.group(1): m.group(0) for m in shape.finditer(official)}
    assert ours_lines.keys() == official_lines.keys()
    for key, line in official_lines.items():
        assert ours_lines[key].index("=") == line.index("=")          # same label column
        assert len(ours_lines[key]) == len(line), key                 # same right-aligned field
    assert "numaplace" in ours.split("CG Benchmark")[0]               # banner: not NASA's code
    # the iteration table of class S matches the official zeta column digit for digit
    zeta = lambda text: re.findall(r"^\s+\d+\s+\S+\s+(\d+\.\d{13})$", text, re.M)
    assert zeta(ours) == zeta(official)


def test_failed_verification_is_detected(repo, tmp_path):
    """A build with a perturbed problem constant fails NPB verification: exit status 2,
    and the runner records it as unverified."""
    tree = tmp_path / "src"
    shutil.copytree(repo / "npb/src", tree, ignore=shutil.ignore_patterns("build.*", "*.x"))
    params = tree / "CG" / "cg_params.f90"
    text = params.read_text()
    assert "rcond = 0.1_real64" in text
    params.write_text(text.replace("rcond = 0.1_real64", "rcond = 0.1000001_real64"))
    subprocess.run(["make", "CG", "CLASS=S"], cwd=tree, check=True, capture_output=True)
    exe = tree / "bin" / "cg.S.x"
    r = run(exe, 1, tmp_path)
    assert r.returncode == 2
    assert npb_output.parse(r.stdout)["verification"] == "UNSUCCESSFUL"
    assert "VERIFICATION FAILED" in r.stdout
    spec = {**single_run_spec(), "run_id": "cg.S.perturbed.c0.r1", "variant": "perturbed"}
    rec = execute(spec, exe, tmp_path / "run" / "record.json")
    assert rec["status"] == "unverified" and rec["exit_status"] == 2


def test_concurrent_builds_of_one_tree(repo, tmp_path):
    """On a cluster two classes of one variant can build at once (separate jobs): the
    tree's lock file serialises them, so both binaries come out."""
    import json
    import sys
    tree = tmp_path / "serial-init" / "tree"
    procs = [subprocess.Popen([sys.executable, "-m", "numaplace", "build", "--settings", json.dumps({}),
                               "--variant", "serial-init", "--bench", bench, "--cls", "S",
                               "--tree", str(tree), "--record", str(tmp_path / f"{bench}.S.build.json"),
                               "--log", str(tmp_path / f"{bench}.log")])
             for bench in ("cg", "mg")]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    for bench in ("cg", "mg"):
        assert json.loads((tmp_path / f"{bench}.S.build.json").read_text())["status"] == "ok"
        r = run(tmp_path / f"{bench}.S.x", 2, tmp_path)
        assert r.returncode == 0 and npb_output.parse(r.stdout)["init_order"] == "serial"


def test_a_changed_bundled_kernel_gets_a_new_build_key(repo, tmp_path, monkeypatch):
    """The build folder's key covers the bundled trees' contents, so an updated kernel is
    rebuilt instead of the previous binary being reused; NASA's source leaves npb/src out."""
    from numaplace.kinds import kind
    from numaplace.plan.study import load_study_file

    def key(**npb):        # a study read anew: one study keeps its key (Snakemake asks per run)
        study = load_study_file(repo / "config" / "studies" / "quick.yaml", repo / "config")
        study.config["npb"] = {**study.npb, **npb}
        return study.build_key()
    tree = tmp_path / "src"
    shutil.copytree(kind("cg").source_dir, tree)
    monkeypatch.setattr(type(kind("cg")), "source_dir", tree)
    before = key()
    (tree / "CG" / "Makefile").write_text((tree / "CG" / "Makefile").read_text() + "\n# changed\n")
    after = key()
    assert after != before
    (tree / "CG" / "build.B.parallel").mkdir()          # build products are not source
    (tree / "CG" / "build.B.parallel" / "cg.o").write_bytes(b"\0")
    assert key() == after
    official = key(source="/nasa/NPB3.4.2.tar.gz")
    (tree / "CG" / "Makefile").write_text("# npb/src is not what an official build uses\n")
    assert key(source="/nasa/NPB3.4.2.tar.gz") == official


# -- the kinds' numbers (numaplace.kinds.npb): what a run costs, how it is built and judged --

def test_npbs_operation_counts_per_class():
    """work_mop: NPB's own Mop counts (CG: 2 na niter (3 + z(z+1) + 25 (5 + z(z+1)) + 3),
    MG: 58 nit n^3), which its Mop/s divide."""
    from numaplace.kinds.npb import work_mop
    assert [work_mop("cg", c) for c in "SWABC"] == pytest.approx([66.654, 420.63, 1496.46, 54708.75, 143347.5])
    assert [work_mop("mg", c) for c in "SWABC"] == pytest.approx([7.602176, 486.539264, 3892.314112, 19461.57056,
                                                                  155692.56448])


def test_a_runs_estimated_seconds_scale_with_speed_threads_and_set_up():
    """run_seconds = Mop / (Mop/s of one thread x speed x threads^efficiency) x (1 + set-up share)."""
    from numaplace.kinds import kind
    cg, mg = kind("cg"), kind("mg")
    assert cg.run_seconds("A", 1, ()) == pytest.approx(1496.46 / 1840 * 1.15)
    assert cg.run_seconds("B", 4, (), 2.0) == pytest.approx(54708.75 / (1840 * 2 * 4 ** 0.9) * 1.15)
    assert mg.run_seconds("C", 8, ()) == pytest.approx(155692.56448 / (5830 * 8 ** 0.8) * 1.10)
    assert (cg.estimate("B"), mg.estimate("C")) == ((600, 420), (900, 3500))
    assert [cg.working_set_mb(c) for c in "SWABC"] == [5, 17, 50, 344, 891]
    assert [mg.working_set_mb(c) for c in "SWABC"] == [5, 58, 435, 435, 3480] and cg.working_set_mb("X") is None


def test_how_the_matrices_explain_cg_and_mg():
    """CG: a third of a thread's loads reach the whole vector (latency, memlat); MG: its halo,
    2 of the grid's n planes per thread, at most all (bandwidth, membw, contended)."""
    from numaplace.kinds import kind
    from numaplace.kinds.npb import mg_shared_share
    cg, mg = kind("cg").explain, kind("mg").explain
    assert (cg.matrix_kind, cg.contends, cg.shared_share("B", 4)) == ("memlat", False, pytest.approx(1 / 3))
    assert (mg.matrix_kind, mg.contends) == ("membw", True) and mg.shared_share is mg_shared_share
    assert [mg_shared_share("S", t) for t in (1, 4, 16, 17)] == [1 / 16, 0.25, 1.0, 1.0]
    assert mg_shared_share("C", 2) == 2 * 2 / 512 and mg_shared_share("X", 2) == 0.0


def test_make_args_and_a_failed_npb_verification():
    """serial-init of the bundled tree is INIT=serial on make's line (official trees are
    transformed instead); a completed run NPB did not verify is unverified, with its status."""
    from numaplace.kinds import kind
    cg = kind("cg")
    assert cg.make_args("B", "serial-init")[1:] == ["CG", "CLASS=B", "INIT=serial"]
    assert cg.make_args("B", "serial-init", official=True)[1:] == ["CG", "CLASS=B"]
    assert kind("mg").make_args("A", "default")[1:] == ["MG", "CLASS=A"]
    assert cg.outcome({"complete": True, "verified": False}, 2) == ("unverified",
                                                                    "NPB verification UNSUCCESSFUL (exit status 2)")
    assert cg.outcome({"complete": False, "verified": False}, 0) == ("failed", "no NPB CG report in stdout")
    assert cg.outcome({"complete": True, "verified": True}, 0) == ("ok", None)
    assert cg.outcome({"complete": True, "verified": True}, 3) == ("failed", "exit status 3")
    assert (cg.binary_name("C"), cg.shown_program("C"), cg.case_name("C")) == ("cg.C.x", "./cg.C.x", "CG class C")
    assert kind("mg").serial_init_arrays == ("u", "v", "r") and cg.serial_init_arrays[:3] == ("colidx", "rowstr", "iv")
