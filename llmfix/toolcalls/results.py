"""Tool results: what tools returned, checked against each tool's output schema.

Where results are found (read by :mod:`llmfix.inputs` when the tool registry declares an
output schema, ``llmfix check --tools``):

- MCP ``tools/call`` results, in a recorded JSON-RPC exchange (``.jsonl``, one message a
  line): the request names the tool, the response with the same ``id`` holds the result.
  ``structuredContent`` is checked against the tool's ``outputSchema``; a result with
  ``isError: true`` is a tool error (``toolresult.is_error``); a JSON-RPC ``error`` answer
  to the call is one too (``toolresult.rpc_error``); a result without ``structuredContent``
  from a tool that declares an output schema has its text content checked as JSON (and says
  so: ``toolresult.unstructured``).
- Tool-result messages in transcripts: OpenAI ``{"role": "tool", "tool_call_id", "content"}``
  and Anthropic ``tool_result`` content blocks (``is_error`` → ``toolresult.is_error``); the
  tool's name is that of the call with the same id earlier in the transcript.

A result of a tool with no output schema is not checked (``toolresult.unchecked``, info).
The check itself is the repair pipeline with the output schema as the schema, so every
failure has its JSON Pointer into the result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.jsontext import dumps
from llmfix.model import Diagnostic, Result, Status
from llmfix.pipeline.core import repair_text

if TYPE_CHECKING:
    from llmfix.options import RepairOptions
    from llmfix.schema.validate import SchemaValidator

STAGE = "toolresult"


@dataclass(frozen=True)
class ToolResult:
    """One tool result found in a record.

    ``index`` names it in the item id (the message index; 0 for an MCP response);
    ``text`` is what is checked (``structuredContent`` as JSON, or the text content);
    ``path`` is where that text sits in the record; ``error`` is set for a tool error.
    """

    index: int
    tool: str
    text: str
    structured: bool
    path: tuple[str | int, ...] | None
    error: Diagnostic | None = None
    notes: tuple[Diagnostic, ...] = ()


def _tool_error(tool: str, text: str) -> Diagnostic:
    said = " ".join(text.split())
    said = said if len(said) <= 200 else said[:199] + "…"
    return codes.TOOLRESULT_IS_ERROR.at(
        f"tool {json.dumps(tool)} returned an error" + (f": {said}" if said else ""),
        hint="the tool failed; its result holds no value to check",
    )


def _text_of(content: Any) -> tuple[str | None, tuple[str | int, ...] | None]:
    """The text of a content list (text blocks joined) or string, and its path if single."""
    if isinstance(content, str):
        return content, ()
    if not isinstance(content, list):
        return None, None
    texts = [
        (i, block["text"])
        for i, block in enumerate(content)
        if isinstance(block, Mapping)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]
    if not texts:
        return None, None
    if len(texts) == 1:
        return texts[0][1], (texts[0][0], "text")
    return "\n".join(t for _, t in texts), None


# -------------------------------------------------------------------------------- MCP


def mcp_results(record: Mapping[str, Any], calls: dict[Any, str]) -> Iterator[ToolResult]:
    """The tool result in one JSON-RPC message; ``calls`` maps request ids to tool names
    (filled from ``tools/call`` requests as the exchange is read)."""
    if record.get("method") == "tools/call":
        params = record.get("params")
        name = params.get("name") if isinstance(params, Mapping) else None
        if "id" in record and isinstance(name, str):
            calls[_key(record["id"])] = name
        return
    if "method" in record:
        return  # another request or a notification
    tool = calls.get(_key(record.get("id")))
    if tool is None:
        return  # the answer to initialize, tools/list, ... (or to a call not recorded)
    error = record.get("error")
    if error is not None:
        detail = error.get("message") if isinstance(error, Mapping) else error
        diag = codes.TOOLRESULT_RPC_ERROR.at(
            f"the call to tool {json.dumps(tool)} failed: {detail}",
            hint="a protocol error (unknown tool, bad arguments): there is no result",
        )
        yield ToolResult(0, tool, "", False, None, diag)
        return
    result = record.get("result")
    if isinstance(result, Mapping):
        yield from _call_result(result, tool, ("result",))


def _key(value: Any) -> str:
    return json.dumps(value)


def _call_result(
    result: Mapping[str, Any], tool: str, path: tuple[str | int, ...]
) -> Iterator[ToolResult]:
    text, where = _text_of(result.get("content"))
    if result.get("isError") is True:
        yield ToolResult(0, tool, "", False, None, _tool_error(tool, text or ""))
        return
    if "structuredContent" in result:
        structured = dumps(result["structuredContent"])  # numbers as the tool wrote them
        yield ToolResult(0, tool, structured, True, (*path, "structuredContent"))
        return
    target = None if where is None else (*path, "content", *where)
    note = codes.TOOLRESULT_UNSTRUCTURED.at(
        "no structuredContent in the result: its text content is checked as JSON",
    )
    yield ToolResult(0, tool, text or "", False, target, notes=(note,))


# ------------------------------------------------------------------------ transcripts


def transcript_results(messages: list[Any]) -> Iterator[ToolResult]:
    """OpenAI ``role: "tool"`` messages and Anthropic ``tool_result`` blocks, named by the
    call each answers."""
    names: dict[str, str] = {}
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            continue
        _learn_names(message, names)
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            tool = names.get(call_id, "") if isinstance(call_id, str) else ""
            named = message.get("name")
            tool = tool or (named if isinstance(named, str) else "")
            text, where = _text_of(message.get("content"))
            target = None if where is None else ("messages", index, "content", *where)
            yield ToolResult(index, tool, text or "", False, target)
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for b, block in enumerate(content):
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            use_id = block.get("tool_use_id")
            tool = names.get(use_id, "") if isinstance(use_id, str) else ""
            text, where = _text_of(block.get("content"))
            if block.get("is_error") is True:
                yield ToolResult(index, tool, "", False, None, _tool_error(tool, text or ""))
                continue
            target = None if where is None else ("messages", index, "content", b, "content")
            if where:
                target = (*target, *where) if target is not None else None
            yield ToolResult(index, tool, text or "", False, target)


def _learn_names(message: Mapping[str, Any], names: dict[str, str]) -> None:
    for call in message.get("tool_calls") or []:
        if isinstance(call, Mapping) and isinstance(call.get("id"), str):
            function = call.get("function")
            if isinstance(function, Mapping) and isinstance(function.get("name"), str):
                names[call["id"]] = function["name"]
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            if (
                isinstance(block, Mapping)
                and block.get("type") == "tool_use"
                and isinstance(block.get("id"), str)
                and isinstance(block.get("name"), str)
            ):
                names[block["id"]] = block["name"]


# ---------------------------------------------------------------------- checking


def check_tool_result(
    text: str,
    tool: str,
    validator: SchemaValidator | None,
    options: RepairOptions | None = None,
) -> Result:
    """Check one tool result's text against its tool's output schema (``validator``).

    Without an output schema nothing is checked (``toolresult.unchecked``, info).
    """
    if validator is None:
        note = codes.TOOLRESULT_UNCHECKED.at(
            f"tool {json.dumps(tool)} declares no output schema: its result is not checked",
            hint="give the tool an outputSchema in the --tools file",
        )
        return Result(status=Status.VALID, value=None, diagnostics=(note,))

    return repair_text(text, options=options, validator=validator)
