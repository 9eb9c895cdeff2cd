"""A schema compiled into a plan: checks that answer "does this value fit this subschema?"
and list what is wrong, for the common keywords, without jsonschema's validator objects.

Schema repair asks whether a value fits a subschema at every node it walks, and the
validate stage lists the errors of a value that failed; asked of jsonschema, each answer
builds validator objects (``evolve``) and walks the keywords in pure Python with a step
counter, which made a missing property cost 150 times what detecting it costs. A plan
compiles each subschema once into a closure over its tables (required names, declared
properties, enum members, compiled patterns) and answers from them.

A plan covers only what it can answer exactly as jsonschema does: drafts 6, 7, 2019-09
and 2020-12, and a subschema made of ``type``, ``enum``, ``const``, ``properties``,
``required``, ``additionalProperties`` (without ``patternProperties``), ``items`` (one
schema), ``prefixItems`` absent, the length, size and range bounds, ``pattern`` (one
:mod:`re` cannot backtrack on without end), ``allOf``/``anyOf``/``oneOf``/``not``, and
annotations. Anything else (``$ref``, ``$id``, ``if``, ``multipleOf``, ``uniqueItems``,
unknown keywords, over :data:`MAX_KEYWORDS` keywords) has no plan, and the caller asks
jsonschema as before. ``tests/test_schema_plan.py`` holds plans to jsonschema's verdicts
and error lists over the schema corpora.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from llmfix.schema.budget import pattern_is_risky

__all__ = [
    "MAX_KEYWORDS",
    "MAX_NODES",
    "PLAN_DRAFTS",
    "Plan",
    "PlanError",
    "equal",
    "is_type",
    "plan_for",
]

# Drafts whose keywords a plan reads alike (draft 4 and 3 differ in "integer", the
# exclusive bounds and "required").
PLAN_DRAFTS = frozenset({"draft-06", "draft-07", "2019-09", "2020-12"})

# Keywords one subschema tree may hold (counting its subschemas'): jsonschema's step budget
# allows 200 keywords per JSON value past its base, so a plan within this never takes a
# value jsonschema would have stopped on.
MAX_KEYWORDS = 200

# Subschemas one plan keeps compiled.
MAX_NODES = 4096

_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")

# Keywords that change nothing a validation decides (no format checker runs).
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
        "contentMediaType",
        "contentEncoding",
        "$defs",
        "definitions",
    }
)

# jsonschema's meta-schema URIs, as it normalises them, and their drafts.
DIALECTS = {
    "http://json-schema.org/draft-03/schema": "draft-03",
    "http://json-schema.org/draft-04/schema": "draft-04",
    "http://json-schema.org/draft-06/schema": "draft-06",
    "http://json-schema.org/draft-07/schema": "draft-07",
    "https://json-schema.org/draft/2019-09/schema": "2019-09",
    "https://json-schema.org/draft/2020-12/schema": "2020-12",
}


def _same_dialect(value: Any, draft: str) -> bool:
    """Whether a subschema's ``$schema`` keeps jsonschema on ``draft`` (it names that draft,
    or a URI jsonschema does not know, which leaves the class as it is)."""
    if not isinstance(value, str):
        return False
    try:
        uri = urlsplit(value).geturl()
    except ValueError:
        return False
    return DIALECTS.get(uri, draft) == draft


Check = Callable[[Any], bool]


def is_type(value: Any, name: str) -> bool | None:
    """Whether ``value`` is of the JSON type ``name`` (drafts 6 and later); ``None`` for a
    name that is no JSON type."""
    return _is_type(value, name) if name in _TYPES else None


def _number_check(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _integer_check(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


# One test per JSON type, as jsonschema's type checker for drafts 6 and later has it.
_TYPE_CHECKS: dict[str, Check] = {
    "string": lambda value: isinstance(value, str),
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "number": _number_check,
    "integer": _integer_check,
}


def _is_type(value: Any, name: str) -> bool:
    """jsonschema's type test for drafts 6 and later."""
    if name == "string":
        return isinstance(value, str)
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if name == "number":
        return isinstance(value, (int, float))
    # integer
    return isinstance(value, int) or (isinstance(value, float) and value.is_integer())


def equal(one: Any, two: Any) -> bool:
    """JSON equality as jsonschema's ``enum`` and ``const`` mean it: ``true`` is not ``1``,
    ``1.0`` is ``1``, containers compare item by item."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, (list, tuple)) and isinstance(two, (list, tuple)):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return len(one) == len(two) and all(k in two and equal(v, two[k]) for k, v in one.items())
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    return bool(one == two)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class _Unsupported(Exception):
    """A subschema a plan does not cover."""


class PlanError:
    """One failure found by a plan, with the attributes :mod:`llmfix.schema.explain` reads
    from a jsonschema ``ValidationError`` (and the same values)."""

    __slots__ = (
        "absolute_path",
        "absolute_schema_path",
        "context",
        "instance",
        "message",
        "path",
        "schema",
        "validator",
        "validator_value",
    )

    def __init__(
        self,
        keyword: str,
        keyword_value: Any,
        instance: Any,
        schema: Any,
        path: tuple[str | int, ...],
        schema_path: tuple[str | int, ...],
        message: str = "",
    ) -> None:
        self.validator = keyword
        self.validator_value = keyword_value
        self.instance = instance
        self.schema = schema
        self.path = self.absolute_path = path
        self.absolute_schema_path = schema_path
        self.message = message
        self.context: list[Any] = []


# A node's error lister: (value, path, schema path) → the failures, in jsonschema's order.
Lister = Callable[[Any, tuple[str | int, ...], tuple[str | int, ...]], Iterator[PlanError]]


class _Node:
    """One compiled subschema: its check, and its error lister (``None`` when the errors
    of some keyword in it are left to jsonschema). ``failures`` is the lister for a value
    the check has failed already (the same records, without checking it again)."""

    __slots__ = ("check", "failures", "keywords", "lister")

    def __init__(
        self,
        check: Check,
        lister: Lister | None,
        keywords: int,
        failures: Lister | None = None,
    ) -> None:
        self.check = check
        self.lister = lister
        self.keywords = keywords
        self.failures = failures if failures is not None else lister


_ALWAYS = _Node(lambda value: True, lambda value, path, where: iter(()), 0)


class Plan:
    """The plans of one schema document's subschemas, compiled on first use."""

    def __init__(self, document: Any, draft: str) -> None:
        self.draft = draft
        # The root may name its dialect and its URI: with no reference in a planned
        # subschema, neither changes a verdict (a subschema's own "$schema" would).
        self.root = document
        # id(subschema) → (subschema, its node or None); the entry keeps the subschema alive.
        self._nodes: dict[int, tuple[Any, _Node | None]] = {}
        self._lock = threading.Lock()
        self._types: dict[int, tuple[Any, Check | None]] = {}
        # Views schema repair makes of the document's objects (its local part, one keyword
        # of it), kept here so every repair against the document uses the same objects.
        self.views: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        self.keyword_views: dict[tuple[int, str], tuple[dict[str, Any], dict[str, Any]]] = {}
        # The property names schema repair finds declared at each object (when no reference
        # had to be followed to find them).
        self.names: dict[int, tuple[dict[str, Any], frozenset[str]]] = {}

    def check(self, schema: Any) -> Check | None:
        """A function telling whether a value fits ``schema``, or ``None`` without a plan."""
        node = self._node(schema)
        return None if node is None else node.check

    def type_test(self, schema: dict[str, Any]) -> Check | None:
        """The test of ``schema``'s own ``type`` keyword; ``None`` when it has none, or
        one that is not a JSON type name or a list of them."""
        hit = self._types.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        raw = schema.get("type")
        names = [raw] if isinstance(raw, str) else raw
        test: Check | None = None
        if isinstance(names, list) and all(isinstance(n, str) and n in _TYPES for n in names):
            tests = tuple(_TYPE_CHECKS[n] for n in names)
            test = tests[0] if len(tests) == 1 else _any_of_types(tests)
        with self._lock:
            if len(self._types) >= MAX_NODES:
                self._types.clear()
            self._types[id(schema)] = (schema, test)
        return test

    def lister(self, schema: Any) -> Lister | None:
        """A function listing a value's failures of ``schema``, or ``None`` without one."""
        node = self._node(schema)
        return None if node is None else node.lister

    def failures(self, schema: Any) -> Lister | None:
        """:meth:`lister` for a value already found not to fit ``schema`` (its check is
        not made again)."""
        node = self._node(schema)
        return None if node is None else node.failures

    def _node(self, schema: Any) -> _Node | None:
        hit = self._nodes.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        try:
            node: _Node | None = self._compile(schema)
        except (_Unsupported, RecursionError):
            node = None
        if node is not None and node.keywords > MAX_KEYWORDS:
            node = None
        with self._lock:
            if len(self._nodes) >= MAX_NODES:  # objects that come and go: start again
                self._nodes.clear()
            self._nodes[id(schema)] = (schema, node)
        return node

    def _sub(self, schema: Any) -> _Node:
        node = self._node(schema)
        if node is None:
            raise _Unsupported
        return node

    def _compile(self, schema: Any) -> _Node:
        if schema is True:
            return _ALWAYS
        if schema is False:
            return _Node(lambda value: False, None, 1)
        if not isinstance(schema, dict):
            raise _Unsupported
        checks: list[Check] = []
        listers: list[Lister | None] = []
        keywords = 0
        draft = self.draft
        root = schema is self.root
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS or (root and keyword == "$id" and isinstance(value, str)):
                continue
            if keyword == "$schema" and (root or _same_dialect(value, draft)):
                continue
            keywords += 1
            made = _KEYWORDS.get(keyword)
            if made is None:
                raise _Unsupported
            check, lister, inner = made(self, value, schema, draft)
            keywords += inner
            if check is not None:
                checks.append(check)
                listers.append(lister)
        check = _all(checks)
        failures = _chain(listers)
        return _Node(check, _checked(check, failures), keywords, failures)


def _all(checks: list[Check]) -> Check:
    if not checks:
        return lambda value: True
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)
    first, rest = checks[0], _all(checks[1:])
    return lambda value: first(value) and rest(value)


def _chain(listers: list[Lister | None]) -> Lister | None:
    """A subschema's failures: its keywords' listers in order (asked only about a value
    that fails the subschema)."""
    if any(lister is None for lister in listers):
        return None
    frozen = tuple(lister for lister in listers if lister is not None)
    if len(frozen) == 1:
        return frozen[0]

    def listed(value: Any, path: tuple[str | int, ...], where: tuple[str | int, ...]) -> Any:
        for lister in frozen:
            yield from lister(value, path, where)

    return listed


def _checked(check: Check, failures: Lister | None) -> Lister | None:
    """A subschema's lister: its failures, never asked about a value the subschema's check
    passes (a value jsonschema finds valid has no errors)."""
    if failures is None:
        return None

    def listed(value: Any, path: tuple[str | int, ...], where: tuple[str | int, ...]) -> Any:
        if check(value):
            return
        yield from failures(value, path, where)

    return listed


# --- one compiler per keyword: (plan, keyword value, schema, draft) → (check, lister, inner
# keywords); a check of None means the keyword decides nothing ---------------------------

Made = tuple[Check | None, Lister | None, int]


def _one(keyword: str, value: Any, schema: Any, ok: Check) -> Made:
    """A keyword that fails or holds as a whole at its value's place."""

    def listed(v: Any, path: tuple[str | int, ...], where: tuple[str | int, ...]) -> Any:
        if not ok(v):
            yield PlanError(keyword, value, v, schema, path, (*where, keyword))

    return ok, listed, 0


def _type(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(n in _TYPES for n in names if isinstance(n, str)):
        raise _Unsupported
    if not all(isinstance(n, str) for n in names):
        raise _Unsupported
    if len(names) == 1:
        return _one("type", value, schema, _TYPE_CHECKS[names[0]])
    return _one("type", value, schema, _any_of_types(tuple(_TYPE_CHECKS[n] for n in names)))


def _any_of_types(tests: tuple[Check, ...]) -> Check:
    def any_type(v: Any) -> bool:
        for test in tests:  # noqa: SIM110 (a loop: no generator per value)
            if test(v):
                return True
        return False

    return any_type


def _enum(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    if not isinstance(value, list):
        raise _Unsupported
    members = tuple(value)
    simple = all(isinstance(m, str) for m in members)
    if simple:
        strings = frozenset(members)
        return _one("enum", value, schema, lambda v: isinstance(v, str) and v in strings)
    return _one("enum", value, schema, lambda v: any(equal(m, v) for m in members))


def _const(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    return _one("const", value, schema, lambda v: equal(v, value))


def _required(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise _Unsupported
    names = tuple(value)

    def check(v: Any) -> bool:
        return not isinstance(v, dict) or all(n in v for n in names)

    def listed(v: Any, path: tuple[str | int, ...], where: tuple[str | int, ...]) -> Any:
        if isinstance(v, dict):
            for name in names:
                if name not in v:
                    message = f"{name!r} is a required property"
                    yield PlanError(
                        "required", value, v, schema, path, (*where, "required"), message
                    )

    return check, listed, 0


def _properties(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    if not isinstance(value, dict):
        raise _Unsupported
    nodes = [(name, plan._sub(sub), sub) for name, sub in value.items()]
    inner = sum(node.keywords for _, node, _ in nodes)
    pairs = tuple((name, node.check) for name, node, _ in nodes)
    if any(node.failures is None for _, node, _ in nodes):
        lister: Lister | None = None
    else:
        subs = tuple((name, node.check, node.failures) for name, node, _ in nodes)

        def listed(v: Any, path: tuple[str | int, ...], where: tuple[str | int, ...]) -> Any:
            if isinstance(v, dict):
                for name, fits, sub in subs:
                    if name in v and not fits(v[name]):
                        assert sub is not None
                        yield from sub(v[name], (*path, name), (*where, "properties", name))

        lister = listed

    def check(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        for name, sub in pairs:  # noqa: SIM110 (a loop: no generator per value)
            if name in v and not sub(v[name]):
                return False
        return True

    return check, lister, inner


def _additional(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    if "patternProperties" in schema:
        raise _Unsupported
    declared = schema.get("properties", {})
    if not isinstance(declared, dict):
        raise _Unsupported
    names = frozenset(declared)
    if value is False:

        def refuses(v: Any) -> bool:
            return not isinstance(v, dict) or all(k in names for k in v)

        def listed(v: Any, path: tuple[str | int, ...], where: tuple[str | int, ...]) -> Any:
            if isinstance(v, dict):
                extras = sorted((k for k in v if k not in names), key=str)
                if extras:
                    shown = ", ".join(repr(k) for k in extras)
                    verb = "was" if len(extras) == 1 else "were"
                    message = f"Additional properties are not allowed ({shown} {verb} unexpected)"
                    yield PlanError(
                        "additionalProperties",
                        value,
                        v,
                        schema,
                        path,
                        (*where, "additionalProperties"),
                        message,
                    )

        return refuses, listed, 0
    if value is True:
        return None, None, 0
    node = plan._sub(value)
    sub = node.check

    def check(v: Any) -> bool:
        if not isinstance(v, dict):
            return True
        return all(sub(item) for k, item in v.items() if k not in names)

    # (jsonschema lists a schema's failures over its extra names in set order: left to it)
    return check, None, node.keywords


def _items(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    if "prefixItems" in schema or not isinstance(value, (dict, bool)):
        raise _Unsupported
    if draft != "2020-12" and "additionalItems" in schema:
        raise _Unsupported
    node = plan._sub(value)
    sub = node.check

    def check(v: Any) -> bool:
        if not isinstance(v, list):
            return True
        for item in v:  # noqa: SIM110 (a loop: no generator per value)
            if not sub(item):
                return False
        return True

    if node.failures is None or value is False:
        return check, None, node.keywords
    each = node.failures

    def listed(v: Any, path: tuple[str | int, ...], where: tuple[str | int, ...]) -> Any:
        if isinstance(v, list):
            inner = (*where, "items")
            for index, item in enumerate(v):
                if not sub(item):
                    yield from each(item, (*path, index), inner)

    return check, listed, node.keywords


def _bound(kind: str, keyword: str) -> Callable[[Plan, Any, Any, str], Made]:
    def made(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
        if not _number(value):
            raise _Unsupported
        limit = value
        if keyword == "minimum":
            ok: Check = lambda v: not _number(v) or not v < limit  # noqa: E731
        elif keyword == "maximum":
            ok = lambda v: not _number(v) or not v > limit  # noqa: E731
        elif keyword == "exclusiveMinimum":
            ok = lambda v: not _number(v) or not v <= limit  # noqa: E731
        else:
            ok = lambda v: not _number(v) or not v >= limit  # noqa: E731
        return _one(keyword, value, schema, ok)

    return made


def _size(
    keyword: str, kind: type[str] | type[list[Any]] | type[dict[str, Any]], longest: bool
) -> Callable[[Plan, Any, Any, str], Made]:
    def made(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
        if not _count(value):
            raise _Unsupported
        limit = value

        def ok(v: Any) -> bool:
            if not isinstance(v, kind):
                return True
            return bool(len(v) <= limit) if longest else bool(len(v) >= limit)

        return _one(keyword, value, schema, ok)

    return made


def _pattern(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    if not isinstance(value, str) or pattern_is_risky(value):
        raise _Unsupported
    try:
        search = re.compile(value).search
    except (re.error, RecursionError, OverflowError):
        raise _Unsupported from None
    return _one("pattern", value, schema, lambda v: not isinstance(v, str) or search(v) is not None)


def _subschemas(plan: Plan, value: Any) -> list[_Node]:
    if not isinstance(value, list) or not value:
        raise _Unsupported
    return [plan._sub(sub) for sub in value]


def _all_of(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    nodes = _subschemas(plan, value)
    checks = tuple(node.check for node in nodes)
    inner = sum(node.keywords for node in nodes)

    def check(v: Any) -> bool:
        return all(sub(v) for sub in checks)

    if any(node.failures is None for node in nodes):
        return check, None, inner
    listers = tuple((node.check, node.failures) for node in nodes)

    def listed(v: Any, path: tuple[str | int, ...], where: tuple[str | int, ...]) -> Any:
        for index, (fits, sub) in enumerate(listers):
            if not fits(v):
                assert sub is not None
                yield from sub(v, path, (*where, "allOf", index))

    return check, listed, inner


def _any_of(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    nodes = _subschemas(plan, value)
    checks = tuple(node.check for node in nodes)

    def check(v: Any) -> bool:
        return any(sub(v) for sub in checks)

    # (a failed anyOf is explained from its alternatives' errors: left to jsonschema)
    return check, None, sum(node.keywords for node in nodes)


def _one_of(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    nodes = _subschemas(plan, value)
    checks = tuple(node.check for node in nodes)

    def check(v: Any) -> bool:
        found = False
        for sub in checks:
            if sub(v):
                if found:
                    return False
                found = True
        return found

    return check, None, sum(node.keywords for node in nodes)


def _not(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    node = plan._sub(value)
    sub = node.check
    return (lambda v: not sub(v)), None, node.keywords


def _annotation_only(plan: Plan, value: Any, schema: Any, draft: str) -> Made:
    return None, None, 0


_KEYWORDS: dict[str, Callable[[Plan, Any, Any, str], Made]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional,
    "items": _items,
    "minimum": _bound("number", "minimum"),
    "maximum": _bound("number", "maximum"),
    "exclusiveMinimum": _bound("number", "exclusiveMinimum"),
    "exclusiveMaximum": _bound("number", "exclusiveMaximum"),
    "minLength": _size("minLength", str, False),
    "maxLength": _size("maxLength", str, True),
    "minItems": _size("minItems", list, False),
    "maxItems": _size("maxItems", list, True),
    "minProperties": _size("minProperties", dict, False),
    "maxProperties": _size("maxProperties", dict, True),
    "pattern": _pattern,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
}


# Plans of whole schema documents, by the identity of the document (held by the entry).
_PLANS: OrderedDict[tuple[int, str], tuple[Any, Plan]] = OrderedDict()
_PLANS_SIZE = 32
_PLANS_LOCK = threading.Lock()


def plan_for(document: Any, draft: str) -> Plan | None:
    """The plan of a schema document under ``draft`` (kept for the next call with the same
    document object), or ``None`` for a draft plans do not cover."""
    if draft not in PLAN_DRAFTS:
        return None
    key = (id(document), draft)
    with _PLANS_LOCK:
        hit = _PLANS.get(key)
        if hit is not None and hit[0] is document:
            _PLANS.move_to_end(key)
            return hit[1]
        plan = Plan(document, draft)
        _PLANS[key] = (document, plan)
        while len(_PLANS) > _PLANS_SIZE:
            _PLANS.popitem(last=False)
    return plan
