"""Responses and streams in the three APIs' wire shapes, as the upstream of the proxy tests
(tests/test_proxy.py) replays them through tests/llm_server.py.

Each builder writes what the API sends, event for event: the OpenAI chat completion
(``chat.completion`` and its ``chat.completion.chunk`` stream ending in ``[DONE]``), the
OpenAI Responses object and its typed events (``response.created`` ...
``response.completed``), and the Anthropic message with its ``message_start`` ...
``message_stop`` events. A tool call is ``(id, name, pieces)``: its argument text in the
pieces the model streamed (joined for a whole response). Broken answers are built by
giving broken text; nothing here repairs anything.
"""

from __future__ import annotations

import json
from typing import Any

from tests.llm_server import Reply

Call = tuple[str, str, list[str]]
SSE = "text/event-stream; charset=utf-8"


def _data(record: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(record)}\n\n"


# ------------------------------------------------------------------ OpenAI chat


def chat_completion(
    content: str | None = None,
    calls: list[Call] = (),  # type: ignore[assignment]
    *,
    finish: str | None = None,
    refusal: str | None = None,
    model: str = "gpt-test",
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": "".join(p)}}
            for i, n, p in calls
        ]
    reason = finish or ("tool_calls" if calls else "stop")
    return Reply(
        body={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": reason, "logprobs": None}
            ],
            "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
        }
    )


def chat_stream(
    pieces: list[str] = (),  # type: ignore[assignment]
    calls: list[Call] = (),  # type: ignore[assignment]
    *,
    finish: str | None = None,
    model: str = "gpt-test",
    piece: int = 61,
    refusal: list[str] = (),  # type: ignore[assignment]
) -> Reply:
    def chunk(delta: dict[str, Any], reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}
        record = {
            "id": "chatcmpl-2",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "system_fingerprint": "fp_test",
            "choices": [choice],
        }
        return _data(record)

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    out += [chunk({"content": text}) for text in pieces]
    out += [chunk({"refusal": text}) for text in refusal]
    for k, (call_id, name, parts) in enumerate(calls):
        function = {"name": name, "arguments": ""}
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {"index": k, "id": call_id, "type": "function", "function": function}
                    ]
                }
            )
        )
        out += [chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]}) for p in parts]
    out.append(chunk({}, finish or ("tool_calls" if calls else "stop")))
    out.append("data: [DONE]\n\n")
    return Reply(body="".join(out), content_type=SSE, piece=piece)


# ------------------------------------------------------------------ OpenAI Responses


def _response(output: list[Any], status: str, model: str) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "model": model,
        "output": output,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "error": None,
        "instructions": None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 9,
            "output_tokens": 12,
            "total_tokens": 21,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _message_item(text: str, status: str = "completed") -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {
        "id": "msg_1",
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": [part],
    }


def _call_item(
    call_id: str, name: str, arguments: str, k: int, status: str = "completed"
) -> dict[str, Any]:
    return {
        "id": f"fc_{k}",
        "type": "function_call",
        "status": status,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def responses_object(
    text: str | None = None,
    calls: list[Call] = (),  # type: ignore[assignment]
    *,
    status: str = "completed",
    model: str = "gpt-test",
) -> Reply:
    output: list[Any] = [_message_item(text)] if text is not None else []
    output += [_call_item(i, n, "".join(p), k) for k, (i, n, p) in enumerate(calls)]
    return Reply(body=_response(output, status, model))


def responses_stream(
    pieces: list[str] = (),  # type: ignore[assignment]
    calls: list[Call] = (),  # type: ignore[assignment]
    *,
    status: str = "completed",
    model: str = "gpt-test",
    piece: int = 61,
) -> Reply:
    events: list[tuple[str, dict[str, Any]]] = []
    events.append(("response.created", {"response": _response([], "in_progress", model)}))
    events.append(("response.in_progress", {"response": _response([], "in_progress", model)}))
    output: list[Any] = []
    if pieces:
        index = len(output)
        text = "".join(pieces)
        item = _message_item("", "in_progress")
        item["content"] = []
        events.append(("response.output_item.added", {"output_index": index, "item": item}))
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": "msg_1", "output_index": index, "content_index": 0}
        events.append(("response.content_part.added", {**where, "part": part}))
        events += [("response.output_text.delta", {**where, "delta": p}) for p in pieces]
        events.append(("response.output_text.done", {**where, "text": text}))
        events.append(("response.content_part.done", {**where, "part": {**part, "text": text}}))
        output.append(_message_item(text))
        events.append(("response.output_item.done", {"output_index": index, "item": output[-1]}))
    for k, (call_id, name, parts) in enumerate(calls):
        index = len(output)
        added = _call_item(call_id, name, "", k, "in_progress")
        events.append(("response.output_item.added", {"output_index": index, "item": added}))
        where = {"item_id": f"fc_{k}", "output_index": index}
        events += [("response.function_call_arguments.delta", {**where, "delta": p}) for p in parts]
        arguments = "".join(parts)
        events.append(("response.function_call_arguments.done", {**where, "arguments": arguments}))
        output.append(_call_item(call_id, name, arguments, k))
        events.append(("response.output_item.done", {"output_index": index, "item": output[-1]}))
    final = "response.completed" if status == "completed" else "response.incomplete"
    events.append((final, {"response": _response(output, status, model)}))
    body = "".join(
        _data({"type": kind, "sequence_number": n, **record}, kind)
        for n, (kind, record) in enumerate(events)
    )
    return Reply(body=body, content_type=SSE, piece=piece)


# ------------------------------------------------------------------ Anthropic


def anthropic_message(
    text: str | None = None,
    calls: list[tuple[str, str, Any]] = (),  # type: ignore[assignment]
    *,
    stop: str | None = None,
    model: str = "claude-test",
) -> Reply:
    """A message; each call is ``(id, name, input)``, the input a value as the API sends."""
    content: list[Any] = [{"type": "text", "text": text}] if text is not None else []
    content += [{"type": "tool_use", "id": i, "name": n, "input": v} for i, n, v in calls]
    return Reply(
        body={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop or ("tool_use" if calls else "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": 9, "output_tokens": 12},
        }
    )


def anthropic_stream(
    pieces: list[str] = (),  # type: ignore[assignment]
    calls: list[Call] = (),  # type: ignore[assignment]
    *,
    stop: str | None = None,
    model: str = "claude-test",
    piece: int = 61,
) -> Reply:
    message = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 9, "output_tokens": 1},
    }
    out = [_data({"type": "message_start", "message": message}, "message_start")]
    out.append(_data({"type": "ping"}, "ping"))
    index = 0
    if pieces:
        block = {"type": "text", "text": ""}
        out.append(
            _data(
                {"type": "content_block_start", "index": 0, "content_block": block},
                "content_block_start",
            )
        )
        for text in pieces:
            delta = {"type": "text_delta", "text": text}
            out.append(
                _data(
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                    "content_block_delta",
                )
            )
        out.append(_data({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        index = 1
    for k, (call_id, name, parts) in enumerate(calls):
        at = index + k
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        out.append(
            _data(
                {"type": "content_block_start", "index": at, "content_block": block},
                "content_block_start",
            )
        )
        for text in parts:
            delta = {"type": "input_json_delta", "partial_json": text}
            out.append(
                _data(
                    {"type": "content_block_delta", "index": at, "delta": delta},
                    "content_block_delta",
                )
            )
        out.append(_data({"type": "content_block_stop", "index": at}, "content_block_stop"))
    reason = stop or ("tool_use" if calls else "end_turn")
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": 20},
    }
    out.append(_data(delta, "message_delta"))
    out.append(_data({"type": "message_stop"}, "message_stop"))
    return Reply(body="".join(out), content_type=SSE, piece=piece)
