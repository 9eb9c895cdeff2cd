"""Normalize stage: find reasoning blocks in a response and clean a JSON payload.

Two functions with two different scopes:

- :func:`normalize_document` looks at the whole response. It never changes the text
  (every later span indexes into it); it only records where the reasoning blocks
  (``<think>``, ``<thinking>``, ``<reasoning>``, ``<scratchpad>``) are, so that a
  value found inside one can be reported as such.
- :func:`clean_payload` runs on one candidate's text (the JSON payload, never the
  user's prose). It removes invisible characters and applies Unicode NFKC to the
  JSON structure, and can map every index of the cleaned text back to the payload.
"""

from __future__ import annotations

import bisect
import operator
import re
import unicodedata
from dataclasses import dataclass, field

from llmfix import codes
from llmfix.formats.envelopes import reasoning_close, reasoning_tag
from llmfix.model import Diagnostic, LineIndex, Risk, Span

STAGE = "normalize"

# Characters that never carry meaning in a JSON payload's structure: NUL, the byte
# order mark (U+FEFF, also "zero width no-break space"), zero-width characters and
# bidirectional controls. A regex character class, shared with the extract stage.
INVISIBLE_CLASS = "\x00\ufeff\u200b-\u200f\u2060-\u2064\u180e\u061c\u202a-\u202e\u2066-\u2069"
_INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]")
_INVISIBLE_RUN = re.compile(f"[{INVISIBLE_CLASS}]+")
# Inside a string literal, ZWNJ and ZWJ (U+200C, U+200D) are part of the text: they
# join emoji sequences and shape Persian and Indic scripts, so removing them would
# change the value. Every other invisible character is removed everywhere.
_INVISIBLE_IN_STRING_RUN = re.compile(
    "[\x00\ufeff\u200b\u200e\u200f\u2060-\u2064\u180e\u061c\u202a-\u202e\u2066-\u2069]+"
)
# Runs of visible non-ASCII characters: the only places NFKC can change.
_UNSTABLE_CANDIDATE = re.compile(f"[^\x00-\x7f{INVISIBLE_CLASS}]+")
# Anything outside ASCII (or NUL) may be an invisible character or change under
# NFKC; other ASCII needs no cleaning at all (the common case).
_NEEDS_CLEANING = re.compile("[^\x01-\x7f]")

# String delimiters as they appear before NFKC: ASCII and fullwidth quotes.
_QUOTE = re.compile("[\"'\uff02\uff07]")
_DOUBLE_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.S)
_FULLWIDTH_DOUBLE_BODY = re.compile('[^"\uff02\\\\]*(?:\\\\.[^"\uff02\\\\]*)*', re.S)
_SINGLE_BODY = re.compile("[^'\uff07\\\\]*(?:\\\\.[^'\uff07\\\\]*)*", re.S)
# A single quote opens a string only where a value or key can start (after one of
# these, or at the start of the payload); elsewhere it is an apostrophe ("it's").
_VALUE_POSITION = frozenset("{[,:\uff5b\uff3b\uff0c\uff1a")
_BLANK = frozenset(" \t\r\n\u3000") | frozenset(
    chr(c) for c in (0, 0xFEFF, 0x180E, 0x061C, *range(0x200B, 0x2010), *range(0x2060, 0x2065))
)


@dataclass(frozen=True)
class Document:
    """A response as received, plus where its reasoning blocks are.

    ``text`` is the raw input, unchanged: every span of every later stage indexes
    into it. ``reasoning`` holds each whole reasoning block, tags included: a
    ``<think>…</think>`` (or ``<thinking>``, ``<reasoning>``, ``<scratchpad>``) block,
    an unterminated one (running to the end of the text), or a bare leading
    ``…</think>`` whose opening tag was part of the prompt (some chat templates).
    """

    text: str
    reasoning: tuple[Span, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()

    def in_reasoning(self, span: Span) -> bool:
        """Whether ``span`` lies wholly inside one reasoning block."""
        blocks = self.reasoning
        if not blocks:
            return False
        i = bisect.bisect_right(blocks, span.start, key=lambda b: b.start) - 1
        return i >= 0 and blocks[i].start <= span.start and span.end <= blocks[i].end


def normalize_document(text: str) -> Document:
    """Find the reasoning blocks of ``text`` (which is kept as is)."""
    if "<" not in text and not text.startswith("\ufeff"):
        return Document(text)
    blocks: list[tuple[int, int, str, str]] = []  # start, end, tag, kind
    pos = 0
    first = True
    while True:
        m = reasoning_tag(text, pos)
        if m is None:
            break
        name = m.group(2).lower()
        if m.group(1):
            # A closing tag before any opening one: the block began in the prompt.
            if first:
                blocks.append((0, m.end(), name, "unopened"))
            first = False
            pos = m.end()
            continue
        first = False
        close = reasoning_close(name, text, m.end())
        if close is None:
            blocks.append((m.start(), len(text), name, "unterminated"))
            break
        blocks.append((m.start(), close.end(), name, "closed"))
        pos = close.end()

    has_bom = text.startswith("\ufeff")
    if not blocks and not has_bom:
        return Document(text)
    diagnostics: list[Diagnostic] = []
    lines = LineIndex(text)
    if has_bom:
        diagnostics.append(
            # An observation: removing it from a payload is clean_payload's
            # normalize.invisible_chars, which carries the risk tier.
            codes.NORMALIZE_BOM.at(
                "the text starts with a byte order mark (U+FEFF)",
                span=Span(0, 1),
                position=lines.position(0),
            )
        )
    for start, end, name, kind in blocks:
        span = Span(start, end)
        position = lines.position(start)
        described = {
            "closed": f"<{name}> block",
            "unopened": f"leading block closed by </{name}> (opened before the response)",
            "unterminated": f"unterminated <{name}> block",
        }[kind]
        diagnostics.append(
            codes.NORMALIZE_REASONING_BLOCK.at(
                f"reasoning set aside: {described}, {end - start} characters",
                span=span,
                position=position,
                data={"tag": name, "kind": kind},
            )
        )
        if kind == "unterminated":
            diagnostics.append(
                codes.NORMALIZE_UNTERMINATED_REASONING.at(
                    f"<{name}> is never closed: the response may have been cut off "
                    "while still reasoning",
                    span=span,
                    position=position,
                    hint="raise the output token limit, or check that the model finished",
                    data={"tag": name},
                )
            )
    return Document(
        text,
        tuple(Span(start, end) for start, end, _, _ in blocks),
        tuple(diagnostics),
    )


@dataclass(frozen=True)
class Payload:
    """A cleaned JSON payload, and how to find its characters in the original.

    ``diagnostics`` have spans relative to the payload text given to
    :func:`clean_payload` (shift them by the candidate's start for the raw input).
    """

    text: str
    removed: int = 0
    diagnostics: tuple[Diagnostic, ...] = ()
    # (index in cleaned text, index in original, whether the stretch up to the next
    # anchor maps one to one); empty when nothing changed.
    _anchors: tuple[tuple[int, int, bool], ...] = field(default=(), repr=False, compare=False)

    def to_source(self, index: int) -> int:
        """The index in the original payload of the character at ``index`` here.

        An index inside a character that NFKC expanded (``…`` became ``...``) maps
        to that character; ``len(self.text)`` maps to the end of the original.
        """
        anchors = self._anchors
        if not anchors:
            return index
        i = bisect.bisect_right(anchors, index, key=lambda a: a[0]) - 1
        if i < 0:
            return index
        clean, orig, identity = anchors[i]
        return orig + (index - clean) if identity else orig


def clean_payload(text: str) -> Payload:
    """Remove invisible characters from a JSON payload and NFKC its structure.

    Decisions, so that a payload's values are never changed by guesswork:

    - NUL, BOM, zero-width characters (U+200B–U+200D, U+2060–U+2064, U+180E) and
      bidi controls (U+200E/F, U+061C, U+202A–U+202E, U+2066–U+2069) are removed
      everywhere in the payload, *except* ZWJ (U+200D) and ZWNJ (U+200C) inside
      string literals, which are part of emoji sequences and of Persian and Indic
      words. Reported once as ``normalize.invisible_chars``.
    - NFKC applies only outside string literals, where it turns fullwidth and other
      compatibility forms of the JSON structure (``｛＂a＂：１｝``, ideographic spaces,
      fullwidth ``ｔｒｕｅ``) into ASCII. String contents keep their exact text, except
      in a string opened by a fullwidth quote (``＂ｎａｍｅ＂``), which was typed in
      fullwidth mode as a whole and is normalized too. Reported once as
      ``normalize.nfkc``.

    Strings are recognised as ``"…"`` (also opened by a fullwidth ``＂``) and, where a
    value or key may start, ``'…'``; backslash escapes are honoured and an
    unterminated string runs to the end. Linear time; clean ASCII costs one regex
    search.
    """
    if not _NEEDS_CLEANING.search(text):
        return Payload(text)
    if not _has_invisible(text) and unicodedata.is_normalized("NFKC", text):
        return Payload(text)
    return _Cleaner(text).run()


def _has_invisible(text: str) -> bool:
    """Whether ``text`` holds a character of :data:`INVISIBLE_CLASS`."""
    try:
        text.encode("latin-1")  # a copy at C speed where the text is Latin-1 already
    except UnicodeEncodeError:
        return _INVISIBLE.search(text) is not None
    return "\x00" in text  # the only invisible character below U+0100


def _common_ends(a: str, b: str) -> tuple[int, int]:
    """Lengths of the common prefix and suffix of two strings of equal length."""
    n = len(a)
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    head = lo
    lo, hi = 0, n - head
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[n - mid :] == b[n - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return head, lo


class _Char(dict[int, str]):
    """A ``str.translate`` table: each character to its own NFKC form, cached."""

    def __missing__(self, code: int) -> str:
        self[code] = unicodedata.normalize("NFKC", chr(code))
        return self[code]


_NFKC_CHAR = _Char()
_SPACING_ACCENT = re.compile(
    "[\u00a8\u00af\u00b4\u00b8\u02d8-\u02dd\u0384\u0385\u1fbd\u1fbf-\u1fc1\u1fcd-\u1fcf\u1fdd-\u1fdf\u1fed\u1fee\u1ffd\u1ffe\u309b\u309c\uffe3]"
)


class _Cleaner:
    """Builds the cleaned text by visiting only the places that need a change.

    Invisible characters and NFKC-unstable runs are found with a regex over the
    whole payload; string literals are then walked only as far as needed to tell
    whether each of those places is inside one.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.pieces: list[str] = []
        self.length = 0  # length of the cleaned text so far
        self.anchors: list[tuple[int, int, bool]] = [(0, 0, True)]
        self.removed = 0
        self.removed_span: tuple[int, int] | None = None
        self.removed_codes: set[str] = set()
        # A NUL inside a string is a character of the value (JSON can hold it, as
        # \u0000): deleting it changes the value, so it is no lossless removal.
        self.nul_in_string = False
        self.changed = 0
        self.changed_span: tuple[int, int] | None = None
        # String literal contents found so far: (start, end, opened by a fullwidth quote).
        self.strings: list[tuple[int, int, bool]] = []
        self.walked = 0  # the text before this index has been split into strings
        self.k = 0  # first string not wholly before the current place

    def run(self) -> Payload:
        text = self.text
        edits = [(m.start(), m.end(), True) for m in _INVISIBLE_RUN.finditer(text)]
        edits += [
            (m.start(), m.end(), False)
            for m in _UNSTABLE_CANDIDATE.finditer(text)
            if not unicodedata.is_normalized("NFKC", m.group())
        ]
        edits.sort()
        pos = 0
        for start, end, invisible in edits:
            self._keep(pos, start)
            if invisible:
                for seg_start, seg_end, inside, _ in self._segments(start, end):
                    self._remove_invisible(seg_start, seg_end, inside)
            else:
                # Stretches to normalize (structure, fullwidth-quoted strings) are
                # joined, so that a run like ``｛＂ａ＂：１｝`` is normalized at once.
                nfkc_from = start
                for seg_start, seg_end, inside, fullwidth in self._segments(start, end):
                    if inside and not fullwidth:
                        self._nfkc(nfkc_from, seg_start)
                        self._keep(seg_start, seg_end)
                        nfkc_from = seg_end
                self._nfkc(nfkc_from, end)
            pos = end
        self._keep(pos, len(text))
        return self._payload()

    # -- where the strings are ----------------------------------------------------------

    def _walk(self, upto: int) -> None:
        """Find the string literals that begin before ``upto``."""
        text = self.text
        n = len(text)
        pos = self.walked
        while pos < upto:
            m = _QUOTE.search(text, pos)
            if m is None:
                pos = n
                break
            q = m.start()
            quote = text[q]
            if quote in "'\uff07" and not self._value_position(q):
                pos = q + 1
                continue
            if quote == '"':
                body, closers = _DOUBLE_BODY.match(text, q + 1), '"'
            elif quote == "\uff02":
                body, closers = _FULLWIDTH_DOUBLE_BODY.match(text, q + 1), '"\uff02'
            else:
                body, closers = _SINGLE_BODY.match(text, q + 1), "'\uff07"
            assert body is not None  # the body patterns match the empty string
            end = body.end()
            if end < n and text[end] in closers:
                pos = end + 1
            else:  # unterminated (or a lone backslash at the very end)
                end = pos = n
            self.strings.append((q + 1, end, quote in "\uff02\uff07"))
        self.walked = pos

    def _value_position(self, q: int) -> bool:
        text = self.text
        i = q - 1
        while i >= 0 and text[i] in _BLANK:
            i -= 1
        return i < 0 or text[i] in _VALUE_POSITION

    def _segments(self, start: int, end: int) -> list[tuple[int, int, bool, bool]]:
        """``[start, end)`` cut at string boundaries: (start, end, inside, fullwidth)."""
        self._walk(end)
        strings = self.strings
        k = self.k
        while k < len(strings) and strings[k][1] <= start:
            k += 1
        self.k = k
        out = []
        pos = start
        while pos < end:
            if k < len(strings) and strings[k][0] <= pos:
                seg_end = min(end, strings[k][1])
                out.append((pos, seg_end, True, strings[k][2]))
                k += 1
            else:
                seg_end = min(end, strings[k][0]) if k < len(strings) else end
                out.append((pos, seg_end, False, False))
            pos = seg_end
        return out

    # -- building the output ------------------------------------------------------------

    def _anchor(self, orig: int) -> None:
        """Make the next output character correspond to ``orig``, one to one."""
        clean, last, identity = self.anchors[-1]
        if not (identity and last + (self.length - clean) == orig):
            self.anchors.append((self.length, orig, True))

    def _keep(self, start: int, end: int) -> None:
        if start < end:
            self._anchor(start)
            self.pieces.append(self.text[start:end])
            self.length += end - start

    def _remove_invisible(self, start: int, end: int, inside: bool) -> None:
        if not inside:
            self._drop(start, end)
            return
        # Inside a string literal ZWNJ and ZWJ stay (see INVISIBLE_CLASS).
        pos = start
        for m in _INVISIBLE_IN_STRING_RUN.finditer(self.text, start, end):
            self._keep(pos, m.start())
            self._drop(m.start(), m.end())
            self.nul_in_string = self.nul_in_string or "\x00" in m.group()
            pos = m.end()
        self._keep(pos, end)

    def _drop(self, start: int, end: int) -> None:
        self.removed += end - start
        self.removed_codes.update(f"U+{ord(c):04X}" for c in set(self.text[start:end]))
        first = self.removed_span[0] if self.removed_span else start
        self.removed_span = (first, end)
        self.anchors.append((self.length, end, True))

    def _nfkc(self, start: int, end: int) -> None:
        # Spacing accents (U+00B4 ´ and kin) decompose to a space plus a combining mark;
        # models use ´ as a closing quote (`a´), so such characters are kept as they are.
        text = self.text
        at = start
        for m in _SPACING_ACCENT.finditer(text, start, end):
            self._nfkc_run(at, m.start())
            self._keep(m.start(), m.end())
            at = m.end()
        self._nfkc_run(at, end)

    def _nfkc_run(self, start: int, end: int) -> None:
        if start >= end:
            return
        text = self.text
        chunk = text[start:end]
        norm = unicodedata.normalize("NFKC", chunk)
        if norm == chunk:
            self._keep(start, end)
            return
        mapped = chunk.translate(_NFKC_CHAR)
        if mapped == norm and len(norm) == len(chunk):
            # Character by character and one to one (fullwidth forms): positions
            # stay aligned, so no extra anchor is needed.
            same_head, same_tail = _common_ends(chunk, norm)
            count = sum(map(operator.ne, chunk, norm))
            self._changed(start + same_head, end - same_tail, count)
            self._anchor(start)
            self.pieces.append(norm)
            self.length += len(norm)
            return
        # One base character with its combining marks at a time, so that every
        # output character can be traced to the input character it came from.
        pending = start
        i = start
        while i < end:
            j = i + 1
            while j < end and unicodedata.combining(text[j]):
                j += 1
            cluster = text[i:j]
            norm = unicodedata.normalize("NFKC", cluster)
            if norm != cluster:
                self._keep(pending, i)
                self._changed(i, j, 1)
                if len(norm) == j - i:
                    self._anchor(i)
                    self.pieces.append(norm)
                    self.length += len(norm)
                else:
                    self.anchors.append((self.length, i, False))
                    self.pieces.append(norm)
                    self.length += len(norm)
                    self.anchors.append((self.length, j, True))
                pending = j
            i = j
        self._keep(pending, end)

    def _changed(self, start: int, end: int, count: int) -> None:
        self.changed += count
        first = self.changed_span[0] if self.changed_span else start
        self.changed_span = (first, end)

    def _payload(self) -> Payload:
        diagnostics = []
        if self.removed_span:
            codepoints = sorted(self.removed_codes)
            plural = "s" if self.removed != 1 else ""
            changed = " (a NUL inside a string: the string changed)" if self.nul_in_string else ""
            diagnostics.append(
                codes.NORMALIZE_INVISIBLE_CHARS.at(
                    f"removed {self.removed} invisible character{plural} from the JSON "
                    f"({', '.join(codepoints)}){changed}",
                    span=Span(*self.removed_span),
                    risk=Risk.SAFE if self.nul_in_string else Risk.LOSSLESS,
                    rule="normalize.invisible_chars",
                    data={"count": self.removed, "codepoints": codepoints},
                )
            )
        if self.changed_span:
            plural = "s" if self.changed != 1 else ""
            diagnostics.append(
                codes.NORMALIZE_NFKC.at(
                    f"normalized {self.changed} compatibility character{plural} in the "
                    "JSON structure (for example fullwidth brackets) to ASCII",
                    span=Span(*self.changed_span),
                    risk=Risk.LOSSLESS,
                    rule="normalize.nfkc",
                    data={"count": self.changed},
                )
            )
        anchors = self.anchors if len(self.anchors) > 1 else []
        return Payload("".join(self.pieces), self.removed, tuple(diagnostics), tuple(anchors))
