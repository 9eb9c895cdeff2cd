"""Schema plans (llmfix.schema.plan) against jsonschema, the reference.

A plan answers "does this value fit?" and lists a value's failures for the subschemas it
covers; jsonschema answers for the rest. Wherever a plan answers, its verdict and its error
list (as the diagnostics llmfix writes from them: codes, messages, pointers, schema paths,
hints) must be jsonschema's: checked here over hand-made cases of every keyword a plan reads,
the sample of the schema corpus in ``tests/corpora/schemas`` (and the full corpus when it is
next to the repository), and the schemas of the conformance corpora with their inputs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmfix.errors import SchemaError
from llmfix.pipeline.core import make_validator
from llmfix.schema.load import load_schema, schema_from_value
from llmfix.schema.plan import equal, plan_for
from llmfix.schema.validate import SchemaValidator, _described

ROOT = Path(__file__).resolve().parent.parent
CORPORA = ROOT / "tests" / "corpora"


def _schema_corpus() -> Any:
    spec = importlib.util.spec_from_file_location(
        "schema_corpus", ROOT / "scripts" / "schema_corpus.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("schema_corpus", module)
    spec.loader.exec_module(module)
    return module


def _pairs(schema: Any, value: Any, depth: int = 0) -> Iterator[tuple[Any, Any]]:
    """(subschema, the part of ``value`` it applies to) along properties and items."""
    yield schema, value
    if not isinstance(schema, dict) or depth > 12:
        return
    properties = schema.get("properties")
    if isinstance(properties, dict) and isinstance(value, dict):
        for name, sub in properties.items():
            if name in value:
                yield from _pairs(sub, value[name], depth + 1)
    items = schema.get("items")
    if isinstance(items, dict) and isinstance(value, list):
        for item in value[:5]:
            yield from _pairs(items, item, depth + 1)
    for keyword in ("allOf", "anyOf", "oneOf"):
        subs = schema.get(keyword)
        if isinstance(subs, list):
            for sub in subs:
                yield from _pairs(sub, value, depth + 1)


class Tally:
    def __init__(self) -> None:
        self.checked = 0  # verdicts compared
        self.listed = 0  # error lists compared
        self.mismatches: list[str] = []


def compare(validator: SchemaValidator, instance: Any, tally: Tally, name: str) -> None:
    """Every verdict and error list the plan gives for ``instance``, against jsonschema."""
    reference = validator._validator  # jsonschema, as the validate stage compiles it
    plan = plan_for(validator._document, validator.draft)
    if plan is None:
        return
    for sub, part in _pairs(validator._document, instance):
        check = plan.check(sub)
        if check is None:
            continue
        try:
            expected = bool(reference.evolve(schema=sub).is_valid(part))
        except Exception:  # jsonschema itself fails on it: not a comparison
            continue
        tally.checked += 1
        if check(part) != expected:
            tally.mismatches.append(f"{name}: verdict on {json.dumps(part)[:120]}")
    lister = plan.lister(validator._document)
    if lister is None:
        return
    try:
        raw = list(reference.iter_errors(instance))
    except Exception:
        return
    mine = [d.to_dict() for d in _described(list(lister(instance, (), ())))]
    theirs = [d.to_dict() for d in _described(raw)]
    tally.listed += 1
    if mine != theirs:
        tally.mismatches.append(f"{name}: errors of {json.dumps(instance)[:120]}")


def _instances(corpus: Any, schema: Any) -> list[Any]:
    shape = corpus.skeleton(schema)
    return [*corpus.PROBES, shape, *corpus.mutations(shape)]


def _run_files(files: list[Path]) -> Tally:
    corpus = _schema_corpus()
    tally = Tally()
    for path in files:
        try:
            validator = SchemaValidator(load_schema(str(path)))
            _ = validator._validator
        except SchemaError:
            continue
        for instance in _instances(corpus, validator.schema):
            compare(validator, instance, tally, path.name)
    return tally


def test_plans_agree_with_jsonschema_on_the_schema_corpus_sample() -> None:
    files = sorted((CORPORA / "schemas").glob("*.json"))
    assert len(files) > 100
    tally = _run_files(files)
    assert tally.mismatches == []
    assert tally.checked > 3000
    assert tally.listed > 300


def test_plans_agree_with_jsonschema_on_the_full_schema_corpus() -> None:
    corpus = _schema_corpus()
    if not corpus.SCHEMA_DIR.is_dir():
        pytest.skip("schema corpus not present")
    files = corpus.sample_files(corpus.schema_files(), 250)
    tally = _run_files(files)
    assert tally.mismatches == []
    assert tally.checked > 3000  # the 250 sampled schemas gave 4,162 checks


def _conformance_cases() -> Iterator[tuple[str, Any, list[Any]]]:
    for name in ("json_repair.jsonl", "schema_guided.jsonl"):
        with (CORPORA / name).open(encoding="utf-8") as handle:
            for line in handle:
                case = json.loads(line)
                if isinstance(case.get("schema"), (dict, bool)):
                    values = [case.get("expected")]
                    with contextlib.suppress(ValueError, TypeError):
                        values.append(json.loads(case["input"]))
                    yield case["id"], case["schema"], values


def test_plans_agree_with_jsonschema_on_the_conformance_schemas() -> None:
    corpus = _schema_corpus()
    tally = Tally()
    for case_id, schema, values in _conformance_cases():
        try:
            validator = SchemaValidator(schema_from_value(schema))
            _ = validator._validator
        except SchemaError:
            continue
        for value in [*values, *_instances(corpus, validator.schema)]:
            compare(validator, value, tally, case_id)
    assert tally.mismatches == []
    assert tally.checked > 500


KEYWORD_CASES: list[tuple[dict[str, Any], list[Any]]] = [
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None]),
    ({"type": ["number", "null"]}, [1, 2.5, None, False, "x"]),
    ({"type": "boolean"}, [True, 0, "true"]),
    ({"enum": [1, "a", None, [1, 2], {"k": True}]}, [1, 1.0, True, "a", None, [1, 2], {"k": 1}]),
    ({"enum": ["low", "high"]}, ["low", "Low", 0]),
    ({"const": False}, [False, 0, None]),
    ({"const": {"a": [1, True]}}, [{"a": [1, True]}, {"a": [1, 1]}, {"a": [1.0, True]}]),
    (
        {
            "type": "object",
            "required": ["name", "age"],
            "properties": {"name": {"type": "string", "minLength": 2}, "age": {"minimum": 0}},
            "additionalProperties": False,
        },
        [{"name": "Al", "age": 3}, {"name": "A"}, {"Name": "Al", "age": -1, "x": 1}, [], "x"],
    ),
    (
        {"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
        [{"a": "x", "b": 1}, {"b": "no"}, {"a": 1}],
    ),
    (
        {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "maxItems": 2},
        [["ab"], ["ab", "Cd"], ["a", "b", "c"], [1], "ab"],
    ),
    ({"exclusiveMinimum": 0, "exclusiveMaximum": 10}, [0, 0.5, 10, 9.99, "5", True]),
    ({"minProperties": 1, "maxProperties": 2}, [{}, {"a": 1}, {"a": 1, "b": 2, "c": 3}]),
    ({"allOf": [{"type": "object"}, {"required": ["a"]}]}, [{"a": 1}, {}, []]),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, ["x", 1, 1.5]),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, [1, 1.5, "x"]),
    ({"not": {"type": "null"}}, [None, 0]),
    (
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b"]}}},
        },
        [{"tags": ["a", "c", "b", "d"]}, {"tags": "a"}],
    ),
    ({"title": "t", "description": "d", "default": 1, "type": "string"}, ["x", 1]),
]


@pytest.mark.parametrize(("schema", "values"), KEYWORD_CASES)
def test_each_keyword_a_plan_reads(schema: dict[str, Any], values: list[Any]) -> None:
    validator = SchemaValidator(schema_from_value(schema))
    _ = validator._validator
    plan = plan_for(validator._document, validator.draft)
    assert plan is not None
    assert plan.check(validator._document) is not None  # the case is one a plan covers
    tally = Tally()
    for value in values:
        compare(validator, value, tally, json.dumps(schema))
    assert tally.mismatches == []
    assert tally.checked >= len(values)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/a", "$defs": {"a": {"type": "string"}}},
        {"type": "object", "patternProperties": {"^x": {}}, "additionalProperties": False},
        {"multipleOf": 3},
        {"uniqueItems": True},
        {"type": "any"},
        {"if": {"type": "string"}, "then": {"minLength": 1}},
        {"properties": {"a": {"$schema": "http://json-schema.org/draft-04/schema#"}}},
        {"unknownKeyword": 1},
    ],
)
def test_what_a_plan_leaves_to_jsonschema(schema: dict[str, Any]) -> None:
    plan = plan_for(schema, "2020-12")
    assert plan is not None
    assert plan.check(schema) is None


def test_draft_four_has_no_plan() -> None:
    assert plan_for({"type": "integer"}, "draft-04") is None


def test_a_schema_with_more_keywords_than_the_budget_has_no_plan() -> None:
    schema = {"properties": {f"p{i}": {"type": "string"} for i in range(250)}}
    plan = plan_for(schema, "2020-12")
    assert plan is not None
    assert plan.check(schema) is None
    assert plan.check(schema["properties"]["p0"]) is not None


def test_equal_keeps_booleans_apart_from_numbers() -> None:
    assert equal(1, 1.0)
    assert not equal(True, 1)
    assert not equal([0], [False])
    assert equal({"a": [1]}, {"a": [1.0]})
    assert not equal({"a": 1}, {"b": 1})


def test_the_same_schema_dict_gets_its_compiled_validator_back() -> None:
    schema = {"type": "object", "required": ["plan_cache_case"]}
    first = make_validator(schema)
    assert make_validator(schema) is first
    assert make_validator(dict(schema)) is first  # an equal dict: found by content
    schema["required"] = ["another"]  # changed in place: compiled again
    again = make_validator(schema)
    assert again is not first
    assert again is not None
    assert (
        again.errors({"plan_cache_case": 1})[0].message == '/: missing required property "another"'
    )


def test_a_schema_dict_edited_deep_inside_between_calls_is_judged_as_it_is_now() -> None:
    """The caches under ``repair`` (validators, plans, schema repair's tables) are keyed by
    the schema dict's identity; an edit deep inside that same dict must still change the
    verdict of the next call, as a new dict would."""
    import llmfix

    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
        "required": ["n"],
    }
    text = '{"n": "3", "s": "x"}'
    first = llmfix.repair(text, schema=schema)
    assert (first.status, first.value) == ("repaired", {"n": 3, "s": "x"})
    schema["properties"]["n"]["type"] = "string"  # a property's type
    second = llmfix.repair(text, schema=schema)
    assert (second.status, second.value) == ("valid", {"n": "3", "s": "x"})
    schema["properties"]["s"]["enum"] = ["y"]  # a keyword added to a subschema
    third = llmfix.repair(text, schema=schema)
    assert third.status == "invalid"
    assert [error.code for error in third.errors] == ["schema.enum"]
    schema["properties"]["s"] = {"type": "integer"}  # a subschema replaced
    fourth = llmfix.repair('{"n": "3", "s": "7"}', schema=schema)
    assert (fourth.status, fourth.value) == ("repaired", {"n": "3", "s": 7})


def test_the_same_schema_spec_gets_its_compiled_validator_back() -> None:
    spec = schema_from_value({"type": "string", "title": "spec cache case"})
    first = make_validator(spec)
    assert make_validator(spec) is first
    assert make_validator(schema_from_value(spec.schema)) is not first


@pytest.mark.parametrize(
    "dialect",
    [
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-03/schema#",
        "http://json-schema.org/schema#",
        "urn:example:unknown",
        "http://[::1",
        7,
        None,
    ],
)
def test_schema_repair_finds_the_draft_jsonschema_picks(dialect: Any) -> None:
    from jsonschema import validators

    from llmfix.schema.context import _draft_of, _validator_class

    names = {
        validators.Draft3Validator: "draft-03",
        validators.Draft4Validator: "draft-04",
        validators.Draft6Validator: "draft-06",
        validators.Draft7Validator: "draft-07",
        validators.Draft201909Validator: "2019-09",
        validators.Draft202012Validator: "2020-12",
    }
    schema = {"$schema": dialect, "type": "string"}
    assert _draft_of(schema) == names[_validator_class(schema)]


def test_a_subschema_that_switches_dialect_has_no_plan() -> None:
    inner = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}
    same = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "integer"}
    unknown = {"$schema": "urn:example:unknown", "type": "integer"}
    schema = {"properties": {"a": inner, "b": same, "c": unknown}}
    plan = plan_for(schema, "2020-12")
    assert plan is not None
    assert plan.check(inner) is None
    assert plan.check(same) is not None
    assert plan.check(unknown) is not None
    validator = SchemaValidator(schema_from_value(schema))
    tally = Tally()
    for value in ({"a": 1.0, "b": 1.0, "c": 1.0}, {"b": "x", "c": 2.5}):
        compare(validator, value, tally, "switching dialects")
    assert tally.mismatches == []
    assert tally.checked >= 4
