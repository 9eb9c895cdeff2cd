"""Validate stage: every violation, with a JSON Pointer, a stable code and a usable message."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from llmfix.errors import SchemaError
from llmfix.model import Diagnostic, Severity
from llmfix.schema.load import load_schema, schema_from_value
from llmfix.schema.validate import SchemaValidator, dialect_label, validate_value

CORPUS = Path(__file__).resolve().parent / "corpora" / "schemas"  # a 150-file sample

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "status": {"enum": ["complete", "pending"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
    },
    "required": ["name"],
    "additionalProperties": False,
}


def compile_(schema: Any, **kwargs: Any) -> SchemaValidator:
    return SchemaValidator(schema_from_value(schema, source="test.json"), **kwargs)


def errors(schema: Any, value: Any) -> list[Diagnostic]:
    return compile_(schema).errors(value)


def messages(schema: Any, value: Any) -> list[str]:
    return [d.message for d in errors(schema, value)]


# --------------------------------------------------------------------------- messages


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            {"name": "A", "age": "12"}, '/age: expected integer, got string "12"', id="type"
        ),
        pytest.param({}, '/: missing required property "name"', id="required"),
        pytest.param(
            {"name": "A", "status": "Complete"},
            '/status: "Complete" is not one of "complete", "pending"',
            id="enum",
        ),
        pytest.param(
            {"name": "A", "tags": ["a", "b", "c", "d", "e"]},
            "/tags: expected at most 3 items, got 5",
            id="maxItems",
        ),
        pytest.param(
            {"name": "A", "extra": 1},
            "/extra: property not allowed (additionalProperties is false)",
            id="additionalProperties",
        ),
        pytest.param({"name": ""}, "/name: expected at least 1 character, got 0", id="minLength"),
        pytest.param(
            {"name": "A", "age": -1}, "/age: expected a number >= 0, got -1", id="minimum"
        ),
        pytest.param(
            {"name": "A", "tags": [1]}, "/tags/0: expected string, got integer 1", id="item"
        ),
        pytest.param([], "/: expected object, got array []", id="root-type"),
    ],
)
def test_error_message(value: Any, message: str) -> None:
    assert messages(PERSON, value) == [message]


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        pytest.param({"const": "a"}, "b", '/: expected "a", got "b"', id="const"),
        pytest.param({"maximum": 5}, 6, "/: expected a number <= 5, got 6", id="maximum"),
        pytest.param(
            {"exclusiveMinimum": 0}, 0, "/: expected a number > 0, got 0", id="exclusiveMinimum"
        ),
        pytest.param(
            {"exclusiveMaximum": 5}, 5, "/: expected a number < 5, got 5", id="exclusiveMaximum"
        ),
        pytest.param({"multipleOf": 5}, 7, "/: expected a multiple of 5, got 7", id="multipleOf"),
        pytest.param(
            {"maxLength": 2}, "abc", "/: expected at most 2 characters, got 3", id="maxLength"
        ),
        pytest.param(
            {"pattern": "^[a-z]+$"},
            "AB",
            '/: "AB" does not match the pattern "^[a-z]+$"',
            id="pattern",
        ),
        pytest.param({"minItems": 1}, [], "/: expected at least 1 item, got 0", id="minItems"),
        pytest.param(
            {"minProperties": 2},
            {"a": 1},
            "/: expected at least 2 properties, got 1",
            id="minProperties",
        ),
        pytest.param(
            {"maxProperties": 1},
            {"a": 1, "b": 2},
            "/: expected at most 1 property, got 2",
            id="maxProperties",
        ),
        pytest.param(
            {"uniqueItems": True},
            ["a", "b", "a"],
            '/: expected unique items, but items 0 and 2 are equal ("a")',
            id="uniqueItems",
        ),
        pytest.param(
            {"dependentRequired": {"card": ["billing"]}},
            {"card": 1},
            '/: missing property "billing", which is required when "card" is present',
            id="dependentRequired",
        ),
        pytest.param(
            {"contains": {"type": "string"}},
            [1],
            '/: expected at least one item matching the "contains" schema, got none',
            id="contains",
        ),
        pytest.param(
            {"not": {"type": "string"}},
            "x",
            '/: must not match the "not" schema {"type": "string"}',
            id="not",
        ),
        pytest.param(
            {"properties": {"a": False}},
            {"a": 1},
            "/a: property not allowed (its schema is false)",
            id="false-property",
        ),
        pytest.param(
            {"prefixItems": [{"type": "string"}], "items": False},
            ["a", 1, 2],
            "/: expected at most 1 item, got 3 (items is false)",
            id="items-false",
        ),
        pytest.param(
            {"properties": {"a": {}}, "unevaluatedProperties": False},
            {"a": 1, "b": 2},
            "/b: property not allowed (unevaluatedProperties is false)",
            id="unevaluatedProperties",
        ),
        pytest.param(
            {"propertyNames": {"pattern": "^[a-z]+$"}},
            {"Bad": 1},
            '/: invalid property name "Bad": "Bad" does not match the pattern "^[a-z]+$"',
            id="propertyNames",
        ),
        pytest.param(
            {"type": ["string", "null"]},
            5,
            "/: expected string or null, got integer 5",
            id="type-list",
        ),
        pytest.param({"type": "string"}, None, "/: expected string, got null", id="got-null"),
        pytest.param(
            {"type": "string"}, True, "/: expected string, got boolean true", id="got-bool"
        ),
    ],
)
def test_keyword_message(schema: Any, value: Any, message: str) -> None:
    assert messages(schema, value) == [message]


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        pytest.param(
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            1.5,
            "/: expected string or integer, got number 1.5",
            id="anyOf-types",
        ),
        pytest.param(
            {"oneOf": [{"const": "a"}, {"const": "b"}]},
            "c",
            '/: "c" is not one of "a", "b"',
            id="oneOf-constants",
        ),
        pytest.param(
            {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"bark": {"type": "boolean"}},
                        "required": ["bark"],
                    },
                    {
                        "type": "object",
                        "properties": {"meow": {"type": "boolean"}},
                        "required": ["meow"],
                    },
                ]
            },
            {"bark": "yes"},
            "/: matches none of the 2 anyOf alternatives; closest (alternative 1): "
            '/bark: expected boolean, got string "yes"',
            id="anyOf-closest",
        ),
        pytest.param(
            {"oneOf": [{"required": ["a"]}]},
            {},
            '/: does not match the oneOf schema: missing required property "a"',
            id="oneOf-single",
        ),
        pytest.param(
            {"oneOf": [{"type": "integer"}, {"minimum": 0}]},
            3,
            "/: matches more than one of the 2 oneOf alternatives; it must match exactly one",
            id="oneOf-several",
        ),
    ],
)
def test_alternatives_are_summarised(schema: Any, value: Any, message: str) -> None:
    assert messages(schema, value) == [message]


def test_anyof_gives_one_diagnostic() -> None:
    schema = {"anyOf": [{"required": ["a", "b"]}, {"required": ["c", "d"]}]}
    assert len(errors(schema, {})) == 1


def test_enum_hint_suggests_case_match() -> None:
    (diagnostic,) = errors(PERSON, {"name": "A", "status": "Complete"})
    assert diagnostic.hint == 'did you mean "complete"?'


def test_additional_property_hint_suggests_near_miss() -> None:
    found = errors(PERSON, {"nmae": "A"})
    assert [d.hint for d in found if d.code == "schema.additional_properties"] == [
        'did you mean "name"?'
    ]


def test_long_values_are_shortened() -> None:
    (diagnostic,) = errors({"type": "integer"}, "x" * 500)
    assert (len(diagnostic.message) < 100, diagnostic.message.endswith("…")) == (True, True)


def test_large_containers_are_previewed_not_dumped() -> None:
    (diagnostic,) = errors({"type": "string"}, list(range(100_000)))
    assert len(diagnostic.message) < 100


def test_messages_are_one_line() -> None:
    found = errors({"enum": ["a\nb"]}, "line1\nline2")
    assert "\n" not in found[0].message


# -------------------------------------------------------------------- diagnostic fields


@pytest.mark.parametrize(
    ("schema", "value", "code"),
    [
        ({"type": "string"}, 1, "schema.type"),
        ({"required": ["a"]}, {}, "schema.required"),
        ({"enum": [1]}, 2, "schema.enum"),
        ({"additionalProperties": False}, {"a": 1}, "schema.additional_properties"),
        ({"minimum": 1}, 0, "schema.minimum"),
        ({"minLength": 2}, "a", "schema.min_length"),
        ({"maxItems": 0}, [1], "schema.max_items"),
        ({"uniqueItems": True}, [1, 1], "schema.unique_items"),
        ({"anyOf": [{"type": "string"}]}, 1, "schema.any_of"),
        ({"oneOf": [{"type": "string"}]}, 1, "schema.one_of"),
        ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, "schema.dependent_required"),
        ({"properties": {"a": False}}, {"a": 1}, "schema.false"),
    ],
)
def test_code_is_snake_case_keyword(schema: Any, value: Any, code: str) -> None:
    assert [d.code for d in errors(schema, value)] == [code]


def test_diagnostic_fields() -> None:
    (diagnostic,) = errors(PERSON, {"name": "A", "age": "12"})
    assert (
        diagnostic.severity,
        diagnostic.stage,
        diagnostic.pointer,
        dict(diagnostic.data or {}),
    ) == (
        Severity.ERROR,
        "validate",
        "/age",
        {
            "keyword": "type",
            "schema_path": "/properties/age/type",
            "expected": ["integer"],
            "actual": "string",
        },
    )


def test_required_data_names_property() -> None:
    (diagnostic,) = errors(PERSON, {})
    assert (diagnostic.pointer, (diagnostic.data or {})["property"]) == ("", "name")


def test_additional_property_points_at_property() -> None:
    (diagnostic,) = errors(PERSON, {"name": "A", "extra": 1})
    assert (diagnostic.pointer, (diagnostic.data or {})["schema_path"]) == (
        "/extra",
        "/additionalProperties",
    )


@pytest.mark.parametrize(
    ("key", "pointer"),
    [("a/b", "/a~1b"), ("a~b", "/a~0b"), ("~/", "/~0~1"), ("", "/")],
)
def test_pointer_escaping(key: str, pointer: str) -> None:
    (diagnostic,) = errors({"properties": {key: {"type": "integer"}}}, {key: "x"})
    assert diagnostic.pointer == pointer


def test_every_error_is_reported_sorted_by_pointer() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    value = ["x"] * 12
    assert [d.pointer for d in errors(schema, value)] == [f"/{i}" for i in range(12)]


def test_every_missing_property_is_reported() -> None:
    assert [d.message for d in errors({"required": ["a", "b"]}, {})] == [
        '/: missing required property "a"',
        '/: missing required property "b"',
    ]


def test_diagnostics_serialise_to_json() -> None:
    found = errors(PERSON, {"nmae": "A", "age": "12", "status": "x", "tags": [1, 2, 3, 4]})
    assert json.loads(json.dumps([d.to_dict() for d in found]))


# ---------------------------------------------------------------------------- fast path


def test_valid_value_has_no_errors() -> None:
    assert errors(PERSON, {"name": "Ada", "age": 36}) == []


@pytest.mark.parametrize(("value", "valid"), [({"name": "Ada"}, True), ({"name": 1}, False)])
def test_is_valid(value: Any, valid: bool) -> None:
    assert compile_(PERSON).is_valid(value) is valid


def test_validate_value_convenience() -> None:
    spec = schema_from_value(PERSON)
    assert [d.code for d in validate_value({}, spec)] == ["schema.required"]


def test_validate_value_reuses_compiled_validator() -> None:
    spec = schema_from_value(PERSON)
    validate_value({}, spec)
    assert validate_value({"name": "A"}, spec) == []


def test_format_is_an_annotation_only() -> None:
    assert errors({"format": "email"}, "not an email") == []


def test_validator_pickles() -> None:
    validator = compile_(PERSON)
    assert pickle.loads(pickle.dumps(validator)).errors({}) == validator.errors({})


def test_validator_exposes_unwrapped_schema() -> None:
    spec = schema_from_value({"name": "t", "input_schema": PERSON})
    assert SchemaValidator(spec).schema == PERSON


# ------------------------------------------------------------------------------- drafts


@pytest.mark.parametrize(
    ("uri", "label"),
    [
        ("http://json-schema.org/draft-04/schema#", "draft-04"),
        ("http://json-schema.org/draft-04/schema", "draft-04"),
        ("https://json-schema.org/draft-06/schema#", "draft-06"),
        ("http://json-schema.org/draft-07/schema#", "draft-07"),
        ("http://json-schema.org/draft-07/hyper-schema#", "draft-07"),
        ("https://json-schema.org/draft/2019-09/schema", "2019-09"),
        ("https://json-schema.org/draft/2020-12/schema", "2020-12"),
        ("http://json-schema.org/schema#", "2020-12"),
        ("https://example.com/my-meta", None),
    ],
)
def test_dialect_label(uri: str, label: str | None) -> None:
    assert dialect_label(uri) == label


def test_default_draft_is_2020_12() -> None:
    assert compile_({}).draft == "2020-12"


def test_draft4_exclusive_minimum_boolean() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    assert messages(schema, {"n": 0}) == ["/n: expected a number > 0, got 0"]


def test_draft4_float_is_not_integer() -> None:
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}
    assert messages(schema, 2.0) == ["/: expected integer, got number 2.0"]


def test_draft4_dependencies() -> None:
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "dependencies": {"a": ["b"]}}
    assert [d.code for d in errors(schema, {"a": 1})] == ["schema.dependencies"]


def test_draft7_additional_items() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "items": [{"type": "string"}],
        "additionalItems": False,
    }
    assert messages(schema, ["a", 1]) == [
        "/: expected at most 1 item, got 2 (additionalItems is false)"
    ]


def test_2020_12_prefix_items() -> None:
    schema = {"prefixItems": [{"type": "string"}, {"type": "integer"}]}
    assert messages(schema, ["a", "b"]) == ['/1: expected integer, got string "b"']


def test_2020_12_defs_ref() -> None:
    schema = {"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}}
    assert messages(schema, {"a": "x"}) == ['/a: expected integer, got string "x"']


def test_draft4_definitions_ref() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "definitions": {"n": {"type": "integer"}},
        "properties": {"a": {"$ref": "#/definitions/n"}},
    }
    assert messages(schema, {"a": "x"}) == ['/a: expected integer, got string "x"']


def test_unknown_dialect_is_a_warning() -> None:
    validator = compile_({"$schema": "https://example.com/meta", "type": "string"})
    assert [(w.code, w.severity) for w in validator.warnings] == [
        ("schema.unknown_dialect", Severity.WARNING)
    ]


def test_recursive_schema_descending_is_fine() -> None:
    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
    value = {"children": [{"children": [{"children": "x"}]}]}
    assert [d.pointer for d in errors(tree, value)] == ["/children/0/children/0/children"]


def _deep_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def test_value_too_deep_for_jsonschema_is_a_diagnostic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLMFIX_NO_FAST_VALIDATOR", "1")
    value = _deep_list(3000)
    assert [d.code for d in errors({"items": {"$ref": "#"}}, value)] == ["schema.recursion_limit"]


def test_compiled_validator_checks_values_too_deep_for_jsonschema() -> None:
    pytest.importorskip("jsonschema_rs")
    assert errors({"items": {"$ref": "#"}}, _deep_list(3000)) == []


# --------------------------------------------------------------------------- bad schemas


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        pytest.param(
            {"properties": {"age": {"type": "intger"}}},
            'invalid 2020-12 schema: /properties/age/type: "intger" is not one of',
            id="bad-type",
        ),
        pytest.param(
            {"$defs": {"n": {"minimum": "0"}}, "properties": {"a": {"$ref": "#/$defs/n"}}},
            'invalid 2020-12 schema: /$defs/n/minimum: expected number, got string "0"',
            id="bad-keyword-in-a-schema-with-refs",
        ),
        pytest.param({"$schema": 4}, "$schema must be a string", id="bad-dialect"),
        pytest.param(
            {"$schema": "http://json-schema.org/draft-04/schema#", "required": True},
            "invalid draft-04 schema: /required: expected array, got boolean true",
            id="draft4-required-bool",
        ),
        pytest.param(
            {"properties": {"a": {"$ref": "#/$defs/missing"}}},
            'cannot resolve $ref "#/$defs/missing" at #/properties/a',
            id="missing-ref",
        ),
        pytest.param({"$ref": "#"}, "reference cycle", id="self-ref"),
        pytest.param(
            {
                "$defs": {
                    "a": {"allOf": [{"$ref": "#/$defs/b"}]},
                    "b": {"anyOf": [{"$ref": "#/$defs/a"}]},
                },
                "$ref": "#/$defs/a",
            },
            "reference cycle",
            id="mutual-ref",
        ),
        pytest.param(
            {"pattern": "(?<n>x)"}, "not a regular expression Python can use", id="pattern"
        ),
        pytest.param(
            {"$ref": "https://example.com/s.json"},
            "remote reference https://example.com/s.json refused",
            id="remote-ref",
        ),
        pytest.param({"$ref": "other.json"}, "not loaded from a file", id="relative-ref-no-base"),
    ],
)
def test_bad_schema_is_one_line_schema_error(schema: Any, fragment: str) -> None:
    with pytest.raises(SchemaError) as caught:
        compile_(schema)
    message = str(caught.value)
    assert (fragment in message, message.startswith("schema test.json: "), "\n" in message) == (
        True,
        True,
        False,
    )


def test_bad_type_suggests_spelling() -> None:
    with pytest.raises(SchemaError, match='did you mean "integer"'):
        compile_({"type": "intger"})


def test_unused_definition_with_broken_ref_is_tolerated() -> None:
    schema = {"definitions": {"unused": {"$ref": "#/definitions/gone"}}, "type": "string"}
    assert compile_(schema).is_valid("x")


def test_ref_to_metaschema_resolves_offline() -> None:
    schema = {"$ref": "http://json-schema.org/draft-07/schema#"}
    assert compile_(schema).is_valid({"type": "string"})


def test_yaml_syntax_error_reports_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("type: object\nproperties:\n  a: {type: string\n  b: 1\n", encoding="utf-8")
    with pytest.raises(SchemaError, match=r"invalid YAML at line 4, column 4"):
        load_schema(str(path))


# ------------------------------------------------------------------------- file $refs


@pytest.fixture
def schema_dir(tmp_path: Path) -> Path:
    root = tmp_path / "schemas"
    (root / "defs").mkdir(parents=True)
    (root / "defs" / "num.json").write_text(
        '{"$defs": {"n": {"type": "integer"}}}', encoding="utf-8"
    )
    (root / "defs" / "str.yaml").write_text("type: string\n", encoding="utf-8")
    (tmp_path / "outside.json").write_text("{}", encoding="utf-8")
    return root


def test_relative_file_refs_resolve(schema_dir: Path) -> None:
    main = schema_dir / "main.json"
    main.write_text(
        json.dumps(
            {
                "properties": {
                    "n": {"$ref": "defs/num.json#/$defs/n"},
                    "s": {"$ref": "defs/str.yaml"},
                }
            }
        ),
        encoding="utf-8",
    )
    validator = SchemaValidator(load_schema(str(main)))
    assert [d.message for d in validator.errors({"n": "1", "s": 2})] == [
        '/n: expected integer, got string "1"',
        "/s: expected string, got integer 2",
    ]


def test_file_ref_outside_schema_directory_is_refused(schema_dir: Path) -> None:
    main = schema_dir / "main.json"
    main.write_text('{"$ref": "../outside.json"}', encoding="utf-8")
    with pytest.raises(SchemaError, match="outside the schema's directory"):
        SchemaValidator(load_schema(str(main)))


def test_missing_ref_file_is_schema_error(schema_dir: Path) -> None:
    main = schema_dir / "main.json"
    main.write_text('{"$ref": "defs/none.json"}', encoding="utf-8")
    with pytest.raises(SchemaError, match="file not found"):
        SchemaValidator(load_schema(str(main)))


def test_invalid_referenced_file_is_schema_error(schema_dir: Path) -> None:
    (schema_dir / "defs" / "bad.json").write_text('{"type": "intger"}', encoding="utf-8")
    main = schema_dir / "main.json"
    main.write_text('{"properties": {"a": {"$ref": "defs/bad.json"}}}', encoding="utf-8")
    with pytest.raises(SchemaError, match=r'bad\.json: invalid 2020-12 schema: /type: "intger"'):
        SchemaValidator(load_schema(str(main)))


# ---------------------------------------------------------------------------- corpus


def corpus_sample() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.glob("*.json"))


def test_corpus_schemas_compile_or_raise_schema_error() -> None:
    unexpected = []
    for path in corpus_sample():
        try:
            SchemaValidator(load_schema(str(path)))
        except SchemaError:
            pass
        except Exception as error:  # collected and reported below
            unexpected.append(f"{path.name}: {type(error).__name__}: {error}")
    assert unexpected == []


# ------------------------------------------------------------------ compiled fast path


def test_invalid_value_is_explained_by_jsonschema_with_the_fast_path_on() -> None:
    pytest.importorskip("jsonschema_rs")
    validator = compile_({"type": "object", "properties": {"age": {"type": "integer"}}})
    assert validator._fast is not None
    assert validator.is_valid({"age": 12})
    assert [d.message for d in validator.errors({"age": "12"})] == [
        '/age: expected integer, got string "12"'
    ]


def test_self_contained_schema_compiles_jsonschema_only_when_a_value_fails() -> None:
    pytest.importorskip("jsonschema_rs")
    validator = compile_({"type": "object", "properties": {"id": {"multipleOf": 2}}})
    assert validator.is_valid({"id": 2})
    assert validator.errors({"id": 2}) == []
    assert validator._compiled is None
    assert [d.code for d in validator.errors({"id": 3})] == ["schema.multiple_of"]
    assert validator._compiled is not None


def test_a_schema_its_plan_answers_never_compiles_jsonschema() -> None:
    pytest.importorskip("jsonschema_rs")
    validator = compile_({"type": "object", "properties": {"id": {"type": "integer"}}})
    assert [d.code for d in validator.errors({"id": "x"})] == ["schema.type"]
    assert not validator.is_valid({"id": "x"})
    assert validator._compiled is None


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"a": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/a"}}},
        {"properties": {"a": {"$schema": "http://json-schema.org/draft-07/schema#"}}},
        {"properties": {"a": {"$id": "https://example.com/a"}}},
    ],
)
def test_schemas_with_references_or_ids_compile_jsonschema_up_front(schema: Any) -> None:
    assert compile_(schema)._compiled is not None


def test_schema_jsonschema_rejects_is_rejected_at_load_although_jsonschema_rs_takes_it() -> None:
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "enum": ["AG", "AG"]}
    with pytest.raises(SchemaError, match="expected unique items"):
        compile_(schema)


def test_bad_schema_is_rejected_at_load_with_the_fast_path_on() -> None:
    with pytest.raises(SchemaError, match="invalid 2020-12 schema"):
        compile_({"type": 12})


def test_sampled_corpus_compiled_validator_is_never_more_lenient() -> None:
    """jsonschema-rs answers only "valid"; it must never call valid what jsonschema does
    not (scripts/validator_crosscheck.py runs all 2,000 schemas)."""
    pytest.importorskip("jsonschema_rs")
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "validator_crosscheck.py"
    spec = importlib.util.spec_from_file_location("validator_crosscheck", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("validator_crosscheck", module)
    spec.loader.exec_module(module)
    corpus = module._corpus_script()
    if not corpus.SCHEMA_DIR.is_dir():
        pytest.skip("schema corpus not present")
    files = corpus.sample_files(corpus.schema_files(), 150)
    report = module.cross_check(files)
    assert report.served > 100
    assert report.instances > 1500
    assert report.rs_too_lenient == []
    assert report.deferred > 20
    assert report.deferred_but_rejected == []
