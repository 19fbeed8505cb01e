"""Bounds on everything that multiplies a study's plan, so that planning a mistyped or
hostile study stays within seconds and megabytes.

Each limit has a name; a study that really needs more raises it in its own file:
    limits: {runs: 50000}
and every refusal names the limit and that key.
"""
from __future__ import annotations

from numaplace import ConfigError


def of(config):
    """The study's limits: the schema's defaults, raised or lowered by its `limits:` section."""
    from numaplace.core.schema import Section
    return Section("limits", config.get("limits")).whole()


def hint(name, needed):
    from numaplace.core.schema import maximum
    ceiling = maximum("limits", name)
    if ceiling is not None and needed > ceiling:
        return f"({name}; a study may raise it to at most {ceiling}: `limits: {{{name}: {ceiling}}}`)"
    return f"({name}; a study that needs more sets `limits: {{{name}: {needed}}}`)"


def refuse(where, entry, what, value, name, limit):
    raise ConfigError(where, entry, f"{what}: {value}, above numaplace's limit of {limit} "
                      + hint(name, value))


def check(where, entry, what, value, name, limits):
    if value > limits[name]:
        refuse(where, entry, what, value, name, limits[name])
