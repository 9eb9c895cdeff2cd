"""llmfix.formats: the one reader of each format (fences, envelopes, <invoke>, JSON in prose)."""

from __future__ import annotations

import json
import re
import time
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmfix.deadline import Deadline, OutOfTime
from llmfix.formats import ForwardSearch, envelopes, fences, invoke, prose, strip_span


def _spent() -> Deadline:
    deadline = Deadline(0.001, "extract")
    time.sleep(0.002)
    return deadline


# -- fences ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```json\n{"a": 1}\n```', ("```", "json", 8)),
        ("~~~~ \n[1]\n~~~~", ("~~~~", "", 6)),
        ('```json{"a": 1}```', ("```", "json", 7)),
        ("````\r\n[1]\n````", ("````", "", 6)),
    ],
)
def test_opening_reads_marker_info_and_content_start(
    text: str, expected: tuple[str, str, int]
) -> None:
    opening = fences.opening(text, 0, len(text))
    assert opening is not None
    assert (opening.group(1), fences.info(opening), opening.end()) == expected


@pytest.mark.parametrize("text", ["``json\n", "```json and prose", "~~~~~~~~~~"])
def test_opening_needs_a_run_of_three_and_a_line_break_or_value(text: str) -> None:
    assert fences.opening(text, 0, len(text)) is None


def test_closer_needs_a_run_as_long_as_the_opening_that_starts_or_ends_a_line() -> None:
    text = "````\n```\ninner\n```\n````\nafter ```json\n[1]\n```"
    closer = fences.FenceCloser(text)
    start = text.index("\n") + 1
    assert closer.close("`", 4, start, len(text)) == (text.index("\n````") + 1, 23)
    # the run before "json" opens the next fence: it closes nothing
    later = text.index("after")
    assert closer.close("`", 3, later, len(text)) == (len(text) - 3, len(text))
    # past the limit: none
    assert closer.close("`", 3, later, len(text) - 1) is None


def test_closer_answers_again_for_an_earlier_start() -> None:
    text = "```\na\n```\nb\n```\nc\n```"
    closer = fences.FenceCloser(text)
    assert closer.close("`", 3, 11, len(text)) == (12, 15)
    assert closer.close("`", 3, 4, len(text)) == (6, 9)


def test_runs_lists_every_run_of_three_or_more() -> None:
    assert fences.runs("a ``` b `` c ~~~~~ ````", "`") == [(2, 5), (19, 23)]


def test_run_end_skips_the_whole_run() -> None:
    assert fences.run_end("~~~~~x", 0, 6) == 5


def test_inside_takes_the_lines_between_backtick_fences() -> None:
    text = '  ```json\n{"a": 1}\n```  '
    start, end = fences.inside(text, 0, len(text))
    assert text[start:end] == '{"a": 1}\n'
    assert fences.inside("  [1] ", 0, 6) == (2, 5)


def test_drop_empty_removes_fences_holding_only_whitespace() -> None:
    assert fences.drop_empty("a\n```json\n\n```\nb") == "a\n\nb"
    assert fences.drop_empty("```\nx\n```") == "```\nx\n```"


def test_marker_end_and_next_backticks_as_the_parser_reads_them() -> None:
    text = 'x ```jsonc {"a": 1} ```'
    assert fences.next_backticks(text, 0, len(text)) == (2, 5)
    assert fences.marker_end(text, 2, len(text)) == 10
    assert fences.marker_end(text, 0, len(text)) == 0
    assert fences.next_backticks(text, 6, len(text)) == (20, 23)
    assert fences.next_backticks(text, 21, len(text)) is None


# -- envelopes ------------------------------------------------------------------------


def test_open_tag_matches_any_case_prefix_and_attributes() -> None:
    text = '<ns:Answer id="1">[1]</ns:answer>'
    m = envelopes.open_tag(text, 0, len(text))
    assert m is not None
    assert (m.group(1).lower(), m.end()) == ("answer", 18)
    assert envelopes.open_tag("<answers>", 0, 9) is None
    assert envelopes.open_tag("<json/>", 0, 7) is not None


def test_close_pattern_with_forward_search_respects_the_limit() -> None:
    text = "<json>[1]</JSON> <json>[2]</x:json>"
    search = ForwardSearch(text)
    pattern = envelopes.close_pattern("json")
    first = search.find(pattern, 6, len(text))
    assert first is not None
    assert first.span() == (9, 16)
    second = search.find(pattern, 23, len(text))
    assert second is not None
    assert second.span() == (26, 35)
    assert search.find(pattern, 23, 30) is None


def test_forward_search_reuses_a_match_still_ahead() -> None:
    search = ForwardSearch("a.b.c")
    dot = re.compile(r"\.")
    assert [m.start() for m in (search.find(dot, 0), search.find(dot, 1))] == [1, 1]
    found = search.find(dot, 2)
    assert found is not None
    assert found.start() == 3


def test_reasoning_tags() -> None:
    text = "<Think x='1'>plan</think> answer"
    m = envelopes.reasoning_tag(text, 0)
    assert m is not None
    assert (m.group(1), m.group(2).lower()) == ("", "think")
    close = envelopes.reasoning_close("think", text, m.end())
    assert close is not None
    assert close.end() == 25
    assert envelopes.drop_reasoning_tags(text) == "plan answer"


def test_strip_span() -> None:
    assert strip_span("  ab \n", 0, 6) == (2, 4)
    assert strip_span("   ", 0, 3) == (3, 3)


# -- <invoke> -------------------------------------------------------------------------


def _read(text: str) -> invoke.Invoke:
    tag = invoke.find_opening(text, 0, len(text))
    assert tag is not None
    return invoke.read(ForwardSearch(text), tag, len(text))


def test_invoke_reads_name_and_parameters_as_written() -> None:
    text = (
        'say <invoke name="search">\n<parameter name="q">\nhello\n</parameter>'
        '<parameter name="n">3</parameter></invoke> done'
    )
    block = _read(text)
    assert (block.name, block.prefix, block.start, block.closed) == ("search", "", 4, True)
    assert text[block.end :] == " done"
    assert [(p.name, p.raw) for p in block.parameters] == [("q", "\nhello\n"), ("n", "3")]
    assert invoke.trim_newline(block.parameters[0].raw) == "hello"


def test_invoke_parameter_without_closing_tag_ends_at_the_next_parameter() -> None:
    block = _read('<invoke name="f"><parameter name="a">1<parameter name="b">2</parameter>')
    assert [(p.name, p.raw) for p in block.parameters] == [("a", "1"), ("b", "2")]
    assert not block.closed


def test_dsml_invoke_with_string_flags() -> None:
    text = (
        '<｜DSML｜invoke name="f"><｜DSML｜parameter name="a" string="false">1'
        '</｜DSML｜parameter><｜DSML｜parameter name="b" string="true">x</｜DSML｜parameter>'
        "</｜DSML｜invoke>"
    )
    block = _read(text)
    assert block.prefix == "｜DSML｜"
    assert [(p.name, p.string) for p in block.parameters] == [("a", False), ("b", True)]
    assert block.end == len(text)


def test_invoke_without_names() -> None:
    block = _read("<Invoke><parameter>x</parameter></INVOKE>")
    assert (block.name, block.closed) == (None, True)
    assert [(p.name, p.raw, p.string) for p in block.parameters] == [(None, "x", None)]


def test_parameters_with_the_invoke_prefix_or_none() -> None:
    text = (
        '<ns:invoke name="f"><NS:parameter name="a">1</parameter><parameter name="b">2'
        '</ns:parameter><x:parameter name="c">3</x:parameter></invoke>'
    )
    block = _read(text)
    assert [(p.name, p.raw) for p in block.parameters] == [
        ("a", "1"),
        ("b", "2"),
    ]
    assert block.closed


def test_block_end() -> None:
    text = '<ns:invoke name="f"></ns:invoke> rest'
    tag = invoke.opening(text, 0)
    assert tag is not None
    assert invoke.block_end(ForwardSearch(text), tag, len(text)) == 32
    assert invoke.block_end(ForwardSearch(text), tag, 20) == 20


@pytest.mark.parametrize(
    ("tag", "name"),
    [('<x name="a b">', "a b"), ("<x NAME='c'>", "c"), ("<x name=d>", "d"), ("<x>", None)],
)
def test_attribute_name(tag: str, name: str | None) -> None:
    assert invoke.attribute_name(tag) == name


# -- JSON in prose --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "plausible"),
    [
        ('{"a": 1}', True),
        ("{key: 1}", True),
        ("{name}", False),
        ("[value]", False),
        ("[1, 2]", True),
        ('[[{"a": 1}]]', True),
        ("[[x]]", False),
    ],
)
def test_plausible_value(text: str, plausible: bool) -> None:
    assert prose.plausible_value(text, 0, len(text)) is plausible
    assert (re.match(prose.VALUE_START, text) is not None) is (plausible or text.startswith("[["))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "}"} tail', (10, True)),
        ('{"a": [1}', (9, True)),
        ("{'it''s': 1}", (12, True)),
        ('{"a": [1, 2', (11, False)),
        ('{"a": 1\n```\nmore', (8, False)),
        ('{"a": <answer>', (6, False)),
    ],
)
def test_scan_value(text: str, expected: tuple[int, bool]) -> None:
    assert prose.scan_value(text, 0, len(text)) == expected


# Pieces a value is made of, the awkward ones included: escapes, a string cut off,
# brackets inside strings, mismatched closers, apostrophes, a fence, a tag.
_VALUE_PIECES = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        '"',
        '\\"',
        "\\",
        '"k": ',
        '"}]"',
        ", ",
        "1",
        "'",
        "'v'",
        ": '",
        "{'",
        "\\'",
        "\n",
        "```",
        "<answer>",
        "x",
        " " * 40,
        '"' + "y" * 60 + '"',
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["{", "["]), st.lists(_VALUE_PIECES, max_size=60))
def test_scan_value_settled_agrees_with_the_token_loop(opener: str, pieces: list[str]) -> None:
    """The C-speed answer for a large value is the token loop's, or no answer at all."""
    text = opener + "".join(pieces)
    limit = len(text)
    fast = prose._settled(text, 0, limit, lambda: None)
    if fast is not None:
        with patch.object(prose, "_SETTLE_MIN", 10**9):
            assert prose.scan_value(text, 0, limit) == fast


def test_scan_value_settles_large_values_without_the_loop() -> None:
    document = json.dumps({"items": [{"id": i, "tags": ["a", "}"]} for i in range(200)]})
    assert prose._settled(document, 0, len(document), lambda: None) == (len(document), True)
    cut = document[: len(document) * 9 // 10]
    assert prose._settled(cut, 0, len(cut), lambda: None) == (len(cut), False)
    assert prose.scan_value(document + " and more", 0, len(document) + 9) == (len(document), True)


def test_scan_value_checks_its_deadline() -> None:
    text = '{"a": [' * 5000
    assert prose.scan_value(text, 0, len(text)) == (len(text), False)
    with pytest.raises(OutOfTime):
        prose.scan_value(text, 0, len(text), _spent())
