"""Normalize stage: reasoning blocks in a response, invisible characters and NFKC in a payload."""

from __future__ import annotations

import pytest

from llmfix.model import Position, Risk, Severity, Span
from llmfix.pipeline.normalize import clean_payload, normalize_document

# -- normalize_document ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '\ufeff<think>x</think>{"a": 1}',
        'Note:\u200b here {"a\u200b": 1}',
        "",
    ],
)
def test_document_text_is_unchanged(text: str) -> None:
    assert normalize_document(text).text == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('<think>hmm</think>\n{"a": 1}', [Span(0, 18)], id="think"),
        pytest.param("<thinking>a</thinking>b", [Span(0, 22)], id="thinking"),
        pytest.param("<reasoning>a</reasoning>b", [Span(0, 24)], id="reasoning"),
        pytest.param("x <scratchpad>a</scratchpad>", [Span(2, 28)], id="scratchpad"),
        pytest.param('<THINK type="deep">a</Think>b', [Span(0, 28)], id="case-and-attributes"),
        pytest.param('<think>cut off {"a": 1', [Span(0, 22)], id="unterminated"),
        pytest.param('I should answer.</think>{"a": 1}', [Span(0, 24)], id="bare-leading-close"),
        pytest.param("<think>a</think> b <think>c</think>", [Span(0, 16), Span(19, 35)], id="two"),
        pytest.param("<think>a</think> then </think>", [Span(0, 16)], id="stray-close-later"),
        pytest.param("no reasoning here", [], id="none"),
        pytest.param("a <thinker> b", [], id="other-tag"),
    ],
)
def test_reasoning_spans(text: str, expected: list[Span]) -> None:
    assert list(normalize_document(text).reasoning) == expected


def test_each_reasoning_block_is_reported() -> None:
    doc = normalize_document("<think>a</think> b <scratchpad>c</scratchpad>")
    codes = [d.code for d in doc.diagnostics]
    assert codes == ["normalize.reasoning_block", "normalize.reasoning_block"]


def test_reasoning_block_diagnostic_has_position() -> None:
    doc = normalize_document("line one\n  <think>a</think>")
    (diagnostic,) = doc.diagnostics
    assert diagnostic.position == Position(2, 3)


def test_unterminated_reasoning_is_a_warning() -> None:
    doc = normalize_document("<think>still thinking")
    warnings = [d.code for d in doc.diagnostics if d.severity is Severity.WARNING]
    assert warnings == ["normalize.unterminated_reasoning"]


def test_leading_bom_is_reported() -> None:
    doc = normalize_document('\ufeff{"a": 1}')
    assert [(d.code, d.span) for d in doc.diagnostics] == [("normalize.bom", Span(0, 1))]


@pytest.mark.parametrize(
    ("span", "inside"),
    [(Span(7, 10), True), (Span(0, 16), True), (Span(15, 20), False), (Span(17, 20), False)],
)
def test_document_in_reasoning(span: Span, inside: bool) -> None:
    doc = normalize_document("<think>abc</think> tail")
    assert doc.in_reasoning(span) is inside


# -- clean_payload: invisible characters ----------------------------------------------


@pytest.mark.parametrize("text", ['{"a": 1}', "[1, 2, 3]", '{"name": "Zoë 😀", "n": "中文"}', ""])
def test_clean_payload_leaves_clean_text_alone(text: str) -> None:
    payload = clean_payload(text)
    assert (payload.text, payload.removed, payload.diagnostics) == (text, 0, ())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('\ufeff{"a": 1}', '{"a": 1}', id="bom"),
        pytest.param('{"a":\x00 1}', '{"a": 1}', id="nul"),
        pytest.param('{\u200b"a": 1\u2060}', '{"a": 1}', id="zero-width-outside"),
        pytest.param('{"a\u200b": "b\u200bc"}', '{"a": "bc"}', id="zero-width-space-inside"),
        pytest.param('{"a": "\u202ex\u202c"}\u200e', '{"a": "x"}', id="bidi-controls"),
        pytest.param('{"a": "\u2067x\u2069\u061c"}', '{"a": "x"}', id="bidi-isolates"),
        pytest.param('{"a": "x"}\u180e', '{"a": "x"}', id="mongolian-vowel-separator"),
        pytest.param('{"e": "👩\u200d💻"}', '{"e": "👩\u200d💻"}', id="zwj-inside-string-kept"),
        pytest.param(
            '{"w": "می\u200cخواهم"}', '{"w": "می\u200cخواهم"}', id="zwnj-inside-string-kept"
        ),
        pytest.param('{"a": 1,\u200d"b": 2}', '{"a": 1,"b": 2}', id="zwj-outside-removed"),
    ],
)
def test_clean_payload_removes_invisible_characters(text: str, expected: str) -> None:
    assert clean_payload(text).text == expected


def test_clean_payload_counts_removed_characters() -> None:
    payload = clean_payload('\ufeff{"a\u200b": "b\u200b"}\u200b')
    assert payload.removed == 4


def test_invisible_characters_are_reported_once() -> None:
    payload = clean_payload('\ufeff{"a\u200b": 1}')
    (diagnostic,) = payload.diagnostics
    assert (diagnostic.code, diagnostic.risk, diagnostic.span) == (
        "normalize.invisible_chars",
        Risk.LOSSLESS,
        Span(0, 5),
    )


def test_invisible_characters_diagnostic_lists_codepoints() -> None:
    (diagnostic,) = clean_payload('\ufeff{"a\u200b": 1}').diagnostics
    assert diagnostic.data == {"count": 2, "codepoints": ["U+200B", "U+FEFF"]}


# -- clean_payload: NFKC outside strings ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("｛＂a＂：１｝", '{"a":1}', id="fullwidth-structure"),
        pytest.param("［1，2］", "[1,2]", id="fullwidth-array"),
        pytest.param('{"a":\u3000ｔｒｕｅ}', '{"a": true}', id="ideographic-space-and-keyword"),
        pytest.param('{"a": "ｘ：１"}', '{"a": "ｘ：１"}', id="string-content-untouched"),
        pytest.param("{'a': 'ｘ'}", "{'a': 'ｘ'}", id="single-quoted-content-untouched"),
        pytest.param('{"a": "x\\"ｘ"}', '{"a": "x\\"ｘ"}', id="escaped-quote-stays-in-string"),
        pytest.param('{"a": "ｘ', '{"a": "ｘ', id="unterminated-string-untouched"),
        pytest.param("{a: it's ｘ}", "{a: it's x}", id="apostrophe-is-not-a-quote"),
        pytest.param("｛＂ｎａｍｅ＂：＂张三＂｝", '{"name":"张三"}', id="fullwidth-quoted-string"),
        pytest.param("[1, 2, …]", "[1, 2, ...]", id="ellipsis-expands"),
    ],
)
def test_clean_payload_nfkc_outside_strings(text: str, expected: str) -> None:
    assert clean_payload(text).text == expected


def test_nfkc_is_reported_with_its_span() -> None:
    (diagnostic,) = clean_payload('{"a": 1}｝').diagnostics
    assert (diagnostic.code, diagnostic.risk, diagnostic.span) == (
        "normalize.nfkc",
        Risk.LOSSLESS,
        Span(8, 9),
    )


def test_nfkc_does_not_count_as_removed() -> None:
    assert clean_payload("｛｝").removed == 0


# -- clean_payload: mapping back to the original ----------------------------------------


@pytest.mark.parametrize(
    ("text", "index", "expected"),
    [
        pytest.param('{"a": 1}', 3, 3, id="identity"),
        pytest.param('\ufeff{"a": 1}', 0, 1, id="after-leading-bom"),
        pytest.param('{"a\u200b\u200b": 1}', 3, 5, id="after-removed-run"),
        pytest.param('{"a\u200b\u200b": 1}', 8, 10, id="end"),
        pytest.param("｛＂a＂：１｝", 5, 5, id="fullwidth-one-to-one"),
        pytest.param("[…, 1]", 2, 1, id="inside-expansion"),
        pytest.param("[…, 1]", 4, 2, id="after-expansion"),
        pytest.param("[…, 1]", 8, 6, id="end-after-expansion"),
    ],
)
def test_to_source(text: str, index: int, expected: int) -> None:
    assert clean_payload(text).to_source(index) == expected


def test_to_source_maps_every_kept_character_to_itself() -> None:
    text = '\ufeff{"a\u200b": "x\u200dy", "b": [１, "\u202e"]}\u200b'
    payload = clean_payload(text)
    kept = [text[payload.to_source(i)] for i in range(len(payload.text))]
    assert "".join(kept) == '{"a": "x\u200dy", "b": [１, ""]}'


def test_prose_outside_the_payload_is_not_touched() -> None:
    text = 'Note:\u200b here {"a\u200b": 1}'
    doc = normalize_document(text)
    start = text.index("{")
    assert (doc.text, clean_payload(text[start:]).text) == (text, '{"a": 1}')


def test_clean_payload_on_large_input() -> None:
    text = "[" + ", ".join(['"\u200bx"'] * 50_000) + "]"
    assert clean_payload(text).removed == 50_000
