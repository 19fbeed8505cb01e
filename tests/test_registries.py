"""Launchers and benchmark kinds are registered once (numaplace.plan.launch, numaplace.kinds);
the study and platform schemas must offer exactly the registered names."""
from numaplace.kinds import KINDS
from numaplace.plan.launch import LAUNCHERS
from numaplace.core.schema import _schema


def enums_under(node, key, found=None):
    """Every enum list reached from a property named `key` (directly or as array items)."""
    found = [] if found is None else found
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key and isinstance(v, dict):
                target = v.get("items", v)
                if "enum" in target:
                    found.append(sorted(map(str, target["enum"])))
            enums_under(v, key, found)
    elif isinstance(node, list):
        for v in node:
            enums_under(v, key, found)
    return found


def test_schemas_offer_exactly_the_registered_launchers():
    for name in ("study", "platform"):
        enums = enums_under(_schema(name), "launcher")
        assert enums and all(e == sorted(LAUNCHERS) for e in enums), (name, enums)


def test_study_schema_offers_exactly_the_registered_kinds_classes_and_variants():
    study = _schema("study")
    assert {tuple(e) for e in enums_under(study, "benchmarks")} == {tuple(sorted(KINDS))}
    classes = sorted({c for k in KINDS.values() for c in k.classes})
    variants = sorted({v for k in KINDS.values() for v in k.variants})
    assert {tuple(e) for e in enums_under(study, "classes")} == {tuple(classes)}
    assert {tuple(e) for e in enums_under(study, "variants")} == {tuple(variants)}


def test_every_launcher_has_a_distinct_short_id():
    shorts = [launcher.short for launcher in LAUNCHERS.values()]
    assert all(shorts) and len(set(shorts)) == len(shorts)
