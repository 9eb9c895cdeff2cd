"""GitHub Actions workflow commands: an ``::error`` annotation per problem of a failing item.

A failing item's problems are its errors, or else the changes the gates did not allow
(``--fail-on repaired``, ``--max-risk``); every one is an ``::error``, since it fails the run.

``::error file=PATH,line=N,col=N,title=CODE::MESSAGE``, escaped as the runner expects
(``%``, CR and LF in messages; also ``:`` and ``,`` in properties), and every other control
character and bidi control made visible (:mod:`llmfix.reporters.sinks`): no text from the
input can start a line, so none is read as a workflow command. Failures the baseline
already knows are not annotated. One ``::notice`` line at the end sums the run up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from llmfix.model import Severity
from llmfix.reporters.base import (
    Reporter,
    ReportOptions,
    counted,
    diagnostic_location,
    display_path,
    failing_diagnostics,
    item_part,
    message_with_place,
    status_label,
)
from llmfix.reporters.sinks import github_message, github_property

if TYPE_CHECKING:
    from llmfix.batch.judge import BatchSummary, Checked, Need


def escape_data(text: str) -> str:
    return github_message(text)


def escape_property(text: str) -> str:
    return github_property(text)


def workflow_command(command: str, message: str, **properties: str | int | None) -> str:
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in properties.items()
        if value is not None
    )
    return f"::{command}{' ' + props if props else ''}::{escape_data(message)}"


class GithubReporter(Reporter):
    """Annotations, at most ``max_annotations`` of them (the rest are counted in a notice:
    GitHub shows only the first few of a step anyway)."""

    name = "github"

    def __init__(self, out: TextIO, options: ReportOptions | None = None) -> None:
        super().__init__(out, options)
        self.written = 0
        self.held_back = 0

    def needs(self) -> Need:
        return "failing"  # annotations for the items that fail the run

    def add(self, checked: Checked) -> None:
        if not checked.failed:
            return
        limit = self.options.max_annotations
        for d in failing_diagnostics(checked):
            if limit is not None and self.written >= limit:
                self.held_back += 1
                continue
            self.written += 1
            location = diagnostic_location(checked, d)
            # The file and line are the annotation's own; only the message part of the id
            # (which the location cannot show) is added.
            message = message_with_place(d, location)
            part = item_part(checked.item)
            if part:
                message += f" ({part})"
            if d.severity is not Severity.ERROR:  # a change that the gates do not allow
                message += f" ({'; '.join(checked.failures)})"
            file = None if location.file.startswith("<") else display_path(location.file)
            command = workflow_command(
                "error",
                message,
                file=file,
                line=location.line,
                col=location.column,
                title=f"llmfix {d.code}",
            )
            self.out.write(command + "\n")

    def finish(self, summary: BatchSummary) -> None:
        if self.held_back:
            more = counted(self.held_back, "more problem")
            note = f"{more} not annotated (--max-annotations {self.options.max_annotations})"
            self.out.write(workflow_command("warning", note, title=self.options.title) + "\n")
        rates = summary.rates
        if rates is not None:  # the run's own: no file, no line
            for gate in rates.gates:
                failed = gate.failed(rates.significant_only)
                line = workflow_command(
                    "error" if failed else "notice",
                    gate.describe(),
                    title=f"llmfix --max-rate {gate.gate.spec}",
                )
                self.out.write(line + "\n")
            for row in rates.regressions:
                level = "error" if rates.fail_on_regression else "warning"
                line = workflow_command(level, row.describe(), title="llmfix regression")
                self.out.write(line + "\n")
        total = summary.total
        parts = [counted(total.items, "item")]
        parts += [f"{n:,} {status_label(s)}" for s, n in sorted(total.status.items())]
        parts.append(f"{total.failed} failed")
        if total.baselined:
            parts.append(f"{total.baselined} known (baseline)")
        self.out.write(
            workflow_command("notice", ", ".join(parts), title=self.options.title) + "\n"
        )
