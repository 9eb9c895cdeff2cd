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
  meant (see :func:`llmfix.schema_walk.read_number`); a ``number`` without a maximum leaves
  ``"87%"`` alone.

Not handled (left as they are): ``$dynamicRef``/``$recursiveRef``, ``unevaluatedProperties``,
``dependentSchemas``, ``not``, OpenAPI's ``nullable``.

Patch operations are in application order: a node's own change first (``replace``, the
``move`` of an unwrap), then key renames (``move``), removals, its children's changes (at the
renamed paths), then ``add`` of defaults.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from llmfix import schema_walk as sw
from llmfix.model import Diagnostic, PatchOp, Risk, Severity

STAGE = "schema_repair"

RULES: dict[str, tuple[Risk, str]] = {
    "parse_json_string": (
        Risk.SAFE,
        'JSON object/array sent as a string where one is wanted: "{\\"a\\": 1}" → {"a": 1}',
    ),
    "unwrap_object": (
        Risk.SAFE,
        'object wrapped in one undeclared key holding all required keys: {"result": {...}} → {...}',
    ),
    "wrap_array": (Risk.SAFE, 'single value where an array is wanted: "red" → ["red"]'),
    "unwrap_array": (Risk.SAFE, 'one-element array where its element is wanted: ["red"] → "red"'),
    "coerce_number": (
        Risk.SAFE,
        'number written as a string: "12" → 12, " 1e3 " → 1000.0, "12,111" → 12111',
    ),
    "coerce_percent": (
        Risk.GUESS,
        'percentage on the scale the maximum implies: "87%" → 87 (maximum 100), 0.87 (maximum 1)',
    ),
    "coerce_fraction": (
        Risk.GUESS,
        'fraction: "7/10" → 7 when the maximum is 10, "1/5" → 0.2 when it is at most 1 or absent',
    ),
    "coerce_integer": (
        Risk.SAFE,
        'integer from an integral number or numeral: 12.0 → 12, "12" → 12',
    ),
    "coerce_string": (Risk.SAFE, 'string from a number or boolean: 12 → "12", true → "true"'),
    "coerce_boolean": (
        Risk.SAFE,
        'boolean from "true"/"false"/"yes"/"no"/"1"/"0" (any case) or 1/0: "Yes" → true',
    ),
    "coerce_null": (
        Risk.SAFE,
        'null from "null"/"None"/"nil"/"undefined"/"N/A"/"" where null is allowed: "N/A" → null',
    ),
    "enum_case": (
        Risk.SAFE,
        'enum/const value equal after folding case and punctuation: "In Progress" → "in_progress"',
    ),
    "enum_nearest": (
        Risk.GUESS,
        'enum/const value nearest by edit distance (≥ 0.8 similar, unique): "complet" → "complete"',
    ),
    "rename_key_case": (
        Risk.SAFE,
        'key equal to a missing declared key after folding case/_/-: "firstName" → "first_name"',
    ),
    "rename_key_fuzzy": (
        Risk.GUESS,
        'near-miss of a missing declared key (≥ 0.8 similar, unique): "reasonning" → "reasoning"',
    ),
    "remove_additional": (
        Risk.SAFE,
        "property that additionalProperties: false forbids, removed (value kept in the diagnostic)",
    ),
    "fill_default": (Risk.SAFE, 'missing required property with a default filled: {} → {"n": 1}'),
}

# How far the walk descends along one path (value nesting plus schema indirections), and how
# many subschema visits one call may make; past either, the rest is left as it is.
_MAX_DEPTH = 64
_MAX_VISITS = 20_000


@dataclass(frozen=True)
class SchemaRepairOutcome:
    """What :func:`coerce_to_schema` returns.

    ``value`` is a new object (the input is never mutated); applying ``patch`` in order to the
    input gives exactly ``value``; ``diagnostics`` has one warning per change, then notes.
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
) -> SchemaRepairOutcome:
    """Repair ``value`` towards ``schema`` with the rules in :data:`RULES`.

    ``disabled_rules`` turns rules off by id (unknown ids are ignored); rules riskier than
    ``max_risk`` do not fire. ``resolver`` maps an absolute URI of an external ``$ref`` to
    the schema it names; local references (``#/$defs/x``, ``#/definitions/x``, ``#``,
    anchors, ``$id``-scoped) need no resolver.
    """
    if not isinstance(schema, dict):  # true accepts everything; nothing can satisfy false
        return SchemaRepairOutcome(sw.copy_json(value))
    try:
        walker = _Walker(schema, resolver, disabled_rules, max_risk)
    except Exception as exc:  # a schema jsonschema cannot even load: nothing to repair against
        note = _note("repair.schema_unusable", f"the schema could not be loaded ({exc})", None)
        return SchemaRepairOutcome(sw.copy_json(value), diagnostics=(note,))
    root = walker.root_resolver
    if walker.is_valid(value, schema, root) is True:
        return SchemaRepairOutcome(sw.copy_json(value))
    fix = walker.repair(value, schema, root, "", 0)
    diagnostics = [_change_diagnostic(op) for op in fix.ops]
    diagnostics += fix.notes
    diagnostics += walker.notes.values()
    return SchemaRepairOutcome(sw.copy_json(fix.value), fix.ops, tuple(diagnostics))


# --- internals -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Fix:
    """A value after some repairs, the operations that produced it, and notes made on the way."""

    value: Any
    ops: tuple[PatchOp, ...] = ()
    notes: tuple[Diagnostic, ...] = ()

    def then(self, other: _Fix) -> _Fix:
        """``other`` was computed from ``self.value``: chain the two."""
        if not other.ops and not other.notes:
            return self
        return _Fix(other.value, self.ops + other.ops, self.notes + other.notes)

    @property
    def cost(self) -> tuple[int, int]:
        """Riskiest change first, then the number of changes (lower is better)."""
        if not self.ops:
            return (-1, 0)
        return (max(op.risk.rank for op in self.ops), len(self.ops))


def _note(code: str, message: str, pointer: str | None, **data: Any) -> Diagnostic:
    return Diagnostic(
        code=code,
        severity=Severity.INFO,
        stage=STAGE,
        message=message,
        pointer=pointer,
        data=data or None,
    )


def _change_diagnostic(op: PatchOp) -> Diagnostic:
    data: dict[str, Any] | None = None
    if op.op == "remove":
        data = {"removed": op.before}
    elif op.op == "move":
        data = {"from": op.from_}
    return Diagnostic(
        code=f"repair.{op.rule}",
        severity=Severity.WARNING,
        stage=STAGE,
        message=op.message,
        pointer=op.path,
        rule=op.rule,
        risk=op.risk,
        data=data,
    )


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


class _Walker:
    """One repair run: the schema's validator and resolver, the rule switches, the limits."""

    def __init__(
        self,
        schema: dict[str, Any],
        resolver: Callable[[str], Any] | None,
        disabled: Collection[str],
        max_risk: Risk | None,
    ) -> None:
        import referencing
        import referencing.jsonschema
        from jsonschema import validators

        cls = _validator_class(schema)
        self.specification = referencing.jsonschema.specification_with(
            cls.ID_OF(cls.META_SCHEMA) or "urn:unknown-dialect",
            default=referencing.Specification.OPAQUE,
        )
        # Always an explicit registry: jsonschema's default one fetches remote refs over HTTP.
        registry_class: Any = referencing.Registry
        registry = (
            registry_class(retrieve=_retriever(resolver, self.specification))
            if resolver is not None
            else registry_class()
        )
        self.validator: Any = cls(schema, registry=registry)
        self.root_resolver: Any = self.validator._resolver
        # Drafts 3–7 ignore the siblings of "$ref"; only 2020-12 has "prefixItems".
        self.ref_overrides = cls in (
            validators.Draft3Validator,
            validators.Draft4Validator,
            validators.Draft6Validator,
            validators.Draft7Validator,
        )
        self.prefix_items = "prefixItems" in cls.VALIDATORS
        self.conditionals = "if" in cls.VALIDATORS
        self.enabled = {
            rule
            for rule, (risk, _) in RULES.items()
            if rule not in disabled and (max_risk is None or risk.rank <= max_risk.rank)
        }
        self.visits = 0
        self.active_refs: set[tuple[int, str]] = set()
        self.notes: dict[str, Diagnostic] = {}
        self._views: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._patterns: dict[str, re.Pattern[str] | None] = {}
        self._names: dict[int, tuple[dict[str, Any], frozenset[str]]] = {}
        self._keyword_views: dict[tuple[int, str], tuple[dict[str, Any], dict[str, Any]]] = {}
        # (id(schema), id(value)) → (schema, value, validity). Values are never mutated, and
        # holding both objects keeps their ids from being reused, so a hit is exact. The
        # resolver is left out of the key: a schema object's base URI is fixed by its place.
        self._validity: dict[tuple[int, int], tuple[Any, Any, bool | None]] = {}

    # --- the schema side ---------------------------------------------------------------------

    def is_valid(self, value: Any, schema: Any, resolver: Any) -> bool | None:
        """Whether ``value`` fits ``schema``; ``None`` when the schema cannot be evaluated."""
        if not isinstance(schema, dict):
            return schema is not False  # true, or not a schema at all
        key = (id(schema), id(value))
        hit = self._validity.get(key)
        if hit is not None and hit[0] is schema and hit[1] is value:
            return hit[2]
        result = self._check(value, schema, resolver)
        self._validity[key] = (schema, value, result)
        return result

    def _check(self, value: Any, schema: dict[str, Any], resolver: Any) -> bool | None:
        try:
            return bool(self.validator.evolve(schema=schema, _resolver=resolver).is_valid(value))
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
            self.notes[key] = _note("repair.schema_unusable", message, None)

    def is_type(self, value: Any, name: str) -> bool:
        try:
            return bool(self.validator.is_type(value, name))
        except Exception:
            return False

    def enter(self, schema: dict[str, Any], resolver: Any) -> Any:
        """The resolver for ``schema``'s subschemas (an ``$id`` changes the base URI)."""
        if "$id" not in schema and "id" not in schema:
            return resolver
        try:
            return resolver.in_subresource(self.specification.create_resource(schema))
        except Exception:
            return resolver

    def lookup(self, ref: str, resolver: Any) -> tuple[Any, Any] | None:
        try:
            resolved = resolver.lookup(ref)
        except Exception:
            self.schema_note(f"cannot resolve $ref {ref!r}")
            return None
        return resolved.contents, resolved.resolver

    def local_view(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` without its combinators: what :meth:`local` is responsible for."""
        hit = self._views.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        view = {k: v for k, v in schema.items() if k not in sw.COMPOSITE_KEYWORDS}
        self._views[id(schema)] = (schema, view)
        return view

    def keyword_view(self, schema: dict[str, Any], keyword: str) -> dict[str, Any]:
        """``{keyword: schema[keyword]}``, the same object each time (validity is cached by
        schema identity)."""
        key = (id(schema), keyword)
        hit = self._keyword_views.get(key)
        if hit is not None and hit[0] is schema:
            return hit[1]
        view = {keyword: schema[keyword]}
        self._keyword_views[key] = (schema, view)
        return view

    def pattern(self, pattern: str) -> re.Pattern[str] | None:
        if pattern not in self._patterns:
            try:
                self._patterns[pattern] = re.compile(pattern)
            except (re.error, TypeError):
                self._patterns[pattern] = None
        return self._patterns[pattern]

    def pattern_matches(self, pattern: str, key: str) -> bool:
        compiled = self.pattern(pattern)
        return compiled is not None and compiled.search(key) is not None

    def declared_names(self, schema: dict[str, Any], resolver: Any) -> frozenset[str]:
        """Every property name the schema at one place declares or requires, through its
        references and combinators: such keys are never renamed or unwrapped."""
        hit = self._names.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
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
                target = self.lookup(ref, res)
                if target is not None:
                    stack.append((target[0], target[1], hops + 1))
        found = frozenset(names)
        self._names[id(schema)] = (schema, found)
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

    # --- patch operations ----------------------------------------------------------------------

    def allowed(self, rule: str) -> bool:
        return rule in self.enabled

    @staticmethod
    def replace(pointer: str, before: Any, after: Any, rule: str, message: str) -> PatchOp:
        return PatchOp(
            op="replace",
            path=pointer,
            value=sw.copy_json(after),
            rule=rule,
            risk=RULES[rule][0],
            before=sw.copy_json(before),
            after=sw.copy_json(after),
            message=message,
        )

    # --- the walk --------------------------------------------------------------------------------

    def repair(
        self,
        value: Any,
        schema: Any,
        resolver: Any,
        pointer: str,
        depth: int,
        names: frozenset[str] | None = None,
    ) -> _Fix:
        """Repair ``value`` (found at ``pointer``) against ``schema``."""
        keep = _Fix(value)
        if not isinstance(schema, dict) or self.over_limit(depth, pointer):
            return keep
        # Unknown validity (a part of the schema jsonschema cannot evaluate) is no reason to
        # stop: rules fire only on concrete defects (a wrong type, a missing or forbidden key).
        resolver = self.enter(schema, resolver)
        if self.is_valid(value, schema, resolver) is True:
            return keep
        if names is None:
            names = self.declared_names(schema, resolver)
        fix = keep
        ref = schema.get("$ref")
        if isinstance(ref, str):
            fix = fix.then(self.follow(value, ref, resolver, pointer, depth, names))
            if self.ref_overrides:
                return fix
        for sub in sw.subschema_list(schema.get("allOf")):
            fix = fix.then(self.repair(fix.value, sub, resolver, pointer, depth + 1, names))
        if self.conditionals and isinstance(schema.get("if"), (dict, bool)):
            holds = self.is_valid(fix.value, schema["if"], resolver) is True
            branch = schema.get("then") if holds else schema.get("else")
            fix = fix.then(self.repair(fix.value, branch, resolver, pointer, depth + 1, names))
        fix = fix.then(self.local(fix.value, schema, resolver, pointer, depth, names))
        for keyword in ("anyOf", "oneOf"):
            if sw.subschema_list(schema.get(keyword)):
                fix = fix.then(
                    self.union(fix.value, schema, keyword, resolver, pointer, depth, names)
                )
        return fix

    def over_limit(self, depth: int, pointer: str) -> bool:
        self.visits += 1
        if depth <= _MAX_DEPTH and self.visits <= _MAX_VISITS:
            return False
        if "limit" not in self.notes:
            self.notes["limit"] = _note(
                "repair.limit",
                f"the value or schema is too deeply nested or too large to repair in full; "
                f"repair stopped at {pointer or 'the root'}",
                pointer,
            )
        return True

    def follow(
        self,
        value: Any,
        ref: str,
        resolver: Any,
        pointer: str,
        depth: int,
        names: frozenset[str],
    ) -> _Fix:
        target = self.lookup(ref, resolver)
        if target is None:
            return _Fix(value)
        contents, target_resolver = target
        key = (id(contents), pointer)
        if key in self.active_refs:  # a $ref cycle that does not descend into the value
            return _Fix(value)
        self.active_refs.add(key)
        try:
            return self.repair(value, contents, target_resolver, pointer, depth + 1, names)
        finally:
            self.active_refs.discard(key)

    def union(
        self,
        value: Any,
        schema: dict[str, Any],
        keyword: str,
        resolver: Any,
        pointer: str,
        depth: int,
        names: frozenset[str],
    ) -> _Fix:
        """Try every branch of an ``anyOf``/``oneOf``; keep the best one that validates."""
        whole = self.keyword_view(schema, keyword)
        branches = sw.subschema_list(schema[keyword])
        if self.is_valid(value, whole, resolver) is not False:
            return _Fix(value)
        tried: list[tuple[int, _Fix, bool]] = []
        for index, branch in enumerate(branches):
            fix = self.repair(value, branch, resolver, pointer, depth + 1, names)
            if not fix.ops:
                continue
            # Its own branch first (cheap); oneOf also needs no other branch to match.
            ok = self.is_valid(fix.value, branch, resolver) is True
            if ok and keyword == "oneOf":
                ok = self.is_valid(fix.value, whole, resolver) is True
            tried.append((index, fix, ok))
        good = [(index, fix) for index, fix, ok in tried if ok]
        if good:
            return self.choose(good, keyword, pointer)
        admitting = [i for i, b in enumerate(branches) if self.admits(b, value, resolver)]
        if len(admitting) == 1:
            for index, fix, _ in tried:
                if index == admitting[0]:
                    return fix
        return _Fix(value)

    def choose(self, options: list[tuple[Any, _Fix]], keyword: str, pointer: str) -> _Fix:
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
        note = _note(
            "repair.branch_tie",
            message,
            pointer,
            keyword=keyword,
            kept=best_label,
            tied=rivals,
        )
        return _Fix(best.value, best.ops, (*best.notes, note))

    def local(
        self,
        value: Any,
        schema: dict[str, Any],
        resolver: Any,
        pointer: str,
        depth: int,
        names: frozenset[str],
    ) -> _Fix:
        """Repair against ``schema``'s own keywords (type, enum/const, object, array)."""
        types = sw.declared_types(schema)
        view = self.local_view(schema)
        fits = types is None or any(self.is_type(value, t) for t in types)
        base = _Fix(value)
        if fits:
            base = self.shape(value, schema, resolver, pointer, depth, names)
            if types is None or self.is_valid(base.value, view, resolver) is not False:
                return base
        if types is None:  # no type to convert to
            return base
        best: dict[str, tuple[_Fix, bool]] = {}
        for label, fix in self.conversions(value, types, schema, resolver, pointer, depth, names):
            ok = self.is_valid(fix.value, view, resolver) is True
            if label == "unwrap" and not ok:
                continue
            if label not in best or (ok and not best[label][1]):
                best[label] = (fix, ok)
        good = [(label, fix) for label, (fix, ok) in best.items() if ok]
        if good:
            return self.choose(good, "type", pointer)
        if fits or not best or sw.enum_members(schema) is not None:
            return base
        # The value has a type the schema does not allow: fixing the type is still progress.
        return min(best.values(), key=lambda option: option[0].cost)[0]

    def conversions(
        self,
        value: Any,
        types: list[str],
        schema: dict[str, Any],
        resolver: Any,
        pointer: str,
        depth: int,
        names: frozenset[str],
    ) -> list[tuple[str, _Fix]]:
        """Every reading of ``value`` as another allowed type, each followed through."""
        out: list[tuple[str, _Fix]] = []
        for target in types:
            if self.is_type(value, target):
                continue
            for new, rule, message in self.readings(value, target, schema):
                if not self.allowed(rule):
                    continue
                op = self.replace(pointer, value, new, rule, message)
                fix = _Fix(new, (op,)).then(
                    self.shape(new, schema, resolver, pointer, depth + 1, names)
                )
                if rule == "wrap_array" and not self.first_item_fits(fix.value, schema, resolver):
                    continue
                out.append((target, fix))
        if (
            isinstance(value, list)
            and len(value) == 1
            and "array" not in types
            and self.allowed("unwrap_array")
        ):
            inner = value[0]
            message = "took the only element out of the one-element array"
            op = self.replace(pointer, value, inner, "unwrap_array", message)
            fix = _Fix(inner, (op,)).then(
                self.local(inner, schema, resolver, pointer, depth + 1, names)
            )
            out.append(("unwrap", fix))
        return out

    def first_item_fits(self, array: Any, schema: dict[str, Any], resolver: Any) -> bool:
        prefix, rest = self.item_schemas(schema)
        item_schema = prefix[0] if prefix else rest
        return item_schema is None or self.is_valid(array[0], item_schema, resolver) is not False

    def readings(
        self, value: Any, target: str, schema: dict[str, Any]
    ) -> list[tuple[Any, str, str]]:
        """Ways to read ``value`` as JSON type ``target``: (new value, rule, message)."""
        shown = sw.show(value)
        if target in ("integer", "number"):
            integer = target == "integer"
            if integer and isinstance(value, float) and value.is_integer():
                return [(int(value), "coerce_integer", f"read {shown} as the integer {int(value)}")]
            if isinstance(value, str):
                reading = sw.read_number(value, integer=integer, upper=sw.upper_bound(schema))
                if reading is not None:
                    number, rule, how = reading
                    message = f"read the string {shown} as the {target} {number}"
                    return [(number, rule, f"{message} ({how})" if how else message)]
            return []
        if target == "string" and (sw.is_number(value) or isinstance(value, bool)):
            text = sw.number_text(value) if sw.is_number(value) else ("true" if value else "false")
            return [(text, "coerce_string", f"wrote {shown} as the string {sw.show(text)}")]
        if target == "boolean":
            flag = sw.read_boolean(value)
            if flag is None:
                return []
            word = "true" if flag else "false"
            return [(flag, "coerce_boolean", f"read {shown} as {word}")]
        if target == "null":
            return (
                [(None, "coerce_null", f"read {shown} as null")] if sw.is_null_word(value) else []
            )
        if target in ("object", "array") and isinstance(value, str):
            inner = sw.read_json_container(value)
            wanted = dict if target == "object" else list
            if isinstance(inner, wanted):
                message = f"parsed the JSON {target} inside the string"
                out: list[tuple[Any, str, str]] = [(inner, "parse_json_string", message)]
                return out + self.wrapping(value, target)
        return self.wrapping(value, target)

    @staticmethod
    def wrapping(value: Any, target: str) -> list[tuple[Any, str, str]]:
        if target != "array" or value is None or isinstance(value, list):
            return []
        if isinstance(value, str) and not value.strip():
            return []
        return [([value], "wrap_array", "wrapped the single value in an array")]

    def shape(
        self,
        value: Any,
        schema: dict[str, Any],
        resolver: Any,
        pointer: str,
        depth: int,
        names: frozenset[str],
    ) -> _Fix:
        """Repair a value whose type fits: its members, its items, or its enum value."""
        if isinstance(value, dict):
            return self.object(value, schema, resolver, pointer, depth, names)
        if isinstance(value, list):
            return self.array(value, schema, resolver, pointer, depth)
        return self.enum_value(value, schema, pointer)

    def enum_value(self, value: Any, schema: dict[str, Any], pointer: str) -> _Fix:
        members = sw.enum_members(schema)
        if (
            members is None
            or not isinstance(value, str)
            or any(sw.json_equal(value, m) for m in members)
        ):
            return _Fix(value)
        strings = [m for m in members if isinstance(m, str)]
        for rule, find in (
            ("enum_case", sw.unique_fold_match),
            ("enum_nearest", sw.unique_nearest),
        ):
            if not self.allowed(rule):
                continue
            match = find(value, strings)
            if match is not None:
                how = "the allowed value" if rule == "enum_case" else "the nearest allowed value"
                message = f"matched {sw.show(value)} to {how} {sw.show(match)}"
                return _Fix(match, (self.replace(pointer, value, match, rule, message),))
        return _Fix(value)

    def array(
        self, value: list[Any], schema: dict[str, Any], resolver: Any, pointer: str, depth: int
    ) -> _Fix:
        prefix, rest = self.item_schemas(schema)
        if not prefix and rest is None:
            return _Fix(value)
        items = value
        ops: list[PatchOp] = []
        notes: list[Diagnostic] = []
        for index, item in enumerate(value):
            item_schema = prefix[index] if index < len(prefix) else rest
            child = self.repair(
                item, item_schema, resolver, sw.child_pointer(pointer, index), depth + 1
            )
            if child.ops or child.notes:
                if items is value:
                    items = list(value)
                items[index] = child.value
                ops.extend(child.ops)
                notes.extend(child.notes)
        return _Fix(items, tuple(ops), tuple(notes))

    def object(
        self,
        value: dict[str, Any],
        schema: dict[str, Any],
        resolver: Any,
        pointer: str,
        depth: int,
        names: frozenset[str],
    ) -> _Fix:
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        patterns = schema.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        extra = schema.get("additionalProperties", True)
        required_raw = schema.get("required")
        required = (
            [r for r in required_raw if isinstance(r, str)]
            if isinstance(required_raw, list)
            else []
        )

        # A pattern Python cannot compile (ECMA-only syntax) might match any key: then no key
        # is treated as undeclared, so none is renamed, unwrapped or removed.
        patterns_usable = all(self.pattern(p) is not None for p in patterns)

        def declared(key: str) -> bool:
            if key in props or not patterns_usable:
                return True
            return any(self.pattern_matches(p, key) for p in patterns)

        unwrapped = self.unwrap_object(value, required, names, declared, pointer)
        if unwrapped is not None:
            inner = self.object(unwrapped.value, schema, resolver, pointer, depth + 1, names)
            return unwrapped.then(inner)

        ops: list[PatchOp] = []
        notes: list[Diagnostic] = []
        current = value
        renames = self.plan_renames(value, props, required, extra is False, names, declared)
        if renames:
            current = {renames.get(k, (k, ""))[0]: v for k, v in value.items()}
            for source, (target, rule) in renames.items():
                ops.append(
                    PatchOp(
                        op="move",
                        path=sw.child_pointer(pointer, target),
                        from_=sw.child_pointer(pointer, source),
                        rule=rule,
                        risk=RULES[rule][0],
                        before=source,
                        after=target,
                        message=f"renamed key {sw.show(source)} to {sw.show(target)}",
                    )
                )
        if extra is False and self.allowed("remove_additional"):
            kept = {k: v for k, v in current.items() if declared(k)}
            if len(kept) != len(current):
                for key, removed in current.items():
                    if key not in kept:
                        ops.append(self.removal(pointer, key, removed))
                current = kept

        changed: dict[str, Any] | None = None
        for key, item in current.items():
            subschemas = [props[key]] if key in props else []
            subschemas += [s for p, s in patterns.items() if self.pattern_matches(p, key)]
            if not subschemas and isinstance(extra, dict):
                subschemas = [extra]
            child_pointer = sw.child_pointer(pointer, key)
            child = _Fix(item)
            for subschema in subschemas:
                child = child.then(
                    self.repair(child.value, subschema, resolver, child_pointer, depth + 1)
                )
            if child.ops or child.notes:
                if changed is None:
                    changed = dict(current)
                changed[key] = child.value
                ops.extend(child.ops)
                notes.extend(child.notes)
        if changed is not None:
            current = changed

        if self.allowed("fill_default"):
            for key in required:
                if key in current or key not in props:
                    continue
                found, default = self.default_of(props[key], resolver)
                if not found:
                    continue
                current = {**current, key: sw.copy_json(default)}
                ops.append(
                    PatchOp(
                        op="add",
                        path=sw.child_pointer(pointer, key),
                        value=sw.copy_json(default),
                        rule="fill_default",
                        risk=RULES["fill_default"][0],
                        after=sw.copy_json(default),
                        message=f"filled the missing required {sw.show(key)} with its default "
                        f"{sw.show(default)}",
                    )
                )
        return _Fix(current, tuple(ops), tuple(notes))

    def removal(self, pointer: str, key: str, removed: Any) -> PatchOp:
        return PatchOp(
            op="remove",
            path=sw.child_pointer(pointer, key),
            rule="remove_additional",
            risk=RULES["remove_additional"][0],
            before=sw.copy_json(removed),
            message=f"removed {sw.show(key)}, which the schema does not allow "
            f"(additionalProperties is false); its value was {sw.show(removed)}",
        )

    def unwrap_object(
        self,
        value: dict[str, Any],
        required: list[str],
        names: frozenset[str],
        declared: Callable[[str], bool],
        pointer: str,
    ) -> _Fix | None:
        """``{"result": {...}}`` → ``{...}`` when only the inner object has the required keys
        (spelt exactly, or so that the key renaming rules will match them)."""
        if len(value) != 1 or not required or not self.allowed("unwrap_object"):
            return None
        ((key, inner),) = value.items()
        if not isinstance(inner, dict) or key in names or declared(key):
            return None
        if not all(self.finds_key(r, inner) for r in required):
            return None
        op = PatchOp(
            op="move",
            path=pointer,
            from_=sw.child_pointer(pointer, key),
            rule="unwrap_object",
            risk=RULES["unwrap_object"][0],
            before=key,
            message=f"unwrapped the object from its single key {sw.show(key)}",
        )
        return _Fix(inner, (op,))

    def finds_key(self, name: str, value: Mapping[str, Any]) -> bool:
        """Whether ``value`` has key ``name``, or one the rename rules would turn into it."""
        if name in value:
            return True
        if self.allowed("rename_key_case") and sw.unique_fold_match(name, list(value)):
            return True
        return self.allowed("rename_key_fuzzy") and sw.unique_nearest(name, list(value)) is not None

    def plan_renames(
        self,
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
        if self.allowed("rename_key_case"):
            for target in targets:
                source = sw.unique_fold_match(target, sources)
                if (
                    source is not None
                    and source not in plan
                    and sw.unique_fold_match(source, targets) == target
                ):
                    plan[source] = (target, "rename_key_case")
        if self.allowed("rename_key_fuzzy"):
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
