"""NASA's own NPB 3.4.2 and 3.3.1, as distributed (../shared/npb/): every form of
`npb.source`, the make.def numaplace writes, CG and MG builds that pass NPB's own
verification in every variant, and the serial-init transformation on the real trees.

The tarballs are unpacked into pytest's temp dirs, never into the repository."""
from __future__ import annotations

import functools
import http.server
import shutil
import subprocess
import tarfile
import threading
from pathlib import Path

import pytest

from numaplace import ConfigError
from numaplace.kinds import npb_output
from numaplace.builds.tree import fetch_source, make_def, unpack_tarball
from numaplace.plan.sources import check_source
from numaplace.judge.fidelity import judge
from numaplace.builds.serial_init import ARRAYS, MARK, transform_tree, tree_version

OMP = {"3.4.2": "NPB3.4-OMP", "3.3.1": "NPB3.3-OMP"}
MPI = {"3.4.2": "NPB3.4-MPI", "3.3.1": "NPB3.3-MPI"}


@pytest.fixture(scope="module")
def unpacked(nasa_npb, tmp_path_factory):
    """release → the unpacked NPB3.x.y/ folder (a fresh copy per module)."""
    root = tmp_path_factory.mktemp("nasa-unpacked")
    out = {}
    for release in OMP:
        unpack_tarball(nasa_npb(release)["tarball"], root)
        out[release] = root / f"NPB{release}"
    return out


# -- npb.source: the forms a user writes ------------------------------------------------

@pytest.fixture(scope="module")
def http_server(nasa_npb):
    """A local HTTP server on 127.0.0.1 serving ../shared/npb/."""
    directory = nasa_npb("3.4.2")["tarball"].parent
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *a: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


@pytest.mark.parametrize("release", ["3.4.2", "3.3.1"])
@pytest.mark.parametrize("form", ["tarball", "release-folder", "omp-folder", "url"])
def test_every_source_form_finds_the_omp_tree(nasa_npb, unpacked, http_server, tmp_path, release, form):
    npb = nasa_npb(release)
    source = {"tarball": str(npb["tarball"]), "release-folder": str(unpacked[release]),
              "omp-folder": str(unpacked[release] / OMP[release]),
              "url": f"{http_server}/{npb['tarball'].name}"}[form]
    sha = npb["sha256"] if form in ("tarball", "url") else None
    check_source({"source": source, "sha256": sha}, "s.yaml")
    tree = fetch_source(source, sha, tmp_path / "source")
    assert tree.name == OMP[release] and (tree / "CG" / "Makefile").exists()
    assert tree_version(tree) == release[:3]


def _one_line(err):
    text = str(err.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_sha256_mismatch_is_one_line_before_any_build(nasa_npb):
    npb = nasa_npb("3.4.2")
    with pytest.raises(ConfigError) as e:
        check_source({"source": str(npb["tarball"]), "sha256": "0" * 64}, "s.yaml")
    assert _one_line(e).startswith("s.yaml: npb.sha256: ") and f"not {'0' * 64}" in str(e.value)


@pytest.mark.parametrize("release", ["3.4.2", "3.3.1"])
def test_a_tree_without_an_omp_part_is_refused(unpacked, tmp_path, release):
    only_mpi = tmp_path / f"NPB{release}"
    shutil.copytree(unpacked[release] / MPI[release], only_mpi / MPI[release])
    for given in (only_mpi, only_mpi / MPI[release]):
        with pytest.raises(ConfigError) as e:
            check_source({"source": str(given)}, "s.yaml")
        assert _one_line(e).startswith("s.yaml: npb.source: no NPB3.x-OMP tree") and MPI[release] in str(e.value)
    tarball = tmp_path / "mpi-only.tar.gz"
    with tarfile.open(tarball, "w:gz") as tf:
        tf.add(only_mpi, arcname=only_mpi.name)
    with pytest.raises(ConfigError, match=r"no NPB3.x-OMP tree .*found: NPB3.\d.\d/NPB3.\d-MPI"):
        check_source({"source": str(tarball)}, "s.yaml")


def test_url_needs_sha256_and_a_mismatch_stops_the_fetch(nasa_npb, http_server, tmp_path):
    url = f"{http_server}/NPB3.4.2.tar.gz"
    with pytest.raises(ConfigError, match=r"^s.yaml: npb.sha256: a URL source .* needs the tarball's sha256"):
        check_source({"source": url}, "s.yaml")
    with pytest.raises(RuntimeError, match="downloaded sha256 .*, not 1111"):
        fetch_source(url, "1" * 64, tmp_path / "source")
    assert not list((tmp_path / "source").glob("*.tar.gz*"))       # nothing half-kept
    with pytest.raises(ConfigError, match="file:// URL is a path"):
        check_source({"source": "file:///tmp/x.tar.gz"}, "s.yaml")
    with pytest.raises(ConfigError, match="no such file or directory"):
        check_source({"source": str(tmp_path / "absent.tar.gz")}, "s.yaml")


# -- builds from the real trees -----------------------------------------------------------

def run(exe, threads, cwd):
    return subprocess.run([str(exe)], cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={"OMP_NUM_THREADS": str(threads), "PATH": "/usr/bin:/bin"})


BUILDS = [(c, v) for c in ("S", "W") for v in ("default", "serial-init", "mcmodel-medium")] + [("A", "default")]


@pytest.mark.parametrize("cls,variant", BUILDS, ids=[f"{c}-{v}" for c, v in BUILDS])
@pytest.mark.parametrize("bench", ["cg", "mg"])
@pytest.mark.parametrize("release", ["3.4.2", "3.3.1"])
def test_official_kernels_build_and_verify(official_build, tmp_path, release, bench, cls, variant):
    exe = official_build(release, bench, cls, variant)
    r = run(exe, 2, tmp_path)
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr
    out = npb_output.parse(r.stdout)
    assert out["implementation"] == "nasa" and out["version"].startswith(release[:3])
    assert out["verified"] and out["class"] == cls and out["threads"] == 2, r.stdout[-1500:]
    assert ("-mcmodel=medium" in r.stdout) == (variant == "mcmodel-medium")


def test_make_def_has_what_both_releases_read(unpacked):
    """Every variable the releases' Makefiles use (sys/make.common, CG/MG Makefiles) is set."""
    import re
    text = make_def({"fc": "gfortran", "fflags": "-O3 -fopenmp"}, "mcmodel-medium", "3.3")
    defined = set(re.findall(r"^(\w+) =", text, re.M))
    for release, omp in OMP.items():
        tree = unpacked[release] / omp
        used = set()
        for mk in [tree / "sys" / "make.common", tree / "CG" / "Makefile", tree / "MG" / "Makefile"]:
            used |= set(re.findall(r"\$[({](\w+)[)}]", mk.read_text()))
        own = {"PROGRAM", "FCOMPILE", "CCOMPILE", "BENCHMARK", "BENCHMARKU", "CLASS", "COMMON", "OBJS",
               "MAKE", "VEXT", "MACHINE", "SUBTYPE"}
        assert used - own <= defined, f"{release}: make.def lacks {sorted(used - own - defined)}"
    assert "FFLAGS = -O3 -fopenmp -mcmodel=medium" in text and "FLINKFLAGS = -O3 -fopenmp -mcmodel=medium" in text


# -- the serial-init transformation on the real trees ------------------------------------

@pytest.fixture(params=["3.4.2", "3.3.1"])
def real_tree(request, unpacked, tmp_path):
    dest = tmp_path / OMP[request.param]
    shutil.copytree(unpacked[request.param] / OMP[request.param], dest)
    return dest


def test_transform_zeroes_every_array_before_the_first_parallel_region(real_tree):
    version, done = transform_tree(real_tree)
    for kernel in ("CG", "MG"):
        assert sorted(done[kernel]) == sorted(ARRAYS[kernel])
        if version == "3.4":
            data = (real_tree / kernel / f"{kernel.lower()}_data.f90").read_text()
            main = (real_tree / kernel / f"{kernel.lower()}.f90").read_text()
            block = data[data.index(MARK):data.index(f"end {MARK}")]
            # alloc_space (which now zeroes) is called before the main program's first parallel region
            assert main.lower().index("call alloc_space") < main.lower().index("!$omp parallel")
        else:
            main = (real_tree / kernel / f"{kernel.lower()}.f").read_text()
            block = main[main.index(MARK):main.index(f"end {MARK}")]
            assert main.index(MARK) < main.lower().index("!$omp parallel")
        for name in ARRAYS[kernel]:
            assert f" {name} = 0\n" in block


def test_transform_twice_is_an_error(real_tree):
    transform_tree(real_tree)
    with pytest.raises(ConfigError, match="already transformed"):
        transform_tree(real_tree)


def test_not_a_tree(tmp_path):
    with pytest.raises(ConfigError, match="neither an NPB3.4-OMP"):
        tree_version(tmp_path)


# -- a build that fails is data ------------------------------------------------------------

def test_failed_build_is_recorded_and_the_study_goes_on(nasa_npb, repo, tmp_path):
    """NPB 3.3.1's MG.C does not link in the default (small) code model, as the thesis
    found: its runs are recorded build-failed with the cure, MG.S builds and runs, the
    report lists the placements that could not run, and nothing is built twice."""
    import json

    import yaml
    from conftest import copy_workflow, read_records, run_snakemake
    npb = nasa_npb("3.3.1")
    wf = copy_workflow(repo, tmp_path / "wf")
    study = {"study": "official-fail", "platform": "auto", "benchmarks": ["mg"], "classes": ["S", "C"],
             "variants": ["default"], "repetitions": 1, "launcher": "taskset",
             "npb": {"source": str(npb["tarball"]), "sha256": npb["sha256"]},
             "run": {"idle_check": "off"}, "experiments": [{"name": "one", "placements": [{"cpus": "0", "id": "c0"}]}]}
    (wf / "s.yaml").write_text(yaml.safe_dump(study))
    # the study goes on past the failed build (MG.S is measured), and then exits 1 naming
    # the build log: a study whose builds failed has failed
    first = run_snakemake(wf, "--cores", "1", "--configfile", "s.yaml", check=False)
    assert first.returncode != 0 and "builds of study official-fail failed" in first.out, first.out[-3000:]
    recs = read_records(wf, "official-fail")
    assert {rid: r["status"] for rid, r in recs.items()} == {"mg.S.default.c0.r1": "ok",
                                                            "mg.C.default.c0.r1": "build-failed"}
    failed = recs["mg.C.default.c0.r1"]
    assert "relocation truncated to fit" in failed["reason"] and "variants: [mcmodel-medium]" in failed["reason"]
    assert "\n" not in failed["reason"] and judge(failed)["verdict"] == "unknown"
    assert recs["mg.S.default.c0.r1"]["output"]["implementation"] == "nasa"
    builds = {p.name: json.loads(p.read_text()) for p in (wf / "results" / "build").glob("*/default/bin/*.build.json")}
    assert {k: v["status"] for k, v in builds.items()} == {"mg.S.build.json": "ok", "mg.C.build.json": "failed"}
    summary = (wf / "report" / "official-fail" / "summary.md").read_text()
    assert "build-failed" in summary and "mcmodel-medium" in summary
    again = run_snakemake(wf, "--cores", "1", "--configfile", "s.yaml", "-n")
    assert "npb_build" not in again.out and "measure" not in again.out, again.out[-2000:]
    # retry: the run and the failed build are set aside (kept); the build is planned once more
    out = subprocess.run(["numaplace", "retry-failed", "results/official-fail"], cwd=wf, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "set aside mg.C.default.c0.r1 (build-failed)"
    assert len(list((wf / "results" / "build").glob("*/default/bin/mg.C.build.failed-1.json"))) == 1
    retry = run_snakemake(wf, "--cores", "1", "--configfile", "s.yaml", "-n", "--quiet", "host")   # with the job blocks
    assert "rule npb_build" in retry.out and "wildcards: variant=default, bench=mg, cls=C" in retry.out


@pytest.mark.parametrize("member", ["../evil.txt", "/etc/evil.txt", "link-out"])
def test_unpacking_refuses_members_outside_the_tree(tmp_path, monkeypatch, member):
    """With or without Python's tarfile data filter (Debian 12's 3.11.2 has none)."""
    import io
    from numaplace.builds.tree import BuildError
    tarball = tmp_path / "bad.tar.gz"
    with tarfile.open(tarball, "w:gz") as tf:
        info = tarfile.TarInfo(member)
        if member == "link-out":
            info.type, info.linkname = tarfile.SYMTYPE, "../../outside"
            tf.addfile(info)
        else:
            info.size = 4
            tf.addfile(info, io.BytesIO(b"evil"))
    for has_filter in (True, False):
        if not has_filter:
            monkeypatch.delattr(tarfile, "data_filter", raising=False)
        dest = tmp_path / f"out-{has_filter}"
        try:
            unpack_tarball(tarball, dest)
        except (BuildError, tarfile.TarError):
            continue                       # refused
        # or tamed: Python's data filter strips a leading "/" (the member lands inside)
        assert member == "/etc/evil.txt" and has_filter and (dest / "etc" / "evil.txt").exists()
    assert not (tmp_path / "evil.txt").exists() and not Path("/etc/evil.txt").exists()
    assert not (tmp_path / "outside").exists()


def test_a_serial_tree_is_never_taken_for_the_openmp_one():
    """NPB 3.3's NPB3.3-SER (or an -MPI tree) given alone is refused, naming what was
    found: the study measures OpenMP placements, and a serial CG would run one thread."""
    from numaplace.plan.sources import TREE_PARTS, omp_tree
    files = set(TREE_PARTS)
    for name in ("NPB3.3-SER", "NPB3.4-MPI"):
        with pytest.raises(ValueError, match=f"no NPB3.x-OMP tree .*found: {name}"):
            omp_tree(f"/src/{name}", files)
    assert omp_tree("/src/my-npb", files) == ""            # a renamed OMP tree given directly
