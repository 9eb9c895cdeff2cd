"""Strings: where one ends, and what its content means.

A string is scanned in up to two passes. The first pass looks for the closing quote,
deciding at each quote of the right family whether it really ends the string (what
follows it, what precedes it, whether the content has an unclosed bracket). When the
text ends first, a second pass stops at the first plausible delimiter instead. Then the
content between the quotes is decoded once. Every lookahead in here is either bounded
(``LOOKAHEAD``) or covers text that the next step scans anyway, so a string of length
``n`` costs ``O(n)``.
"""

from __future__ import annotations

import json.decoder
from collections.abc import Callable
from typing import Any, Final

from llmfix.deadline import Deadline
from llmfix.model import Risk
from llmfix.repair_parser import _text as T
from llmfix.repair_parser._repair import (
    CLOSING_QUOTE_ADDED,
    GUESS,
    SAFE,
    SINGLE_QUOTED,
    ParseFailure,
    Repair,
)

# The C string scanner behind json.loads (typeshed does not list it).
_scanstring: Callable[[str, int, bool], tuple[str, int]]
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]

# Decisions about a quote.
END: Final = -1
INNER: Final = -2

# String contexts.
C_KEY: Final = 0
C_OBJ: Final = 1
C_ARR: Final = 2
C_TOP: Final = 3

# A value that is not there (an empty string cut off by the end of the input).
NOTHING: Final[Any] = object()

_DOUBLED_STOP = frozenset(",:}])[{(\n\r/#+" + T.QUOTE_CHARS)
_WS = frozenset(T.WS_CHARS)
_TRIGGERS = frozenset(",:[]{}()/+")


def _space_start(text: str, k: int, floor: int) -> int:
    """Where the run of JSON whitespace that ends at ``k`` starts (not before ``floor``).

    Stripped in windows at C speed, so that a long run costs no Python loop per space."""
    if k <= floor or text[k - 1] not in _WS:
        return k
    while k > floor:
        low = max(floor, k - 64)
        kept = len(text[low:k].rstrip(T.WS_CHARS))
        if kept:
            return low + kept
        k = low
    return floor


class _Brackets:
    """Net count of each bracket kind in ``text[start:pos]``, extended on demand."""

    __slots__ = ("curly", "paren", "pos", "square", "text")

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos
        self.paren = 0
        self.square = 0
        self.curly = 0

    def upto(self, end: int) -> None:
        start = self.pos
        if end > start:
            count = self.text.count
            self.paren += count("(", start, end) - count(")", start, end)
            self.square += count("[", start, end) - count("]", start, end)
            self.curly += count("{", start, end) - count("}", start, end)
            self.pos = end

    def unclosed(self, closer: str) -> bool:
        if closer == "}":
            return self.curly > 0
        if closer == "]":
            return self.square > 0
        return self.paren > 0


class StringScanner:
    """String scanning for the parser; the parser provides text, bounds and repairs."""

    text: str
    end: int
    repairs: list[Repair]
    deadline: Deadline

    def _repair(
        self,
        code: str,
        start: int,
        end: int,
        risk: Risk | None,
        message: str,
        related: tuple[tuple[int, int], ...] = (),
    ) -> None:
        self.repairs.append(Repair(code, start, end, risk, message, related))

    # -- entry point -------------------------------------------------------------------

    def scan_string(self, s: int, ctx: int) -> tuple[Any, int]:
        """The string whose opening quote is at ``s``: (value, where parsing resumes)."""
        text = self.text
        if text[s] == '"' and not self._doubled_open(s):
            try:
                value, stop = _scanstring(text, s + 1, True)
            except ValueError:
                pass
            else:
                if stop <= self.end and (
                    stop == self.end or self._decide(s + 1, stop - 1, ctx, None, 0) == END
                ):
                    return value, stop
        return self._scan_slow(s, ctx)

    def _doubled_open(self, s: int) -> bool:
        """``""word``: a string opened with a doubled quote (CSV style)."""
        text = self.text
        end = self.end
        q = text[s]
        if q not in "\"'" or s + 1 >= end or text[s + 1] != q:
            return False
        k = T.HSPACE.match(text, s + 2, end).end()  # type: ignore[union-attr]
        return k < end and text[k] not in _DOUBLED_STOP

    def _scan_slow(self, s: int, ctx: int) -> tuple[Any, int]:
        text = self.text
        end = self.end
        q = text[s]
        ends = T.END_QUOTES[q]
        run = T.STRING_RUN[q].match
        cstart = s + 1
        doubled = self._doubled_open(s)
        if doubled:
            cstart += 1
        brackets = _Brackets(text, cstart)
        inner = 0
        pos = cstart
        check_at = pos + T.CHUNK
        while True:
            pos = run(text, pos, end).end()  # type: ignore[union-attr]
            if pos >= end:
                break
            if pos >= check_at:  # a long string with many inner quotes or escapes
                self.deadline.check()
                check_at = pos + T.CHUNK
            ch = text[pos]
            if ch == "\\":
                pos += 2
                if pos >= end:
                    pos = end
                    break
                continue
            if ch in ends:
                if doubled and pos + 1 < end and text[pos + 1] == q:
                    return self._finish(s, cstart, pos, pos + 2, ctx, "doubled")
                decision = self._decide(cstart, pos, ctx, brackets, inner)
                if decision == END:
                    return self._finish(s, cstart, pos, pos + 1, ctx, "quote")
                if decision == INNER:
                    inner += 1
                    pos += 1
                    continue
                return self._finish(s, cstart, decision, decision, ctx, "cut")
            if ch in T.CONTROL_OK:
                pos += 1
                continue
            raise ParseFailure(f"invalid character U+{ord(ch):04X} inside a string", pos)
        stop = self._stop_at_delimiter(cstart, ctx)
        if stop >= 0:
            return self._finish(s, cstart, stop, stop, ctx, "stop")
        return self._finish(s, cstart, end, end, ctx, "eof")

    # -- is this quote the end? --------------------------------------------------------

    def _decide(self, cstart: int, p: int, ctx: int, br: _Brackets | None, inner: int) -> int:
        """END if the quote at ``p`` closes the string, INNER if it is part of it, or the
        index where the string should have ended (a missing closing quote). ``inner`` is
        how many quotes of this string were already found to be inner ones."""
        text = self.text
        end = self.end
        j = p + 1
        if j < end and text[j] in " \t":
            j = T.HSPACE.match(text, j, end).end()  # type: ignore[union-attr]
        if j >= end:
            return END
        c = text[j]
        if c == ",":
            if ctx == C_OBJ:
                return self._comma_after_value(cstart, p, j, br)
            return END
        if c == ":":
            if ctx == C_KEY:
                return END
            br = br or _Brackets(text, cstart)
            br.upto(p)
            return INNER if br.curly > 0 or br.square > 0 else END
        if c in "}])":
            br = br or _Brackets(text, cstart)
            br.upto(p)
            if br.unclosed(c) and self._text_after_closers(j, br):
                return INNER
            return END
        if c == "\n" or c == "\r":
            k = T.WS.match(text, j, end).end()  # type: ignore[union-attr]
            if k < end and text[k] in T.QUOTE_CHARS and self._closes_here(k):
                return INNER
            return END
        if c in T.QUOTE_CHARS:
            return INNER if self._closes_here(j) else END
        if c in "{[(+#":
            return END
        if c == "/":
            return END if j + 1 < end and text[j + 1] in "/*" else INNER
        if c in "0123456789" or j > p + 1:
            if ctx == C_KEY:
                return END
            br = br or _Brackets(text, cstart)
            br.upto(p)
            if br.curly > 0 or br.square > 0:
                return INNER
            if c in "0123456789":
                return END
            # a space, then a word: a missing comma or an inner quote
            if inner % 2 == 0:
                if ctx == C_ARR:
                    return END
                if ctx == C_OBJ:
                    run = T.UNQUOTED_RUN.match(text, j, min(end, j + T.LOOKAHEAD)).end()  # type: ignore[union-attr]
                    if run >= end or text[run] not in T.QUOTE_CHARS:
                        return END
        return self._cut_before(cstart, p, ctx, br)

    def _text_after_closers(self, j: int, br: _Brackets) -> bool:
        """``"(72") tall"``: after the closing brackets that match brackets opened in
        the string comes more text, not what can follow a JSON value."""
        text = self.text
        end = self.end
        paren, square, curly = br.paren, br.square, br.curly
        while j < end:
            c = text[j]
            if c == ")" and paren > 0:
                paren -= 1
            elif c == "]" and square > 0:
                square -= 1
            elif c == "}" and curly > 0:
                curly -= 1
            else:
                break
            j += 1
        if j < end and text[j] in " \t\n\r":
            j = T.WS.match(text, j, end).end()  # type: ignore[union-attr]
        if j >= end:
            return False
        c = text[j]
        if c in "}]):":
            return False
        if c == ",":
            k = T.WS.match(text, j + 1, end).end()  # type: ignore[union-attr]
            return k < end and not self._entry_at(k)
        return True

    def _entry_at(self, k: int) -> bool:
        """Whether what starts at ``k`` (after a comma) looks like the next key or value."""
        text = self.text
        c = text[k]
        if c in T.QUOTE_CHARS:
            return self._key_at(k) or c == '"'
        if c in "{[-0123456789}]":
            return True
        word = T.WORD.match(text, k, self.end)
        if word is not None and word.group() in T.KEYWORDS:
            return True
        return T.KEY_AHEAD.match(text, k, min(self.end, k + T.LOOKAHEAD)) is not None

    def _key_at(self, k: int) -> bool:
        """A quoted key starts at ``k``, or a quoted token too long to tell."""
        window = min(self.end, k + T.LOOKAHEAD)
        if T.QUOTED_KEY_AHEAD.match(self.text, k, window):
            return True
        return window < self.end and T.UNCLOSED_QUOTE.fullmatch(self.text, k, window) is not None

    def _comma_after_value(self, cstart: int, p: int, comma: int, br: _Brackets | None) -> int:
        """A quote then a comma inside an object value: the end if the next entry (or the
        end of the object) follows the comma."""
        text = self.text
        end = self.end
        k = T.WS.match(text, comma + 1, end).end()  # type: ignore[union-attr]
        if k >= end:
            return END
        c = text[k]
        if c in "}]{[":
            return END
        if c in T.QUOTE_CHARS:
            if self._key_at(k):
                return END
            br = br or _Brackets(text, cstart)
            br.upto(p)
            return INNER if br.curly > 0 or br.square > 0 else END
        if c == "/" and k + 1 < end and text[k + 1] in "/*":
            return END
        window = min(end, k + T.LOOKAHEAD)
        if T.KEY_AHEAD.match(text, k, window):
            return END
        word = T.WORD_THEN_KEY.match(text, k, window)
        if word and T.QUOTED_KEY_AHEAD.match(text, word.end(), window):
            return END
        return INNER

    def _closes_here(self, k: int) -> bool:
        """Whether the quote at ``k`` looks like a closing quote: followed by the end of
        the text, a closing bracket, or a comma and then a key or value."""
        text = self.text
        end = self.end
        j = T.WS.match(text, k + 1, end).end()  # type: ignore[union-attr]
        if j >= end:
            return True
        c = text[j]
        if c in "}]":
            return True
        if c != ",":
            return False
        j = T.WS.match(text, j + 1, end).end()  # type: ignore[union-attr]
        if j + 1 < end and text[j] == "/" and text[j + 1] == "/":
            nl = text.find("\n", j, min(end, j + T.LOOKAHEAD))
            if nl < 0:
                return False
            j = T.WS.match(text, nl, end).end()  # type: ignore[union-attr]
        if j >= end:
            return False
        if text[j] in T.QUOTE_CHARS:
            return True
        return T.KEY_AHEAD.match(text, j, min(end, j + T.LOOKAHEAD)) is not None

    def _cut_before(self, cstart: int, p: int, ctx: int, br: _Brackets | None) -> int:
        """A quote followed by a word: either an inner quote or the start of the next
        item, with the closing quote of this string missing before a delimiter."""
        text = self.text
        end = self.end
        k = _space_start(text, p, cstart) - 1
        if k < cstart:
            return INNER
        b = text[k]
        if b == ",":
            if ctx == C_OBJ:
                if T.QUOTED_KEY_AHEAD.match(text, p, min(end, p + T.LOOKAHEAD)):
                    return self._before_comment(cstart, k)
                return INNER
            return INNER if ctx == C_KEY else self._before_comment(cstart, k)
        if b == ":":
            if ctx == C_KEY:
                return k
            if ctx == C_OBJ:
                br = br or _Brackets(text, cstart)
                br.upto(p)
                if br.curly > 0:
                    return INNER
                comma = text.rfind(",", max(cstart, k - T.LOOKAHEAD), k)
                if comma >= 0 and T.KEY_BETWEEN.fullmatch(text, comma + 1, k):
                    return comma
            return INNER
        if b == "+":
            return INNER if ctx == C_KEY else self._before_comment(cstart, k)
        if b == "/" and k - 1 >= cstart and text[k - 1] == "*" and ctx != C_KEY:
            opener = text.rfind("/*", max(cstart, k - T.LOOKAHEAD), k - 1)
            if opener >= 0:
                m = _space_start(text, opener, cstart) - 1
                if m >= cstart and text[m] in ",+":
                    return m
            return INNER
        if (
            ctx == C_OBJ
            and text.find("\n", k + 1, p) >= 0
            and T.QUOTED_KEY_AHEAD.match(text, p, min(end, p + T.LOOKAHEAD))
        ):
            br = br or _Brackets(text, cstart)
            br.upto(p)
            if br.curly == 0:
                return k + 1
        return INNER

    def _before_comment(self, cstart: int, k: int) -> int:
        """Cut before a block comment that ends right before ``k``: ``"abc/* c */+``."""
        text = self.text
        m = _space_start(text, k, cstart) - 1
        if m - 1 >= cstart and text[m] == "/" and text[m - 1] == "*":
            opener = text.rfind("/*", max(cstart, m - T.LOOKAHEAD), m - 1)
            if opener >= 0:
                return opener
        return k

    def _stop_at_delimiter(self, cstart: int, ctx: int) -> int:
        """Where a string that runs to the end of the text should have ended, or -1.

        Only when the text ends in a delimiter (``["abc]``) is a missing closing quote
        assumed earlier than the end of the text.
        """
        text = self.text
        end = self.end
        k = _space_start(text, end, cstart) - 1
        if k < cstart or text[k] not in _TRIGGERS:
            return -1
        if ctx == C_KEY:
            pattern = T.STOP_KEY
        elif ctx == C_OBJ:
            pattern = T.STOP_OBJECT
        else:
            pattern = T.STOP_ARRAY
        check_at = cstart + T.CHUNK
        for m in pattern.finditer(text, cstart, end):
            p = m.start()
            if p >= check_at:
                self.deadline.check()
                check_at = p + T.CHUNK
            ch = text[p]
            if ch == "\\":
                continue
            if ctx == C_OBJ:
                if ch == "," and not self._key_or_close_after(p + 1):
                    continue
                if ch in "}]" and not self._end_of_object_after(p + 1):
                    continue
            return p
        return -1

    def _key_or_close_after(self, pos: int) -> bool:
        text = self.text
        end = self.end
        k = T.WS.match(text, pos, end).end()  # type: ignore[union-attr]
        if k >= end or text[k] in "}]":
            return True
        if text[k] in T.QUOTE_CHARS:
            return T.QUOTED_KEY_AHEAD.match(text, k, min(end, k + T.LOOKAHEAD)) is not None
        return T.KEY_AHEAD.match(text, k, min(end, k + T.LOOKAHEAD)) is not None

    def _end_of_object_after(self, pos: int) -> bool:
        text = self.text
        end = self.end
        k = T.WS.match(text, pos, end).end()  # type: ignore[union-attr]
        if k >= end or text[k] in ",}]":
            return True
        return self._key_or_close_after(k)

    # -- content -----------------------------------------------------------------------

    def _finish(
        self, s: int, cstart: int, cend: int, resume: int, ctx: int, how: str
    ) -> tuple[Any, int]:
        text = self.text
        q = text[s]
        closed = how == "quote" or how == "doubled"
        if closed:
            k = _space_start(text, cend, cstart)
            if k < cend and (text.find("\n", k, cend) >= 0 or text.find("\r", k, cend) >= 0):
                self._repair(
                    "parse.unescaped_control",
                    k,
                    cend,
                    GUESS,
                    "line break before the closing quote dropped",
                )
                cend = k
        else:
            cend = _space_start(text, cend, cstart)
        if how == "eof" and cstart >= self.end:
            self._repair("parse.truncated", s, self.end, GUESS, "unterminated empty string dropped")
            return NOTHING, resume
        value = self._decode(cstart, cend, q)
        if how == "eof":
            value = value.rstrip(" \t\n\r")
        if q == "'":
            self._repair("parse.single_quotes", s, resume, SAFE, SINGLE_QUOTED)
        elif q != '"':
            self._repair("parse.smart_quotes", s, resume, SAFE, f"string quoted with {q!r}")
        if how == "doubled":
            self._repair("parse.unescaped_quote", s, resume, GUESS, "doubled quotes read as one")
        elif how == "eof":
            self._repair("parse.truncated", s, self.end, GUESS, CLOSING_QUOTE_ADDED)
        elif not closed:
            self._repair("parse.missing_quote", cend, cend, GUESS, "closing quote added")
        return value, resume

    def _decode(self, a: int, b: int, q: str) -> str:
        """The content ``text[a:b]`` with escapes decoded, repairs recorded."""
        text = self.text
        special = T.STRING_SPECIAL[q].search
        m = special(text, a, b)
        if m is None:
            return text[a:b]
        parts: list[str] = []
        last = a
        repairs = self.repairs
        check_at = a + T.CHUNK
        while m is not None:
            i = m.start()
            if i >= check_at:  # long content full of escapes
                self.deadline.check()
                check_at = i + T.CHUNK
            if i > last:
                parts.append(text[last:i])
            tok = m.group()
            last = m.end()
            c0 = tok[0]
            if c0 == "\\":
                n = len(tok)
                if n == 6:
                    cp = int(tok[2:], 16)
                    if 0xD800 <= cp < 0xDC00 and text.startswith("\\u", last) and last + 6 <= b:
                        low = text[last + 2 : last + 6]
                        if T.HEX.fullmatch(low) and 0xDC00 <= int(low, 16) < 0xE000:
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (int(low, 16) - 0xDC00)
                            last += 6
                    parts.append(chr(cp))
                elif n == 1:
                    # a backslash that ends the content: cut off by the end of the input
                    self._repair("parse.truncated", i, i + 1, GUESS, "dangling backslash dropped")
                else:
                    e = tok[1]
                    mapped = T.ESCAPES.get(e)
                    if mapped is not None:
                        parts.append(mapped)
                    elif e == "u":
                        h = T.HEX.match(text, i + 2, b)
                        stop = h.end() if h else i + 2
                        if stop >= b and b == self.end:
                            self._repair(
                                "parse.truncated", i, b, GUESS, "incomplete \\u escape dropped"
                            )
                            last = b
                            break
                        raise ParseFailure("invalid unicode escape", i)
                    elif e in T.QUOTE_LIKE_ESCAPES:
                        parts.append(e)
                        if e not in T.END_QUOTES[q]:
                            repairs.append(
                                Repair("parse.invalid_escape", i, i + 2, SAFE, f"\\{e} read as {e}")
                            )
                    elif e == "\n" or e == "\r":
                        parts.append(e)
                        repairs.append(
                            Repair("parse.invalid_escape", i, i + 2, SAFE, "escaped line break")
                        )
                    else:
                        parts.append(tok)
                        repairs.append(
                            Repair(
                                "parse.invalid_escape",
                                i,
                                i + 2,
                                SAFE,
                                f"invalid escape \\{e} kept as a backslash",
                            )
                        )
            elif c0 < " ":
                if c0 not in T.CONTROL_OK:
                    raise ParseFailure(f"invalid character U+{ord(c0):04X} inside a string", i)
                parts.append(c0)
                prev = repairs[-1] if repairs else None
                if prev is not None and prev.code == "parse.unescaped_control" and prev.end == i:
                    repairs[-1] = prev._replace(end=i + 1)
                else:
                    repairs.append(
                        Repair(
                            "parse.unescaped_control",
                            i,
                            i + 1,
                            SAFE,
                            "raw control character escaped",
                        )
                    )
            else:
                parts.append(c0)
                repairs.append(
                    Repair("parse.unescaped_quote", i, i + 1, GUESS, "inner quote escaped")
                )
            m = special(text, last, b)
        if last < b:
            parts.append(text[last:b])
        return "".join(parts)
