"""Small scanners the stream reader's hot paths call: where whitespace ends, whether a JSON
error means "not yet arrived", what a string still being written holds so far."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

_WS = re.compile(r"[ \t\r\n]*")
_PARTIAL_TOKEN = re.compile(r"[ \t\r\n]*(?:[-0-9.eE+]*|[a-z]*)")
scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def incomplete(exc: json.JSONDecodeError, n: int) -> bool:
    """Whether the JSON scanner failed because the text ended, not because it is wrong."""
    if exc.msg.startswith("Unterminated string"):
        return True
    if exc.msg.startswith("Invalid \\uXXXX") and exc.pos + 6 > n:
        return True
    # A number or literal cut by the end of the text ("1.", "-", "tr") fails where it starts.
    return exc.pos >= n or (
        n - exc.pos <= 24 and _PARTIAL_TOKEN.fullmatch(exc.doc, exc.pos) is not None
    )


def skip(buf: str, i: int) -> int:
    """The offset of the first character at or after ``i`` that is not JSON whitespace."""
    return _WS.match(buf, i).end()  # type: ignore[union-attr] # matches the empty string


def match_end(pattern: re.Pattern[str], buf: str, i: int) -> int:
    return pattern.match(buf, i).end()  # type: ignore[union-attr] # matches the empty string


def requote(m: re.Match[str]) -> str:
    token = m.group()
    if token == '"':
        return '\\"'
    return "'" if token == "\\'" else token


def run_length(buf: str, j: int, c: str) -> int:
    k = j
    n = len(buf)
    while k < n and buf[k] == c:
        k += 1
    return k - j


def partial_string(buf: str, start: int) -> str:
    """What a string still being written holds so far (an escape cut in two left out)."""
    raw = buf[start:]
    for cut in range(7):
        try:
            text = scanstring(raw[: len(raw) - cut] + '"', 0, False)[0]
        except ValueError:
            continue
        if text and "\ud800" <= text[-1] <= "\udbff":
            text = text[:-1]  # half of an escaped surrogate pair: its other half decides
        return text
    return ""
