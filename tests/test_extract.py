"""Extract stage: every candidate, with its origin and span, in order of appearance."""

from __future__ import annotations

import json
import time

import pytest

from llmfix.deadline import Deadline, OutOfTime
from llmfix.model import Candidate, Position, Risk, Severity, Span
from llmfix.pipeline.extract import extract_candidates, extract_values
from llmfix.pipeline.normalize import normalize_document


def found(text: str) -> list[tuple[str, str]]:
    return [(c.origin, c.text) for c in extract_values(text)]


def codes(candidate: Candidate) -> list[str]:
    return [d.code for d in candidate.diagnostics]


def document_codes(text: str) -> list[str]:
    _, diagnostics = extract_candidates(normalize_document(text))
    return [d.code for d in diagnostics]


# -- whole ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        "[1, 2]",
        '"a string"',
        "42",
        "-1.5",
        "true",
        "null",
        "{'a': 1}",
        '{"a": 1,}',
    ],
)
def test_json_looking_text_is_one_whole_candidate(text: str) -> None:
    assert found(text) == [("whole", text)]


def test_whole_span_excludes_surrounding_whitespace() -> None:
    (candidate,) = extract_values('\n  {"a": 1}  \n')
    assert (candidate.span, candidate.text) == (Span(3, 11), '{"a": 1}')


def test_whole_candidate_needs_no_diagnostic() -> None:
    (candidate,) = extract_values('{"a": 1}')
    assert candidate.diagnostics == ()


@pytest.mark.parametrize("text", ['\ufeff{"a": 1}', "\u200b[1]"])
def test_whole_after_invisible_character(text: str) -> None:
    assert found(text)[0] == ("whole", text)


def test_text_without_json_is_passed_on_whole() -> None:
    assert found("Sorry, I can't help with that.") == [("whole", "Sorry, I can't help with that.")]


def test_text_without_json_is_reported() -> None:
    assert document_codes("Sorry, I can't help with that.") == ["extract.none"]


@pytest.mark.parametrize("text", ["", "  \n "])
def test_empty_text_has_no_candidate(text: str) -> None:
    assert found(text) == []


def test_empty_text_is_reported() -> None:
    assert document_codes("") == ["extract.none"]


def test_json_followed_by_prose_gives_whole_and_the_value() -> None:
    assert found('{"a": 1}\nHope this helps!') == [
        ("whole", '{"a": 1}\nHope this helps!'),
        ("prose", '{"a": 1}'),
    ]


# -- prose ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('Result: {"a": "}"} ok', '{"a": "}"}', id="brace-in-string"),
        pytest.param('Result: {"a": "\\"}"} ok', '{"a": "\\"}"}', id="escaped-quote-in-string"),
        pytest.param('Here [{"a": 1}, {"b": [2]}] done', '[{"a": 1}, {"b": [2]}]', id="array"),
        pytest.param("See {a: 1, b: 'x}'} now", "{a: 1, b: 'x}'}", id="unquoted-key-single-quotes"),
        pytest.param("It is {note: it's fine} ok", "{note: it's fine}", id="apostrophe"),
        pytest.param('Got {"a": [1, 2}} then', '{"a": [1, 2}', id="closer-skips-an-opener"),
        pytest.param('Got {"a": 1]} then', '{"a": 1]}', id="stray-closer-ignored"),
        pytest.param("Empty: {} here", "{}", id="empty-object"),
        pytest.param("List: [1, 2, 3].", "[1, 2, 3]", id="numbers"),
    ],
)
def test_value_in_prose(text: str, expected: str) -> None:
    assert found(text) == [("prose", expected)]


@pytest.mark.parametrize(
    "text",
    [
        "use {name} here",
        "see [value] and [this one]",
        "a template {{ var }} here",
        "function f() { return 1; }",
        "[link](http://example.com)",
        "visit {http://example.com}",
    ],
)
def test_braces_in_prose_that_are_not_json(text: str) -> None:
    assert [origin for origin, _ in found(text)] == ["whole"]  # only the fallback


def test_placeholders_then_a_real_object() -> None:
    assert found('use {name} and [value] here: {"a": 1}') == [("prose", '{"a": 1}')]


def test_two_objects_are_two_candidates() -> None:
    assert found('First {"a": 1}, then {"b": 2}.') == [
        ("prose", '{"a": 1}'),
        ("prose", '{"b": 2}'),
    ]


def test_nested_values_are_not_separate_candidates() -> None:
    assert found('Here: {"a": {"b": [1, {"c": 2}]}}') == [("prose", '{"a": {"b": [1, {"c": 2}]}}')]


def test_truncated_value_runs_to_the_end() -> None:
    assert found('Sure! {"a": [1, 2') == [("prose", '{"a": [1, 2')]


def test_truncated_string_runs_to_the_end() -> None:
    assert found('Sure! {"a": "unfinished') == [("prose", '{"a": "unfinished')]


def test_unclosed_value_stops_at_a_fence() -> None:
    text = 'Like {"a": 1, and\n```json\n{"b": 2}\n```'
    assert found(text) == [("prose", '{"a": 1, and'), ("fence", '{"b": 2}')]


def test_unclosed_value_stops_at_a_reasoning_tag() -> None:
    text = '<think>draft {"a": 1</think>{"b": 2}'
    assert found(text) == [("prose", '{"a": 1'), ("prose", '{"b": 2}')]


def test_prose_diagnostic() -> None:
    (candidate,) = extract_values('Here: {"a": 1}')
    (diagnostic,) = candidate.diagnostics
    assert (diagnostic.code, diagnostic.severity, diagnostic.risk) == (
        "extract.prose",
        Severity.INFO,
        Risk.LOSSLESS,
    )


# -- fences ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('Here:\n```json\n{"a": 1}\n```\nDone.', id="json"),
        pytest.param('Here:\n```JSON\n{"a": 1}\n```', id="JSON"),
        pytest.param('```jsonc\n{"a": 1}\n```', id="jsonc"),
        pytest.param('```json5\n{"a": 1}\n```', id="json5"),
        pytest.param('```\n{"a": 1}\n```', id="bare"),
        pytest.param('~~~\n{"a": 1}\n~~~', id="tildes"),
        pytest.param('~~~yaml title="x"\n{"a": 1}\n~~~', id="tildes-info"),
        pytest.param('````json\n{"a": 1}\n````', id="four-backticks"),
        pytest.param('```python\n{"a": 1}\n```', id="other-language"),
        pytest.param('```{"a": 1}```', id="inline"),
        pytest.param('[```json\n{"a": 1}\n```]', id="mid-line"),
        pytest.param('```json\r\n{"a": 1}\r\n```', id="crlf"),
        pytest.param('   ```json\n   {"a": 1}\n   ```', id="indented"),
        pytest.param('```json\n{"a": 1}```', id="closer-ends-content-line"),
    ],
)
def test_fence_content_is_a_candidate(text: str) -> None:
    assert ("fence", '{"a": 1}') in found(text)


def test_fence_diagnostic() -> None:
    (candidate,) = extract_values('```json\n{"a": 1}\n```')
    (diagnostic,) = candidate.diagnostics
    assert (diagnostic.code, diagnostic.risk, diagnostic.data) == (
        "extract.fence",
        Risk.LOSSLESS,
        {"lang": "json", "marker": "```"},
    )


def test_fence_diagnostic_position() -> None:
    (candidate,) = extract_values('Intro\n\n```json\n{"a": 1}\n```')
    assert candidate.diagnostics[0].position == Position(4, 1)


def test_unterminated_fence_runs_to_the_end() -> None:
    assert found('Sure:\n```json\n{"a": [1, 2') == [("fence", '{"a": [1, 2')]


def test_unterminated_fence_is_a_warning() -> None:
    (candidate,) = extract_values('Sure:\n```json\n{"a": [1, 2')
    assert codes(candidate) == ["extract.fence", "extract.unterminated_fence"]


def test_two_fences_are_two_candidates() -> None:
    text = '```json\n{"a": 1}\n```\nand\n```json\n{"b": 2}\n```'
    assert found(text) == [("fence", '{"a": 1}'), ("fence", '{"b": 2}')]


def test_fence_markers_inside_a_json_string() -> None:
    text = 'Here:\n```json\n{"md": "```py\\nx\\n```"}\n```'
    assert found(text) == [("fence", '{"md": "```py\\nx\\n```"}')]


def test_json_fence_is_not_searched_again() -> None:
    assert found('```json\n{"a": {"b": 1}}\n```') == [("fence", '{"a": {"b": 1}}')]


def test_value_inside_a_code_fence_is_found() -> None:
    # The python fence is code, not a candidate itself; the JSON value inside it is found.
    text = '```python\nconfig = {"a": 1}\n```'
    assert found(text) == [("prose", '{"a": 1}')]
    assert found('```\nconfig = {"a": 1}\n```') == [
        ("fence", 'config = {"a": 1}'),
        ("prose", '{"a": 1}'),
    ]


def test_a_fence_of_code_is_not_data_and_a_list_marker_is_not_a_number() -> None:
    assert found("```python\nx = 1\ny = 2\n```") == []
    assert found('```python\n{"a": 1}\n```') == [("fence", '{"a": 1}')]
    assert document_codes("1. Negative\n2. Positive") == ["extract.none"]  # a last resort
    assert found("1.5") == [("whole", "1.5")]


def test_stray_closing_fence_is_not_a_candidate() -> None:
    assert found('{"a": 1}\n```\nThat is all.') == [
        ("whole", '{"a": 1}\n```\nThat is all.'),
        ("prose", '{"a": 1}'),
    ]


def test_json_document_with_fences_in_strings_is_one_candidate() -> None:
    text = '{"readme": "```json\\n{}\\n```", "x": "<tool_call>"}'
    assert found(text) == [("whole", text)]


# -- reasoning ------------------------------------------------------------------------


def test_think_block_and_final_answer() -> None:
    candidates = extract_values('<think>maybe {"x": 1}</think>\nFinal: {"y": 2}')
    assert [(c.text, c.in_reasoning) for c in candidates] == [
        ('{"x": 1}', True),
        ('{"y": 2}', False),
    ]


def test_value_in_reasoning_is_warned_about() -> None:
    first = extract_values('<think>maybe {"x": 1}</think>\nFinal: {"y": 2}')[0]
    assert codes(first) == ["extract.prose", "extract.in_reasoning"]


def test_json_only_inside_think_block() -> None:
    candidates = extract_values('<think>I will answer {"x": 1}</think>\nDone.')
    assert [(c.text, c.in_reasoning) for c in candidates] == [('{"x": 1}', True)]


def test_tool_call_inside_think_block_is_found() -> None:
    (candidate,) = extract_values('<think><tool_call>{"name": "f"}</tool_call></think>')
    assert (candidate.origin, candidate.in_reasoning) == ("xml:tool_call", True)


def test_bare_leading_think_close() -> None:
    candidates = extract_values('thinking {"x": 1}</think>\n{"y": 2}')
    assert [(c.text, c.in_reasoning) for c in candidates] == [
        ('{"x": 1}', True),
        ('{"y": 2}', False),
    ]


def test_unterminated_think_block() -> None:
    (candidate,) = extract_values('<think>let me try {"x": 1')
    assert (candidate.text, candidate.in_reasoning) == ('{"x": 1', True)


# -- JSONP ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('callback({"a": 1});', '{"a": 1}', id="object"),
        pytest.param("callback_123([1, 2])", "[1, 2]", id="array"),
        pytest.param("callback_123(2);", "2", id="number"),
        pytest.param('cb("foo")', '"foo"', id="string"),
        pytest.param("/* comment */ callback_123 ( {} )", "{}", id="comment-and-spaces"),
        pytest.param("// line\nwindow.cb({});\n", "{}", id="dotted-name"),
        pytest.param('callback({"a": 1', '{"a": 1', id="truncated"),
    ],
)
def test_jsonp(text: str, expected: str) -> None:
    assert found(text) == [("jsonp", expected)]


def test_jsonp_diagnostic() -> None:
    (candidate,) = extract_values('callback({"a": 1});')
    assert codes(candidate) == ["extract.jsonp"]


@pytest.mark.parametrize("text", ["print(x)", "See note(1) and more", "f(1) and g(2)"])
def test_calls_in_prose_are_not_jsonp(text: str) -> None:
    assert "jsonp" not in [origin for origin, _ in found(text)]


# -- XML envelopes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "origin"),
    [
        ('<json>{"a": 1}</json>', "xml:json"),
        ('<output>\n{"a": 1}\n</output>', "xml:output"),
        ('<answer>{"a": 1}</answer>', "xml:answer"),
        ('<tool_call>\n{"a": 1}\n</tool_call>', "xml:tool_call"),
        ('<result>{"a": 1}</result>', "xml:result"),
        ('<response>{"a": 1}</response>', "xml:response"),
        ('<TOOL_CALL id="c1">{"a": 1}</Tool_Call>', "xml:tool_call"),
        ('Answer: <json format="strict">{"a": 1}</json> done', "xml:json"),
    ],
)
def test_xml_envelope(text: str, origin: str) -> None:
    assert found(text) == [(origin, '{"a": 1}')]


def test_xml_envelope_diagnostic() -> None:
    (candidate,) = extract_values('<output>{"a": 1}</output>')
    assert codes(candidate) == ["extract.xml_envelope"]


def test_unterminated_envelope() -> None:
    (candidate,) = extract_values('<tool_call>\n{"name": "f", "arguments": {')
    assert (candidate.text, codes(candidate)) == (
        '{"name": "f", "arguments": {',
        ["extract.xml_envelope", "extract.unterminated_envelope"],
    )


def test_envelopes_in_order() -> None:
    text = '<tool_call>{"a": 1}</tool_call>\n<tool_call>{"b": 2}</tool_call>'
    assert found(text) == [("xml:tool_call", '{"a": 1}'), ("xml:tool_call", '{"b": 2}')]


def test_value_inside_a_prose_envelope_is_found() -> None:
    assert found('<answer>It is {"a": 1}.</answer>') == [
        ("xml:answer", 'It is {"a": 1}.'),
        ("prose", '{"a": 1}'),
    ]


def test_fenced_envelope_content() -> None:
    text = '<output>\n```json\n{"a": 1}\n```\n</output>'
    assert found(text) == [("xml:output", '```json\n{"a": 1}\n```'), ("fence", '{"a": 1}')]


# -- Anthropic function calls ---------------------------------------------------------

FUNCTION_CALLS = """Let me look.
<function_calls>
<invoke name="search">
<parameter name="query">
weather in Paris
</parameter>
<parameter name="limit">5</parameter>
<parameter name="filters">{"units": "metric", "days": [1, 2]}</parameter>
<parameter name="exact">true</parameter>
</invoke>
<invoke name="get_time">
<parameter name="zone">"CET"</parameter>
</invoke>
</function_calls>"""


def test_function_calls_give_one_candidate_per_invoke() -> None:
    values = [json.loads(c.text) for c in extract_values(FUNCTION_CALLS)]
    assert values == [
        {
            "name": "search",
            "arguments": {
                "query": "weather in Paris",
                "limit": 5,
                "filters": {"units": "metric", "days": [1, 2]},
                "exact": True,
            },
        },
        {"name": "get_time", "arguments": {"zone": '"CET"'}},
    ]


def test_function_call_candidates_are_synthetic() -> None:
    candidates = extract_values(FUNCTION_CALLS)
    assert [(c.origin, c.synthetic) for c in candidates] == [("xml:function_calls", True)] * 2


def test_function_call_span_is_the_invoke_element() -> None:
    first = extract_values(FUNCTION_CALLS)[0]
    element = FUNCTION_CALLS[first.span.start : first.span.end]
    assert (element[:21], element[-9:]) == ('<invoke name="search"', "</invoke>")


def test_function_call_typed_scalars_are_a_safe_repair() -> None:
    first = extract_values(FUNCTION_CALLS)[0]
    assert (first.diagnostics[0].code, first.diagnostics[0].risk) == (
        "extract.function_calls",
        Risk.SAFE,
    )


def test_bare_invoke() -> None:
    text = '<invoke name="f"><parameter name="x">hi</parameter></invoke>'
    assert [json.loads(c.text) for c in extract_values(text)] == [
        {"name": "f", "arguments": {"x": "hi"}}
    ]


def test_namespaced_invoke() -> None:
    text = '<ns:invoke name="f"><ns:parameter name="x">[1]</ns:parameter></ns:invoke>'
    assert [json.loads(c.text) for c in extract_values(text)] == [
        {"name": "f", "arguments": {"x": [1]}}
    ]


def test_a_parameter_left_open_ends_at_the_next_parameter() -> None:
    text = '<invoke name="f"><parameter name="a">1<parameter name="b">x</parameter></invoke>'
    assert [json.loads(c.text) for c in extract_values(text)] == [
        {"name": "f", "arguments": {"a": 1, "b": "x"}}
    ]


def test_unterminated_invoke() -> None:
    text = '<function_calls>\n<invoke name="f">\n<parameter name="x">partial'
    (candidate,) = extract_values(text)
    assert (json.loads(candidate.text), codes(candidate)[-1]) == (
        {"name": "f", "arguments": {"x": "partial"}},
        "extract.unterminated_envelope",
    )


# -- double encoding ------------------------------------------------------------------


def test_double_encoded_object() -> None:
    assert found('"{\\"a\\": 1}"') == [("whole", '"{\\"a\\": 1}"'), ("double_encoded", '{"a": 1}')]


def test_double_encoded_keeps_the_span() -> None:
    whole, decoded = extract_values('  "[1, 2]"  ')
    assert (decoded.span, decoded.synthetic) == (whole.span, True)


def test_double_encoded_in_a_fence() -> None:
    assert found('```json\n"{\\"a\\": 1}"\n```')[-1] == ("double_encoded", '{"a": 1}')


@pytest.mark.parametrize("text", ['"hello"', '"{not json}"', '"42"'])
def test_plain_strings_are_not_double_encoded(text: str) -> None:
    assert [origin for origin, _ in found(text)] == ["whole"]


# -- across origins -------------------------------------------------------------------

MIXED = """<think>Draft: {"draft": true}</think>
Intro with {placeholder} and a footnote.
```json
{"fenced": 1}
```
Inline {"inline": [1, 2]} and
<tool_call>{"name": "f"}</tool_call>
"""


def test_candidates_in_order_of_appearance() -> None:
    assert found(MIXED) == [
        ("prose", '{"draft": true}'),
        ("fence", '{"fenced": 1}'),
        ("prose", '{"inline": [1, 2]}'),
        ("xml:tool_call", '{"name": "f"}'),
    ]


@pytest.mark.parametrize(
    "text",
    [
        MIXED,
        'x {"a": 1} ```json\n{"b": 2}\n``` <output>{"c": 3}</output> callback',
        '\ufeff  {"a": [1, "}"]} tail {"b": 2',
    ],
)
def test_spans_index_the_raw_text(text: str) -> None:
    candidates = [c for c in extract_values(text) if not c.synthetic]
    assert all(text[c.span.start : c.span.end] == c.text for c in candidates)


def test_diagnostic_spans_are_the_candidate_spans() -> None:
    candidates = extract_values(MIXED)
    assert all(d.span == c.span for c in candidates for d in c.diagnostics)


def test_extract_values_is_normalize_then_extract() -> None:
    candidates, _ = extract_candidates(normalize_document(MIXED))
    assert extract_values(MIXED) == candidates


def test_candidate_count_is_bounded() -> None:
    text = "see [1] and " * 50
    candidates, diagnostics = extract_candidates(normalize_document(text), max_candidates=10)
    assert (len(candidates), [d.code for d in diagnostics]) == (10, ["extract.too_many"])


def test_many_braces_in_prose() -> None:
    # Linear: 100k "{" that do not start JSON, then one object (about 1 MB).
    text = "use {name} here. " * 60_000 + '{"a": 1}'
    assert found(text) == [("prose", '{"a": 1}')]


def test_many_unclosed_values() -> None:
    text = 'x {"a": ' * 50_000
    assert [origin for origin, _ in found(text)] == ["prose"]


def test_fence_holding_strict_json_is_decoded_once_and_not_scanned_inside() -> None:

    text = 'Here:\n```json\n{"note": "see ```{\\"a\\": 1}``` and <tool_call>"}\n```\nDone.'
    candidates, _ = extract_candidates(normalize_document(text))
    assert [c.origin for c in candidates] == ["fence"]
    assert candidates[0].decoded == ({"note": 'see ```{"a": 1}``` and <tool_call>'},)


def test_fence_holding_broken_json_is_still_scanned_inside() -> None:

    candidates, _ = extract_candidates(normalize_document('```json\n{"a": 1,}\n```'))
    assert candidates[0].decoded is None


# -- deadline -------------------------------------------------------------------------


def _spent_deadline() -> Deadline:
    deadline = Deadline(0.001, "extraction")
    time.sleep(0.002)
    return deadline


@pytest.mark.parametrize(
    "text",
    [
        'Notes ```py\nx = [1, {"a": ' * 3000,  # unclosed fences around unclosed values
        "prose " + '{"a": [' * 5000,  # one unclosed value in prose
        '{"a": [' * 5000,  # the whole text, scanned by the fast path
        "a <b> ~ ` <answer/> [z] " * 3000,  # markers that begin nothing
    ],
)
def test_pathological_extraction_stops_at_its_deadline(text: str) -> None:
    document = normalize_document(text)
    extract_candidates(document)  # finishes without a deadline
    with pytest.raises(OutOfTime) as raised:
        extract_candidates(document, deadline=_spent_deadline())
    assert raised.value.stage == "extraction"


def test_a_deadline_with_time_left_changes_nothing() -> None:
    text = 'Notes ```json\n{"a": 1}\n``` then {"b": [2]} in prose. ' * 500
    document = normalize_document(text)
    assert extract_candidates(document, deadline=Deadline(60, "extraction")) == (
        extract_candidates(document)
    )
