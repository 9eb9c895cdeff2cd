"""Values: containers decoded at C speed, strings, numbers, words and literals."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

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
from llmfix.repair_parser._frames import (
    K_ARR,
    K_OBJ,
    K_PAREN,
    S_KEY_FIRST,
    S_OBJ_VALUE,
    S_VALUE_FIRST,
)
from llmfix.repair_parser._repair import (
    CLOSING_QUOTE_ADDED,
    GUESS,
    LOSSLESS,
    NOTE,
    SAFE,
    SINGLE_QUOTED,
    ParseFailure,
    Repair,
)
from llmfix.repair_parser._strings import C_ARR, C_OBJ, C_TOP, NOTHING
from llmfix.repair_parser._trivia import Trivia


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
# The C scanners behind json.loads (typeshed does not list them).
_scan_once: Callable[[str, int], tuple[Any, int]]
_scan_once = _DECODER.scan_once  # type: ignore[attr-defined]
_scanstring: Callable[[str, int, bool], tuple[str, int]]
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
_MAX_SKIP = 32
_SINGLE_QUOTE = re.compile("'")

# Same-length patches of the C decoder's copy of the text, each made once per document
# when a decode first fails on what it fixes: Python literals spelt as JSON's, a trailing
# comma made a space, single quotes made double. Each container the C decoder then reads
# is checked against the text (every patched place must lie outside its strings) and gets
# the repairs the token loop would have made there; one that fails the check is read the
# long way. Lengths do not change, so every position stays the text's.
PATCHES = True
# (the word before its lookahead: a leading lookbehind would cost a test per character;
# what comes before a site is checked by _literal_at)
_LITERAL_SITE = re.compile(r"(?:True|False|None)(?=[ \t\n\r]*[,\]}])")
_WORD_CHAR = re.compile(r"[\w$]")
_COMMA_SITE = re.compile(r",(?=[ \t\n\r]*([\]}]))")
_AS_JSON = {"True": "true", "False": "false", "None": "null"}
_LITERAL_MESSAGE = {word: f"{word} read as {json}" for word, json in _AS_JSON.items()}
_COMMA_BEFORE = {"]": "trailing comma before ']'", "}": "trailing comma before '}'"}
_LOOK_BACK = 64  # how far before a closer a trailing comma is looked for

# Completing a top-level container the end of the input cut off (Values._complete).
COMPLETION = True
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_ONLY_BRACKETS = dict.fromkeys(c for c in range(128) if chr(c) not in "{}[]")
_PAIR = re.compile(r"\{\}|\[\]")
# A cut string's text that the token loop reads to the end as it is: words, spaces and
# some punctuation (no comma, colon, bracket, quote, '+', comment, tag or fence).
_PLAIN_CUT = re.compile(r"[\w .!?'%&@$-]*")
_MAX_PAIRING = 64  # nesting levels paired a pass each; deeper takes the token loop
_CLOSER_OF = {"{": "}", "[": "]"}

_NUMBER_START = frozenset("-0123456789.")
_CHECK_MASK = CHECK_EVERY - 1


def _unclosed(doc: str, start: int, stop: int) -> str | None:
    """The brackets ``doc[start:stop]`` opens and does not close, in order, when it is a
    strict JSON prefix (strings cut out by their quotes and escapes); ``None`` when more
    nesting levels are open than are worth pairing here."""
    brackets = _JSON_STRING.sub("", doc[start:stop]).translate(_ONLY_BRACKETS)
    for _ in range(_MAX_PAIRING):
        reduced = _PAIR.sub("", brackets)
        if len(reduced) == len(brackets):
            return brackets
        brackets = reduced
    return None


def _literal_at(text: str, at: int) -> bool:
    """Whether the literal at ``at`` is a word of its own (not the end of one)."""
    return at == 0 or not _WORD_CHAR.match(text, at - 1)


class Values(Trivia):
    """Reading one value where the parser expects one."""

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
            known = self.known_failure
            if known is not None and known[0] == pos:
                # the caller's strict decode of this same value failed: not asked again
                self.known_failure = None
                raise json.JSONDecodeError(known[2], doc, known[1])
            value, stop = _scan_once(doc, pos)
        except json.JSONDecodeError as err:
            if PATCHES and self._patch(err.pos):
                self.waste_budget -= err.pos - pos + 1
                return self._decode_valid(pos)  # once per kind of patch at most
            if err.msg.startswith("Unterminated string"):
                # the text ends inside a string (the position is the string's start)
                self.waste_budget -= len(doc) - pos
                return self._complete(pos, err.pos)
            self.waste_budget -= err.pos - pos + 1
            if err.pos < len(doc):
                self._fast_failed()
                return -1
            # else: cut off, not broken: the containers inside that are closed are still
            # worth decoding, so the attempts go on (the waste budget still bounds them)
            return self._complete(pos, -1)
        except StopIteration as err:
            if PATCHES and self._patch(err.value):
                self.waste_budget -= err.value - pos + 1
                return self._decode_valid(pos)
            self.waste_budget -= err.value - pos + 1
            if err.value < len(doc):
                self._fast_failed()
                return -1
            return self._complete(pos, -1)
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
        return self._accept(value, pos, stop)

    def _accept(self, value: Any, pos: int, stop: int, cut: list[Repair] | None = None) -> int:
        """The container decoded at ``pos`` (to ``stop``) is read: its patches' repairs
        (and ``cut``'s, when it was completed at the end of the input) are made."""
        if self.patches:
            repairs = self._patched_repairs(pos, stop)
            if repairs is None:  # a patch changed a string's text: the long way
                self.waste_budget -= stop - pos
                self._fast_failed()
                return -1
            self.repairs += repairs
        if cut is not None:
            self.repairs += cut
        self.fast_streak = 0
        if len(self.stack) == 1 and cut is None:
            self.top_close_pos = stop - 1
        room = self.max_depth - (len(self.stack) - 1)
        # the C decoder cannot nest deeper than the recursion limit; below that, check
        # (no walk when the text holds too few brackets to nest that deep: a count of
        # them, strings included, is an upper bound)
        if (
            room < sys.getrecursionlimit()
            and 2 * room < stop - pos
            and self.text.count("[", pos, stop) + self.text.count("{", pos, stop) > room
            and not _within(value, room, self.deadline)
        ):
            raise ParseFailure(
                f"nesting deeper than {self.max_depth} levels", position=pos, limit="depth"
            )
        self._emit(value, pos, stop)
        return stop

    def _complete(self, pos: int, cut_string: int) -> int:
        """A top-level container that the end of the input cut off, read by the C decoder
        with its closers added (and a closing quote, when ``cut_string`` is where a cut
        string value starts): what was read up to the end is strict JSON, and the end is
        one the token loop closes plainly (a string value of words after ':' or '[', or a
        closer or an opener before the end), so its repairs are known. -1 when it is not
        that (checked before the brackets are paired, a pass over the text)."""
        text = self.text
        end = self.end
        if not COMPLETION or len(self.stack) != 1 or end != len(text) or "'" in self.patches:
            return -1
        doc = self.document
        assert doc is not None
        if cut_string >= 0:
            if (
                end - cut_string < 2
                or text[end - 1] in " \t\n\r"
                or not _PLAIN_CUT.fullmatch(text, cut_string + 1, end)
            ):
                # an empty string is dropped, trailing spaces trimmed, and text that may
                # be structure (a comma, a bracket...) weighed by the token loop
                return -1
            before = cut_string - 1
            while text[before] in " \t\n\r":
                before -= 1
            if text[before] not in ":[":
                # a key cut short is left out, not completed; after a comma it may be
                # either, and the token loop knows which
                return -1
            opened = _unclosed(doc, pos, cut_string)
            if opened is None:
                return -1
        else:
            tail = end - 1
            while tail > pos and text[tail] in " \t\n\r":
                tail -= 1
            if text[tail] not in "{[]}":
                return -1  # a number, a word, a comma...: the token loop's rules
            opened = _unclosed(doc, pos, end)
            if opened is None:
                return -1
        closers = "".join(_CLOSER_OF[c] for c in reversed(opened))
        suffix = ('"' if cut_string >= 0 else "") + closers
        try:
            value, stop = _scan_once(_Document(str(doc) + suffix), pos)
        except (StopIteration, ValueError, RecursionError):
            return -1
        if stop != end + len(suffix):
            return -1
        # as the token loop reports them: a closing quote, then the closers (a guess
        # after a number at the end, which may itself be cut short)
        cut = []
        if cut_string >= 0:
            cut.append(Repair("parse.truncated", cut_string, end, GUESS, CLOSING_QUOTE_ADDED))
        tail_char = text[max(0, end - 64) : end].rstrip()[-1:]
        risk = GUESS if tail_char.isdigit() or tail_char == "." else SAFE
        cut.append(Repair("parse.truncated", end, end, risk, f"added {closers!r} at end of input"))
        return self._accept(value, pos, end, cut)

    def _patch(self, at: int) -> bool:
        """Patch the C decoder's copy for what its decode failed on at ``at``, when that
        is one of the patches (:data:`PATCHES`) and it was not made yet."""
        text = self.text
        if at >= len(text):
            return False
        c = text[at]
        if c == "'":
            kind = "'"
        elif c in "TFN" and _LITERAL_SITE.match(text, at) and _literal_at(text, at):
            kind = "l"
        elif (c == "," and _COMMA_SITE.match(text, at)) or (
            c in "]}" and text[max(0, at - _LOOK_BACK) : at].rstrip(" \t\n\r").endswith(",")
        ):
            kind = ","
        else:
            return False
        if kind in self.patches:
            return False
        doc = str(self.document)
        if kind == "'":
            doc = doc.replace("'", '"')
        elif kind == "l":
            check = self.deadline.check
            seen = 0

            def as_json(m: re.Match[str]) -> str:
                nonlocal seen
                seen += 1
                if not seen & _CHECK_MASK:
                    check()
                word = m.group()
                return _AS_JSON[word] if _literal_at(text, m.start()) else word

            doc = _LITERAL_SITE.sub(as_json, doc)
        else:
            doc = _COMMA_SITE.sub(" ", doc)
        self.document = _Document(doc)
        self.patches += kind
        return True

    def _patched_repairs(self, pos: int, stop: int) -> list[Repair] | None:
        """The repairs that the patches inside ``text[pos:stop]`` stand for (a container
        the C decoder read from the patched copy), or ``None`` when a patched place lies
        inside one of its strings: then the value read is not the text's."""
        text = self.text
        patches = self.patches
        check = self.deadline.check
        repairs: list[Repair] = []
        quote = '"'
        backslash = text.find("\\", pos, stop) >= 0
        if "'" in patches and text.find("'", pos, stop) >= 0:
            # every single quote was made double: only a container whose strings are all
            # single-quoted (and hold no escape) reads as the text does
            if backslash or text.find('"', pos, stop) >= 0:
                return None
            quote = "'"
            marks = [m.start() for m in _SINGLE_QUOTE.finditer(text, pos, stop)]
            # (the strict decode paired them: an even count, open and close in turn)
            for i in range(0, len(marks), 2):
                if not i & _CHECK_MASK:
                    check()
                repairs.append(
                    Repair("parse.single_quotes", marks[i], marks[i + 1] + 1, SAFE, SINGLE_QUOTED)
                )
        sites: list[tuple[int, Repair]] = []
        if "l" in patches:
            for m in _LITERAL_SITE.finditer(text, pos, stop):
                at = m.start()
                if not len(sites) & _CHECK_MASK:
                    check()
                if _literal_at(text, at):
                    message = _LITERAL_MESSAGE[m.group()]
                    sites.append((at, Repair("parse.python_literal", at, m.end(), SAFE, message)))
        if "," in patches:
            for m in _COMMA_SITE.finditer(text, pos, stop):
                at = m.start()
                if not len(sites) & _CHECK_MASK:
                    check()
                before = at - 1  # (text[pos] opens the container: the loop stops there)
                while text[before] in " \t\n\r":
                    before -= 1
                if text[before] in "[{,":
                    return None  # [,] holds a leading comma, not a trailing one
                message = _COMMA_BEFORE[m.group(1)]
                sites.append((at, Repair("parse.trailing_comma", at, at + 1, LOSSLESS, message)))
        if not sites:
            return repairs
        if backslash and quote == '"' and text.find("\\\\", pos, stop) >= 0:
            return None  # escaped backslashes: quotes are not counted here
        sites.sort()
        escaped = "\\" + quote
        count = text.count
        inside = 0
        last = pos
        for i, (at, repair) in enumerate(sites):
            if not i & _CHECK_MASK:
                check()
            inside += count(quote, last, at)
            if backslash:
                inside -= count(escaped, last, at)
            if inside & 1:
                return None
            last = at
            repairs.append(repair)
        return repairs

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
        from llmfix.formats import fences  # rarely needed: loaded on first use

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


def _within(value: Any, room: int, deadline: Deadline) -> bool:
    """Whether the containers in ``value`` nest at most ``room`` deep."""
    todo = [(value, 1)]
    steps = 0
    while todo:
        steps += 1
        if not steps & _CHECK_MASK:  # a large value decoded near the depth limit
            deadline.check()
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
