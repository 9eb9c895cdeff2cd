"""What the API said is evidence: stop reasons of every response shape, in check and repair.

The response files are in ``tests/data/responses`` (see ``tests/data/README.md``): one per
shape and stop reason, and both batch outputs mixing them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import llmfix
from llmfix.batch.responses import read_response, repair_response
from llmfix.cli import app
from llmfix.model import Status

DATA = Path(__file__).resolve().parent / "data" / "responses"
SCHEMA = str(DATA / "sentiment.schema.json")
WHOLE = {"sentiment": "neutral", "score": 0.5, "tags": ["delivery"]}


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.delenv("LLMFIX_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no llmfix.yaml above
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(app, list(args), input=input)

    return invoke


def check_report(cli: Any, *args: str) -> tuple[int, dict[str, Any]]:
    result = cli("check", *args, "--no-config", "-q", "-f", "json")
    return result.exit_code, json.loads(result.stdout)


# (file, status of each item in order, check exit code)
SINGLE = [
    ("openai_chat_stop.json", "valid", 0),
    ("openai_chat_length.json", "truncated", 1),
    ("openai_chat_refusal.json", "refused", 1),
    ("openai_chat_content_filter.json", "refused", 1),
    ("responses_completed.json", "valid", 0),
    ("responses_incomplete.json", "truncated", 1),
    ("responses_refusal.json", "refused", 1),
    ("anthropic_end_turn.json", "valid", 0),
    ("anthropic_max_tokens.json", "truncated", 1),
    ("anthropic_refusal.json", "refused", 1),
    ("gemini_stop.json", "extracted", 0),
    ("gemini_max_tokens.json", "truncated", 1),
    ("gemini_safety.json", "refused", 1),
    ("gemini_recitation.json", "refused", 1),
    ("gemini_blocked.json", "refused", 1),
]


@pytest.mark.parametrize(("name", "status", "code"), SINGLE)
def test_check_reads_the_stop_reason_of_each_response_shape(
    cli: Any, name: str, status: str, code: int
) -> None:
    exit_code, report = check_report(cli, str(DATA / name), "-s", SCHEMA)
    [item] = report["items"]
    assert (item["status"], item["failed"], exit_code) == (status, code == 1, code)


@pytest.mark.parametrize(("name", "status", "code"), SINGLE)
def test_repair_reads_the_answer_out_of_each_response_shape(
    cli: Any, name: str, status: str, code: int
) -> None:
    result = cli("repair", str(DATA / name), "-s", SCHEMA)
    assert result.exit_code == code
    if code == 0:
        assert json.loads(result.stdout) == WHOLE
    else:
        assert result.stdout == ""  # a cut-off or refused answer is never written


@pytest.mark.parametrize(
    ("name", "statuses"),
    [
        ("openai_batch_output.jsonl", ["valid", "truncated", "refused", "truncated"]),
        ("anthropic_batch_results.jsonl", ["valid", "truncated", "refused"]),
    ],
)
def test_batch_outputs_carry_each_requests_stop_reason(
    cli: Any, name: str, statuses: list[str]
) -> None:
    exit_code, report = check_report(cli, str(DATA / name), "-s", SCHEMA)
    assert [i["status"] for i in report["items"]] == statuses
    assert [i["failed"] for i in report["items"]] == [s != "valid" for s in statuses]
    assert exit_code == 1


def test_repair_reads_batch_output_with_kind_jsonl(cli: Any) -> None:
    result = cli("repair", str(DATA / "anthropic_batch_results.jsonl"), "--kind", "jsonl")
    assert result.exit_code == 1
    assert "response.refused" in result.stderr
    assert "response.cut_off" in result.stderr


def test_a_cut_off_answer_is_never_a_clean_repair_even_when_it_parses(cli: Any) -> None:
    # stop_reason max_tokens right after a closing brace: the text is whole JSON, the
    # answer is not all there.
    exit_code, report = check_report(cli, str(DATA / "anthropic_max_tokens.json"))
    [item] = report["items"]
    assert item["status"] == "truncated"
    assert "response.cut_off" in [d["code"] for d in item["diagnostics"]]
    assert exit_code == 1


def test_the_cut_off_value_is_written_only_with_partial(cli: Any) -> None:
    path = str(DATA / "openai_chat_length.json")
    assert cli("repair", path, "-s", SCHEMA).stdout == ""
    result = cli("repair", path, "-s", SCHEMA, "--partial")
    assert result.exit_code == 0
    # "deliv" was cut mid-word: left out, not presented as data
    assert json.loads(result.stdout) == {"sentiment": "neutral", "score": 0.5, "tags": []}


def test_partial_still_fails_fail_on_repaired(cli: Any) -> None:
    path = str(DATA / "openai_chat_length.json")
    assert cli("repair", path, "--partial", "--fail-on", "repaired").exit_code == 1


def test_a_refusal_is_reported_as_a_refusal_not_as_no_json(cli: Any) -> None:
    result = cli("repair", str(DATA / "openai_chat_refusal.json"))
    assert "response.refused" in result.stderr
    assert "I'm sorry, I can't help with that request." in result.stderr
    assert "parse.failed" not in result.stderr


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ('{"sentiment": "neutral", "score": 0.5, "tags": ["deliv', Status.TRUNCATED),
        ('{"sentiment": "neutral", "score": 0.5', Status.TRUNCATED),
        ('```json\n{"sentiment": "neutral", "score": 0.5}', Status.EXTRACTED),
        ('{"sentiment": "neutral", "score": 0.5,}', Status.REPAIRED),
    ],
)
def test_text_that_ends_inside_a_value_is_truncated(text: str, status: Status) -> None:
    assert llmfix.repair(text).status is status


def test_text_evident_truncation_fails_the_default_gate(cli: Any) -> None:
    text = '{"sentiment": "neutral", "score": 0.5, "tags": ["deliv'
    result = cli("repair", input=text)
    assert (result.exit_code, result.stdout) == (1, "")
    assert "cut off" in result.stderr
    assert cli("repair", "--partial", input=text).exit_code == 0


def test_group_by_model_names_the_model_of_every_shape(cli: Any, tmp_path: Path) -> None:
    for name in ("openai_chat_stop.json", "anthropic_end_turn.json", "gemini_stop.json"):
        (tmp_path / name).write_text((DATA / name).read_text())
    _, report = check_report(cli, str(tmp_path), "--group-by", "model")
    assert sorted(report["summary"]["groups"]) == [
        "claude-sonnet-4-5-20250929",
        "gemini-2.5-flash",
        "gpt-4o-mini-2024-07-18",
    ]


def test_gemini_function_calls_are_tool_call_items() -> None:
    response = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "thinking…", "thought": True},
                        {"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "modelVersion": "gemini-2.5-pro",
    }
    [call] = read_response(response)
    assert (call.kind, call.tool, json.loads(call.text), call.model) == (
        "tool-call",
        "get_weather",
        {"city": "Oslo"},
        "gemini-2.5-pro",
    )


def test_a_cut_applies_to_the_last_item_written_a_refusal_to_the_whole_turn() -> None:
    response = json.loads((DATA / "openai_chat_stop.json").read_text())
    message = response["choices"][0]["message"]
    message["tool_calls"] = [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1'}}
    ]
    response["choices"][0]["finish_reason"] = "length"
    answer, call = read_response(response)
    assert (answer.finish, call.finish is not None) == (None, True)


def test_library_repair_response_reads_the_envelope_not_the_whole_object() -> None:
    text = (DATA / "responses_completed.json").read_text()
    [(item, result)] = repair_response(text, json.loads(Path(SCHEMA).read_text()))
    assert (item.kind, result.status, result.value) == ("response", Status.VALID, WHOLE)


def test_library_repair_response_applies_the_stop_reason() -> None:
    [(_, result)] = repair_response((DATA / "gemini_max_tokens.json").read_text())
    assert result.status is Status.TRUNCATED
    assert not result.ok


def test_repair_of_an_envelope_does_not_strip_it_as_additional_properties(cli: Any) -> None:
    strict = {**json.loads(Path(SCHEMA).read_text()), "additionalProperties": False}
    schema = Path("strict.json")
    schema.write_text(json.dumps(strict))
    result = cli("repair", str(DATA / "openai_chat_stop.json"), "-s", str(schema))
    assert (result.exit_code, json.loads(result.stdout)) == (0, WHOLE)


def test_repair_in_place_puts_the_repaired_answer_back_into_the_response(
    cli: Any, tmp_path: Path
) -> None:
    response = json.loads((DATA / "openai_chat_stop.json").read_text())
    response["choices"][0]["message"]["content"] = '{"sentiment": "neutral", "score": 0.5,}'
    path = tmp_path / "response.json"
    path.write_text(json.dumps(response))
    assert cli("repair", str(path), "--in-place").exit_code == 0
    fixed = json.loads(path.read_text())
    assert fixed["id"] == response["id"]
    content = fixed["choices"][0]["message"]["content"]
    assert json.loads(content) == {"sentiment": "neutral", "score": 0.5}


def test_repair_field_names_the_text_in_a_json_file(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    path.write_text(json.dumps({"prompt": "p", "output": '{"sentiment": "positive", "score": 1}'}))
    result = cli("repair", str(path), "--field", "output", "--compact")
    assert (result.exit_code, result.stdout) == (0, '{"sentiment":"positive","score":1}\n')


def test_repair_kind_text_keeps_the_whole_envelope_as_the_answer(cli: Any) -> None:
    result = cli("repair", str(DATA / "openai_chat_stop.json"), "--kind", "text")
    assert json.loads(result.stdout)["object"] == "chat.completion"


def test_an_answer_that_only_looks_like_a_transcript_is_the_answer(cli: Any) -> None:
    answer = '{"messages": [{"role": "user", "content": "hi"}]}'
    result = cli("repair", "--compact", input=answer)
    assert (result.exit_code, result.stdout) == (
        0,
        answer.replace(": ", ":").replace(", ", ",") + "\n",
    )


def test_an_answer_valid_against_the_schema_is_not_read_as_a_response(
    cli: Any, tmp_path: Path
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text('{"type": "object", "required": ["choices"]}')
    answer = '{"choices": [{"message": {"role": "assistant", "content": "x"}}]}'
    result = cli("repair", "-s", str(schema), "--compact", input=answer)
    assert json.loads(result.stdout) == json.loads(answer)


def test_check_partial_accepts_a_cut_off_answer_and_writes_what_is_complete(
    cli: Any, tmp_path: Path
) -> None:
    source = tmp_path / "in" / "response.json"
    source.parent.mkdir()
    source.write_text((DATA / "openai_chat_length.json").read_text())
    fixed = tmp_path / "fixed"
    code, report = check_report(cli, str(source), "--write-fixed", str(fixed))
    assert (code, report["items"][0]["status"]) == (1, "truncated")
    [written] = fixed.rglob("*.json")
    assert json.loads(written.read_text()) == json.loads(source.read_text())  # left as it was
    code, report = check_report(cli, str(source), "--partial", "--write-fixed", str(fixed))
    assert (code, report["items"][0]["failed"]) == (0, False)
    content = json.loads(written.read_text())["choices"][0]["message"]["content"]
    assert json.loads(content) == {"sentiment": "neutral", "score": 0.5, "tags": []}


def test_a_cut_seen_by_the_api_and_in_the_text_is_one_error(cli: Any) -> None:
    _, report = check_report(cli, str(DATA / "openai_chat_length.json"))
    [item] = report["items"]
    errors = [d["code"] for d in item["diagnostics"] if d["severity"] == "error"]
    assert errors == ["response.cut_off"]
