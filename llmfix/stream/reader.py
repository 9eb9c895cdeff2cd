"""Read a model's answer while it streams: snapshots that are never taken back.

Longer than ~700 lines on purpose: it is one state machine (prose, markup, JSON values)
whose hot paths (``_run``, ``_json``, ``_value``, ``_key``) read and write the parser's
fields on every character; splitting it further would put them behind calls. What it sends
is in :mod:`llmfix.stream.events`, tool calls in :mod:`llmfix.stream.calls`, the small
scanners in :mod:`llmfix.stream.scan`.

:class:`StreamParser` is fed the answer chunk by chunk (``feed``) and answers with
:class:`Event` objects: prose (``text``), reasoning (``reasoning``), snapshots of the JSON
value being written (``value``), snapshots of a tool call's arguments (``arguments``) and
tool calls released as complete and valid (``tool_call``). ``close()`` runs the normal
pipeline (``llmfix.repair``, or the tool-call check with ``tools``) on the whole text, so
its result is exactly what a non-streaming call gives.

What a snapshot promises (monotonic):

- an object key appears only once its value has begun; a number, ``true``/``false``/``null``
  only once it is complete (a delimiter follows it); a string only once its closing quote
  arrived, unless ``strings="growing"``: then the one string being written shows what has
  arrived so far, and only it may grow in a later snapshot;
- what a snapshot shows is never changed or withdrawn by a later one. When the stream holds
  something this reader does not follow (a missing comma, a bare word, a duplicate key),
  it stops sending snapshots (a ``stopped`` event with ``stream.stopped``) rather than
  guess; ``close()`` still repairs the whole text.

Cost: every character is looked at a bounded number of times. An unfinished string is
retried when a chunk brings its closing quote (an escaped one does not count: each chunk is
looked at alone, the escape state carried over) or its length grew by a quarter; an unfinished
container shorter than :data:`DESCEND` is retried after :data:`BATCH` more characters (a
32nd of the text so far when that is more, up to 8,192), or at the first chunk after
:data:`QUIET` seconds without a read, which is read as ``flush()`` reads (a live stream
shows its values as they arrive); one C-speed scan then reads several members. A
longer container is read member by member. So the work over a stream is linear in its
length whatever the chunk size; a stream fed as fast as it can be shows small values in
batches, a live one as they complete, and ``flush()`` reads everything now. Snapshots are
built only when an event's ``value`` is read. In ``growing`` mode unfinished containers are
read member by member at once, and the open string is decoded for each event, which costs
its length each time.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from llmfix import codes
from llmfix.gcpause import paused_gc
from llmfix.model import Diagnostic, Result, Risk, Severity, Span, build
from llmfix.pipeline.core import repair_text
from llmfix.stream.calls import StructuredCall, ToolCallStream
from llmfix.stream.events import Event, View
from llmfix.stream.scan import (
    incomplete,
    match_end,
    partial_string,
    requote,
    run_length,
    scanstring,
    skip,
)

if TYPE_CHECKING:
    from llmfix.options import RepairOptions
    from llmfix.schema.validate import SchemaValidator
    from llmfix.toolcalls.registry import ToolRegistry

StringMode = Literal["complete", "growing"]
STRING_MODES: tuple[str, ...] = ("complete", "growing")

DESCEND = 256  # an unfinished container longer than this is read member by member
BATCH = 128  # a shorter one is retried once this many more characters came (1/32 of the
# text so far, up to 8,192, when that is more), or once no read happened for QUIET seconds
QUIET = 0.02

_monotonic = time.monotonic
_TEXT_SPECIAL = re.compile(r"[{\[<`~]")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_TAIL = re.compile(r"[0-9.eE+-]*")
_WORD = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_DOUBLE_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S)
_SINGLE_BODY = re.compile(r"[^'\\]*(?:\\.[^'\\]*)*", re.S)
_SINGLE_ESCAPE = re.compile(r"\\.|\"", re.S)
_TAG = re.compile(r"<(/?)([A-Za-z][\w:.-]*|\|[\w]+\|)(?:\s[^<>]*)?>")
_REASONING = frozenset({"think", "thinking", "reasoning", "scratchpad"})
_ENVELOPES = frozenset({"json", "output", "answer", "tool_call", "result", "response"})
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}
_PY_LITERALS: dict[str, Any] = {"True": True, "False": False, "None": None}
_TOOL_MARKER = "[TOOL_CALLS]"
_BLANK = frozenset(" \t\r\n")
_NUMBER_END = frozenset(" \t\r\n,]}/")
_VALUE_END = ",]}/"  # what may follow a complete value inside a container
_DELIMITERS = frozenset(",]}")  # ... and surely ends it


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN/Infinity are not JSON: the member-by-member reader decides


# Strict: a raw control character sends a value to the member-by-member reader, which
# checks where it sits (the lenient parser drops a line break before a closing quote).
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]

# Modes of the reader and states of an open container.
_TEXT, _VALUE, _REASON = 0, 1, 2
_KEY, _COLON, _ITEM, _NEXT = 0, 1, 2, 3


class _Frame:
    __slots__ = ("comma", "container", "is_obj", "key", "state")

    def __init__(self, container: dict[str, Any] | list[Any]) -> None:
        self.container = container
        self.is_obj = isinstance(container, dict)
        self.state = _KEY if self.is_obj else _ITEM
        self.key: str | None = None
        self.comma: int | None = None  # absolute offset of a comma not yet followed by a member


class StreamParser(ToolCallStream):
    """Incremental reader of one answer (see the module docstring). Build with ``llmfix.stream``."""

    def __init__(
        self,
        *,
        options: RepairOptions,
        validator: SchemaValidator | None = None,
        registry: ToolRegistry | None = None,
        tools: bool = False,
        strings: StringMode = "complete",
        schema: Any = None,
        tool_options: Mapping[str, Any] | None = None,
    ) -> None:
        self._options = options
        self._tool_options = dict(tool_options or {})
        self._validator = validator
        self._registry = registry
        self._tools = tools
        self._growing = strings == "growing"
        self._schema = schema if schema is not None else _schema_of(validator)
        self._chunks: list[str] = []
        self._total = 0  # characters fed so far
        self._buf = ""  # the text from absolute offset _base on, not yet consumed
        self._base = 0
        self._pending: list[str] = []  # chunks fed but not yet joined into _buf
        self._resume_at = 0  # read again once _total reaches this
        self._quote: str | None = None  # or sooner, once this quote arrives (a string)
        self._escaped = False  # the text fed so far ends inside that string's escape
        self._timed = False  # or once QUIET seconds passed since the last read (a container)
        self._read_at = 0.0
        self._waiting: int | None = None  # buffer offset of what _run waits to complete
        # Read unfinished containers member by member at once (flush(), growing strings)
        # rather than waiting for them to complete.
        self._eager = self._growing
        self._shown: Any = None  # what the last snapshot showed (to send no repeats)
        self._mode = _TEXT
        self._fresh = True  # nothing but whitespace or markup since the start / a marker
        self._in_fence = False
        self._reason_close: re.Pattern[str] | None = None
        self._stack: list[_Frame] = []
        self._root: Any = None
        self._index = 0  # values seen so far
        self._open_string: int | None = None  # buffer offset of a string being written
        self._dirty = False
        self._stopped = False
        self._boundary = False  # a tool call may have ended since the last check
        self._released = 0
        self._checked_at = 0  # how much text the last tool-call check saw
        self._events: list[Event] = []
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self.diagnostics: list[Diagnostic] = []
        self._repairs: tuple[str, ...] = ()  # sorted codes of the repairs noted so far
        self._calls: dict[int, StructuredCall] = {}
        self._closed = False

    # ------------------------------------------------------------------ public

    def feed(self, chunk: str) -> list[Event]:
        """Read the next piece of the answer; the events it made, oldest first."""
        if self._closed:
            raise ValueError("the stream is closed")
        if not chunk:
            return []
        total = self._total = self._total + len(chunk)
        if self._stopped:
            self._chunks.append(chunk)
            return self._stopped_tools(chunk)
        # (kept in _pending only until the next read, which adds them to _chunks joined:
        # a chunk that is not read at once costs one append; this path runs per chunk)
        self._pending.append(chunk)
        if total < self._resume_at:
            if self._quote is not None:
                if not self._closes_string(chunk):
                    return []
            elif not self._timed or _monotonic() - self._read_at < QUIET:
                return []
            else:  # the stream paused (a live one): show what it holds, as flush() does
                return self.flush()
        self._take_pending()
        with paused_gc():  # (a read makes containers and notes, and no cycles)
            self._run()
        return self._take_events()

    def flush(self) -> list[Event]:
        """Read everything fed so far now, rather than when enough more has arrived.

        ``feed`` retries an unfinished value only once its brackets balance, its quote
        arrives or the text after it grew by a quarter, and shows an unfinished container
        shorter than :data:`DESCEND` only once it is complete (what keeps the total work
        linear). ``flush`` reads all that now and shows unfinished containers member by
        member: call it when the stream goes quiet (the CLI does after every read; ``feed``
        does for a chunk that came :data:`QUIET` seconds after the last read).
        """
        if not (self._stopped or self._closed):
            self._take_pending()
            self._eager = True
            try:
                with paused_gc():
                    self._run()
            finally:
                self._eager = self._growing
        for call in list(self._calls.values()):
            self._call_events(call, call.parser.flush())
        if self._stopped and self._tools and self._total > self._checked_at:
            self._boundary = True
        return self._take_events(now=True)

    def _arguments_parser(self) -> StreamParser:
        """A parser of its own for one structured call's arguments (made here, not in
        :mod:`llmfix.stream.calls`, which this module imports)."""
        return StreamParser(
            options=self._options, strings="growing" if self._growing else "complete"
        )

    def feed_reasoning(self, text: str) -> list[Event]:
        """Reasoning the API sends apart from the answer (never read as the answer)."""
        if text:
            self._events.append(Event("reasoning", index=self._index, text=text))
        return self._take_events()

    def _take_pending(self) -> None:
        """The chunks fed since the last read, joined, onto the buffer and the text."""
        if self._pending:
            arrived = "".join(self._pending)
            self._pending.clear()
            self._buf += arrived
            self._chunks.append(arrived)

    @property
    def text(self) -> str:
        """Everything fed so far (the text ``close()`` repairs)."""
        if self._pending and not self._stopped:
            self._take_pending()  # (not read: _buf is not looked at again until a read)
        if len(self._chunks) > 1:
            self._chunks[:] = ["".join(self._chunks)]
        return self._chunks[0] if self._chunks else ""

    def close(self) -> Result:
        """The end of the stream: the pipeline's result on the whole text."""
        self._closed = True
        if self._calls and (self._tools or not self.text.strip()):
            return self._close_structured()
        text = self.text
        if self._tools:
            return self._check_tools(text)

        return repair_text(text, options=self._options, validator=self._validator)

    # ---------------------------------------------------------------- driving

    def _take_events(self, *, now: bool = False) -> list[Event]:
        """The events made so far; with tools, first those of the calls that may have ended
        (at once with ``now``, from ``flush``; else once the check is due, see
        :meth:`_check_due`)."""
        self._flush_prose()
        if self._dirty and self._mode == _VALUE and not self._stopped:
            self._add(self._snapshot(complete=False))
        self._dirty = False
        if self._boundary and self._tools and not self._calls and (now or self._check_due()):
            self._boundary = False
            self._release_text_calls()
        events, self._events = self._events, []
        return events

    def _run(self) -> None:
        buf = self._buf
        i = 0
        n = len(buf)
        self._waiting = None
        self._open_string = None
        self._quote = None
        self._timed = False
        while i < n and not self._stopped:
            if self._mode == _VALUE:
                j = self._json(buf, i)
            elif self._mode == _TEXT:
                j = self._prose(buf, i)
            else:
                j = self._reason(buf, i)
            if j < 0:
                break
            i = j
        if self._waiting is not None:
            i = self._waiting
            if self._quote is not None:
                self._escaped = _ends_in_escape(buf)
        else:
            i = n
            self._resume_at = self._total + 1
        if self._open_string is not None and self._growing:
            self._dirty = True
        self._buf = buf[i:]
        self._base += i
        if self._open_string is not None:
            self._open_string -= i

    def _closes_string(self, chunk: str) -> bool:
        """Whether ``chunk`` holds the closing quote of the string ``_run`` waits for.

        Only the new chunk is looked at, with the escape state carried over from the last
        one (a backslash that ended it escapes this chunk's first character): an escaped
        quote (``\\"``) does not send the reader back over the whole string, so a string
        full of them costs its length once, not once per quote.
        """
        start = 1 if self._escaped else 0
        end = match_end(_DOUBLE_BODY, chunk, start)
        if end < len(chunk) and chunk[end] == '"':
            return True
        self._escaped = end < len(chunk)  # stopped at a backslash that ends the chunk
        return False

    def _wait(self, i: int) -> int:
        """Stop here until more text came: a quarter more than what is pending, at least 1."""
        pending = len(self._buf) - i
        self._resume_at = self._total + max(1, pending // 4)
        self._waiting = i
        return -1

    def _wait_for(self, i: int, *, quote: str | None = None) -> int:
        """Wait for an unfinished string's quote, or for a small container to grow.

        A string is retried as soon as a chunk holds its quote (or a quarter more came); a
        container shorter than :data:`DESCEND` once :data:`BATCH` more characters came, so
        that one scan reads several members (``flush`` reads it at once).
        """
        self._wait(i)
        step = 64 if quote is not None else max(BATCH, min(self._total // 32, 8192))
        self._resume_at = max(self._resume_at, self._total + step)
        self._quote = quote
        self._timed = quote is None
        self._read_at = _monotonic()
        return -1

    def _stop(self, i: int, why: str) -> int:
        self._flush_prose()
        if self._dirty and self._mode == _VALUE:
            self._add(self._snapshot(complete=False))
            self._dirty = False
        self._stopped = True
        where = self._base + i
        note = codes.STREAM_STOPPED.at(
            f"{why}: no more snapshots from here; close() repairs the whole text",
            span=Span(where, where + 1),
        )
        self.diagnostics.append(note)
        self._events.append(Event("stopped", index=self._index, diagnostics=(note,)))
        return -1

    def _note(self, code: codes.Code, risk: Risk | None, i: int, length: int, message: str) -> None:
        """Note ``code`` at ``[i, i + length)`` of the chunk: a warning when it changed
        something (it has a risk), else an observation."""
        start = self._base + i
        severity = Severity.INFO if risk is None else Severity.WARNING
        if risk is not None and code.id not in self._repairs:
            self._repairs = tuple(sorted((*self._repairs, code.id)))
        # (what code.at(...) makes, without the frozen __init__ or a call per field: a
        # broken answer has a note every few members)
        key = (code.id, severity)
        fields = _NOTE_FIELDS.get(key)
        if fields is None:
            made = build(Diagnostic, code=code.id, severity=severity, stage=code.stage, message="")
            fields = _NOTE_FIELDS[key] = dict(vars(made))
        span = _new(Span)
        placed = span.__dict__
        placed["start"] = start
        placed["end"] = start + length
        note = _new(Diagnostic)
        placed = note.__dict__
        placed.update(fields)
        placed["message"] = message
        placed["span"] = span
        placed["risk"] = risk
        self.diagnostics.append(note)

    # -------------------------------------------------------------- prose

    def _flush_prose(self) -> None:
        if self._text:
            self._events.append(Event("text", index=self._index, text="".join(self._text)))
            self._text.clear()
        if self._reasoning:
            text = "".join(self._reasoning)
            if text:  # (an empty <think></think> block says nothing)
                self._events.append(Event("reasoning", index=self._index, text=text))
            self._reasoning.clear()

    def _say(self, text: str) -> None:
        if text:
            self._text.append(text)
            if self._fresh and text.strip():
                self._fresh = False

    def _prose(self, buf: str, i: int) -> int:
        n = len(buf)
        while i < n:
            m = _TEXT_SPECIAL.search(buf, i)
            if m is None:
                self._say(buf[i:])
                return n
            j = m.start()
            self._say(buf[i:j])
            c = buf[j]
            if c == "[" and buf.startswith(_TOOL_MARKER[: n - j], j):
                if n - j < len(_TOOL_MARKER):
                    return self._wait(j)
                self._fresh = True
                self._boundary = True
                i = j + len(_TOOL_MARKER)
                continue
            if c in "{[":
                if not (self._fresh or self._in_fence):
                    k = skip(buf, j + 1)
                    if k >= n:
                        return self._wait(j)
                    follows = buf[k]
                    if follows not in ('"}' if c == "{" else '{["]-0123456789'):
                        self._say(c)
                        i = j + 1
                        continue
                self._flush_prose()
                self._mode = _VALUE
                self._root = None
                self._stack.clear()
                return j
            if c == "<":
                i = self._tag(buf, j)
                if i < 0 or self._mode != _TEXT:
                    return i
                continue
            run = run_length(buf, j, c)
            if j + run >= n:
                return self._wait(j)
            if run < 3:
                self._say(buf[j : j + run])
                i = j + run
                continue
            if self._in_fence:
                self._in_fence = False
                i = j + run
                continue
            end = buf.find("\n", j + run)
            if end < 0:
                return self._wait(j) if n - j < 200 else self._say_fence(buf, j, run)
            self._in_fence = True
            self._fresh = True
            self._note(codes.EXTRACT_FENCE, Risk.LOSSLESS, j, end - j, "a markdown fence")
            i = end + 1
        return i

    def _say_fence(self, buf: str, j: int, run: int) -> int:
        self._say(buf[j : j + run])
        return j + run

    def _tag(self, buf: str, j: int) -> int:
        n = len(buf)
        if j + 1 >= n:
            return self._wait(j)
        nxt = buf[j + 1]
        if not (nxt.isalpha() or nxt in "/|"):
            self._say("<")
            return j + 1
        m = _TAG.match(buf, j)
        if m is None:
            if buf.find(">", j) < 0 and n - j < 300:
                return self._wait(j)
            self._say("<")
            return j + 1
        closing, name = m.group(1), m.group(2).lower()
        if name in _REASONING and not closing:
            self._flush_prose()
            self._mode = _REASON
            self._reason_close = re.compile(rf"</{name}\s*>", re.IGNORECASE)
            self._note(codes.NORMALIZE_REASONING_BLOCK, None, j, m.end() - j, f"a <{name}> block")
            return m.end()
        if name in _ENVELOPES or name.startswith("|"):
            self._fresh = not closing
            if closing or name.startswith("|"):
                self._boundary = True
            return m.end()
        self._say(m.group())
        return m.end()

    def _reason(self, buf: str, i: int) -> int:
        assert self._reason_close is not None
        n = len(buf)
        m = self._reason_close.search(buf, i)
        if m is not None:
            self._reasoning.append(buf[i : m.start()])
            self._flush_prose()
            self._mode = _TEXT
            self._fresh = True
            return m.end()
        held = buf.rfind("<", max(i, n - 24))
        if held < 0:
            self._reasoning.append(buf[i:])
            return n
        self._reasoning.append(buf[i:held])
        return self._wait(held)

    # --------------------------------------------------------------- values

    def _snapshot(self, complete: bool) -> Event | None:
        if complete or not self._stack:
            view = View(((self._root, len(self._root)),), None)
        else:
            levels = tuple((f.container, len(f.container)) for f in self._stack)
            tail = None
            for depth, frame in enumerate(self._stack):
                if not frame.container and (frame.state != _ITEM or not frame.is_obj):
                    # A container shows once its first member has: ``{`` with no ``"key":``
                    # yet may still turn out a set ({'a', 'b'}), ``[`` a bracketed aside.
                    if depth == 0:
                        return None
                    parent, length = levels[depth - 1]
                    levels = (*levels[: depth - 1], (parent, length - 1))
                    break
            else:
                tail = self._growing_tail()
            shown = (tuple((id(c), n) for c, n in levels), tail)
            if shown == self._shown:
                return None  # nothing new to see (a "{" that may still be a set opened)
            self._shown = shown
            view = View(levels, tail)
        return Event(
            "value",
            index=self._index,
            complete=complete,
            view=view,
            diagnostics=self.diagnostics,
            noted=len(self.diagnostics),
            repairs=self._repairs,
            schema=self._schema,
        )

    def _add(self, event: Event | None) -> None:
        if event is not None:
            self._events.append(event)

    def _growing_tail(self) -> tuple[str | None, str] | None:
        """The string being written, for ``strings="growing"``: (its key, what came so far)."""
        if not self._growing or self._open_string is None:
            return None
        top = self._stack[-1]
        partial = partial_string(self._buf, self._open_string + 1)
        if top.is_obj:
            return (top.key, partial) if top.state == _ITEM else None
        return (None, partial)

    def _attach(self, value: Any, i: int) -> bool:
        """Put a value where the innermost container expects it; False on a duplicate key."""
        frame = self._stack[-1]
        frame.comma = None
        frame.state = _NEXT
        self._dirty = True
        if frame.is_obj:
            container: Any = frame.container
            if frame.key in container:
                self._stop(i, f"duplicate key {frame.key!r}")
                return False
            container[frame.key] = value
        else:
            frame.container.append(value)  # type: ignore[union-attr]
        return True

    def _open(self, container: dict[str, Any] | list[Any], i: int) -> bool:
        if self._stack and not self._attach(container, i):
            return False
        if not self._stack:
            self._root = container
        self._stack.append(_Frame(container))
        if len(self._stack) > self._options.limits.max_depth:
            self._stop(i, "nesting deeper than the depth limit")
            return False
        self._dirty = True
        return True

    def _close_container(self, frame: _Frame, i: int) -> None:
        if frame.comma is not None:
            comma = frame.comma - self._base
            self._note(codes.PARSE_TRAILING_COMMA, Risk.LOSSLESS, comma, 1, "trailing comma")
        self._stack.pop()
        self._dirty = True
        if self._stack:
            self._stack[-1].state = _NEXT
            return
        self._add(self._snapshot(complete=True))
        self._dirty = False
        self._index += 1
        self._mode = _TEXT
        self._fresh = self._in_fence
        self._boundary = True

    def _json(self, buf: str, i: int) -> int:
        n = len(buf)
        stack = self._stack
        while True:
            if i < n and buf[i] in _BLANK:
                i += 1  # (most often one space, after a comma or a colon)
                if i < n and buf[i] in _BLANK:
                    i = skip(buf, i)
            if i >= n:
                return n
            c = buf[i]
            if c == "/":
                j = self._comment(buf, i)
                if j < 0:
                    return j
                i = j
                continue
            if not stack:
                j = self._value(buf, i, c)
                if j < 0 or not stack:
                    return j
                i = j
                continue
            frame = stack[-1]
            state = frame.state
            if state == _NEXT:
                if c == ",":
                    frame.state = _KEY if frame.is_obj else _ITEM
                    frame.comma = self._base + i
                    i += 1
                elif c == ("}" if frame.is_obj else "]"):
                    self._close_container(frame, i)
                    i += 1
                    if not stack:
                        return i
                elif c == "`" and self._in_fence:
                    return self._abandon(i)
                else:
                    return self._stop(i, f"unexpected {c!r} after a value")
            elif state == _KEY:
                if c == "}":
                    self._close_container(frame, i)
                    i += 1
                    if not stack:
                        return i
                    continue
                j = self._key(buf, i, c, frame)
                if j < 0:
                    return j
                i = j
            elif state == _COLON:
                if c != ":":
                    return self._stop(i, f"expected ':' after key {frame.key!r}")
                frame.state = _ITEM
                if not frame.container:
                    self._dirty = True  # its first "key": shows the object
                i += 1
            else:
                if c == "]" and not frame.is_obj:
                    self._close_container(frame, i)
                    i += 1
                    if not stack:
                        return i
                    continue
                j = self._value(buf, i, c)
                if j < 0:
                    return j
                i = j

    def _abandon(self, i: int) -> int:
        """A closing fence inside an unfinished value: the value ends here, incomplete."""
        self._stack.clear()
        self._mode = _TEXT
        self._index += 1
        return i

    def _comment(self, buf: str, i: int) -> int:
        n = len(buf)
        if i + 1 >= n:
            return self._wait(i)
        nxt = buf[i + 1]
        if nxt == "/":
            end = buf.find("\n", i)
            if end < 0:
                return self._wait(i)
            self._note(codes.PARSE_COMMENT, Risk.LOSSLESS, i, end - i, "a // comment")
            return end + 1
        if nxt == "*":
            end = buf.find("*/", i + 2)
            if end < 0:
                return self._wait(i)
            self._note(codes.PARSE_COMMENT, Risk.LOSSLESS, i, end + 2 - i, "a /* */ comment")
            return end + 2
        return self._stop(i, "unexpected '/'")

    def _value(self, buf: str, i: int, c: str) -> int:
        n = len(buf)
        if c in "{[":
            try:
                value, end = _SCAN(buf, i)
            except json.JSONDecodeError as exc:
                if incomplete(exc, n) and n - i <= DESCEND and not self._eager:
                    return self._wait_for(i)
            except StopIteration as stop:  # a value expected where the text ends
                if stop.value >= n and n - i <= DESCEND and not self._eager:
                    return self._wait_for(i)
            except (ValueError, RecursionError):
                pass
            else:
                if not self._stack:
                    self._root = value
                    self._stack.append(_Frame(value))
                    self._close_container(self._stack[-1], i)
                    return end
                return end if self._attach(value, i) else -1
            if not self._open({} if c == "{" else [], i):
                return -1
            return i + 1
        if not self._stack:
            return self._stop(i, "the value is not an object or array")
        if c == '"':
            try:
                text, end = scanstring(buf, i + 1, False)
            except json.JSONDecodeError as exc:
                if incomplete(exc, n):
                    self._open_string = i
                    self._wait_for(i, quote='"')
                    if self._growing:
                        self._resume_at = self._total + 1
                    return -1
                return self._stop(i, "an invalid escape in a string")
            # a delimiter right after the closing quote, which no line break precedes, is
            # what _follower accepts (checked here without the call: most strings)
            if not (end < n and buf[end] in _DELIMITERS and buf[end - 2] not in "\r\n"):
                follows = self._follower(buf, i, end, _VALUE_END)
                if follows < 0:
                    if self._growing and self._waiting is not None:
                        self._open_string = i
                    return follows
            return end if self._attach(text, i) else -1
        if c == "'":
            got = self._single(buf, i, ",}]")
            if got is None:
                return -1
            text, end = got
            return end if self._attach(text, i) else -1
        if c == "-" or c.isdigit():
            m = _NUMBER.match(buf, i)
            end = m.end() if m is not None else i
            if match_end(_NUMBER_TAIL, buf, end) >= n:
                return self._wait(i)
            if m is None or buf[end] not in _NUMBER_END:
                return self._stop(i, "a number this reader does not follow")
            if buf[end] not in _DELIMITERS and self._follower(buf, i, end, _VALUE_END) < 0:
                return -1
            token = m.group()
            number: Any = float(token) if ("." in token or "e" in token or "E" in token) else None
            return end if self._attach(int(token) if number is None else number, i) else -1
        m = _WORD.match(buf, i)
        if m is None:
            if c == "`" and self._in_fence:
                return self._abandon(i)
            return self._stop(i, f"unexpected {c!r}")
        end = m.end()
        if end >= n:
            return self._wait(i)
        word = m.group()
        known = word in _LITERALS or word in _PY_LITERALS
        if known and self._follower(buf, i, end, _VALUE_END) < 0:
            return -1
        if word in _LITERALS:
            return end if self._attach(_LITERALS[word], i) else -1
        if word in _PY_LITERALS:
            self._note(codes.PARSE_PYTHON_LITERAL, Risk.SAFE, i, end - i, f"Python {word}")
            return end if self._attach(_PY_LITERALS[word], i) else -1
        return self._stop(i, f"a bare word {word!r}")

    def _key(self, buf: str, i: int, c: str, frame: _Frame) -> int:
        n = len(buf)
        if c == '"':
            try:
                key, end = scanstring(buf, i + 1, False)
            except json.JSONDecodeError as exc:
                if incomplete(exc, n):
                    return self._wait(i)
                return self._stop(i, "an invalid escape in a key")
            if end < n and buf[end] == ":" and buf[end - 2] not in "\r\n":
                colon = end  # (what _follower finds, without the call: most keys)
            else:
                colon = self._follower(buf, i, end, ":")
                if colon < 0:
                    return -1
            # the colon is read here, as the loop would read it next (one turn fewer)
            frame.key = key
            frame.comma = None
            frame.state = _ITEM
            if not frame.container:
                self._dirty = True  # its first "key": shows the object
            return colon + 1
        if c == "'":
            got = self._single(buf, i, ":")
            if got is None:
                return -1
            key, end = got
        else:
            m = _WORD.match(buf, i)
            if m is None:
                return self._stop(i, f"unexpected {c!r} where a key belongs")
            end = m.end()
            after = skip(buf, end)
            if after >= n:
                return self._wait(i)
            if buf[after] != ":":
                return self._stop(i, f"a bare word {m.group()!r}")
            key = m.group()
            self._note(codes.PARSE_UNQUOTED_KEY, Risk.SAFE, i, end - i, "unquoted key")
        frame.key = key
        frame.comma = None
        frame.state = _COLON
        return end

    def _follower(self, buf: str, i: int, end: int, allowed: str) -> int:
        """Whether the scalar at ``i..end`` surely ended: what follows it is ``allowed``.

        The lenient parser reads a quote followed by something else as part of the string,
        and drops a line break right before a closing quote; such text stops the snapshots.
        """
        n = len(buf)
        # (most often the delimiter follows at once: no scan for whitespace)
        after = end if end < n and buf[end] not in _BLANK else skip(buf, end)
        if after >= n:
            self._wait(i)
            self._resume_at = self._total + 1  # usually the very next chunk decides
            return -1
        follows = buf[after]
        if follows == "/" and "/" in allowed:
            if after + 1 >= n:
                self._wait(i)
                self._resume_at = self._total + 1
                return -1
            if buf[after + 1] not in "/*":
                return self._stop(after, "unexpected '/' after a value")
        elif follows not in allowed:
            return self._stop(after, f"unexpected {follows!r} after a value")
        if buf[end - 1] == '"' and buf[end - 2] in "\r\n":
            return self._stop(end - 2, "a line break right before a closing quote")
        return after

    def _single(self, buf: str, i: int, followers: str) -> tuple[str, int] | None:
        """A single-quoted string, when what follows its closing quote shows it ended."""
        n = len(buf)
        end = match_end(_SINGLE_BODY, buf, i + 1)
        if end >= n:
            self._wait(i)
            return None
        after = skip(buf, end + 1)
        if after >= n:
            self._wait(i)
            return None
        if buf[after] not in followers:
            self._stop(i, "a quote inside a single-quoted string")
            return None
        body = _SINGLE_ESCAPE.sub(requote, buf[i + 1 : end])
        try:
            text = scanstring(f'{body}"', 0, False)[0]
        except ValueError:
            self._stop(i, "an invalid escape in a string")
            return None
        self._note(codes.PARSE_SINGLE_QUOTES, Risk.SAFE, i, end + 1 - i, "single-quoted string")
        return text, end + 1


# A note's fields but for its message, span and risk, per (code, severity).
_NOTE_FIELDS: dict[tuple[str, Severity], dict[str, Any]] = {}
_new = object.__new__


def _ends_in_escape(buf: str) -> bool:
    """Whether ``buf`` ends with an odd run of backslashes (its last one escapes what comes)."""
    k = len(buf)
    while k and buf[k - 1] == "\\":
        k -= 1
    return (len(buf) - k) % 2 == 1


def _schema_of(validator: SchemaValidator | None) -> Any:
    return validator.schema if validator is not None else None
