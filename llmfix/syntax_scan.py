"""Find every place where a text departs from strict JSON, with its exact span.

json-repair says little about what it changed (no positions, nothing at all for a
trailing comma or a single-quoted string), so this module reads the text itself and
reports each departure from RFC 8259 JSON as a :class:`Finding`: a stable code, the
span of the offending text, a message and a risk tier.

The scanner is a single forward pass over regex tokens with an explicit stack of open
containers: no recursion, and every character is looked at a bounded number of times,
so it stays linear on any input (the lookahead after a closing quote reads only
whitespace, and the search for a later closing quote stops at the quote the pass would
reach next anyway).

Most findings carry their fix as text edits: for tiers ``lossless`` and ``safe`` the one
that certainly or unambiguously gives the meant value; for some ``guess`` findings the
obvious one (insert the missing ``,`` or ``:``, complete a truncated value). When every
finding of a text carries its edits, applying them yields strict JSON whose value is
exactly what the findings describe (see :meth:`SyntaxScan.fixed_text`). Findings whose
reading is a real judgement (an unquoted string, an unescaped quote, prose around the
value) carry no edit, and the lenient parser decides.

Reading is heuristic where JSON is broken: for an unescaped quote, a quote that is not
followed by something that may follow a string (``,`` ``}`` ``]`` ``:``, another value,
the end) is taken as part of the text when a later quote can close the string.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from llmfix.model import Diagnostic, LineIndex, Risk, Severity, Span

STAGE = "parse"

_L, _S, _G = Risk.LOSSLESS, Risk.SAFE, Risk.GUESS

# Quote characters that may open a string, and the characters that may close each.
_CLOSERS: dict[str, str] = {
    '"': '"',
    "'": "'",
    "\u2018": "\u2019\u2018'",  # ‘ ’
    "\u2019": "\u2019\u2018'",
    "\u201c": '\u201d\u201c"',  # “ ”
    "\u201d": '\u201d\u201c"',
    "\u201e": '\u201d\u201c"',  # „
    "`": "`\u00b4'",
    "\u00b4": "`\u00b4'",
}
_QUOTES = "".join(_CLOSERS)

_TOKEN = re.compile(
    r"""
      (?P<ws>[ \t\r\n]+)
    | (?P<odd_ws>[\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff\x0b\x0c]+)
    | (?P<comment>//[^\n]*|\#[^\n]*|/\*[\s\S]*?(?:\*/|\Z))
    | (?P<open>[{\[])
    | (?P<close>[}\]])
    | (?P<comma>,)
    | (?P<colon>:)
    | (?P<fence>```[\w.+-]*)
    | (?P<quote>["'\u2018\u2019\u201c\u201d\u201e`\u00b4])
    | (?P<ellipsis>\.\.\.)
    | (?P<number>[-+]?\.?\d(?:[eE][-+]|[\w.])*)
    | (?P<word>[-+]?(?:[^\W\d]|\$)[\w$]*)
    | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_WS_RUN = re.compile(r"[ \t\r\n]*")


def _match_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where ``pattern`` (which may match empty) stops when matched at ``pos``."""
    m = pattern.match(text, pos)
    return m.end() if m else pos


# Body of a string: a run of characters that need no attention, per opening quote.
_BODY = {q: re.compile("[^\\\\\x00-\x1f" + re.escape(c) + "]*") for q, c in _CLOSERS.items()}
_NEXT_CLOSER = {q: re.compile("[" + re.escape(c) + "]") for q, c in _CLOSERS.items()}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_HEX_PARTIAL = re.compile(r"[0-9a-fA-F]{0,3}\Z")
_KEY_CONT = re.compile(r"[\w$.\-]*")
# The rest of an unquoted value: up to a delimiter (a ':' only when it starts '://').
_BARE_CONT = re.compile(r"(?:[^,:\]}\[{\n\r\"]|:(?=//))*")
_OPENER = re.compile(r"[{\[]")
_STRUCTURE = re.compile(r"[{}\[\]\"]")
_VALUE_START = re.compile(r"""[{\["'\u2018\u201c\d-]|(?:true|false|null)\b""")
_DELIMITER = re.compile(r"[,{}\[\]\n]")
_HASH_IN_CONTAINER = re.compile(r"\#[^\n\]}]*")
_STRICT_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?\Z")
_LOOSE_NUMBER = re.compile(r"([-+]?)(\d*)(?:(\.)(\d*))?(?:([eE][-+]?\d+))?\Z")
_ESCAPES = '"\\/bfnrt'

_PYTHON_LITERALS = {"true": "true", "false": "false", "null": "null", "none": "null"}
_JS_LITERALS = {"undefined", "NaN", "Infinity", "-Infinity", "+Infinity", "-NaN", "+NaN"}

# Container kinds and parser states.
_OBJ, _ARR = 0, 1
_O_KEY_OR_END, _O_KEY, _O_COLON, _O_VALUE, _O_NEXT = range(5)
_A_VALUE_OR_END, _A_VALUE, _A_NEXT = range(5, 8)
_AFTER_COMMA = (_O_KEY, _A_VALUE)
# Roles of a value-like token.
_KEY, _VALUE, _STOP = 0, 1, 2


@dataclass(frozen=True)
class TextEdit:
    """Replace ``text[start:end]`` by ``replacement`` (an insertion when start == end)."""

    start: int
    end: int
    replacement: str


@dataclass(frozen=True)
class Finding:
    """One departure from strict JSON.

    ``edits`` is the mechanical fix (``()`` when another finding's edit covers it), or
    ``None`` when the reading is a judgement left to the lenient parser.
    """

    code: str
    span: Span
    message: str
    risk: Risk
    edits: tuple[TextEdit, ...] | None

    def to_diagnostic(self, lines: LineIndex) -> Diagnostic:
        return Diagnostic(
            code=self.code,
            severity=Severity.WARNING,
            stage=STAGE,
            message=self.message,
            span=self.span,
            rule=self.code.partition(".")[2],
            risk=self.risk,
            position=lines.position(self.span.start),
        )


@dataclass(frozen=True)
class SyntaxScan:
    """What :func:`scan` learnt about one text."""

    findings: tuple[Finding, ...]
    # Whitespace/comments between an empty ``{}``/``[]``/``""`` array item and the ``,``
    # or ``]`` after it (json-repair drops such an item; see llmfix.parse).
    empty_item_gaps: tuple[Span, ...]
    max_depth: int

    @property
    def explained(self) -> bool:
        """True when there are findings and every one carries its fix."""
        return bool(self.findings) and all(f.edits is not None for f in self.findings)

    def fixed_text(self, text: str) -> str | None:
        """``text`` with every finding's edits applied (``None`` if not :attr:`explained`
        or two edits overlap)."""
        if not self.explained:
            return None
        edits = sorted(
            (e for f in self.findings for e in f.edits or ()),
            key=lambda e: (e.start, e.end),
        )
        pieces: list[str] = []
        done = 0
        for edit in edits:
            if edit.start < done:
                return None
            pieces.append(text[done : edit.start])
            pieces.append(edit.replacement)
            done = edit.end
        pieces.append(text[done:])
        return "".join(pieces)

    def diagnostics(self, lines: LineIndex) -> list[Diagnostic]:
        return [f.to_diagnostic(lines) for f in self.findings]


def scan(text: str) -> SyntaxScan:
    """Read ``text`` once and report every departure from strict JSON."""
    return _Scanner(text).run()


def scan_syntax(text: str) -> list[Diagnostic]:
    """Diagnostics (code, span, line:column, risk) for every departure from strict JSON."""
    result = scan(text)
    return result.diagnostics(LineIndex(text)) if result.findings else []


class _Found:
    """A finding while it is still being built (an ellipsis may gain an edit later)."""

    __slots__ = ("code", "edits", "end", "message", "risk", "start")

    def __init__(
        self,
        code: str,
        start: int,
        end: int,
        message: str,
        risk: Risk,
        edits: list[TextEdit] | None,
    ) -> None:
        self.code = code
        self.start = start
        self.end = end
        self.message = message
        self.risk = risk
        self.edits = edits

    def freeze(self) -> Finding:
        edits = tuple(self.edits) if self.edits is not None else None
        return Finding(self.code, Span(self.start, self.end), self.message, self.risk, edits)


def _delete(start: int, end: int) -> list[TextEdit]:
    return [TextEdit(start, end, "")]


def _show(fragment: str, limit: int = 30) -> str:
    fragment = fragment if len(fragment) <= limit else fragment[: limit - 1] + "…"
    return repr(fragment)


def _start_of(found: _Found) -> int:
    return found.start


def _json_escape(char: str) -> str:
    return json.dumps(char)[1:-1]


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.found: list[_Found] = []
        self.gaps: list[Span] = []
        # Open containers: [kind, state, number of members] (innermost last).
        self.stack: list[list[int]] = []
        self.open_objects = 0
        self.open_arrays = 0
        self.max_depth = 0
        self.top_done = False  # a top-level value has been read
        self.top_comma: int | None = None  # a ',' after the top-level value
        self.stopped = False
        self.last_comma = -1
        # A ',' reported missing but not yet followed by a value: if a closer or a comma
        # comes next, the report was wrong and is taken back.
        self.virtual_comma: _Found | None = None
        self.last_value_end = 0
        self.last_key_end = 0
        # The last string value: (index of its closing quote, its re-quoting finding).
        self.last_string: tuple[int, _Found | None] | None = None
        self.last_conversion: _Found | None = None  # set by scan_string
        self.last_number_end = -1
        self.concat_plus: int | None = None  # a '+' after a string value
        self.ellipsis: _Found | None = None
        self.ellipsis_comma = -1
        self.swallow_comma = False
        self.empty_item_end: int | None = None
        self.eof_in_string = False
        self.eof_cut = 0
        self.eof_plain = True
        self.eof_string_suspect = False
        self.eof_string_role = _VALUE
        self.no_opener_from = self.n + 1

    # -- bookkeeping ---------------------------------------------------------------

    def add(
        self,
        code: str,
        start: int,
        end: int,
        message: str,
        risk: Risk,
        edits: list[TextEdit] | None = None,
    ) -> _Found:
        found = _Found(code, start, end, message, risk, edits)
        self.found.append(found)
        return found

    def push(self, kind: int) -> None:
        self.virtual_comma = None
        self.stack.append([kind, _O_KEY_OR_END if kind == _OBJ else _A_VALUE_OR_END, 0])
        if kind == _OBJ:
            self.open_objects += 1
        else:
            self.open_arrays += 1
        self.max_depth = max(self.max_depth, len(self.stack))

    def pop(self, end: int) -> None:
        kind, _, members = self.stack.pop()
        if kind == _OBJ:
            self.open_objects -= 1
        else:
            self.open_arrays -= 1
        self.value_done(end, empty=members == 0)

    def retract_virtual_comma(self) -> None:
        """Take back a ',' reported missing that no value followed: the container is
        again just after its last value."""
        found, self.virtual_comma = self.virtual_comma, None
        if found is not None:
            found.code = ""  # dropped when the scan is frozen
            frame = self.stack[-1]
            frame[1] = _O_NEXT if frame[0] == _OBJ else _A_NEXT

    def value_done(self, end: int, *, empty: bool = False) -> None:
        self.last_value_end = end
        self.virtual_comma = None
        if not self.stack:
            self.top_done = True
            return
        frame = self.stack[-1]
        frame[1] = _O_NEXT if frame[0] == _OBJ else _A_NEXT
        frame[2] += 1
        if empty and frame[0] == _ARR:
            self.empty_item_end = end

    def slot(self, start: int) -> int:
        """The role of a value-like token at ``start``; reports a missing ``,``/``:``."""
        if not self.stack:
            if not self.top_done:
                return _VALUE
            self.trailing_text(start)
            return _STOP
        frame = self.stack[-1]
        state = frame[1]
        if state in (_O_KEY_OR_END, _O_KEY):
            return _KEY
        if state in (_O_VALUE, _A_VALUE_OR_END, _A_VALUE):
            return _VALUE
        if state == _O_COLON:
            at = self.last_key_end
            insert = [TextEdit(at, at, ":")]
            self.add("parse.missing_colon", at, at, "missing ':' after the key", _G, insert)
            frame[1] = _O_VALUE
            return _VALUE
        at = self.last_value_end
        insert = [TextEdit(at, at, ",")]
        message = "missing ',' between two values"
        self.virtual_comma = self.add("parse.missing_comma", at, at, message, _G, insert)
        if frame[0] == _OBJ:
            frame[1] = _O_KEY
            return _KEY
        frame[1] = _A_VALUE
        return _VALUE

    def follow_set(self, role: int) -> str:
        """Characters that may follow a complete string in this role."""
        if role == _KEY:
            return ":"
        if not self.stack:
            return "+"
        return ",}+" if self.stack[-1][0] == _OBJ else ",]+"

    # -- main loop -----------------------------------------------------------------

    def run(self) -> SyntaxScan:
        text, n, match = self.text, self.n, _TOKEN.match
        pos = 0
        while pos < n and not self.stopped:
            m = match(text, pos)
            if m is None:  # cannot happen: the last alternative takes any character
                break
            kind = m.lastgroup or "other"
            start, end = m.start(), m.end()
            if kind == "ws":
                pos = end
                continue
            if kind == "odd_ws":
                self.add(
                    "parse.nonstandard_whitespace",
                    start,
                    end,
                    "whitespace character that JSON does not allow",
                    _L,
                    [TextEdit(start, end, " ")],
                )
                pos = end
                continue
            if kind == "comment":
                if self.stack and text[start] == "#":
                    # Inside a container a '#' comment also stops at a closing bracket.
                    end = _match_end(_HASH_IN_CONTAINER, text, start)
                shown = _show(text[start:end].split("\n", 1)[0])
                self.add(
                    "parse.comment", start, end, f"comment {shown}", _L, [TextEdit(start, end, " ")]
                )
                pos = end
                continue
            self.before_token(start, text[start], kind)
            if kind == "open":
                pos = self.on_open(start, end)
            elif kind == "close":
                pos = self.on_close(start, end)
            elif kind == "comma":
                pos = self.on_comma(start, end)
            elif kind == "colon":
                pos = self.on_colon(start, end)
            elif kind == "quote":
                pos = self.on_quote(start)
            elif kind == "ellipsis":
                pos = self.on_ellipsis(start, end)
            elif kind == "number":
                pos = self.on_number(start, end)
            elif kind == "word":
                pos = self.on_word(start, end)
            else:
                pos = self.on_other(start, end)
        self.finish()
        return SyntaxScan(
            findings=tuple(f.freeze() for f in sorted(self.found, key=_start_of) if f.code),
            empty_item_gaps=tuple(self.gaps),
            max_depth=self.max_depth,
        )

    def before_token(self, start: int, char: str, kind: str) -> None:
        """Settle what the previous token left pending, now that the next one is known."""
        if self.empty_item_end is not None:
            if char in ",]" and start > self.empty_item_end:
                self.gaps.append(Span(self.empty_item_end, start))
            self.empty_item_end = None
        if self.concat_plus is not None and kind != "quote":
            at = self.concat_plus
            self.concat_plus = None
            self.unexpected(at, at + 1, "'+' that does not join two strings")
        if self.ellipsis is not None:
            found, self.ellipsis = self.ellipsis, None
            if found.edits is None or not self.stack:
                return
            frame = self.stack[-1]
            if char == ",":
                # The comma goes with the ellipsis: the slot it left stays open.
                found.edits.append(TextEdit(start, start + 1, ""))
                self.swallow_comma = True
            elif kind == "close" and frame[1] in _AFTER_COMMA:
                comma = self.ellipsis_comma
                if comma >= 0:
                    found.edits.append(TextEdit(comma, comma + 1, ""))
                frame[1] = _O_NEXT if frame[0] == _OBJ else _A_NEXT

    def unexpected(self, start: int, end: int, message: str) -> None:
        last = self.found[-1] if self.found else None
        if last is not None and last.code == "parse.unexpected" and last.end == start:
            if last.end - last.start < 40:  # the message shows at most 30 characters
                last.message = f"unexpected text {_show(self.text[last.start : end])}"
            last.end = end
            return
        self.add("parse.unexpected", start, end, message, _G)

    # -- token handlers ------------------------------------------------------------

    def on_open(self, start: int, end: int) -> int:
        role = self.slot(start)
        if role == _STOP:
            return self.n
        char = self.text[start]
        if role == _KEY:
            self.unexpected(start, end, f"'{char}' where an object key was expected")
            self.stack[-1][1] = _O_VALUE
        self.push(_OBJ if char == "{" else _ARR)
        return end

    def on_close(self, start: int, end: int) -> int:
        char = self.text[start]
        want = _OBJ if char == "}" else _ARR
        if not self.stack:
            if self.top_done:
                message = f"redundant '{char}' after the end of the value"
            else:
                message = f"'{char}' closes nothing"
            self.add("parse.redundant_closer", start, end, message, _S, _delete(start, end))
            return end
        frame = self.stack[-1]
        if frame[0] != want:
            if not (self.open_objects if want == _OBJ else self.open_arrays):
                self.add(
                    "parse.redundant_closer",
                    start,
                    end,
                    f"'{char}' does not match the open '{'{' if frame[0] == _OBJ else '['}'",
                    _G,
                    _delete(start, end),
                )
                return end
            missing = ""
            while self.stack[-1][0] != want:
                closer = "}" if self.stack[-1][0] == _OBJ else "]"
                self.settle(start, closer)
                missing += closer
                self.pop(start)
            message = f"missing '{missing}' before '{char}'"
            insert = [TextEdit(start, start, missing)]
            self.add("parse.missing_closer", start, start, message, _G, insert)
        self.settle(start, char)
        self.pop(end)
        return end

    def settle(self, start: int, char: str) -> None:
        """Before the innermost container is closed by ``char`` at ``start``: a comma or
        a key left hanging in it."""
        self.retract_virtual_comma()
        state = self.stack[-1][1]
        if state in _AFTER_COMMA:
            comma = self.last_comma
            self.add(
                "parse.trailing_comma",
                comma,
                comma + 1,
                f"trailing comma before '{char}'",
                _L,
                _delete(comma, comma + 1),
            )
        elif state in (_O_COLON, _O_VALUE):
            self.missing_value(state, start, char)

    def on_comma(self, start: int, end: int) -> int:
        self.last_comma = start
        self.retract_virtual_comma()
        if not self.stack:
            if self.top_done:
                self.top_comma = start
            else:
                self.add(
                    "parse.leading_comma",
                    start,
                    end,
                    "comma before the value",
                    _L,
                    _delete(start, end),
                )
            return end
        if self.swallow_comma:
            self.swallow_comma = False
            return end
        frame = self.stack[-1]
        state = frame[1]
        if state == _O_NEXT:
            frame[1] = _O_KEY
        elif state == _A_NEXT:
            frame[1] = _A_VALUE
        elif state in (_O_KEY_OR_END, _A_VALUE_OR_END):
            where = "object" if frame[0] == _OBJ else "array"
            self.add(
                "parse.leading_comma",
                start,
                end,
                f"comma at the start of an {where}",
                _L,
                _delete(start, end),
            )
        elif state in _AFTER_COMMA:
            message = "repeated comma"
            self.add("parse.extra_comma", start, end, message, _S, _delete(start, end))
        else:  # after a key or a ':'
            self.missing_value(state, start, ",")
            frame[1] = _O_KEY
        return end

    def missing_value(self, state: int, start: int, char: str) -> None:
        """A key with no value before ``char`` (at ``start``).

        After ``key:`` the value is read as ``null``; a lone key (``{'a', 'b'}`` may be a
        set) gets no fix of its own.
        """
        if state == _O_COLON:
            at = self.last_key_end
            message = f"key without ':' or value before '{char}'"
            self.add("parse.missing_value", at, at, message, _G)
            return
        message = f"key without a value before '{char}' (read as null)"
        self.add("parse.missing_value", start, start, message, _G, [TextEdit(start, start, "null")])

    def on_colon(self, start: int, end: int) -> int:
        if self.stack and self.stack[-1][1] == _O_COLON:
            self.stack[-1][1] = _O_VALUE
        else:
            self.unexpected(start, end, "unexpected ':'")
        return end

    def on_quote(self, start: int) -> int:
        opener = self.text[start]
        if self.concat_plus is not None:
            plus, self.concat_plus = self.concat_plus, None
            role = _VALUE
            end = self.scan_string(start, opener, role)
            if self.eof_in_string:
                return end
            edits = self.join_strings(start)
            self.add("parse.string_concat", plus, plus + 1, "strings joined with '+'", _S, edits)
            self.last_string = (end - 1, self.last_conversion)
            self.last_value_end = end
            return end
        role = self.slot(start)
        if role == _STOP:
            return self.n
        end = self.scan_string(start, opener, role)
        if self.eof_in_string:
            return end
        if role == _KEY:
            self.last_key_end = end
            self.virtual_comma = None
            self.stack[-1][1] = _O_COLON
        else:
            self.last_string = (end - 1, self.last_conversion)
            self.value_done(end, empty=end - start == 2)
        return end

    def join_strings(self, start: int) -> list[TextEdit] | None:
        """Edits that merge the last string value with the one just read from ``start``.

        Everything between the two (spaces, '+', comments) goes, with the closing quote
        of the first and the opening quote of the second; a string that is re-quoted
        loses that quote from its replacement instead.
        """
        if self.last_string is None:
            return None
        close, first = self.last_string
        second = self.last_conversion
        gap_start = close
        if first is not None and first.edits:
            edit = first.edits[0]
            first.edits[0] = TextEdit(edit.start, edit.end, edit.replacement[:-1])
            gap_start = edit.end
        gap_end = start + 1
        if second is not None and second.edits:
            edit = second.edits[0]
            second.edits[0] = TextEdit(edit.start, edit.end, edit.replacement[1:])
            gap_end = start
        for found in reversed(self.found):
            if found.start < gap_start:
                break
            if found.end <= start and found.edits:
                found.edits = []  # a comment in the gap: deleted with it
        return _delete(gap_start, gap_end)

    def on_ellipsis(self, start: int, end: int) -> int:
        if self.stack:
            self.retract_virtual_comma()  # the ellipsis explains the gap instead
            state = self.stack[-1][1]
            if state in (_O_NEXT, _A_NEXT):  # right after an item: '[1, 2 ...]'
                message = "'...' standing for omitted items"
                self.add("parse.ellipsis", start, end, message, _S, _delete(start, end))
                return end
            if state in (_O_KEY_OR_END, _O_KEY, _A_VALUE_OR_END, _A_VALUE):
                found = self.add(
                    "parse.ellipsis",
                    start,
                    end,
                    "'...' standing for omitted items",
                    _S,
                    _delete(start, end),
                )
                self.ellipsis = found
                self.ellipsis_comma = self.last_comma if state in _AFTER_COMMA else -1
                return end
        role = self.slot(start)
        if role == _STOP:
            return self.n
        self.add("parse.ellipsis", start, end, "'...' in place of a value", _G)
        if role == _KEY:
            self.stack[-1][1] = _O_NEXT
        else:
            self.value_done(end)
        return end

    def on_number(self, start: int, end: int) -> int:
        role = self.slot(start)
        if role == _STOP:
            return self.n
        token = self.text[start:end]
        if role == _KEY:
            return self.bare_key(start, end)
        self.last_number_end = end
        if _STRICT_NUMBER.match(token):
            self.value_done(end)
            return end
        loose = _LOOSE_NUMBER.match(token)
        if loose and (loose.group(2) or loose.group(4)):
            sign, whole, dot, fraction, exponent = loose.groups()
            if len(whole) > 1 and whole[0] == "0":
                quoted = [TextEdit(start, end, json.dumps(token))]
                message = f"number {token} has a leading zero (read as the string {token!r})"
                self.add("parse.leading_zero", start, end, message, _G, quoted)
            else:
                fixed = ("-" if sign == "-" else "") + (whole or "0")
                if dot:
                    fixed += "." + (fraction or "0")
                fixed += exponent or ""
                self.add(
                    "parse.invalid_number",
                    start,
                    end,
                    f"number {token} is not valid JSON (read as {fixed})",
                    _S,
                    [TextEdit(start, end, fixed)],
                )
            self.value_done(end)
            return end
        if any(c.isalpha() and c not in "eE" for c in token):
            return self.bare_value(start, end)
        self.add("parse.invalid_number", start, end, f"invalid number {_show(token)}", _G)
        self.value_done(end)
        return end

    def on_word(self, start: int, end: int) -> int:
        text = self.text
        word = text[start:end]
        literal = word in ("true", "false", "null")
        if not self.stack and not self.top_done and not literal:
            skip_to = self.leading_text(start)
            if skip_to is not None:
                return skip_to
        role = self.slot(start)
        if role == _STOP:
            return self.n
        if role == _KEY:
            return self.bare_key(start, end)
        if literal:
            self.value_done(end)
            return end
        lowered = word.lower()
        if lowered in _PYTHON_LITERALS and word[0] != "-":
            fixed = _PYTHON_LITERALS[lowered]
            self.add(
                "parse.python_literal",
                start,
                end,
                f"{word} is not a JSON literal (read as {fixed})",
                _S,
                [TextEdit(start, end, fixed)],
            )
            self.value_done(end)
            return end
        if word in _JS_LITERALS:
            self.add(
                "parse.js_literal",
                start,
                end,
                f"{word} is not a JSON value (read as null)",
                _S,
                [TextEdit(start, end, "null")],
            )
            self.value_done(end)
            return end
        return self.bare_value(start, end)

    def on_other(self, start: int, end: int) -> int:
        char = self.text[start]
        frame = self.stack[-1] if self.stack else None
        after_value = self.top_done if frame is None else frame[1] in (_O_NEXT, _A_NEXT)
        last_string = self.last_string
        joins = last_string is not None and last_string[0] == self.last_value_end - 1
        if char == "+" and after_value and joins:
            self.concat_plus = start
            return end
        if frame is None and not self.top_done:
            skip_to = self.leading_text(start)
            if skip_to is not None:
                return skip_to
        if frame is None and self.top_done:
            self.trailing_text(start)
            return self.n
        self.unexpected(start, end, f"unexpected {_show(self.text[start:end])}")
        return end

    # -- pieces of values --------------------------------------------------------------

    def bare_key(self, start: int, end: int) -> int:
        """An unquoted word or number where an object key belongs."""
        text = self.text
        end = _match_end(_KEY_CONT, text, end)
        after = _match_end(_WS_RUN, text, end)
        key = text[start:end]
        if text.startswith(":", after):
            self.add(
                "parse.unquoted_key",
                start,
                end,
                f"key {key} is not quoted",
                _S,
                [TextEdit(start, end, json.dumps(key, ensure_ascii=False))],
            )
            self.last_key_end = end
            self.virtual_comma = None
            self.stack[-1][1] = _O_COLON
            return end
        self.unexpected(start, end, f"text {_show(key)} where an object key was expected")
        return end

    def bare_value(self, start: int, end: int) -> int:
        """An unquoted word where a value belongs: it runs to the next delimiter."""
        text = self.text
        end = _match_end(_BARE_CONT, text, end)
        while end > start + 1 and text[end - 1].isspace():
            end -= 1
        self.add(
            "parse.unquoted_string",
            start,
            end,
            f"unquoted text {_show(text[start:end])} read as a string",
            _G,
        )
        self.value_done(end)
        return end

    def leading_text(self, start: int) -> int | None:
        """Prose before the first ``{``/``[`` of the text: report it, return where to go on."""
        if start >= self.no_opener_from:
            return None
        opener = _OPENER.search(self.text, start)
        if opener is None:
            self.no_opener_from = start  # later searches would fail too
            return None
        at = opener.start()
        self.add(
            "parse.leading_text",
            start,
            at,
            f"text {_show(self.text[start:at].strip())} before the JSON value",
            _G,
        )
        return at

    def trailing_text(self, start: int) -> None:
        text = self.text
        begin = self.top_comma if self.top_comma is not None else start
        stop = len(text.rstrip())
        rest = text[start:stop]
        if _VALUE_START.match(text, start):
            self.add("parse.trailing_text", begin, stop, "another JSON value after the first", _G)
        elif _STRUCTURE.search(rest):
            self.add("parse.trailing_text", begin, stop, f"text {_show(rest)} after the value", _G)
        else:
            self.add(
                "parse.trailing_text",
                begin,
                stop,
                f"text {_show(rest)} after the value",
                _S,
                _delete(begin, stop),
            )
        self.top_comma = None
        self.stopped = True

    def scan_string(self, start: int, opener: str, role: int) -> int:
        """Read a string opened at ``start``; returns the index after its closing quote."""
        text, n = self.text, self.n
        body = _BODY[opener]
        plain = opener == '"'
        pieces: list[str] | None = None if plain else []
        follow = self.follow_set(role)
        i = start + 1
        while True:
            j = _match_end(body, text, i)
            if pieces is not None and j > i:
                pieces.append(text[i:j].replace('"', '\\"'))
            i = j
            if i >= n:
                return self.string_at_eof(start, n, role, pieces)
            char = text[i]
            if char == "\\":
                j = self.escape(i, opener, pieces)
                if j >= n:
                    return self.string_at_eof(start, i if j > n else n, role, pieces)
                i = j
                continue
            if char < " ":
                escaped = _json_escape(char)
                self.add(
                    "parse.unescaped_control",
                    i,
                    i + 1,
                    f"raw control character {char!r} inside a string",
                    _S,
                    [TextEdit(i, i + 1, escaped)] if pieces is None else [],
                )
                if pieces is not None:
                    pieces.append(escaped)
                i += 1
                continue
            if self.closes_here(i, opener, follow):
                end = i + 1
                break
            self.add("parse.unescaped_quote", i, i + 1, "unescaped quote inside a string", _G)
            if pieces is not None:
                pieces.append('\\"' if char == '"' else char)
            i += 1
        self.last_conversion = None
        if pieces is not None:
            smart = opener != "'" or text[end - 1] != "'"
            code = "parse.smart_quotes" if smart else "parse.single_quotes"
            quotes = f"{opener}…{text[end - 1]}"
            self.last_conversion = self.add(
                code,
                start,
                end,
                f"string in {quotes} quotes instead of double quotes",
                _S,
                [TextEdit(start, end, '"' + "".join(pieces) + '"')],
            )
        return end

    def string_at_eof(self, start: int, cut: int, role: int, pieces: list[str] | None) -> int:
        """The input ends inside the string opened at ``start``; text from ``cut`` on (a
        partial escape) is dropped when it is completed."""
        self.eof_in_string = True
        self.eof_cut = cut
        self.eof_string_role = role
        self.eof_plain = pieces is None
        # A string that runs over a delimiter probably lacks its end quote earlier on:
        # where it should end is json-repair's call, not a plain completion.
        self.eof_string_suspect = _DELIMITER.search(self.text, start + 1) is not None
        if pieces is not None:
            opener = self.text[start]
            code = "parse.single_quotes" if opener == "'" else "parse.smart_quotes"
            self.add(
                code,
                start,
                self.n,
                f"string in {opener} quotes instead of double quotes",
                _S,
                [TextEdit(start, self.n, '"' + "".join(pieces) + '"')],
            )
            self.eof_cut = self.n  # the replacement above closes the string
        return self.n

    def closes_here(self, i: int, opener: str, follow: str) -> bool:
        """Whether the quote at ``i`` ends the string (rather than sits inside it)."""
        text = self.text
        j = _match_end(_WS_RUN, text, i + 1)
        if j >= self.n:
            return True
        after = text[j]
        if after in follow or after == "#" or (after == "/" and text[j + 1 : j + 2] in ("/", "*")):
            return True
        if follow == ":" and after in ",}":
            return True  # a key without a value
        if after in _QUOTES or after in "{[-" or after.isdigit():
            return True  # a missing ',' or ':' follows
        return _NEXT_CLOSER[opener].search(text, i + 1) is None

    def escape(self, i: int, opener: str, pieces: list[str] | None) -> int:
        """Read the escape sequence at ``i`` (a backslash); returns the index after it."""
        text, n = self.text, self.n
        if i + 1 >= n:
            return n + 1  # input ends inside the escape
        char = text[i + 1]
        fixed: str | None = None
        if char in _ESCAPES:
            if pieces is not None:
                pieces.append("\\" + char)
            return i + 2
        if char == "u":
            if _HEX4.match(text, i + 2):
                if pieces is not None:
                    pieces.append(text[i : i + 6])
                return i + 6
            if _HEX_PARTIAL.match(text, i + 2):
                return n + 1  # input ends inside the escape
            fixed = "\\\\u"
        elif pieces is not None and (char == opener or char in _CLOSERS[opener] or char == "'"):
            pieces.append(char)  # \' in a single-quoted string
            return i + 2
        elif char == "'":
            fixed = "'"
        elif char < " ":
            fixed = _json_escape(char)
        else:
            fixed = "\\\\" + _json_escape(char)
        self.add(
            "parse.invalid_escape",
            i,
            i + 2,
            f"invalid escape {_show(text[i : i + 2])} in a string",
            _S,
            [TextEdit(i, i + 2, fixed)] if pieces is None else [],
        )
        if pieces is not None:
            pieces.append(fixed)
        return i + 2

    # -- end of input --------------------------------------------------------------

    def finish(self) -> None:
        n = self.n
        if self.concat_plus is not None:
            at = self.concat_plus
            self.unexpected(at, at + 1, "'+' at the end of the input")
        if self.stopped:
            return
        if not self.stack and not self.eof_in_string:
            if self.top_comma is not None:
                at = self.top_comma
                self.add(
                    "parse.trailing_comma",
                    at,
                    at + 1,
                    "trailing comma after the value",
                    _L,
                    _delete(at, at + 1),
                )
            return
        in_string = self.eof_in_string
        if self.stack and not in_string:
            self.retract_virtual_comma()
        closers = "".join("}" if kind == _OBJ else "]" for kind, _, _ in reversed(self.stack))
        state = self.stack[-1][1] if self.stack else None
        if not in_string and state in _AFTER_COMMA:
            if self.ellipsis is not None and self.ellipsis.edits is not None:
                comma = self.ellipsis_comma
                if comma >= 0:
                    self.ellipsis.edits.append(TextEdit(comma, comma + 1, ""))
            else:
                at = self.last_comma
                message = "trailing comma at the end"
                self.add("parse.trailing_comma", at, at + 1, message, _L, _delete(at, at + 1))
        completion = ""
        cut = n
        if in_string:
            cut = self.eof_cut
            completion += '"' if self.eof_plain else ""
        key_open = (in_string and self.eof_string_role == _KEY) or (
            not in_string and state == _O_COLON
        )
        if key_open:
            completion += ": null"
        elif not in_string and state == _O_VALUE:
            completion += "null"
        parts = []
        if in_string:
            parts.append("a string")
        if closers:
            parts.append(f"{len(closers)} open container{'s' if len(closers) > 1 else ''}")
        message = f"input ends inside {' and '.join(parts)}"
        if in_string or key_open or state == _O_VALUE or self.last_number_end == n:
            completion += closers
            if in_string and self.eof_string_suspect:
                message += "; a quote may be missing earlier"
                self.add("parse.truncated", n, n, message, _G)
            else:
                message += f"; the last value is cut short, completed with '{completion}'"
                self.add("parse.truncated", n, n, message, _G, [TextEdit(cut, n, completion)])
        else:
            message += f"; closed with '{closers}'"
            self.add("parse.truncated", n, n, message, _S, [TextEdit(n, n, closers)])
