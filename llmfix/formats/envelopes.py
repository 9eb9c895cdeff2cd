"""XML envelopes: tags a model wraps its answer (or its reasoning) in.

Models put the value meant inside ``<json>``, ``<output>``, ``<answer>``, ``<tool_call>``,
``<result>`` or ``<response>`` (:data:`ENVELOPE_TAGS`), and set their reasoning apart in
``<thinking>``, ``<think>``, ``<reasoning>`` or ``<scratchpad>`` (:data:`REASONING_TAGS`).
Tags are matched in any case, with attributes and a namespace prefix (``<ns:answer>``).

Public API, used by extraction, normalization and the balanced scan of prose:

- :data:`ENVELOPE_TAGS`, :data:`REASONING_TAGS`, :data:`MARKUP_TAGS` (every tag that
  cannot be part of a JSON value: the envelopes, reasoning tags, ``<function_calls>``,
  ``<invoke>`` and ``<parameter>``);
- :func:`open_tag` — the markup tag opened at a position, with its name;
- :func:`reasoning_tag` / :func:`reasoning_close` — the reasoning tags, as normalization
  finds them; :func:`drop_reasoning_tags` — a reasoning block's text without its tags;
- :func:`close_pattern` — the closing tag of an envelope, to search for with
  :class:`~llmfix.formats.ForwardSearch` (which keeps repeated searches linear).
"""

from __future__ import annotations

import re

__all__ = [
    "ENVELOPE_TAGS",
    "MARKUP_TAGS",
    "REASONING_TAGS",
    "close_pattern",
    "drop_reasoning_tags",
    "open_tag",
    "reasoning_close",
    "reasoning_tag",
]

ENVELOPE_TAGS = ("json", "output", "answer", "tool_call", "result", "response")
REASONING_TAGS = ("thinking", "think", "reasoning", "scratchpad")
MARKUP_TAGS = (*ENVELOPE_TAGS, *REASONING_TAGS, "function_calls", "invoke", "parameter")

_OPEN_TAG = re.compile(
    r"<(?:[\w-]+:)?(" + "|".join(MARKUP_TAGS) + r")(?=[\s/>])[^<>]{0,1000}>",
    re.IGNORECASE,
)
_CLOSE_TAG = {
    name: re.compile(rf"</(?:[\w-]+:)?{name}\s*>", re.IGNORECASE) for name in ENVELOPE_TAGS
}
_REASONING_TAG = re.compile(
    r"<(/?)(" + "|".join(REASONING_TAGS) + r")(?:\s[^<>]{0,500})?>", re.IGNORECASE
)
_ANY_REASONING_TAG = re.compile(
    r"</?(?:" + "|".join(REASONING_TAGS) + r")(?:\s[^<>]*)?>", re.IGNORECASE
)
_REASONING_CLOSE = {name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in REASONING_TAGS}


def open_tag(text: str, pos: int, limit: int) -> re.Match[str] | None:
    """The markup tag that opens at ``pos`` (ending by ``limit``); group 1 is its name as
    written (compare ``.lower()`` with the tag lists). A self-closing tag ends in ``/>``."""
    return _OPEN_TAG.match(text, pos, limit)


def reasoning_tag(text: str, pos: int) -> re.Match[str] | None:
    """The first reasoning tag at or after ``pos``: group 1 is ``/`` for a closing tag,
    group 2 the tag name as written."""
    return _REASONING_TAG.search(text, pos)


def drop_reasoning_tags(text: str) -> str:
    """``text`` without its reasoning tags (opening or closing; what they held stays)."""
    return _ANY_REASONING_TAG.sub("", text)


def reasoning_close(name: str, text: str, pos: int) -> re.Match[str] | None:
    """The first ``</name>`` (a reasoning tag, lower case) at or after ``pos``."""
    return _REASONING_CLOSE[name].search(text, pos)


def close_pattern(name: str) -> re.Pattern[str]:
    """The closing tag ``</name>`` with any prefix, for :class:`~llmfix.formats.ForwardSearch`
    (``name`` is one of :data:`ENVELOPE_TAGS`)."""
    return _CLOSE_TAG[name]
