"""Launchers, memory policies and benchmark kinds are registered once (numaplace.plan.launch,
numaplace.kinds); the study, platform and record schemas take their enums from those
registries (numaplace.core.schema.register_words), never from a list of their own."""
from pathlib import Path

import pytest

from numaplace import ConfigError
from numaplace.core.schema import _schema, schema_file, validate_study
from numaplace.kinds import KINDS
from numaplace.plan.launch import LAUNCHERS, MEMORY_POLICIES

pytestmark = pytest.mark.unit
WORDS = {"benchmark": list(KINDS), "launcher": list(LAUNCHERS), "memory_policy": list(MEMORY_POLICIES),
         "class": [c for c in ("S", "W", "A", "B", "C", "X") if any(c in k.classes for k in KINDS.values())],
         "variant": list(dict.fromkeys(v for k in KINDS.values() for v in k.variants))}


def refs(node, found=None):
    """Every $ref reached in a schema."""
    found = set() if found is None else found
    if isinstance(node, dict):
        if "$ref" in node:
            found.add(node["$ref"].rsplit("/", 1)[1])
        for v in node.values():
            refs(v, found)
    elif isinstance(node, list):
        for v in node:
            refs(v, found)
    return found


@pytest.mark.parametrize("name", ["study", "platform", "record"])
def test_schemas_take_their_words_from_the_registries(name):
    raw, filled = schema_file(name), _schema(name)
    for word in refs(raw) & set(WORDS):
        assert raw["$defs"][word] == {"type": "string"}, (name, word)       # no list in the file
        assert filled["$defs"][word] == {"enum": WORDS[word]}, (name, word)


def test_a_study_naming_an_unregistered_kind_is_refused_with_the_registrys_names():
    with pytest.raises(ConfigError) as e:
        validate_study({"study": "s", "benchmarks": ["cg", "streem"], "experiments": [{"name": "e", "placements": [{"cpus": "0"}]}]}, "s.yaml")
    assert "benchmarks[1]" in str(e.value) and ", ".join(KINDS) in str(e.value)


def test_every_launcher_and_memory_policy_has_a_distinct_short_id():
    for registry in (LAUNCHERS, MEMORY_POLICIES):
        shorts = [x.short for x in registry.values()]
        assert all(shorts) and len(set(shorts)) == len(shorts)


def test_a_schema_checked_before_its_registries_still_knows_their_words():
    """Registries complete without import order (issue 43.4): the study schema checked in a
    process that imported neither numaplace.kinds nor numaplace.plan.launch still refuses
    an unknown launcher (it accepted any before), and a platform file loads."""
    import subprocess
    import sys
    code = ("from numaplace.core.schema import check\n"
            "from numaplace.machine.topology import load_platform\n"
            "print(load_platform('config/platforms/x4600.yaml').name)\n"
            "try:\n"
            "    check({'study': 'x', 'launcher': 'anything', 'experiments': [{'name': 'e', 'placements': [{'cpus': '0'}]}]},"
            " 'study', 'f')\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout.splitlines()
    assert out[0] == "x4600" and out[1].startswith("ConfigError f: launcher: 'anything' is not one of"), out


def test_a_launchers_missing_tool_is_one_line_before_any_job():
    """Launchers declare the tools they run here (issue 43.2): one line each that is
    missing, from the workflow's start; aprun's numactl runs on the compute node."""
    from numaplace.plan.launch import missing_tools
    on_path = {"taskset", "aprun"}
    lines = missing_tools(["numactl", "taskset", "aprun", "numactl"], which=lambda t: t in on_path)
    assert lines == ["launcher numactl needs numactl, which is not on PATH here (Debian: apt-get install "
                     "numactl); nothing was run"]
    assert missing_tools(["omp"], which=lambda t: False) == []
    assert [LAUNCHERS[n].tools for n in ("numactl", "taskset", "aprun", "omp")] == \
        [("numactl",), ("taskset",), ("aprun",), ()]
