"""Validate stage: check a value against a JSON Schema and say, precisely, what is wrong.

:class:`SchemaValidator` compiles a :class:`~llmfix.schema.load.SchemaSpec` once and then
reports *every* violation as a :class:`~llmfix.model.Diagnostic` with code
``schema.<keyword>`` (snake case: ``schema.type``, ``schema.required``,
``schema.additional_properties``, …), a JSON Pointer into the value, and a message a
person or a model can act on (``/age: expected integer, got string "12"``).

What it decides, and why:

- **Draft** from ``$schema`` (draft-03/04/06/07, 2019-09, 2020-12, hyper-schema URIs
  included); no ``$schema`` means 2020-12. An unknown ``$schema`` is validated as 2020-12
  and reported once in :attr:`SchemaValidator.warnings` (``schema.unknown_dialect``).
- **The schema is checked first**, against its draft's meta-schema, and every ``$ref`` in
  it is resolved once, up front. A bad schema is a :class:`~llmfix.errors.SchemaError`
  at construction, never a surprise during validation.
- **``$ref``**: references inside the schema, bundled ``$id``/anchor targets, the
  meta-schemas, and relative file references confined to the schema file's directory tree
  (``.json``/``.yaml``). Remote ``http(s)`` references are refused unless
  ``allow_remote=True`` (``--allow-remote-refs``); then each is fetched once with httpx
  (a 10 s timeout that also bounds the whole body, 10 MB at most, JSON or YAML), and a
  failed fetch is a ``SchemaError`` naming the URL. A pickled validator carries what it
  fetched, so a worker process rebuilding it does not fetch again.
- **Reference cycles** that never step into the value (``{"$ref": "#"}``, two definitions
  that ``allOf`` each other) would recurse forever, so they are a ``SchemaError``.
  Recursive schemas that descend (a tree whose children are trees) are fine. A value
  nested too deeply for Python's recursion limit gives ``schema.recursion_limit``.
- **Patterns** are checked with Python's :mod:`re` (what the validator uses); a pattern it
  cannot compile is a ``SchemaError``. One :mod:`re` could backtrack on without end runs on
  jsonschema-rs's linear-time engine instead, or, as a ``patternProperties`` key, is a
  ``SchemaError`` (:mod:`llmfix.schema.budget`).
- **A step budget**: jsonschema counts the keywords it applies (:mod:`llmfix.schema.budget`);
  past the budget the value gets ``schema.too_costly``. A schema whose references put over
  ``MAX_IN_PLACE_PATHS`` subschemas on one value is not given to jsonschema-rs, which
  cannot be stopped.
- **``format`` is an annotation only**: no format checker runs, so ``"format": "email"``
  never fails. (Model output checks are about shape; format checks vary by library.)
- One diagnostic per error jsonschema reports, except that properties forbidden by
  ``additionalProperties``/``unevaluatedProperties: false`` get one diagnostic each,
  pointing at the property. ``anyOf``/``oneOf`` failures are summarised: the types or
  constants the alternatives accept, or the closest alternative's first problem.

Layout: this module compiles a schema, retrieves what its references name and runs the
validation; :mod:`llmfix.schema.check` checks the schema first (draft, meta-schema,
references, patterns, cycles); :mod:`llmfix.schema.fast` is the jsonschema-rs path;
:mod:`llmfix.schema.plan` lists the failures of a value for the schemas it covers (the same
records jsonschema gives, without its validator objects; jsonschema lists the rest);
:mod:`llmfix.schema.explain` writes the messages, one small function per keyword.
"""

from __future__ import annotations

import importlib
import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from llmfix.errors import SchemaError
from llmfix.model import Diagnostic
from llmfix.schema.budget import TooCostly, allowance, bounded_class, steps
from llmfix.schema.check import (
    DEFAULT_DRAFT,
    RefRefused,
    SchemaWalk,
    check_against_metaschema,
    choose_draft,
    detect_specification,
    dialect_label,
    draft_table,
    without_false_subschemas,
)
from llmfix.schema.explain import (
    STAGE,
    diagnose,
    one_line,
    recursion_diagnostic,
    too_costly_diagnostic,
    too_many_errors_diagnostic,
    unresolvable_diagnostic,
)
from llmfix.schema.fast import fast_is_valid, fast_validator, meta_valid_fast, self_contained
from llmfix.schema.load import SchemaSpec, parse_schema_document, read_schema_document
from llmfix.schema.plan import Plan, plan_for

__all__ = [
    "DEFAULT_DRAFT",
    "MAX_ERRORS",
    "STAGE",
    "SchemaValidator",
    "dialect_label",
    "validate_value",
]

_REMOTE_TIMEOUT = 10.0
_REMOTE_MAX_BYTES = 10_000_000
# Remote documents one schema may fetch, and HTTP requests (redirects included) it may make:
# a server can hand out an endless chain of references (sub/ok.json → sub/sub/ok.json …).
# Subschemas one value may meet in place (through $ref, allOf, anyOf, oneOf, if/then/else)
# before jsonschema-rs is left out: nine levels of nine $refs are 9**9 of them.
MAX_IN_PLACE_PATHS = 10_000
REMOTE_MAX_DOCUMENTS = 32
REMOTE_MAX_REQUESTS = 64
_REMOTE_MAX_REDIRECTS = 5
# Errors listed per value: validating (and describing) each one costs about 60 µs, so a
# 100,000-item array of wrong types would otherwise take seconds and flood the report.
MAX_ERRORS = 1_000


class SchemaValidator:
    """A compiled schema: :meth:`is_valid` for the fast path, :meth:`errors` for the detail."""

    def __init__(
        self,
        spec: SchemaSpec,
        *,
        allow_remote: bool = False,
        _fetched: dict[str, Any] | None = None,
    ) -> None:
        self.spec = spec
        self.allow_remote = allow_remote
        # Remote documents as fetched (URL → parsed body), kept for pickling.
        self._fetched: dict[str, Any] = dict(_fetched or {})
        self._requests = 0  # HTTP requests made for this schema (capped)
        self.draft, self.warnings = choose_draft(spec.schema, spec.source)
        self._retrieved: dict[str, Any] = {}
        self._document = without_false_subschemas(spec.schema, self.draft)
        self._compiled: Any = None
        self._plan: Plan | None = _UNPLANNED
        # Set by the compile: the schema's references apply so many subschemas to one value
        # that jsonschema-rs (which cannot be stopped) is not used; jsonschema, under a step
        # budget, is.
        self._costly = False
        # A self-contained schema (no reference, no embedded dialect, patterns Python can
        # compile) that jsonschema-rs compiles and finds valid against the draft's own
        # meta-schema document needs nothing of jsonschema until a value fails: the import
        # and compile of jsonschema are skipped for clean answers. Any other schema takes
        # jsonschema's full check up front, so its errors show at load.
        self._fast = None
        if self_contained(self._document, self.draft) and meta_valid_fast(spec.schema, self.draft):
            self._fast = fast_validator(self._document, self.draft, self._fetched)
        if self._fast is None:
            self._compile()
            if not self._costly:
                self._fast = fast_validator(
                    self._document, self.draft, self._retrieved or self._fetched
                )

    @property
    def _validator(self) -> Any:
        """The jsonschema validator, compiled on first use."""
        if self._compiled is None:
            self._compile()
        return self._compiled

    def _compile(self) -> None:
        from referencing import Registry

        spec = self.spec
        schema = spec.schema
        validator_class, specification = draft_table()[self.draft]
        # (a schema jsonschema-rs finds valid against its meta-schema is not walked again)
        check_against_metaschema(validator_class, schema, spec.source, self.draft)
        root = specification.create_resource(self._document)
        self._root_uri = urljoin(spec.base_uri or "", root.id() or "")
        specifications: Any = importlib.import_module("jsonschema_specifications").REGISTRY
        registry: Any = Registry(retrieve=self._retrieve)  # type: ignore[call-arg]
        registry = specifications.combine(registry.with_resource(self._root_uri, root))
        walk = SchemaWalk(spec.source, self._document, self._retrieved, self.draft)
        try:
            walk.check_embedded_dialects()
            registry = registry.crawl()
            walk.run(registry.resolver(base_uri=self._root_uri))
            self._costly = walk.in_place_paths() > MAX_IN_PLACE_PATHS
            # Files the walk read are preloaded, so validation does not read them again.
            registry = registry.with_resources(self._retrieved.items()).crawl()
        except SchemaError:
            raise
        except RecursionError:
            raise SchemaError(spec.source, "schema is nested too deeply to compile") from None
        except Exception as error:  # a schema must never crash the caller
            problem = one_line(f"{type(error).__name__}: {error}")
            raise SchemaError(spec.source, f"cannot compile schema: {problem}") from None
        make: Any = bounded_class(validator_class)
        self._compiled = make(self._document, _resolver=registry.resolver(base_uri=self._root_uri))

    @property
    def schema(self) -> dict[str, Any] | bool:
        """The JSON Schema being enforced (unwrapped from any tool definition)."""
        return self.spec.schema

    def _planned(self) -> Plan | None:
        """The schema's plan (:mod:`llmfix.schema.plan`), made when a value first fails.

        A schema whose failing values the plan answers whole never needs jsonschema: when
        jsonschema-rs served it (self-contained, valid against its meta-schema), the import
        and compile of jsonschema are skipped for good, as they are for valid values."""
        if self._plan is _UNPLANNED:
            self._plan = plan_for(self._document, self.draft)
        return self._plan

    @property
    def plan_lists(self) -> bool:
        """Whether the schema's plan lists every failure of a value (no keyword of the schema
        leaves its errors to jsonschema): then :meth:`errors` is all there is to know."""
        plan = self._planned()
        return plan is not None and plan.lister(self._document) is not None

    def is_valid(self, value: Any) -> bool:
        """Whether ``value`` satisfies the schema (stops at the first problem)."""
        if self._fast is not None and fast_is_valid(self._fast, value):
            return True
        plan = self._planned()
        check = plan.check(self._document) if plan is not None else None
        if check is not None:
            try:
                return check(value)
            except RecursionError:
                pass  # jsonschema says what a value too deep for the plan is
        from referencing.exceptions import Unresolvable

        try:
            with steps(lambda: allowance(value)):
                return bool(self._validator.is_valid(value))
        except (RecursionError, Unresolvable, TooCostly):
            return False
        except Exception as error:  # a schema quirk jsonschema chokes on; never leak it
            raise self._failure(error) from None

    def errors(self, value: Any) -> list[Diagnostic]:
        """Every violation, sorted by JSON Pointer; ``[]`` when ``value`` is valid."""
        if self._fast is not None and fast_is_valid(self._fast, value):
            return []
        listed = self._planned_errors(value)
        if listed is not None:
            return _described(listed)
        from referencing.exceptions import Unresolvable

        try:
            with steps(lambda: allowance(value)):
                if self._validator.is_valid(value):
                    return []
                raw = list(itertools.islice(self._validator.iter_errors(value), MAX_ERRORS + 1))
        except TooCostly as costly:
            return [too_costly_diagnostic(str(costly))]
        except RecursionError:
            return [recursion_diagnostic()]
        except Unresolvable as unresolvable:
            return [unresolvable_diagnostic(unresolvable)]
        except Exception as failure:  # a schema quirk jsonschema chokes on; never leak it
            raise self._failure(failure) from None
        return _described(raw)

    def _planned_errors(self, value: Any) -> list[Any] | None:
        """The failures of ``value`` as the plan lists them (up to one past
        :data:`MAX_ERRORS`), or ``None`` where the plan leaves them to jsonschema."""
        plan = self._planned()
        if plan is None:
            return None
        check = plan.check(self._document)
        failures = plan.failures(self._document)
        if check is None or failures is None:
            return None
        try:
            if check(value):
                return []
            return list(itertools.islice(failures(value, (), ()), MAX_ERRORS + 1))
        except RecursionError:
            return None  # jsonschema says what a value too deep for the plan is

    def _failure(self, error: Exception) -> SchemaError:
        problem = one_line(f"{type(error).__name__}: {error}")
        return SchemaError(self.spec.source, f"cannot validate with this schema: {problem}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable for process pools: a worker recompiles from the spec, with the remote
        # documents this validator fetched (a worker never fetches them again).
        return (_rebuild, (self.spec, self.allow_remote, self._fetched))

    def __repr__(self) -> str:
        return f"SchemaValidator({self.spec.source!r}, draft={self.draft!r})"

    # ------------------------------------------------------------------ $ref retrieval

    def _retrieve(self, uri: str) -> Any:
        """Fetch a resource a ``$ref`` names (called by ``referencing``); cached per validator."""
        cached = self._retrieved.get(uri)
        if cached is not None:
            return cached
        parts = urlsplit(uri)
        scheme = parts.scheme.lower()
        if scheme == "file":
            contents = self._read_file_ref(uri, Path(_url2pathname(parts.path)))
        elif scheme in ("http", "https"):
            if not self.allow_remote:
                raise RefRefused(
                    f"remote reference {uri} refused: fetching schemas over the network is "
                    "off (--allow-remote-refs turns it on)"
                )
            if uri not in self._fetched:
                self._fetched[uri] = self._fetch_capped(uri)
            contents = self._fetched[uri]
        elif not scheme:
            raise RefRefused(
                "relative reference with no base: the schema was not loaded from a file"
            )
        else:
            raise RefRefused(f"unsupported URI scheme {scheme!r}")
        drafts = draft_table()
        specification = detect_specification(contents, drafts[self.draft][1])
        label = next((k for k, v in drafts.items() if v[1] is specification), self.draft)
        check_against_metaschema(drafts[label][0], contents, uri, label)
        contents = without_false_subschemas(contents, label)
        resource = specification.create_resource(contents)
        self._retrieved[uri] = resource
        return resource

    def _fetch_capped(self, uri: str) -> Any:
        """Fetch ``uri`` unless this schema has used up its remote documents or requests."""
        if len(self._fetched) >= REMOTE_MAX_DOCUMENTS:
            raise RefRefused(
                f"remote reference {uri} refused: the schema already fetched "
                f"{REMOTE_MAX_DOCUMENTS} remote documents (the cap per schema)"
            )

        def count_request(request: Any) -> None:
            if self._requests >= REMOTE_MAX_REQUESTS:
                raise RefRefused(
                    f"remote reference {uri} refused: the schema already made "
                    f"{REMOTE_MAX_REQUESTS} HTTP requests (the cap per schema)"
                )
            self._requests += 1

        return _fetch_remote(uri, count_request)

    def _read_file_ref(self, uri: str, path: Path) -> Any:
        base = self.spec.base_uri
        if not base or urlsplit(base).scheme != "file":
            raise RefRefused("file references need a schema loaded from a file")
        root = Path(_url2pathname(urlsplit(base).path)).resolve()
        target = path.resolve()
        if target != root and root not in target.parents:
            raise RefRefused(f"{uri} is outside the schema's directory {root}")
        return read_schema_document(target)


def _described(raw: list[Any]) -> list[Diagnostic]:
    """The diagnostics of the failures jsonschema (or a plan) listed, sorted by pointer."""
    found: list[tuple[list[tuple[int, Any]], Diagnostic]] = []
    for error in raw[:MAX_ERRORS]:
        found.extend(diagnose(error))
    found.sort(key=lambda pair: pair[0])
    listed = [diagnostic for _, diagnostic in found]
    if len(raw) > MAX_ERRORS:
        listed.append(too_many_errors_diagnostic(MAX_ERRORS))
    return listed


_UNPLANNED: Any = object()


def validate_value(value: Any, spec: SchemaSpec) -> list[Diagnostic]:
    """Every violation of ``spec`` by ``value`` (the compiled validator is cached per spec)."""
    return _cached_validator(spec).errors(value)


def _rebuild(spec: SchemaSpec, allow_remote: bool, fetched: dict[str, Any]) -> SchemaValidator:
    return SchemaValidator(spec, allow_remote=allow_remote, _fetched=fetched)


# A few compiled validators, keyed by the identity of the spec they were built from (the
# entry keeps the spec alive, so an id is never reused while it is cached).
_CACHE: OrderedDict[int, tuple[SchemaSpec, SchemaValidator]] = OrderedDict()
_CACHE_SIZE = 32
_CACHE_LOCK = threading.Lock()


def _cached_validator(spec: SchemaSpec) -> SchemaValidator:
    key = id(spec)
    with _CACHE_LOCK:
        entry = _CACHE.get(key)
        if entry is not None and entry[0] is spec:
            _CACHE.move_to_end(key)
            return entry[1]
    validator = SchemaValidator(spec)
    with _CACHE_LOCK:
        _CACHE[key] = (spec, validator)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return validator


def _url2pathname(path: str) -> str:
    # urllib.request imports http.client, email and ssl: only schemas with file
    # references pay for them.
    from urllib.request import url2pathname

    return url2pathname(path)


def _fetch_remote(uri: str, on_request: Callable[[Any], None]) -> Any:
    """GET a remote schema document: at most ``_REMOTE_MAX_BYTES``; ``_REMOTE_TIMEOUT``
    bounds each wait and the whole body (a server dripping bytes cannot hold the run).
    ``on_request`` is called before each request, redirects included (it may refuse)."""
    import httpx

    deadline = time.monotonic() + _REMOTE_TIMEOUT
    headers = {"User-Agent": "llmfix", "Accept": "application/schema+json, application/json"}
    body = bytearray()
    try:
        with (
            httpx.Client(
                timeout=_REMOTE_TIMEOUT,
                follow_redirects=True,
                max_redirects=_REMOTE_MAX_REDIRECTS,
                headers=headers,
                event_hooks={"request": [on_request]},
            ) as client,
            client.stream("GET", uri) as response,
        ):
            if response.status_code != 200:
                reason = f"HTTP {response.status_code} {response.reason_phrase}".strip()
                raise RefRefused(f"cannot fetch {uri}: {reason}")
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > _REMOTE_MAX_BYTES:
                raise RefRefused(f"{uri} is larger than {_REMOTE_MAX_BYTES:,} bytes")
            content_type = response.headers.get("content-type", "").lower()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > _REMOTE_MAX_BYTES:
                    raise RefRefused(f"{uri} is larger than {_REMOTE_MAX_BYTES:,} bytes")
                if time.monotonic() > deadline:
                    raise RefRefused(
                        f"cannot fetch {uri}: no complete answer in {_REMOTE_TIMEOUT:g} s"
                    )
    except httpx.HTTPError as error:
        problem = one_line(str(error)) or type(error).__name__
        raise RefRefused(f"cannot fetch {uri}: {problem}") from None
    suffix = Path(urlsplit(uri).path).suffix.lower()
    if suffix not in (".json", ".yaml", ".yml"):
        suffix = ".yaml" if "yaml" in content_type else ".json" if "json" in content_type else ""
    return parse_schema_document(bytes(body), uri, suffix, what="response")
