"""JSON-schema checks for study and platform files, with errors that name the entry.

Types are strict (an integer is neither 2.0 nor true). Defaults are filled in through
snakemake.utils.validate, the workflow's usual path. Messages say what to write instead
(`membind needs a non-empty list of node ids ...`), not which schema branch failed.
"""
from __future__ import annotations

import importlib

from functools import lru_cache
from pathlib import Path

import yaml

from numaplace import ConfigError
from numaplace.core.loader import shown

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


def _is_integer(checker, value):
    # jsonschema counts 2.0 as an integer (and Python counts True as 1): a study may not
    return isinstance(value, int) and not isinstance(value, bool)


@lru_cache(maxsize=1)
def _strict_validator():
    # imported here: the runner reads defaults() on every measured run, and importing
    # jsonschema alone costs more than the whole launch is allowed to (issue 14)
    import jsonschema
    return jsonschema.validators.extend(
        jsonschema.Draft202012Validator,
        type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))

TYPE_WORDS = {"integer": "a whole number", "number": "a number", "string": "text",
              "array": "a list", "object": "a mapping (key: value)", "boolean": "true or false",
              "null": "nothing"}
NAME_RULE = "1-64 letters, digits, _ . -, not starting with . or -, without '..'"
PLACEMENT_FORMS = ("cpus", "layout", "compact", "spread", "unpinned", "sweep", "matrix", "contention")


# Words whose values live in a registry, not in the schema files: the files refer to
# $defs/<word>; the registry's module names the values when it is imported (benchmark,
# class, variant: numaplace.kinds; launcher, memory_policy: numaplace.plan.launch).
WORDS: dict[str, tuple] = {}
# the module whose import names each word's values (its registry)
WORD_OWNERS = {"benchmark": "numaplace.kinds", "class": "numaplace.kinds", "variant": "numaplace.kinds",
               "launcher": "numaplace.plan.launch", "memory_policy": "numaplace.plan.launch"}


def register_words(word, values):
    WORDS[word] = tuple(values)
    _schema.cache_clear()


# The memory policies (numaplace.plan.launch.MemoryPolicy, registered when it is imported):
# each gives its branch of the study schema's `memory` and its own refusal messages; the
# schema file's `memory` is only a placeholder that any one-key mapping passes.
MEMORY: dict = {}


def register_memory(policies):
    MEMORY.clear()
    MEMORY.update(policies)
    _schema.cache_clear()


def memory_forms():
    forms = [m.form for m in MEMORY.values()]
    return ", ".join(forms[:-1]) + " or " + forms[-1] if len(forms) > 1 else "".join(forms)


@lru_cache(maxsize=None)
def schema_file(name):
    # libyaml's parser where PyYAML has it: the pure-Python one takes ~0.1 s per schema
    return yaml.load((SCHEMA_DIR / f"{name}.schema.yaml").read_text(),
                     Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 (a SafeLoader)


class RegistryNotLoaded(RuntimeError):
    """A schema checked before the registry that names its words: it would accept any."""


@lru_cache(maxsize=None)
def _schema(name):
    """The schema with the registries' words as enums."""
    schema = dict(schema_file(name))
    defs = dict(schema.get("$defs", {}))
    for word, values in WORDS.items():
        if word in defs:
            defs[word] = {"enum": list(values)}
    if "memory" in defs and MEMORY:
        defs["memory"] = {"description": defs["memory"].get("description", ""),
                          "oneOf": [m.schema() for m in MEMORY.values()]}
    return {**schema, "$defs": defs}


def _entry(path):
    out = ""
    for p in path:
        p = p if isinstance(p, int) else shown(p)[1:-1] if len(str(p)) > 40 else p
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _type_message(err):
    wanted = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
    words = " or ".join(TYPE_WORDS.get(t, t) for t in wanted)
    value = err.instance
    hint = ""
    if isinstance(value, bool):
        hint = " (true/false is not a number)" if {"integer", "number"} & set(wanted) else ""
    elif isinstance(value, float) and "integer" in wanted:
        hint = " (a whole number is written without a decimal point)"
    return f"expected {words}, got {shown(value)}{hint}"


def _memory_message(err):
    value = err.instance
    if isinstance(value, dict) and len(value) == 1:
        (name, nodes), = value.items()
        why = MEMORY[name].refusal(nodes) if name in MEMORY else None
        if why:
            return why
    return f"unknown memory policy {shown(value)}: use {memory_forms()}"


def _one_of_message(err):
    branches = err.validator_value
    if any(b.get("const") == "local" for b in branches):
        return _memory_message(err)
    if all(list(b) == ["required"] for b in branches):
        given = [k for k in PLACEMENT_FORMS if isinstance(err.instance, dict) and k in err.instance]
        return (f"gives {', '.join(given)}: " if given else "") + \
            f"a placement gives exactly one of {', '.join(PLACEMENT_FORMS[:-1])} or {PLACEMENT_FORMS[-1]}"
    return None


HOP_ROW_FORMS = ("a string of single-digit hop counts like '01122223', counts separated by "
                 "spaces like '0 1 12', or a list of whole numbers 0-24")


def _hops_message(row):
    """A platform's hop row that is neither form: say what is wrong with the string or
    the list (anyOf's best match would say "expected a list" of a string)."""
    if isinstance(row, str):
        bad = next((c for c in row if c not in "0123456789 "), None)
        why = f"{shown(bad)} is not a digit" if bad is not None else "no hop counts"
        return f"{shown(row)} is not a row of hop counts ({why}): write {HOP_ROW_FORMS}"
    if isinstance(row, list):
        for i, x in enumerate(row):
            if not (_is_integer(None, x) and 0 <= x <= 24):
                return f"hop count {shown(x)} (position {i}) is not a whole number 0-24; a row is {HOP_ROW_FORMS}"
    return f"expected a row of hop counts, got {shown(row)}: {HOP_ROW_FORMS}"


BUDGET_FORM = ('a positive duration of at most 1000000 minutes: minutes as a number (90) or text '
               'with the unit min or h ("90 min", "1.5 h")')


def _budget_message(value):
    """What is wrong with a `budget` that is neither form (anyOf's best match would say
    "expected text" of 0 and "expected a number" of "90 days")."""
    import re
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return f"expected {BUDGET_FORM}, got {shown(value)}"
    if isinstance(value, (int, float)):
        why = "is not positive" if value <= 0 else "is more than 1000000 minutes"
        return f"{shown(value)} {why}: give {BUDGET_FORM}"
    m = re.fullmatch(r"\s*([-+]?)\s*([0-9.]*)\s*([A-Za-z]*)\s*", value)
    if m and m.group(1) == "-":
        return f"{shown(value)} is negative: give {BUDGET_FORM}"
    if m and m.group(2) and m.group(3) and m.group(3) not in ("min", "h"):
        return f"{shown(value)}: the unit {shown(m.group(3))} is not allowed (min or h); give {BUDGET_FORM}"
    return f"{shown(value)} is not a duration: give {BUDGET_FORM}"


def _repetitions_message(err):
    """(entry, problem) of a `repetitions` that is neither form: a mapping is judged as the
    adaptive form {min, max, alpha} (naming the key at fault), anything else as a count."""
    from jsonschema.exceptions import best_match
    form = 1 if isinstance(err.instance, dict) else 0       # the schema's anyOf: count, mapping
    best = best_match([e for e in err.context if e.relative_schema_path and e.relative_schema_path[0] == form])
    if best is not None and best.validator == "required":
        missing = " and ".join(k for k in ("min", "max") if k not in err.instance)
        return _entry(err.absolute_path), f"adaptive repetitions need {missing}: {{min: 4, max: 12}} " \
            "(alpha optional, default 0.05)"
    return _message(best) if best is not None else (_entry(err.absolute_path), err.message)


def _pattern_message(err):
    if err.validator_value.startswith("^(?!.*[.][.])"):
        return f"{shown(err.instance)} is not a usable name ({NAME_RULE})"
    if err.validator_value.startswith(("^[0-9]{1,7}", "^ *([0-9]")):
        return f"{shown(err.instance)} is not a CPU or node list like '0-3,8' (numbers of at most 7 digits)"
    if err.validator_value.startswith("^[0-9]{1,5}(/"):
        return f"{shown(err.instance)} is not a layout like '2/2' (threads per node, separated by /)"
    return f"{shown(err.instance)} is not allowed here (characters outside {err.validator_value})"


def _message(err):
    """(entry, problem) of the first schema error, in words the user acts on."""
    entry = _entry(err.absolute_path)
    v = err.validator
    if v == "oneOf":
        msg = _one_of_message(err)
        if msg:
            return entry, msg
    if v == "anyOf" and err.absolute_path and err.absolute_path[-1] == "nodes":
        return entry, f"expected a list of node ids, a node list like '0-3', or all-choices; got {shown(err.instance)}"
    if v == "anyOf" and err.absolute_path and err.absolute_path[-1] == "cpus":
        return entry, f"{shown(err.instance)} is not a CPU list like '0-3,8'"
    if v == "anyOf" and err.absolute_path and err.absolute_path[-1] == "repetitions":
        return _repetitions_message(err)
    if v == "anyOf" and list(err.absolute_path) == ["budget"]:
        return entry, _budget_message(err.instance)
    if v == "anyOf" and len(err.absolute_path) >= 2 and err.absolute_path[-2] == "hops":
        return entry, _hops_message(err.instance)
    if err.context:         # other oneOf/anyOf: the most specific sub-error
        from jsonschema.exceptions import best_match
        best = best_match(err.context)
        if best is not None and len(best.absolute_path) >= len(err.absolute_path):
            return _message(best)
    if v == "type":
        return entry, _type_message(err)
    if v == "pattern":
        return entry, _pattern_message(err)
    if v == "additionalProperties":
        unknown = sorted(set(err.instance) - set(err.schema.get("properties", {})))
        return entry, "unknown key: Additional properties are not allowed " \
            f"({', '.join(shown(k) for k in unknown[:3])} was unexpected)"
    if v == "uniqueItems":
        seen, dup = [], None
        for x in err.instance:
            if x in seen:
                dup = x
                break
            seen.append(x)
        return entry, f"lists {shown(dup)} twice"
    if v == "maxLength":
        return entry, f"longer than {err.validator_value} characters"
    if v in ("minItems",) and err.validator_value == 1:
        return entry, "needs at least one entry"
    if v == "enum":
        return entry, f"{shown(err.instance)} is not one of {', '.join(map(str, err.validator_value))}"
    return entry, err.message if len(err.message) <= 200 else err.message[:200] + "…"


def check(data, name, where):
    if not isinstance(data, dict):
        raise ConfigError(where, "(top level)", f"expected a mapping of settings, got {type(data).__name__}")
    # a word no registry has named yet: its owner is imported now (registries complete
    # whatever was imported before); still unnamed is an error, never a schema that
    # accepts any value
    unnamed = sorted(w for w in WORD_OWNERS if w in schema_file(name).get("$defs", {}) and w not in WORDS)
    for owner in dict.fromkeys(WORD_OWNERS[w] for w in unnamed):
        importlib.import_module(owner)
    unnamed = [w for w in unnamed if w not in WORDS]
    if unnamed:
        raise RegistryNotLoaded(f"the {name} schema's {', '.join(unnamed)} words are not registered: "
                                "import numaplace.kinds and numaplace.plan.launch before checking it")
    validator = _strict_validator()(_schema(name))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError(where, *_message(errors[0]))
    from snakemake.utils import validate
    validate(data, str(SCHEMA_DIR / f"{name}.schema.yaml"), set_default=True)
    return data


def validate_study(data, where):
    return check(data, "study", where)


def validate_platform(data, where):
    return check(data, "platform", where)


class Section(dict):
    """One section of a study's settings (run, capture, npb, fidelity, limits, figures, ...)
    as given, with the schema's defaults for every key it does not give: the one way code
    reads a section, validated or not (a run spec, build settings). The defaults are read
    only when a key is missing (the plan's run params carry every one)."""

    def __init__(self, section, given=None):
        super().__init__(given or {})
        self.section = section

    def __missing__(self, key):
        return _defaults(self.section)[key]

    def whole(self):
        """A plain dict of every setting of the section, defaults filled in."""
        return {**_defaults(self.section), **self}


def defaults(section=None):
    """The study schema's defaults for one section (run, capture, npb, fidelity, ...), or
    with no section for the study's top-level keys: the one place they are written. Code
    that reads a section which may not have passed through the schema (a run spec written
    by hand, build settings) starts from these."""
    return dict(_defaults(section))         # a copy: callers merge into it


@lru_cache(maxsize=None)
def _defaults(section):
    # judged once per record read: worked out once per section
    return {k: v["default"] for k, v in _properties(section).items()
            if "default" in v and v["default"] is not None}


def _properties(section):
    schema = _schema("study")
    sec = schema["properties"][section] if section else schema
    if "$ref" in sec:                           # "#/$defs/<name>"
        sec = schema["$defs"][sec["$ref"].rsplit("/", 1)[1]]
    return sec.get("properties", {})


def maximum(section, key):
    """The study schema's largest allowed value of section.key, or None."""
    return _properties(section)[key].get("maximum")


def setting(key, study, experiment=None):
    """An experiment's `key`, else the study's, else the schema's default."""
    if experiment and key in experiment:
        return experiment[key]
    return study.get(key, defaults().get(key))
