"""The LLM repair loop end to end against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmfix.errors import ConfigError, ProviderError
from llmfix.llm import CallBudget, LlmConfig, LlmRepairOutcome, llm_repair
from llmfix.model import Result, Risk, Status
from llmfix.pipeline.core import make_validator, repair_text
from llmfix.schema.validate import SchemaValidator
from tests.llm_server import (
    LlmServer,
    anthropic_tool_reply,
    error_reply,
    openai_reply,
)

FAKE_KEY = "sk-test-FAKEKEY1234567890abcdef"
PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "email": {"type": "string"},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}
MISSING_AGE = '{"name": "Ada"}'
VALID = {"name": "Ada", "age": 36}
PROSE = "Sorry, I don't know who that is."


def config(server: LlmServer, **changes: Any) -> LlmConfig:
    settings: dict[str, Any] = {
        "model": "test-model",
        "base_url": server.openai_base,
        "api_key": FAKE_KEY,
        "backoff_base": 0.001,
        "backoff_max": 0.01,
        "cache": False,
        **changes,
    }
    return LlmConfig(**settings)


def run(
    server: LlmServer,
    validator: SchemaValidator,
    text: str = MISSING_AGE,
    **changes: Any,
) -> LlmRepairOutcome:
    budget = changes.pop("budget", None)
    first = repair_text(text, validator=validator)
    return llm_repair(
        text, first, validator=validator, config=config(server, **changes), budget=budget
    )


def codes(result: Result) -> list[str]:
    return [d.code for d in result.diagnostics]


# -------------------------------------------------------------------------- outcomes


def test_invalid_then_valid_on_attempt_two(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply('{"name": "Ada", "age": "unknown"}'), openai_reply(VALID))
    outcome = run(server, validator)
    assert (outcome.result.status, outcome.result.value, outcome.result.attempts) == (
        Status.LLM_REPAIRED,
        VALID,
        2,
    )


def test_valid_on_attempt_one_stops_the_loop(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID), openai_reply(VALID))
    run(server, validator, max_attempts=3)
    assert len(server.requests) == 1


def test_llm_repaired_is_a_guess(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID))
    assert run(server, validator).result.risk is Risk.GUESS


def test_llm_repaired_diagnostic(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID))
    result = run(server, validator).result
    assert codes(result) == ["llm.repaired"]


def test_success_patch_shows_what_the_model_changed(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(openai_reply(VALID))
    patch = [op.to_json_patch() for op in run(server, validator).result.patch]
    assert patch == [{"op": "add", "path": "/age", "value": 36}]


@pytest.mark.parametrize("max_attempts", [1, 2, 3])
def test_never_valid_makes_exactly_max_attempts_requests(
    server: LlmServer, validator: SchemaValidator, max_attempts: int
) -> None:
    server.enqueue(*[openai_reply('{"name": "Ada", "age": "n/a"}')] * 4)
    run(server, validator, max_attempts=max_attempts)
    assert len(server.requests) == max_attempts


def test_never_valid_is_output_validation_failed(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(*[openai_reply('{"name": "Ada", "age": "n/a"}')] * 2)
    result = run(server, validator).result
    failure = next(d for d in result.errors if d.code == "llm.output_validation_failed")
    assert (result.status, failure.data and failure.data["code"]) == (
        Status.INVALID,
        "OUTPUT_VALIDATION_FAILED",
    )


def test_never_valid_keeps_field_level_issues(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(*[openai_reply('{"name": "Ada", "age": "n/a"}')] * 2)
    result = run(server, validator, PROSE).result
    assert [(d.code, d.pointer) for d in result.errors] == [
        ("schema.type", "/age"),
        ("llm.output_validation_failed", None),
    ]


def test_the_best_candidate_is_kept(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(
        openai_reply('{"name": "Ada", "age": "n/a"}'),
        openai_reply('{"name": [1], "age": "n/a", "email": [2]}'),
    )
    assert run(server, validator, PROSE).result.value == {"name": "Ada", "age": "n/a"}


def test_the_original_is_kept_when_no_answer_is_better(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(*[openai_reply('{"name": "Ada", "age": "n/a"}')] * 2)
    assert run(server, validator).result.value == {"name": "Ada"}


def test_unparseable_answers_leave_the_original_value(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(*[openai_reply("I cannot help with that.")] * 2)
    result = run(server, validator).result
    assert (result.status, result.value) == (Status.INVALID, {"name": "Ada"})


def test_a_valid_first_result_makes_no_request(
    server: LlmServer, validator: SchemaValidator
) -> None:
    outcome = run(server, validator, json.dumps(VALID))
    assert (outcome.result.status, outcome.attempts, server.requests) == (Status.VALID, (), [])


def test_unparseable_original_is_repaired(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID))
    result = run(server, validator, PROSE).result
    assert (result.status, [op.op for op in result.patch]) == (Status.LLM_REPAIRED, ["add"])


def test_an_answer_in_a_fence_goes_through_the_pipeline(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(openai_reply('```json\n{"name": "Ada", "age": "36",}\n```'))
    result = run(server, validator).result
    assert (result.status, result.value) == (Status.LLM_REPAIRED, VALID)


def test_no_model_says_how_to_configure_one(validator: SchemaValidator) -> None:
    first = repair_text(MISSING_AGE, validator=validator)
    with pytest.raises(ConfigError, match="--model"):
        llm_repair(MISSING_AGE, first, validator=validator, config=LlmConfig())


def test_anthropic_invalid_then_valid(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(anthropic_tool_reply({"name": "Ada"}), anthropic_tool_reply(VALID))
    outcome = run(
        server,
        validator,
        provider="anthropic",
        model="claude-test",
        base_url=server.anthropic_base,
    )
    assert (outcome.result.status, outcome.calls) == (Status.LLM_REPAIRED, 2)


# --------------------------------------------------------------------------- prompts


def test_prompt_holds_the_error_pointer_and_message(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(openai_reply(VALID))
    run(server, validator)
    assert '/: missing required property "age"' in server.requests[0].user_prompt()


def test_prompt_holds_the_original_and_the_schema(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(openai_reply(VALID))
    run(server, validator)
    prompt = server.requests[0].user_prompt()
    assert MISSING_AGE in prompt
    assert json.dumps(PERSON, indent=2) in prompt


def test_second_prompt_says_the_previous_attempt_failed(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(openai_reply('{"name": "Ada", "age": "unknown"}'), openai_reply(VALID))
    run(server, validator)
    second = server.requests[1].user_prompt()
    assert "PREVIOUS ATTEMPT FAILED VALIDATION" in second
    assert '/age: expected integer, got string "unknown"' in second


def test_first_prompt_has_no_previous_attempt(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(openai_reply(VALID))
    run(server, validator)
    assert "PREVIOUS ATTEMPT" not in server.requests[0].user_prompt()


def test_prompt_hints_at_an_xml_wrapper(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID))
    run(server, validator, f"<output>{MISSING_AGE}</output>")
    assert "XML tags" in server.requests[0].user_prompt()


def test_prompt_cuts_a_long_original(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID))
    text = "Here it is: " + "blah " * 1000 + MISSING_AGE
    run(server, validator, text, max_output_chars=300)
    prompt = server.requests[0].user_prompt()
    assert "characters left out" in prompt
    assert len(prompt) < len(text)


# ------------------------------------------------------------------- transport apart


def test_transport_retries_are_not_repair_attempts(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(error_reply(429, "slow down"), error_reply(503, "busy"), openai_reply(VALID))
    outcome = run(server, validator, max_attempts=1)
    assert (outcome.result.status, outcome.attempts[0].retries) == (Status.LLM_REPAIRED, 2)


def test_transport_errors_never_reach_a_prompt(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(
        error_reply(503, "upstream overloaded"),
        openai_reply('{"name": "Ada", "age": "n/a"}'),
        openai_reply(VALID),
    )
    run(server, validator)
    assert "overloaded" not in server.requests[-1].user_prompt()


def test_unavailable_provider_keeps_the_best_value(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(*[error_reply(503, "busy")] * 3)
    result = run(server, validator, max_retries=1).result
    assert (result.status, result.value, codes(result)[-1]) == (
        Status.INVALID,
        {"name": "Ada"},
        "llm.provider_unavailable",
    )


def test_unavailable_provider_is_recorded_as_an_error_attempt(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(*[error_reply(503, "busy")] * 3)
    (attempt,) = run(server, validator, max_retries=1).attempts
    assert (attempt.status, attempt.answer, "HTTP 503" in (attempt.error or "")) == (
        "error",
        None,
        True,
    )


def test_a_bad_key_raises(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(error_reply(401, "Incorrect API key provided"))
    with pytest.raises(ProviderError, match="401"):
        run(server, validator)


def test_a_rejected_request_is_a_warning(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(error_reply(400, "context length exceeded"))
    result = run(server, validator, structured_mode="none").result
    assert codes(result)[-1] == "llm.request_rejected"


# ------------------------------------------------------------------ records & budget


def test_attempts_record_prompt_answer_status_tokens(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(
        openai_reply('{"name": "Ada", "age": "n/a"}', prompt_tokens=100, completion_tokens=9),
        openai_reply(VALID, prompt_tokens=120, completion_tokens=8),
    )
    outcome = run(server, validator)
    first, second = (a.to_dict() for a in outcome.attempts)
    assert (first["status"], first["tokens"], second["status"]) == (
        "invalid",
        {"input": 100, "output": 9},
        "valid",
    )


def test_outcome_totals(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(
        openai_reply('{"name": "Ada", "age": "n/a"}', prompt_tokens=100, completion_tokens=9),
        openai_reply(VALID, prompt_tokens=120, completion_tokens=8),
    )
    report = run(server, validator).to_dict()
    assert (report["calls"], report["tokens"]) == (2, {"input": 220, "output": 17})


def test_attempt_errors_are_recorded(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply('{"name": "Ada", "age": "n/a"}'), openai_reply(VALID))
    outcome = run(server, validator)
    assert outcome.attempts[0].errors == ('/age: expected integer, got string "n/a"',)


PII = '{"name": "Ada", "email": "ada@example.com", "note": "call 555-123-4567"}'


def test_recorded_prompts_are_redacted(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID))
    prompt = run(server, validator, PII).attempts[0].prompt
    assert "ada@example.com" not in prompt
    assert "[EMAIL]" in prompt
    assert "[PHONE]" in prompt


def test_recorded_answers_are_redacted(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply({**VALID, "email": "ada@example.com"}))
    answer = run(server, validator).attempts[0].answer or ""
    assert "[EMAIL]" in answer


def test_no_redact_records_as_sent(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID))
    prompt = run(server, validator, PII, redact=False).attempts[0].prompt
    assert "ada@example.com" in prompt


def test_the_model_still_sees_the_data(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID))
    run(server, validator, PII)
    assert "ada@example.com" in server.requests[0].user_prompt()


def test_the_key_is_never_recorded(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID))
    text = f'{{"name": "Ada", "token": "{FAKE_KEY}"}}'
    outcome = run(server, validator, text, redact=False)
    assert FAKE_KEY not in json.dumps(outcome.to_dict())


def test_config_repr_never_shows_the_key(server: LlmServer) -> None:
    assert FAKE_KEY not in repr(config(server))


def test_save_prompts_writes_one_file_per_attempt(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(openai_reply('{"name": "Ada", "age": "n/a"}'), openai_reply(VALID))
    run(server, validator, save_prompts=str(tmp_path / "prompts"))
    saved = sorted(p.name.rsplit(".", 2)[-2] for p in (tmp_path / "prompts").iterdir())
    assert saved == ["attempt-1", "attempt-2"]


def test_saved_prompt_holds_the_attempt(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(openai_reply(VALID))
    run(server, validator, save_prompts=str(tmp_path))
    (path,) = tmp_path.iterdir()
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert (saved["model"], saved["status"], "ERRORS" in saved["prompt"]) == (
        "test-model",
        "valid",
        True,
    )


def test_budget_caps_requests(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(*[openai_reply('{"name": "Ada", "age": "n/a"}')] * 3)
    budget = CallBudget(1)
    result = run(server, validator, max_attempts=3, budget=budget).result
    assert (len(server.requests), codes(result)[-1]) == (1, "llm.budget_exhausted")


def test_budget_is_shared_between_responses(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(*[openai_reply(VALID)] * 3)
    budget = CallBudget(2)
    statuses = [run(server, validator, budget=budget).result.status for _ in range(3)]
    assert statuses == [Status.LLM_REPAIRED, Status.LLM_REPAIRED, Status.INVALID]


# -------------------------------------------------------------------------- the cache


def test_cache_hit_makes_no_request(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(openai_reply(VALID))
    run(server, validator, cache=True, cache_dir=str(tmp_path))
    again = run(server, validator, cache=True, cache_dir=str(tmp_path))
    assert (len(server.requests), again.result.status, again.calls) == (
        1,
        Status.LLM_REPAIRED,
        0,
    )


def test_cache_hit_is_marked_in_the_attempt(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(openai_reply(VALID))
    run(server, validator, cache=True, cache_dir=str(tmp_path))
    again = run(server, validator, cache=True, cache_dir=str(tmp_path))
    assert again.attempts[0].cached is True


def test_no_cache_asks_again(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(openai_reply(VALID), openai_reply(VALID))
    run(server, validator)
    run(server, validator)
    assert len(server.requests) == 2


def test_cache_is_keyed_by_model(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(openai_reply(VALID), openai_reply(VALID))
    run(server, validator, cache=True, cache_dir=str(tmp_path))
    run(server, validator, cache=True, cache_dir=str(tmp_path), model="other-model")
    assert len(server.requests) == 2


# ------------------------------------------------------------------------ partial mode

WIDE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "name": {"type": "string"},
        "city": {"type": "string"},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "active": {"type": "boolean"},
    },
    "required": ["id", "name", "city", "zip", "tags", "active"],
    "additionalProperties": False,
}
WIDE_TEXT = json.dumps(
    {"id": 7, "name": "Ada", "city": "London", "zip": "N1 9GU", "tags": ["x"], "active": True}
)


def run_wide(server: LlmServer, **changes: Any) -> LlmRepairOutcome:
    wide = make_validator(WIDE)
    assert wide is not None
    return run(server, wide, WIDE_TEXT, **changes)


def test_partial_asks_only_for_the_failing_property(server: LlmServer) -> None:
    server.enqueue(openai_reply({"zip": "00000"}))
    run_wide(server)
    sent = server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert list(sent["properties"]) == ["zip"]


def test_partial_answer_is_merged_in_order(server: LlmServer) -> None:
    server.enqueue(openai_reply({"zip": "00000"}))
    result = run_wide(server).result
    assert (result.status, list(result.value), result.value["zip"]) == (
        Status.LLM_REPAIRED,
        ["id", "name", "city", "zip", "tags", "active"],
        "00000",
    )


def test_partial_attempt_is_recorded_as_partial(server: LlmServer) -> None:
    server.enqueue(openai_reply({"zip": "00000"}))
    assert run_wide(server).attempts[0].kind == "partial"


def test_partial_can_be_turned_off(server: LlmServer) -> None:
    server.enqueue(openai_reply(json.loads(WIDE_TEXT) | {"zip": "00000"}))
    run_wide(server, partial=False)
    sent = server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert sent == WIDE


def test_never_parseable_stays_unparseable(server: LlmServer, validator: SchemaValidator) -> None:
    server.enqueue(*[openai_reply("no idea")] * 2)
    result = run(server, validator, PROSE).result
    assert (result.status, codes(result)[-1]) == (
        Status.UNPARSEABLE,
        "llm.output_validation_failed",
    )
