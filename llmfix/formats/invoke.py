"""``<invoke name="…"><parameter name="…">…</parameter></invoke>`` blocks.

The Anthropic-style tool call written as text, and its relatives: any namespace prefix
(``<ns:invoke>``, MiniMax-M2's bare ``<invoke>`` inside ``<minimax:tool_call>``, Step-3's
``<steptml:invoke>``) and DeepSeek's ``<｜DSML｜invoke>`` (V4.1 writes ``<｜DSML｜ invoke>``,
a space after the bar), whose parameters may carry ``string="true|false"`` (or
``type="string"``). Tags are matched in any case; the parameter and closing tags of a block
carry its prefix or none. A self-closing ``<invoke name="…"/>`` is a call without arguments.

A parameter's value runs to the first closing tag that the block's structure can follow
(another ``<parameter``, ``</invoke>``, or the end of the range): a closing tag written
inside a value (a model documenting the format) does not end it. When no closing tag
can, the value runs to the first one, or to the next ``<parameter`` when the closing tag
was left out. An ``<invoke>`` never closed (truncated output) runs to the end of the range
it was read in.

Public API, used by extraction (which builds a synthetic JSON call from each block) and
the tool-call readers (which type each value by the tool's schema):

- :func:`find_opening` / :func:`opening` — an ``<invoke …>`` tag, searched for or at a
  position; :func:`read` — the whole block from its opening tag, as an :class:`Invoke`
  holding :class:`Parameter` values as written; :func:`block_end` — where a block ends;
- :func:`attribute_name` — the ``name`` attribute of a tag;
- :func:`trim_newline` — a value without the newline a format puts around it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from llmfix.formats import ForwardSearch

__all__ = [
    "Invoke",
    "Parameter",
    "attribute_name",
    "block_end",
    "find_opening",
    "opening",
    "read",
    "trim_newline",
]

# group 1: the prefix as written, group 2: the attributes
_OPEN = re.compile(r"<((?:[\w-]+:)?|[|｜]DSML[|｜] ?)invoke(?=[\s>/])([^<>]{0,1000})>", re.I)
_PATTERNS: dict[str, tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]] = {}
_NAME_ATTRIBUTE = re.compile(
    r"""\sname\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+))""", re.IGNORECASE
)
_STRING_ATTRIBUTE = re.compile(
    r"""\s(?:string\s*=\s*["']?(true|false)|type\s*=\s*["']?(\w+))""", re.IGNORECASE
)


class Parameter(NamedTuple):
    """One ``<parameter>``: its name (``None`` when the tag has none), its value as written,
    where its tag starts and its value ends, and DSML's ``string=`` flag (``None`` when
    the tag has none; ``type="string"`` is true, another ``type=`` false)."""

    name: str | None
    raw: str
    start: int
    end: int
    string: bool | None


class Invoke(NamedTuple):
    """One ``<invoke>`` block: its ``name`` (``None`` when the tag has none), the namespace
    ``prefix`` as written (``""``, ``"ns:"``, ``"｜DSML｜"``), where it starts, where its
    body ends and where the block ends (after ``</invoke>``, or at the end of the range
    when it is never closed), and its parameters in order."""

    name: str | None
    prefix: str
    start: int
    body_end: int
    end: int
    closed: bool
    parameters: tuple[Parameter, ...]


def _patterns(
    prefix: str,
) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The closing ``</invoke>``, the ``<parameter …>`` tag, a parameter's end, and what
    may follow a parameter's closing tag, for tags written with ``prefix`` (or none):
    compiled once per prefix. A literal start lets the regex engine skip to each candidate
    (an optional prefix of any name made the searches several times slower)."""
    found = _PATTERNS.get(prefix)
    if found is None:
        p = f"(?:{re.escape(prefix)})?" if prefix else ""
        found = _PATTERNS[prefix] = (
            re.compile(rf"</{p}invoke\s*>", re.IGNORECASE),
            re.compile(rf"<{p}parameter(?=[\s>/])([^<>]{{0,1000}})>", re.IGNORECASE),
            re.compile(rf"(</){p}parameter\s*>|<{p}parameter(?=[\s>/])", re.IGNORECASE),
            re.compile(rf"\s*(?:<{p}parameter(?=[\s>/])|</{p}invoke\s*>|\Z)", re.IGNORECASE),
        )
    return found


def opening(text: str, pos: int, limit: int | None = None) -> re.Match[str] | None:
    """The ``<invoke …>`` tag at ``pos``, if one opens there."""
    return _OPEN.match(text, pos, len(text) if limit is None else limit)


def find_opening(text: str, pos: int, limit: int) -> re.Match[str] | None:
    """The first ``<invoke …>`` tag in ``[pos, limit)``."""
    return _OPEN.search(text, pos, limit)


def read(search: ForwardSearch, tag: re.Match[str], limit: int) -> Invoke:
    """The block opened by ``tag`` (from :func:`opening` or :func:`find_opening`) in
    ``search.text``, read up to ``limit``."""
    text = search.text
    if tag.group(2).rstrip().endswith("/"):  # <invoke name="…"/>: no arguments
        return Invoke(
            attribute_name(tag.group(2).rstrip()[:-1]),
            tag.group(1),
            tag.start(),
            tag.end(),
            tag.end(),
            True,
            (),
        )
    closing, parameter_open, parameter_end, follows = _patterns(tag.group(1))
    parameters = []
    pos = tag.end()
    while True:
        close = search.find(closing, pos, limit)
        p = parameter_open.search(text, pos, close.start() if close else limit)
        if p is None:
            break
        stop = parameter_end.search(text, p.end(), limit)
        if stop is not None and stop.group(1):
            stop = _structural_close(parameter_end, follows, text, stop, limit)
        value_end = stop.start() if stop else limit
        pos = stop.end() if stop and stop.group(1) else value_end
        attributes = p.group(1)
        flag = _STRING_ATTRIBUTE.search(attributes)
        parameters.append(
            Parameter(
                attribute_name(attributes),
                text[p.end() : value_end],
                p.start(),
                value_end,
                _string_flag(flag),
            )
        )
    close = search.find(closing, pos, limit)
    body_end, end = (close.start(), close.end()) if close else (limit, limit)
    return Invoke(
        attribute_name(tag.group(2)),
        tag.group(1),
        tag.start(),
        body_end,
        end,
        close is not None,
        tuple(parameters),
    )


def _string_flag(flag: re.Match[str] | None) -> bool | None:
    if flag is None:
        return None
    if flag.group(1) is not None:
        return flag.group(1).lower() == "true"
    return flag.group(2).lower() == "string"


def _structural_close(
    parameter_end: re.Pattern[str],
    follows: re.Pattern[str],
    text: str,
    stop: re.Match[str],
    limit: int,
) -> re.Match[str]:
    """The closing tag that really ends a value whose first closing tag is ``stop``: the
    last one from ``stop`` on, before the next ``<parameter``, that the block's structure
    can follow (another parameter, ``</invoke>``, the end of the range); ``stop`` when
    there is none. A value that holds its own closing tags (a model writing about the
    format) ends at its last one."""
    found = stop
    candidate: re.Match[str] | None = stop
    structural = False
    while candidate is not None and candidate.group(1):
        if follows.match(text, candidate.end(), limit):
            found, structural = candidate, True
        candidate = parameter_end.search(text, candidate.end(), limit)
    return found if structural else stop


def block_end(search: ForwardSearch, tag: re.Match[str], limit: int) -> int:
    """Where the block opened by ``tag`` ends: after its ``</invoke>``, else at ``limit``."""
    close = search.find(_patterns(tag.group(1))[0], tag.end(), limit)
    return limit if close is None else close.end()


def attribute_name(tag: str) -> str | None:
    """The value of the ``name`` attribute in a tag's text (``None`` when it has none)."""
    m = _NAME_ATTRIBUTE.search(tag)
    if m is None:
        return None
    return next(g for g in m.groups() if g is not None)


def trim_newline(raw: str) -> str:
    """Drop one newline right after the opening tag and one right before the closing tag."""
    if raw.startswith("\r\n"):
        raw = raw[2:]
    elif raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\r\n"):
        raw = raw[:-2]
    elif raw.endswith("\n"):
        raw = raw[:-1]
    return raw
