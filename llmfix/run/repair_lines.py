"""JSON Lines in, one result line per record out, as each record arrives (`repair --jsonl`).

Each record is read as `check` reads a JSONL line (``field`` names the text; API responses
and transcripts are recognised); every answer in it gives one output line, written and
flushed at once, so a pipe sees each result before the next record is read::

    {"line", "id", "status", "value", "risk", "failures", "diagnostics"}

A line that is not JSON gives a line with status ``error``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TextIO

from llmfix import codes
from llmfix.batch.core import Outcome, Profile, check_item
from llmfix.batch.judge import judge
from llmfix.errors import LlmfixError
from llmfix.inputs import ReadOptions, field_tokens, items_from_lines
from llmfix.inputs.items import reading_notes, with_reading_changes
from llmfix.jsontext import dumps
from llmfix.model import Diagnostic, ExitCode

if TYPE_CHECKING:
    from llmfix.batch.gate import FailOn
    from llmfix.inputs import Item
    from llmfix.model import Risk
    from llmfix.options import RepairOptions
    from llmfix.schema.validate import SchemaValidator


def repair_jsonl(
    lines: Iterable[str],
    out: TextIO,
    *,
    options: RepairOptions,
    validator: SchemaValidator | None = None,
    field: str | None = None,
    fail_on: FailOn = "invalid",
    max_risk: Risk | None = None,
    fail_codes: frozenset[str] = frozenset(),
    source: str = "<stdin>",
    notes: dict[int, Diagnostic] | None = None,
) -> ExitCode:
    """Repair every record of ``lines`` and write its result lines to ``out``.

    ``ExitCode.FAILED`` when any answer fails the gates (``fail_on``, ``max_risk``), else
    ``ExitCode.OK``. ``source`` is the name item ids start with (it is left out of them).
    ``notes``: what reading found on a line, by number (a line over the size read, bytes
    replaced), filled as ``lines`` is read (:class:`llmfix.inputs.jsonl.JsonLines`).
    """
    if field is not None:
        field_tokens(field)
    profile = Profile(validator=validator, options=options)
    failed = False
    numbered = ((n, line.rstrip("\r\n")) for n, line in enumerate(lines, start=1))
    for item in items_from_lines(numbered, source, ReadOptions(field=field), notes):
        if item.error is not None:
            outcome = Outcome(item, None, item.error)
        else:
            try:
                outcome = _checked(item, profile)
            except LlmfixError as exc:
                error = codes.BATCH_CRASH.at(str(exc))
                outcome = Outcome(item, None, error)
        checked = judge(outcome, fail_on, max_risk, partial=options.partial, codes=fail_codes)
        failed = failed or checked.failed
        result = outcome.result
        record = {
            "line": item.line,
            "id": item.id.replace(f"{source}:", "", 1),
            "status": outcome.status,
            "value": result.value if result is not None else None,
            "risk": result.risk.value if result is not None and result.risk else None,
            "failures": list(checked.failures),
            "diagnostics": [d.to_dict() for d in outcome.diagnostics],
        }
        out.write(dumps(record) + "\n")
        out.flush()
    return ExitCode.FAILED if failed else ExitCode.OK


def _checked(item: Item, profile: Profile) -> Outcome:
    """``item`` checked, with bytes its reader replaced counted as a change."""
    result = check_item(item, profile)
    if not item.diagnostics:
        return Outcome(item, result)
    from dataclasses import replace

    result = with_reading_changes(result, item.diagnostics)
    return Outcome(replace(item, diagnostics=reading_notes(item.diagnostics)), result)
