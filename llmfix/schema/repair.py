"""Schema-aligned repair: make a parsed value fit its JSON Schema, one reported change at a time.

``coerce_to_schema`` walks the value against the schema and fixes what the schema makes
certain: ``"12"`` where an integer is wanted, ``"Complete"`` for the enum value ``complete``,
one string where a list is wanted, a required key spelt ``reasonning``. Every change is an
RFC 6902 JSON Patch operation with a rule id and a risk tier (``RULES``), and a diagnostic.

Principles:

- A value that already fits its (sub)schema is never touched; a valid instance comes back
  equal, with an empty patch.
- A rule fires only where the schema says what the value should be. ``"12"`` stays a string
  where strings are allowed; ``"yes"`` stays a string under ``type: [string, boolean]``.
- What no rule can fix stays as it is and stays an error: numbers are never clamped into
  range, lists never truncated, required values never invented (only ``default`` fills).
- ``anyOf``/``oneOf`` (and ``type`` lists): every alternative is tried on a copy; the one that
  validates with the least risky, then fewest, changes wins. Equally good alternatives with
  different results are reported (``repair.branch_tie``) and the first is kept. When none
  validates, the partial fixes of the only alternative whose type admits the value are kept.
- Percentages and fractions are read only when the schema's maximum says which reading is
  meant (see :func:`llmfix.schema.walk.read_number`); a ``number`` without a maximum leaves
  ``"87%"`` alone.

Not handled (left as they are): ``$dynamicRef``/``$recursiveRef``, ``unevaluatedProperties``,
``dependentSchemas``, ``not``, OpenAPI's ``nullable``.

Layout: this module holds :data:`RULES` and the walk (``$ref``, ``allOf``, ``if``, unions,
type conversions); :mod:`llmfix.schema.coercers` holds one coercer per JSON type and the
enum fixes, :mod:`llmfix.schema.objects` the object and array fixes, and
:mod:`llmfix.schema.context` the context they share (validity cache, ``$ref`` lookups, rule
switches, limits, the deadline). Each :class:`Rule` names the function that carries it out.

Patch operations are in application order: a node's own change first (``replace``, the
``move`` of an unwrap), then key renames (``move``), removals, its children's changes (at the
renamed paths), then ``add`` of defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from llmfix import codes
from llmfix.deadline import Deadline
from llmfix.model import Diagnostic, PatchOp, Risk
from llmfix.rules import SCHEMA_RULES
from llmfix.schema import coercers, objects
from llmfix.schema import walk as sw
from llmfix.schema.budget import allowance
from llmfix.schema.context import (
    MAX_VISITS,
    STAGE,
    Fix,
    RepairContext,
    change_diagnostic,
    detach_ops,
    plain_root,
)

__all__ = [
    "RULES",
    "STAGE",
    "Rule",
    "SchemaRepairOutcome",
    "coerce_to_schema",
    "nothing_to_repair",
]


class Rule(NamedTuple):
    """A repair rule as the walk uses it: its risk tier and what it does (from its record,
    :data:`llmfix.rules.SCHEMA_RULES`), and the function that does it."""

    risk: Risk
    description: str
    fixer: Callable[..., Any]


# Each schema rule (its record, llmfix.rules) → the function that carries it out.
_FIXERS: dict[str, Callable[..., Any]] = {
    "parse_json_string": coercers.parse_json_string,
    "unwrap_object": objects.unwrap_object,
    "wrap_array": coercers.wrap_array,
    "unwrap_array": coercers.unwrap_array,
    "coerce_number": coercers.to_number,
    "coerce_percent": coercers.to_number,
    "coerce_fraction": coercers.to_number,
    "coerce_integer": coercers.to_integer,
    "coerce_string": coercers.to_string,
    "coerce_boolean": coercers.to_boolean,
    "coerce_null": coercers.to_null,
    "enum_case": coercers.fix_enum,
    "enum_nearest": coercers.fix_enum,
    "rename_key_case": objects.plan_renames,
    "rename_key_fuzzy": objects.plan_renames,
    "remove_additional": objects.remove_additional,
    "fill_default": objects.fill_default,
}

RULES: dict[str, Rule] = {
    record.id: Rule(record.risk, record.description, _FIXERS[record.id]) for record in SCHEMA_RULES
}

_RISKS = MappingProxyType({rule: entry.risk for rule, entry in RULES.items()})


@dataclass(frozen=True)
class SchemaRepairOutcome:
    """What :func:`coerce_to_schema` returns.

    ``value`` is a new object, unless :func:`coerce_to_schema` was told not to copy (the
    input is never mutated); applying ``patch`` in order to the input gives exactly
    ``value``; ``diagnostics`` has one warning per change, then notes.
    """

    value: Any
    patch: tuple[PatchOp, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.patch)


def coerce_to_schema(
    value: Any,
    schema: dict[str, Any] | bool,
    *,
    disabled_rules: frozenset[str] = frozenset(),
    max_risk: Risk | None = None,
    resolver: Callable[[str], Any] | None = None,
    deadline: Deadline | None = None,
    copy: bool = True,
    errors: Sequence[Diagnostic] | None = None,
) -> SchemaRepairOutcome:
    """Repair ``value`` towards ``schema`` with the rules in :data:`RULES`.

    ``disabled_rules`` turns rules off by id (unknown ids are ignored); rules riskier than
    ``max_risk`` do not fire. ``resolver`` maps an absolute URI of an external ``$ref`` to
    the schema it names; local references (``#/$defs/x``, ``#/definitions/x``, ``#``,
    anchors, ``$id``-scoped) need no resolver. ``deadline`` is checked at every node walked;
    when it has passed, :class:`~llmfix.deadline.OutOfTime` is raised. Without ``copy``, the
    outcome's value shares what was not changed with ``value`` (it is ``value`` itself when
    nothing was), for a caller that owns ``value`` and changes neither: a copy of a large
    value costs more than its repair. The patch's values are copies either way.

    ``errors``, when given, are every failure of ``value`` as a plan lists them: a value
    whose one failure is a scalar of the wrong type (or not a member) is then repaired where
    that scalar is (:func:`_repair_in_place`), with the outcome the whole walk gives.
    """
    keep = sw.copy_json if copy else _same
    if not isinstance(schema, dict):  # true accepts everything; nothing can satisfy false
        return SchemaRepairOutcome(keep(value))
    try:
        ctx = RepairContext(
            schema,
            resolver,
            _RISKS,
            disabled_rules,
            max_risk,
            deadline if deadline is not None else Deadline.never(STAGE),
        )
    except Exception as exc:  # a schema jsonschema cannot even load: nothing to repair against
        unusable = codes.REPAIR_SCHEMA_UNUSABLE.at(f"the schema could not be loaded ({exc})")
        return SchemaRepairOutcome(keep(value), diagnostics=(unusable,))
    root = None  # the root's resolver, made by the context when first needed
    ctx.step_allowance = _once(lambda: allowance(value))
    if ctx.is_valid(value, schema, root) is True:
        return SchemaRepairOutcome(keep(value))
    fix = None
    if errors is not None:
        before = (ctx.visits, dict(ctx.notes), ctx.too_costly)
        fix = _repair_in_place(ctx, value, schema, errors)
        if fix is None:  # (the walk starts where it would have, whatever was tried)
            ctx.visits, ctx.notes, ctx.too_costly = before
    if fix is None:
        fix = repair(ctx, value, schema, root, "", 0)
    ops = detach_ops(fix.ops)
    diagnostics = [change_diagnostic(op) for op in ops]
    diagnostics += fix.notes
    diagnostics += ctx.notes.values()
    return SchemaRepairOutcome(keep(fix.value), ops, tuple(diagnostics))


def _same(value: Any) -> Any:
    return value


def _repair_in_place(
    ctx: RepairContext, value: Any, schema: dict[str, Any], errors: Sequence[Diagnostic]
) -> Fix | None:
    """The walk's outcome for a value whose one failure (``errors``: all of them, as a plan
    lists them) is a scalar that is not of the type, or not a member, its schema wants,
    made by repairing that scalar where it is; ``None`` when the walk must decide.

    With that one failure every object and array on the way to the scalar is otherwise
    valid: none misses a required property or holds a forbidden key (each would be an
    error of its own), so no key is renamed, unwrapped, removed or filled there, and once
    the scalar fits, each of them fits and is left as it is. The walk would meet the same
    scalar with the same subschema at the same depth: its repair is the walk's. Taken only
    when it makes the scalar fit (else the objects on the way may be converted), on a path
    through ``properties`` and ``items`` alone, with no ``allOf`` and no object whose schema
    also allows arrays, short and small enough that the walk would not stop at a limit.
    """
    if len(errors) != 1 or not plain_root(schema):
        return None
    error = errors[0]
    pointer = error.pointer
    if error.code not in ("schema.type", "schema.enum", "schema.const") or pointer is None:
        return None
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    if not tokens or len(tokens) > _SURE_DEPTH:
        return None
    path: list[tuple[Any, str | int]] = []  # (container, the key or index followed)
    node: Any = value
    sub: Any = schema
    visits = 0
    for token in tokens:
        if not isinstance(sub, dict) or "allOf" in sub:
            return None
        visits += len(node) + 1 if isinstance(node, (dict, list)) else 0
        if visits > _SURE_VISITS:
            return None
        if isinstance(node, dict):
            types = sw.declared_types(sub)
            props = sub.get("properties")
            if (types is not None and "array" in types) or not isinstance(props, dict):
                return None
            if token not in node or token not in props:
                return None
            path.append((node, token))
            node, sub = node[token], props[token]
        elif isinstance(node, list):
            if not token.isdigit() or int(token) >= len(node):
                return None
            path.append((node, int(token)))
            node, sub = node[int(token)], sub.get("items")
        else:
            return None
    if isinstance(node, (dict, list)) or not isinstance(sub, dict):
        return None
    fix = repair(ctx, node, sub, None, pointer, len(tokens))
    if not fix.ops or ctx.is_valid(fix.value, sub, None) is not True or ctx.notes:
        return None
    repaired = fix.value
    for container, key in reversed(path):
        if isinstance(container, dict):
            changed: Any = dict(container)
        else:
            changed = list(container)
        changed[key] = repaired
        repaired = changed
    return Fix(repaired, fix.ops, fix.notes)


# Deepest error path, and most members on the way, :func:`nothing_to_repair` answers for
# (past them the walk could stop at a limit and say so).
_SURE_DEPTH = 32
_SURE_VISITS = MAX_VISITS // 2


def nothing_to_repair(value: Any, schema: Any, errors: Sequence[Diagnostic]) -> bool:
    """Whether :func:`coerce_to_schema` is sure to give ``value`` back as it is, with no
    diagnostic, told from ``errors`` and the schema's own tables without walking the value.

    ``errors`` must be every failure of ``value`` (a plan that lists all of them listed
    them: the schema then has no reference, condition, ``anyOf``, ``oneOf`` or ``not``).
    ``True`` only when each is a missing required property (the commonest failure, which no
    rule fixes without a default or a stray key), and on the way from the root to each
    object missing one (the only places the walk goes: everything else is valid):

    - no object holds a key its schema neither declares nor requires (which a rename or an
      unwrap could take for the missing one);
    - no missing required property has a ``default`` (which would fill it);
    - no object's schema allows arrays too (the object could be wrapped in one), and none
      has ``allOf`` (each part is walked on its own);
    - the path is short and the objects and arrays on it small enough that the walk would
      not stop at its limits.

    Anything else is ``False``: the walk decides.
    """
    if not isinstance(schema, dict) or not errors or not plain_root(schema):
        return False
    visits = 0
    done: set[str] = set()
    for error in errors:
        pointer = error.pointer
        if error.code != "schema.required" or pointer is None:
            return False
        if pointer in done:
            continue
        done.add(pointer)
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
        if len(tokens) > _SURE_DEPTH:
            return False
        node: Any = value
        sub: Any = schema
        for depth in range(len(tokens) + 1):
            if not isinstance(sub, dict) or "allOf" in sub:
                return False
            props = sub.get("properties")
            props = props if isinstance(props, dict) else {}
            if isinstance(node, dict):
                types = sw.declared_types(sub)
                if types is not None and "array" in types:
                    return False
                raw = sub.get("required")
                required = [r for r in raw if isinstance(r, str)] if isinstance(raw, list) else []
                if any(key not in props and key not in required for key in node):
                    return False
                for name in required:
                    wanted = props.get(name)
                    if name not in node and isinstance(wanted, dict) and "default" in wanted:
                        return False
            elif not isinstance(node, list):
                return False
            visits += len(node) + 1
            if visits > _SURE_VISITS:
                return False
            if depth == len(tokens):
                break
            token = tokens[depth]
            if isinstance(node, dict):
                if token not in node or token not in props:
                    return False
                node, sub = node[token], props[token]
            else:
                if not token.isdigit() or int(token) >= len(node):
                    return False
                node, sub = node[int(token)], sub.get("items")
    return True


def _once(compute: Callable[[], int]) -> Callable[[], int]:
    """``compute``, called at most once (most repairs never need the value counted)."""
    kept: list[int] = []

    def once() -> int:
        if not kept:
            kept.append(compute())
        return kept[0]

    return once


# --- the walk ----------------------------------------------------------------------------------


def repair(
    ctx: RepairContext,
    value: Any,
    schema: Any,
    resolver: Any,
    pointer: str,
    depth: int,
    names: frozenset[str] | None = None,
) -> Fix:
    """Repair ``value`` (found at ``pointer``) against ``schema``."""
    if not isinstance(schema, dict) or ctx.over_limit(depth, pointer):
        return Fix(value)
    # Unknown validity (a part of the schema jsonschema cannot evaluate) is no reason to
    # stop: rules fire only on concrete defects (a wrong type, a missing or forbidden key).
    resolver = ctx.enter(schema, resolver)
    if ctx.is_valid(value, schema, resolver) is True:
        return Fix(value)
    if names is None:
        names = ctx.declared_names(schema, resolver)
    fix = Fix(value)
    ref = schema.get("$ref")
    if isinstance(ref, str):
        fix = fix.then(_follow(ctx, value, ref, resolver, pointer, depth, names))
        if ctx.ref_overrides:
            return fix
    for sub in sw.subschema_list(schema.get("allOf")):
        fix = fix.then(repair(ctx, fix.value, sub, resolver, pointer, depth + 1, names))
    if ctx.conditionals and isinstance(schema.get("if"), (dict, bool)):
        holds = ctx.is_valid(fix.value, schema["if"], resolver) is True
        branch = schema.get("then") if holds else schema.get("else")
        fix = fix.then(repair(ctx, fix.value, branch, resolver, pointer, depth + 1, names))
    fix = fix.then(_local(ctx, fix.value, schema, resolver, pointer, depth, names))
    for keyword in ("anyOf", "oneOf"):
        if sw.subschema_list(schema.get(keyword)):
            fix = fix.then(_union(ctx, fix.value, schema, keyword, resolver, pointer, depth, names))
    return fix


def _follow(
    ctx: RepairContext,
    value: Any,
    ref: str,
    resolver: Any,
    pointer: str,
    depth: int,
    names: frozenset[str],
) -> Fix:
    target = ctx.lookup(ref, resolver)
    if target is None:
        return Fix(value)
    contents, target_resolver = target
    key = (id(contents), pointer)
    if key in ctx.active_refs:  # a $ref cycle that does not descend into the value
        return Fix(value)
    ctx.active_refs.add(key)
    try:
        return repair(ctx, value, contents, target_resolver, pointer, depth + 1, names)
    finally:
        ctx.active_refs.discard(key)


def _union(
    ctx: RepairContext,
    value: Any,
    schema: dict[str, Any],
    keyword: str,
    resolver: Any,
    pointer: str,
    depth: int,
    names: frozenset[str],
) -> Fix:
    """Try every branch of an ``anyOf``/``oneOf``; keep the best one that validates."""
    whole = ctx.keyword_view(schema, keyword)
    branches = sw.subschema_list(schema[keyword])
    if ctx.is_valid(value, whole, resolver) is not False:
        return Fix(value)
    tried: list[tuple[int, Fix, bool]] = []
    for index, branch in enumerate(branches):
        fix = repair(ctx, value, branch, resolver, pointer, depth + 1, names)
        if not fix.ops:
            continue
        # Its own branch first (cheap); oneOf also needs no other branch to match.
        ok = ctx.is_valid(fix.value, branch, resolver) is True
        if ok and keyword == "oneOf":
            ok = ctx.is_valid(fix.value, whole, resolver) is True
        tried.append((index, fix, ok))
    good = [(index, fix) for index, fix, ok in tried if ok]
    if good:
        return _choose(good, keyword, pointer)
    admitting = [i for i, b in enumerate(branches) if ctx.admits(b, value, resolver)]
    if len(admitting) == 1:
        for index, fix, _ in tried:
            if index == admitting[0]:
                return fix
    return Fix(value)


def _choose(options: list[tuple[Any, Fix]], keyword: str, pointer: str) -> Fix:
    """The cheapest option (the first among equals), noting equals that differ."""
    best_label, best = min(options, key=lambda option: option[1].cost)
    rivals = [
        label
        for label, fix in options
        if fix.cost == best.cost
        and label != best_label
        and not sw.json_equal(fix.value, best.value)
    ]
    if not rivals:
        return best
    shown = ", ".join(str(r) for r in rivals)
    if keyword == "type":
        message = f"the value reads equally well as {best_label} and {shown}; kept {best_label}"
    else:
        message = (
            f"{keyword} branches {best_label} and {shown} fit equally well after repair; "
            f"kept branch {best_label}"
        )
    tie = codes.REPAIR_BRANCH_TIE.at(
        message, pointer=pointer, data={"keyword": keyword, "kept": best_label, "tied": rivals}
    )
    return Fix(best.value, best.ops, (*best.notes, tie))


def _local(
    ctx: RepairContext,
    value: Any,
    schema: dict[str, Any],
    resolver: Any,
    pointer: str,
    depth: int,
    names: frozenset[str],
) -> Fix:
    """Repair against ``schema``'s own keywords (type, enum/const, object, array)."""
    types = sw.declared_types(schema)
    view = ctx.local_view(schema)
    fits = types is None or any(ctx.is_type(value, t) for t in types)
    base = Fix(value)
    if fits:
        base = _shape(ctx, value, schema, resolver, pointer, depth, names)
        if types is None or ctx.is_valid(base.value, view, resolver) is not False:
            return base
    if types is None:  # no type to convert to
        return base
    best: dict[str, tuple[Fix, bool]] = {}
    for label, fix in _conversions(ctx, value, types, schema, resolver, pointer, depth, names):
        ok = ctx.is_valid(fix.value, view, resolver) is True
        if label == "unwrap" and not ok:
            continue
        if label not in best or (ok and not best[label][1]):
            best[label] = (fix, ok)
    good = [(label, fix) for label, (fix, ok) in best.items() if ok]
    if good:
        return _choose(good, "type", pointer)
    if fits or not best or sw.enum_members(schema) is not None:
        return base
    # The value has a type the schema does not allow: fixing the type is still progress.
    return min(best.values(), key=lambda option: option[0].cost)[0]


def _conversions(
    ctx: RepairContext,
    value: Any,
    types: list[str],
    schema: dict[str, Any],
    resolver: Any,
    pointer: str,
    depth: int,
    names: frozenset[str],
) -> list[tuple[str, Fix]]:
    """Every reading of ``value`` as another allowed type, each followed through."""
    out: list[tuple[str, Fix]] = []
    for target in types:
        if ctx.is_type(value, target):
            continue
        for new, rule, message in coercers.readings(value, target, schema):
            if not ctx.allowed(rule):
                continue
            op = ctx.replace(pointer, value, new, rule, message)
            fix = Fix(new, (op,)).then(
                _shape(ctx, new, schema, resolver, pointer, depth + 1, names)
            )
            if rule == "wrap_array" and not _first_item_fits(ctx, fix.value, schema, resolver):
                continue
            out.append((target, fix))
    unwrapped = coercers.unwrap_array(value, types)
    # The unwrapped element is repaired one level deeper at the same place, without passing
    # through repair(): [[[...]]] keeps the depth limit and the deadline here.
    if (
        unwrapped is not None
        and ctx.allowed(unwrapped.rule)
        and not ctx.over_limit(depth + 1, pointer, visit=False)
    ):
        inner = unwrapped.value
        op = ctx.replace(pointer, value, inner, unwrapped.rule, unwrapped.message)
        fix = Fix(inner, (op,)).then(
            _local(ctx, inner, schema, resolver, pointer, depth + 1, names)
        )
        out.append(("unwrap", fix))
    return out


def _first_item_fits(ctx: RepairContext, array: Any, schema: dict[str, Any], resolver: Any) -> bool:
    prefix, rest = ctx.item_schemas(schema)
    item_schema = prefix[0] if prefix else rest
    return item_schema is None or ctx.is_valid(array[0], item_schema, resolver) is not False


def _shape(
    ctx: RepairContext,
    value: Any,
    schema: dict[str, Any],
    resolver: Any,
    pointer: str,
    depth: int,
    names: frozenset[str],
) -> Fix:
    """Repair a value whose type fits: its members, its items, or its enum value."""
    if isinstance(value, dict):
        return objects.fix_object(ctx, repair, value, schema, resolver, pointer, depth, names)
    if isinstance(value, list):
        return objects.fix_array(ctx, repair, value, schema, resolver, pointer, depth)
    return coercers.fix_enum(ctx, value, schema, pointer)
