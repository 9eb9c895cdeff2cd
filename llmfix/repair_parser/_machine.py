"""The lenient parser: one loop over tokens with an explicit stack of open containers.

Over 600 lines on purpose: the loop and its token dispatch are one class, so that a step
costs one method call (the layers below are modules of their own; see the list further on).

The loop looks at the next significant character and the state of the innermost frame,
consumes one token (or repairs the lack of one), and moves on; nothing recurses, so
the nesting depth is bounded by ``max_depth`` and not by Python's stack.

The parser is built in layers, each a class over the one before, so that a call from
one part to another costs what a method call on one class costs:
:class:`~._strings.StringScanner` (where a string ends, what it holds),
:class:`~._frames.Containers` (the stack of frames: open, fill, close),
:class:`~._trivia.Trivia` (whitespace, comments, fences), :class:`~._values.Values`
(one value: decoded at C speed, or a string, number, word or literal), and
:class:`Parser` here (the loop, and what each state does with the next character).
"""

from __future__ import annotations

import re
from typing import Any

from llmfix.jsontext import JsonNumber, read_float
from llmfix.repair_parser import _text as T
from llmfix.repair_parser._frames import (
    AFTER_STATES,
    ARRAY_LIKE,
    K_ARR,
    K_IMPL,
    K_OBJ,
    K_SET,
    K_TOP,
    KEYED,
    S_AFTER,
    S_COLON,
    S_KEY_FIRST,
    S_KEY_NEXT,
    S_OBJ_AFTER,
    S_OBJ_VALUE,
    S_VALUE_FIRST,
    S_VALUE_NEXT,
    Frame,
)
from llmfix.repair_parser._repair import (
    GUESS,
    LOSSLESS,
    SAFE,
    SINGLE_QUOTED,
    ParseFailure,
    Repair,
)
from llmfix.repair_parser._strings import C_ARR, C_KEY, C_OBJ, C_TOP, NOTHING
from llmfix.repair_parser._values import _NUMBER_START, Values, _scanstring

_VALUE_START = frozenset("{[(-0123456789" + T.QUOTE_CHARS)
_AFTER_NUMBER = frozenset(",}] \t\n\r")
_NEXT_ENTRY = frozenset("}]{[" + T.QUOTE_CHARS)
_SIMPLE_KEY = re.compile(r"([A-Za-z_$][\w$]*)[ \t]*:")
_SINGLE_QUOTED = re.compile(r"'([^'\\\x00-\x1f]*)'")


def _regroup_row(items: list[Any], checked: dict[int, tuple[int, int]]) -> bool:
    """``[[r1], [r2], a, b]`` → ``[[r1], [r2], [a, b]]``: the scalars after the rows of a
    table are a row whose ``[`` is missing. False (nothing changed) for other lists.

    A list split by early ``]`` is asked again each time it grows; ``checked`` keeps, per
    list, how many leading items are rows and how many items were looked at (rows -1:
    not a table, for good), so each item is looked at once in all."""
    key = id(items)
    rows, seen = checked.get(key, (0, 0))
    if rows < 0:
        return False
    size = len(items)
    for i in range(seen, size):
        item = items[i]
        if type(item) is list:
            if i != rows:
                checked[key] = (-1, size)  # rows and scalars interleaved: not a table
                return False
            rows += 1
        elif isinstance(item, (dict, list)):
            checked[key] = (-1, size)
            return False
    checked[key] = (rows, size)
    if rows == 0 or rows == size:
        return False
    tail = items[rows:]
    del items[rows:]
    items.append(tail)
    checked[key] = (rows + 1, rows + 1)
    return True


class Parser(Values):
    """Parses ``text[start:end]``; offsets in repairs are offsets into ``text``."""

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
        pos = self.start
        while pos < end and not self.stopped:
            # the deadline is checked once per CHUNK characters: every step either moves
            # on or is one of a bounded number that do not (closing frames), so this
            # bounds the work between two checks without counting steps
            deadline.check()
            limit = min(end, pos + T.CHUNK)
            while pos < limit:
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
                state = frame.state
                if state in AFTER_STATES:
                    if c == ",":
                        frame.comma = pos
                        frame.state = S_VALUE_NEXT if state == S_AFTER else S_KEY_NEXT
                        pos += 1
                    elif c in "}])":
                        pos = self._close(c, pos)
                    else:
                        pos = self._after_value(frame, c, pos)
                    continue
                kind = frame.kind
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
                                frame.state = S_OBJ_VALUE
                                pos = found[2] + 1
                            else:
                                frame.state = S_COLON
                                pos = found[1]
                            continue
                    else:
                        found = None
                    if found is not None:
                        value, stop, j = found
                        if kind in KEYED:
                            if frame.key in frame.container:
                                self._duplicate(frame)
                            frame.container[frame.key] = value
                            after = S_OBJ_AFTER
                        else:
                            frame.container.append(value)
                            after = S_AFTER
                            if kind == K_TOP:
                                self.top_spans.append((pos, stop))
                        self.last_start = pos
                        self.last_end = stop
                        if text[j] == ",":
                            frame.comma = j
                            frame.state = S_KEY_NEXT if after == S_OBJ_AFTER else S_VALUE_NEXT
                            pos = j + 1
                        else:
                            frame.state = after
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
                                if kind in KEYED:
                                    if frame.key in frame.container:
                                        self._duplicate(frame)
                                    frame.container[frame.key] = number
                                    frame.state = S_OBJ_AFTER
                                else:
                                    frame.container.append(number)
                                    frame.state = S_AFTER
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
        return stack[0].container  # type: ignore[no-any-return]

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
            self.repairs.append(Repair("parse.single_quotes", pos, stop, SAFE, SINGLE_QUOTED))
        return value, stop, j

    # -- states ------------------------------------------------------------------------

    def _array_slot(self, frame: Frame, state: int, c: str, pos: int) -> int:
        """An array-like frame (or the top level) expecting a value."""
        kind = frame.kind
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

    def _object_value(self, frame: Frame, c: str, pos: int) -> int:
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

    def _colon(self, frame: Frame, c: str, pos: int) -> int:
        if c == ":":
            frame.state = S_OBJ_VALUE
            return pos + 1
        if c == ",":
            if frame.kind == K_OBJ and not frame.container:
                # {'a', 'b'}: a Python set
                frame.kind = K_SET
                frame.container = [frame.key]
                frame.state = S_AFTER
                self._repair(
                    "parse.python_literal",
                    frame.open_pos,
                    frame.open_pos + 1,
                    SAFE,
                    "set read as an array",
                )
                return pos
            self._set_missing(frame, pos, "key without a value read as null")
            return pos
        if c in "}])":
            raise ParseFailure("colon expected after an object key", pos)
        self._repair("parse.missing_colon", self.last_end, self.last_end, SAFE, "missing ':'")
        frame.state = S_OBJ_VALUE
        return pos

    def _key(self, frame: Frame, state: int, c: str, pos: int) -> int:
        """An object expecting a key."""
        text = self.text
        end = self.end
        if c in T.QUOTE_CHARS:
            key, stop = self.scan_string(pos, C_KEY)
            if key is not NOTHING:
                self._set_key(frame, key, pos, stop)
                frame.state = S_COLON
                self.last_end = stop
            return stop
        if c in "}])":
            return self._close(c, pos)
        if c == ",":
            return self._extra_commas(pos, state == S_KEY_FIRST)
        if c == "[" and state == S_KEY_NEXT and frame.kind == K_OBJ:
            previous = frame.container.get(frame.key) if frame.container else None
            if type(previous) is list and self.last_end > 0 and text[self.last_end - 1] == "]":
                early = self.last_end - 1
                row_next = self._peek(pos + 1) < end and text[self._peek(pos + 1)] not in "[{"
                if row_next and _regroup_row(previous, self.rows_checked):
                    # {"rows": [["a"], "b", "c"], ["d"]]}: a row lost its '[', so its
                    # items ended the table early; they become a row, the table goes on
                    self._repair(
                        "parse.missing_opener",
                        early,
                        early + 1,
                        GUESS,
                        "'[' added before the items of a row",
                    )
                    self._push(K_ARR, [], S_VALUE_FIRST, pos).join_into = previous
                    return pos
                # {"a": [1], [2]}: the array went on after an early ']'
                self._repair(
                    "parse.redundant_closer", early, pos + 1, GUESS, "array split in two, joined"
                )
                self._push(K_ARR, [], S_VALUE_FIRST, pos).join_into = previous
                return pos + 1
        if (
            c == "{"
            and state == S_KEY_FIRST
            and frame.kind == K_OBJ
            and not frame.container
            and self.stack[-2].kind not in ARRAY_LIKE
        ):
            # {{"a": 1}}: a doubled brace (a run of them is one repair)
            stop = T.BRACE_RUN.match(text, pos, end).end()  # type: ignore[union-attr]
            self._repair("parse.redundant_closer", pos, stop, GUESS, "extra '{' removed")
            return stop
        if c == "{" or c == "[":
            # [{"a": 1, {"b": 2}]: the object ended without its '}'
            if state == S_KEY_NEXT:
                comma = frame.comma
                self._repair("parse.trailing_comma", comma, comma + 1, LOSSLESS, "trailing comma")
                frame.state = S_KEY_FIRST
            if frame.kind == K_OBJ:
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
            self.repairs.append(Repair("parse.unquoted_key", pos, stop, SAFE, "unquoted key"))
            self._set_key(frame, simple.group(1), pos, stop)
            frame.state = S_OBJ_VALUE
            self.last_end = stop
            return simple.end()
        return self._bare_key(frame, pos)

    def _bare_key(self, frame: Frame, pos: int) -> int:
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
                frame.state = S_COLON
                self.last_end = close
                return close
        self._repair("parse.unquoted_key", pos, stop, SAFE, "unquoted key")
        self._set_key(frame, m.group(), pos, stop)
        frame.state = S_COLON
        self.last_end = stop
        return stop

    def _after_value(self, frame: Frame, c: str, pos: int) -> int:
        """After a value, something other than a comma or a closer."""
        kind = frame.kind
        text = self.text
        if c == ":":
            items = frame.container
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
        if kind in KEYED:
            return self._object_missing_comma(frame, c, pos)
        if kind == K_TOP:
            if self._starts_value(c, pos):
                frame.state = S_VALUE_NEXT
                frame.comma = -1
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
        frame.state = S_VALUE_NEXT
        frame.comma = -1
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

    def _object_missing_comma(self, frame: Frame, c: str, pos: int) -> int:
        """After a value in an object: a key without the comma, or stray text."""
        text = self.text
        end = self.end
        if c == "{" or c == "[":
            if frame.kind == K_OBJ:
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
                frame.state = S_COLON
                self.last_end = stop
                return stop
            if key is not NOTHING and nxt and (nxt in _VALUE_START or nxt.isalpha()):
                self._repair(
                    "parse.missing_comma", self.last_end, self.last_end, GUESS, "missing ','"
                )
                self._repair("parse.missing_colon", stop, stop, SAFE, "missing ':'")
                self._set_key(frame, key, pos, stop)
                frame.state = S_OBJ_VALUE
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

    def _top_value(self, frame: Frame, state: int, c: str, pos: int) -> int:
        """A value at the top level: the first one, or one more after it."""
        text = self.text
        end = self.end
        items = frame.container
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
        check_at = pos + T.CHUNK
        for m in T.BARE_WORDS.finditer(text, pos, self.end):
            if m.start() >= check_at:  # many lines of words
                self.deadline.check()
                check_at = m.start() + T.CHUNK
            if T.WORD_CHAR.search(m.group(1)) is None:
                continue  # punctuation alone ('/', '?!') is not a word
            start, stop = m.span(1)
            self._repair("parse.unquoted_string", start, stop, GUESS, "words read as a string")
            self._emit(m.group(1), start, stop)
            found = True
        if not found:
            raise ParseFailure("no JSON value", pos)
        return self.end
