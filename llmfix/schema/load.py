"""Schema input: read a JSON Schema from a file or a bundled name, and unwrap tool definitions.

People rarely have a bare JSON Schema at hand; they have the tool definition they sent
to a model. :func:`schema_from_value` accepts the shapes that occur in practice and
returns the JSON Schema inside, with the shape and the tool/format name it found:

- ``json-schema`` — a plain JSON Schema (an object or a boolean), passed through;
- ``anthropic-tool`` — ``{"name", "description", "input_schema"}``;
- ``mcp-tool`` — an MCP ``tools/list`` entry, ``{"name", "description", "inputSchema"}``;
- ``openai-tool`` — ``{"type": "function", "function": {"name", "parameters"}}``, or the
  flat Responses API form ``{"type": "function", "name", "parameters"}``;
- ``openai-function`` — a bare function, ``{"name", "parameters"}`` (also Gemini's
  function declarations);
- ``openai-response-format`` — ``{"type": "json_schema", "json_schema": {"name", "schema",
  "strict"}}``, the flat form ``{"type": "json_schema", "name", "schema"}``, or just the
  inner ``{"name", "schema"}``.

A function without ``parameters`` takes no arguments: its schema is an object with no
declared properties.

This module is the one stage module that reads files: ``.json`` files are parsed as JSON,
``.yaml``/``.yml`` as YAML (``yaml.safe_load``), anything else by its first character
(``{`` or ``[`` means JSON). Every failure is a :class:`~llmfix.errors.SchemaError` whose
message is one line naming the file and the problem.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmfix.errors import SchemaError

SHAPES: tuple[str, ...] = (
    "json-schema",
    "anthropic-tool",
    "mcp-tool",
    "openai-tool",
    "openai-function",
    "openai-response-format",
)

BUILTIN_PREFIX = "builtin:"

# Keywords whose presence at the top level says "this is already a JSON Schema", so a
# schema that merely has a ``name`` next to a ``schema``/``parameters`` key is not unwrapped.
_SCHEMA_KEYWORDS = frozenset(
    {
        "$schema",
        "$ref",
        "$defs",
        "definitions",
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "allOf",
        "anyOf",
        "oneOf",
    }
)

# What a function that declares no parameters accepts.
_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class SchemaSpec:
    """A JSON Schema ready to compile, with where it came from."""

    schema: dict[str, Any] | bool  # the JSON Schema itself (unwrapped)
    source: str  # file path as given, or "builtin:NAME"
    shape: str  # one of SHAPES
    name: str | None  # tool/function/format name when the shape has one
    base_uri: str | None  # file URI of the schema's directory, for $ref resolution


def load_schema(ref: str) -> SchemaSpec:
    """Read a schema from a ``.json``/``.yaml``/``.yml`` file or a ``builtin:NAME``."""
    if ref.startswith(BUILTIN_PREFIX):
        return _load_builtin(ref[len(BUILTIN_PREFIX) :])
    path = Path(ref).expanduser()
    value = read_schema_document(path, source=ref)
    return schema_from_value(value, source=ref, base_uri=directory_uri(path))


def schema_from_value(
    value: Any, source: str = "<schema>", *, base_uri: str | None = None
) -> SchemaSpec:
    """Unwrap an in-memory schema or tool definition (see the module docstring).

    ``base_uri`` is the directory relative ``$ref`` files are looked up in; without it,
    only references inside the schema resolve.
    """
    schema, shape, name = _unwrap(value, source)
    return SchemaSpec(schema=schema, source=source, shape=shape, name=name, base_uri=base_uri)


def builtin_schemas() -> dict[str, str]:
    """The bundled schemas: name (for ``builtin:NAME``) → one-line description."""
    out: dict[str, str] = {}
    for entry in _builtin_dir().iterdir():
        if not entry.name.endswith(".json"):
            continue
        name = entry.name[: -len(".json")]
        schema = _load_builtin(name).schema
        out[name] = _describe(schema) if isinstance(schema, dict) else ""
    return dict(sorted(out.items()))


def directory_uri(path: Path) -> str:
    """The ``file:`` URI of the directory holding ``path``, with a trailing slash."""
    uri = path.resolve().parent.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def read_schema_document(path: Path, source: str | None = None) -> Any:
    """Read and parse one schema document (no unwrapping); used for ``$ref`` files too."""
    # (start-up: `llmfix schemas` imports this module and reads no schema file)
    from llmfix.files.read import DEFAULT_READ_LIMIT, ReadRefused, read_regular

    source = str(path) if source is None else source
    if path.is_dir():
        raise SchemaError(source, "is a directory, not a schema file")
    try:
        # A regular file of at most what an input may be: a FIFO or a device named by
        # an untrusted config would otherwise hang the run or fill its memory.
        data = read_regular(str(path), DEFAULT_READ_LIMIT)
    except ReadRefused as error:
        problem = "file not found" if error.problem == "no such file" else error.problem
        raise SchemaError(source, problem) from None
    return parse_schema_document(data, source, path.suffix.lower())


def parse_schema_document(data: bytes, source: str, suffix: str = "", what: str = "file") -> Any:
    """Parse a schema document's bytes: JSON for ``.json``, YAML for ``.yaml``/``.yml``,
    otherwise by the first character (``{`` or ``[`` means JSON). Used for files and for
    remote ``$ref`` bodies (``source`` is then the URL, ``what`` "response")."""
    text = _decode(data, source)
    if not text.strip():
        raise SchemaError(source, f"{what} is empty")
    if suffix == ".json":
        return _parse_json(text, source)
    if suffix in (".yaml", ".yml"):
        return _parse_yaml(text, source)
    if text.lstrip()[:1] in ("{", "["):
        return _parse_json(text, source)
    return _parse_yaml(text, source)


# ---------------------------------------------------------------------------- parsing


def _decode(data: bytes, source: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        bad = data[error.start : error.start + 1].hex()
        raise SchemaError(
            source, f"not UTF-8 text (byte 0x{bad} at offset {error.start})"
        ) from None


def _parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise SchemaError(
            source, f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}"
        ) from None
    except RecursionError:
        raise SchemaError(source, "invalid JSON: nested too deeply") from None


def _parse_yaml(text: str, source: str) -> Any:
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem = error.problem or error.context or "syntax error"
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SchemaError(source, f"invalid YAML{where}: {_one_line(problem)}") from None
    except yaml.YAMLError as error:
        raise SchemaError(source, f"invalid YAML: {_one_line(str(error))}") from None
    except RecursionError:
        raise SchemaError(source, "invalid YAML: nested too deeply") from None
    if value is None:
        raise SchemaError(source, "YAML document is empty")
    return _json_compatible(value, source)


def _json_compatible(value: Any, source: str) -> Any:
    """YAML values as JSON values: integer keys become strings; anything else non-JSON fails.

    Aliases may share a node between places (kept shared, so a "billion laughs" document
    costs nothing) but may not make a node contain itself.
    """
    done: dict[int, Any] = {}
    active: set[int] = set()

    def convert(node: Any, path: list[str]) -> Any:
        if node is None or isinstance(node, (str, bool, int, float)):
            return node
        key = id(node)
        if key in done:
            return done[key]
        if key in active:
            where = _pointer(path)
            raise SchemaError(source, f"YAML alias at {where} makes a value contain itself")
        if isinstance(node, dict):
            active.add(key)
            out: dict[str, Any] = {}
            for k, v in node.items():
                if isinstance(k, bool) or not isinstance(k, (str, int)):
                    raise SchemaError(
                        source,
                        f"YAML key {k!r} at {_pointer(path)} is not a string (quote it)",
                    )
                name = str(k)
                out[name] = convert(v, [*path, name])
        elif isinstance(node, list):
            active.add(key)
            out_list = [convert(v, [*path, str(i)]) for i, v in enumerate(node)]
            active.discard(key)
            done[key] = out_list
            return out_list
        else:
            kind = type(node).__name__
            raise SchemaError(
                source,
                f"YAML value at {_pointer(path)} is a {kind}, which JSON has no type for "
                "(quote it)",
            )
        active.discard(key)
        done[key] = out
        return out

    try:
        return convert(value, [])
    except RecursionError:
        raise SchemaError(source, "invalid YAML: nested too deeply") from None


def _pointer(path: list[str]) -> str:
    if not path:
        return "the top level"
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# -------------------------------------------------------------------------- unwrapping


def _unwrap(value: Any, source: str) -> tuple[dict[str, Any] | bool, str, str | None]:
    if isinstance(value, bool):
        return value, "json-schema", None
    if not isinstance(value, dict):
        raise SchemaError(source, _not_a_schema(value))

    name = value.get("name") if isinstance(value.get("name"), str) else None
    kind = value.get("type")
    if "input_schema" in value:
        return _inner(value["input_schema"], "input_schema", source), "anthropic-tool", name
    if "inputSchema" in value:
        return _inner(value["inputSchema"], "inputSchema", source), "mcp-tool", name
    if kind == "function":
        function = value.get("function")
        if isinstance(function, dict):
            fname = function.get("name") if isinstance(function.get("name"), str) else None
            params = function.get("parameters", _NO_PARAMETERS)
            return _inner(params, "function.parameters", source), "openai-tool", fname
        if "name" in value or "parameters" in value:
            params = value.get("parameters", _NO_PARAMETERS)
            return _inner(params, "parameters", source), "openai-tool", name
        raise SchemaError(source, 'a tool of type "function" needs a "function" object')
    if kind == "json_schema":
        inner = value.get("json_schema")
        if isinstance(inner, dict):
            iname = inner.get("name") if isinstance(inner.get("name"), str) else None
            if "schema" not in inner:
                raise SchemaError(source, 'response_format.json_schema has no "schema"')
            schema = _inner(inner["schema"], "json_schema.schema", source)
            return schema, "openai-response-format", iname
        if "schema" in value:
            schema = _inner(value["schema"], "schema", source)
            return schema, "openai-response-format", name
        raise SchemaError(source, 'a response format of type "json_schema" has no schema')
    if kind in ("json_object", "text") and len(value) == 1:
        raise SchemaError(source, f'response format "{kind}" carries no schema')
    if name is not None and not _SCHEMA_KEYWORDS.intersection(value):
        if "parameters" in value:
            return _inner(value["parameters"], "parameters", source), "openai-function", name
        if "schema" in value:
            return _inner(value["schema"], "schema", source), "openai-response-format", name
    return value, "json-schema", None


def _inner(value: Any, where: str, source: str) -> dict[str, Any] | bool:
    if isinstance(value, (dict, bool)):
        return value
    raise SchemaError(
        source, f"{where} must be a JSON Schema (an object), got {describe_kind(value)}"
    )


def _not_a_schema(value: Any) -> str:
    problem = f"expected a JSON Schema (an object or a boolean), got {describe_kind(value)}"
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        looks_like_tools = all("name" in v or "function" in v or "input_schema" in v for v in value)
        if looks_like_tools:
            problem += f" (it looks like a list of {len(value)} tool definitions; give one)"
    return problem


def describe_kind(value: Any) -> str:
    """``a string``, ``an array``, … for messages about a value of the wrong kind."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


# ---------------------------------------------------------------------------- builtins


def _builtin_dir() -> Any:
    """The bundled schemas: the top-level ``schemas/`` folder, installed by the wheel as
    ``llmfix.builtin_schemas`` and read from the source tree in a checkout (an editable
    install, which maps only the ``llmfix`` folder)."""
    from importlib import resources  # about 3 ms to import: only for builtin:NAME

    try:
        return resources.files("llmfix.builtin_schemas")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "schemas"


def _load_builtin(name: str) -> SchemaSpec:
    source = BUILTIN_PREFIX + name
    entry = _builtin_dir() / f"{name}.json"
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", name) or not entry.is_file():
        entries = _builtin_dir().iterdir()
        names = ", ".join(sorted(e.name[:-5] for e in entries if e.name.endswith(".json")))
        raise SchemaError(source, f"unknown builtin schema (available: {names})")
    value = _parse_json(entry.read_text(encoding="utf-8"), source)
    return schema_from_value(value, source=source)


def _describe(schema: dict[str, Any]) -> str:
    for key in ("description", "title"):
        text = schema.get(key)
        if isinstance(text, str) and text.strip():
            return _one_line(text)
    return ""
