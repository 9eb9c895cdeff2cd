"""The shared context of one schema repair run, and the value a repair step returns.

:class:`RepairContext` is what every coercer and fixer of :mod:`llmfix.schema.repair` asks:
whether a value fits a (sub)schema (answers cached by identity), what a ``$ref`` points at,
which rules are switched on and how risky each is, how far the walk may still go, and the
deadline it must keep. :class:`Fix` is a value after some repairs, with the RFC 6902
operations that produced it and the notes made on the way.

Whether a value fits is answered by the schema's plan (:mod:`llmfix.schema.plan`) for the
subschemas it covers, and by jsonschema, under its step budget, for the rest; the context
makes jsonschema's validator only when a subschema needs it, so a repair the plan answers
whole does not import jsonschema. What depends on the schema alone (its views, the names
each object declares) is kept with the plan, for the next repair against the same schema.

:func:`fixes` marks the function that carries out a rule; ``RULES`` in
:mod:`llmfix.schema.repair` points each rule at it, and a test checks the two agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from types import MappingProxyType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from llmfix import codes
from llmfix.deadline import Deadline, OutOfTime
from llmfix.model import Diagnostic, PatchOp, Risk, build
from llmfix.schema import walk as sw
from llmfix.schema.budget import TooCostly, bounded_class, no_more, search, steps
from llmfix.schema.plan import DIALECTS, MAX_NODES, is_type, plan_for

STAGE = "schema_repair"

# How far the walk descends along one path (value nesting plus schema indirections), and how
# many subschema visits one call may make; past either, the rest is left as it is.
MAX_DEPTH = 64
MAX_VISITS = 20_000

_F = TypeVar("_F", bound=Callable[..., Any])

# rule id → the functions marked as carrying it out (filled by @fixes at import).
FIXERS: dict[str, list[Callable[..., Any]]] = {}


def fixes(*rules: str) -> Callable[[_F], _F]:
    """Mark a function as the one that carries out ``rules``."""

    def mark(function: _F) -> _F:
        for rule in rules:
            FIXERS.setdefault(rule, []).append(function)
        return function

    return mark


class Fix:
    """A value after some repairs, the operations that produced it, and notes made on the way.

    Never changed once made. A plain class with slots, not a dataclass: the walk makes one
    per node it visits, and a frozen dataclass costs several times as much to make."""

    __slots__ = ("notes", "ops", "value")

    def __init__(
        self, value: Any, ops: tuple[PatchOp, ...] = (), notes: tuple[Diagnostic, ...] = ()
    ) -> None:
        self.value = value
        self.ops = ops
        self.notes = notes

    def __repr__(self) -> str:
        return f"Fix(value={self.value!r}, ops={self.ops!r}, notes={self.notes!r})"

    def then(self, other: Fix) -> Fix:
        """``other`` was computed from ``self.value``: chain the two."""
        if not other.ops and not other.notes:
            return self
        return Fix(other.value, self.ops + other.ops, self.notes + other.notes)

    @property
    def cost(self) -> tuple[int, int]:
        """Riskiest change first, then the number of changes (lower is better)."""
        if not self.ops:
            return (-1, 0)
        return (max(op.risk.rank for op in self.ops), len(self.ops))


def change_diagnostic(op: PatchOp) -> Diagnostic:
    """The warning a schema repair's patch operation is (``repair.<its rule>``)."""
    data: dict[str, Any] | None = None
    if op.op == "remove":
        data = {"removed": op.before}
    elif op.op == "move":
        data = {"from": op.from_}
    return codes.get(f"repair.{op.rule}").at(
        op.message, pointer=op.path, rule=op.rule, risk=op.risk, data=data
    )


def detach_ops(ops: tuple[PatchOp, ...]) -> tuple[PatchOp, ...]:
    """``ops`` with their values copied, so that they share nothing with the input or the
    output. One memo for all of them: a subtree several operations hold (each step of an
    unwrapped ``[[[x]]]`` holds the next) is copied once."""
    if not ops:
        return ops
    memo: dict[int, Any] = {}
    return tuple(
        build(
            PatchOp,
            **{
                **op.__dict__,
                "value": sw.copy_json(op.value, memo),
                "before": sw.copy_json(op.before, memo),
                "after": sw.copy_json(op.after, memo),
            },
        )
        for op in ops
    )


_T = TypeVar("_T", bound=dict[Any, Any])


def _bounded(table: _T) -> _T:
    """``table``, emptied first when full: the tables a plan shares between repairs must
    not grow without end on schema objects that come and go (an external resolver's)."""
    if len(table) >= MAX_NODES:
        table.clear()
    return table


class _Dialect:
    """What a repair context takes from its schema's validator class, worked out once per
    class: the bounded class, its referencing specification, an empty registry."""

    def __init__(self, raw_class: Any) -> None:
        import referencing
        import referencing.jsonschema
        from jsonschema import validators

        cls = bounded_class(raw_class)
        self.bounded = cls
        self.specification = referencing.jsonschema.specification_with(
            cls.ID_OF(cls.META_SCHEMA) or "urn:unknown-dialect",
            default=referencing.Specification.OPAQUE,
        )
        self.registry_class: Any = referencing.Registry
        self.empty_registry = self.registry_class()  # immutable: one serves every context
        # (asked of the dialect's own class: the bounded one is a subclass, never one of these)
        self.ref_overrides = raw_class in (
            validators.Draft3Validator,
            validators.Draft4Validator,
            validators.Draft6Validator,
            validators.Draft7Validator,
        )
        self.prefix_items = "prefixItems" in cls.VALIDATORS
        self.conditionals = "if" in cls.VALIDATORS


_DIALECTS: dict[Any, _Dialect] = {}


def plain_root(schema: dict[str, Any]) -> bool:
    """Whether making a validator of ``schema`` cannot fail: no identifier to read, and a
    ``$schema`` that is a string if any."""
    dialect = schema.get("$schema")
    return (
        "$id" not in schema
        and "id" not in schema
        and "$anchor" not in schema
        and (dialect is None or isinstance(dialect, str))
    )


def _draft_of(schema: dict[str, Any]) -> str:
    """The draft jsonschema validates ``schema`` as (what :func:`_validator_class` picks,
    found without importing jsonschema): its ``$schema`` as jsonschema normalises it, and
    2020-12 for no ``$schema``, an unknown one or one that is no URI string."""
    dialect = schema.get("$schema")
    if dialect is None and "$schema" not in schema:
        return "2020-12"
    if not isinstance(dialect, str):
        return "2020-12"
    try:
        uri = urlsplit(dialect).geturl()
    except ValueError:
        return "2020-12"
    return DIALECTS.get(uri, "2020-12")


def _validator_class(schema: dict[str, Any]) -> Any:
    from jsonschema import validators

    try:
        return validators.validator_for(schema, default=validators.Draft202012Validator)
    except Exception:  # a $schema that is not a URI string
        return validators.Draft202012Validator


def _retriever(resolver: Callable[[str], Any], specification: Any) -> Callable[[str], Any]:
    import referencing

    cache: dict[str, Any] = {}

    def retrieve(uri: str) -> Any:
        if uri not in cache:
            cache[uri] = referencing.Resource.from_contents(
                resolver(uri), default_specification=specification
            )
        return cache[uri]

    return retrieve


# (id(risks), rules turned off, max risk) → (risks, the rules on): the same few switches
# serve every repair of a run.
_ENABLED: dict[
    tuple[int, frozenset[str], Risk | None], tuple[Mapping[str, Risk], frozenset[str]]
] = {}


def _enabled(
    risks: Mapping[str, Risk], disabled: Collection[str], max_risk: Risk | None
) -> frozenset[str]:
    """The rules of ``risks`` that are on: not ``disabled``, and no riskier than ``max_risk``."""
    off = frozenset(disabled)
    key = (id(risks), off, max_risk)
    hit = _ENABLED.get(key)
    if hit is not None and hit[0] is risks:
        return hit[1]
    on = frozenset(
        rule
        for rule, risk in risks.items()
        if rule not in off and (max_risk is None or risk.rank <= max_risk.rank)
    )
    if isinstance(risks, MappingProxyType):  # (a read-only table: kept; any other is not)
        if len(_ENABLED) >= 64:
            _ENABLED.clear()
        _ENABLED[key] = (risks, on)
    return on


class RepairContext:
    """One repair run: the schema's validator and resolver, the rule switches, the limits."""

    def __init__(
        self,
        schema: dict[str, Any],
        resolver: Callable[[str], Any] | None,
        risks: Mapping[str, Risk],
        disabled: Collection[str],
        max_risk: Risk | None,
        deadline: Deadline,
    ) -> None:
        label = _draft_of(schema)
        # The schema's plan answers "does this value fit?" for the subschemas it covers,
        # without a validator object; jsonschema answers the rest.
        self.plan = plan_for(schema, label)
        self._resolver = resolver
        self._schema = schema
        self._dialect: _Dialect | None = None
        self._validator: Any = None
        if self.plan is None or not plain_root(schema) or resolver is not None:
            _ = self.validator  # made now: a schema it cannot take is found here
        if self.plan is not None:  # a draft from 6 on: of these only 2020-12 has
            # "prefixItems", and drafts from 7 on have "if"
            self.prefix_items = label == "2020-12"
            self.conditionals = label != "draft-06"
        else:
            self.prefix_items = "prefixItems" in self.dialect.bounded.VALIDATORS
            self.conditionals = "if" in self.dialect.bounded.VALIDATORS
        self.risks = risks
        self.enabled = _enabled(risks, disabled, max_risk)
        # None when there is no limit: then the walk does not read the clock at all.
        self.deadline = deadline if deadline.limited else None
        self.visits = 0
        # Set when a validation spent its step budget: the walk then stops (noted once).
        self.too_costly = False
        # Steps a validation may take past the base (coerce_to_schema sizes it to the value).
        self.step_allowance: Callable[[], int] = no_more
        self.active_refs: set[tuple[int, str]] = set()
        self.notes: dict[str, Diagnostic] = {}
        # Views of the schema's objects: kept with the plan, so that the next repair against
        # the same schema gets the same view objects (which the plan has compiled).
        self._views: dict[int, tuple[dict[str, Any], dict[str, Any]]] = (
            self.plan.views if self.plan is not None else {}
        )
        self._patterns: dict[str, re.Pattern[str] | None] = {}
        self._names: dict[int, tuple[dict[str, Any], frozenset[str]]] = {}
        self._keyword_views: dict[tuple[int, str], tuple[dict[str, Any], dict[str, Any]]] = (
            self.plan.keyword_views if self.plan is not None else {}
        )
        # (id(schema), id(value)) → (schema, value, validity). Values are never mutated, and
        # holding both objects keeps their ids from being reused, so a hit is exact. The
        # resolver is left out of the key: a schema object's base URI is fixed by its place.
        self._validity: dict[tuple[int, int], tuple[Any, Any, bool | None]] = {}

    @property
    def dialect(self) -> _Dialect:
        """What jsonschema's class for the schema's dialect gives (imports jsonschema)."""
        if self._dialect is None:
            raw_class = _validator_class(self._schema)
            dialect = _DIALECTS.get(raw_class)
            if dialect is None:
                dialect = _DIALECTS[raw_class] = _Dialect(raw_class)
            self._dialect = dialect
        return self._dialect

    @property
    def specification(self) -> Any:
        return self.dialect.specification

    @property
    def ref_overrides(self) -> bool:
        """Whether the dialect ignores the siblings of "$ref" (asked only of a schema
        object with a "$ref", which no plan covers)."""
        return self.dialect.ref_overrides

    @property
    def validator(self) -> Any:
        """The jsonschema validator of the schema, made on first use (a repair the plan
        answers whole never makes it, nor imports jsonschema)."""
        if self._validator is None:
            dialect = self.dialect
            # Always an explicit registry: jsonschema's default one fetches remote refs
            # over HTTP.
            registry = (
                dialect.registry_class(retrieve=_retriever(self._resolver, dialect.specification))
                if self._resolver is not None
                else dialect.empty_registry
            )
            self._validator = dialect.bounded(self._schema, registry=registry)
        return self._validator

    @property
    def root_resolver(self) -> Any:
        return self.validator._resolver

    # --- the rules ------------------------------------------------------------------------

    def allowed(self, rule: str) -> bool:
        return rule in self.enabled

    def replace(self, pointer: str, before: Any, after: Any, rule: str, message: str) -> PatchOp:
        """A ``replace`` holding ``before`` and ``after`` themselves, not copies: a copy per
        conversion tried would cost the value's size at every level of a deep value. The
        operations that survive are copied once, at the end (:func:`detach_ops`)."""
        return build(
            PatchOp,
            op="replace",
            path=pointer,
            value=after,
            rule=rule,
            risk=self.risks[rule],
            before=before,
            after=after,
            message=message,
        )

    def over_limit(self, depth: int, pointer: str, *, visit: bool = True) -> bool:
        """Count one node walked; ``True`` past the depth or visit limit (noted once).

        Checks the deadline at every node (raising :class:`~llmfix.deadline.OutOfTime`):
        each node costs a validation, next to which a clock read is nothing. ``visit=False``
        checks the deadline and the depth without counting a node (a step that goes deeper
        at the same place, such as unwrapping a one-element array).
        """
        if self.deadline is not None:
            self.deadline.check()
        if visit:
            self.visits += 1
        if depth <= MAX_DEPTH and self.visits <= MAX_VISITS and not self.too_costly:
            return False
        if "limit" not in self.notes:
            self.notes["limit"] = codes.REPAIR_LIMIT.at(
                f"the value or schema is too deeply nested or too large to repair in full; "
                f"repair stopped at {pointer or 'the root'}",
                pointer=pointer,
            )
        return True

    def fits_untouched(self, value: Any, schema: Any, depth: int) -> bool:
        """Whether :func:`~llmfix.schema.repair.repair` of ``value`` against ``schema`` at
        ``depth`` would give it back unchanged, with no note, because the plan says it
        fits: then the node is counted (and the deadline checked) as that call would, and
        the caller need not make the call. ``False`` asks nothing more: make the call.

        A schema that is no object is never walked (the call returns the value as it is).
        Only a plan's answer is taken (a pure function of the value), and only where the
        call would not stop at a limit, nor change base URI (``$id``)."""
        if not isinstance(schema, dict):
            return True
        plan = self.plan
        if (
            plan is None
            or depth > MAX_DEPTH
            or self.visits >= MAX_VISITS
            or self.too_costly
            or "$id" in schema
            or "id" in schema
        ):
            return False
        check = plan.check(schema)
        if check is None:
            return False
        try:
            if not check(value):
                return False
        except RecursionError:
            return False
        if self.deadline is not None:
            self.deadline.check()
        self.visits += 1
        return True

    # --- the schema side ------------------------------------------------------------------

    def is_valid(self, value: Any, schema: Any, resolver: Any) -> bool | None:
        """Whether ``value`` fits ``schema``; ``None`` when the schema cannot be evaluated."""
        if not isinstance(schema, dict):
            return schema is not False  # true, or not a schema at all
        key = (id(schema), id(value))
        hit = self._validity.get(key)
        if hit is not None and hit[0] is schema and hit[1] is value:
            return hit[2]
        result = False if self._wrong_type(value, schema) else self._check(value, schema, resolver)
        self._validity[key] = (schema, value, result)
        return result

    def _wrong_type(self, value: Any, schema: dict[str, Any]) -> bool:
        """Whether ``schema``'s own ``type`` rules ``value`` out. Asked before jsonschema,
        whose type error writes the value's repr: on a large value that costs its size, at
        every level of a deep one."""
        if self.plan is not None and "$ref" not in schema:
            test = self.plan.type_test(schema)
            return test is not None and not test(value)
        if "$ref" in schema and self.ref_overrides:  # drafts 3-7: "type" is not applied
            return False
        raw = schema.get("type")
        names = [raw] if isinstance(raw, str) else raw
        if not isinstance(names, list) or not all(
            isinstance(name, str) and name in sw.JSON_TYPES for name in names
        ):
            return False  # draft 3 schemas or "any" in "type": left to jsonschema
        return not any(self.is_type(value, name) for name in names)

    def _check(self, value: Any, schema: dict[str, Any], resolver: Any) -> bool | None:
        if self.too_costly:
            return None
        if self.plan is not None:
            check = self.plan.check(schema)
            if check is not None:
                try:
                    return check(value)
                except RecursionError:
                    pass  # jsonschema says what a value too deep for the plan is
        if resolver is None:
            resolver = self.root_resolver
        try:
            with steps(self.step_allowance, self.deadline):
                validator = self.validator.evolve(schema=schema, _resolver=resolver)
                return bool(validator.is_valid(value))
        except OutOfTime:
            raise
        except TooCostly as costly:
            self.too_costly = True
            self.schema_note(str(costly))
            return None
        except RecursionError:
            self.schema_note("validation recursed too deeply: a $ref cycle or a very deep value")
            return None
        except Exception as exc:  # bad regex, unknown type, unresolvable $ref, ...
            self.schema_note(str(exc).splitlines()[0][:160] or type(exc).__name__)
            return None

    def schema_note(self, reason: str) -> None:
        key = f"schema:{reason}"
        if key not in self.notes:
            message = f"part of the schema could not be evaluated ({reason}); it was not used"
            self.notes[key] = codes.REPAIR_SCHEMA_UNUSABLE.at(message)

    def is_type(self, value: Any, name: str) -> bool:
        if self.plan is not None:
            known = is_type(value, name)
            if known is not None:
                return known
        try:
            return bool(self.validator.is_type(value, name))
        except Exception:
            return False

    def enter(self, schema: dict[str, Any], resolver: Any) -> Any:
        """The resolver for ``schema``'s subschemas (an ``$id`` changes the base URI)."""
        if "$id" not in schema and "id" not in schema:
            return resolver
        if resolver is None:  # the root's (None until a reference or an $id needs it)
            resolver = self.root_resolver
        try:
            return resolver.in_subresource(self.specification.create_resource(schema))
        except Exception:
            return resolver

    def lookup(self, ref: str, resolver: Any) -> tuple[Any, Any] | None:
        try:
            if resolver is None:
                resolver = self.root_resolver
            resolved = resolver.lookup(ref)
        except Exception:
            self.schema_note(f"cannot resolve $ref {ref!r}")
            return None
        return resolved.contents, resolved.resolver

    def local_view(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` without its combinators: what the local repair is responsible for."""
        hit = self._views.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        view = {k: v for k, v in schema.items() if k not in sw.COMPOSITE_KEYWORDS}
        if len(view) == len(schema):  # no combinator: the schema is its own local part, and
            view = schema  # a validity found for one is the other's (one check, not two)
        _bounded(self._views)[id(schema)] = (schema, view)
        return view

    def keyword_view(self, schema: dict[str, Any], keyword: str) -> dict[str, Any]:
        """``{keyword: schema[keyword]}``, the same object each time (validity is cached by
        schema identity)."""
        key = (id(schema), keyword)
        hit = self._keyword_views.get(key)
        if hit is not None and hit[0] is schema:
            return hit[1]
        view = {keyword: schema[keyword]}
        _bounded(self._keyword_views)[key] = (schema, view)
        return view

    def pattern(self, pattern: str) -> re.Pattern[str] | None:
        if pattern not in self._patterns:
            try:
                self._patterns[pattern] = re.compile(pattern)
            except (re.error, TypeError):
                self._patterns[pattern] = None
        return self._patterns[pattern]

    def pattern_matches(self, pattern: str, key: str) -> bool:
        """Whether ``pattern`` matches ``key`` (a pattern too costly to run counts as a
        match: the key is then taken as declared, never renamed or removed)."""
        if self.pattern(pattern) is None:
            return False
        try:
            return search(pattern, key)
        except TooCostly:
            return True

    def declared_names(self, schema: dict[str, Any], resolver: Any) -> frozenset[str]:
        """Every property name the schema at one place declares or requires, through its
        references and combinators: such keys are never renamed or unwrapped."""
        hit = self._names.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        shared = self.plan.names if self.plan is not None else None
        if shared is not None:
            hit = shared.get(id(schema))
            if hit is not None and hit[0] is schema:
                return hit[1]
        followed = False
        names: set[str] = set()
        seen: set[int] = set()
        stack: list[tuple[Any, Any, int]] = [(schema, resolver, 0)]
        while stack:
            node, res, hops = stack.pop()
            if not isinstance(node, dict) or id(node) in seen or hops > 8:
                continue
            seen.add(id(node))
            props = node.get("properties")
            if isinstance(props, dict):
                names.update(props)
            required = node.get("required")
            if isinstance(required, list):
                names.update(r for r in required if isinstance(r, str))
            for keyword in ("allOf", "anyOf", "oneOf"):
                stack.extend((sub, res, hops + 1) for sub in sw.subschema_list(node.get(keyword)))
            for keyword in ("then", "else"):
                stack.append((node.get(keyword), res, hops + 1))
            ref = node.get("$ref")
            if isinstance(ref, str):
                followed = True
                target = self.lookup(ref, res)
                if target is not None:
                    stack.append((target[0], target[1], hops + 1))
        found = frozenset(names)
        self._names[id(schema)] = (schema, found)
        if shared is not None and not followed:  # (a lookup may note a reference it lacks)
            _bounded(shared)[id(schema)] = (schema, found)
        return found

    def default_of(self, schema: Any, resolver: Any, hops: int = 0) -> tuple[bool, Any]:
        if not isinstance(schema, dict) or hops > 8:
            return False, None
        if "default" in schema:
            return True, schema["default"]
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self.lookup(ref, resolver)
            if target is not None:
                return self.default_of(target[0], target[1], hops + 1)
        return False, None

    def admits(self, schema: Any, value: Any, resolver: Any, hops: int = 0) -> bool:
        """Whether ``schema``'s declared types let ``value``'s JSON type in at all."""
        if not isinstance(schema, dict) or hops > 8:
            return schema is not False
        types = sw.declared_types(schema)
        if types is not None:
            return any(self.is_type(value, t) for t in types)
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self.lookup(ref, resolver)
            if target is not None and not self.admits(target[0], value, target[1], hops + 1):
                return False
        return all(
            self.admits(sub, value, resolver, hops + 1)
            for sub in sw.subschema_list(schema.get("allOf"))
        )

    def item_schemas(self, schema: dict[str, Any]) -> tuple[list[Any], Any]:
        """(schemas for the leading positions, schema for the rest or None)."""
        items = schema.get("items")
        if isinstance(items, list):  # draft 4–2019 tuple form
            rest = schema.get("additionalItems")
            return sw.subschema_list(items), rest if isinstance(rest, (dict, bool)) else None
        prefix = sw.subschema_list(schema.get("prefixItems")) if self.prefix_items else []
        return prefix, items if isinstance(items, (dict, bool)) else None
