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

from llmfix.errors import LlmfixError
from llmfix.jsontext import dumps
from llmfix.model import ExitCode

if TYPE_CHECKING:
    from llmfix.config import RepairOptions
    from llmfix.gate import FailOn
    from llmfix.model import Risk
    from llmfix.validate import SchemaValidator


def repair_jsonl(
    lines: Iterable[str],
    out: TextIO,
    *,
    options: RepairOptions,
    validator: SchemaValidator | None = None,
    field: str | None = None,
    fail_on: FailOn = "invalid",
    max_risk: Risk | None = None,
    source: str = "<stdin>",
) -> ExitCode:
    """Repair every record of ``lines`` and write its result lines to ``out``.

    ``ExitCode.FAILED`` when any answer fails the gates (``fail_on``, ``max_risk``), else
    ``ExitCode.OK``. ``source`` is the name item ids start with (it is left out of them).
    """
    from llmfix.batch import Outcome, Profile, check_item, judge
    from llmfix.inputs import ReadOptions, field_tokens, items_from_lines

    if field is not None:
        field_tokens(field)
    profile = Profile(validator=validator, options=options)
    failed = False
    numbered = ((n, line.rstrip("\r\n")) for n, line in enumerate(lines, start=1))
    for item in items_from_lines(numbered, source, ReadOptions(field=field)):
        if item.error is not None:
            outcome = Outcome(item, None, item.error)
        else:
            try:
                outcome = Outcome(item, check_item(item, profile))
            except LlmfixError as exc:
                from llmfix.batch import STAGE
                from llmfix.model import Diagnostic, Severity

                error = Diagnostic("batch.crash", Severity.ERROR, STAGE, str(exc))
                outcome = Outcome(item, None, error)
        checked = judge(outcome, fail_on, max_risk, partial=options.partial)
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
