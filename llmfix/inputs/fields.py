"""Paths inside a record: ``--field`` and ``--group-by`` lookups, and writing a repaired
value back where its text came from (``--write-fixed``)."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from llmfix.errors import ConfigError
from llmfix.inputs.items import Item
from llmfix.jsontext import dumps


@functools.lru_cache(maxsize=64)  # a run asks for the same few, once per record
def field_tokens(spec: str) -> tuple[str | int, ...]:
    """``/a/0/b`` (JSON Pointer, RFC 6901) or ``a.0.b`` (dotted path) → ``("a", 0, "b")``.

    Digits become list indices only when the value there is a list (see
    :func:`resolve_field`), so a key that is a number still works. Raises
    :class:`ConfigError` for an empty path.
    """
    text = spec.strip()
    if not text:
        raise ConfigError("--field must name a field (a JSON Pointer or a dotted path)")
    if text.startswith("/"):
        raw = [t.replace("~1", "/").replace("~0", "~") for t in text[1:].split("/")]
    else:
        raw = text.split(".")
    return tuple(int(t) if t.isdigit() else t for t in raw)


def resolve_field(value: Any, tokens: Iterable[str | int]) -> Any:
    """The value at ``tokens`` inside ``value``; ``KeyError`` when it is not there."""
    for token in tokens:
        if isinstance(value, dict):
            key = str(token)
            if key not in value:
                raise KeyError(key)
            value = value[key]
        elif isinstance(value, list) and isinstance(token, int) and token < len(value):
            value = value[token]
        else:
            raise KeyError(str(token))
    return value


def closest_field(value: Any, tokens: tuple[str | int, ...]) -> str | None:
    """The path ``tokens`` was probably meant to be in ``value`` (``output`` for
    ``outptu``), as a dotted path: the key nearest to the first token that is not there.
    ``None`` when the path is there, leads into a non-object, or nothing is close."""
    import difflib

    node = value
    for depth, token in enumerate(tokens):
        if isinstance(node, dict) and str(token) in node:
            node = node[str(token)]
        elif isinstance(node, list) and isinstance(token, int) and token < len(node):
            node = node[token]
        elif isinstance(node, dict):
            close = difflib.get_close_matches(str(token), [str(k) for k in node], n=1)
            if not close:
                return None
            path = [*tokens[:depth], close[0], *tokens[depth + 1 :]]
            return ".".join(str(t) for t in path)
        else:
            return None
    return None


def group_of(record: Any, spec: str | None) -> str | None:
    """The ``--group-by`` value of a record: looked up in the record, then in its body."""
    if spec is None:
        return None
    tokens = field_tokens(spec)
    places = [record]
    if isinstance(record, dict):
        response = record.get("response")
        if isinstance(response, dict):
            places.append(response.get("body"))
        result = record.get("result")
        if isinstance(result, dict):
            places.append(result.get("message"))
    for place in places:
        try:
            value = resolve_field(place, tokens)
        except KeyError:
            continue
        if value is None:
            continue
        return value if isinstance(value, str) else dumps(value)
    return None


# -------------------------------------------------------------------- writing back

# -------------------------------------------------------------------- writing back


def set_field(record: Any, tokens: tuple[str | int, ...], value: Any) -> Any:
    """``record`` with the value at ``tokens`` replaced (``tokens == ()`` replaces it all)."""
    if not tokens:
        return value
    parent = resolve_field(record, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, list) and isinstance(last, int):
        parent[last] = value
    else:
        parent[str(last)] = value
    return record


def fixed_record(record: Any, fixes: Iterable[tuple[Item, Any]]) -> Any:
    """``record`` with each item's text replaced by its repaired value (in place)."""
    for item, value in fixes:
        if item.target is None:
            continue
        if item.target_kind == "value":
            record = set_field(record, item.target, value)
        elif item.target_kind == "parts":
            content = resolve_field(record, item.target)
            keep = [
                p
                for p in content
                if not (isinstance(p, dict) and p.get("type") in ("text", "output_text"))
            ]
            kind = next(
                (p.get("type") for p in content if isinstance(p, dict) and "text" in p), "text"
            )
            text = dumps(value)
            record = set_field(record, item.target, [{"type": kind, "text": text}, *keep])
        else:
            record = set_field(record, item.target, dumps(value))
    return record
