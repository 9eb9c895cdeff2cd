"""``llmfix.stream``: snapshots while the answer arrives, ``close()`` equal to ``llmfix.repair``.

The equivalence tests feed every case of every corpus (the two JSON repair corpora, vLLM's
tool-call corpus, the golden cases) in random chunk sizes from one character up, and check
that ``close()`` gives exactly what the non-streaming call gives, and that no snapshot takes
back what an earlier one showed (see ``shows_at_least``).
"""

from __future__ import annotations

import json
import random
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

import llmfix
from llmfix.errors import ConfigError, LlmfixError
from llmfix.model import Risk
from llmfix.stream import reader
from llmfix.stream.reader import Event, StreamParser
from llmfix.toolcalls import check_tool_calls
from llmfix.toolcalls.registry import ToolRegistry

TESTS = Path(__file__).parent
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def shows_at_least(old: Any, new: Any, growing: bool = False) -> bool:
    """Whether snapshot ``new`` still shows everything ``old`` showed, unchanged.

    Objects keep their keys in order, arrays their items; scalars are equal. With
    ``growing``, a string may have grown (``strings="growing"``).
    """
    if isinstance(old, dict):
        if not isinstance(new, dict) or list(new)[: len(old)] != list(old):
            return False
        return all(shows_at_least(old[k], new[k], growing) for k in old)
    if isinstance(old, list):
        if not isinstance(new, list) or len(new) < len(old):
            return False
        return all(shows_at_least(a, b, growing) for a, b in zip(old, new, strict=False))
    if growing and isinstance(old, str) and isinstance(new, str):
        return new.startswith(old)
    if isinstance(old, float) and old != old:
        return isinstance(new, float) and new != new
    return type(old) is type(new) and old == new


def chunks(text: str, seed: int | str, largest: int = 9) -> list[str]:
    rng = random.Random(zlib.crc32(str(seed).encode()))
    out = []
    start = 0
    while start < len(text):
        size = rng.randint(1, largest)
        out.append(text[start : start + size])
        start += size
    return out


def feed(parser: StreamParser, pieces: list[str]) -> list[Event]:
    """Feed every piece, then flush (as the CLI does when the stream ends)."""
    events: list[Event] = []
    for piece in pieces:
        events += parser.feed(piece)
    return events + parser.flush()


def feed_live(parser: StreamParser, pieces: list[str]) -> list[Event]:
    """Feed and flush every piece, as the CLI does after each read from the wire."""
    events: list[Event] = []
    for piece in pieces:
        events += parser.feed(piece) + parser.flush()
    return events


def step(parser: StreamParser, piece: str) -> list[Any]:
    """The snapshots one piece makes, read at once (``flush``)."""
    return values(parser.feed(piece) + parser.flush())


def same_result(a: llmfix.Result, b: llmfix.Result) -> bool:
    one, two = a.to_dict(), b.to_dict()
    one.pop("timings")
    two.pop("timings")
    return one == two


def assert_monotonic(events: list[Event], growing: bool = False) -> None:
    shown: dict[tuple[str, int], Any] = {}
    for event in events:
        if event.kind not in ("value", "arguments"):
            continue
        key = (event.kind, event.index)
        if key in shown:
            assert shows_at_least(shown[key], event.value, growing), (shown[key], event.value)
        shown[key] = event.value


def _golden(directory: Path) -> list[tuple[str, str, Any, dict[str, Any]]]:
    cases = []
    for case in sorted(p for p in directory.iterdir() if (p / "input.txt").exists()):
        with (case / "input.txt").open(encoding="utf-8", newline="") as handle:
            text = handle.read()
        schema = case / "schema.json"
        options = case / "options.json"
        cases.append(
            (
                case.name,
                text,
                json.loads(schema.read_text()) if schema.exists() else None,
                json.loads(options.read_text()) if options.exists() else {},
            )
        )
    return cases


def _corpus(name: str) -> list[dict[str, Any]]:
    with (TESTS / "corpora" / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# Every case of the two JSON repair corpora (whatever options they were written for: the
# answer expected does not matter here, only that streaming changes nothing) and the goldens.
REPAIR_CASES = [
    (raw["id"], raw["input"], raw.get("schema"))
    for corpus in ("jsonrepair.jsonl", "json_repair.jsonl")
    for raw in _corpus(corpus)
] + [(name, text, schema) for name, text, schema, _ in _golden(TESTS / "cases")]


@pytest.fixture(autouse=True)
def _deep_recursion() -> Any:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))  # shows_at_least on deeply nested corpus cases
    yield
    sys.setrecursionlimit(limit)


def test_close_equals_repair_on_every_corpus_case() -> None:
    assert len(REPAIR_CASES) > 900
    checked = 0
    for case_id, text, schema in REPAIR_CASES:
        try:
            expected = llmfix.repair(text, schema=schema)
        except LlmfixError:
            with pytest.raises(LlmfixError):
                llmfix.stream(schema=schema)
            continue
        for largest in (1, 9):
            parser = llmfix.stream(schema=schema)
            events = feed(parser, chunks(text, f"{case_id}/{largest}", largest))
            assert same_result(parser.close(), expected), case_id
            assert_monotonic(events)
        checked += 1
    assert checked > 900


def test_close_equals_the_tool_call_check_on_every_tool_case() -> None:
    cases = [
        (raw["id"], raw["input"], raw.get("tools"), {}) for raw in _corpus("vllm_tool_calls.jsonl")
    ]
    default_tools = json.loads((TESTS / "cases_tools" / "tools.json").read_text())
    for name, text, _, options in _golden(TESTS / "cases_tools"):
        tools = TESTS / "cases_tools" / name / "tools.json"
        registry = json.loads(tools.read_text()) if tools.exists() else default_tools
        cases.append((name, text, registry, options))
    assert len(cases) > 350
    for case_id, text, tools, options in cases:
        registry = ToolRegistry.from_value(tools, source=case_id, strict=False) if tools else None
        rest = {k: v for k, v in options.items() if k != "max_risk"}
        risk = Risk.parse(options["max_risk"]) if "max_risk" in options else None
        expected = check_tool_calls(text, registry, max_risk=risk, **rest)
        parser = StreamParser(
            options=llmfix.make_options(max_risk=risk),
            registry=registry,
            tools=True,
            tool_options=rest,
        )
        events = feed(parser, chunks(text, case_id, 7))
        assert same_result(parser.close(), expected), case_id
        assert_monotonic(events)
        released = [e.call for e in events if e.kind == "tool_call"]
        # A released call is one the whole-text check keeps, in the same place.
        assert released == expected.value[: len(released)], case_id


def values(events: list[Event]) -> list[Any]:
    return [e.value for e in events if e.kind == "value"]


def test_keys_show_only_once_their_value_began_and_scalars_once_complete() -> None:
    parser = llmfix.stream()
    shown = [step(parser, piece) for piece in ['{"a": 1', "2", ', "b": "x', 'y", ']]
    assert shown[0] == [{}]
    assert shown[1] == []
    assert shown[2] == [{"a": 12}]  # the comma ended the number
    assert shown[3] == [{"a": 12, "b": "xy"}]  # the comma ended the string
    assert step(parser, '"c": {') == []  # "c" holds a "{" that may still be a set
    shown_last = step(parser, '"d": tr') + step(parser, "ue}}")
    assert shown_last[0] == {"a": 12, "b": "xy", "c": {}}  # "d": began the object
    assert shown_last[-1] == {"a": 12, "b": "xy", "c": {"d": True}}
    assert parser.close().value == {"a": 12, "b": "xy", "c": {"d": True}}


def test_growing_strings_show_the_open_string_only_when_asked() -> None:
    text = '{"title": "A long title", "n": 1}'
    growing = llmfix.stream(strings="growing")
    complete = llmfix.stream()
    grown = feed(growing, list(text))
    whole = feed(complete, list(text))
    assert {"title": "A long"} in values(grown)
    assert all(v == {} or "title" not in v or v["title"] == "A long title" for v in values(whole))
    assert_monotonic(grown, growing=True)
    assert values(grown)[-1] == values(whole)[-1] == {"title": "A long title", "n": 1}
    with pytest.raises(ConfigError):
        llmfix.stream(strings="partial")


def test_fences_prose_and_reasoning_as_they_arrive() -> None:
    text = (
        '<think>The user wants {"a": 1}. I will answer.</think>Sure, here it is:\n'
        "```json\n{'a': 2, \"b\": [True, None,],}\n```\nDone."
    )
    parser = llmfix.stream()
    events = feed(parser, chunks(text, "fence", 3))
    reasoning = "".join(e.text or "" for e in events if e.kind == "reasoning")
    prose = "".join(e.text or "" for e in events if e.kind == "text")
    assert reasoning == 'The user wants {"a": 1}. I will answer.'
    assert prose.startswith("Sure, here it is:")
    assert prose.endswith("Done.")
    assert "```" not in prose
    assert "<think>" not in prose
    assert values(events)[-1] == {"a": 2, "b": [True, None]}  # never the think block's {"a": 1}
    last = [e for e in events if e.kind == "value"][-1]
    assert last.complete
    repairs = {d.code for d in last.diagnostics}
    assert {"parse.single_quotes", "parse.python_literal", "parse.trailing_comma"} <= repairs
    assert {"extract.fence", "normalize.reasoning_block"} <= repairs
    assert same_result(parser.close(), llmfix.repair(text))


def test_prose_before_the_json_is_released_not_held_back() -> None:
    parser = llmfix.stream()
    first = parser.feed("Let me think about {name} for a second. ") + parser.flush()
    assert "".join(e.text or "" for e in first if e.kind == "text").startswith("Let me think")
    events = parser.feed('Result: {"ok": true}\n') + parser.flush()
    assert values(events) == [{"ok": True}]


def test_required_properties_still_missing_in_each_snapshot() -> None:
    schema = {
        "type": "object",
        "required": ["name", "address"],
        "properties": {
            "address": {"type": "object", "required": ["city", "zip"]},
        },
    }
    parser = llmfix.stream(schema=schema)
    text = '{"name": "Ada", "address": {"city": "Paris", "zip": "75001"}}'
    events = feed_live(parser, list(text))
    snapshots = [e for e in events if e.kind == "value"]
    assert [s.missing for s in snapshots[:2]] == [["/name", "/address"], ["/address"]]
    assert snapshots[1].value == {"name": "Ada"}
    assert snapshots[1].to_dict()["missing"] == ["/address"]
    seen = {json.dumps(s.value): s.missing for s in snapshots}
    assert seen['{"name": "Ada", "address": {"city": "Paris"}}'] == ["/address/zip"]
    assert snapshots[-1].missing == []
    assert snapshots[-1].complete


def test_unfollowable_text_stops_snapshots_instead_of_guessing() -> None:
    parser = llmfix.stream()
    events = feed_live(parser, list('{"a": 1, "b": 2 "c": 3}'))
    assert values(events)[-1] == {"a": 1}  # 2 was never confirmed by a delimiter
    stopped = [e for e in events if e.kind == "stopped"]
    assert len(stopped) == 1
    assert stopped[0].diagnostics[0].code == "stream.stopped"
    assert parser.feed("more") == []
    assert same_result(parser.close(), llmfix.repair('{"a": 1, "b": 2 "c": 3}more'))


def test_text_tool_calls_are_released_in_order_only_when_complete_and_valid() -> None:
    text = (
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome"}}</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Ber'
    )
    parser = llmfix.stream(tools=TOOLS)
    events = feed(parser, chunks(text, "tools", 5))
    released = [e.call for e in events if e.kind == "tool_call"]
    # The second call lacks "city": the ordered gate holds it and everything after it.
    assert released == [{"id": None, "name": "get_weather", "arguments": {"city": "Paris"}}]
    result = parser.close()
    assert "tools.truncated_call" in {d.code for d in result.diagnostics}
    assert same_result(result, check_tool_calls(text, ToolRegistry.from_value(TOOLS)))


def test_structured_tool_calls_released_when_complete_cut_off_reported() -> None:
    parser = llmfix.stream(tools=TOOLS)
    events = parser.feed_tool_call(0, id="call_a", name="get_weather", arguments='{"ci')
    events += parser.feed_tool_call(0, arguments='ty": "Paris"}')
    events += parser.feed_tool_call(1, id="call_b", name="get_weather", arguments='{"city": "Be')
    events += parser.flush()
    calls = [e for e in events if e.kind == "tool_call"]
    assert [c.call for c in calls] == [
        {"id": "call_a", "name": "get_weather", "arguments": {"city": "Paris"}}
    ]
    arguments = [e for e in events if e.kind == "arguments" and e.index == 0]
    assert arguments[-1].value == {"city": "Paris"}
    assert arguments[-1].complete
    result = parser.close()
    cut = [d for d in result.diagnostics if d.code == "tools.truncated_call"]
    assert cut
    assert not result.ok
    assert [c["id"] for c in result.value] == ["call_a"]


def test_flush_shows_a_value_the_last_chunk_completed() -> None:
    parser = llmfix.stream()
    assert values(parser.feed('{"name": "Ad')) == []
    assert values(parser.feed('a", "age": 3')) == []
    late = values(parser.feed("6}"))  # retried later, to keep the work linear...
    now = late or values(parser.flush())  # ... unless asked
    assert now == [{"name": "Ada", "age": 36}]


def test_work_is_linear_in_the_text_whatever_the_chunk_size(monkeypatch: Any) -> None:
    """Feeding one character at a time does not re-read what was already read.

    The reader is entered (and the pending text joined) only a logarithmic number of times
    while one long string or a long array arrives, not once per chunk.
    """
    runs = 0
    original = StreamParser._run

    def counting(self: StreamParser) -> None:
        nonlocal runs
        runs += 1
        original(self)

    monkeypatch.setattr(StreamParser, "_run", counting)
    text = '{"essay": "' + "word " * 20_000 + '"}'
    parser = llmfix.stream()
    events = feed(parser, list(text))
    assert runs < 200  # 100,000 chunks
    assert values(events)[-1] == {"essay": "word " * 20_000}
    runs = 0
    rows = "[" + ",".join(json.dumps({"id": i, "tags": ["a", "b"]}) for i in range(3000)) + "]"
    feed(llmfix.stream(), list(rows))
    assert runs < len(rows) / 10


def test_stream_options_are_checked() -> None:
    with pytest.raises(ConfigError):
        llmfix.stream(pick="sometimes")
    with pytest.raises(ConfigError):
        llmfix.stream(schema={"type": "object"}, tools=TOOLS)
    parser = llmfix.stream()
    parser.close()
    with pytest.raises(ValueError, match="closed"):
        parser.feed("x")
    assert reader.STRING_MODES == ("complete", "growing")


def test_tool_calls_still_released_after_the_reader_stopped() -> None:
    text = '[get_weather(city="Paris"), get_weather(city="Rome")]'
    parser = llmfix.stream(tools=TOOLS)
    events = feed(parser, chunks(text, "pythonic", 4))
    assert [e.kind for e in events if e.kind == "stopped"] == ["stopped"]  # a bare word
    released = [e.call["arguments"] for e in events if e.kind == "tool_call" and e.call]
    assert released == [{"city": "Paris"}, {"city": "Rome"}]
    assert same_result(parser.close(), check_tool_calls(text, ToolRegistry.from_value(TOOLS)))


def test_the_notes_are_the_diagnostics_their_codes_make() -> None:
    """The reader builds its notes field by field (a broken answer has one every few
    members): each is the value ``code.at(...)`` gives, compares, hashes and serialises
    as one."""
    from llmfix import codes
    from llmfix.model import Span

    parser = llmfix.stream()
    text = '```json\n[{\'a\': True, b: None, "c": [1, 2,],}, // done\n{"d": False}]\n```'
    for start in range(0, len(text), 3):
        parser.feed(text[start : start + 3])
    parser.flush()
    notes = parser.diagnostics
    assert {d.code for d in notes} >= {
        "parse.single_quotes",
        "parse.python_literal",
        "parse.unquoted_key",
        "parse.trailing_comma",
        "parse.comment",
        "extract.fence",
    }
    for note in notes:
        assert note.span is not None
        made = codes.get(note.code).at(
            note.message,
            span=Span(note.span.start, note.span.end),
            risk=note.risk,
            severity=note.severity,
        )
        assert note == made
        assert hash(note) == hash(made)
        assert note.to_dict() == made.to_dict()
        assert text[note.span.start : note.span.end]  # within the text fed
