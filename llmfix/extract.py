"""Extract stage: every piece of a response that may hold the JSON value meant.

:func:`extract_candidates` lists candidates in order of appearance, each with its span
in the raw text and how it was found (``origin``). It never guesses which one is
meant; that is the select stage's job.

Origins and the rules behind them:

- ``whole`` — the whole text, stripped of surrounding whitespace, when it begins like
  a JSON value (possibly after a BOM or another invisible character); also, as a last
  resort, when nothing else was found, so that the lenient parser can still try it.
- ``fence`` — the content of a Markdown code fence: backticks or tildes, any info
  string (``json``, ``JSON``, ``jsonc``, none, …), also mid-line (``[```json``) and
  with content on the opening line (```` ```{"a": 1}``` ````). A closing fence is a run
  at least as long as the opening one that starts a line or ends one. A fence never
  closed (truncated output) runs to the end of the text.
- ``xml:<tag>`` — the content of ``<json>``, ``<output>``, ``<answer>``, ``<tool_call>``,
  ``<result>``, ``<response>`` (any case, attributes and a namespace prefix allowed).
- ``xml:function_calls`` — one synthetic candidate per Anthropic-style ``<invoke>``
  (inside ``<function_calls>`` or bare): ``{"name": …, "arguments": {…}}``.
- ``jsonp`` — the argument of a ``callback(…);`` wrapper that makes up the whole text.
- ``prose`` — a JSON object or array inside prose, found by a string-aware balanced
  scan. A ``{`` or ``[`` starts one only when it plausibly begins JSON (``{"``,
  ``{}``, ``{key:``, ``["``, ``[1,``, ``[{"`` …), so ``use {name} here`` and ``[value]``
  are skipped. A value never closed runs to the end of the text (or to the fence or
  tag that interrupts it) and is still a candidate; the parser closes it.
- ``double_encoded`` — when a candidate is a JSON string whose content is itself a
  JSON object or array, the decoded text, with the same span.

Nesting: a fence or tag whose content begins with ``{``, ``[`` or ``"`` is opaque —
nothing inside it becomes a second candidate. One whose content is something else
(a ``python`` fence, an ``<answer>`` written in prose) is scanned inside as well, so a
JSON value embedded in it is still found; if such a fence or tag is also never
closed, it is not a candidate itself (most likely a stray closing fence, or a tag
named in prose). The ``whole`` candidate never hides anything: an answer holding two
objects gives ``whole`` and two ``prose`` candidates. A prose candidate with exactly
the span of an earlier candidate is not repeated.

Cost: one left-to-right pass over the text; every balanced region is scanned once and
skipped, and the searches for closing fences and tags resume where they left off, so
the work is linear in the size of the text. The search stops after
``max_candidates`` (``extract.too_many``), since every candidate is parsed later.
Fast paths: a text that is one strict JSON value (``json.loads`` succeeds) is only
the ``whole`` candidate — fences or tags inside its strings are data; and a text that
begins with ``{``/``[`` whose value closes exactly at its end (not strict, but one
repairable value) is only the ``whole`` candidate too.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import Any

from llmfix.deadline import Deadline
from llmfix.jsontext import strict_decode
from llmfix.model import Candidate, Diagnostic, LineIndex, Risk, Severity, Span
from llmfix.normalize import INVISIBLE_CLASS, Document, normalize_document

STAGE = "extract"

ENVELOPE_TAGS = ("json", "output", "answer", "tool_call", "result", "response")
_REASONING_TAGS = ("thinking", "think", "reasoning", "scratchpad")
_MARKUP_TAGS = (*ENVELOPE_TAGS, *_REASONING_TAGS, "function_calls", "invoke", "parameter")
MAX_CANDIDATES = 1000  # default bound: every candidate is parsed later on
_MAX_DEPTH = 32  # nested containers scanned inside one another
_MAX_NESTED_CHECK = 16  # "[[[…" openers inspected when judging whether "[" starts JSON

# Where a JSON value may begin (for the whole text and for container contents).
_LOOKS_LIKE_JSON = re.compile(
    rf"(?:[\s{INVISIBLE_CLASS}]|//[^\n]{{0,200}}\n|/\*(?:[^*]|\*(?!/)){{0,200}}\*/)*"
    rf"(?:[{{\[\"'\uff5b\uff3b\uff02]|-?\d|(?:true|false|null)\b)"
)
# Container content that begins like this is opaque (see the module docstring).
_OPAQUE = re.compile(rf"[\s{INVISIBLE_CLASS}]*[{{\[\"\uff5b\uff3b\uff02]")
_LEADING_INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]*")

# Whitespace and short comments (bounded, so the lookahead stays cheap) before the
# first key or item: models write `{ // the answer` as often as `{ "answer"`. A block
# comment ends at its first "*/" (a lazy ".*?" let a run of "/**/" be split
# exponentially many ways before a match failed).
_GAP = r"""(?:\s|//[^\n]{0,200}(?:\n|$)|/\*(?:[^*]|\*(?!/)){0,200}\*/)*"""
# What may follow a "{" that begins a JSON object: a quoted key, "}", or `identifier:`.
_OBJECT_AHEAD = _GAP + r"""(?:["'\u201c\u2018}]|(?:[^\W\d]|\$)[\w$-]*\s*:(?!//))"""
# What may follow a "[" that begins a JSON array: a string, "]", a number or keyword
# followed by "," or "]", or a nested "{"/"[" (which must begin JSON in turn).
_ARRAY_AHEAD = (
    _GAP + r"""(?:["'\u201c\u2018\]]|(?P<nested>[{\[])"""
    r"""|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\s*[,\]]"""
    r"""|(?:true|false|null|True|False|None)\s*[,\]])"""
)
_OBJECT_START = re.compile(r"\{" + _OBJECT_AHEAD)
_ARRAY_START = re.compile(r"\[" + _ARRAY_AHEAD)
# What the scan stops at: a fence, a tag, or a "{"/"[" that may begin JSON (the
# lookaheads reject `{name}` and `[value]` without leaving the regex engine).
_MARKER = re.compile(
    r"[`~<]|\{(?=" + _OBJECT_AHEAD + r")|\[(?=" + _ARRAY_AHEAD.replace("?P<nested>", "") + ")"
)

# Tokens that matter inside a JSON value: whole strings, runs of openers and closers.
# A single quote opens a string only where a value or key may start; elsewhere it is
# an apostrophe. Outside strings a fence or a known tag cannot be part of the value:
# it ends the scan (the value is unclosed).
_VALUE_TOKEN = re.compile(
    r"""(?P<dq>"[^"\\]*(?:\\.[^"\\]*)*(?P<dq_end>")?)"""
    r"""|(?P<sq>[{\[,:]\s*'[^'\\]*(?:\\.[^'\\]*)*(?P<sq_end>')?)"""
    r"""|(?P<open>(?:[{\[](?!\s*'))+)|(?P<close>[}\]]+)"""
    r"""|(?P<stop>^[ \t]*(?:```|~~~)|</?(?:[\w-]+:)?(?:"""
    + "|".join(_MARKUP_TAGS)
    + r""")(?=[\s/>]))""",
    re.MULTILINE | re.IGNORECASE | re.DOTALL,
)

# The fence is the whole run of its character: a shorter run would let a line of "~" be
# tried once per length (quadratic time on a long line of them).
_FENCE_OPEN = re.compile(
    r"(`{3,}(?!`)|~{3,}(?!~))(?:([^\n`]*?)[ \t]*\r?\n|([\w+.#-]*)[ \t]*(?=[{\[]))"
)


def _strict_value(content: str) -> tuple[Any] | None:
    """``(value,)`` when ``content`` is one strict JSON object or array, else ``None``."""
    if content[:1] not in ("{", "["):
        return None
    try:
        return (strict_decode(content),)
    except (ValueError, RecursionError):
        return None


def _fence_runs(text: str, char: str) -> list[tuple[int, int]]:
    """Every run of three or more ``char``: (start, end).

    ``str.find`` of one character is a ``memchr`` that skips the rest of a long answer at
    C speed; a regex scan for ``char{3,}`` visits every character.
    """
    runs = []
    find = text.find
    n = len(text)
    pos = find(char)
    while pos != -1:
        end = pos + 1
        while end < n and text[end] == char:
            end += 1
        if end - pos >= 3:
            runs.append((pos, end))
        pos = find(char, end)
    return runs


_OPEN_TAG = re.compile(
    r"<(?:[\w-]+:)?(" + "|".join(_MARKUP_TAGS) + r")(?=[\s/>])[^<>]{0,1000}>",
    re.IGNORECASE,
)
_CLOSE_TAG = {
    name: re.compile(rf"</(?:[\w-]+:)?{name}\s*>", re.IGNORECASE)
    for name in (*ENVELOPE_TAGS, "invoke")
}
_PARAMETER_OPEN = re.compile(r"<(?:[\w-]+:)?parameter(?=[\s/>])[^<>]{0,1000}>", re.IGNORECASE)
_PARAMETER_CLOSE = re.compile(r"</(?:[\w-]+:)?parameter\s*>", re.IGNORECASE)
_NAME_ATTR = re.compile(r"""\sname\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+))""", re.IGNORECASE)

# Each comment can only be read one way (a block comment ends at the first "*/", a line
# comment at the end of its line): with ".*?" and "[^\n]*" free to stop anywhere, a run of
# "/" took exponential time to reject.
_JSONP_HEAD = re.compile(
    r"(?:\s*(?:/\*(?:[^*]|\*(?!/))*\*/|//[^\n]*(?=\n|$)))*"
    r"\s*[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\s*\(\s*"
)


def extract_values(text: str) -> list[Candidate]:
    """Every candidate in ``text`` (:func:`normalize_document` + :func:`extract_candidates`)."""
    candidates, _ = extract_candidates(normalize_document(text))
    return candidates


def extract_candidates(
    doc: Document, *, max_candidates: int = MAX_CANDIDATES, deadline: Deadline | None = None
) -> tuple[list[Candidate], list[Diagnostic]]:
    """Every candidate in ``doc``, in order of appearance, and document-level diagnostics.

    Each candidate carries its own diagnostics (how it was found, whether it lies in
    a reasoning block). The second list holds ``extract.none`` when no JSON-looking
    text was found at all, and ``extract.too_many`` when the search stopped after
    ``max_candidates`` (every candidate costs a parse later on).
    """
    text = doc.text
    start, end = _strip(text, 0, len(text))
    if start == end:
        message = "the response is empty" if not text else "the response is only whitespace"
        return [], [
            Diagnostic(
                code="extract.none",
                severity=Severity.WARNING,
                stage=STAGE,
                message=message,
            )
        ]
    first = _LEADING_INVISIBLE.match(text, start)
    assert first is not None
    opener = first.end()
    scanned: dict[tuple[int, int], tuple[int, bool]] = {}
    if opener < end and _LOOKS_LIKE_JSON.match(text, opener, end):
        # Fast path: a text that is one strict JSON value has no other candidate
        # (fences or tags inside its strings are data).
        try:
            json.loads(text[opener:end])
        except (ValueError, RecursionError):
            pass
        else:
            whole = Candidate(text[start:end], Span(start, end), "whole")
            if text[opener] in "{[":
                return [whole], []
            extractor = _Extractor(doc, max_candidates)
            extractor.add(whole)
            return extractor.finish(), []
        if text[opener] in "{[" and not doc.reasoning:
            # Not strict JSON, but maybe still one (repairable) value and nothing else.
            value_end, closed = _scan_value(text, opener, end)
            if closed and value_end == end:
                return [Candidate(text[start:end], Span(start, end), "whole")], []
            scanned[(opener, end)] = (value_end, closed)
    extractor = _Extractor(doc, max_candidates)
    extractor.scanned = scanned
    extractor.deadline = deadline or Deadline.never("extract")
    return extractor.run(start, end)


class _Extractor:
    def __init__(self, doc: Document, max_candidates: int) -> None:
        self.doc = doc
        self.text = doc.text
        self.max_candidates = max_candidates
        self.full = False  # max_candidates reached: stop looking
        self._lines: LineIndex | None = None
        self.found: list[tuple[Candidate, int]] = []  # with the order found
        self.spans: set[tuple[int, int]] = set()
        self._runs: dict[str, list[tuple[int, int]]] = {}
        self._run_index: dict[str, tuple[int, int]] = {}  # char: (last start, first run after)
        self._fence_cache: dict[tuple[str, int], tuple[int, int | None]] = {}
        self._tag_cache: dict[str, tuple[int, re.Match[str] | None]] = {}
        # Values already scanned (by the fast path): (start, limit) -> (end, closed).
        self.scanned: dict[tuple[int, int], tuple[int, bool]] = {}
        self.deadline = Deadline.never("extract")

    @property
    def lines(self) -> LineIndex:
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines

    def run(self, start: int, end: int) -> tuple[list[Candidate], list[Diagnostic]]:
        text = self.text
        if _LOOKS_LIKE_JSON.match(text, start, end):
            self.add(Candidate(text[start:end], Span(start, end), "whole"))
        if not self._jsonp(start, end):
            self._scan(start, end, 0)
        document_diagnostics: list[Diagnostic] = []
        if self.full:
            document_diagnostics.append(
                self._diagnostic(
                    "extract.too_many",
                    Severity.WARNING,
                    f"stopped looking after {self.max_candidates} candidates",
                    self.found[-1][0].span,
                    risk=None,
                )
            )
        if not self.found:
            self.add(Candidate(text[start:end], Span(start, end), "whole"))
            document_diagnostics.append(
                self._diagnostic(
                    "extract.none",
                    Severity.WARNING,
                    "no JSON value found; the whole text is passed on as is",
                    Span(start, end),
                    risk=None,
                    hint="check that the model was asked for JSON and did not refuse",
                )
            )
        return self.finish(), document_diagnostics

    # -- collecting -------------------------------------------------------------------

    def _diagnostic(
        self,
        code: str,
        severity: Severity,
        message: str,
        span: Span,
        *,
        risk: Risk | None = Risk.LOSSLESS,
        data: dict[str, Any] | None = None,
        hint: str | None = None,
    ) -> Diagnostic:
        return Diagnostic(
            code=code,
            severity=severity,
            stage=STAGE,
            message=message,
            span=span,
            position=self.lines.position(span.start),
            risk=risk,
            data=data,
            hint=hint,
        )

    def add(self, candidate: Candidate) -> None:
        self.found.append((candidate, len(self.found)))
        self.spans.add((candidate.span.start, candidate.span.end))
        if len(self.found) >= self.max_candidates:
            self.full = True

    def finish(self) -> list[Candidate]:
        self.found.sort(key=lambda f: (f[0].span.start, -f[0].span.end, f[1]))
        out: list[Candidate] = []
        for candidate, _ in self.found:
            if self.doc.in_reasoning(candidate.span):
                warning = self._diagnostic(
                    "extract.in_reasoning",
                    Severity.WARNING,
                    "this value is inside a reasoning block, not in the final answer",
                    candidate.span,
                    risk=None,
                )
                candidate = Candidate(
                    candidate.text,
                    candidate.span,
                    candidate.origin,
                    in_reasoning=True,
                    synthetic=candidate.synthetic,
                    diagnostics=(*candidate.diagnostics, warning),
                )
            out.append(candidate)
            decoded = self._double_encoded(candidate)
            if decoded is not None:
                out.append(decoded)
        return out

    def _double_encoded(self, candidate: Candidate) -> Candidate | None:
        stripped = candidate.text.strip()
        if len(stripped) < 4 or stripped[0] != '"' or stripped[-1] != '"':
            return None
        try:
            inner = json.loads(stripped)
        except (ValueError, RecursionError):
            return None
        if not isinstance(inner, str) or inner.strip()[:1] not in ("{", "["):
            return None
        try:
            value = json.loads(inner)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, (dict, list)):
            return None
        diagnostic = self._diagnostic(
            "extract.double_encoded",
            Severity.INFO,
            "the value is a JSON string holding JSON; decoded it",
            candidate.span,
        )
        return Candidate(
            inner,
            candidate.span,
            "double_encoded",
            in_reasoning=candidate.in_reasoning,
            synthetic=True,
            diagnostics=(*candidate.diagnostics, diagnostic),
        )

    # -- the scan ---------------------------------------------------------------------

    def _scan(self, start: int, limit: int, depth: int) -> None:
        text = self.text
        pos = start
        search = _MARKER.search
        check = self.deadline.check
        while pos < limit and not self.full:
            check()
            m = search(text, pos, limit)
            if m is None:
                return
            i = m.start()
            char = text[i]
            if char == "<":
                pos = self._tag(i, limit, depth)
            elif char in "`~":
                pos = self._fence(i, limit, depth)
            elif char == "{" or _plausible_value(text, i, limit):
                pos = self._prose(i, limit)
            else:
                pos = i + 1

    def _prose(self, start: int, limit: int) -> int:
        known = self.scanned.get((start, limit))
        end, closed = known if known is not None else _scan_value(self.text, start, limit)
        if not closed:
            end = _strip(self.text, start, end)[1]
        if (start, end) not in self.spans:
            span = Span(start, end)
            message = "JSON value found in prose" if closed else "unclosed JSON value in prose"
            diagnostic = self._diagnostic(
                "extract.prose", Severity.INFO, message, span, data={"closed": closed}
            )
            self.add(Candidate(self.text[start:end], span, "prose", diagnostics=(diagnostic,)))
        return max(end, start + 1)

    def _jsonp(self, start: int, end: int) -> bool:
        """Take ``callback(<value>);`` making up the whole text; ``False`` if it is not."""
        text = self.text
        head = _JSONP_HEAD.match(text, start, end)
        if head is None or not _LOOKS_LIKE_JSON.match(text, head.end(), end):
            return False
        inner_start = head.end()
        tail = end
        if text[tail - 1] == ";":
            tail = _strip(text, inner_start, tail - 1)[1]
        closed_call = text[tail - 1] == ")"
        inner_end = _strip(text, inner_start, tail - 1)[1] if closed_call else end
        if inner_end <= inner_start:
            return False
        if text[inner_start] in "{[":
            # The value must fill the call (it may be unclosed: truncated output).
            if _scan_value(text, inner_start, inner_end)[0] != inner_end:
                return False
        elif closed_call:
            try:
                json.loads(text[inner_start:inner_end])
            except (ValueError, RecursionError):
                return False
        else:
            return False
        span = Span(inner_start, inner_end)
        diagnostic = self._diagnostic(
            "extract.jsonp", Severity.INFO, "removed a JSONP callback wrapper", span
        )
        self.add(Candidate(text[inner_start:inner_end], span, "jsonp", diagnostics=(diagnostic,)))
        return True

    def _fence(self, i: int, limit: int, depth: int) -> int:
        text = self.text
        m = _FENCE_OPEN.match(text, i, limit)
        if m is None:
            j = i
            while j < limit and text[j] == text[i]:
                j += 1
            return j
        marker = m.group(1)
        info = m.group(2) if m.group(2) is not None else m.group(3)
        close = self._fence_close(marker[0], len(marker), m.end(), limit)
        content_end, after = close if close is not None else (limit, limit)
        start, end = _strip(text, m.end(), content_end)
        if start == end:
            return after
        opaque = _OPAQUE.match(text, start, end) is not None
        # An unclosed fence around prose is most likely a stray closing fence.
        if close is not None or opaque:
            span = Span(start, end)
            lang = info.strip() or None
            label = f"```{lang}" if lang and marker[0] == "`" else marker[:3]
            data = {"lang": lang, "marker": marker}
            diagnostics = [
                self._diagnostic(
                    "extract.fence",
                    Severity.INFO,
                    f"took the content of a {label} fence",
                    span,
                    data=data,
                )
            ]
            if close is None:
                diagnostics.append(
                    self._diagnostic(
                        "extract.unterminated_fence",
                        Severity.WARNING,
                        "the code fence is never closed: the output may have been cut off",
                        span,
                        risk=None,
                        data=data,
                        hint="raise the output token limit, or check that the model finished",
                    )
                )
            content = text[start:end]
            decoded = _strict_value(content) if close is not None else None
            self.add(
                Candidate(content, span, "fence", diagnostics=tuple(diagnostics), decoded=decoded)
            )
            if decoded is not None:
                # Strict JSON fills the fence: fences or tags inside its strings are data,
                # as they are in a whole text that is strict JSON.
                return after
        if not opaque and depth < _MAX_DEPTH:
            self._scan(start, end, depth + 1)
        return after

    def _fence_close(self, char: str, width: int, start: int, limit: int) -> tuple[int, int] | None:
        """The first closing fence after ``start``: (its start, its end)."""
        runs = self._runs.get(char)
        if runs is None:
            runs = _fence_runs(self.text, char)
            self._runs[char] = runs
        cached = self._fence_cache.get((char, width))
        if (
            cached is not None
            and cached[0] <= start
            and (cached[1] is None or runs[cached[1]][0] >= start)
        ):
            found = cached[1]
        else:
            found = None
            k = self._first_run(char, runs, start)
            while k < len(runs):
                if self._closes(runs[k], width):
                    found = k
                    break
                k += 1
            self._fence_cache[(char, width)] = (start, found)
        if found is None or runs[found][1] > limit:
            return None
        return runs[found]

    def _first_run(self, char: str, runs: list[tuple[int, int]], start: int) -> int:
        """Index of the first run starting at or after ``start``.

        Searches move forward through the text, so this resumes where the previous
        one stopped instead of searching again.
        """
        last_start, k = self._run_index.get(char, (0, 0))
        if start < last_start:
            k = bisect.bisect_left(runs, start, key=lambda r: r[0])
        while k < len(runs) and runs[k][0] < start:
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

    def _tag(self, i: int, limit: int, depth: int) -> int:
        text = self.text
        m = _OPEN_TAG.match(text, i, limit)
        if m is None:
            return i + 1
        name = m.group(1).lower()
        if name == "invoke":
            return self._invoke(m, limit)
        if name not in ENVELOPE_TAGS or m.group().endswith("/>"):
            return m.end()  # reasoning and wrapper tags: what is inside is scanned as usual
        close = self._tag_close(name, m.end(), limit)
        content_end, after = (close.start(), close.end()) if close else (limit, limit)
        start, end = _strip(text, m.end(), content_end)
        if start == end:
            return after
        opaque = _OPAQUE.match(text, start, end) is not None
        if close is not None or opaque:
            span = Span(start, end)
            data = {"tag": name}
            diagnostics = [
                self._diagnostic(
                    "extract.xml_envelope",
                    Severity.INFO,
                    f"took the content of <{name}>",
                    span,
                    data=data,
                )
            ]
            if close is None:
                diagnostics.append(self._unterminated(name, span))
            self.add(
                Candidate(text[start:end], span, f"xml:{name}", diagnostics=tuple(diagnostics))
            )
        if not opaque and depth < _MAX_DEPTH:
            self._scan(start, end, depth + 1)
        return after

    def _unterminated(self, name: str, span: Span) -> Diagnostic:
        return self._diagnostic(
            "extract.unterminated_envelope",
            Severity.WARNING,
            f"<{name}> is never closed: the output may have been cut off",
            span,
            risk=None,
            data={"tag": name},
            hint="raise the output token limit, or check that the model finished",
        )

    def _tag_close(self, name: str, start: int, limit: int) -> re.Match[str] | None:
        cached = self._tag_cache.get(name)
        if (
            cached is not None
            and cached[0] <= start
            and (cached[1] is None or cached[1].start() >= start)
        ):
            found = cached[1]
        else:
            found = _CLOSE_TAG[name].search(self.text, start)
            self._tag_cache[name] = (start, found)
        if found is None or found.end() > limit:
            return None
        return found

    def _invoke(self, m: re.Match[str], limit: int) -> int:
        text = self.text
        close = self._tag_close("invoke", m.end(), limit)
        body_end, end = (close.start(), close.end()) if close else (limit, limit)
        arguments: dict[str, Any] = {}
        typed: list[str] = []
        pos = m.end()
        while True:
            p = _PARAMETER_OPEN.search(text, pos, body_end)
            if p is None:
                break
            value_end = _PARAMETER_CLOSE.search(text, p.end(), body_end)
            raw = text[p.end() : value_end.start() if value_end else body_end]
            pos = value_end.end() if value_end else body_end
            name = _attribute_name(p.group()) or ""
            arguments[name], scalar = _parameter_value(raw)
            if scalar:
                typed.append(name)
        if close is None:
            end = _strip(text, m.start(), end)[1]
        span = Span(m.start(), end)
        call = {"name": _attribute_name(m.group()), "arguments": arguments}
        message = "built a tool call from an <invoke> element"
        if typed:
            message += f" (read {', '.join(typed)} as JSON scalars)"
        diagnostics = [
            self._diagnostic(
                "extract.function_calls",
                Severity.INFO,
                message,
                span,
                risk=Risk.SAFE if typed else Risk.LOSSLESS,
                data={"name": call["name"], "typed": typed},
            )
        ]
        if close is None:
            diagnostics.append(self._unterminated("invoke", span))
        self.add(
            Candidate(
                json.dumps(call, ensure_ascii=False),
                span,
                "xml:function_calls",
                synthetic=True,
                diagnostics=tuple(diagnostics),
            )
        )
        return max(end, m.end())


def _attribute_name(tag: str) -> str | None:
    m = _NAME_ATTR.search(tag)
    if m is None:
        return None
    return next(g for g in m.groups() if g is not None)


def _parameter_value(raw: str) -> tuple[Any, bool]:
    """A parameter's value, and whether it was read as a JSON scalar."""
    if raw.startswith("\r\n"):
        raw = raw[2:]
    elif raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\r\n"):
        raw = raw[:-2]
    elif raw.endswith("\n"):
        raw = raw[:-1]
    stripped = raw.strip()
    if not stripped or stripped[0] == '"':
        return raw, False
    try:
        value = strict_decode(stripped)
    except (ValueError, RecursionError):
        return raw, False
    return value, not isinstance(value, (dict, list))


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without surrounding whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _plausible_value(text: str, i: int, limit: int) -> bool:
    """Whether the ``{`` or ``[`` at ``i`` plausibly begins a JSON value."""
    for _ in range(_MAX_NESTED_CHECK):
        if text[i] == "{":
            return _OBJECT_START.match(text, i, limit) is not None
        m = _ARRAY_START.match(text, i, limit)
        if m is None:
            return False
        if m.group("nested") is None:
            return True
        i = m.start("nested")
    return True


def _scan_value(text: str, start: int, limit: int) -> tuple[int, bool]:
    """Where the value opened at ``start`` ends, and whether it was closed.

    Tracks strings (with escapes) and nesting; a closer that matches no opener is
    ignored, one that skips openers closes them too (``{"a": [1}``). An unclosed
    value ends at ``limit`` or where a fence or known tag interrupts it.
    """
    stack: list[str] = []
    opened = {"{": 0, "[": 0}
    pos = start
    search = _VALUE_TOKEN.search
    while True:
        m = search(text, pos, limit)
        if m is None:
            return limit, False
        kind = m.lastgroup
        pos = m.end()
        if kind == "dq":
            if m.group("dq_end") is None:
                return limit, False
        elif kind == "open":
            run = m.group()
            stack.extend(run)
            braces = run.count("{")
            opened["{"] += braces
            opened["["] += len(run) - braces
        elif kind == "close":
            for k, char in enumerate(m.group()):
                want = "{" if char == "}" else "["
                if opened[want]:
                    while True:
                        top = stack.pop()
                        opened[top] -= 1
                        if top == want:
                            break
                    if not stack:
                        return m.start() + k + 1, True
        elif kind == "sq":
            char = text[m.start()]
            if char in "{[":
                stack.append(char)
                opened[char] += 1
            if m.group("sq_end") is None:
                return limit, False
        else:
            return m.start(), False
