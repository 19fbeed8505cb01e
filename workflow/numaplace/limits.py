"""Bounds on everything that multiplies a study's plan, so that planning a mistyped or
hostile study stays within seconds and megabytes.

Each limit has a name; a study that really needs more raises it in its own file:
    limits: {runs: 50000}
and every refusal names the limit and that key.
"""
from __future__ import annotations

from . import ConfigError

DEFAULTS = {
    "repetitions": 1000,     # repetitions of one placement
    "runs": 20000,           # measured runs in the whole plan
    "threads": 4096,         # threads of one placement (compact/spread/threads/layout sum)
    "cpu_id": 8191,          # largest CPU or node id (Linux's largest NR_CPUS is 8192)
    "choices": 5000,         # node choices of one `nodes: all-choices` layout
    "symmetries": 5000,      # node permutations kept by `distinct: true`
}


def of(config):
    """The study's limits: the defaults, raised or lowered by its `limits:` section."""
    return {**DEFAULTS, **(config.get("limits") or {})}


def hint(name, needed):
    return f"({name}; a study that needs more sets `limits: {{{name}: {needed}}}`)"


def refuse(where, entry, what, value, name, limit):
    raise ConfigError(where, entry, f"{what}: {value}, above numaplace's limit of {limit} "
                      + hint(name, value))


def check(where, entry, what, value, name, limits):
    if value > limits[name]:
        refuse(where, entry, what, value, name, limits[name])
