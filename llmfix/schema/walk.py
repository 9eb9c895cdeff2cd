"""Small pure helpers for schema repair: reading schemas, reading values, comparing names.

Nothing here knows about patches or diagnostics; :mod:`llmfix.schema.repair` builds on it.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from llmfix.jsontext import dumps

if TYPE_CHECKING:
    from fractions import Fraction  # imported where a percentage or fraction is read

JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")

# Keywords that combine subschemas; the rest of a schema object is its "local" part.
COMPOSITE_KEYWORDS = frozenset(
    {"$ref", "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "$dynamicRef"}
)

BOOLEAN_WORDS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}
NULL_WORDS = frozenset({"null", "none", "nil", "undefined", "n/a", ""})

# Similarity needed before a fuzzy enum value or key name is taken (1.0 = identical).
FUZZY_THRESHOLD = 0.8
# Longer strings are never compared fuzzily (cost, and long text is not a misspelt name).
FUZZY_MAX_LENGTH = 64

_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?")
_PERCENT = re.compile(r"([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*%")
_FRACTION = re.compile(r"([+-]?\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")
_MAX_NUMERAL_LENGTH = 100


# --- JSON Pointer -------------------------------------------------------------------------


def escape_token(key: str) -> str:
    """One RFC 6901 reference token."""
    return key.replace("~", "~0").replace("/", "~1")


def child_pointer(pointer: str, key: str | int) -> str:
    return f"{pointer}/{escape_token(str(key))}"


# --- JSON values ----------------------------------------------------------------------------


def json_type(value: Any) -> str:
    """The JSON type name of a Python value as the JSON decoder produces it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``true`` is not ``1``, ``1`` is ``1.0``. Iterative, so
    nesting depth is no problem."""
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return False
            stack.extend(zip(x, y, strict=True))
        elif isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys():
                return False
            stack.extend((x[k], y[k]) for k in x)
        elif not _scalar_equal(x, y):
            return False
    return True


def _scalar_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a) and is_number(b):
        return bool(a == b)
    if a is None or b is None:
        return a is None and b is None
    return type(a) is type(b) and not isinstance(a, (list, dict)) and bool(a == b)


def copy_json(value: Any, memo: dict[int, Any] | None = None) -> Any:
    """A deep copy of a JSON value (dicts and lists copied, everything else shared).
    Iterative, so nesting depth is no problem. With ``memo`` (id of a container → its
    copy, shared between calls), a container met again is not copied again: the caller
    keeps the originals alive, so their ids are not reused."""
    if not isinstance(value, (dict, list)):
        return value
    if memo is not None and id(value) in memo:
        return memo[id(value)]
    root: Any = {} if isinstance(value, dict) else []
    if memo is not None:
        memo[id(value)] = root
    stack: list[tuple[Any, Any]] = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if isinstance(source, dict) else enumerate(source)
        for key, item in items:
            if isinstance(item, (dict, list)):
                if memo is not None and id(item) in memo:
                    child: Any = memo[id(item)]
                else:
                    child = {} if isinstance(item, dict) else []
                    stack.append((item, child))
                    if memo is not None:
                        memo[id(item)] = child
            else:
                child = item
            if isinstance(target, dict):
                target[key] = child
            else:
                target.append(child)
    return root


def show(value: Any, limit: int = 60) -> str:
    """A short JSON rendering of ``value`` for messages."""
    try:
        text = dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def number_text(value: int | float) -> str:
    """How JSON writes a number (``12``, ``12.5``, ``1e+20``; as the model wrote it when
    a float would write it otherwise: ``1e5``)."""
    return dumps(value)


# --- Reading schemas ----------------------------------------------------------------------------


def declared_types(schema: dict[str, Any]) -> list[str] | None:
    """The JSON types a schema's ``type`` allows, in declared order; ``None`` when unrestricted.

    Without ``type``, an ``enum``/``const`` restricts the types to those of its members.
    """
    raw = schema.get("type")
    names: list[str] = []
    if isinstance(raw, str):
        names = [raw]
    elif isinstance(raw, list):
        names = [t for t in raw if isinstance(t, str)]
        if len(names) != len(raw):  # draft 3 schemas inside "type": cannot reason about them
            return None
    elif raw is None:
        members = enum_members(schema)
        if members is None:
            return None
        names = [json_type(m) for m in members]
    if "any" in names:
        return None
    out: list[str] = []
    for name in names:
        if name in JSON_TYPES and name not in out:
            out.append(name)
    return out or None


def enum_members(schema: dict[str, Any]) -> list[Any] | None:
    """The values ``enum`` or ``const`` allow, or ``None`` when neither is present."""
    if "const" in schema:
        return [schema["const"]]
    members = schema.get("enum")
    if isinstance(members, list):
        return members
    return None


def upper_bound(schema: dict[str, Any]) -> float | None:
    """The largest value a numeric schema allows (``maximum`` or ``exclusiveMaximum``)."""
    for key in ("maximum", "exclusiveMaximum"):
        bound = schema.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool) and math.isfinite(bound):
            return float(bound)
    return None


def subschema_list(value: Any) -> list[Any]:
    return [s for s in value if isinstance(s, (dict, bool))] if isinstance(value, list) else []


# --- Reading values -------------------------------------------------------------------------------


def _numeral(text: str) -> int | float | None:
    """The number a plain JSON-like numeral stands for (``"12"`` → 12, ``"1e3"`` → 1000.0)."""
    if not any(c in text for c in ".eE"):
        return int(text)
    number = float(text)
    return number if math.isfinite(number) else None


def _integral(number: int | float | Fraction) -> int | None:
    if isinstance(number, int):
        return number
    if isinstance(number, float):
        return int(number) if number.is_integer() else None
    return int(number) if number.denominator == 1 else None


def _as_number(number: Fraction, integer: bool) -> int | float | None:
    if integer or number.denominator == 1:
        return _integral(number)
    value = float(number)
    return value if math.isfinite(value) else None


def read_number(
    text: str, *, integer: bool, upper: float | None
) -> tuple[int | float, str, str] | None:
    """Read a number the way a person would, or ``None`` when the reading is not clear.

    Returns ``(number, rule, how)``, ``how`` explaining a reading that is not a plain
    numeral. The rule is ``coerce_integer`` (integer wanted) or ``coerce_number`` for plain
    numerals (``"12"``, ``" 1e3 "``), ``coerce_number`` for thousands separators
    (``"12,111"``), ``coerce_percent`` for ``"87%"`` and ``coerce_fraction``
    for ``"7/10"``. ``upper`` (the schema's maximum) decides what a percentage or fraction
    means: a maximum of at most 1 reads ``"87%"`` as 0.87, at least 100 as 87 (an integer
    without a maximum also reads 87); ``"7/10"`` under a maximum of 10 is 7 ("7 out of
    10"), under a maximum of at most 1 (or none, for a number) it is 0.7. Anything else is
    left alone.
    """
    s = text.strip()
    if not s or len(s) > _MAX_NUMERAL_LENGTH:
        return None
    plain_rule = "coerce_integer" if integer else "coerce_number"
    if _PLAIN_NUMBER.fullmatch(s):
        number = _numeral(s)
        if number is None:
            return None
        if integer:
            whole = _integral(number)
            return None if whole is None else (whole, plain_rule, "")
        return number, plain_rule, ""
    if _THOUSANDS.fullmatch(s):
        # "12,111" could be a decimal comma (12.111) unless there are several groups, a
        # decimal point as well, or the schema wants an integer.
        groups = s.count(",")
        if groups == 1 and "." not in s and not integer:
            return None
        number = _numeral(s.replace(",", ""))
        if number is None:
            return None
        if integer:
            whole = _integral(number)
            return None if whole is None else (whole, "coerce_number", "thousands separators")
        return number, "coerce_number", "thousands separators"
    from fractions import Fraction  # 2 ms to import (with decimal): only for these two

    match = _PERCENT.fullmatch(s)
    if match:
        return _read_percent(Fraction(match.group(1)), integer=integer, upper=upper)
    match = _FRACTION.fullmatch(s)
    if match:
        numerator, denominator = Fraction(match.group(1)), Fraction(match.group(2))
        if denominator == 0:
            return None
        return _read_fraction(numerator, denominator, integer=integer, upper=upper)
    return None


def _read_percent(
    percent: Fraction, *, integer: bool, upper: float | None
) -> tuple[int | float, str, str] | None:
    if upper is not None and upper <= 1:
        if integer:
            return None
        value = _as_number(percent / 100, integer=False)
        how = f"a fraction of 1, as the maximum is {upper:g}"
        return None if value is None else (value, "coerce_percent", how)
    if (upper is not None and upper >= 100) or (upper is None and integer):
        value = _as_number(percent, integer=integer)
        how = "percent" if upper is None else f"percent, as the maximum is {upper:g}"
        return None if value is None else (value, "coerce_percent", how)
    return None


def _read_fraction(
    numerator: Fraction, denominator: Fraction, *, integer: bool, upper: float | None
) -> tuple[int | float, str, str] | None:
    from fractions import Fraction

    if upper is not None and upper > 1:
        if Fraction(upper) == denominator:  # "7/10" on a 0–10 scale
            value = _as_number(numerator, integer=integer)
            how = f"{numerator} out of {denominator}, as the maximum is {upper:g}"
            return None if value is None else (value, "coerce_fraction", how)
        return None
    if integer:
        return None
    value = _as_number(numerator / denominator, integer=False)
    return None if value is None else (value, "coerce_fraction", "a ratio")


def read_boolean(value: Any) -> bool | None:
    """``"yes"``/``"No"``/``"TRUE"``/``"0"``/``1``/``0.0`` → a boolean; anything else → None."""
    if isinstance(value, str):
        return BOOLEAN_WORDS.get(value.strip().casefold())
    if is_number(value) and value in (0, 1):
        return bool(value)
    return None


def is_null_word(value: Any) -> bool:
    return isinstance(value, str) and value.strip().casefold() in NULL_WORDS


def read_json_container(text: str) -> dict[str, Any] | list[Any] | None:
    """The object or array a string holds as strict JSON text, else ``None``."""
    s = text.strip()
    if not s or s[0] not in "[{":
        return None
    try:
        value = json.loads(s)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, (dict, list)) else None


# --- Names --------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def fold(name: str) -> str:
    """Case, spacing and punctuation removed: ``firstName``, ``first_name``, ``First Name``
    all fold to ``firstname``."""
    return "".join(c for c in name.casefold() if c.isalnum())


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (Levenshtein plus adjacent transpositions)."""
    if a == b:
        return 0
    if not a or not b:
        return max(len(a), len(b))
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def similarity(a: str, b: str) -> float:
    """1 − edit distance / longer length, on folded names (0.0 for empty or long names)."""
    fa, fb = fold(a), fold(b)
    longest = max(len(fa), len(fb))
    if not fa or not fb or longest > FUZZY_MAX_LENGTH:
        return 0.0
    if abs(len(fa) - len(fb)) > longest * (1 - FUZZY_THRESHOLD):
        return 0.0
    return 1.0 - edit_distance(fa, fb) / longest


def unique_fold_match(name: str, candidates: Iterable[str]) -> str | None:
    """The one candidate equal to ``name`` after folding, or None (no match or several)."""
    key = fold(name)
    if not key:
        return None
    found = {c for c in candidates if fold(c) == key}
    return found.pop() if len(found) == 1 else None


def unique_nearest(name: str, candidates: Sequence[str]) -> str | None:
    """The one candidate most similar to ``name`` (≥ the threshold, strictly best), or None."""
    scored = sorted(((similarity(name, c), c) for c in set(candidates)), reverse=True)
    if not scored or scored[0][0] < FUZZY_THRESHOLD:
        return None
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None
    return scored[0][1]
