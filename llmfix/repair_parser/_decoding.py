"""Containers read at C speed: the parser hands each ``{`` or ``[`` to the C decoder first.

A container that is strict JSON is one C call, and only one that is not goes token by
token. Two shortcuts widen that, each giving exactly the repairs the token loop would give
(``tests/test_repair_parser.py`` compares the readings with each shortcut on and off):

- *patches* (:data:`PATCHES`): when a decode fails on a Python literal, a trailing comma or
  a single quote, the decoder's copy of the text gets that fix everywhere at once, with the
  same length, so every position is still the text's; a container read from the copy counts
  only when no patched place lies inside one of its strings;
- *completion* (:data:`COMPLETION`): a top-level container the end of the input cut off,
  strict JSON up to the cut, is read with its closing quote and brackets added when it ends
  plainly.
"""

from __future__ import annotations

import json
import re
import sys
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from llmfix.deadline import CHECK_EVERY, Deadline
from llmfix.jsontext import DuplicateKey, OutOfRange, read_float_or_raise, unique_object
from llmfix.repair_parser._repair import (
    CLOSING_QUOTE_ADDED,
    GUESS,
    LOSSLESS,
    SAFE,
    SINGLE_QUOTED,
    ParseFailure,
    Repair,
)
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

_CHECK_MASK = CHECK_EVERY - 1


def _unclosed(doc: str, start: int, stop: int) -> str | None:
    """The brackets ``doc[start:stop]`` opens and does not close, in order, when it is a
    strict JSON prefix (strings cut out by their quotes and escapes); ``None`` when more
    nesting levels are open than are worth pairing here."""
    prefix = doc[start:stop]
    # (with no escape, every other piece between quotes is outside a string: memchr)
    outside = _JSON_STRING.sub("", prefix) if "\\" in prefix else "".join(prefix.split('"')[::2])
    brackets = outside.translate(_ONLY_BRACKETS)
    for _ in range(_MAX_PAIRING):
        reduced = _PAIR.sub("", brackets)
        if len(reduced) == len(brackets):
            return brackets
        brackets = reduced
    return None


def _literal_at(text: str, at: int) -> bool:
    """Whether the literal at ``at`` is a word of its own (not the end of one)."""
    return at == 0 or not _WORD_CHAR.match(text, at - 1)


class Decoding(Trivia):
    """Containers read by the C decoder (see the module docstring)."""

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
        known = self.known_failure
        if known is not None and known[0] == pos:
            # the caller's strict decode of this same value failed: not asked again
            self.known_failure = None
            return self._failed(pos, known[1], known[2])
        try:
            value, stop = _scan_once(doc, pos)
        except json.JSONDecodeError as err:
            return self._failed(pos, err.pos, err.msg)
        except StopIteration as err:
            return self._failed(pos, err.value, "")
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

    def _failed(self, pos: int, at: int, message: str) -> int:
        """The decode of the container at ``pos`` failed at ``at`` (with ``message``, when
        it said why): patched and decoded again, completed when the end of the input cut
        it off, or -1 (the token loop reads it)."""
        if PATCHES and self._patch(at):
            self.waste_budget -= at - pos + 1
            return self._decode_valid(pos)  # once per kind of patch at most
        size = len(self.text)
        if message.startswith("Unterminated string"):
            # the text ends inside a string (the position is the string's start)
            self.waste_budget -= size - pos
            return self._complete(pos, at)
        self.waste_budget -= at - pos + 1
        if at < size:
            self._fast_failed()
            return -1
        # else: cut off, not broken: the containers inside that are closed are still
        # worth decoding, so the attempts go on (the waste budget still bounds them)
        return self._complete(pos, -1)

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
        else:
            # One pass both patches the copy and notes the repair each site stands for
            # (a container read from the copy takes those in its span).
            check = self.deadline.check
            sites: list[tuple[int, Repair]] = []
            add = sites.append

            def as_json(m: re.Match[str]) -> str:
                if not len(sites) & _CHECK_MASK:
                    check()
                word = m.group()
                at = m.start()
                if not _literal_at(text, at):
                    return word
                add((at, Repair("parse.python_literal", at, m.end(), SAFE, _LITERAL_MESSAGE[word])))
                return _AS_JSON[word]

            def as_space(m: re.Match[str]) -> str:
                if not len(sites) & _CHECK_MASK:
                    check()
                at = m.start()
                message = _COMMA_BEFORE[m.group(1)]
                add((at, Repair("parse.trailing_comma", at, at + 1, LOSSLESS, message)))
                return " "

            doc = (_LITERAL_SITE if kind == "l" else _COMMA_SITE).sub(
                as_json if kind == "l" else as_space, doc
            )
            if self.patch_sites:
                sites = sorted(self.patch_sites + sites)  # (a place holds one site)
            self.patch_sites = sites
            self.site_starts = [at for at, _ in sites]
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
        # the literal and comma sites patched inside the span, in order
        starts = self.site_starts
        sites = self.patch_sites[bisect_left(starts, pos) : bisect_left(starts, stop)]
        for i, (at, repair) in enumerate(sites):
            if not i & _CHECK_MASK:
                check()
            if repair.code == "parse.trailing_comma":
                before = at - 1  # (text[pos] opens the container: the loop stops there)
                while text[before] in " \t\n\r":
                    before -= 1
                if text[before] in "[{,":
                    return None  # [,] holds a leading comma, not a trailing one
        if not sites:
            return repairs
        if backslash and quote == '"' and text.find("\\\\", pos, stop) >= 0:
            return None  # escaped backslashes: quotes are not counted here
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
