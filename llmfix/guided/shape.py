"""What a schema wants at one place, for the readers: types, members, properties, items.

Only what guides a reading is looked at. Local ``$ref`` (``#/$defs/X``, ``#/definitions/X``)
is followed; ``anyOf``/``oneOf`` become alternatives; ``allOf`` parts are merged for their
``properties`` and ``type``. Anything this module cannot follow reads as "anything".
"""

from __future__ import annotations

from typing import Any

from llmfix.schema import walk as sw

_MAX_REF_HOPS = 32


def resolve(schema: Any, root: Any) -> dict[str, Any]:
    """``schema`` with its local ``$ref`` chain followed (``{}`` when it cannot be)."""
    for _ in range(_MAX_REF_HOPS):
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            return schema
        target: Any = root
        for token in ref[1:].split("/")[1:] if ref != "#" else []:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and token in target:
                target = target[token]
            else:
                return {}
        if isinstance(target, dict) and len(schema) > 1:
            # Siblings of $ref (2019-09 and later) still constrain the value.
            merged = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **merged}
            if "$ref" in target:
                schema["$ref"] = target["$ref"]
        else:
            schema = target
    return {}


def alternatives(schema: Any, root: Any, depth: int = 0) -> list[dict[str, Any]]:
    """The schemas a value may match, ``anyOf``/``oneOf`` flattened, in declared order."""
    node = resolve(schema, root)
    branches = sw.subschema_list(node.get("anyOf")) + sw.subschema_list(node.get("oneOf"))
    if not branches or depth > 8:
        return [node]
    local = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
    out: list[dict[str, Any]] = []
    for branch in branches:
        for alt in alternatives(branch, root, depth + 1):
            out.append({**local, **alt} if local else alt)
    return out


def types(node: dict[str, Any]) -> set[str]:
    """JSON types ``node`` allows; every type when unrestricted."""
    declared = sw.declared_types(node)
    if declared is not None:
        return set(declared)
    if "properties" in node or "required" in node:
        return {"object"}
    if "items" in node or "prefixItems" in node:
        return {"array"}
    return set(sw.JSON_TYPES)


def members(node: dict[str, Any]) -> list[Any] | None:
    return sw.enum_members(node)


def properties(node: dict[str, Any], root: Any) -> dict[str, Any]:
    """Declared property name → its schema (``allOf`` parts included)."""
    out: dict[str, Any] = {}
    parts = [node, *(resolve(p, root) for p in sw.subschema_list(node.get("allOf")))]
    for part in parts:
        props = part.get("properties")
        if isinstance(props, dict):
            out.update(props)
    return out


def required(node: dict[str, Any]) -> list[str]:
    names = node.get("required")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def items(node: dict[str, Any]) -> Any:
    """The schema every array item must match (``{}`` when any item will do)."""
    item = node.get("items")
    return item if isinstance(item, (dict, bool)) else {}


def wants(schema: Any, root: Any, kind: str) -> bool:
    """Whether some alternative of ``schema`` is of JSON type ``kind``."""
    return any(kind in types(alt) for alt in alternatives(schema, root))


def property_schema(node: dict[str, Any], root: Any, name: str) -> tuple[str, Any] | None:
    """The declared property ``name`` stands for (exact, then folded), with its schema."""
    props = properties(node, root)
    if name in props:
        return name, props[name]
    match = sw.unique_fold_match(name, props)
    return (match, props[match]) if match is not None else None
