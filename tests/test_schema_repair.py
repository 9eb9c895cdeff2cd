"""Behaviour of schema-aligned repair (llmfix.schema.repair)."""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis_jsonschema import from_schema

from llmfix.deadline import Deadline, OutOfTime
from llmfix.model import Risk, Severity
from llmfix.schema.coercers import COERCERS
from llmfix.schema.context import FIXERS
from llmfix.schema.repair import RULES, SchemaRepairOutcome, coerce_to_schema
from llmfix.schema.walk import JSON_TYPES

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT7 = "http://json-schema.org/draft-07/schema#"


def _load_corpus_script() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "scripts" / "schema_corpus.py"
    spec = importlib.util.spec_from_file_location("schema_corpus", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("schema_corpus", module)
    spec.loader.exec_module(module)
    return module


corpus = _load_corpus_script()
corpus.install_hypothesis_jsonschema_shim()


def canonical(value: Any) -> str:
    """JSON text that tells 1, 1.0 and true apart."""
    return json.dumps(value, sort_keys=True)


def repair(value: Any, schema: Any, **options: Any) -> SchemaRepairOutcome:
    """coerce_to_schema, checking what must hold for every call: the input is not mutated
    and applying the patch to the input with jsonpatch gives exactly the output."""
    before = copy.deepcopy(value)
    outcome = coerce_to_schema(value, schema, **options)
    assert canonical(value) == canonical(before), "input was mutated"
    applied = jsonpatch.apply_patch(before, [op.to_json_patch() for op in outcome.patch])
    assert canonical(applied) == canonical(outcome.value), "patch does not reproduce the output"
    return outcome


def obj(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **extra}
    if required is not None:
        schema["required"] = required
    return schema


INT = {"type": "integer"}
NUM = {"type": "number"}
STR = {"type": "string"}
BOOL = {"type": "boolean"}

# (id, value, schema, expected value, the one rule that fires)
POSITIVE = [
    ("number_plain", {"n": "12.5"}, obj({"n": NUM}), {"n": 12.5}, "coerce_number"),
    ("number_spaces", " 12 ", NUM, 12, "coerce_number"),
    ("number_exponent", "1e3", NUM, 1000.0, "coerce_number"),
    ("number_thousand_groups", "1,234,567", NUM, 1234567, "coerce_number"),
    ("number_thousands_and_decimals", "12,111.5", NUM, 12111.5, "coerce_number"),
    ("integer_thousands", "12,111", INT, 12111, "coerce_number"),
    (
        "percent_max_100",
        "87%",
        {"type": "number", "minimum": 0, "maximum": 100},
        87,
        "coerce_percent",
    ),
    (
        "percent_max_1",
        "87%",
        {"type": "number", "minimum": 0, "maximum": 1},
        0.87,
        "coerce_percent",
    ),
    ("percent_integer", "87 %", INT, 87, "coerce_percent"),
    ("fraction_ratio", "1/5", NUM, 0.2, "coerce_fraction"),
    ("fraction_out_of_max", "7/10", {"type": "integer", "maximum": 10}, 7, "coerce_fraction"),
    (
        "integer_from_float_draft4",
        12.0,
        {"$schema": DRAFT4, "type": "integer"},
        12,
        "coerce_integer",
    ),
    ("integer_from_numeral", "12", INT, 12, "coerce_integer"),
    ("integer_from_integral_numeral", "12.0", INT, 12, "coerce_integer"),
    ("string_from_integer", 12, STR, "12", "coerce_string"),
    ("string_from_float", 2.5, STR, "2.5", "coerce_string"),
    ("string_from_boolean", True, STR, "true", "coerce_string"),
    ("boolean_yes", "Yes", BOOL, True, "coerce_boolean"),
    ("boolean_false_upper", "FALSE", BOOL, False, "coerce_boolean"),
    ("boolean_zero_string", "0", BOOL, False, "coerce_boolean"),
    ("boolean_one", 1, BOOL, True, "coerce_boolean"),
    ("null_none", "None", {"type": ["integer", "null"]}, None, "coerce_null"),
    ("null_na_in_anyof", "N/A", {"anyOf": [NUM, {"type": "null"}]}, None, "coerce_null"),
    ("null_empty", "", {"type": ["integer", "null"]}, None, "coerce_null"),
    ("wrap_scalar", "red", {"type": "array", "items": STR}, ["red"], "wrap_array"),
    (
        "wrap_object",
        {"name": "a"},
        {"type": "array", "items": obj({"name": STR}, ["name"])},
        [{"name": "a"}],
        "wrap_array",
    ),
    ("wrap_non_json_string", "[a, b]", {"type": "array", "items": STR}, ["[a, b]"], "wrap_array"),
    ("unwrap_single", ["red"], STR, "red", "unwrap_array"),
    ("unwrap_single_object", [{"a": 1}], obj({"a": INT}, ["a"]), {"a": 1}, "unwrap_array"),
    (
        "parse_object_string",
        {"summary": '{"verdict": "ok"}'},
        obj({"summary": obj({"verdict": STR}, ["verdict"])}),
        {"summary": {"verdict": "ok"}},
        "parse_json_string",
    ),
    (
        "parse_array_string",
        '["a", "b"]',
        {"type": "array", "items": STR},
        ["a", "b"],
        "parse_json_string",
    ),
    ("unwrap_object", {"result": {"a": 1}}, obj({"a": INT}, ["a"]), {"a": 1}, "unwrap_object"),
    ("enum_case", "Complete", {"enum": ["complete", "in_progress"]}, "complete", "enum_case"),
    (
        "enum_spaces",
        "In Progress",
        {"type": "string", "enum": ["not_started", "in_progress", "complete"]},
        "in_progress",
        "enum_case",
    ),
    ("const_case", "FOOD_CARD", {"const": "food_card"}, "food_card", "enum_case"),
    (
        "enum_nearest",
        "complette",
        {"enum": ["complete", "in_progress"]},
        "complete",
        "enum_nearest",
    ),
    (
        "rename_camel_to_snake",
        {"firstName": "Ada"},
        obj({"first_name": STR}, ["first_name"]),
        {"first_name": "Ada"},
        "rename_key_case",
    ),
    (
        "rename_snake_to_camel",
        {"first_name": "Ada"},
        obj({"firstName": STR}, ["firstName"]),
        {"firstName": "Ada"},
        "rename_key_case",
    ),
    (
        "rename_when_extra_forbidden",
        {"Note": "x"},
        obj({"note": STR}, additionalProperties=False),
        {"note": "x"},
        "rename_key_case",
    ),
    (
        "rename_fuzzy",
        {"reasonning": "x"},
        obj({"reasoning": STR}, ["reasoning"]),
        {"reasoning": "x"},
        "rename_key_fuzzy",
    ),
    (
        "remove_additional",
        {"a": 1, "extra": 2},
        obj({"a": INT}, additionalProperties=False),
        {"a": 1},
        "remove_additional",
    ),
    (
        "fill_default",
        {},
        obj({"n": {"type": "integer", "default": 1}}, ["n"]),
        {"n": 1},
        "fill_default",
    ),
    (
        "fill_default_through_ref",
        {},
        {
            **obj({"n": {"$ref": "#/$defs/n"}}, ["n"]),
            "$defs": {"n": {"type": "integer", "default": 3}},
        },
        {"n": 3},
        "fill_default",
    ),
]


@pytest.mark.parametrize(
    ("value", "schema", "expected"),
    [case[1:4] for case in POSITIVE],
    ids=[case[0] for case in POSITIVE],
)
def test_rule_repairs_value(value: Any, schema: Any, expected: Any) -> None:
    assert canonical(repair(value, schema).value) == canonical(expected)


@pytest.mark.parametrize(
    ("value", "schema", "rule"),
    [(case[1], case[2], case[4]) for case in POSITIVE],
    ids=[case[0] for case in POSITIVE],
)
def test_rule_is_named_in_patch(value: Any, schema: Any, rule: str) -> None:
    assert [op.rule for op in repair(value, schema).patch] == [rule]


def test_every_rule_has_a_positive_case() -> None:
    assert {case[4] for case in POSITIVE} == set(RULES)


# (id, value, schema): the schema does not make the intent certain, so nothing changes.
NEGATIVE = [
    ("numeral_where_string", "12", STR),
    ("yes_where_string_or_boolean", "yes", {"type": ["string", "boolean"]}),
    ("percent_without_maximum", "87%", NUM),
    ("percent_with_unclear_maximum", "87%", {"type": "number", "maximum": 10}),
    ("decimal_comma", "12,5", NUM),
    ("single_thousands_group_for_number", "12,111", NUM),
    ("fraction_on_other_scale", "7/10", {"type": "number", "maximum": 100}),
    ("fraction_for_integer_without_max", "4/2", INT),
    ("fraction_zero_denominator", "1/0", NUM),
    ("non_integral_numeral_for_integer", "12.5", INT),
    ("non_integral_float_for_integer", 12.5, INT),
    ("word_for_number", "twelve", NUM),
    ("nan_for_number", "NaN", NUM),
    ("infinite_numeral", "1e999", NUM),
    ("boolean_word_for_integer", "true", INT),
    ("boolean_for_number", True, NUM),
    ("unknown_word_for_boolean", "maybe", BOOL),
    ("two_for_boolean", 2, BOOL),
    ("null_word_where_null_not_allowed", "null", INT),
    ("null_word_where_string_allowed", "N/A", {"type": ["string", "null"]}),
    ("null_for_string", None, STR),
    ("object_for_string", {"a": 1}, STR),
    ("number_not_in_string_enum", 12, {"type": "string", "enum": ["a", "b"]}),
    ("out_of_range_not_clamped", 150, {"type": "integer", "maximum": 100}),
    ("long_list_not_truncated", [1, 2, 3], {"type": "array", "maxItems": 2}),
    ("required_without_default", {}, obj({"a": STR}, ["a"])),
    ("required_not_declared", {}, {"type": "object", "required": ["a"]}),
    ("wrap_when_item_does_not_fit", "x", {"type": "array", "items": INT}),
    ("no_wrap_of_empty_string", "", {"type": "array", "items": STR}),
    ("no_wrap_of_null", None, {"type": "array"}),
    ("unwrap_when_element_does_not_fit", ["x"], INT),
    ("unwrap_of_longer_list", ["a", "b"], STR),
    ("unwrap_where_type_unknown", ["a"], {"minLength": 2}),
    ("not_json_string_for_object", "{verdict: ok}", {"type": "object"}),
    ("json_array_string_for_object", "[1, 2]", {"type": "object"}),
    ("unwrap_object_key_declared", {"result": {"a": 1}}, obj({"result": {}, "a": INT}, ["a"])),
    ("unwrap_object_inner_incomplete", {"result": {"a": 1}}, obj({"a": INT}, ["a", "b"])),
    ("unwrap_object_without_required", {"result": {"a": 1}}, obj({"a": INT}, minProperties=2)),
    ("enum_far_from_members", "finished", {"enum": ["complete", "in_progress"]}),
    ("enum_ambiguous_fold", "a b", {"enum": ["a_b", "a-b"]}),
    ("enum_nearest_tie", "abcdef", {"enum": ["abcdeg", "abcdeh"]}),
    ("enum_short_misspelling", "nwe", {"enum": ["new", "old"]}),
    (
        "rename_onto_existing_key",
        {"first_name": "a", "firstName": "b"},
        obj({"first_name": STR, "age": INT}, ["first_name", "age"]),
    ),
    (
        "rename_to_optional_when_extras_allowed",
        {"firstName": "a", "age": "x"},
        obj({"first_name": STR, "age": INT}),
    ),
    ("rename_short_misspelling", {"nmae": "a"}, obj({"name": STR}, ["name"])),
    (
        "rename_ambiguous_sources",
        {"firstName": "a", "FirstName": "b"},
        obj({"first_name": STR}, ["first_name"]),
    ),
    (
        "rename_key_declared_in_other_branch",
        {"firstName": "a"},
        {
            "anyOf": [
                obj({"first_name": STR}, ["first_name"], additionalProperties=False),
                obj({"firstName": INT}, ["firstName"]),
            ]
        },
    ),
    ("remove_when_extras_allowed", {"a": "x", "extra": 1}, obj({"a": INT})),
    ("unrepairable_union", "x", {"anyOf": [INT, BOOL]}),
    ("false_schema", 1, False),
]


@pytest.mark.parametrize(
    ("value", "schema"), [case[1:] for case in NEGATIVE], ids=[case[0] for case in NEGATIVE]
)
def test_rule_does_not_fire_without_certainty(value: Any, schema: Any) -> None:
    assert repair(value, schema).patch == ()


@pytest.mark.parametrize(
    ("value", "schema"), [case[1:] for case in NEGATIVE], ids=[case[0] for case in NEGATIVE]
)
def test_unrepaired_value_comes_back_equal(value: Any, schema: Any) -> None:
    assert canonical(repair(value, schema).value) == canonical(value)


# --- gating --------------------------------------------------------------------------------


def test_disabled_rule_does_not_fire() -> None:
    outcome = repair("12", INT, disabled_rules=frozenset({"coerce_integer"}))
    assert outcome.value == "12"


def test_max_risk_blocks_guesses() -> None:
    outcome = repair("87%", {"type": "number", "maximum": 100}, max_risk=Risk.SAFE)
    assert outcome.value == "87%"


def test_max_risk_keeps_safe_rules() -> None:
    assert repair("12", INT, max_risk=Risk.SAFE).value == 12


def test_max_risk_lossless_blocks_safe_rules() -> None:
    assert repair("12", INT, max_risk=Risk.LOSSLESS).patch == ()


def test_gated_fuzzy_rename_falls_back_to_nothing() -> None:
    schema = obj({"reasoning": STR}, ["reasoning"])
    assert repair({"reasonning": "x"}, schema, max_risk=Risk.SAFE).value == {"reasonning": "x"}


# --- valid input ---------------------------------------------------------------------------


def test_valid_instance_has_empty_patch() -> None:
    schema = obj({"age": INT, "tags": {"type": "array", "items": STR}}, ["age"])
    assert repair({"age": 3, "tags": ["a"]}, schema).patch == ()


def test_valid_instance_is_a_new_object() -> None:
    value = {"tags": ["a"]}
    assert repair(value, obj({"tags": {"type": "array"}})).value is not value


def test_valid_parts_of_an_invalid_value_are_untouched() -> None:
    schema = obj({"label": {"type": ["string", "integer"]}, "n": INT})
    assert repair({"label": "12", "n": "3"}, schema).value == {"label": "12", "n": 3}


def test_true_schema_changes_nothing() -> None:
    assert repair({"a": "1"}, True).patch == ()


# --- combinators ---------------------------------------------------------------------------


def test_anyof_picks_the_branch_that_validates() -> None:
    assert repair("12", {"anyOf": [INT, {"type": "null"}]}).value == 12


def test_anyof_picks_fewest_changes() -> None:
    schema = {"anyOf": [obj({"a": INT, "b": INT}), obj({"a": INT, "b": STR})]}
    assert repair({"a": "1", "b": "2"}, schema).value == {"a": 1, "b": "2"}


def test_anyof_picks_least_risky_changes() -> None:
    schema = {"anyOf": [NUM, {"type": "string", "enum": ["1-2"]}]}
    assert repair("1/2", schema).value == "1-2"


def test_oneof_discriminated_by_const() -> None:
    circle = obj({"kind": {"const": "circle"}, "r": NUM}, ["kind", "r"])
    square = obj({"kind": {"const": "square"}, "side": NUM}, ["kind", "side"])
    value = {"kind": "Circle", "r": "2"}
    assert repair(value, {"oneOf": [circle, square]}).value == {"kind": "circle", "r": 2}


def test_union_keeps_partial_fix_of_the_only_admitting_branch() -> None:
    model = obj({"a": INT, "b": STR}, ["a", "b"])
    schema = {"anyOf": [model, {"type": "null"}]}
    assert repair({"a": "1"}, schema).value == {"a": 1}


def test_allof_applies_every_member() -> None:
    schema = {"allOf": [obj({"a": INT}), obj({"b": BOOL})]}
    assert repair({"a": "1", "b": "yes"}, schema).value == {"a": 1, "b": True}


def test_type_list_picks_the_type_that_fits() -> None:
    assert repair("N/A", {"type": ["number", "null"]}).value is None


def test_if_then_else_follows_the_condition() -> None:
    schema = {
        "if": obj({"kind": {"const": "n"}}, ["kind"]),
        "then": obj({"v": INT}),
        "else": obj({"v": BOOL}),
    }
    assert repair({"kind": "n", "v": "1"}, schema).value == {"kind": "n", "v": 1}


def test_prefix_items_apply_by_position() -> None:
    schema = {"type": "array", "prefixItems": [INT, STR]}
    assert repair(["1", 2], schema).value == [1, "2"]


def test_draft4_array_form_items_apply_by_position() -> None:
    schema = {"$schema": DRAFT4, "type": "array", "items": [INT, STR], "additionalItems": BOOL}
    assert repair(["1", 2, "no"], schema).value == [1, "2", False]


def test_pattern_properties_apply() -> None:
    schema = {"type": "object", "patternProperties": {"^x": INT}}
    assert repair({"x1": "2"}, schema).value == {"x1": 2}


def test_additional_properties_schema_applies() -> None:
    schema = {"type": "object", "additionalProperties": INT}
    assert repair({"a": "2"}, schema).value == {"a": 2}


# --- ties ----------------------------------------------------------------------------------


def _codes(outcome: SchemaRepairOutcome) -> list[str]:
    return [d.code for d in outcome.diagnostics]


def test_branch_tie_keeps_first_branch() -> None:
    assert repair("1", {"anyOf": [INT, BOOL]}).value == 1


def test_branch_tie_is_reported() -> None:
    assert "repair.branch_tie" in _codes(repair("1", {"anyOf": [INT, BOOL]}))


def test_branch_tie_note_is_info_at_pointer() -> None:
    outcome = repair({"v": "1"}, obj({"v": {"anyOf": [INT, BOOL]}}))
    note = next(d for d in outcome.diagnostics if d.code == "repair.branch_tie")
    assert (note.severity, note.pointer) == (Severity.INFO, "/v")


def test_type_list_tie_is_reported() -> None:
    assert "repair.branch_tie" in _codes(repair("1", {"type": ["integer", "boolean"]}))


def test_agreeing_branches_are_not_a_tie() -> None:
    schema = {"anyOf": [INT, {"type": "integer", "minimum": 0}]}
    assert "repair.branch_tie" not in _codes(repair("5", schema))


# --- references ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}, "$defs": {"n": INT}},
        {
            "$schema": DRAFT7,
            "type": "object",
            "properties": {"n": {"$ref": "#/definitions/n"}},
            "definitions": {"n": INT},
        },
        {
            "$id": "https://example.com/root.json",
            "type": "object",
            "properties": {"n": {"$ref": "count.json"}},
            "$defs": {"count": {"$id": "count.json", "type": "integer"}},
        },
    ],
    ids=["defs", "definitions", "id_scoped"],
)
def test_local_refs_are_followed(schema: dict[str, Any]) -> None:
    assert repair({"n": "4"}, schema).value == {"n": 4}


def test_recursive_root_ref() -> None:
    schema = obj({"v": INT, "children": {"type": "array", "items": {"$ref": "#"}}})
    value = {"v": "1", "children": [{"v": "2", "children": [{"v": "3"}]}]}
    expected = {"v": 1, "children": [{"v": 2, "children": [{"v": 3}]}]}
    assert repair(value, schema).value == expected


def test_ref_in_union_keeps_root_scope() -> None:
    schema = {
        "$defs": {"Item": obj({"name": STR}, ["name"])},
        **obj({"value": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Item"}}]}}),
    }
    assert repair({"value": {"name": 5}}, schema).value == {"value": [{"name": "5"}]}


def test_external_ref_uses_resolver() -> None:
    schema = obj({"n": {"$ref": "https://example.com/int.json"}})
    resolved = repair({"n": "4"}, schema, resolver=lambda uri: {"type": "integer"})
    assert resolved.value == {"n": 4}


def test_failing_resolver_is_noted() -> None:
    def resolver(uri: str) -> Any:
        raise LookupError(uri)

    schema = obj({"n": {"$ref": "https://example.com/int.json"}, "m": INT})
    assert "repair.schema_unusable" in _codes(repair({"n": 1, "m": "x"}, schema, resolver=resolver))


def test_external_ref_without_resolver_is_left_alone() -> None:
    schema = obj({"n": {"$ref": "https://example.com/int.json"}})
    assert repair({"n": "4"}, schema).value == {"n": "4"}


def test_unresolvable_ref_is_noted() -> None:
    schema = obj({"n": {"$ref": "#/$defs/missing"}, "m": INT})
    assert "repair.schema_unusable" in _codes(repair({"n": 1, "m": "x"}, schema))


@pytest.mark.parametrize(
    ("dialect", "expected", "rules"),
    [
        # Drafts 4 to 7 ignore the siblings of "$ref": the reference alone decides.
        (DRAFT4, {"n": 4}, ["coerce_integer"]),
        (DRAFT7, {"n": 4}, ["coerce_integer"]),
        # From 2019-09 they apply too: no value is both an integer and a string.
        ("https://json-schema.org/draft/2020-12/schema", None, None),
    ],
    ids=["draft4", "draft7", "2020-12"],
)
def test_siblings_of_ref_are_ignored_where_the_draft_ignores_them(
    dialect: str, expected: Any, rules: list[str] | None
) -> None:
    schema = {
        "$schema": dialect,
        "type": "object",
        "properties": {"n": {"$ref": "#/definitions/n", "type": "string"}},
        "definitions": {"n": INT},
    }
    outcome = repair({"n": "4"}, schema)
    validator = validator_for_draft(schema)
    if expected is None:
        assert not validator.is_valid(outcome.value)
        return
    # Before the dialect's class was compared, every draft applied the siblings: "4" was read
    # as 4 for the reference, then written back as "4" for the ignored "type": string.
    assert outcome.value == expected
    assert [op.rule for op in outcome.patch] == rules
    assert validator.is_valid(outcome.value)


def validator_for_draft(schema: dict[str, Any]) -> Any:
    from jsonschema import validators

    return validators.validator_for(schema)(schema)


def test_ref_cycle_terminates() -> None:
    schema = {"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/a"}}}
    assert repair({"a": "1"}, schema).patch == ()


def test_union_ref_cycle_terminates() -> None:
    schema = {"anyOf": [{"$ref": "#"}, INT]}  # jsonschema itself cannot evaluate this
    assert "repair.schema_unusable" in _codes(repair("1", schema))


def test_deep_value_does_not_raise() -> None:
    schema = obj({"v": INT, "c": {"$ref": "#"}})
    value: dict[str, Any] = {"v": "1"}
    for _ in range(400):
        value = {"c": value, "v": 1}
    assert isinstance(repair(value, schema), SchemaRepairOutcome)


def test_broken_pattern_does_not_raise() -> None:
    schema = obj({"s": {"type": "string", "pattern": "\\p{L}+"}, "n": INT})
    assert repair({"s": "a", "n": "1"}, schema).value == {"s": "a", "n": 1}


def test_key_under_broken_pattern_property_is_kept() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^\\p{L}+$": STR},
        "additionalProperties": False,
    }
    assert repair({"abc": "x", "n": 1}, schema).patch == ()


def test_unknown_type_name_does_not_raise() -> None:
    assert repair([1], {"type": "array", "items": {"type": "bogus"}}).patch == ()


# --- deadlines ---------------------------------------------------------------------------------

_MANY_NUMERALS = ["1"] * 20_000
_INTEGERS = {"type": "array", "items": INT}


def test_deadline_stops_a_long_walk() -> None:
    with pytest.raises(OutOfTime) as caught:
        coerce_to_schema(_MANY_NUMERALS, _INTEGERS, deadline=Deadline(0.001, "schema_repair"))
    assert caught.value.stage == "schema_repair"


class _ExpiresAfter(Deadline):
    """A deadline that passes after a number of checks (to see where the walk checks)."""

    __slots__ = ("checks_left",)

    def __init__(self, checks: int) -> None:
        super().__init__(3600, "schema_repair")
        self.checks_left = checks

    def check(self) -> None:
        self.checks_left -= 1
        if self.checks_left < 0:
            raise OutOfTime(self.stage, 1.0)


def test_deadline_is_checked_inside_the_walk_not_only_on_entry() -> None:
    deadline = _ExpiresAfter(100)
    with pytest.raises(OutOfTime):
        coerce_to_schema(_MANY_NUMERALS[:1000], _INTEGERS, deadline=deadline)


def test_deadline_is_checked_at_every_node() -> None:
    deadline = _ExpiresAfter(10_000)
    coerce_to_schema(["1", "2", "3"], _INTEGERS, deadline=deadline)
    assert 10_000 - deadline.checks_left == 4  # the array and its three items


def test_deadline_with_time_left_repairs_as_without_one() -> None:
    value = ["1", "x", "3"]
    within = repair(value, _INTEGERS, deadline=Deadline(60, "schema_repair"))
    assert (within.value, within.patch) == (
        repair(value, _INTEGERS).value,
        repair(value, _INTEGERS).patch,
    )


# --- the rules table ------------------------------------------------------------------------


def test_every_rule_points_at_a_function_marked_as_carrying_it_out() -> None:
    assert [rule for rule, entry in RULES.items() if entry.fixer not in FIXERS.get(rule, [])] == []


def test_every_marked_function_carries_out_a_listed_and_documented_rule() -> None:
    from scripts.docs_reference import rules_page

    page = rules_page()  # the docs' rules page, written from llmfix.rules
    stray = [rule for rule in FIXERS if rule not in RULES or f"| `{rule}` |" not in page]
    assert stray == []


def test_there_is_a_coercer_for_every_json_type() -> None:
    assert sorted(COERCERS) == sorted(JSON_TYPES)


# --- patch and diagnostics -------------------------------------------------------------------


def test_rename_comes_before_change_of_renamed_value() -> None:
    schema = obj({"first_name": INT}, ["first_name"])
    ops = [op.to_json_patch() for op in repair({"firstName": "12"}, schema).patch]
    assert ops == [
        {"op": "move", "path": "/first_name", "from": "/firstName"},
        {"op": "replace", "path": "/first_name", "value": 12},
    ]


def test_unwrap_object_is_a_move_to_the_parent() -> None:
    ops = repair({"data": {"a": 1}}, obj({"a": INT}, ["a"])).patch
    assert [op.to_json_patch() for op in ops] == [{"op": "move", "path": "", "from": "/data"}]


def test_pointer_is_escaped() -> None:
    schema = obj({"a/b": INT, "m~n": INT})
    paths = [op.path for op in repair({"a/b": "1", "m~n": "2"}, schema).patch]
    assert paths == ["/a~1b", "/m~0n"]


def test_renamed_key_keeps_its_position() -> None:
    schema = obj({"a": INT, "first_name": STR, "z": INT}, ["first_name"])
    value = repair({"a": 1, "firstName": "x", "z": 2}, schema).value
    assert list(value) == ["a", "first_name", "z"]


def test_removed_value_is_kept_in_diagnostic() -> None:
    outcome = repair({"a": 1, "extra": [1, 2]}, obj({"a": INT}, additionalProperties=False))
    assert outcome.diagnostics[0].data == {"removed": [1, 2]}


def test_change_diagnostic_fields() -> None:
    diagnostic = repair({"age": "12"}, obj({"age": INT})).diagnostics[0]
    fields = (
        diagnostic.code,
        diagnostic.severity,
        diagnostic.stage,
        diagnostic.pointer,
        diagnostic.rule,
        diagnostic.risk,
    )
    assert fields == (
        "repair.coerce_integer",
        Severity.WARNING,
        "schema_repair",
        "/age",
        "coerce_integer",
        Risk.SAFE,
    )


def test_patch_op_records_before_and_after() -> None:
    op = repair({"age": "12"}, obj({"age": INT})).patch[0]
    assert (op.before, op.after, op.risk) == ("12", 12, Risk.SAFE)


def test_one_diagnostic_per_change() -> None:
    outcome = repair({"a": "1", "b": "yes"}, obj({"a": INT, "b": BOOL}))
    assert len([d for d in outcome.diagnostics if d.rule]) == len(outcome.patch) == 2


def test_guess_rules_carry_guess_risk() -> None:
    op = repair("87%", {"type": "number", "maximum": 100}).patch[0]
    assert op.risk is Risk.GUESS


@pytest.mark.parametrize("rule", sorted(RULES))
def test_rules_table_has_risk_and_description(rule: str) -> None:
    entry = RULES[rule]
    assert (isinstance(entry.risk, Risk), bool(entry.description.strip())) == (True, True)


def test_interview_style_answer() -> None:
    schema = obj(
        {
            "goal": STR,
            "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
            "status": {"enum": ["not_started", "in_progress", "complete"]},
            "reasoning": STR,
            "tags": {"type": "array", "items": STR},
        },
        ["goal", "confidence", "status", "reasoning"],
        additionalProperties=False,
    )
    value = {
        "result": {
            "Goal": "ship it",
            "confidence": "87%",
            "status": "In Progress",
            "reasonning": "because",
            "tags": "urgent",
            "note": "extra",
        }
    }
    expected = {
        "goal": "ship it",
        "confidence": 87,
        "status": "in_progress",
        "reasoning": "because",
        "tags": ["urgent"],
    }
    assert repair(value, schema).value == expected


# --- properties ------------------------------------------------------------------------------

PROPERTY_SCHEMAS = {
    "person": obj(
        {
            "name": {"type": "string", "minLength": 1},
            "age": {"type": "integer", "minimum": 0},
            "email": {"type": ["string", "null"]},
            "status": {"enum": ["active", "Active", "inactive"]},
            "tags": {"type": "array", "items": STR, "maxItems": 3},
        },
        ["name", "age"],
        additionalProperties=False,
    ),
    "optional_model": {
        "$defs": {"Point": obj({"x": NUM, "y": NUM}, ["x", "y"])},
        "type": "object",
        "properties": {"p": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]}},
    },
    "scalars": {
        "type": "array",
        "items": {"type": ["string", "number", "boolean", "null"]},
        "maxItems": 5,
    },
    "tuple_draft7": {
        "$schema": DRAFT7,
        "type": "array",
        "items": [INT, {"type": "string", "enum": ["a", "B"]}],
        "additionalItems": BOOL,
        "maxItems": 4,
    },
    "one_of": {
        "oneOf": [
            obj({"kind": {"const": "a"}, "n": INT}, ["kind", "n"]),
            obj({"kind": {"const": "b"}, "s": STR}, ["kind", "s"]),
        ]
    },
}


@pytest.mark.parametrize("name", sorted(PROPERTY_SCHEMAS))
def test_schema_valid_instances_come_back_unchanged(name: str) -> None:
    schema = PROPERTY_SCHEMAS[name]

    @settings(
        max_examples=40,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(from_schema(schema))
    def check(instance: Any) -> None:
        outcome = coerce_to_schema(instance, schema)
        assert outcome.patch == ()
        assert canonical(outcome.value) == canonical(instance)

    check()


# --- the real-world corpus ---------------------------------------------------------------------


@pytest.mark.skipif(not corpus.SCHEMA_DIR.is_dir(), reason="schema corpus not present")
def test_corpus_sample_runs_without_exceptions() -> None:
    files = corpus.sample_files(corpus.schema_files(), 100)
    problems: list[str] = []
    for path in files:
        report = corpus.run_schema(path, examples=2, generate_max_bytes=6000)
        problems += report.exceptions + report.valid_changed + report.patch_mismatches
    assert problems == []


# --- nothing_to_repair: the walk skipped only where it would change nothing ---------------


def _sure(value: Any, schema: dict[str, Any]) -> bool:
    """nothing_to_repair as the pipeline asks it (with every error the plan lists), checked
    against the walk: whenever it says so, coerce_to_schema gives the value back as it is,
    with no diagnostic."""
    from llmfix.schema.load import schema_from_value
    from llmfix.schema.repair import nothing_to_repair
    from llmfix.schema.validate import SchemaValidator

    validator = SchemaValidator(schema_from_value(schema))
    errors = validator.errors(value)
    sure = bool(errors) and validator.plan_lists and nothing_to_repair(value, schema, errors)
    if sure:
        outcome = coerce_to_schema(value, schema)
        assert outcome.patch == ()
        assert outcome.diagnostics == ()
        assert outcome.value == value
    return sure


PERSON = obj({"name": STR, "age": INT, "tags": {"type": "array", "items": STR}}, ["name", "age"])
PEOPLE = {"type": "array", "items": PERSON}


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        ({"age": 3}, PERSON),
        ({}, PERSON),
        ({"people": [{"name": "a", "age": 1}, {"age": 2}]}, obj({"people": PEOPLE})),
        ({"a": {"b": {}}}, obj({"a": obj({"b": obj({"c": STR}, ["c"])})})),
    ],
    ids=["root", "two_missing", "in_an_array_item", "nested"],
)
def test_nothing_to_repair_where_no_rule_can_fill_the_missing_property(
    value: Any, schema: dict[str, Any]
) -> None:
    assert _sure(value, schema)


@pytest.mark.parametrize(
    ("value", "schema"),
    [
        # a stray key the rename rules may take for the missing one
        ({"Name": "Ada", "age": 3}, PERSON),
        ({"nmae": "Ada", "age": 3}, PERSON),
        # a default fills it
        ({"age": 3}, obj({"name": {**STR, "default": "?"}, "age": INT}, ["name", "age"])),
        # an object wrapping the answer
        ({"result": {"name": "Ada", "age": 3}}, PERSON),
        # the object may be wrapped in an array
        ({}, {"type": ["object", "array"], "required": ["a"], "items": {}}),
        # a wrong type besides the missing property
        ({"age": "3"}, PERSON),
        # each allOf part is walked on its own
        ({"age": 3}, {"allOf": [PERSON]}),
        # errors the plan does not list (anyOf) leave it to the walk
        ({"age": 3}, {"anyOf": [PERSON, {"type": "string"}]}),
    ],
    ids=[
        "case",
        "misspelt",
        "default",
        "wrapped",
        "array_allowed",
        "wrong_type",
        "all_of",
        "any_of",
    ],
)
def test_the_walk_decides_where_a_rule_might_act(value: Any, schema: dict[str, Any]) -> None:
    assert not _sure(value, schema)


def _without_each_key(value: Any, limit: int = 40) -> list[Any]:
    """Copies of ``value`` with one member of one object left out (at most ``limit``)."""
    out: list[Any] = []

    def walk(node: Any, rebuild: Any) -> None:
        if len(out) >= limit:
            return
        if isinstance(node, dict):
            for key in node:
                out.append(rebuild({k: v for k, v in node.items() if k != key}))
                walk(node[key], lambda new, key=key, node=node: rebuild({**node, key: new}))
        elif isinstance(node, list):
            for index, item in enumerate(node[:3]):
                walk(
                    item,
                    lambda new, index=index, node=node: rebuild(
                        [*node[:index], new, *node[index + 1 :]]
                    ),
                )

    walk(value, lambda new: new)
    return out[:limit]


def test_nothing_to_repair_agrees_with_the_walk_on_the_schema_corpus() -> None:
    """Over the corpus sample: every value one required member short (and the corpus'
    probes and mutations) that nothing_to_repair lets skip the walk, the walk leaves alone."""
    from llmfix.errors import SchemaError

    skipped = 0
    for path in sorted((Path(__file__).parent / "corpora" / "schemas").glob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(schema, dict):
            continue
        shape = corpus.skeleton(schema)
        for value in [shape, *corpus.mutations(shape), *_without_each_key(shape)]:
            try:
                skipped += _sure(value, schema)
            except SchemaError:
                break
    assert skipped > 50  # (the sample gives 78)


def test_a_strict_answer_only_missing_properties_gets_no_reading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The schema-guided step skips the readings of a strict answer whose object only
    misses properties no rule fills (guided_step._no_reading_helps): over the corpus sample,
    every answer it skips gives the result the readings give."""
    import llmfix
    from llmfix.errors import SchemaError
    from llmfix.pipeline import guided_step
    from llmfix.pipeline.core import make_validator

    decide = guided_step._no_reading_helps
    skipped: list[bool] = []

    def spy(*args: Any) -> bool:
        found = decide(*args)
        skipped.append(found)
        return found

    compared = 0
    for path in sorted((Path(__file__).parent / "corpora" / "schemas").glob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        try:
            listed = isinstance(schema, dict) and make_validator(schema).plan_lists
        except SchemaError:
            continue
        if not listed:  # (no skip without a plan that lists every error)
            continue
        for value in _without_each_key(corpus.skeleton(schema), limit=12):
            text = json.dumps(value, indent=2)
            try:
                monkeypatch.setattr(guided_step, "_no_reading_helps", spy)
                skipped.clear()
                fast = llmfix.repair(text, schema=schema)
            except SchemaError:
                break
            if not any(skipped):
                continue
            monkeypatch.setattr(guided_step, "_no_reading_helps", lambda *args: False)
            slow = llmfix.repair(text, schema=schema)
            mine, theirs = fast.to_dict(), slow.to_dict()
            mine.pop("timings", None)
            theirs.pop("timings", None)
            assert mine == theirs, f"{path.name}: {text[:200]}"
            compared += 1
    assert compared > 30  # (the sample gives 78)


def _one_scalar_changed(value: Any, limit: int = 24) -> list[Any]:
    """Copies of ``value`` with one scalar written as a model might get it wrong: a number
    or boolean as a string, a string as a number or in other case (at most ``limit``)."""
    out: list[Any] = []

    def wrong(item: Any) -> list[Any]:
        if isinstance(item, bool):
            return ["yes" if item else "no"]
        if isinstance(item, (int, float)):
            return [str(item), [item]]
        if isinstance(item, str):
            return [item.upper(), 7]
        if item is None:
            return ["none"]
        return []

    def walk(node: Any, rebuild: Any) -> None:
        if len(out) >= limit:
            return
        if isinstance(node, dict):
            for key, item in node.items():
                walk(item, lambda new, key=key, node=node: rebuild({**node, key: new}))
        elif isinstance(node, list):
            for index, item in enumerate(node[:3]):
                walk(
                    item,
                    lambda new, index=index, node=node: rebuild(
                        [*node[:index], new, *node[index + 1 :]]
                    ),
                )
        else:
            out.extend(rebuild(w) for w in wrong(node))

    walk(value, lambda new: new)
    return out[:limit]


def test_a_scalar_repaired_in_place_gives_what_the_walk_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Given a value's errors, coerce_to_schema repairs a single mistyped scalar where it
    is (repair._repair_in_place): over the corpus sample, the outcome (value, patch,
    diagnostics) is the whole walk's."""
    from llmfix.errors import SchemaError
    from llmfix.pipeline.core import make_validator
    from llmfix.schema import repair as module

    attempt = module._repair_in_place
    used: list[bool] = []

    def spy(*args: Any) -> Any:
        found = attempt(*args)
        used.append(found is not None)
        return found

    monkeypatch.setattr(module, "_repair_in_place", spy)
    compared = 0
    for path in sorted((Path(__file__).parent / "corpora" / "schemas").glob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        try:
            validator = make_validator(schema) if isinstance(schema, dict) else None
        except SchemaError:
            continue
        if validator is None or not validator.plan_lists:
            continue
        for value in _one_scalar_changed(corpus.skeleton(schema)):
            errors = validator.errors(value)
            if not errors:
                continue
            used.clear()
            placed = coerce_to_schema(value, schema, errors=errors)
            if not any(used):
                continue
            walked = coerce_to_schema(value, schema)
            assert canonical(placed.value) == canonical(walked.value), path.name
            assert placed.patch == walked.patch, path.name
            assert placed.diagnostics == walked.diagnostics, path.name
            compared += 1
    assert compared > 30


@pytest.mark.parametrize(
    ("value", "schema", "expected"),
    [
        ({"name": "Ada", "age": "36"}, PERSON, {"name": "Ada", "age": 36}),
        (
            {"people": [{"name": "a", "age": 1}, {"name": "b", "age": "2"}]},
            obj({"people": PEOPLE}),
            {"people": [{"name": "a", "age": 1}, {"name": "b", "age": 2}]},
        ),
        ({"s": "Done"}, obj({"s": {"enum": ["todo", "done"]}}), {"s": "done"}),
    ],
    ids=["member", "in_an_array_item", "enum_member"],
)
def test_one_mistyped_scalar_is_repaired_in_place(
    value: Any, schema: dict[str, Any], expected: Any
) -> None:
    from llmfix.schema.load import schema_from_value
    from llmfix.schema.validate import SchemaValidator

    errors = SchemaValidator(schema_from_value(schema)).errors(value)
    placed = coerce_to_schema(value, schema, errors=errors)
    assert placed.value == expected
    walked = coerce_to_schema(value, schema)
    assert (placed.value, placed.patch, placed.diagnostics) == (
        walked.value,
        walked.patch,
        walked.diagnostics,
    )
