"""What every tool-call format reader shares: call types, the scan context, JSON readers.

Format readers (one module per family group) receive a :class:`Scan` and the match of their
opening marker, and return a :class:`Hit`: the region they consumed and the calls found in
it. Everything here is pure and linear in the text it is given; the scan carries the
:class:`~llmfix.deadline.Deadline` of the whole check, which the readers check once per
marker, value and call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.deadline import Deadline
from llmfix.formats import ForwardSearch
from llmfix.formats.prose import scan_value
from llmfix.jsontext import read_float
from llmfix.model import Diagnostic, LineIndex, Risk, Span

if TYPE_CHECKING:
    from llmfix.pipeline.stops import Finish
    from llmfix.toolcalls.registry import ToolRegistry

STAGE = "tools"

# A tool name as models write it: no spaces, no markup.
NAME_RE = re.compile(r"[A-Za-z_$][\w$.\-:/]{0,199}")
_NAME_FULL = re.compile(r"[A-Za-z_$][\w$.\-:/]{0,199}\Z")
NAME_HINT = "a tool name is a letter, _ or $, then letters, digits or _ $ . - : / (200 at most)"


@dataclass(frozen=True)
class ToolCall:
    """One tool call found in a response.

    ``arguments`` is the decoded value (an object for every well-formed call; the raw text
    when it could not be decoded at all). ``span`` locates the call in the raw text (for
    calls read out of one JSON document, the document). ``complete`` is false when the
    text ends inside the call (truncated output): its arguments are what could be recovered.
    ``diagnostics`` say how it was read (argument repairs, typing, unwrapping); their
    ``pointer`` is relative to the arguments.
    """

    id: str | None
    name: str
    arguments: Any
    span: Span
    format: str
    in_reasoning: bool = False
    complete: bool = True
    diagnostics: tuple[Diagnostic, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The canonical form: ``{"id", "name", "arguments"}``."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ToolCallExtraction:
    """Everything :func:`~llmfix.toolcalls.extract_tool_calls` found in one response.

    ``content`` is the answer text that is not a tool call (outside reasoning blocks),
    ``reasoning`` the text of the reasoning blocks, ``format`` the winning format (``None``
    when no call was found), ``structured`` whether the calls came from an API response
    object given whole (OpenAI/Anthropic JSON), and ``markers`` whether any tool-call
    syntax was seen at all (so that "nothing recovered" can be told from "no call").
    ``finish`` is what an API response given whole says about how the answer ended (cut
    off, refused: see :mod:`llmfix.pipeline.stops`).
    """

    calls: tuple[ToolCall, ...]
    content: str
    reasoning: str
    diagnostics: tuple[Diagnostic, ...]
    format: str | None
    structured: bool = False
    markers: bool = False
    finish: Finish | None = None


@dataclass
class Call:
    """A call while it is being read (made into a :class:`ToolCall` at the end)."""

    name: str
    arguments: Any
    start: int
    end: int
    format: str
    id: str | None = None
    complete: bool = True
    notes: list[Diagnostic] = field(default_factory=list)


@dataclass
class Hit:
    """A region of the text one format reader consumed, and the calls in it."""

    family: str
    start: int
    end: int
    calls: list[Call] = field(default_factory=list)
    notes: list[Diagnostic] = field(default_factory=list)
    reasoning: list[Span] = field(default_factory=list)  # format-specific reasoning


class Scan(ForwardSearch):
    """The text being read, the registry (for typing values), the deadline, and cached
    searches (:meth:`~llmfix.formats.ForwardSearch.find` keeps repeated searches for a
    closing marker linear)."""

    __slots__ = ("_decodable", "_lines", "deadline", "registry")

    def __init__(
        self,
        text: str,
        registry: ToolRegistry | None = None,
        deadline: Deadline | None = None,
    ) -> None:
        super().__init__(text)
        self.registry = registry
        self.deadline = deadline or Deadline.never(STAGE)
        self._lines: LineIndex | None = None
        self._decodable: _Decodable | None = None

    @property
    def decodable(self) -> str:
        """The text, for strict JSON decoding at any position (see :class:`_Decodable`)."""
        if self._decodable is None:
            self._decodable = _Decodable(self.text)
        return self._decodable

    @property
    def lines(self) -> LineIndex:
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines

    def parse_deadline(self) -> Deadline | None:
        """The deadline for the parse stage: the check's own, or ``None`` (the parser's
        default budget) when the check has none."""
        return self.deadline if self.deadline.limited else None

    def note(
        self,
        code: codes.Code,
        message: str,
        start: int,
        end: int,
        *,
        risk: Risk | None = None,
        rule: str | None = None,
        pointer: str | None = None,
        hint: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> Diagnostic:
        """A diagnostic of ``code`` at ``[start, end)`` of the text, with its line:column."""
        span = Span(start, max(start, end))
        return code.at(
            message,
            pointer=pointer,
            span=span,
            position=self.lines.position(span.start),
            rule=rule,
            risk=risk,
            hint=hint,
            data=data,
            stage=STAGE,
        )

    # -- schemas ----------------------------------------------------------------------------

    def tool_schema(self, name: str) -> Any:
        if self.registry is None:
            return None
        return self.registry.schema_for(name)

    def parameter_schema(self, tool: str, parameter: str) -> Any:
        """The schema of one top-level argument (``None`` when nothing says)."""
        schema = self.tool_schema(tool)
        if not isinstance(schema, dict):
            return None
        props = schema.get("properties")
        if isinstance(props, dict) and parameter in props:
            return props[parameter]
        return None


# ---------------------------------------------------------------------------- JSON values


class _Decodable(str):
    """The text, for ``json``'s decoder: a failed decode at a position builds an error that
    counts the lines of the whole text before it, which made reading the values of many
    markers cost the square of the text. The error is never shown (a failed strict decode
    falls back to the lenient reader), so its line and column are not counted."""

    __slots__ = ()

    def count(self, *args: Any) -> int:
        return 0

    def rfind(self, *args: Any) -> int:
        return -1


# number texts kept (1e5 stays 1e5, 1e400 is not read as infinity): see llmfix.jsontext
_decoder = json.JSONDecoder(parse_constant=lambda name: _reject(name), parse_float=read_float)


def _reject(name: str) -> Any:
    raise ValueError(name)


@dataclass(frozen=True)
class JsonValue:
    value: Any
    start: int
    end: int
    closed: bool  # the value's brackets and strings are all closed
    notes: tuple[Diagnostic, ...] = ()


_SEPARATORS = re.compile(r"[\s;,]*")


def json_values(
    scan: Scan, start: int, end: int, *, many: bool = True
) -> tuple[list[JsonValue], int]:
    """JSON values from ``start`` (separated by whitespace, ``;`` or ``,``) and where reading
    stopped.

    Strict JSON first (``raw_decode``); a value that is not strict JSON is delimited by the
    extract stage's balanced scan and repaired by the parse stage, its diagnostics moved to
    the raw text. Reading stops at the first character that cannot begin an object or array,
    and after a value that cannot be read at all (which is skipped: ``stop`` is past it).
    """
    text = scan.text
    out: list[JsonValue] = []
    pos = start
    while pos < end:
        scan.deadline.check()
        m = _SEPARATORS.match(text, pos, end)
        pos = m.end() if m else pos
        if pos >= end or text[pos] not in "{[":
            break
        value, value_end = _raw_decode(scan.decodable, pos)
        if 0 <= value_end <= end:
            out.append(JsonValue(value, pos, value_end, True))
        else:
            value_end, closed = scan_value(text, pos, end, scan.deadline)
            parsed = lenient_json(scan, pos, value_end)
            if parsed is None:
                return out, value_end
            value, notes, truncated = parsed
            out.append(JsonValue(value, pos, value_end, closed and not truncated, notes))
        pos = value_end
        if not many:
            break
    return out, pos


def _raw_decode(text: str, pos: int) -> tuple[Any, int]:
    """A strict JSON value at ``pos`` and where it ends (``-1`` when there is none)."""
    try:
        return _decoder.raw_decode(text, pos)
    except (ValueError, RecursionError):
        return None, -1


def strict_end(scan: Scan, pos: int) -> int:
    """Where the strict JSON value at ``pos`` of the text ends (``-1`` when there is none)."""
    return _raw_decode(scan.decodable, pos)[1]


def marker_after_json(
    scan: Scan, start: int, found: re.Match[str] | None, marker: re.Pattern[str]
) -> re.Match[str] | None:
    """The end marker of an envelope whose JSON starts at ``start`` (after whitespace):
    ``found`` (the first ``marker`` after ``start``), unless a strict JSON value there runs
    past it — the marker was written inside one of the value's strings (a model writing
    about the format) — then the first ``marker`` after the value."""
    if found is None:
        return None
    text = scan.text
    pos = _SEPARATORS.match(text, start)
    s = pos.end() if pos else start
    if s >= found.start() or text[s] not in "{[":
        return found
    stop = strict_end(scan, s)
    if stop <= found.start():
        return found
    return scan.find(marker, stop)


def lenient_json(
    scan: Scan, start: int, end: int
) -> tuple[Any, tuple[Diagnostic, ...], bool] | None:
    """Parse ``text[start:end]`` with the parse stage: (value, diagnostics, truncated)."""
    # (start-up: the lenient parser loads only for arguments that are not strict JSON)
    from llmfix.parse.core import parse_json

    outcome = parse_json(scan.text[start:end], deadline=scan.parse_deadline())
    if not outcome.ok:
        scan.deadline.check()  # the parser stopped because the time was spent
        return None
    notes = tuple(_relocate(scan, d, start) for d in outcome.diagnostics)
    truncated = any(d.code == "parse.truncated" for d in outcome.diagnostics)
    return outcome.value, notes, truncated


def _relocate(scan: Scan, d: Diagnostic, offset: int) -> Diagnostic:
    span = d.span.shift(offset) if d.span is not None else Span(offset, offset)
    return replace(d, span=span, position=scan.lines.position(span.start), pointer=None)


def decode_json_text(
    scan: Scan, raw: str, start: int, end: int
) -> tuple[Any, list[Diagnostic], bool]:
    """A JSON text held in a string (OpenAI ``arguments``): (value, notes, complete).

    An empty string is ``{}``. What no repair can read stays the raw string.
    """
    if not raw.strip():
        return {}, [], True
    try:
        return _decoder.decode(raw), [], True
    except (ValueError, RecursionError):
        pass
    # (start-up: the lenient parser loads only for arguments that are not strict JSON)
    from llmfix.parse.core import parse_json

    outcome = parse_json(raw, deadline=scan.parse_deadline())
    if not outcome.ok:
        scan.deadline.check()  # the parser stopped because the time was spent
        note = scan.note(
            codes.TOOLS_ARGUMENTS_NOT_JSON,
            "the arguments string is not JSON and could not be repaired",
            start,
            end,
            pointer="",
        )
        return raw, [note], True
    notes = [
        replace(d, span=Span(start, end), position=scan.lines.position(start), pointer="")
        for d in outcome.diagnostics
    ]
    truncated = any(d.code == "parse.truncated" for d in outcome.diagnostics)
    return outcome.value, notes, not truncated


# ------------------------------------------------------------------------- call objects


_NAME_KEYS = ("name", "tool_name", "toolName", "function_name", "functionName")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "tool_input", "params")
_ID_KEYS = ("id", "call_id", "tool_call_id", "toolCallId", "toolUseId")


@dataclass(frozen=True)
class CallShape:
    name: str
    arguments: Any
    id: str | None
    encoded: bool  # arguments were given as a JSON string


def valid_name(name: Any) -> bool:
    return isinstance(name, str) and _NAME_FULL.match(name) is not None


def call_shape(obj: Any, *, require_arguments: bool) -> CallShape | None:
    """Read one call object: ``{"name", "arguments"|"parameters"|...}``, ``{"function": {...}}``,
    ``{"type": "tool_use", "name", "input"}``, ``{"toolName", "args"}`` …

    ``require_arguments`` (for bare JSON in prose) refuses an object that names a tool but
    has no arguments key: ``{"name": "Bob"}`` is data, not a call.
    """
    if not isinstance(obj, dict):
        return None
    call_id = next((obj[k] for k in _ID_KEYS if isinstance(obj.get(k), str)), None)
    function = obj.get("function")
    if isinstance(function, dict) and valid_name(function.get("name")):
        arguments = function.get("arguments", function.get("parameters", {}))
        return _shape(function["name"], arguments, call_id)
    name = next((obj[k] for k in _NAME_KEYS if k in obj), None)
    if not valid_name(name):
        return None
    assert isinstance(name, str)
    for key in _ARGUMENT_KEYS:
        if key in obj:
            return _shape(name, obj[key], call_id)
    if require_arguments:
        return None
    extra = set(obj) - {*_NAME_KEYS, *_ID_KEYS, "type"}
    if extra:
        return None
    return CallShape(name, {}, call_id, False)


def unusable_name(obj: Any, *, require_arguments: bool = False) -> str | None:
    """The name a call object gives when it is not a usable tool name (``"rm -rf /"``, an
    empty string, a number), shown escaped (JSON, ASCII only, at most 80 characters: it is
    printed to terminals and CI logs); ``None`` when the object names a usable tool or
    gives no name at all. ``require_arguments``: only an object that also has arguments
    counts (bare JSON, where ``{"name": "Bob Smith"}`` is data)."""
    if not isinstance(obj, dict):
        return None
    function = obj.get("function")
    holder = function if isinstance(function, dict) and "name" in function else obj
    key = next((k for k in _NAME_KEYS if k in holder), None)
    if key is None or valid_name(holder[key]):
        return None
    if require_arguments and not any(k in holder for k in _ARGUMENT_KEYS):
        return None
    return shown_name(holder[key])


def shown_name(name: Any, limit: int = 80) -> str:
    """``name`` as JSON with every non-ASCII or control character escaped, shortened."""
    try:
        text = json.dumps(name, ensure_ascii=True)
    except (TypeError, ValueError):
        text = json.dumps(repr(name), ensure_ascii=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def bad_name_message(shown: str, fmt: str) -> str:
    """What ``tools.bad_name`` says of a call named ``shown`` (see :func:`shown_name`)."""
    return f"a tool call named {shown} ({fmt}) was left out: that is not a usable tool name"


def bad_name(scan: Scan, fmt: str, shown: str, start: int, end: int) -> Diagnostic:
    """``tools.bad_name``: a call was there, but its name cannot be a tool's; it is left
    out, and that fails the result (an error), never a silent drop."""
    return scan.note(
        codes.TOOLS_BAD_NAME,
        bad_name_message(shown, fmt),
        start,
        end,
        hint=NAME_HINT,
        data={"name": shown},
    )


def _shape(name: str, arguments: Any, call_id: str | None) -> CallShape:
    if arguments is None:
        return CallShape(name, {}, call_id, False)
    return CallShape(name, arguments, call_id, isinstance(arguments, str))


def calls_from_values(
    scan: Scan,
    values: Iterable[JsonValue],
    fmt: str,
    *,
    bounded: bool,
    require_arguments: bool = False,
    convert: Callable[[Any], list[Any]] | None = None,
) -> tuple[list[Call], list[Diagnostic]]:
    """Calls from JSON values found in an envelope: objects, or lists of objects.

    ``bounded`` says an end marker closes the envelope: a value left unclosed before it is
    malformed (and repaired), not cut off. ``convert`` turns one value into call objects
    for formats with their own shape (``{"NAME": {args}}``).
    """
    calls: list[Call] = []
    notes: list[Diagnostic] = []
    for jv in values:
        items = (
            convert(jv.value)
            if convert
            else (jv.value if isinstance(jv.value, list) else [jv.value])
        )
        complete = bounded or jv.closed
        whole = len(items) if complete else closed_items(scan, jv.start, jv.end)
        for index, item in enumerate(items):
            scan.deadline.check()
            shape = call_shape(item, require_arguments=require_arguments)
            shown = unusable_name(item) if shape is None else None
            if shown is not None:
                notes.append(bad_name(scan, fmt, shown, jv.start, jv.end))
                continue
            if shape is None:
                notes.append(
                    scan.note(
                        codes.TOOLS_MALFORMED_CALL,
                        f"a {fmt} tool call without a usable name: {preview(item)}",
                        jv.start,
                        jv.end,
                    )
                )
                continue
            call = Call(shape.name, shape.arguments, jv.start, jv.end, fmt, shape.id, index < whole)
            # a cut list: the cut's notes go with the call it cut, not those whole before it
            cut_before = not complete and index < whole
            call.notes.extend(n for n in jv.notes if not (cut_before and n.code == _CUT))
            if shape.encoded:
                decode_arguments(scan, call)
            calls.append(call)
    return calls, notes


_ITEM_GAP = re.compile(r"\s*")
_CUT = "parse.truncated"


def closed_items(scan: Scan, start: int, end: int) -> int:
    """How many items of the JSON list at ``start`` (cut off before ``end``) are strict
    JSON, whole: the parallel calls written before the cut (``0`` when ``start`` holds no
    list)."""
    text = scan.decodable
    if text[start : start + 1] != "[":
        return 0
    count = 0
    pos = start + 1
    while True:
        pos = _ITEM_GAP.match(text, pos, end).end()  # type: ignore[union-attr]
        stop = _raw_decode(text, pos)[1] if pos < end else -1
        if stop < 0 or stop > end:
            return count
        count += 1
        pos = _ITEM_GAP.match(text, stop, end).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] != ",":
            return count
        pos += 1


def decode_arguments(scan: Scan, call: Call) -> None:
    """Arguments given as a JSON string (OpenAI): decode them in place."""
    value, notes, complete = decode_json_text(scan, call.arguments, call.start, call.end)
    call.arguments = value
    call.notes.extend(notes)
    call.complete = call.complete and complete


def preview(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
