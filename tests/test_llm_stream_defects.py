"""Issue 28, items 1, 6, 8, 13 and 14: cut-off answers are never rewritten by the model
(since issue 36 it is asked to continue them: a fresh answer in reply is not taken; with
``continuation: false`` they are not sent at all), refused answers never go to the model,
a stream's stop reason counts as a saved stream's does, a dead or rate-limiting provider is
never silent, snapshots come early from the Python API, and the wire decoder takes bytes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.llm_server import LlmServer, error_reply, openai_reply

FAKE_KEY = "sk-test-FAKEKEY1234567890abcdef"
TRIAGE = {
    "type": "object",
    "properties": {
        "ticket_id": {"type": "string"},
        "priority": {"enum": ["low", "medium", "high"]},
        "category": {"type": "string"},
        "summary": {"type": "string"},
        "team": {"type": "string"},
    },
    "required": ["ticket_id", "priority", "category", "summary", "team"],
}
CUT_TEXT = '{"ticket_id": "T-00057", "priority": "low", "category": "bil'
# What a model asked to "repair" the cut-off answer gave: valid, and priority changed.
INVENTED = {
    "ticket_id": "T-00057",
    "priority": "high",
    "category": "billing",
    "summary": "Charged twice",
    "team": "payments",
}


def llmfix(
    *args: str, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmfix", *args],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        timeout=60,
        check=False,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """Keys set, a private cache, and a user config with short transport backoff."""
    config = tmp_path / "user-config"
    config.mkdir()
    (config / "config.yaml").write_text(
        "llm:\n  enabled: false\n  backoff-base: 0.01\n  backoff-max: 0.02\n  max-retries: 2\n",
        encoding="utf-8",
    )
    return {
        **os.environ,
        "OPENAI_API_KEY": FAKE_KEY,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LLMFIX_CONFIG_DIR": str(config),
    }


@pytest.fixture
def schema(tmp_path: Path) -> Path:
    path = tmp_path / "triage.schema.json"
    path.write_text(json.dumps(TRIAGE), encoding="utf-8")
    return path


def chat_completion(content: str, finish_reason: str = "stop", refusal: str | None = None) -> str:
    message = {"role": "assistant", "content": content, "refusal": refusal}
    choice = {"index": 0, "message": message, "finish_reason": finish_reason}
    return json.dumps({"object": "chat.completion", "model": "m", "choices": [choice]})


def check_llm(
    data: Path, schema: Path, env: dict[str, str], base_url: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return llmfix(
        "check",
        str(data),
        "-s",
        str(schema),
        "--llm",
        "--model",
        "test-model",
        "--base-url",
        base_url,
        "--no-progress",
        *extra,
        env=env,
    )


def items(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(done.stdout)["items"]
    return found


def codes(item: dict[str, Any]) -> list[str]:
    return [d["code"] for d in item["diagnostics"]]


# ------------------------------------ item 1: cut off: never rewritten; refused: not sent


def no_continuation(env: dict[str, str]) -> dict[str, str]:
    """``env`` with ``continuation: false`` in its user config."""
    config = Path(env["LLMFIX_CONFIG_DIR"]) / "config.yaml"
    text = config.read_text(encoding="utf-8") + "  continuation: false\n"
    config.write_text(text, encoding="utf-8")
    return env


def asked_to_continue(server: LlmServer) -> bool:
    """Whether the server was asked to continue the cut-off prefix: first with a prefill,
    then (that one not joining) with the prefix shown in a prompt, never anything else.
    The prefill stops before the word the cut fell in (token healing), and the grammar
    sent with it starts with that word."""
    request, *then = server.requests
    body = request.body
    last = body["messages"][-1]
    prefill = str(last.get("content", ""))
    healed = CUT_TEXT[len(prefill) :]
    if len(then) > 1 or any(prefill not in r.user_prompt() for r in then):
        return False
    return (
        body.get("continue_final_message") is True
        and body.get("add_generation_prompt") is False
        and last["role"] == "assistant"
        and CUT_TEXT.startswith(prefill)
        and len(prefill) > 2
        and str(body.get("grammar", "")).startswith(f"root ::= {json.dumps(healed)}")
        and "response_format" not in body
    )


def cut_off_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.json").write_text(chat_completion(CUT_TEXT, "length"), encoding="utf-8")
    return data


def test_check_llm_does_not_take_a_fresh_answer_for_one_the_api_says_was_cut_off(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    """Asked to continue, the model wrote a whole new answer (priority changed): it does
    not join the prefix, so the rules' result stands."""
    server.enqueue(openai_reply(INVENTED), openai_reply(INVENTED))
    data = cut_off_dir(tmp_path)
    done = check_llm(data, schema, env, server.openai_base, "--no-cache", "-f", "json")
    [item] = items(done)
    assert (done.returncode, asked_to_continue(server)) == (1, True)
    assert item["status"] in {"invalid", "truncated"}  # (truncation may outrank the schema)
    assert "response.cut_off" in codes(item)
    assert item["value"]["priority"] == "low"


def test_check_llm_without_continuation_does_not_send_a_cut_off_answer(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    server.enqueue(openai_reply(INVENTED))
    data = cut_off_dir(tmp_path)
    done = check_llm(
        data, schema, no_continuation(env), server.openai_base, "--no-cache", "-f", "json"
    )
    [item] = items(done)
    assert (done.returncode, len(server.requests), item["value"]["priority"]) == (1, 0, "low")


def test_check_llm_continues_a_cut_off_answer(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    # the rest after the healed prefill: the cut word ("bil") first, written whole
    rest = ' "billing", "summary": "Charged twice", "team": "payments"}'
    server.enqueue(openai_reply(rest, completion_tokens=12))
    data = cut_off_dir(tmp_path)
    done = check_llm(data, schema, env, server.openai_base, "--no-cache", "-f", "json")
    [item] = items(done)
    assert (done.returncode, asked_to_continue(server), item["status"]) == (0, True, "llm_repaired")
    assert item["value"] == {**INVENTED, "priority": "low"}
    assert "response.cut_off" not in codes(item)


def test_check_llm_write_fixed_writes_nothing_for_a_cut_off_answer(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    server.enqueue(openai_reply(INVENTED), openai_reply(INVENTED))
    data = cut_off_dir(tmp_path)
    fixed = tmp_path / "fixed"
    done = check_llm(
        data, schema, env, server.openai_base, "--no-cache", "--write-fixed", str(fixed)
    )
    written = [p for p in fixed.rglob("*") if p.is_file()] if fixed.exists() else []
    answers = [
        json.loads(p.read_text(encoding="utf-8"))["choices"][0]["message"]["content"]
        for p in written
    ]
    assert (done.returncode, asked_to_continue(server)) == (1, True)
    assert all(answer == CUT_TEXT for answer in answers)  # the answer as it was, if at all


def test_check_llm_does_not_send_a_text_that_ends_inside_a_value(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    server.enqueue(openai_reply(INVENTED), openai_reply(INVENTED))
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text(CUT_TEXT, encoding="utf-8")
    done = check_llm(data, schema, env, server.openai_base, "--no-cache", "-f", "json")
    [item] = items(done)
    assert (done.returncode, asked_to_continue(server)) == (1, True)
    assert (item["status"] != "llm_repaired", "parse.truncated" in codes(item)) == (True, True)


def test_check_llm_does_not_send_a_refused_answer(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    server.enqueue(openai_reply(INVENTED))
    data = tmp_path / "data"
    data.mkdir()
    refused = chat_completion("", "stop", refusal="I can't help with that.")
    (data / "a.json").write_text(refused, encoding="utf-8")
    done = check_llm(data, schema, env, server.openai_base, "--no-cache", "-f", "json")
    [item] = items(done)
    assert (done.returncode, len(server.requests), item["status"]) == (1, 0, "refused")


def test_an_answer_that_is_merely_invalid_is_still_sent(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    """The rule keeps cut-off answers from the model, not every broken one."""
    server.enqueue(openai_reply(INVENTED))
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.json").write_text(chat_completion('{"ticket_id": "T-00057"}'), encoding="utf-8")
    done = check_llm(data, schema, env, server.openai_base, "--no-cache", "-f", "json")
    [item] = items(done)
    assert (done.returncode, len(server.requests), item["status"]) == (0, 1, "llm_repaired")


def test_the_library_rule_names_cut_off_and_refused_results() -> None:
    import llmfix
    from llmfix.llm import needs_llm
    from llmfix.pipeline.stops import Finish, apply_finish

    invalid = llmfix.repair('{"ticket_id": "T-1"}', schema=TRIAGE)
    cut = apply_finish(invalid, Finish("cut_off", 'finish_reason "length"'))
    refused = apply_finish(invalid, Finish("refused", "message.refusal", "no"))
    assert (needs_llm(invalid), needs_llm(cut), needs_llm(refused)) == (True, False, False)


# ------------------------------------------- item 6: a stream's stop reason is heeded

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
FENCED = 'Here it is:\n```json\n{"name": "Ada", "age": 36}\n```'


def sse(records: list[dict[str, Any]]) -> str:
    return "".join(f"data: {json.dumps(r)}\n\n" for r in records)


def openai_stream(stop: str) -> str:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"object": "chat.completion.chunk", "model": "m", "choices": [choice]}

    pieces = [FENCED[i : i + 7] for i in range(0, len(FENCED), 7)]
    records = [chunk({"role": "assistant", "content": ""})]
    records += [chunk({"content": piece}) for piece in pieces]
    records.append(chunk({}, stop))
    return sse(records) + "data: [DONE]\n\n"


def anthropic_stream(stop: str) -> str:
    pieces = [FENCED[i : i + 7] for i in range(0, len(FENCED), 7)]
    records: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"model": "claude", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    records += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        for p in pieces
    ]
    records += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop}},
        {"type": "message_stop"},
    ]
    return sse(records)


def gemini_stream(stop: str) -> str:
    pieces = [FENCED[i : i + 7] for i in range(0, len(FENCED), 7)]
    records: list[dict[str, Any]] = [
        {"candidates": [{"content": {"parts": [{"text": p}], "role": "model"}, "index": 0}]}
        for p in pieces
    ]
    records[-1]["candidates"][0]["finishReason"] = stop
    records[-1]["modelVersion"] = "gemini-test"
    return sse(records)


STREAMS = {
    "openai-length": openai_stream("length"),
    "anthropic-max-tokens": anthropic_stream("max_tokens"),
    "gemini-max-tokens": gemini_stream("MAX_TOKENS"),
}


@pytest.fixture
def person(tmp_path: Path) -> Path:
    path = tmp_path / "person.json"
    path.write_text(json.dumps(PERSON), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_cut_off_stream_is_truncated_via_stream_as_via_its_file(
    name: str, tmp_path: Path, person: Path
) -> None:
    data = STREAMS[name]
    saved = tmp_path / "saved.sse"
    saved.write_text(data, encoding="utf-8")
    env = dict(os.environ)
    streamed = llmfix("repair", "--stream", "--final", "-s", str(person), env=env, stdin=data)
    from_file = llmfix("repair", str(saved), "-s", str(person), env=env)
    events = llmfix("repair", "--stream", "-s", str(person), env=env, stdin=data)
    result = json.loads(events.stdout.splitlines()[-1])
    assert (streamed.returncode, from_file.returncode) == (1, 1)
    assert (streamed.stdout, "truncated" in from_file.stderr) == ("", True)
    assert (result["status"], "response.cut_off" in codes(result)) == ("truncated", True)


@pytest.mark.parametrize("stop", ["stop", "end_turn", "STOP"])
def test_a_stream_that_ended_normally_still_passes(stop: str, person: Path) -> None:
    streams = {"stop": openai_stream, "end_turn": anthropic_stream, "STOP": gemini_stream}
    data = streams[stop](stop)
    done = llmfix(
        "repair", "--stream", "--final", "-s", str(person), env=dict(os.environ), stdin=data
    )
    assert (done.returncode, json.loads(done.stdout)) == (0, {"name": "Ada", "age": 36})


def test_check_reads_a_saved_anthropic_stream_cut_at_max_tokens_as_truncated(
    tmp_path: Path, person: Path
) -> None:
    saved = tmp_path / "saved.sse"
    saved.write_text(anthropic_stream("max_tokens"), encoding="utf-8")
    done = llmfix("check", str(saved), "-s", str(person), "-f", "json", env=dict(os.environ))
    [item] = items(done)
    assert (done.returncode, item["status"]) == (1, "truncated")


# ------------------------------------------ item 14: bytes in, no empty reasoning out


def test_the_wire_decoder_takes_bytes_split_inside_a_character() -> None:
    from llmfix.stream.wire import WireDecoder

    answer = '{"name": "Zoë 名前", "age": 36}'
    data = sse(
        [
            {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": answer}, "finish_reason": "stop"}],
            }
        ]
    ).encode("utf-8")
    decoder = WireDecoder()
    for start in range(0, len(data), 3):  # 3 bytes at a time: ë and 名 are split
        decoder.feed(data[start : start + 3])
    decoder.close()
    assert (decoder.format, decoder.content, decoder.stop_reason) == ("openai-chat", answer, "stop")


def test_the_wire_decoder_takes_raw_bytes_ending_inside_a_character() -> None:
    from llmfix.stream.wire import WireDecoder

    decoder = WireDecoder()
    pieces = decoder.feed('{"a": "é'.encode()[:-1]) + decoder.close()
    assert "".join(p.text for p in pieces) == '{"a": "\ufffd'


@pytest.mark.parametrize("think", ["<think></think>", "<think></think>\n"])
def test_stream_sends_no_empty_reasoning_event(think: str) -> None:
    done = llmfix("repair", "--stream", env=dict(os.environ), stdin=think + '{"a": 1}')
    events = [json.loads(line) for line in done.stdout.splitlines()]
    reasoning = [e for e in events if e["event"] in ("reasoning", "text") and not e["text"]]
    assert (done.returncode, reasoning, events[-1]["value"]) == (0, [], {"a": 1})


# ------------------------------- item 8: a dead or rate-limiting provider is never silent


def closed_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def broken_dir(tmp_path: Path, count: int = 1) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for number in range(count):
        (data / f"a{number}.json").write_text('{"ticket_id": "T-1"}', encoding="utf-8")
    return data


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("llmfix: warning:")]


@pytest.mark.parametrize("quiet", [(), ("-q",)])
def test_a_refused_connection_is_one_warning_and_no_model_call(
    quiet: tuple[str, ...], tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    base = f"http://127.0.0.1:{closed_port()}/v1"
    done = check_llm(broken_dir(tmp_path, 5), schema, env, base, "--no-cache", *quiet)
    [warning] = warnings(done.stderr)
    assert ("llm.provider_unavailable" in warning, base in warning) == (True, True)
    assert "Connection refused" in warning or "ConnectError" in warning
    assert FAKE_KEY not in done.stderr
    assert done.returncode == 1
    if not quiet:
        assert "llmfix: llm: 0 model calls," in done.stderr


def test_a_server_error_is_one_warning_naming_the_base_url(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    server.enqueue(*[error_reply(500, "the model is overloaded")] * 3)
    done = check_llm(broken_dir(tmp_path), schema, env, server.openai_base, "--no-cache")
    [warning] = warnings(done.stderr)
    assert (server.openai_base in warning, "HTTP 500" in warning) == (True, True)
    assert "llmfix: llm: 3 model calls," in done.stderr  # they reached the server
    assert FAKE_KEY not in done.stderr


def test_a_rejected_request_is_a_warning_too(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    server.enqueue(error_reply(422, "unprocessable"))
    data = broken_dir(tmp_path)
    done = check_llm(data, schema, env, server.openai_base, "--no-cache")
    [warning] = warnings(done.stderr)
    assert ("llm.request_rejected" in warning, "HTTP 422" in warning) == (True, True)


def test_a_budget_spent_on_429s_says_so(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    server.enqueue(*[error_reply(429, "Rate limit reached for requests")] * 3)
    data = broken_dir(tmp_path)
    args = ("--no-cache", "--max-llm-calls", "2", "-f", "json")
    done = check_llm(data, schema, env, server.openai_base, *args)
    [item] = items(done)
    [spent] = [d for d in item["diagnostics"] if d["code"] == "llm.budget_exhausted"]
    assert (len(server.requests), "2 of them answered HTTP 429" in spent["message"]) == (2, True)
    [warning] = warnings(done.stderr)
    assert "HTTP 429" in warning


def test_an_answer_from_the_cache_is_counted_as_such(
    server: LlmServer, tmp_path: Path, schema: Path, env: dict[str, str]
) -> None:
    server.enqueue(openai_reply(INVENTED))
    data = broken_dir(tmp_path)
    first = check_llm(data, schema, env, server.openai_base)
    again = check_llm(data, schema, env, server.openai_base)
    assert "llmfix: llm: 1 model call, 11 input" in first.stderr
    assert "llmfix: llm: 0 model calls, 1 from cache," in again.stderr
    assert (again.returncode, len(server.requests)) == (0, 1)


# ------------------------------ item 13: a live stream's snapshots come without flush()


def first_snapshot_at(text: str, pause: float) -> int:
    """The README's loop (``feed`` only), 4 characters at a time, ``pause`` s apart: how
    many characters had arrived at the first snapshot of the value (one more than the
    text's length: none came)."""
    import time

    import llmfix

    parser = llmfix.stream(schema=PERSON)
    for end in range(4, len(text) + 4, 4):
        if any(e.kind == "value" for e in parser.feed(text[end - 4 : end])):
            return min(end, len(text))
        time.sleep(pause)
    return len(text) + 1


def test_a_paused_stream_shows_its_value_as_it_arrives_without_flush() -> None:
    text = 'Sure:\n{"name": "Ada", "age": 36, "languages": ["en", "fr"], "city": "London"}'
    at = first_snapshot_at(text, pause=0.03)  # a live model: a few characters every 30 ms
    assert at <= text.index('"age"')  # {"name": "Ada", shows before the rest came (was 77)


def test_a_gemini_stream_is_decoded_with_its_thoughts_calls_and_stop_reason() -> None:
    from llmfix.stream.wire import reassemble

    part = {"functionCall": {"name": "search", "args": {"q": "Lisbon"}}}
    candidate = {"content": {"parts": [{"text": "hm", "thought": True}, part]}}
    decoder = reassemble(sse([{"candidates": [{**candidate, "finishReason": "SAFETY"}]}]))
    [call] = decoder.message()["choices"][0]["message"]["tool_calls"]
    assert (decoder.format, decoder.stop_reason, decoder.content) == ("gemini", "SAFETY", "")
    assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == (
        "search",
        {"q": "Lisbon"},
    )


def test_repair_stream_llm_does_not_send_a_stream_cut_at_the_token_limit(
    server: LlmServer, person: Path, env: dict[str, str]
) -> None:
    server.enqueue(openai_reply({"name": "Ada", "age": 99}))
    answer = '{"name": "Ada"}'  # the rest was never written: age is missing
    chunk = {"index": 0, "delta": {"content": answer}, "finish_reason": "length"}
    data = sse([{"object": "chat.completion.chunk", "choices": [chunk]}])
    args = ("--llm", "--model", "test-model", "--base-url", server.openai_base, "--no-cache")
    done = llmfix("repair", "--stream", "-s", str(person), *args, env=env, stdin=data)
    result = json.loads(done.stdout.splitlines()[-1])
    assert (done.returncode, len(server.requests), result["value"]) == (1, 0, {"name": "Ada"})


def test_a_streamed_refusal_is_refused_via_stream_as_via_its_file(tmp_path: Path) -> None:
    chunks = [{"refusal": "I can't"}, {"refusal": " help with that."}]
    records = [
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": d}]} for d in chunks
    ]
    records.append(
        {"object": "chat.completion.chunk", "choices": [{"index": 0, "finish_reason": "stop"}]}
    )
    data = sse(records)
    saved = tmp_path / "saved.sse"
    saved.write_text(data, encoding="utf-8")
    env = dict(os.environ)
    streamed = llmfix("repair", "--stream", env=env, stdin=data)
    from_file = llmfix("repair", str(saved), env=env)
    result = json.loads(streamed.stdout.splitlines()[-1])
    assert (streamed.returncode, from_file.returncode, result["status"]) == (1, 1, "refused")
    assert "refused" in from_file.stderr
