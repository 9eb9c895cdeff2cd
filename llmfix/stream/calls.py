"""Tool calls in a stream: structured calls arriving as deltas of their own (OpenAI
``tool_calls``, Anthropic ``tool_use``) and calls written in the text, each released as a
``tool_call`` event once it is complete and valid (the tool-call check decides).

:class:`ToolCallStream` is the part of :class:`~llmfix.stream.reader.StreamParser` that
does this; the reader's own state machine (prose, markup, JSON values) is in ``reader``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.model import Result, Severity, Status
from llmfix.stream.events import Event

if TYPE_CHECKING:
    from llmfix.options import RepairOptions
    from llmfix.stream.wire import Delta
    from llmfix.toolcalls.registry import ToolRegistry


class ToolCallStream:
    """The tool-call half of :class:`~llmfix.stream.reader.StreamParser` (a mixin)."""

    # The last tool-call check, by its text: the calls of an API stream are checked when
    # the last one closes, and again, on the same text, by ``close()``.
    _last_check: tuple[tuple[str, bool], Result] | None = None

    if TYPE_CHECKING:  # what the mixin uses of StreamParser
        _options: RepairOptions
        _tool_options: dict[str, Any]
        _registry: ToolRegistry | None
        _tools: bool
        _growing: bool
        _calls: dict[int, StructuredCall]
        _events: list[Event]
        _released: int
        _checked_at: int
        _total: int
        _boundary: bool
        _index: int

        @property
        def text(self) -> str: ...

        def feed(self, chunk: str) -> list[Event]: ...

        def flush(self) -> list[Event]: ...

        def feed_reasoning(self, text: str) -> list[Event]: ...

        def _take_events(self) -> list[Event]: ...

        def _arguments_parser(self) -> ToolCallStream: ...

    def _call_events(self, call: StructuredCall, events: list[Event]) -> None:
        self._events += [call.relabel(e) for e in events if e.kind == "value"]
        if call.parser._index > 0 and not call.done:
            call.done = True
            self._release_structured()

    def feed_tool_call(
        self,
        index: int,
        *,
        arguments: str = "",
        id: str | None = None,
        name: str | None = None,
    ) -> list[Event]:
        """Read a structured tool call's delta (API streams): its id, name, argument text."""
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = StructuredCall(self, index)
        if id:
            call.id = id
        if name and call.name is None:
            call.name = name
        if arguments:
            self._call_events(call, call.parser.feed(arguments))
        return self._take_events()

    def feed_deltas(self, deltas: Iterable[Delta]) -> list[Event]:
        """Feed what :class:`~llmfix.stream.wire.WireDecoder` decoded from the wire."""
        events: list[Event] = []
        for delta in deltas:
            if delta.kind == "text":
                events += self.feed(delta.text)
            elif delta.kind == "reasoning":
                events += self.feed_reasoning(delta.text)
            else:
                if delta.text or delta.id or delta.name:
                    events += self.feed_tool_call(
                        delta.index, arguments=delta.text, id=delta.id, name=delta.name
                    )
                if delta.done:
                    events += self.end_tool_call(delta.index)
        return events

    def end_tool_call(self, index: int) -> list[Event]:
        """The API says call ``index`` is finished (its block stopped): release it if valid."""
        call = self._calls.get(index)
        if call is not None and not call.parser._total and not call.done:
            call.done = True  # a call without arguments: {}
            call.empty = True
            self._release_structured()
        return self._take_events()

    def _check_tools(self, text: str, *, structured: bool = False) -> Result:
        key = (text, structured)
        if self._last_check is not None and self._last_check[0] == key:
            return self._last_check[1]
        result = self._run_tool_check(text, structured)
        self._last_check = (key, result)
        return result

    def _run_tool_check(self, text: str, structured: bool) -> Result:
        # (start-up: a stream read without tools loads no tool-call reader)
        from llmfix.toolcalls import check_tool_calls

        options = self._options
        extra = dict(self._tool_options)
        if structured:
            extra.pop("fmt", None)  # the calls came as API JSON, whatever the text format
        return check_tool_calls(
            text,
            self._registry,
            **extra,
            max_risk=options.max_risk,
            schema_repair=options.schema_repair,
            disabled_rules=options.disabled_rules,
            time_budget=options.limits.time_budget,
        )

    def _stopped_tools(self, chunk: str) -> list[Event]:
        """With tools, a call may still end after the reader stopped (a pythonic call list).

        A chunk that may close one (``>``, ``]``, ``}``) runs the check, once the text grew by
        an eighth since the last one: the checks then cost O(n log n) in all, not O(n²).
        """
        if not self._tools or self._calls or not any(c in chunk for c in ">]}"):
            return []
        if self._total - self._checked_at < max(32, self._checked_at // 8):
            return []
        self._boundary = True
        return self._take_events()

    def _check_due(self) -> bool:
        """Whether a call that may have ended is checked now: once the text grew by an
        eighth since the last check. Checking at every call's end costs the text so far each
        time, quadratic in the number of calls (2,000 short calls fed one character at a
        time: minutes); this way the checks cost about nine times the text in all, and a
        call waits for at most an eighth more text, or ``flush()``, or ``close()``."""
        return self._total - self._checked_at > self._checked_at // 8

    def _release_text_calls(self) -> None:
        """Release, in order, the calls that are complete and valid in the text so far.

        Run when a call may have ended (a value or a call envelope closed), on the text so
        far: its cost is the text's length once per such boundary, not per chunk.
        """
        self._checked_at = self._total
        result = self._check_tools(self.text)
        self._release(result, len(result.value))

    def _release(self, result: Result, count: int) -> None:
        failed = _failed_calls(result)
        while self._released < count:
            k = self._released
            if k in failed or k >= len(result.value):
                return
            call = result.value[k]
            self._events.append(Event("tool_call", index=k, call=call, name=call.get("name")))
            self._released += 1

    def _release_structured(self) -> None:
        ready = 0
        while ready in self._calls and self._calls[ready].done:
            ready += 1
        if ready <= self._released:
            return
        calls = [self._calls[k] for k in range(ready)]
        message = json.dumps(_message(calls, ""), ensure_ascii=False)
        self._release(self._check_tools(message, structured=True), ready)

    def _close_structured(self) -> Result:
        from dataclasses import replace

        calls = [self._calls[k] for k in sorted(self._calls)]
        message = json.dumps(_message(calls, self.text), ensure_ascii=False)
        result = self._check_tools(message, structured=True)
        cut = [
            codes.TOOLS_TRUNCATED_CALL.at(
                f"tool call {k} ({call.name or 'no name'}) was cut off by the end of "
                "the stream: its arguments never closed",
                pointer=f"/{k}",
            )
            for k, call in enumerate(calls)
            if not call.done
        ]
        if not cut or any(d.code == "tools.truncated_call" for d in result.diagnostics):
            return result
        status = Status.INVALID if result.status.ok else result.status
        return replace(result, status=status, diagnostics=(*result.diagnostics, *cut))


class StructuredCall:
    """A tool call arriving as deltas of its own (OpenAI ``tool_calls``, Anthropic ``tool_use``)."""

    def __init__(self, owner: ToolCallStream, index: int) -> None:
        self.index = index
        self.id: str | None = None
        self.name: str | None = None
        self.done = False
        self.empty = False
        self.parser = owner._arguments_parser()
        self._owner = owner

    def relabel(self, event: Event) -> Event:
        schema = None
        registry = self._owner._registry
        if registry is not None and self.name is not None:
            schema = registry.schema_for(self.name)
        return Event(
            "arguments",
            index=self.index,
            complete=event.complete,
            view=event._view,
            name=self.name,
            diagnostics=event._diagnostics,
            noted=event._noted,
            repairs=event.repairs,
            schema=schema,
        )

    @property
    def arguments(self) -> str:
        return "{}" if self.empty else self.parser.text


def _message(calls: list[StructuredCall], content: str) -> dict[str, Any]:
    """The assistant message the calls so far make, in the OpenAI chat shape."""
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {
                "id": call.id or f"call_{call.index}",
                "type": "function",
                "function": {"name": call.name or "", "arguments": call.arguments},
            }
            for call in calls
        ],
    }


def _failed_calls(result: Result) -> set[int]:
    failed = set()
    for d in result.diagnostics:
        if d.severity is Severity.ERROR and d.pointer:
            head = d.pointer.split("/")[1] if d.pointer.count("/") >= 1 else ""
            if head.isdigit():
                failed.add(int(head))
    return failed
