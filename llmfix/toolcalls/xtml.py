"""Kimi K3's XTML: channels and calls written with ``<|open|>``, ``<|sep|>`` and ``<|close|>``.

An assistant turn, as the K3 chat template renders it and the model writes it::

    reasoning<|close|>think<|sep|>            (thinking on: the prompt opened the channel)
    <|open|>response<|sep|>text<|close|>response<|sep|>
    <|open|>tools<|sep|>
    <|open|>call tool="get_weather" index="1"<|sep|>
    <|open|>argument key="city" type="string"<|sep|>Seoul<|close|>argument<|sep|>
    <|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>
    <|close|>call<|sep|>
    <|close|>tools<|sep|><|close|>message<|sep|>

A call's arguments are ``argument`` entries (``type="string"`` keeps the text as written,
another type reads it as JSON; without ``type`` the tool's schema or the JSON literal rules
decide) or one ``<|open|>json type="object"<|sep|>{…}<|close|>json<|sep|>`` block. Attribute
values are escaped (``&quot;``, ``&amp;``). With thinking off the turn starts at the
response channel. An argument's value ends at the ``<|close|>argument<|sep|>`` that the
call's structure can follow, so the marker written inside a value stays in it.
"""

from __future__ import annotations

import re

from llmfix.model import Span
from llmfix.toolcalls.base import (
    NAME_RE,
    Call,
    Hit,
    Scan,
    json_values,
    marker_after_json,
)
from llmfix.toolcalls.values import ArgumentsBuilder

MARKER = r"<\|open\|>(?:tools<\|sep\|>|call\s)"

_ATTRIBUTES = r"((?:\s+[\w-]+\s*=\s*\"[^\"<>]{0,500}\")*)\s*"
_TOOLS_OPEN = re.compile(r"\s*<\|open\|>tools<\|sep\|>")
_CALL_OPEN = re.compile(r"\s*<\|open\|>call" + _ATTRIBUTES + r"(?:<\|sep\|>)?")
_ARGUMENT_OPEN = re.compile(r"\s*<\|open\|>argument" + _ATTRIBUTES + r"<\|sep\|>")
_JSON_OPEN = re.compile(r"\s*<\|open\|>json" + _ATTRIBUTES + r"<\|sep\|>")
_JSON_CLOSE = re.compile(r"<\|close\|>json(?:<\|sep\|>)?")
_ARGUMENT_CLOSE = re.compile(r"<\|close\|>argument(?:<\|sep\|>)?")
_ARGUMENT_FOLLOWS = re.compile(r"\s*(?:<\|open\|>(?:argument|json)\b|<\|close\|>call\b|\Z)")
_CALL_CLOSE = re.compile(r"\s*<\|close\|>call(?:<\|sep\|>)?")
_TAIL = re.compile(r"\s*(?:<\|close\|>(?:tools|message)<\|sep\|>\s*)+")
_ATTRIBUTE = re.compile(r"([\w-]+)\s*=\s*\"([^\"]*)\"")
_ENTITIES = (("&quot;", '"'), ("&lt;", "<"), ("&gt;", ">"), ("&#39;", "'"), ("&amp;", "&"))

_THINK_CLOSE = re.compile(r"<\|close\|>think<\|sep\|>")
_THINK_OPEN = re.compile(r"<\|open\|>think<\|sep\|>")

# The channel tokens around the answer's text (not part of it).
CHANNEL_TOKENS = r"<\|(?:open|close)\|>(?:response|message|tools)(?:\s[^<>]{0,200})?<\|sep\|>"


def attributes(text: str) -> dict[str, str]:
    """The ``key="value"`` attributes of a tag, unescaped."""
    out = {}
    for m in _ATTRIBUTE.finditer(text):
        value = m.group(2)
        for entity, char in _ENTITIES:
            value = value.replace(entity, char)
        out[m.group(1)] = value
    return out


def think_spans(text: str) -> list[Span]:
    """The think channels of a K3 turn: ``<|open|>think<|sep|>…<|close|>think<|sep|>``, or
    the text before ``<|close|>think<|sep|>`` when the prompt opened the channel."""
    spans: list[Span] = []
    pos = 0
    while True:
        close = _THINK_CLOSE.search(text, pos)
        if close is None:
            return spans
        opened = _THINK_OPEN.search(text, pos, close.start())
        spans.append(Span(opened.start() if opened else pos, close.end()))
        pos = close.end()


def read_kimi_k3(scan: Scan, m: re.Match[str]) -> Hit:
    """The calls of one ``<|open|>tools<|sep|>`` section (or calls written without it)."""
    text = scan.text
    hit = Hit("kimi-k3", m.start(), m.end())
    pos = m.start()
    opened = _TOOLS_OPEN.match(text, pos)
    if opened:
        pos = opened.end()
    while True:
        head = _CALL_OPEN.match(text, pos)
        if head is None:
            break
        scan.deadline.check()
        call, pos = _read_call(scan, head)
        hit.end = pos
        if call is None:
            continue
        hit.calls.append(call)
        if not call.complete:
            break
    tail = _TAIL.match(text, pos)
    if tail:
        hit.end = tail.end()
    return hit


def _read_call(scan: Scan, head: re.Match[str]) -> tuple[Call | None, int]:
    text = scan.text
    attrs = attributes(head.group(1))
    name = attrs.get("tool") or attrs.get("name") or ""
    builder = ArgumentsBuilder(scan, name)
    pos = head.end()
    whole: object = None
    while True:
        arg = _ARGUMENT_OPEN.match(text, pos)
        if arg is not None:
            found = attributes(arg.group(1))
            key = found.get("key") or found.get("name")
            stop = _argument_end(text, arg.end())
            value_end = stop.start() if stop else len(text)
            kind = found.get("type")
            if key:
                builder.add(
                    key,
                    text[arg.end() : value_end],
                    arg.start(),
                    value_end,
                    as_string=None if kind is None else kind == "string",
                )
            pos = stop.end() if stop else value_end
            if stop is None:
                break
            continue
        block = _JSON_OPEN.match(text, pos)
        if block is not None:
            close = marker_after_json(
                scan, block.end(), scan.find(_JSON_CLOSE, block.end()), _JSON_CLOSE
            )
            end = close.start() if close else len(text)
            values, _ = json_values(scan, block.end(), end, many=False)
            if values and isinstance(values[0].value, dict):
                whole = values[0].value
            pos = close.end() if close else end
            if close is None:
                break
            continue
        break
    close = _CALL_CLOSE.match(text, pos)
    end = close.end() if close else len(text) if pos >= len(text) else pos
    if NAME_RE.fullmatch(name) is None:
        return None, max(end, head.end())
    arguments, notes = builder.finish(head.start(), end)
    if isinstance(whole, dict):
        arguments = {**whole, **arguments}
    call = Call(name, arguments, head.start(), end, "kimi-k3", complete=close is not None)
    index = attrs.get("index")
    if index is not None:
        call.id = f"{name}:{index}"
    call.notes.extend(notes)
    return call, end


def _argument_end(text: str, start: int) -> re.Match[str] | None:
    """The ``<|close|>argument<|sep|>`` that ends the value from ``start``: the last one
    before the next argument or JSON block that the call's structure can follow, else the
    first."""
    first = stop = _ARGUMENT_CLOSE.search(text, start)
    opener = _NEXT_OPEN.search(text, start)
    bound = opener.start() if opener else len(text)
    found = None
    while stop is not None and stop.start() < bound:
        if _ARGUMENT_FOLLOWS.match(text, stop.end()):
            found = stop
        stop = _ARGUMENT_CLOSE.search(text, stop.end())
    return found or first


_NEXT_OPEN = re.compile(r"<\|open\|>(?:argument|json|call)\b")
