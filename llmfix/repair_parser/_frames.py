"""The parser's stack of open containers: frames, and what opens, fills and closes them.

A :class:`Frame` is one open container (or the top level) with the state of the
parser inside it; :class:`Containers` holds the parser's state and the operations
on the stack (push, emit a value, close, finish at the end of the input).
"""

from __future__ import annotations

from typing import Any, Final

from llmfix.deadline import Deadline
from llmfix.repair_parser import _text as T
from llmfix.repair_parser._repair import GUESS, LOSSLESS, SAFE, ParseFailure, Repair
from llmfix.repair_parser._strings import StringScanner

# Frame kinds.
K_TOP: Final = 0
K_ARR: Final = 1
K_OBJ: Final = 2
K_PAREN: Final = 3  # a tuple "(1, 2)" or a call "ObjectId(...)"
K_SET: Final = 4  # a Python set "{'a', 'b'}", read as an array
K_IMPL: Final = 5  # an object whose "{" is missing: ["key": "value"]

# States.
S_VALUE_FIRST: Final = 0  # array-like: first value or closer
S_VALUE_NEXT: Final = 1  # array-like: value after a comma
S_AFTER: Final = 2  # array-like: comma or closer
S_KEY_FIRST: Final = 3  # object: first key or closer
S_KEY_NEXT: Final = 4  # object: key after a comma
S_COLON: Final = 5  # object: colon after a key
S_OBJ_VALUE: Final = 6  # object: value after a colon
S_OBJ_AFTER: Final = 7  # object: comma or closer

KEYED = frozenset((K_OBJ, K_IMPL))
ARRAY_LIKE = frozenset((K_ARR, K_SET, K_PAREN))
AFTER_STATES = frozenset((S_AFTER, S_OBJ_AFTER))
_NEXT_STATES = frozenset((S_VALUE_NEXT, S_KEY_NEXT))
_VALUE_MISSING = frozenset((S_OBJ_VALUE, S_COLON))
CLOSER = {K_ARR: "]", K_OBJ: "}", K_SET: "}", K_PAREN: ")", K_IMPL: ""}
_OBJECTS = (K_OBJ, K_SET, K_IMPL)


NEVER = Deadline.never("parse")  # for a parse without a time budget
# Failed C-decoder attempts may re-read at most this many times the input in total.
WASTE_FACTOR = 4


class Frame:
    """One open container: its kind, the value so far, and the parser's state in it."""

    __slots__ = (
        "call",
        "comma",
        "container",
        "join_into",
        "key",
        "key_span",
        "key_spans",
        "kind",
        "open_pos",
        "state",
    )

    def __init__(self, kind: int, container: Any, state: int, open_pos: int) -> None:
        self.kind = kind
        self.container = container  # a dict for an object, a list otherwise
        self.state = state
        self.open_pos = open_pos
        self.key: str | None = None  # the key being read or given its value
        self.comma = -1  # where the last comma was, or -1
        # where the current key was written, and where each key was first written
        self.key_span: tuple[int, int] | None = None
        self.key_spans: dict[str, tuple[int, int]] | None = None
        # an array that goes on after an early ']': the list its items are added to
        self.join_into: list[Any] | None = None
        # a call wrapper "ObjectId(...)": (name, where it starts, its repair code)
        self.call: tuple[str, int, str] | None = None


class Containers(StringScanner):
    """The parser's state: the text, the stack of frames and the repairs so far."""

    def __init__(
        self, text: str, start: int, end: int, max_depth: int, deadline: Deadline | None = None
    ) -> None:
        self.text = text
        # checked by every loop that may run long, once per CHUNK characters or steps
        self.deadline = deadline or NEVER
        self.start = start
        self.end = end
        self.max_depth = max_depth
        self.repairs = []
        self.stack: list[Frame] = [Frame(K_TOP, [], S_VALUE_FIRST, start)]
        self.top_spans: list[tuple[int, int]] = []
        self.open_counts = {"}": 0, "]": 0, ")": 0}
        self.last_start = start
        self.last_end = start
        self.stopped = False
        self.dropped_closer = ""
        self.top_close_pos = -1
        self.fenced_quotes: list[tuple[int, str]] = []  # (depth, quote) of "```json {...}```"
        # last search for a closing fence, per quote: (searched from, found at)
        self.fence_close: dict[str, tuple[int, int]] = {}
        # Valid sub-values are decoded by the C decoder (see Values._decode_valid); a
        # failed attempt costs the text it read, and once that exceeds a multiple of the
        # input the attempts stop.
        self.waste_budget = WASTE_FACTOR * (end - start + 256)
        self.document: str | None = None  # the text as the C decoder is given it
        self.patches = ""  # the patches made to it (see _decoding.PATCHES), a letter each
        # the literal and comma sites patched, in order, with the repair each stands for
        self.patch_sites: list[tuple[int, Repair]] = []
        self.site_starts: list[int] = []  # (their positions, for bisect)
        # (where, why): the strict decode of the value at ``where`` is known to fail so
        self.known_failure: tuple[int, int, str] | None = None
        self.fast_streak = 0  # consecutive failed attempts
        self.fast_skip = 0  # attempts to skip before the next one
        # per list split by early ']': how far it was checked for a table (_regroup_row)
        self.rows_checked: dict[int, tuple[int, int]] = {}

    def _push(self, kind: int, container: Any, state: int, pos: int) -> Frame:
        stack = self.stack
        if len(stack) > self.max_depth:
            raise ParseFailure(
                f"nesting deeper than {self.max_depth} levels", position=pos, limit="depth"
            )
        frame = Frame(kind, container, state, pos)
        stack.append(frame)
        self.open_counts[CLOSER[kind] or "}"] += 1
        return frame

    def _set_key(self, frame: Frame, key: str, start: int, stop: int) -> None:
        """The object in ``frame`` has read ``key``, written at ``text[start:stop]``."""
        frame.key = key
        span = (start, stop)
        frame.key_span = span
        spans = frame.key_spans
        if spans is None:
            frame.key_spans = {key: span}
        elif key not in spans:
            spans[key] = span

    def _duplicate(self, frame: Frame) -> None:
        """The current key of ``frame`` already has a value: the new one replaces it."""
        key = frame.key
        here = frame.key_span or (self.last_start, self.last_end)
        spans = frame.key_spans
        first = spans.get(key, here) if spans is not None and key is not None else here
        if first == here:
            return  # the same key again (a value completed after a missing one)
        message = f"key {key!r} written twice in one object: the last value is kept"
        self._repair("parse.duplicate_key", here[0], here[1], GUESS, message, (first,))

    def _emit(self, value: Any, start: int, stop: int) -> None:
        frame = self.stack[-1]
        kind = frame.kind
        if kind in KEYED:
            if frame.key in frame.container:
                self._duplicate(frame)
            frame.container[frame.key] = value
            frame.state = S_OBJ_AFTER
        else:
            frame.container.append(value)
            frame.state = S_AFTER
            if kind == K_TOP:
                self.top_spans.append((start, stop))
        self.last_start = start
        self.last_end = stop

    def _set_missing(self, frame: Frame, pos: int, message: str) -> None:
        """A key without a value: null, unless the key already has one."""
        container = frame.container
        key = frame.key
        if key not in container:
            container[key] = None
        frame.state = S_OBJ_AFTER
        self._repair("parse.missing_value", pos, pos, GUESS, message)

    def _pop(self, close_start: int, close_stop: int) -> None:
        """Close the innermost frame and hand its value to the one below."""
        stack = self.stack
        frame = stack.pop()
        kind = frame.kind
        self.open_counts[CLOSER[kind] or "}"] -= 1
        state = frame.state
        if state in _NEXT_STATES and frame.comma >= 0:
            comma = frame.comma
            closer = CLOSER[kind]
            message = f"trailing comma before {closer!r}" if closer else "trailing comma"
            self._repair("parse.trailing_comma", comma, comma + 1, LOSSLESS, message)
        elif state in _VALUE_MISSING:
            self._set_missing(frame, close_start, "missing value read as null")
        value = frame.container
        if kind == K_ARR and frame.join_into is not None:
            frame.join_into.extend(value)
            stack[-1].state = S_OBJ_AFTER
            self.last_end = close_stop
            return
        if kind == K_PAREN:
            value = self._paren_value(frame, close_start, close_stop)
        if len(stack) == 1:
            self.top_close_pos = close_start if close_stop > close_start else -1
        self._emit(value, frame.open_pos, close_stop)

    def _paren_value(self, frame: Frame, close_start: int, close_stop: int) -> Any:
        items = frame.container
        name = frame.call
        open_pos = frame.open_pos
        if name is not None:
            code = name[2]
            if close_stop > close_start:
                self._repair(code, close_start, close_stop, LOSSLESS, f"')' of {name[0]}() removed")
            if len(items) == 1:
                return items[0]
            return items if items else None
        if frame.comma >= 0 or len(items) != 1:
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
        kind = frame.kind
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
            closer = CLOSER[kind]
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
        if frame.state == S_COLON and frame.kind in KEYED and self._key_cut(frame):
            self._drop_cut_key(frame)
        added = []
        while len(stack) > 1:
            closer = CLOSER[stack[-1].kind]
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
        if top.state == S_VALUE_NEXT and top.comma >= 0:
            comma = top.comma
            self._repair("parse.trailing_comma", comma, comma + 1, LOSSLESS, "trailing comma")

    def _key_cut(self, frame: Frame) -> bool:
        """Whether the end of the input cut the current key itself short (``"b`` or
        ``b``, not ``"b"``): then the key may be another one than what is there."""
        if frame.key_span is None:
            return False
        start, stop = frame.key_span or (self.end, self.end)  # (set: see _key_cut)
        closed = stop - start > 1 and self.text[stop - 1] in T.QUOTE_CHARS
        return (stop >= self.end and not closed) or any(
            r.code == "parse.truncated" and start <= r.start and r.end <= stop for r in self.repairs
        )

    def _drop_cut_key(self, frame: Frame) -> None:
        """``{"a": 1, "b``: the input ended inside a key. Neither the key nor its value
        is known, so the member is left out rather than given an invented null."""
        start, stop = frame.key_span or (self.end, self.end)  # (set: see _key_cut)
        # what was repaired inside the key (a closing quote added) no longer applies
        self.repairs[:] = [r for r in self.repairs if not (start <= r.start and r.end <= stop)]
        self._repair(
            "parse.truncated",
            start,
            self.end,
            GUESS,
            f"key {frame.key!r} cut off by the end of the input: left out",
        )
        frame.state = S_OBJ_AFTER
