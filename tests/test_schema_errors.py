"""schema.check: what a wrong study or platform file is told, word for word, and the
defaults it fills in (the study as the workflow then sees it)."""
import pytest

import numaplace.kinds
import numaplace.plan.launch
from numaplace import ConfigError
from numaplace.core import schema
from numaplace.core.schema import check, validate_platform, validate_study

BASE = {"study": "s", "platform": "x4600", "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}]}]}


@pytest.mark.parametrize("data, name", [([1, 2], "list"), ("study: s", "str"), (None, "NoneType")])
def test_not_a_mapping(data, name):
    with pytest.raises(ConfigError) as e:
        validate_study(data, "s.yaml")
    assert str(e.value) == f"s.yaml: (top level): expected a mapping of settings, got {name}"
    assert (e.value.where, e.value.entry) == ("s.yaml", "(top level)")


def test_defaults_are_filled_in():
    d = validate_study({**BASE}, "s.yaml")
    assert d["repetitions"] == 3 and d["benchmarks"] == ["cg", "mg"] and d["classes"] == ["S"]
    assert d["variants"] == ["default"] and d["platform"] == "x4600"


ONE_OF = "a placement gives exactly one of cpus, layout, compact, spread, unpinned, sweep, matrix or contention"


@pytest.mark.parametrize("placement, entry, problem", [
    ({"cpus": "0-1", "layout": "2"}, "experiments[0].placements[0]", "gives cpus, layout: " + ONE_OF),
    ({"layout": "2/x"}, "experiments[0].placements[0].layout",
     "'2/x' is not a layout like '2/2' (threads per node, separated by /)"),
    # a placement is one of seven kinds: say which, not "not valid under any of the given schemas"
    ({}, "experiments[0].placements[0]", ONE_OF),
    ({"nodes": "0-1"}, "experiments[0].placements[0]", ONE_OF),
])
def test_placement_errors(placement, entry, problem):
    bad = {**BASE, "experiments": [{"name": "e", "placements": [placement]}]}
    with pytest.raises(ConfigError) as e:
        validate_study(bad, "s.yaml")
    assert e.value.entry == entry
    assert e.value.problem == problem


def test_memory_spec_error_points_into_the_spec():
    bad = {**BASE, "experiments": [{"name": "e", "placements": [{"cpus": "0-1"}], "memory": [{"membind": "a"}]}]}
    with pytest.raises(ConfigError) as e:
        validate_study(bad, "s.yaml")
    assert e.value.entry == "experiments[0].memory[0]"


def test_platform_check():
    ok = {"name": "p", "nodes": [{"id": 0, "cpus": "0-1"}]}
    assert validate_platform(ok, "p.yaml") is ok
    with pytest.raises(ConfigError) as e:
        check({"name": "p"}, "platform", "p.yaml")
    assert str(e.value) == "p.yaml: (top level): 'nodes' is a required property"


# -- one mistake a user makes, and the line that tells them what to write instead ----------
# Word for word, for studies and platforms; the hints given only where they apply, a long
# message cut, the defaults filled in. Several pin what the mutation run left alive
# (tests/benchmarks/mutation-survivors.md).

# the registries name the schema's benchmarks, launchers and memory policies when imported
REGISTRIES = (numaplace.kinds, numaplace.plan.launch)

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
                                         "local, {interleave: nodes}, {membind: nodes}, {preferred: node}, "
                                         "{weighted-interleave: nodes} or {preferred-many: nodes}"),
    ({**BASE, "study": "a..b"}, "study: 'a..b' is not a usable name (1-64 letters, digits, _ . -, not starting "
                                "with . or -, without '..')"),
    ({**BASE, "zzz": 1, "aaa": 2, "mmm": 3, "bbb": 4}, "(top level): unknown key: Additional properties are not "
                                                       "allowed ('aaa', 'bbb', 'mmm' was unexpected)"),
    ({**BASE, "benchmarks": ["mg", "cg", "cg"]}, "benchmarks: lists 'cg' twice"),
    ({**BASE, "experiments": []}, "experiments: needs at least one entry"),
    ({**BASE, "benchmarks": ["lu"]}, "benchmarks[0]: 'lu' is not one of cg, mg, membw, memlat, loadlat, ep, is, ft, "
                                                  "stream"),
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


@pytest.mark.parametrize("data, line", [
    # a list of types is named in full, "or" between them, with the true/false hint
    (experiment(args=[True]), "experiments[0].args[0]: expected text or a number, got True (true/false is not a number)"),
    (experiment(args=[[1]]), "experiments[0].args[0]: expected text or a number, got [1]"),
    # true/false where a (non-whole) number is wanted gets the hint too
    ({**BASE, "run": {"timeout": True}}, "run.timeout: expected a number, got True (true/false is not a number)"),
    # the decimal-point hint only for a float where a whole number is wanted
    ({**BASE, "limits": {"runs": "5"}}, "limits.runs: expected a whole number, got '5'"),
    ({**BASE, "study": 2.5}, "study: expected text, got 2.5"),
], ids=["args-bool", "args-list", "timeout-bool", "runs-text", "study-float"])
def test_type_mistakes_name_every_type_and_hint_only_when_it_applies(data, line):
    """Type errors: every allowed type named, joined by "or"; each hint only where it fits."""
    assert told(validate_study, data) == "f.yaml: " + line


@pytest.mark.parametrize("data, line", [
    ({**BASE, "repetitions": {"alpha": 0.1}}, "repetitions: adaptive repetitions need min and max: {min: 4, max: 12} "
                                              "(alpha optional, default 0.05)"),
    ({**BASE, "repetitions": {"min": 2}}, "repetitions: adaptive repetitions need max: {min: 4, max: 12} "
                                          "(alpha optional, default 0.05)"),
], ids=["no-min-no-max", "no-max"])
def test_adaptive_repetitions_name_the_missing_keys(data, line):
    """An adaptive `repetitions` mapping without min/max says which keys to add, and how."""
    assert told(validate_study, data) == "f.yaml: " + line


@pytest.mark.parametrize("data, line", [
    # an empty row has no bad character: it is said to hold no hop counts (no crash)
    ({**PLATFORM, "hops": [""]}, f"hops[0]: '' is not a row of hop counts (no hop counts): write {HOP_FORMS}"),
    ({**PLATFORM, "hops": ["0X"]}, f"hops[0]: '0X' is not a row of hop counts ('X' is not a digit): write {HOP_FORMS}"),
    # 24 is allowed: the count at fault is the 25 after it
    ({**PLATFORM, "hops": [[24, 25]]}, f"hops[0]: hop count 25 (position 1) is not a whole number 0-24; a row is {HOP_FORMS}"),
], ids=["empty", "upper-X", "24-then-25"])
def test_hop_row_mistakes_name_the_fault(data, line):
    """A hop row that is neither form: the character or count at fault, or that it holds none."""
    assert told(validate_platform, data) == "f.yaml: " + line


def test_hop_advice_only_for_hop_rows():
    """The hop-row advice is for platform hop rows only: other either-or settings (budget,
    thread counts) are told what their own value should be."""
    assert told(validate_study, {**BASE, "budget": "2 days"}).startswith(
        "f.yaml: budget: '2 days': the unit 'days' is not allowed (min or h)")
    assert told(validate_study, placement({"compact": ["x"]})) == \
        "f.yaml: experiments[0].placements[0].compact[0]: expected a whole number, got 'x'"


def test_node_list_advice_only_for_a_placement_nodes():
    """A platform's `nodes` (its node table) is not a placement's node list: an empty one is
    told it needs an entry, not to write node ids or all-choices."""
    assert told(validate_platform, {**PLATFORM, "nodes": []}) == "f.yaml: nodes: needs at least one entry"


def test_a_long_message_is_cut_at_200_characters():
    """jsonschema quotes the value in full: a 162-digit number makes a 201-character message,
    shown as its first 200 characters and '…'."""
    n = 10 ** 161
    whole = f"{n} is greater than the maximum of 1000000"
    assert len(whole) == 201
    assert told(validate_study, {**BASE, "limits": {"runs": n}}) == f"f.yaml: limits.runs: {whole[:200]}…"
    # and one shorter than 200 is shown whole
    assert told(validate_study, {**BASE, "limits": {"runs": 10 ** 159}}) == \
        f"f.yaml: limits.runs: {10 ** 159} is greater than the maximum of 1000000"


def test_a_message_of_exactly_200_characters_is_shown_whole():
    """A message of exactly 200 characters is not cut, so it gets no '…' (it did: `< 200`)."""
    n = 10 ** 160
    whole = f"{n} is greater than the maximum of 1000000"
    assert len(whole) == 200
    assert told(validate_study, {**BASE, "limits": {"runs": n}}) == f"f.yaml: limits.runs: {whole}"


@pytest.fixture
def fresh_defaults():
    """The defaults worked out afresh from the schema file, as a new process does (they are
    cached per section: an earlier test's reading must not stand in for this one's)."""
    schema._defaults.cache_clear()
    yield
    schema._defaults.cache_clear()


def test_defaults_of_the_top_level_and_of_a_section_given_by_reference(fresh_defaults):
    """defaults() with no section is the study's top-level keys; the fidelity section is a
    $ref to $defs/fidelity in the schema, and its thresholds are read from there."""
    top = schema.defaults()
    assert {k: top[k] for k in ("platform", "benchmarks", "classes", "variants", "repetitions")} == \
        {"platform": "auto", "benchmarks": ["cg", "mg"], "classes": ["S"], "variants": ["default"], "repetitions": 3}
    fid = schema.defaults("fidelity")
    assert fid["memory_share_min"] == 0.9 and fid["interleave_tolerance"] == 0.1
    assert fid["migration_moved_max"] == 0.05 and fid["memory_cell_share_min"] == 0.99
    assert schema.Section("fidelity").whole() == fid


def test_of_several_mistakes_the_first_entry_is_told():
    """A study with two wrong entries is told about the first by entry name (benchmarks
    before study), whatever order the schema checks them in: the same file always gets
    the same line."""
    assert told(validate_study, {**BASE, "study": True, "benchmarks": "cg"}) == \
        "f.yaml: benchmarks: expected a list, got 'cg'"


BUDGET = ('give a positive duration of at most 1000000 minutes: minutes as a number (90) or text with the unit '
          'min or h ("90 min", "1.5 h")')


@pytest.mark.parametrize("budget, line", [
    (0, "0 is not positive: " + BUDGET), (0.0, "0.0 is not positive: " + BUDGET),
    (2000000, "2000000 is more than 1000000 minutes: " + BUDGET),
    ("90 s", "'90 s': the unit 's' is not allowed (min or h); " + BUDGET),
    ("-5 min", "'-5 min' is negative: " + BUDGET), ("soon", "'soon' is not a duration: " + BUDGET),
    (True, "expected " + BUDGET[5:] + ", got True"),
], ids=["zero", "zero-float", "too-long", "seconds", "negative", "word", "bool"])
def test_a_budget_that_is_no_duration_says_what_is_wrong_with_it(budget, line):
    """A zero budget is not positive; seconds are no unit a budget takes (min or h): each said as such."""
    assert told(validate_study, {**BASE, "budget": budget}) == "f.yaml: budget: " + line


def test_a_boolean_and_a_node_id_key_are_asked_for_in_words():
    assert told(validate_study, placement({"layout": "1/1", "distinct": "yes"})) == \
        "f.yaml: experiments[0].placements[0].distinct: expected true or false, got 'yes'"
    assert told(validate_platform, {**PLATFORM, "firmware": {"hmat": {"x": {}}}}) == \
        "f.yaml: firmware.hmat: 'x' is not a CPU or node list like '0-3,8' (numbers of at most 7 digits)"


def test_an_entry_names_list_positions_from_zero_and_escapes_long_keys():
    """Keys over 40 characters are quoted as a message quotes them: a newline in one never breaks the line."""
    assert schema._entry(["experiments", 0, "placements", 2]) == "experiments[0].placements[2]"
    assert schema._entry(["x", "a\n" + "b" * 45, 3]) == "x.a\\n" + "b" * 45 + "[3]"
    assert schema._entry(["x", "a\n" + "b" * 37]) == "x.a\n" + "b" * 37           # 40 characters: as given
    assert schema._entry([]) == "(top level)" and schema._entry([0]) == "[0]"


def test_a_section_is_its_given_settings_over_the_schemas_defaults():
    """What a study sets wins; the schema fills in only what it leaves out (the plan's run params carry them)."""
    run = schema.Section("run", {"timeout": 99})
    assert run["timeout"] == 99 and run.whole()["timeout"] == 99
    assert run.whole() == {**schema.defaults("run"), "timeout": 99}
    assert schema.Section("limits").whole() == {"repetitions": 1000, "runs": 20000, "threads": 4096, "cpu_id": 8191,
                                                "choices": 5000, "symmetries": 5000}
    assert all(v is not None for sec in (None, "run", "capture", "npb", "figures", "rounds")
               for v in schema.defaults(sec).values())


def test_the_largest_value_a_study_may_raise_a_limit_to_is_the_schemas_maximum():
    assert schema.maximum("limits", "runs") == 1_000_000 and schema.maximum("limits", "cpu_id") == 1_048_575
    assert schema.maximum("figures", "dpi") == 1200 and schema.maximum("figures", "width") == 100


def test_an_experiments_setting_wins_over_the_studys_which_wins_over_the_default():
    study = {"repetitions": 5, "classes": ["A"]}
    assert schema.setting("repetitions", study, {"name": "e", "repetitions": 2}) == 2
    assert schema.setting("repetitions", study, {"name": "e"}) == 5
    assert schema.setting("classes", study, None) == ["A"]
    assert schema.setting("benchmarks", study, {"name": "e"}) == ["cg", "mg"]
    assert schema.setting("variants", {}, {}) == ["default"] and schema.setting("nothing", {}, {"x": 1}) is None


def test_a_list_naming_an_entry_twice_names_the_repeated_one():
    """['cg', 'mg', 'cg'] repeats cg, not mg (the one seen last before it)."""
    assert told(validate_study, {**BASE, "benchmarks": ["cg", "mg", "cg"]}) == "f.yaml: benchmarks: lists 'cg' twice"
