"""`llmfix proxy` driven by the real OpenAI and Anthropic SDKs, as an application uses them.

The upstream is the tests' local server (tests/llm_server.py) replaying answers in each
API's wire shape (tests/proxy_wire.py), good and broken; the proxy runs in this process on
127.0.0.1 (uvicorn in a thread). What the application sees is what the SDK parsed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("aiohttp")
pytest.importorskip("uvicorn")
openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from llmfix.proxy.app import ProxySettings, build_app  # noqa: E402
from llmfix.proxy.expect import Configured  # noqa: E402
from llmfix.run.settings import RepairFlags, repair_run  # noqa: E402
from tests.llm_server import LlmServer, Reply, error_reply  # noqa: E402
from tests.proxy_wire import (  # noqa: E402
    anthropic_message,
    anthropic_stream,
    chat_completion,
    chat_stream,
    responses_object,
    responses_stream,
)

KEY = "sk-test-proxy-0123456789abcdefghij"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
RESPONSES_TOOLS = [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
ANTHROPIC_TOOLS = [{"name": "get_weather", "description": "Weather", "input_schema": WEATHER}]
PERSON_FORMAT = {"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON}}
ASK = [{"role": "user", "content": "Who?"}]


class Person(BaseModel):
    name: str
    age: int


class Proxy:
    """The proxy app served by uvicorn on a free port of 127.0.0.1, in a thread."""

    def __init__(self, settings: ProxySettings) -> None:
        self.app = build_app(settings)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.clients: list[Any] = []  # the SDK clients made, closed with the proxy

    def __enter__(self) -> Proxy:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "the proxy did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        for client in self.clients:
            client.close()
        self.server.should_exit = True
        self.thread.join(timeout=10)

    @property
    def url(self) -> str:
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def openai(self, **options: Any) -> Any:
        options = {"max_retries": 0, **options}
        client = openai.OpenAI(api_key=KEY, base_url=f"{self.url}/v1", **options)
        self.clients.append(client)
        return client

    def anthropic(self, **options: Any) -> Any:
        options = {"max_retries": 0, **options}
        client = anthropic.Anthropic(api_key=KEY, base_url=self.url, **options)
        self.clients.append(client)
        return client

    def metrics(self) -> dict[str, float]:
        text = httpx.get(f"{self.url}/metrics").text
        found = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                found[name] = float(value)
        return found


def settings(upstream: str, **changes: Any) -> ProxySettings:
    flags = changes.pop("flags", RepairFlags())
    return ProxySettings(upstream=upstream, run=repair_run(flags), **changes)


@pytest.fixture
def guarded(server: LlmServer, tmp_path: Path) -> Iterator[Proxy]:
    with Proxy(settings(server.url, log=str(tmp_path / "proxy.jsonl"))) as running:
        yield running


def log_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# ------------------------------------------------------------------ whole responses


def test_chat_response_format_reaches_the_app_repaired(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(chat_completion('Here it is:\n```json\n{"name": "Ada", "age": "36",}\n```'))
    raw = guarded.openai().chat.completions.with_raw_response.create(
        model="gpt-test", messages=ASK, response_format=PERSON_FORMAT
    )
    completion = raw.parse()
    assert json.loads(completion.choices[0].message.content) == {"name": "Ada", "age": 36}
    assert raw.headers["x-llmfix-status"] == "repaired"
    assert raw.headers["x-llmfix-repairs"] == "2"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_chat_parse_with_a_pydantic_model(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(chat_completion("{'name': 'Ada', 'age': 36}"))
    completion = guarded.openai().chat.completions.parse(
        model="gpt-test", messages=ASK, response_format=Person
    )
    assert completion.choices[0].message.parsed == Person(name="Ada", age=36)


def test_chat_tool_call_arguments_repaired(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(
        chat_completion(calls=[("call_1", "get_weather", ['{"city": "Paris", "days": "3",}'])])
    )
    completion = guarded.openai().chat.completions.create(
        model="gpt-test", messages=ASK, tools=CHAT_TOOLS
    )
    call = completion.choices[0].message.tool_calls[0]
    assert json.loads(call.function.arguments) == {"city": "Paris", "days": 3}


def test_valid_answer_is_sent_byte_for_byte(server: LlmServer, guarded: Proxy) -> None:
    reply = chat_completion('{"name": "Ada",  "age": 36}')
    server.enqueue(reply)
    response = httpx.post(
        f"{guarded.url}/v1/chat/completions",
        json={"model": "m", "messages": ASK, "response_format": PERSON_FORMAT},
        headers={"authorization": f"Bearer {KEY}"},
    )
    assert response.content == json.dumps(reply.body).encode()
    assert response.headers["x-llmfix-status"] == "valid"
    assert response.headers["x-llmfix-repairs"] == "0"


def test_prose_to_a_request_without_json_is_not_checked(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(chat_completion("Hello! {not json"))
    raw = guarded.openai().chat.completions.with_raw_response.create(model="m", messages=ASK)
    assert raw.parse().choices[0].message.content == "Hello! {not json"
    assert raw.headers["x-llmfix-status"] == "unchecked"


def test_anthropic_tool_use_input_repaired(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(
        anthropic_message("Checking.", [("toolu_1", "get_weather", {"city": "Paris", "days": "3"})])
    )
    raw = guarded.anthropic().messages.with_raw_response.create(
        model="claude-test", max_tokens=100, messages=ASK, tools=ANTHROPIC_TOOLS
    )
    message = raw.parse()
    assert message.content[1].input == {"city": "Paris", "days": 3}
    assert raw.headers["x-llmfix-status"] == "repaired"
    sent = server.requests[0].headers  # (newer SDKs send the key as a bearer token)
    assert KEY in (sent.get("x-api-key"), sent.get("authorization", "").removeprefix("Bearer "))


def test_responses_text_format_repaired(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(responses_object('{"name": "Ada", "age": 36, "note": "x",}'))
    response = guarded.openai().responses.create(
        model="gpt-test",
        input="Who?",
        text={"format": {"type": "json_schema", "name": "person", "schema": PERSON}},
    )
    # a trailing comma, and a property the schema forbids, dropped
    assert json.loads(response.output_text) == {"name": "Ada", "age": 36}


def test_cut_off_answer_is_never_passed_off_as_repaired(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(chat_completion('{"name": "Ada", "age": 36', finish="length"))
    raw = guarded.openai().chat.completions.with_raw_response.create(
        model="m", messages=ASK, response_format=PERSON_FORMAT
    )
    assert raw.headers["x-llmfix-status"] == "truncated"
    assert raw.headers["x-llmfix-passed"] == "false"
    assert raw.parse().choices[0].message.content == '{"name": "Ada", "age": 36'


def test_refusal_passes_marked(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(chat_completion(None, refusal="I can't help with that."))
    raw = guarded.openai().chat.completions.with_raw_response.create(
        model="m", messages=ASK, response_format=PERSON_FORMAT
    )
    assert raw.headers["x-llmfix-status"] == "refused"
    assert raw.parse().choices[0].message.refusal == "I can't help with that."


def test_error_policy_gives_an_error_the_sdk_raises(server: LlmServer, tmp_path: Path) -> None:
    server.enqueue(chat_completion('{"name": "Ada"}'))
    with (
        Proxy(settings(server.url, on_failure="error")) as proxy,
        pytest.raises(openai.InternalServerError) as caught,
    ):
        proxy.openai(max_retries=2).chat.completions.create(
            model="m", messages=ASK, response_format=PERSON_FORMAT
        )
    assert caught.value.status_code == 502
    assert "invalid" in str(caught.value)
    assert "age" in str(caught.value)
    assert len(server.requests) == 1  # x-should-retry: false, so the SDK did not ask again


def test_max_risk_gate(server: LlmServer) -> None:
    # closing a cut-off value is a guess: with --max-risk safe the answer fails
    server.enqueue(chat_completion('{"name": "Ada", "age": 36'))
    flags = RepairFlags(max_risk="safe")
    with (
        Proxy(settings(server.url, flags=flags, on_failure="error")) as proxy,
        pytest.raises(openai.APIStatusError, match="max-risk"),
    ):
        proxy.openai().chat.completions.create(
            model="m", messages=ASK, response_format=PERSON_FORMAT
        )


def test_configured_schema_for_a_model(server: LlmServer, tmp_path: Path) -> None:
    run = repair_run(RepairFlags())
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps(PERSON), encoding="utf-8")
    configured = Configured({"gpt-person": run.validators.get(str(schema), False)})
    server.enqueue(chat_completion('{"name": "Ada", "age": "36"}'), chat_completion('{"a": "1"}'))
    with Proxy(ProxySettings(server.url, run, configured)) as proxy:
        client = proxy.openai()
        first = client.chat.completions.with_raw_response.create(model="gpt-person", messages=ASK)
        other = client.chat.completions.with_raw_response.create(model="gpt-other", messages=ASK)
    assert json.loads(first.parse().choices[0].message.content) == {"name": "Ada", "age": 36}
    assert other.headers["x-llmfix-status"] == "unchecked"


# ------------------------------------------------------------------ streams


def test_chat_stream_text_flows_and_the_last_chunk_carries_the_verdict(
    server: LlmServer, guarded: Proxy
) -> None:
    server.enqueue(chat_stream(['{"name": ', '"Ada", "age": ', '"36"}']))
    stream = guarded.openai().chat.completions.create(
        model="m", messages=ASK, response_format=PERSON_FORMAT, stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == '{"name": "Ada", "age": "36"}'  # text deltas pass as they came
    verdict = chunks[-1].model_extra["llmfix"]
    assert verdict["status"] == "repaired"
    assert verdict["rules"] == {"coerce_integer": 1}


def test_chat_stream_tool_call_held_and_released_repaired(
    server: LlmServer, guarded: Proxy
) -> None:
    parts = ['{"city": ', '"Paris", "days"', ': "3",}']
    server.enqueue(chat_stream(calls=[("call_1", "get_weather", parts)]))
    client = guarded.openai()
    with client.chat.completions.stream(model="m", messages=ASK, tools=CHAT_TOOLS) as stream:
        final = stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]
    assert call.id == "call_1"
    assert json.loads(call.function.arguments) == {"city": "Paris", "days": 3}


def test_chat_stream_two_calls_in_order(server: LlmServer, guarded: Proxy) -> None:
    calls = [
        ("call_1", "get_weather", ['{"city": "Paris",', ' "days": 2}']),
        ("call_2", "get_weather", ["{'city': 'Oslo', 'days': 1}"]),
    ]
    server.enqueue(chat_stream(calls=calls))
    chunks = list(
        guarded.openai().chat.completions.create(
            model="m", messages=ASK, tools=CHAT_TOOLS, stream=True
        )
    )
    arguments: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or ():
                arguments[call.index] = arguments.get(call.index, "") + (
                    call.function.arguments or ""
                )
    assert json.loads(arguments[0]) == {"city": "Paris", "days": 2}
    assert json.loads(arguments[1]) == {"city": "Oslo", "days": 1}
    assert chunks[-1].model_extra["llmfix"]["status"] == "repaired"


def test_anthropic_stream_tool_call_repaired(server: LlmServer, guarded: Proxy) -> None:
    parts = ['{"city": "Par', 'is", "days": "4"', ', "unit": "Celsius"}']
    reply = anthropic_stream(["Let me check."], [("toolu_1", "get_weather", parts)])
    server.enqueue(reply, reply)
    client = guarded.anthropic()
    with client.messages.stream(
        model="claude-test", max_tokens=100, messages=ASK, tools=ANTHROPIC_TOOLS
    ) as stream:
        message = stream.get_final_message()
    assert message.content[0].text == "Let me check."
    assert message.content[1].input == {"city": "Paris", "days": 4, "unit": "celsius"}
    events = list(
        client.messages.create(
            model="claude-test", max_tokens=100, messages=ASK, tools=ANTHROPIC_TOOLS, stream=True
        )
    )
    assert events[-1].type == "message_stop"
    assert events[-1].model_extra["llmfix"]["status"] == "repaired"


def test_anthropic_stream_error_policy_raises(server: LlmServer) -> None:
    parts = ['{"city": "Paris"}']  # days is required: no rule can invent it
    server.enqueue(anthropic_stream(calls=[("toolu_1", "get_weather", parts)]))
    seen: list[Any] = []

    def read(client: Any) -> None:
        with client.messages.stream(
            model="claude-test", max_tokens=100, messages=ASK, tools=ANTHROPIC_TOOLS
        ) as stream:
            seen.extend(stream)

    with (
        Proxy(settings(server.url, on_failure="error")) as proxy,
        pytest.raises(anthropic.APIStatusError, match="days"),
    ):
        read(proxy.anthropic())
    # the invalid call was never released: no argument delta reached the app
    assert [e for e in seen if e.type == "content_block_delta"] == []


def test_responses_stream_tool_call_repaired(server: LlmServer, guarded: Proxy) -> None:
    parts = ['{"city": "Paris", ', "'days': 5}"]
    reply = responses_stream(calls=[("call_9", "get_weather", parts)])
    server.enqueue(reply, reply)
    client = guarded.openai()
    with client.responses.stream(
        model="gpt-test", input="Weather?", tools=RESPONSES_TOOLS
    ) as stream:
        final = stream.get_final_response()
    assert json.loads(final.output[0].arguments) == {"city": "Paris", "days": 5}
    events = list(
        client.responses.create(
            model="gpt-test", input="Weather?", tools=RESPONSES_TOOLS, stream=True
        )
    )
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert json.loads(done.arguments) == {"city": "Paris", "days": 5}
    assert events[-1].type == "response.completed"
    assert events[-1].model_extra["llmfix"]["status"] == "repaired"


def test_responses_stream_text_repaired_in_the_final_response(
    server: LlmServer, guarded: Proxy
) -> None:
    server.enqueue(responses_stream(['{"name": "Ada",', ' "age": "36"}']))
    with guarded.openai().responses.stream(
        model="gpt-test",
        input="Who?",
        text={"format": {"type": "json_schema", "name": "person", "schema": PERSON}},
    ) as stream:
        final = stream.get_final_response()
    assert json.loads(final.output_text) == {"name": "Ada", "age": 36}


def test_stream_cut_off_is_truncated(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(chat_stream(['{"name": "Ada", ', '"age": 3'], finish="length"))
    chunks = list(
        guarded.openai().chat.completions.create(
            model="m", messages=ASK, response_format=PERSON_FORMAT, stream=True
        )
    )
    verdict = chunks[-1].model_extra["llmfix"]
    assert verdict["status"] == "truncated"
    assert verdict["passed"] is False


# ------------------------------------------------------------------ the rest of the API


def test_other_paths_pass_through(server: LlmServer, guarded: Proxy) -> None:
    server.serve(
        "/v1/models",
        {
            "object": "list",
            "data": [{"id": "gpt-test", "object": "model", "created": 0, "owned_by": "me"}],
        },
    )
    models = guarded.openai().models.list()
    assert [m.id for m in models] == ["gpt-test"]
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_upstream_error_reaches_the_app(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(error_reply(429, "slow down", headers={"retry-after": "0"}))
    with pytest.raises(openai.RateLimitError, match="slow down"):
        guarded.openai().chat.completions.create(model="m", messages=ASK)
    server.enqueue(error_reply(529, "overloaded", style="anthropic"))
    with pytest.raises(anthropic.APIStatusError, match="overloaded"):
        guarded.anthropic().messages.create(model="c", max_tokens=5, messages=ASK)


def test_slow_upstream_gives_a_timeout_not_a_hang(server: LlmServer) -> None:
    server.enqueue(Reply(body={"never": True}, delay=5.0))
    with Proxy(settings(server.url, timeout=0.3)) as proxy:
        started = time.monotonic()
        with pytest.raises(openai.APIStatusError) as caught:
            proxy.openai().chat.completions.create(model="m", messages=ASK)
        assert time.monotonic() - started < 3
    assert caught.value.status_code == 504


def test_unreachable_upstream_gives_502(server: LlmServer) -> None:
    with (
        Proxy(settings("http://127.0.0.1:9")) as proxy,
        pytest.raises(anthropic.APIStatusError) as caught,
    ):
        proxy.anthropic().messages.create(model="c", max_tokens=5, messages=ASK)
    assert caught.value.status_code == 502
    assert "upstream" in str(caught.value)


def test_request_body_limit(server: LlmServer) -> None:
    with (
        Proxy(settings(server.url, max_request=2000)) as proxy,
        pytest.raises(openai.APIStatusError) as caught,
    ):
        proxy.openai().chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x" * 5000}]
        )
    assert caught.value.status_code == 413
    assert server.requests == []  # nothing was forwarded


def test_a_bad_schema_in_the_request_is_a_400(server: LlmServer, guarded: Proxy) -> None:
    bad = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 12}}}
    with pytest.raises(openai.BadRequestError, match="schema"):
        guarded.openai().chat.completions.create(model="m", messages=ASK, response_format=bad)
    assert server.requests == []


# ------------------------------------------------------------------ log and metrics


def test_log_and_metrics_agree(server: LlmServer, tmp_path: Path) -> None:
    log = tmp_path / "proxy.jsonl"
    server.enqueue(
        chat_completion('{"name": "Ada", "age": "36"}'),  # repaired (coerce_integer)
        chat_completion('{"name": "Ada", "age": 36}'),  # valid
        chat_completion('{"name": "Ada"}'),  # invalid
        chat_stream(calls=[("call_1", "get_weather", ['{"city": "Rome", "days": 1,}'])]),
        anthropic_message(None, [("toolu_1", "get_weather", {"city": "Oslo", "days": "2"})]),
    )
    secret = "me@example.com"
    with Proxy(settings(server.url, log=str(log))) as proxy:
        client = proxy.openai()
        for _ in range(3):
            client.chat.completions.create(
                model="m",
                messages=[{"role": "user", "content": f"write to {secret}"}],
                response_format=PERSON_FORMAT,
            )
        list(client.chat.completions.create(model="m", messages=ASK, tools=CHAT_TOOLS, stream=True))
        proxy.anthropic().messages.create(
            model="c", max_tokens=5, messages=ASK, tools=ANTHROPIC_TOOLS
        )
        metrics = proxy.metrics()
    lines = log_lines(log)
    statuses = [line["llmfix"]["status"] for line in lines]
    assert sorted(statuses) == ["invalid", "repaired", "repaired", "repaired", "valid"]
    for status in set(statuses):
        counted = sum(
            v
            for k, v in metrics.items()
            if k.startswith("llmfix_proxy_requests_total") and f'status="{status}"' in k
        )
        assert counted == statuses.count(status)
    rules: dict[str, int] = {}
    for line in lines:
        for rule, n in line["llmfix"]["rules"].items():
            rules[rule] = rules.get(rule, 0) + n
    for rule, n in rules.items():
        assert metrics[f'llmfix_proxy_repairs_total{{rule="{rule}"}}'] == n
    text = log.read_text(encoding="utf-8")
    assert KEY not in text
    assert secret not in text
    assert "[EMAIL]" in text
    count = sum(v for k, v in metrics.items() if k.startswith("llmfix_proxy_added_seconds_count"))
    assert count == 5


def test_llmfix_check_reads_the_log(server: LlmServer, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from llmfix.cli import app

    log = tmp_path / "proxy.jsonl"
    server.enqueue(
        chat_completion('{"name": "Ada", "age": "36"}'),
        chat_stream(['{"name": "Bo",', ' "age": 7}']),
    )
    with Proxy(settings(server.url, log=str(log))) as proxy:
        client = proxy.openai()
        client.chat.completions.create(model="m", messages=ASK, response_format=PERSON_FORMAT)
        list(
            client.chat.completions.create(
                model="m", messages=ASK, response_format=PERSON_FORMAT, stream=True
            )
        )
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps(PERSON), encoding="utf-8")
    result = CliRunner().invoke(
        app, ["check", str(log), "--schema", str(schema), "--format", "json", "--no-progress"]
    )
    report = json.loads(result.stdout)
    assert report["summary"]["items"] == 2
    assert report["summary"]["status"] == {"repaired": 1, "valid": 1}
    assert [line["llmfix"]["status"] for line in log_lines(log)] == ["repaired", "valid"]


# ------------------------------------------------------------------ more shapes and policies


def test_llm_repair_is_opt_in_and_repairs_what_rules_cannot(
    server: LlmServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from llmfix.proxy.whole import model_repair
    from llmfix.run.repair import start_llm
    from llmfix.run.settings import LlmFlags

    monkeypatch.setenv("OPENAI_API_KEY", "sk-repair-model-key-0123456789")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = LlmFlags(
        enabled=True, model="test-model", provider="openai", base_url=server.openai_base,
        cache=False, max_attempts=1,
    )  # fmt: skip
    run = repair_run(RepairFlags(llm=model))
    llm = start_llm(run)
    assert llm is not None
    # the upstream's answer lacks "age" (no rule can invent it); the repair model's has it
    server.enqueue(
        chat_completion('{"name": "Ada"}'), chat_completion('{"name": "Ada", "age": 36}')
    )
    try:
        with Proxy(ProxySettings(server.url, run, model=model_repair(llm, run))) as proxy:
            raw = proxy.openai().chat.completions.with_raw_response.create(
                model="m", messages=ASK, response_format=PERSON_FORMAT
            )
    finally:
        llm.close()
    assert json.loads(raw.parse().choices[0].message.content) == {"name": "Ada", "age": 36}
    assert raw.headers["x-llmfix-status"] == "llm_repaired"
    assert len(server.requests) == 2  # the upstream, then the repair model


@pytest.fixture
def repair_model(
    server: LlmServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[tuple[Any, Any]]:
    """The run and the opt-in LLM repair (``--llm``), its model the local server."""
    from llmfix.proxy.whole import model_repair
    from llmfix.run.repair import start_llm
    from llmfix.run.settings import LlmFlags

    monkeypatch.setenv("OPENAI_API_KEY", "sk-repair-model-key-0123456789")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    model = LlmFlags(
        enabled=True, model="test-model", provider="openai", base_url=server.openai_base,
        cache=False, max_attempts=1,
    )  # fmt: skip
    run = repair_run(RepairFlags(llm=model))
    llm = start_llm(run)
    assert llm is not None
    try:
        yield run, model_repair(llm, run)
    finally:
        llm.close()


def test_llm_repair_of_a_tool_call(server: LlmServer, repair_model: tuple[Any, Any]) -> None:
    """A call no rule can mend (``days`` is missing) goes to the model with the tool's
    parameters as its schema; the app gets the model's arguments."""
    run, model = repair_model
    server.enqueue(
        chat_completion(None, [("call_1", "get_weather", ['{"city": "Rome"}'])]),
        chat_completion('{"city": "Rome", "days": 1}'),  # the repair model's answer
    )
    with Proxy(ProxySettings(server.url, run, model=model)) as proxy:
        raw = proxy.openai().chat.completions.with_raw_response.create(
            model="m", messages=ASK, tools=CHAT_TOOLS
        )
    call = raw.parse().choices[0].message.tool_calls[0]
    assert json.loads(call.function.arguments) == {"city": "Rome", "days": 1}
    assert raw.headers["x-llmfix-status"] == "llm_repaired"
    sent = json.dumps(server.requests[1].body)  # the model was given the tool's parameters
    assert '"required": ["city", "days"]' in sent


def test_llm_repair_of_a_streamed_tool_call(
    server: LlmServer, repair_model: tuple[Any, Any]
) -> None:
    """A held call the rules leave failing is sent to the model at the stream's end and
    released with the model's arguments: the SDK's final completion has them."""
    run, model = repair_model
    server.enqueue(
        chat_stream(calls=[("call_1", "get_weather", ['{"city": ', '"Oslo"}'])]),
        chat_completion('{"city": "Oslo", "days": 2}'),
    )
    with Proxy(ProxySettings(server.url, run, model=model)) as proxy:
        client = proxy.openai()
        with client.chat.completions.stream(model="m", messages=ASK, tools=CHAT_TOOLS) as stream:
            chunks = list(stream)
            final = stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]
    assert call.id == "call_1"
    assert json.loads(call.function.arguments) == {"city": "Oslo", "days": 2}
    verdict = [c for c in chunks if c.type == "chunk"][-1].chunk.model_extra["llmfix"]
    assert verdict["status"] == "llm_repaired"
    assert verdict["passed"] is True
    assert len(server.requests) == 2


def test_llm_repair_of_a_streamed_text_reaches_the_final_response(
    server: LlmServer, repair_model: tuple[Any, Any]
) -> None:
    """A streamed JSON text the rules leave failing: its deltas went out as they came;
    the model's repair is in the Responses API's final response object."""
    run, model = repair_model
    server.enqueue(
        responses_stream(['{"name": ', '"Ada"}']),
        chat_completion('{"name": "Ada", "age": 36}'),
    )
    fmt = {"type": "json_schema", "name": "person", "schema": PERSON}
    with Proxy(ProxySettings(server.url, run, model=model)) as proxy:
        events = list(
            proxy.openai().responses.create(
                model="m", input="Who?", text={"format": fmt}, stream=True
            )
        )
    done = events[-1]
    assert done.type == "response.completed"
    assert json.loads(done.response.output_text) == {"name": "Ada", "age": 36}
    assert done.model_extra["llmfix"]["status"] == "llm_repaired"


def test_chat_stream_invalid_text_under_the_error_policy(server: LlmServer) -> None:
    server.enqueue(chat_stream(['{"name": ', '"Ada"}']))
    with Proxy(settings(server.url, on_failure="error")) as proxy:
        stream = proxy.openai().chat.completions.create(
            model="m", messages=ASK, response_format=PERSON_FORMAT, stream=True
        )
        with pytest.raises(openai.APIError, match="age"):
            list(stream)


def test_responses_tool_call_repaired(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(
        responses_object(calls=[("call_1", "get_weather", ['{"city": "Oslo", "days": 2.0}'])])
    )
    response = guarded.openai().responses.create(
        model="gpt-test", input="Weather?", tools=RESPONSES_TOOLS
    )
    assert json.loads(response.output[0].arguments) == {"city": "Oslo", "days": 2}


def test_anthropic_output_format_text_repaired(server: LlmServer, guarded: Proxy) -> None:
    server.enqueue(anthropic_message("{name: 'Ada', age: 36}"))
    message = guarded.anthropic().messages.create(
        model="claude-test",
        max_tokens=100,
        messages=ASK,
        extra_body={"output_format": {"type": "json_schema", "schema": PERSON}},
    )
    assert json.loads(message.content[0].text) == {"name": "Ada", "age": 36}


def test_a_stream_with_nothing_to_check_passes_byte_for_byte(
    server: LlmServer, tmp_path: Path
) -> None:
    reply = chat_stream(["Hello", " there {"])
    server.enqueue(reply)
    log = tmp_path / "proxy.jsonl"
    with Proxy(settings(server.url, log=str(log))) as proxy:
        response = httpx.post(
            f"{proxy.url}/v1/chat/completions",
            json={"model": "m", "messages": ASK, "stream": True},
        )
        metrics = proxy.metrics()
    assert response.content == reply.body.encode()
    assert response.headers["x-llmfix-status"] == "unchecked"
    (line,) = log_lines(log)
    assert line["llmfix"]["status"] == "unchecked"
    assert line["response"]["body"]["choices"][0]["message"]["content"] == "Hello there {"
    key = 'llmfix_proxy_requests_total{route="/v1/chat/completions",status="unchecked"}'
    assert metrics[key] == 1


def test_a_streamed_refusal_passes_under_the_error_policy(server: LlmServer) -> None:
    server.enqueue(chat_stream(refusal=["I can't ", "help with that."]))
    with Proxy(settings(server.url, on_failure="error")) as proxy:
        chunks = list(
            proxy.openai().chat.completions.create(
                model="m", messages=ASK, response_format=PERSON_FORMAT, stream=True
            )
        )
    said = "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices)
    assert said == "I can't help with that."
    assert chunks[-1].model_extra["llmfix"]["status"] == "refused"


def test_configured_tools_for_a_route(server: LlmServer, tmp_path: Path) -> None:
    """A client that sends no tool list (its server-side tools) gets its calls checked
    against the tools the proxy was started with for the route."""
    from llmfix.proxy.expect import configured_files

    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(ANTHROPIC_TOOLS), encoding="utf-8")
    run = repair_run(RepairFlags())
    configured = configured_files(run, None, [], [f"/v1/messages={tools}"])
    server.enqueue(
        anthropic_message(None, [("toolu_1", "get_weather", {"city": "Rome", "days": "5"})])
    )
    with Proxy(ProxySettings(server.url, run, configured)) as proxy:
        raw = proxy.anthropic().messages.with_raw_response.create(
            model="claude-test", max_tokens=100, messages=ASK
        )
    assert raw.parse().content[0].input == {"city": "Rome", "days": 5}
    assert raw.headers["x-llmfix-status"] == "repaired"
