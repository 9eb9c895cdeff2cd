"""Extract stage: every piece of a response that may hold the JSON value meant.

:func:`extract_candidates` lists candidates in order of appearance, each with its span
in the raw text and how it was found (``origin``). It never guesses which one is
meant; that is the select stage's job.

Origins and the rules behind them:

- ``whole`` — the whole text, stripped of surrounding whitespace, when it begins like
  a JSON value (possibly after a BOM or another invisible character) and not like a
  numbered list (``1. Negative`` begins with a list marker, not a number); also, as a last
  resort, when nothing else was found, so that the lenient parser can still try it (not
  when a fence of code was passed over: code is not data).
- ``fence`` — the content of a Markdown code fence: backticks or tildes, any info
  string (``json``, ``JSON``, ``jsonc``, none, …); a fence marked as code in a programming
  language (``python``, ``bash``, ``sql`` …) only when its content begins like a JSON
  value (code is not data: its lines are not an array), also mid-line (``[```json``) and
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

Each format is read by its module in :mod:`llmfix.formats` (``fences``, ``envelopes``,
``invoke``, ``prose``), which the parser and the tool-call readers use as well; this
module decides what becomes a candidate.

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
the work is linear in the size of the text; a deadline is checked once per nested region
scanned, every ``CHECK_EVERY`` markers and every 16,384 characters of a value (see
:mod:`llmfix.deadline`).
The search stops after ``max_candidates`` (``extract.too_many``), since every candidate
is parsed later.
Fast paths: a text that is one strict JSON value (``json.loads`` succeeds) is only
the ``whole`` candidate — fences or tags inside its strings are data; and a text that
begins with ``{``/``[`` whose value closes exactly at its end (not strict, but one
repairable value) is only the ``whole`` candidate too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from llmfix import codes
from llmfix.deadline import CHECK_EVERY, Deadline
from llmfix.formats import ForwardSearch, fences, invoke, strip_span
from llmfix.formats.envelopes import ENVELOPE_TAGS, close_pattern, open_tag
from llmfix.formats.prose import VALUE_START, plausible_value, scan_value
from llmfix.jsontext import NotStrict, strict_decode
from llmfix.model import Candidate, Diagnostic, LineIndex, Risk, Span
from llmfix.pipeline.normalize import INVISIBLE_CLASS, Document, normalize_document

STAGE = "extract"

MAX_CANDIDATES = 1000  # default bound: every candidate is parsed later on
_MAX_DEPTH = 32  # nested containers scanned inside one another
_MASK = CHECK_EVERY - 1
_NEVER = Deadline.never(STAGE)

# Where a JSON value may begin (for the whole text and for container contents).
_LOOKS_LIKE_JSON = re.compile(
    rf"(?:[\s{INVISIBLE_CLASS}]|//[^\n]{{0,200}}\n|/\*(?:[^*]|\*(?!/)){{0,200}}\*/)*"
    rf"(?:[{{\[\"'\uff5b\uff3b\uff02]|-?\d|(?:true|false|null)\b)"
)
# Container content that begins like this is opaque (see the module docstring).
_OPAQUE = re.compile(rf"[\s{INVISIBLE_CLASS}]*[{{\[\"\uff5b\uff3b\uff02]")
_LEADING_INVISIBLE = re.compile(f"[{INVISIBLE_CLASS}]*")

# What the scan stops at: a fence, a tag, or a "{"/"[" that may begin JSON.
_MARKER = re.compile(r"[`~<]|" + VALUE_START)


# A numbered list's first marker ("1. Negative", "2) Positive"): the answer is a list, and
# its marker is not a number.
_LIST_MARKER = re.compile(r"\d{1,3}[.)][ \t]+[^\W\d]")
# Fence languages that mark code, not data (the content of such a fence becomes a
# candidate only when it begins like a JSON value).
_CODE_LANGUAGES = frozenset(
    {
        "python",
        "py",
        "python3",
        "ipython",
        "bash",
        "sh",
        "shell",
        "zsh",
        "console",
        "shell-session",
        "powershell",
        "ps1",
        "bat",
        "cmd",
        "sql",
        "java",
        "kotlin",
        "scala",
        "groovy",
        "c",
        "cpp",
        "c++",
        "cc",
        "h",
        "hpp",
        "csharp",
        "cs",
        "fsharp",
        "go",
        "golang",
        "rust",
        "rs",
        "ruby",
        "rb",
        "php",
        "perl",
        "pl",
        "lua",
        "r",
        "swift",
        "objective-c",
        "objc",
        "dart",
        "elixir",
        "erlang",
        "haskell",
        "hs",
        "ocaml",
        "clojure",
        "lisp",
        "scheme",
        "julia",
        "matlab",
        "vb",
        "vba",
        "dockerfile",
        "makefile",
        "cmake",
        "html",
        "css",
        "scss",
        "less",
        "jsx",
        "tsx",
        "vue",
        "svelte",
        "diff",
        "patch",
        "asm",
        "nasm",
    }
)


def _is_code(lang: str | None) -> bool:
    return lang is not None and lang.casefold() in _CODE_LANGUAGES


def _strict_value(content: str) -> tuple[Any] | None:
    """``(value,)`` when ``content`` is one strict JSON object or array, else ``None``."""
    if content[:1] not in ("{", "["):
        return None
    try:
        return (strict_decode(content),)
    except (ValueError, RecursionError):
        return None


def _decodes(text: str) -> bool:
    """Whether ``text`` is JSON to ``json.loads``."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


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
    doc: Document,
    *,
    max_candidates: int = MAX_CANDIDATES,
    deadline: Deadline | None = None,
    not_strict: NotStrict | None = None,
) -> tuple[list[Candidate], list[Diagnostic]]:
    """Every candidate in ``doc``, in order of appearance, and document-level diagnostics.

    Each candidate carries its own diagnostics (how it was found, whether it lies in
    a reasoning block). The second list holds ``extract.none`` when no JSON-looking
    text was found at all, and ``extract.too_many`` when the search stopped after
    ``max_candidates`` (every candidate costs a parse later on). With a ``deadline``,
    the scan checks it as it goes and raises :class:`~llmfix.deadline.OutOfTime` when
    the time is spent. ``not_strict``: a failed strict decode of the stripped text, so
    that it is not decoded again here.
    """
    if deadline is None:
        deadline = _NEVER
    text = doc.text
    start, end = strip_span(text, 0, len(text))
    if start == end:
        message = "the response is empty" if not text else "the response is only whitespace"
        return [], [codes.EXTRACT_NONE.at(message)]
    first = _LEADING_INVISIBLE.match(text, start)
    assert first is not None
    opener = first.end()
    scanned: dict[tuple[int, int], tuple[int, bool]] = {}
    if opener < end and _LOOKS_LIKE_JSON.match(text, opener, end):
        # Fast path: a text that is one strict JSON value has no other candidate
        # (fences or tags inside its strings are data).
        body = text[opener:end]
        known_not_json = not_strict is not None and not_strict.syntax and not_strict.covers(body)
        if not known_not_json and _decodes(body):
            whole = Candidate(text[start:end], Span(start, end), "whole")
            if text[opener] in "{[":
                return [whole], []
            extractor = _Extractor(doc, max_candidates, deadline)
            extractor.add(whole)
            return extractor.finish(), []
        if text[opener] in "{[" and not doc.reasoning:
            # Not strict JSON, but maybe still one (repairable) value and nothing else.
            value_end, closed = scan_value(text, opener, end, deadline)
            if closed and value_end == end:
                return [Candidate(text[start:end], Span(start, end), "whole")], []
            scanned[(opener, end)] = (value_end, closed)
    extractor = _Extractor(doc, max_candidates, deadline)
    extractor.scanned = scanned
    return extractor.run(start, end)


# Parse repairs that leave every string and bracket of a text where strict JSON has them:
# a value read with no other repair is strict JSON but for Python literals and trailing
# commas (words and commas outside its strings), so no fence, tag, prose or second value
# lies outside its strings. One also cut off runs to the end of the text.
_IN_PLACE = frozenset({codes.PARSE_TRAILING_COMMA.id, codes.PARSE_PYTHON_LITERAL.id})
_CUT_OFF = frozenset({codes.PARSE_TRUNCATED.id, codes.PARSE_CUT_OFF.id})


def broken_whole(doc: Document, not_strict: NotStrict | None) -> Candidate | None:
    """The ``whole`` candidate of a text that begins with ``{`` or ``[`` and is not JSON
    (``not_strict``: the failed decode of the text stripped), else ``None``.

    Such a text is mostly one broken value. The pipeline parses this candidate before
    extraction runs, and when :func:`found_alone` says that extraction would find it and
    nothing else, extraction is not run: its scan of the value and the parse would be
    two passes over the same text.
    """
    if not_strict is None or not not_strict.syntax or doc.reasoning:
        return None
    text = doc.text
    start, end = strip_span(text, 0, len(text))
    body = not_strict.text  # (the text found not strict, taken as it is: no copy to compare)
    if start == end or text[start] not in "{[" or len(body) != end - start:
        return None
    if not text.startswith(body, start):
        return None
    return Candidate(body, Span(start, end), "whole")


def found_alone(candidate: Candidate, doc: Document, codes: Iterable[str]) -> bool:
    """Whether :func:`extract_candidates` finds ``candidate`` (from :func:`broken_whole`)
    and no other, given the codes of the diagnostics of its parse.

    When the parse repaired only Python literals and trailing commas, the value closes
    exactly at the end of the text, so extraction's fast path gives it alone. When the
    value was also cut off, it never closes: extraction's scan stops first at its opener
    (a plausible start of a value) and takes the value to the end of the text, where
    the scan ends.
    """
    cut_off = False
    for code in codes:  # (the first other code decides: a broken megabyte has many)
        if code not in _IN_PLACE:
            if code not in _CUT_OFF:
                return False
            cut_off = True
    if not cut_off:
        return True
    text = doc.text
    start, end = candidate.span.start, candidate.span.end
    return _MARKER.match(text, start, end) is not None and (
        text[start] == "{" or plausible_value(text, start, end)
    )


class _Extractor:
    def __init__(self, doc: Document, max_candidates: int, deadline: Deadline) -> None:
        self.doc = doc
        self.text = doc.text
        self.max_candidates = max_candidates
        self.full = False  # max_candidates reached: stop looking
        self._lines: LineIndex | None = None
        self.found: list[tuple[Candidate, int]] = []  # with the order found
        self.spans: set[tuple[int, int]] = set()
        self.deadline = deadline
        # made on first use: most answers have no fence, or no tag
        self._fences: fences.FenceCloser | None = None
        self._search: ForwardSearch | None = None  # closing tags
        # Values already scanned (by the fast path): (start, limit) -> (end, closed).
        self.scanned: dict[tuple[int, int], tuple[int, bool]] = {}
        self.code_fence = False  # a fence of code was passed over

    @property
    def fences(self) -> fences.FenceCloser:
        if self._fences is None:
            self._fences = fences.FenceCloser(self.text)
        return self._fences

    @property
    def search(self) -> ForwardSearch:
        if self._search is None:
            self._search = ForwardSearch(self.text)
        return self._search

    @property
    def lines(self) -> LineIndex:
        if self._lines is None:
            self._lines = LineIndex(self.text)
        return self._lines

    def run(self, start: int, end: int) -> tuple[list[Candidate], list[Diagnostic]]:
        text = self.text
        if _LOOKS_LIKE_JSON.match(text, start, end) and not _LIST_MARKER.match(text, start, end):
            self.add(Candidate(text[start:end], Span(start, end), "whole"))
        if not self._jsonp(start, end):
            self._scan(start, end, 0)
        document_diagnostics: list[Diagnostic] = []
        if self.full:
            document_diagnostics.append(
                self._diagnostic(
                    codes.EXTRACT_TOO_MANY,
                    f"stopped looking after {self.max_candidates} candidates",
                    self.found[-1][0].span,
                    risk=None,
                )
            )
        if not self.found:
            if not self.code_fence:  # code is not data: the parser is not given it
                self.add(Candidate(text[start:end], Span(start, end), "whole"))
            document_diagnostics.append(
                self._diagnostic(
                    codes.EXTRACT_NONE,
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
        code: codes.Code,
        message: str,
        span: Span,
        *,
        risk: Risk | None = Risk.LOSSLESS,
        data: dict[str, Any] | None = None,
        hint: str | None = None,
    ) -> Diagnostic:
        """A diagnostic of ``code`` at ``span``, with its line:column (lossless unless said)."""
        return code.at(
            message,
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
                    codes.EXTRACT_IN_REASONING,
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
            codes.EXTRACT_DOUBLE_ENCODED,
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
        if depth:
            check()  # once per nested region (scanned inside a fence or tag)
        steps = 0
        while pos < limit and not self.full:
            m = search(text, pos, limit)
            if m is None:
                return
            steps += 1
            if not steps & _MASK:
                check()
            i = m.start()
            char = text[i]
            if char == "<":
                pos = self._tag(i, limit, depth)
            elif char in "`~":
                pos = self._fence(i, limit, depth)
            elif char == "{" or plausible_value(text, i, limit):
                pos = self._prose(i, limit)
            else:
                pos = i + 1

    def _prose(self, start: int, limit: int) -> int:
        known = self.scanned.get((start, limit))
        end, closed = (
            known if known is not None else scan_value(self.text, start, limit, self.deadline)
        )
        if not closed:
            end = strip_span(self.text, start, end)[1]
        if (start, end) not in self.spans:
            span = Span(start, end)
            message = "JSON value found in prose" if closed else "unclosed JSON value in prose"
            diagnostic = self._diagnostic(
                codes.EXTRACT_PROSE, message, span, data={"closed": closed}
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
            tail = strip_span(text, inner_start, tail - 1)[1]
        closed_call = text[tail - 1] == ")"
        inner_end = strip_span(text, inner_start, tail - 1)[1] if closed_call else end
        if inner_end <= inner_start:
            return False
        if text[inner_start] in "{[":
            # The value must fill the call (it may be unclosed: truncated output).
            if scan_value(text, inner_start, inner_end, self.deadline)[0] != inner_end:
                return False
        elif closed_call:
            try:
                json.loads(text[inner_start:inner_end])
            except (ValueError, RecursionError):
                return False
        else:
            return False
        span = Span(inner_start, inner_end)
        diagnostic = self._diagnostic(codes.EXTRACT_JSONP, "removed a JSONP callback wrapper", span)
        self.add(Candidate(text[inner_start:inner_end], span, "jsonp", diagnostics=(diagnostic,)))
        return True

    def _fence(self, i: int, limit: int, depth: int) -> int:
        text = self.text
        m = fences.opening(text, i, limit)
        if m is None:
            return fences.run_end(text, i, limit)
        marker = m.group(1)
        close = self.fences.close(marker[0], len(marker), m.end(), limit)
        content_end, after = close if close is not None else (limit, limit)
        start, end = strip_span(text, m.end(), content_end)
        if start == end:
            return after
        opaque = _OPAQUE.match(text, start, end) is not None
        lang = fences.info(m).strip() or None
        # An unclosed fence around prose is most likely a stray closing fence; a fence of
        # code in a programming language is code, not data, unless it holds a JSON value.
        code = not opaque and _is_code(lang)
        self.code_fence |= code
        if (close is not None or opaque) and not code:
            span = Span(start, end)
            label = f"```{lang}" if lang and marker[0] == "`" else marker[:3]
            data = {"lang": lang, "marker": marker}
            diagnostics = [
                self._diagnostic(
                    codes.EXTRACT_FENCE,
                    f"took the content of a {label} fence",
                    span,
                    data=data,
                )
            ]
            if close is None:
                diagnostics.append(
                    self._diagnostic(
                        codes.EXTRACT_UNTERMINATED_FENCE,
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

    def _tag(self, i: int, limit: int, depth: int) -> int:
        text = self.text
        m = open_tag(text, i, limit)
        if m is None:
            return i + 1
        name = m.group(1).lower()
        if name == "invoke":
            return self._invoke(m, limit)
        if name not in ENVELOPE_TAGS or m.group().endswith("/>"):
            return m.end()  # reasoning and wrapper tags: what is inside is scanned as usual
        close = self.search.find(close_pattern(name), m.end(), limit)
        content_end, after = (close.start(), close.end()) if close else (limit, limit)
        start, end = strip_span(text, m.end(), content_end)
        if start == end:
            return after
        opaque = _OPAQUE.match(text, start, end) is not None
        if close is not None or opaque:
            span = Span(start, end)
            data = {"tag": name}
            diagnostics = [
                self._diagnostic(
                    codes.EXTRACT_XML_ENVELOPE,
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
            codes.EXTRACT_UNTERMINATED_ENVELOPE,
            f"<{name}> is never closed: the output may have been cut off",
            span,
            risk=None,
            data={"tag": name},
            hint="raise the output token limit, or check that the model finished",
        )

    def _invoke(self, m: re.Match[str], limit: int) -> int:
        text = self.text
        tag = invoke.opening(text, m.start(), limit)
        if tag is None:
            return m.end()
        block = invoke.read(self.search, tag, limit)
        arguments: dict[str, Any] = {}
        typed: list[str] = []
        for parameter in block.parameters:
            name = parameter.name or ""
            arguments[name], scalar = _parameter_value(parameter.raw)
            if scalar:
                typed.append(name)
        end = block.end if block.closed else strip_span(text, m.start(), block.end)[1]
        span = Span(m.start(), end)
        call = {"name": block.name, "arguments": arguments}
        message = "built a tool call from an <invoke> element"
        if typed:
            message += f" (read {', '.join(typed)} as JSON scalars)"
        diagnostics = [
            self._diagnostic(
                codes.EXTRACT_FUNCTION_CALLS,
                message,
                span,
                risk=Risk.SAFE if typed else Risk.LOSSLESS,
                data={"name": call["name"], "typed": typed},
            )
        ]
        if not block.closed:
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


def _parameter_value(raw: str) -> tuple[Any, bool]:
    """A parameter's value, and whether it was read as a JSON scalar."""
    raw = invoke.trim_newline(raw)
    stripped = raw.strip()
    if not stripped or stripped[0] == '"':
        return raw, False
    try:
        value = strict_decode(stripped)
    except (ValueError, RecursionError):
        return raw, False
    return value, not isinstance(value, (dict, list))
