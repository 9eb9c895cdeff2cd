"""Property tests (issue 8): every public entry point on arbitrary input.

Only llmfix's own errors may escape; valid JSON is never changed; a successful repair is
strict JSON; repairing the output again changes nothing.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import llmfix
from llmfix.batch.core import BatchLimits, Profile
from llmfix.batch.judge import BatchSummary, judge
from llmfix.batch.pool import run_items
from llmfix.errors import LlmfixError
from llmfix.inputs import ReadOptions, decode_bytes, items_from_text
from llmfix.model import Status
from llmfix.reporters import FORMATS, reporter_class
from llmfix.reporters.base import ReportOptions
from llmfix.schema.load import schema_from_value
from llmfix.schema.repair import coerce_to_schema
from llmfix.schema.validate import SchemaValidator
from llmfix.toolcalls import extract_tool_calls

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

FRAGMENTS = [
    "{", "}", "[", "]", '"', "'", ":", ",", " ", "\n", "True", "None", "null", "1", "-2.5e3",
    "//", "/*", "*/", "#", "```", "```json\n", "<think>", "</think>", "a", "key", "\\",
    "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "f(a=1)", "NaN", "Infinity", "...", "\ufeff",
    "\u200b", "\x00", "é",
]  # fmt: skip

json_ish = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join)
any_text = st.one_of(st.text(max_size=200), json_ish)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(st.text(max_size=10), children, max_size=5),
    ),
    max_leaves=25,
)
containers = st.one_of(
    st.lists(json_values, max_size=5), st.dictionaries(st.text(max_size=10), json_values)
)

SCHEMAS: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "kind": {"enum": ["a", "b", "c"]},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    {"type": "array", "items": {"type": "number"}, "minItems": 1},
    {"anyOf": [{"type": "integer"}, {"type": "boolean"}, {"type": "null"}]},
    {
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    },
]


def _repair(text: str, **options: Any) -> llmfix.Result | None:
    """``llmfix.repair``, with llmfix's own errors (the only allowed ones) as ``None``."""
    try:
        return llmfix.repair(text, **options)
    except LlmfixError:
        return None


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON: ``1 == 1.0 == True`` in Python, not in JSON."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@SETTINGS
@given(any_text)
def test_repair_raises_only_llmfix_errors_and_ok_values_are_strict_json(text: str) -> None:
    result = _repair(text)
    if result is not None and result.ok:
        json.loads(llmfix.dumps(result.value), parse_constant=_no_constant)  # strict JSON out


@SETTINGS
@given(any_text)
def test_a_failed_repair_says_why(text: str) -> None:
    result = _repair(text)
    assert result is None or result.ok or result.errors


@SETTINGS
@given(containers, st.sampled_from([None, 2]))
def test_valid_json_is_never_changed(value: Any, indent: int | None) -> None:
    result = llmfix.repair(json.dumps(value, indent=indent))
    assert (result.status, _same(result.value, value)) == (Status.VALID, True)


@SETTINGS
@given(json_values, st.booleans())
def test_valid_json_scalars_and_containers_keep_their_value(value: Any, ascii_only: bool) -> None:
    result = llmfix.repair(json.dumps(value, ensure_ascii=ascii_only))
    assert (result.status, _same(result.value, value)) == (Status.VALID, True)


def _no_constant(name: str) -> Any:
    raise AssertionError(f"{name} written: not JSON")


@SETTINGS
@given(any_text)
@example("1E400")
def test_repairing_the_output_again_changes_nothing(text: str) -> None:
    first = _repair(text)
    if first is None or not first.ok:
        return
    again = llmfix.repair(llmfix.dumps(first.value))  # number texts as read (1E400 stays)
    parse_repairs = [d.code for d in again.diagnostics if d.stage == "parse" and d.risk]
    assert (_same(again.value, first.value), parse_repairs) == (True, [])


@SETTINGS
@given(any_text, st.sampled_from(SCHEMAS))
def test_repair_with_a_schema_raises_only_llmfix_errors(text: str, schema: Any) -> None:
    result = _repair(text, schema=schema)
    if result is not None and result.ok:
        json.loads(llmfix.dumps(result.value), parse_constant=_no_constant)  # strict JSON out


@SETTINGS
@given(any_text)
def test_extract_returns_spans_inside_the_text(text: str) -> None:
    try:
        candidates = llmfix.extract(text)
    except LlmfixError:
        return
    assert all(0 <= c.span.start <= c.span.end <= len(text) for c in candidates)


@SETTINGS
@given(any_text)
def test_tool_call_extraction_raises_only_llmfix_errors(text: str) -> None:
    try:
        extraction = extract_tool_calls(text)
    except LlmfixError:
        return
    assert all(isinstance(call.name, str | None) for call in extraction.calls)


@SETTINGS
@given(json_values, st.sampled_from(SCHEMAS))
def test_schema_repair_output_is_strict_json(value: Any, schema: dict[str, Any]) -> None:
    outcome = coerce_to_schema(value, schema)
    json.dumps(outcome.value, allow_nan=False)


@SETTINGS
@given(json_values, st.sampled_from(SCHEMAS))
def test_schema_repair_leaves_a_valid_value_alone(value: Any, schema: dict[str, Any]) -> None:
    validator = SchemaValidator(schema_from_value(schema))
    if not validator.is_valid(value):
        return
    outcome = coerce_to_schema(value, schema)
    assert (outcome.patch, _same(outcome.value, value)) == ((), True)


@SETTINGS
@given(st.binary(max_size=300))
def test_decoding_random_bytes_raises_only_input_errors(data: bytes) -> None:
    try:
        source = decode_bytes(data, "x.txt")
    except LlmfixError:
        return
    assert isinstance(source.text, str)


@SETTINGS
@given(st.one_of(any_text, st.binary(max_size=300).map(lambda b: b.decode("latin-1"))),
       st.sampled_from(["auto", "text", "json", "jsonl"]),
       st.sampled_from([None, "output", "/a/0"]))  # fmt: skip
def test_every_input_kind_reads_random_text_into_items(text: str, kind: Any, field: Any) -> None:
    try:
        items = list(items_from_text(text, "in", ReadOptions(field=field), kind))
    except LlmfixError:
        return
    assert all(isinstance(i.text, str) for i in items)


_PROFILES = {"": Profile(SchemaValidator(schema_from_value(SCHEMAS[0])))}


@pytest.mark.parametrize("fmt", FORMATS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_text, min_size=1, max_size=3), st.sampled_from(["text", "jsonl"]))
def test_every_reporter_renders_results_of_random_inputs(
    fmt: str, texts: list[str], kind: Any
) -> None:
    items = [
        i for n, t in enumerate(texts) for i in items_from_text(t, f"f{n}", ReadOptions(), kind)
    ]
    summary = BatchSummary()
    out = io.StringIO()
    reporter = reporter_class(fmt)(out, ReportOptions())
    for outcome in run_items(items, _PROFILES, BatchLimits(jobs=1)):
        checked = judge(outcome, "invalid", None, None)
        summary.add(checked)
        reporter.add(checked)
    reporter.finish(summary)
    assert isinstance(out.getvalue(), str)
