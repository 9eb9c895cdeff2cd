"""TOON answers (Token-Oriented Object Notation), read with a schema.

Some prompts ask a model to answer in TOON: ``key: value`` lines, objects nested by
indentation, ``tags[2]: a,b`` for an inline array, ``people[2]{name,age}:`` followed by one
indented row per item for a table of objects, ``- item`` lines under ``key[N]:``. Read by
the ``toon-format`` package (the format's own Python implementation) with ``strict=False``:
a declared length that does not match the rows, four-space or uneven indentation and blank
lines inside a block are what models write, and are read anyway.

The reader fires only where the answer says it is TOON: a ```` ```toon ```` fence, or a line
with an array header (``name[N]:``, ``name[N]{fields}:``); plain ``key: value`` lines are
YAML's and the ``key: value`` reader's. Every top-level key must name a declared property
(prose with a colon is not TOON). Prose before the first key and after the block is left
out, and the reading is then a guess; a TOON block that is the whole answer (a fence around
it allowed) is read ``safe``.

The decoder does not check a deadline, so what it is given stays small (200,000 characters).
"""

from __future__ import annotations

import re
from typing import Any

from llmfix.deadline import Deadline
from llmfix.guided import shape
from llmfix.guided.convert import plain_json
from llmfix.guided.reading import NEVER, Reading
from llmfix.model import Risk, Span

_MAX_TOON_TEXT = 200_000
_FENCE = re.compile(r"(`{3,}|~{3,})[ \t]*toon[ \t]*\n(.*?)(?:\n[ \t]*\1|\Z)", re.I | re.S)
# An array header: key[N]:, key[N]{a,b}:, key[N|]: (a delimiter named in the brackets).
_HEADER = re.compile(
    r'^[ \t]*(?:"[^"\n]{1,80}"|[\w.]{1,80})?\[#?\d{1,6}[|\t]?\](?:\{[^}\n]*\})?:', re.M
)
# A top-level key line: key: …, key[N]…: …
_TOP_KEY = re.compile(
    r'^(?:"([^"\n]{1,80})"|([\w.][\w. -]{0,79}?))(?:\[[^\]\n]*\](?:\{[^}\n]*\})?)?:(?:[ \t]|$)'
)


def _object_nodes(schema: Any, root: Any) -> list[dict[str, Any]]:
    return [
        a
        for a in shape.alternatives(schema, root)
        if "object" in shape.types(a) and shape.properties(a, root)
    ]


def _declared(name: str, objects: list[dict[str, Any]], root: Any) -> bool:
    return any(shape.property_schema(node, root, name) is not None for node in objects)


def read_toon(
    text: str, base: int, schema: Any, root: Any, deadline: Deadline = NEVER
) -> Reading | None:
    """The object (or array) a TOON answer holds, when its keys name declared properties."""
    if len(text) > _MAX_TOON_TEXT or ":" not in text:
        return None
    objects = _object_nodes(schema, root)
    if not objects and not shape.wants(schema, root, "array"):
        return None
    fence = _FENCE.search(text)
    if fence is not None:
        body, at, how = fence.group(2), fence.start(2), "a ```toon block"
    elif _HEADER.search(text) is not None:
        body, at, how = text, 0, "the answer"
    else:
        return None
    where = _block(body, objects, root)
    if where is None:
        return None
    start, end = where
    deadline.check()
    # (start-up: the decoder loads only when an answer is read as TOON)
    from toon_format import ToonDecodeError, decode

    block = body[start:end]
    try:
        try:
            decoded = decode(block, strict=False)
        except ToonDecodeError:
            indented = _indent_rows(block)
            if indented == block:
                raise
            decoded = decode(indented, strict=False)
        value = plain_json(decoded, deadline)
    except (ToonDecodeError, ValueError, RecursionError):
        return None
    if isinstance(value, dict):
        if not value or not all(_declared(k, objects, root) for k in value):
            return None
    elif not (isinstance(value, list) and shape.wants(schema, root, "array")):
        return None
    whole = not (text[: at + start].strip(" \t\n`~") or text[at + end :].strip(" \t\n`~"))
    if fence is not None:
        whole = not (text[: fence.start()].strip() or text[fence.end() :].strip())
        whole = whole and not (body[:start].strip() or body[end:].strip())
    return Reading(
        value,
        "guided.toon",
        Span(base + at + start, base + at + end),
        Risk.SAFE if whole else Risk.GUESS,
        f"read {how} as TOON" + ("" if whole else ", out of the prose around it"),
    )


_ARRAY_HEADER_LINE = re.compile(r"^([ \t]*)\S[^\n]*\[#?\d{1,6}[|\t]?\](?:\{[^}\n]*\})?:[ \t]*$")
_KEY_VALUE = re.compile(
    r'^[ \t]*(?:"[^"\n]{1,80}"|[\w.][\w. -]{0,79}?)(?:\[[^\]\n]*\])?:(?:[ \t]|$)'
)


def _indent_rows(block: str) -> str:
    """Rows a model wrote under an array header without indenting them (``people[2]{a,b}:``
    then ``Ada,36`` at the header's own indentation), indented one level."""
    out: list[str] = []
    under: str | None = None  # the indentation of the rows of the open header
    for line in block.split("\n"):
        header = _ARRAY_HEADER_LINE.match(line)
        if header is not None:
            out.append(line)
            under = header.group(1) + "  "
            continue
        if under is not None and line.strip():
            lead = line[: len(line) - len(line.lstrip())]
            row = line.lstrip().startswith("- ") or _KEY_VALUE.match(line) is None
            if len(lead) < len(under) and row:
                out.append(under + line.lstrip())
                continue
            if len(lead) < len(under):
                under = None
        out.append(line)
    return "\n".join(out)


def _block(body: str, objects: list[dict[str, Any]], root: Any) -> tuple[int, int] | None:
    """Where the TOON lies in ``body``: from the first unindented line that starts a declared
    key (or a root array header) to the last line of the block (a line of prose after a blank
    line ends it)."""
    lines = body.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    first = None
    for i, line in enumerate(lines):
        m = _TOP_KEY.match(line)
        if line.startswith("[") and re.match(r"\[#?\d{1,6}[|\t]?\](?:\{[^}\n]*\})?:", line):
            first = i if not objects else None
            break
        if m is not None and _declared((m.group(1) or m.group(2)).strip(), objects, root):
            first = i
            break
    if first is None:
        return None
    last = first
    blank = False
    rows = _ARRAY_HEADER_LINE.match(lines[first].rstrip("\r\n")) is not None
    for i in range(first + 1, len(lines)):
        line = lines[i]
        if not line.strip():
            blank = True
            rows = False
            continue
        indented = line[:1] in (" ", "\t")
        m = _TOP_KEY.match(line)
        keyed = m is not None and _declared((m.group(1) or m.group(2)).strip(), objects, root)
        # Rows right under an array header count even unindented (see _indent_rows).
        if not (indented or keyed or rows) or (blank and not indented and not keyed):
            break  # prose after the block
        if _ARRAY_HEADER_LINE.match(line.rstrip("\r\n")) is not None:
            rows = True
        elif keyed and not indented:
            rows = False
        blank = False
        last = i
    end = offsets[last + 1]
    while end > offsets[first] and body[end - 1] in "\r\n":
        end -= 1
    return offsets[first], end
