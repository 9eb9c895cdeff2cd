"""The syntax scanner: every departure from strict JSON, with its code, place and risk."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmfix.model import Diagnostic, Risk, Severity
from llmfix.syntax_scan import scan, scan_syntax


def _first(text: str, code: str) -> Diagnostic:
    found = [d for d in scan_syntax(text) if d.code == code]
    assert found, f"{code} not reported; got {[d.code for d in scan_syntax(text)]}"
    return found[0]


# (text, code, line:column of the finding, risk tier)
FINDINGS = [
    ('{\n  "a": 1,\n}', "parse.trailing_comma", "2:9", Risk.LOSSLESS),
    ("[1, 2,]", "parse.trailing_comma", "1:6", Risk.LOSSLESS),
    ("[,1]", "parse.leading_comma", "1:2", Risk.LOSSLESS),
    ('{, "a": 1}', "parse.leading_comma", "1:2", Risk.LOSSLESS),
    ("[1,,2]", "parse.extra_comma", "1:4", Risk.SAFE),
    ("{'a': 1}", "parse.single_quotes", "1:2", Risk.SAFE),
    ('{"a": \u201cb\u201d}', "parse.smart_quotes", "1:7", Risk.SAFE),
    ("[`b`]", "parse.smart_quotes", "1:2", Risk.SAFE),
    ('{\n  name: "x"}', "parse.unquoted_key", "2:3", Risk.SAFE),
    ('{"a": hello world}', "parse.unquoted_string", "1:7", Risk.GUESS),
    ("[1, True]", "parse.python_literal", "1:5", Risk.SAFE),
    ('{"a": None}', "parse.python_literal", "1:7", Risk.SAFE),
    ('{"a": NaN}', "parse.js_literal", "1:7", Risk.SAFE),
    ("[1,\n -Infinity]", "parse.js_literal", "2:2", Risk.SAFE),
    ("[undefined]", "parse.js_literal", "1:2", Risk.SAFE),
    ('{"a": 1 // note\n}', "parse.comment", "1:9", Risk.LOSSLESS),
    ('{"a": 1,\n # note\n "b": 2}', "parse.comment", "2:2", Risk.LOSSLESS),
    ('{"a": /* x */ 1}', "parse.comment", "1:7", Risk.LOSSLESS),
    ('{"a": [1, 2]', "parse.truncated", "1:13", Risk.SAFE),
    ('{"a": "b', "parse.truncated", "1:9", Risk.GUESS),
    ("[1,\n 2", "parse.truncated", "2:3", Risk.GUESS),
    ('{"a": "say "hi" now"}', "parse.unescaped_quote", "1:12", Risk.GUESS),
    ('{"a": "x\ty"}', "parse.unescaped_control", "1:9", Risk.SAFE),
    ('{"a": "line one\nline two"}', "parse.unescaped_control", "1:16", Risk.SAFE),
    ("[1 2]", "parse.missing_comma", "1:3", Risk.GUESS),
    ('{"a": 1\n "b": 2}', "parse.missing_comma", "1:8", Risk.GUESS),
    ('{"a" 1}', "parse.missing_colon", "1:5", Risk.GUESS),
    ('{"a": }', "parse.missing_value", "1:7", Risk.GUESS),
    ('{"a": [1, 2}', "parse.missing_closer", "1:12", Risk.GUESS),
    ('{"a": 1}}', "parse.redundant_closer", "1:9", Risk.SAFE),
    ('{"a": 1]', "parse.redundant_closer", "1:8", Risk.GUESS),
    ("[007]", "parse.leading_zero", "1:2", Risk.GUESS),
    ("[.5]", "parse.invalid_number", "1:2", Risk.SAFE),
    ("[1, +2]", "parse.invalid_number", "1:5", Risk.SAFE),
    ("[1.2.3]", "parse.invalid_number", "1:2", Risk.GUESS),
    ("[1, 2, ...]", "parse.ellipsis", "1:8", Risk.SAFE),
    ('{"a": 1, ...}', "parse.ellipsis", "1:10", Risk.SAFE),
    ('["a" + "b"]', "parse.string_concat", "1:6", Risk.SAFE),
    ('{"a": 1}\nDone.', "parse.trailing_text", "2:1", Risk.SAFE),
    ('{"a": 1}\n{"b": 2}', "parse.trailing_text", "2:1", Risk.GUESS),
    ('Result: {"a": 1}', "parse.leading_text", "1:1", Risk.GUESS),
    ('["a\\qb"]', "parse.invalid_escape", "1:4", Risk.SAFE),
    ('["a\\\nb"]', "parse.invalid_escape", "1:4", Risk.SAFE),
    ('{"a":\u00a01}', "parse.nonstandard_whitespace", "1:6", Risk.LOSSLESS),
    ("[1, @]", "parse.unexpected", "1:5", Risk.GUESS),
]


@pytest.mark.parametrize(("text", "code", "where", "risk"), FINDINGS)
def test_finding_is_reported_at_its_position(text: str, code: str, where: str, risk: Risk) -> None:
    assert str(_first(text, code).position) == where


@pytest.mark.parametrize(("text", "code", "where", "risk"), FINDINGS)
def test_finding_has_its_risk_tier(text: str, code: str, where: str, risk: Risk) -> None:
    assert _first(text, code).risk is risk


def test_diagnostic_fields() -> None:
    diagnostic = _first('{"a": 1,}', "parse.trailing_comma")
    assert (diagnostic.stage, diagnostic.severity, diagnostic.rule) == (
        "parse",
        Severity.WARNING,
        "trailing_comma",
    )


def test_span_covers_the_offending_text() -> None:
    text = '{"a": hello world}'
    span = _first(text, "parse.unquoted_string").span
    assert span is not None
    assert text[span.start : span.end] == "hello world"


def test_truncation_span_is_at_the_end() -> None:
    span = _first('{"a": [1', "parse.truncated").span
    assert span is not None
    assert (span.start, span.end) == (8, 8)


def test_message_names_the_closer() -> None:
    assert _first('{"a": 1,}', "parse.trailing_comma").message == "trailing comma before '}'"


# Fixes the scanner can apply itself: text -> the value they give.
FIXES = [
    ('{"a": 1,}', {"a": 1}),
    ("[,1, 2]", [1, 2]),
    ("{'a': 'it\\'s'}", {"a": "it's"}),
    ("{'a': 'say \"hi\"'}", {"a": 'say "hi"'}),
    ("[\u2018x\u2019, \u201cy\u201d]", ["x", "y"]),
    ("{a: 1, b_2: 2}", {"a": 1, "b_2": 2}),
    ("[True, False, None]", [True, False, None]),
    ("[NaN, -Infinity, undefined]", [None, None, None]),
    ('{"a": 1, // one\n /* two */ "b": 2 # three\n}', {"a": 1, "b": 2}),
    ('{"a": [1, {"b": 2', {"a": [1, {"b": 2}]}),
    ('{"a": "x\ny"}', {"a": "x\ny"}),
    ('["a\\qb"]', ["a\\qb"]),
    ("[.5, +1, 1.]", [0.5, 1, 1.0]),
    ("[1, 2, ..., 9]", [1, 2, 9]),
    ("[1, 2, /* more */ ...]", [1, 2]),
    ('["a" + "b" + /* c */ "c"]', ["abc"]),
    ("['a' + \"b\"]", ["ab"]),
    ('{"a": 1}\nHope this helps!', {"a": 1}),
    ('{"a": 1}}', {"a": 1}),
    ("4 , ", 4),
    ('{"a" 1, "b": [1 2]}', {"a": 1, "b": [1, 2]}),
    ('{"a": }', {"a": None}),
    ('{"a": [1, 2}', {"a": [1, 2]}),
    ('{"a": "tex', {"a": "tex"}),
    ('{"a"', {"a": None}),
    ("[007]", ["007"]),
]


@pytest.mark.parametrize(("text", "expected"), FIXES)
def test_fixes_give_the_value(text: str, expected: Any) -> None:
    fixed = scan(text).fixed_text(text)
    assert fixed is not None
    assert json.loads(fixed) == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"a": hello}',  # an unquoted string: where it ends is a judgement
        '{"a": "say "hi" now"}',  # an unescaped quote
        'Result: {"a": 1}',  # prose before the value
        '{"a": "x, "b": 2}',  # a string that runs over a delimiter to the end
    ],
)
def test_judgement_calls_have_no_fix(text: str) -> None:
    assert scan(text).fixed_text(text) is None


@pytest.mark.parametrize(
    "text",
    [
        '"a // b"',
        '"a /* b */"',
        '"# c"',
        '"it\'s"',
        '"[1, 2,]"',
        '{"k": "\u201cquoted\u201d"}',
        '"\\u00e9\\n\\"\\\\"',
        "[1e5, -0.5, 0, -0, 2E-3]",
        '{"a": [], "b": {}, "c": [{}], "d": ""}',
        " \t\r\n{ } \n",
    ],
)
def test_strict_json_has_no_findings(text: str) -> None:
    assert scan_syntax(text) == []


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None)
@given(_json_values, st.sampled_from([None, 2]), st.booleans())
def test_any_json_text_has_no_findings(value: Any, indent: int | None, ascii_only: bool) -> None:
    assert scan_syntax(json.dumps(value, indent=indent, ensure_ascii=ascii_only)) == []


def test_empty_item_gaps_are_located() -> None:
    text = '[1, {}\n, ""\t]'
    gaps = scan(text).empty_item_gaps
    assert [text[g.start : g.end] for g in gaps] == ["\n", "\t"]


def test_depth_is_measured_without_recursion() -> None:
    assert scan("[" * 50_000).max_depth == 50_000


@pytest.mark.parametrize(
    "text",
    [
        '["abc" 12 ' * 20_000,
        "{a: b c d, " * 20_000,
        '{"k": "' + 'he said "hi" ' * 20_000 + '"}',
        "Some prose with {name} and [value] here. " * 2_000,
    ],
)
def test_scanning_is_linear(text: str) -> None:
    started = time.perf_counter()
    scan(text)
    assert time.perf_counter() - started < 5
