"""The wire formats a streamed answer arrives in, decoded into deltas.

:class:`WireDecoder` is fed what comes over the wire (or is read back from a saved stream)
and gives :class:`Delta` objects: answer text, reasoning text, and tool-call pieces. It
detects the format from the first bytes:

- Server-Sent Events (``data:``/``event:`` lines) of the OpenAI Chat Completions API
  (``chat.completion.chunk``: ``delta.content`` and ``delta.tool_calls[].function.arguments``),
  of the OpenAI Responses API (``response.output_text.delta``,
  ``response.function_call_arguments.delta``, ``response.completed``/``incomplete``) and of
  the Anthropic Messages API (``content_block_delta`` with ``text_delta``,
  ``input_json_delta`` and ``thinking_delta``; ``message_delta`` with the stop reason) and
  of Gemini's ``streamGenerateContent?alt=sse`` (candidate parts, ``finishReason``);
- newline-delimited JSON: Ollama's ``/api/chat`` and ``/api/generate`` chunks (tool calls
  arrive whole there), and the same API records as above one per line;
- anything else is the answer itself, raw.

:meth:`WireDecoder.message` reassembles what was decoded into the final message, in the
OpenAI chat-completion shape (content, tool calls with their argument text, stop reason),
which is how ``llmfix check`` reads a saved stream.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from typing import Any, Literal

# Telling a stream from an answer is all that reading a file needs; it lives on its own.
from llmfix.stream.sniff import ANTHROPIC_TYPES, sniff
from llmfix.stream.sniff import is_stream_record as is_stream_record
from llmfix.stream.sniff import looks_like_stream as looks_like_stream

__all__ = [
    "Delta",
    "WireDecoder",
]

DeltaKind = Literal["text", "reasoning", "tool"]
FORMATS: tuple[str, ...] = ("auto", "raw", "sse", "ndjson")


@dataclass(frozen=True)
class Delta:
    """One piece of the answer: text, reasoning, or part of tool call ``index``.

    For a tool call, ``text`` is more of its argument text; ``id``/``name`` come with the
    first piece; ``done`` says the API closed the call (its arguments are all there).
    """

    kind: DeltaKind
    text: str = ""
    index: int = 0
    id: str | None = None
    name: str | None = None
    done: bool = False


class _Call:
    __slots__ = ("arguments", "done", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.arguments: list[str] = []
        self.done = False


class WireDecoder:
    """Decode a stream as it arrives; ``format`` says what it turned out to be.

    ``format`` starts as ``auto`` and becomes ``raw``, ``openai-chat``, ``openai-responses``,
    ``anthropic``, ``gemini`` or ``ollama`` (``sse``/``ndjson`` until the first record says
    which API).
    """

    def __init__(self, fmt: str = "auto") -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown stream format {fmt!r} (expected one of: {FORMATS})")
        self.format = fmt
        self._framing = fmt  # auto | raw | sse | ndjson
        self._pending = ""  # text not yet split into lines (or not yet sniffed)
        self._data: list[str] = []  # the SSE event's data lines so far
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []  # an OpenAI chat stream's delta.refusal
        self._calls: dict[int, _Call] = {}
        self._block_calls: dict[int, int] = {}  # Anthropic block / Responses item -> call
        self.stop_reason: str | None = None
        self.model: str | None = None
        self.errors: list[str] = []  # error events and records that are not JSON
        self.done = False
        # Bytes fed are decoded as UTF-8 (a byte order mark dropped, a bad byte replaced).
        self._utf8 = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")

    # ------------------------------------------------------------------ feeding

    def feed(self, data: str | bytes) -> list[Delta]:
        """Decode the next piece of the stream: text, or bytes as they came off the wire
        (UTF-8; a character split between two pieces is decoded once both came)."""
        if isinstance(data, (bytes, bytearray, memoryview)):
            data = self._utf8.decode(bytes(data))
        if self._framing == "raw":
            return self._text(data)
        self._pending += data
        if self._framing == "auto":
            framing = sniff(self._pending, final=False)
            if framing is None:
                return []
            self._framing = framing
            if framing == "raw":
                self.format = "raw"
                text, self._pending = self._pending, ""
                return self._text(text)
        return self._lines(final=False)

    def feed_record(self, record: dict[str, Any]) -> list[Delta]:
        """Decode one record its reader already parsed (an SSE event's data, a JSON line),
        so that a reader that looks at the events itself (the proxy) parses each once."""
        return self._record(record)

    def close(self) -> list[Delta]:
        """The stream ended: decode what is left."""
        rest = self._utf8.decode(b"", final=True)  # a character the bytes ended inside
        out = self.feed(rest) if rest else []
        return out + self._close()

    def _close(self) -> list[Delta]:
        if self._framing == "auto":
            self._framing = sniff(self._pending, final=True) or "raw"
            if self._framing == "raw":
                self.format = "raw"
                text, self._pending = self._pending, ""
                return self._text(text)
        if self._framing == "raw":
            return []
        out = self._lines(final=True)
        if self._framing == "sse" and self._data:
            out += self._dispatch("\n".join(self._data))
            self._data.clear()
        return out

    def _text(self, text: str) -> list[Delta]:
        if not text:
            return []
        self._content.append(text)
        return [Delta("text", text)]

    def _lines(self, *, final: bool) -> list[Delta]:
        out: list[Delta] = []
        pending = self._pending
        start = 0
        while True:
            end = pending.find("\n", start)
            if end < 0:
                break
            out += self._line(pending[start:end].rstrip("\r"))
            start = end + 1
        self._pending = pending[start:]
        if final and self._pending:
            out += self._line(self._pending.rstrip("\r"))
            self._pending = ""
        return out

    def _line(self, line: str) -> list[Delta]:
        if self._framing == "ndjson":
            return self._dispatch(line) if line.strip() else []
        if not line:
            if not self._data:
                return []
            data = "\n".join(self._data)
            self._data.clear()
            return self._dispatch(data)
        if line.startswith(":"):
            return []
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return []

    def _dispatch(self, data: str) -> list[Delta]:
        if data.strip() == "[DONE]":
            self.done = True
            return []
        try:
            record = json.loads(data)
        except ValueError:
            self.errors.append(f"a stream record that is not JSON: {data[:80]!r}")
            return []
        if not isinstance(record, dict):
            self.errors.append(f"a stream record that is not an object: {data[:80]!r}")
            return []
        return self._record(record)

    # ------------------------------------------------------------------ records

    def _record(self, record: dict[str, Any]) -> list[Delta]:
        kind = record.get("type")
        if isinstance(record.get("choices"), list):
            self._found("openai-chat")
            return self._chat_chunk(record)
        if isinstance(kind, str) and kind.startswith("response."):
            self._found("openai-responses")
            return self._responses_event(kind, record)
        if kind in ANTHROPIC_TYPES:
            self._found("anthropic")
            return self._anthropic_event(kind, record)
        if "done" in record and ("message" in record or "response" in record):
            self._found("ollama")
            return self._ollama_chunk(record)
        if isinstance(record.get("candidates"), list) or "promptFeedback" in record:
            self._found("gemini")
            return self._gemini_chunk(record)
        if kind == "error" or "error" in record:
            error = record.get("error")
            detail = error.get("message", error) if isinstance(error, dict) else error
            self.errors.append(f"the stream reported an error: {detail}")
        return []

    def _found(self, fmt: str) -> None:
        if self.format in ("auto", "sse", "ndjson"):
            self.format = fmt

    def _call(self, index: int) -> _Call:
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _Call()
        return call

    def _tool(
        self,
        index: int,
        text: str = "",
        *,
        id: str | None = None,
        name: str | None = None,
        done: bool = False,
    ) -> list[Delta]:
        call = self._call(index)
        if id and call.id is None:
            call.id = id
        if name and call.name is None:
            call.name = name
        if text:
            call.arguments.append(text)
        if done:
            call.done = True
        if not (text or id or name or done):
            return []
        return [Delta("tool", text, index, id, name, done)]

    def _chat_chunk(self, record: dict[str, Any]) -> list[Delta]:
        self.model = self.model or _str(record.get("model"))
        out: list[Delta] = []
        for choice in record["choices"]:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # the first choice is the answer (n > 1 streams interleave)
            delta = choice.get("delta") or {}
            if isinstance(delta, dict):
                for key in ("reasoning_content", "reasoning"):
                    if isinstance(delta.get(key), str) and delta[key]:
                        self._reasoning.append(delta[key])
                        out.append(Delta("reasoning", delta[key]))
                if isinstance(delta.get("content"), str):
                    out += self._text(delta["content"])
                if isinstance(delta.get("refusal"), str):
                    self._refusal.append(delta["refusal"])
                for call in delta.get("tool_calls") or ():
                    if not isinstance(call, dict):
                        continue
                    function = call.get("function") or {}
                    out += self._tool(
                        call.get("index", 0) if isinstance(call.get("index"), int) else 0,
                        _str(function.get("arguments")) or "",
                        id=_str(call.get("id")),
                        name=_str(function.get("name")),
                    )
            if choice.get("finish_reason"):
                self.stop_reason = str(choice["finish_reason"])
                out += self._finish_calls()
        return out

    def _finish_calls(self) -> list[Delta]:
        out: list[Delta] = []
        for index, call in sorted(self._calls.items()):
            if not call.done:
                out += self._tool(index, done=True)
        return out

    def _responses_event(self, kind: str, record: dict[str, Any]) -> list[Delta]:
        if kind == "response.output_text.delta":
            return self._text(_str(record.get("delta")) or "")
        if kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            text = _str(record.get("delta")) or ""
            self._reasoning.append(text)
            return [Delta("reasoning", text)] if text else []
        item = _dict(record.get("item"))
        position = record.get("output_index", 0)
        if kind == "response.output_item.added" and item.get("type") == "function_call":
            index = self._block_calls.setdefault(position, len(self._block_calls))
            return self._tool(
                index,
                _str(item.get("arguments")) or "",
                id=_str(item.get("call_id")) or _str(item.get("id")),
                name=_str(item.get("name")),
            )
        if kind == "response.function_call_arguments.delta" and position in self._block_calls:
            return self._tool(self._block_calls[position], _str(record.get("delta")) or "")
        if kind == "response.output_item.done" and position in self._block_calls:
            index = self._block_calls[position]
            missing = ""
            if not self._call(index).arguments:
                missing = _str(item.get("arguments")) or ""
            return self._tool(index, missing, done=True)
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            response = _dict(record.get("response"))
            self.model = self.model or _str(response.get("model"))
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            self.stop_reason = _str(reason) or _str(response.get("status")) or kind[9:]
            self.done = True
        if kind == "response.failed" or kind == "error":
            self.errors.append(f"the stream reported an error: {record.get('error') or kind}")
        return []

    def _anthropic_event(self, kind: str, record: dict[str, Any]) -> list[Delta]:
        if kind == "message_start" and isinstance(record.get("message"), dict):
            self.model = _str(record["message"].get("model"))
            return []
        block_index = record.get("index", 0)
        if kind == "content_block_start":
            block = _dict(record.get("content_block"))
            if block.get("type") == "tool_use":
                index = self._block_calls.setdefault(block_index, len(self._block_calls))
                return self._tool(index, id=_str(block.get("id")), name=_str(block.get("name")))
            if block.get("type") == "text" and block.get("text"):
                return self._text(str(block["text"]))
            return []
        if kind == "content_block_delta":
            delta = _dict(record.get("delta"))
            kind_of = delta.get("type")
            if kind_of == "text_delta":
                return self._text(_str(delta.get("text")) or "")
            if kind_of == "input_json_delta" and block_index in self._block_calls:
                return self._tool(
                    self._block_calls[block_index], _str(delta.get("partial_json")) or ""
                )
            if kind_of == "thinking_delta" and delta.get("thinking"):
                self._reasoning.append(str(delta["thinking"]))
                return [Delta("reasoning", str(delta["thinking"]))]
            return []
        if kind == "content_block_stop" and block_index in self._block_calls:
            return self._tool(self._block_calls[block_index], done=True)
        if kind == "message_delta":
            delta = _dict(record.get("delta"))
            if delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
        if kind == "message_stop":
            self.done = True
        return []

    def _ollama_chunk(self, record: dict[str, Any]) -> list[Delta]:
        self.model = self.model or _str(record.get("model"))
        out: list[Delta] = []
        message = _dict(record.get("message"))
        thinking = _str(message.get("thinking")) or _str(record.get("thinking"))
        if thinking:
            self._reasoning.append(thinking)
            out.append(Delta("reasoning", thinking))
        text = _str(message.get("content")) if message else _str(record.get("response"))
        out += self._text(text or "")
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                continue
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments if arguments is not None else {})
            index = len(self._calls)
            out += self._tool(
                index,
                arguments,
                id=_str(call.get("id")),
                name=_str(function.get("name")),
                done=True,
            )
        if record.get("done"):
            self.stop_reason = _str(record.get("done_reason")) or "stop"
            self.done = True
        return out

    def _gemini_chunk(self, record: dict[str, Any]) -> list[Delta]:
        """A ``streamGenerateContent`` chunk: the first candidate's parts (text, thoughts,
        whole function calls) and its ``finishReason``; a blocked prompt's reason."""
        self.model = self.model or _str(record.get("modelVersion"))
        blocked = _dict(record.get("promptFeedback")).get("blockReason")
        if isinstance(blocked, str) and blocked:
            self.stop_reason = blocked
        candidates = record.get("candidates") or []
        first = _dict(candidates[0]) if candidates else {}
        out: list[Delta] = []
        for part in _dict(first.get("content")).get("parts") or ():
            if not isinstance(part, dict):
                continue
            text = _str(part.get("text"))
            if text and part.get("thought") is True:
                self._reasoning.append(text)
                out.append(Delta("reasoning", text))
            elif text:
                out += self._text(text)
            call = part.get("functionCall")
            if isinstance(call, dict):
                arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
                name = _str(call.get("name"))
                out += self._tool(len(self._calls), arguments, name=name, done=True)
        if first.get("finishReason"):
            self.stop_reason = str(first["finishReason"])
        return out

    # ---------------------------------------------------------------- the message

    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def refusal(self) -> str | None:
        """The refusal the model streamed instead of an answer (OpenAI chat), if any."""
        text = "".join(self._refusal)
        return text if text.strip() else None

    def message(self) -> dict[str, Any]:
        """The final message so far, as an OpenAI chat completion (what ``check`` reads)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{index}",
                    "type": "function",
                    "function": {"name": call.name or "", "arguments": "".join(call.arguments)},
                }
                for index, call in sorted(self._calls.items())
            ]
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        if self.refusal is not None:
            message["refusal"] = self.refusal
        return {
            "object": "chat.completion",
            "model": self.model,
            "stream_format": self.format,
            "choices": [{"index": 0, "message": message, "finish_reason": self.stop_reason}],
        }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def reassemble(text: str) -> WireDecoder:
    """Decode a whole saved stream; its ``message()`` is the final message."""
    decoder = WireDecoder()
    decoder.feed(text)
    decoder.close()
    return decoder
