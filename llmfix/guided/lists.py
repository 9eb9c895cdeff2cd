"""Lists read from text where the schema wants an array.

A markdown bullet list (``-``, ``*``, ``+``, ``•``) or numbered list (``1.``, ``2)``) gives one
item per entry; an answer of one line gives its comma-separated parts (a part in double
quotes may hold commas); a list written as a sentence (``The primary colours are red,
yellow and blue.``) gives its items, the lead-in and the ``and`` left out (a guess). Each
item is read against the item schema the way a whole scalar answer is (``**RED**`` →
``"RED"`` for an enum, ``1,200`` → ``1200`` for an integer).

The reading is ``safe`` when the list is the whole answer, a ``guess`` when the list was
picked out of prose around it (``Items:`` then bullets).
"""

from __future__ import annotations

import csv
import json
import re
from typing import Any

from llmfix.deadline import Deadline
from llmfix.guided import shape
from llmfix.guided.reading import NEVER, Reading, strip_wrappers, unfence
from llmfix.guided.scalars import plain, read_scalars
from llmfix.model import Risk, Span

_ENTRY = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d{1,3}[.)])[ \t]+(\S[^\n]*?)[ \t]*$", re.MULTILINE)
_SHORT_ITEM_WORDS = 4


def read_lists(
    text: str, base: int, schema: Any, root: Any, deadline: Deadline = NEVER
) -> Reading | None:
    """The list ``text`` holds, where the schema wants an array (``deadline`` is checked
    once per entry)."""
    for alt in shape.alternatives(schema, root):
        if "array" in shape.types(alt):
            item_schema = shape.items(alt)
            reading = _bullets(text, base, item_schema, root, deadline)
            if reading is None:
                reading = _commas(text, base, item_schema, root, deadline)
            if reading is None:
                reading = _mentioned_members(text, base, item_schema, root)
            return reading
    return None


def _members(item_schema: Any, root: Any) -> list[Any] | None:
    """The members every item must be one of (``None`` when items are not an enum)."""
    out: list[Any] = []
    for alt in shape.alternatives(item_schema, root):
        found = shape.members(alt)
        if found is None:
            return None
        out += found
    return out


def _mentioned_members(text: str, base: int, item_schema: Any, root: Any) -> Reading | None:
    """Every enum member the prose names, in order, where an array of members is wanted:
    ``The review mentions price and delivery.`` → ``["price", "delivery"]`` (a guess)."""
    import re

    members = [m for m in _members(item_schema, root) or [] if isinstance(m, str) and m.strip()]
    if not members or len(text) > 20_000:
        return None
    folded = plain(text)
    found: list[tuple[int, str]] = []
    for member in dict.fromkeys(members):
        words = [re.escape(w) for w in plain(member).split()]
        pattern = r"(?<![\w-])" + r"[\s_-]+".join(words) + r"(?![\w-])"
        hit = re.search(pattern, folded)
        if hit is not None:
            found.append((hit.start(), member))
    if not found:
        return None
    found.sort()
    return Reading(
        [m for _, m in found],
        "guided.list",
        Span(base, base + len(text)),
        Risk.GUESS,
        f"the {len(found)} member(s) the prose names, in order",
    )


def item_value(text: str, item_schema: Any, root: Any, deadline: Deadline = NEVER) -> Any:
    """One list entry read against the item schema (its text when nothing fits better)."""
    if shape.wants(item_schema, root, "object") or shape.wants(item_schema, root, "array"):
        try:
            return json.loads(text)
        except ValueError:
            pass
    readings, _ = read_scalars(text, 0, item_schema, root, deadline)
    for r in readings:
        if r.risk is Risk.SAFE and r.code != "guided.string":
            return r.value
    inner, _ = strip_wrappers(text, period=False)
    return inner


def _item_values(entries: list[str], item_schema: Any, root: Any, deadline: Deadline) -> list[Any]:
    values = []
    for entry in entries:
        deadline.check()
        values.append(item_value(entry, item_schema, root, deadline))
    return values


def _bullets(
    text: str, base: int, item_schema: Any, root: Any, deadline: Deadline
) -> Reading | None:
    body, at = unfence(text)
    entries = list(_ENTRY.finditer(body))
    if not entries:
        return None
    lines = [line for line in body.splitlines() if line.strip()]
    whole = len(lines) == len(entries)
    values = _item_values([m.group(1) for m in entries], item_schema, root, deadline)
    start, end = entries[0].start(), entries[-1].end()
    kind = "numbered" if entries[0].group(0).lstrip()[0].isdigit() else "bullet"
    return Reading(
        values,
        "guided.list",
        Span(base + at + start, base + at + end),
        Risk.SAFE if whole else Risk.GUESS,
        f"a markdown {kind} list of {len(values)} item(s) read as an array"
        + ("" if whole else ", out of the prose around it"),
    )


def _commas(
    text: str, base: int, item_schema: Any, root: Any, deadline: Deadline
) -> Reading | None:
    body, at = strip_wrappers(text, period=False)
    if not body or "\n" in body or body[0] in "[{":
        return None
    try:
        parts = next(csv.reader([body], skipinitialspace=True))
    except (csv.Error, StopIteration):
        return None
    parts = [p.strip() for p in parts]
    if not parts or any(not p for p in parts):
        return None
    prose, parts = _prose_list(parts)
    if len(parts) == 1 and len(parts[0].split()) > _SHORT_ITEM_WORDS:
        return None  # a sentence, not a one-item list
    values = _item_values(parts, item_schema, root, deadline)
    members = _members(item_schema, root)
    if members is not None and any(v not in members for v in values):
        return None  # items must be members: leave the prose to _mentioned_members
    short = all(len(p.split()) <= _SHORT_ITEM_WORDS for p in parts)
    how = f"a comma-separated line of {len(values)} item(s) read as an array"
    if prose:
        how = f"a list of {len(values)} item(s) in a sentence, its lead-in left out"
    return Reading(
        values,
        "guided.list",
        Span(base + at, base + at + len(body)),
        Risk.SAFE if short and not prose else Risk.GUESS,
        how,
    )


# The words that lead a list in into a sentence: "The primary colours are red, ...".
_LEAD_IN = re.compile(
    r"^(.*?\b(?:are|is|were|was|include|includes|including|contains|would be|will be|"
    r"namely)\b|.*?:)\s+(?=\S)",
    re.IGNORECASE,
)
_LAST_JOIN = re.compile(r"^(?:(?:and|or|&)\s+)|\s+(?:and|or|&)\s+", re.IGNORECASE)


# Words that open a sentence, not an item ("I recommend apples, ..." but "San Francisco Bay
# Area, Paris" is a list).
_OPENERS = frozenset(
    [
        "i",
        "we",
        "you",
        "they",
        "he",
        "she",
        "it",
        "the",
        "this",
        "these",
        "those",
        "our",
        "my",
        "your",
        "their",
        "there",
        "here",
    ]
)


def _split_last(items: list[str]) -> list[str]:
    """``items`` with the last one split at ``and``/``or`` (for measuring item lengths)."""
    if not items:
        return [""]
    last = [p for p in _LAST_JOIN.split(items[-1].rstrip(".")) if p.strip()]
    return items[:-1] + (last or [items[-1]])


def _prose_list(parts: list[str]) -> tuple[bool, list[str]]:
    """A list written as a sentence (``The primary colours are red, yellow and blue.``): the
    lead-in before the first item dropped (up to ``are``/``is``/``include``/``:``, else the
    words that make the first item longer than the others), the last two items split at
    ``and``/``or``, the final period dropped. Returns whether it was such a sentence, and
    the items."""
    items = list(parts)
    changed = False
    lead = _LEAD_IN.match(items[0])
    if len(parts) == 1:
        # "The colours are red and blue.": a lead-in, then two items joined by and/or.
        rest = items[0][lead.end() :].rstrip(".") if lead is not None else ""
        joined = [p.strip() for p in _LAST_JOIN.split(rest) if p.strip()]
        if len(joined) == 2 and all(len(p.split()) <= _SHORT_ITEM_WORDS for p in joined):
            return True, joined
        return False, parts
    if lead is not None and len(items[0].split()) > 1:
        items[0] = items[0][lead.end() :]
        changed = True
    longest = max(len(p.split()) for p in _split_last(items[1:]))
    words = items[0].split()
    if len(words) >= 3 and len(words) >= longest + 2 and words[0].casefold() in _OPENERS:
        # "I recommend apples, bananas, and cherries": the first item is as long as the others.
        items[0] = " ".join(words[-longest:])
        changed = True
    last = items[-1]
    if last.endswith(".") and not last.endswith(".."):
        items[-1] = last = last[:-1].rstrip()
        changed = True
    joined = [p.strip() for p in _LAST_JOIN.split(last) if p.strip()]
    if len(joined) in (1, 2) and joined != [last]:
        items[-1:] = joined
        changed = True
    return changed, items if all(items) else parts
