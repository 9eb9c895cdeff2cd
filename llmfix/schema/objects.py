"""Object and array fixes: keys renamed, unwrapped, removed or filled; members and items
repaired against their own subschemas.

:func:`fix_object` applies, in patch order, :func:`unwrap_object`, :func:`rename_keys`,
:func:`remove_additional`, the repair of each member, then :func:`fill_default`;
:func:`fix_array` repairs each item against its positional or common schema. The
repair of members and items is the walk's (:func:`llmfix.schema.repair.repair`), passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from llmfix.model import Diagnostic, PatchOp
from llmfix.schema import walk as sw
from llmfix.schema.context import Fix, RepairContext, fixes

# The walk: (context, value, schema, resolver, pointer, depth) → the value repaired.
Repair: TypeAlias = Callable[[RepairContext, Any, Any, Any, str, int], Fix]


def fix_array(
    ctx: RepairContext,
    repair: Repair,
    value: list[Any],
    schema: dict[str, Any],
    resolver: Any,
    pointer: str,
    depth: int,
) -> Fix:
    prefix, rest = ctx.item_schemas(schema)
    if not prefix and rest is None:
        return Fix(value)
    items = value
    ops: list[PatchOp] = []
    notes: list[Diagnostic] = []
    for index, item in enumerate(value):
        item_schema = prefix[index] if index < len(prefix) else rest
        if ctx.fits_untouched(item, item_schema, depth + 1):
            continue  # (what repair() would give back: the item as it is)
        child = repair(
            ctx, item, item_schema, resolver, sw.child_pointer(pointer, index), depth + 1
        )
        if child.ops or child.notes:
            if items is value:
                items = list(value)
            items[index] = child.value
            ops.extend(child.ops)
            notes.extend(child.notes)
    return Fix(items, tuple(ops), tuple(notes))


def fix_object(
    ctx: RepairContext,
    repair: Repair,
    value: dict[str, Any],
    schema: dict[str, Any],
    resolver: Any,
    pointer: str,
    depth: int,
    names: frozenset[str],
) -> Fix:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    patterns = schema.get("patternProperties")
    patterns = patterns if isinstance(patterns, dict) else {}
    extra = schema.get("additionalProperties", True)
    required_raw = schema.get("required")
    required = (
        [r for r in required_raw if isinstance(r, str)] if isinstance(required_raw, list) else []
    )

    declared: Callable[[str], bool]
    if patterns:
        # A pattern Python cannot compile (ECMA-only syntax) might match any key: then no
        # key is treated as undeclared, so none is renamed, unwrapped or removed.
        patterns_usable = all(ctx.pattern(p) is not None for p in patterns)

        def declared(key: str) -> bool:
            if key in props or not patterns_usable:
                return True
            return any(ctx.pattern_matches(p, key) for p in patterns)

    else:
        declared = props.__contains__

    unwrapped = unwrap_object(ctx, value, required, names, declared, pointer)
    if unwrapped is not None:
        inner = fix_object(
            ctx, repair, unwrapped.value, schema, resolver, pointer, depth + 1, names
        )
        return unwrapped.then(inner)

    plan = plan_renames(ctx, value, props, required, extra is False, names, declared)
    current, ops = rename_keys(ctx, value, plan, pointer)
    if extra is False and ctx.allowed("remove_additional"):
        current, removals = remove_additional(ctx, current, declared, pointer)
        ops += removals

    notes: list[Diagnostic] = []
    changed: dict[str, Any] | None = None
    for key, item in current.items():
        if key in props:
            if not patterns and ctx.fits_untouched(item, props[key], depth + 1):
                continue  # (what repair() would give back: the member as it is)
            subschemas = [props[key]]
        else:
            subschemas = []
        if patterns:
            subschemas += [s for p, s in patterns.items() if ctx.pattern_matches(p, key)]
        if not subschemas and isinstance(extra, dict):
            subschemas = [extra]
        child_pointer = sw.child_pointer(pointer, key)
        child = Fix(item)
        for subschema in subschemas:
            child = child.then(
                repair(ctx, child.value, subschema, resolver, child_pointer, depth + 1)
            )
        if child.ops or child.notes:
            if changed is None:
                changed = dict(current)
            changed[key] = child.value
            ops.extend(child.ops)
            notes.extend(child.notes)
    if changed is not None:
        current = changed

    if ctx.allowed("fill_default"):
        current, additions = fill_default(ctx, current, required, props, resolver, pointer)
        ops += additions
    return Fix(current, tuple(ops), tuple(notes))


@fixes("unwrap_object")
def unwrap_object(
    ctx: RepairContext,
    value: dict[str, Any],
    required: list[str],
    names: frozenset[str],
    declared: Callable[[str], bool],
    pointer: str,
) -> Fix | None:
    """``{"result": {...}}`` → ``{...}`` when only the inner object has the required keys
    (spelt exactly, or so that the key renaming rules will match them)."""
    if len(value) != 1 or not required or not ctx.allowed("unwrap_object"):
        return None
    ((key, inner),) = value.items()
    if not isinstance(inner, dict) or key in names or declared(key):
        return None
    if not all(_finds_key(ctx, r, inner) for r in required):
        return None
    op = PatchOp(
        op="move",
        path=pointer,
        from_=sw.child_pointer(pointer, key),
        rule="unwrap_object",
        risk=ctx.risks["unwrap_object"],
        before=key,
        message=f"unwrapped the object from its single key {sw.show(key)}",
    )
    return Fix(inner, (op,))


def _finds_key(ctx: RepairContext, name: str, value: Mapping[str, Any]) -> bool:
    """Whether ``value`` has key ``name``, or one the rename rules would turn into it."""
    if name in value:
        return True
    if ctx.allowed("rename_key_case") and sw.unique_fold_match(name, list(value)):
        return True
    return ctx.allowed("rename_key_fuzzy") and sw.unique_nearest(name, list(value)) is not None


@fixes("rename_key_case", "rename_key_fuzzy")
def plan_renames(
    ctx: RepairContext,
    value: Mapping[str, Any],
    props: Mapping[str, Any],
    required: list[str],
    forbid_extra: bool,
    names: frozenset[str],
    declared: Callable[[str], bool],
) -> dict[str, tuple[str, str]]:
    """source key → (missing declared key, rule). Targets are required keys that are
    missing, and — when extra keys are forbidden — any missing declared key; required
    ones are matched first. Keys declared anywhere for this place are never sources."""
    targets = [r for r in required if r not in value]
    if forbid_extra:
        targets += [p for p in props if p not in value and p not in targets]
    if not targets:
        return {}
    sources = [k for k in value if k not in names and not declared(k)]
    if not sources:
        return {}
    plan: dict[str, tuple[str, str]] = {}
    if ctx.allowed("rename_key_case"):
        for target in targets:
            source = sw.unique_fold_match(target, sources)
            if (
                source is not None
                and source not in plan
                and sw.unique_fold_match(source, targets) == target
            ):
                plan[source] = (target, "rename_key_case")
    if ctx.allowed("rename_key_fuzzy"):
        taken = {target for target, _ in plan.values()}
        free_targets = [t for t in targets if t not in taken]
        free_sources = [s for s in sources if s not in plan]
        for target in list(free_targets):
            source = sw.unique_nearest(target, free_sources)
            if source is None or sw.unique_nearest(source, free_targets) != target:
                continue
            plan[source] = (target, "rename_key_fuzzy")
            free_sources.remove(source)
            free_targets.remove(target)
    return plan


def rename_keys(
    ctx: RepairContext, value: dict[str, Any], plan: dict[str, tuple[str, str]], pointer: str
) -> tuple[dict[str, Any], list[PatchOp]]:
    """``value`` with the planned renames made (each key keeps its position), as moves."""
    if not plan:
        return value, []
    renamed = {plan.get(k, (k, ""))[0]: v for k, v in value.items()}
    ops = [
        PatchOp(
            op="move",
            path=sw.child_pointer(pointer, target),
            from_=sw.child_pointer(pointer, source),
            rule=rule,
            risk=ctx.risks[rule],
            before=source,
            after=target,
            message=f"renamed key {sw.show(source)} to {sw.show(target)}",
        )
        for source, (target, rule) in plan.items()
    ]
    return renamed, ops


@fixes("remove_additional")
def remove_additional(
    ctx: RepairContext, value: dict[str, Any], declared: Callable[[str], bool], pointer: str
) -> tuple[dict[str, Any], list[PatchOp]]:
    """``value`` without the keys ``additionalProperties: false`` forbids (one remove each)."""
    kept = {k: v for k, v in value.items() if declared(k)}
    if len(kept) == len(value):
        return value, []
    ops = [
        PatchOp(
            op="remove",
            path=sw.child_pointer(pointer, key),
            rule="remove_additional",
            risk=ctx.risks["remove_additional"],
            before=sw.copy_json(removed),
            message=f"removed {sw.show(key)}, which the schema does not allow "
            f"(additionalProperties is false); its value was {sw.show(removed)}",
        )
        for key, removed in value.items()
        if key not in kept
    ]
    return kept, ops


@fixes("fill_default")
def fill_default(
    ctx: RepairContext,
    value: dict[str, Any],
    required: list[str],
    props: Mapping[str, Any],
    resolver: Any,
    pointer: str,
) -> tuple[dict[str, Any], list[PatchOp]]:
    """Missing required properties whose schema has a ``default``, filled with it."""
    ops: list[PatchOp] = []
    for key in required:
        if key in value or key not in props:
            continue
        found, default = ctx.default_of(props[key], resolver)
        if not found:
            continue
        value = {**value, key: sw.copy_json(default)}
        ops.append(
            PatchOp(
                op="add",
                path=sw.child_pointer(pointer, key),
                value=sw.copy_json(default),
                rule="fill_default",
                risk=ctx.risks["fill_default"],
                after=sw.copy_json(default),
                message=f"filled the missing required {sw.show(key)} with its default "
                f"{sw.show(default)}",
            )
        )
    return value, ops
