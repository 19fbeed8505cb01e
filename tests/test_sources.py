"""Where a study's NPB kernels come from (numaplace.plan.sources): the OpenMP tree found in an
official release, the checks made on a source before any build, which settings each kind's
tree is built from, and the digest that gives a changed bundled tree new build folders."""
from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from numaplace import ConfigError
from numaplace.kinds import kind
from numaplace.plan import sources
from numaplace.plan.sources import (NOT_BUNDLED, TREE_PARTS, bundled_digest, check_source, dir_files, not_buildable,
                                    official_source, omp_tree, tar_files, tree_settings)

pytestmark = pytest.mark.unit


def tree(prefix):
    return {f"{prefix}/{p}" if prefix else p for p in TREE_PARTS}


def test_the_openmp_tree_of_a_release_is_the_one_named_omp():
    """NPB3.3.1 unpacks to NPB3.3-MPI, NPB3.3-OMP and NPB3.3-SER: the study measures OpenMP placements."""
    files = tree("NPB3.3.1/NPB3.3-MPI") | tree("NPB3.3.1/NPB3.3-OMP") | tree("NPB3.3.1/NPB3.3-SER") | {"NPB3.3.1/README"}
    assert omp_tree("/src/NPB3.3.1.tar.gz", files) == "NPB3.3.1/NPB3.3-OMP"
    assert omp_tree("/src/x", tree("NPB3.4-omp")) == "NPB3.4-omp"          # the name is read case-blind
    assert omp_tree("/src/x", tree("NPB3.4-OMP") | tree("NPB3.4-OMP-old")) == "NPB3.4-OMP"   # named *-OMP only
    assert omp_tree("/src/NPB3.4-OMP", tree("")) == ""                    # the OMP tree given directly
    assert omp_tree("/src/mine", tree("")) == ""                           # ... renamed


def test_a_tree_missing_a_part_or_two_openmp_trees_is_no_source():
    with pytest.raises(ValueError) as e:
        omp_tree("/src/r", tree("A-OMP") | tree("B-OMP"))
    assert str(e.value) == "no NPB3.x-OMP tree (CG/, MG/, config/, sys/) inside /src/r (found: A-OMP, B-OMP)"
    with pytest.raises(ValueError) as e:
        omp_tree("/src/r", tree("NPB3.4-OMP") - {"NPB3.4-OMP/sys/Makefile"})
    assert str(e.value) == "no NPB3.x-OMP tree (CG/, MG/, config/, sys/) inside /src/r (found: no NPB tree at all)"
    with pytest.raises(ValueError, match=r"found: NPB3.4-MPI\)$"):
        omp_tree("/src/NPB3.4-MPI", tree(""))
    with pytest.raises(ValueError, match=r"found: NPB3.3-SER, x-MPI\)$"):
        omp_tree("/src/NPB3.3-SER", tree("") | tree("x-MPI"))


def test_a_folder_is_listed_three_levels_below_its_top_and_refused_when_it_is_huge(tmp_path, monkeypatch):
    for rel in ("a.txt", "NPB/CG/Makefile", "NPB/CG/deep/x.f", "NPB/CG/deep/deeper/y.f"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert dir_files(tmp_path) == {"a.txt", "NPB", "NPB/CG", "NPB/CG/Makefile", "NPB/CG/deep", "NPB/CG/deep/x.f",
                                   "NPB/CG/deep/deeper"}
    assert dir_files(tmp_path, depth=1) == {"a.txt", "NPB", "NPB/CG"}
    monkeypatch.setattr(sources, "MAX_TREE_FILES", 7)
    assert len(dir_files(tmp_path)) == 7
    monkeypatch.setattr(sources, "MAX_TREE_FILES", 6)
    with pytest.raises(ValueError) as e:
        dir_files(tmp_path)
    assert str(e.value) == f"{tmp_path} holds more than 6 files near its top: not an NPB source tree"


def tarball(path, names):
    with tarfile.open(path, "w:gz") as tf:
        for n in names:
            info = tarfile.TarInfo(n)
            info.size = 1
            tf.addfile(info, io.BytesIO(b"x"))
    return path


def test_a_tarballs_files_are_named_from_its_top_folder(tmp_path):
    t = tarball(tmp_path / "n.tar.gz", ["./NPB3.4.2/NPB3.4-OMP/CG/Makefile", "NPB3.4.2/README"])
    assert tar_files(t) == {"NPB3.4.2/NPB3.4-OMP/CG/Makefile", "NPB3.4.2/README"}


def test_the_official_tree_is_npb_official_before_an_official_npb_source():
    assert official_source({}) is None and official_source({"source": "bundled", "sha256": "a" * 64}) is None
    assert official_source({"source": "/t.tar.gz"}) == ("/t.tar.gz", None)
    assert official_source({"source": "/t.tar.gz", "official": "/o.tar.gz"}) == ("/o.tar.gz", None)
    assert official_source({"official": "", "source": "/t.tar.gz", "sha256": "s"}) == ("/t.tar.gz", "s")


def test_each_kind_is_built_from_its_own_tree():
    """The micro-benchmarks always from their bundled tree, CG/MG from npb.source, EP/IS/FT only from an official one."""
    given = {"source": "/t.tar.gz", "sha256": "s", "fc": "gfortran"}
    assert tree_settings(kind("membw"), given) == {"source": "bundled", "sha256": "s", "fc": "gfortran"}
    assert tree_settings(kind("cg"), given) is given
    assert tree_settings(kind("ep"), given) == {"source": "/t.tar.gz", "sha256": "s", "fc": "gfortran"}
    assert tree_settings(kind("is"), {"source": "bundled", "official": "/o", "official_sha256": "h"}) == \
        {"source": "/o", "sha256": "h", "official": "/o", "official_sha256": "h"}
    assert not_buildable(kind("ft"), {"source": "bundled"}) == NOT_BUNDLED.format(bench="FT")
    assert NOT_BUNDLED.format(bench="FT").startswith("FT is NASA's code, which numaplace does not bundle (it bundles CG and MG)")
    assert not_buildable(kind("ft"), {"official": "/o"}) is None and not_buildable(kind("cg"), {}) is None


def refused(settings):
    with pytest.raises(ConfigError) as e:
        check_source(settings, "s.yaml")
    return str(e.value)


def test_a_local_source_is_checked_before_any_build(tmp_path):
    good = tarball(tmp_path / "NPB3.4.2.tar.gz", sorted(tree("NPB3.4.2/NPB3.4-OMP")))
    sha = hashlib.sha256(good.read_bytes()).hexdigest()
    check_source({"source": str(good), "sha256": sha}, "s.yaml")
    check_source({"source": str(good)}, "s.yaml")
    check_source({"source": "bundled", "official": str(good), "official_sha256": sha}, "s.yaml")
    assert refused({"source": str(good), "sha256": "0" * 64}) == \
        f"s.yaml: npb.sha256: {good} has sha256 {sha}, not {'0' * 64}"
    assert refused({"official": str(good), "official_sha256": "1" * 64}) == \
        f"s.yaml: npb.official_sha256: {good} has sha256 {sha}, not {'1' * 64}"
    bad = tmp_path / "bad.tar.gz"
    bad.write_text("not a tarball")
    assert refused({"source": str(bad)}).startswith(f"s.yaml: npb.source: {bad}: not a readable tarball (")
    ser = tarball(tmp_path / "ser.tar", sorted(tree("NPB3.3-SER")))
    assert refused({"source": str(ser)}) == (f"s.yaml: npb.source: no NPB3.x-OMP tree (CG/, MG/, config/, sys/) "
                                             f"inside {ser} (found: NPB3.3-SER)")
    for rel in TREE_PARTS:
        (tmp_path / "NPB3.4-OMP" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "NPB3.4-OMP" / rel).write_text("x")
    check_source({"source": str(tmp_path / "NPB3.4-OMP")}, "s.yaml")


def test_a_source_that_is_no_path_or_https_url_is_refused_in_one_line(tmp_path):
    assert refused({"source": "file:///tmp/x.tar.gz"}) == ("s.yaml: npb.source: file:///tmp/x.tar.gz: only http(s) "
                                                           "URLs or local paths (a file:// URL is a path: write the path)")
    assert refused({"source": "https://h/NPB3.4.2.tar.gz"}) == (
        "s.yaml: npb.sha256: a URL source (https://h/NPB3.4.2.tar.gz) needs the tarball's sha256 (sha256sum <file>), "
        "so that what is built is what was meant")
    check_source({"source": "http://h/NPB3.4.2.tar.gz", "sha256": "a" * 64}, "s.yaml")   # checked when fetched
    long = str(tmp_path / ("d" * 100))
    assert refused({"source": long}) == f"s.yaml: npb.source: {long[:77]}...: no such file or directory"
    at80 = "/" + "e" * 79
    assert refused({"source": at80}) == f"s.yaml: npb.source: {at80}: no such file or directory"
    assert refused({"source": "/dev/null"}) == "s.yaml: npb.source: /dev/null: not a regular file or directory"
    check_source({}, "s.yaml")
    check_source({"source": "bundled"}, "s.yaml")


def fake_kinds(tmp_path):
    npb, micro = tmp_path / "npb", tmp_path / "micro"
    for d, files in ((npb, {"CG/cg.f": "cg", "make.def": "x", "CG/cg.o": "o", "bin/cg.S.x": "x", "build.log": "b"}),
                     (micro, {"membw.c": "m"})):
        for rel, text in files.items():
            (d / rel).parent.mkdir(parents=True, exist_ok=True)
            (d / rel).write_text(text)
    return {"cg": SimpleNamespace(source_dir=npb, follows_npb_source=True),
            "membw": SimpleNamespace(source_dir=micro, follows_npb_source=False),
            "ep": SimpleNamespace(source_dir=None, follows_npb_source=True)}, npb, micro


def digest_of(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p)
    return h.hexdigest()


def test_the_bundled_digest_hashes_each_source_file_by_name_and_bytes_and_leaves_build_products_out(tmp_path, monkeypatch):
    """A changed bundled kernel gets new build folders; a make.def, object or binary left by a build does not."""
    import numaplace.kinds
    kinds, npb, micro = fake_kinds(tmp_path)
    monkeypatch.setattr(numaplace.kinds, "KINDS", kinds)
    want = digest_of(b"micro/membw.c\0", b"m", b"npb/CG/cg.f\0", b"cg")
    assert bundled_digest({"source": "bundled"}) == want == bundled_digest({})
    # an official npb.source: CG/MG come from it, the micro-benchmarks still from their tree
    assert bundled_digest({"source": "/t.tar.gz"}) == digest_of(b"micro/membw.c\0", b"m")
    official = bundled_digest({"official": "/o.tar.gz", "official_sha256": "h"})
    assert official == digest_of(b'["/o.tar.gz", "h"]', b"micro/membw.c\0", b"m", b"npb/CG/cg.f\0", b"cg")
    assert bundled_digest({"official": "/o.tar.gz"}) == digest_of(b'["/o.tar.gz", null]', b"micro/membw.c\0", b"m",
                                                                 b"npb/CG/cg.f\0", b"cg")
    (npb / "CG" / "cg.f").write_text("cg2")
    assert bundled_digest({}) != want
