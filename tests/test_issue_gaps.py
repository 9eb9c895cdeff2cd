"""Gaps left in issues 27 and 28: the API's stop reason on `repair`'s tool-call path (28
items 2 and 5), and `repair --in-place` of an API response keeping the bytes it did not
repair (27 item 15)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmfix.cli import app
from llmfix.toolcalls import check_tool_calls

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search_web",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "max_results": {"type": "integer"}},
                "required": ["query"],
            },
        },
    }
]
ARGS = {"query": "weather Lisbon", "max_results": 3}


def gemini(finish: str) -> dict[str, Any]:
    call = {"functionCall": {"name": "search_web", "args": ARGS}}
    return {"candidates": [{"content": {"parts": [call]}, "finishReason": finish}]}


def openai_chat(finish: str) -> dict[str, Any]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "search_web", "arguments": json.dumps(ARGS)},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def anthropic(stop: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "t1", "name": "search_web", "input": ARGS}
    return {"type": "message", "role": "assistant", "content": [block], "stop_reason": stop}


def responses(status: str) -> dict[str, Any]:
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "search_web",
        "arguments": json.dumps(ARGS),
    }
    body: dict[str, Any] = {"object": "response", "status": status, "output": [call]}
    if status == "incomplete":
        body["incomplete_details"] = {"reason": "max_output_tokens"}
    return body


# (response, the status `check` and `repair --tools` both give it)
RESPONSES = {
    "gemini MAX_TOKENS": (gemini("MAX_TOKENS"), "truncated"),
    "openai length": (openai_chat("length"), "truncated"),
    "anthropic max_tokens": (anthropic("max_tokens"), "truncated"),
    "responses incomplete": (responses("incomplete"), "truncated"),
    "gemini SAFETY": (gemini("SAFETY"), "refused"),
    "openai content_filter": (openai_chat("content_filter"), "refused"),
    "gemini STOP": (gemini("STOP"), "valid"),
    "openai tool_calls": (openai_chat("tool_calls"), "valid"),
    "anthropic tool_use": (anthropic("tool_use"), "valid"),
}


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.delenv("LLMFIX_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no llmfix.yaml above
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS))
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(app, list(args))

    return invoke


# ------------------------------------------------ 28 items 2 and 5: the stop reason of tool calls


@pytest.mark.parametrize("tool_flags", [("--tools", "tools.json"), ("--tool-calls",)])
@pytest.mark.parametrize("name", list(RESPONSES))
def test_repair_tool_calls_apply_the_stop_reason_as_check_does(
    cli: Any, tool_flags: tuple[str, ...], name: str
) -> None:
    body, status = RESPONSES[name]
    Path("answer.json").write_text(json.dumps(body))
    repaired = cli("repair", "answer.json", *tool_flags, "-q", "--report", "report.json")
    report = json.loads(Path("report.json").read_text())
    [item] = report["items"]
    assert item["status"] == status
    checked = cli(
        "check", "answer.json", "--tools", "tools.json", "--no-config", "-q", "-f", "json"
    )
    statuses = {i["status"] for i in json.loads(checked.stdout)["items"]}
    assert statuses == {status}  # check says the same of the same file
    assert repaired.exit_code == checked.exit_code == (0 if status == "valid" else 1)
    if status == "valid":
        assert json.loads(repaired.stdout)[0]["arguments"] == ARGS
    else:  # a cut-off or refused answer's calls are not written
        assert repaired.stdout == ""
        code = "response.cut_off" if status == "truncated" else "response.refused"
        assert code in [d["code"] for d in item["diagnostics"]]


def test_partial_keeps_cut_off_calls_as_check_does(cli: Any) -> None:
    Path("answer.json").write_text(json.dumps(gemini("MAX_TOKENS")))
    repaired = cli("repair", "answer.json", "--tools", "tools.json", "--partial", "-q")
    checked = cli("check", "answer.json", "--tools", "tools.json", "--partial", "--no-config", "-q")
    assert repaired.exit_code == checked.exit_code == 0
    assert json.loads(repaired.stdout)[0]["arguments"] == ARGS


def test_the_library_reads_the_stop_reason_of_a_tool_call_response() -> None:
    cut = check_tool_calls(json.dumps(anthropic("max_tokens")))
    assert cut.status.value == "truncated"
    assert [d.code for d in cut.errors] == ["response.cut_off"]
    assert cut.value[0]["arguments"] == ARGS  # what was read is kept, marked cut off
    refused = check_tool_calls(json.dumps(gemini("SAFETY")))
    assert refused.status.value == "refused"
    assert refused.value == []
