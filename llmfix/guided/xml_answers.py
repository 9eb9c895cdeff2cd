"""XML answers with structure, read with a schema.

``<Person><name>Ada</name><age>36</age></Person>`` for an object; sibling elements that name
properties (``<answer>…</answer><explanation>…</explanation>``); a list as repeated child
elements (``<tags><item>a</item><item>b</item></tags>``, or ``<tag>a</tag><tag>b</tag>``
for the property ``tags``); a map as ``<entry><key>k</key><value>v</value></entry>`` elements
or as one element per key; attributes that name properties (``<person name="Ada"/>``);
elements named by a property's ``title`` (``<FullName>`` for ``full_name`` titled "Full
Name") or by the schema's own title, wrapped in ``<answer>``-like elements, after an
``<?xml …?>`` prologue, inside a fence.

Parsed by lxml (libxml2) in recover mode: a cut-off answer has its open elements closed
(the reading is then a guess, and says so; a number or other non-string value the answer
stops inside is left out, as it may have been longer), a mismatched end tag is skipped.
Entities are never resolved, no DTD is loaded and the network is never used
(``resolve_entities=False``,
``load_dtd=False``, ``no_network=True``); ``huge_tree=False`` keeps libxml2's own limits on
depth and text size, and no more than 1,000,000 characters are parsed. A bare ``&`` or
``<`` in text (``Tom & Jerry``, ``a < b``), which models write, is escaped first, and an
HTML entity (``&eacute;``) is replaced by its character (libxml2 would drop both).

Each reading is ``safe`` when the XML makes up the whole answer (a fence and a prologue
around it allowed) and was closed, a ``guess`` when it was picked out of prose or cut off.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any

from llmfix.deadline import CHECK_EVERY, Deadline
from llmfix.guided import shape
from llmfix.guided.convert import text_value
from llmfix.guided.reading import NEVER, Reading, fold_member
from llmfix.model import Risk, Span

_MAX_XML_TEXT = 1_000_000  # libxml2 does not check a deadline: what it is given stays small
_MAX_NODES = 50_000  # elements turned into nodes (more: not read)
_OPEN = re.compile(r"<([A-Za-z_][\w.:-]*)(?=[\s/>])")
_CLOSE = re.compile(r"</([A-Za-z_][\w.:-]*)\s*>")
# What may stand outside the XML of an answer that is all XML (bounded: no backtracking
# over a long text).
_PROLOGUE = re.compile(
    r"<\?xml[^>]{0,200}\?>|<!DOCTYPE[^>\[]{0,200}(?:\[[^\]]{0,2000}\])?\s{0,20}>"
    r"|<!--(?:[^-]|-(?!->)){0,2000}-->",
    re.I,
)
_MAX_OUTSIDE = 10_000  # characters outside the XML looked at to call it the whole answer
_BARE_AMP = re.compile(
    r"&(?!(?:amp|lt|gt|quot|apos|#\d{1,7}|#x[0-9A-Fa-f]{1,6});)([A-Za-z]\w{0,31};)?"
)
_BARE_LT = re.compile(r"<(?![A-Za-z_/!?])")
_FENCE_EDGE = re.compile(r"\A\s*(?:`{3,}|~{3,})[^\n]*\n|\n[ \t]*(?:`{3,}|~{3,})[ \t]*\Z")
_WRAPPERS = frozenset({"answer", "response", "output", "result", "root", "data", "json", "xml"})
_ROOT = "llmfix-root"


@dataclass(slots=True)
class Node:
    """One element as lxml read it: its local name, attributes and children."""

    name: str
    attributes: dict[str, str]
    element: Any  # the lxml element, for its text
    children: list[Node] = field(default_factory=list)
    cut: bool = False  # the answer ends inside its text: the value may be incomplete

    @property
    def text(self) -> str:
        """All the text inside the element, its children's included."""
        return "".join(self.element.itertext())


def _escape(region: str) -> str:
    """A bare ``&`` or ``<`` escaped; an HTML entity replaced by its character."""

    def amp(m: re.Match[str]) -> str:
        named = m.group(1)
        if named is None:
            return "&amp;"
        char = html.unescape("&" + named)
        return html.escape(char, quote=False) if char != "&" + named else "&amp;" + named

    out: list[str] = []
    pos = 0
    while True:  # CDATA sections are left as they are (found by str.find: linear)
        at = region.find("<![CDATA[", pos)
        text = region[pos:] if at < 0 else region[pos:at]
        out.append(_BARE_LT.sub("&lt;", _BARE_AMP.sub(amp, text)))
        if at < 0:
            return "".join(out)
        close = region.find("]]>", at)
        pos = len(region) if close < 0 else close + 3
        out.append(region[at:pos])


def _region(text: str) -> tuple[int, int] | None:
    """Where the XML of ``text`` lies: from its first element to the end of its last tag
    (to the end of the text when an element is left open: its content runs there)."""
    first = _OPEN.search(text)
    if first is None:
        return None
    end = 0
    for m in _CLOSE.finditer(text, first.start()):
        end = m.end()
    if end == 0 or _OPEN.search(text, end) is not None:
        # Cut off: elements open after the last end tag run to the end (a fence aside).
        end = len(text)
        fence = _FENCE_EDGE.search(text, first.start())
        if fence is not None and fence.start() > first.start() and fence.end() == end:
            end = fence.start()
    return first.start(), end


def parse_tree(text: str, deadline: Deadline = NEVER) -> tuple[list[Node], int, int, bool] | None:
    """The top-level elements of the XML in ``text``, where it lies, and whether the parser
    had to close elements the text left open (``None`` when there is no element)."""
    found = _region(text)
    if found is None:
        return None
    start, end = found
    # (a prologue or DOCTYPE inside the region is text to libxml2 after _escape: never a DTD)
    region = text[start:end]
    # (start-up: lxml loads only when an answer holds XML)
    from lxml import etree

    parser = etree.XMLParser(
        recover=True,
        resolve_entities=False,
        no_network=True,
        huge_tree=False,
        load_dtd=False,
        dtd_validation=False,
        remove_comments=True,
        remove_pis=True,
        strip_cdata=True,
    )
    deadline.check()
    try:
        root = etree.fromstring(f"<{_ROOT}>{_escape(region)}</{_ROOT}>".encode(), parser)
    except (etree.XMLSyntaxError, ValueError):
        return None
    deadline.check()
    if root is None:
        return None
    cut = len(parser.error_log) > 0  # the parser had to recover: open or broken tags
    budget = [_MAX_NODES]
    nodes = [n for n in (_node(c, budget, deadline) for c in root) if n is not None]
    if cut and nodes and not text[start:end].rstrip().endswith(">"):
        last = nodes[-1]
        while last.children:
            last = last.children[-1]
        last.cut = True
    return nodes, start, end, cut


def _node(el: Any, budget: list[int], deadline: Deadline) -> Node | None:
    if not isinstance(el.tag, str):
        return None  # a comment or processing instruction left in
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("XML answer too large")
    if not budget[0] & (CHECK_EVERY - 1):
        deadline.check()
    name = el.tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1]
    attributes = (
        {str(k).rsplit("}", 1)[-1]: str(v) for k, v in el.attrib.items()} if el.attrib else {}
    )
    node = Node(name, attributes, el)
    for child in el:
        found = _node(child, budget, deadline)
        if found is not None:
            node.children.append(found)
    return node


# --- names -------------------------------------------------------------------------------


def _squash(name: str) -> str:
    return fold_member(name).replace(" ", "")


def object_nodes(schema: Any, root: Any) -> list[dict[str, Any]]:
    """Object alternatives that name their keys (properties, or a map's value schema)."""
    return [
        a
        for a in shape.alternatives(schema, root)
        if "object" in shape.types(a) and (shape.properties(a, root) or _map_values(a) is not None)
    ]


def _map_values(node: dict[str, Any]) -> Any:
    extra = node.get("additionalProperties")
    if "properties" in node or not isinstance(extra, dict) or not extra:
        return None
    return extra


def _array_nodes(schema: Any, root: Any) -> list[dict[str, Any]]:
    return [a for a in shape.alternatives(schema, root) if "array" in shape.types(a)]


_MAP_KEY = re.compile(r"\w[\w .\-/]{0,59}")


def known(node: dict[str, Any], root: Any, name: str) -> tuple[str, Any] | None:
    """The declared property an element's name stands for: by name (exact, then folded),
    by its ``title``, or a singular name for an array property (``<tag>`` for ``tags``)."""
    values = _map_values(node)
    if values is not None:
        return (name, values) if _MAP_KEY.fullmatch(name) else None
    found = shape.property_schema(node, root, name)
    if found is not None:
        return found
    squashed = _squash(name)
    props = shape.properties(node, root)
    by_title = [
        (k, v)
        for k, v in props.items()
        if isinstance(v, dict)
        and isinstance(v.get("title"), str)
        and squashed
        and (_squash(v["title"]) == squashed or _squash(k) == squashed)
    ]
    if len(by_title) == 1:
        return by_title[0]
    if not name.endswith("s"):
        plural = known(node, root, name + "s") if props else None
        if plural is not None and shape.wants(plural[1], root, "array"):
            return plural
    return None


# --- values ------------------------------------------------------------------------------


def node_value(node: Node, schema: Any, root: Any, deadline: Deadline = NEVER) -> Any:
    """The value an element stands for under ``schema``."""
    deadline.check()
    if node.children or node.attributes:
        for alt in object_nodes(schema, root):
            obj = _object(node, alt, root, deadline)
            if obj:
                return obj
    if node.children:
        for alt in _array_nodes(schema, root):
            item = shape.items(alt)
            return [node_value(c, item, root, deadline) for c in node.children]
        if not (shape.wants(schema, root, "object") or shape.wants(schema, root, "array")):
            return node.text.strip()
    text = node.text
    if not text.strip() and len(node.attributes) == 1:
        text = next(iter(node.attributes.values()))  # <tag name="a"/>: its one attribute
    return text_value(text, schema, root, deadline)


def _object(node: Node, alt: dict[str, Any], root: Any, deadline: Deadline) -> dict[str, Any]:
    """The object ``node``'s children (and attributes) make under the object schema ``alt``."""
    entries = _map_entries(node, alt, root, deadline)
    if entries is not None:
        return entries
    obj = _children_object(node.children, alt, root, deadline)
    for key, raw in node.attributes.items():
        found = known(alt, root, key)
        if found is not None and found[0] not in obj:
            obj[found[0]] = text_value(raw, found[1], root, deadline)
    return obj


def _map_entries(
    node: Node, alt: dict[str, Any], root: Any, deadline: Deadline
) -> dict[str, Any] | None:
    """``<entry><key>k</key><value>v</value></entry>`` children, for a map (``None`` when
    the children are not such entries)."""
    values = _map_values(alt)
    if values is None or not node.children:
        return None
    out: dict[str, Any] = {}
    for child in node.children:
        deadline.check()
        parts = {c.name.casefold(): c for c in child.children}
        key_node = parts.get("key") or parts.get("name")
        value_node = parts.get("value")
        key = child.attributes.get("key") or child.attributes.get("name")
        if key_node is not None and value_node is not None and len(parts) == 2:
            out[key_node.text.strip()] = node_value(value_node, values, root, deadline)
        elif key is not None and not child.children:
            out[key] = text_value(child.text, values, root, deadline)
        else:
            return None
    return out


def _children_object(
    children: list[Node], alt: dict[str, Any], root: Any, deadline: Deadline
) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for child in children:
        deadline.check()
        found = known(alt, root, child.name)
        if found is None:
            continue
        name, prop = found
        if child.cut and not shape.wants(prop, root, "string"):
            continue  # "<age>3" at the end of a cut-off answer may have been 36
        if shape.wants(prop, root, "array") and not shape.wants(prop, root, "object"):
            arrays = _array_nodes(prop, root)
            item = shape.items(arrays[0]) if arrays else {}
            if not child.children and not child.text.strip():
                value = []  # <tags/>: an empty list
            elif not child.children:
                # JSON or a list written inside the element, or one of repeated elements.
                value = text_value(child.text, prop, root, deadline)
            elif _is_item(child, item, root):
                value = [node_value(child, item, root, deadline)]  # <person> repeated
            else:
                value = node_value(child, prop, root, deadline)  # <people><person>…
            items = obj.setdefault(name, [])
            if isinstance(items, list):
                items.extend(value if isinstance(value, list) else [value])
            continue
        obj[name] = node_value(child, prop, root, deadline)
    return obj


def _is_item(node: Node, item: Any, root: Any) -> bool:
    """Whether ``node``'s children name the properties of an object item (so it is one)."""
    return any(
        known(alt, root, c.name) is not None
        for alt in object_nodes(item, root)
        if shape.properties(alt, root)
        for c in node.children[:8]
    )


def _titled(node: Node, schema: Any, root: Any) -> bool:
    """Whether ``node`` is named by the schema's own title (``<Person>`` for "Person")."""
    squashed = _squash(node.name)
    return any(
        isinstance(alt.get("title"), str) and _squash(alt["title"]) == squashed
        for alt in shape.alternatives(schema, root)
    )


def tree_value(
    top: list[Node], schema: Any, root: Any, deadline: Deadline, depth: int = 0
) -> tuple[Any, list[Node]] | None:
    """The value the top-level elements stand for, and the elements it was read from."""
    objects, arrays = object_nodes(schema, root), _array_nodes(schema, root)
    titled = [n for n in top if _titled(n, schema, root)]
    for alt in objects:
        # An element whose children name properties: <Person><name>…</name></Person>
        # (one named by the schema's title first).
        for node in titled + [n for n in top if n not in titled]:
            if node.children or node.attributes:
                if known(alt, root, node.name) is not None and not titled and len(top) > 1:
                    continue  # a property among siblings, not the object itself
                obj = _object(node, alt, root, deadline)
                if obj:
                    return obj, [node]
        # Sibling elements that name properties: <answer>…</answer><explanation>…</explanation>.
        obj = _children_object(top, alt, root, deadline)
        if obj:
            return obj, [n for n in top if known(alt, root, n.name) is not None]
    for alt in arrays:
        item = shape.items(alt)
        if len(top) > 1 and len({n.name for n in top}) == 1:
            return [node_value(n, item, root, deadline) for n in top], top
        for node in top:
            if node.children:
                return [node_value(c, item, root, deadline) for c in node.children], [node]
    if depth < 2:
        for node in top:
            if node.name.casefold() in _WRAPPERS and node.children:
                found = tree_value(node.children, schema, root, deadline, depth + 1)
                if found is not None:
                    return found[0], [node]
    return None


def read_xml(
    text: str, base: int, schema: Any, root: Any, deadline: Deadline = NEVER
) -> Reading | None:
    """The value the XML elements of ``text`` stand for under ``schema``."""
    if "<" not in text or len(text) > _MAX_XML_TEXT:
        return None
    if not object_nodes(schema, root) and not _array_nodes(schema, root):
        return None
    try:
        parsed = parse_tree(text, deadline)
        if parsed is None or not parsed[0]:
            return None
        top, start, end, cut = parsed
        found = tree_value(top, schema, root, deadline)
    except (ValueError, RecursionError):
        return None
    if found is None:
        return None
    value, used = found
    if cut and not _has_text(used):
        return None  # "<foo></foo": nothing was said before the XML broke off
    outside = text[:start] + "\n" + text[end:]
    whole = len(outside) <= _MAX_OUTSIDE and not _FENCE_EDGE.sub(
        "", _PROLOGUE.sub("", outside).strip()
    ).strip(" \t\n`~")
    names = ", ".join(f"<{n.name}>" for n in used[:3]) + (" …" if len(used) > 3 else "")
    message = f"read the XML element(s) {names} into the schema's shape"
    if cut:
        message += " (the XML was cut off or malformed: its open elements were closed)"
    return Reading(
        value,
        "guided.xml",
        Span(base + start, base + end),
        Risk.SAFE if whole and not cut else Risk.GUESS,
        message,
    )


def _has_text(nodes: list[Node]) -> bool:
    return any(n.text.strip() or n.attributes for n in nodes)
