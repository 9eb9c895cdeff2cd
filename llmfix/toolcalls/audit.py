"""Calls left in content: an API response whose text holds tool-call markup its server missed.

Inference servers (vLLM, SGLang, llama.cpp, Ollama) parse the model's tool-call markup into
the response's ``tool_calls``; when their parser misses a format, or stops at a marker
written inside a value, the markup stays in ``content`` and ``tool_calls`` is empty or
short. :func:`audit_content` takes what the readers found in the content and compares it
with what the server returned:

- a call the content holds and the server's ``tool_calls`` lack was *left in content*
  (``tools.left_in_content``): the check moves it into the calls (``--tool-calls``);
- a call of the same tool whose arguments differ from the server's reading is a
  *server mismatch* (``tools.server_mismatch``): the server's call is kept, and both
  readings are reported;
- a call the server returned too (same name, same arguments) is markup the server left
  behind after parsing it: nothing to report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llmfix.toolcalls.base import ToolCall, ToolCallExtraction


@dataclass(frozen=True)
class Audit:
    """What the content of one response holds, against the server's calls.

    ``moved``: the content's calls the server did not return, in order; ``mismatched``:
    pairs of (index of the server's call, the content's reading of it); ``content``: the
    text without the markup; ``format``: the format the markup is written in;
    ``reasoning``: reasoning found in the content (a ``<think>`` block the server left).
    """

    moved: tuple[ToolCall, ...]
    mismatched: tuple[tuple[int, ToolCall], ...]
    content: str
    format: str | None
    reasoning: str


def audit_content(found: ToolCallExtraction, server: Sequence[tuple[str, Any]]) -> Audit | None:
    """Compare the calls read from a message's text (``found``, by
    :func:`~llmfix.toolcalls.extract_tool_calls`) with the server's ``(name, arguments)``
    calls; ``None`` when the text holds no call."""
    if not found.calls:
        return None
    unused = list(range(len(server)))
    moved: list[ToolCall] = []
    mismatched: list[tuple[int, ToolCall]] = []
    for call in found.calls:
        same = next(
            (i for i in unused if server[i][0] == call.name and _same(server[i][1], call)),
            None,
        )
        if same is not None:
            unused.remove(same)
            continue
        named = next((i for i in unused if server[i][0] == call.name), None)
        if named is not None and call.complete:
            unused.remove(named)
            mismatched.append((named, call))
            continue
        moved.append(call)
    return Audit(tuple(moved), tuple(mismatched), found.content, found.format, found.reasoning)


def _same(arguments: Any, call: ToolCall) -> bool:
    return same_json(arguments, call.arguments)


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 equals 1.0, key order does not count."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
