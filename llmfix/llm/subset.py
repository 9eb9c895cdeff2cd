"""Partial repair: when most of an object is valid, ask only for the properties that fail.

A model asked to rewrite a whole 40-field object may change fields that were right; asked
for the three that fail, it cannot. :func:`plan_partial` decides when that is safe:

- the value is an object and the schema's root is a plain object schema (no ``allOf``,
  ``anyOf``, ``oneOf``, ``if``, ``$ref``, ``dependentRequired``… that tie properties together);
- every error sits under one top-level property (or is a missing required property);
- at least ``min_keys`` properties, and at most half of them failing.

The failing properties are asked for with a schema of their own (their subschemas, all
required, ``$defs`` carried along); a property that ``additionalProperties: false``
forbids is dropped. :func:`merge` puts the answer back into the valid part, in the
original order, and the merged value goes through the whole pipeline again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llmfix.llm.prompt import PartialRequest
from llmfix.model import Diagnostic, Severity

MIN_KEYS = 4

_ROOT_BLOCKERS = frozenset(
    {
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "patternProperties",
        "propertyNames",
        "unevaluatedProperties",
        "minProperties",
        "maxProperties",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
    }
)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def plan_partial(
    value: Any, errors: Sequence[Diagnostic], schema: Any, *, min_keys: int = MIN_KEYS
) -> PartialRequest | None:
    """The partial request for ``value``, or ``None`` when the whole value must be asked for."""
    if not isinstance(value, dict) or not isinstance(schema, dict):
        return None
    if _ROOT_BLOCKERS & schema.keys() or schema.get("type", "object") != "object":
        return None
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    failing: list[str] = []
    dropped: set[str] = set()
    for diagnostic in errors:
        if diagnostic.severity is not Severity.ERROR:
            continue
        pointer = diagnostic.pointer
        if pointer is None:
            return None
        if pointer == "":
            name = (diagnostic.data or {}).get("property")
            if diagnostic.code != "schema.required" or not isinstance(name, str):
                return None
            key = name
        else:
            tokens = pointer[1:].split("/")
            key = _unescape(tokens[0])
            if diagnostic.code == "schema.additional_properties" and len(tokens) == 1:
                dropped.add(key)
                continue
        if key not in failing:
            failing.append(key)
    if not failing:
        return None
    total = set(value) | {r for r in required if isinstance(r, str)}
    if len(total) < min_keys or 2 * len(failing) > len(total):
        return None
    extra = schema.get("additionalProperties", True)
    asked: dict[str, Any] = {}
    for key in failing:
        if key in properties:
            asked[key] = properties[key]
        elif isinstance(extra, dict):
            asked[key] = extra
        elif extra is False:
            return None
        else:
            asked[key] = {}
    if not _local_refs_only(asked):
        return None
    sub_schema: dict[str, Any] = {
        "type": "object",
        "properties": asked,
        "required": list(failing),
        "additionalProperties": False,
    }
    for key in ("$defs", "definitions"):
        if key in schema:
            sub_schema[key] = schema[key]
    valid_part = {k: v for k, v in value.items() if k not in failing and k not in dropped}
    return PartialRequest(
        keys=tuple(failing),
        valid_part=valid_part,
        schema=sub_schema,
        order=tuple(k for k in value if k not in dropped),
    )


def _local_refs_only(node: Any) -> bool:
    """Whether every ``$ref`` below ``node`` points into ``$defs``/``definitions``."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if key in ("$dynamicRef", "$recursiveRef"):
                    return False
                if key == "$ref" and not (
                    isinstance(child, str) and child.startswith(("#/$defs/", "#/definitions/"))
                ):
                    return False
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
    return True


def merge(request: PartialRequest, answer: Any) -> dict[str, Any] | None:
    """The valid part with the answered properties put back, or ``None`` if not an object."""
    if not isinstance(answer, dict):
        return None
    fixed = {k: answer[k] for k in request.keys if k in answer}
    merged: dict[str, Any] = {}
    for key in request.order:
        if key in fixed:
            merged[key] = fixed[key]
        elif key in request.valid_part:
            merged[key] = request.valid_part[key]
    for key in request.keys:
        if key in fixed and key not in merged:
            merged[key] = fixed[key]
    return merged
