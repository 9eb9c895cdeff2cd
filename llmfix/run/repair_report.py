"""The ``--report`` of a `repair` run, written by the reporters `check` uses
(:mod:`llmfix.reporters`) in the format its file name asks for
(:func:`llmfix.reporters.report_target`): each answer a judged item (:class:`RepairAnswer`);
the JSON and YAML reports hold each answer's own result (:func:`repair_record`).

Imported only when a report is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.batch.core import Outcome
from llmfix.batch.judge import BatchSummary, Checked
from llmfix.files.atomic import atomic_output
from llmfix.inputs import Item
from llmfix.model import Position, Result
from llmfix.reporters import report_target, reporter_class
from llmfix.reporters.base import ReportOptions

if TYPE_CHECKING:
    from llmfix.run.settings import RepairRun


@dataclass(frozen=True)
class RepairAnswer(Checked):
    """A judged answer of a `repair` run: the input it came from (as it was named) and the
    model's record when LLM repair was asked (the JSON and YAML reports keep both)."""

    source: str = ""
    answer: str | None = None  # the answer's id, when read out of an API response
    llm: dict[str, object] | None = None


def answer(
    source: str,
    label: str,
    text: str,
    result: Result,
    failures: list[str],
    item: Item | None,
    llm: dict[str, object] | None,
) -> Checked:
    """One answer as a judged item, as the reporters take it: the whole input (``item``
    None), or an answer read out of an API response."""

    if item is None:
        item = Item(
            id=label,
            source=label,
            line=1,
            text=text,
            kind="file",
            origin=Position(1, 1),  # the text is the file's: places map to its lines
            whole_file=True,
        )
        answer_id = None
    else:
        answer_id = item.id
    return RepairAnswer(
        Outcome(item, result), tuple(failures), source=source, answer=answer_id, llm=llm
    )


def unreadable(name: str, message: str) -> Checked:
    """An input that could not be read, as a judged item that was not checked."""

    error = codes.INPUT_UNREADABLE.at(message)
    item = Item(id=name, source=name, line=1, text="", kind="file", error=error)
    failures = (f"not checked ({error.code})",)
    return RepairAnswer(Outcome(item, None, error), failures, source=name)


def write_report(
    run: RepairRun, spec: str, judged: list[Checked], llm: dict[str, Any] | None = None
) -> None:
    """The ``--report`` file, by the reporter its name asks for (as `check --report`); the
    JSON and YAML reports hold each answer's own result (:func:`repair_record`), and
    ``llm``, the model's usage when LLM repair ran."""

    fmt, path = report_target(spec)
    options = ReportOptions(
        verbosity=run.verbosity,
        title="llmfix repair",
        tool_calls=run.tools is not None,
        record=repair_record,
        summary=repair_summary,
    )
    summary = BatchSummary(llm=llm)
    with atomic_output(path) as out:
        reporter = reporter_class(fmt)(out, options)
        for checked in judged:
            summary.add(checked)
            reporter.add(checked)
        reporter.finish(summary)


def repair_record(checked: Checked, root: str | None = None) -> dict[str, Any]:
    """One answer in the JSON or YAML report of `repair`: where it is from (``id`` when it
    was read out of an API response, ``source``), its result as
    :meth:`llmfix.model.Result.to_dict` gives it, and the model's record when it was asked;
    for an input that could not be read, its ``error``."""
    source, answer, llm = checked.item.source, None, None
    if isinstance(checked, RepairAnswer):
        source, answer, llm = checked.source, checked.answer, checked.llm
    result = checked.outcome.result
    if result is None:
        error = checked.outcome.error
        return {"source": source, "status": "error", "error": error.message if error else ""}
    entry: dict[str, Any] = {"source": source, **result.to_dict()}
    if answer is not None:
        entry = {"id": answer, **entry}
    if llm is not None:
        entry["llm"] = llm
    return entry


def repair_summary(summary: BatchSummary) -> dict[str, Any]:
    """The summary of `repair`'s JSON or YAML report: the answers, and how many ended in
    each status (in the order each status first came)."""
    out: dict[str, Any] = {"items": summary.total.items, "status": dict(summary.total.status)}
    if summary.llm is not None:
        out["llm"] = summary.llm
    return out
