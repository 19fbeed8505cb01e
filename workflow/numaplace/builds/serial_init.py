"""The serial-initialisation variant of an official NPB3.3/3.4-OMP tree.

Right after the arrays exist and before any parallel region, every element of every
array is written (zero) by the master thread, so all pages are first-touched on its
node; results are unchanged because NPB initialises the arrays again afterwards.

Files and routines touched (nothing else):
- NPB3.4-OMP (allocatable arrays): `CG/cg_data.f90` and `MG/mg_data.f90`, subroutine
  `alloc_space`: after its last `allocate(...)` statement, one `name = 0` per array the
  allocate statements name (CG: colidx, rowstr, iv, arow, acol, v, aelt, a, x, z, p,
  q, r; MG: u, v, r). alloc_space is called by the main program before any
  `!$omp parallel`.
- NPB3.3-OMP (static arrays in COMMON): `CG/cg.f` and `MG/mg.f`, main program: before
  its first executable statement, one `name = 0` per array of the list above (each must
  be declared in the main program; the transformation fails otherwise).
Each insertion is bracketed by `numaplace serial-init` comments; applying the
transformation twice is an error rather than a silent double edit.
"""
from __future__ import annotations

import re
from pathlib import Path

from numaplace import ConfigError
from numaplace.kinds import KINDS

# the kinds' own lists (Kind.serial_init_arrays): kernel folder -> arrays
ARRAYS = {k.name.upper(): k.serial_init_arrays for k in KINDS.values() if k.serial_init_arrays}
MARK = "numaplace serial-init"


def tree_version(tree):
    tree = Path(tree)
    if (tree / "CG" / "cg_data.f90").exists():
        return "3.4"
    if (tree / "CG" / "cg.f").exists():
        return "3.3"
    raise ConfigError(str(tree), "npb.source", "neither an NPB3.4-OMP (CG/cg_data.f90) nor an "
                      "NPB3.3-OMP (CG/cg.f) tree")


def _statements_free(lines):
    """(first line index, last line index, joined text) of free-form statements."""
    i = 0
    while i < len(lines):
        start, text = i, lines[i].split("!", 1)[0].rstrip()
        while text.endswith("&") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + lines[i].split("!", 1)[0].strip().lstrip("&")
        yield start, i, text
        i += 1


def _allocated_names(stmt):
    body = stmt[stmt.lower().index("allocate") + len("allocate"):].strip()[1:-1]
    names, depth, cur = [], 0, ""
    for ch in body + ",":
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            token = cur.strip()
            if token and "=" not in token:          # skip stat=, errmsg=, source=
                names.append(re.match(r"\w+", token).group(0))
            cur = ""
        else:
            cur += ch
    return names


def transform_34(path, kernel):
    lines = Path(path).read_text().splitlines()
    if any(MARK in l for l in lines):
        raise ConfigError(str(path), "alloc_space", "already transformed")
    in_sub, last_alloc, names = False, None, []
    for start, end, text in _statements_free(lines):
        low = text.strip().lower()
        if re.match(r"subroutine\s+alloc_space\b", low):
            in_sub = True
        elif in_sub and re.match(r"end\s*(subroutine)?\b", low):
            break
        elif in_sub and re.match(r"allocate\s*\(", low):
            last_alloc = end
            names += _allocated_names(text.strip())
    if last_alloc is None:
        raise ConfigError(str(path), "alloc_space", "no allocate statement found in subroutine alloc_space")
    missing = [a for a in ARRAYS[kernel] if a not in [n.lower() for n in names]]
    if missing:
        raise ConfigError(str(path), "alloc_space", f"does not allocate {', '.join(missing)} "
                          f"(expected every array of NPB3.4 {kernel})")
    indent = re.match(r"\s*", lines[last_alloc]).group(0)
    block = [f"{indent}! {MARK}: the master thread first-touches every page"] + \
            [f"{indent}{n} = 0" for n in names] + [f"{indent}! end {MARK}"]
    lines[last_alloc + 1:last_alloc + 1] = block
    Path(path).write_text("\n".join(lines) + "\n")
    return names


_DECL = re.compile(r"^(program|implicit|integer|double\s*precision|real|logical|character|complex|"
                   r"common|parameter|include|external|intrinsic|data|dimension|save|use|equivalence)\b")


def transform_33(path, kernel):
    lines = Path(path).read_text().splitlines()
    if any(MARK in l for l in lines):
        raise ConfigError(str(path), "main program", "already transformed")
    in_main, declared, insert_at = False, "", None
    cpp_depth, cpp_open = 0, None                        # the outermost open #if, if any
    for i, line in enumerate(lines):
        if in_main and re.match(r"[!cC*]\$omp", line, re.IGNORECASE):   # directives ignore case
            insert_at = i                                # an OpenMP directive: insert before it
            break
        if line.startswith("#"):                         # a preprocessor line: no statement
            word = (line[1:].split() or [""])[0]
            if word.startswith("if"):
                if cpp_depth == 0:
                    cpp_open = i
                cpp_depth += 1
            elif word == "endif":
                cpp_depth = max(cpp_depth - 1, 0)
            continue
        if not line.strip() or line[:1] in "cC*!":
            continue                                     # comment or blank (fixed form)
        if len(line) > 5 and line[5] not in " 0":        # continuation line
            declared += " " + line[6:72].lower()
            continue
        stmt = line[6:72].strip().lower()
        if re.match(r"program\b", stmt):
            in_main = True
        if not in_main:
            continue
        if _DECL.match(stmt):
            declared += " " + stmt
            continue
        insert_at = i
        break
    if insert_at is not None and cpp_depth > 0:
        insert_at = cpp_open                             # before the conditional, in every branch
    if insert_at is None:
        raise ConfigError(str(path), "main program", "no executable statement found")
    words = set(re.findall(r"\b(\w+)\s*\(", declared))
    missing = [a for a in ARRAYS[kernel] if a not in words]
    if missing:
        raise ConfigError(str(path), "main program", f"arrays {', '.join(missing)} are not declared "
                          f"in the main program (expected NPB3.3 {kernel})")
    block = [f"c     {MARK}: the master thread first-touches every page"] + \
            [f"      {n} = 0" for n in ARRAYS[kernel]] + [f"c     end {MARK}"]
    lines[insert_at:insert_at] = block
    Path(path).write_text("\n".join(lines) + "\n")
    return list(ARRAYS[kernel])


def transform_tree(tree):
    """Apply the serial-init transformation to both kernels of an official tree."""
    tree = Path(tree)
    version = tree_version(tree)
    done = {}
    for kernel in ARRAYS:
        if version == "3.4":
            done[kernel] = transform_34(tree / kernel / f"{kernel.lower()}_data.f90", kernel)
        else:
            done[kernel] = transform_33(tree / kernel / f"{kernel.lower()}.f", kernel)
    return version, done
