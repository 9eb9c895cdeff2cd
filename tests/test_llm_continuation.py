"""Continuing a cut-off answer (issue 36, item 1): the prefix, the seam, and the loop end to
end against the local server in both wire protocols."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmfix.llm import LlmConfig, LlmRepairOutcome, llm_repair
from llmfix.llm.continuation import continuation_tokens, joins, prefix_of, strict_json
from llmfix.model import Status
from llmfix.pipeline.core import repair_text
from llmfix.pipeline.stops import Finish, apply_finish
from llmfix.schema.validate import SchemaValidator
from tests.llm_server import (
    LlmServer,
    anthropic_text_reply,
    continuing,
    openai_reply,
    tokens_of,
)

FAKE_KEY = "sk-test-FAKEKEY1234567890abcdef"
PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "languages": {"type": "array", "items": {"type": "string"}, "minItems": 3},
        "bio": {"type": "string"},
    },
    "required": ["name", "age", "languages", "bio"],
    "additionalProperties": False,
}
WHOLE = json.dumps(
    {
        "name": "Ada Lovelace",
        "age": 36,
        "languages": ["English", "French", "Italian"],
        "bio": "Wrote the first published program, for the Analytical Engine, in 1843.",
    }
)
CUT = WHOLE[:70]  # ends inside the languages array


def config(server: LlmServer, style: str = "openai", **changes: Any) -> LlmConfig:
    base = server.openai_base if style == "openai" else server.anthropic_base
    settings: dict[str, Any] = {
        "provider": style,
        "model": "test-model",
        "base_url": base,
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
    text: str = CUT,
    *,
    style: str = "openai",
    stop: str | None = None,
    **changes: Any,
) -> LlmRepairOutcome:
    first = repair_text(text, validator=validator)
    if stop is not None:
        first = apply_finish(first, Finish("cut_off", f'finish_reason "{stop}"'))
    return llm_repair(
        text, first, validator=validator, config=config(server, style, **changes), name="a"
    )


def kinds(outcome: LlmRepairOutcome) -> list[tuple[str, str, str]]:
    return [(a.kind, a.mode, a.status) for a in outcome.attempts]


# ---------------------------------------------------------------- the prefix and the seam


def test_the_prefix_starts_where_the_value_does_and_drops_trailing_space(
    validator: SchemaValidator,
) -> None:
    text = "Here you go:\n```json\n" + CUT + "  \n"
    first = repair_text(text, validator=validator)
    assert prefix_of(text, first) == CUT


def test_a_whole_value_cut_off_after_its_end_has_no_prefix(validator: SchemaValidator) -> None:
    first = apply_finish(repair_text(WHOLE, validator=validator), Finish("cut_off", "length"))
    assert (first.status, prefix_of(WHOLE, first)) == (Status.TRUNCATED, None)


def test_an_answer_that_is_not_cut_off_or_was_refused_has_no_prefix(
    validator: SchemaValidator,
) -> None:
    invalid = '{"name": "Ada"}'
    first = repair_text(invalid, validator=validator)
    refused = apply_finish(repair_text(CUT, validator=validator), Finish("refused", "filter"))
    assert (prefix_of(invalid, first), prefix_of(CUT, refused)) == (None, None)


@pytest.mark.parametrize(
    ("prefix", "continuation"),
    [
        ('{"a": ["English",', ' "French", "Italian"]}'),
        ('{"a": ["English', 'glish", "French", "Italian"]}'),  # the seam repeated
        ('{"a": ["English",', '```json\n"French", "Italian"]}\n```'),
        ('{"a": ["English",', '"French", "Italian"]}\n```'),  # closing the original's fence
        ('{"a": ["English",', '{"a": ["English", "French", "Italian"]}'),  # started over
    ],
    ids=["plain", "repeated-seam", "fenced", "closing-fence", "started-over"],
)
def test_joins_offer_the_clean_join(prefix: str, continuation: str) -> None:
    found = [json.loads(t) for t in joins(prefix, continuation) if strict_json(t)]
    assert {"a": ["English", "French", "Italian"]} in found
    assert all(t.startswith(prefix) for t in joins(prefix, continuation))


def test_strict_json_refuses_a_key_written_twice() -> None:
    assert (strict_json('{"a": 1}'), strict_json('{"a": 1, "a": 2}'), strict_json("{")) == (
        True,
        False,
        False,
    )


# ------------------------------------------------------------- OpenAI-compatible servers


def test_openai_continues_with_continue_final_message(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(continuing(WHOLE))
    outcome = run(server, validator, stop="length")
    [request] = server.requests
    body = request.body
    assert (outcome.result.status, outcome.result.value) == (Status.LLM_REPAIRED, json.loads(WHOLE))
    assert (body["continue_final_message"], body["add_generation_prompt"]) == (True, False)
    assert body["messages"][-1] == {"role": "assistant", "content": CUT}
    assert "response_format" not in body  # what follows a prefix is not a JSON value alone
    assert kinds(outcome) == [("continuation", "prefill", "valid")]
    assert outcome.output_tokens == tokens_of(WHOLE[len(CUT) :])


def test_a_text_ending_inside_a_value_is_continued_without_a_stop_reason(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(continuing(WHOLE))
    outcome = run(server, validator)
    assert (outcome.result.status, kinds(outcome)[0][0]) == (Status.LLM_REPAIRED, "continuation")
    assert "llm.repaired" in [d.code for d in outcome.result.diagnostics]
    assert "parse.cut_off" not in [d.code for d in outcome.result.diagnostics]


def test_a_server_that_refuses_the_prefill_is_asked_with_a_prompt_and_remembered(
    server: LlmServer, validator: SchemaValidator, tmp_path: Any
) -> None:
    server.enqueue(continuing(WHOLE, prefill="refuse"), continuing(WHOLE, prefill="refuse"))
    outcome = run(server, validator, cache_dir=str(tmp_path))
    first, second = server.requests
    assert "continue_final_message" in first.body
    assert "continue_final_message" not in second.body
    assert second.body["messages"][-1]["role"] == "user"
    assert CUT in second.user_prompt()
    assert (outcome.result.status, kinds(outcome)) == (
        Status.LLM_REPAIRED,
        [("continuation", "prompt", "valid")],
    )
    assert outcome.calls == 2
    server.enqueue(continuing(WHOLE, prefill="refuse"))
    again = run(server, validator, cache_dir=str(tmp_path))  # a new provider: a later run
    assert (again.result.status, again.calls, len(server.requests)) == (
        Status.LLM_REPAIRED,
        1,
        3,
    )
    assert "continue_final_message" not in server.requests[2].body


def test_a_server_that_ignores_the_prefill_and_starts_over_is_joined(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(continuing(WHOLE, prefill="ignore"))
    outcome = run(server, validator)
    assert (outcome.result.status, outcome.result.value) == (Status.LLM_REPAIRED, json.loads(WHOLE))


def test_a_fresh_answer_that_changes_the_prefix_is_not_taken(
    server: LlmServer, validator: SchemaValidator
) -> None:
    """The model wrote a new answer with another name: it does not continue what was
    written, so the rules' result stands (and no whole re-ask rewrites the beginning)."""
    other = WHOLE.replace("Ada Lovelace", "Grace Hopper")
    server.enqueue(continuing(other, prefill="ignore"))
    outcome = run(server, validator, max_attempts=1)
    assert (outcome.result.status, kinds(outcome)) == (
        Status.TRUNCATED,
        [("continuation", "prefill", "unjoined")],
    )
    assert outcome.result.value["name"] == "Ada Lovelace"
    assert len(server.requests) == 1


def test_a_continuation_cut_off_again_is_continued_again(
    server: LlmServer, validator: SchemaValidator
) -> None:
    middle = WHOLE[len(CUT) : len(CUT) + 30]
    server.enqueue(openai_reply(middle, finish_reason="length"), continuing(WHOLE))
    outcome = run(server, validator, max_attempts=3)
    second = server.requests[1].body
    # the prefill stops before the word the cut fell in ("the"); the grammar writes it
    assert second["messages"][-1] == {"role": "assistant", "content": (CUT + middle)[:-4]}
    assert second["grammar"].startswith('root ::= " the" ')
    assert (outcome.result.status, kinds(outcome)) == (
        Status.LLM_REPAIRED,
        [("continuation", "prefill", "truncated"), ("continuation", "prefill", "valid")],
    )


def test_a_whole_but_invalid_join_goes_on_to_the_repair_loop(
    server: LlmServer, validator: SchemaValidator
) -> None:
    short = json.loads(WHOLE)
    short["languages"] = ["English", "French"]  # minItems 3: invalid
    fixed = json.loads(WHOLE)
    server.enqueue(continuing(json.dumps(short)), openai_reply(fixed))
    cut = json.dumps(short)[:60]
    outcome = run(server, validator, cut)
    assert "response_format" in server.requests[1].body
    assert "French" in server.requests[1].user_prompt()
    assert (outcome.result.status, [k for k, _, _ in kinds(outcome)]) == (
        Status.LLM_REPAIRED,
        ["continuation", "partial"],
    )


def test_continuation_off_keeps_a_cut_off_answer_from_the_model(
    server: LlmServer, validator: SchemaValidator
) -> None:
    outcome = run(server, validator, continuation=False)
    assert (outcome.result.status, outcome.attempts, server.requests) == (
        Status.TRUNCATED,
        (),
        [],
    )


# ------------------------------------------------------------------- Anthropic messages


def test_anthropic_continues_an_assistant_prefill(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(continuing(WHOLE, style="anthropic"))
    outcome = run(server, validator, "```json\n" + CUT + " \n", style="anthropic")
    [request] = server.requests
    body = request.body
    assert request.path == "/v1/messages"
    assert body["messages"][-1] == {"role": "assistant", "content": CUT}  # no trailing space
    assert ("tools" in body, "continue_final_message" in body) == (False, False)
    assert (outcome.result.status, outcome.result.value) == (Status.LLM_REPAIRED, json.loads(WHOLE))
    assert kinds(outcome) == [("continuation", "prefill", "valid")]


def test_anthropic_model_that_refuses_a_prefill_gets_the_prompt(
    server: LlmServer, validator: SchemaValidator
) -> None:
    from tests.llm_server import error_reply

    server.enqueue(
        error_reply(
            400,
            "This model does not support assistant message prefill.",
            style="anthropic",
        ),
        continuing(WHOLE, style="anthropic"),
    )
    outcome = run(server, validator, style="anthropic")
    assert server.requests[1].body["messages"][-1]["role"] == "user"
    assert kinds(outcome) == [("continuation", "prompt", "valid")]


def test_anthropic_continuation_that_does_not_join_keeps_the_rules_result(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(anthropic_text_reply("I cannot continue that."))
    outcome = run(server, validator, style="anthropic", max_attempts=1)
    assert (outcome.result.status, kinds(outcome)) == (
        Status.TRUNCATED,
        [("continuation", "prefill", "unjoined")],
    )


def test_a_server_that_ignored_the_prefill_gets_the_prompt_next(
    server: LlmServer, validator: SchemaValidator, tmp_path: Any
) -> None:
    """llama-cpp-python's server drops continue_final_message and answers anew: a fresh
    answer that does not keep the prefix is not taken, and the next attempt (and the
    next run) asks with the prompt."""
    other = WHOLE.replace("Ada Lovelace", "Ada King")
    server.enqueue(continuing(other, prefill="ignore"), continuing(WHOLE, prefill="ignore"))
    outcome = run(server, validator, cache_dir=str(tmp_path))
    assert [("continue_final_message" in r.body) for r in server.requests] == [True, False]
    assert (outcome.result.status, kinds(outcome)) == (
        Status.LLM_REPAIRED,
        [("continuation", "prefill", "unjoined"), ("continuation", "prompt", "valid")],
    )
    server.enqueue(continuing(WHOLE, prefill="ignore"))
    run(server, validator, cache_dir=str(tmp_path))
    assert "continue_final_message" not in server.requests[2].body


def test_repair_cli_continues_and_reports_the_usage(
    server: LlmServer, tmp_path: Any, validator: SchemaValidator
) -> None:
    """`llmfix repair --llm --provider anthropic` on a saved Anthropic response that hit
    max_tokens: the value continued, the report's summary gives the usage per status."""
    import os
    import subprocess
    import sys

    response = {
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": CUT}],
        "stop_reason": "max_tokens",
        "usage": {"input_tokens": 40, "output_tokens": 20},
    }
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps(response), encoding="utf-8")
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps(PERSON), encoding="utf-8")
    report = tmp_path / "report.json"
    server.enqueue(continuing(WHOLE, style="anthropic"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "llmfix",
            "repair",
            str(answer),
            "-s",
            str(schema),
            "--llm",
            "--provider",
            "anthropic",
            "--model",
            "test-model",
            "--base-url",
            server.anthropic_base,
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "ANTHROPIC_API_KEY": FAKE_KEY},
        timeout=60,
        check=False,
    )
    assert (done.returncode, json.loads(done.stdout)) == (0, json.loads(WHOLE))
    data = json.loads(report.read_text(encoding="utf-8"))
    usage = data["summary"]["llm"]
    assert (usage["calls"], usage["by_status"]["llm_repaired"]["responses"]) == (1, 1)
    assert data["items"][0]["llm"]["attempts"][0]["kind"] == "continuation"


def test_a_prefill_that_does_not_join_is_tried_as_a_prompt_but_not_given_up(
    server: LlmServer, validator: SchemaValidator, tmp_path: Any
) -> None:
    """The model answered the prefill with prose: the next attempt shows the prefix in a
    prompt; the server is not marked as ignoring prefills (it did not start over)."""
    server.enqueue(openai_reply("Sure, here is the rest."), continuing(WHOLE))
    outcome = run(server, validator, cache_dir=str(tmp_path))
    assert kinds(outcome) == [
        ("continuation", "prefill", "unjoined"),
        ("continuation", "prompt", "valid"),
    ]
    server.enqueue(continuing(WHOLE))
    run(server, validator, cache_dir=str(tmp_path))
    assert [("continue_final_message" in r.body) for r in server.requests] == [True, False, True]


def test_a_prefill_sent_back_with_a_continuation_that_does_not_join_is_not_a_start_over(
    server: LlmServer, validator: SchemaValidator, tmp_path: Any
) -> None:
    """llama-server answers a prefill with the prefix and the rest: when that rest does not
    join, the server is not marked as ignoring prefills."""
    server.enqueue(openai_reply(CUT + " oops"), continuing(WHOLE), continuing(WHOLE))
    outcome = run(server, validator, cache_dir=str(tmp_path))
    assert kinds(outcome) == [
        ("continuation", "prefill", "unjoined"),
        ("continuation", "prompt", "valid"),
    ]
    run(server, validator, cache_dir=str(tmp_path))
    assert "continue_final_message" in server.requests[2].body


# ------------------------------------------------------ the first value, a comment, the room


def test_a_model_that_goes_on_after_the_value_closes_gives_its_first_value(
    server: LlmServer, validator: SchemaValidator
) -> None:
    rest = WHOLE[len(CUT) :] + '\n\nI hope this helps! Another one: {"name": "Grace"}'
    server.enqueue(openai_reply(rest))
    outcome = run(server, validator, stop="length")
    assert (outcome.result.status, outcome.result.value) == (Status.LLM_REPAIRED, json.loads(WHOLE))


def test_a_comment_the_model_adds_in_its_continuation_does_not_stop_the_join(
    server: LlmServer, validator: SchemaValidator
) -> None:
    rest = WHOLE[len(CUT) :].replace(', "bio"', ' // the languages she read\n, "bio"')
    server.enqueue(openai_reply(rest))
    outcome = run(server, validator, stop="length")
    assert (outcome.result.status, outcome.result.value) == (Status.LLM_REPAIRED, json.loads(WHOLE))


def test_a_join_that_needs_a_guess_is_not_taken(
    server: LlmServer, validator: SchemaValidator
) -> None:
    """A continuation that only joins by the lenient reader's guesses (here a missing
    comma and a key written twice) is no clean continuation."""
    rest = WHOLE[len(CUT) :].replace(', "bio"', ' "bio"').replace("}", ', "age": 37}')
    server.enqueue(openai_reply(rest), openai_reply(rest))
    outcome = run(server, validator, stop="length")
    assert outcome.result.status is Status.TRUNCATED
    assert [a.status for a in outcome.attempts] == ["unjoined", "unjoined"]


def test_a_continuation_asks_for_what_can_be_missing_not_the_whole_limit(
    server: LlmServer, validator: SchemaValidator
) -> None:
    """max_tokens is the prefix's tokens once more (3 characters a token) plus 64: a
    model that keeps adding items stops early and is continued again."""
    server.enqueue(continuing(WHOLE))
    run(server, validator, stop="length", max_tokens=4096)
    assert server.requests[0].body["max_tokens"] == continuation_tokens(CUT, 4096)
    assert continuation_tokens(CUT, 4096) == len(CUT) // 3 + 64
    assert continuation_tokens(CUT, 50) == 50
