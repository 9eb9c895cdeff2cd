"""Checking a schema before it is used: its draft, its meta-schema, its references.

:func:`choose_draft` reads ``$schema``; :func:`check_against_metaschema` turns the first
meta-schema violation into a one-line :class:`~llmfix.errors.SchemaError`; :class:`SchemaWalk`
resolves every ``$ref`` validation can reach, compiles every pattern and finds reference
cycles that never step into the value. :mod:`llmfix.schema.validate` runs them at construction.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from llmfix import codes
from llmfix.errors import SchemaError
from llmfix.model import Diagnostic
from llmfix.schema.budget import pattern_is_risky
from llmfix.schema.explain import (
    NEVER,
    explain,
    innermost,
    json_pointer,
    one_line,
    preview,
    shorten,
    type_with_article,
)
from llmfix.schema.fast import meta_valid_fast

DEFAULT_DRAFT = "2020-12"

_DIALECT_RE = re.compile(
    r"^(?:https?://)?json-schema\.org/"
    r"(?:draft-0?(?P<old>[3467])|draft/(?P<new>2019-09|2020-12))"
    r"/(?:schema|hyper-schema|links)?/?#?$"
)
_LATEST_DIALECT_RE = re.compile(r"^(?:https?://)?json-schema\.org/schema/?#?$")
_LEGACY_SPEC_NAMES = frozenset({"draft-03", "draft-04", "draft-06", "draft-07"})

_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def draft_table() -> dict[str, tuple[Any, Any]]:
    """Draft label → (jsonschema validator class, referencing specification)."""
    global _DRAFT_TABLE
    if _DRAFT_TABLE is None:
        import jsonschema
        import referencing.jsonschema as spec

        _DRAFT_TABLE = {
            "draft-03": (jsonschema.Draft3Validator, spec.DRAFT3),
            "draft-04": (jsonschema.Draft4Validator, spec.DRAFT4),
            "draft-06": (jsonschema.Draft6Validator, spec.DRAFT6),
            "draft-07": (jsonschema.Draft7Validator, spec.DRAFT7),
            "2019-09": (jsonschema.Draft201909Validator, spec.DRAFT201909),
            "2020-12": (jsonschema.Draft202012Validator, spec.DRAFT202012),
        }
    return _DRAFT_TABLE


_DRAFT_TABLE: dict[str, tuple[Any, Any]] | None = None
_META_VALIDATORS: dict[str, Any] = {}


def _metaschema_ids() -> dict[str, str]:
    """Exact meta-schema id → draft label (what jsonschema switches validator class on)."""
    global _METASCHEMA_IDS
    if _METASCHEMA_IDS is None:
        _METASCHEMA_IDS = {
            str(cls.ID_OF(cls.META_SCHEMA)): label for label, (cls, _) in draft_table().items()
        }
    return _METASCHEMA_IDS


_METASCHEMA_IDS: dict[str, str] | None = None


def dialect_label(uri: str) -> str | None:
    """The draft a ``$schema`` URI names (``"draft-07"``, ``"2020-12"``…), or ``None``."""
    text = uri.strip()
    match = _DIALECT_RE.match(text)
    if match:
        return f"draft-0{match['old']}" if match["old"] else match["new"]
    if _LATEST_DIALECT_RE.match(text):
        return DEFAULT_DRAFT
    return None


def choose_draft(schema: Any, source: str) -> tuple[str, tuple[Diagnostic, ...]]:
    if not isinstance(schema, dict) or "$schema" not in schema:
        return DEFAULT_DRAFT, ()
    uri = schema["$schema"]
    if not isinstance(uri, str):
        raise SchemaError(
            source, f"$schema must be a string (a dialect URI), got {type_with_article(uri)}"
        )
    label = dialect_label(uri)
    if label is not None:
        return label, ()
    warning = codes.SCHEMA_UNKNOWN_DIALECT.at(
        f"unknown $schema {preview(uri)}; validating as JSON Schema {DEFAULT_DRAFT}",
        data={"$schema": uri},
    )
    return DEFAULT_DRAFT, (warning,)


def detect_specification(contents: Any, default: Any) -> Any:
    """The referencing specification for a document, as referencing itself detects it."""
    from referencing.jsonschema import specification_with

    if isinstance(contents, dict):
        dialect = contents.get("$schema")
        if isinstance(dialect, str):
            return specification_with(dialect, default=default)
    return default


def check_against_metaschema(cls: Any, schema: Any, source: str, draft: str) -> None:
    if meta_valid_fast(schema, draft):  # compiled: a valid schema needs no jsonschema walk
        return
    from jsonschema.exceptions import best_match

    meta = _META_VALIDATORS.get(draft)
    if meta is None:
        meta = _META_VALIDATORS[draft] = cls(cls.META_SCHEMA)
    try:
        error = best_match(meta.iter_errors(schema))
    except RecursionError:
        raise SchemaError(source, "schema is nested too deeply to check") from None
    if error is None:
        return
    error = innermost(error)
    text, hint, _ = explain(error)
    pointer = json_pointer(error.absolute_path)
    problem = f"invalid {draft} schema: {pointer or '/'}: {text}"
    if hint:
        problem += f" ({hint})"
    raise SchemaError(source, shorten(problem, 300))


# --------------------------------------------------------------------- schema checking

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_SINGLE = (
    "additionalProperties",
    "unevaluatedProperties",
    "items",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")


def without_false_subschemas(schema: Any, draft: str) -> Any:
    """A copy of ``schema`` with ``false`` subschemas (not the root) replaced by NEVER.

    Keywords that test for ``false`` themselves and report it well keep it.
    """
    if not isinstance(schema, dict):
        return schema
    keep_false = {
        "additionalProperties",
        "additionalItems",
        "unevaluatedProperties",
        "unevaluatedItems",
    }
    if draft == "2020-12":
        keep_false.add("items")

    def sub(value: Any) -> Any:
        if value is False:
            return NEVER
        return convert(value) if isinstance(value, dict) else value

    def convert(node: dict[str, Any]) -> dict[str, Any]:
        out = dict(node)
        for key in _SCHEMA_MAPS:
            inner = node.get(key)
            if isinstance(inner, dict):
                out[key] = {k: sub(v) for k, v in inner.items()}
        dependencies = node.get("dependencies")
        if isinstance(dependencies, dict):
            out["dependencies"] = {
                k: sub(v) if isinstance(v, (dict, bool)) else v for k, v in dependencies.items()
            }
        for key in _SCHEMA_SINGLE:
            if key in node and isinstance(node[key], (dict, bool)):
                value = node[key]
                out[key] = value if (value is False and key in keep_false) else sub(value)
        for key in _SCHEMA_LISTS:
            inner = node.get(key)
            if isinstance(inner, list):
                out[key] = [sub(v) for v in inner]
        return out

    return convert(schema)


class RefRefused(Exception):
    """A reference this validator will not follow (reason in the message)."""


class SchemaWalk:
    """One pass over the subschemas validation can reach, the way jsonschema reaches them
    (applicator keywords and ``$ref``, with the same base URIs and draft switches): resolve
    each ``$ref``, compile each pattern, and find reference cycles that never step into
    the value. Definitions nothing refers to are never applied, so they are not checked.

    It is handed the validator's document and its ``retrieved`` table (URI → resource,
    filled while the walk resolves references), not the validator itself."""

    def __init__(self, source: str, document: Any, retrieved: dict[str, Any], draft: str) -> None:
        self.source = source
        self.document = document
        self.retrieved = retrieved
        self.draft = draft
        self.graph: dict[tuple[int, str, str], list[tuple[int, str, str]]] = {}
        self.patterns: set[str] = set()

    def check_embedded_dialects(self) -> None:
        """Check each subschema that declares another ``$schema`` against that draft's
        meta-schema (the root's check does not look inside it the same way)."""
        drafts = draft_table()
        labels = {id(spec): label for label, (_, spec) in drafts.items()}
        stack: list[tuple[Any, Any]] = [(self.document, drafts[self.draft][1])]
        seen: set[int] = set()
        while stack:
            node, spec = stack.pop()
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            node_spec = detect_specification(node, spec)
            label = labels.get(id(node_spec))
            if node_spec is not spec and label is not None:
                try:
                    check_against_metaschema(drafts[label][0], node, self.source, label)
                except SchemaError as error:
                    where = self._locate(id(node))
                    raise SchemaError(self.source, f"at {where}: {error.problem}") from None
            stack.extend((child, node_spec) for child in node_spec.subresources_of(node))

    def run(self, resolver: Any) -> None:
        drafts = draft_table()
        switch = _metaschema_ids()
        stack: list[tuple[Any, Any, str]] = [(self.document, resolver, self.draft)]
        while stack:
            contents, resolver, label = stack.pop()
            if not isinstance(contents, dict):
                continue
            key = (id(contents), str(getattr(resolver, "_base_uri", "")), label)
            if key in self.graph:
                continue
            self._check_patterns(contents)
            edges: list[tuple[int, str, str]] = []
            self.graph[key] = edges

            targets: list[tuple[Any, Any, bool]] = []  # (subschema, resolver, in place)
            for keyword in _REF_KEYWORDS:
                ref = contents.get(keyword)
                if isinstance(ref, str):
                    resolved = self._lookup(resolver, ref, keyword, contents)
                    if resolved is not None:
                        targets.append((resolved.contents, resolved.resolver, True))
            # Drafts 3-7 ignore every keyword next to a $ref.
            if not (label in _LEGACY_SPEC_NAMES and "$ref" in contents):
                spec = drafts[label][1]
                for child, in_place, descends in _applied_subschemas(contents):
                    if not isinstance(child, dict):
                        continue
                    # descend() rebases on a child's own id; evolve() (not/if/contains) doesn't
                    child_resolver = (
                        resolver.in_subresource(spec.create_resource(child))
                        if descends
                        else resolver
                    )
                    targets.append((child, child_resolver, in_place))
            for target, target_resolver, in_place in targets:
                if not isinstance(target, dict):
                    continue
                dialect = target.get("$schema")
                # jsonschema switches validator class only on an exact meta-schema id
                target_label = switch.get(dialect, label) if isinstance(dialect, str) else label
                stack.append((target, target_resolver, target_label))
                if in_place:
                    base = str(getattr(target_resolver, "_base_uri", ""))
                    edges.append((id(target), base, target_label))
        self._check_cycles()

    def _lookup(self, resolver: Any, ref: str, keyword: str, node: Any) -> Any:
        try:
            return resolver.lookup(ref)
        except Exception as error:  # becomes a one-line SchemaError
            if keyword != "$ref":
                return None  # dynamic references are resolved at validation time
            reason = _unresolvable_reason(error)
            where = self._locate(id(node))
            raise SchemaError(
                self.source, f'cannot resolve $ref "{shorten(ref, 120)}" at {where}: {reason}'
            ) from None

    def _check_patterns(self, node: dict[str, Any]) -> None:
        candidates: list[tuple[str, str]] = []
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            candidates.append((pattern, "pattern"))
        props = node.get("patternProperties")
        if isinstance(props, dict):
            candidates.extend((key, "patternProperties") for key in props if isinstance(key, str))
        for text, keyword in candidates:
            if text in self.patterns:
                continue
            try:
                re.compile(text)
            except (re.error, RecursionError, OverflowError) as error:
                where = self._locate(id(node))
                msg = error.msg if isinstance(error, re.error) else str(error)
                raise SchemaError(
                    self.source,
                    f'{keyword} "{shorten(text, 80)}" at {where} is not a regular expression '
                    f"Python can use: {msg}",
                ) from None
            if keyword == "patternProperties" and pattern_is_risky(text):
                # jsonschema matches property names with re itself: such a pattern could
                # backtrack for ever on a key a model wrote.
                where = self._locate(id(node))
                raise SchemaError(
                    self.source,
                    f'patternProperties "{shorten(text, 80)}" at {where} could take '
                    "exponential time on a property name (a repetition of something that "
                    "repeats or branches, or a backreference); llmfix does not evaluate it",
                )
            self.patterns.add(text)

    def in_place_paths(self) -> int:
        """The most subschemas one place in a value meets (itself, and each subschema it
        reaches in place through $ref and the applicators, counted once per way there)."""
        paths: dict[tuple[int, str, str], int] = {}
        for start in self.graph:
            stack = [start]
            while stack:
                node = stack[-1]
                if node in paths:
                    stack.pop()
                    continue
                pending = [n for n in self.graph.get(node, ()) if n not in paths]
                if pending:
                    stack.extend(pending)
                    continue
                stack.pop()
                paths[node] = 1 + sum(paths[n] for n in self.graph.get(node, ()))
        return max(paths.values(), default=0)

    def _check_cycles(self) -> None:
        white, grey, black = 0, 1, 2
        colour: dict[tuple[int, str, str], int] = {}
        for start in self.graph:
            if colour.get(start, white) != white:
                continue
            colour[start] = grey
            path = [start]
            stack = [iter(self.graph[start])]
            while stack:
                nxt = next(stack[-1], None)
                if nxt is None:
                    colour[path.pop()] = black
                    stack.pop()
                    continue
                state = colour.get(nxt, white)
                if state == grey:
                    cycle = [*path[path.index(nxt) :], nxt]
                    trail = " -> ".join(self._locate(node[0]) for node in cycle)
                    raise SchemaError(
                        self.source,
                        f"reference cycle that never steps into the value ({trail}); "
                        "validation would never end",
                    )
                if state == white and nxt in self.graph:
                    colour[nxt] = grey
                    path.append(nxt)
                    stack.append(iter(self.graph[nxt]))

    def _locate(self, node_id: int) -> str:
        """Where a subschema is, as ``#/json/pointer`` (or ``file#/pointer``)."""
        documents: list[tuple[str, Any]] = [("#", self.document)]
        documents += [(f"{uri}#", res.contents) for uri, res in self.retrieved.items()]
        for prefix, document in documents:
            found = _find_path(document, node_id)
            if found is not None:
                return prefix + json_pointer(found)
        return "a referenced schema"


def _applied_subschemas(node: dict[str, Any]) -> Iterator[tuple[Any, bool, bool]]:
    """(subschema, applies to the same value, reached through descend()) for each
    subschema an applicator keyword of ``node`` uses."""
    for keyword in ("allOf", "anyOf", "oneOf"):
        value = node.get(keyword)
        if isinstance(value, list):
            for item in value:
                yield item, True, True
    for keyword in ("then", "else"):
        yield node.get(keyword), True, True
    for keyword in ("not", "if"):
        yield node.get(keyword), True, False
    for keyword in ("dependentSchemas", "dependencies"):
        value = node.get(keyword)
        if isinstance(value, dict):
            for item in value.values():
                yield item, True, True
    extends = node.get("extends")
    for item in extends if isinstance(extends, list) else [extends]:
        yield item, True, True
    for keyword in ("properties", "patternProperties"):
        value = node.get(keyword)
        if isinstance(value, dict):
            for item in value.values():
                yield item, False, True
    for keyword in (
        "additionalProperties",
        "unevaluatedProperties",
        "additionalItems",
        "unevaluatedItems",
        "propertyNames",
    ):
        yield node.get(keyword), False, True
    for keyword in ("items", "prefixItems"):
        value = node.get(keyword)
        for item in value if isinstance(value, list) else [value]:
            yield item, False, True
    yield node.get("contains"), False, False


def _find_path(document: Any, node_id: int) -> list[str | int] | None:
    stack: list[tuple[Any, list[str | int]]] = [(document, [])]
    seen: set[int] = set()
    while stack:
        value, path = stack.pop()
        if id(value) == node_id:
            return path
        if isinstance(value, (dict, list)):
            if id(value) in seen:
                continue
            seen.add(id(value))
        if isinstance(value, dict):
            stack.extend((v, [*path, k]) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, [*path, i]) for i, v in enumerate(value))
    return None


def _unresolvable_reason(error: BaseException) -> str:
    from referencing import exceptions as ref_errors

    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for item in chain:
        if isinstance(item, RefRefused):
            return str(item)
        if isinstance(item, SchemaError):
            return f"{item.source}: {item.problem}"
    for item in chain:
        if isinstance(item, ref_errors.PointerToNowhere):
            return f'nothing at "{item.ref}" in that schema'
        if isinstance(item, ref_errors.NoSuchAnchor):
            return f'no anchor named "{item.anchor}"'
        if isinstance(item, ref_errors.Unretrievable):
            return f"cannot retrieve {item.ref}"
        if isinstance(item, ref_errors.NoSuchResource):
            return f'no schema is known by the URI "{item.ref}"'
        if isinstance(item, (ValueError, TypeError)):
            return f"malformed reference ({one_line(str(item))})"
    return "no such schema"
