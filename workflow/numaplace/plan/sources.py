"""Where a study's NPB kernels come from (npb.source): numaplace's bundled trees, or an
official NPB3.3/3.4-OMP tarball, folder or URL, checked before anything is built; and the
digest of the bundled trees, part of every build folder's key."""
from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

from numaplace import ConfigError
from numaplace.core.schema import defaults

BUNDLED_SOURCE = defaults("npb")["source"]      # "bundled": the kernels in npb/src


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def is_url(source):
    return source.startswith(("http://", "https://"))


# -- where the official tree is -------------------------------------------------------
# A release unpacks to NPB3.x.y/ holding NPB3.x-MPI/, NPB3.x-OMP/ (and 3.3's NPB3.3-SER/):
# the OpenMP tree is the one named *-OMP, or a tree given directly under another name.
TREE_PARTS = ("CG/Makefile", "MG/Makefile", "config/make.def.template", "sys/Makefile")


def omp_tree(root, files):
    """The OMP tree's path relative to root ('' = root itself), from the set of relative
    file paths below root (depth ≤ 3); ConfigError-ready message on failure."""
    trees = {f[: -len(TREE_PARTS[0])].rstrip("/") for f in files if f.endswith(TREE_PARTS[0])}
    trees = sorted(t for t in trees if all(f"{t}/{part}".lstrip("/") in files for part in TREE_PARTS))
    name = {t: (t.rsplit("/", 1)[-1] if t else Path(root).name).upper() for t in trees}
    omp = [t for t in trees if name[t].endswith("-OMP")]
    if len(omp) == 1:
        return omp[0]
    if not omp and "" in trees and not name[""].endswith(("-MPI", "-SER")):
        return ""                                   # a tree given directly, renamed
    found = ", ".join(t or Path(root).name for t in trees) or "no NPB tree at all"
    raise ValueError(f"no NPB3.x-OMP tree (CG/, MG/, config/, sys/) inside {root} (found: {found})")


MAX_TREE_FILES = 20000


def dir_files(root, depth=3):
    root = Path(root)
    out = set()
    for level in range(1, depth + 2):
        for f in root.glob("/".join(["*"] * level)):
            out.add(f.relative_to(root).as_posix())
            if len(out) > MAX_TREE_FILES:     # e.g. source: / would walk the whole disk
                raise ValueError(f"{root} holds more than {MAX_TREE_FILES} files near its top: "
                                 "not an NPB source tree")
    return out


def tar_files(tarball):
    with tarfile.open(tarball) as tf:
        names = [m.name for m in tf.getmembers()]
    files = {n.lstrip("./") for n in names}
    # the tar's top folder becomes the root, as after unpacking
    return files


def check_source(settings, where):
    """Before any build: an official source exists, matches its sha256 and holds an
    NPB3.x-OMP tree. URLs are checked when fetched (by the first build); they need a
    sha256. Raises ConfigError (one line: file, entry, problem)."""
    source = settings.get("source", BUNDLED_SOURCE)
    sha = settings.get("sha256")
    if source == BUNDLED_SOURCE:
        return
    if "://" in source and not is_url(source):
        raise ConfigError(where, "npb.source", f"{source}: only http(s) URLs or local paths "
                          "(a file:// URL is a path: write the path)")
    if is_url(source):
        if not sha:
            raise ConfigError(where, "npb.sha256", f"a URL source ({source}) needs the tarball's sha256 "
                              "(sha256sum <file>), so that what is built is what was meant")
        return
    path = Path(source).expanduser()
    shown = source if len(source) <= 80 else source[:77] + "..."
    try:
        exists = path.exists()
    except OSError as e:                        # a name too long, a loop of links: one line
        raise ConfigError(where, "npb.source", f"{shown}: cannot be read ({e.strerror or e})") from None
    if not exists:
        raise ConfigError(where, "npb.source", f"{shown}: no such file or directory")
    if not (path.is_file() or path.is_dir()):
        raise ConfigError(where, "npb.source", f"{source}: not a regular file or directory")
    if path.is_file() and sha and sha256_of(path) != sha:
        raise ConfigError(where, "npb.sha256", f"{source} has sha256 {sha256_of(path)}, not {sha}")
    try:
        omp_tree(path, dir_files(path) if path.is_dir() else tar_files(path))
    except ConfigError:
        raise
    except ValueError as e:
        raise ConfigError(where, "npb.source", str(e)) from None
    except tarfile.TarError as e:
        raise ConfigError(where, "npb.source", f"{source}: not a readable tarball ({e})") from None
    except OSError as e:
        raise ConfigError(where, "npb.source", f"{source}: cannot be read ({e.strerror or e})") from None


# what a build tree copies from a source (build products of an earlier in-place make are left out)
NOT_SOURCE = ("build.*", "*.x", "*.o", "*.mod", "make.def")


def bundled_digest(settings):
    """Hash of the bundled trees a study's binaries are built from (npb/src unless
    npb.source is NASA's, and every other kind's own tree), so that a changed bundled
    kernel gets new build folders instead of the previous binaries."""
    import fnmatch
    from numaplace.kinds import KINDS
    dirs = sorted({str(k.source_dir) for k in KINDS.values() if k.source_dir is not None
                   and not (k.follows_npb_source and settings.get("source", BUNDLED_SOURCE) != BUNDLED_SOURCE)})
    h = hashlib.sha256()
    for d in dirs:
        for path in sorted(Path(d).rglob("*")):
            rel = path.relative_to(d)
            if path.is_file() and not any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in NOT_SOURCE):
                h.update(f"{Path(d).name}/{rel}\0".encode())
                h.update(path.read_bytes())
    return h.hexdigest()
