"""Tool registries: the tools a model was offered, by name, each with its parameters schema.

A registry is read from what people already have at hand (``llmfix repair --tools FILE``):

- an OpenAI ``tools`` list: ``[{"type": "function", "function": {name, description,
  parameters}}]`` (or the flat Responses API form ``{"type": "function", name, parameters}``);
- an Anthropic ``tools`` list: ``[{name, description, input_schema}]``;
- an MCP ``tools/list`` result: ``{"tools": [{name, description, inputSchema}]}``, also the
  whole JSON-RPC response (``{"result": {"tools": [...]}}``);
- a request body that holds a ``tools`` list (OpenAI or Anthropic), Gemini's
  ``[{"functionDeclarations": [...]}]``, bare functions ``{name, parameters}``;
- a single tool in any of those shapes.

JSON or YAML (by extension, else by the first character). Each tool's schema is unwrapped by
:func:`llmfix.schema.load.schema_from_value` and compiled when the registry is built, so a bad
schema fails early with one line naming the file and the tool. ``strict=False`` keeps a tool
whose schema does not compile: its arguments are then not validated (the check reports
``tools.bad_schema``), which is what a corpus of third-party tool definitions needs.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmfix.errors import SchemaError
from llmfix.model import Risk
from llmfix.schema.load import describe_kind

if TYPE_CHECKING:
    from llmfix.schema.validate import SchemaValidator

# A name close enough to be suggested, and close enough (and unique) to be renamed to.
SUGGEST_CUTOFF = 0.6
RENAME_CUTOFF = 0.8
RENAME_MARGIN = 0.1  # a second name this close to the best makes a rename ambiguous

_SEPARATORS = re.compile(r"[\s_.\-/:]+")


def _fold(name: str) -> str:
    """``getWeather``, ``get-weather`` and ``Get_Weather`` all fold to ``getweather``."""
    return _SEPARATORS.sub("", name).casefold()


@dataclass(frozen=True)
class Tool:
    """One tool: its name, description and the JSON Schema of its arguments."""

    name: str
    parameters: dict[str, Any] | bool
    description: str | None = None
    shape: str = "openai-function"  # how it was written (a llmfix.schema.load shape)
    problem: str | None = None  # why the schema does not compile (strict=False only)
    output_schema: dict[str, Any] | bool | None = None  # what its results must satisfy

    @property
    def properties(self) -> dict[str, Any]:
        """Declared top-level properties (empty when the schema declares none)."""
        if isinstance(self.parameters, dict):
            props = self.parameters.get("properties")
            if isinstance(props, dict):
                return props
        return {}


@dataclass(frozen=True)
class NameMatch:
    """What a registered name an unknown one most likely meant, and how sure that is."""

    name: str
    risk: Risk  # SAFE: equal but for case and separators; GUESS: similar spelling
    ratio: float


@dataclass
class ToolRegistry:
    """Tools by name. Build with :meth:`load` or :meth:`from_value`."""

    tools: dict[str, Tool]
    source: str = "<tools>"
    _validators: dict[str, SchemaValidator | None] = field(default_factory=dict, repr=False)
    _outputs: dict[str, SchemaValidator] = field(default_factory=dict, repr=False)

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str, *, strict: bool = True, allow_remote: bool = False) -> ToolRegistry:
        """Read tools from a JSON or YAML file (see the module docstring)."""
        # (start-up: the schema modules load only when tools are read)
        from llmfix.schema.load import read_schema_document

        value = read_schema_document(Path(path).expanduser(), source=path)
        return cls.from_value(value, source=path, strict=strict, allow_remote=allow_remote)

    @classmethod
    def from_value(
        cls,
        value: Any,
        source: str = "<tools>",
        *,
        strict: bool = True,
        allow_remote: bool = False,
    ) -> ToolRegistry:
        """Build a registry from an in-memory tools list, MCP result or single tool.

        ``allow_remote`` lets the tools' schemas fetch ``http(s)`` ``$ref`` targets
        (``--allow-remote-refs``); otherwise such a reference is a schema error."""
        entries = list(_tool_entries(value, source))
        tools: dict[str, Tool] = {}
        for where, entry in entries:
            tool = _read_tool(entry, where, source)
            if tool.name in tools:
                raise SchemaError(source, f"{where}: tool {tool.name!r} is defined twice")
            tools[tool.name] = tool
        registry = cls(tools, source)
        for name in tools:
            registry._compile(name, strict, allow_remote)
        return registry

    def _compile(self, name: str, strict: bool, allow_remote: bool) -> None:
        # (start-up: the schema modules load only when tools are read)
        from llmfix.schema.load import schema_from_value
        from llmfix.schema.validate import SchemaValidator

        tool = self.tools[name]
        if tool.output_schema is not None:
            where = f"{self.source} (tool {name!r}, output schema)"
            try:
                output = schema_from_value(tool.output_schema, source=where)
                self._outputs[name] = SchemaValidator(output, allow_remote=allow_remote)
            except SchemaError as error:
                if strict:
                    raise SchemaError(
                        self.source, f"tool {name!r} output schema: {error.problem}"
                    ) from None
        spec = schema_from_value(tool.parameters, source=f"{self.source} (tool {name!r})")
        try:
            self._validators[name] = SchemaValidator(spec, allow_remote=allow_remote)
        except SchemaError as error:
            if strict:
                raise SchemaError(self.source, f"tool {name!r}: {error.problem}") from None
            self._validators[name] = None
            self.tools[name] = Tool(
                tool.name,
                tool.parameters,
                tool.description,
                tool.shape,
                error.problem,
                tool.output_schema,
            )

    # -- queries ----------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def __contains__(self, name: object) -> bool:
        return name in self.tools

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools.values())

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def schema_for(self, name: str) -> dict[str, Any] | bool | None:
        """The parameters schema of ``name`` (``None`` when it is not registered)."""
        tool = self.tools.get(name)
        return None if tool is None else tool.parameters

    def validator_for(self, name: str) -> SchemaValidator | None:
        """The compiled schema of ``name`` (``None`` if unknown or it does not compile)."""
        return self._validators.get(name)

    def output_validator_for(self, name: str) -> SchemaValidator | None:
        """The compiled output schema of ``name`` (MCP ``outputSchema``, or ``output_schema``
        in any tool shape); ``None`` when the tool declares none."""
        return self._outputs.get(name)

    @property
    def output_names(self) -> list[str]:
        """The tools that declare an output schema."""
        return list(self._outputs)

    def closest(self, name: str) -> str | None:
        """The registered name most like ``name`` (difflib), if any is reasonably close."""
        match = self.match(name, cutoff=SUGGEST_CUTOFF)
        return None if match is None else match.name

    def match(self, name: str, *, cutoff: float = SUGGEST_CUTOFF) -> NameMatch | None:
        """The best registered match for an unknown ``name``.

        Equal after folding case and separators (``getWeather`` → ``get_weather``) is a
        ``safe`` match; otherwise the most similar spelling at or above ``cutoff`` is a
        ``guess``.
        """
        if name in self.tools:
            return NameMatch(name, Risk.LOSSLESS, 1.0)
        folded = _fold(name)
        same = [n for n in self.tools if _fold(n) == folded]
        if len(same) == 1:
            return NameMatch(same[0], Risk.SAFE, 1.0)
        scored = self._scores(name)
        if not scored or scored[0][0] < cutoff:
            return None
        return NameMatch(scored[0][1], Risk.GUESS, scored[0][0])

    def rename_target(self, name: str) -> NameMatch | None:
        """A registered name ``name`` can be renamed to: a safe match, or a close one with no
        rival within :data:`RENAME_MARGIN` of it."""
        match = self.match(name, cutoff=RENAME_CUTOFF)
        if match is None or match.risk is not Risk.GUESS:
            return match
        # Unique: no other registered name is nearly as close.
        rivals = [n for ratio, n in self._scores(name) if ratio >= match.ratio - RENAME_MARGIN]
        return match if len(rivals) == 1 else None

    def _scores(self, name: str) -> list[tuple[float, str]]:
        matcher = difflib.SequenceMatcher(b=name.casefold())
        scored = []
        for candidate in self.tools:
            matcher.set_seq1(candidate.casefold())
            scored.append((matcher.ratio(), candidate))
        scored.sort(key=lambda pair: -pair[0])
        return scored

    def parameter_names(self) -> frozenset[str]:
        """Every top-level argument name declared by any tool."""
        return frozenset(key for tool in self.tools.values() for key in tool.properties)


# ------------------------------------------------------------------------------ reading


def _tool_entries(value: Any, source: str) -> Iterator[tuple[str, Any]]:
    """``(where, tool definition)`` pairs from any accepted top-level shape."""
    if isinstance(value, Mapping):
        result = value.get("result")
        if "tools" not in value and isinstance(result, Mapping) and "tools" in result:
            value = result  # a whole JSON-RPC response to tools/list
        if "tools" in value and not _looks_like_tool(value):
            tools = value["tools"]
            if not isinstance(tools, list):
                raise SchemaError(source, '"tools" must be a list of tool definitions')
            yield from _list_entries(tools, "/tools", source)
            return
        if "functionDeclarations" in value:
            yield from _list_entries(value["functionDeclarations"], "/functionDeclarations", source)
            return
        yield "the tool", value
        return
    if isinstance(value, list):
        yield from _list_entries(value, "", source)
        return
    raise SchemaError(
        source, f"expected a list of tools or a tool definition, got {describe_kind(value)}"
    )


def _list_entries(items: Any, prefix: str, source: str) -> Iterator[tuple[str, Any]]:
    if not isinstance(items, list):
        raise SchemaError(source, f"{prefix or 'the top level'} must be a list of tools")
    if not items:
        raise SchemaError(source, "the tools list is empty")
    for i, item in enumerate(items):
        if isinstance(item, Mapping) and isinstance(item.get("functionDeclarations"), list):
            yield from _list_entries(
                item["functionDeclarations"], f"{prefix}/{i}/functionDeclarations", source
            )
        else:
            yield f"{prefix}/{i}", item


def _looks_like_tool(value: Mapping[str, Any]) -> bool:
    return any(k in value for k in ("input_schema", "inputSchema", "parameters", "function"))


def _read_tool(entry: Any, where: str, source: str) -> Tool:
    # (start-up: the schema modules load only when tools are read)
    from llmfix.schema.load import schema_from_value

    if not isinstance(entry, Mapping):
        raise SchemaError(
            source, f"{where}: expected a tool definition, got {describe_kind(entry)}"
        )
    try:
        spec = schema_from_value(dict(entry), source=source)
    except SchemaError as error:
        raise SchemaError(source, f"{where}: {error.problem}") from None
    if spec.shape == "json-schema" and _bare_function(entry):
        # {"name": ..., "description": ...}: a function that takes no arguments
        spec = schema_from_value({**entry, "parameters": {"type": "object", "properties": {}}})
    if spec.shape in ("json-schema", "openai-response-format"):
        raise SchemaError(
            source,
            f"{where}: not a tool definition (expected name with parameters, input_schema or "
            "inputSchema)",
        )
    if not spec.name or not spec.name.strip():
        raise SchemaError(source, f"{where}: the tool has no name")
    description = _description(entry)
    return Tool(spec.name, spec.schema, description, spec.shape, None, _output_schema(entry))


def _output_schema(entry: Mapping[str, Any]) -> dict[str, Any] | bool | None:
    """MCP's ``outputSchema``, or ``output_schema`` next to an OpenAI/Anthropic definition."""
    function = entry.get("function")
    for holder in (entry, function if isinstance(function, Mapping) else {}):
        for key in ("outputSchema", "output_schema"):
            value = holder.get(key)
            if isinstance(value, (dict, bool)):
                return value
    return None


def _bare_function(entry: Mapping[str, Any]) -> bool:
    return isinstance(entry.get("name"), str) and set(entry) <= {"name", "description", "type"}


def _description(entry: Mapping[str, Any]) -> str | None:
    function = entry.get("function")
    holder = function if isinstance(function, Mapping) else entry
    text = holder.get("description")
    return text if isinstance(text, str) else None
