"""Values: strings, numbers, words and literals (containers are opened here, and read at
C speed by :mod:`._decoding` when they can be)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from llmfix.formats import fences
from llmfix.jsontext import (
    JsonNumber,
    read_float,
)
from llmfix.repair_parser import _text as T
from llmfix.repair_parser._decoding import Decoding
from llmfix.repair_parser._frames import (
    K_ARR,
    K_OBJ,
    K_PAREN,
    S_KEY_FIRST,
    S_OBJ_VALUE,
    S_VALUE_FIRST,
)
from llmfix.repair_parser._repair import (
    GUESS,
    LOSSLESS,
    NOTE,
    SAFE,
)
from llmfix.repair_parser._strings import C_ARR, C_OBJ, C_TOP, NOTHING

_scanstring: Callable[[str, int, bool], tuple[str, int]]
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]

_NUMBER_START = frozenset("-0123456789.")


class Values(Decoding):
    """Reading one value where the parser expects one."""

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
        fence_end = fences.marker_end(text, pos + 1, end)
        if fence_end == pos + 1:
            return pos
        start = T.WS.match(text, fence_end, end).end()  # type: ignore[union-attr]
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
        self._repair("parse.fence", pos, fence_end, LOSSLESS, "markdown fence removed")
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
                self._push(K_PAREN, [], S_VALUE_FIRST, pos).call = (name, pos, code)
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
        check_at = pos + T.CHUNK
        while True:
            p = run(text, p, end).end()  # type: ignore[union-attr]
            if p >= end:
                stop = resume = end
                break
            if p >= check_at:  # a long value with many brackets or commas inside
                self.deadline.check()
                check_at = p + T.CHUNK
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
            if self.stack[-1].state == S_OBJ_VALUE:
                self._set_missing(self.stack[-1], stop, "missing value read as null")
            return stop
        after = self._skip(stop) if stop < end and text[stop] in T.TRIVIA_START else stop
        if after < end and text[after] == "+":
            parts = [value]
            check_at = after + T.CHUNK
            while after < end and text[after] == "+":
                if after >= check_at:  # "a" + "b" + ... many times
                    self.deadline.check()
                    check_at = after + T.CHUNK
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
            rewritten = float(plain) if any(ch in plain for ch in ".eE") else int(plain)
            self._emit(self._finite(rewritten, pos, stop), pos, stop)
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
            self._emit(self._finite(value, pos, stop), pos, stop)
            return stop
        value_text, _, resume = self._unquoted(pos, C_ARR if ctx == C_TOP else ctx)
        if resume == pos:
            self._repair("parse.stray_text", pos, pos + 1, GUESS, f"stray {text[pos]!r} removed")
            return pos + 1
        self._repair("parse.invalid_number", pos, resume, GUESS, "invalid number kept as text")
        self._emit(value_text, pos, resume)
        return resume

    def _finite(self, value: Any, pos: int, stop: int) -> Any:
        """A number made from a rewritten token, or null when it overflowed to infinity
        (JSON cannot hold it, and the token as written was not a number to keep)."""
        if type(value) is float and not math.isfinite(value):
            self._repair(
                "parse.invalid_number", pos, stop, GUESS, "beyond the float range, read as null"
            )
            return None
        return value

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


def _json_word(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "null"


def _clip(token: str) -> str:
    return token if len(token) <= 24 else f"{token[:10]}...{token[-10:]} ({len(token)} digits)"
