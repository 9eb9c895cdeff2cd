"""Explanations: one jsonschema error in, one or more :class:`~llmfix.model.Diagnostic` out.

Over 600 lines on purpose: a table of small explainers, one per JSON Schema keyword, that
share nothing but the table; split, they would only be harder to find.

Used by :mod:`llmfix.schema.validate` (every error of a value) and :mod:`llmfix.schema.check`
(the first error of a schema against its meta-schema). The message for each keyword is
written by a small function in :data:`EXPLAINERS`; a keyword without one gets jsonschema's
own message on one line. Codes are ``schema.<keyword in snake case>``.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from llmfix import codes
from llmfix.jsontext import dumps
from llmfix.model import Diagnostic
from llmfix.schema.walk import json_type

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

STAGE = "validate"
PREVIEW_LIMIT = 60

# jsonschema drops the path of an error raised by a ``false`` subschema (it reports it one
# level up, without the property or index), so ``false`` subschemas are compiled as this
# equivalent schema, recognised by identity when errors are explained.
NEVER: dict[str, Any] = {"not": {}}

# (message text without the pointer, hint, extra data for the diagnostic)
Said: TypeAlias = tuple[str, str | None, dict[str, Any]]


def diagnose(error: ValidationError) -> list[tuple[list[tuple[int, Any]], Diagnostic]]:
    """The diagnostics for one error, each with its sort key (the path, numbers first)."""
    keyword = _keyword(error)
    path = list(error.absolute_path)
    schema_tokens = list(error.absolute_schema_path)
    if keyword == "false" and error.schema is NEVER:
        schema_tokens = schema_tokens[:-1]  # drop the "not" of the stand-in
    schema_path = json_pointer(schema_tokens)
    instance = error.instance

    forbidden: list[str] | None = None
    if keyword == "additionalProperties" and error.validator_value is False:
        if isinstance(instance, dict) and isinstance(error.schema, dict):
            forbidden = _additional_properties(instance, error.schema)
    elif keyword == "unevaluatedProperties" and error.validator_value is False:
        forbidden = _unexpected_names(error.message)
    if forbidden:
        out = []
        for name in forbidden:
            tokens = [*path, name]
            text = f"property not allowed ({keyword} is false)"
            hint = _allowed_hint(name, error.schema)
            detail = {"keyword": keyword, "schema_path": schema_path, "property": name}
            out.append((_sort_key(tokens), _make(keyword, tokens, text, hint, detail)))
        return out

    text, hint, extra = explain(error)
    tokens = path
    if keyword == "required" and isinstance(error.validator_value, bool) and path:
        tokens = path[:-1]  # draft 3: the error sits on the missing property itself
    data: dict[str, Any] = {"keyword": keyword, "schema_path": schema_path, **extra}
    return [(_sort_key(tokens), _make(keyword, tokens, text, hint, data))]


def _make(
    keyword: str, tokens: Sequence[str | int], text: str, hint: str | None, data: dict[str, Any]
) -> Diagnostic:
    pointer = json_pointer(tokens)
    return _code_of(keyword).at(f"{pointer or '/'}: {text}", pointer=pointer, hint=hint, data=data)


def _code_of(keyword: str) -> codes.Code:
    """The registered ``schema.<keyword in snake case>`` code of a failing keyword."""
    found = codes.SCHEMA_KEYWORDS.get(keyword)
    return found if found is not None else codes.get(f"schema.{_snake(keyword)}")


def explain(error: ValidationError) -> Said:
    """(message text without the pointer, hint, extra data) for one jsonschema error."""
    keyword = _keyword(error)
    schema = error.schema if isinstance(error.schema, dict) else {}
    failure = Failure(keyword, error.validator_value, error.instance, schema, error)
    explainer = EXPLAINERS.get(keyword, _as_jsonschema_says)
    text, hint, extra = explainer(failure)
    if _under_property_names(error):
        text = f"invalid property name {preview(error.instance)}: {text}"
    return text, hint, extra


class Failure(NamedTuple):
    """What an explainer gets: the keyword, its value in the schema, the value that failed,
    the schema object holding the keyword, and jsonschema's error."""

    keyword: str
    value: Any
    instance: Any
    schema: dict[str, Any]
    error: ValidationError


# --- one explainer per keyword (or family of keywords) -----------------------------------


def _as_jsonschema_says(f: Failure) -> Said:
    return shorten(one_line(f.error.message), 160), None, {}


def _type(f: Failure) -> Said:
    expected = [t for t in _ensure_list(f.value) if isinstance(t, str)]
    text = f"expected {_alternatives(expected) or 'another type'}, got {_describe(f.instance)}"
    return text, None, {"expected": expected, "actual": json_type(f.instance)}


def _required(f: Failure) -> Said:
    name = _missing_property(f.error)
    hint = None
    if isinstance(f.instance, dict):
        hint = _misspelling_hint(name, f.instance, f.schema)
    return f'missing required property "{name}"', hint, {"property": name}


def _enum(f: Failure) -> Said:
    options = list(f.value) if isinstance(f.value, list) else []
    text = f"{preview(f.instance)} is not one of {_options(options)}"
    return text, _closest_option(f.instance, options), {}


def _const(f: Failure) -> Said:
    text = f"expected {preview(f.value)}, got {preview(f.instance)}"
    return text, _closest_option(f.instance, [f.value]), {}


def _bound(f: Failure) -> Said:
    text = f"expected a number {_comparison(f.keyword, f.schema)} {preview(f.value)}, got "
    return text + preview(f.instance), None, {}


def _multiple_of(f: Failure) -> Said:
    return f"expected a multiple of {preview(f.value)}, got {preview(f.instance)}", None, {}


def _length(f: Failure) -> Said:
    bound = "at least" if f.keyword == "minLength" else "at most"
    size = len(f.instance) if isinstance(f.instance, str) else 0
    return f"expected {bound} {_count(f.value, 'character')}, got {size}", None, {}


def _pattern(f: Failure) -> Said:
    text = f'{preview(f.instance)} does not match the pattern "{shorten(str(f.value), 60)}"'
    return text, None, {}


def _format(f: Failure) -> Said:
    return f"{preview(f.instance)} is not a valid {f.value}", None, {}


def _item_count(f: Failure) -> Said:
    bound = "at least" if f.keyword == "minItems" else "at most"
    size = len(f.instance) if isinstance(f.instance, list) else 0
    return f"expected {bound} {_count(f.value, 'item')}, got {size}", None, {}


def _property_count(f: Failure) -> Said:
    bound = "at least" if f.keyword == "minProperties" else "at most"
    size = len(f.instance) if isinstance(f.instance, dict) else 0
    noun = _count(f.value, "property", "properties")
    return f"expected {bound} {noun}, got {size}", None, {}


def _unique_items(f: Failure) -> Said:
    return "expected unique items" + _duplicate_note(f.instance), None, {}


def _no_more_items(f: Failure) -> Said:
    """``items: false`` (2020-12) or ``additionalItems: false``: nothing past the tuple."""
    if f.value is not False:
        return _as_jsonschema_says(f)
    tuple_keyword = "prefixItems" if f.keyword == "items" else "items"
    allowed = len(f.schema.get(tuple_keyword, []) or [])
    size = len(f.instance) if isinstance(f.instance, list) else 0
    text = f"expected at most {_count(allowed, 'item')}, got {size} ({f.keyword} is false)"
    return text, None, {}


def _dependency(f: Failure) -> Said:
    if f.error.context:  # a schema dependency failed: jsonschema's message says which
        return _as_jsonschema_says(f)
    name, because = _missing_dependency(f.error)
    text = f'missing property "{name}", which is required when "{because}" is present'
    return text, None, {"property": name, "because": because}


def _contains(f: Failure) -> Said:
    return 'expected at least one item matching the "contains" schema, got none', None, {}


def _contains_count(f: Failure) -> Said:
    bound = "at least" if f.keyword == "minContains" else "at most"
    return f'expected {bound} {_count(f.value, "item")} matching the "contains" schema', None, {}


def _not(f: Failure) -> Said:
    return f'must not match the "not" schema {preview(f.value)}', None, {}


def _false(f: Failure) -> Said:
    tokens = list(f.error.absolute_schema_path)[: -1 if f.error.schema is NEVER else None]
    if len(tokens) >= 2 and tokens[-2] in ("properties", "patternProperties"):
        return "property not allowed (its schema is false)", None, {}
    return "no value is allowed here (the schema is false)", None, {}


def _alternatives_failed(f: Failure) -> Said:
    return _explain_alternatives(f.error, f.keyword)


def _unevaluated_items(f: Failure) -> Said:
    text = "items beyond those the schema evaluates are not allowed (unevaluatedItems)"
    return text, None, {}


def _unevaluated_properties(f: Failure) -> Said:
    if f.value is False:
        text = "properties the schema does not evaluate are not allowed (unevaluatedProperties)"
    else:
        text = "properties the schema does not evaluate are invalid (unevaluatedProperties)"
    return text, None, {}


EXPLAINERS: dict[str, Callable[[Failure], Said]] = {
    "type": _type,
    "required": _required,
    "enum": _enum,
    "const": _const,
    "minimum": _bound,
    "maximum": _bound,
    "exclusiveMinimum": _bound,
    "exclusiveMaximum": _bound,
    "multipleOf": _multiple_of,
    "minLength": _length,
    "maxLength": _length,
    "pattern": _pattern,
    "format": _format,
    "minItems": _item_count,
    "maxItems": _item_count,
    "minProperties": _property_count,
    "maxProperties": _property_count,
    "uniqueItems": _unique_items,
    "items": _no_more_items,
    "additionalItems": _no_more_items,
    "dependentRequired": _dependency,
    "dependencies": _dependency,
    "contains": _contains,
    "minContains": _contains_count,
    "maxContains": _contains_count,
    "not": _not,
    "false": _false,
    "anyOf": _alternatives_failed,
    "oneOf": _alternatives_failed,
    "unevaluatedItems": _unevaluated_items,
    "unevaluatedProperties": _unevaluated_properties,
}


# --- anyOf / oneOf ------------------------------------------------------------------------


def _explain_alternatives(
    error: ValidationError, keyword: str
) -> tuple[str, str | None, dict[str, Any]]:
    value = error.validator_value
    count = len(value) if isinstance(value, list) else 0
    extra: dict[str, Any] = {"alternatives": count}
    context = list(error.context or ())
    if not context:
        text = f"matches more than one of the {count} oneOf alternatives; it must match exactly one"
        return text, None, extra

    at_root: dict[int, list[ValidationError]] = {}
    for sub in context:
        branch = sub.relative_schema_path[0] if sub.relative_schema_path else None
        if isinstance(branch, int) and not sub.relative_path:
            at_root.setdefault(branch, []).append(sub)
    branches = range(count)
    instance = error.instance

    def all_branches_fail(keywords: tuple[str, ...]) -> list[ValidationError] | None:
        picked = []
        for branch in branches:
            match = next((e for e in at_root.get(branch, []) if e.validator in keywords), None)
            if match is None:
                return None
            picked.append(match)
        return picked

    types = all_branches_fail(("type",)) if count else None
    if types is not None:
        expected: list[str] = []
        for sub in types:
            expected += [t for t in _ensure_list(sub.validator_value) if isinstance(t, str)]
        expected = list(dict.fromkeys(expected))
        text = f"expected {_alternatives(expected)}, got {_describe(instance)}"
        extra.update(expected=expected, actual=json_type(instance))
        return text, None, extra
    constants = all_branches_fail(("const", "enum")) if count else None
    if constants is not None:
        options: list[Any] = []
        for sub in constants:
            if sub.validator == "const":
                options.append(sub.validator_value)
            elif isinstance(sub.validator_value, list):
                options.extend(sub.validator_value)
        text = f"{preview(instance)} is not one of {_options(options)}"
        return text, _closest_option(instance, options), extra

    branch_of_best, branch_errors = _closest_branch(context)
    best = branch_errors[0]
    sub_text, sub_hint, _ = explain(best)
    own = json_pointer(error.absolute_path)
    sub_pointer = json_pointer(best.absolute_path)
    where = "" if sub_pointer == own else f"{sub_pointer or '/'}: "
    label = f" (alternative {branch_of_best + 1})" if branch_of_best is not None else ""
    if count == 1:
        text = f"does not match the {keyword} schema: {where}{sub_text}"
    else:
        text = f"matches none of the {count} {keyword} alternatives; closest{label}: "
        text += where + sub_text
    if len(branch_errors) > 1:
        text += f" (and {_count(len(branch_errors) - 1, 'more problem')})"
    sub_keyword = _keyword(best)
    extra["closest"] = {
        "alternative": branch_of_best,
        "pointer": sub_pointer,
        "keyword": sub_keyword,
        "schema_path": json_pointer(best.absolute_schema_path),
    }
    return text, sub_hint, extra


def _closest_branch(context: list[ValidationError]) -> tuple[int | None, list[ValidationError]]:
    """The alternative that came nearest to matching, and its errors (most useful first).

    Nearest: the value's type fits it, it has the fewest errors, and they sit deepest
    (the value got furthest into it).
    """
    groups: dict[int | None, list[ValidationError]] = {}
    for sub in context:
        first = sub.relative_schema_path[0] if sub.relative_schema_path else None
        groups.setdefault(first if isinstance(first, int) else None, []).append(sub)

    def score(item: tuple[int | None, list[ValidationError]]) -> tuple[bool, int, int]:
        _, errors = item
        wrong_type = any(e.validator == "type" and not e.relative_path for e in errors)
        return (wrong_type, len(errors), -max(len(e.relative_path) for e in errors))

    branch, errors = min(groups.items(), key=score)
    ordered = sorted(errors, key=lambda e: (e.validator in ("anyOf", "oneOf"), -len(e.path)))
    return branch, ordered


def innermost(error: ValidationError) -> ValidationError:
    """Follow failed anyOf/oneOf alternatives down to a concrete problem."""
    while error.validator in ("anyOf", "oneOf") and error.context:
        error = _closest_branch(list(error.context))[1][0]
    return error


def _keyword(error: ValidationError) -> str:
    if error.schema is NEVER or not isinstance(error.validator, str):
        return "false"
    return error.validator


def _missing_property(error: ValidationError) -> str:
    value = error.validator_value
    if isinstance(value, bool):  # draft 3: {"required": true} inside the property
        last = error.path[-1] if error.path else ""
        return str(last)
    names = [n for n in _ensure_list(value) if isinstance(n, str)]
    for name in names:
        if error.message == f"{name!r} is a required property":
            return name
    instance = error.instance if isinstance(error.instance, dict) else {}
    return next((n for n in names if n not in instance), names[0] if names else "?")


def _missing_dependency(error: ValidationError) -> tuple[str, str]:
    value = error.validator_value
    instance = error.instance if isinstance(error.instance, dict) else {}
    pairs: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for because, needed in value.items():
            if because not in instance:
                continue
            for name in [needed] if isinstance(needed, str) else _ensure_list(needed):
                if isinstance(name, str) and name not in instance:
                    pairs.append((name, because))
    for name, because in pairs:
        if error.message == f"{name!r} is a dependency of {because!r}":
            return name, because
    return pairs[0] if pairs else ("?", "?")


def _additional_properties(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    declared = schema.get("properties")
    declared = declared if isinstance(declared, dict) else {}
    patterns = schema.get("patternProperties")
    patterns = list(patterns) if isinstance(patterns, dict) else []
    return [
        name
        for name in instance
        if name not in declared and not any(re.search(p, name) for p in patterns)
    ]


_UNEXPECTED_RE = re.compile(r"\((?P<names>.*) (?:was|were) unexpected\)$", re.DOTALL)


def _unexpected_names(message: str) -> list[str] | None:
    match = _UNEXPECTED_RE.search(message)
    if not match:
        return None
    try:
        names = ast.literal_eval(f"[{match['names']}]")
    except (ValueError, SyntaxError):
        return None
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return names
    return None


def _allowed_hint(name: str, schema: Any) -> str | None:
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return None
    declared = [k for k in schema["properties"] if isinstance(k, str)]
    close = difflib.get_close_matches(name, declared, n=1, cutoff=0.7)
    if close:
        return f'did you mean "{close[0]}"?'
    if declared and len(declared) <= 12:
        return "allowed properties: " + ", ".join(f'"{k}"' for k in declared)
    return None


def _misspelling_hint(name: str, instance: dict[str, Any], schema: dict[str, Any]) -> str | None:
    declared = schema.get("properties")
    declared = declared if isinstance(declared, dict) else {}
    strays = [k for k in instance if isinstance(k, str) and k not in declared]
    if not strays:  # (no key to be the misspelling)
        return None
    lowered = {k.lower().replace("_", "").replace("-", ""): k for k in strays}
    key = name.lower().replace("_", "").replace("-", "")
    if key in lowered:
        return f'"{lowered[key]}" looks like "{name}" spelled differently'
    close = difflib.get_close_matches(name, strays, n=1, cutoff=0.75)
    if close:
        return f'"{close[0]}" looks like a misspelling of "{name}"'
    return None


def _closest_option(instance: Any, options: list[Any]) -> str | None:
    if not isinstance(instance, str):
        return None
    strings = [o for o in options if isinstance(o, str)]
    for option in strings:
        if option.lower() == instance.strip().lower():
            return f"did you mean {preview(option)}?"
    if not strings:
        return None
    close = difflib.get_close_matches(instance, strings, n=1, cutoff=0.75)
    return f"did you mean {preview(close[0])}?" if close else None


def _duplicate_note(instance: Any) -> str:
    if not isinstance(instance, list):
        return ""
    seen: dict[str, int] = {}
    for index, item in enumerate(instance):
        try:
            key = json.dumps(item, sort_keys=True, default=repr)
        except (TypeError, ValueError, RecursionError):
            return ""
        if key in seen:
            return f", but items {seen[key]} and {index} are equal ({preview(item)})"
        seen[key] = index
    return ""


def _under_property_names(error: ValidationError) -> bool:
    if "propertyNames" not in error.absolute_schema_path:
        return False
    tokens = list(error.absolute_schema_path)
    containers = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
    return any(
        token == "propertyNames" and (i == 0 or tokens[i - 1] not in containers)
        for i, token in enumerate(tokens)
    )


def _comparison(keyword: str, schema: dict[str, Any]) -> str:
    if keyword == "exclusiveMinimum":
        return ">"
    if keyword == "exclusiveMaximum":
        return "<"
    if keyword == "minimum":
        return ">" if schema.get("exclusiveMinimum") is True else ">="
    return "<" if schema.get("exclusiveMaximum") is True else "<="


def too_many_errors_diagnostic(limit: int) -> Diagnostic:
    return codes.SCHEMA_TOO_MANY_ERRORS.at(
        f"/: more than {limit:,} schema errors; the first {limit:,} found are listed", pointer=""
    )


def too_costly_diagnostic(reason: str) -> Diagnostic:
    return codes.SCHEMA_TOO_COSTLY.at(
        f"/: the value could not be validated in bounded time: {reason}", pointer=""
    )


def recursion_diagnostic() -> Diagnostic:
    return codes.SCHEMA_RECURSION_LIMIT.at(
        "/: the value is nested too deeply to validate against this schema", pointer=""
    )


def unresolvable_diagnostic(error: BaseException) -> Diagnostic:
    ref = getattr(error, "ref", "?")
    return codes.SCHEMA_UNRESOLVABLE_REF.at(
        f'/: the schema\'s reference "{shorten(str(ref), 80)}" cannot be resolved',
        pointer="",
        data={"ref": str(ref)},
    )


# ----------------------------------------------------------------------------- helpers


def json_pointer(tokens: Iterable[str | int]) -> str:
    """RFC 6901 JSON Pointer for a path (``""`` is the whole value)."""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


def _sort_key(tokens: Iterable[str | int]) -> list[tuple[int, Any]]:
    return [(0, t) if isinstance(t, int) else (1, str(t)) for t in tokens]


def _snake(keyword: str) -> str:
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", keyword)
    return re.sub(r"[^a-z0-9_]", "", words.lower()) or "unknown"


def _ensure_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def type_with_article(value: Any) -> str:
    kind = json_type(value)
    return "an " + kind if kind[0] in "aeiou" else "a " + kind


def _describe(value: Any) -> str:
    kind = json_type(value)
    return kind if value is None else f"{kind} {preview(value)}"


def _alternatives(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " or " + names[-1]


def _options(options: Sequence[Any], limit: int = 10) -> str:
    shown = ", ".join(preview(o, 30) for o in options[:limit])
    if len(options) > limit:
        shown += f", … ({len(options) - limit} more)"
    return shown or "(no values)"


def _count(number: Any, noun: str, plural: str | None = None) -> str:
    word = noun if number == 1 else (plural or noun + "s")
    return f"{preview(number)} {word}"


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def shorten(text: str, limit: int = PREVIEW_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Full(Exception):
    pass


def _scalar(item: Any, limit: int) -> str:
    if isinstance(item, str):
        return json.dumps(item[: limit + 1], ensure_ascii=False)
    if isinstance(item, float) and item.is_integer() and abs(item) < 1e16:
        return json.dumps(item)
    try:
        return dumps(item)
    except (TypeError, ValueError):
        return repr(item)


def preview(value: Any, limit: int = PREVIEW_LIMIT) -> str:
    """Compact JSON for a value, cut to about ``limit`` characters (never renders it all)."""
    if not isinstance(value, (dict, list, tuple)):  # (most values previewed are scalars)
        text = _scalar(value, limit)
        return text if len(text) <= limit else text[: limit - 1] + "…"
    parts: list[str] = []
    budget = [limit + 1]

    def emit(text: str) -> None:
        parts.append(text)
        budget[0] -= len(text)
        if budget[0] <= 0:
            raise _Full

    def scalar(item: Any) -> str:
        return _scalar(item, limit)

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            emit("{")
            for i, (key, inner) in enumerate(item.items()):
                emit((", " if i else "") + scalar(str(key)) + ": ")
                walk(inner)
            emit("}")
        elif isinstance(item, (list, tuple)):
            emit("[")
            for i, inner in enumerate(item):
                if i:
                    emit(", ")
                walk(inner)
            emit("]")
        else:
            emit(scalar(item))

    try:
        walk(value)
    except _Full:
        return "".join(parts)[: limit - 1] + "…"
    return "".join(parts)
