"""Per-type coercers: ways to read a value as another JSON type, and enum value fixes.

:data:`COERCERS` maps a JSON type name to the function that reads a value of another type
as that type; each returns its :class:`Reading` list (new value, rule, message), empty when
no reading is certain. They know nothing of patches or of the walk: the walk in
:mod:`llmfix.schema.repair` tries each reading, follows it through, and keeps the one that
validates. :func:`fix_enum` matches a string to an allowed ``enum``/``const`` value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, TypeAlias

from llmfix.schema import walk as sw
from llmfix.schema.context import Fix, RepairContext, fixes


class Reading(NamedTuple):
    """One way to read a value as another type."""

    value: Any
    rule: str
    message: str


Coercer: TypeAlias = Callable[[Any, dict[str, Any]], list[Reading]]


def _to_numeric(value: Any, schema: dict[str, Any], *, integer: bool) -> list[Reading]:
    target = "integer" if integer else "number"
    shown = sw.show(value)
    if integer and isinstance(value, float) and value.is_integer():
        return [Reading(int(value), "coerce_integer", f"read {shown} as the integer {int(value)}")]
    if isinstance(value, str):
        reading = sw.read_number(value, integer=integer, upper=sw.upper_bound(schema))
        if reading is not None:
            number, rule, how = reading
            message = f"read the string {shown} as the {target} {number}"
            return [Reading(number, rule, f"{message} ({how})" if how else message)]
    return []


@fixes("coerce_integer", "coerce_number", "coerce_percent", "coerce_fraction")
def to_integer(value: Any, schema: dict[str, Any]) -> list[Reading]:
    """An integral number, or a numeral (percentages and fractions on the maximum's scale)."""
    return _to_numeric(value, schema, integer=True)


@fixes("coerce_number", "coerce_percent", "coerce_fraction")
def to_number(value: Any, schema: dict[str, Any]) -> list[Reading]:
    """A numeral, with thousands separators, or a percentage or fraction the maximum reads."""
    return _to_numeric(value, schema, integer=False)


@fixes("coerce_string")
def to_string(value: Any, schema: dict[str, Any]) -> list[Reading]:
    if not (sw.is_number(value) or isinstance(value, bool)):
        return []
    text = sw.number_text(value) if sw.is_number(value) else ("true" if value else "false")
    return [Reading(text, "coerce_string", f"wrote {sw.show(value)} as the string {sw.show(text)}")]


@fixes("coerce_boolean")
def to_boolean(value: Any, schema: dict[str, Any]) -> list[Reading]:
    flag = sw.read_boolean(value)
    if flag is None:
        return []
    word = "true" if flag else "false"
    return [Reading(flag, "coerce_boolean", f"read {sw.show(value)} as {word}")]


@fixes("coerce_null")
def to_null(value: Any, schema: dict[str, Any]) -> list[Reading]:
    if not sw.is_null_word(value):
        return []
    return [Reading(None, "coerce_null", f"read {sw.show(value)} as null")]


@fixes("parse_json_string")
def parse_json_string(value: Any, wanted: type) -> list[Reading]:
    """The object or array a string holds as JSON text."""
    if not isinstance(value, str):
        return []
    inner = sw.read_json_container(value)
    if not isinstance(inner, wanted):
        return []
    target = "object" if wanted is dict else "array"
    return [Reading(inner, "parse_json_string", f"parsed the JSON {target} inside the string")]


def to_object(value: Any, schema: dict[str, Any]) -> list[Reading]:
    return parse_json_string(value, dict)


@fixes("wrap_array")
def wrap_array(value: Any) -> list[Reading]:
    if value is None or isinstance(value, list):
        return []
    if isinstance(value, str) and not value.strip():
        return []
    return [Reading([value], "wrap_array", "wrapped the single value in an array")]


def to_array(value: Any, schema: dict[str, Any]) -> list[Reading]:
    return parse_json_string(value, list) + wrap_array(value)


COERCERS: dict[str, Coercer] = {
    "integer": to_integer,
    "number": to_number,
    "string": to_string,
    "boolean": to_boolean,
    "null": to_null,
    "object": to_object,
    "array": to_array,
}


def readings(value: Any, target: str, schema: dict[str, Any]) -> list[Reading]:
    """Ways to read ``value`` as JSON type ``target`` (none for a type name JSON lacks)."""
    coercer = COERCERS.get(target)
    return coercer(value, schema) if coercer is not None else []


@fixes("unwrap_array")
def unwrap_array(value: Any, types: list[str]) -> Reading | None:
    """The only element of a one-element array, where no array is allowed."""
    if not isinstance(value, list) or len(value) != 1 or "array" in types:
        return None
    return Reading(value[0], "unwrap_array", "took the only element out of the one-element array")


@fixes("enum_case", "enum_nearest")
def fix_enum(ctx: RepairContext, value: Any, schema: dict[str, Any], pointer: str) -> Fix:
    """A string to the allowed value it equals after folding case, else its unique near miss."""
    members = sw.enum_members(schema)
    if (
        members is None
        or not isinstance(value, str)
        or any(sw.json_equal(value, m) for m in members)
    ):
        return Fix(value)
    strings = [m for m in members if isinstance(m, str)]
    for rule, find in (
        ("enum_case", sw.unique_fold_match),
        ("enum_nearest", sw.unique_nearest),
    ):
        if not ctx.allowed(rule):
            continue
        match = find(value, strings)
        if match is not None:
            how = "the allowed value" if rule == "enum_case" else "the nearest allowed value"
            message = f"matched {sw.show(value)} to {how} {sw.show(match)}"
            return Fix(match, (ctx.replace(pointer, value, match, rule, message),))
    return Fix(value)
