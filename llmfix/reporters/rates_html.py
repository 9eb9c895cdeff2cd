"""The HTML report's rates: the ``--max-rate`` gates, the comparison with an earlier run
(``--compare``) drawn as a dumbbell chart (each rate then and now, on one line), and the
trend over ``--history`` (:mod:`llmfix.reporters.trend`). Inline SVG and escaped text
only: the report stays one self-contained file, and no name from the input is markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from llmfix.batch.rates import Compared, RateResults, RunPoint, bad_key, pct
from llmfix.reporters.sinks import for_html

if TYPE_CHECKING:
    from llmfix.batch.judge import BatchSummary

TOP = 15  # rates drawn in the comparison


def rates_section(summary: BatchSummary, history: Sequence[RunPoint]) -> str:
    """The section: gates, comparison, trend (each when the run has it)."""
    rates = summary.rates
    parts = ['<div id="rates">']
    if rates is not None and rates.gates:
        parts.append(_gates(rates))
    if rates is not None and rates.comparison is not None:
        parts.append(comparison_chart(rates))
    if history:
        from llmfix.reporters.trend import charts, series, with_this_run

        runs = with_this_run(history, summary)
        parts.append(
            f'<div class="chart" id="trend"><h2>Trend over {len(runs)} runs</h2>'
            f"{charts(runs, series(runs))}</div>"
        )
    parts.append("</div>")
    return "".join(parts)


def _gates(rates: RateResults) -> str:
    rows = []
    for gate in rates.gates:
        failed = gate.failed(rates.significant_only)
        rows.append(
            f'<tr class="rate-gate {"fail" if failed else "pass"}" '
            f'data-gate="{for_html(gate.gate.spec)}" data-failed="{str(failed).lower()}">'
            f"<th>{'FAIL' if failed else 'pass'}</th><td>{for_html(gate.describe())}</td></tr>"
        )
    return (
        '<div class="chart" id="rate-gates"><h2>Rate gates</h2>'
        f'<p class="note">{for_html(pct(rates.confidence))} Wilson intervals'
        f"{' · a gate fails only when surely over' if rates.significant_only else ''}</p>"
        f'<table class="bars">{"".join(rows)}</table></div>'
    )


def _shown(rows: Sequence[Compared]) -> list[Compared]:
    """The problems' rates (a rate near 100 %, ``valid``, would squash the scale; the text
    and JSON reports list it), regressions first, then significant changes, then the
    largest moves."""
    problems = [c for c in rows if bad_key(c.key)] or list(rows)
    order = sorted(
        problems, key=lambda c: (not c.regression, not c.significant, -abs(c.change.delta))
    )
    return order[:TOP]


def comparison_chart(rates: RateResults) -> str:
    """Each compared rate as a line from then (hollow dot) to now (filled dot): red for a
    regression, green for a significant fall of a problem, grey otherwise."""
    rows = _shown(rates.comparison or [])
    width, label_w, right, row_h, top = 720, 260, 90, 22, 26
    plot_w = width - label_w - right
    peak = max((max(c.change.rate_before, c.change.rate_after) for c in rows), default=0.0)
    ceiling = next((c for c in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0) if peak <= c), 1.0)
    height = top + row_h * max(1, len(rows)) + 8

    def x(rate: float) -> float:
        return label_w + plot_w * rate / ceiling

    parts = [
        f'<svg class="comparison" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg"><title>rates then and now</title>'
    ]
    for step in range(5):
        rate = ceiling * step / 4
        parts.append(
            f'<line x1="{x(rate):.1f}" x2="{x(rate):.1f}" y1="{top - 6}" y2="{height - 4}" '
            f'stroke="#ddd"/><text x="{x(rate):.1f}" y="{top - 10}" font-size="10" '
            f'text-anchor="middle">{for_html(pct(rate))}</text>'
        )
    for i, row in enumerate(rows):
        c = row.change
        y = top + row_h * i + row_h / 2
        if row.regression:
            colour = "#c0392b"
        elif row.significant and bad_key(row.key) and c.delta < 0:
            colour = "#1e8449"
        else:
            colour = "#7f8c8d"
        where = "all" if row.group is None else row.group
        label = f"{where}: {row.key}"
        tip = row.describe()
        parts.append(
            f'<g class="compared" data-key="{for_html(row.key)}" '
            f'data-group="{for_html(row.group or "")}" '
            f'data-significant="{str(row.significant).lower()}" '
            f'data-regression="{str(row.regression).lower()}"><title>{for_html(tip)}</title>'
            f'<text x="{label_w - 8}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
            f"{for_html(label[:40])}</text>"
            f'<line x1="{x(c.rate_before):.1f}" x2="{x(c.rate_after):.1f}" y1="{y:.1f}" '
            f'y2="{y:.1f}" stroke="{colour}" stroke-width="3"/>'
            f'<circle cx="{x(c.rate_before):.1f}" cy="{y:.1f}" r="4" fill="#fff" '
            f'stroke="{colour}" stroke-width="2"/>'
            f'<circle cx="{x(c.rate_after):.1f}" cy="{y:.1f}" r="4" fill="{colour}"/>'
            f'<text x="{width - right + 6}" y="{y + 4:.1f}" font-size="10">'
            f"{for_html(pct(c.rate_before))} → {for_html(pct(c.rate_after))}</text></g>"
        )
    parts.append("</svg>")
    regressions = len(rates.regressions)
    changed = sum(1 for c in rates.comparison or () if c.significant)
    note = (
        f"{changed} of {len(rates.comparison or ())} rates changed significantly "
        f"({for_html(pct(1 - rates.confidence))} level, Holm-corrected); "
        f"{regressions} regression{'' if regressions == 1 else 's'}"
    )
    return (
        '<div class="chart" id="comparison"><h2>Compared with '
        f"{for_html(rates.compared_with or 'an earlier run')}</h2>"
        f'<p class="note">{note} · hollow: then, filled: now</p>{"".join(parts)}</div>'
    )
