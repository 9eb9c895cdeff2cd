"""Schema input: files, builtins, and the tool-definition shapes people actually have."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from llmfix.errors import SchemaError
from llmfix.files import read as filebytes
from llmfix.schema.load import builtin_schemas, load_schema, schema_from_value
from llmfix.schema.validate import SchemaValidator

PARAMS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

SHAPES = [
    pytest.param(PARAMS, "json-schema", None, PARAMS, id="plain-schema"),
    pytest.param(
        {"name": "get_weather", "description": "Weather", "input_schema": PARAMS},
        "anthropic-tool",
        "get_weather",
        PARAMS,
        id="anthropic-tool",
    ),
    pytest.param(
        {"name": "get_weather", "description": "Weather", "inputSchema": PARAMS},
        "mcp-tool",
        "get_weather",
        PARAMS,
        id="mcp-tool",
    ),
    pytest.param(
        {"type": "function", "function": {"name": "get_weather", "parameters": PARAMS}},
        "openai-tool",
        "get_weather",
        PARAMS,
        id="openai-tool",
    ),
    pytest.param(
        {"type": "function", "name": "get_weather", "parameters": PARAMS},
        "openai-tool",
        "get_weather",
        PARAMS,
        id="openai-responses-tool",
    ),
    pytest.param(
        {"name": "get_weather", "description": "Weather", "parameters": PARAMS},
        "openai-function",
        "get_weather",
        PARAMS,
        id="openai-function",
    ),
    pytest.param(
        {
            "type": "json_schema",
            "json_schema": {"name": "weather", "schema": PARAMS, "strict": True},
        },
        "openai-response-format",
        "weather",
        PARAMS,
        id="openai-response-format",
    ),
    pytest.param(
        {"type": "json_schema", "name": "weather", "schema": PARAMS, "strict": True},
        "openai-response-format",
        "weather",
        PARAMS,
        id="openai-response-format-flat",
    ),
    pytest.param(
        {"name": "weather", "schema": PARAMS, "strict": True},
        "openai-response-format",
        "weather",
        PARAMS,
        id="openai-json-schema-inner",
    ),
    pytest.param(
        {"type": "function", "function": {"name": "ping"}},
        "openai-tool",
        "ping",
        {"type": "object", "properties": {}},
        id="function-without-parameters",
    ),
    pytest.param(True, "json-schema", None, True, id="boolean-schema"),
]


@pytest.mark.parametrize(("value", "shape", "name", "schema"), SHAPES)
def test_schema_from_value_unwraps_shape(
    value: Any, shape: str, name: str | None, schema: Any
) -> None:
    spec = schema_from_value(value)
    assert (spec.shape, spec.name, spec.schema) == (shape, name, schema)


def test_schema_with_name_and_type_is_not_unwrapped() -> None:
    schema = {"type": "object", "name": "x", "properties": {"parameters": {"type": "string"}}}
    assert schema_from_value(schema).shape == "json-schema"


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        pytest.param([1, 2], "got an array", id="array"),
        pytest.param("x", "got a string", id="string"),
        pytest.param(None, "got null", id="null"),
        pytest.param(
            [{"type": "function", "function": {"name": "a"}}],
            "list of 1 tool definitions",
            id="list-of-tools",
        ),
        pytest.param({"name": "t", "input_schema": [1]}, "input_schema must be", id="bad-inner"),
        pytest.param({"type": "json_schema", "json_schema": {"name": "x"}}, 'no "schema"', id="rf"),
        pytest.param({"type": "json_object"}, "carries no schema", id="json-object"),
    ],
)
def test_schema_from_value_rejects(value: Any, fragment: str) -> None:
    with pytest.raises(SchemaError, match=fragment):
        schema_from_value(value, source="inline")


# ------------------------------------------------------------------------------ files


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("filename", "text"),
    [
        pytest.param("s.json", json.dumps(PARAMS), id="json"),
        pytest.param("s.yaml", "type: object\nproperties:\n  city: {type: string}\n", id="yaml"),
        pytest.param("s.yml", "type: object\nproperties:\n  city: {type: string}\n", id="yml"),
        pytest.param("s.schema", json.dumps(PARAMS), id="sniffed-json"),
        pytest.param(
            "s.txt", "type: object\nproperties:\n  city: {type: string}\n", id="sniffed-yaml"
        ),
    ],
)
def test_load_schema_reads_file(tmp_path: Path, filename: str, text: str) -> None:
    spec = load_schema(write(tmp_path / filename, text))
    assert spec.schema["properties"] == {"city": {"type": "string"}}  # type: ignore[index]


def test_load_schema_unwraps_tool_file(tmp_path: Path) -> None:
    path = write(tmp_path / "tool.json", json.dumps({"name": "t", "input_schema": PARAMS}))
    assert load_schema(path).shape == "anthropic-tool"


def test_load_schema_keeps_source_as_given(tmp_path: Path) -> None:
    path = write(tmp_path / "s.json", "{}")
    assert load_schema(path).source == path


def test_load_schema_sets_directory_base_uri(tmp_path: Path) -> None:
    spec = load_schema(write(tmp_path / "s.json", "{}"))
    assert spec.base_uri == tmp_path.resolve().as_uri() + "/"


def test_load_schema_accepts_utf8_bom(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(PARAMS).encode())
    assert load_schema(str(tmp_path / "s.json")).schema == PARAMS


def test_yaml_integer_keys_become_strings(tmp_path: Path) -> None:
    spec = load_schema(write(tmp_path / "s.yaml", "properties:\n  200: {type: string}\n"))
    assert spec.schema == {"properties": {"200": {"type": "string"}}}


@pytest.mark.parametrize(
    ("filename", "content", "fragment"),
    [
        pytest.param("bad.json", '{\n  "a": 1,\n}', "invalid JSON at line 3, column 1", id="json"),
        pytest.param(
            "bad.yaml", "a:\n  b: [1, 2\nc: 3\n", "invalid YAML at line 3, column 2", id="yaml"
        ),
        pytest.param("empty.json", "  \n", "file is empty", id="empty"),
        pytest.param("list.json", "[1, 2]", "got an array", id="not-an-object"),
        pytest.param("str.yaml", "just text\n", "got a string", id="yaml-scalar"),
        pytest.param("date.yaml", "default: 2024-01-01\n", "is a date", id="yaml-date"),
        pytest.param("loop.yaml", "a: &x [*x]\n", "contain itself", id="yaml-self-alias"),
        pytest.param("key.yaml", "properties:\n  yes: {}\n", "is not a string", id="yaml-bool-key"),
        pytest.param("key.yaml", "? [1, 2]\n: x\n", "found unhashable key", id="yaml-list-key"),
        pytest.param("many.yaml", "a: 1\n---\nb: 2\n", "invalid YAML at line 2", id="yaml-2-docs"),
    ],
)
def test_load_schema_bad_content_is_one_line_schema_error(
    tmp_path: Path, filename: str, content: str, fragment: str
) -> None:
    path = write(tmp_path / filename, content)
    with pytest.raises(SchemaError) as caught:
        load_schema(path)
    message = str(caught.value)
    assert (fragment in message, path in message, "\n" in message) == (True, True, False)


def test_load_schema_non_utf8(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(SchemaError, match=r"not UTF-8 text \(byte 0xff at offset 7\)"):
        load_schema(str(tmp_path / "s.json"))


def test_load_schema_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="file not found"):
        load_schema(str(tmp_path / "nope.json"))


def test_load_schema_directory(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="is a directory"):
        load_schema(str(tmp_path))


def test_load_schema_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "s.json", "{}")

    def refuse(*args: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(filebytes.os, "open", refuse)  # the reader's open()
    with pytest.raises(SchemaError, match="permission denied"):
        load_schema(path)


def test_schema_error_names_file_and_problem(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.json")
    with pytest.raises(SchemaError) as caught:
        load_schema(path)
    assert str(caught.value) == f"schema {path}: file not found"


# --------------------------------------------------------------------------- builtins

BUILTINS = sorted(builtin_schemas())


def test_builtin_names() -> None:
    assert BUILTINS == ["openai-tool-calls", "tool-call", "tool-call-envelope"]


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_has_one_line_description(name: str) -> None:
    description = builtin_schemas()[name]
    assert (bool(description), "\n" in description) == (True, False)


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_is_valid_schema(name: str) -> None:
    schema = load_schema(f"builtin:{name}").schema
    jsonschema.Draft202012Validator.check_schema(schema)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", BUILTINS)
def test_builtin_compiles(name: str) -> None:
    assert SchemaValidator(load_schema(f"builtin:{name}")).draft == "2020-12"


def test_builtin_source_and_no_base() -> None:
    spec = load_schema("builtin:tool-call")
    assert (spec.source, spec.base_uri) == ("builtin:tool-call", None)


def test_unknown_builtin_lists_names() -> None:
    with pytest.raises(
        SchemaError, match="available: openai-tool-calls, tool-call, tool-call-envelope"
    ):
        load_schema("builtin:nope")


@pytest.mark.parametrize(
    ("name", "value", "valid"),
    [
        pytest.param(
            "tool-call-envelope",
            {"toolCalls": [{"name": "f", "arguments": {"x": 1}}], "content": None},
            True,
            id="envelope-ok",
        ),
        pytest.param(
            "tool-call-envelope",
            {"toolCalls": [], "content": "hi", "needsMoreWork": False},
            True,
            id="envelope-no-calls",
        ),
        pytest.param("tool-call-envelope", {"content": "hi"}, False, id="envelope-no-toolCalls"),
        pytest.param(
            "tool-call-envelope",
            {"toolCalls": [{"name": "f", "arguments": "{}"}]},
            False,
            id="envelope-string-arguments",
        ),
        pytest.param("tool-call", {"name": "f", "arguments": {}}, True, id="call-ok"),
        pytest.param("tool-call", {"name": "f"}, False, id="call-no-arguments"),
        pytest.param(
            "openai-tool-calls",
            [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
            True,
            id="openai-ok",
        ),
        pytest.param(
            "openai-tool-calls",
            [{"type": "function", "function": {"name": "f", "arguments": {}}}],
            False,
            id="openai-object-arguments",
        ),
    ],
)
def test_builtin_accepts_and_rejects(name: str, value: Any, valid: bool) -> None:
    assert SchemaValidator(load_schema(f"builtin:{name}")).is_valid(value) is valid
