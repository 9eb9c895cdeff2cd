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


# ------------------------------------- 27 item 15: `--in-place` keeps the bytes it did not repair


def crlf_response(model: bytes) -> bytes:
    """A chat completion written with CRLF line endings whose answer needs repair, and
    ``model`` (bytes, maybe not UTF-8) in a field that is no answer."""
    message = {"role": "assistant", "content": "Here: {'a': 1, 'b': [1,2,]}"}
    body = {
        "id": "x",
        "model": "MODEL",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    text = json.dumps(body, indent=2).replace("\n", "\r\n") + "\r\n"
    return text.encode().replace(b"MODEL", model)


def assert_only_the_answer_changed(before: bytes, after: bytes) -> None:
    old, new = before.split(b"\r\n"), after.split(b"\r\n")
    assert b"\n" not in b"".join(new)  # every line ending is still CRLF
    assert len(old) == len(new)
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    assert len(changed) == 1
    line = changed[0][1]
    assert line.startswith(b'        "content": ')
    assert json.loads(json.loads(line.split(b": ", 1)[1])) == {"a": 1, "b": [1, 2]}


@pytest.mark.parametrize("model", [b"gpt-caf\xc3\xa9", b"gpt-caf\xe9"], ids=["utf-8", "latin-1"])
@pytest.mark.parametrize("command", ["repair", "check"])
def test_in_place_rewrites_only_the_repaired_answer(cli: Any, command: str, model: bytes) -> None:
    before = crlf_response(model)
    Path("response.json").write_bytes(before)
    extra = ("--no-config",) if command == "check" else ()
    done = cli(command, "response.json", "--in-place", "-q", *extra)
    assert done.exit_code == 0, done.output
    after = Path("response.json").read_bytes()
    assert model in after  # the byte that is not UTF-8 is still there, as it was
    assert_only_the_answer_changed(before, after)


def test_repair_and_check_in_place_write_the_same_bytes(cli: Any) -> None:
    Path("a.json").write_bytes(crlf_response(b"gpt-caf\xe9"))
    Path("b.json").write_bytes(crlf_response(b"gpt-caf\xe9"))
    assert cli("repair", "a.json", "--in-place", "-q").exit_code == 0
    assert cli("check", "b.json", "--in-place", "--no-config", "-q").exit_code == 0
    assert Path("a.json").read_bytes() == Path("b.json").read_bytes()


def test_a_repaired_jsonl_line_keeps_its_other_bytes(cli: Any) -> None:
    lines = [
        b'{"id": 1, "note": "caf\xe9", "output": "{\'a\': 1,}"}\r\n',
        b'{"id": 2, "note": "ok", "output": "{\\"a\\": 2}"}\r\n',
    ]
    Path("runs.jsonl").write_bytes(b"".join(lines))
    done = cli("check", "runs.jsonl", "--field", "output", "--in-place", "--no-config", "-q")
    assert done.exit_code == 0, done.output
    first, second = Path("runs.jsonl").read_bytes().split(b"\r\n")[:2]
    assert first.startswith(b'{"id": 1, "note": "caf\xe9", "output": ')
    assert json.loads(json.loads(first.decode("latin-1"))["output"]) == {"a": 1}
    assert second + b"\r\n" == lines[1]
