"""Formats written as XML-like tags, whose argument values are text typed by the tool's schema.

- ``anthropic-xml`` — ``<function_calls><invoke name="N"><parameter name="k">v</parameter>
  </invoke></function_calls>`` (any namespace prefix; a bare ``<invoke>`` too).
- ``deepseek-dsml`` — DeepSeek V3.2/V4: the same with ``｜DSML｜`` tags and
  ``string="true|false"`` on each parameter; ``step3`` — the same with ``steptml:`` tags.
- ``minimax-m2`` — ``<minimax:tool_call><invoke name="N"><parameter name="k">…``.
- ``hermes`` — ``<tool_call>{"name": …, "arguments": …}</tool_call>`` (Hermes, Qwen 2.5/3,
  ERNIE, Granite 4; also a JSON list inside).
- ``qwen3-xml`` — ``<tool_call><function=N><parameter=k>v</parameter></function></tool_call>``
  (Qwen3-Coder, Step-3.5, Seed-OSS's ``<seed:tool_call>``; also a bare ``<function=N>``).
- ``glm`` — ``<tool_call>N<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>`` (GLM 4.5+,
  Poolside); ``hunyuan`` — ``<tool_calls><tool_call>N<tool_sep><arg_key>…`` (Hunyuan V3).
- ``jamba`` — ``<tool_calls>[{...}]</tool_calls>`` (Jamba, Hunyuan-A13B, MiniMax-M1's one
  object per line).
- ``minicpm5`` — ``<function name="N"><param name="k">v</param></function>`` (byte-level
  ``Ġ`` artifacts tolerated, CDATA unwrapped).
- ``minimax-m3`` — ``]<]minimax[>[``-delimited nested tags, read into nested JSON.

Values are typed by the registry's schema for that argument (see
:func:`~llmfix.toolcalls.values.typed_value`); a format's own newline around values is dropped.
"""

from __future__ import annotations

import re
from typing import Any

from llmfix import codes
from llmfix.formats import invoke, strip_span
from llmfix.formats.invoke import trim_newline
from llmfix.model import Diagnostic
from llmfix.toolcalls.base import (
    NAME_RE,
    Call,
    Hit,
    Scan,
    calls_from_values,
    json_values,
    marker_after_json,
    strict_end,
)
from llmfix.toolcalls.pythonic import parse_pythonic
from llmfix.toolcalls.values import (
    ArgumentsBuilder,
    schema_types,
    typed_value,
    unwrap_cdata,
)

# ------------------------------------------------------------------------- <invoke> blocks
# (read by llmfix.formats.invoke; typed here by the tool's schema)


def parse_invokes(
    scan: Scan,
    start: int,
    end: int,
    fmt: str,
    *,
    bounded: bool,
    close: re.Pattern[str] | None = None,
) -> tuple[list[Call], list[Diagnostic]]:
    """Every ``<invoke>`` between ``start`` and ``end``; with ``close`` (the wrapper's
    closing tag), only those before the first ``close`` that is not inside a value."""
    return _invokes(scan, start, end, fmt, bounded=bounded, close=close)[:2]


def _invokes(
    scan: Scan,
    start: int,
    end: int,
    fmt: str,
    *,
    bounded: bool,
    close: re.Pattern[str] | None = None,
) -> tuple[list[Call], list[Diagnostic], re.Match[str] | None]:
    """:func:`parse_invokes`, and the wrapper's closing tag (``None`` when not found)."""
    text = scan.text
    calls: list[Call] = []
    notes: list[Diagnostic] = []
    pos = start
    closed: re.Match[str] | None = None
    while pos < end:
        closed = scan.find(close, pos, end) if close is not None else None
        limit = closed.start() if closed else end
        m = invoke.find_opening(text, pos, limit)
        if m is None:
            break
        scan.deadline.check()
        # Values may hold the wrapper's closing tag as text: the block is read past it,
        # unless it is never closed (then the wrapper's tag ends it, as before).
        block = invoke.read(scan, m, end)
        if not block.closed and limit < end:
            block = invoke.read(scan, m, limit)
        pos = block.end
        closed = None
        if not block.name:
            notes.append(_malformed(scan, fmt, "an <invoke> without a name", m.start(), pos))
            continue
        builder = ArgumentsBuilder(scan, block.name)
        dsml = "dsml" in block.prefix.lower()
        for p in block.parameters:
            if p.name is None:
                builder.notes.append(
                    scan.note(
                        codes.TOOLS_MALFORMED_ARGUMENT,
                        "a <parameter> without a name; it was left out",
                        p.start,
                        p.end,
                    )
                )
                continue
            raw = p.raw if dsml else trim_newline(p.raw)
            builder.add(p.name, raw, p.start, p.end, as_string=p.string)
        arguments, call_notes = builder.finish(m.start(), block.end)
        call = Call(
            block.name,
            arguments,
            m.start(),
            block.end,
            fmt,
            complete=block.closed or bounded,
        )
        call.notes.extend(call_notes)
        calls.append(call)
    if close is not None and closed is None:
        closed = scan.find(close, pos, end)
    return calls, notes, closed


def _malformed(scan: Scan, fmt: str, what: str, start: int, end: int) -> Diagnostic:
    return scan.note(codes.TOOLS_MALFORMED_CALL, f"{fmt}: {what}", start, end)


_FUNCTION_CALLS_CLOSE = re.compile(r"</(?:[\w-]+:)?function_calls\s*>")
_HAS_INVOKE = re.compile(r"<(?:(?:[\w-]+:)?|[|｜]DSML[|｜] ?)invoke\b", re.IGNORECASE)


def read_function_calls(scan: Scan, m: re.Match[str]) -> Hit:
    """``<function_calls>``: Anthropic-style invokes, or OLMo 3's pythonic calls."""
    text = scan.text
    close = scan.find(_FUNCTION_CALLS_CLOSE, m.end())
    end = close.start() if close else len(text)
    hit_end = close.end() if close else end
    if _HAS_INVOKE.search(text, m.end(), end):
        calls, notes, found = _invokes(
            scan, m.end(), len(text), "anthropic-xml", bounded=False, close=_FUNCTION_CALLS_CLOSE
        )
        if found is not None:
            for call in calls:
                call.complete = True
        return Hit("anthropic-xml", m.start(), found.end() if found else end, calls, notes)

    calls, notes = parse_pythonic(scan, m.end(), end, "olmo3", bounded=close is not None)
    return Hit("olmo3", m.start(), hit_end, calls, notes)


def read_invoke(scan: Scan, m: re.Match[str]) -> Hit:
    """A bare ``<invoke>`` (no ``<function_calls>`` around it): this one invoke only."""
    opened = invoke.opening(scan.text, m.start())
    if opened is None:
        # Not an invoke tag after all (``<invoke name=`` with no ``>``). Searching on for a
        # later one would repeat, for every such fragment, a scan to the end of the text.
        return Hit("anthropic-xml", m.start(), m.end(), [], [])
    prefix = opened.group(1).lower()
    fmt = (
        "deepseek-dsml"
        if "dsml" in prefix
        else "step3"
        if prefix == "steptml:"
        else "anthropic-xml"
    )
    end = invoke.read(scan, opened, len(scan.text)).end
    calls, notes = parse_invokes(scan, m.start(), end, fmt, bounded=False)
    return Hit(fmt, m.start(), calls[0].end if calls else m.end(), calls[:1], notes)


def read_wrapped_invokes(scan: Scan, m: re.Match[str], close: re.Pattern[str], family: str) -> Hit:
    """``<wrapper><invoke …>…</invoke></wrapper>`` (DSML, MiniMax-M2)."""
    calls, notes, found = _invokes(
        scan, m.end(), len(scan.text), family, bounded=False, close=close
    )
    end = found.end() if found else (calls[-1].end if calls else len(scan.text))
    return Hit(family, m.start(), end, calls, notes)


# ----------------------------------------------------------------------- <tool_call> tags

_TOOL_CALL_EDGE = {
    "": re.compile(r"</?tool_call\s*>"),
    "seed:": re.compile(r"</?seed:tool_call\s*>"),
}
_FUNCTION_OPEN = re.compile(r"<function=([^>\n]{0,200})>")
_FUNCTION_CLOSE = re.compile(r"</function\s*>")
_QWEN_PARAM = re.compile(r"<parameter=([^>\n]{0,200})>")
_QWEN_PARAM_END = re.compile(r"</parameter\s*>|<parameter=|</function\s*>")
_ARG_KEY = re.compile(r"<arg_key>([^<]{0,200})</arg_key>\s*<arg_value>")
_ARG_VALUE_END = re.compile(r"</arg_value>")
# What may follow an argument value's closing tag: a value holding "</arg_value>" as text
# runs on to a closing tag that one of these follows.
_ARG_VALUE_FOLLOWS = re.compile(r"\s*(?:<arg_key>|</tool_call\s*>|<tool_call\s*>|\Z)")
_TOOL_SEP = re.compile(r"<tool_sep>")
_GLM_HEAD = re.compile(r"\s*([^\s<]{1,200})\s*(?:<tool_sep>\s*)?")


def read_tool_call(scan: Scan, m: re.Match[str]) -> Hit:
    """``<tool_call>``: JSON inside (hermes), ``<function=…>`` (qwen3-xml), or a name followed
    by ``<arg_key>`` pairs (glm; hunyuan with ``<tool_sep>``).

    The closing tag is looked for after the call's own structure (its JSON value, its last
    parameter or argument): ``</tool_call>`` written inside a value does not end the call.
    """
    text = scan.text
    prefix = "seed:" if m.group().startswith("<seed:") else ""
    edge = scan.find(_TOOL_CALL_EDGE[prefix], structure_end(scan, m.end()))
    closed = edge is not None and edge.group().startswith("</")
    end = edge.start() if edge else len(text)
    hit_end = edge.end() if closed and edge else end
    hit, _ = tool_call_body(scan, m.start(), m.end(), end, closed)
    hit.end = max(hit.end, hit_end) if hit.calls or closed else hit.end
    return hit


def structure_end(scan: Scan, start: int) -> int:
    """Where the call written from ``start`` ends by its own structure (a strict JSON value,
    qwen3-xml functions, GLM argument pairs); ``start`` when it has none that can be read.
    Markers written inside its values lie before this point."""
    text = scan.text
    s = _SPACE.match(text, start).end()  # type: ignore[union-attr]
    if s < len(text) and text[s] in "{[":
        stop = strict_end(scan, s)
        return stop if stop > 0 else start
    if text.startswith("<function=", s):
        calls, _ = parse_qwen_functions(scan, s, len(text), bounded=False, adjacent=True)
        return calls[-1].end if calls else start
    head = _GLM_HEAD.match(text, s)
    if head is not None and _ARG_KEY.match(text, head.end()):
        return _glm_pairs_end(text, head.end(), len(text))
    return start


_SPACE = re.compile(r"\s*")


def tool_call_body(
    scan: Scan, start: int, body_start: int, end: int, closed: bool
) -> tuple[Hit, str]:
    text = scan.text
    s, e = strip_span(text, body_start, end)
    if s < e and text[s] in "{[":
        values, stop = json_values(scan, s, e)
        calls, notes = calls_from_values(scan, values, "hermes", bounded=closed)
        hit = Hit("hermes", start, end if closed else max(stop, body_start), calls, notes)
        if not values:
            hit.notes.append(
                _malformed(scan, "hermes", "<tool_call> does not hold a JSON call", start, end)
            )
        return hit, "hermes"
    if text.startswith("<function=", s):
        calls, notes = parse_qwen_functions(scan, s, e, closed)
        return Hit("qwen3-xml", start, end, calls, notes), "qwen3-xml"
    head = _GLM_HEAD.match(text, s, e) if s < e else None
    if (
        head is None
        or NAME_RE.fullmatch(head.group(1)) is None
        or (head.end() < e and text[head.end()] != "<")  # a name followed by prose
    ):
        hit = Hit("hermes", start, end if closed else body_start)
        hit.notes.append(_malformed(scan, "tool_call", "<tool_call> holds no call", start, end))
        return hit, "hermes"
    fmt = "hunyuan" if "<tool_sep>" in head.group() else "glm"
    call = _glm_call(scan, head.group(1), start, head.end(), e, closed, fmt)
    return Hit(fmt, start, end, [call]), fmt


def _glm_call(
    scan: Scan, name: str, start: int, pos: int, end: int, closed: bool, fmt: str
) -> Call:
    text = scan.text
    builder = ArgumentsBuilder(scan, name)
    complete = closed
    while True:
        key = _ARG_KEY.search(text, pos, end)
        if key is None:
            break
        stop = _arg_value_end(text, key.end(), end)
        value_end = stop.start() if stop else end
        builder.add(
            key.group(1).strip(), unwrap_cdata(text[key.end() : value_end]), key.start(), value_end
        )
        if stop is None:
            break
        pos = stop.end()
    arguments, notes = builder.finish(start, end)
    call = Call(name, arguments, start, end, fmt, complete=complete)
    call.notes.extend(notes)
    return call


def _arg_value_end(text: str, start: int, end: int) -> re.Match[str] | None:
    """The ``</arg_value>`` that ends the value starting at ``start``: the last one before
    the next ``<arg_key>`` that the call's structure can follow, else the first."""
    first = stop = _ARG_VALUE_END.search(text, start, end)
    bound = text.find("<arg_key>", start, end)
    bound = end if bound == -1 else bound
    found = None
    while stop is not None and stop.start() < bound:
        if _ARG_VALUE_FOLLOWS.match(text, stop.end(), end):
            found = stop
        stop = _ARG_VALUE_END.search(text, stop.end(), end)
    return found or first


def _glm_pairs_end(text: str, pos: int, end: int) -> int:
    """Where the ``<arg_key>…<arg_value>…</arg_value>`` pairs from ``pos`` end."""
    while True:
        key = _ARG_KEY.match(text, _SPACE.match(text, pos, end).end(), end)  # type: ignore[union-attr]
        if key is None:
            return pos
        stop = _arg_value_end(text, key.end(), end)
        if stop is None:
            return end
        pos = stop.end()


_QWEN_STOP = re.compile(r"(</parameter\s*>)|(</function\s*>)|<parameter=")
_PARAM_FOLLOWS = re.compile(r"\s*(?:<parameter=|</function\s*>|</tool_call\s*>|\Z)")
_FUNCTION_FOLLOWS = re.compile(r"\s*(?:</tool_call\s*>|<function=|<tool_call\s*>|\Z)")


def _qwen_value_end(text: str, start: int, end: int) -> re.Match[str] | None:
    """What ends the value starting at ``start``: the last ``</parameter>`` before the next
    ``<parameter=`` that the call's structure can follow (those written inside the value
    come before it); failing that, the first such ``</function>`` (the parameter's closing
    tag left out), or the next ``<parameter=``; else the first of them."""
    first = stop = _QWEN_STOP.search(text, start, end)
    function: re.Match[str] | None = None
    found: re.Match[str] | None = None
    while stop is not None:
        if stop.group(1):
            if _PARAM_FOLLOWS.match(text, stop.end(), end):
                found = stop
        elif stop.group(2):
            if function is None and _FUNCTION_FOLLOWS.match(text, stop.end(), end):
                function = stop
        else:
            return found or function or stop
        stop = _QWEN_STOP.search(text, stop.end(), end)
    return found or function or first


def parse_qwen_functions(
    scan: Scan, start: int, end: int, bounded: bool, *, adjacent: bool = False
) -> tuple[list[Call], list[Diagnostic]]:
    """``<function=NAME><parameter=k>\\nv\\n</parameter></function>`` (several allowed).

    Each value ends at the closing tag the structure can follow (see
    :func:`_qwen_value_end`), so closing tags written inside a value stay in it; a function
    ends at the ``</function>`` after its last value. ``adjacent``: a later function counts
    only when it follows the one before with nothing but whitespace between."""
    text = scan.text
    calls: list[Call] = []
    notes: list[Diagnostic] = []
    pos = start
    while True:
        f = _FUNCTION_OPEN.search(text, pos, end)
        if f is None:
            stray = text.find("<function=", pos, end)
            if stray != -1:
                notes.append(
                    _malformed(
                        scan,
                        "qwen3-xml",
                        "a <function= tag that is never closed by '>'",
                        stray,
                        end,
                    )
                )
            break
        scan.deadline.check()
        name = f.group(1).strip()
        builder = ArgumentsBuilder(scan, name)
        p_pos = f.end()
        close: re.Match[str] | None = None
        while True:
            next_close = scan.find(_FUNCTION_CLOSE, p_pos, end)
            p = _QWEN_PARAM.search(text, p_pos, next_close.start() if next_close else end)
            if p is None:
                close = next_close
                break
            stop = _qwen_value_end(text, p.end(), end)
            value_end = stop.start() if stop else end
            builder.add(
                p.group(1).strip(), trim_newline(text[p.end() : value_end]), p.start(), value_end
            )
            if stop is None:
                break
            if stop.group(2):  # </function> right after the value
                close = stop
                break
            p_pos = stop.end() if stop.group(1) else value_end
        call_end = close.end() if close else end
        if NAME_RE.fullmatch(name) is None:
            notes.append(
                _malformed(
                    scan, "qwen3-xml", f"an invalid function name {name!r}", f.start(), call_end
                )
            )
            pos = call_end
            continue
        arguments, call_notes = builder.finish(f.start(), call_end)
        call = Call(
            name, arguments, f.start(), call_end, "qwen3-xml", complete=close is not None or bounded
        )
        call.notes.extend(call_notes)
        calls.append(call)
        pos = call_end
        if close is None:
            break
        if adjacent:
            pos = _SPACE.match(text, pos, end).end()  # type: ignore[union-attr]
            if not text.startswith("<function=", pos):
                break
    return calls, notes


def read_function_tag(scan: Scan, m: re.Match[str]) -> Hit:
    """A bare ``<function=NAME>…</function>`` (Qwen3-Coder without ``<tool_call>``)."""
    calls, notes = parse_qwen_functions(
        scan, m.start(), len(scan.text), bounded=False, adjacent=True
    )
    end = calls[-1].end if calls else len(scan.text)
    stray = _STRAY_CLOSE.match(scan.text, end)  # "</tool_call>" with no opening tag
    return Hit("qwen3-xml", m.start(), stray.end() if stray else end, calls, notes)


_STRAY_CLOSE = re.compile(r"\s*</tool_call\s*>")


_TOOL_CALLS_CLOSE = re.compile(r"</tool_calls\s*>")
_INNER_TOOL_CALL = re.compile(r"<tool_call\s*>")


def read_tool_calls(scan: Scan, m: re.Match[str]) -> Hit:
    """``<tool_calls>``: a JSON list or JSON lines (jamba, MiniMax-M1, Hunyuan-A13B), or
    ``<tool_call>`` elements (hunyuan)."""
    text = scan.text
    close = marker_after_json(
        scan, m.end(), scan.find(_TOOL_CALLS_CLOSE, m.end()), _TOOL_CALLS_CLOSE
    )
    end = close.start() if close else len(text)
    hit_end = close.end() if close else end
    s, e = strip_span(text, m.end(), end)
    if text.startswith("<tool_call", s):
        hit = Hit("hunyuan", m.start(), hit_end)
        pos = s
        while True:
            inner = _INNER_TOOL_CALL.search(text, pos, e)
            if inner is None:
                break
            edge = _TOOL_CALL_EDGE[""].search(text, structure_end(scan, inner.end()), e)
            inner_closed = edge is not None and edge.group().startswith("</")
            inner_end = edge.start() if edge else e
            sub, _ = tool_call_body(scan, inner.start(), inner.end(), inner_end, inner_closed)
            hit.calls.extend(sub.calls)
            hit.notes.extend(sub.notes)
            pos = edge.end() if inner_closed and edge else inner_end
            if pos <= inner.start():
                break
        return hit
    values, stop = json_values(scan, s, e)
    calls, notes = calls_from_values(scan, values, "jamba", bounded=close is not None)
    hit = Hit("jamba", m.start(), hit_end if close else max(stop, m.end()), calls, notes)
    if not values:
        hit.notes.append(
            _malformed(scan, "jamba", "<tool_calls> holds no JSON call", m.start(), hit.end)
        )
    return hit


# ------------------------------------------------------------------------------- MiniCPM 5

_MINICPM_PARAM = re.compile(r"<param(?:[\sĠ]*name\s*=\s*\"([^\"]*)\")?[\sĠ]*>")
_MINICPM_PARAM_END = re.compile(r"</param\s*>")
_MINICPM_NAME = re.compile(r"\"([^\"]{0,200})\"\s*>")


def read_minicpm(scan: Scan, m: re.Match[str]) -> Hit:
    """``<function name="N"><param name="k">v</param></function>``. A ``</param>`` or
    ``</function>`` written inside a value stays in it (the value ends at the last closing
    tag before the next ``<param`` that the structure can follow)."""
    text = scan.text
    first = scan.find(_FUNCTION_CLOSE, m.end())
    head = _MINICPM_NAME.match(text, m.end(), first.start() if first else len(text))
    if head is None or NAME_RE.fullmatch(head.group(1)) is None:
        end = first.end() if first else len(text)
        hit = Hit("minicpm5", m.start(), end)
        hit.notes.append(
            _malformed(scan, "minicpm5", "a <function> without a valid name", m.start(), end)
        )
        return hit
    name = head.group(1)
    builder = ArgumentsBuilder(scan, name)
    pos = head.end()
    while True:
        close = scan.find(_FUNCTION_CLOSE, pos)
        p = _MINICPM_PARAM.search(text, pos, close.start() if close else len(text))
        if p is None:
            break
        stop = _minicpm_value_end(text, p.end())
        value_end = stop.start() if stop else len(text)
        pos = stop.end() if stop else len(text)
        if p.group(1) is None:
            builder.notes.append(
                scan.note(
                    codes.TOOLS_MALFORMED_ARGUMENT,
                    "a <param> without a name; it was left out",
                    p.start(),
                    value_end,
                )
            )
            continue
        builder.add(p.group(1), unwrap_cdata(text[p.end() : value_end]), p.start(), value_end)
    close = scan.find(_FUNCTION_CLOSE, pos)
    end = close.end() if close else len(text)
    hit = Hit("minicpm5", m.start(), end)
    arguments, notes = builder.finish(m.start(), end)
    call = Call(name, arguments, m.start(), end, "minicpm5", complete=close is not None)
    call.notes.extend(notes)
    hit.calls.append(call)
    return hit


_MINICPM_FOLLOWS = re.compile(r"[\sĠ]*(?:<param(?=[\sĠn>])|</function\s*>|\Z)")
_MINICPM_NEXT = re.compile(r"<param(?=[\sĠn>])")


def _minicpm_value_end(text: str, start: int) -> re.Match[str] | None:
    first = stop = _MINICPM_PARAM_END.search(text, start)
    following = _MINICPM_NEXT.search(text, start)
    bound = following.start() if following else len(text)
    found = None
    while stop is not None and stop.start() < bound:
        if _MINICPM_FOLLOWS.match(text, stop.end()):
            found = stop
        stop = _MINICPM_PARAM_END.search(text, stop.end())
    return found or first


# ------------------------------------------------------------------------------ MiniMax M3

_M3_TOKEN = "]<]minimax[>["
_M3_END = re.compile(re.escape(_M3_TOKEN) + r"</tool_call>")
_M3_INVOKE = re.compile(r"<invoke\s+name\s*=\s*\"([^\"]*)\"\s*>")
_M3_INVOKE_END = re.compile(r"</invoke\s*>")
_XML_TAG = re.compile(r"<(/?)([A-Za-z_][\w.\-:]*)\s*>")


def read_minimax_m3(scan: Scan, m: re.Match[str]) -> Hit:
    """MiniMax-M3: ``]<]minimax[>[<tool_call>`` with each tag behind the namespace token and
    arguments as nested tags (``<item>`` children make an array, repeated tags a list)."""
    text = scan.text
    close = scan.find(_M3_END, m.end())
    end = close.start() if close else len(text)
    hit = Hit("minimax-m3", m.start(), close.end() if close else end)
    body = text[m.end() : end].replace(_M3_TOKEN, "")
    pos = 0
    while True:
        inv = _M3_INVOKE.search(body, pos)
        if inv is None:
            break
        inv_end = _M3_INVOKE_END.search(body, inv.end())
        inner = body[inv.end() : inv_end.start() if inv_end else len(body)]
        pos = inv_end.end() if inv_end else len(body)
        name = inv.group(1)
        tree, complete = _xml_tree(inner)
        schema = scan.tool_schema(name)
        arguments = _tree_value(tree, schema)
        if not isinstance(arguments, dict):
            arguments = {}
        call = Call(name, arguments, m.start(), hit.end, "minimax-m3")
        call.complete = (inv_end is not None and complete) or close is not None
        hit.calls.append(call)
    return hit


class _Element:
    __slots__ = ("children", "tag", "text")

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.children: list[_Element] = []
        self.text: list[str] = []


def _xml_tree(body: str) -> tuple[_Element, bool]:
    root = _Element("")
    stack = [root]
    pos = 0
    for tag in _XML_TAG.finditer(body):
        stack[-1].text.append(body[pos : tag.start()])
        pos = tag.end()
        if tag.group(1):
            for depth in range(len(stack) - 1, 0, -1):
                if stack[depth].tag == tag.group(2):
                    del stack[depth:]
                    break
        elif len(stack) < 64:
            element = _Element(tag.group(2))
            stack[-1].children.append(element)
            stack.append(element)
    stack[-1].text.append(body[pos:])
    return root, len(stack) == 1


def _tree_value(element: _Element, schema: Any) -> Any:
    if not element.children:
        raw = "".join(element.text)
        value, _ = typed_value(raw, schema)
        return value
    types = schema_types(schema)
    if all(c.tag == "item" for c in element.children) and (types is None or "array" in types):
        item_schema = schema.get("items") if isinstance(schema, dict) else None
        return [_tree_value(c, item_schema) for c in element.children]
    props = schema.get("properties") if isinstance(schema, dict) else None
    out: dict[str, Any] = {}
    repeated: set[str] = set()
    for child in element.children:
        sub = props.get(child.tag) if isinstance(props, dict) else None
        value = _tree_value(child, sub)
        if child.tag in repeated:
            out[child.tag].append(value)
        elif child.tag in out:
            out[child.tag] = [out[child.tag], value]
            repeated.add(child.tag)
        else:
            out[child.tag] = value
    return out
