"""How a response's text formats are read: one module per format, used by every stage.

- :mod:`llmfix.formats.fences` — Markdown code fences (```` ``` ```` and ``~~~``);
- :mod:`llmfix.formats.envelopes` — XML envelopes (``<json>``, ``<tool_call>``, …) and
  reasoning tags (``<think>``, …);
- :mod:`llmfix.formats.invoke` — ``<invoke name=…><parameter name=…>`` blocks;
- :mod:`llmfix.formats.prose` — a JSON object or array inside prose: where one plausibly
  begins and where it ends.

Extraction (:mod:`llmfix.pipeline.extract`), normalization, the lenient parser
(:mod:`llmfix.repair_parser`) and the tool-call readers (:mod:`llmfix.toolcalls`) call
these; none of them reads a fence, an envelope or an ``<invoke>`` on its own. Everything
here is pure: positions in, positions (or matches) out.
"""

from __future__ import annotations

import re

__all__ = ["ForwardSearch", "strip_span"]


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without surrounding whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class ForwardSearch:
    """Searches of one text that move forward, kept linear.

    The last answer per pattern is kept: a later search that starts before that match
    reuses it instead of searching the same stretch again (repeated searches for a closing
    tag or marker, each from a later position, cost one pass over the text in all).
    """

    __slots__ = ("_cache", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._cache: dict[re.Pattern[str], tuple[int, re.Match[str] | None]] = {}

    def find(
        self, pattern: re.Pattern[str], pos: int, limit: int | None = None
    ) -> re.Match[str] | None:
        """The first match of ``pattern`` at or after ``pos`` (``None`` unless it ends by
        ``limit``)."""
        cached = self._cache.get(pattern)
        if (
            cached is not None
            and cached[0] <= pos
            and (cached[1] is None or cached[1].start() >= pos)
        ):
            found = cached[1]
        else:
            found = pattern.search(self.text, pos)
            self._cache[pattern] = (pos, found)
        if found is None or (limit is not None and found.end() > limit):
            return None
        return found
