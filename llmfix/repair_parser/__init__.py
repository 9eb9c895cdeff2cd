"""A lenient JSON parser for what language models write, in linear time.

:func:`repair_parse` reads a JSON value out of broken text and lists every repair it
made, each with the exact ``[start, end)`` offsets in the input, a ``parse.*`` code and
a risk tier. Valid JSON gives exactly :func:`json.loads`'s value with no repairs.

How it stays fast and linear: tokens are matched with compiled regular expressions (the
inner loops run in C), strings that are already valid go through the stdlib's C string
scanner, containers live on an explicit stack (depth is bounded by ``max_depth``, not by
Python's recursion limit), and every lookahead is either bounded or over text that is
scanned next anyway. With a ``deadline``, every loop that may run long checks it once
per 4,096 characters (or steps) and raises :class:`~llmfix.deadline.OutOfTime`.

What it does at the top level:

* A text that is only words, with no bracket anywhere (``hello world``), is read as
  jsonrepair reads it: a string per line or comma-separated part (``a,b`` gives
  ``["a", "b"]``), each a ``parse.unquoted_string`` guess. Whether such a response is
  an answer at all is the pipeline's call (it is prose unless extraction found something
  JSON-like). ``true``, ``None``, numbers and number-like tokens (``0.0.1``) are values.
  Only blank text is ``ok=False`` with error ``"no JSON value"``.
* Prose before the first ``{``/``[`` is skipped (``parse.leading_text``); text after the
  value is dropped (``parse.trailing_text``); fenced blocks are read from prose.
* Several top-level values (newline-delimited, comma-separated or back to back) become
  an array (``parse.ndjson``); empty ``{}``/``[]`` among non-empty ones are dropped.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from llmfix.codes import get
from llmfix.deadline import Deadline
from llmfix.formats import fences
from llmfix.gcpause import paused_gc
from llmfix.repair_parser import _text as T
from llmfix.repair_parser._frames import NEVER
from llmfix.repair_parser._machine import Parser
from llmfix.repair_parser._repair import GUESS, LOSSLESS, SAFE, ParseFailure, Repair

__all__ = ["CODES", "ParserResult", "Repair", "repair_parse"]

# Every code this parser reports, with what it means (the registry's summary, llmfix.codes).
CODES: dict[str, str] = {
    code: get(code).summary
    for code in (
        "parse.trailing_comma",
        "parse.leading_comma",
        "parse.single_quotes",
        "parse.smart_quotes",
        "parse.unquoted_key",
        "parse.unquoted_string",
        "parse.python_literal",
        "parse.js_literal",
        "parse.comment",
        "parse.truncated",
        "parse.unescaped_quote",
        "parse.unescaped_control",
        "parse.missing_comma",
        "parse.missing_colon",
        "parse.missing_value",
        "parse.redundant_closer",
        "parse.leading_zero",
        "parse.invalid_number",
        "parse.ellipsis",
        "parse.string_concat",
        "parse.trailing_text",
        "parse.invalid_escape",
        "parse.jsonp",
        "parse.mongo_wrapper",
        "parse.regex_literal",
        "parse.ndjson",
        "parse.fence",
        "parse.escaped_document",
        "parse.special_whitespace",
        "parse.leading_text",
        "parse.stray_text",
        "parse.missing_closer",
        "parse.missing_opener",
        "parse.missing_quote",
        "parse.duplicate_key",
        "parse.number_out_of_range",
    )
}

_ESCAPED = re.compile(r"\\([\"\\])")
_position = attrgetter("start", "end")


@dataclass(frozen=True)
class ParserResult:
    ok: bool
    value: Any
    repairs: tuple[Repair, ...]
    error: str | None  # why nothing could be recovered (ok=False)
    limit: str | None  # "depth" | "size" when a limit stopped the parser


def repair_parse(
    text: str,
    *,
    max_depth: int = 10_000,
    max_size: int | None = None,
    deadline: Deadline | None = None,
    strict_failure: tuple[int, str] | None = None,
) -> ParserResult:
    """Parse ``text`` leniently; see the module docstring for what is repaired.

    With a ``deadline``, the parser checks it as it goes and raises
    :class:`~llmfix.deadline.OutOfTime` when the time is spent. ``strict_failure``: the
    position and message of the ``json.JSONDecodeError`` a strict decode of ``text``
    raised, so that the parser does not decode the same value again to learn them."""
    if max_size is not None and len(text) > max_size:
        return ParserResult(
            False, None, (), f"input of {len(text)} characters exceeds {max_size}", "size"
        )
    # The parser makes no reference cycles, but it can allocate millions of tracked
    # objects (containers, repairs), for which the cyclic collector's passes grow
    # faster than linearly; it is paused while parsing and restored after.
    try:
        with paused_gc():
            value, repairs = _parse_document(
                text, max_depth, deadline or NEVER, strict_failure=strict_failure
            )
            repairs.sort(key=_position)
    except ParseFailure as failure:
        where = f" at offset {failure.position}" if failure.position is not None else ""
        return ParserResult(False, None, (), failure.message + where, failure.limit)
    return ParserResult(True, value, tuple(repairs), None, None)


def _parse_document(
    text: str,
    max_depth: int,
    deadline: Deadline,
    unescaped: bool = False,
    strict_failure: tuple[int, str] | None = None,
) -> tuple[Any, list[Repair]]:
    end = len(text)
    first = T.WS.match(text, 0, end).end()  # type: ignore[union-attr]
    if not unescaped and _is_escaped_document(text, first):
        return _parse_escaped(text, max_depth, deadline)
    repairs: list[Repair] = []
    # a closing fence glued to the end of the value: {"a": "b}```
    tail = len(text.rstrip())
    if tail >= 3 and text.endswith("```", 0, tail):
        fence_start = tail - 3
        while fence_start > 0 and text[fence_start - 1] == "`":
            fence_start -= 1
        if fence_start > first:
            repairs.append(
                Repair("parse.fence", fence_start, tail, LOSSLESS, "markdown fence removed")
            )
            end = fence_start
    if (
        first < end
        and text[first] not in "{["
        and not text.startswith("```", first)
        and T.FENCE_ANYWHERE.search(text, first, end)
    ):
        value, found = _parse_fenced_blocks(text, first, end, max_depth, deadline)
        return value, repairs + found
    parser = Parser(text, 0, end, max_depth, deadline)
    if strict_failure is not None:
        parser.known_failure = (first, *strict_failure)
    values = parser.run()
    value = _top_value(values, parser.top_spans, parser.repairs)
    return value, repairs + parser.repairs


def _top_value(values: list[Any], spans: list[tuple[int, int]], repairs: list[Repair]) -> Any:
    if not values:
        raise ParseFailure("no JSON value")
    if len(values) == 1:
        return values[0]
    kept = [(v, span) for v, span in zip(values, spans, strict=True) if not _is_empty(v)]
    if kept and len(kept) < len(values):
        for v, span in zip(values, spans, strict=True):
            if _is_empty(v):
                repairs.append(
                    Repair(
                        "parse.trailing_text", span[0], span[1], GUESS, "empty extra value removed"
                    )
                )
        if len(kept) == 1:
            return kept[0][0]
        values = [v for v, _ in kept]
        spans = [span for _, span in kept]
    repairs.append(
        Repair(
            "parse.ndjson",
            spans[0][0],
            spans[-1][1],
            GUESS,
            f"{len(values)} values read as an array",
        )
    )
    return values


def _is_empty(value: Any) -> bool:
    return isinstance(value, (dict, list)) and not value


def _parse_fenced_blocks(
    text: str, start: int, end: int, max_depth: int, deadline: Deadline
) -> tuple[Any, list[Repair]]:
    """Prose with markdown code fences: the value(s) in the fenced blocks (fences read by
    :mod:`llmfix.formats.fences`)."""
    repairs: list[Repair] = []
    values: list[Any] = []
    spans: list[tuple[int, int]] = []
    pos = start
    failure: ParseFailure | None = None
    document = None
    patches = ""
    sites: tuple[list[tuple[int, Repair]], list[int]] = ([], [])
    check_at = pos + T.CHUNK
    while pos < end:
        if pos >= check_at:  # many small blocks (each parser checks only long ones)
            deadline.check()
            check_at = pos + T.CHUNK
        opening = fences.next_backticks(text, pos, end)
        if opening is None:
            if text[pos:end].strip():
                repairs.append(Repair("parse.trailing_text", pos, end, GUESS, "prose removed"))
            break
        if text[pos : opening[0]].strip():
            code = "parse.leading_text" if not values else "parse.trailing_text"
            repairs.append(Repair(code, pos, opening[0], GUESS, "prose removed"))
        body = fences.marker_end(text, opening[0], end)
        repairs.append(Repair("parse.fence", opening[0], body, LOSSLESS, "markdown fence removed"))
        closing = fences.next_backticks(text, body, end)
        body_end = closing[0] if closing else end
        parser = Parser(text, body, body_end, max_depth, deadline)
        parser.document = document  # one copy of the text for all the blocks
        parser.patches = patches  # (and the patches made to it, and where)
        parser.patch_sites, parser.site_starts = sites
        try:
            found = parser.run()
        except ParseFailure as err:
            if err.limit is not None:
                raise
            failure = failure or err
        else:
            if found:
                value = _top_value(found, parser.top_spans, parser.repairs)
                values.append(value)
                spans.append((body, body_end))
                repairs.extend(parser.repairs)
        document = parser.document
        patches = parser.patches
        sites = (parser.patch_sites, parser.site_starts)
        if closing is None:
            break
        repairs.append(
            Repair("parse.fence", closing[0], closing[1], LOSSLESS, "markdown fence removed")
        )
        pos = closing[1]
    if not values:
        raise failure or ParseFailure("no JSON value")
    return _top_value(values, spans, repairs), repairs


def _is_escaped_document(text: str, first: int) -> bool:
    if text.startswith('\\"', first):
        return True
    if first < len(text) and text[first] in "{[":
        after = T.WS.match(text, first + 1).end()  # type: ignore[union-attr]
        return text.startswith('\\"', after)
    return False


def _parse_escaped(text: str, max_depth: int, deadline: Deadline) -> tuple[Any, list[Repair]]:
    """``{\\"a\\": 1}``: a document pasted as the content of a JSON string."""
    parts: list[str] = []
    new_starts: list[int] = []
    old_starts: list[int] = []
    last = 0
    size = 0
    check_at = T.CHUNK
    for m in _ESCAPED.finditer(text):
        if last >= check_at:
            deadline.check()
            check_at = last + T.CHUNK
        parts.append(text[last : m.start()])
        size += m.start() - last
        new_starts.append(size)
        old_starts.append(m.start())
        parts.append(m.group(1))
        size += 1
        last = m.end()
    parts.append(text[last:])
    plain = "".join(parts)

    def old(offset: int) -> int:
        i = bisect.bisect_right(new_starts, offset) - 1
        if i < 0:
            return offset
        if offset == new_starts[i]:
            return old_starts[i]
        return old_starts[i] + 1 + (offset - new_starts[i])

    value, raw = _parse_document(plain, max_depth, deadline, unescaped=True)
    mapped = [Repair("parse.escaped_document", 0, len(text), SAFE, "escaped document unescaped")]
    for r in raw:
        related = tuple((old(a), old(b)) for a, b in r.related)
        mapped.append(Repair(r.code, old(r.start), old(r.end), r.risk, r.message, related))
    return value, mapped
