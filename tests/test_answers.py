"""llmfix.run.repair: one response through a `repair` run, without the command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from llmfix.model import Status
from llmfix.run.repair import fixed_response, output_text, repair_input, start_llm, stream_answer
from llmfix.run.settings import LlmFlags, RepairFlags, build_run
from tests.llm_server import LlmServer, openai_reply

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


def chat(*contents: str) -> str:
    """An OpenAI chat completion with one choice per content."""
    choices = [
        {"index": i, "message": {"role": "assistant", "content": c}, "finish_reason": "stop"}
        for i, c in enumerate(contents)
    ]
    return json.dumps({"object": "chat.completion", "choices": choices})


@pytest.fixture
def schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "person.json").write_text(json.dumps(PERSON), encoding="utf-8")
    return "person.json"


def test_a_raw_answer_is_one_answer_repaired_and_judged() -> None:
    run = build_run(RepairFlags(fail_on="repaired"))
    [(item, result, failures, record)] = repair_input(run, None, "a.txt", '{"a": 1,}', None)
    assert (item, result.value, record) == (None, {"a": 1}, None)
    assert failures == ["status repaired (--fail-on repaired)"]
    assert output_text(result, None) == '{"a":1}\n'


def test_each_answer_of_an_api_response_is_repaired_and_put_back(schema: str) -> None:
    run = build_run(RepairFlags(schema=schema))
    validator = run.validator_for("r.json")
    text = chat('{"name": "Ada", "age": "36"}', '{"name": "Bo", "age": 7}')
    done = repair_input(run, None, "r.json", text, validator)
    assert [r.status for _, r, _, _ in done] == [Status.REPAIRED, Status.VALID]
    assert [item.id for item, _, _, _ in done if item is not None] == ["r.json#msg0", "r.json#msg1"]
    fixed = json.loads(fixed_response(done) or "")
    contents = [json.loads(c["message"]["content"]) for c in fixed["choices"]]
    assert contents == [{"name": "Ada", "age": 36}, {"name": "Bo", "age": 7}]


def test_an_unchanged_response_is_not_rewritten() -> None:
    run = build_run(RepairFlags())
    done = repair_input(run, None, "r.json", chat('{"a": 1}'), None)
    assert fixed_response(done) is None


def test_kind_text_reads_an_api_response_as_the_answer_itself() -> None:
    run = build_run(RepairFlags(kind="text"))
    [(item, result, _, _)] = repair_input(run, None, "r.json", chat('{"a": 1}'), None)
    assert item is None
    assert result.value["object"] == "chat.completion"


def test_stream_answer_writes_snapshots_then_the_result() -> None:
    run = build_run(RepairFlags())
    out = io.StringIO()
    chunks = ['{"name": "A', 'da", "tags": [1, ', "2]}"]
    result, failures, problems = stream_answer(run, None, chunks, "<stdin>", None, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[-1]["event"] == "result"
    assert lines[-1]["status"] == "valid"
    assert len(lines) > 1  # at least one snapshot before the result
    assert (result.value, failures, problems) == ({"name": "Ada", "tags": [1, 2]}, [], [])


def test_stream_answer_final_writes_only_the_json() -> None:
    run = build_run(RepairFlags(indent=None))
    out = io.StringIO()
    stream_answer(run, None, ['{"a": [1,', " 2"], "<stdin>", None, out, final=True)
    assert out.getvalue() == ""  # cut off: fails the gate, nothing is written
    out = io.StringIO()
    stream_answer(run, None, ['{"a": [1,', " 2]}"], "<stdin>", None, out, final=True)
    assert out.getvalue() == '{"a":[1,2]}\n'


def test_without_llm_repair_no_model_run_starts() -> None:
    assert start_llm(build_run(RepairFlags())) is None


def test_the_model_repairs_what_the_rules_could_not(
    schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    good = {"name": "Ada", "age": 36}
    with LlmServer() as server:
        server.enqueue(openai_reply(good))
        flags = LlmFlags(
            enabled=True,
            provider="openai",
            model="test-model",
            base_url=server.openai_base,
            cache=False,
        )
        run = build_run(RepairFlags(schema=schema, llm=flags))
        llm = start_llm(run)
        assert llm is not None
        try:
            validator = run.validator_for("a.txt")
            [(_, result, failures, record)] = repair_input(
                run, llm, "a.txt", '{"name": "Ada"}', validator
            )
        finally:
            llm.close()
    assert (result.status, result.value, failures) == (Status.LLM_REPAIRED, good, [])
    assert record is not None
    assert llm.calls == 1 == len(server.requests)


def test_tool_calls_are_left_to_the_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = build_run(RepairFlags(tool_calls=True))
    text = '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'
    [(_, result, _, record)] = repair_input(run, None, "a.txt", text, None)
    assert record is None
    assert result.value == [{"id": None, "name": "f", "arguments": {"x": 1}}]
