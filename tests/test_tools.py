"""Tool registries: the tool lists people have (OpenAI, Anthropic, MCP, Gemini), by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmfix.errors import SchemaError
from llmfix.model import Risk
from llmfix.toolcalls.registry import ToolRegistry

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
SEARCH = {"type": "object", "properties": {"query": {"type": "string"}}}

SHAPES = [
    pytest.param(
        [
            {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
            {"type": "function", "function": {"name": "search_web", "parameters": SEARCH}},
        ],
        id="openai-tools",
    ),
    pytest.param(
        [
            {"type": "function", "name": "get_weather", "parameters": WEATHER},
            {"type": "function", "name": "search_web", "parameters": SEARCH},
        ],
        id="openai-responses-tools",
    ),
    pytest.param(
        [
            {"name": "get_weather", "description": "Weather", "input_schema": WEATHER},
            {"name": "search_web", "input_schema": SEARCH},
        ],
        id="anthropic-tools",
    ),
    pytest.param(
        {
            "tools": [
                {"name": "get_weather", "inputSchema": WEATHER},
                {"name": "search_web", "inputSchema": SEARCH},
            ]
        },
        id="mcp-tools-list-result",
    ),
    pytest.param(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "tools": [
                    {"name": "get_weather", "inputSchema": WEATHER},
                    {"name": "search_web", "inputSchema": SEARCH},
                ]
            },
        },
        id="mcp-json-rpc-response",
    ),
    pytest.param(
        {
            "model": "gpt-4o",
            "tools": [
                {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
                {"type": "function", "function": {"name": "search_web", "parameters": SEARCH}},
            ],
        },
        id="request-body",
    ),
    pytest.param(
        [
            {
                "functionDeclarations": [
                    {"name": "get_weather", "parameters": WEATHER},
                    {"name": "search_web", "parameters": SEARCH},
                ]
            }
        ],
        id="gemini-function-declarations",
    ),
]


@pytest.mark.parametrize("value", SHAPES)
def test_names_from_every_shape(value: Any) -> None:
    assert ToolRegistry.from_value(value).names == ["get_weather", "search_web"]


@pytest.mark.parametrize("value", SHAPES)
def test_schema_from_every_shape(value: Any) -> None:
    assert ToolRegistry.from_value(value).schema_for("get_weather") == WEATHER


def test_single_tool() -> None:
    registry = ToolRegistry.from_value({"name": "get_weather", "input_schema": WEATHER})
    assert registry.names == ["get_weather"]


def test_function_without_parameters_takes_an_empty_object() -> None:
    registry = ToolRegistry.from_value([{"name": "get_time", "description": "Now"}])
    assert registry.validator_for("get_time").is_valid({})  # type: ignore[union-attr]


def test_unknown_name_has_no_schema() -> None:
    assert ToolRegistry.from_value(SHAPES[0].values[0]).schema_for("nope") is None


def test_description_is_kept() -> None:
    registry = ToolRegistry.from_value(
        [{"name": "w", "description": "Weather", "input_schema": WEATHER}]
    )
    assert registry.get("w").description == "Weather"  # type: ignore[union-attr]


def test_parameter_names() -> None:
    registry = ToolRegistry.from_value(SHAPES[0].values[0])
    assert registry.parameter_names() == {"city", "query"}


# -- files ------------------------------------------------------------------------------------


def test_load_json_file(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(SHAPES[0].values[0]), encoding="utf-8")
    assert ToolRegistry.load(str(path)).names == ["get_weather", "search_web"]


def test_load_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "tools.yaml"
    path.write_text(
        "tools:\n"
        "  - name: get_weather\n"
        "    inputSchema:\n"
        "      type: object\n"
        "      properties: {city: {type: string}}\n",
        encoding="utf-8",
    )
    assert ToolRegistry.load(str(path)).names == ["get_weather"]


def test_missing_file_is_one_line_schema_error(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match=r"^schema .*nope\.json: file not found$"):
        ToolRegistry.load(str(tmp_path / "nope.json"))


BAD = [
    pytest.param([], "the tools list is empty", id="empty-list"),
    pytest.param("get_weather", "expected a list of tools", id="string"),
    pytest.param(
        [{"type": "object", "properties": {}}], "not a tool definition", id="plain-schema"
    ),
    pytest.param(
        [{"name": "a", "input_schema": WEATHER}, {"name": "a", "input_schema": SEARCH}],
        "defined twice",
        id="duplicate",
    ),
    pytest.param(
        [{"name": "a", "input_schema": 3}], "must be a JSON Schema", id="schema-not-object"
    ),
    pytest.param([{"name": "a", "input_schema": {"type": "float"}}], "tool 'a'", id="bad-schema"),
    pytest.param({"tools": "all"}, "must be a list", id="tools-not-list"),
    pytest.param([7], "expected a tool definition", id="item-not-object"),
]


@pytest.mark.parametrize(("value", "problem"), BAD)
def test_bad_registry_raises(value: Any, problem: str) -> None:
    with pytest.raises(SchemaError, match=problem):
        ToolRegistry.from_value(value, source="tools.json")


@pytest.mark.parametrize(("value", "problem"), BAD)
def test_bad_registry_message_is_one_line(value: Any, problem: str) -> None:
    with pytest.raises(SchemaError) as error:
        ToolRegistry.from_value(value, source="tools.json")
    assert "\n" not in str(error.value)


def test_lenient_registry_keeps_a_tool_whose_schema_does_not_compile() -> None:
    registry = ToolRegistry.from_value(
        [{"name": "a", "input_schema": {"type": "float"}}], strict=False
    )
    assert registry.get("a").problem is not None  # type: ignore[union-attr]


# -- names ------------------------------------------------------------------------------------

NAMES = ToolRegistry.from_value(
    [
        {"name": "get_weather", "input_schema": WEATHER},
        {"name": "get_forecast", "input_schema": WEATHER},
        {"name": "search_web", "input_schema": SEARCH},
        {"name": "search_news", "input_schema": SEARCH},
    ]
)


@pytest.mark.parametrize(
    ("name", "closest"),
    [
        ("get_wether", "get_weather"),
        ("getWeather", "get_weather"),
        ("search_webs", "search_web"),
        ("book_flight", None),
    ],
)
def test_closest(name: str, closest: str | None) -> None:
    assert NAMES.closest(name) == closest


@pytest.mark.parametrize(
    ("name", "target", "risk"),
    [
        ("GetWeather", "get_weather", Risk.SAFE),
        ("get-weather", "get_weather", Risk.SAFE),
        ("get_wether", "get_weather", Risk.GUESS),
    ],
)
def test_rename_target(name: str, target: str, risk: Risk) -> None:
    match = NAMES.rename_target(name)
    assert match is not None
    assert (match.name, match.risk) == (target, risk)


@pytest.mark.parametrize("name", ["search_n", "book_flight"])
def test_no_rename_when_ambiguous_or_far(name: str) -> None:
    assert NAMES.rename_target(name) is None
