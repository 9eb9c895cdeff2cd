"""A streamed response (Server-Sent Events), checked as it passes.

:class:`StreamGuard` is fed the upstream's bytes and gives what to send on to the client:

- every event passes at once, as it came, unless a tool call is being held;
- a tool call's events are held from its first event until the call is complete and valid
  (:class:`~llmfix.stream.reader.StreamParser` releases it, as ``repair --stream`` does,
  given the call's arguments once they are complete: see :meth:`StreamGuard._feed_calls`);
  they are then sent, their arguments replaced by the repaired ones when a rule changed
  them (one delta carrying the whole arguments). Events after a held call wait behind it,
  so the client sees them in their order;
- when the stream ends, the text answer (when the request asked for JSON) is checked
  whole with the stream's stop reason applied, the calls still held are settled by the
  final check, and the verdict travels in the last event: an extra chunk before
  ``[DONE]`` (OpenAI chat), the ``message_stop`` event (Anthropic), the
  ``response.completed`` event (Responses), as a ``llmfix`` member the SDKs keep.

A failure under the ``error`` policy ends the stream with an error event in the API's own
shape, which the OpenAI and Anthropic SDKs raise; under ``pass`` the held events go out as
the model wrote them, the verdict saying what is wrong.

Text deltas are never held: a JSON text answer is judged at the end (the verdict), and
the Responses API's final ``response.completed`` object carries the repaired text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmfix.jsontext import dumps
from llmfix.model import Result, Severity, Status
from llmfix.proxy.verdict import Verdict, verdict_of

if TYPE_CHECKING:
    from llmfix.proxy.expect import Expectation
    from llmfix.proxy.whole import ModelRepair
    from llmfix.run.settings import RepairRun
    from llmfix.schema.validate import SchemaValidator
    from llmfix.stream.wire import Delta

# The events that end a stream, by API (their data is where the verdict goes).
_FINAL = {
    "anthropic": ("message_stop",),
    "openai-responses": ("response.completed", "response.incomplete", "response.failed"),
}


@dataclass
class _Event:
    raw: bytes
    name: str | None
    data: str | None
    record: dict[str, Any] | None
    call: int | None = None  # the tool call it belongs to


def _parse(raw: bytes) -> _Event:
    name = None
    data: list[str] = []
    for line in raw.decode("utf-8", "replace").splitlines():
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value[1:] if value[:1] == " " else value)
        elif field == "event":
            name = value[1:] if value[:1] == " " else value
    text = "\n".join(data) if data else None
    record = None
    if text is not None and text.lstrip()[:1] == "{":
        try:
            found = json.loads(text)
        except ValueError:
            found = None
        record = found if isinstance(found, dict) else None
    return _Event(raw, name, text, record)


def _sse(name: str | None, record: dict[str, Any]) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(record, ensure_ascii=False)}\n\n".encode()


class StreamGuard:
    """One streamed response's guard (see the module docstring). ``api`` is a value of
    :data:`llmfix.proxy.expect.ROUTES`; ``on_failure`` is ``pass`` or ``error``."""

    def __init__(
        self,
        api: str,
        expect: Expectation,
        run: RepairRun,
        on_failure: str = "pass",
        model: ModelRepair | None = None,
    ) -> None:
        # (start-up: loaded by the first streamed request)
        from llmfix.stream.reader import StreamParser
        from llmfix.stream.wire import WireDecoder

        self.api = api
        self.expect = expect
        self.run = run
        self.on_failure = on_failure
        self.model = model
        self.decoder = WireDecoder()
        self.parser = (
            None
            if expect.registry is None
            else StreamParser(options=run.options, registry=expect.registry, tools=True)
        )
        self.verdict: Verdict | None = None
        self._buffer = bytearray()
        self._crlf = False  # the upstream ends its lines with CR LF (or CR)
        self._out: list[bytes] = []  # what one read gave so far
        self._queue: list[_Event] = []
        self._blocks: dict[int, int] = {}  # Anthropic block / Responses output index → call
        self._args: dict[int, list[str]] = {}  # each call's argument text as it came
        self._pending: dict[int, list[str]] = {}  # what the parser was not given yet
        self._names: dict[int, str] = {}
        self._ids: dict[int, str] = {}
        self._ready: dict[int, dict[str, Any]] = {}  # released calls: index → checked call
        self._sent_args: set[int] = set()
        self._verdicts: dict[int, tuple[dict[str, Any], str] | None] = {}
        self._stopped = False  # an error event was sent: nothing more goes out
        self._chat: dict[str, Any] = {}  # id, created, model of the last chat chunk
        self._text_value: Any = None  # the repaired JSON text answer, when it passes
        self._early: tuple[int, Result] | None = None  # (length, check) of a whole text

    # ------------------------------------------------------------------ feeding

    def feed(self, data: bytes) -> bytes:
        """The bytes to send on now for ``data`` from the upstream: every complete event
        in it, as it came or rewritten, in one piece (what arrived together goes out
        together, in one write). Events that pass unchanged are the upstream's bytes."""
        buffer = self._buffer
        buffer += data
        if not self._crlf and b"\r" in data:
            self._crlf = True
        out = self._out
        start = 0
        while True:
            end, size = _boundary(buffer, start, self._crlf)
            if end < 0:
                break
            raw = bytes(buffer[start : end + size])
            try:
                sent = self._event(raw)
            except Exception:
                del buffer[:start]  # for abandon(): nothing is lost
                raise
            start = end + size
            if sent:
                out.append(sent)
        del buffer[:start]
        self._out = []
        return out[0] if len(out) == 1 else b"".join(out)

    def close(self) -> bytes:
        """The upstream ended: what is left to send (the verdict, when not yet given)."""
        out = b""
        if bytes(self._buffer).strip():
            out = self._event(bytes(self._buffer) + b"\n\n")
        self._buffer.clear()
        if self.verdict is None:
            out += self._finish(None)
        return out

    def abandon(self, data: bytes) -> bytes:
        """Stop checking (the guard itself failed): what it held and ``data``, as they came;
        what follows is to be passed on untouched."""
        held = b"".join(self._out) + b"".join(event.raw for event in self._queue)
        held += bytes(self._buffer) + data
        self._out = []
        self._queue.clear()
        self._buffer.clear()
        return held

    def prepare(self) -> None:
        """Work ahead while the upstream is quiet (call it after sending what
        :meth:`feed` gave): a JSON text answer that reads as a whole JSON value is
        checked now, so that the stream's end has only its stop reason to apply."""
        if not self.expect.json or self.verdict is not None or self._stopped:
            return
        content = self.decoder.content
        if self._early is not None and self._early[0] == len(content):
            return
        if content.rstrip()[-1:] not in ("}", "]"):
            return
        try:
            json.loads(content)
        except ValueError:
            return
        self._early = (len(content), self._check_text(content))

    @property
    def message(self) -> dict[str, Any]:
        """The answer as the upstream streamed it, reassembled (an OpenAI chat completion,
        as ``llmfix check`` reads a saved stream)."""
        return self.decoder.message()

    def _event(self, raw: bytes) -> bytes:
        if self._stopped:
            return b""
        event = _parse(raw)
        record = event.record
        if record is None:
            if event.data is not None and event.data.strip() == "[DONE]":
                self.decoder.feed(raw)
                head = self._finish(None) if self.verdict is None else b""
                return head if self._stopped else head + raw
            deltas = self.decoder.feed(raw)  # (not JSON: the decoder notes the error)
            record = {}
        else:
            deltas = self.decoder.feed_record(record)
        if self.api == "openai-chat" and record.get("id"):
            self._chat = {k: record.get(k) for k in ("id", "created", "model")}
        event.call = self._bind(event, record, deltas) if deltas or self._blocks else None
        if deltas and self.parser is not None:
            self._feed_calls(deltas)
        if record.get("type") in _FINAL.get(self.api, ()):
            return self._finish(event)
        if not self._queue and event.call is None:
            return raw  # nothing held: it passes as it came
        self._queue.append(event)
        return self._drain()

    def _bind(self, event: _Event, record: dict[str, Any], deltas: list[Delta]) -> int | None:
        """The tool call ``event`` belongs to, if any."""
        for delta in deltas:
            if delta.kind == "tool":
                self._args.setdefault(delta.index, []).append(delta.text)
                if delta.name and delta.index not in self._names:
                    self._names[delta.index] = delta.name
                if delta.id and delta.index not in self._ids:
                    self._ids[delta.index] = delta.id
        if self.api == "openai-chat":
            tools = [d.index for d in deltas if d.kind == "tool" and (d.text or d.id or d.name)]
            return tools[0] if tools else None
        key = "index" if self.api == "anthropic" else "output_index"
        position = record.get(key)
        if not isinstance(position, int):
            return None
        started = [d.index for d in deltas if d.kind == "tool" and (d.id or d.name)]
        if started:
            self._blocks[position] = started[0]
        return self._blocks.get(position)

    def _feed_calls(self, deltas: list[Delta], *, final: bool = False) -> None:
        """Hand the calls' deltas to the stream parser, which releases each call once it is
        complete and valid. A call's argument text is handed over whole, when it is
        complete: when it reads as strict JSON, when the API closes the call, or when the
        stream ends (``final``) — reading it piece by piece as it comes would show partial
        values, which the proxy never sends, at several times the cost."""
        parser = self.parser
        if parser is None:
            return
        # (start-up: loaded by the first streamed request with tools)
        from llmfix.stream.wire import Delta

        ready: list[Delta] = []
        for d in deltas:
            if d.kind != "tool":
                continue
            if d.id or d.name:
                ready.append(Delta("tool", "", d.index, d.id, d.name))
            if d.text:
                self._pending.setdefault(d.index, []).append(d.text)
            if d.done or (d.text.rstrip().endswith("}") and _complete(self._args[d.index])):
                pending = self._pending.pop(d.index, None)
                if pending:
                    ready.append(Delta("tool", "".join(pending), d.index))
                if d.done:
                    ready.append(Delta("tool", "", d.index, done=True))
        if final:
            ready += [Delta("tool", "".join(p), k) for k, p in self._pending.items() if p]
            self._pending.clear()
        if not ready:
            return
        found_events = parser.feed_deltas(ready)
        if any(d.text or d.done for d in ready):
            found_events += parser.flush()
        for found in found_events:
            if found.kind == "tool_call" and found.index is not None and found.call is not None:
                self._ready[found.index] = dict(found.call)

    def _drain(self) -> bytes:
        out: list[bytes] = []
        while self._queue:
            head = self._queue[0]
            if head.call is not None and head.call not in self._ready:
                break
            self._queue.pop(0)
            out.append(self._rewrite(head))
        return b"".join(out)

    # ------------------------------------------------------------------ the end

    def _finish(self, final: _Event | None) -> bytes:
        """Settle the held calls, judge the answer, and send the verdict."""
        # (start-up: loaded by the first streamed request)
        from llmfix.batch.gate import gate_failures
        from llmfix.pipeline.stops import apply_finish, stream_finish

        decoder, run = self.decoder, self.run
        partial = run.options.partial
        finish = stream_finish(decoder.format, decoder.stop_reason, decoder.refusal)
        checked: list[tuple[Result, list[str]]] = []
        if self.expect.json or (finish is not None and finish.kind == "refused"):
            content = decoder.content
            early = self._early
            text = early[1] if early is not None and early[0] == len(content) else None
            text = apply_finish(text or self._check_text(content), finish, partial=partial)
            failed = gate_failures(text, run.fail_on, run.max_risk, partial=partial)
            if failed and self.model is not None and text.status is not Status.REFUSED:
                text = self.model(content, text, self.expect.validator, "the streamed answer")
                failed = gate_failures(text, run.fail_on, run.max_risk, partial=partial)
            checked.append((text, failed))
            if not failed and text.status not in (Status.VALID, Status.EXTRACTED):
                self._text_value = text.value
        bad_calls: set[int] = set()
        if self.parser is not None and self._args:
            self._feed_calls([], final=True)
            calls = apply_finish(self.parser.close(), finish, partial=partial)
            failed = gate_failures(calls, run.fail_on, run.max_risk, partial=partial)
            bad_calls = _failed_calls(calls)
            redone = None
            if failed and bad_calls and self.model is not None:
                redone = self._calls_by_model(calls, bad_calls, finish)
            if redone is None:
                checked.append((calls, failed))
            else:
                checked += redone
                bad_calls = {k for k, (_, failures) in enumerate(redone) if failures}
            for k, call in enumerate(calls.value or ()):
                if k not in self._ready and k not in bad_calls and isinstance(call, dict):
                    self._ready[k] = dict(call)
        self.verdict = verdict = verdict_of(checked)
        refused = verdict.status == Status.REFUSED.value  # the SDKs have a place for it
        if not verdict.passed and self.on_failure == "error" and not refused:
            self._stopped = True
            self._queue.clear()
            return self._error(verdict)
        for event in self._queue:  # the calls still held go out as the model wrote them
            if event.call is not None and event.call not in self._ready:
                event.call = None
        out = self._drain()
        return out + self._verdict_event(final, verdict)

    def _check_text(self, text: str, validator: SchemaValidator | None = None) -> Result:
        """The pipeline's result on ``text``: the JSON text answer (checked against the
        request's schema), or a call's arguments (against ``validator``)."""
        # (start-up: loaded by the first streamed request that asked for JSON)
        from llmfix.pipeline.core import repair_text

        if validator is None:
            validator = self.expect.validator
        return repair_text(text, options=self.run.options, validator=validator)

    def _calls_by_model(
        self, calls: Result, bad: set[int], finish: Any
    ) -> list[tuple[Result, list[str]]] | None:
        """The calls judged one by one, those the rules left failing sent to the model
        (``--llm``); a repaired call is released with the model's arguments. ``None``
        when a failing call names no tool of the request's (no model can mend that)."""
        from llmfix.batch.gate import gate_failures
        from llmfix.pipeline.stops import apply_finish

        run, registry = self.run, self.expect.registry
        assert registry is not None
        assert self.model is not None
        values = calls.value if isinstance(calls.value, list) else []
        if any(k >= len(values) or not isinstance(values[k], dict) for k in bad):
            return None
        if any(values[k].get("name") not in registry.names for k in bad):
            return None
        partial = run.options.partial
        judged: list[tuple[Result, list[str]]] = []
        for k, call in enumerate(values):
            name = call.get("name") if isinstance(call, dict) else None
            validator = registry.validator_for(name) if isinstance(name, str) else None
            text = "".join(self._args.get(k, ())).strip() or "{}"
            result = apply_finish(self._check_text(text, validator), finish, partial=partial)
            failed = gate_failures(result, run.fail_on, run.max_risk, partial=partial)
            if failed and k in bad:
                result = self.model(text, result, validator, f"tool call {name}")
                failed = gate_failures(result, run.fail_on, run.max_risk, partial=partial)
                if not failed and isinstance(call, dict):
                    self._ready[k] = {**call, "arguments": result.value}
            judged.append((result, failed))
        return judged

    def _verdict_event(self, final: _Event | None, verdict: Verdict) -> bytes:
        said = verdict.to_dict()
        if self.api == "openai-chat":
            chunk = {**self._chat, "object": "chat.completion.chunk", "choices": [], "llmfix": said}
            return _sse(None, chunk)
        if final is None or final.record is None:
            return b""
        record = final.record  # (parsed for this event alone: changed in place)
        if self.api == "openai-responses":
            self._fix_response(record.get("response"))
        record["llmfix"] = said
        return _sse(final.name, record)

    def _error(self, verdict: Verdict) -> bytes:
        why = "; ".join(verdict.failures + verdict.errors[:3])
        message = f"llmfix: the model's answer failed the check ({verdict.status}): {why}"
        error: dict[str, Any] = {
            "message": message,
            "type": "llmfix_invalid_response",
            "code": verdict.status,
        }
        body: dict[str, Any]
        if self.api == "anthropic":
            body = {"type": "error", "error": {"type": "invalid_response_error", **error}}
            return _sse("error", {**body, "llmfix": verdict.to_dict()})
        if self.api == "openai-responses":
            body = {"type": "error", "message": message, "code": verdict.status, "param": None}
            return _sse("error", {**body, "error": error, "llmfix": verdict.to_dict()})
        return _sse(None, {"error": error, "llmfix": verdict.to_dict()})

    # ------------------------------------------------------------------ rewriting

    def _changed(self, index: int) -> tuple[dict[str, Any], str] | None:
        """The checked call ``index`` and its arguments' JSON text, when it differs from
        what the model streamed (worked out once per call)."""
        if index in self._verdicts:
            return self._verdicts[index]
        call = self._ready.get(index)
        if call is None:
            return None
        text = "".join(self._args.get(index, ())).strip() or "{}"
        try:
            same = json.loads(text) == call.get("arguments")
        except ValueError:
            same = False
        found = None
        if not same or call.get("name") != self._names.get(index):
            found = (call, dumps(call.get("arguments"), separators=(",", ":")))
        self._verdicts[index] = found
        return found

    def _rewrite(self, event: _Event) -> bytes:
        index = event.call
        changed = None if index is None else self._changed(index)
        if index is None or changed is None or event.record is None:
            return event.raw
        call, arguments = changed
        record = event.record  # (parsed for this event alone: changed in place)
        name = call.get("name")
        first = index not in self._sent_args
        kind = record.get("type")
        if self.api == "openai-chat":
            return self._rewrite_chat(event, record, index, name, arguments)
        if self.api == "anthropic":
            if kind == "content_block_start":
                block = record.get("content_block") or {}
                block["name"] = name
                return _sse(event.name, record)
            if kind == "content_block_delta":
                if not first:
                    return b""
                record["delta"] = {"type": "input_json_delta", "partial_json": arguments}
                self._sent_args.add(index)
                return _sse(event.name, record)
            if kind == "content_block_stop" and first:
                self._sent_args.add(index)
                delta = {"type": "input_json_delta", "partial_json": arguments}
                head = {"type": "content_block_delta", "index": record.get("index"), "delta": delta}
                return _sse("content_block_delta", head) + event.raw
            return event.raw
        # the Responses API
        if kind == "response.function_call_arguments.delta":
            if not first:
                return b""
            record["delta"] = arguments
            self._sent_args.add(index)
        elif kind == "response.function_call_arguments.done":
            record["arguments"] = arguments
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = record.get("item") or {}
            item["name"] = name
            if kind == "response.output_item.done" or item.get("arguments"):
                item["arguments"] = arguments
        return _sse(event.name, record)

    def _rewrite_chat(
        self, event: _Event, record: dict[str, Any], index: int, name: Any, arguments: str
    ) -> bytes:
        """A chat chunk with call ``index`` in it: the whole repaired arguments go in the
        call's first chunk that carries arguments; the later ones are left out (or emptied,
        when the chunk carries more than this call's arguments)."""
        only_arguments = True
        for choice in record.get("choices") or ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if not isinstance(delta, dict):
                continue
            if choice.get("finish_reason") or set(delta) - {"tool_calls"}:
                only_arguments = False
            for entry in delta.get("tool_calls") or ():
                if not isinstance(entry, dict) or entry.get("index", 0) != index:
                    only_arguments = False
                    continue
                function = entry.setdefault("function", {})
                if function.get("name"):
                    function["name"] = name
                    only_arguments = False
                if set(entry) - {"index", "function"} or set(function) - {"arguments"}:
                    only_arguments = False
                if "arguments" in function:
                    first = index not in self._sent_args
                    function["arguments"] = arguments if first else ""
                    self._sent_args.add(index)
                    only_arguments = only_arguments and not first
        if only_arguments:
            return b""
        return _sse(event.name, record)

    def _fix_response(self, response: Any) -> None:
        """The final Responses object with the repaired calls and text put in."""
        if not isinstance(response, dict) or not isinstance(response.get("output"), list):
            return
        ids = {v: k for k, v in self._ids.items()}
        for item in response["output"]:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                index = ids.get(str(item.get("call_id")))
                if index is None:
                    index = ids.get(str(item.get("id")))
                changed = None if index is None else self._changed(index)
                if changed is not None:
                    item["name"] = changed[0].get("name")
                    item["arguments"] = changed[1]
            elif item.get("type") == "message" and self._text_value is not None:
                parts = [p for p in item.get("content") or () if isinstance(p, dict)]
                texts = [p for p in parts if p.get("type") == "output_text"]
                if texts:
                    texts[0]["text"] = dumps(self._text_value)
                    for extra in texts[1:]:
                        extra["text"] = ""


def _complete(parts: list[str]) -> bool:
    """Whether a call's argument text so far is a whole JSON object (strict)."""
    try:
        return isinstance(json.loads("".join(parts)), dict)
    except ValueError:
        return False


def _boundary(buffer: bytearray, start: int, crlf: bool) -> tuple[int, int]:
    """Where the first event in ``buffer`` from ``start`` ends (the blank line), and the
    blank line's length; ``(-1, 0)`` when no event is complete yet. A stream whose lines
    end in LF alone (every API's) needs one search."""
    if not crlf:
        return buffer.find(b"\n\n", start), 2
    found = [(buffer.find(sep, start), len(sep)) for sep in (b"\n\n", b"\r\n\r\n", b"\r\r")]
    found = [f for f in found if f[0] >= 0]
    return min(found) if found else (-1, 0)


def _failed_calls(result: Result) -> set[int]:
    """The calls an error of ``result`` points into (``/2/arguments/x``: call 2)."""
    failed = set()
    for d in result.diagnostics:
        if d.severity is Severity.ERROR and d.pointer and d.pointer.count("/") >= 1:
            head = d.pointer.split("/")[1]
            if head.isdigit():
                failed.add(int(head))
    return failed
