"""What every `check` reporter shares: the protocol, source locations, and the output file.

A reporter is handed each judged item as it is checked (:meth:`Reporter.add`, in input
order) and the run's summary at the end (:meth:`Reporter.finish`). Reporters that need the
summary or counts first (JSON, YAML, JUnit, SARIF) spool items to a temporary file, so a
run over a million records keeps a bounded amount in memory.

Locations: a diagnostic's ``position`` is a line:column in the item's text. When the text
is a verbatim slice of the file (a raw answer, a ``.json`` document, a JSONL record checked
whole) it maps to the file's line:column. When it came out of a JSON string (a message's
content, a ``--field`` value), the location is the record's line, with no column, and the
in-text line:column is added to the message (``… [text 3:14]``). A diagnostic with no
position (a schema error, which has a JSON Pointer instead) is placed where the chosen JSON
value starts.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, TextIO

from llmfix import codes
from llmfix.files.atomic import OUTPUT_ERRORS, atomic_output
from llmfix.model import Diagnostic, Position, Severity, Status

if TYPE_CHECKING:
    from llmfix.batch.judge import BatchSummary, Checked, Need
    from llmfix.batch.rates import RunPoint
    from llmfix.inputs import Item

# Every status an item can end with, best to worst: the model's (``Status``), then
# ``error`` (the item could not be checked). Every reporter lists these, so none drifts.
STATUSES: tuple[str, ...] = (*(status.value for status in Status), "error")
STATUS_LABELS: dict[str, str] = {
    "valid": "valid as-is",
    "extracted": "extracted",
    "repaired": "repaired",
    "llm_repaired": "LLM-repaired",
    "truncated": "truncated (cut off)",
    "invalid": "invalid",
    "refused": "refused",
    "unparseable": "unparseable",
    "error": "not checked (error)",
}
# Statuses shown in a table only when some item has them.
RARE_STATUSES = frozenset({"llm_repaired", "truncated", "refused", "error"})


@dataclass(frozen=True)
class ReportOptions:
    """Settings every reporter may look at."""

    verbosity: int = 0  # -1 quiet, 0 normal, 1 verbose
    baseline: bool = False  # a baseline was given (SARIF baselineState)
    color: bool = False
    group_by: str | None = None  # the --group-by field, for titles
    max_annotations: int | None = None  # github: annotations at most (--max-annotations)
    root: str | None = None  # what item keys name files relative to (batch.key_root)
    title: str = "llmfix check"  # the command reported on (HTML title, JUnit suite, GitHub)
    tool_calls: bool = False  # html: results are tool-call lists (`repair --tools`)
    # json, yaml: an item's record (None: item_record) and the summary's (None: the whole
    # BatchSummary.to_dict); `repair --report` gives its own, one answer's result each.
    record: Callable[[Checked, str | None], dict[str, Any]] | None = None
    summary: Callable[[BatchSummary], dict[str, Any]] | None = None
    history: tuple[RunPoint, ...] = ()  # check --history DIR: earlier runs, oldest first

    def item(self, checked: Checked) -> dict[str, Any]:
        """The record of ``checked`` in a JSON or YAML report."""
        return (self.record or item_record)(checked, self.root)

    def head(self, summary: BatchSummary) -> dict[str, Any]:
        """The ``summary`` of a JSON or YAML report."""
        return summary.to_dict() if self.summary is None else self.summary(summary)


class Reporter:
    """Base class: subclasses set ``name`` and override :meth:`add` and :meth:`finish`."""

    name: ClassVar[str] = ""
    spools: ClassVar[bool] = False  # needs the whole run before writing (not streamed)

    def __init__(self, out: TextIO, options: ReportOptions | None = None) -> None:
        self.out = out
        self.options = options or ReportOptions()

    def add(self, checked: Checked) -> None:
        raise NotImplementedError

    def finish(self, summary: BatchSummary) -> None:
        raise NotImplementedError

    def needs(self) -> Need:
        """Which judged items :meth:`add` does anything with: ``all`` (the default),
        ``failing`` (those with a gate failure) or ``none``. A run whose reporters and
        writers need no more lets the workers judge and count the rest themselves, and
        they are never handed to :meth:`add` (see :class:`llmfix.batch.judge.Judging`)."""
        return "all"


@dataclass(frozen=True)
class Location:
    """Where a diagnostic is in the input files (``column`` when it maps exactly)."""

    file: str
    line: int
    column: int | None = None
    in_text: Position | None = None  # position inside the item's text, when unmappable

    def __str__(self) -> str:
        if self.column is not None:
            return f"{self.file}:{self.line}:{self.column}"
        return f"{self.file}:{self.line}"


def locate(item: Item, diagnostic: Diagnostic | None, anchor: Position | None) -> Location:
    """Map a diagnostic's in-text position to the file (see the module docstring)."""
    position = diagnostic.position if diagnostic is not None else None
    if position is None:
        position = anchor
    if position is None:
        return Location(item.source, item.line)
    if item.origin is not None:
        line = item.origin.line + position.line - 1
        column = position.column + (item.origin.column - 1 if position.line == 1 else 0)
        return Location(item.source, line, column)
    return Location(item.source, item.line, None, position)


def message_with_place(diagnostic: Diagnostic, location: Location) -> str:
    """The diagnostic's message, plus its in-text position when the file has none for it."""
    if location.in_text is not None and diagnostic.position is not None:
        return f"{diagnostic.message} [text {location.in_text}]"
    return diagnostic.message


def failing_diagnostics(checked: Checked) -> list[Diagnostic]:
    """The diagnostics that explain why an item fails the gates.

    Its errors when it has any; otherwise the diagnostics whose codes ``--fail-on`` names
    (``degenerate``); otherwise the changes that made it fail (under
    ``--fail-on repaired``/``extracted`` or ``--max-risk``); otherwise one ``check.gate``
    diagnostic carrying the gate's reason.
    """
    if not checked.failures:
        return []
    found = checked.outcome.diagnostics
    errors = [d for d in found if d.severity is Severity.ERROR]
    if errors:
        return errors
    named = {failure.partition(" ")[0] for failure in checked.failures}  # --fail-on CODE
    warnings = [d for d in found if d.code in named]
    if warnings:
        return warnings
    changes = [d for d in found if d.risk is not None]
    repairs = [d for d in changes if d.stage != "extract"]  # extraction alone is not a repair
    if repairs or changes:
        return repairs or changes
    return [codes.CHECK_GATE.at("; ".join(checked.failures))]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 item``, ``2 items``, ``1,000 items``."""
    word = noun if count == 1 else (plural or noun + "s")
    return f"{count:,} {word}"


def status_label(status: str) -> str:
    """A status as a summary line names it (``error`` items were not checked)."""
    return "not checked" if status == "error" else status


def item_part(item: Item) -> str:
    """What an item's id adds to its file and line: a batch ``custom_id`` and the message
    or tool call (``[req-7]#msg0.call1``); empty for a whole file or a plain record."""
    for prefix in (f"{item.source}:{item.line}", item.source):
        if item.id.startswith(prefix):
            return item.id[len(prefix) :]
    return ""


def display_path(path: str) -> str:
    """A path as CI tools want it: ``/`` separators, no leading ``./``."""
    text = path.replace(os.sep, "/") if os.sep != "/" else path
    while text.startswith("./"):
        text = text[2:]
    return text


def diagnostic_location(checked: Checked, diagnostic: Diagnostic) -> Location:
    return locate(checked.item, diagnostic, checked.outcome.anchor)


def spool() -> IO[str]:
    """A temporary text file that stays in memory until it grows past a few MB."""
    return tempfile.SpooledTemporaryFile(
        max_size=8_000_000, mode="w+", encoding="utf-8", errors=OUTPUT_ERRORS, newline=""
    )


def copy_spool(source: IO[str], out: TextIO) -> None:
    source.seek(0)
    while True:
        block = source.read(1 << 16)
        if not block:
            return
        out.write(block)


@contextlib.contextmanager
def output_stream(path: Path | None, default: TextIO) -> Iterator[TextIO]:
    """``default`` (stdout) when ``path`` is None, else an atomically written file."""
    if path is None:
        yield default
        return

    with atomic_output(path) as handle:
        yield handle


def item_record(checked: Checked, root: str | None = None) -> dict[str, Any]:
    """One item of the versioned report (JSON/YAML): id, location, status, value, diagnostics;
    its ``key`` names the file relative to ``root`` (see :func:`llmfix.batch.judge.stable_key`)."""
    # (start-up: repair's own report loads nothing of the batch run)
    from llmfix.batch.judge import stable_key

    outcome = checked.outcome
    item = outcome.item
    out: dict[str, Any] = {
        "id": item.id,
        "key": stable_key(item, root),
        "source": item.source,
        "line": item.line,
        "kind": item.kind,
    }
    if item.tool is not None:
        out["tool"] = item.tool
    if item.group is not None:
        out["group"] = item.group
    out["status"] = outcome.status
    out["failed"] = checked.failed
    if checked.failures:
        out["failures"] = list(checked.failures)
    if checked.baselined:
        out["baselined"] = True
    result = outcome.result
    out["value"] = result.value if result is not None else None
    risk = result.risk if result is not None else None
    out["risk"] = risk.value if risk else None
    diagnostics = []
    for d in outcome.diagnostics:
        entry = d.to_dict()
        location = diagnostic_location(checked, d)
        entry["location"] = {"file": location.file, "line": location.line}
        if location.column is not None:
            entry["location"]["column"] = location.column
        diagnostics.append(entry)
    out["diagnostics"] = diagnostics
    if result is not None:
        out.update(result.details())
    return out
