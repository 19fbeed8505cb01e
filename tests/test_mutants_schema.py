"""What a wrong study or platform file is told (numaplace.core.schema), word for word.
Written against the mutants mutmut left alive (tests/benchmarks/mutation_score.sh): each
case is one mistake a user makes and the line that tells them what to write instead."""
from __future__ import annotations

import pytest

import numaplace.kinds
import numaplace.plan.launch
from numaplace import ConfigError
from numaplace.core import schema
from numaplace.core.schema import validate_platform, validate_study

pytestmark = pytest.mark.unit

# the registries name the schema's benchmarks, launchers and memory policies when imported
REGISTRIES = (numaplace.kinds, numaplace.plan.launch)

BASE = {"study": "s", "platform": "x4600", "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}]}]}
PLATFORM = {"name": "p", "nodes": [{"id": 0, "cpus": "0-1", "memory_mb": 10}]}
HOP_FORMS = ("a string of single-digit hop counts like '01122223', counts separated by spaces like "
             "'0 1 12', or a list of whole numbers 0-24")


def experiment(**kw):
    return {**BASE, "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}], **kw}]}


def placement(p):
    return {**BASE, "experiments": [{"name": "e", "placements": [p]}]}


def told(validate, data):
    with pytest.raises(ConfigError) as e:
        validate(data, "f.yaml")
    return str(e.value)


@pytest.mark.parametrize("data, line", [
    (placement({"layout": "2", "nodes": {"a": 1}}), "experiments[0].placements[0].nodes: expected a list of node "
     "ids, a node list like '0-3', or all-choices; got {'a': 1}"),
    (placement({"cpus": {"a": 1}}), "experiments[0].placements[0].cpus: {'a': 1} is not a CPU list like '0-3,8'"),
    (placement({"cpus": "0-x"}), "experiments[0].placements[0].cpus: '0-x' is not a CPU list like '0-3,8'"),
    ({**BASE, "repetitions": True}, "repetitions: expected a whole number, got True (true/false is not a number)"),
    ({**BASE, "repetitions": 2.0}, "repetitions: expected a whole number, got 2.0 (a whole number is written "
                                   "without a decimal point)"),
    ({**BASE, "study": True}, "study: expected text, got True"),
    ({**BASE, "benchmarks": "cg"}, "benchmarks: expected a list, got 'cg'"),
    (experiment(memory=[{"membind": [1, 0, 0]}]), "experiments[0].memory[0]: membind lists node 0 twice"),
    (experiment(memory=[{"interleave": [1, 1]}]), "experiments[0].memory[0]: interleave lists node 1 twice"),
    (experiment(memory=[{"membind": []}]), "experiments[0].memory[0]: membind needs a non-empty list of node "
                                           "ids, or a node list like '0-3' (got [])"),
    (experiment(memory=[{"interleave": []}]), "experiments[0].memory[0]: interleave needs a non-empty list of "
                                              "node ids, or a node list like '0-3' (got [])"),
    (experiment(memory=[{"preferred": [0, 1]}]), "experiments[0].memory[0]: preferred needs one node id (got [0, 1])"),
    (experiment(memory=[{"bind": [0]}]), "experiments[0].memory[0]: unknown memory policy {'bind': [0]}: use "
                                         "local, {interleave: nodes}, {membind: nodes} or {preferred: node}"),
    ({**BASE, "study": "a..b"}, "study: 'a..b' is not a usable name (1-64 letters, digits, _ . -, not starting "
                                "with . or -, without '..')"),
    ({**BASE, "zzz": 1, "aaa": 2, "mmm": 3, "bbb": 4}, "(top level): unknown key: Additional properties are not "
                                                       "allowed ('aaa', 'bbb', 'mmm' was unexpected)"),
    ({**BASE, "benchmarks": ["mg", "cg", "cg"]}, "benchmarks: lists 'cg' twice"),
    ({**BASE, "experiments": []}, "experiments: needs at least one entry"),
    ({**BASE, "benchmarks": ["lu"]}, "benchmarks[0]: 'lu' is not one of cg, mg, membw, memlat, loadlat, stream"),
    ({**BASE, "description": "d" * 4001}, "description: longer than 4000 characters"),
    ({**BASE, "npb": {"fc": "gfortran;rm"}}, "npb.fc: 'gfortran;rm' is not allowed here (characters outside "
                                            "^[A-Za-z0-9_./+-]+$)"),
], ids=lambda x: x if isinstance(x, str) and len(x) < 30 else None)
def test_study_mistakes(data, line):
    assert told(validate_study, data) == "f.yaml: " + line


@pytest.mark.parametrize("data, line", [
    ({**PLATFORM, "hops": ["0x"]}, f"hops[0]: '0x' is not a row of hop counts ('x' is not a digit): write {HOP_FORMS}"),
    ({**PLATFORM, "hops": [[0, 25]]}, f"hops[0]: hop count 25 (position 1) is not a whole number 0-24; a row is {HOP_FORMS}"),
    ({**PLATFORM, "hops": [[0, -1]]}, f"hops[0]: hop count -1 (position 1) is not a whole number 0-24; a row is {HOP_FORMS}"),
    ({**PLATFORM, "hops": [[0, 2.0]]}, f"hops[0]: hop count 2.0 (position 1) is not a whole number 0-24; a row is {HOP_FORMS}"),
    ({**PLATFORM, "hops": [{"a": 1}]}, f"hops[0]: expected a row of hop counts, got {{'a': 1}}: {HOP_FORMS}"),
    ({**PLATFORM, "nodes": [{"id": 0, "cpus": "0-x", "memory_mb": 1}]}, "nodes[0].cpus: '0-x' is not a CPU list like '0-3,8'"),
    ({**PLATFORM, "name": "a..b"}, "name: 'a..b' is not a usable name (1-64 letters, digits, _ . -, not starting with "
                                   ". or -, without '..')"),
    ({**PLATFORM, "cluster": {"partition": "a b"}}, "cluster.partition: 'a b' is not allowed here (characters "
                                                    "outside ^[A-Za-z0-9_.-]*$)"),
])
def test_platform_mistakes(data, line):
    assert told(validate_platform, data) == "f.yaml: " + line


def test_hop_rows_at_the_limits_are_accepted():
    validate_platform({**PLATFORM, "hops": [[24]]}, "f.yaml")
    validate_platform({**PLATFORM, "hops": ["0"]}, "f.yaml")


def test_a_word_registered_later_is_one_the_schema_accepts():
    """The launcher and memory-policy words come from their registries when the schema is
    built: a launcher registered later (a site's own) is accepted, and named in the error."""
    old = schema.WORDS["launcher"]
    try:
        schema.register_words("launcher", [*old, "srun"])
        validate_study({**BASE, "launcher": "srun"}, "f.yaml")
        assert told(validate_study, {**BASE, "launcher": "mpirun"}) == \
            f"f.yaml: launcher: 'mpirun' is not one of {', '.join([*old, 'srun'])}"
    finally:
        schema.register_words("launcher", old)
    assert "srun" not in told(validate_study, {**BASE, "launcher": "mpirun"})
