"""numaplace.machine.mempolicy: what this machine's kernel and numactl offer the memory
policies: version numbers of releases, the numactl probe (its --version, or the usage
text of an older one), the not-applicable words, and the kernel's weighted-interleave
weights. numactl and sysfs are faked in their real formats."""
from __future__ import annotations

import subprocess

import pytest

from numaplace.machine import mempolicy

pytestmark = pytest.mark.unit


def test_version_numbers_of_kernel_releases_and_numactl_versions():
    """Every leading number counts (6.9.0 > 6.9 < 6.10): a plan compares them to 6.9/5.15."""
    vt = mempolicy.version_tuple
    assert vt("6.9.0-rc1-amd64") == (6, 9, 0)
    assert vt("2.0.19") == (2, 0, 19)
    assert vt("  5.15.0-91-generic") == (5, 15, 0)
    assert vt("6.10") == (6, 10)
    assert vt("6") == (6,)
    assert vt("v6.1") == ()
    assert vt("") == () and vt(None) == ()
    assert vt("6.10") > vt("6.9.0") and vt("2.0.19") >= vt("2.0.19") and vt("2.0.9") < vt("2.0.19")


def test_a_not_applicable_line_names_the_kernel_by_major_and_minor():
    sr = mempolicy.short_release
    assert sr("6.1.0-18-amd64") == "6.1"
    assert sr("5.10.0-28-amd64") == "5.10"
    assert sr("6.12") == "6.12"
    assert sr("6") == "6"
    assert sr("unknown") == "unknown"


def facts(monkeypatch, **kw):
    monkeypatch.setattr(mempolicy, "numactl_facts", lambda: {"found": True, "version": None, "usage": "", **kw})


def test_numactl_has_an_option_from_its_version_on(monkeypatch):
    """A version at or above the one that brought the option has it; below, the words say both."""
    facts(monkeypatch, version="2.0.19")
    assert mempolicy.numactl_has("--weighted-interleave", "2.0.19") is None
    assert mempolicy.numactl_has("--preferred-many", "2.0.15") is None
    facts(monkeypatch, version="2.0.18")
    assert mempolicy.numactl_has("--weighted-interleave", "2.0.19") == \
        "numactl 2.0.18 has no --weighted-interleave (2.0.19+)"
    facts(monkeypatch, version="2.0.9")
    assert mempolicy.numactl_has("--preferred-many", "2.0.15") == "numactl 2.0.9 has no --preferred-many (2.0.15+)"
    facts(monkeypatch, version="2.1")
    assert mempolicy.numactl_has("--weighted-interleave", "2.0.19") is None


def test_an_older_numactls_usage_text_says_which_options_it_has(monkeypatch):
    """Listed whole: '--preferred=' in the usage is not '--preferred-many', nor the reverse."""
    facts(monkeypatch, usage="usage: numactl [--interleave= | -i <nodes>] [--preferred= | -p <node>]\n"
                             "\t[--physcpubind= | -C <cpus>] [--preferred-many= | -P <nodes>]\n")
    assert mempolicy.numactl_has("--preferred-many", "2.0.15") is None
    assert mempolicy.numactl_has("--preferred", "2.0.0") is None
    assert mempolicy.numactl_has("--weighted-interleave", "2.0.19") == \
        "this numactl has no --weighted-interleave (numactl 2.0.19+)"
    facts(monkeypatch, usage="usage: numactl [--preferred-many= | -P <nodes>]\n")
    assert mempolicy.numactl_has("--preferred", "2.0.0") == "this numactl has no --preferred (numactl 2.0.0+)"
    facts(monkeypatch, usage="usage: numactl [--interleave= | -i <nodes>] [--preferred= | -p <node>]\n")
    assert mempolicy.numactl_has("--preferred-many", "2.0.15") == \
        "this numactl has no --preferred-many (numactl 2.0.15+)"
    monkeypatch.setattr(mempolicy, "numactl_facts", lambda: {"found": False, "version": None, "usage": ""})
    assert mempolicy.numactl_has("--preferred-many", "2.0.15") == "no numactl on PATH"


class Done:
    def __init__(self, rc, out, err=""):
        self.returncode, self.stdout, self.stderr = rc, out, err


def probe(monkeypatch, which, result):
    mempolicy.numactl_facts.cache_clear()
    monkeypatch.setattr(mempolicy.shutil, "which", lambda name: which)
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        if isinstance(result, Exception):
            raise result
        return result
    monkeypatch.setattr(mempolicy.subprocess, "run", run)
    try:
        return mempolicy.numactl_facts(), calls
    finally:
        mempolicy.numactl_facts.cache_clear()


def test_the_numactl_probe_keeps_its_version_or_its_usage(monkeypatch):
    """numactl 2.0.19 prints '2.0.19'; Debian 12's 2.0.16 refuses --version and prints its
    usage on stderr (exit 1); an error output on exit 0 is usage, not a version."""
    got, calls = probe(monkeypatch, "/usr/bin/numactl", Done(0, "2.0.19\n"))
    assert got == {"found": True, "version": "2.0.19", "usage": ""}
    assert calls == [["/usr/bin/numactl", "--version"]]
    got, _ = probe(monkeypatch, "/usr/bin/numactl", Done(0, "2.0.18-rc1\n"))
    assert got == {"found": True, "version": "2.0.18-rc1", "usage": ""}
    usage = "numactl: unrecognized option '--version'\nusage: numactl [--preferred-many= | -P <nodes>]\n"
    got, _ = probe(monkeypatch, "/usr/bin/numactl", Done(1, "", usage))
    assert got == {"found": True, "version": None, "usage": usage}
    got, _ = probe(monkeypatch, "/usr/bin/numactl", Done(1, "2.0.19\n", "err\n"))
    assert got == {"found": True, "version": None, "usage": "err\n2.0.19\n"}
    got, _ = probe(monkeypatch, "/usr/bin/numactl", Done(0, "numactl version two\n"))
    assert got == {"found": True, "version": None, "usage": "numactl version two\n"}
    got, _ = probe(monkeypatch, "/usr/bin/numactl", subprocess.TimeoutExpired("numactl", 10))
    assert got == {"found": True, "version": None, "usage": ""}
    got, calls = probe(monkeypatch, None, Done(0, "2.0.19\n"))
    assert got == {"found": False, "version": None, "usage": ""} and calls == []


def test_weighted_interleave_weights_by_node_in_number_order(tmp_path):
    """node0..node10 in number order (not text order), ids as text, a file that is no
    number left out, and the kernel's auto mode true/false (None otherwise)."""
    d = tmp_path / "sys/kernel/mm/mempolicy/weighted_interleave"      # the kernel's own path (6.9+)
    d.mkdir(parents=True)
    for n, w in ((10, "2"), (2, "5"), (0, "3"), (1, "1"), (3, "x")):
        (d / f"node{n}").write_text(f"{w}\n")
    (d / "auto").write_text("true\n")
    weights, auto = mempolicy.weighted_interleave_weights(tmp_path)
    assert list(weights.items()) == [("0", 3), ("1", 1), ("2", 5), ("10", 2)]
    assert auto is True
    (d / "auto").write_text("false\n")
    assert mempolicy.weighted_interleave_weights(tmp_path)[1] is False
    (d / "auto").write_text("maybe\n")
    assert mempolicy.weighted_interleave_weights(tmp_path)[1] is None
    (d / "auto").unlink()
    assert mempolicy.weighted_interleave_weights(tmp_path) == ({"0": 3, "1": 1, "2": 5, "10": 2}, None)
    assert mempolicy.weighted_interleave_weights(tmp_path / "none") == ({}, None)
