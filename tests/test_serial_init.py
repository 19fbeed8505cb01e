"""The serial-init variant of an official tree (numaplace.builds.serial_init) on small
Fortran sources shaped as NPB3.3-OMP's (fixed form, static arrays) and NPB3.4-OMP's
(free form, alloc_space) are: where the zeroing block lands, what it names, and what is
refused; and the make.def and build-failure lines of numaplace.builds.tree."""
from __future__ import annotations

import pytest

from numaplace import ConfigError
from numaplace.builds import serial_init as si
from numaplace.builds.tree import build_failure_reason, make_def

CG33 = """\
c  NPB3.3-OMP CG (shape of cg.f)
      subroutine helper
      x = 1
      end
      program cg
c---------------------------------------------------------------------
      implicit none
      include 'npbparams.h'
      integer    colidx(nz), rowstr(na+1),
     >           iv(na), arow(na), acol(naz)
      double precision v(nz), aelt(naz), a(nz), x(na+2), z(na+2),
     >                 p(na+2), q(na+2), r(na+2)
      common / main_int_mem / colidx, rowstr, iv, arow, acol
      double precision zeta, randlc
      external randlc

      do i = 1, t_last
         call timer_clear(i)
      end do
!$omp parallel default(shared) private(i)
      end
"""

MG33 = """\
      program mg
      implicit none
      double precision u(nr), v(nv), r(nr)
      common /noautom/ u, v, r
#ifdef _OPENMP
      integer omp_get_max_threads
#endif
!$omp parallel
      call setup(n1, n2, n3)
!$omp end parallel
      end
"""

MG34 = """\
module mg_data
  implicit none
  double precision, allocatable :: u(:), v(:), r(:), x(:)
contains
  subroutine other
    allocate (x(3))
  end subroutine other
  subroutine alloc_space
    implicit none
    integer :: ios
      allocate (u(nr), v(nv),  &   ! the grids
     &          r(nr), stat=ios)
    if (ios /= 0) stop 'no memory'
    allocate (x(3), source=0.0d0)
    call more()
  end subroutine alloc_space
end module mg_data
"""

CG34 = """\
module cg_data
contains
  subroutine alloc_space
    allocate ( colidx(nz), rowstr(na+1), iv(na), arow(na), acol(naz), &
               aelt(naz), a(nz), x(na+2), z(na+2), p(na+2), q(na+2), r(na+2), &
               v(nz+1), stat = ierr)
  end subroutine alloc_space
end module cg_data
"""

CG_ARRAYS = ["colidx", "rowstr", "iv", "arow", "acol", "v", "aelt", "a", "x", "z", "p", "q", "r"]


def test_npb33_zeroes_every_array_before_the_first_executable_statement(tmp_path):
    """Fixed form: the block goes right before the main program's first executable statement
    (not after it: the loop would run on untouched pages), declarations and continuation
    lines before it; one `name = 0` per array of the kind's list, in its order."""
    f = tmp_path / "cg.f"
    f.write_text(CG33)
    assert si.transform_33(f, "CG") == CG_ARRAYS
    lines = f.read_text().splitlines()
    at = lines.index("c     numaplace serial-init: the master thread first-touches every page")
    assert lines[at - 2:at] == ["      external randlc", ""]
    assert lines[at + 1:at + 15] == [f"      {n} = 0" for n in CG_ARRAYS] + ["c     end numaplace serial-init"]
    assert lines[at + 15] == "      do i = 1, t_last"
    assert f.read_text().endswith("      end\n") and len(lines) == len(CG33.splitlines()) + 15


def test_npb33_inserts_before_an_openmp_directive_and_after_preprocessor_lines(tmp_path):
    f = tmp_path / "mg.f"
    f.write_text(MG33)
    assert si.transform_33(f, "MG") == ["u", "v", "r"]
    lines = f.read_text().splitlines()
    assert lines[7:13] == ["c     numaplace serial-init: the master thread first-touches every page",
                           "      u = 0", "      v = 0", "      r = 0", "c     end numaplace serial-init", "!$omp parallel"]
    assert lines[6] == "#endif"


def test_npb33_knows_every_fixed_form_openmp_sentinel(tmp_path):
    """c$omp and *$omp are OpenMP directives in fixed form too: the block goes before them."""
    for sentinel in ("c$omp", "*$omp"):
        f = tmp_path / "mg.f"
        f.write_text(MG33.replace("!$omp parallel\n", f"{sentinel} parallel\n"))
        si.transform_33(f, "MG")
        lines = f.read_text().splitlines()
        assert lines[11:13] == ["c     end numaplace serial-init", f"{sentinel} parallel"], sentinel


def test_npb33_refusals(tmp_path):
    f = tmp_path / "mg.f"
    f.write_text(MG33.replace("v(nv), ", ""))
    with pytest.raises(ConfigError, match="arrays v are not declared in the main program .expected NPB3.3 MG."):
        si.transform_33(f, "MG")
    f.write_text("      program mg\n      implicit none\n      end program\n".replace("      end program\n", ""))
    with pytest.raises(ConfigError, match="no executable statement found"):
        si.transform_33(f, "MG")
    f.write_text(MG33)
    si.transform_33(f, "MG")
    with pytest.raises(ConfigError, match="already transformed"):
        si.transform_33(f, "MG")


def test_npb34_zeroes_every_allocated_array_after_the_last_allocate(tmp_path):
    """Free form: after alloc_space's last allocate statement (its last continuation line),
    indented as it is, one `name = 0` per allocated name (stat=, source= are no names)."""
    f = tmp_path / "mg_data.f90"
    f.write_text(MG34)
    assert si.transform_34(f, "MG") == ["u", "v", "r", "x"]
    lines = f.read_text().splitlines()
    at = lines.index("    allocate (x(3), source=0.0d0)")
    assert lines[at + 1:at + 7] == ["    ! numaplace serial-init: the master thread first-touches every page",
                                    "    u = 0", "    v = 0", "    r = 0", "    x = 0", "    ! end numaplace serial-init"]
    assert lines[at + 7] == "    call more()"
    f = tmp_path / "cg_data.f90"
    f.write_text(CG34)
    assert si.transform_34(f, "CG") == ["colidx", "rowstr", "iv", "arow", "acol", "aelt", "a", "x", "z", "p", "q",
                                         "r", "v"]
    lines = f.read_text().splitlines()
    indent = " " * 15                                   # that of the statement's last line
    assert lines[6] == f"{indent}! numaplace serial-init: the master thread first-touches every page"
    assert lines[5].endswith("v(nz+1), stat = ierr)") and lines[-3] == f"{indent}! end numaplace serial-init"
    assert lines[7:20] == [f"{indent}{n} = 0" for n in ["colidx", "rowstr", "iv", "arow", "acol", "aelt", "a", "x", "z",
                                                        "p", "q", "r", "v"]]


def test_npb34_refusals(tmp_path):
    f = tmp_path / "mg_data.f90"
    f.write_text(MG34.replace("v(nv),  &", "&"))
    with pytest.raises(ConfigError, match="does not allocate v .expected every array of NPB3.4 MG."):
        si.transform_34(f, "MG")
    f.write_text("module m\ncontains\n  subroutine alloc_space\n  end subroutine\nend module\n")
    with pytest.raises(ConfigError, match="no allocate statement found"):
        si.transform_34(f, "MG")


def test_free_form_statements_join_their_continuations():
    lines = ["a = 1 ! one", "call f(x, &", "  & y, &   ! more", "       z)", "b = 2"]
    assert list(si._statements_free(lines)) == [(0, 0, "a = 1"), (1, 3, "call f(x,  y, z)"), (4, 4, "b = 2")]
    assert si._allocated_names("allocate (a(n, m), b(2), stat=ios, errmsg=msg)") == ["a", "b"]
    assert si._allocated_names("ALLOCATE(colidx(nz))") == ["colidx"]


def test_a_trees_version_and_both_kernels_transformed(tmp_path):
    for kernel, text in (("CG", CG33), ("MG", MG33)):
        (tmp_path / "t33" / kernel).mkdir(parents=True)
        (tmp_path / "t33" / kernel / f"{kernel.lower()}.f").write_text(text)
    for kernel, text in (("CG", CG34), ("MG", MG34)):
        (tmp_path / "t34" / kernel).mkdir(parents=True)
        (tmp_path / "t34" / kernel / f"{kernel.lower()}_data.f90").write_text(text)
    assert si.tree_version(tmp_path / "t33") == "3.3" and si.tree_version(tmp_path / "t34") == "3.4"
    assert si.transform_tree(tmp_path / "t33") == ("3.3", {"CG": CG_ARRAYS, "MG": ["u", "v", "r"]})
    version, done = si.transform_tree(tmp_path / "t34")
    assert version == "3.4" and done["MG"] == ["u", "v", "r", "x"] and len(done["CG"]) == 13
    with pytest.raises(ConfigError, match="neither an NPB3.4-OMP"):
        si.tree_version(tmp_path)
    assert si.ARRAYS == {"CG": tuple(CG_ARRAYS), "MG": ("u", "v", "r")}


def test_make_def_sets_every_variable_npbs_makefiles_read():
    text = make_def({"fc": "gfortran", "fflags": "-O3 -fopenmp"}, "default", "3.3")
    assert text.splitlines() == [
        "# Generated by numaplace for variant default", "FC = gfortran", "F77 = $(FC)", "FLINK = $(FC)", "F_LIB =",
        "F_INC =", "FFLAGS = -O3 -fopenmp", "FLINKFLAGS = -O3 -fopenmp", "CC = cc", "CLINK = $(CC)", "C_LIB = -lm",
        "C_INC =", "CFLAGS = -O3 -fopenmp", "CLINKFLAGS = $(CFLAGS)", "UCC = cc", "BINDIR = ../bin", "RAND = randdp",
        "WTIME = wtime.c"]
    assert "RAND = randi8\n" in make_def({"fc": "gfortran", "fflags": "-O3"}, "default", "3.4")
    assert "RAND = randi8\n" in make_def({"fc": "gfortran", "fflags": "-O3"}, "default")
    assert "RAND = randlc\n" in make_def({"fc": "gfortran", "fflags": "-O3", "rand": "randlc"}, "default", "3.3")
    assert "CFLAGS = -O3 -fopenmp\n" in make_def({"fc": "gfortran", "fflags": "-O3 -fOpenMP"}, "default", "3.4")


def test_a_failed_builds_line_names_the_first_error_or_the_cure():
    log = "gfortran -c a.f\na.f:3: Error: bad thing\nb.f:9: error: worse\nmake: *** [x] Error 1\n"
    assert build_failure_reason(log, "cg", "C", 2, "b.log") == "make failed (exit 2): a.f:3: Error: bad thing (log: b.log)"
    assert build_failure_reason("nothing useful\n", "cg", "C", 2, "b.log") == "make failed (exit 2) (log: b.log)"
    assert build_failure_reason("  " + "Error " + "x" * 400 + "\n", "cg", "C", 1, "l")[:-9].endswith("x" * 294)
    assert build_failure_reason("cg.o: relocation truncated to fit: R_X86_64_PC32\n", "cg", "C", 1, "b.log") == (
        "link failed: relocation truncated to fit: cg.C's static arrays exceed the small code model's 2 GiB; "
        "build it with `variants: [mcmodel-medium]` (log: b.log)")


def official_tree(root):
    """An NPB3.3-OMP folder as NASA's tarball unpacks it (the files prepare_tree reads)."""
    omp = root / "NPB3.3.1" / "NPB3.3-OMP"
    for rel, text in (("CG/Makefile", "all:\n"), ("CG/cg.f", CG33), ("MG/Makefile", "all:\n"), ("MG/mg.f", MG33),
                      ("config/make.def.template", "FC = f77\n"), ("sys/Makefile", "all:\n"), ("CG/cg.A.x", "old"),
                      ("CG/cg.o", "obj")):
        (omp / rel).parent.mkdir(parents=True, exist_ok=True)
        (omp / rel).write_text(text)
    return root / "NPB3.3.1"


def test_a_prepared_official_tree_is_transformed_only_for_serial_init(tmp_path):
    """prepare_tree: the OMP part of an official source copied without build products, bin/
    made, make.def for its version (3.3: randdp, -O3 -fopenmp C), serial-init's arrays
    zeroed (default left as NASA wrote it), a stamp saying source and variant; prepared once."""
    from numaplace.builds.tree import prepare_tree
    src = official_tree(tmp_path / "nasa")
    settings = {"source": str(src), "fc": "gfortran", "fflags": "-O3 -fopenmp"}
    tree = prepare_tree(settings, "serial-init", tmp_path / "b" / "serial-init" / "tree", None)
    assert tree == tmp_path / "b" / "serial-init" / "tree" and (tree / "bin").is_dir()
    assert not (tree / "CG" / "cg.A.x").exists() and not (tree / "CG" / "cg.o").exists()
    made = (tree / "config" / "make.def").read_text()
    assert "RAND = randdp\n" in made and "CFLAGS = -O3 -fopenmp\n" in made and "variant serial-init" in made
    assert "      colidx = 0" in (tree / "CG" / "cg.f").read_text() and "      u = 0" in (tree / "MG" / "mg.f").read_text()
    assert (tree / ".numaplace-tree").read_text() == f"source={src}\nvariant=serial-init\n"
    (tree / "CG" / "cg.f").write_text("kept")
    assert prepare_tree(settings, "serial-init", tree, None) == tree and (tree / "CG" / "cg.f").read_text() == "kept"
    plain = prepare_tree(settings, "default", tmp_path / "b" / "default" / "tree", None)
    assert (plain / "CG" / "cg.f").read_text() == CG33
    medium = prepare_tree(settings, "mcmodel-medium", tmp_path / "b" / "mcmodel-medium" / "tree", None)
    assert (medium / "MG" / "mg.f").read_text() == MG33
    assert "FFLAGS = -O3 -fopenmp -mcmodel=medium\n" in (medium / "config" / "make.def").read_text()
    assert "variant default" in (plain / "config" / "make.def").read_text()


def test_a_prepared_bundled_tree_keeps_its_own_make_line(tmp_path):
    """The bundled tree: copied as it is (serial-init is make's INIT=serial there), its C
    flags -O2 and randi8 as always."""
    from numaplace.builds.tree import prepare_tree
    from numaplace.kinds import kind
    tree = prepare_tree({"fc": "gfortran", "fflags": "-O3 -fopenmp"}, "serial-init", tmp_path / "tree",
                        kind("cg").source_dir)
    made = (tree / "config" / "make.def").read_text()
    assert "CFLAGS = -O2\n" in made and "RAND = randi8\n" in made
    assert (tree / ".numaplace-tree").read_text() == "source=bundled\nvariant=serial-init\n"
    assert si.MARK not in "".join(p.read_text(errors="replace") for p in (tree / "CG").glob("*.f90"))


def test_npb33_upper_case_openmp_directives_are_directives(tmp_path):
    """Fixed-form sentinels ignore case: `!$OMP PARALLEL` is a directive, so the zeroing
    block lands before it, never inside the parallel region (no longer a serial first touch)."""
    for sentinel in ("!$OMP", "C$OMP", "*$Omp"):
        f = tmp_path / "mg.f"
        f.write_text(MG33.replace("!$omp parallel\n", f"{sentinel} PARALLEL\n"))
        si.transform_33(f, "MG")
        lines = f.read_text().splitlines()
        assert lines[11:13] == ["c     end numaplace serial-init", f"{sentinel} PARALLEL"], sentinel


def test_npb33_preprocessor_lines_are_neither_declarations_nor_statements(tmp_path):
    """A `#ifdef/#else/#endif` among the declarations is skipped (a short `#else` is not the
    first statement); a first statement inside a conditional gets the block before `#if`,
    so every branch first-touches serially."""
    f = tmp_path / "mg.f"
    f.write_text(MG33.replace("      double precision u(nr), v(nv), r(nr)\n",
                              "#ifdef BIG\n      integer big\n#else\n      integer small\n#endif\n"
                              "      double precision u(nr), v(nv), r(nr)\n"))
    assert si.transform_33(f, "MG") == ["u", "v", "r"]
    lines = f.read_text().splitlines()
    at = lines.index("c     numaplace serial-init: the master thread first-touches every page")
    assert lines[at - 1] == "#endif" and lines[at + 5] == "!$omp parallel"
    f.write_text(MG33.replace("!$omp parallel\n", "#ifdef TIMERS\n      call timer_clear(1)\n#endif\n!$omp parallel\n"))
    si.transform_33(f, "MG")
    lines = f.read_text().splitlines()
    at = lines.index("c     numaplace serial-init: the master thread first-touches every page")
    assert lines[at + 5:at + 7] == ["#ifdef TIMERS", "      call timer_clear(1)"]
