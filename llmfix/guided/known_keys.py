"""Keys the schema knows bound broken values: a guided re-read of an object's text.

Inside an object whose properties are declared, a value runs from its key's colon to the next
declared key (or the object's end), so an unquoted or badly quoted value — prose with commas,
quotes and blank lines, code — stays one value instead of being split into invented keys.
Each value is then read on its own:

- strict JSON (``12``, ``"text"``, ``[1, 2]``) is taken as it is;
- ``\"\"\"…\"\"\"`` (or ``'''…'''``) is the string between the quotes, exactly;
- a fenced block (```` ```python … ``` ````) is its content, the language tag dropped and the
  common indentation removed;
- a double-quoted value with unescaped quotes or newlines inside keeps them;
- where an object or array is wanted, the lenient parser reads the value's text;
- anything else is the trimmed text, left for schema repair to convert.

This is a ``guess`` (a re-quoting), reported as ``guided.known_keys``; the pipeline takes it
only when it validates and the ordinary reading did not (or invented keys the schema does
not declare).
"""

from __future__ import annotations

import bisect
import json
import re
import textwrap
from collections.abc import Callable
from typing import Any

from llmfix.deadline import CHECK_EVERY, Deadline
from llmfix.guided import shape
from llmfix.guided.reading import NEVER, Reading
from llmfix.model import Risk, Span
from llmfix.parse.core import parse_json

_MAX_OBJECT_TEXT = 1_000_000
_FENCED = re.compile(r"\A(`{3,}|~{3,})[^\n]*\n(.*?)\n?[ \t]*\1\Z", re.S)


def read_known_keys(
    text: str,
    base: int,
    schema: Any,
    root: Any,
    ordinary: Any = None,
    deadline: Deadline = NEVER,
) -> Reading | None:
    """The object re-read with its declared keys bounding the values.

    ``ordinary`` is the value the lenient parser gave, if any: when it already holds every
    declared key found in the text and nothing else, a re-read would bound the values the same
    way, and none is made. ``deadline`` is checked as the text is scanned and once per value.
    """
    node = next(
        (
            a
            for a in shape.alternatives(schema, root)
            if "object" in shape.types(a) and shape.properties(a, root)
        ),
        None,
    )
    open_at = text.find("{")
    if node is None or open_at < 0 or len(text) > _MAX_OBJECT_TEXT:
        return None
    close_at = text.rfind("}")
    end = close_at if close_at > open_at else len(text)
    props = shape.properties(node, root)
    keys = _key_positions(text, open_at + 1, end, props, deadline)
    if not keys:
        return None
    found = {name for _, _, name in keys}
    if isinstance(ordinary, dict) and set(ordinary) <= set(props) and found <= set(ordinary):
        return None
    obj: dict[str, Any] = {}
    for i, (_, value_start, name) in enumerate(keys):
        deadline.check()
        value_end = keys[i + 1][0] if i + 1 < len(keys) else end
        raw = text[value_start:value_end].strip()
        if raw.endswith(","):
            raw = raw[:-1].rstrip()
        obj[name] = _value(raw, props[name], root)
    return Reading(
        obj,
        "guided.known_keys",
        Span(base + open_at, base + min(len(text), end + 1)),
        Risk.GUESS,
        f"re-read the object with its {len(keys)} declared key(s) bounding the values",
    )


_NESTING = re.compile(r'"(?:[^"\\\n]|\\.)*"|[{}\[\]]')


def _key_positions(
    text: str, start: int, end: int, props: dict[str, Any], deadline: Deadline
) -> list[tuple[int, int, str]]:
    """(key start, value start, property) for each declared key, the first time it appears
    where a key can begin (after ``{``, ``,`` or a line break) at the object's own level (not
    inside a nested ``{…}`` or ``[…]``), in text order."""
    names = sorted(props, key=len, reverse=True)
    if not names:
        return []
    alternation = "|".join(re.escape(n) for n in names)
    pattern = re.compile(rf"(?<=[{{,\n])[ \t]*([\"']?)({alternation})\1[ \t]*:")
    found: list[tuple[int, int, str]] = []
    seen: set[str] = set()
    depth = _depths(text, start, end, deadline)
    for steps, m in enumerate(pattern.finditer(text, start, end)):
        if not steps & (CHECK_EVERY - 1):
            deadline.check()
        name = m.group(2)
        if name in seen or depth(m.start()) != 0:
            continue
        seen.add(name)
        found.append((m.start(), m.end(), name))
    return found


def _depths(text: str, start: int, end: int, deadline: Deadline) -> Callable[[int], int]:
    """How deep in nested brackets a position is (strings on one line skipped; 0 = the
    object's own level). Brackets in broken prose can only make a key look nested, so a
    value is never split at a key that is really inside another value."""
    changes: list[int] = []  # position of each bracket
    levels: list[int] = []  # depth after it
    level = 0
    for steps, m in enumerate(_NESTING.finditer(text, start, end)):
        if not steps & (CHECK_EVERY - 1):
            deadline.check()
        token = m.group(0)
        if token in "{[":
            level += 1
        elif token in "}]":
            level = max(0, level - 1)
        else:
            continue
        changes.append(m.start())
        levels.append(level)

    def depth(pos: int) -> int:
        i = bisect.bisect_right(changes, pos) - 1
        return levels[i] if i >= 0 else 0

    return depth


def _value(raw: str, schema: Any, root: Any) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        pass
    for quote in ('"""', "'''"):
        if len(raw) >= 6 and raw.startswith(quote) and raw.endswith(quote):
            return raw[3:-3]
    fenced = _FENCED.match(raw)
    if fenced is not None:
        return textwrap.dedent(fenced.group(2))
    if len(raw) >= 2 and raw[0] == raw[-1] == "`" and "`" not in raw[1:-1]:
        return raw[1:-1]  # `inline code`
    structured = shape.wants(schema, root, "object") or shape.wants(schema, root, "array")
    if structured and not shape.wants(schema, root, "string"):
        outcome = parse_json(raw)
        if outcome.ok and isinstance(outcome.value, (dict, list)):
            return outcome.value
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        inner = raw[1:-1]
        escaped = re.sub(r'(?<!\\)"', r"\\\"", inner)
        escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        try:
            value = json.loads(f'"{escaped}"')
        except ValueError:
            return inner
        return value if isinstance(value, str) else inner
    return raw
