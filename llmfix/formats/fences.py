"""Markdown code fences: where one opens, where it closes, what is inside.

A fence is a run of three or more backticks or tildes with an optional info string
(``json``, ``JSON``, ``jsonc``, none, …). Two readings, one per place a fence is met:

- **In a response** (extraction, tool calls): :func:`opening` reads the opening fence — the
  whole run of its character, then the info string and a line break, or an info word
  followed directly by ``{``/``[`` (```` ```json{"a": 1}``` ````), also mid-line. A closing
  fence is a run at least as long as the opening one that starts a line or ends one
  (:class:`FenceCloser`, which finds it in linear time). :func:`inside` takes the inside
  of a fence known to surround a range; :func:`drop_empty` removes fences left empty.
- **Inside a value** (the lenient parser, which skips a stray fence as trivia): only
  backtick fences count; :func:`marker_end` is where ```` ```info ```` at a position ends,
  :func:`next_backticks` finds the next run of three or more backticks.
"""

from __future__ import annotations

import bisect
import re

from llmfix.formats import strip_span

__all__ = [
    "FenceCloser",
    "drop_empty",
    "info",
    "inside",
    "marker_end",
    "next_backticks",
    "opening",
    "run_end",
    "runs",
]

# The fence is the whole run of its character: a shorter run would let a line of "~" be
# tried once per length (quadratic time on a long line of them).
_OPEN = re.compile(r"(`{3,}(?!`)|~{3,}(?!~))(?:([^\n`]*?)[ \t]*\r?\n|([\w+.#-]*)[ \t]*(?=[{\[]))")
# A backtick fence with its info word, as the parser skips it inside a value.
_MARKER = re.compile(r"`{3,}[A-Za-z0-9_+\-.]*")
_BACKTICKS = re.compile(r"`{3,}")
# A code fence left empty (a whole line opening, a whole line closing).
_EMPTY = re.compile(r"(?m)^[ \t]*(`{3,}(?!`)|~{3,}(?!~))[^\n`]*\n\s*\1[ \t]*$")


def opening(text: str, pos: int, limit: int) -> re.Match[str] | None:
    """The fence that opens at ``pos`` (see the module docstring), if one does: group 1 is
    its run of backticks or tildes, :func:`info` its info string, ``end()`` where its
    content begins."""
    return _OPEN.match(text, pos, limit)


def info(opened: re.Match[str]) -> str:
    """The info string of a fence from :func:`opening` (``""`` when there is none)."""
    found = opened.group(2)
    return found if found is not None else opened.group(3)


def run_end(text: str, pos: int, limit: int) -> int:
    """Where the run of the character at ``pos`` ends (by ``limit``)."""
    char = text[pos]
    while pos < limit and text[pos] == char:
        pos += 1
    return pos


def runs(text: str, char: str) -> list[tuple[int, int]]:
    """Every run of three or more ``char`` in ``text``: (start, end).

    ``str.find`` of one character is a ``memchr`` that skips the rest of a long answer at
    C speed; a regex scan for ``char{3,}`` visits every character.
    """
    found = []
    find = text.find
    n = len(text)
    pos = find(char)
    while pos != -1:
        end = pos + 1
        while end < n and text[end] == char:
            end += 1
        if end - pos >= 3:
            found.append((pos, end))
        pos = find(char, end)
    return found


class FenceCloser:
    """Finds closing fences in one text, in linear time over all the searches.

    The runs of each fence character are listed once; the last answer per (character,
    width) is kept, and searches move forward, so a later search resumes where the last
    one stopped instead of searching again.
    """

    __slots__ = ("_cache", "_run_index", "_runs", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._runs: dict[str, list[tuple[int, int]]] = {}
        self._run_index: dict[str, tuple[int, int]] = {}  # char: (last start, first run after)
        self._cache: dict[tuple[str, int], tuple[int, int | None]] = {}

    def close(self, char: str, width: int, start: int, limit: int) -> tuple[int, int] | None:
        """The first fence after ``start`` that closes one of ``width`` ``char``: (its
        start, its end), or ``None`` when there is none ending by ``limit``."""
        listed = self._runs.get(char)
        if listed is None:
            listed = self._runs[char] = runs(self.text, char)
        cached = self._cache.get((char, width))
        if (
            cached is not None
            and cached[0] <= start
            and (cached[1] is None or listed[cached[1]][0] >= start)
        ):
            found = cached[1]
        else:
            found = None
            k = self._first_run(char, listed, start)
            while k < len(listed):
                if self._closes(listed[k], width):
                    found = k
                    break
                k += 1
            self._cache[(char, width)] = (start, found)
        if found is None or listed[found][1] > limit:
            return None
        return listed[found]

    def _first_run(self, char: str, listed: list[tuple[int, int]], start: int) -> int:
        """Index of the first run starting at or after ``start``."""
        last_start, k = self._run_index.get(char, (0, 0))
        if start < last_start:
            k = bisect.bisect_left(listed, start, key=lambda r: r[0])
        while k < len(listed) and listed[k][0] < start:
            k += 1
        self._run_index[char] = (start, k)
        return k

    def _closes(self, run: tuple[int, int], width: int) -> bool:
        text = self.text
        start, end = run
        if end - start < width:
            return False
        j = end
        while j < len(text) and text[j] in " \t":
            j += 1
        if j == len(text) or text[j] in "\r\n":
            return True  # ends a line
        i = start - 1
        while i >= 0 and text[i] in " \t":
            i -= 1
        # Starts a line, and is not the next fence's opening (```json).
        return (i < 0 or text[i] == "\n") and not (text[end].isalnum() or text[end] == "_")


def inside(text: str, start: int, end: int) -> tuple[int, int]:
    """The inside of a backtick fence around ``[start, end)`` (stripped of whitespace): from
    the line after the opening fence to before a closing one; the range itself when it does
    not begin with a fence."""
    start, end = strip_span(text, start, end)
    if not text.startswith("```", start):
        return start, end
    newline = text.find("\n", start, end)
    inner_start = newline + 1 if newline != -1 else start + 3
    if end - inner_start >= 3 and text.startswith("```", end - 3):
        end -= 3
    return inner_start, max(inner_start, end)


def drop_empty(text: str) -> str:
    """``text`` without the code fences that hold nothing but whitespace."""
    return _EMPTY.sub("", text)


def marker_end(text: str, pos: int, end: int) -> int:
    """Where the backtick fence and info word at ``pos`` end (``pos`` when there is none)."""
    m = _MARKER.match(text, pos, end)
    return pos if m is None else m.end()


def next_backticks(text: str, pos: int, end: int) -> tuple[int, int] | None:
    """The next run of three or more backticks in ``[pos, end)``: (start, end)."""
    m = _BACKTICKS.search(text, pos, end)
    return None if m is None else (m.start(), m.end())
