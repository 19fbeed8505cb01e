"""The serial-init transformation and make.def generation for official NPB trees,
tested on trees shaped like NPB3.4-OMP and NPB3.3-OMP (tests/fixtures/npb-official)."""
import shutil
import subprocess

import pytest

from numaplace import ConfigError
from numaplace.build import find_omp_tree, make_def
from numaplace.serial_init import ARRAYS, MARK, transform_tree, tree_version

FIXTURES = "tests/fixtures/npb-official"


@pytest.fixture(params=["NPB3.4-OMP", "NPB3.3-OMP"])
def tree(request, repo, tmp_path):
    dest = tmp_path / "NPB-src" / request.param
    shutil.copytree(repo / FIXTURES / request.param, dest)
    return dest


def compile_and_run(src_files, tmp_path, name):
    exe = tmp_path / name
    subprocess.run(["gfortran", "-O2", "-fopenmp", "-o", str(exe), *map(str, src_files)],
                   check=True, cwd=tmp_path, capture_output=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True,
                          env={"OMP_NUM_THREADS": "2"}).stdout


def test_transform_inserts_zeroing_before_first_parallel_region(tree, tmp_path):
    version, done = transform_tree(tree)
    assert version == ("3.4" if "3.4" in tree.name else "3.3")
    for kernel in ("CG", "MG"):
        assert sorted(done[kernel]) == sorted(ARRAYS[kernel])
        files = sorted((tree / kernel).glob("*.f*"), key=lambda p: "data" not in p.name)
        text = "".join(f.read_text() for f in files)
        start = text.index(MARK)
        for name in ARRAYS[kernel]:
            assert f" {name} = 0\n" in text[start:text.index(f"end {MARK}")]
        # zeroing comes before the main program's first parallel region
        main = (tree / kernel / (f"{kernel.lower()}.f90" if version == "3.4" else f"{kernel.lower()}.f")).read_text()
        if version == "3.3":
            assert main.index(MARK) < main.index("!$omp parallel")
        else:
            assert main.index("call alloc_space") < main.index("!$omp parallel")
        # the transformed kernel still compiles and runs
        out = compile_and_run(files, tmp_path, f"{kernel}-{version}")
        assert "fixture" in out


def test_transform_twice_is_an_error(tree):
    transform_tree(tree)
    with pytest.raises(ConfigError, match="already transformed"):
        transform_tree(tree)


def test_missing_array_is_named(tree):
    if tree_version(tree) == "3.4":
        f = tree / "MG" / "mg_data.f90"
        f.write_text(f.read_text().replace("allocate(u(nr), v(nv), r(nr), stat=ierr)", "allocate(u(nr), v(nv), stat=ierr)"))
        with pytest.raises(ConfigError, match="does not allocate r"):
            transform_tree(tree)
    else:
        f = tree / "MG" / "mg.f"
        f.write_text(f.read_text().replace("double precision u(nr), v(nv), r(nr)", "double precision u(nr), v(nv)"))
        with pytest.raises(ConfigError, match="arrays r are not declared"):
            transform_tree(tree)


def test_find_tree_and_make_def(tree):
    assert find_omp_tree(tree.parent) == tree
    version = tree_version(tree)
    text = make_def({"fc": "gfortran", "fflags": "-O3 -fopenmp"}, "mcmodel-medium", version)
    assert "FFLAGS = -O3 -fopenmp -mcmodel=medium" in text
    assert "FLINKFLAGS = -O3 -fopenmp -mcmodel=medium" in text
    assert ("RAND = randdp" if version == "3.3" else "RAND = randi8") in text
    assert "BINDIR = ../bin" in text


def test_not_a_tree(tmp_path):
    with pytest.raises(ConfigError, match="neither an NPB3.4-OMP"):
        tree_version(tmp_path)
