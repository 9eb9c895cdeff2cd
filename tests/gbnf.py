"""A small GBNF reader and matcher for the tests: parses a grammar as llama.cpp's
grammars/README.md describes it (rules, alternatives, literals with escapes, character
classes, groups, ``* + ?`` and ``{m}``, ``{m,}``, ``{m,n}``) and says whether a whole
text matches ``root``. Written for the grammars :mod:`llmfix.llm.grammar` builds; a
syntax error raises ``ValueError``, as llama.cpp refuses such a grammar."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from typing import Any

_NAME = re.compile(r"[a-zA-Z0-9-]+")


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Cls:
    ranges: tuple[tuple[int, int], ...]
    negated: bool


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Seq:
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Any, ...]


@dataclass(frozen=True)
class Rep:
    item: Any
    low: int
    high: int | None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def space(self, newlines: bool) -> None:
        while self.at < len(self.text):
            ch = self.text[self.at]
            if ch == "#":
                while self.at < len(self.text) and self.text[self.at] != "\n":
                    self.at += 1
            elif ch in " \t" or (newlines and ch in "\r\n"):
                self.at += 1
            else:
                break

    def rules(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self.space(True)
        while self.at < len(self.text):
            name = self.name()
            self.space(False)
            if not self.text.startswith("::=", self.at):
                raise ValueError(f"expected ::= at {self.at}")
            self.at += 3
            self.space(True)
            if name in out:
                raise ValueError(f"rule {name} defined twice")
            out[name] = self.alternatives(top=True)
            self.space(True)
        for body in out.values():
            _check_refs(body, out)
        if "root" not in out:
            raise ValueError("no root rule")
        return out

    def name(self) -> str:
        found = _NAME.match(self.text, self.at)
        if not found:
            raise ValueError(f"expected a name at {self.at}: {self.text[self.at : self.at + 20]!r}")
        self.at = found.end()
        return found.group()

    def alternatives(self, top: bool) -> Any:
        options = [self.sequence(top)]
        while self.at < len(self.text) and self.text[self.at] == "|":
            self.at += 1
            self.space(True)
            options.append(self.sequence(top))
        return options[0] if len(options) == 1 else Alt(tuple(options))

    def sequence(self, top: bool) -> Any:
        items: list[Any] = []
        while self.at < len(self.text):
            ch = self.text[self.at]
            if ch == '"':
                self.at += 1
                chars = []
                while self.text[self.at] != '"':
                    chars.append(self.char())
                self.at += 1
                item: Any = Lit("".join(chars))
            elif ch == "[":
                item = self.char_class()
            elif ch == "(":
                self.at += 1
                self.space(True)
                item = self.alternatives(top=False)
                if self.text[self.at] != ")":
                    raise ValueError(f"expected ) at {self.at}")
                self.at += 1
            elif _NAME.match(ch):
                save = self.at
                self.name()
                self.space(False)
                if self.text.startswith("::=", self.at):  # the next rule starts
                    self.at = save
                    break
                self.at = save
                item = Ref(self.name())
            else:
                break
            item = self.repetition(item)
            items.append(item)
            self.space(not top)
            if top and self.at < len(self.text) and self.text[self.at] in "\r\n":
                nxt = self.at
                self.space(True)
                if self.at < len(self.text) and self.text[self.at] == "|":
                    continue
                self.at = nxt
                break
        return items[0] if len(items) == 1 else Seq(tuple(items))

    def repetition(self, item: Any) -> Any:
        if self.at >= len(self.text):
            return item
        ch = self.text[self.at]
        if ch in "*+?":
            self.at += 1
            return Rep(item, 0 if ch != "+" else 1, None if ch != "?" else 1)
        if ch == "{":
            end = self.text.index("}", self.at)
            body = self.text[self.at + 1 : end].replace(" ", "")
            self.at = end + 1
            if "," not in body:
                return Rep(item, int(body), int(body))
            low, high = body.split(",")
            return Rep(item, int(low), int(high) if high else None)
        return item

    def char(self) -> str:
        ch = self.text[self.at]
        if ch != "\\":
            self.at += 1
            return ch
        esc = self.text[self.at + 1]
        self.at += 2
        simple = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]"}
        if esc in simple:
            return simple[esc]
        width = {"x": 2, "u": 4, "U": 8}.get(esc)
        if width is None:
            raise ValueError(f"unknown escape \\{esc}")
        code = int(self.text[self.at : self.at + width], 16)
        self.at += width
        return chr(code)

    def char_class(self) -> Cls:
        self.at += 1
        negated = self.text[self.at] == "^"
        if negated:
            self.at += 1
        ranges = []
        while self.text[self.at] != "]":
            low = self.char()
            high = low
            if self.text[self.at] == "-" and self.text[self.at + 1] != "]":
                self.at += 1
                high = self.char()
            ranges.append((ord(low), ord(high)))
        self.at += 1
        return Cls(tuple(ranges), negated)


def _check_refs(node: Any, rules: dict[str, Any]) -> None:
    if isinstance(node, Ref) and node.name not in rules:
        raise ValueError(f"undefined rule {node.name}")
    for child in getattr(node, "items", ()) or getattr(node, "options", ()):
        _check_refs(child, rules)
    if isinstance(node, Rep):
        _check_refs(node.item, rules)


def parse(text: str) -> dict[str, Any]:
    """The rules of a GBNF grammar (``ValueError`` when it does not parse)."""
    return _Parser(text).rules()


def matches(grammar: str, text: str) -> bool:
    """Whether the whole of ``text`` matches the grammar's ``root``."""
    rules = parse(grammar)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:

        @cache
        def ends(node: Any, at: int) -> frozenset[int]:
            if isinstance(node, Lit):
                return (
                    frozenset([at + len(node.text)])
                    if text.startswith(node.text, at)
                    else frozenset()
                )
            if isinstance(node, Cls):
                if at >= len(text):
                    return frozenset()
                code = ord(text[at])
                inside = any(lo <= code <= hi for lo, hi in node.ranges)
                return frozenset([at + 1]) if inside != node.negated else frozenset()
            if isinstance(node, Ref):
                return ends(rules[node.name], at)
            if isinstance(node, Seq):
                current = frozenset([at])
                for item in node.items:
                    current = frozenset(e for c in current for e in ends(item, c))
                    if not current:
                        break
                return current
            if isinstance(node, Alt):
                return frozenset(e for o in node.options for e in ends(o, at))
            if isinstance(node, Rep):
                out = set()
                current = frozenset([at])
                count = 0
                seen: set[int] = set()
                while current and (node.high is None or count <= node.high):
                    if count >= node.low:
                        out |= current
                    if node.high is not None and count == node.high:
                        break
                    nxt = frozenset(e for c in current for e in ends(node.item, c))
                    if node.high is None:
                        nxt = frozenset(e for e in nxt if e not in seen)
                        seen |= nxt
                    current = nxt
                    count += 1
                return frozenset(out)
            raise TypeError(node)

        return len(text) in ends(rules["root"], 0)
    finally:
        sys.setrecursionlimit(limit)
