"""The data that flows between pipeline stages.

Every type here is a frozen dataclass. No third-party object (a jsonschema error, a
json-repair log entry) is allowed past the stage that produced it: stages translate
what they learn into these types.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from enum import Enum
from itertools import accumulate, islice
from typing import Any, TypeVar

__all__ = [
    "REPORT_VERSION",
    "Candidate",
    "Diagnostic",
    "ExitCode",
    "PatchOp",
    "Position",
    "Result",
    "Risk",
    "Severity",
    "Span",
    "Status",
    "Timings",
]


class Risk(str, Enum):
    """How sure a repair is to give the value the model meant (DESIGN.md, risk tiers)."""

    LOSSLESS = "lossless"
    SAFE = "safe"
    GUESS = "guess"

    def __str__(self) -> str:
        return self.value

    @property
    def rank(self) -> int:
        return _RISK_ORDER[self]

    @classmethod
    def parse(cls, text: str) -> Risk:
        try:
            return cls(text.strip().lower())
        except ValueError:
            names = ", ".join(r.value for r in cls)
            raise ValueError(f"unknown risk tier {text!r} (expected one of: {names})") from None


_RISK_ORDER = {Risk.LOSSLESS: 0, Risk.SAFE: 1, Risk.GUESS: 2}


def max_risk(risks: Sequence[Risk | None]) -> Risk | None:
    """The highest risk among ``risks`` (``None`` entries ignored)."""
    present = [r for r in risks if r is not None]
    return max(present, key=_RISK_ORDER.__getitem__) if present else None


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    def __str__(self) -> str:
        return self.value


class Status(str, Enum):
    """Outcome of repairing one response, from best to worst."""

    VALID = "valid"  # strict JSON, valid as-is
    EXTRACTED = "extracted"  # needed only lossless extraction (fence, prose, envelope)
    REPAIRED = "repaired"  # needed syntax or schema repair
    LLM_REPAIRED = "llm_repaired"  # fixed by a model
    INVALID = "invalid"  # parsed, but still violates the schema
    # Cut off: the API's stop reason says so (``finish_reason: "length"``, ...), or the text
    # ends inside a value. ``value`` holds what was read (completed); it fails every gate
    # unless the run accepts partial output (``--partial``) and what arrived has no error.
    # It outranks ``invalid``: a cut-off answer's schema errors are listed, but the cut is
    # what happened (and what a report counts).
    TRUNCATED = "truncated"
    REFUSED = "refused"  # the model refused, or the API filtered the answer
    UNPARSEABLE = "unparseable"  # no JSON value could be recovered

    def __str__(self) -> str:
        return self.value  # "invalid", as in reports (not "Status.INVALID")

    @property
    def ok(self) -> bool:
        return self in (Status.VALID, Status.EXTRACTED, Status.REPAIRED, Status.LLM_REPAIRED)


@dataclass(frozen=True)
class Span:
    """Half-open character range ``[start, end)`` into the raw input text."""

    start: int
    end: int

    def shift(self, offset: int) -> Span:
        return Span(self.start + offset, self.end + offset)

    def to_dict(self) -> dict[str, int]:
        return {"start": self.start, "end": self.end}


@dataclass(frozen=True)
class Position:
    """1-based line and column."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.line}:{self.column}"


_new = object.__new__
_place = object.__setattr__


class LineIndex:
    """Maps character offsets in a text to 1-based line:column positions.

    Offsets are mostly asked for in ascending order (diagnostics in text order): each such
    look-up counts the newlines since the previous one with ``str.count`` (C speed, no
    table, linear in all). The first look-up behind the previous one builds the table of
    line starts, also without a Python-level loop over the text, and bisects it from then
    on. Most texts need one position or none.
    """

    __slots__ = ("_line", "_line_start", "_offset", "_starts", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts: list[int] | None = None
        # the last offset counted to, its line, and where that line starts
        self._offset = 0
        self._line = 1
        self._line_start = 0

    @property
    def text(self) -> str:
        """The text the positions are in."""
        return self._text

    def _line_starts(self) -> list[int]:
        if self._starts is None:
            # len(line) + 1 per line, summed: the offsets just after each newline.
            ends = accumulate(map((1).__add__, map(len, self._text.split("\n"))))
            self._starts = [0, *islice(ends, self._text.count("\n"))]
        return self._starts

    def position(self, offset: int) -> Position:
        # Without the frozen dataclass __init__: a broken megabyte asks for one per repair.
        # (Attributes set one by one, not as a dict placed whole: CPython then keeps them
        # in the instance with no dict of their own, a fifth of the memory.)
        found = _new(Position)
        if self._starts is None and offset >= self._offset:
            last = self._offset
            text = self._text
            newlines = text.count("\n", last, offset)
            if newlines:
                self._line += newlines
                self._line_start = text.rfind("\n", last, offset) + 1
            self._offset = offset
            _place(found, "line", self._line)
            _place(found, "column", offset - self._line_start + 1)
            return found
        starts = self._line_starts()
        line = bisect.bisect_right(starts, offset) - 1
        _place(found, "line", line + 1)
        _place(found, "column", offset - starts[line] + 1)
        return found


@dataclass(frozen=True)
class Diagnostic:
    """One thing found or changed, with a stable dotted ``code`` (listed in the README)."""

    code: str
    severity: Severity
    stage: str
    message: str
    pointer: str | None = None  # JSON Pointer into the value
    span: Span | None = None  # into the raw input
    rule: str | None = None  # repair rule id, for repairs
    risk: Risk | None = None  # risk tier, for repairs
    hint: str | None = None  # what to do about it
    position: Position | None = None  # line:column of span.start in the raw input
    data: Mapping[str, Any] | None = None  # extra structured detail (e.g. a removed value)
    related: tuple[Span, ...] = ()  # other places it concerns (a duplicate key's first)
    related_positions: tuple[Position, ...] = ()  # line:column of each related span

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity.value,
            "stage": self.stage,
            "message": self.message,
        }
        if self.pointer is not None:
            out["pointer"] = self.pointer
        if self.span is not None:
            out["span"] = self.span.to_dict()
        if self.position is not None:
            out["line"] = self.position.line
            out["column"] = self.position.column
        if self.rule is not None:
            out["rule"] = self.rule
        if self.risk is not None:
            out["risk"] = self.risk.value
        if self.hint is not None:
            out["hint"] = self.hint
        if self.data is not None:
            out["data"] = dict(self.data)
        if self.related:
            out["related"] = [
                {**span.to_dict(), "line": pos.line, "column": pos.column}
                if pos is not None
                else span.to_dict()
                for span, pos in zip(
                    self.related,
                    self.related_positions or (None,) * len(self.related),
                    strict=True,
                )
            ]
        return out


@dataclass(frozen=True)
class Candidate:
    """A piece of the raw text that may hold the JSON value the model meant.

    ``text`` is the payload as found (``span`` locates it in the raw input). For
    envelopes whose JSON is synthesised rather than found verbatim (an Anthropic
    ``<function_calls>`` block), ``text`` is the JSON text built from it and
    ``synthetic`` is true. ``origin`` says how it was found: ``whole``, ``fence``,
    ``prose``, ``jsonp``, ``xml:<tag>``, ``xml:function_calls``, ``double_encoded``.
    """

    text: str
    span: Span
    origin: str
    in_reasoning: bool = False
    synthetic: bool = False
    diagnostics: tuple[Diagnostic, ...] = ()
    # ``(value,)`` when extraction already decoded ``text`` as strict JSON (a fence whose
    # content is JSON): the parse stage takes it instead of decoding the text again.
    decoded: tuple[Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class PatchOp:
    """One RFC 6902 JSON Patch operation, with why it was made."""

    op: str  # add | remove | replace | move
    path: str
    value: Any = None
    from_: str | None = None
    rule: str = ""
    risk: Risk = Risk.SAFE
    before: Any = None
    after: Any = None
    message: str = ""

    def to_json_patch(self) -> dict[str, Any]:
        """The bare RFC 6902 operation (what a JSON Patch library applies)."""
        out: dict[str, Any] = {"op": self.op, "path": self.path}
        if self.op in ("add", "replace", "test"):
            out["value"] = self.value
        if self.from_ is not None:
            out["from"] = self.from_
        return out

    def to_dict(self) -> dict[str, Any]:
        out = self.to_json_patch()
        out.update(
            rule=self.rule,
            risk=self.risk.value,
            before=self.before,
            after=self.after,
            message=self.message,
        )
        return out


@dataclass(frozen=True)
class Timings:
    """Seconds spent per stage."""

    stages: Mapping[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.stages.values())

    def to_dict(self) -> dict[str, float]:
        out = {k: round(v, 6) for k, v in self.stages.items()}
        out["total"] = round(self.total, 6)
        return out


REPORT_VERSION = "1"


@dataclass(frozen=True)
class Result:
    """What ``llmfix.repair`` returns for one response."""

    status: Status
    value: Any
    diagnostics: tuple[Diagnostic, ...] = ()
    patch: tuple[PatchOp, ...] = ()
    attempts: int = 0
    timings: Timings = field(default_factory=Timings)
    candidate: Candidate | None = None
    values: tuple[Any, ...] | None = None  # every selected value when pick == "all"
    # With a Pydantic model as the schema: the validated instance of ``value`` when the
    # result is usable (``None`` otherwise). Not in :meth:`to_dict`: it is not JSON.
    parsed: Any = None

    @property
    def ok(self) -> bool:
        """Whether the value is usable: valid, extracted, repaired or llm_repaired."""
        return self.status.ok

    def __bool__(self) -> bool:
        """``if result:`` asks whether the value is usable (:attr:`ok`)."""
        return self.status.ok

    @property
    def risk(self) -> Risk | None:
        """Highest risk tier among the repairs made (``None`` when nothing changed)."""
        if not self.diagnostics and not self.patch:  # a valid answer: no list to build
            return None
        return max_risk([d.risk for d in self.diagnostics] + [p.risk for p in self.patch])

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        """The error diagnostics (what makes a result invalid or unparseable)."""
        return tuple(d for d in self.diagnostics if d.severity is Severity.ERROR)

    def to_dict(self) -> dict[str, Any]:
        risk = self.risk
        out: dict[str, Any] = {
            "version": REPORT_VERSION,
            "status": self.status.value,
            "value": self.value,
            "risk": risk.value if risk else None,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }
        out.update(self.details())
        return out

    def details(self) -> dict[str, Any]:
        """The end of :meth:`to_dict`, after the diagnostics: ``patch``, ``attempts``,
        ``timings``, and ``candidate`` and ``values`` when there are any (a report's item
        writes its own diagnostics, and takes these)."""
        out: dict[str, Any] = {
            "patch": [p.to_dict() for p in self.patch],
            "attempts": self.attempts,
            "timings": self.timings.to_dict(),
        }
        if self.candidate is not None:
            out["candidate"] = {
                "origin": self.candidate.origin,
                "span": self.candidate.span.to_dict(),
                "in_reasoning": self.candidate.in_reasoning,
            }
        if self.values is not None:
            out["values"] = list(self.values)
        return out


class ExitCode(int, Enum):
    """Process exit codes shared by every command."""

    OK = 0  # clean (or within what --fail-on and --max-risk allow)
    FAILED = 1  # violations remain, or what --fail-on / --max-risk names happened
    USAGE = 2  # usage, config or schema error


_T = TypeVar("_T")
_DEFAULTS: dict[type, tuple[dict[str, Any], tuple[tuple[str, Any], ...]]] = {}


def build(cls: type[_T], /, **values: Any) -> _T:
    """An instance of the frozen dataclass ``cls`` made without running its ``__init__``.

    A frozen dataclass sets each field through ``object.__setattr__``; on the strict-JSON
    fast path, where a 1 KB answer costs a few microseconds to decode, building the result
    that way cost as much as the decode. The instance is the same value (defaults and
    default factories applied); none of these classes has a ``__post_init__``.
    """
    found = _DEFAULTS.get(cls)
    if found is None:
        plain: dict[str, Any] = {}
        made: list[tuple[str, Any]] = []
        for f in fields(cls):  # type: ignore[arg-type]
            if f.default is not MISSING:
                plain[f.name] = f.default
            elif f.default_factory is not MISSING:
                made.append((f.name, f.default_factory))
        found = _DEFAULTS[cls] = (plain, tuple(made))
    plain, factories = found
    instance = object.__new__(cls)
    attributes = instance.__dict__
    attributes.update(plain)
    for name, factory in factories:
        if name not in values:
            attributes[name] = factory()
    attributes.update(values)
    return instance
