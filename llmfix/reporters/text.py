"""The `check` text reporter: problems as they are found, then summary tables (rich)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TextIO

from llmfix.model import Severity
from llmfix.reporters.base import (
    RARE_STATUSES,
    STATUS_LABELS,
    STATUSES,
    Reporter,
    ReportOptions,
    counted,
    diagnostic_location,
    failing_diagnostics,
    message_with_place,
)
from llmfix.reporters.sinks import for_terminal

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from llmfix.batch.judge import BatchSummary, Checked, Need
    from llmfix.batch.rates import Compared, RateResults

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
# The --group-by table's column per status (see STATUSES).
_STATUS_COLUMNS = {
    "valid": "valid",
    "extracted": "extr.",
    "repaired": "repd.",
    "llm_repaired": "LLM",
    "truncated": "trunc.",
    "invalid": "inval.",
    "refused": "refus.",
    "unparseable": "unpars.",
    "error": "n/c",
}
TOP = 15  # rows shown per breakdown table


class TextReporter(Reporter):
    """Failing items' diagnostics while the run goes on; the summary tables at the end.

    ``verbosity`` -1 prints the summary only, 0 the failing items too (failures the
    baseline knows as one line), 1 every item and every diagnostic with its hint.
    """

    name = "text"

    def __init__(
        self, out: TextIO, options: ReportOptions | None = None, console: Console | None = None
    ) -> None:
        super().__init__(out, options)
        if console is None:
            from rich.console import Console

            color = self.options.color
            terminal = out.isatty()
            console = Console(
                file=out,
                highlight=False,
                soft_wrap=True,
                force_terminal=color or None,
                no_color=not color,
                # Not a terminal (a file, a CI log): tables as wide as they need.
                width=None if terminal else 200,
            )
        self.console = console

    def needs(self) -> Need:
        verbosity = self.options.verbosity
        return "none" if verbosity < 0 else "failing" if verbosity == 0 else "all"

    def add(self, checked: Checked) -> None:
        verbosity = self.options.verbosity
        # Failures the baseline knows are one line at the end (see finish) unless -v.
        if verbosity < 0 or (not checked.failed and verbosity == 0):
            return
        outcome = checked.outcome
        shown = outcome.diagnostics if verbosity > 0 else failing_diagnostics(checked)
        for d in shown:
            if d.severity is Severity.INFO and verbosity <= 0:
                continue
            location = diagnostic_location(checked, d)
            line = f"{location}: {d.severity.value} {d.code}: {message_with_place(d, location)}"
            if d.risk is not None:
                line += f" [{d.risk.value}]"
            if d.pointer is not None and d.pointer not in d.message:
                line += f" (at {d.pointer or '/'})"
            self._line(line, _STYLE[d.severity])
            if d.hint and verbosity > 0:
                self._line(f"    hint: {d.hint}", "dim")
        verdict = f"{checked.item.id}: {outcome.status}"
        if checked.failures:
            verdict += " — " + ("known failure (baseline): " if checked.baselined else "fails: ")
            verdict += "; ".join(checked.failures)
        style = "dim" if checked.baselined else ("bold red" if checked.failed else "green")
        self._line(verdict, style)

    def _line(self, text: str, style: str) -> None:
        """One line built from the input (file names, keys, ids): escaped for the terminal."""
        from rich.text import Text

        self.console.print(Text(for_terminal(text), style=style), soft_wrap=True)

    def finish(self, summary: BatchSummary) -> None:
        from rich.text import Text

        console = self.console
        total = summary.total
        if self.options.verbosity == 0 and total.baselined:
            known = counted(total.baselined, "known failure")
            console.print(Text(f"{known} (baseline): not shown; -v to list", style="dim"))
        if self.options.verbosity >= 0 and (total.failed or total.baselined):
            console.print()
        console.print(summary_table(summary))
        if summary.groups:
            console.print(group_table(summary, f"by {self.options.group_by or 'group'}"))
        if total.repairs:
            console.print(_breakdown("Repairs by rule", ("repair", "items"), total.repairs))
        if total.errors:
            rows = {
                code if pointer is None else f"{code}  {pointer or '/'}": n
                for (code, pointer), n in total.errors.items()
            }
            console.print(_breakdown("Errors by code and JSON Pointer", ("error", "count"), rows))
        worthless = {c: n for c, n in total.codes.items() if c.startswith("degenerate.")}
        if worthless:  # warnings, which pass: said here, or no one sees them
            title = "Degenerate answers (valid but worthless; --fail-on degenerate fails them)"
            console.print(_breakdown(title, ("warning", "items"), worthless))
        if self.options.history:
            from llmfix.reporters.trend import series, trend_table, with_this_run

            runs = with_this_run(self.options.history, summary)
            console.print(trend_table(runs, series(runs), f"Trend over {len(runs)} runs"))
        rates = summary.rates
        if rates is not None:
            for line, style in rate_lines(rates):
                self._line(line, style)
        failed = total.failed
        tail = f"{counted(total.items, 'item')} in {summary.seconds:.1f} s: "
        if failed:
            tail += f"{failed:,} failed"
        else:
            tail += "all passed"
        if total.baselined:
            tail += f" ({counted(total.baselined, 'known failure')} in the baseline)"
        decides = rates is not None and (rates.gates or rates.fail_on_regression)
        if rates is not None and decides:
            tail += "; " + rate_verdict(rates)
        console.print(Text(tail, style="bold red" if summary.failed else "bold green"))


def rate_verdict(rates: RateResults) -> str:
    """``rate gates: 1 of 3 failed``, ``no regression``: what decided the exit code."""
    parts = []
    if rates.gates:
        failed = len(rates.failed_gates)
        parts.append(
            f"rate gates: {failed} of {len(rates.gates)} failed"
            if failed
            else f"rate gates: all {len(rates.gates)} passed"
        )
    if rates.fail_on_regression:
        found = len(rates.regressions)
        parts.append(counted(found, "regression") if found else "no regression")
    return ", ".join(parts)


def rate_lines(rates: RateResults) -> list[tuple[str, str]]:
    """The gates and the comparison, one line each, with a style: every gate, then the
    comparison's significant changes (at most :data:`TOP`), then how many others did not
    change significantly."""
    out: list[tuple[str, str]] = []
    for gate in rates.gates:
        failed = gate.failed(rates.significant_only)
        mark = "FAIL" if failed else "pass"
        out.append((f"{mark} --max-rate {gate.gate.spec}: {gate.describe()}", _RATE[failed]))
    if rates.comparison is not None:
        changed = [c for c in rates.comparison if c.significant]
        quiet = len(rates.comparison) - len(changed)
        out.append((f"Compared with {rates.compared_with}:", "bold"))
        for row in sorted(changed, key=lambda c: (not c.regression, -abs(c.change.delta)))[:TOP]:
            style = _change_style(row)
            out.append(("  " + row.describe(), style))
        if len(changed) > TOP:
            out.append((f"  … {len(changed) - TOP} more significant changes", "dim"))
        if quiet:
            out.append((f"  {counted(quiet, 'rate')} did not change significantly", "dim"))
    return out


_RATE = {True: "bold red", False: "green"}


def _change_style(row: Compared) -> str:
    """Red for a regression, green for a problem that fell, yellow for any other change."""
    from llmfix.batch.rates import bad_key

    if row.regression:
        return "bold red"
    return "green" if bad_key(row.key) and row.change.delta < 0 else "yellow"


def summary_table(summary: BatchSummary) -> Table:
    """Counts and rates for the whole run, one row each."""
    from rich.table import Table

    total = summary.total
    table = Table(title="llmfix check", title_justify="left", show_edge=False)
    table.add_column("")
    table.add_column("items", justify="right")
    table.add_column("share", justify="right")
    table.add_row("checked", f"{total.items:,}", "")
    for status in STATUSES:
        count = total.status[status]
        if status in RARE_STATUSES and not count:
            continue
        table.add_row(STATUS_LABELS[status], f"{count:,}", _pct(total.rate(count)))
    table.add_row("parsed", f"{total.parsed:,}", _pct(total.rate(total.parsed)))
    table.add_row("schema-valid", f"{total.valid:,}", _pct(total.rate(total.valid)))
    per_item = f"{total.repairs_total / total.items:.2f} per item" if total.items else ""
    table.add_row("repairs", f"{total.repairs_total:,}", per_item)
    if total.attempts:
        table.add_row("LLM attempts", f"{total.attempts:,}", "")
    table.add_row("failed", f"{total.failed:,}", _pct(total.rate(total.failed)))
    if total.baselined:
        table.add_row("known (baseline)", f"{total.baselined:,}", "")
    return table


def group_table(summary: BatchSummary, title: str) -> Table:
    """One row per ``--group-by`` value, to compare models or prompts side by side.

    Its status columns count what the main table's rows count, one column per status
    (the rare ones only when some group has them), so they add up to the group's items:
    ``unpars.`` is unparseable items only, ``n/c`` items that could not be checked.
    """
    from rich.table import Table

    groups = sorted((summary.groups or {}).items())
    shown = [
        status
        for status in STATUSES
        if status not in RARE_STATUSES or any(tally.status[status] for _, tally in groups)
    ]
    table = Table(title=_cell(title), title_justify="left", show_edge=False)
    table.add_column("group", overflow="fold")
    headers = ["items", *(_STATUS_COLUMNS[status] for status in shown)]
    headers += ["parsed", "schema", "rep/item", "failed"]
    for header in headers:
        table.add_column(header, justify="right")
    for name, tally in groups:
        table.add_row(
            _cell(name),
            f"{tally.items:,}",
            *(f"{tally.status[status]:,}" for status in shown),
            _pct(tally.rate(tally.parsed)),
            _pct(tally.rate(tally.valid)),
            f"{tally.repairs_total / tally.items:.2f}" if tally.items else "-",
            f"{tally.failed:,}",
        )
    return table


def _cell(text: str) -> Text:
    """A table cell or title from the input: escaped, and never read as rich markup."""
    from rich.text import Text

    return Text(for_terminal(text))


def _breakdown(title: str, header: tuple[str, str], counts: Any) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column(header[0])
    table.add_column(header[1], justify="right")
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    for key, count in ranked[:TOP]:
        table.add_row(_cell(str(key)), f"{count:,}")
    if len(ranked) > TOP:
        rest = sum(n for _, n in ranked[TOP:])
        table.add_row(f"… {len(ranked) - TOP} more", f"{rest:,}")
    return table


def _pct(rate: float) -> str:
    return f"{rate * 100:.1f}%"
