"""Tool calls in JSON documents: API response objects and bare call objects.

Structured shapes (a response given whole):

- ``openai`` — a chat completion (``choices[].message.tool_calls``, also the legacy
  ``function_call``), a message (``{"role": "assistant", "tool_calls": [...]}``), a
  ``tool_calls`` list, or a Responses API object (``output: [{"type": "function_call"}]``).
  ``arguments`` is a JSON *string*; it is decoded (and repaired if it must be).
- ``anthropic`` — a message (``content: [{"type": "tool_use", "id", "name", "input"}]``) or
  a list of content blocks; ``thinking`` blocks are reasoning.
  Ollama's ``/api/chat`` answer (``{"message": {…}, "done_reason", "done"}``, arguments as an
  object) is read the same way.
- ``gemini`` — a Gemini ``generateContent`` response (``candidates[].content.parts[]`` with
  ``functionCall: {"name", "args"}``; ``args`` is an object).
- ``tool-calls-json`` — the ``{"toolCalls": [...]}`` envelope (``{toolCallId, toolName,
  args}``, or ``{name, arguments}``), also ``{"tool_calls": [{name, arguments}]}``.

The bare tier (``json``): ``{"name": …, "arguments"|"parameters": …}`` or a list of them
(Llama 3 JSON, xLAM, Cohere's ``tool_name``), in prose or a fence, only when it reads as a
call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llmfix import codes
from llmfix.model import Diagnostic
from llmfix.pipeline.stops import (
    Finish,
    anthropic_finish,
    chat_choice_finish,
    gemini_finish,
    gemini_parts,
    responses_finish,
    responses_refusal,
    stream_finish,
)
from llmfix.toolcalls.base import (
    Call,
    Scan,
    bad_name,
    call_shape,
    decode_arguments,
    unusable_name,
)


@dataclass
class Document:
    """What a JSON document says: its calls, text and reasoning, and ``finish``: what the
    API response says about how the answer ended (cut off, refused; see
    :mod:`llmfix.pipeline.stops`), read as ``check`` reads it."""

    format: str
    calls: list[Call] = field(default_factory=list)
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    notes: list[Diagnostic] = field(default_factory=list)
    finish: Finish | None = None


def read_document(scan: Scan, value: Any, start: int, end: int, *, bare: bool) -> Document | None:
    """The calls in a JSON value spanning ``[start, end)``; ``None`` when it holds none.

    ``bare`` also accepts bare call objects (the ``json`` format).
    """
    reader = _Reader(scan, start, end)
    if isinstance(value, dict):
        doc = reader.object(value)
        if doc is not None:
            return doc
    elif isinstance(value, list) and value:
        doc = reader.array(value)
        if doc is not None:
            return doc
    if not bare:
        return None
    items = value if isinstance(value, list) else [value]
    shapes = [call_shape(item, require_arguments=True) for item in items]
    # A call object whose name is no tool's is still a call (and an error), not data.
    unusable = [
        unusable_name(item, require_arguments=True) if shape is None else None
        for item, shape in zip(items, shapes, strict=True)
    ]
    if not items or any(s is None and u is None for s, u in zip(shapes, unusable, strict=True)):
        return None
    doc = Document("json")
    for shape, shown in zip(shapes, unusable, strict=True):
        scan.deadline.check()
        if shape is None:
            assert shown is not None
            doc.notes.append(bad_name(scan, "json", shown, start, end))
            continue
        call = Call(shape.name, shape.arguments, start, end, "json", shape.id)
        if shape.encoded:
            decode_arguments(scan, call)
        doc.calls.append(call)
    return doc


class _Reader:
    def __init__(self, scan: Scan, start: int, end: int) -> None:
        self.scan = scan
        self.start = start
        self.end = end

    def object(self, value: dict[str, Any]) -> Document | None:
        choices = value.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message") or choices[0].get("delta")
            if isinstance(message, dict):
                doc = self.openai_message(message)
                doc.finish = chat_choice_finish(choices[0])
                if len(choices) > 1:
                    doc.notes.append(
                        self.scan.note(
                            codes.TOOLS_CHOICES,
                            f"the response has {len(choices)} choices; read the first",
                            self.start,
                            self.end,
                        )
                    )
                return doc
        candidates = value.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            found = self.gemini(candidates[0])
            if found is not None:
                if len(candidates) > 1:
                    found.notes.append(
                        self.scan.note(
                            codes.TOOLS_CHOICES,
                            f"the response has {len(candidates)} candidates; read the first",
                            self.start,
                            self.end,
                        )
                    )
                return found
        message = value.get("message")
        if isinstance(message, dict) and ("done" in value or "done_reason" in value):
            # Ollama's /api/chat: {"message": {..., "tool_calls"}, "done_reason", "done"}
            doc = self.openai_message(message)
            doc.finish = stream_finish("ollama", _str(value.get("done_reason")))
            return doc
        if isinstance(value.get("output"), list) and value.get("object") in ("response", None):
            found = self.responses(value["output"])
            if found is not None:
                found.finish = found.finish or responses_finish(value)
                return found
        if value.get("type") == "message" and isinstance(value.get("content"), list):
            return self.anthropic(value["content"], anthropic_finish(value))
        if isinstance(value.get("content"), list) and any(
            isinstance(b, dict) and b.get("type") == "tool_use" for b in value["content"]
        ):
            return self.anthropic(value["content"], anthropic_finish(value))
        if "tool_calls" in value or "function_call" in value:
            if value.get("role") == "assistant" or _openai_items(value.get("tool_calls")):
                return self.openai_message(value)
            return self.envelope(value.get("tool_calls"), "tool-calls-json")
        if "toolCalls" in value:
            return self.envelope(value["toolCalls"], "tool-calls-json")
        return None

    def array(self, value: list[Any]) -> Document | None:
        if _openai_items(value):
            return self.openai_message({"tool_calls": value})
        if all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in value) and any(
            b.get("type") == "tool_use" for b in value
        ):
            return self.anthropic(value)
        return None

    def openai_message(self, message: dict[str, Any]) -> Document:
        doc = Document("openai")
        _text(doc.content, message.get("content"))
        for key in ("reasoning_content", "reasoning", "thinking"):  # (thinking: Ollama)
            _text(doc.reasoning, message.get(key))
        items = message.get("tool_calls")
        if isinstance(items, list):
            for item in items:
                self.add(doc, item, "openai")
        legacy = message.get("function_call")
        if isinstance(legacy, dict):
            self.add(doc, legacy, "openai")
        return doc

    def responses(self, output: list[Any]) -> Document | None:
        if not any(isinstance(i, dict) and i.get("type") == "function_call" for i in output):
            return None
        doc = Document("openai")
        for item in output:
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            if kind == "function_call":
                self.add(doc, {**item, "id": item.get("call_id", item.get("id"))}, "openai")
            elif kind == "message":
                doc.finish = doc.finish or responses_refusal(item)
                for part in item.get("content") or []:
                    if isinstance(part, dict):
                        _text(doc.content, part.get("text"))
            elif kind == "reasoning":
                for part in item.get("summary") or item.get("content") or []:
                    if isinstance(part, dict):
                        _text(doc.reasoning, part.get("text"))
        return doc

    def gemini(self, candidate: dict[str, Any]) -> Document | None:
        """A Gemini ``generateContent`` candidate: ``functionCall`` parts (``name``,
        ``args`` as an object), read as ``check`` reads them (:func:`gemini_parts`)."""
        parts = gemini_parts(candidate)
        if parts is None:
            return None
        doc = Document("gemini", finish=gemini_finish(candidate))
        for _, text in parts.texts:
            _text(doc.content, text)
        for _, thought in parts.thoughts:
            _text(doc.reasoning, thought)
        for _, call in parts.calls:
            self.add(doc, dict(call), "gemini")
        return doc

    def anthropic(self, blocks: list[Any], finish: Finish | None = None) -> Document:
        doc = Document("anthropic", finish=finish)
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                self.add(doc, block, "anthropic")
            elif kind == "text":
                _text(doc.content, block.get("text"))
            elif kind in ("thinking", "redacted_thinking"):
                _text(doc.reasoning, block.get("thinking"))
        return doc

    def envelope(self, items: Any, fmt: str) -> Document | None:
        if not isinstance(items, list):
            return None
        doc = Document(fmt)
        for item in items:
            self.add(doc, item, fmt)
        return doc

    def add(self, doc: Document, item: Any, fmt: str) -> None:
        shape = call_shape(item, require_arguments=False)
        shown = unusable_name(item) if shape is None else None
        if shown is not None:
            doc.notes.append(bad_name(self.scan, fmt, shown, self.start, self.end))
            return
        if shape is None:
            doc.notes.append(
                self.scan.note(
                    codes.TOOLS_MALFORMED_CALL,
                    f"a {fmt} tool call without a usable name",
                    self.start,
                    self.end,
                )
            )
            return
        call = Call(shape.name, shape.arguments, self.start, self.end, fmt, shape.id)
        if shape.encoded:
            decode_arguments(self.scan, call)
        doc.calls.append(call)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _openai_items(items: Any) -> bool:
    return (
        isinstance(items, list)
        and bool(items)
        and all(isinstance(i, dict) and isinstance(i.get("function"), dict) for i in items)
    )


def _text(out: list[str], value: Any) -> None:
    if isinstance(value, str) and value.strip():
        out.append(value)
    elif isinstance(value, list):
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
