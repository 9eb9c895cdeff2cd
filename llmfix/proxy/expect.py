"""What a request expects of its answer: a JSON value matching a schema, tool calls
matching the tools it offered, or nothing the proxy can check.

A request says it in its own body (:func:`expectation`):

=====================  ==========================================  =========================
API                    JSON answer                                 tools
=====================  ==========================================  =========================
OpenAI chat            ``response_format``: ``json_schema``       ``tools[].function``
                       (``json_schema.schema``) or ``json_object``
OpenAI Responses       ``text.format``: ``json_schema``            ``tools[]`` of type
                       (``schema``) or ``json_object``             ``function``
Anthropic messages     ``output_format``: ``json_schema``          ``tools[]`` with an
                       (``schema``)                                ``input_schema``
=====================  ==========================================  =========================

When it says nothing, the schema or tools the proxy was started with for the request's
model or route apply (:class:`Configured`). An answer in prose to a request that asked for
no JSON is not checked: it is no JSON problem.

Schemas and tool lists are compiled once per distinct value (:class:`Compiled`): a client
sends the same ``response_format`` with every request.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llmfix.run.settings import RepairRun
    from llmfix.schema.validate import SchemaValidator
    from llmfix.toolcalls.registry import ToolRegistry

# The three APIs the proxy checks, by the path it serves them on.
ROUTES: dict[str, str] = {
    "/v1/chat/completions": "openai-chat",
    "/v1/responses": "openai-responses",
    "/v1/messages": "anthropic",
}


@dataclass(frozen=True)
class Expectation:
    """What one request expects: ``json`` (its text answer must be JSON), checked against
    ``validator`` when there is one; tool calls checked against ``registry``."""

    json: bool = False
    validator: SchemaValidator | None = None
    registry: ToolRegistry | None = None
    source: str = "none"  # where it came from: request, a configured file, none

    @property
    def tools(self) -> dict[str, SchemaValidator]:
        """Each tool's argument validator, by name (what the check of an item takes)."""
        if self.registry is None:
            return {}
        found = {}
        for name in self.registry.names:
            validator = self.registry.validator_for(name)
            if validator is not None:
                found[name] = validator
        return found


@dataclass(frozen=True)
class Configured:
    """Schemas and tool files the proxy was started with, by key: a model's name, a route
    (``/v1/messages``), or ``*`` for every request; the model's wins over the route's."""

    schemas: dict[str, SchemaValidator] = field(default_factory=dict)
    tools: dict[str, ToolRegistry] = field(default_factory=dict)

    def schema_for(self, route: str, model: str | None) -> SchemaValidator | None:
        return self.schemas.get(_key(self.schemas, route, model))

    def tools_for(self, route: str, model: str | None) -> ToolRegistry | None:
        return self.tools.get(_key(self.tools, route, model))


def _key(table: dict[str, Any], route: str, model: str | None) -> str:
    """The key of ``table`` that applies: the model's, else the route's, else ``*``."""
    if model is not None and model in table:
        return model
    return route if route in table else "*"


class Compiled:
    """Validators and tool registries made from request bodies, kept for the last
    ``size`` distinct schemas (a client repeats its schema with every request)."""

    def __init__(self, allow_remote: bool = False, size: int = 256) -> None:
        self.allow_remote = allow_remote
        self.size = size
        self._found: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def validator(self, schema: Any) -> SchemaValidator:
        # (start-up: loaded by the first request that carries a schema)
        from llmfix.pipeline.core import make_validator

        def make() -> Any:
            return make_validator(schema, allow_remote=self.allow_remote)

        return self._get("schema", schema, make)  # type: ignore[no-any-return]

    def registry(self, tools: list[Any]) -> ToolRegistry:
        # (start-up: loaded by the first request that offers tools)
        from llmfix.toolcalls.registry import ToolRegistry

        def make() -> Any:
            return ToolRegistry.from_value(
                tools, "the request's tools", strict=False, allow_remote=self.allow_remote
            )

        return self._get("tools", tools, make)  # type: ignore[no-any-return]

    def _get(self, kind: str, value: Any, make: Any) -> Any:
        key = (kind, json.dumps(value, sort_keys=True, ensure_ascii=False))
        with self._lock:
            if key in self._found:
                self._found.move_to_end(key)
                return self._found[key]
        made = make()
        with self._lock:
            self._found[key] = made
            while len(self._found) > self.size:
                self._found.popitem(last=False)
        return made


def expectation(
    api: str, body: Any, compiled: Compiled, configured: Configured, route: str
) -> Expectation:
    """What the request ``body`` to ``api`` (a value of :data:`ROUTES`) expects; a bad
    schema in it is a :class:`~llmfix.errors.SchemaError` (the proxy answers 400)."""
    if not isinstance(body, dict):
        return Expectation()
    wanted, schema = _json_wanted(api, body)
    tools = _function_tools(api, body.get("tools"))
    model = body.get("model") if isinstance(body.get("model"), str) else None
    validator = compiled.validator(schema) if schema is not None else None
    registry = compiled.registry(tools) if tools else None
    source = "request" if (wanted or registry is not None) else "none"
    if not wanted and registry is None:
        configured_schema = configured.schema_for(route, model)
        configured_tools = configured.tools_for(route, model)
        if configured_schema is not None or configured_tools is not None:
            wanted = configured_schema is not None
            validator, registry, source = configured_schema, configured_tools, "configured"
    return Expectation(json=wanted, validator=validator, registry=registry, source=source)


def _json_wanted(api: str, body: dict[str, Any]) -> tuple[bool, Any]:
    """Whether the request asks for a JSON answer, and its schema when it gives one."""
    if api == "openai-chat":
        fmt = body.get("response_format")
        inner = fmt.get("json_schema") if isinstance(fmt, dict) else None
        schema = inner.get("schema") if isinstance(inner, dict) else None
    elif api == "openai-responses":
        text = body.get("text")
        fmt = text.get("format") if isinstance(text, dict) else None
        schema = fmt.get("schema") if isinstance(fmt, dict) else None
    else:
        fmt = body.get("output_format")
        schema = fmt.get("schema") if isinstance(fmt, dict) else None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "json_schema":
        return True, schema if isinstance(schema, (dict, bool)) else None
    return kind == "json_object", None


def _function_tools(api: str, tools: Any) -> list[Any]:
    """The request's own function tools (built-in tools such as web search have no
    arguments schema of the client's: they are left out)."""
    if not isinstance(tools, list):
        return []
    found = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if api == "anthropic":
            if isinstance(tool.get("input_schema"), dict) and isinstance(tool.get("name"), str):
                found.append({"name": tool["name"], "input_schema": tool["input_schema"]})
        elif tool.get("type") == "function":
            found.append(tool)
    return found


def configured_files(
    run: RepairRun, schema: str | None, schema_for: list[str], tools_for: list[str]
) -> Configured:
    """The schemas and tool files given on the command line (``--schema``,
    ``--schema-for KEY=FILE``, ``--tools-for KEY=FILE``), each loaded once now: a bad
    file stops the proxy before it serves anything."""
    # (start-up: loaded when the proxy starts)
    from llmfix.errors import ConfigError
    from llmfix.toolcalls.registry import ToolRegistry

    allow = run.options.allow_remote_refs
    schemas: dict[str, SchemaValidator] = {}
    tools: dict[str, ToolRegistry] = {}
    if schema is not None:
        schemas["*"] = run.validators.get(schema, allow)
    for flag, given in (("--schema-for", schema_for), ("--tools-for", tools_for)):
        for pair in given:
            key, sep, path = pair.partition("=")
            if not sep or not key or not path:
                raise ConfigError(f"{flag} takes KEY=FILE, not {pair!r}")
            if flag == "--schema-for":
                schemas[key] = run.validators.get(path, allow)
            else:
                tools[key] = ToolRegistry.load(path, allow_remote=allow)
    return Configured(schemas, tools)
