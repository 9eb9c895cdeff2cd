"""Argument values written as text: Python literals, and text typed by a tool's schema.

XML-style formats give every argument as text (``<parameter name="n">42</parameter>``);
:func:`typed_value` decides what JSON value it is, from the tool's schema when there is one.
Pythonic formats give Python literals, read by :func:`literal_value` from :mod:`ast` (never
``eval``).
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from llmfix import codes
from llmfix.jsontext import read_float
from llmfix.model import Diagnostic, Risk
from llmfix.schema.walk import json_type
from llmfix.toolcalls.base import Scan

# number texts kept (1e5 stays 1e5, 1e400 is not read as infinity): see llmfix.jsontext
_decoder = json.JSONDecoder(parse_constant=lambda name: _reject(name), parse_float=read_float)


def _reject(name: str) -> Any:
    raise ValueError(name)


# ------------------------------------------------------------------------ Python literals


class _NotLiteral(Exception):
    pass


_LITERAL_NAMES: dict[str, Any] = {
    "True": True,
    "False": False,
    "None": None,
    "true": True,
    "false": False,
    "null": None,
}


def literal_value(node: ast.AST) -> Any:
    """The JSON value of a Python literal expression (``ast``, never ``eval``).

    Accepts strings, numbers, booleans, ``None`` (also JSON's ``true``/``false``/``null``),
    lists, tuples, sets and dicts with string keys; raises ``ValueError`` otherwise.
    """
    try:
        return _literal(node)
    except (_NotLiteral, RecursionError):
        raise ValueError("not a literal") from None


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return value
        raise _NotLiteral
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        out: dict[str, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if key_node is None:
                raise _NotLiteral
            key = _literal(key_node)
            if isinstance(key, bool) or not isinstance(key, (str, int, float)):
                raise _NotLiteral
            out[str(key)] = _literal(value_node)
        return out
    if isinstance(node, ast.Name) and node.id in _LITERAL_NAMES:
        return _LITERAL_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _literal(node.operand)
        if isinstance(operand, bool) or not isinstance(operand, (int, float)):
            raise _NotLiteral
        return -operand if isinstance(node.op, ast.USub) else operand
    raise _NotLiteral


def python_literal(text: str) -> tuple[bool, Any]:
    """Read ``text`` as one Python literal (``{'a': 1}``, ``['x', None]``)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
        return True, literal_value(node)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False, None


# ----------------------------------------------------------------------- typed text values


def schema_types(schema: Any, depth: int = 0) -> frozenset[str] | None:
    """The JSON types a schema admits, or ``None`` when it does not say.

    Reads ``type``, ``enum``, ``const`` and the branches of ``anyOf``/``oneOf``/``allOf``;
    a ``$ref`` or an empty schema says nothing. Unknown type names (``"float"``) are kept.
    """
    if not isinstance(schema, dict) or depth > 8:
        return None
    types: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        types.add(kind)
    elif isinstance(kind, list):
        types.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                inner = schema_types(branch, depth + 1)
                if inner is None:
                    if key != "allOf":
                        return None
                else:
                    types.update(inner)
    for value in [*(schema.get("enum") or []), *([schema["const"]] if "const" in schema else [])]:
        types.add(json_type(value))
    return frozenset(types) if types else None


_BOOLEANS = {"true": True, "false": False}
_INTEGER = re.compile(r"[-+]?\d{1,50}")


def typed_value(raw: str, schema: Any, *, as_string: bool | None = None) -> tuple[Any, bool]:
    """The value of an argument written as text (XML formats); and whether it was *guessed*.

    The format's own word comes first: ``as_string`` true (DeepSeek's ``string="true"``,
    ``type="string"``) keeps the text as written; false (``string="false"``, another
    ``type``) reads it as JSON when it is JSON. Otherwise, with a schema, the schema decides:
    where a string is allowed the text stays as written; otherwise it is read as JSON
    (``42``, ``true``, ``{"a": 1}``), then as a Python literal (``{'a': 1}``);
    ``True``/``False`` in any case for booleans; ``null``/``None`` where null is allowed.
    Without either, the text is read by the JSON literal rules (numbers, ``true``/``false``/
    ``null``, objects and arrays; not a quoted string), and that reading is a guess the
    caller reports.
    """
    stripped = raw.strip()
    if as_string:
        return raw, False
    if as_string is False:
        value = _read_json(stripped)
        if value is not _NO_VALUE:
            return value, False
    types = schema_types(schema)
    if types is None:
        value = _read_untyped(stripped)
        if value is _NO_VALUE:
            return raw, False
        return value, as_string is None and not isinstance(value, str)
    if "string" in types:
        others = types - {"string", "null"}
        if others:
            value = _read_untyped(stripped)
            if value is not _NO_VALUE and json_type(value) in others | _numeric(others):
                return value, False
        return raw, False
    lowered = stripped.lower()
    if "boolean" in types and lowered in _BOOLEANS:
        return _BOOLEANS[lowered], False
    if "null" in types and lowered in ("null", "none"):
        return None, False
    if types & {"integer", "number"} and _INTEGER.fullmatch(stripped):
        return int(stripped), False  # also "018956": the schema says it is a number
    value = _read_untyped(stripped)
    if value is _NO_VALUE:
        return raw, False
    if (
        isinstance(value, float)
        and value.is_integer()
        and "integer" in types
        and "number" not in types
    ):
        return int(value), False
    return value, False


def _numeric(types: frozenset[str]) -> frozenset[str]:
    return frozenset({"integer"}) if "number" in types else frozenset()


_NO_VALUE: Any = object()


def _read_json(stripped: str) -> Any:
    """``stripped`` as any JSON value (a quoted string too), else :data:`_NO_VALUE`."""
    try:
        return _decoder.decode(stripped)
    except (ValueError, RecursionError):
        return _read_untyped(stripped)


def _read_untyped(stripped: str) -> Any:
    if not stripped or stripped[0] == '"':
        return _NO_VALUE
    try:
        return _decoder.decode(stripped)
    except (ValueError, RecursionError):
        pass
    if stripped[0] in "{[":
        ok, value = python_literal(stripped)
        if ok and isinstance(value, (dict, list)):
            return value
    return _NO_VALUE


_CDATA = re.compile(r"\A\s*<!\[CDATA\[(.*?)\]\]>\s*\Z", re.S)


def unwrap_cdata(raw: str) -> str:
    m = _CDATA.match(raw)
    return m.group(1) if m else raw


@dataclass
class ArgumentsBuilder:
    """Collects text-valued arguments of one call, typing each by the tool's schema."""

    scan: Scan
    tool: str
    values: dict[str, Any] = field(default_factory=dict)
    guessed: list[str] = field(default_factory=list)
    notes: list[Diagnostic] = field(default_factory=list)

    def add(
        self, key: str, raw: str, start: int, end: int, *, as_string: bool | None = None
    ) -> None:
        value, guessed = typed_value(
            raw, self.scan.parameter_schema(self.tool, key), as_string=as_string
        )
        if key in self.values:
            self.notes.append(
                self.scan.note(
                    codes.TOOLS_DUPLICATE_ARGUMENT,
                    f"argument {key!r} is given twice; the last value is kept",
                    start,
                    end,
                    pointer="/" + escape_pointer(key),
                    hint="a call gives each argument once",
                )
            )
        self.values[key] = value
        if guessed:
            self.guessed.append(key)

    def finish(self, start: int, end: int) -> tuple[dict[str, Any], list[Diagnostic]]:
        notes = list(self.notes)
        if self.guessed:
            names = ", ".join(self.guessed)
            notes.append(
                self.scan.note(
                    codes.TOOLS_TYPED_ARGUMENTS,
                    f"read {names} as JSON values (no schema says their type)",
                    start,
                    end,
                    risk=Risk.SAFE,
                    rule="xml_scalar",
                    pointer="",
                    data={"arguments": list(self.guessed)},
                )
            )
        values, unwrap = unwrap_arguments(self.scan, self.tool, self.values, start, end)
        if unwrap is not None:
            notes.append(unwrap)
        return values, notes


_WRAPPER_KEYS = ("arguments", "parameters", "input", "properties", "args")


def unwrap_arguments(
    scan: Scan, tool: str, values: dict[str, Any], start: int, end: int
) -> tuple[dict[str, Any], Diagnostic | None]:
    """``{"arguments": {...}}`` written as the only parameter, when the tool has no such one."""
    if len(values) != 1:
        return values, None
    key, inner = next(iter(values.items()))
    if key not in _WRAPPER_KEYS or scan.parameter_schema(tool, key) is not None:
        return values, None
    if isinstance(inner, str):
        text = inner.strip()
        if not text.startswith("{"):
            return values, None
        inner = _read_untyped(text)
    if not isinstance(inner, dict):
        return values, None
    note = scan.note(
        codes.TOOLS_UNWRAPPED_ARGUMENTS,
        f"the arguments were written inside one {key!r} parameter; unwrapped them",
        start,
        end,
        risk=Risk.SAFE,
        rule="unwrap_arguments",
        pointer="",
    )
    return inner, note


def escape_pointer(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
