"""Answers in other formats, read with a schema: YAML, XML elements, ``key: value`` lines and
markdown tables.

Each reader only fires where the schema makes the reading certain enough: the keys, tags or
column headers must name declared properties (exactly, or equal after folding case and
punctuation: ``Action Input`` is ``action_input``). Values are converted to the property's
type where the text says so plainly (:mod:`llmfix.guided.convert`); schema repair does the
rest. A property the answer does not give stays missing (``default`` fills only through
schema repair, as for JSON).

- **YAML** — a ```` ```yaml ```` fence, or the bare answer, that loads (PyYAML's safe loader) as a
  mapping with at least one declared key, or as a sequence where an array is wanted.
- **XML** — read by :mod:`llmfix.guided.xml_answers` (lxml in recover mode), re-exported
  here as :func:`read_xml`; :func:`parse_elements` below is the small tolerant scanner that
  finds one ``<answer>``-like element holding only text (:func:`wrapper_content`).
- **key: value lines** — ``Name: Ada`` (also ``- **Name**: Ada``, ``name = Ada``, a
  ``[[ ## name ## ]]`` or ``## Name`` header line); a value runs to the next line that starts
  a declared key, so it may span lines.
- **markdown tables** — rows become objects where an array of objects is wanted (headers name
  the properties); a two-column table whose first column names properties, or one data row,
  becomes the object itself.

Each reading is ``safe`` when the format makes up the whole answer (a fence around it
allowed), a ``guess`` when it was picked out of prose.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from llmfix.deadline import CHECK_EVERY, Deadline
from llmfix.guided import shape
from llmfix.guided.convert import plain_json, text_value
from llmfix.guided.reading import NEVER, Reading
from llmfix.guided.xml_answers import read_xml

__all__ = ["read_key_values", "read_table", "read_xml", "read_yaml", "wrapper_content"]
from llmfix.model import Risk, Span

_MAX_FORMAT_TEXT = 2_000_000


def _object_nodes(schema: Any, root: Any) -> list[dict[str, Any]]:
    """Object alternatives that name their keys: declared properties, or a map (no
    properties, ``additionalProperties`` a schema: any key, values of that schema)."""
    return [
        a
        for a in shape.alternatives(schema, root)
        if "object" in shape.types(a) and (shape.properties(a, root) or _map_values(a) is not None)
    ]


_MAP_KEY = re.compile(r"\w[\w .\-/]{0,59}")


def _map_values(node: dict[str, Any]) -> Any:
    extra = node.get("additionalProperties")
    if "properties" in node or not isinstance(extra, dict) or not extra:
        return None
    return extra


def _array_nodes(schema: Any, root: Any) -> list[dict[str, Any]]:
    return [a for a in shape.alternatives(schema, root) if "array" in shape.types(a)]


def _known(node: dict[str, Any], root: Any, name: str) -> tuple[str, Any] | None:
    """The declared property (or map entry) ``name`` stands for, with its schema."""
    key = (id(node), id(root), name)
    hit = _KNOWN_CACHE.get(key)
    if hit is not None and hit[0] is node and hit[1] is root:
        return hit[2]
    if len(_KNOWN_CACHE) > 4096:
        _KNOWN_CACHE.clear()
    found = _lookup(node, root, name)
    _KNOWN_CACHE[key] = (node, root, found)
    return found


# Lookups repeat for every line or element of a long answer. The entry keeps the schema
# objects alive, so their ids cannot be reused by others while it is cached.
_KNOWN_CACHE: dict[tuple[int, int, str], tuple[Any, Any, tuple[str, Any] | None]] = {}


def _lookup(node: dict[str, Any], root: Any, name: str) -> tuple[str, Any] | None:
    name = name.strip()
    values = _map_values(node)
    if values is not None:  # a map: any name that reads as a key ("Sure! apples" does not)
        return (name, values) if _MAP_KEY.fullmatch(name) else None
    found = shape.property_schema(node, root, name)
    if found is None and not name.endswith("s"):
        # <tag>a</tag><tag>b</tag> for the array property "tags".
        found = shape.property_schema(node, root, name + "s")
        if found is not None and not shape.wants(found[1], root, "array"):
            found = None
    return found


# --- YAML ----------------------------------------------------------------

_YAML_FENCE = re.compile(
    r"(`{3,}|~{3,})[ \t]*(?:yaml|yml)[ \t]*\n(.*?)(?:\n[ \t]*\1|\Z)", re.I | re.S
)
_YAML_START = re.compile(r"\A\s*(?:---\s*\n\s*)?(?:[\w\"'][^\n:]{0,80}:(?:\s|$)|- )")


_TOP_KEY = re.compile(r"^([^\s#\-\[{][^:\n]{0,80}):(?:[ \t]|$)", re.M)
_MAX_YAML_TEXT = 1_000_000


def _only_declared_keys(text: str, objects: list[dict[str, Any]], root: Any) -> bool:
    """Whether every unindented ``key:`` line of a bare answer names a declared property
    (checked before loading it: prose with a colon is not YAML)."""
    if not objects:
        return True  # an array is wanted: "- " items, checked after loading
    keys = {m.group(1).strip().strip("\"'") for m in _TOP_KEY.finditer(text)}
    return bool(keys) and all(any(_known(n, root, k) for n in objects) for k in keys)


def read_yaml(
    text: str, base: int, schema: Any, root: Any, deadline: Deadline = NEVER
) -> Reading | None:
    objects, arrays = _object_nodes(schema, root), _array_nodes(schema, root)
    if (not objects and not arrays) or len(text) > _MAX_FORMAT_TEXT:
        return None
    fence = _YAML_FENCE.search(text)
    if fence is not None:
        body, at, how = fence.group(2), fence.start(2), "a ```yaml block"
    elif _YAML_START.match(text) and _only_declared_keys(text, objects, root):
        body, at, how = text, 0, "the answer"
    else:
        return None
    if len(body) > _MAX_YAML_TEXT:
        return None  # libyaml does not check a deadline: what it is given stays small
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when built with it
    try:
        value = plain_json(yaml.load(body, Loader=loader), deadline)
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    # A fenced block is meant as YAML: one declared key is enough. A bare answer must be
    # nothing but declared keys ("Sure! Here it is:" is prose, not a key).
    known = (
        [any(_known(node, root, k) is not None for node in objects) for k in value]
        if isinstance(value, dict)
        else []
    )
    fits = (bool(known) and (all(known) if fence is None else any(known))) or (
        isinstance(value, list) and bool(arrays)
    )
    if not fits:
        return None
    return Reading(
        value,
        "guided.yaml",
        Span(base + at, base + at + len(body)),
        Risk.SAFE,
        f"read {how} as YAML",
    )


# --- XML ----------------------------------------------------------------

_TAG = re.compile(r"<(/?)([A-Za-z_][\w.:-]*)((?:\s[^<>]*?)?)(/?)>")
# Bounded, so that many unclosed "<!--" do not make a search quadratic.
_DECLARATION = re.compile(
    r"<\?xml[^>]{0,200}\?>|<!--(?:[^-]|-(?!->)){0,2000}-->|<!DOCTYPE[^>]{0,2000}>"
    r"|`{3,}[ \t]*\w*"
)


@dataclass(slots=True)
class Element:
    name: str
    start: int
    content_start: int
    content_end: int = -1
    end: int = -1
    children: list[Element] = field(default_factory=list)


def parse_elements(text: str, deadline: Deadline = NEVER) -> list[Element]:
    """Top-level elements of ``text``, read tolerantly (unclosed elements are dropped).

    The last text's elements are kept: the XML reader and :func:`wrapper_content` both ask
    for them, and the result is never changed. ``deadline`` is checked every
    :data:`~llmfix.deadline.CHECK_EVERY` steps (a tag, or an open element looked at)."""
    if _LAST_ELEMENTS and _LAST_ELEMENTS[0][0] is text:
        return _LAST_ELEMENTS[0][1]
    top = _scan_elements(text, deadline)
    _LAST_ELEMENTS[:] = [(text, top)]
    return top


_LAST_ELEMENTS: list[tuple[str, list[Element]]] = []


def _scan_elements(text: str, deadline: Deadline) -> list[Element]:
    top: list[Element] = []
    stack: list[Element] = []
    steps = check_at = 0
    for m in _TAG.finditer(text):
        closing, name, _, empty = m.group(1), m.group(2), m.group(3), m.group(4)
        steps += 1 + (len(stack) if closing else 0)  # a closer may look at every open element
        if steps >= check_at:
            deadline.check()
            check_at = steps + CHECK_EVERY
        if closing:
            for i in range(len(stack) - 1, -1, -1):
                if stack[i].name == name:
                    el = stack[i]
                    del stack[i:]
                    el.content_end, el.end = m.start(), m.end()
                    (stack[-1].children if stack else top).append(el)
                    break
            continue
        el = Element(name, m.start(), m.end())
        if empty:
            el.content_end, el.end = m.end(), m.end()
            (stack[-1].children if stack else top).append(el)
        else:
            stack.append(el)
    return top


def _inner_text(el: Element, text: str) -> str:
    raw = text[el.content_start : el.content_end]
    if "<![CDATA[" in raw:
        return _without_cdata_markers(raw)
    return html.unescape(raw) if "&" in raw else raw


def _without_cdata_markers(raw: str) -> str:
    """``raw`` with each ``<![CDATA[…]]>`` replaced by its content (found by ``str.find``:
    linear, however many sections are left unclosed)."""
    out: list[str] = []
    pos = 0
    while True:
        at = raw.find("<![CDATA[", pos)
        if at < 0:
            out.append(raw[pos:])
            return "".join(out)
        close = raw.find("]]>", at + 9)
        if close < 0:
            out.append(raw[pos:])  # unclosed: left as written
            return "".join(out)
        out.append(raw[pos:at] + raw[at + 9 : close])
        pos = close + 3


def _first_array(schema: Any, root: Any) -> dict[str, Any]:
    arrays = _array_nodes(schema, root)
    return arrays[0] if arrays else {}


def _only_markup(text: str, elements: list[Element]) -> bool:
    """Whether nothing but whitespace, fences and XML declarations lies outside ``elements``."""
    pos = 0
    rest = []
    for el in elements:
        rest.append(text[pos : el.start])
        pos = el.end
    rest.append(text[pos:])
    outside = "".join(rest)
    if len(outside.strip()) > _MAX_OUTSIDE:
        return False  # more than a prologue and a fence (and not searched at length)
    return not _DECLARATION.sub("", outside).strip()


_MAX_OUTSIDE = 10_000


def wrapper_content(text: str, deadline: Deadline = NEVER) -> tuple[str, int] | None:
    """The content of one element that makes up the whole answer and holds only text."""
    if "<" not in text or len(text) > _MAX_FORMAT_TEXT:
        return None
    top = parse_elements(text, deadline)
    if len(top) != 1 or top[0].children or not _only_markup(text, top):
        return None
    el = top[0]
    return _inner_text(el, text), el.content_start


# --- key: value lines ----------------------------------------------------------------

_KEY_LINE = re.compile(
    r"^[ \t]*(?:[-*+\u2022][ \t]+)?(?:\*\*|__)?[ \t]*([A-Za-z_][\w .()/-]{0,60}?)[ \t]*"
    r"(?:\*\*|__)?[ \t]*[:=](?!//)[ \t]*(?:\*\*|__)?[ \t]*(.*)$",
    re.M,
)
_HEADER_LINE = re.compile(
    r"^[ \t]*(?:\[\[[ \t]*##[ \t]*(\w+)[ \t]*##[ \t]*\]\]|#{1,6}[ \t]+(\w[\w ]{0,60}?)[ \t]*:?"
    r"|\*\*(\w[\w ]{0,60}?)[ \t]*:?\*\*)[ \t]*$",
    re.M,
)


def read_key_values(
    text: str, base: int, schema: Any, root: Any, deadline: Deadline = NEVER
) -> Reading | None:
    nodes = _object_nodes(schema, root)
    if not nodes or len(text) > _MAX_FORMAT_TEXT:
        return None
    node = nodes[0]
    # Every header or key line ends the value before it; only declared ones start a value.
    marks: list[tuple[int, int, bool, tuple[str, Any] | None]] = []  # start, value, header
    header_lines: set[int] = set()
    for m in _HEADER_LINE.finditer(text):
        if not len(marks) & (CHECK_EVERY - 1):
            deadline.check()
        name = m.group(1) or m.group(2) or m.group(3)
        value_start = m.end() + 1 if m.end() < len(text) else m.end()
        marks.append((m.start(), value_start, True, _known(node, root, name)))
        header_lines.add(m.start())
    for m in _KEY_LINE.finditer(text):
        if not len(marks) & (CHECK_EVERY - 1):
            deadline.check()
        if m.start() not in header_lines:
            marks.append((m.start(), m.start(2), False, _known(node, root, m.group(1))))
    marks.sort(key=lambda mark: mark[0])
    obj: dict[str, Any] = {}
    first = None
    for i, (start, value_start, header, known) in enumerate(marks):
        if known is None:
            continue
        deadline.check()
        end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        raw = text[value_start:end]
        if not header:
            raw = _first_paragraph(raw)
        raw = _CLOSING_FENCE.sub("", raw).strip()
        if raw.endswith(("**", "__")) and raw.count(raw[-2:]) % 2:
            raw = raw[:-2].rstrip()
        name, prop = known
        if name not in obj:
            obj[name] = text_value(raw, prop, root, deadline)
            first = start if first is None else first
    if first is None:
        return None
    whole = not text[:first].strip()
    return Reading(
        obj,
        "guided.key_value",
        Span(base + first, base + len(text.rstrip())),
        Risk.SAFE if whole else Risk.GUESS,
        f"read {len(obj)} 'key: value' line(s) naming declared properties",
    )


_CLOSING_FENCE = re.compile(r"\n[ \t]*(?:`{3,}|~{3,})[ \t]*\s*\Z")


def _first_paragraph(raw: str) -> str:
    """A ``key: value`` value: its line and the lines after it, up to a blank line (blank
    lines right after the key, before the value begins, are skipped)."""
    head, _, rest = raw.partition("\n")
    if not head.strip():
        rest = rest.lstrip("\n \t")
        body, _, _ = rest.partition("\n\n")
        return body
    more, _, _ = rest.partition("\n\n") if not rest.startswith("\n") else ("", "", "")
    return head + ("\n" + more if more else "")


# --- markdown tables ----------------------------------------------------------------

_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")


def _cells(line: str) -> list[str]:
    s = line.strip()
    if s.startswith("|"):
        s = s[1:]
    if s.endswith("|") and not s.endswith("\\|"):
        s = s[:-1]
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", s)]


def read_table(
    text: str, base: int, schema: Any, root: Any, deadline: Deadline = NEVER
) -> Reading | None:
    if "|" not in text or len(text) > _MAX_FORMAT_TEXT:
        return None
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for i in range(1, len(lines)):
        if not i & (CHECK_EVERY - 1):
            deadline.check()
        rule = lines[i]
        if _RULE.match(rule) and "|" in lines[i - 1] and ("|" in rule or "---" in rule):
            header = _cells(lines[i - 1])
            rows = []
            j = i + 1
            while j < len(lines) and "|" in lines[j] and lines[j].strip():
                if not j & (CHECK_EVERY - 1):
                    deadline.check()
                rows.append(_cells(lines[j]))
                j += 1
            start, end = offsets[i - 1], offsets[j]
            value = _table_value(header, rows, schema, root, deadline)
            if value is None:
                return None
            whole = not (text[:start].strip() or text[end:].strip())
            return Reading(
                value,
                "guided.table",
                Span(base + start, base + end),
                Risk.SAFE if whole else Risk.GUESS,
                f"read a markdown table of {len(rows)} row(s) into the schema's shape",
            )
    return None


def _table_value(
    header: list[str], rows: list[list[str]], schema: Any, root: Any, deadline: Deadline
) -> Any:
    for node in _array_nodes(schema, root):
        item = shape.items(node)
        for item_node in _object_nodes(item, root):
            columns = [_known(item_node, root, h) for h in header]
            if any(c is not None for c in columns):
                return [_row_object(columns, row, root, deadline) for row in rows]
    for node in _object_nodes(schema, root):
        columns = [_known(node, root, h) for h in header]
        if len(header) == 2 and rows:
            keyed = [_known(node, root, row[0]) for row in rows if row]
            if all(k is not None for k in keyed):
                return {
                    k[0]: text_value(row[1] if len(row) > 1 else "", k[1], root, deadline)
                    for k, row in zip(keyed, rows, strict=True)
                    if k is not None
                }
        if len(rows) == 1 and any(c is not None for c in columns):
            return _row_object(columns, rows[0], root, deadline)
        # The rows of the one array-of-objects property the headers fit: {"people": [...]}.
        for name, prop in shape.properties(node, root).items():
            deadline.check()
            rows_value = _table_value(header, rows, _first_array(prop, root), root, deadline)
            if isinstance(rows_value, list) and _first_array(prop, root):
                return {name: rows_value}
    return None


def _row_object(
    columns: list[tuple[str, Any] | None], row: list[str], root: Any, deadline: Deadline
) -> dict[str, Any]:
    deadline.check()
    obj: dict[str, Any] = {}
    for column, cell in zip(columns, row, strict=False):
        if column is not None and cell != "":
            obj[column[0]] = text_value(cell, column[1], root, deadline)
    return obj
