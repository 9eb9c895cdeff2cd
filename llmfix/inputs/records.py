"""One parsed record → its items: the API response shapes (chat completions, Anthropic
messages, Responses API objects, Gemini responses, batch outputs), transcripts, MCP tool
results, ``--field`` lookups, and a record of no known shape as a document."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.inputs.fields import (
    closest_field,
    field_tokens,
    group_of,
    resolve_field,
)
from llmfix.inputs.items import Item, Messages, ReadOptions
from llmfix.jsontext import dumps
from llmfix.model import Diagnostic, Position, build
from llmfix.pipeline.stops import (
    Finish,
    anthropic_finish,
    chat_choice_finish,
    gemini_blocked,
    gemini_finish,
    gemini_parts,
    model_name,
    responses_finish,
    responses_refusal,
)

if TYPE_CHECKING:
    from llmfix.toolcalls.results import ToolResult


ASSISTANT_ROLES = frozenset({"assistant", "model"})


def record_items(
    record: Any,
    raw: str,
    name: str,
    line: int,
    options: ReadOptions,
    *,
    single_file: bool,
    calls: dict[Any, str] | None = None,
    strict: bool = False,
) -> Iterator[Item]:
    """Items from one parsed record (a JSONL line, or a whole ``.json`` document).

    Ids: ``PATH:LINE`` for a record (``PATH`` for a whole file), with ``[custom_id]`` for a
    batch output, then ``#msgN`` for a message and ``.callK`` for its K-th tool call.
    ``strict``: ``record`` is the strict decode of ``raw`` (see ``Item.decoded``).
    """
    anchor = _record_anchor(record)
    base = name if single_file else f"{name}:{line}"
    if anchor is not None and anchor.startswith("[") and not anchor.startswith("[id="):
        base += anchor  # a batch output's custom_id is part of its id
    group = group_of(record, options.group_by)
    common: dict[str, Any] = {
        "source": name,
        "line": line,
        "group": group,
        "record": record,
        "anchor": anchor,
    }
    if options.field is not None:
        yield _field_item(record, raw, base, options.field, common, single_file)
        return
    if options.tool_results and isinstance(record, dict) and record.get("jsonrpc") == "2.0":
        # (start-up: the tool-call readers load only for a run that reads tool calls)
        from llmfix.toolcalls.results import mcp_results

        results = mcp_results(record, {} if calls is None else calls)
        yield from _tool_result_items(results, base, (), common)
        return
    shape, body, prefix = _shape(record)
    if options.tool_results and shape == "transcript":
        # (start-up: the tool-call readers load only for a run that reads tool calls)
        from llmfix.toolcalls.results import transcript_results

        results = transcript_results(body.get("messages") or [])
        yield from _tool_result_items(results, base, prefix, common)
    model = model_name(body) if shape not in ("document", "batch-error") else None
    if group is None and model is not None and options.group_by in ("model", "/model"):
        common["group"] = model  # a Gemini modelVersion, or a model one level down
    if model is not None:
        common["model"] = model
    if shape == "batch-error":
        yield Item(id=base, text="", kind="batch-error", error=body, **common)
        return
    if shape == "document":
        yield build(  # one per document: without the frozen dataclass __init__
            Item,
            id=base,
            text=raw,
            kind="document" if single_file else "record",
            origin=Position(line, 1),
            target=(),
            target_kind="value",
            whole_file=single_file,
            decoded=(record,) if strict else None,
            **common,
        )
        return
    found = False
    turns = list(_assistant_messages(shape, body, options.messages))
    for n, (index, message, path) in enumerate(turns):
        finish = _turn_finish(shape, body, index, message, last=n == len(turns) - 1)
        items = list(_message_items(message, f"{base}#msg{index}", (*prefix, *path), shape, common))
        if not items and finish is not None:  # e.g. a candidate blocked before any text
            items = [Item(id=f"{base}#msg{index}", text="", kind=shape, **common)]
        found = found or bool(items)
        yield from _with_finish(items, finish)
    if not found and shape == "gemini-response":
        blocked = gemini_blocked(body)
        if blocked is not None:
            yield Item(id=f"{base}#msg0", text="", kind=shape, finish=blocked, **common)
            return
    if not found:
        error = codes.INPUT_NO_ANSWER.at(
            f"no assistant answer found in this {shape.replace('-', ' ')}",
            hint="use --field to name the text to check",
        )
        yield Item(id=base, text="", kind=shape, error=error, **common)


def _tool_result_items(
    found: Iterable[ToolResult],
    base: str,
    prefix: tuple[str | int, ...],
    common: dict[str, Any],
) -> Iterator[Item]:
    for result in found:
        target = None if result.path is None else (*prefix, *result.path)
        yield Item(
            id=f"{base}#msg{result.index}",
            text=result.text,
            kind="tool-result",
            tool=result.tool,
            error=result.error,
            diagnostics=result.notes,
            target=target,
            target_kind="value" if result.structured else "string",
            **common,
        )


def _turn_finish(
    shape: str, body: dict[str, Any], index: int, message: dict[str, Any], *, last: bool
) -> Finish | None:
    """What the response says about how one turn ended (see :mod:`llmfix.pipeline.stops`)."""
    if shape == "chat-completion":
        return chat_choice_finish(body["choices"][index])
    if shape == "anthropic-message":
        return anthropic_finish(body)
    if shape == "gemini-response":
        return gemini_finish(message)
    if shape == "response":
        refused = responses_refusal(message)
        if refused is not None:
            return refused
        return responses_finish(body) if last else None  # cut: the last entry written
    return None


def _with_finish(items: list[Item], finish: Finish | None) -> list[Item]:
    """A refusal applies to every item of the turn; a cut to the last one written."""
    if finish is None or not items:
        return items
    if finish.kind == "refused":
        return [replace(item, finish=finish) for item in items]
    return [*items[:-1], replace(items[-1], finish=finish)]


def _record_anchor(record: Any) -> str | None:
    """``[custom_id]`` of a batch output, ``[id=ID]`` of a record with a scalar ``id``."""
    if not isinstance(record, dict):
        return None
    custom = record.get("custom_id")
    if isinstance(custom, (str, int)) and not isinstance(custom, bool):
        return f"[{custom}]"
    ident = record.get("id")
    if isinstance(ident, (str, int)) and not isinstance(ident, bool) and str(ident):
        return f"[id={ident}]"
    return None


def _field_item(
    record: Any, raw: str, base: str, spec: str, common: dict[str, Any], single_file: bool
) -> Item:
    tokens = field_tokens(spec)
    try:
        value = resolve_field(record, tokens)
    except KeyError:
        close = closest_field(record, tokens)
        error = codes.INPUT_MISSING_FIELD.at(
            f"the record has no field {spec}" + (f" (did you mean {close!r}?)" if close else ""),
            hint="check --field (a JSON Pointer like /output or a dotted path like output.text)",
        )
        return Item(id=base, text="", kind="field", error=error, **common)
    # (one per record of a --field run: without the frozen dataclass __init__)
    if isinstance(value, str):
        return build(Item, id=base, text=value, kind="field", target=tokens, **common)
    text = dumps(value)
    return build(
        Item, id=base, text=text, kind="field", target=tokens, target_kind="value", **common
    )


def _shape(record: Any) -> tuple[str, Any, tuple[str | int, ...]]:
    """What a record is: (shape, the object holding the answer, path to that object)."""
    if not isinstance(record, dict):
        if isinstance(record, list) and record and all(_is_message(m) for m in record):
            return "transcript", {"messages": record}, ()
        return "document", record, ()
    if "custom_id" in record and "response" in record:
        response = record.get("response") or {}
        problem = _batch_problem(record, response)
        if problem is not None:
            return "batch-error", problem, ()
        body = response.get("body") if isinstance(response, dict) else None
        inner, _, inner_path = _shape(body)
        if inner in ("chat-completion", "response"):
            return inner, body, ("response", "body", *inner_path)
        return "document", record, ()
    if "custom_id" in record and isinstance(record.get("result"), dict):
        result = record["result"]
        if result.get("type") != "succeeded":
            detail = json.dumps(result.get("error", result.get("type")), ensure_ascii=False)
            return (
                "batch-error",
                codes.INPUT_BATCH_ERROR.at(f"batch request failed: {_short(detail)}"),
                (),
            )
        message = result.get("message")
        if isinstance(message, dict):
            return "anthropic-message", message, ("result", "message")
    if isinstance(record.get("choices"), list):
        return "chat-completion", record, ()
    if record.get("object") == "response" and isinstance(record.get("output"), list):
        return "response", record, ()
    if record.get("type") == "message" and "content" in record and "role" in record:
        return "anthropic-message", record, ()
    if isinstance(record.get("messages"), list):
        return "transcript", record, ()
    if isinstance(record.get("candidates"), list) or (
        isinstance(record.get("promptFeedback"), dict) and "candidates" not in record
    ):
        return "gemini-response", record, ()
    return "document", record, ()


_RESPONSE_KEYS = re.compile(
    r'"(?:choices|output|content|candidates|promptFeedback|messages|role|custom_id)"'
)


def response_shape(text: str) -> str | None:
    """The API response shape of a JSON text (``chat-completion``, ``response``, ...), or
    ``None`` when it is not one (not JSON, or a plain document). A recorded stream (SSE
    events, NDJSON chunks) is ``stream``: it is read as the message it reassembles into."""
    # (start-up: the stream sniffer loads only when a response's shape is asked for)
    from llmfix.stream.sniff import looks_like_stream

    if looks_like_stream(text):
        return "stream"
    if not text.lstrip().startswith(("{", "[")) or not _RESPONSE_KEYS.search(text):
        return None  # (a substring test costs far less than parsing a large document)
    try:
        record = json.loads(text)
    except (ValueError, RecursionError):
        return None
    shape = _shape(record)[0]
    return None if shape == "document" else shape


def _batch_problem(record: dict[str, Any], response: Any) -> Diagnostic | None:
    error = record.get("error")
    status = response.get("status_code") if isinstance(response, dict) else None
    if error:
        detail = error.get("message", error) if isinstance(error, dict) else error
        return codes.INPUT_BATCH_ERROR.at(f"batch request failed: {_short(str(detail))}")
    if isinstance(status, int) and status >= 400:
        body = response.get("body")
        detail = body.get("error", {}).get("message") if isinstance(body, dict) else None
        suffix = f": {_short(str(detail))}" if detail else ""
        return codes.INPUT_BATCH_ERROR.at(f"batch request failed with HTTP {status}{suffix}")
    return None


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and "role" in value


def _assistant_messages(
    shape: str, body: dict[str, Any], messages: Messages
) -> Iterator[tuple[int, dict[str, Any], tuple[str | int, ...]]]:
    """(index, message, path from ``body`` to the message) for the turns to check."""
    if shape == "chat-completion":
        for i, choice in enumerate(body.get("choices") or []):
            if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                yield i, choice["message"], ("choices", i, "message")
    elif shape == "anthropic-message":
        yield 0, body, ()
    elif shape == "gemini-response":
        for i, candidate in enumerate(body.get("candidates") or []):
            if isinstance(candidate, dict):
                yield i, candidate, ("candidates", i)
    elif shape == "response":
        for i, entry in enumerate(body.get("output") or []):
            if isinstance(entry, dict) and entry.get("type") in ("message", "function_call"):
                yield i, entry, ("output", i)
    elif shape == "transcript":
        turns = [
            (i, m)
            for i, m in enumerate(body.get("messages") or [])
            if isinstance(m, dict) and m.get("role") in ASSISTANT_ROLES
        ]
        if messages == "last":
            turns = turns[-1:]
        for i, message in turns:
            yield i, message, ("messages", i)


def _message_items(
    message: dict[str, Any],
    base: str,
    path: tuple[str | int, ...],
    shape: str,
    common: dict[str, Any],
) -> Iterator[Item]:
    if shape == "gemini-response":
        yield from _gemini_items(message, base, path, common)
        return
    if message.get("type") == "function_call":  # a Responses API output entry
        args = message.get("arguments")
        if isinstance(args, str):
            yield Item(
                id=f"{base}.call0",
                text=args,
                kind="tool-call",
                tool=_str_or_none(message.get("name")) or "",
                target=(*path, "arguments"),
                **common,
            )
        return
    content = message.get("content")
    text, target, target_kind = _content_text(content)
    tools = list(_tool_calls(message))
    if text is not None and (text.strip() or not tools):
        audit = _left_in_content(text, tools)
        yield Item(
            id=base,
            text=text,
            kind=shape,
            target=(*path, "content", *target),
            target_kind=target_kind,
            **(
                {**common, "diagnostics": (*common.get("diagnostics", ()), *audit)}
                if audit
                else common
            ),
        )
    elif text is None and not tools and message.get("refusal"):
        yield Item(id=base, text=str(message["refusal"]), kind=shape, **common)
    elif text is None and not tools:
        yield Item(id=base, text="", kind=shape, **common)
    for k, (name, args, sub, kind) in enumerate(tools):
        yield Item(
            id=f"{base}.call{k}",
            text=args,
            kind="tool-call",
            tool=name or "",
            target=(*path, *sub),
            target_kind=kind,
            **common,
        )


def _left_in_content(
    text: str, tools: list[tuple[str | None, str, tuple[Any, ...], str]]
) -> tuple[Diagnostic, ...]:
    """The calls-left-in-content audit of a message text (``tools.left_in_content``), read
    only when the text may hold tool-call markup."""
    if "<" not in text and "[" not in text:
        return ()
    # (start-up: the tool-call readers load only for a text that may hold a call)
    from llmfix.toolcalls.content_audit import MAY_HOLD_CALLS, left_in_content

    if not MAY_HOLD_CALLS.search(text):
        return ()
    return left_in_content(text, [(name, args) for name, args, _, _ in tools])


def _gemini_items(
    candidate: dict[str, Any], base: str, path: tuple[str | int, ...], common: dict[str, Any]
) -> Iterator[Item]:
    """A Gemini candidate: its text parts (thoughts left out) and its ``functionCall`` parts."""
    parts = gemini_parts(candidate)
    if parts is None:
        return
    texts, calls = parts.texts, parts.calls
    if texts and (any(t.strip() for _, t in texts) or not calls):
        target = (*path, "content", "parts", texts[0][0], "text") if len(texts) == 1 else None
        text = "".join(t for _, t in texts)  # parts of one answer, streamed in pieces
        yield Item(id=base, text=text, kind="gemini-response", target=target, **common)
    for k, (i, call) in enumerate(calls):
        yield Item(
            id=f"{base}.call{k}",
            text=dumps(call.get("args", {})),
            kind="tool-call",
            tool=_str_or_none(call.get("name")) or "",
            target=(*path, "content", "parts", i, "functionCall", "args"),
            target_kind="value",
            **common,
        )


def _content_text(content: Any) -> tuple[str | None, tuple[str | int, ...], str]:
    """The text of a message's content: a string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content, (), "string"
    if not isinstance(content, list):
        return None, (), "string"
    parts = [
        (i, part["text"])
        for i, part in enumerate(content)
        if isinstance(part, dict)
        and part.get("type") in ("text", "output_text", "input_text")
        and isinstance(part.get("text"), str)
    ]
    if not parts:
        return None, (), "string"
    if len(parts) == 1:
        return parts[0][1], (parts[0][0], "text"), "string"
    return "\n".join(text for _, text in parts), (), "parts"


def _tool_calls(message: dict[str, Any]) -> Iterator[tuple[str | None, str, tuple[Any, ...], str]]:
    """(tool name, arguments text, path to the arguments, target kind) per tool call."""
    for i, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and isinstance(function.get("arguments"), str):
            where = ("tool_calls", i, "function", "arguments")
            yield _str_or_none(function.get("name")), function["arguments"], where, "string"
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and isinstance(legacy.get("arguments"), str):
        yield (
            _str_or_none(legacy.get("name")),
            legacy["arguments"],
            ("function_call", "arguments"),
            "string",
        )
    content = message.get("content")
    if isinstance(content, list):
        for i, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "tool_use" and "input" in block:
                text = dumps(block["input"])
                yield _str_or_none(block.get("name")), text, ("content", i, "input"), "value"


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ----------------------------------------------------------------------------- fields
