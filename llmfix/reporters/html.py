"""The HTML report (`check --format html`, `repair --report FILE.html`): one page to look at.

One self-contained file: the styles and the script are inline, nothing is fetched (a
Content-Security-Policy forbids it, and allows only the report's own script, by hash). The
overview is plain HTML written here, so it reads with scripts off: the gate's outcome and
the baseline comparison, status counts, repairs by rule and errors by code and JSON Pointer
as ranked bars, and with ``--group-by`` the same per group, side by side. The items are
embedded as compact JSON and listed by ``html_report.js``, which renders only the rows in
view, so a run of 100,000 items stays usable; an item opens to its answer with every
diagnostic's span highlighted, its repaired value, its schema repairs and its tool calls.

Model text never becomes markup: the overview escapes every string, the embedded JSON has
``<``, ``>``, ``&``, U+2028 and U+2029 escaped (it cannot close its ``<script>``), and the
script builds the page with ``textContent`` only. Bidi controls (U+202E, ...) would reorder
what is shown around them: the overview and the script show them as escapes (``\\u202e``).
Each item is bounded (see the ``MAX_*`` limits); what is cut is said on the page. Spans are
given to the script in UTF-16 code units, the unit of JavaScript strings.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from importlib import resources
from typing import TYPE_CHECKING, Any, TextIO

from llmfix._version import __version__
from llmfix.batch.judge import BatchSummary, Checked
from llmfix.model import Severity
from llmfix.reporters.base import (
    STATUS_LABELS,
    STATUSES,
    Reporter,
    ReportOptions,
    copy_spool,
    spool,
)
from llmfix.reporters.sinks import for_html

if TYPE_CHECKING:
    from llmfix.batch.judge import BatchSummary, Checked, Tally
    from llmfix.model import Diagnostic, Result

# Per item, at most: what is cut is flagged and said on the page.
MAX_TEXT = 20_000  # characters of the answer
MAX_VALUE = 20_000  # characters of the repaired value as JSON
MAX_DIAGNOSTICS = 100
MAX_MESSAGE = 500  # characters of one message, hint, pointer or name
MAX_PATCH = 50  # schema repair operations
MAX_PATCH_VALUE = 500  # characters of one before/after value as JSON
MAX_CALLS = 50  # tool calls shown
MAX_CALL_ARGUMENTS = 2_000  # characters of one call's arguments as JSON
# So the model-derived text of one item is at most this many characters.
MAX_ITEM_CHARS = (
    MAX_TEXT
    + MAX_VALUE
    + MAX_DIAGNOSTICS * 3 * MAX_MESSAGE
    + MAX_PATCH * (2 * MAX_PATCH_VALUE + 2 * MAX_MESSAGE)
    + MAX_CALLS * (MAX_MESSAGE + MAX_CALL_ARGUMENTS)
)
TOP = 20  # rows per ranked breakdown in the overview
MAX_GROUP_COLUMNS = 8  # groups side by side (the largest ones)

# Every status, best first (the script sorts by this order), and how the page names it.
STATUS_LABEL = {**STATUS_LABELS, "error": "not checked"}
RISKS = ("lossless", "safe", "guess")
SEVERITIES = tuple(s.value for s in Severity)

# Row flags (a bit field in each embedded item).
FAILED, BASELINED, GATE, TEXT_CUT, VALUE_CUT, DIAGNOSTICS_CUT, TOOL_CALLS = (
    1 << i for i in range(7)
)
# Code kinds: what a code was seen as (an error, a change), for the filters.
ERROR_KIND, CHANGE_KIND = 1, 2

_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_UNSAFE = re.compile("[<>&\u2028\u2029\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def script_json(value: Any) -> str:
    """JSON that can sit inside ``<script type="application/json">`` whatever its strings hold.

    ``<``, ``>`` and ``&`` are escaped (no ``</script>``, no ``<!--``), U+2028/2029 too, and
    lone surrogates (undecodable bytes kept by ``surrogateescape``) become ``\\udcXX``
    escapes, which UTF-8 can carry and JavaScript reads back as the same code unit.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _UNSAFE.sub(_escape_char, text)


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _h(text: object) -> str:
    """Text for HTML: escaped, bidi controls visible, lone surrogates shown as U+FFFD."""
    return for_html(_SURROGATE.sub("\ufffd", str(text)))


def _cut(text: str, limit: int) -> tuple[str, bool]:
    return (text, False) if len(text) <= limit else (text[:limit], True)


def _utf16(text: str) -> Callable[[int], int]:
    """Maps a code-point offset in ``text`` to a UTF-16 offset (JavaScript's string unit)."""
    if text.isascii() or max(text) <= "\uffff":
        return lambda offset: offset
    starts = [0]
    total = 0
    for char in text:
        total += 2 if char > "\uffff" else 1
        starts.append(total)
    return lambda offset: starts[min(max(offset, 0), len(text))]


def _json_text(value: Any, indent: int | None = None) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent)
    except (TypeError, ValueError):  # not JSON data (a NaN is fine; a set is not)
        return repr(value)


class HtmlReporter(Reporter):
    """Spools each item as a compact JSON row; writes the page at :meth:`finish`."""

    name = "html"
    spools = True

    def __init__(self, out: TextIO, options: ReportOptions | None = None) -> None:
        super().__init__(out, options)
        self.title = self.options.title
        self.tool_calls = self.options.tool_calls  # results are tool-call lists (`repair --tools`)
        self._rows = spool()
        self._count = 0
        self._codes: dict[str, int] = {}
        self._kinds: list[int] = []
        self._groups: set[str] = set()

    def add(self, checked: Checked) -> None:
        row = self._row(checked)
        self._rows.write(",\n" if self._count else "\n")
        self._rows.write(script_json(row))
        self._count += 1

    def _code(self, code: str, kind: int) -> int:
        index = self._codes.setdefault(code, len(self._codes))
        if index == len(self._kinds):
            self._kinds.append(0)
        self._kinds[index] |= kind
        return index

    def _row(self, checked: Checked) -> list[Any]:
        """``[id, status, risk, group, flags, tool, text, value, diagnostics, patch,
        failures, calls, LLM attempts]``: indices into STATUSES/RISKS, -1 for none (see
        html_report.js)."""
        outcome = checked.outcome
        item = outcome.item
        result = outcome.result
        flags = 0
        if checked.failed:
            flags |= FAILED
        if checked.baselined and checked.failures:
            flags |= BASELINED
        if checked.failures:
            flags |= GATE
        text, cut = _cut(item.text, MAX_TEXT)
        flags |= TEXT_CUT if cut else 0
        to16 = _utf16(text)
        value: str | None = None
        if result is not None and result.status.value != "valid":
            value, cut = _cut(_json_text(_shown_value(result), 2), MAX_VALUE)
            flags |= VALUE_CUT if cut else 0
        found = outcome.diagnostics
        if len(found) > MAX_DIAGNOSTICS:
            flags |= DIAGNOSTICS_CUT
        diagnostics = [self._diagnostic(d, len(text), to16) for d in found[:MAX_DIAGNOSTICS]]
        patch = [_patch_op(op) for op in result.patch[:MAX_PATCH]] if result is not None else []
        calls: list[Any] | None = None
        if self.tool_calls and result is not None and isinstance(result.value, list):
            flags |= TOOL_CALLS
            calls = [_call(c) for c in result.value[:MAX_CALLS]]
        group = item.group
        if group is not None:
            self._groups.add(group)
        risk = result.risk if result is not None else None
        return [
            item.id,
            STATUSES.index(outcome.status) if outcome.status in STATUSES else -1,
            RISKS.index(risk.value) if risk is not None else -1,
            group,
            flags,
            None if item.tool is None else _cut(item.tool, MAX_MESSAGE)[0],
            text,
            value,
            diagnostics,
            patch,
            list(checked.failures),
            calls,
            result.attempts if result is not None else 0,
        ]

    def _diagnostic(self, d: Diagnostic, length: int, to16: Callable[[int], int]) -> list[Any]:
        kind = (ERROR_KIND if d.severity is Severity.ERROR else 0) | (
            CHANGE_KIND if d.risk is not None else 0
        )
        start = end = -1
        if d.span is not None and d.span.start <= length:
            start, end = to16(d.span.start), to16(min(d.span.end, length))
        return [
            self._code(d.code, kind),
            SEVERITIES.index(d.severity.value),
            start,
            end,
            _cut(d.message, MAX_MESSAGE)[0],
            None if d.pointer is None else _cut(d.pointer, MAX_MESSAGE)[0],
            RISKS.index(d.risk.value) if d.risk is not None else -1,
            None if d.hint is None else _cut(d.hint, MAX_MESSAGE)[0],
            d.rule,
        ]

    def finish(self, summary: BatchSummary) -> None:
        meta = {
            "codes": list(self._codes),
            "kinds": self._kinds,
            "statuses": list(STATUSES),
            "labels": [STATUS_LABEL[s] for s in STATUSES],
            "risks": list(RISKS),
            "severities": list(SEVERITIES),
            "groups": sorted(self._groups),
            "count": self._count,
        }
        script = _asset("html_report.js")
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        write = self.out.write
        write(
            _HEAD.format(
                title=_h(self.title),
                csp=f"default-src 'none'; style-src 'unsafe-inline'; "
                f"script-src 'sha256-{digest}'; img-src data:",
                css=_asset("html_report.css"),
            )
        )
        write(f'<header><h1>{_h(self.title)} report</h1><p class="meta">')
        write(
            f"{summary.total.items:,} items · {summary.seconds:.1f} s · {when} · "
            f"llmfix {_h(__version__)}</p></header>\n<main>\n"
        )
        write(self._overview(summary))
        write(_ITEMS_SECTION)
        write('<script type="application/json" id="llmfix-meta">')
        write(script_json(meta))
        write('</script>\n<script type="application/json" id="llmfix-items">[')
        copy_spool(self._rows, self.out)
        self._rows.close()
        write("]</script>\n<script>")
        write(script)
        write("</script>\n</body>\n</html>\n")

    # ------------------------------------------------------------------ overview

    def _overview(self, summary: BatchSummary) -> str:
        total = summary.total
        parts = ['<section id="overview">', _gate(total, self.options.baseline, summary)]
        if summary.rates is not None or self.options.history:
            # lazy: an HTML report without rates starts without it
            from llmfix.reporters.rates_html import rates_section

            parts.append(rates_section(summary, self.options.history))
        parts.append(_figures(total))
        parts.append('<div class="charts">')
        parts.append(_chart("Status", "status", _status_rows(total), total.items))
        parts.append(
            _chart(
                "Repairs by rule",
                "repairs",
                [(code, code, n) for code, n in total.repairs.most_common()],
                total.items,
                note="items that needed each repair",
            )
        )
        parts.append(
            _chart(
                "Errors by code and JSON Pointer",
                "errors",
                [
                    (_error_key(c, p), _error_label(c, p), n)
                    for (c, p), n in total.errors.most_common()
                ],
                total.items,
                note="array indices folded to *",
            )
        )
        worthless = [
            (code, code, n)
            for code, n in total.codes.most_common()
            if code.startswith("degenerate.")
        ]
        if worthless:
            parts.append(
                _chart(
                    "Degenerate answers",
                    "degenerate",
                    worthless,
                    total.items,
                    note="valid JSON that holds no data (warnings)",
                )
            )
        parts.append("</div>")
        if summary.groups:
            parts.append(_groups(summary.groups, self.options.group_by))
        parts.append("</section>\n")
        return "\n".join(parts)


def _shown_value(result: Result) -> Any:
    return list(result.values) if result.values is not None else result.value


def _patch_op(op: Any) -> list[Any]:
    return [
        op.op,
        _cut(op.path, MAX_MESSAGE)[0],
        _cut(_json_text(op.before), MAX_PATCH_VALUE)[0],
        _cut(_json_text(op.after), MAX_PATCH_VALUE)[0],
        op.rule,
        RISKS.index(op.risk.value),
        _cut(op.message, MAX_MESSAGE)[0],
    ]


def _call(call: Any) -> list[Any]:
    if not isinstance(call, Mapping):
        return [None, _cut(_json_text(call, 2), MAX_CALL_ARGUMENTS)[0]]
    name = call.get("name")
    arguments = call.get("arguments", call.get("input"))
    return [
        _cut(name, MAX_MESSAGE)[0] if isinstance(name, str) else None,
        _cut(_json_text(arguments, 2), MAX_CALL_ARGUMENTS)[0],
    ]


def _asset(name: str) -> str:
    return resources.files("llmfix.reporters").joinpath(name).read_text(encoding="utf-8")


def _pct(count: int, total: int) -> str:
    return f"{100 * count / total:.1f}%" if total else "0.0%"


def _gate(total: Tally, baseline: bool, summary: BatchSummary | None = None) -> str:
    failing = total.failed
    failed = summary.failed if summary is not None else bool(failing)
    verdict = "FAILED" if failed else "PASSED"
    css = "fail" if failed else "pass"
    text = (
        f"{failing:,} item{' fails' if failing == 1 else 's fail'} the gates"
        if failing
        else "no item fails the gates"
    )
    if baseline:
        text += f" · baseline: {failing:,} new failure{'' if failing == 1 else 's'}, "
        text += f"{total.baselined:,} known"
    elif total.baselined:
        text += f" · {total.baselined:,} known"
    rates = summary.rates if summary is not None else None
    if rates is not None and (rates.gates or rates.fail_on_regression):
        # lazy: an HTML report without rates starts without it
        from llmfix.reporters.text import rate_verdict

        text += " · the rates decide: " + rate_verdict(rates)
    return (
        f'<div class="gate {css}" id="gate" data-failed="{failing}" '
        f'data-baselined="{total.baselined}"><strong>{verdict}</strong> {_h(text)}</div>'
    )


def _figures(total: Tally) -> str:
    cells = [
        ("items", f"{total.items:,}"),
        ("parsed", _pct(total.parsed, total.items)),
        ("schema-valid", _pct(total.valid, total.items)),
        ("repairs per item", f"{total.repairs_total / total.items:.2f}" if total.items else "0"),
        ("failing", f"{total.failed:,}"),
    ]
    if total.attempts:
        cells.append(("LLM attempts", f"{total.attempts:,}"))
    body = "".join(
        f'<div class="figure"><span class="n">{value}</span><span>{_h(label)}</span></div>'
        for label, value in cells
    )
    return f'<div class="figures">{body}</div>'


def _status_rows(total: Tally) -> list[tuple[str, str, int]]:
    return [(s, STATUS_LABEL[s], total.status[s]) for s in STATUSES if total.status[s]]


def _error_key(code: str, pointer: str | None) -> str:
    return code if pointer is None else f"{code} {pointer}"


def _error_label(code: str, pointer: str | None) -> str:
    return code if pointer is None else f"{code} at {pointer or '/'}"


def _chart(
    title: str, kind: str, rows: list[tuple[str, str, int]], items: int, note: str = ""
) -> str:
    """Ranked horizontal bars: each row's share of ``items``."""
    out = [f'<div class="chart" id="chart-{kind}"><h2>{_h(title)}</h2>']
    if note:
        out.append(f'<p class="note">{_h(note)}</p>')
    if not rows:
        out.append('<p class="none">none</p>')
    shown = rows if kind == "status" else rows[:TOP]
    top = max((n for _, _, n in shown), default=0)
    out.append('<table class="bars">')
    for key, label, count in shown:
        width = 100 * count / top if top else 0
        css = f"s-{key}" if kind == "status" else f"k-{kind}"
        out.append(
            f'<tr data-key="{_h(key)}" data-count="{count}"><th>{_h(label)}</th>'
            f'<td class="bar"><span class="{css}" style="width:{width:.1f}%"></span></td>'
            f'<td class="num">{count:,}</td><td class="num pct">{_pct(count, items)}</td></tr>'
        )
    out.append("</table>")
    if len(rows) > len(shown):
        out.append(f'<p class="note">and {len(rows) - len(shown):,} more</p>')
    out.append("</div>")
    return "".join(out)


def _groups(groups: Mapping[str, Tally], group_by: str | None) -> str:
    """Per group: a status bar each, then repairs and errors with one column per group."""
    by_size = sorted(groups.items(), key=lambda kv: (-kv[1].items, kv[0]))
    shown = sorted(by_size[:MAX_GROUP_COLUMNS])
    name = f"by {group_by}" if group_by else "by group"
    out = [f'<div class="groups" id="groups"><h2>Side by side, {_h(name)}</h2>']
    out.append(
        '<table class="grouptable"><thead><tr><th>group</th><th>items</th><th>status</th>'
        "<th>parsed</th><th>valid</th><th>repairs/item</th><th>failing</th></tr></thead><tbody>"
    )
    for key, tally in sorted(groups.items()):
        out.append(
            f'<tr data-group="{_h(key)}" data-items="{tally.items}"><th>{_h(key)}</th>'
            f'<td class="num">{tally.items:,}</td><td>{_stacked(tally)}</td>'
            f'<td class="num">{_pct(tally.parsed, tally.items)}</td>'
            f'<td class="num">{_pct(tally.valid, tally.items)}</td>'
            f'<td class="num">{tally.repairs_total / max(tally.items, 1):.2f}</td>'
            f'<td class="num">{tally.failed:,}</td></tr>'
        )
    out.append("</tbody></table>")
    if len(groups) > len(shown):
        out.append(
            f'<p class="note">columns below: the {len(shown)} largest of {len(groups):,} groups</p>'
        )
    repairs = _merge(((code, code, n) for code, n in t.repairs.items()) for _, t in shown)
    errors = _merge(
        ((_error_key(c, p), _error_label(c, p), n) for (c, p), n in t.errors.items())
        for _, t in shown
    )
    out.append('<div class="matrices">')
    out.append(_matrix("Repairs by rule", "repairs", repairs, shown))
    out.append(_matrix("Errors by code and JSON Pointer", "errors", errors, shown))
    out.append("</div></div>")
    return "".join(out)


def _stacked(tally: Tally) -> str:
    spans = "".join(
        f'<span class="s-{s}" style="width:{100 * tally.status[s] / tally.items:.2f}%" '
        f'title="{_h(STATUS_LABEL[s])}: {tally.status[s]:,}"></span>'
        for s in STATUSES
        if tally.status[s] and tally.items
    )
    return f'<div class="stacked">{spans}</div>'


def _merge(
    per_group: Iterable[Iterable[tuple[str, str, int]]],
) -> list[tuple[str, str, list[int]]]:
    """Rows of several groups' counters joined by key, ranked by their total."""
    rows: dict[str, tuple[str, list[int]]] = {}
    columns = [list(g) for g in per_group]
    for index, entries in enumerate(columns):
        for key, label, count in entries:
            rows.setdefault(key, (label, [0] * len(columns)))[1][index] += count
    ranked = sorted(rows.items(), key=lambda kv: (-sum(kv[1][1]), kv[0]))
    return [(key, label, counts) for key, (label, counts) in ranked[:TOP]]


def _matrix(
    title: str, kind: str, rows: list[tuple[str, str, list[int]]], shown: list[tuple[str, Tally]]
) -> str:
    head = "".join(f"<th>{_h(key)}</th>" for key, _ in shown)
    out = [
        f'<div><h3>{_h(title)}</h3><p class="note">count · share of the group\'s items</p>'
        f'<table class="matrix" id="matrix-{kind}"><thead><tr><th></th>{head}</tr></thead><tbody>'
    ]
    if not rows:
        out.append(f'<tr><td colspan="{len(shown) + 1}" class="none">none</td></tr>')
    shares = [
        [c / t.items if t.items else 0.0 for (_, t), c in zip(shown, counts, strict=True)]
        for *_, counts in rows
    ]
    top = max((max(row) for row in shares), default=0.0) or 1.0
    for (key, label, counts), row in zip(rows, shares, strict=True):
        cells = []
        for count, share in zip(counts, row, strict=True):
            cells.append(
                f'<td data-count="{count}"><div class="bar"><span class="k-{kind}" '
                f'style="width:{100 * share / top:.1f}%"></span></div>'
                f'<span class="num">{count:,} · {100 * share:.1f}%</span></td>'
            )
        out.append(f'<tr data-key="{_h(key)}"><th>{_h(label)}</th>{"".join(cells)}</tr>')
    out.append("</tbody></table></div>")
    return "".join(out)


_HEAD = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="referrer" content="no-referrer">
<title>{title} report</title>
<style>
{css}
</style>
</head>
<body>
"""

_ITEMS_SECTION = """<section id="items">
<h2>Items</h2>
<noscript><p class="note">The item list needs JavaScript; the overview above does not.</p>
</noscript>
<div id="controls" hidden>
<input id="q" type="search" placeholder="search ids, answers, messages" aria-label="search">
<select id="f-status" aria-label="status"><option value="">any status</option></select>
<select id="f-risk" aria-label="risk"><option value="">any risk</option></select>
<select id="f-rule" aria-label="rule"><option value="">any repair rule</option></select>
<select id="f-code" aria-label="error code"><option value="">any error code</option></select>
<select id="f-group" aria-label="group"><option value="">any group</option></select>
<label><input id="f-failing" type="checkbox"> failing only</label>
<select id="sort" aria-label="sort">
<option value="input">input order</option>
<option value="status">worst status first</option>
<option value="risk">riskiest first</option>
<option value="problems">most diagnostics first</option>
<option value="id">id</option>
</select>
<span id="shown" aria-live="polite"></span>
</div>
<div id="list" hidden><div class="row head"><span data-sort="id">id</span>
<span data-sort="status">status</span><span data-sort="risk">risk</span><span>group</span>
<span data-sort="problems">diagnostics</span></div>
<div id="viewport"><div id="spacer"></div></div></div>
<div id="detail" hidden></div>
<div id="tip" role="tooltip" hidden></div>
</section>
</main>
"""
