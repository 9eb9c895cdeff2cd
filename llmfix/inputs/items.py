"""What the readers produce: :class:`Item` (one text to check, with where it came from) and
the :class:`ReadOptions` that say how files become items."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from llmfix.files.read import DEFAULT_READ_LIMIT
from llmfix.model import Diagnostic, Position, Result, Status
from llmfix.pipeline.stops import Finish

KINDS: tuple[str, ...] = ("auto", "text", "json", "jsonl")
MESSAGES: tuple[str, ...] = ("last", "all")
Kind = Literal["auto", "text", "json", "jsonl"]
Messages = Literal["last", "all"]


@dataclass(frozen=True)
class ReadOptions:
    """How to turn files into items (``--field``, ``--messages``, ``--kind``, ``--group-by``)."""

    field: str | None = None  # JSON Pointer (``/a/0``) or dotted path (``a.0``) to the text
    messages: Messages = "last"
    kind: Kind = "auto"
    group_by: str | None = None
    encoding: str | None = None
    tool_results: bool = False  # also read what tools returned (MCP results, tool messages)
    # Bytes read at most from a file read whole, from stdin and from one JSONL line: what
    # ``--max-item-size`` characters can take (``llmfix.files.read.byte_limit``).
    max_bytes: int = DEFAULT_READ_LIMIT


@dataclass(frozen=True)
class Item:
    """One text to check, with where it came from.

    ``text`` is what the pipeline sees. ``error`` is set instead when the item could not be
    read (a JSONL line that is not JSON, a failed batch request, an unreadable file). The
    ``record``/``target`` pair says where ``text`` sits in its parsed record, so that a
    repaired value can be written back (``--write-fixed``); ``target_kind`` is ``string``
    (the text is a JSON string there), ``value`` (a JSON value was serialised to make the
    text) or ``parts`` (a list of content parts was joined).
    """

    id: str
    source: str
    line: int
    text: str
    kind: str
    origin: Position | None = None
    error: Diagnostic | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    group: str | None = None
    tool: str | None = None  # the tool's name for a tool call ("" when it has none)
    profile: str = ""
    record: Any = field(default=None, repr=False, compare=False)
    target: tuple[str | int, ...] | None = None
    target_kind: str = "string"
    whole_file: bool = False  # the item is the whole file (raw text or a .json document)
    finish: Finish | None = None  # the API said the answer was cut off, or refused
    model: str | None = None  # the model that wrote it, when the response names it
    anchor: str | None = None  # what names the record across runs: "[custom_id]", "[id=…]"
    # ``(value,)`` when the reader decoded ``text`` itself as strict JSON (a whole ``.json``
    # document): the check takes the value instead of decoding the same text again.
    decoded: tuple[Any] | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> str:
        """What identifies this item across runs, for ``--baseline``: unlike :attr:`id` it
        does not change when lines are inserted above it.

        ``PATH[custom_id]#msg0`` for a batch output, ``PATH[id=ID]#msg0`` for a record with
        an ``id``, ``PATH#msg0`` for a whole file, else ``PATH@HASH#msg0`` with a hash of the
        answer's text (of the line, for a line that is not JSON).
        """
        head, _, fragment = self.id.partition("#")
        if head == self.source:  # a whole file, or a message of a .json file
            return self.id
        fragment = "#" + fragment if fragment else ""
        if self.anchor is not None:
            return f"{self.source}{self.anchor}{fragment}"
        import hashlib  # about 3 ms to import: only for an answer that needs the hash

        digest = hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return f"{self.source}@{digest}{fragment}"


def with_reading_changes(result: Result, notes: tuple[Diagnostic, ...]) -> Result:
    """``result`` with what reading changed in its text folded in: a note with a risk
    (undecodable bytes replaced, ``input.invalid_utf8``) is a change, so it joins the
    result's diagnostics (the result's risk counts it) and a ``valid`` or ``extracted``
    answer is ``repaired``. Other notes stay the item's."""
    changes = tuple(d for d in notes if d.risk is not None)
    if not changes:
        return result
    from dataclasses import replace

    status = Status.REPAIRED if result.status in _UNCHANGED_STATUSES else result.status
    return replace(result, status=status, diagnostics=changes + result.diagnostics)


def reading_notes(notes: tuple[Diagnostic, ...]) -> tuple[Diagnostic, ...]:
    """The notes :func:`with_reading_changes` leaves on the item."""
    return tuple(d for d in notes if d.risk is None)


def changed_only_by_reading(result: Result) -> bool:
    """Whether the only change in ``result`` is what reading did (bytes replaced): then
    there is nothing repaired to write back, and the file is left as it is."""
    if result.patch or result.status is not Status.REPAIRED:
        return False
    changes = [d for d in result.diagnostics if d.risk is not None]
    return bool(changes) and all(d.stage == "input" for d in changes)


_UNCHANGED_STATUSES = (Status.VALID, Status.EXTRACTED)
