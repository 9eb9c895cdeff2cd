"""SDK objects as input: what the ``openai`` and ``anthropic`` clients return, read like the
JSON they came as (``read_response``, ``repair_response``, ``llmfix.repair``).

The objects come from the real SDKs talking to the local server (``tests/llm_server.py``),
which answers with the recorded responses of ``tests/data/responses``: each must give the
statuses its JSON gives (the same stop-reason rules), and so must the SDKs' stream events.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import llmfix
from llmfix.batch.responses import read_response, repair_response
from llmfix.model import Status
from tests.llm_server import LlmServer, Reply, openai_reply

DATA = Path(__file__).resolve().parent / "data" / "responses"
SENTIMENT = json.loads((DATA / "sentiment.schema.json").read_text())


_CLIENTS: list[Any] = []


def openai_client(server: LlmServer) -> Any:
    client = openai.OpenAI(base_url=server.openai_base, api_key="test", max_retries=0)
    _CLIENTS.append(client)
    return client


def anthropic_client(server: LlmServer) -> Any:
    client = anthropic.Anthropic(base_url=server.anthropic_base, api_key="test", max_retries=0)
    _CLIENTS.append(client)
    return client


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Each client a test made is closed after it (an open socket fails the run)."""
    yield
    while _CLIENTS:
        _CLIENTS.pop().close()


def fetch(server: LlmServer, name: str) -> Any:
    """The SDK object the recorded response ``name`` becomes when the API sends it."""
    server.enqueue(Reply(body=json.loads((DATA / name).read_text())))
    if name.startswith("openai_chat"):
        return openai_client(server).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
    if name.startswith("responses"):
        return openai_client(server).responses.create(model="m", input="hi")
    return anthropic_client(server).messages.create(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    )


RECORDED = sorted(
    p.name
    for p in DATA.glob("*.json")
    if p.name.startswith(("openai_chat", "responses", "anthropic"))
)


def statuses(response: Any) -> list[str]:
    return [str(result.status) for _, result in repair_response(response, SENTIMENT)]


@pytest.mark.parametrize("name", RECORDED)
def test_an_sdk_object_reads_as_its_json(server: LlmServer, name: str) -> None:
    response = fetch(server, name)
    assert type(response).__module__.split(".")[0] in ("openai", "anthropic")
    as_json = json.loads((DATA / name).read_text())
    assert statuses(response) == statuses(as_json)
    assert [i.text for i in read_response(response)] == [i.text for i in read_response(as_json)]
    assert [i.finish for i in read_response(response)] == [i.finish for i in read_response(as_json)]


def test_the_stop_reasons_of_sdk_objects(server: LlmServer) -> None:
    cut = fetch(server, "openai_chat_length.json")
    assert llmfix.repair(cut, schema=SENTIMENT).status is Status.TRUNCATED
    refused = fetch(server, "anthropic_refusal.json")
    assert llmfix.repair(refused).status is Status.REFUSED
    incomplete = fetch(server, "responses_incomplete.json")
    assert llmfix.repair(incomplete, schema=SENTIMENT).status is Status.TRUNCATED


def test_repair_takes_a_completion_and_a_model(server: LlmServer) -> None:
    import pydantic

    class Sentiment(pydantic.BaseModel):
        sentiment: str
        score: float

    server.enqueue(openai_reply('Here: ```json\n{"sentiment": "positive", "score": "0.9",}\n```'))
    completion = openai_client(server).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "rate it"}]
    )
    result = llmfix.repair(completion, schema=Sentiment)
    assert result.status is Status.REPAIRED
    assert result.parsed == Sentiment(sentiment="positive", score=0.9)


def sse(*events: tuple[str | None, Any]) -> Reply:
    lines = []
    for name, data in events:
        if name is not None:
            lines.append(f"event: {name}")
        lines.append("data: " + (data if isinstance(data, str) else json.dumps(data)))
        lines.append("")
    return Reply(body="\n".join(lines) + "\n", content_type="text/event-stream")


def chat_chunk(content: str | None, finish: str | None = None) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


@pytest.mark.parametrize(("finish", "status"), [("stop", "valid"), ("length", "truncated")])
def test_openai_stream_chunks(server: LlmServer, finish: str, status: str) -> None:
    server.enqueue(
        sse(
            (None, chat_chunk('{"sentiment": "neutral", ')),
            (None, chat_chunk('"score": 0.5, "tags": []}')),
            (None, chat_chunk(None, finish)),
            (None, "[DONE]"),
        )
    )
    stream = openai_client(server).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    events = list(stream)
    assert len(events) == 3
    result = llmfix.repair(events, schema=SENTIMENT)
    assert str(result.status) == status
    assert result.value == {"sentiment": "neutral", "score": 0.5, "tags": []}
    # the events' JSON reads the same
    assert str(llmfix.repair([e.model_dump() for e in events], schema=SENTIMENT).status) == status


def anthropic_events(text_pieces: list[str], stop_reason: str) -> Reply:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": message}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
    ]
    for piece in text_pieces:
        delta = {"type": "text_delta", "text": piece}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return sse(*events)


@pytest.mark.parametrize(("stop", "status"), [("end_turn", "valid"), ("max_tokens", "truncated")])
def test_anthropic_stream_events(server: LlmServer, stop: str, status: str) -> None:
    server.enqueue(
        anthropic_events(['{"sentiment": "neg', 'ative", "score": 0.1, "tags": []}'], stop)
    )
    with anthropic_client(server).messages.stream(
        model="m", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        events = list(stream)
        final = stream.get_final_message()
    assert {type(e).__module__.split(".")[0] for e in events} == {"anthropic"}
    result = llmfix.repair(events, schema=SENTIMENT)
    assert str(result.status) == status
    assert result.value == {"sentiment": "negative", "score": 0.1, "tags": []}
    assert str(llmfix.repair(final, schema=SENTIMENT).status) == status


def test_responses_stream_events(server: LlmServer) -> None:
    text = '{"sentiment": "positive", "score": 1, "tags": ["x"]}'
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "m",
        "status": "completed",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
    }
    events: list[tuple[str | None, Any]] = [
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": text[:20],
                "sequence_number": 1,
            },
        ),
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": text[20:],
                "sequence_number": 2,
            },
        ),
        (
            "response.completed",
            {"type": "response.completed", "response": response, "sequence_number": 3},
        ),
    ]
    server.enqueue(sse(*events))
    stream = openai_client(server).responses.create(model="m", input="hi", stream=True)
    found = list(stream)
    assert len(found) == 3
    result = llmfix.repair(found, schema=SENTIMENT)
    assert result.status is Status.VALID
    assert result.value == {"sentiment": "positive", "score": 1, "tags": ["x"]}


def test_a_list_that_is_not_a_stream_is_one_document() -> None:
    result = llmfix.repair([{"sentiment": "neutral", "score": 0}])
    assert result.status is Status.VALID
    assert result.value == [{"sentiment": "neutral", "score": 0}]
