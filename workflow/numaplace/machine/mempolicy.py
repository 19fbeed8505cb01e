"""What this machine offers the memory policies: the running kernel's version, the
installed numactl (its version and the options its usage text lists), and the kernel's
weighted-interleave weights. Read for `platform: auto` only (a named platform is planned
elsewhere, so the local kernel says nothing about it); numaplace.plan.launch asks.

numactl prints its version with `numactl --version` from 2.0.17 or so on; older ones
(Debian 12's 2.0.16) refuse the option and print their usage, which lists the policy
options they know (`[--preferred-many= | -P <nodes>]`). Both answers are kept.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from pathlib import Path

WEIGHTS_DIR = "sys/kernel/mm/mempolicy/weighted_interleave"


def kernel_release():
    return os.uname().release


def version_tuple(text):
    """(6, 9) of '6.9.0-rc1-amd64', (2, 0, 19) of '2.0.19'; () where no number leads."""
    m = re.match(r"\s*(\d+(?:\.\d+)*)", text or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else ()


def short_release(release):
    """'6.1' of '6.1.0-18-amd64': what a not-applicable line names."""
    return ".".join(map(str, version_tuple(release)[:2])) or str(release)


@functools.lru_cache(maxsize=1)
def numactl_facts():
    """{"found": bool, "version": "2.0.19" | None, "usage": the usage text or ""} of the
    numactl on PATH, asked once per process."""
    path = shutil.which("numactl")
    if not path:
        return {"found": False, "version": None, "usage": ""}
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {"found": True, "version": None, "usage": ""}
    out = (r.stdout or "").strip()
    if r.returncode == 0 and re.fullmatch(r"\d+(\.\d+)+\S*", out):
        return {"found": True, "version": out, "usage": ""}
    return {"found": True, "version": None, "usage": (r.stderr or "") + (r.stdout or "")}


def numactl_has(option, since):
    """None where this machine's numactl takes `option` (a long option like
    '--weighted-interleave'), else why not, in words."""
    facts = numactl_facts()
    if not facts["found"]:
        return "no numactl on PATH"
    if facts["version"]:
        if version_tuple(facts["version"]) >= version_tuple(since):
            return None
        return f"numactl {facts['version']} has no {option} ({since}+)"
    if re.search(re.escape(option) + r"(?![\w-])", facts["usage"]):
        return None
    return f"this numactl has no {option} (numactl {since}+)"


def weighted_interleave_weights(root="/"):
    """{node id as text: weight} from /sys/kernel/mm/mempolicy/weighted_interleave/nodeN
    (empty where the kernel has none), and the kernel's auto mode (True/False/None)."""
    d = Path(root, WEIGHTS_DIR)
    weights = {}
    for f in sorted(d.glob("node[0-9]*"), key=lambda f: int(f.name[4:])):
        try:
            text = f.read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            weights[f.name[4:]] = int(text)
    try:
        auto = {"true": True, "false": False}.get(Path(d, "auto").read_text().strip())
    except OSError:
        auto = None
    return weights, auto
