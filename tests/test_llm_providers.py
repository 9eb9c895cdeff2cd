"""Providers against a real HTTP server on 127.0.0.1: wire formats, retries, failures."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmfix.errors import ProviderError
from llmfix.llm.config import LlmConfig
from llmfix.llm.providers import (
    ANTHROPIC_VERSION,
    HttpTransport,
    ProviderRefused,
    ProviderUnavailable,
    make_provider,
    object_root,
    strict_compatible,
    structured_modes,
    tool_name,
)
from llmfix.llm.retry import RetryPolicy
from tests.llm_server import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    LlmServer,
    Reply,
    anthropic_text_reply,
    anthropic_tool_reply,
    error_reply,
    openai_reply,
)

FAKE_KEY = "sk-test-FAKEKEY1234567890abcdef"
MESSAGES = [
    {"role": "system", "content": "You repair JSON."},
    {"role": "user", "content": "Fix this JSON."},
]
STRICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
LOOSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}


def openai_config(server: LlmServer, **changes: Any) -> LlmConfig:
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


def anthropic_config(server: LlmServer, **changes: Any) -> LlmConfig:
    return openai_config(
        server, provider="anthropic", model="claude-test", base_url=server.anthropic_base, **changes
    )


def ask(config: LlmConfig, schema: Any = STRICT_SCHEMA, **kwargs: Any) -> Any:
    provider = make_provider(config, **kwargs)
    try:
        return provider.complete_json(
            MESSAGES, schema, temperature=config.temperature, max_tokens=64, timeout=config.timeout
        )
    finally:
        provider.close()


# ------------------------------------------------------------------------ OpenAI wire


def test_openai_posts_to_chat_completions_under_the_v1_base(server: LlmServer) -> None:
    server.enqueue(openai_reply('{"name": "Ada", "age": 36}'))
    ask(openai_config(server))
    assert server.requests[0].path == OPENAI_PATH


def test_openai_sends_the_key_as_a_bearer_token(server: LlmServer) -> None:
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server))
    assert server.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_openai_uses_strict_json_schema_when_the_schema_allows_it(server: LlmServer) -> None:
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server))
    assert server.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": STRICT_SCHEMA, "strict": True},
    }


def test_openai_uses_non_strict_json_schema_otherwise(server: LlmServer) -> None:
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server), LOOSE_SCHEMA)
    assert server.requests[0].body["response_format"]["json_schema"]["strict"] is False


def test_openai_sends_temperature_zero_by_default(server: LlmServer) -> None:
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server))
    assert server.requests[0].body["temperature"] == 0


def test_openai_sends_no_temperature_when_unset(server: LlmServer) -> None:
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server, temperature=None))
    assert "temperature" not in server.requests[0].body


def test_openai_sends_model_messages_and_max_tokens(server: LlmServer) -> None:
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server))
    body = server.requests[0].body
    assert (body["model"], body["messages"], body["max_tokens"]) == ("test-model", MESSAGES, 64)


def test_openai_answer_text_and_tokens(server: LlmServer) -> None:
    server.enqueue(openai_reply('{"name": "Ada"}', prompt_tokens=21, completion_tokens=4))
    completion = ask(openai_config(server))
    assert (completion.text, completion.input_tokens, completion.output_tokens) == (
        '{"name": "Ada"}',
        21,
        4,
    )


@pytest.mark.parametrize(
    ("mode", "expected_type"),
    [("json_object", "json_object"), ("json_schema", "json_schema")],
)
def test_openai_structured_mode_is_configurable(
    server: LlmServer, mode: str, expected_type: str
) -> None:
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server, structured_mode=mode))
    assert server.requests[0].body["response_format"]["type"] == expected_type


def test_openai_mode_none_sends_no_response_format(server: LlmServer) -> None:
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server, structured_mode="none"))
    assert "response_format" not in server.requests[0].body


def test_openai_falls_back_when_the_server_refuses_json_schema(server: LlmServer) -> None:
    server.enqueue(
        error_reply(500, "response_format type json_schema is not supported"),
        openai_reply('{"name": "Ada", "age": 1}'),
    )
    ask(openai_config(server))
    formats = [r.body["response_format"]["type"] for r in server.requests]
    assert formats == ["json_schema", "json_object"]


def test_openai_fallback_sends_the_schema_with_json_object(server: LlmServer) -> None:
    server.enqueue(
        error_reply(400, "Invalid parameter: response_format json_schema"),
        openai_reply("{}"),
    )
    ask(openai_config(server))
    assert server.requests[1].body["response_format"] == {
        "type": "json_object",
        "schema": STRICT_SCHEMA,
    }


def test_openai_remembers_a_refused_mode(server: LlmServer) -> None:
    server.enqueue(
        error_reply(400, "response_format json_schema unsupported"),
        error_reply(400, "response_format json_schema unsupported"),
        openai_reply("{}"),
        openai_reply("{}"),
    )
    provider = make_provider(openai_config(server, structured_mode="auto"))
    for _ in range(2):
        provider.complete_json(MESSAGES, STRICT_SCHEMA, temperature=0, max_tokens=8, timeout=5)
    provider.close()
    formats = [r.body["response_format"] for r in server.requests]
    assert formats[-1] == formats[-2]


def test_openai_drops_temperature_when_the_model_refuses_it(server: LlmServer) -> None:
    server.enqueue(
        error_reply(400, "Unsupported value: 'temperature' does not support 0"),
        openai_reply("{}"),
    )
    ask(openai_config(server))
    assert "temperature" not in server.requests[1].body


def test_openai_wraps_a_non_object_schema_and_unwraps_the_answer(server: LlmServer) -> None:
    server.enqueue(openai_reply('{"value": [1, 2]}'))
    completion = ask(openai_config(server), {"type": "array", "items": {"type": "integer"}})
    sent = server.requests[0].body["response_format"]["json_schema"]["schema"]
    assert (sent["required"], json.loads(completion.text)) == (["value"], [1, 2])


def test_no_key_needed_for_a_local_server(server: LlmServer, monkeypatch: Any) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server, api_key=None))
    assert "authorization" not in server.requests[0].headers


def test_key_read_from_the_configured_environment_variable(
    server: LlmServer, monkeypatch: Any
) -> None:
    monkeypatch.setenv("MY_LLM_KEY", FAKE_KEY)
    server.enqueue(openai_reply("{}"))
    ask(openai_config(server, api_key=None, api_key_env="MY_LLM_KEY"))
    assert server.requests[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


# --------------------------------------------------------------------- Anthropic wire


def test_anthropic_posts_to_v1_messages_under_a_base_without_v1(server: LlmServer) -> None:
    server.enqueue(anthropic_tool_reply({"name": "Ada", "age": 1}))
    ask(anthropic_config(server))
    assert server.requests[0].path == ANTHROPIC_PATH


@pytest.mark.parametrize(
    ("header", "value"),
    [("x-api-key", FAKE_KEY), ("anthropic-version", ANTHROPIC_VERSION)],
)
def test_anthropic_headers(server: LlmServer, header: str, value: str) -> None:
    server.enqueue(anthropic_tool_reply({}))
    ask(anthropic_config(server))
    assert server.requests[0].headers[header] == value


def test_anthropic_forces_the_tool(server: LlmServer) -> None:
    server.enqueue(anthropic_tool_reply({}))
    ask(anthropic_config(server))
    assert server.requests[0].body["tool_choice"] == {"type": "tool", "name": "answer"}


def test_anthropic_sends_the_schema_as_the_tool_input_schema(server: LlmServer) -> None:
    server.enqueue(anthropic_tool_reply({}))
    ask(anthropic_config(server))
    (tool,) = server.requests[0].body["tools"]
    assert (tool["name"], tool["input_schema"]) == ("answer", STRICT_SCHEMA)


def test_anthropic_system_prompt_is_a_top_level_field(server: LlmServer) -> None:
    server.enqueue(anthropic_tool_reply({}))
    ask(anthropic_config(server))
    body = server.requests[0].body
    assert (body["system"], [m["role"] for m in body["messages"]]) == (
        "You repair JSON.",
        ["user"],
    )


def test_anthropic_sends_temperature_and_max_tokens(server: LlmServer) -> None:
    server.enqueue(anthropic_tool_reply({}))
    ask(anthropic_config(server))
    body = server.requests[0].body
    assert (body["temperature"], body["max_tokens"]) == (0, 64)


def test_anthropic_answer_is_the_tool_input(server: LlmServer) -> None:
    server.enqueue(anthropic_tool_reply({"name": "Ada", "age": 36}, input_tokens=30))
    completion = ask(anthropic_config(server))
    assert (json.loads(completion.text), completion.input_tokens) == (
        {"name": "Ada", "age": 36},
        30,
    )


def test_anthropic_text_answer_without_a_tool_call(server: LlmServer) -> None:
    server.enqueue(anthropic_text_reply('{"name": "Ada"}'))
    assert ask(anthropic_config(server)).text == '{"name": "Ada"}'


def test_anthropic_unwraps_a_wrapped_array(server: LlmServer) -> None:
    server.enqueue(anthropic_tool_reply({"value": ["a"]}))
    completion = ask(anthropic_config(server), {"type": "array"})
    assert json.loads(completion.text) == ["a"]


def test_tool_name_comes_from_the_schema_name(server: LlmServer) -> None:
    server.enqueue(anthropic_tool_reply({}))
    provider = make_provider(anthropic_config(server))
    provider.complete_json(
        MESSAGES, STRICT_SCHEMA, temperature=0, max_tokens=8, timeout=5, schema_name="get weather"
    )
    provider.close()
    assert server.requests[0].body["tool_choice"]["name"] == "get_weather"


# ------------------------------------------------------------------ retries & failures


def test_429_then_503_then_success(server: LlmServer) -> None:
    server.enqueue(
        error_reply(429, "rate limited"),
        error_reply(503, "overloaded"),
        openai_reply('{"name": "Ada", "age": 1}'),
    )
    completion = ask(openai_config(server))
    assert (len(server.requests), completion.retries) == (3, 2)


def test_retry_after_is_honoured(server: LlmServer) -> None:
    waits: list[float] = []
    server.enqueue(
        error_reply(429, "slow down", headers={"retry-after": "0.05"}),
        openai_reply("{}"),
    )
    config = openai_config(server)
    transport = HttpTransport("openai", RetryPolicy(max_retries=2, base=5.0), sleep=waits.append)
    ask(config, transport=transport)
    assert waits == [0.05]


def test_backoff_without_retry_after_is_bounded_by_base(server: LlmServer) -> None:
    waits: list[float] = []
    server.enqueue(error_reply(503, "busy"), error_reply(503, "busy"), openai_reply("{}"))
    transport = HttpTransport("openai", RetryPolicy(max_retries=3, base=0.01), sleep=waits.append)
    ask(openai_config(server), transport=transport)
    assert len(waits) == 2
    assert waits[0] <= 0.01
    assert waits[1] <= 0.02


def test_retries_are_bounded(server: LlmServer) -> None:
    server.enqueue(*[error_reply(503, "busy")] * 5)
    with pytest.raises(ProviderUnavailable):
        ask(openai_config(server, max_retries=2))
    assert len(server.requests) == 3


def test_a_slow_answer_hits_the_timeout(server: LlmServer) -> None:
    server.enqueue(Reply(body={}, delay=5), Reply(body={}, delay=5))
    with pytest.raises(ProviderUnavailable, match=r"no answer within 0\.2 s"):
        ask(openai_config(server, timeout=0.2, max_retries=1))


def test_a_timed_out_request_is_retried(server: LlmServer) -> None:
    server.enqueue(Reply(body={}, delay=5), openai_reply("{}"))
    ask(openai_config(server, timeout=0.2, max_retries=1))
    assert len(server.requests) == 2


def test_connection_refused_is_unavailable() -> None:
    with LlmServer() as stopped:
        base = stopped.openai_base
    config = LlmConfig(model="m", base_url=base, max_retries=1, backoff_base=0.001, cache=False)
    with pytest.raises(ProviderUnavailable, match="cannot reach"):
        ask(config)


def test_401_fails_at_once(server: LlmServer) -> None:
    server.enqueue(error_reply(401, "Incorrect API key provided"), openai_reply("{}"))
    with pytest.raises(ProviderRefused):
        ask(openai_config(server))
    assert len(server.requests) == 1


def test_401_message_names_the_key_variable(server: LlmServer) -> None:
    server.enqueue(error_reply(401, "Incorrect API key provided"))
    with pytest.raises(ProviderError, match=r"authentication failed.*OPENAI_API_KEY"):
        ask(openai_config(server))


def test_404_message_names_the_model(server: LlmServer) -> None:
    server.enqueue(error_reply(404, "The model `nope` does not exist"))
    with pytest.raises(ProviderError, match="unknown model 'test-model'"):
        ask(openai_config(server))


@pytest.mark.parametrize("status", [400, 403, 404])
def test_client_errors_are_not_retried(server: LlmServer, status: int) -> None:
    server.enqueue(error_reply(status, "no"), openai_reply("{}"))
    with pytest.raises(ProviderRefused):
        ask(openai_config(server, structured_mode="none"))
    assert len(server.requests) == 1


def test_error_messages_never_hold_the_key(server: LlmServer) -> None:
    server.enqueue(error_reply(401, f"Incorrect API key provided: {FAKE_KEY}"))
    with pytest.raises(ProviderError) as caught:
        ask(openai_config(server))
    assert FAKE_KEY not in str(caught.value)


def test_error_message_is_one_line(server: LlmServer) -> None:
    server.enqueue(error_reply(400, "line one\nline two"))
    with pytest.raises(ProviderError) as caught:
        ask(openai_config(server, structured_mode="none"))
    assert "\n" not in str(caught.value)


def test_anthropic_401_fails_at_once(server: LlmServer) -> None:
    server.enqueue(error_reply(401, "invalid x-api-key", style="anthropic"))
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        ask(anthropic_config(server))


def test_anthropic_529_overloaded_is_retried(server: LlmServer) -> None:
    server.enqueue(error_reply(529, "Overloaded", style="anthropic"), anthropic_tool_reply({}))
    ask(anthropic_config(server))
    assert len(server.requests) == 2


# ---------------------------------------------------------------------- schema shaping


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (STRICT_SCHEMA, True),
        (LOOSE_SCHEMA, False),
        ({**STRICT_SCHEMA, "additionalProperties": True}, False),
        ({**STRICT_SCHEMA, "allOf": [{"required": ["name"]}]}, False),
        ({"type": "array", "items": {"type": "string"}}, False),
        (
            {
                "type": "object",
                "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["tags"],
                "additionalProperties": False,
            },
            True,
        ),
        (
            {
                "type": "object",
                "properties": {"inner": {"type": "object", "properties": {"a": {"type": "x"}}}},
                "required": ["inner"],
                "additionalProperties": False,
            },
            False,
        ),
        (
            {
                "type": "object",
                "properties": {"n": {"$ref": "#/$defs/n"}},
                "required": ["n"],
                "additionalProperties": False,
                "$defs": {"n": {"type": "integer"}},
            },
            True,
        ),
    ],
)
def test_strict_compatible(schema: Any, expected: bool) -> None:
    assert strict_compatible(schema) is expected


@pytest.mark.parametrize(
    ("mode", "schema", "expected"),
    [
        (
            "auto",
            STRICT_SCHEMA,
            ["json_schema_strict", "json_schema", "json_object_schema", "json_object", "none"],
        ),
        ("auto", LOOSE_SCHEMA, ["json_schema", "json_object_schema", "json_object", "none"]),
        ("auto", None, ["json_object", "none"]),
        ("json_object", STRICT_SCHEMA, ["json_object"]),
    ],
)
def test_structured_modes(mode: str, schema: Any, expected: list[str]) -> None:
    assert structured_modes(mode, schema) == expected


def test_object_root_moves_defs_to_the_wrapper() -> None:
    schema = {"type": "array", "items": {"$ref": "#/$defs/x"}, "$defs": {"x": {"type": "string"}}}
    wrapped, was_wrapped = object_root(schema)
    assert (was_wrapped, wrapped["$defs"], "$defs" in wrapped["properties"]["value"]) == (
        True,
        {"x": {"type": "string"}},
        False,
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [(None, "answer"), ("person", "person"), ("get weather!", "get_weather"), ("", "answer")],
)
def test_tool_name(name: str | None, expected: str) -> None:
    assert tool_name(name) == expected


def test_httpx_is_imported_only_for_a_request() -> None:
    import subprocess
    import sys

    code = "import sys, llmfix, llmfix.llm; print('httpx' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_json_object_mode_asks_for_a_wrapped_array(server: LlmServer) -> None:
    server.enqueue(openai_reply('{"value": [1]}'))
    completion = ask(openai_config(server, structured_mode="json_object"), {"type": "array"})
    assert '{"value": <value>}' in server.requests[0].body["messages"][-1]["content"]
    assert json.loads(completion.text) == [1]
