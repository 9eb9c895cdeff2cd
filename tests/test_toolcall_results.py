"""Tool results against output schemas: a real MCP exchange, and transcripts' tool messages.

The MCP tests run ``tests/mcp_weather_server.py`` (the ``mcp`` package's server over stdio),
speak JSON-RPC to it as a client does, record every message, and check the recording with
``llmfix check --tools <the recorded tools/list>``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmfix.cli import app
from llmfix.toolcalls.registry import ToolRegistry
from llmfix.toolcalls.results import check_tool_result, transcript_results

pytest.importorskip("mcp")

SERVER = Path(__file__).resolve().parent / "mcp_weather_server.py"
CALLS = [
    ("get_forecast", {"city": "Oslo"}),
    ("station_status", {"station": "X1"}),
    ("legacy_forecast", {"city": "Oslo"}),
    ("no_such_tool", {}),
]


class McpClient:
    """A client speaking newline-delimited JSON-RPC to an MCP server, recording it all."""

    def __init__(self, schema_version: str = "1") -> None:
        env = {**os.environ, "WEATHER_SCHEMA": schema_version}
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.log: list[dict[str, Any]] = []
        self.next_id = 1

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.next_id += 1
        self._send(message)
        assert self.proc.stdout is not None
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        self.log.append(answer)
        return answer

    def notify(self, method: str) -> None:
        self._send({"jsonrpc": "2.0", "method": method})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.log.append(message)
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def start(self) -> None:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "llmfix-tests", "version": "0"},
        }
        self.request("initialize", init)
        self.notify("notifications/initialized")

    def close(self) -> None:
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)
        self.proc.stdout.close()


def record(directory: Path, schema_version: str = "1") -> tuple[Path, Path]:
    """A tools/list result (tools.json) and the tools/call exchange (exchange.jsonl)."""
    client = McpClient(schema_version)
    try:
        client.start()
        tools = client.request("tools/list")
        for name, arguments in CALLS:
            client.request("tools/call", {"name": name, "arguments": arguments})
    finally:
        client.close()
    tools_file = directory / f"tools-v{schema_version}.json"
    tools_file.write_text(json.dumps(tools, indent=2))
    exchange = directory / "exchange.jsonl"
    exchange.write_text("".join(json.dumps(m) + "\n" for m in client.log))
    return tools_file, exchange


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("mcp")
    tools_v2, _ = record(directory, "2")  # the upgraded server's tools/list
    tools_v1, exchange = record(directory, "1")
    return {"tools": tools_v1, "tools_v2": tools_v2, "exchange": exchange, "dir": directory}


def check(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["check", *args, "--no-config", "-q", "-f", "json"])
    return result.exit_code, json.loads(result.stdout)


def by_tool(report: dict[str, Any], exchange: Path) -> dict[str, dict[str, Any]]:
    """Report items keyed by the tool each result came from (via the request's line)."""
    lines = exchange.read_text().splitlines()
    names = {}
    for line in lines:
        message = json.loads(line)
        if message.get("method") == "tools/call":
            names[message["id"]] = message["params"]["name"]
    found = {}
    for item in report["items"]:
        answered = json.loads(lines[item["line"] - 1])["id"]
        found[names[answered]] = item
    return found


def codes(item: dict[str, Any]) -> list[str]:
    return [d["code"] for d in item["diagnostics"]]


def test_the_recorded_tools_list_declares_output_schemas(recorded: dict[str, Path]) -> None:
    registry = ToolRegistry.load(str(recorded["tools"]))
    assert sorted(registry.output_names) == ["get_forecast", "station_status"]


def test_structured_content_matching_its_output_schema_passes(recorded: dict[str, Path]) -> None:
    _, report = check(str(recorded["exchange"]), "--tools", str(recorded["tools"]))
    item = by_tool(report, recorded["exchange"])["get_forecast"]
    assert (item["kind"], item["status"], item["failed"]) == ("tool-result", "valid", False)
    assert item["value"] == {"city": "Oslo", "temperature_c": 4.5, "conditions": "sleet"}


@pytest.mark.parametrize("tool", ["station_status", "no_such_tool"])
def test_is_error_results_are_tool_errors(recorded: dict[str, Path], tool: str) -> None:
    code, report = check(str(recorded["exchange"]), "--tools", str(recorded["tools"]))
    item = by_tool(report, recorded["exchange"])[tool]
    assert (item["status"], codes(item), item["failed"]) == (
        "error",
        ["toolresult.is_error"],
        True,
    )
    assert code == 1


def test_a_result_against_a_changed_output_schema_points_at_the_value(
    recorded: dict[str, Path],
) -> None:
    # the upgraded server promises whole degrees; the recorded result says 4.5
    _, report = check(str(recorded["exchange"]), "--tools", str(recorded["tools_v2"]))
    item = by_tool(report, recorded["exchange"])["get_forecast"]
    [error] = [d for d in item["diagnostics"] if d["severity"] == "error"]
    assert (item["status"], error["code"], error["pointer"]) == (
        "invalid",
        "schema.type",
        "/temperature_c",
    )
    assert item["id"].endswith(f":{item['line']}#msg0")  # the message: the response's line


def test_text_content_that_should_be_json_is_checked(recorded: dict[str, Path]) -> None:
    # the user declares what the legacy tool's text must be, next to the recorded list
    tools = json.loads(recorded["tools"].read_text())
    [legacy] = [t for t in tools["result"]["tools"] if t["name"] == "legacy_forecast"]
    legacy["outputSchema"] = json.loads(json.dumps(tools["result"]["tools"][0]["outputSchema"]))
    legacy["outputSchema"]["properties"]["temperature_c"] = {"type": "string"}
    declared = recorded["dir"] / "tools-declared.json"
    declared.write_text(json.dumps(tools))
    _, report = check(str(recorded["exchange"]), "--tools", str(declared))
    item = by_tool(report, recorded["exchange"])["legacy_forecast"]
    assert "toolresult.unstructured" in codes(item)
    assert "parse.trailing_comma" in codes(item)  # the text was read as JSON
    # 3 → "3" by the schema-repair rules, as for any answer
    assert (item["status"], item["value"]["temperature_c"]) == ("repaired", "3")


def test_a_tool_without_output_schema_is_not_checked(recorded: dict[str, Path]) -> None:
    _, report = check(str(recorded["exchange"]), "--tools", str(recorded["tools"]))
    item = by_tool(report, recorded["exchange"])["legacy_forecast"]
    assert (item["status"], "toolresult.unchecked" in codes(item)) == ("valid", True)


def test_without_output_schemas_the_exchange_is_read_as_before(
    recorded: dict[str, Path], tmp_path: Path
) -> None:
    plain = tmp_path / "tools.json"
    tools = json.loads(recorded["tools"].read_text())
    for tool in tools["result"]["tools"]:
        tool.pop("outputSchema", None)
    plain.write_text(json.dumps(tools))
    _, report = check(str(recorded["exchange"]), "--tools", str(plain))
    assert {i["kind"] for i in report["items"]} == {"record"}


# ---------------------------------------------------------------------- transcripts

OUTPUT = {
    "type": "object",
    "properties": {"status": {"enum": ["shipped", "pending"]}, "eta_days": {"type": "integer"}},
    "required": ["status"],
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "order_status",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
        },
        "output_schema": OUTPUT,
    }
]


def openai_transcript(result: str) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "Where is order 7?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "order_status", "arguments": '{"id": "7"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": result},
            {"role": "assistant", "content": "It ships tomorrow."},
        ]
    }


def anthropic_transcript(result: str, is_error: bool = False) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": "Where is order 7?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "order_status", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": result}],
                        "is_error": is_error,
                    }
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "It ships tomorrow."}]},
        ]
    }


def check_transcript(tmp_path: Path, transcript: dict[str, Any]) -> dict[str, Any]:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(TOOLS))
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(transcript))
    _, report = check(str(chat), "--tools", str(tools))
    [item] = [i for i in report["items"] if i["kind"] == "tool-result"]
    return item


@pytest.mark.parametrize("make", [openai_transcript, anthropic_transcript])
def test_a_tool_message_is_checked_against_its_output_schema(tmp_path: Path, make: Any) -> None:
    item = check_transcript(tmp_path, make('{"status": "lost", "eta_days": 1}'))
    [error] = [d for d in item["diagnostics"] if d["severity"] == "error"]
    assert (item["status"], error["code"], error["pointer"]) == (
        "invalid",
        "schema.enum",
        "/status",
    )
    assert item["id"].endswith("#msg2")  # the third message of the transcript


@pytest.mark.parametrize("make", [openai_transcript, anthropic_transcript])
def test_a_valid_tool_message_passes(tmp_path: Path, make: Any) -> None:
    item = check_transcript(tmp_path, make('{"status": "shipped", "eta_days": 1}'))
    assert (item["status"], item["failed"]) == ("valid", False)


def test_an_anthropic_error_result_is_a_tool_error(tmp_path: Path) -> None:
    item = check_transcript(tmp_path, anthropic_transcript("database timeout", is_error=True))
    assert (item["status"], codes(item)) == ("error", ["toolresult.is_error"])
    assert "database timeout" in item["diagnostics"][0]["message"]


def test_transcript_results_name_the_tool_by_call_id() -> None:
    [found] = transcript_results(openai_transcript("{}")["messages"])
    assert (found.index, found.tool, found.path) == (2, "order_status", ("messages", 2, "content"))


def test_check_tool_result_without_a_schema_is_not_checked() -> None:
    result = check_tool_result("not json at all", "t", None)
    assert [d.code for d in result.diagnostics] == ["toolresult.unchecked"]
