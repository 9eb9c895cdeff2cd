"""JUnit XML: one ``<testcase>`` per item; failures carry the diagnostics that explain them.

Items that fail the gates are ``<failure>``s, items that could not be checked (unreadable,
not JSON Lines, over a limit) are ``<error>``s, failures the baseline already knows are
``<skipped>``. CI tools print these names and messages in their logs: control characters
and bidi controls from the input are written as visible escapes (``\\x1b``), and what
XML 1.0 cannot hold is dropped (:func:`llmfix.reporters.sinks.for_xml`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO
from xml.sax.saxutils import escape, quoteattr

from llmfix.reporters.base import (
    Reporter,
    ReportOptions,
    copy_spool,
    diagnostic_location,
    display_path,
    failing_diagnostics,
    message_with_place,
    spool,
)
from llmfix.reporters.sinks import for_xml

if TYPE_CHECKING:
    from llmfix.batch.judge import BatchSummary, Checked


def _clean(text: str) -> str:
    return for_xml(text)


def _attr(text: str) -> str:
    return quoteattr(_clean(text))


class JunitReporter(Reporter):
    name = "junit"
    spools = True

    def __init__(self, out: TextIO, options: ReportOptions | None = None) -> None:
        super().__init__(out, options)
        self._cases = spool()
        self._failures = 0
        self._errors = 0
        self._skipped = 0

    def add(self, checked: Checked) -> None:
        item = checked.item
        outcome = checked.outcome
        shown = display_path(item.source)
        source = _attr(shown)
        name = source if item.id == shown else _attr(item.id)  # a whole file: its path
        case = (
            f"    <testcase classname={source} name={name} file={source}"
            f' line="{item.line}" time="{outcome.seconds:.6f}"'
        )
        if not checked.failures:
            self._cases.write(case + " />\n")
            return
        lines = []
        for d in failing_diagnostics(checked):
            location = diagnostic_location(checked, d)
            lines.append(f"{location}: {d.code}: {message_with_place(d, location)}")
        body = escape("\n".join(_clean(line) for line in lines))
        reason = "; ".join(checked.failures)
        if checked.baselined:
            self._skipped += 1
            self._cases.write(
                f"{case}>\n      <skipped message={_attr('known failure (baseline): ' + reason)}"
                " />\n    </testcase>\n"
            )
            return
        tag = "error" if outcome.result is None else "failure"
        if tag == "error":
            self._errors += 1
        else:
            self._failures += 1
        first = failing_diagnostics(checked)[0].code
        self._cases.write(
            f"{case}>\n      <{tag} type={_attr(first)} message={_attr(reason)}>"
            f"{body}</{tag}>\n    </testcase>\n"
        )

    def finish(self, summary: BatchSummary) -> None:
        counts = (
            f'tests="{summary.total.items}" failures="{self._failures}" '
            f'errors="{self._errors}" skipped="{self._skipped}" time="{summary.seconds:.3f}"'
        )
        rate_cases, rate_failures = _rate_cases(summary)
        everything = counts
        if rate_cases:
            everything = (
                f'tests="{summary.total.items + len(rate_cases)}" '
                f'failures="{self._failures + rate_failures}" errors="{self._errors}" '
                f'skipped="{self._skipped}" time="{summary.seconds:.3f}"'
            )
        self.out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        self.out.write(f'<testsuites name="llmfix" {everything}>\n')
        self.out.write(f"  <testsuite name={_attr(self.options.title)} {counts}>\n")
        copy_spool(self._cases, self.out)
        self._cases.close()
        self.out.write("  </testsuite>\n")
        if rate_cases:
            self.out.write(
                f'  <testsuite name="llmfix rates" tests="{len(rate_cases)}" '
                f'failures="{rate_failures}" errors="0" skipped="0" time="0">\n'
            )
            self.out.write("".join(rate_cases))
            self.out.write("  </testsuite>\n")
        self.out.write("</testsuites>\n")


def _rate_cases(summary: BatchSummary) -> tuple[list[str], int]:
    """One test case per rate gate (``--max-rate``) and, with ``--fail-on-regression``, per
    rate compared: failed when the gate fails, or the rate rose significantly."""
    rates = summary.rates
    if rates is None:
        return [], 0
    cases: list[tuple[str, str, str | None]] = []
    for gate in rates.gates:
        why = gate.describe() if gate.failed(rates.significant_only) else None
        name = f"{gate.gate.spec} ({gate.where()})"
        cases.append(("max-rate", name, why))
    if rates.fail_on_regression:
        for row in rates.comparison or ():
            where = "all items" if row.group is None else f"group {row.group}"
            why = row.describe() if row.regression else None
            cases.append(("regression", f"{row.key} in {where}", why))
    out = []
    for kind, name, why in cases:
        case = f'    <testcase classname={_attr("llmfix " + kind)} name={_attr(name)} time="0"'
        if why is None:
            out.append(case + " />\n")
        else:
            out.append(
                f"{case}>\n      <failure type={_attr(kind)} message={_attr(why)} />\n"
                "    </testcase>\n"
            )
    return out, sum(1 for _, _, why in cases if why is not None)
