"""Bad studies and platforms fail before anything is built or run, with one line
`invalid study: <file at fault>: <entry>: <problem>`; results already on disk stay
untouched. The corpus is grouped by kind: the file itself, numbers, names (they become
paths and arguments), contradictions."""
import json
import os
import resource
import shutil
import signal
import subprocess
import sys

import pytest
import yaml

from numaplace import ConfigError
from numaplace.core.loader import one_line, refusal
from numaplace.plan.study import load_study_file

BASE = {"study": "bad", "platform": "x4600", "repetitions": 1,
        "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}]}]}


def study(**changes):
    d = json.loads(json.dumps(BASE))
    d.update(changes)
    return d


def exp(*placements, **extra):
    return [{"name": "e", "placements": list(placements), **extra}]


GOOD_PLATFORM = {"name": "p", "nodes": [{"id": 0, "cpus": "0-1"}, {"id": 1, "cpus": "2-3"}]}


def platform(**changes):
    d = json.loads(json.dumps(GOOD_PLATFORM))
    d.update(changes)
    return d


def symmetric_platform(n, distances=True):
    """n one-CPU nodes, every pair at the same distance: as symmetric as it gets."""
    d = {"name": "p", "nodes": [{"id": i, "cpus": str(i)} for i in range(n)]}
    if distances:
        d["distances"] = [[10 if i == j else 20 for j in range(n)] for i in range(n)]
    return d


def mem(*placements, **extra):
    """One experiment of the memory micro-benchmark membw (class X) on CPU 0 by default."""
    return [{"name": "e", "benchmarks": ["membw"], "classes": ["X"],
             "placements": list(placements) or [{"cpus": "0"}], **extra}]


class Json(str):
    """Study text written to study.json."""


MISSING, DIRECTORY, FIFO = "<missing>", "<directory>", "<fifo>"


class Link(str):
    """The file is a symbolic link to this path (FIFO, DIRECTORY: to one made beside it)."""
P = {"platform": "p"}                 # merged into a study: the platform is config/platforms/p.yaml
ON_P = study(platform="p")            # a good study on platform p: the platform file is at fault

LAUGHS = "study: bad\nplatform: x4600\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 8)) + \
    "experiments: [{name: e, placements: [{cpus: '0'}]}]\n"
YTE = "__use_yte__: true\nstudy: bad\nplatform: x4600\n?if True:\n  repetitions: 1\n" \
      "experiments: [{name: e, placements: [{cpus: '0'}]}]\n"

# (kind, case id, study (dict, text, bytes, Json, MISSING, DIRECTORY), platform p
#  (same forms, or None), entry expected (substring), key words of the problem)
CASES = [
    # -- the file itself ------------------------------------------------------------
    ("file", "empty", "", None, "(top level)", ["empty"]),
    ("file", "only-comments", "# nothing yet\n", None, "(top level)", ["mapping", "found nothing"]),
    ("file", "list-at-top", "- study: bad\n- platform: x4600\n", None, "(top level)", ["mapping", "list"]),
    ("file", "scalar-at-top", "just some words\n", None, "(top level)", ["mapping", "text value"]),
    ("file", "unclosed-flow", "study: x\nexperiments: [\n", None, "line 3", ["malformed YAML"]),
    ("file", "bad-indent", "study: bad\n  platform: x4600\n", None, "line 2", ["malformed YAML"]),
    ("file", "tab-indent", "study: bad\nexperiments:\n\t- name: e\n", None, "line 3", ["tab", "spaces"]),
    ("file", "latin1-bytes", b"study: bad\ndescription: caf\xe9\n", None, "line 2", ["not UTF-8"]),
    ("file", "utf16", "study: bad\n".encode("utf-16"), None, "line 1", ["not UTF-8"]),
    ("file", "python-tag", "study: !!python/object/apply:os.system [echo pwned]\n", None, "line 1", ["tag", "not allowed"]),
    ("file", "str-tag", "study: !!str bad\n", None, "line 1", ["tag", "not allowed"]),
    ("file", "local-tag", "study: bad\nrepetitions: !reps 3\n", None, "line 2", ["tag"]),
    ("file", "duplicate-top-key", "study: a\nplatform: x4600\nstudy: b\n", None, "line 3", ["'study'", "twice", "line 1"]),
    ("file", "duplicate-nested-key", "study: bad\nplatform: x4600\nexperiments:\n  - name: e\n    name: f\n"
     "    placements: [{cpus: '0'}]\n", None, "line 5", ["'name'", "twice"]),
    ("file", "alias-bomb", LAUGHS, None, "line", ["aliases expand", "200000"]),
    ("file", "alias-cycle", "study: bad\nloop: &a [*a]\n", None, "line 2", ["alias", "contains it"]),
    ("file", "merge-key", "study: bad\nbase: &b {repetitions: 1}\nexperiments: [{<<: *b, name: e}]\n", None,
     "line 3", ["merge keys"]),
    ("file", "yte-template", YTE, None, "__use_yte__", ["YTE", "runs no code"]),
    ("file", "two-documents", "study: a\n---\nstudy: b\n", None, "line 2", ["single document"]),
    ("file", "deep-nesting", "study: bad\nx: " + "[" * 200 + "]" * 200 + "\n", None, "line 2", ["nested", "32"]),
    ("file", "nul-character", "study: bad\x00\n", None, "YAML", ["#x0000"]),
    ("file", "too-large", "study: bad\n" + "# padding\n" * 120_000, None, "study", ["larger than", "KiB"]),
    ("file", "integer-of-5000-digits", "study: bad\nrepetitions: " + "9" * 5000 + "\n", None, "YAML", ["number", "digits"]),
    ("file", "non-text-key", "study: bad\n3: three\n", None, "line 2", ["key 3", "not text"]),
    ("file", "study-missing", MISSING, None, "study", ["no such file"]),
    ("file", "study-is-directory", DIRECTORY, None, "study", ["directory"]),
    # opening a FIFO blocks until a writer comes (forever); a device is endless or a terminal
    ("file", "study-is-fifo", FIFO, None, "study", ["named pipe (FIFO)", "not a regular study file"]),
    ("file", "study-symlink-to-fifo", Link(FIFO), None, "study", ["named pipe", "symbolic link"]),
    ("file", "study-is-device", Link("/dev/zero"), None, "study", ["character device", "/dev/zero"]),
    ("file", "study-symlink-to-directory", Link(DIRECTORY), None, "study", ["directory", "symbolic link"]),
    ("file", "study-dangling-symlink", Link("/nonexistent/study.yaml"), None, "study", ["no such file", "symbolic link"]),
    ("file", "json-nan", Json('{"study": "bad", "platform": "x4600", "repetitions": NaN, '
                              '"experiments": [{"name": "e", "placements": [{"cpus": "0"}]}]}'), None,
     "repetitions", ["NaN", "not a number", "finite"]),
    ("file", "json-infinity", Json('{"study": "bad", "run": {"timeout": Infinity}}'), None, "run.timeout", ["Infinity"]),
    ("file", "json-minus-infinity-nested", Json('{"study": "bad", "platform": "x4600", "experiments": '
                                                '[{"name": "e", "repetitions": -Infinity, "placements": [{"cpus": "0"}]}]}'),
     None, "experiments[0].repetitions", ["-Infinity", "finite"]),
    ("file", "json-nan-in-yaml-file", '{"study": "bad", "platform": "x4600", "capture": {"interval_min": NaN}}', None,
     "capture.interval_min", ["NaN", "finite"]),
    ("file", "json-duplicate-key", Json('{"study": "a", "study": "b"}'), None, "JSON", ["'study'", "twice"]),
    ("file", "json-syntax", Json('{"study": "bad",}'), None, "line 1", ["malformed JSON"]),
    ("file", "platform-empty", ON_P, "", "(top level)", ["empty"]),
    ("file", "platform-latin1", ON_P, b"name: p\ndescription: \xff\xfe\nnodes: [{id: 0, cpus: '0'}]\n", "line 2", ["not UTF-8"]),
    ("file", "platform-duplicate-key", ON_P, "name: p\nnodes: [{id: 0, cpus: '0'}]\nnodes: [{id: 1, cpus: '1'}]\n",
     "line 3", ["'nodes'", "twice"]),
    ("file", "platform-tag", ON_P, "name: !!python/name:os.system p\nnodes: [{id: 0, cpus: '0'}]\n", "line 1", ["tag"]),
    ("file", "platform-is-directory", ON_P, DIRECTORY, "platform", ["directory"]),
    ("file", "platform-is-fifo", ON_P, FIFO, "platform", ["named pipe", "not a regular platform file"]),
    ("file", "platform-is-device", ON_P, Link("/dev/null"), "platform", ["character device", "/dev/null"]),
    ("file", "platform-list", ON_P, "- name: p\n", "(top level)", ["list"]),
    ("file", "platform-malformed", ON_P, "name: p\nnodes: [{id: 0\n", "line", ["malformed YAML"]),
    ("file", "platform-yte", ON_P, "__use_yte__: true\nname: p\nnodes: [{id: 0, cpus: '0'}]\n", "__use_yte__", ["YTE"]),

    # -- numbers --------------------------------------------------------------------
    ("numbers", "repetitions-float", study(repetitions=2.0), None, "repetitions", ["whole number", "2.0"]),
    ("numbers", "repetitions-bool", study(repetitions=True), None, "repetitions", ["true/false is not a number"]),
    ("numbers", "repetitions-word", study(repetitions="three"), None, "repetitions", ["whole number", "'three'"]),
    ("numbers", "repetitions-zero", study(repetitions=0), None, "repetitions", ["less than the minimum"]),
    ("numbers", "repetitions-nan", "study: bad\nplatform: x4600\nrepetitions: .nan\n", None, "repetitions", ["nan", "finite"]),
    ("numbers", "timeout-infinite", "study: bad\nplatform: x4600\nrun: {timeout: .inf}\n", None, "run.timeout", ["inf", "finite"]),
    ("numbers", "repetitions-huge", study(repetitions=10**9), None, "repetitions",
     ["1000000000", "limit of 1000", "at most 1000000", "limits: {repetitions: 1000000}"]),
    ("numbers", "exp-repetitions-huge", study(experiments=exp({"cpus": "0"}, repetitions=5000)), None,
     "experiments[0] (e).repetitions", ["limit of 1000", "repetitions"]),
    # adaptive repetitions {min, max, alpha}: the mapping judged key by key, max against the same limit
    ("numbers", "adaptive-min-above-max", study(repetitions={"min": 5, "max": 3}), None, "repetitions",
     ["min 5 is above max 3"]),
    ("numbers", "adaptive-max-huge", study(experiments=exp({"cpus": "0"}, repetitions={"min": 2, "max": 5000})),
     None, "experiments[0] (e).repetitions.max", ["limit of 1000"]),
    ("numbers", "adaptive-unknown-key", study(repetitions={"min": 2, "max": 4, "step": 1}), None, "repetitions",
     ["'step' was unexpected"]),
    ("numbers", "adaptive-no-max", study(repetitions={"min": 2}), None, "repetitions", ["need max"]),
    ("numbers", "adaptive-float-min", study(repetitions={"min": 2.0, "max": 4}), None, "repetitions.min",
     ["whole number", "2.0"]),
    ("numbers", "compact-float", study(experiments=exp({"compact": [2.0]})), None, "compact[0]", ["whole number"]),
    ("numbers", "threads-float", study(experiments=exp({"cpus": "0-1", "threads": 1.5})), None, "threads", ["whole number", "1.5"]),
    ("numbers", "membind-float-node", study(launcher="numactl", experiments=exp({"cpus": "0"}, memory=[{"membind": [0.0]}])),
     None, "memory[0]", ["membind needs a non-empty list of node ids"]),
    ("numbers", "membind-negative-node", study(launcher="numactl", experiments=exp({"cpus": "0"}, memory=[{"membind": [-1]}])),
     None, "memory[0]", ["membind needs a non-empty list of node ids"]),
    ("numbers", "preferred-bool", study(launcher="numactl", memory=[{"preferred": True}]), None, "memory[0]",
     ["preferred needs one node id"]),
    ("numbers", "cpu-negative", study(experiments=exp({"cpus": -1})), None, "cpus", ["CPU list"]),
    ("numbers", "cpu-range-huge", study(experiments=exp({"cpus": "0-9999999"})), None, "placements[0].cpus",
     ["9999999", "limit of 8191", "cpu_id"]),
    ("numbers", "cpu-digits-huge", study(experiments=exp({"cpus": "0-" + "9" * 40})), None, "cpus", ["CPU list"]),
    ("numbers", "compact-huge", study(experiments=exp({"compact": [10**6]})), None, "compact", ["threads", "limit of 4096"]),
    ("numbers", "layout-digits-huge", study(experiments=exp({"layout": "1" * 30 + "/1"})), None, "layout", ["not a layout"]),
    ("numbers", "plan-explodes", study(repetitions=1000, classes=["S", "W", "A", "B", "C"],
                                       variants=["default", "serial-init", "mcmodel-medium"],
                                       experiments=exp({"compact": list(range(1, 17))})), None,
     "experiments", ["planned runs", "480000", "limit of 20000", "limits: {runs:"]),
    ("numbers", "all-choices-explodes", {**study(experiments=exp({"layout": "1/1/1/1"})), **P}, symmetric_platform(64),
     "placements[0].nodes", ["635376", "limit of 5000", "choices"]),
    ("numbers", "symmetries-explode", {**study(experiments=exp({"layout": "1/1", "distinct": True})), **P},
     symmetric_platform(24), "distinct", ["symmetries", "5000"]),
    ("numbers", "interval-min-above-max", study(capture={"interval_min": 2.0, "interval_max": 1.0}), None,
     "capture.interval_min", ["above", "interval_max"]),
    ("numbers", "dpi-huge", study(figures={"dpi": 10**6}), None, "figures.dpi", ["maximum"]),
    ("numbers", "share-above-one", study(fidelity={"memory_share_min": 1.5}), None, "fidelity.memory_share_min", ["maximum"]),
    ("numbers", "limits-float", study(limits={"runs": 1e6}), None, "limits.runs", ["whole number"]),
    ("numbers", "limits-past-ceiling", study(limits={"repetitions": 10**9, "runs": 10**12}, repetitions=10**8),
     None, "limits.repetitions", ["greater than the maximum of 1000000"]),
    ("numbers", "platform-node-id-float", ON_P, platform(nodes=[{"id": 0.0, "cpus": "0"}]), "nodes[0].id", ["whole number"]),
    ("numbers", "platform-node-id-negative", ON_P, platform(nodes=[{"id": -1, "cpus": "0"}]), "nodes[0].id", ["minimum"]),
    ("numbers", "platform-node-id-huge", ON_P, platform(nodes=[{"id": 10**7, "cpus": "0"}]), "id", ["limit of 8191"]),
    ("numbers", "platform-cpus-huge", ON_P, platform(nodes=[{"id": 0, "cpus": "0-9999999"}]), "cpus", ["limit of 8191"]),
    ("numbers", "platform-distance-float", ON_P, platform(distances=[[10, 20.5], [20.5, 10]]), "distances[0][1]", ["whole number"]),
    ("numbers", "platform-memory-bool", ON_P, platform(nodes=[{"id": 0, "cpus": "0", "memory_mb": True}]), "memory_mb",
     ["true/false"]),
    ("numbers", "membw-reps-past-timeout", study(experiments=mem(args=["--reps", "100000"])), None,
     "experiments[0] (e).args[1]", ["a membw run would last at least 4e+04 s",
                                    "1 thread reading x 100000 regions (--reps) of at least 0.1 s",
                                    "past run.timeout 3600 s"]),
    ("numbers", "memlat-reps-past-own-timeout", study(run={"timeout": 60}, experiments=mem(
        benchmarks=["memlat"], args=["--sizes", "1G", "--min-time", "0.01", "--reps", "10000"])), None,
     "args[5]", ["memlat run would last at least 107 s", "a buffer read at a generous 100 GB/s", "past run.timeout 60 s"]),
    ("numbers", "membw-parallel-reps-past-timeout", study(experiments=mem({"compact": [1, 2]}, args=[
        "--mode", "parallel", "--sizes", "8G", "--reps", "10000000"])), None, "args[5]",
     ["at least 1e+06 s", "2 threads reading at once", "a generous 100 GB/s", "run.timeout 3600"]),
    ("numbers", "membw-size-beyond-platform-memory", study(experiments=mem(args=["--sizes", "1M,64G"])), None,
     "experiments[0] (e).args[1]", ["--sizes 64G", "64 GiB", "more than platform x4600's memory (32 GiB)"]),
    ("numbers", "membw-size-beyond-membind-node", study(launcher="numactl", experiments=mem(
        {"matrix": {"via": "membind", "readers": [0], "memory": [1]}}, args=["--sizes", "6G"])), None, "args[1]",
     ["6 GiB is more than the 4 GiB of node 1", "mx-mb-r0-m1", "--membind fails instead of spilling"]),
    ("numbers", "membw-size-beyond-this-machine", study(platform="auto", experiments=mem(args=["--sizes", "4000000G"])),
     None, "args[1]", ["--sizes 4000000G", "this machine's memory (MemTotal"]),
    ("numbers", "memlat-size-below-two-lines", study(experiments=mem(benchmarks=["memlat"], args=["--sizes", "100"])),
     None, "args[1]", ["at least 2 lines of 64 B"]),
    ("numbers", "membw-reps-zero", study(experiments=mem(args=["--reps", "0"])), None, "args[1]",
     ["--reps '0'", "whole number from 1"]),
    ("numbers", "membw-min-time-negative", study(experiments=mem(args=["--min-time", "-1"])), None, "args[1]",
     ["above 0"]),
    ("numbers", "memlat-per-octave-huge", study(experiments=mem(benchmarks=["memlat"], args=["--per-octave", "64"])),
     None, "args[1]", ["from 1 to 32"]),
    ("numbers", "memlat-stride-odd", study(experiments=mem(benchmarks=["memlat"], args=["--stride", "12"])), None,
     "args[1]", ["multiple of 8"]),
    ("numbers", "figure-gigapixel-width", study(figures={"width": 100, "dpi": 1200, "formats": ["png"]}), None, "figures.width",
     ["px wide", "at dpi 1200", "limit of 10000 px per side"]),
    ("numbers", "figure-gigapixel-height", study(figures={"dpi": 600, "bar_height": 10, "formats": ["svg", "png"]},
                                                 experiments=exp({"cpus": "0"}, {"cpus": "1"}, {"cpus": "2"})), None,
     "figures.dpi", ["px tall", "3 rows", "bar_height 10", "limit of 10000 px per side"]),
    ("numbers", "figure-vector-too-large", study(figures={"formats": ["svg"], "bar_height": 10, "label_width": 1},
                                                 experiments=exp({"cpus": "0"}, {"cpus": "1"}, {"cpus": "2"})),
     None, "figures.bar_height", ["in tall", "limit of 200 in", "svg, pdf"]),
    ("numbers", "capture-interval-min-tiny", study(capture={"interval_min": 0.0001}), None, "capture.interval_min",
     ["0.0001 s", "0.001 s", "spin"]),
    ("numbers", "capture-interval-max-tiny", study(capture={"interval_max": 1e-6}), None, "capture.interval_max",
     ["1e-06 s", "0.001 s"]),
    ("numbers", "run-timeout-tiny", study(run={"timeout": 0.002}), None, "run.timeout",
     ["0.002 s would end runs before they finish", "smallest timeout is 5 s"]),
    ("numbers", "platform-distance-nan", ON_P, "name: p\nnodes: [{id: 0, cpus: '0'}]\ndistances: [[.nan]]\n",
     "distances[0][0]", ["nan", "finite"]),

    # -- names (they become paths under results/ and report/, and arguments) --------
    ("names", "study-dotdot", study(study="../etc"), None, "study", ["not a usable name", ".."]),
    ("names", "study-dotdot-inside", study(study="a..b"), None, "study", ["not a usable name"]),
    ("names", "study-leading-dash", study(study="-rf"), None, "study", ["not a usable name"]),
    ("names", "study-leading-dot", study(study=".hidden"), None, "study", ["not a usable name"]),
    ("names", "study-slash", study(study="a/b"), None, "study", ["not a usable name"]),
    ("names", "study-space", study(study="my study"), None, "study", ["not a usable name"]),
    ("names", "study-too-long", study(study="s" * 300), None, "study", ["not a usable name", "1-64"]),
    ("names", "study-newline", study(study="ok\nrm -rf /"), None, "study", ["control character"]),
    ("names", "study-trailing-newline", "study: \"bad\\n\"\nplatform: x4600\n", None, "study", ["control character"]),
    ("names", "study-nul", "study: \"bad\\0x\"\nplatform: x4600\n", None, "study", ["control character"]),
    ("names", "study-non-ascii", study(study="étude"), None, "study", ["not a usable name"]),
    ("names", "study-number", study(study=42), None, "study", ["expected text"]),
    ("names", "experiment-dotdot", study(experiments=[{"name": "..", "placements": [{"cpus": "0"}]}]), None,
     "experiments[0].name", ["not a usable name"]),
    ("names", "placement-id-path", study(experiments=exp({"cpus": "0", "id": "../../x"})), None, "placements[0].id",
     ["not a usable name"]),
    ("names", "placement-id-option", study(experiments=exp({"cpus": "0", "id": "--help"})), None, "placements[0].id",
     ["not a usable name"]),
    ("names", "placement-id-newline", study(experiments=exp({"cpus": "0", "id": "a\nb"})), None, "placements[0].id",
     ["control character"]),
    ("names", "study-platform-path", study(platform="../studies/quick"), None, "platform", ["not a usable name"]),
    ("names", "platform-own-name", ON_P, platform(name="-p"), "name", ["not a usable name"]),
    ("names", "key-with-newline", "study: bad\n\"repe\\ntitions\": 1\n", None, "repe", ["control character"]),
    # folders numaplace writes itself beside results/<study>/ and report/<study>/
    ("names", "study-named-build", study(study="build"), None, "study",
     ["'build' is a name numaplace uses itself", "results/build/", "another name"]),
    ("names", "study-named-Build", study(study="Build"), None, "study", ["results/build/"]),
    ("names", "study-named-readme", study(study="README.md"), None, "study", ["results/README.md"]),
    # free text may span lines; no other control character (a NUL ends it in argv and C)
    ("names", "description-nul", study(description="before\x00after"), None, "description",
     ["control character \\x00 at character 7", "tabs and newlines"]),
    ("names", "description-escape", study(experiments=exp({"cpus": "0"}, description="\x1b[2Jcleared")), None,
     "experiments[0].description", ["\\x1b"]),
    ("names", "description-carriage-return", study(description="one\rtwo"), None, "description", ["\\r"]),
    ("names", "description-c1-control", study(description="csi\x9bhere"), None, "description", ["\\x9b"]),
    ("names", "platform-description-nul", ON_P, platform(description="eight\x00nodes"), "description", ["\\x00"]),
    ("names", "shell-in-cpus", study(experiments=exp({"cpus": "0;rm -rf ~"})), None, "placements[0].cpus", ["CPU list"]),
    ("names", "shell-in-fflags", study(npb={"fflags": "-O3 $(curl evil)"}), None, "npb.fflags", ["is not allowed here"]),
    ("names", "shell-in-source", study(npb={"source": "x.tar.gz;reboot"}), None, "npb.source", ["is not allowed here"]),

    # -- contradictions -------------------------------------------------------------
    ("contradictions", "cpu-twice-overlap", study(experiments=exp({"cpus": "0-3,2"})), None, "placements[0].cpus",
     ["2 is listed twice"]),
    ("contradictions", "cpu-twice-single", study(experiments=exp({"cpus": "1,1"})), None, "cpus", ["1 is listed twice"]),
    ("contradictions", "membind-node-twice", study(launcher="numactl", memory=[{"membind": [0, 0]}]), None, "memory[0]",
     ["membind lists node 0 twice"]),
    ("contradictions", "interleave-string-twice", study(launcher="numactl", memory=[{"interleave": "0-2,1"}]), None,
     "memory[0].interleave", ["1 is listed twice"]),
    ("contradictions", "compact-twice", study(experiments=exp({"compact": [2, 2]})), None, "compact", ["lists 2 twice"]),
    ("contradictions", "benchmark-twice", study(benchmarks=["cg", "cg"]), None, "benchmarks", ["lists 'cg' twice"]),
    ("contradictions", "experiment-name-twice", study(experiments=exp({"cpus": "0"}) + exp({"cpus": "1"})), None,
     "experiments[1].name", ["'e'", "already used", "experiments[0]"]),
    ("contradictions", "compact-with-nodes", study(experiments=exp({"compact": [2], "nodes": [0]})), None,
     "placements[0].nodes", ["only applies to a layout", "compact ignores it"]),
    ("contradictions", "cpus-with-distinct", study(experiments=exp({"cpus": "0", "distinct": True})), None,
     "placements[0].distinct", ["only applies to a layout"]),
    ("contradictions", "distinct-with-node-list", study(experiments=exp({"layout": "2/2", "nodes": [0, 1], "distinct": True})),
     None, "distinct", ["nodes: all-choices", "remove distinct"]),
    ("contradictions", "distinct-without-distances", {**study(experiments=exp({"layout": "1/1", "distinct": True})), **P},
     GOOD_PLATFORM, "distinct", ["no distances", "add distances"]),
    ("contradictions", "cpus-and-layout", study(experiments=exp({"cpus": "0-1", "layout": "1/1"})), None, "placements[0]",
     ["exactly one of cpus, layout, compact, spread, unpinned, sweep, matrix or contention"]),
    ("contradictions", "no-placement-form", study(experiments=exp({"threads": 2})), None, "placements[0]",
     ["exactly one of"]),
    ("contradictions", "membind-word", study(launcher="numactl", memory=[{"membind": "local"}]), None, "memory[0]",
     ["membind needs a non-empty list of node ids"]),
    ("contradictions", "membind-empty", study(launcher="numactl", memory=[{"membind": []}]), None, "memory[0]",
     ["membind needs a non-empty list"]),
    ("contradictions", "memory-unknown-policy", study(launcher="numactl", memory=["remote"]), None, "memory[0]",
     ["unknown memory policy", "local"]),
    ("contradictions", "memory-two-policies", study(launcher="numactl", memory=[{"membind": [0], "interleave": [1]}]),
     None, "memory[0]", ["unknown memory policy"]),
    ("contradictions", "layout-nodes-count", study(experiments=exp({"layout": "2/2/2", "nodes": [0, 1]})), None,
     "placements[0]", ["has 3 entries but nodes has 2"]),
    ("contradictions", "platform-slit-zero-diagonal", ON_P, platform(distances=[[0, 20], [20, 10]]), "distances[0][0]",
     ["distance to itself is 0", "local distance"]),
    ("contradictions", "platform-slit-below-local", ON_P, platform(distances=[[10, 5], [5, 10]]), "distances[0][1]",
     ["below the node's own distance"]),
    ("contradictions", "platform-slit-asymmetric", ON_P, platform(distances=[[10, 20], [21, 10]]), "distances",
     ["not symmetric"]),
    ("contradictions", "platform-cluster-too-small", ON_P, platform(cluster={"cpus_per_node": 2}), "cluster.cpus_per_node",
     ["2 is smaller than the 4 CPUs"]),
    ("contradictions", "platform-cpu-in-two-nodes", ON_P, platform(nodes=[{"id": 0, "cpus": "0-1"}, {"id": 1, "cpus": "1-2"}]),
     "nodes[1] (node 1).cpus", ["CPU 1 is already in node 0"]),
    ("contradictions", "platform-cpu-twice-in-node", ON_P, platform(nodes=[{"id": 0, "cpus": "0-3,3"}]), "cpus",
     ["3 is listed twice"]),
    ("contradictions", "platform-node-twice", ON_P, platform(nodes=[{"id": 0, "cpus": "0"}, {"id": 0, "cpus": "1"}]),
     "nodes[1]", ["node id 0 appears twice"]),
    ("contradictions", "npb-source-missing", study(npb={"source": "/nonexistent/NPB3.4.2.tar.gz"}), None, "npb.source",
     ["no such file or directory"]),
    ("contradictions", "npb-source-device", study(npb={"source": "/dev/zero"}), None, "npb.source",
     ["not a regular file or directory"]),
    ("contradictions", "npb-source-not-npb", study(npb={"source": "/etc"}), None, "npb.source", ["no NPB3.x-OMP tree"]),
    ("contradictions", "npb-url-without-sha", study(npb={"source": "http://example.org/NPB3.4.2.tar.gz"}), None,
     "npb.sha256", ["needs the tarball's sha256"]),
    ("contradictions", "npb-file-url", study(npb={"source": "file:///tmp/NPB3.4.2.tar.gz"}), None, "npb.source",
     ["file:// URL is a path"]),
    ("contradictions", "cpu-not-in-platform", study(experiments=exp({"cpus": "0-3,99"})), None, "placements[0].cpus",
     ["CPU 99 is not in platform x4600"]),
    ("contradictions", "taskset-membind", study(experiments=exp({"cpus": "0-1"}, memory=[{"membind": [0]}])), None,
     "placements[0]", ["launcher taskset cannot express"]),
    # the memory micro-benchmarks' args: what microbench/src accepts, nothing else
    ("contradictions", "membw-unknown-flag", study(experiments=mem(args=["--bogus"])), None, "experiments[0] (e).args[0]",
     ["'--bogus' is not an option of membw", "--sizes", "microbench/README.md"]),
    ("contradictions", "membw-flag-with-equals", study(experiments=mem(args=["--sizes=1M"])), None, "args[0]",
     ["write --sizes and its value as two entries"]),
    ("contradictions", "membw-positional-word", study(experiments=mem(args=["serial"])), None, "args[0]",
     ["'serial' is not an option"]),
    ("contradictions", "memlat-flag-on-membw", study(experiments=mem(benchmarks=["membw", "memlat"], args=["--stride", "128"])),
     None, "args[0]", ["--stride is an option of memlat and loadlat only", "membw would stop with a usage text"]),
    ("contradictions", "membw-mode-word", study(experiments=mem(args=["--mode", "fast"])), None, "args[1]",
     ["--mode 'fast'", "serial or parallel"]),
    ("contradictions", "membw-flag-without-value", study(experiments=mem(args=["--sizes", "1M", "--reps"])), None,
     "args[2]", ["--reps needs a value"]),
    ("contradictions", "membw-flag-twice", study(experiments=mem(args=["--reps", "3", "--reps", "4"])), None, "args[2]",
     ["given twice", "args[0]"]),
    ("contradictions", "membw-sizes-syntax", study(experiments=mem(args=["--sizes", "1T"])), None, "args[1]",
     ["'1T' is not a size", "32K,1M,128M"]),
    ("contradictions", "memlat-dump-chain", study(experiments=mem(benchmarks=["memlat"], args=["--dump-chain"])), None,
     "args[0]", ["measures nothing"]),
    ("contradictions", "membw-cpus-too-few", study(experiments=mem({"cpus": "0-1"}, args=["--cpus", "0"])), None,
     "args[1]", ["--cpus lists 1 CPU for placements of up to 2 threads"]),
    # build variants are per kind: serial-init and mcmodel-medium are NPB's
    ("contradictions", "variant-on-membw", study(experiments=mem(variants=["default", "serial-init"])), None,
     "experiments[0] (e).variants", ["serial-init does not apply to membw", "only as default", "for cg, mg"]),
    ("contradictions", "study-variant-on-memlat", study(variants=["mcmodel-medium"], experiments=mem(benchmarks=["memlat"])),
     None, "experiments[0] (e).variants", ["mcmodel-medium (the study's variants)", "give this experiment variants: [default]"]),
    # hop rows are strings of digits or lists: say so, not "expected a list"
    ("contradictions", "platform-hops-letters", ON_P, platform(hops=["0x", "x0"]), "hops[0]",
     ["'0x' is not a row of hop counts", "'x' is not a digit", "'01122223'"]),
    ("contradictions", "platform-hops-commas", ON_P, platform(hops=["0,1", "1,0"]), "hops[0]",
     ["not a row of hop counts", "',' is not a digit"]),
    ("contradictions", "platform-hops-negative", ON_P, platform(hops=[[0, -1], [-1, 0]]), "hops[0]",
     ["hop count -1 (position 1)", "0-24"]),
    ("contradictions", "platform-hops-number", ON_P, platform(hops=[1, 10]), "hops[0]",
     ["expected a row of hop counts, got 1"]),
    ("contradictions", "unknown-platform", study(platform="vax"), None, "platform", ["unknown platform 'vax'"]),
    ("contradictions", "unknown-key", study(repetitons=3), None, "(top level)", ["unknown key", "'repetitons'"]),
    ("contradictions", "unknown-limit", study(limits={"minutes": 3}), None, "limits", ["unknown key", "'minutes'"]),
]
KINDS = ("file", "numbers", "names", "contradictions")


def platform_at_fault(case):
    return case[2] is ON_P


def write_case(where, repo_config, data, plat):
    """The study file (returned) and config/platforms beside it (p.yaml = plat)."""
    cfg = where / "config"
    if not (cfg / "platforms").exists():
        shutil.copytree(repo_config / "platforms", cfg / "platforms")
    p = cfg / "platforms" / "p.yaml"
    if plat is not None:
        _make(p, plat)
    f = where / ("study.json" if isinstance(data, Json) else "study.yaml")
    if data is not MISSING:
        _make(f, data)
    return f, cfg


def _make(path, content):
    if content is DIRECTORY:
        path.mkdir()
    elif content is FIFO:
        os.mkfifo(path)
    elif isinstance(content, Link):
        target = path.with_name(path.stem + ".target")
        if content in (FIFO, DIRECTORY):
            _make(target, FIFO if content == FIFO else DIRECTORY)
        else:
            target = content
        path.symlink_to(target)
    else:
        _write(path, content)


def _write(path, content):
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(yaml.safe_dump(content, sort_keys=False))


def assert_refusal(err, expected_file, entry, words):
    line = refusal(err)
    assert "\n" not in line and line.isprintable(), repr(line)
    prefix = f"invalid study: {expected_file}: "
    assert line.startswith(prefix), line
    assert line[len(prefix):].startswith(one_line(err.entry)[:400] + ": "), line
    assert entry in err.entry, line
    for w in words:
        assert w.lower() in err.problem.lower(), line
    return line


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_bad_input_refused_in_one_line(tmp_path, repo, monkeypatch, case):
    kind, name, data, plat, entry, words = case
    monkeypatch.chdir(tmp_path)
    f, cfg = write_case(tmp_path, repo / "config", data, plat)
    with pytest.raises(ConfigError) as ei, within(60):     # a FIFO would block the planner forever
        load_study_file(f, cfg)
    expected = cfg / "platforms" / "p.yaml" if platform_at_fault(case) else f
    assert_refusal(ei.value, expected, entry, words)
    assert not (tmp_path / "results").exists() and not (tmp_path / "report").exists()


class _TooSlow(Exception):
    pass


def _too_slow(signum, frame):
    raise _TooSlow("no refusal within the time allowed (blocked?)")


class within:
    """Fail (instead of hanging) when the block takes longer than `seconds`: SIGALRM
    interrupts even a blocking open() of a FIFO."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __enter__(self):
        self.old = signal.signal(signal.SIGALRM, _too_slow)
        signal.alarm(self.seconds)

    def __exit__(self, *exc):
        signal.alarm(0)
        signal.signal(signal.SIGALRM, self.old)


def test_corpus_covers_every_kind():
    counts = {k: sum(1 for c in CASES if c[0] == k) for k in KINDS}
    assert all(n >= 15 for n in counts.values()), counts
    assert len({c[1] for c in CASES}) == len(CASES)


def test_good_base_is_valid(tmp_path, repo):
    f, cfg = write_case(tmp_path, repo / "config", study(), None)
    assert len(load_study_file(f, cfg).runs) == 2


def test_a_limit_is_raised_in_the_study(tmp_path, repo):
    """The documented way past a limit: `limits:` in the study file."""
    f, cfg = write_case(tmp_path, repo / "config", study(repetitions=1500), None)
    with pytest.raises(ConfigError, match="limits: {repetitions: 1500}"):
        load_study_file(f, cfg)
    f.write_text(yaml.safe_dump(study(repetitions=1500, limits={"repetitions": 1500})))
    assert len(load_study_file(f, cfg).runs) == 2 * 1500


def test_descriptions_may_hold_tabs_and_newlines(tmp_path, repo):
    f, cfg = write_case(tmp_path, repo / "config", study(description="line one\n\tline two\n"), None)
    assert load_study_file(f, cfg).config["description"].count("\n") == 2


def test_memory_args_the_benchmarks_take_are_planned(tmp_path, repo):
    """Every option microbench/src documents, with the values it takes, is planned."""
    membw = ["--mode", "parallel", "--share", "whole", "--sizes", "32K,1.5M,L2,LLC,DRAM,", "--reps", "3",
             "--min-time", "0.05", "--hugepages", "--flush", "--cpus", "0,1"]
    memlat = ["--stride", "128", "--per-octave", "2", "--min-loads", "20000", "--seed", "7", "--sizes", "L1,1M"]
    f, cfg = write_case(tmp_path, repo / "config", study(
        figures={"dpi": 300}, run={"timeout": 5}, capture={"interval_min": 0.001},
        experiments=mem({"compact": [1, 2]}, args=membw) + [{**mem(args=memlat, benchmarks=["memlat"])[0], "name": "l"}]),
        None)
    runs = load_study_file(f, cfg).runs
    assert {r.bench: list(r.args) for r in runs} == {"membw": membw, "memlat": memlat}


def test_json_study_is_read(tmp_path, repo):
    f, cfg = write_case(tmp_path, repo / "config", Json(json.dumps(study())), None)
    assert load_study_file(f, cfg).name == "bad"


def test_yaml_flow_mapping_is_not_taken_for_json(tmp_path, repo):
    f, cfg = write_case(tmp_path, repo / "config", yaml.safe_dump(study(), default_flow_style=True), None)
    assert f.read_text().startswith("{") and load_study_file(f, cfg).name == "bad"


def test_layout_of_many_ones_is_planned_quickly(tmp_path, repo):
    # 12 equal counts have one ordering: planned without walking 12! permutations
    f, cfg = write_case(tmp_path, repo / "config", {**study(experiments=exp({"layout": "/".join(["1"] * 12)})), **P},
                        symmetric_platform(13, distances=False))
    assert len(load_study_file(f, cfg).runs) == 2 * 13


# -- bounded time and memory, whatever the input -------------------------------------
HEAVY = ["alias-bomb", "deep-nesting", "too-large", "integer-of-5000-digits", "repetitions-huge",
         "cpu-range-huge", "compact-huge", "plan-explodes", "all-choices-explodes", "symmetries-explode",
         "platform-cpus-huge", "npb-source-device", "study-is-fifo", "platform-is-fifo", "study-is-device",
         "membw-reps-past-timeout", "membw-size-beyond-this-machine", "figure-gigapixel-width",
         "figure-gigapixel-height"]
CPU_SECONDS, MEMORY_BYTES = 5, 500 << 20

CHILD = """
import sys
from numaplace import ConfigError
from numaplace.core.loader import refusal
from numaplace.plan.study import load_study_file
try:
    load_study_file(sys.argv[1], sys.argv[2])
except ConfigError as e:
    print(refusal(e))
"""


def _bounded():
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


@pytest.mark.parametrize("name", HEAVY)
def test_refused_within_5_cpu_seconds_and_500_mb(tmp_path, repo, name):
    """Each heavy case in a child limited by setrlimit: exceeding 5 s of CPU kills it
    (SIGXCPU), exceeding 500 MB of address space makes it fail; it must print its line."""
    _, _, data, plat, _, _ = next(c for c in CASES if c[1] == name)
    f, cfg = write_case(tmp_path, repo / "config", data, plat)
    r = subprocess.run([sys.executable, "-c", CHILD, str(f), str(cfg)], cwd=tmp_path,
                       preexec_fn=_bounded, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.startswith("invalid study: ") and r.stdout.count("\n") == 1, r.stdout


# -- end to end: snakemake -n, as a user runs it -------------------------------------
@pytest.fixture
def workdir(tmp_path, repo):
    """A copy of the workflow with earlier results on disk."""
    w = tmp_path / "wf"
    w.mkdir()
    for name in ("Snakefile", "config", "workflow", "profiles", "envs"):
        src = repo / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, w / name)
    earlier = w / "results" / "bad" / "runs" / "cg.S.default.x.r1"
    earlier.mkdir(parents=True)
    (earlier / "record.json").write_text('{"status": "ok"}')
    return w


def snakemake_dry(workdir, *args):
    before = {p: p.read_bytes() for p in (workdir / "results").rglob("*") if p.is_file()}
    r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", *args],
                       cwd=workdir, capture_output=True, text=True, timeout=300)
    after = {p: p.read_bytes() for p in (workdir / "results").rglob("*") if p.is_file()}
    assert after == before, "a refused study wrote under results/"
    assert not (workdir / "report").exists()
    return r, r.stdout + r.stderr


def assert_one_line(r, out, *words):
    lines = [ln for ln in out.splitlines() if ln.startswith("invalid study: ")]
    assert r.returncode != 0, out[-2000:]
    assert len(lines) == 1, out[-2000:]
    assert "Traceback" not in out and "Job stats" not in out and "rule " not in out, out[-2000:]
    for w in words:
        assert w in lines[0], lines[0]


E2E = ["yte-template", "alias-bomb", "latin1-bytes", "duplicate-top-key", "study-dotdot", "plan-explodes",
       "membind-word", "platform-slit-zero-diagonal", "study-missing", "study-is-fifo", "membw-unknown-flag",
       "study-named-build", "description-nul", "json-nan"]


@pytest.mark.parametrize("name", E2E)
def test_snakemake_refuses_before_any_job(workdir, name):
    _, _, data, plat, entry, words = next(c for c in CASES if c[1] == name)
    f, cfg = write_case(workdir, workdir / "config", data, plat)
    r, out = snakemake_dry(workdir, "--config", f"study={f.name}")
    fault = "config/platforms/p.yaml" if plat is not None else f.name
    assert_one_line(r, out, f"invalid study: {fault}" if plat is None else fault, entry)


def test_yte_template_is_not_run_with_config_study(workdir):
    """The documented way never executes a template: the YTE code would create a file."""
    proof = workdir / "yte-ran"
    text = YTE.replace("?if True:", f"?if __import__('pathlib').Path({str(proof)!r}).touch() is None:")
    (workdir / "t.yaml").write_text(text)
    r, out = snakemake_dry(workdir, "--config", "study=t.yaml")
    assert_one_line(r, out, "t.yaml: __use_yte__")
    assert not proof.exists()


def test_configfile_runs_yte_as_the_readme_says(workdir):
    """What docs/studies.md says --configfile does differently: Snakemake runs the template
    while loading; numaplace still refuses the file afterwards."""
    proof = workdir / "yte-ran"
    text = YTE.replace("?if True:", f"?if __import__('pathlib').Path({str(proof)!r}).touch() is None:")
    (workdir / "t.yaml").write_text(text)
    r, out = snakemake_dry(workdir, "--configfile", "t.yaml")
    assert_one_line(r, out, "t.yaml: __use_yte__")
    assert proof.exists()


def test_configfile_is_read_again_strictly(workdir):
    """--configfile: Snakemake's loader keeps the last duplicate key; numaplace reads
    the file again and refuses it."""
    (workdir / "dup.yaml").write_text("study: bad\nplatform: x4600\nstudy: other\n"
                                      "experiments: [{name: e, placements: [{cpus: '0'}]}]\n")
    r, out = snakemake_dry(workdir, "--configfile", "dup.yaml")
    assert_one_line(r, out, "dup.yaml: line 3", "twice")


@pytest.mark.parametrize("args, words", [
    (["--config", "study=s.yaml", "repetitions=5"], ["--config: repetitions", "only study=<file>"]),
    (["--configfile", "s.yaml", "--config", "study=s.yaml"], ["not both"]),
])
def test_config_arguments_are_not_mixed(workdir, args, words):
    (workdir / "s.yaml").write_text(yaml.safe_dump(study()))
    r, out = snakemake_dry(workdir, *args)
    assert_one_line(r, out, *words)


def test_config_study_plans_a_good_study(workdir):
    (workdir / "s.yaml").write_text(yaml.safe_dump(study()))
    # --quiet host: the rule blocks (which name the plan's path) that the default profile keeps quiet
    r = subprocess.run([sys.executable, "-m", "snakemake", "plan", "-n", "--cores", "1", "--quiet", "host",
                        "--config", "study=s.yaml"], cwd=workdir, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    assert "results/bad/plan.tsv" in r.stdout + r.stderr
