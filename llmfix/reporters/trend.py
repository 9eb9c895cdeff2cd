"""Rates over a series of runs: `llmfix trend REPORT...` and `check --history DIR`.

Each run is a ``-f json`` report of a `check` run; its ``summary`` holds what the rates
are counted from (:mod:`llmfix.batch.rates`). The runs are put in the order they finished
(the summary's ``finished``; reports without it keep the order given), and each rate —
per group and over all items, per status, ``failing`` and per code of warning or error —
becomes a series: a row of sparklines in the terminal (:func:`trend_table`), a line chart
in inline SVG for the HTML report and the trend page (:func:`svg_chart`,
:func:`trend_page`), so that the page stays one file that fetches nothing.

Every name on the page or in the terminal comes from the reports (group values, file
names): escaped like any model text (:mod:`llmfix.reporters.sinks`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmfix.batch.rates import (
    BAD_STATUSES,
    FAILING,
    STATUS_KEYS,
    RunPoint,
    check_summary,
    count,
    items,
    pct,
)
from llmfix.errors import ConfigError
from llmfix.reporters.sinks import for_html, for_terminal

if TYPE_CHECKING:
    from rich.table import Table

    from llmfix.batch.judge import BatchSummary

# Reports of a history read at most (the newest), so a folder of years stays quick.
MAX_RUNS = 200
SPARKS = "▁▂▃▄▅▆▇█"
# Colours of a chart's lines, one per rate (then round again).
PALETTE = ("#c0392b", "#2471a3", "#d68910", "#7d3c98", "#17a589", "#566573", "#a04000")


def read_run(path: str, what: str = "trend") -> RunPoint:
    """One report as a point of a series; a one-line :class:`ConfigError` naming the file
    when it is no ``-f json`` report of a check run."""
    # lazy: check without --history starts without it
    from llmfix.reporters.report import read_report_head

    summary = check_summary(read_report_head(Path(path), what), f"{what} {path}")
    finished = summary.get("finished")
    return RunPoint(
        os.path.basename(path), finished if isinstance(finished, str) else None, summary
    )


def ordered(runs: Sequence[RunPoint]) -> list[RunPoint]:
    """``runs`` oldest first: by ``finished`` when every run has it, else as given."""
    if all(run.finished is not None for run in runs):
        return sorted(runs, key=lambda run: run.finished or "")
    return list(runs)


def with_this_run(history: Sequence[RunPoint], summary: BatchSummary) -> list[RunPoint]:
    """``check --history``: the earlier runs, then this one."""
    return [*history, RunPoint("this run", summary.finished, summary.counts())]


def read_runs(paths: Sequence[str]) -> list[RunPoint]:
    """The reports ``paths`` name, oldest first."""
    return ordered([read_run(path) for path in paths])


def read_history(directory: str) -> tuple[RunPoint, ...]:
    """Every ``*.json`` report in ``directory`` (the newest :data:`MAX_RUNS`), oldest
    first; a file there that is no check report is a usage error naming it."""
    try:
        names = sorted(
            entry.name
            for entry in os.scandir(directory)
            if entry.name.endswith(".json") and entry.is_file(follow_symlinks=False)
        )
    except OSError as exc:
        raise ConfigError(f"--history {directory}: cannot list: {exc.strerror}") from None
    runs = ordered([read_run(os.path.join(directory, name), "--history") for name in names])
    return tuple(runs[-MAX_RUNS:])


@dataclass(frozen=True)
class Series:
    """One rate over the runs: ``points[i]`` is ``(count, items)`` of run ``i``, or
    ``None`` when that run has no such group."""

    group: str | None
    key: str
    points: tuple[tuple[int, int] | None, ...]

    @property
    def rates(self) -> list[float | None]:
        return [None if p is None else (p[0] / p[1] if p[1] else 0.0) for p in self.points]

    def label(self) -> str:
        return self.key if self.group is None else f"{self.group}: {self.key}"


def _worth(key: str) -> bool:
    """A rate worth following: a status that is a problem, ``failing``, or a code that is
    an error or a warning."""
    if key in STATUS_KEYS:
        return key in BAD_STATUSES
    if key == FAILING:
        return True
    from llmfix import codes

    code = codes.CODES.get(key)
    return code is not None and code.severity.value in ("error", "warning")


def series(runs: Sequence[RunPoint], keys: Sequence[str] = ()) -> list[Series]:
    """The rates of ``runs`` (``keys``, or every one worth following that some run has),
    over all items, then per group."""
    groups: list[str] = sorted(
        {g for run in runs for g in (run.summary.get("groups") or {}) if isinstance(g, str)}
    )
    wanted = list(keys)
    if not wanted:
        found: set[str] = set()
        for run in runs:
            tallies = [run.summary, *(run.summary.get("groups") or {}).values()]
            for each in tallies:
                for table in (each.get("status") or {}, each.get("items_by_code") or {}):
                    found.update(k for k, n in table.items() if n and isinstance(k, str))
        order = {key: i for i, key in enumerate(STATUS_KEYS)}
        statuses = sorted((k for k in found if k in order), key=order.__getitem__)
        wanted = [*statuses, FAILING, *sorted(k for k in found if k not in order)]
        wanted = [k for k in wanted if _worth(k)]
    out = []
    for group in [None, *groups]:
        for key in wanted:
            points: list[tuple[int, int] | None] = []
            for run in runs:
                if group is None:
                    tally: Mapping[str, Any] | None = run.summary
                else:
                    tally = (run.summary.get("groups") or {}).get(group)
                points.append(None if tally is None else (count(tally, key), items(tally)))
            out.append(Series(group, key, tuple(points)))
    return out


def sparkline(rates: Sequence[float | None]) -> str:
    """``▁▃█`` from 0 to the series' largest rate (a blank for a run without the group)."""
    top = max((r for r in rates if r is not None), default=0.0)
    out = []
    for rate in rates:
        if rate is None:
            out.append(" ")
        elif top <= 0.0:
            out.append(SPARKS[0])
        else:
            out.append(SPARKS[min(len(SPARKS) - 1, int(rate / top * (len(SPARKS) - 1) + 0.5))])
    return "".join(out)


def trend_table(runs: Sequence[RunPoint], found: Sequence[Series], title: str) -> Table:
    """The terminal table: one row per rate, its sparkline, first, last and the change."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(for_terminal(title)), title_justify="left", show_edge=False)
    for header, justify in (
        ("group", "left"),
        ("rate", "left"),
        (f"{len(runs)} runs", "left"),
        ("first", "right"),
        ("last", "right"),
        ("change", "right"),
    ):
        table.add_column(header, justify=justify)  # type: ignore[arg-type]
    for row in found:
        rates = row.rates
        known = [r for r in rates if r is not None]
        first, last = (known[0], known[-1]) if known else (0.0, 0.0)
        change = (last - first) * 100.0
        table.add_row(
            Text(for_terminal(row.group or "all")),
            Text(for_terminal(row.key)),
            sparkline(rates),
            pct(first),
            pct(last),
            f"{change:+.2g} pts" if change else "0",
        )
    return table


def series_dict(runs: Sequence[RunPoint], found: Sequence[Series]) -> dict[str, Any]:
    """The trend as JSON (`llmfix trend -f json`)."""
    return {
        "runs": [{"name": run.name, "finished": run.finished} for run in runs],
        "series": [
            {
                "group": row.group,
                "key": row.key,
                "points": [
                    None if p is None else {"count": p[0], "items": p[1]} for p in row.points
                ],
            }
            for row in found
        ],
    }


# ---------------------------------------------------------------- SVG


def svg_chart(
    runs: Sequence[RunPoint], found: Sequence[Series], title: str, width: int = 640
) -> str:
    """A line chart of ``found`` over ``runs`` (rate in %, one line per series, a legend),
    as inline SVG. Every text is escaped."""
    height, left, right, top, bottom = 220, 48, 12, 24, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((r for row in found for r in row.rates if r is not None), default=0.0)
    ceiling = _nice_ceiling(peak)
    n = len(runs)

    def x(i: int) -> float:
        return left + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(rate: float) -> float:
        return top + plot_h * (1.0 - rate / ceiling)

    parts = [
        f'<svg class="trend" role="img" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{for_html(title)}</title>",
    ]
    for step in range(5):
        rate = ceiling * step / 4
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y(rate):.1f}" y2="{y(rate):.1f}" '
            'stroke="#ddd"/>'
            f'<text x="{left - 4}" y="{y(rate) + 4:.1f}" text-anchor="end" '
            f'font-size="10">{for_html(pct(rate))}</text>'
        )
    for i, run in enumerate(runs):
        if n > 12 and i not in (0, n - 1):
            continue
        label = run.finished[:10] if run.finished else run.name
        anchor = "start" if i == 0 and n > 1 else ("end" if i == n - 1 and n > 1 else "middle")
        parts.append(
            f'<text x="{x(i):.1f}" y="{height - 8}" text-anchor="{anchor}" font-size="9">'
            f"<title>{for_html(run.name)}</title>{for_html(label[:16])}</text>"
        )
    for index, row in enumerate(found):
        colour = PALETTE[index % len(PALETTE)]
        points = [(x(i), y(r)) for i, r in enumerate(row.rates) if r is not None]
        if len(points) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(
                f'<polyline class="series" data-key="{for_html(row.label())}" fill="none" '
                f'stroke="{colour}" stroke-width="2" points="{path}"/>'
            )
        for i, known in enumerate(row.rates):
            if known is None:
                continue
            point = row.points[i] or (0, 0)
            tip = f"{row.label()} · {runs[i].name}: {pct(known)} ({point[0]:,} of {point[1]:,})"
            parts.append(
                f'<circle class="point" cx="{x(i):.1f}" cy="{y(known):.1f}" r="3" '
                f'fill="{colour}"><title>{for_html(tip)}</title></circle>'
            )
        if index < 4:  # the legend, across the top
            parts.append(
                f'<text x="{left + 6 + 150 * index}" y="14" font-size="10" '
                f'fill="{colour}">{for_html(row.label()[:28])}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _nice_ceiling(peak: float) -> float:
    """The chart's top: a round rate above ``peak`` (1 %, 2 %, 5 %, 10 %, ... 100 %)."""
    for ceiling in (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0):
        if peak <= ceiling:
            return ceiling
    return 1.0


def charts(runs: Sequence[RunPoint], found: Sequence[Series]) -> str:
    """One chart per group (all items first), at most four rates each, as HTML."""
    out = []
    groups: list[str | None] = []
    for row in found:
        if row.group not in groups:
            groups.append(row.group)
    for group in groups:
        rows = [row for row in found if row.group == group][:4]
        name = "all items" if group is None else f"group {group}"
        out.append(
            f'<figure class="trend-chart"><figcaption>{for_html(name)}</figcaption>'
            f"{svg_chart(runs, rows, f'rates over {len(runs)} runs: {name}')}</figure>"
        )
    return "".join(out)


_PAGE_STYLE = (
    "body{font:14px system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse}td,th{padding:2px 10px;text-align:right}"
    "td:first-child,td:nth-child(2),th:first-child,th:nth-child(2){text-align:left}"
    ".spark{font-family:monospace;letter-spacing:1px}figure{margin:1em 0}"
)


def trend_page(runs: Sequence[RunPoint], found: Sequence[Series]) -> str:
    """`llmfix trend -f html`: one self-contained page (no script, nothing fetched)."""
    rows = []
    for row in found:
        rates = row.rates
        known = [r for r in rates if r is not None]
        rows.append(
            "<tr>"
            f"<td>{for_html(row.group or 'all')}</td><td>{for_html(row.key)}</td>"
            f'<td class="spark">{for_html(sparkline(rates))}</td>'
            f"<td>{pct(known[0]) if known else '-'}</td>"
            f"<td>{pct(known[-1]) if known else '-'}</td></tr>"
        )
    names = "".join(
        f"<li>{for_html(run.name)}{' · ' + for_html(run.finished) if run.finished else ''}</li>"
        for run in runs
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        f"<title>llmfix trend</title><style>{_PAGE_STYLE}</style></head><body>"
        f"<h1>Rates over {len(runs)} runs</h1>{charts(runs, found)}"
        "<table><thead><tr><th>group</th><th>rate</th><th>runs</th><th>first</th>"
        f"<th>last</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<h2>Runs, oldest first</h2><ol>{names}</ol></body></html>\n"
    )


def to_json(runs: Sequence[RunPoint], found: Sequence[Series]) -> str:
    return json.dumps(series_dict(runs, found), indent=2, ensure_ascii=False) + "\n"
