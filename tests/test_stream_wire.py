"""``llmfix.stream.wire``: the formats streams arrive in, detected and decoded in any chunking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmfix.stream.sniff import is_record
from llmfix.stream.wire import (
    Delta,
    WireDecoder,
    is_stream_record,
    looks_like_stream,
    reassemble,
)

STREAMS = Path(__file__).parent / "data" / "streams"
ANSWER = (STREAMS / "raw.txt").read_text().rstrip("\n")


def decode(text: str, size: int) -> tuple[WireDecoder, list[Delta]]:
    decoder = WireDecoder()
    deltas: list[Delta] = []
    for start in range(0, len(text), size):
        deltas += decoder.feed(text[start : start + size])
    return decoder, deltas + decoder.close()


@pytest.mark.parametrize(
    ("name", "fmt", "stop", "calls"),
    [
        ("raw.txt", "raw", None, []),
        ("openai_chat.sse", "openai-chat", "stop", []),
        (
            "openai_responses.sse",
            "openai-responses",
            "completed",
            [("call_r1", '{"city": "Oslo"}')],
        ),
        ("anthropic.sse", "anthropic", "tool_use", [("toolu_01", '{"city": "Lima"}')]),
        ("ollama.ndjson", "ollama", "stop", [("call_0", '{"city": "Rome"}')]),
        (
            "openai_chat_tools.sse",
            "openai-chat",
            "length",
            [("call_a", '{"city": "Paris", "unit": "celsius"}'), ("call_b", '{"city": "Ber')],
        ),
    ],
)
@pytest.mark.parametrize("size", [1, 5, 64, 100_000])
def test_every_format_decodes_the_same_in_any_chunking(
    name: str, fmt: str, stop: str | None, calls: list[tuple[str, str]], size: int
) -> None:
    text = (STREAMS / name).read_text()
    decoder, deltas = decode(text, size)
    assert decoder.format == fmt
    assert decoder.stop_reason == stop
    content = "".join(d.text for d in deltas if d.kind == "text")
    expected_content = "" if name == "openai_chat_tools.sse" else ANSWER
    assert content.rstrip("\n") == expected_content
    message = decoder.message()["choices"][0]
    assert message["finish_reason"] == stop
    got = [(c["id"], c["function"]["arguments"]) for c in message["message"].get("tool_calls", [])]
    assert got == calls
    pieces: dict[int, str] = {}
    for delta in deltas:
        if delta.kind == "tool":
            pieces[delta.index] = pieces.get(delta.index, "") + delta.text
    assert [pieces[k] for k in sorted(pieces)] == [arguments for _, arguments in calls]


def test_anthropic_tool_call_is_done_at_its_block_stop_and_thinking_is_reasoning() -> None:
    _, deltas = decode((STREAMS / "anthropic.sse").read_text(), 9)
    done = [d for d in deltas if d.kind == "tool" and d.done]
    assert [(d.index, d.text) for d in done] == [(0, "")]
    reasoning = "".join(d.text for d in deltas if d.kind == "reasoning")
    assert reasoning == 'The user wants {"name": ...} as JSON.'
    assert reassemble((STREAMS / "anthropic.sse").read_text()).message()["model"] == (
        "claude-sonnet-4-5"
    )


def test_detection_waits_only_as_long_as_it_must() -> None:
    decoder = WireDecoder()
    assert decoder.feed("da") == []  # may become "data:"
    assert decoder.feed("ta: {") == []
    assert decoder.format == "auto"
    assert decoder.feed('"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n') == [
        Delta("text", "hi")
    ]
    assert decoder.format == "openai-chat"
    raw = WireDecoder()
    assert raw.feed("Sure, ") == [Delta("text", "Sure, ")]  # prose: raw at once
    assert raw.format == "raw"
    answer = WireDecoder()
    assert answer.feed('{"name": "Ada"') == []  # a JSON answer or an NDJSON record?
    assert answer.feed(', "age": 36}\n') == [Delta("text", '{"name": "Ada", "age": 36}\n')]
    assert answer.format == "raw"


@pytest.mark.parametrize(
    ("text", "stream"),
    [
        ("data: hello world", False),  # a sentence, not an event stream
        ("id: 5\nname: x\n", False),
        (": keep-alive\n\ndata: [DONE]\n\n", True),
        ('event: ping\ndata: {"type": "ping"}\n\n', True),
        ('{"a": 1}\n{"b": 2}\n', False),
        ('{"model": "m", "response": "x", "done": false}\n', True),
        ('{"model": "m", "message": {"content": "{}"}, "done": true}\n', False),  # a log line
        ('{"object": "chat.completion.chunk", "choices": []}\n', True),
        ("Here is the JSON: {}", False),
    ],
)
def test_saved_streams_are_told_from_answers(text: str, stream: bool) -> None:
    assert looks_like_stream(text) is stream


def test_records_that_are_not_json_and_error_events_are_reported() -> None:
    text = (
        'data: {"choices": [{"index": 0, "delta": {"content": "{\\"a\\": 1}"}}]}\n\n'
        "data: {not json\n\n"
        'event: error\ndata: {"type": "error", "error": {"message": "Overloaded"}}\n\n'
    )
    decoder = reassemble(text)
    assert decoder.content == '{"a": 1}'
    assert len(decoder.errors) == 2
    assert "not JSON" in decoder.errors[0]
    assert "Overloaded" in decoder.errors[1]


def test_ollama_generate_chunks_and_openai_reasoning_content() -> None:
    lines = [
        {"model": "m", "response": '{"ok": ', "thinking": "hmm", "done": False},
        {"model": "m", "response": "true}", "done": True, "done_reason": "length"},
    ]
    decoder = reassemble("".join(json.dumps(line) + "\n" for line in lines))
    assert (decoder.format, decoder.content, decoder.stop_reason) == (
        "ollama",
        '{"ok": true}',
        "length",
    )
    assert decoder.message()["choices"][0]["message"]["reasoning_content"] == "hmm"
    chunk = {"choices": [{"index": 0, "delta": {"reasoning_content": "first", "content": "x"}}]}
    _, deltas = decode(f"data: {json.dumps(chunk)}\n\n", 3)
    assert [(d.kind, d.text) for d in deltas] == [("reasoning", "first"), ("text", "x")]
    with pytest.raises(ValueError, match="unknown stream format"):
        WireDecoder("grpc")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"object": "chat.completion.chunk", "choices": []}', True),
        ('{"object": "chat.completion.chunk"}  \r', True),
        ('{"type": "response.output_text.delta"}\t', True),
        ('{"object": "chat.completion"}', False),
        ("{", False),
        ('{"object": "chat.completion.chunk"', False),
        ('{"object": "chat.completion.chunk"} x', False),
        ("[1]", False),
    ],
)
def test_a_stream_record_is_one_whole_json_object_of_a_streaming_api(
    line: str, expected: bool
) -> None:
    assert is_stream_record(line) is expected


def _decoded_verdict(line: str) -> bool:
    """What is_stream_record answers, asked of the decoded record (no shortcut)."""
    try:
        return is_record(json.loads(line))
    except ValueError:
        return False


@pytest.mark.parametrize(
    "line",
    [
        '{"object": "chat.completion.chunk", "choices": []}',
        '{"object": "chat\\u002ecompletion.chunk"}',  # escaped: decoded, still a chunk
        '{"\\u0074ype": "ping"}',
        '{"type": "ping"}',
        '{"type": "shipping", "note": "ping pong"}',
        '{"type": "response.created", "response": {}}',
        '{"type": "message_start", "message": {}}',
        '{"type": "content_block_delta", "delta": {"text": "x"}}',
        '{"done": false, "message": {"content": "x"}}',
        '{"done": false, "response": "x"}',
        '{"done": true, "response": "x"}',
        '{"do\\u006ee": false, "response": "x"}',
        '{"name": "Ada", "age": 36, "tags": ["done", "response.x"]}',
        '{"name": "Ada", "object": "chat.completion.chunk.v2"}',
        '{"orders": [{"status": "shipped", "items": []}], "page": 1}',
        '{"a": "\\"done\\""}',
    ],
)
def test_a_line_with_no_mark_of_a_record_is_told_without_decoding_it(line: str) -> None:
    assert is_stream_record(line) is _decoded_verdict(line)
