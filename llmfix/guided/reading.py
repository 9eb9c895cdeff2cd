"""What a reader returns, and the small text helpers every reader shares."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from llmfix.deadline import Deadline
from llmfix.model import Risk, Span

# The deadline of a reading made without one (a reader called on its own).
NEVER = Deadline.never("guided")


@dataclass(frozen=True)
class Reading:
    """One way to read an answer that is not JSON: the value, where it came from, how sure.

    ``code`` is the diagnostic code (``guided.boolean``, ``guided.yaml``, …), ``span`` the
    text the value was read from (into the raw input), ``risk`` its tier: ``safe`` when the
    whole answer is the value in another notation, ``guess`` when it was picked out of prose.
    """

    value: Any
    code: str
    span: Span
    risk: Risk
    message: str


@dataclass(frozen=True)
class Refusal:
    """Why a reading was not made (two enum members competed, two numbers, …)."""

    code: str
    span: Span
    message: str
    data: dict[str, Any]


# Emphasis and quoting a model puts around a one-word answer.
_WRAPPERS = (
    ("**", "**"),
    ("__", "__"),
    ("*", "*"),
    ("_", "_"),
    ("`", "`"),
    ('"', '"'),
    ("'", "'"),
    ("\u201c", "\u201d"),
    ("\u2018", "\u2019"),
    ("«", "»"),
)
_FENCE = re.compile(r"\A(`{3,}|~{3,})[^\n]*\n(.*?)\n?\1[ \t]*\Z", re.DOTALL)


def unfence(text: str) -> tuple[str, int]:
    """The content of one code fence enclosing the whole text, and its offset (or as is)."""
    m = _FENCE.match(text)
    if m is None:
        return text, 0
    return m.group(2), m.start(2)


def strip_wrappers(text: str, *, period: bool = True) -> tuple[str, int]:
    """``text`` trimmed, without one fence and any enclosing emphasis or quotes.

    With ``period``, a final ``.`` or ``!`` goes too. Returns the inner text and its
    offset in ``text``.
    """
    start, end = 0, len(text)
    lead = len(text) - len(text.lstrip())
    inner, offset = unfence(text.strip())
    if offset:
        start = lead + offset
        end = start + len(inner)
    changed = True
    while changed:
        changed = False
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        for left, right in _WRAPPERS:
            if (
                end - start > len(left) + len(right)
                and text.startswith(left, start)
                and text.endswith(right, 0, end)
            ):
                start += len(left)
                end -= len(right)
                changed = True
                break
        if period and not changed and end - start > 1 and text[end - 1] in ".!":
            end -= 1
            changed = True
    return text[start:end], start


def fold_member(text: str) -> str:
    """Case, accents and width folded, spaces and punctuation between words kept as one space."""
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return " ".join(re.findall(r"\w+", bare))
