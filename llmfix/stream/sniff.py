"""Is a text a recorded stream (Server-Sent Events, NDJSON stream records) or an answer?

What :class:`llmfix.stream.wire.WireDecoder` asks of a stream's first bytes, and what
reading an input file asks of its text (:func:`looks_like_stream`), without the decoder.
"""

from __future__ import annotations

import json
import re
from typing import Any

_SSE_FIELDS = ("data:", "event:", "id:", "retry:", ":")  # the line kinds of an SSE stream
ANTHROPIC_TYPES = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
    }
)
# What the text of a stream record holds, written as is (a text with no backslash writes
# every string as is): one of these strings, or the "done" key of an Ollama chunk; sought
# in one pass (each begins with a quote), not one scan per mark.
_RECORD_MARKS = (
    '"chat.completion.chunk"',
    '"response.',
    '"done"',
    *sorted(f'"{kind}"' for kind in ANTHROPIC_TYPES),
)
_RECORD_MARK = re.compile('"(?:' + "|".join(re.escape(m[1:]) for m in _RECORD_MARKS) + ")")
_SNIFF_LIMIT = 4096  # a first line longer than this is not a stream record (held back no longer)


def sniff(text: str, *, final: bool) -> str | None:
    """``sse``, ``ndjson`` or ``raw`` from the start of a stream; ``None``: not sure yet.

    Server-Sent Events: the first ``data:`` line (after any ``event:``, ``id:`` or comment
    lines) holds a JSON object or ``[DONE]``. NDJSON: the first line is a streaming API's
    record. Anything else is the answer itself.
    """
    head = text.lstrip()
    pos = 0
    while True:
        end = head.find("\n", pos)
        line = head[pos:] if end < 0 else head[pos:end]
        complete = end >= 0 or final or len(head) >= _SNIFF_LIMIT
        if line.startswith("data:"):
            value = line[5:].lstrip(" ")
            if not value and not complete:
                return None
            return "sse" if value.startswith("{") or value.rstrip() == "[DONE]" else "raw"
        if line.startswith(_SSE_FIELDS) or (line == "" and pos > 0):
            if end < 0:
                return "raw" if complete else None
            pos = end + 1
            continue
        if not complete and any(f.startswith(line) for f in _SSE_FIELDS):
            return None
        break
    if not head.startswith("{"):
        return "raw"
    end = head.find("\n")
    if end < 0:
        if not final and len(head) < _SNIFF_LIMIT:
            return None
        end = len(head)
    return "ndjson" if is_stream_record(head[:end]) else "raw"


def is_stream_record(line: str) -> bool:
    """Whether one line is a record of a streaming API (a chunk or event), not an answer."""
    if not line.rstrip().endswith("}"):  # no JSON object: spare the decoder's exception
        return False
    if "\\" not in line and _RECORD_MARK.search(line) is None:
        return False  # (an answer on one line: not decoded only to be told it is one)
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return is_record(record)


def is_record(record: Any) -> bool:
    """Whether a decoded JSON value is a record of a streaming API (a chunk or event)."""
    if not isinstance(record, dict):
        return False
    kind = record.get("type")
    return (
        record.get("object") == "chat.completion.chunk"
        or (isinstance(kind, str) and kind.startswith("response."))
        or kind in ANTHROPIC_TYPES
        # An Ollama chunk; a whole (non-streamed) answer says "done": true and is no stream.
        or (record.get("done") is False and ("message" in record or "response" in record))
    )


def looks_like_stream(text: str) -> bool:
    """Whether a saved file is a recorded stream (SSE, or NDJSON stream records)."""
    return sniff(text[:_SNIFF_LIMIT], final=True) in ("sse", "ndjson")
