"""A JSON object or array inside prose: where one plausibly begins, and where it ends.

- :func:`plausible_value` — whether the ``{`` or ``[`` at a position plausibly begins
  JSON (``{"``, ``{}``, ``{key:``, ``["``, ``[1,``, ``[{"`` …), so that ``use {name} here``
  and ``[value]`` are not taken for values; :data:`VALUE_START` is the same test as a
  regular expression source, for a scanner that looks for it among other markers.
- :func:`scan_value` — a string-aware balanced scan: where the value opened at a position
  ends, and whether it was closed. A fence or a markup tag (see
  :mod:`llmfix.formats.envelopes`) outside a string cannot be part of the value: it ends
  the scan, and the value is unclosed.

Both are linear in the text they look at; :func:`scan_value` checks a
:class:`~llmfix.deadline.Deadline` every ``16 * CHECK_EVERY`` characters scanned.

Cost: a large value is first tried without a Python step per token (:func:`_settled`):
its strings are cut out by one substitution (or one split on ``"`` when it holds no
escape and no single quote), and when what is left holds no fence or tag, the brackets
alone decide where the value ends, matched pairs being removed a nesting level per
pass. Only a value that question leaves open (a marker, mismatched or very deep
brackets) is scanned token by token.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from llmfix.deadline import CHECK_EVERY, Deadline
from llmfix.formats.envelopes import MARKUP_TAGS

__all__ = ["VALUE_START", "plausible_value", "scan_value"]

_MAX_NESTED_CHECK = 16  # "[[[…" openers inspected when judging whether "[" starts JSON
# Characters scanned between two deadline checks: a position test per token is cheaper
# than counting tokens, and a token is at least one character.
_CHECK_SPAN = 16 * CHECK_EVERY
_NEVER = Deadline.never("extract")

# Whitespace and short comments (bounded, so the lookahead stays cheap) before the
# first key or item: models write `{ // the answer` as often as `{ "answer"`. A block
# comment ends at its first "*/" (a lazy ".*?" let a run of "/**/" be split
# exponentially many ways before a match failed).
_GAP = r"""(?:\s|//[^\n]{0,200}(?:\n|$)|/\*(?:[^*]|\*(?!/)){0,200}\*/)*"""
# What may follow a "{" that begins a JSON object: a quoted key, "}", or `identifier:`.
_OBJECT_AHEAD = _GAP + r"""(?:["'\u201c\u2018}]|(?:[^\W\d]|\$)[\w$-]*\s*:(?!//))"""
# What may follow a "[" that begins a JSON array: a string, "]", a number or keyword
# followed by "," or "]", or a nested "{"/"[" (which must begin JSON in turn).
_ARRAY_AHEAD = (
    _GAP + r"""(?:["'\u201c\u2018\]]|(?P<nested>[{\[])"""
    r"""|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\s*[,\]]"""
    r"""|(?:true|false|null|True|False|None)\s*[,\]])"""
)
_OBJECT_START = re.compile(r"\{" + _OBJECT_AHEAD)
_ARRAY_START = re.compile(r"\[" + _ARRAY_AHEAD)

VALUE_START = r"\{(?=" + _OBJECT_AHEAD + r")|\[(?=" + _ARRAY_AHEAD.replace("?P<nested>", "") + ")"
"""A ``{`` or ``[`` that may begin JSON (the lookaheads reject ``{name}`` and ``[value]``
without leaving the regex engine; a ``[`` before a nested opener still needs
:func:`plausible_value`)."""

# Tokens that matter inside a JSON value: whole strings, runs of openers and closers.
# A single quote opens a string only where a value or key may start; elsewhere it is
# an apostrophe. Outside strings a fence or a known tag cannot be part of the value:
# it ends the scan (the value is unclosed).
_VALUE_TOKEN = re.compile(
    r"""(?P<dq>"[^"\\]*(?:\\.[^"\\]*)*(?P<dq_end>")?)"""
    r"""|(?P<sq>[{\[,:]\s*'[^'\\]*(?:\\.[^'\\]*)*(?P<sq_end>')?)"""
    r"""|(?P<open>(?:[{\[](?!\s*'))+)|(?P<close>[}\]]+)"""
    r"""|(?P<stop>^[ \t]*(?:```|~~~)|</?(?:[\w-]+:)?(?:"""
    + "|".join(MARKUP_TAGS)
    + r""")(?=[\s/>]))""",
    re.MULTILINE | re.IGNORECASE | re.DOTALL,
)


# Whole strings, as the scan's "dq" and "sq" tokens read them when closed: any
# double-quoted one, and a single-quoted one where a value or key may start. Each becomes
# one neutral character, so that what was next to it stays apart.
_CLOSED_STRING = re.compile(
    r""""[^"\\]*(?:\\.[^"\\]*)*"|(?<=[{\[,:])\s*'[^'\\]*(?:\\.[^'\\]*)*'""", re.DOTALL
)
# Where a string left after those begins: it is never closed (the first one is where the
# scan stops; an apostrophe elsewhere is no string to the scan either).
_UNCLOSED_STRING = re.compile(r"\"|(?<=[{\[,:])\s*'")
_NOT_BRACKET = re.compile(r"[^{}\[\]]+")
# (str.translate drops these several times faster than the regex on ASCII, which is what
# is left outside the strings; whatever else it leaves, the regex then drops)
_DROP_ASCII_NON_BRACKETS = dict.fromkeys(c for c in range(128) if chr(c) not in "{}[]")
_EMPTY_PAIR = re.compile(r"\{\}|\[\]")
_CLOSER = re.compile(r"[}\]]")
# Below this many characters the token loop is as quick; beyond _MAX_PASSES nesting
# levels the passes would cost more than the loop.
_SETTLE_MIN = 512
_MAX_PASSES = 48
_PAIRS = {"{": "}", "[": "]"}


def _settled(
    text: str, start: int, limit: int, check: Callable[[], None]
) -> tuple[int, bool] | None:
    """:func:`scan_value`'s answer found at C speed, or ``None`` when it takes the loop.

    Answers two cases: the value opened at ``start`` closes exactly at ``limit``, and it
    never closes (it runs to ``limit``, possibly inside a string cut off there).
    """
    check()
    body = text[start + 1 : limit]
    if "\\" in body or "'" in body:
        # with the opener, which may come just before a single-quoted string
        rest = _CLOSED_STRING.sub("0", text[start:limit])
        unclosed = _UNCLOSED_STRING.search(rest)
        cut_off = unclosed is not None
        rest = rest[1 : unclosed.start()] if unclosed is not None else rest[1:]
    else:  # no escapes: every other piece between quotes is outside a string (memchr)
        pieces = body.split('"')
        cut_off = len(pieces) % 2 == 0  # an odd count of quotes: the last one is never closed
        rest = "".join(pieces[::2])
    if "`" in rest or "~" in rest or "<" in rest:
        return None  # a fence or a tag: the loop decides
    brackets = rest.translate(_DROP_ASCII_NON_BRACKETS)
    if brackets.strip("{}[]"):  # a character beyond ASCII outside the strings
        brackets = _NOT_BRACKET.sub("", brackets)
    closes_at_end = not cut_off and text[limit - 1] == _PAIRS[text[start]]
    if closes_at_end:
        brackets = brackets[:-1]  # the closer at the end, which must match the opener
    for _ in range(_MAX_PASSES):
        if not brackets or _CLOSER.search(brackets) is None:
            break
        reduced = _EMPTY_PAIR.sub("", brackets)
        if len(reduced) == len(brackets):
            return None  # a closer that does not match its opener: the loop's rules
        brackets = reduced
        check()
    else:
        return None
    if not brackets and closes_at_end:
        return limit, True
    if _CLOSER.search(brackets) is None and not closes_at_end:
        # Only openers left: nothing after ``start`` closes it.
        return limit, False
    return None


def plausible_value(text: str, i: int, limit: int) -> bool:
    """Whether the ``{`` or ``[`` at ``i`` plausibly begins a JSON value."""
    for _ in range(_MAX_NESTED_CHECK):
        if text[i] == "{":
            return _OBJECT_START.match(text, i, limit) is not None
        m = _ARRAY_START.match(text, i, limit)
        if m is None:
            return False
        if m.group("nested") is None:
            return True
        i = m.start("nested")
    return True


def scan_value(
    text: str, start: int, limit: int, deadline: Deadline | None = None
) -> tuple[int, bool]:
    """Where the value opened at ``start`` ends, and whether it was closed.

    Tracks strings (with escapes) and nesting; a closer that matches no opener is
    ignored, one that skips openers closes them too (``{"a": [1}``). An unclosed
    value ends at ``limit`` or where a fence or known tag interrupts it. Raises
    :class:`~llmfix.deadline.OutOfTime` when ``deadline`` passes.
    """
    check = (deadline or _NEVER).check
    if limit - start >= _SETTLE_MIN and text[start] in _PAIRS:
        settled = _settled(text, start, limit, check)
        if settled is not None:
            return settled
    check_at = start + _CHECK_SPAN
    stack: list[str] = []
    opened = {"{": 0, "[": 0}
    pos = start
    search = _VALUE_TOKEN.search
    while True:
        m = search(text, pos, limit)
        if m is None:
            return limit, False
        kind = m.lastgroup
        pos = m.end()
        if pos > check_at:
            check()
            check_at = pos + _CHECK_SPAN
        if kind == "dq":
            if m.group("dq_end") is None:
                return limit, False
        elif kind == "open":
            run = m.group()
            stack.extend(run)
            braces = run.count("{")
            opened["{"] += braces
            opened["["] += len(run) - braces
        elif kind == "close":
            for k, char in enumerate(m.group()):
                want = "{" if char == "}" else "["
                if opened[want]:
                    while True:
                        top = stack.pop()
                        opened[top] -= 1
                        if top == want:
                            break
                    if not stack:
                        return m.start() + k + 1, True
        elif kind == "sq":
            char = text[m.start()]
            if char in "{[":
                stack.append(char)
                opened[char] += 1
            if m.group("sq_end") is None:
                return limit, False
        else:
            return m.start(), False
