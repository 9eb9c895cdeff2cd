"""JSON numbers as the model wrote them, and JSON text that keeps them.

A JSON number is text; Python reads it as a ``float``, and some texts do not survive that
reading: ``1e5`` is written back as ``100000.0``, ``0.1000000000000000055511151231257827``
as ``0.1``, ``1.50`` as ``1.5``, and ``1e400`` (beyond a 64-bit float) as ``Infinity``,
which is not JSON at all. Such a number is read as a :class:`JsonNumber`: a ``float``
(so schemas, comparisons and arithmetic see the usual value) that remembers its text,
and :func:`dumps` writes that text back. Numbers whose float reading gives back their
own text (``12.5``, ``-0.25``, ``3.0``) stay plain floats: reading them costs one
call per float token, and most documents hold nothing else.

Integers are exact in Python already; ``-0`` is the one integer text that is not kept
(it is read as ``0``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections.abc import Iterator
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any, NamedTuple

__all__ = [
    "DuplicateKey",
    "JsonNumber",
    "OutOfRange",
    "dumps",
    "dumps_indented",
    "loads",
    "read_float",
    "read_float_or_raise",
    "unique_object",
]


class JsonNumber(float):
    """A float that keeps the JSON text it was read from (``text``).

    ``float(n)`` is the nearest double (infinite for a number beyond the float range);
    ``n.text`` is what the model wrote, and what :func:`llmfix.dumps` writes.
    """

    __slots__ = ("text",)
    text: str

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_restore, (self.text,))

    def __copy__(self) -> JsonNumber:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> JsonNumber:
        return self

    @property
    def in_range(self) -> bool:
        """False when a float cannot hold the number: infinite, or a nonzero read as 0."""
        value = float(self)
        if value - value != 0:
            return False
        return value != 0 or not _NONZERO_MANTISSA.match(self.text)


_NONZERO_MANTISSA = re.compile(r"-?[0.]*[1-9]")


def _restore(text: str) -> JsonNumber:
    return _make(text, float(text))


def _make(text: str, value: float) -> JsonNumber:
    number = JsonNumber(value)
    number.text = text
    return number


_NZ = frozenset("123456789")
_repr = float.__repr__


def read_float(token: str, _float: Any = float, _len: Any = len, _nz: Any = _NZ) -> Any:
    """The value of a JSON float token: a plain float when its reading gives the token
    back, a :class:`JsonNumber` otherwise (``parse_float`` of a ``json.JSONDecoder``)."""
    value = _float(token)
    # Up to 15 significant digits, no exponent, no trailing zero in the fraction, and
    # not below 1e-4 (where repr switches to an exponent): repr gives the token back.
    if (
        _len(token) < 16
        and token[-1] in _nz
        and (value >= 1e-4 or value <= -1e-4)
        and "e" not in token
        and "E" not in token
    ):
        return value
    if _repr(value) == token:
        return value
    return _make(token, value)


class OutOfRange(ValueError):
    """A number a 64-bit float cannot hold, met by a decoder that must not guess."""

    def __init__(self, token: str) -> None:
        super().__init__(f"number {token} is beyond the range of a 64-bit float")
        self.token = token


def read_float_or_raise(token: str, _float: Any = float, _len: Any = len, _nz: Any = _NZ) -> Any:
    """:func:`read_float`, raising :class:`OutOfRange` for an infinite or vanished value.
    (The same test written out again: this runs once per float of every strict parse.)"""
    value = _float(token)
    if (
        _len(token) < 16
        and token[-1] in _nz
        and (value >= 1e-4 or value <= -1e-4)
        and "e" not in token
        and "E" not in token
    ):
        return value
    if _repr(value) == token:
        return value
    number = _make(token, value)
    if not number.in_range:
        raise OutOfRange(token)
    return number


class DuplicateKey(ValueError):
    """An object with a key written twice, met by a decoder that must not choose."""


def unique_object(pairs: list[tuple[str, Any]], _dict: Any = dict, _len: Any = len) -> Any:
    """``object_pairs_hook`` that refuses a duplicate key (the repair parser reports it)."""
    value = _dict(pairs)
    if _len(value) != _len(pairs):
        raise DuplicateKey("duplicate key")
    return value


_LOOSE_DECODER = json.JSONDecoder(parse_float=read_float)


def loads(text: str) -> Any:
    """``json.loads`` that keeps number texts (see :class:`JsonNumber`)."""
    return _LOOSE_DECODER.decode(text)


# -- writing -----------------------------------------------------------------------------


def dumps(
    value: Any,
    indent: int | None = None,
    *,
    ensure_ascii: bool = False,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """``json.dumps`` that writes each :class:`JsonNumber` as its text.

    A plain float that is infinite or NaN (which JSON cannot hold and no parse here
    produces) is written as ``null`` rather than as ``Infinity``/``NaN``.
    """
    if indent is not None and separators is None and not sort_keys:
        fast = _indented(value, " " * indent, "\n", ensure_ascii)
        if fast is not None:
            return fast
    texts: list[str] = []
    nonce = os.urandom(6).hex()
    marked = _mark(value, texts, nonce)
    out = json.dumps(
        marked,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators,
        sort_keys=sort_keys,
        allow_nan=False,
    )
    if not texts:
        return out
    pattern = re.compile(r'"\\u0000' + nonce + r'(\d+)\\u0000"')
    return pattern.sub(lambda m: texts[int(m.group(1))], out)


def dumps_indented(value: Any, indent: int = 2, *, margin: str = "") -> str:
    """``dumps(value, indent=indent)`` with ``margin`` after every newline: the layout of
    the value nested that deep in an indented document (a report's item)."""
    fast = _indented(value, " " * indent, "\n" + margin, False)
    if fast is not None:
        return fast
    text = dumps(value, indent=indent)
    return text.replace("\n", "\n" + margin) if margin else text


class _Unusual(Exception):
    """A value :func:`_indented` leaves to ``json.dumps`` (a subclass, a key not a str)."""


def _indented(value: Any, step: str, newline: str, ensure_ascii: bool) -> str | None:
    """What ``json.dumps(indent=len(step))`` writes for a value made of dicts (str keys),
    lists, tuples, str, int, float, bool and None of exactly those types, with each
    :class:`JsonNumber` as its text and a non-finite float as ``null`` (see :func:`dumps`);
    ``None`` for any other value. ``json.dumps`` writes an indented document in Python,
    one generator step per token; this writes each scalar with one C call and costs
    half as much, a report's main cost on valid answers."""
    encode = encode_basestring_ascii if ensure_ascii else encode_basestring
    parts: list[str] = []
    append = parts.append

    def scalar(item: Any, kind: type) -> str:
        if kind is str:
            return encode(item)
        if item is None:
            return "null"
        if item is True:
            return "true"
        if item is False:
            return "false"
        if kind is int:
            return int.__repr__(item)
        if kind is float:
            return float.__repr__(item) if item - item == 0 else "null"
        if kind is JsonNumber:
            return item.text  # type: ignore[no-any-return]
        raise _Unusual

    def write(item: Any, newline: str) -> None:
        kind = type(item)
        if kind is dict:
            if not item:
                append("{}")
                return
            inner = newline + step
            separator = "{" + inner
            comma = "," + inner
            for key, member in item.items():
                if type(key) is not str:
                    raise _Unusual
                held = type(member)
                if held is str:  # the most common member: no call; one f-string, one copy
                    append(f"{separator}{encode(key)}: {encode(member)}")
                elif held is dict or held is list or held is tuple:
                    append(f"{separator}{encode(key)}: ")
                    write(member, inner)
                else:
                    append(f"{separator}{encode(key)}: {scalar(member, held)}")
                separator = comma
            append(newline + "}")
        elif kind is list or kind is tuple:
            if not item:
                append("[]")
                return
            inner = newline + step
            separator = "[" + inner
            comma = "," + inner
            for member in item:
                held = type(member)
                if held is str:
                    append(separator + encode(member))
                elif held is dict or held is list or held is tuple:
                    append(separator)
                    write(member, inner)
                else:
                    append(separator + scalar(member, held))
                separator = comma
            append(newline + "]")
        else:
            append(scalar(item, kind))

    try:
        write(value, newline)
    except (_Unusual, RecursionError):  # json.dumps decides (and raises what it raises)
        return None
    return "".join(parts)


def _mark(value: Any, texts: list[str], nonce: str) -> Any:
    """``value`` with every JsonNumber (and non-finite float) replaced by a marker string;
    ``value`` itself (not a copy) when there is nothing to replace."""
    kind = type(value)
    if kind is JsonNumber:
        texts.append(value.text)
        return f"\x00{nonce}{len(texts) - 1}\x00"
    if kind is float:
        return value if value - value == 0 else None
    if kind is dict or isinstance(value, dict):
        out: dict[Any, Any] | None = None
        for key, item in value.items():
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None:
                if out is not None:
                    out[key] = item
                continue
            new = _mark(item, texts, nonce)
            if out is None and new is not item:
                out = {}
                for k, v in value.items():
                    if k == key:
                        break
                    out[k] = v
            if out is not None:
                out[key] = new
        return value if out is None else out
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        items: list[Any] | None = None
        for i, item in enumerate(value):
            kind = type(item)
            if kind is str or kind is int or kind is bool or item is None:
                if items is not None:
                    items.append(item)
                continue
            new = _mark(item, texts, nonce)
            if items is None and new is not item:
                items = list(value[:i])
            if items is not None:
                items.append(new)
        return value if items is None else items
    return value


@functools.cache
def yaml_dumper() -> Any:
    """A ``yaml.SafeDumper`` that writes a :class:`JsonNumber` as its text (tagged
    ``!!float`` when YAML would not read that text as a number by itself)."""
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    def represent(dumper: Any, number: JsonNumber) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:float", number.text)

    _Dumper.add_representer(JsonNumber, represent)
    return _Dumper


# -- where a value is written ------------------------------------------------------------

_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]
_JSON_SPACE = " \t\n\r"
# Whitespace and the comments models write between tokens.
_GAP = re.compile(r"(?:[ \t\n\r]+|//[^\n]*|/\*.*?(?:\*/|$)|#[^\n]*)*", re.DOTALL)
_SINGLE_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
_BARE_KEY = re.compile(r"[^\s:,{}\[\]\"']+")
# A value the strict scanner cannot read is skipped by brackets and quotes.
_PLAIN_RUN = re.compile(r"[^\"'\[\]{}(),]*")
_QUOTED = {q: re.compile(q + r"(?:[^" + q + r"\\]|\\.?)*(?:" + q + "|$)", re.DOTALL) for q in "\"'"}
# Inside a bracket of such a value: plain text, commas and quoted strings, in one match.
_INNER_RUN = re.compile(
    r"""(?:[^"'\[\]{}()]+|"(?:[^"\\]|\\.?)*(?:"|$)|'(?:[^'\\]|\\.?)*(?:'|$))*""", re.DOTALL
)


class ValueLocator:
    """Where the value at a JSON Pointer is written in a JSON text, for diagnostics that
    have a pointer but no span (schema errors, schema repairs).

    Containers are scanned on first use and their members' spans kept, so many pointers
    into one text cost about one pass per container visited. Text that is not strict JSON
    (comments, single quotes, bare keys, trailing commas, a broken value) is read as far
    as brackets and quotes allow; a pointer that cannot be followed gives its deepest
    ancestor that can be.

    ``whole``: the text is known to be one strict JSON value (JSON whitespace around it
    allowed), so the root's span is where that whitespace ends, without reading the value.
    """

    def __init__(self, text: str, *, whole: bool = False) -> None:
        self.text = text
        self._members: dict[int, dict[str, tuple[int, int]] | None] = {}
        # A container of a strict text is scanned only as far as a member asked for (no
        # key is written twice in strict JSON): the rest of its scan waits here.
        self._pending: dict[int, Iterator[None]] = {}
        self._strict = whole
        self._root: tuple[int, int] | None = None
        if whole:
            start = len(text) - len(text.lstrip(_JSON_SPACE))
            end = len(text.rstrip(_JSON_SPACE))
            if start < end:
                self._root = (start, end)

    def span(self, pointer: str) -> tuple[int, int] | None:
        """``(start, end)`` of the value at ``pointer`` (or of its deepest found ancestor)."""
        at = self._root_start()
        if at is None:
            return None
        here = None
        # (the root's end is read only when the root is the answer: a member's span
        # needs only where the root starts)
        for raw in pointer.split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            found = self._member(at, token)
            if found is None:
                break
            here = found
            at = found[0]
        return here if here is not None else self._root_span()

    def exact(self, tokens: tuple[str, ...]) -> tuple[int, int] | None:
        """``(start, end)`` of the value at the path ``tokens`` (member names and array
        indexes as text), or ``None`` when the path cannot be followed to its end."""
        if not tokens:
            return self._root_span()
        here: tuple[int, int] | None = None
        at = self._root_start()
        for token in tokens:
            if at is None:
                return None
            here = self._member(at, token)
            at = None if here is None else here[0]
        return here

    def _gap(self, pos: int) -> int:
        return _GAP.match(self.text, pos).end()  # type: ignore[union-attr]

    def _root_start(self) -> int | None:
        if self._root is not None:
            return self._root[0]
        start = self._gap(0)
        return start if start < len(self.text) else None

    def _root_span(self) -> tuple[int, int] | None:
        if self._root is None:
            start = self._root_start()
            if start is None:
                return None
            self._root = (start, self._value_end(start))
        return self._root

    def _value_end(self, start: int) -> int:
        """Where the value at ``start`` ends: strictly read, else by brackets and quotes."""
        try:
            return int(_LOOSE_DECODER.scan_once(self.text, start)[1])  # type: ignore[attr-defined]
        except (StopIteration, ValueError, RecursionError):
            return self._skip(start)

    def _skip(self, pos: int) -> int:
        """The end of a value that is not strict JSON: the next ``,`` or closer at its own
        level (the value's own brackets included), or the end of the text."""
        text = self.text
        size = len(text)
        depth = 0
        while True:
            run = _INNER_RUN if depth else _PLAIN_RUN
            pos = run.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= size:
                return size
            c = text[pos]
            if c in "\"'":
                pos = _QUOTED[c].match(text, pos).end()  # type: ignore[union-attr]
                continue
            if c in "[{(":
                depth += 1
            elif c in "]})":
                if depth == 0:
                    return pos
                depth -= 1
                if depth == 0:
                    return pos + 1
            elif depth == 0:  # a comma
                return pos
            pos += 1

    def _member(self, start: int, token: str) -> tuple[int, int] | None:
        """The span of member ``token`` of the container at ``start`` (``None`` when it has
        no such member, or no container starts there)."""
        if start not in self._members:
            opener = self.text[start]
            if opener not in "{[":
                self._members[start] = None
                return None
            found: dict[str, tuple[int, int]] = {}
            self._members[start] = found
            self._pending[start] = self._scan(start, opener, found)
        members = self._members[start]
        if members is None:
            return None
        if self._strict and token in members:
            return members[token]
        pending = self._pending.get(start)
        if pending is not None:
            # what cannot be read at all ends the scan; what was read is kept
            with contextlib.suppress(ValueError, IndexError):
                for _ in pending:
                    if self._strict and token in members:
                        return members[token]
            del self._pending[start]
        return members.get(token)

    def _key(self, pos: int) -> tuple[str, int]:
        text = self.text
        if text[pos] == '"':
            try:
                key, stop = _scanstring(text, pos + 1, True)
            except ValueError:
                stop = _QUOTED['"'].match(text, pos).end()  # type: ignore[union-attr]
                key = text[pos + 1 : stop - 1]
            return key, stop
        quoted = _SINGLE_QUOTED.match(text, pos)
        if quoted is not None:
            return quoted.group(1), quoted.end()
        bare = _BARE_KEY.match(text, pos)
        if bare is None:
            raise ValueError("no key")
        return bare.group(), bare.end()

    def _scan(self, start: int, opener: str, found: dict[str, tuple[int, int]]) -> Iterator[None]:
        """Read the members of the container at ``start`` into ``found``, pausing after
        each one."""
        text = self.text
        size = len(text)
        pos = self._gap(start + 1)
        index = 0
        closer = "}" if opener == "{" else "]"
        while pos < size and text[pos] != closer:
            if text[pos] == ",":  # a leading or doubled comma
                pos = self._gap(pos + 1)
                continue
            if opener == "{":
                key, pos = self._key(pos)
                pos = self._gap(pos)
                if text[pos] != ":":
                    return
                pos = self._gap(pos + 1)
            else:
                key = str(index)
                index += 1
            value_start = pos
            pos = self._value_end(pos)
            found[key] = (value_start, pos)  # a duplicate key: the last one is the value
            yield
            pos = self._gap(pos)
            if pos < size and text[pos] == ",":
                pos = self._gap(pos + 1)
            elif pos < size and text[pos] != closer:
                return


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Strict JSON whose value is certain: a duplicate key (which value is meant?) and a number
# beyond the float range raise, and the repair parser reads the text with their spans.
# One decoder for the parse stage's strict path and extraction's strict fences.
strict_decode = json.JSONDecoder(
    parse_constant=_reject_constant,
    parse_float=read_float_or_raise,
    object_pairs_hook=unique_object,
).decode


class NotStrict(NamedTuple):
    """A text known not to be strict JSON, and the error its decode raised: a later stage
    given the same text (extraction, the parse of a candidate) does not decode it again."""

    text: str
    error: type[BaseException]
    at: int = -1  # where a JSON syntax error was found, and what it was
    message: str = ""

    def covers(self, text: str) -> bool:
        """Whether ``text`` is the text found not strict (equal strings; cheap when not)."""
        return text is self.text or text == self.text

    @property
    def syntax(self) -> bool:
        """Whether the text is not JSON at all, to any decoder (not merely a duplicate
        key, an out-of-range number or a NaN that this decoder refuses)."""
        return issubclass(self.error, json.JSONDecodeError)

    @property
    def failure(self) -> tuple[int, str] | None:
        """Where and why the decode of the value the text begins with failed (a syntax
        error inside it), for a lenient reader that would otherwise decode it again."""
        if self.at < 0 or self.message == "Extra data":
            return None
        return self.at, self.message


def nests_deeper(text: str, value: Any, limit: int) -> bool:
    """Whether ``value`` (the strict decode of ``text``) nests more than ``limit`` containers
    deep. The stdlib decoder has no depth limit of its own (only Python's recursion limit,
    which the command line raises), so a strict answer could carry a value deeper than the
    lenient reader's limit and than what the writers can write. Counting the text's opening
    brackets (C speed) rules out nearly every text; the rest are measured in Rust, by a
    schema that admits ``limit`` levels (a walk in Python cost 0.7x the decode of a 1 MB
    document of small objects; this, 0.16x)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    try:
        return not _depth_schema(limit).is_valid(value)
    except Exception:  # a value the Rust side cannot take: walked here
        return _walk_deeper(value, limit)


@functools.lru_cache(maxsize=4)
def _depth_schema(limit: int) -> Any:
    """A compiled schema that holds for a value of at most ``limit`` nested containers."""
    import jsonschema_rs

    levels: dict[str, Any] = {"d0": {"not": {"type": ["array", "object"]}}}
    for level in range(1, limit + 1):
        inner = {"$ref": f"#/$defs/d{level - 1}"}
        levels[f"d{level}"] = {"items": inner, "additionalProperties": inner}
    return jsonschema_rs.validator_for({"$defs": levels, "$ref": f"#/$defs/d{limit}"})


def _walk_deeper(value: Any, limit: int) -> bool:
    level: list[Any] = [value]
    for _ in range(limit):
        inner: list[Any] = []
        for container in level:
            items = container.values() if isinstance(container, dict) else container
            inner += [item for item in items if isinstance(item, (dict, list))]
        if not inner:
            return False
        level = inner
    return True


def strict_or_not(text: str, max_depth: int | None = None) -> tuple[bool, Any]:
    """``(True, value)`` when ``text`` is strict RFC 8259 JSON, else ``(False, NotStrict)``;
    with ``max_depth``, a value nested deeper is not taken either (see
    :func:`nests_deeper`), as a decode that ran out of recursion is not."""
    try:
        value = strict_decode(text)
    except json.JSONDecodeError as error:
        return False, NotStrict(text, json.JSONDecodeError, error.pos, error.msg)
    except (ValueError, RecursionError) as error:
        return False, NotStrict(text, type(error))
    if max_depth is not None and nests_deeper(text, value, max_depth):
        return False, NotStrict(text, RecursionError)
    return True, value
