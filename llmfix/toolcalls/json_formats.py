"""Formats whose arguments are JSON behind a model-specific marker.

Each reader gets the match of its opening marker and returns the region it consumed. A call
whose envelope is never closed and whose JSON is cut off is incomplete; one whose JSON is
malformed inside a closed envelope is repaired (and the repair reported), not truncated.
"""

from __future__ import annotations

import re
from typing import Any

from llmfix import codes
from llmfix.formats import fences, strip_span
from llmfix.formats.prose import plausible_value
from llmfix.model import Span
from llmfix.toolcalls.base import (
    NAME_RE,
    Call,
    Hit,
    Scan,
    calls_from_values,
    json_values,
    marker_after_json,
)
from llmfix.toolcalls.pythonic import parse_pythonic
from llmfix.toolcalls.xml_formats import parse_invokes

# ------------------------------------------------------------------------ plain envelopes


def read_tagged_json(
    scan: Scan,
    m: re.Match[str],
    close: re.Pattern[str] | None,
    family: str,
    *,
    from_marker_end: int = 0,
    many: bool = True,
) -> Hit:
    """``<marker>{json}…<close>``: one or more JSON calls (objects or lists of objects).

    Without a closing marker the envelope ends where the JSON does; what follows stays
    answer text.
    """
    text = scan.text
    found = scan.find(close, m.end()) if close is not None else None
    if close is not None:
        found = marker_after_json(scan, m.end() - from_marker_end, found, close)
    end = found.start() if found else len(text)
    values, stop = json_values(scan, m.end() - from_marker_end, end, many=many)
    calls, notes = calls_from_values(scan, values, family, bounded=found is not None)
    hit_end = found.end() if found else max(stop, m.end())
    hit = Hit(family, m.start(), hit_end, calls, notes)
    if not values:
        _no_json(scan, hit, family)
    return hit


def _no_json(scan: Scan, hit: Hit, family: str) -> None:
    hit.notes.append(
        scan.note(
            codes.TOOLS_MALFORMED_CALL,
            f"a {family} tool-call marker is not followed by a JSON call",
            hit.start,
            hit.end,
        )
    )


def _apertus_calls(value: Any) -> list[Any]:
    """Apertus writes ``[{"NAME": {arguments}}, ...]``."""
    items = value if isinstance(value, list) else [value]
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict) and len(item) == 1:
            ((name, arguments),) = item.items()
            out.append({"name": name, "arguments": arguments})
        else:
            out.append(item)
    return out


def read_apertus(scan: Scan, m: re.Match[str], close: re.Pattern[str]) -> Hit:
    text = scan.text
    found = marker_after_json(scan, m.end(), scan.find(close, m.end()), close)
    end = found.start() if found else len(text)
    values, stop = json_values(scan, m.end(), end)
    calls, notes = calls_from_values(
        scan, values, "apertus", bounded=found is not None, convert=_apertus_calls
    )
    hit = Hit("apertus", m.start(), found.end() if found else max(stop, m.end()), calls, notes)
    if not values:
        _no_json(scan, hit, "apertus")
    return hit


# ------------------------------------------------------------------------------ Mistral

_MISTRAL_MARKER = re.compile(r"\[TOOL_CALLS\]")
_MISTRAL_CALL_ID = re.compile(r"\s*\[CALL_ID\]\s*([\w\-]+)")
_MISTRAL_ARGS = re.compile(r"\s*\[ARGS\]")
_JSON_OPENER = re.compile(r"[\[{]")
_SPACES = re.compile(r"\s*")
_MISTRAL_HEAD_END = re.compile(r"(?:\s*\[CALL_ID\]\s*[\w\-]+)?(?:\s*\[ARGS\])?")


def read_mistral(scan: Scan, m: re.Match[str]) -> Hit:
    """``[TOOL_CALLS][{...}]``, ``[TOOL_CALLS]name{...}``, ``[TOOL_CALLS]name[ARGS]{...}``."""
    text = scan.text
    following = scan.find(_MISTRAL_MARKER, m.end())
    following = marker_after_json(scan, m.end(), following, _MISTRAL_MARKER)
    if following is not None:  # [TOOL_CALLS]name{…}: the JSON after the name
        head = NAME_RE.match(text, _SPACES.match(text, m.end()).end())  # type: ignore[union-attr]
        if head is not None:
            head_end = _MISTRAL_HEAD_END.match(text, head.end())
            following = marker_after_json(
                scan, head_end.end() if head_end else head.end(), following, _MISTRAL_MARKER
            )
    limit = following.start() if following else len(text)
    pos, _ = strip_span(text, m.end(), limit)
    hit = Hit("mistral", m.start(), m.end())
    if pos < limit and text[pos] in "[{":
        values, stop = json_values(scan, pos, limit)
        hit.calls, hit.notes = calls_from_values(scan, values, "mistral", bounded=False)
        hit.end = max(stop, m.end())
        if not values:
            _no_json(scan, hit, "mistral")
        return hit
    name = NAME_RE.match(text, pos, limit)
    if name is not None:
        after = name.end()
        call_id = _MISTRAL_CALL_ID.match(text, after, limit)
        if call_id:
            after = call_id.end()
        marker = _MISTRAL_ARGS.match(text, after, limit)
        if marker:
            after = marker.end()
        args_at, _ = strip_span(text, after, limit)
        if args_at < limit and text[args_at] == "{":
            values, stop = json_values(scan, args_at, limit, many=False)
            if values:
                value = values[0]
                call = Call(
                    name.group(),
                    value.value,
                    m.start(),
                    stop,
                    "mistral",
                    call_id.group(1) if call_id else None,
                    value.closed,
                )
                call.notes.extend(value.notes)
                hit.calls.append(call)
                hit.end = stop
                return hit
        if args_at >= limit and following is None:
            # The text ends after the name: the arguments were cut off.
            hit.calls.append(Call(name.group(), {}, m.start(), limit, "mistral", complete=False))
            hit.end = limit
            return hit
    # Something else first ("[TOOL_CALLS] junk [{...}]"): the first JSON list or object.
    start = pos
    while True:
        opener = _JSON_OPENER.search(text, start, limit)
        if opener is None:
            break
        if opener.group() == "{" or plausible_value(text, opener.start(), limit):
            values, stop = json_values(scan, opener.start(), limit)
            calls, notes = calls_from_values(scan, values, "mistral", bounded=False)
            if calls:
                hit.calls, hit.notes, hit.end = calls, notes, stop
                return hit
            start = max(stop, opener.end())
            continue
        start = opener.end()
    _no_json(scan, hit, "mistral")
    return hit


# -------------------------------------------------------------------------------- Kimi K2

# The section markers also come singular (<|tool_call_section_begin|>); the arguments marker
# is <|tool_arguments_begin|> in the K2 technical report's template. An id that is not
# NAME:INDEX is not a call (vLLM skips it too).
_KIMI_SECTION_END = re.compile(r"<\|tool_calls?_section_end\|>")
_KIMI_CALL_BEGIN = re.compile(r"<\|tool_call_begin\|>")
_KIMI_ARGS_BEGIN = re.compile(r"<\|tool_(?:call_argument|arguments)_begin\|>")
_KIMI_CALL_END = re.compile(r"<\|tool_call_end\|>")
_KIMI_ID = re.compile(r"\s*(?:functions\.)?([A-Za-z_$][\w$.\-/]*):(\d+)\s*")


def read_kimi(scan: Scan, m: re.Match[str]) -> Hit:
    """``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
    <|tool_call_argument_begin|>{...}<|tool_call_end|>…<|tool_calls_section_end|>``."""
    text = scan.text
    section_end = scan.find(_KIMI_SECTION_END, m.end())
    limit = section_end.start() if section_end else len(text)
    hit = Hit("kimi-k2", m.start(), section_end.end() if section_end else limit)
    pos = m.start()
    while True:
        begin = scan.find(_KIMI_CALL_BEGIN, pos, limit)
        if begin is None:
            break
        call_end = scan.find(_KIMI_CALL_END, begin.end())
        args = scan.find(_KIMI_ARGS_BEGIN, begin.end(), call_end.start() if call_end else limit)
        if args is not None:
            call_end = marker_after_json(scan, args.end(), call_end, _KIMI_CALL_END)
            if call_end is not None and call_end.start() > limit:
                limit = _kimi_section_end(scan, call_end.end(), hit)
        if call_end is not None and call_end.end() > limit:
            call_end = None
        body_end = call_end.start() if call_end else limit
        pos = call_end.end() if call_end else limit
        head_end = args.start() if args else body_end
        ident = _KIMI_ID.fullmatch(text, begin.end(), head_end)
        if ident is None or args is None:
            hit.notes.append(
                scan.note(
                    codes.TOOLS_MALFORMED_CALL,
                    "a kimi-k2 call whose id is not functions.NAME:INDEX followed by arguments",
                    begin.start(),
                    pos,
                )
            )
            continue
        call_id = text[begin.end() : head_end].strip()
        json_start, json_end = fences.inside(text, args.end(), body_end)
        values, _ = json_values(scan, json_start, json_end, many=False)
        bounded = call_end is not None
        if values:
            value = values[0]
            call = Call(ident.group(1), value.value, begin.start(), pos, "kimi-k2", call_id)
            call.complete = bounded or value.closed
            call.notes.extend(value.notes)
        else:
            empty = not text[args.end() : body_end].strip()
            call = Call(ident.group(1), {}, begin.start(), pos, "kimi-k2", call_id)
            call.complete = bounded
            if not empty:
                call.notes.append(_not_json_arguments(scan, begin.start(), pos))
        hit.calls.append(call)
    return hit


def _kimi_section_end(scan: Scan, pos: int, hit: Hit) -> int:
    """The section's end after a call whose arguments held the section's end marker."""
    found = scan.find(_KIMI_SECTION_END, pos)
    hit.end = found.end() if found else len(scan.text)
    return found.start() if found else len(scan.text)


def _not_json_arguments(scan: Scan, start: int, end: int) -> Any:
    return scan.note(
        codes.TOOLS_ARGUMENTS_NOT_JSON,
        "the arguments are not a JSON object",
        start,
        end,
    )


# ---------------------------------------------------------------------------- DeepSeek V3

# "▁" is SentencePiece's space: a decoder that maps it back writes the tokens with spaces.
_DS_CALLS_END = re.compile(r"<[|｜]tool[▁_ ]calls[▁_ ]end[|｜]>")
_DS_CALL_BEGIN = re.compile(r"<[|｜]tool[▁_ ]call[▁_ ]begin[|｜]>")
_DS_CALL_END = re.compile(r"<[|｜]tool[▁_ ]call[▁_ ]end[|｜]>")
_DS_SEP = re.compile(r"<[|｜]tool[▁_ ]sep[|｜]>")
# Where a name written without a separator (or glued to its arguments) ends.
_DS_NAME_END = re.compile(r"[\n{\[`]")
_STEPTML = re.compile(r"<steptml:invoke\b")
_DS_JSON_START = re.compile(r"[{\[]")


def read_deepseek(scan: Scan, m: re.Match[str]) -> Hit:
    """DeepSeek V3/R1 (``function<｜tool▁sep｜>NAME`` + a ```json fence), V3.1
    (``NAME<｜tool▁sep｜>{...}``), and Step-3 (``<steptml:invoke>`` inside the same tokens)."""
    text = scan.text
    calls_end = scan.find(_DS_CALLS_END, m.end())
    limit = calls_end.start() if calls_end else len(text)
    hit = Hit("deepseek-v3", m.start(), calls_end.end() if calls_end else limit)
    if scan.find(_STEPTML, m.end(), limit) is not None:
        hit.family = "step3"
        hit.calls, hit.notes = parse_invokes(
            scan, m.end(), limit, "step3", bounded=calls_end is not None
        )
        return hit
    pos = m.start()
    while True:
        begin = scan.find(_DS_CALL_BEGIN, pos, limit)
        if begin is None:
            break
        call_end = scan.find(_DS_CALL_END, begin.end())
        sep = scan.find(_DS_SEP, begin.end(), call_end.start() if call_end else limit)
        json_at = _DS_JSON_START.search(
            text, sep.end() if sep else begin.end(), call_end.start() if call_end else limit
        )
        if json_at is not None:
            call_end = marker_after_json(scan, json_at.start(), call_end, _DS_CALL_END)
            if call_end is not None and call_end.start() > limit:
                found = scan.find(_DS_CALLS_END, call_end.end())
                limit = found.start() if found else len(text)
                hit.end = found.end() if found else limit
        if call_end is not None and call_end.end() > limit:
            call_end = None
        body_end = call_end.start() if call_end else limit
        pos = call_end.end() if call_end else limit
        if sep is None:  # no separator: NAME, then the arguments
            head, args_start = _ds_name(text, begin.end(), body_end)
        else:
            head = text[begin.end() : sep.start()].strip()
            args_start = sep.end()
        if head in ("function", "") and sep is not None:
            # V3: the name is on the line after the separator, then a fenced JSON block
            # (or the JSON right after the name).
            name, args_start = _ds_name(text, args_start, body_end)
        else:
            name = head
        if NAME_RE.fullmatch(name) is None:
            hit.notes.append(_malformed(scan, "deepseek-v3", begin.start(), pos))
            continue
        json_start, json_end = fences.inside(text, args_start, body_end)
        values, _ = json_values(scan, json_start, json_end, many=False)
        call = Call(name, {}, begin.start(), pos, "deepseek-v3", complete=call_end is not None)
        if values:
            call.arguments = values[0].value
            call.complete = call.complete or values[0].closed
            call.notes.extend(values[0].notes)
        elif text[json_start:json_end].strip():
            call.notes.append(_not_json_arguments(scan, begin.start(), pos))
        hit.calls.append(call)
    return hit


def _ds_name(text: str, start: int, end: int) -> tuple[str, int]:
    """A name from ``start`` up to a newline, a fence or the arguments; where it ends."""
    found = _DS_NAME_END.search(text, start, end)
    name_end = found.start() if found else end
    return text[start:name_end].strip(), name_end


def _malformed(scan: Scan, family: str, start: int, end: int) -> Any:
    return scan.note(
        codes.TOOLS_MALFORMED_CALL,
        f"a {family} call without a readable name",
        start,
        end,
    )


# --------------------------------------------------------------------------- gpt-oss harmony

_HARMONY_MESSAGE = re.compile(r"<\|message\|>")
_HARMONY_END = re.compile(r"<\|(?:end|call|return|start|channel)\|>")
_HARMONY_HEADER = re.compile(r"\s*(\w+)([^<]*(?:<\|constrain\|>[^<]*)?)")
_RECIPIENT = re.compile(r"to=([^\s<]+)")


def read_harmony(scan: Scan, m: re.Match[str]) -> Hit | None:
    """gpt-oss: ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{...}``
    then ``<|call|>``.

    The recipient may come before the channel (``to=functions.NAME<|channel|>commentary``)
    or in the header after it; a call on the ``analysis`` channel (a recipient there) is a
    call. Otherwise ``analysis`` is reasoning, and ``final`` (and commentary without a
    recipient) is answer text.
    """
    text = scan.text
    header = _HARMONY_HEADER.match(text, m.end())
    if header is None:
        return None
    message = scan.find(_HARMONY_MESSAGE, header.end())
    if message is None or message.start() != header.end():
        return None
    channel = header.group(1)
    recipient = _RECIPIENT.search(m.group()) or _RECIPIENT.search(header.group(2))
    end_marker = scan.find(_HARMONY_END, message.end())
    if recipient is not None:
        end_marker = marker_after_json(scan, message.end(), end_marker, _HARMONY_END)
    body_end = end_marker.start() if end_marker else len(text)
    consumed = (
        end_marker.end()
        if end_marker and end_marker.group() in ("<|end|>", "<|call|>", "<|return|>")
        else body_end
    )
    if recipient is not None and recipient.group(1) in ("assistant", "user"):
        recipient = None
    if channel == "analysis" and recipient is None:
        hit = Hit("harmony", m.start(), consumed)
        hit.reasoning.append(Span(message.end(), body_end))
        return hit
    if recipient is None:
        # Answer text: only the header tokens are consumed.
        return Hit("harmony", m.start(), message.end())
    name = recipient.group(1)
    if name.startswith("functions."):
        name = name[len("functions.") :]
    hit = Hit("harmony", m.start(), consumed)
    values, _ = json_values(scan, message.end(), body_end, many=False)
    call = Call(name, {}, m.start(), consumed, "harmony", complete=end_marker is not None)
    if values:
        call.arguments = values[0].value
        call.complete = call.complete or values[0].closed
        call.notes.extend(values[0].notes)
    elif text[message.end() : body_end].strip():
        call.notes.append(_not_json_arguments(scan, m.start(), consumed))
    hit.calls.append(call)
    return hit


# ------------------------------------------------------------------------- Llama 3 python_tag


def read_python_tag(scan: Scan, m: re.Match[str], close: re.Pattern[str]) -> Hit:
    """Llama 3.1: ``<|python_tag|>{"name": ..., "parameters": ...}`` (several joined by ``;``),
    or a built-in tool as code: ``<|python_tag|>brave_search.call(query="...")``."""
    text = scan.text
    found = marker_after_json(scan, m.end(), scan.find(close, m.end()), close)
    end = found.start() if found else len(text)
    values, stop = json_values(scan, m.end(), end)
    if values:
        calls, notes = calls_from_values(scan, values, "llama3", bounded=found is not None)
        return Hit("llama3", m.start(), found.end() if found else stop, calls, notes)
    if stop > m.end():
        hit = Hit("llama3", m.start(), stop)
        _no_json(scan, hit, "llama3")
        return hit

    calls, notes = parse_pythonic(scan, m.end(), end, "llama3", bounded=found is not None)
    return Hit("llama3", m.start(), found.end() if found else end, calls, notes)
