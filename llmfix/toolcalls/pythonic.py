"""Call syntaxes that look like code: pythonic lists and Gemma's ``call:NAME{...}``.

- ``pythonic`` — ``[get_weather(city='LA'), register(age=9)]`` as the whole answer
  (Llama 3.2/4 pythonic, Granite pythonic, ToolACE); read with :mod:`ast`, never ``eval``.
- ``llama4`` — the same inside ``<|python_start|>…<|python_end|>``.
- ``lfm2`` — the same inside ``<|tool_call_start|>…<|tool_call_end|>``.
- ``olmo3`` — calls one per line inside ``<function_calls>…</function_calls>`` (read by the
  XML module, which hands the body here).
- ``gemma4`` — ``<|tool_call>call:NAME{key:<|"|>text<|"|>,n:42}<tool_call|>``.
- ``functiongemma`` — ``<start_function_call>call:NAME{key:<escape>text<escape>}`` then
  ``<end_function_call>``.

Argument values are Python literals (``True``/``None`` and JSON's ``true``/``null`` alike);
a positional argument has no name to go by and is reported. A call cut off at the end of
the text is closed (open strings and brackets) and marked incomplete.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from llmfix import codes
from llmfix.formats import strip_span
from llmfix.model import Diagnostic
from llmfix.toolcalls.base import NAME_RE, Call, Hit, Scan
from llmfix.toolcalls.values import literal_value, typed_value

_PYTHONIC_START = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")


def parse_pythonic(
    scan: Scan, start: int, end: int, fmt: str, *, bounded: bool
) -> tuple[list[Call], list[Diagnostic]]:
    """Calls written as Python: a list of calls, one call, or one call per line."""
    text = scan.text
    start, end = strip_span(text, start, end)
    source = text[start:end]
    if not source:
        return [], []
    nodes = _call_nodes(source)
    complete = True
    kept = -1  # closed from the cut: the bytes of the read text that were written
    byte_starts: list[int] = []
    if nodes is None and not bounded:
        closed = _close(source)
        nodes = _call_nodes(closed[0]) if closed is not None else None
        complete = False
        if closed is not None:
            kept = len(closed[0][: closed[1]].encode())
            byte_starts = _byte_line_starts(closed[0])
    if nodes is None:
        note = scan.note(
            codes.TOOLS_MALFORMED_CALL,
            f"the {fmt} call list is not valid Python call syntax",
            start,
            end,
        )
        return [], [note]
    calls: list[Call] = []
    notes: list[Diagnostic] = []
    ascii_source = source.isascii()
    line_starts = _line_starts(source) if ascii_source else []
    for node in nodes:
        scan.deadline.check()
        call_start, call_end = start, end
        if ascii_source and node.end_lineno is not None and node.end_col_offset is not None:
            call_start = start + line_starts[node.lineno - 1] + node.col_offset
            call_end = start + line_starts[node.end_lineno - 1] + node.end_col_offset
        name = _dotted(node.func, fmt)
        if name is None:
            notes.append(
                scan.note(
                    codes.TOOLS_MALFORMED_CALL,
                    "a call whose function is not a plain name",
                    call_start,
                    call_end,
                )
            )
            continue
        arguments: dict[str, Any] = {}
        whole = complete or (
            kept >= 0
            and node.end_lineno is not None
            and node.end_col_offset is not None
            and byte_starts[node.end_lineno - 1] + node.end_col_offset <= kept
        )  # a call before the cut in a cut-off list is all there
        call = Call(name, arguments, call_start, call_end, fmt, complete=whole)
        for keyword in node.keywords:
            if keyword.arg is None:
                call.notes.append(_bad_argument(scan, call, "a **mapping argument"))
                continue
            try:
                arguments[keyword.arg] = literal_value(keyword.value)
            except ValueError:
                call.notes.append(
                    _bad_argument(scan, call, f"argument {keyword.arg!r} is not a literal value")
                )
        if node.args:
            call.notes.append(
                scan.note(
                    codes.TOOLS_POSITIONAL_ARGUMENT,
                    f"{name}() is given {len(node.args)} positional argument(s), which have no "
                    "name to match the tool's parameters",
                    call_start,
                    call_end,
                    hint="pass every argument by name",
                )
            )
        calls.append(call)
    return calls, notes


def _bad_argument(scan: Scan, call: Call, what: str) -> Diagnostic:
    return scan.note(
        codes.TOOLS_MALFORMED_ARGUMENT,
        f"{call.name}(): {what}; it was left out",
        call.start,
        call.end,
    )


def _call_nodes(source: str) -> list[ast.Call] | None:
    try:
        body = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        body = None
    if body is not None:
        items = list(body.elts) if isinstance(body, (ast.List, ast.Tuple)) else [body]
        if items and all(isinstance(i, ast.Call) for i in items):
            return [i for i in items if isinstance(i, ast.Call)]
        return None
    try:
        module = ast.parse(source, mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    out = []
    for statement in module.body:
        if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
            return None
        out.append(statement.value)
    return out or None


def _dotted(node: ast.expr, fmt: str) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    parts.reverse()
    if fmt == "llama3" and len(parts) > 1 and parts[-1] == "call":
        parts.pop()  # Llama 3 built-in tools: brave_search.call(query=...)
    return ".".join(parts)


def _line_starts(source: str) -> list[int]:
    starts = [0]
    pos = source.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = source.find("\n", pos + 1)
    return starts


_CLOSER = {"(": ")", "[": "]", "{": "}"}


def _byte_line_starts(source: str) -> list[int]:
    """The UTF-8 byte offset where each line of ``source`` starts (``ast`` columns count
    bytes)."""
    starts = [0]
    for line in source.encode().splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _open_brackets(source: str) -> tuple[list[str], str | None, int]:
    """The closers still owed at the end of ``source``, the string quote left open, and
    where the innermost unfinished argument began (-1 if none)."""
    stack: list[str] = []
    quote: str | None = None
    last_separator = -1
    i = 0
    n = len(source)
    while i < n:
        c = source[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in _CLOSER:
            stack.append(_CLOSER[c])
            last_separator = i
        elif c in ")]}":
            if stack and stack[-1] == c:
                stack.pop()
        elif c == ",":
            last_separator = i
        i += 1
    return stack, quote, last_separator


def _close(source: str) -> tuple[str, int] | None:
    """``source`` cut off mid-call, with its open string and brackets closed, and how much
    of it was written (the rest was added to close it).

    If the text ends inside an argument (``f(a=``), that argument is dropped.
    """
    stack, quote, last_separator = _open_brackets(source)
    if not stack and quote is None:
        return None
    tail = (quote or "") + "".join(reversed(stack))
    candidates = [(source + tail, len(source))]
    if last_separator >= 0:
        head = source[: last_separator + 1].rstrip(",")
        candidates.append((head + "".join(reversed(_open_brackets(head)[0])), len(head)))
    for candidate in candidates:
        if _call_nodes(candidate[0]) is not None:
            return candidate
    return None


# --------------------------------------------------------------------- marker readers


def read_python_block(scan: Scan, m: re.Match[str], close: re.Pattern[str], family: str) -> Hit:
    """``<marker>[calls]<close>`` (``llama4``, ``lfm2``). A closing marker inside a string
    argument is text: the block ends at the first one outside every string."""
    found = scan.find(close, m.end())
    for _ in range(8):  # (a bound: each try scans the block so far)
        if found is None or _open_brackets(scan.text[m.end() : found.start()])[1] is None:
            break
        found = scan.find(close, found.end())
    end = found.start() if found else len(scan.text)
    calls, notes = parse_pythonic(scan, m.end(), end, family, bounded=found is not None)
    return Hit(family, m.start(), found.end() if found else end, calls, notes)


def whole_text_pythonic(scan: Scan, start: int, end: int) -> tuple[list[Call], list[Diagnostic]]:
    """The bare pythonic format: the answer is nothing but ``[f(...), ...]``."""
    s, e = strip_span(scan.text, start, end)
    if not _PYTHONIC_START.match(scan.text, s, e):
        return [], []
    calls, notes = parse_pythonic(scan, s, e, "pythonic", bounded=scan.text[e - 1] == "]")
    if not calls:
        return [], []
    return calls, notes


# ------------------------------------------------------------------------------ Gemma


class _Truncated(Exception):
    pass


class _GemmaReader:
    """Reads Gemma's object syntax: unquoted keys, strings between quote tokens."""

    def __init__(self, text: str, end: int, quote: str) -> None:
        self.text = text
        self.end = end
        self.quote = quote
        self.truncated = False

    def skip(self, pos: int) -> int:
        while pos < self.end and self.text[pos].isspace():
            pos += 1
        return pos

    def value(self, pos: int, depth: int) -> tuple[Any, int]:
        if depth > 64:
            raise ValueError("nested too deeply")
        text = self.text
        pos = self.skip(pos)
        if pos >= self.end:
            raise _Truncated
        if text.startswith(self.quote, pos):
            close = text.find(self.quote, pos + len(self.quote), self.end)
            if close == -1:
                self.truncated = True
                return text[pos + len(self.quote) : self.end], self.end
            return text[pos + len(self.quote) : close], close + len(self.quote)
        char = text[pos]
        if char == "{":
            return self.object(pos + 1, depth)
        if char == "[":
            return self.array(pos + 1, depth)
        stop = pos
        while stop < self.end and text[stop] not in ",}]":
            stop += 1
        raw = text[pos:stop].strip()
        value, _ = typed_value(raw, None)
        return value, stop

    def object(self, pos: int, depth: int) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        text = self.text
        while True:
            pos = self.skip(pos)
            if pos >= self.end:
                self.truncated = True
                return out, pos
            if text[pos] == "}":
                return out, pos + 1
            if text[pos] == ",":
                pos += 1
                continue
            colon = text.find(":", pos, self.end)
            if colon == -1:
                self.truncated = True
                return out, self.end
            key = text[pos:colon].strip()
            if (
                key.startswith(self.quote)
                and key.endswith(self.quote)
                and len(key) > 2 * len(self.quote)
            ):
                key = key[len(self.quote) : -len(self.quote)]
            try:
                out[key], pos = self.value(colon + 1, depth + 1)
            except _Truncated:
                self.truncated = True
                return out, self.end
            if self.truncated:
                return out, pos

    def array(self, pos: int, depth: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        text = self.text
        while True:
            pos = self.skip(pos)
            if pos >= self.end:
                self.truncated = True
                return out, pos
            if text[pos] == "]":
                return out, pos + 1
            if text[pos] == "}":  # the enclosing object's closer: this list was left open
                return out, pos
            if text[pos] == ",":
                pos += 1
                continue
            try:
                item, pos = self.value(pos, depth + 1)
            except _Truncated:
                self.truncated = True
                return out, self.end
            out.append(item)
            if self.truncated:
                return out, pos


_CALL_PREFIX = re.compile(r"\s*call:")


def read_gemma(
    scan: Scan, m: re.Match[str], close: re.Pattern[str], family: str, quote: str
) -> Hit:
    """``<open>call:NAME{...}<close>`` for ``gemma4`` and ``functiongemma``."""
    text = scan.text
    found = scan.find(close, m.end())
    end = found.start() if found else len(text)
    hit = Hit(family, m.start(), found.end() if found else end)
    prefix = _CALL_PREFIX.match(text, m.end(), end)
    pos = prefix.end() if prefix else m.end()
    name = NAME_RE.match(text, pos, end)
    brace = text.find("{", pos, end) if name else -1
    if name is None or (brace == -1 and found is not None):
        hit.notes.append(
            scan.note(
                codes.TOOLS_MALFORMED_CALL,
                f"a {family} call without a name and arguments",
                m.start(),
                hit.end,
            )
        )
        return hit
    call_name = name.group().rstrip(":")
    if brace == -1 or text[name.end() : brace].strip():
        call = Call(call_name, {}, m.start(), hit.end, family, complete=False)
        hit.calls.append(call)
        return hit
    try:
        # Read past the first closing marker: one written inside a quoted value is text.
        reader = _GemmaReader(text, len(text), quote)
        arguments, stop = reader.object(brace + 1, 0)
        if found is not None and stop > found.start():
            if reader.truncated:
                reader = _GemmaReader(text, end, quote)
                arguments, _ = reader.object(brace + 1, 0)
            else:
                found = scan.find(close, stop)
                hit.end = found.end() if found else stop
        elif found is None and not reader.truncated:
            hit.end = max(hit.end, stop)
    except ValueError:
        hit.notes.append(
            scan.note(
                codes.TOOLS_MALFORMED_CALL,
                f"the arguments of {call_name} are nested too deeply",
                m.start(),
                hit.end,
            )
        )
        return hit
    complete = not reader.truncated or found is not None
    hit.calls.append(Call(call_name, arguments, m.start(), hit.end, family, complete=complete))
    return hit
