"""The parse stage: turn one candidate text into a JSON value, reporting every repair.

1. **Strict.** RFC 8259 JSON through the stdlib decoder (``NaN``/``Infinity`` rejected).
   Valid input never reaches any heuristic, and this path costs one ``json`` decode.
2. **llmfix's reader** (:mod:`llmfix.repair_parser`, the default engine) for the rest:
   linear time, every repair with its exact span, code and risk tier. Its codes are the
   only parse codes, whichever engine reads the text. Strict JSON with a duplicate key or
   a number beyond the float range is read by it too, so those notes have spans.
3. **json-repair** (``engine="json-repair"``): json-repair reads the text and llmfix's
   reader reads it as well. When both give the same value, that value (which keeps number
   texts) and llmfix's repairs are the outcome; json-repair's log names only some of its
   repairs. Otherwise json-repair's value is kept and its log, put in llmfix's codes by
   :mod:`llmfix.parse.json_repair` (spans from llmfix's repairs of the same fix), is the
   account, with a ``parse.json_repair`` guess saying the readings differ. json-repair
   answers ``""`` when it finds nothing: that is ``parse.failed`` unless the text is an
   empty string literal, so pure prose is not read as a string.

Limits (from :class:`~llmfix.options.Limits`): a size cap on the lenient path, the nesting
depth (``limits.depth``; a ``RecursionError`` in json-repair is one too), and a time budget:
a :class:`~llmfix.deadline.Deadline` for the stage (given, or made from
``limits.time_budget``) that llmfix's reader checks as it goes; json-repair, which cannot
check a clock, runs in a worker process that is stopped when the deadline passes.
Running out is ``limits.time`` naming the stage.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.deadline import Deadline, OutOfTime
from llmfix.errors import ConfigError
from llmfix.jsontext import DuplicateKey, NotStrict, OutOfRange, strict_or_not
from llmfix.model import Diagnostic, LineIndex, Risk, Span
from llmfix.options import PARSE_ENGINES, Limits

if TYPE_CHECKING:
    from llmfix.repair_parser import ParserResult

STAGE = "parse"


@dataclass(frozen=True)
class ParseOutcome:
    """What :func:`parse_json` recovered from one text.

    Spans and positions in ``diagnostics`` are relative to the text passed in.
    """

    ok: bool  # a JSON value was recovered
    value: Any  # the value (None when not ok)
    strict: bool  # parsed by strict JSON, untouched
    diagnostics: tuple[Diagnostic, ...]


# Where a piece of a larger text starts in it, and the larger text's lines.
Placement = tuple[int, LineIndex]

_DEFAULT_LIMITS = Limits()
_NO_DIAGNOSTICS: tuple[Diagnostic, ...] = ()
_DEFAULT_ENGINE = "llmfix"
_new_instance = object.__new__


def parse_json(
    text: str,
    *,
    limits: Limits = _DEFAULT_LIMITS,
    engine: str = _DEFAULT_ENGINE,
    deadline: Deadline | None = None,
    positions: bool = True,
    not_strict: NotStrict | None = None,
    within: Placement | None = None,
) -> ParseOutcome:
    """Parse ``text`` as strict JSON, else repair it (see the module docstring).

    ``deadline`` bounds the lenient path; without one, ``limits.time_budget`` seconds
    from when strict parsing failed. ``positions=False`` leaves the diagnostics' line:col
    out (for a caller that places them in a larger text itself). ``not_strict``: an
    earlier stage's failed strict decode; when it is of this same text, it is not
    decoded again. ``within``: ``text`` is the piece of a larger text at this offset,
    whose lines are given: spans and line:column are given in that text, as
    :func:`relocate` gives them (``positions`` does not apply)."""
    if engine is not _DEFAULT_ENGINE and engine not in PARSE_ENGINES:
        known = ", ".join(PARSE_ENGINES)
        raise ConfigError(f"unknown parse engine {engine!r} (expected one of: {known})")
    if not_strict is None or not not_strict.covers(text):
        strict, found = strict_or_not(text, limits.max_depth)
        if strict:
            # Built without the frozen dataclass __init__ (four object.__setattr__ calls),
            # whose cost shows against json.loads on 1 KB inputs; an ordinary instance.
            outcome = _new_instance(ParseOutcome)
            fields = outcome.__dict__
            fields["ok"] = True
            fields["value"] = found
            fields["strict"] = True
            fields["diagnostics"] = _NO_DIAGNOSTICS
            return outcome
        not_strict = found
    # strict JSON the decoder refused (a duplicate key, a number beyond the float range) is
    # read with the spans by llmfix's own reader
    exact = issubclass(not_strict.error, (OutOfRange, DuplicateKey))
    engine = "llmfix" if exact else engine
    return _lenient(text, limits, engine, deadline, positions, not_strict.failure, within)


def _lenient(
    text: str,
    limits: Limits,
    engine: str,
    deadline: Deadline | None,
    positions: bool = True,
    failure: tuple[int, str] | None = None,
    within: Placement | None = None,
) -> ParseOutcome:
    if len(text) > limits.max_size:
        return _fail(
            codes.LIMITS_SIZE,
            f"input of {len(text):,} characters is over the {limits.max_size:,} character "
            "limit for repair",
        )
    # (start-up: the lenient parser loads only for text that is not strict JSON)
    from llmfix.repair_parser import repair_parse  # imported before the clock starts

    if deadline is None:
        deadline = Deadline(limits.time_budget, STAGE)
    try:
        ours = repair_parse(
            text, max_depth=limits.max_depth, deadline=deadline, strict_failure=failure
        )
        if engine == "json-repair" and ours.limit != "depth":
            return _with_json_repair(text, limits, ours, deadline, within)
    except OutOfTime as out:
        return _fail(codes.LIMITS_TIME, str(out))
    return _own(text, ours, limits, positions, within)


# -- llmfix's reader ---------------------------------------------------------------------


def _own(
    text: str,
    result: ParserResult,
    limits: Limits,
    positions: bool = True,
    within: Placement | None = None,
) -> ParseOutcome:
    """The outcome llmfix's reader gives (linear time, exact spans)."""
    if result.limit == "depth":
        return _depth_failure(limits)
    diagnostics = _diagnostics(text, result, positions, within)
    if not result.ok:
        return _failure_with(diagnostics, codes.PARSE_FAILED, result.error or "no JSON value found")
    if all(r.risk is None for r in result.repairs):
        # strict JSON with only notes (a number beyond the float range, kept as written)
        return ParseOutcome(True, result.value, True, tuple(diagnostics))
    # Every float the own reader makes is finite (one written beyond the range is a
    # JsonNumber kept as written; one it computes from a rewritten token and that
    # overflows it reads as null), so the value is not walked for infinities as
    # json-repair's is.
    return ParseOutcome(True, result.value, False, tuple(diagnostics))


def _diagnostics(
    text: str, result: ParserResult, positions: bool = True, within: Placement | None = None
) -> list[Diagnostic]:
    # One per repair, and a broken megabyte has hundreds of thousands of repairs: no
    # frozen dataclass __init__, the registered code and the rule name looked up once per
    # code, and only the fields that differ from their defaults set, one by one (CPython
    # then keeps them in the instance without a dict of their own: about half the memory,
    # and the collector has fewer objects to visit). The result is the same value as
    # code.at(...) would make, placed as relocate() places it when ``within`` is given
    # (one pass, not two).
    offset, lines = within if within is not None else (0, LineIndex(text))
    position = lines.position if positions or within is not None else None
    # code → (its registered entry, the rule it names); codes.get refuses an unregistered one
    known: dict[str, tuple[codes.Code, str]] = {}
    new = object.__new__
    place = object.__setattr__  # (a frozen dataclass refuses obj.attribute = ...)
    out = []
    for r in result.repairs:
        code = r.code
        found = known.get(code)
        if found is None:
            found = known[code] = (codes.get(code), code.partition(".")[2])
        entry, rule = found
        start = r.start + offset
        span = new(Span)
        place(span, "start", start)
        place(span, "end", r.end + offset)
        diagnostic = new(Diagnostic)
        place(diagnostic, "code", code)
        place(diagnostic, "severity", entry.severity)
        place(diagnostic, "stage", entry.stage)
        place(diagnostic, "message", r.message)
        place(diagnostic, "span", span)
        place(diagnostic, "rule", rule)
        place(diagnostic, "risk", r.risk)
        if position is not None:
            place(diagnostic, "position", position(start))
        if r.related:
            related = tuple(Span(a + offset, b + offset) for a, b in r.related)
            place(diagnostic, "related", related)
            if within is not None:
                _also_at(diagnostic, r.message, related, lines)
        out.append(diagnostic)
    return out


def relocate(
    diags: tuple[Diagnostic, ...], offset: int | None, lines: LineIndex, *, fresh: bool = False
) -> list[Diagnostic]:
    """Shift spans relative to a piece of a larger text into that text (``offset``: where
    the piece starts, ``None`` for a piece not in it) and fill in line:column from
    ``lines``, the larger text's; a related span's line:column is named in the message.

    ``fresh``: the diagnostics were just made and nothing else holds them, so they are
    placed where they are instead of copied (one object per repair fewer, and a broken
    answer has a repair every few characters).
    """
    out = []
    position_of = lines.position
    new = object.__new__
    place = object.__setattr__
    for d in diags:
        span = d.span
        if span is not None and offset:
            span = span.shift(offset)
        elif offset is None:
            span = None
        position = position_of(span.start) if span is not None else d.position
        # dataclasses.replace re-runs __init__ and costs more than the parse of a small
        # answer; a frozen dataclass copied field by field is the same value. Attributes
        # are set one by one, not through __dict__ (see _diagnostics).
        if fresh:
            moved = d
        else:
            moved = new(Diagnostic)
            for name, value in vars(d).items():
                place(moved, name, value)
        place(moved, "span", span)
        place(moved, "position", position)
        if d.related:
            related = tuple(s.shift(offset) for s in d.related) if offset is not None else ()
            _also_at(moved, d.message, related, lines)
        out.append(moved)
    return out


def _also_at(d: Diagnostic, message: str, related: tuple[Span, ...], lines: LineIndex) -> None:
    """Give ``d`` its related spans, their line:column, and those named in its message."""
    where = tuple(lines.position(s.start) for s in related)
    also = f" (also at {', '.join(map(str, where))})" if where else ""
    object.__setattr__(d, "related", related)
    object.__setattr__(d, "related_positions", where)
    object.__setattr__(d, "message", message + also)


# -- json-repair -------------------------------------------------------------------------


def _with_json_repair(
    text: str,
    limits: Limits,
    ours: ParserResult,
    deadline: Deadline,
    within: Placement | None = None,
) -> ParseOutcome:
    # (optional engine: json_repair loads only for --engine json-repair)
    from llmfix.parse.json_repair import (
        UNMAPPED,
        EngineError,
        log_repairs,
        run_json_repair,
        same_reading,
    )

    try:
        value, log = run_json_repair(text, limits.max_depth, deadline)
    except RecursionError:
        return _depth_failure(limits)
    except EngineError as error:
        return _fail(codes.PARSE_FAILED, f"json-repair failed: {error}")
    if value == "" and not _is_empty_string_literal(text):
        return _fail(codes.PARSE_FAILED, "json-repair recovered no JSON value")
    if ours.ok and same_reading(ours.value, value):
        # the same value, with every repair located
        return _own(text, ours, limits, within=within)
    lines = LineIndex(text)
    diagnostics = [
        codes.get(found.code).at(
            found.message,
            span=Span(*found.span) if found.span else None,
            rule=found.code.partition(".")[2],
            risk=found.risk,
            position=lines.position(found.span[0]) if found.span else None,
            data={"engine": "json-repair"},
        )
        for found in log_repairs(text, log, ours.repairs if ours.ok else (), deadline)
    ]
    diagnostics.append(
        codes.PARSE_JSON_REPAIR.at(
            "json-repair read this text differently from llmfix's reader; "
            "its log does not name every change",
            rule=UNMAPPED.partition(".")[2],
            risk=Risk.GUESS,
            data={"engine": "json-repair"},
        )
    )
    if within is not None:
        diagnostics = relocate(tuple(diagnostics), *within, fresh=True)
    return _recovered(value, diagnostics)


def _recovered(value: Any, diagnostics: list[Diagnostic]) -> ParseOutcome:
    value, replaced = _finite(value)
    if replaced:
        diagnostics.append(
            codes.PARSE_INVALID_NUMBER.at(
                f"{replaced} number(s) beyond the float range read as null",
                rule="invalid_number",
                risk=Risk.GUESS,
            )
        )
    return ParseOutcome(True, value, False, tuple(diagnostics))


def _finite(value: Any) -> tuple[Any, int]:
    """``value`` with NaN and infinities (which JSON cannot hold) replaced by ``None``,
    and how many were replaced (json-repair reads ``1e999`` as infinity)."""
    if type(value) is float:
        return (value, 0) if math.isfinite(value) else (None, 1)
    if not isinstance(value, (dict, list)):
        return value, 0
    replaced = 0
    todo: list[dict[str, Any] | list[Any]] = [value]
    while todo:
        container = todo.pop()
        pairs = list(container.items()) if isinstance(container, dict) else enumerate(container)
        for key, item in pairs:
            if type(item) is float and not math.isfinite(item):
                container[key] = None  # type: ignore[index]
                replaced += 1
            elif isinstance(item, (dict, list)):
                todo.append(item)
    return value, replaced


_QUOTE_CHARS = frozenset("\"'\u2018\u2019\u201c\u201d\u201e`\u00b4")


def _is_empty_string_literal(text: str) -> bool:
    """Whether ``text`` is nothing but an (possibly unterminated) empty string literal."""
    stripped = text.strip()
    return 0 < len(stripped) <= 2 and all(c in _QUOTE_CHARS for c in stripped)


# -- failures ---------------------------------------------------------------------------


def _fail(code: codes.Code, message: str) -> ParseOutcome:
    return _failure_with([], code, message)


def _failure_with(diagnostics: list[Diagnostic], code: codes.Code, message: str) -> ParseOutcome:
    # (every code used here is of the parse stage, or limits.*, registered as the parse's)
    return ParseOutcome(False, None, False, (*diagnostics, code.at(message)))


def _depth_failure(limits: Limits) -> ParseOutcome:
    return _fail(
        codes.LIMITS_DEPTH, f"nesting deeper than the {limits.max_depth} level limit for repair"
    )
