"""The lenient parser: one loop over tokens with an explicit stack of open containers.

Each frame is a small list ``[kind, container, state, key, open_pos, comma_pos, extra,
key_span, key_spans]``.
The loop looks at the next significant character and the state of the innermost frame,
consumes one token (or repairs the lack of one), and moves on; nothing recurses, so
the nesting depth is bounded by ``max_depth`` and not by Python's stack.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any, Final

from llmfix.deadline import CHECK_EVERY, Deadline
from llmfix.jsontext import (
    DuplicateKey,
    JsonNumber,
    OutOfRange,
    read_float,
    read_float_or_raise,
    unique_object,
)
from llmfix.repair_parser import _text as T
from llmfix.repair_parser._strings import (
    C_ARR,
    C_KEY,
    C_OBJ,
    C_TOP,
    GUESS,
    LOSSLESS,
    NOTE,
    NOTHING,
    SAFE,
    ParseFailure,
    SpannedMessage,
    StringScanner,
)

_CHECK_MASK: Final = CHECK_EVERY - 1  # the main loop checks its deadline this often

# Frame kinds.
K_TOP: Final = 0
K_ARR: Final = 1
K_OBJ: Final = 2
K_PAREN: Final = 3  # a tuple "(1, 2)" or a call "ObjectId(...)"
K_SET: Final = 4  # a Python set "{'a', 'b'}", read as an array
K_IMPL: Final = 5  # an object whose "{" is missing: ["key": "value"]

# Frame fields. F_KSPAN is where the current key was written, F_KSPANS where each key of
# the object was first written (both for reporting a duplicate key).
F_KIND, F_CONT, F_STATE, F_KEY, F_OPEN, F_COMMA, F_EXTRA, F_KSPAN, F_KSPANS = range(9)

# States.
S_VALUE_FIRST: Final = 0  # array-like: first value or closer
S_VALUE_NEXT: Final = 1  # array-like: value after a comma
S_AFTER: Final = 2  # array-like: comma or closer
S_KEY_FIRST: Final = 3  # object: first key or closer
S_KEY_NEXT: Final = 4  # object: key after a comma
S_COLON: Final = 5  # object: colon after a key
S_OBJ_VALUE: Final = 6  # object: value after a colon
S_OBJ_AFTER: Final = 7  # object: comma or closer

_KEYED = frozenset((K_OBJ, K_IMPL))
_ARRAY_LIKE = frozenset((K_ARR, K_SET, K_PAREN))
_AFTER_STATES = frozenset((S_AFTER, S_OBJ_AFTER))
_NEXT_STATES = frozenset((S_VALUE_NEXT, S_KEY_NEXT))
_VALUE_MISSING = frozenset((S_OBJ_VALUE, S_COLON))
_CLOSER = {K_ARR: "]", K_OBJ: "}", K_SET: "}", K_PAREN: ")", K_IMPL: ""}
_VALUE_START = frozenset("{[(-0123456789" + T.QUOTE_CHARS)
_NUMBER_START = frozenset("-0123456789.")
_OBJECTS = (K_OBJ, K_SET, K_IMPL)


class _Constant(Exception):
    """NaN or Infinity met by the C decoder: those take the repairing path."""


def _reject_constant(name: str) -> Any:
    raise _Constant(name)


class _Document(str):
    """The text as the C decoder sees it. ``JSONDecodeError`` counts the lines before
    the error on every failure, which would make repeated attempts quadratic; this
    copy answers those two questions in constant time (the position is all we use)."""

    __slots__ = ()

    def count(self, *args: Any) -> int:
        return 0

    def rfind(self, *args: Any) -> int:
        return -1


# Valid sub-values are read as strict JSON is: a duplicate key or a number beyond the
# float range sends the container the long way, where they are reported with spans.
_DECODER = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_float=read_float_or_raise,
    object_pairs_hook=unique_object,
)
_AFTER_NUMBER = frozenset(",}] \t\n\r")
_NEXT_ENTRY = frozenset("}]{[" + T.QUOTE_CHARS)
_SIMPLE_KEY = re.compile(r"([A-Za-z_$][\w$]*)[ \t]*:")
_SINGLE_QUOTED = re.compile(r"'([^'\\\x00-\x1f]*)'")
# The C scanners behind json.loads (typeshed does not list them).
_scan_once: Callable[[str, int], tuple[Any, int]]
_scan_once = _DECODER.scan_once  # type: ignore[attr-defined]
_scanstring: Callable[[str, int, bool], tuple[str, int]]
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
# Failed C-decoder attempts may re-read at most this many times the input in total.
_WASTE_FACTOR = 4
_MAX_SKIP = 32


def _regroup_row(items: list[Any]) -> bool:
    """``[[r1], [r2], a, b]`` → ``[[r1], [r2], [a, b]]``: the scalars after the rows of a
    table are a row whose ``[`` is missing. False (nothing changed) for other lists."""
    last_row = -1
    for i, item in enumerate(items):
        if type(item) is list:
            if last_row != i - 1:
                return False  # rows and scalars interleaved: not a table
            last_row = i
    if last_row < 0 or last_row == len(items) - 1:
        return False
    tail = items[last_row + 1 :]
    if any(isinstance(item, (dict, list)) for item in tail):
        return False
    del items[last_row + 1 :]
    items.append(tail)
    return True


class Parser(StringScanner):
    """Parses ``text[start:end]``; offsets in repairs are offsets into ``text``."""

    def __init__(
        self, text: str, start: int, end: int, max_depth: int, deadline: Deadline | None = None
    ) -> None:
        self.text = text
        self.deadline = deadline
        self.start = start
        self.end = end
        self.max_depth = max_depth
        self.repairs = []
        top: list[Any] = [K_TOP, [], S_VALUE_FIRST, None, start, -1, None, None, None]
        self.stack: list[list[Any]] = [top]
        self.top_spans: list[tuple[int, int]] = []
        self.open_counts = {"}": 0, "]": 0, ")": 0}
        self.last_start = start
        self.last_end = start
        self.stopped = False
        self.dropped_closer = ""
        self.top_close_pos = -1
        # Valid sub-values are decoded by the C decoder; a failed attempt costs the text
        # it read, and once that exceeds a multiple of the input the attempts stop.
        self.waste_budget = _WASTE_FACTOR * (end - start + 256)
        self.document: _Document | None = None
        self.fast_streak = 0  # consecutive failed attempts
        self.fast_skip = 0  # attempts to skip before the next one
        self.fenced_quotes: list[tuple[int, str]] = []  # (depth, quote) of "```json {...}```"
        # last search for a closing fence, per quote: (searched from, found at)
        self.fence_close: dict[str, tuple[int, int]] = {}

    # -- driver ------------------------------------------------------------------------

    def run(self) -> list[Any]:
        """Parse to the end; the top-level values found (usually one)."""
        text = self.text
        end = self.end
        stack = self.stack
        trivia = T.TRIVIA_START
        ws_match = T.WS.match
        number_match = T.NUMBER.match
        quick = self._quick_string
        deadline = self.deadline
        steps = 0
        pos = self.start
        while pos < end:
            if deadline is not None:
                steps += 1
                if not steps & _CHECK_MASK:
                    deadline.check()
            c = text[pos]
            if c in trivia:
                if c in " \t\n\r":
                    pos = ws_match(text, pos, end).end()  # type: ignore[union-attr]
                    if pos >= end:
                        break
                    c = text[pos]
                if c in trivia:
                    pos = self._skip(pos)
                    if pos >= end:
                        break
                    c = text[pos]
            if self.stopped:
                break
            frame = stack[-1]
            state = frame[F_STATE]
            if state in _AFTER_STATES:
                if c == ",":
                    frame[F_COMMA] = pos
                    frame[F_STATE] = S_VALUE_NEXT if state == S_AFTER else S_KEY_NEXT
                    pos += 1
                elif c in "}])":
                    pos = self._close(c, pos)
                else:
                    pos = self._after_value(frame, c, pos)
                continue
            kind = frame[F_KIND]
            if (c == '"' or c == "'") and (kind != K_TOP or state == S_VALUE_NEXT):
                if state == S_OBJ_VALUE:
                    found = quick(pos, C_OBJ)
                elif state <= S_VALUE_NEXT:
                    found = quick(pos, C_ARR)
                elif state != S_COLON:
                    found = quick(pos, C_KEY)
                    if found is not None:
                        self._set_key(frame, found[0], pos, found[1])
                        self.last_end = found[1]
                        if text[found[2]] == ":":
                            frame[F_STATE] = S_OBJ_VALUE
                            pos = found[2] + 1
                        else:
                            frame[F_STATE] = S_COLON
                            pos = found[1]
                        continue
                else:
                    found = None
                if found is not None:
                    value, stop, j = found
                    if kind in _KEYED:
                        if frame[F_KEY] in frame[F_CONT]:
                            self._duplicate(frame)
                        frame[F_CONT][frame[F_KEY]] = value
                        after = S_OBJ_AFTER
                    else:
                        frame[F_CONT].append(value)
                        after = S_AFTER
                        if kind == K_TOP:
                            self.top_spans.append((pos, stop))
                    self.last_start = pos
                    self.last_end = stop
                    if text[j] == ",":
                        frame[F_COMMA] = j
                        frame[F_STATE] = S_KEY_NEXT if after == S_OBJ_AFTER else S_VALUE_NEXT
                        pos = j + 1
                    else:
                        frame[F_STATE] = after
                        pos = j
                    continue
            elif (
                (c in "-0123456789")
                and kind != K_TOP
                and (state == S_OBJ_VALUE or state <= S_VALUE_NEXT)
            ):
                m = number_match(text, pos, end)
                if m is not None:
                    stop = m.end()
                    if stop < end and text[stop] in _AFTER_NUMBER:
                        number: int | float | None
                        if m.group(1) is None and m.group(2) is None:
                            token = m.group()
                            number = int(token) if len(token) <= T.MAX_INT_DIGITS else None
                        else:
                            number = read_float(m.group())
                            if type(number) is JsonNumber and not number.in_range:
                                number = None  # reported the long way
                        if number is not None:
                            if kind in _KEYED:
                                if frame[F_KEY] in frame[F_CONT]:
                                    self._duplicate(frame)
                                frame[F_CONT][frame[F_KEY]] = number
                                frame[F_STATE] = S_OBJ_AFTER
                            else:
                                frame[F_CONT].append(number)
                                frame[F_STATE] = S_AFTER
                            self.last_start = pos
                            self.last_end = stop
                            pos = stop
                            continue
            if state <= S_VALUE_NEXT:
                pos = self._array_slot(frame, state, c, pos)
            elif state == S_OBJ_VALUE:
                pos = self._object_value(frame, c, pos)
            elif state == S_COLON:
                pos = self._colon(frame, c, pos)
            else:
                pos = self._key(frame, state, c, pos)
        self._finish_eof()
        return stack[0][F_CONT]  # type: ignore[no-any-return]

    def _quick_string(self, pos: int, ctx: int) -> tuple[str, int, int] | None:
        """A plain ``"..."`` or ``'...'`` string clearly closed by its quote: (value,
        where it ends, where the next delimiter is); ``None`` sends it the long way."""
        text = self.text
        end = self.end
        if pos + 1 < end and text[pos + 1] == text[pos] and self._doubled_open(pos):
            return None
        if text[pos] == '"':
            try:
                value, stop = _scanstring(text, pos + 1, True)
            except ValueError:
                return None
        else:
            m = _SINGLE_QUOTED.match(text, pos, end)
            if m is None:
                return None
            value = m.group(1)
            stop = m.end()
        if stop >= end:
            return None
        j = stop
        c = text[j]
        if c in " \t\n\r":
            j = T.WS.match(text, j, end).end()  # type: ignore[union-attr]
            if j >= end:
                return None
            c = text[j]
        if c == ",":
            if ctx == C_OBJ:
                k = T.WS.match(text, j + 1, end).end()  # type: ignore[union-attr]
                if k >= end or "{" in value or "[" in value:
                    return None
                if text[k] not in _NEXT_ENTRY and not T.KEY_AHEAD.match(
                    text, k, min(end, k + T.LOOKAHEAD)
                ):
                    return None
        elif c == "}" or c == "]":
            if ctx == C_KEY or "{" in value or "[" in value or "(" in value:
                return None
        elif c == ":":
            if ctx != C_KEY:
                return None
        elif c in "0123456789":
            if ctx == C_KEY or "{" in value or "[" in value:
                return None
        else:
            return None
        if text[pos] == "'":
            self.repairs.append(("parse.single_quotes", pos, stop, SAFE, "single-quoted string"))
        return value, stop, j

    # -- trivia ------------------------------------------------------------------------

    def _skip(self, pos: int, record: bool = True) -> int:
        """Skip whitespace, comments and markdown fences; record them when ``record``."""
        text = self.text
        end = self.end
        while pos < end:
            c = text[pos]
            if c in " \t\n\r":
                pos = T.WS.match(text, pos, end).end()  # type: ignore[union-attr]
                continue
            if c == "/":
                if pos + 1 >= end:
                    return pos
                n = text[pos + 1]
                if n == "*":
                    close = text.find("*/", pos + 2, end)
                    stop = end if close < 0 else close + 2
                    if record:
                        self._repair("parse.comment", pos, stop, LOSSLESS, "block comment removed")
                    pos = stop
                    continue
                if n == "/":
                    stop = T.LINE_END.match(text, pos, end).end()  # type: ignore[union-attr]
                    if record:
                        self._repair("parse.comment", pos, stop, LOSSLESS, "line comment removed")
                    pos = stop
                    continue
                return pos
            if c == "#":
                if pos + 1 < end and text[pos + 1] not in " \t#!\n\r":
                    return pos
                stop = T.HASH_COMMENT.match(text, pos, end).end()  # type: ignore[union-attr]
                if record:
                    self._repair("parse.comment", pos, stop, LOSSLESS, "'#' comment removed")
                pos = stop
                continue
            if c == "`":
                if not text.startswith("```", pos):
                    return pos
                stop = T.FENCE.match(text, pos, end).end()  # type: ignore[union-attr]
                if record:
                    stop = self._fence(pos, stop)
                pos = stop
                continue
            if c in T.SPECIAL_WS_CHARS:
                stop = T.SPECIAL_WS.match(text, pos, end).end()  # type: ignore[union-attr]
                if record:
                    self._repair(
                        "parse.special_whitespace", pos, stop, LOSSLESS, "non-JSON space character"
                    )
                pos = stop
                continue
            return pos
        return pos

    def _fence(self, pos: int, stop: int) -> int:
        start = pos
        stack = self.stack
        pending = self.fenced_quotes
        if pending and pending[-1][0] == len(stack) and self.text.startswith(pending[-1][1], stop):
            # "```json {...}```": the closing quote of a fence written inside a string
            pending.pop()
            stop += 1
        if len(stack) == 2:
            frame = stack[1]
            opener = frame[F_OPEN]
            if (
                frame[F_KIND] in (K_ARR, K_OBJ)
                and not frame[F_CONT]
                and frame[F_STATE] in (S_VALUE_FIRST, S_KEY_FIRST)
                and pos - opener <= 64
                and not self.text[opener + 1 : pos].strip()
            ):
                # "[```json ... ```]": the bracket belongs to the fence, not to the value
                stack.pop()
                closer = _CLOSER[frame[F_KIND]]
                self.open_counts[closer] -= 1
                self.dropped_closer = closer
                start = opener
        self._repair("parse.fence", start, stop, LOSSLESS, "markdown fence removed")
        return stop

    def _peek(self, pos: int) -> int:
        if pos < self.end and self.text[pos] in T.TRIVIA_START:
            return self._skip(pos, record=False)
        return pos

    # -- frames ------------------------------------------------------------------------

    def _push(self, kind: int, container: Any, state: int, pos: int, extra: Any = None) -> None:
        stack = self.stack
        if len(stack) > self.max_depth:
            raise ParseFailure(
                f"nesting deeper than {self.max_depth} levels", position=pos, limit="depth"
            )
        stack.append([kind, container, state, None, pos, -1, extra, None, None])
        closer = _CLOSER[kind] or "}"
        self.open_counts[closer] += 1

    def _set_key(self, frame: list[Any], key: str, start: int, stop: int) -> None:
        """The object in ``frame`` has read ``key``, written at ``text[start:stop]``."""
        frame[F_KEY] = key
        span = (start, stop)
        frame[F_KSPAN] = span
        spans = frame[F_KSPANS]
        if spans is None:
            frame[F_KSPANS] = {key: span}
        elif key not in spans:
            spans[key] = span

    def _duplicate(self, frame: list[Any]) -> None:
        """The current key of ``frame`` already has a value: the new one replaces it."""
        key = frame[F_KEY]
        here = frame[F_KSPAN] or (self.last_start, self.last_end)
        spans = frame[F_KSPANS] or {}
        first = spans.get(key, here)
        if first == here:
            return  # the same key again (a value completed after a missing one)
        message = SpannedMessage(
            f"key {key!r} written twice in one object: the last value is kept", first
        )
        self._repair("parse.duplicate_key", here[0], here[1], GUESS, message)

    def _emit(self, value: Any, start: int, stop: int) -> None:
        frame = self.stack[-1]
        kind = frame[F_KIND]
        if kind in _KEYED:
            if frame[F_KEY] in frame[F_CONT]:
                self._duplicate(frame)
            frame[F_CONT][frame[F_KEY]] = value
            frame[F_STATE] = S_OBJ_AFTER
        else:
            frame[F_CONT].append(value)
            frame[F_STATE] = S_AFTER
            if kind == K_TOP:
                self.top_spans.append((start, stop))
        self.last_start = start
        self.last_end = stop

    def _set_missing(self, frame: list[Any], pos: int, message: str) -> None:
        """A key without a value: null, unless the key already has one."""
        container = frame[F_CONT]
        key = frame[F_KEY]
        if key not in container:
            container[key] = None
        frame[F_STATE] = S_OBJ_AFTER
        self._repair("parse.missing_value", pos, pos, GUESS, message)

    def _pop(self, close_start: int, close_stop: int) -> None:
        """Close the innermost frame and hand its value to the one below."""
        stack = self.stack
        frame = stack.pop()
        kind = frame[F_KIND]
        self.open_counts[_CLOSER[kind] or "}"] -= 1
        state = frame[F_STATE]
        if state in _NEXT_STATES and frame[F_COMMA] >= 0:
            comma = frame[F_COMMA]
            closer = _CLOSER[kind]
            message = f"trailing comma before {closer!r}" if closer else "trailing comma"
            self._repair("parse.trailing_comma", comma, comma + 1, LOSSLESS, message)
        elif state in _VALUE_MISSING:
            self._set_missing(frame, close_start, "missing value read as null")
        value = frame[F_CONT]
        if kind == K_ARR and frame[F_EXTRA] is not None:
            frame[F_EXTRA].extend(value)
            stack[-1][F_STATE] = S_OBJ_AFTER
            self.last_end = close_stop
            return
        if kind == K_PAREN:
            value = self._paren_value(frame, close_start, close_stop)
        if len(stack) == 1:
            self.top_close_pos = close_start if close_stop > close_start else -1
        self._emit(value, frame[F_OPEN], close_stop)

    def _paren_value(self, frame: list[Any], close_start: int, close_stop: int) -> Any:
        items = frame[F_CONT]
        name = frame[F_EXTRA]
        open_pos = frame[F_OPEN]
        if name is not None:
            code = name[2]
            if close_stop > close_start:
                self._repair(code, close_start, close_stop, LOSSLESS, f"')' of {name[0]}() removed")
            if len(items) == 1:
                return items[0]
            return items if items else None
        if frame[F_COMMA] >= 0 or len(items) != 1:
            self._repair(
                "parse.python_literal", open_pos, open_pos + 1, SAFE, "tuple read as an array"
            )
            return items
        self._repair(
            "parse.python_literal",
            open_pos,
            open_pos + 1,
            SAFE,
            "parentheses around a value removed",
        )
        return items[0]

    def _close(self, c: str, pos: int) -> int:
        """A closing bracket ``c`` at ``pos``."""
        frame = self.stack[-1]
        kind = frame[F_KIND]
        if kind == K_TOP:
            if c == self.dropped_closer:
                self.dropped_closer = ""
                self._repair(
                    "parse.fence", pos, pos + 1, LOSSLESS, "bracket around a fence removed"
                )
            else:
                self._repair("parse.redundant_closer", pos, pos + 1, GUESS, f"extra {c!r} removed")
            return pos + 1
        if kind == K_IMPL and c != "}":
            self._pop(pos, pos)
            return pos
        if (
            (c == "}" and kind in _OBJECTS)
            or (c == "]" and kind == K_ARR)
            or (c == ")" and kind == K_PAREN)
        ):
            self._pop(pos, pos + 1)
            return pos + 1
        if self.open_counts[c] > 0:
            closer = _CLOSER[kind]
            if closer:
                self._repair(
                    "parse.missing_closer", pos, pos, GUESS, f"{closer!r} added before {c!r}"
                )
            self._pop(pos, pos)
            return pos
        self._repair("parse.redundant_closer", pos, pos + 1, GUESS, f"unmatched {c!r} removed")
        return pos + 1

    def _finish_eof(self) -> None:
        stack = self.stack
        end = self.end
        frame = stack[-1]
        if frame[F_STATE] == S_COLON and frame[F_KIND] in _KEYED and self._key_cut(frame):
            self._drop_cut_key(frame)
        added = []
        while len(stack) > 1:
            closer = _CLOSER[stack[-1][F_KIND]]
            if closer:
                added.append(closer)
            self._pop(end, end)
        if added:
            # Closing brackets after a complete value is safe; after a number that ends
            # the input it is not: the number itself may be cut short ("3" of "30").
            tail = self.text[max(0, end - 64) : end].rstrip()[-1:]
            risk = GUESS if tail.isdigit() or tail == "." else SAFE
            self._repair(
                "parse.truncated", end, end, risk, f"added {''.join(added)!r} at end of input"
            )
        top = stack[0]
        if top[F_STATE] == S_VALUE_NEXT and top[F_COMMA] >= 0:
            comma = top[F_COMMA]
            self._repair("parse.trailing_comma", comma, comma + 1, LOSSLESS, "trailing comma")

    def _key_cut(self, frame: list[Any]) -> bool:
        """Whether the end of the input cut the current key itself short (``"b`` or
        ``b``, not ``"b"``): then the key may be another one than what is there."""
        if frame[F_KSPAN] is None:
            return False
        start, stop = frame[F_KSPAN]
        closed = stop - start > 1 and self.text[stop - 1] in T.QUOTE_CHARS
        return (stop >= self.end and not closed) or any(
            r[0] == "parse.truncated" and start <= r[1] and r[2] <= stop for r in self.repairs
        )

    def _drop_cut_key(self, frame: list[Any]) -> None:
        """``{"a": 1, "b``: the input ended inside a key. Neither the key nor its value
        is known, so the member is left out rather than given an invented null."""
        start, stop = frame[F_KSPAN]
        # what was repaired inside the key (a closing quote added) no longer applies
        self.repairs[:] = [r for r in self.repairs if not (start <= r[1] and r[2] <= stop)]
        self._repair(
            "parse.truncated",
            start,
            self.end,
            GUESS,
            f"key {frame[F_KEY]!r} cut off by the end of the input: left out",
        )
        frame[F_STATE] = S_OBJ_AFTER

    # -- states ------------------------------------------------------------------------

    def _array_slot(self, frame: list[Any], state: int, c: str, pos: int) -> int:
        """An array-like frame (or the top level) expecting a value."""
        kind = frame[F_KIND]
        if c in "}])":
            return self._close(c, pos)
        if c == ",":
            return self._extra_commas(pos, state == S_VALUE_FIRST)
        if c in ".\u2026":
            stop = self._ellipsis(pos)
            if stop > pos:
                return stop
        if kind == K_TOP:
            return self._top_value(frame, state, c, pos)
        return self._value(c, pos, C_ARR)

    def _extra_commas(self, pos: int, first: bool) -> int:
        """Commas where a value should be (a run of them is one repair)."""
        stop = T.COMMA_RUN.match(self.text, pos, self.end).end()  # type: ignore[union-attr]
        if first:
            self._repair("parse.leading_comma", pos, stop, LOSSLESS, "leading comma")
        else:
            self._repair("parse.trailing_comma", pos, stop, LOSSLESS, "extra comma")
        return stop

    def _ellipsis(self, pos: int) -> int:
        """Skip ``...`` (and a comma after it); ``pos`` when there is none."""
        m = T.ELLIPSIS.match(self.text, pos, self.end)
        if m is None:
            return pos
        stop = m.end()
        after = self._peek(stop)
        if after < self.end and self.text[after] == ",":
            stop = after + 1
        self._repair("parse.ellipsis", pos, stop, GUESS, "ellipsis removed")
        return stop

    def _object_value(self, frame: list[Any], c: str, pos: int) -> int:
        if c in "}])" or c == ",":
            self._set_missing(frame, pos, "missing value read as null")
            return pos
        if c in ".\u2026":
            m = T.ELLIPSIS.match(self.text, pos, self.end)
            if m is not None:
                self._repair("parse.ellipsis", pos, m.end(), GUESS, "ellipsis read as null")
                self._emit(None, pos, m.end())
                return m.end()
        return self._value(c, pos, C_OBJ)

    def _colon(self, frame: list[Any], c: str, pos: int) -> int:
        if c == ":":
            frame[F_STATE] = S_OBJ_VALUE
            return pos + 1
        if c == ",":
            if frame[F_KIND] == K_OBJ and not frame[F_CONT]:
                # {'a', 'b'}: a Python set
                frame[F_KIND] = K_SET
                frame[F_CONT] = [frame[F_KEY]]
                frame[F_STATE] = S_AFTER
                self._repair(
                    "parse.python_literal",
                    frame[F_OPEN],
                    frame[F_OPEN] + 1,
                    SAFE,
                    "set read as an array",
                )
                return pos
            self._set_missing(frame, pos, "key without a value read as null")
            return pos
        if c in "}])":
            raise ParseFailure("colon expected after an object key", pos)
        self._repair("parse.missing_colon", self.last_end, self.last_end, SAFE, "missing ':'")
        frame[F_STATE] = S_OBJ_VALUE
        return pos

    def _key(self, frame: list[Any], state: int, c: str, pos: int) -> int:
        """An object expecting a key."""
        text = self.text
        end = self.end
        if c in T.QUOTE_CHARS:
            key, stop = self.scan_string(pos, C_KEY)
            if key is not NOTHING:
                self._set_key(frame, key, pos, stop)
                frame[F_STATE] = S_COLON
                self.last_end = stop
            return stop
        if c in "}])":
            return self._close(c, pos)
        if c == ",":
            return self._extra_commas(pos, state == S_KEY_FIRST)
        if c == "[" and state == S_KEY_NEXT and frame[F_KIND] == K_OBJ:
            previous = frame[F_CONT].get(frame[F_KEY]) if frame[F_CONT] else None
            if type(previous) is list and self.last_end > 0 and text[self.last_end - 1] == "]":
                early = self.last_end - 1
                row_next = self._peek(pos + 1) < end and text[self._peek(pos + 1)] not in "[{"
                if row_next and _regroup_row(previous):
                    # {"rows": [["a"], "b", "c"], ["d"]]}: a row lost its '[', so its
                    # items ended the table early; they become a row, the table goes on
                    self._repair(
                        "parse.missing_opener",
                        early,
                        early + 1,
                        GUESS,
                        "'[' added before the items of a row",
                    )
                    self._push(K_ARR, [], S_VALUE_FIRST, pos, extra=previous)
                    return pos
                # {"a": [1], [2]}: the array went on after an early ']'
                self._repair(
                    "parse.redundant_closer", early, pos + 1, GUESS, "array split in two, joined"
                )
                self._push(K_ARR, [], S_VALUE_FIRST, pos, extra=previous)
                return pos + 1
        if (
            c == "{"
            and state == S_KEY_FIRST
            and frame[F_KIND] == K_OBJ
            and not frame[F_CONT]
            and self.stack[-2][F_KIND] not in _ARRAY_LIKE
        ):
            # {{"a": 1}}: a doubled brace (a run of them is one repair)
            stop = T.BRACE_RUN.match(text, pos, end).end()  # type: ignore[union-attr]
            self._repair("parse.redundant_closer", pos, stop, GUESS, "extra '{' removed")
            return stop
        if c == "{" or c == "[":
            # [{"a": 1, {"b": 2}]: the object ended without its '}'
            if state == S_KEY_NEXT:
                comma = frame[F_COMMA]
                self._repair("parse.trailing_comma", comma, comma + 1, LOSSLESS, "trailing comma")
                frame[F_STATE] = S_KEY_FIRST
            if frame[F_KIND] == K_OBJ:
                self._repair("parse.missing_closer", pos, pos, GUESS, f"'}}' added before {c!r}")
            self._pop(pos, pos)
            return pos
        if c in ".\u2026":
            stop = self._ellipsis(pos)
            if stop > pos:
                return stop
        if c == ":":
            after = self._peek(pos + 1)
            if after < end and text[after] == "}":
                self._repair("parse.stray_text", pos, pos + 1, GUESS, "colon without a key removed")
                return pos + 1
            raise ParseFailure("object key expected", pos)
        simple = _SIMPLE_KEY.match(text, pos, end)
        if simple is not None:
            # key: the common unquoted key, with its colon
            stop = simple.end(1)
            self.repairs.append(("parse.unquoted_key", pos, stop, SAFE, "unquoted key"))
            self._set_key(frame, simple.group(1), pos, stop)
            frame[F_STATE] = S_OBJ_VALUE
            self.last_end = stop
            return simple.end()
        return self._bare_key(frame, pos)

    def _bare_key(self, frame: list[Any], pos: int) -> int:
        text = self.text
        end = self.end
        m = T.UNQUOTED_KEY_WORDS.match(text, pos, min(end, pos + T.LOOKAHEAD))
        if m is None:
            m = T.UNQUOTED_KEY.match(text, pos, end)
        if m is None:
            self._repair("parse.stray_text", pos, pos + 1, GUESS, f"stray {text[pos]!r} removed")
            return pos + 1
        stop = m.end()
        after = self._peek(stop)
        if after < end and text[after] in T.QUOTE_CHARS:
            if T.QUOTED_KEY_AHEAD.match(text, after, min(end, after + T.LOOKAHEAD)):
                self._repair("parse.stray_text", pos, stop, GUESS, "text before a key removed")
                return stop
            close = after + 1
            if after == stop and close < end and text[close] == ":":
                # a":  the opening quote of the key is missing
                self._repair("parse.unquoted_key", pos, close, SAFE, "missing opening quote")
                self._set_key(frame, m.group(), pos, close)
                frame[F_STATE] = S_COLON
                self.last_end = close
                return close
        self._repair("parse.unquoted_key", pos, stop, SAFE, "unquoted key")
        self._set_key(frame, m.group(), pos, stop)
        frame[F_STATE] = S_COLON
        self.last_end = stop
        return stop

    def _after_value(self, frame: list[Any], c: str, pos: int) -> int:
        """After a value, something other than a comma or a closer."""
        kind = frame[F_KIND]
        text = self.text
        if c == ":":
            items = frame[F_CONT]
            if (
                kind in (K_ARR, K_TOP, K_SET)
                and items
                and isinstance(items[-1], (str, int, float))
                and not isinstance(items[-1], bool)
            ):
                # ["key": "value"]: an object whose '{' is missing
                key = items.pop()
                key_start = self.last_start
                if kind == K_TOP:
                    self.top_spans.pop()
                self._push(K_IMPL, {}, S_OBJ_VALUE, key_start)
                self._set_key(
                    self.stack[-1],
                    key if isinstance(key, str) else str(key),
                    key_start,
                    self.last_end,
                )
                self._repair("parse.missing_opener", key_start, key_start, GUESS, "'{' added")
                return pos + 1
            self._repair("parse.stray_text", pos, pos + 1, GUESS, "stray ':' removed")
            return pos + 1
        if c == "+" or c == ";":
            if kind == K_TOP and c == ";":
                self._repair("parse.jsonp", pos, pos + 1, LOSSLESS, "';' after the value removed")
            else:
                self._repair("parse.stray_text", pos, pos + 1, GUESS, f"stray {c!r} removed")
            return pos + 1
        if c in ".\u2026":
            stop = self._ellipsis(pos)
            if stop > pos:
                return stop
        if kind in _KEYED:
            return self._object_missing_comma(frame, c, pos)
        if kind == K_TOP:
            if self._starts_value(c, pos):
                frame[F_STATE] = S_VALUE_NEXT
                frame[F_COMMA] = -1
                return pos
            self._repair(
                "parse.trailing_text", pos, self.end, GUESS, "text after the value removed"
            )
            self.stopped = True
            return self.end
        if c == "\\" and pos + 1 < self.end and text[pos + 1] in T.QUOTE_CHARS:
            self._repair("parse.stray_text", pos, pos + 1, GUESS, "stray backslash removed")
            return pos + 1
        self._repair("parse.missing_comma", self.last_end, self.last_end, GUESS, "missing ','")
        frame[F_STATE] = S_VALUE_NEXT
        frame[F_COMMA] = -1
        return pos

    def _starts_value(self, c: str, pos: int) -> bool:
        """Whether a value (not prose) starts at ``pos`` at the top level."""
        if c in _VALUE_START:
            return True
        m = T.WORD.match(self.text, pos, self.end)
        if m is None:
            return False
        if m.group() in T.KEYWORDS:
            return True
        return T.CALL.match(self.text, pos, self.end) is not None

    def _object_missing_comma(self, frame: list[Any], c: str, pos: int) -> int:
        """After a value in an object: a key without the comma, or stray text."""
        text = self.text
        end = self.end
        if c == "{" or c == "[":
            if frame[F_KIND] == K_OBJ:
                self._repair("parse.missing_closer", pos, pos, GUESS, f"'}}' added before {c!r}")
            self._pop(pos, pos)
            return pos
        if c in T.QUOTE_CHARS:
            key, stop = self.scan_string(pos, C_KEY)
            after = self._peek(stop)
            nxt = text[after] if after < end else ""
            if key is not NOTHING and nxt == ":":
                self._repair(
                    "parse.missing_comma", self.last_end, self.last_end, GUESS, "missing ','"
                )
                self._set_key(frame, key, pos, stop)
                frame[F_STATE] = S_COLON
                self.last_end = stop
                return stop
            if key is not NOTHING and nxt and (nxt in _VALUE_START or nxt.isalpha()):
                self._repair(
                    "parse.missing_comma", self.last_end, self.last_end, GUESS, "missing ','"
                )
                self._repair("parse.missing_colon", stop, stop, SAFE, "missing ':'")
                self._set_key(frame, key, pos, stop)
                frame[F_STATE] = S_OBJ_VALUE
                return stop
            self._repair("parse.stray_text", pos, stop, GUESS, "string without a key removed")
            return stop
        m = T.UNQUOTED_KEY.match(text, pos, end)
        if m is None:
            self._repair("parse.stray_text", pos, pos + 1, GUESS, f"stray {c!r} removed")
            return pos + 1
        stop = m.end()
        after = self._peek(stop)
        nxt = text[after] if after < end else ""
        if nxt == ":":
            self._repair("parse.missing_comma", self.last_end, self.last_end, GUESS, "missing ','")
            return self._bare_key(frame, pos)
        if (
            not nxt
            or nxt in ",}]"
            or (
                nxt in T.QUOTE_CHARS
                and T.QUOTED_KEY_AHEAD.match(text, after, min(end, after + T.LOOKAHEAD))
            )
        ):
            self._repair("parse.stray_text", pos, stop, GUESS, "text without a key removed")
            return stop
        self._repair("parse.missing_comma", self.last_end, self.last_end, GUESS, "missing ','")
        return self._bare_key(frame, pos)

    def _top_value(self, frame: list[Any], state: int, c: str, pos: int) -> int:
        """A value at the top level: the first one, or one more after it."""
        text = self.text
        end = self.end
        items = frame[F_CONT]
        if not items and state == S_VALUE_FIRST:
            if c == "-" and pos + 1 < end and text[pos + 1] in " \t":
                after = self._peek(pos + 1)
                if after < end and text[after] in "{[":
                    self._repair("parse.leading_text", pos, after, GUESS, "list marker removed")
                    return after
            if c == "/" and not T.REGEX_LITERAL.match(text, pos, end):
                return self._prose(pos)
            if not self._starts_value(c, pos) and c != "/" and c not in _NUMBER_START:
                return self._prose(pos)
            return self._value(c, pos, C_TOP)
        if (
            state == S_VALUE_NEXT
            and items
            and isinstance(items[-1], dict)
            and self.top_close_pos >= 0
            and self._key_ahead(c, pos)
        ):
            # {"a": 1}, "b": 2}: the object was closed too early
            value = items.pop()
            self.top_spans.pop()
            close = self.top_close_pos
            self._repair("parse.redundant_closer", close, close + 1, GUESS, "early '}' removed")
            self._push(K_OBJ, value, S_KEY_FIRST, close)
            return pos
        if self._starts_value(c, pos) or c in _NUMBER_START:
            return self._value(c, pos, C_TOP)
        self._repair("parse.trailing_text", pos, end, GUESS, "text after the value removed")
        self.stopped = True
        return end

    def _key_ahead(self, c: str, pos: int) -> bool:
        text = self.text
        window = min(self.end, pos + T.LOOKAHEAD)
        if c in T.QUOTE_CHARS:
            if T.QUOTED_KEY_AHEAD.match(text, pos, window):
                return True
            return T.QUOTED_PAIR_AHEAD.match(text, pos, window) is not None
        return T.KEY_AHEAD.match(text, pos, window) is not None

    def _prose(self, pos: int) -> int:
        """Words where the first value should be: a string missing its opening quote
        (``abc"``), or prose before the value, or no JSON at all."""
        text = self.text
        end = self.end
        m = T.UNQUOTED_RUN.match(text, pos, end)
        stop = m.end() if m else pos
        if stop < end and text[stop] in T.QUOTE_CHARS and not text[stop + 1 : end].strip():
            self._repair("parse.unquoted_string", pos, stop + 1, GUESS, "missing opening quote")
            self._emit(text[pos:stop].strip(), pos, stop + 1)
            return stop + 1
        found = T.PROSE_TO_VALUE.search(text, pos, end)
        if found is None:
            return self._bare_words(pos)
        self._repair(
            "parse.leading_text", pos, found.start(), GUESS, "text before the value removed"
        )
        return found.start()

    def _bare_words(self, pos: int) -> int:
        """Only words, no bracket anywhere: each line (or comma-separated part) is a
        string, as jsonrepair reads ``hello world`` or ``a,b``. The pipeline decides
        whether a whole response of words is an answer or prose (it is prose unless
        something JSON-like was found)."""
        text = self.text
        found = False
        for m in T.BARE_WORDS.finditer(text, pos, self.end):
            if T.WORD_CHAR.search(m.group(1)) is None:
                continue  # punctuation alone ('/', '?!') is not a word
            start, stop = m.span(1)
            self._repair("parse.unquoted_string", start, stop, GUESS, "words read as a string")
            self._emit(m.group(1), start, stop)
            found = True
        if not found:
            raise ParseFailure("no JSON value", pos)
        return self.end

    # -- values ------------------------------------------------------------------------

    def _decode_valid(self, pos: int) -> int:
        """Decode a strictly valid container at ``pos`` with the C decoder; -1 if not."""
        if self.waste_budget <= 0:
            return -1
        if self.fast_skip > 0:
            # recent attempts failed: try again only every so often
            self.fast_skip -= 1
            return -1
        doc = self.document
        if doc is None:
            doc = self.document = _Document(self.text)
        try:
            value, stop = _scan_once(doc, pos)
        except json.JSONDecodeError as err:
            self.waste_budget -= err.pos - pos + 1
            self._fast_failed()
            return -1
        except StopIteration as err:
            self.waste_budget -= err.value - pos + 1
            self._fast_failed()
            return -1
        except (OutOfRange, DuplicateKey):
            # valid JSON with something to report: read this container the long way
            self.waste_budget -= self.end - pos
            self._fast_failed()
            return -1
        except (_Constant, ValueError, RecursionError):
            self.waste_budget = 0
            return -1
        if stop > self.end:
            self.waste_budget -= stop - pos
            return -1
        self.fast_streak = 0
        if len(self.stack) == 1:
            self.top_close_pos = stop - 1
        room = self.max_depth - (len(self.stack) - 1)
        # the C decoder cannot nest deeper than the recursion limit; below that, check
        if room < sys.getrecursionlimit() and 2 * room < stop - pos and not _within(value, room):
            raise ParseFailure(
                f"nesting deeper than {self.max_depth} levels", position=pos, limit="depth"
            )
        self._emit(value, pos, stop)
        return stop

    def _fast_failed(self) -> None:
        self.fast_streak += 1
        if self.fast_streak > 2:
            self.fast_skip = min(_MAX_SKIP, 1 << (self.fast_streak - 2))

    def _value(self, c: str, pos: int, ctx: int) -> int:
        """Parse the value starting at ``pos`` (or open its container)."""
        if c == "{":
            stop = self._decode_valid(pos)
            if stop >= 0:
                return stop
            self._push(K_OBJ, {}, S_KEY_FIRST, pos)
            return pos + 1
        if c == "[":
            stop = self._decode_valid(pos)
            if stop >= 0:
                return stop
            self._push(K_ARR, [], S_VALUE_FIRST, pos)
            return pos + 1
        if c in T.QUOTE_CHARS:
            if self.text.startswith("```", pos + 1):
                inside = self._fence_in_string(pos)
                if inside > pos:
                    return inside
            if (c == '"' or c == "'") and self.text.startswith(c + c, pos + 1):
                stop = self._quote_run(c, pos)
                if stop > pos:
                    return stop
            return self._string_value(pos, ctx)
        if c in _NUMBER_START:
            return self._number(pos, ctx)
        if c == "+" and pos + 1 < self.end and self.text[pos + 1] in "0123456789.":
            self._repair("parse.invalid_number", pos, pos + 1, SAFE, "leading '+' removed")
            return self._number(pos + 1, ctx)
        if c == "(":
            self._push(K_PAREN, [], S_VALUE_FIRST, pos)
            return pos + 1
        if c == "/":
            m = T.REGEX_LITERAL.match(self.text, pos, self.end)
            if m is not None:
                self._repair("parse.regex_literal", pos, m.end(), SAFE, "regular expression quoted")
                self._emit(m.group(), pos, m.end())
                return m.end()
        if c == "\\" and pos + 1 < self.end and self.text[pos + 1] in T.QUOTE_CHARS:
            self._repair("parse.invalid_escape", pos, pos + 1, SAFE, "backslash before a quote")
            return pos + 1
        return self._word_value(pos, ctx)

    def _quote_run(self, q: str, pos: int) -> int:
        """Three or more quotes: a Python triple-quoted string, or a run of quotes that
        stands for nothing. Where parsing resumes, or ``pos`` to read it the usual way."""
        text = self.text
        end = self.end
        stop = T.QUOTE_RUN[q].match(text, pos, end).end()  # type: ignore[union-attr]
        run = stop - pos
        after = stop if stop >= end or text[stop] not in " \t" else self._peek(stop)
        if after >= end or text[after] in ",:]})\n\r":
            if run == 6:
                self._repair("parse.python_literal", pos, stop, SAFE, "empty triple-quoted string")
                self._emit("", pos, stop)
            else:
                self._repair("parse.stray_text", pos, stop, GUESS, "run of quotes removed")
            return stop
        if run != 3:
            return pos
        close = text.find(q * 3, stop, end)
        if close < 0:
            return pos
        # the closing quotes are the last three of their run: """say "hi""""
        finish = T.QUOTE_RUN[q].match(text, close, end).end()  # type: ignore[union-attr]
        self._repair("parse.python_literal", pos, finish, SAFE, "triple-quoted string")
        self._emit(self._decode(stop, finish - 3, q), pos, finish)
        return finish

    def _fence_in_string(self, pos: int) -> int:
        """``"```json {...}```"``: a fenced value written as a string; where it starts."""
        text = self.text
        end = self.end
        fence = T.FENCE.match(text, pos + 1, end)
        if fence is None:
            return pos
        start = T.WS.match(text, fence.end(), end).end()  # type: ignore[union-attr]
        if start >= end or text[start] not in "{[":
            return pos
        closing = "```" + text[pos]
        searched_from, found = self.fence_close.get(closing, (end, -1))
        if not (searched_from <= start and (found < 0 or start <= found)):
            # the answer for the previous string holds until that closing fence
            found = text.find(closing, start, end)
            self.fence_close[closing] = (start, found)
        if found < 0:
            return pos
        self._repair("parse.fence", pos, fence.end(), LOSSLESS, "markdown fence removed")
        self.fenced_quotes.append((len(self.stack), text[pos]))
        return start

    def _word_value(self, pos: int, ctx: int) -> int:
        text = self.text
        end = self.end
        m = T.WORD.match(text, pos, end)
        if m is not None:
            stop = m.end()
            word = m.group()
            entry = T.KEYWORDS.get(word)
            if entry is not None and (stop >= end or text[stop] not in "-.@:/\\"):
                value, code = entry
                if code:
                    self._repair(code, pos, stop, SAFE, f"{word} read as {_json_word(value)}")
                self._emit(value, pos, stop)
                return stop
            if (
                entry is None
                and ctx != C_TOP
                and word in T.LITERAL_PREFIXES
                and self._peek(stop) >= end
            ):
                # {"ok": tru   (the end of the input cut a literal short)
                value = T.LITERAL_PREFIXES[word]
                self._repair(
                    "parse.truncated",
                    pos,
                    stop,
                    GUESS,
                    f"{word!r} cut off by the end of the input, completed to {_json_word(value)}",
                )
                self._emit(value, pos, stop)
                return stop
            call = T.CALL.match(text, pos, end)
            if call is not None and (ctx == C_TOP or call.end() == stop + 1):
                name = call.group(1)
                if ctx == C_TOP and name not in T.MONGO_NAMES:
                    code = "parse.jsonp"
                else:
                    code = "parse.mongo_wrapper"
                self._repair(code, pos, call.end(), LOSSLESS, f"{name}( ... ) wrapper removed")
                self._push(K_PAREN, [], S_VALUE_FIRST, pos, extra=(name, pos, code))
                return call.end()
        value, stop, resume = self._unquoted(pos, ctx)
        if resume == pos:
            self._repair("parse.stray_text", pos, pos + 1, GUESS, f"stray {text[pos]!r} removed")
            return pos + 1
        self._repair("parse.unquoted_string", pos, resume, GUESS, "unquoted string")
        self._emit(value, pos, resume)
        return resume

    def _unquoted(self, pos: int, ctx: int) -> tuple[str, int, int]:
        """An unquoted string value: (value, end of the value, where parsing resumes)."""
        text = self.text
        end = self.end
        run = T.UNQUOTED_RUN.match
        paren = square = curly = 0
        p = pos
        while True:
            p = run(text, p, end).end()  # type: ignore[union-attr]
            if p >= end:
                stop = resume = end
                break
            ch = text[p]
            if ch == "\n" or ch == "\r":
                stop = resume = p
                break
            if ch == ",":
                if ctx != C_OBJ or self._key_or_close_after(p + 1):
                    stop = resume = p
                    break
                p += 1
                continue
            if ch in "([{":
                if ch == "(":
                    paren += 1
                elif ch == "[":
                    square += 1
                else:
                    curly += 1
                p += 1
                continue
            if ch in ")]}":
                if ch == ")" and paren > 0:
                    paren -= 1
                elif ch == "]" and square > 0:
                    square -= 1
                elif ch == "}" and curly > 0:
                    curly -= 1
                else:
                    stop = resume = p
                    break
                p += 1
                continue
            if ch == "/":
                nxt = text[p + 1] if p + 1 < end else ""
                if nxt == "*" or (nxt == "/" and not (p > pos and text[p - 1] == ":")):
                    stop = resume = p
                    break
                p += 1
                continue
            if ch == "#":
                if p > pos and text[p - 1] in " \t" and (p + 1 >= end or text[p + 1] in " \t#"):
                    stop = resume = p
                    break
                p += 1
                continue
            if ch == "\\":
                p = min(end, p + 2)
                continue
            # a quote
            k = T.HSPACE.match(text, p + 1, end).end()  # type: ignore[union-attr]
            if p > pos and (k >= end or text[k] in ",}]\n\r:"):
                stop = p
                resume = p + 1
                break
            if T.QUOTED_KEY_AHEAD.match(text, p, min(end, p + T.LOOKAHEAD)):
                stop = resume = p
                break
            if p == pos:
                stop = resume = p
                break
            p += 1
        value = text[pos:stop].rstrip(" \t\n\r")
        return value, stop, resume

    def _string_value(self, pos: int, ctx: int) -> int:
        text = self.text
        end = self.end
        value, stop = self.scan_string(pos, ctx)
        if value is NOTHING:
            if self.stack[-1][F_STATE] == S_OBJ_VALUE:
                self._set_missing(self.stack[-1], stop, "missing value read as null")
            return stop
        after = self._skip(stop) if stop < end and text[stop] in T.TRIVIA_START else stop
        if after < end and text[after] == "+":
            parts = [value]
            while after < end and text[after] == "+":
                plus = after
                nxt = self._skip(plus + 1)
                if nxt < end and text[nxt] in T.QUOTE_CHARS:
                    more, stop = self.scan_string(nxt, ctx)
                    self._repair("parse.string_concat", plus, plus + 1, GUESS, "strings joined")
                    if more is not NOTHING:
                        parts.append(more)
                    after = self._skip(stop)
                else:
                    self._repair("parse.string_concat", plus, plus + 1, GUESS, "dangling '+'")
                    stop = plus + 1
                    after = nxt
                    break
            value = "".join(parts)
        self._emit(value, pos, stop)
        return after

    def _number(self, pos: int, ctx: int) -> int:
        text = self.text
        end = self.end
        m = T.NUMBER.match(text, pos, end)
        if m is not None:
            stop = m.end()
            if (
                stop >= end
                or text[stop] not in T.NUMBER_TAIL
                or (text.startswith("/", stop) and text.startswith(("//", "/*"), stop))
            ):
                token = m.group()
                if m.group(1) is None and m.group(2) is None and len(token) <= T.MAX_INT_DIGITS:
                    self._emit(int(token), pos, stop)
                else:
                    number = read_float(token)  # (an integer too long for int() is one)
                    if type(number) is JsonNumber and not number.in_range:
                        self._repair(
                            "parse.number_out_of_range",
                            pos,
                            stop,
                            NOTE,
                            f"{_clip(token)} is beyond the range of a 64-bit float: kept as "
                            "written, but a reader may take it for infinity or 0",
                        )
                    self._emit(number, pos, stop)
                return self._stray_quote_after(stop)
        tok_match = T.NUMBER_TOKEN.match(text, pos, end)
        token = tok_match.group() if tok_match else ""
        stop = pos + len(token)
        if token == "-Infinity" or token == "-infinity":
            self._repair("parse.js_literal", pos, stop, SAFE, "-Infinity read as null")
            self._emit(None, pos, stop)
            return stop
        if "_" in token and T.UNDERSCORE_NUMBER.fullmatch(token):
            plain = token.replace("_", "")
            self._repair("parse.invalid_number", pos, stop, SAFE, "digit separators removed")
            self._emit(float(plain) if any(ch in plain for ch in ".eE") else int(plain), pos, stop)
            return stop
        if T.LEADING_ZERO.fullmatch(token):
            self._repair(
                "parse.leading_zero", pos, stop, SAFE, "number with leading zeros kept as text"
            )
            self._emit(token, pos, stop)
            return stop
        t = T.TRUNCATED_NUMBER.fullmatch(token) if token else None
        if (
            t is not None
            and (
                (t.group(2) or t.group(4))
                if t.group(5)
                else (t.group(1) or t.group(3) or t.group(2))
            )
            and not (len(t.group(2)) > 1 and t.group(2)[0] == "0")
        ):
            sign, whole, dot, frac, exp, esign, edigits = t.groups()
            if dot or exp:
                value: Any = float(
                    f"{sign}{whole or '0'}.{frac or '0'}e{esign or ''}{edigits or '0'}"
                )
            else:
                value = int(f"{sign}{whole or '0'}")
            if stop >= end:
                self._repair("parse.truncated", pos, stop, GUESS, f"number {token!r} completed")
            else:
                self._repair(
                    "parse.invalid_number", pos, stop, GUESS, f"number {token!r} completed"
                )
            self._emit(value, pos, stop)
            return stop
        value_text, _, resume = self._unquoted(pos, C_ARR if ctx == C_TOP else ctx)
        if resume == pos:
            self._repair("parse.stray_text", pos, pos + 1, GUESS, f"stray {text[pos]!r} removed")
            return pos + 1
        self._repair("parse.invalid_number", pos, resume, GUESS, "invalid number kept as text")
        self._emit(value_text, pos, resume)
        return resume

    def _stray_quote_after(self, stop: int) -> int:
        """``12345"``: a closing quote after a number whose opening quote is missing."""
        text = self.text
        end = self.end
        if stop < end and text[stop] in T.QUOTE_CHARS:
            k = T.HSPACE.match(text, stop + 1, end).end()  # type: ignore[union-attr]
            if k >= end or text[k] in ",}]\n\r":
                self._repair("parse.stray_text", stop, stop + 1, GUESS, "stray quote removed")
                return stop + 1
        return stop


def _within(value: Any, room: int) -> bool:
    """Whether the containers in ``value`` nest at most ``room`` deep."""
    todo = [(value, 1)]
    while todo:
        container, depth = todo.pop()
        if depth > room:
            return False
        items = container.values() if type(container) is dict else container
        for item in items:
            kind = type(item)
            if kind is dict or kind is list:
                if depth + 1 > room:
                    return False
                if item:
                    todo.append((item, depth + 1))
    return True


def _json_word(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "null"


def _clip(token: str) -> str:
    return token if len(token) <= 24 else f"{token[:10]}...{token[-10:]} ({len(token)} digits)"
