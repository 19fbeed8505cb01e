"""JSON-schema checks for study and platform files, with errors that name the entry.

Defaults are filled in through snakemake.utils.validate, the workflow's usual path;
messages come from jsonschema's own error (path + reason) so the user sees which entry
of which file is wrong.
"""
from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from . import ConfigError

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


def _schema(name):
    return yaml.safe_load((SCHEMA_DIR / f"{name}.schema.yaml").read_text())


def _entry(path):
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _explain(err):
    # oneOf/anyOf failures: report the most specific sub-error
    if err.context:
        best = jsonschema.exceptions.best_match(err.context)
        if best is not None and len(best.absolute_path) >= len(err.absolute_path):
            return best
    return err


def check(data, name, where):
    schema = _schema(name)
    if not isinstance(data, dict):
        raise ConfigError(where, "(top level)", f"expected a mapping of settings, got {type(data).__name__}")
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        err = _explain(errors[0])
        msg = err.message
        if err.validator == "pattern":
            msg = f"{err.instance!r} is not allowed here (characters outside {err.validator_value})"
        elif err.validator == "additionalProperties":
            msg = f"unknown key: {msg}"
        raise ConfigError(where, _entry(err.absolute_path), msg)
    from snakemake.utils import validate
    validate(data, str(SCHEMA_DIR / f"{name}.schema.yaml"), set_default=True)
    return data


def validate_study(data, where):
    return check(data, "study", where)


def validate_platform(data, where):
    return check(data, "platform", where)
