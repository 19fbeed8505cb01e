"""The bounds on what multiplies a plan (numaplace.core.limits): the defaults a study gets,
a study's own `limits:`, and the refusal that names the limit and the key that raises it."""
from __future__ import annotations

import pytest

from numaplace import ConfigError
from numaplace.core import limits

pytestmark = pytest.mark.unit

DEFAULTS = {"repetitions": 1000, "runs": 20000, "threads": 4096, "cpu_id": 8191, "choices": 5000, "symmetries": 5000}


def test_a_study_gets_the_schemas_limits_with_its_own_in_their_place():
    """What a study may plan without asking: README's numbers; a study's own limits replace only theirs."""
    assert limits.of({}) == DEFAULTS
    assert limits.of({"limits": None}) == DEFAULTS
    assert limits.of({"limits": {"runs": 50000, "threads": 8}}) == {**DEFAULTS, "runs": 50000, "threads": 8}


def test_a_value_at_the_limit_passes_and_one_above_is_refused_naming_the_limit():
    lim = limits.of({"limits": {"runs": 100}})
    limits.check("s.yaml", "experiments", "planned runs", 100, "runs", lim)        # exactly the limit: planned
    with pytest.raises(ConfigError) as e:
        limits.check("s.yaml", "experiments", "planned runs", 101, "runs", lim)
    assert str(e.value) == ("s.yaml: experiments: planned runs: 101, above numaplace's limit of 100 "
                            "(runs; a study that needs more sets `limits: {runs: 101}`)")


def test_a_need_past_the_schemas_ceiling_says_the_most_a_study_may_raise_it_to():
    """Above the schema's maximum, `limits: {runs: <needed>}` would itself be refused: say the ceiling."""
    assert limits.hint("runs", 1_000_000) == "(runs; a study that needs more sets `limits: {runs: 1000000}`)"
    assert limits.hint("runs", 1_000_001) == ("(runs; a study may raise it to at most 1000000: "
                                              "`limits: {runs: 1000000}`)")
    assert limits.hint("cpu_id", 1_048_576) == ("(cpu_id; a study may raise it to at most 1048575: "
                                                "`limits: {cpu_id: 1048575}`)")
    assert limits.hint("threads", 5000) == "(threads; a study that needs more sets `limits: {threads: 5000}`)"


def test_a_refusal_names_what_its_value_the_limit_and_the_key():
    with pytest.raises(ConfigError) as e:
        limits.check("p.yaml", "experiments[0] (e).placements[0].compact", "threads", 5000, "threads", DEFAULTS)
    assert (e.value.where, e.value.entry) == ("p.yaml", "experiments[0] (e).placements[0].compact")
    assert e.value.problem == ("threads: 5000, above numaplace's limit of 4096 "
                               "(threads; a study that needs more sets `limits: {threads: 5000}`)")
    limits.check("p.yaml", "x", "threads", 4096, "threads", DEFAULTS)
