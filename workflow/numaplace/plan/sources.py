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


# -- the kernels numaplace does not bundle (EP, IS, FT: kinds.npb_official) ---------------
# They are NASA's code and always built from an official tree: npb.official (with
# npb.official_sha256), else npb.source when that is official. Without either they cannot
# be built here, and the plan leaves their runs out with NOT_BUNDLED's line: never a
# download nobody asked for, never a build that fails the workflow.
NASA_URL = "https://www.nas.nasa.gov/assets/npb/NPB3.4.2.tar.gz"
NOT_BUNDLED = ("{bench} is NASA's code, which numaplace does not bundle (it bundles CG and MG): set "
               "npb.official to NASA's NPB3.4.2.tar.gz or NPB3.3.1.tar.gz (a path, or " + NASA_URL
               + " with npb.official_sha256)")


def official_source(settings):
    """(source, sha256) of the official tree the kernels numaplace does not bundle are
    built from, or None when the study gives none."""
    if settings.get("official"):
        return settings["official"], settings.get("official_sha256")
    if settings.get("source", BUNDLED_SOURCE) != BUNDLED_SOURCE:
        return settings["source"], settings.get("sha256")
    return None


def tree_settings(k, settings):
    """The npb settings a kind's tree is built from: its own bundled tree (a kind that
    does not follow npb.source), the official tree (a kernel numaplace does not bundle),
    else the study's npb.source."""
    if not k.follows_npb_source:
        return {**settings, "source": BUNDLED_SOURCE}
    if getattr(k, "official_only", False):
        official = official_source(settings)
        if official is None:
            return None
        return {**settings, "source": official[0], "sha256": official[1]}
    return settings


def not_buildable(k, settings):
    """Why a kind cannot be built from the study's sources (one line), or None."""
    if getattr(k, "official_only", False) and official_source(settings) is None:
        return NOT_BUNDLED.format(bench=k.name.upper())
    return None


def check_source(settings, where):
    """Before any build: an official source (npb.source, npb.official) exists, matches
    its sha256 and holds an NPB3.x-OMP tree. URLs are checked when fetched (by the first
    build); they need a sha256. Raises ConfigError (one line: file, entry, problem)."""
    if settings.get("official"):
        _check_source(settings["official"], settings.get("official_sha256"), where, "npb.official",
                      "npb.official_sha256")
    elif settings.get("official_sha256"):
        raise ConfigError(where, "npb.official_sha256", "is the digest of npb.official, which is not set")
    _check_source(settings.get("source", BUNDLED_SOURCE), settings.get("sha256"), where, "npb.source",
                  "npb.sha256")


def _check_source(source, sha, where, key, sha_key):
    if source == BUNDLED_SOURCE:
        if key == "npb.official":
            raise ConfigError(where, key, "names an official tree (a path or URL); bundled is npb.source's word")
        return
    if "://" in source and not is_url(source):
        raise ConfigError(where, key, f"{source}: only http(s) URLs or local paths "
                          "(a file:// URL is a path: write the path)")
    if is_url(source):
        if not sha:
            raise ConfigError(where, sha_key, f"a URL source ({source}) needs the tarball's sha256 "
                              "(sha256sum <file>), so that what is built is what was meant")
        return
    path = Path(source).expanduser()
    shown = source if len(source) <= 80 else source[:77] + "..."
    try:
        exists = path.exists()
    except OSError as e:                        # a name too long, a loop of links: one line
        raise ConfigError(where, key, f"{shown}: cannot be read ({e.strerror or e})") from None
    if not exists:
        raise ConfigError(where, key, f"{shown}: no such file or directory")
    if not (path.is_file() or path.is_dir()):
        raise ConfigError(where, key, f"{source}: not a regular file or directory")
    if path.is_file() and sha and sha256_of(path) != sha:
        raise ConfigError(where, sha_key, f"{source} has sha256 {sha256_of(path)}, not {sha}")
    try:
        omp_tree(path, dir_files(path) if path.is_dir() else tar_files(path))
    except ConfigError:
        raise
    except ValueError as e:
        raise ConfigError(where, key, str(e)) from None
    except tarfile.TarError as e:
        raise ConfigError(where, key, f"{source}: not a readable tarball ({e})") from None
    except OSError as e:
        raise ConfigError(where, key, f"{source}: cannot be read ({e.strerror or e})") from None


# what a build tree copies from a source (build products of an earlier in-place make are left out)
NOT_SOURCE = ("build.*", "*.x", "*.o", "*.mod", "make.def")


def bundled_digest(settings):
    """Hash of the bundled trees a study's binaries are built from (npb/src unless
    npb.source is NASA's, and every other kind's own tree), so that a changed bundled
    kernel gets new build folders instead of the previous binaries; and of npb.official
    where the study sets it (the build key, numaplace.plan.study, hashes what is here and
    npb.source's settings), so that another official tree gets other build folders."""
    import fnmatch
    import json
    from numaplace.kinds import KINDS
    dirs = sorted({str(k.source_dir) for k in KINDS.values() if k.source_dir is not None
                   and not (k.follows_npb_source and settings.get("source", BUNDLED_SOURCE) != BUNDLED_SOURCE)})
    h = hashlib.sha256()
    if settings.get("official"):            # only then: every other study keeps its build key
        h.update(json.dumps([settings["official"], settings.get("official_sha256")]).encode())
    for d in dirs:
        for path in sorted(Path(d).rglob("*")):
            rel = path.relative_to(d)
            if path.is_file() and not any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in NOT_SOURCE):
                h.update(f"{Path(d).name}/{rel}\0".encode())
                h.update(path.read_bytes())
    return h.hexdigest()
