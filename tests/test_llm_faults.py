"""Provider faults on the real socket: each a bounded retry then a clear one-line diagnostic.

The local server (``tests/llm_server.py``) plays each fault — a garbage body, a body cut off
before its ``Content-Length``, an HTML page, a connection reset, an answer that trickles in
forever — on both wire formats. For each: how many requests were sent (the retry bound),
which diagnostic the response gets and what its message says, how long it took, and that
the result is the rules-only result, unchanged but for that diagnostic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from llmfix.errors import ProviderError
from llmfix.llm import LlmConfig, LlmRepairOutcome, llm_repair, make_provider
from llmfix.llm.providers import HttpTransport
from llmfix.llm.retry import RetryPolicy
from llmfix.model import Diagnostic, Result, Status
from llmfix.pipeline.core import repair_text
from llmfix.schema.validate import SchemaValidator
from tests.llm_server import (
    LlmServer,
    Reply,
    anthropic_tool_reply,
    garbage_reply,
    html_reply,
    openai_reply,
    reset_reply,
    trickle_reply,
    truncated,
)

FAKE_KEY = "sk-test-FAKEKEY1234567890abcdef"
PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
MISSING_AGE = 'Sure:\n```json\n{"name": "Ada",}\n```'  # rules repair it, but "age" is missing
VALID = {"name": "Ada", "age": 36}
TIMEOUT = 0.4  # seconds per request: the trickle is cut off after this
RETRIES = 2  # so a retried fault is tried 3 times
TRICKLE = 0.05  # seconds between the trickle's bytes: well within any read timeout


@dataclass(frozen=True)
class Wire:
    provider: str
    model: str
    base: Callable[[LlmServer], str]
    good: Callable[[], Reply]  # a valid answer: {"name": "Ada", "age": 36}
    shape: str  # what a success answer must be


WIRES = {
    "openai": Wire(
        "openai",
        "test-model",
        lambda s: s.openai_base,
        lambda: openai_reply(VALID),
        "a chat completion",
    ),
    "anthropic": Wire(
        "anthropic",
        "claude-test",
        lambda s: s.anthropic_base,
        lambda: anthropic_tool_reply(VALID),
        "a messages response",
    ),
}


@dataclass(frozen=True)
class Fault:
    reply: Callable[[Wire], Reply]
    retried: bool
    code: str
    words: tuple[str, ...]  # the message names the problem with these ({shape}: Wire.shape)


FAULTS = {
    "garbage": Fault(
        lambda wire: garbage_reply(), True, "llm.bad_response", ("is not JSON", "application/json")
    ),
    "empty body": Fault(
        lambda wire: Reply(body=""), True, "llm.bad_response", ("is not JSON", "empty")
    ),
    "corrupt gzip": Fault(
        lambda wire: Reply(body="not gzip at all", headers={"content-encoding": "gzip"}),
        True,
        "llm.bad_response",
        ("cannot be decoded", "decompressing"),
    ),
    "html page": Fault(
        lambda wire: html_reply(),
        False,
        "llm.bad_response",
        ("is an HTML page", '"Sign in to continue"', "check the base URL"),
    ),
    "html 502": Fault(
        lambda wire: html_reply(502, title="502 Bad Gateway"),
        True,
        "llm.provider_unavailable",
        ("HTTP 502", 'an HTML page ("502 Bad Gateway")'),
    ),
    "another api's json": Fault(
        lambda wire: Reply(body={"hello": "world"}),
        False,
        "llm.bad_response",
        ("HTTP 200", "is not {shape}", '{"hello": "world"}'),
    ),
    "truncated": Fault(
        lambda wire: truncated(wire.good()),
        True,
        "llm.provider_unavailable",
        ("broke before the answer was complete", "expected"),
    ),
    "reset": Fault(
        lambda wire: reset_reply(),
        True,
        "llm.provider_unavailable",
        ("broke before the answer was complete", "reset"),
    ),
    "endless trickle": Fault(
        lambda wire: trickle_reply(TRICKLE),
        True,
        "llm.provider_unavailable",
        (f"did not finish within {TIMEOUT:g} s", "still arriving"),
    ),
}
RETRIED = [name for name, fault in FAULTS.items() if fault.retried]


def config(server: LlmServer, wire: Wire, **changes: Any) -> LlmConfig:
    settings: dict[str, Any] = {
        "provider": wire.provider,
        "model": wire.model,
        "base_url": wire.base(server),
        "api_key": FAKE_KEY,
        "timeout": TIMEOUT,
        "max_retries": RETRIES,
        "backoff_base": 0.001,
        "backoff_max": 0.01,
        "cache": False,
        **changes,
    }
    return LlmConfig(**settings)


@dataclass(frozen=True)
class Run:
    first: Result  # the rules-only result
    outcome: LlmRepairOutcome
    seconds: float

    @property
    def result(self) -> Result:
        return self.outcome.result

    @property
    def last(self) -> Diagnostic:
        return self.result.diagnostics[-1]

    def kept_the_rules_result(self) -> bool:
        """The result is the rules' one, with the LLM diagnostic added at the end."""
        result, first = self.result, self.first
        return (result.status, result.value, result.diagnostics[:-1], result.patch) == (
            first.status,
            first.value,
            first.diagnostics,
            first.patch,
        )


def repair(server: LlmServer, validator: SchemaValidator, wire: Wire, **changes: Any) -> Run:
    transport = changes.pop("transport", None)
    first = repair_text(MISSING_AGE, validator=validator)
    settings = config(server, wire, **changes)
    provider = make_provider(settings, transport=transport)
    started = time.monotonic()
    try:
        outcome = llm_repair(
            MISSING_AGE, first, validator=validator, config=settings, provider=provider
        )
    finally:
        provider.close()
    return Run(first, outcome, time.monotonic() - started)


def one_line(message: str) -> bool:
    return message.isprintable() and "\n" not in message


# ------------------------------------------------------------------ each fault, both wires

Played = Callable[[str, str], tuple[int, Run]]


@pytest.fixture(scope="module")
def played(validator: SchemaValidator) -> Played:
    """(requests the server saw, the run) for a fault on a wire, played once per module:
    three tests look at each run, and the trickle's runs take seconds."""
    runs: dict[tuple[str, str], tuple[int, Run]] = {}

    def play(fault_name: str, wire_name: str) -> tuple[int, Run]:
        if (fault_name, wire_name) not in runs:
            fault, wire = FAULTS[fault_name], WIRES[wire_name]
            with LlmServer() as server:
                server.enqueue(*[fault.reply(wire)] * (RETRIES + 2))  # more than may be asked
                run = repair(server, validator, wire)
                runs[fault_name, wire_name] = (len(server.requests), run)
        return runs[fault_name, wire_name]

    return play


@pytest.mark.parametrize("wire_name", list(WIRES))
@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_a_fault_is_retried_as_bounded_then_reported(
    played: Played, fault_name: str, wire_name: str
) -> None:
    fault = FAULTS[fault_name]
    requests, run = played(fault_name, wire_name)
    tries = RETRIES + 1 if fault.retried else 1
    assert (requests, run.last.code, run.kept_the_rules_result()) == (tries, fault.code, True)


@pytest.mark.parametrize("wire_name", list(WIRES))
@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_the_message_is_one_line_naming_the_problem(
    played: Played, fault_name: str, wire_name: str
) -> None:
    fault, wire = FAULTS[fault_name], WIRES[wire_name]
    message = played(fault_name, wire_name)[1].last.message
    tries = f"({RETRIES + 1} tries)" if fault.retried else ""
    words = [w.replace("{shape}", wire.shape) for w in fault.words]
    named = [w for w in (*words, wire.provider, tries) if w not in message]
    assert (one_line(message), named, FAKE_KEY in message) == (True, [], False), message


@pytest.mark.parametrize("wire_name", list(WIRES))
@pytest.mark.parametrize("fault_name", list(FAULTS))
def test_a_fault_ends_within_its_time_bound(
    played: Played, fault_name: str, wire_name: str
) -> None:
    seconds = played(fault_name, wire_name)[1].seconds
    # Each try ends within about the timeout (a trickled byte late at most); backoff is tiny.
    assert seconds < (RETRIES + 1) * (TIMEOUT + 4 * TRICKLE) + 0.5


def test_the_trickle_is_cut_off_at_the_deadline_not_sooner(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(trickle_reply(TRICKLE))
    run = repair(server, validator, WIRES["openai"], max_retries=0)
    assert TIMEOUT <= run.seconds < TIMEOUT + 0.5


def test_a_slow_trickle_under_a_long_read_timeout_still_ends(
    server: LlmServer, validator: SchemaValidator
) -> None:
    # A byte every 0.2 s never trips a per-read timeout of 1 s: only the deadline ends it.
    server.enqueue(trickle_reply(0.2))
    run = repair(server, validator, WIRES["anthropic"], max_retries=0, timeout=1.0)
    assert (run.last.code, 1.0 <= run.seconds < 2.0) == ("llm.provider_unavailable", True)


# ------------------------------------------------------------------ recovery and acceptance


@pytest.mark.parametrize("wire_name", list(WIRES))
@pytest.mark.parametrize("fault_name", RETRIED)
def test_a_good_answer_after_a_fault_repairs(
    server: LlmServer, validator: SchemaValidator, fault_name: str, wire_name: str
) -> None:
    wire = WIRES[wire_name]
    server.enqueue(FAULTS[fault_name].reply(wire), wire.good())
    run = repair(server, validator, wire)
    assert (run.result.status, run.result.value, len(server.requests)) == (
        Status.LLM_REPAIRED,
        VALID,
        2,
    )


@pytest.mark.parametrize("wire_name", list(WIRES))
def test_json_labelled_text_html_is_read_as_json(
    server: LlmServer, validator: SchemaValidator, wire_name: str
) -> None:
    wire = WIRES[wire_name]
    server.enqueue(replace(wire.good(), content_type="text/html"))
    run = repair(server, validator, wire)
    assert (run.result.status, run.result.value) == (Status.LLM_REPAIRED, VALID)


def test_json_labelled_text_plain_is_read_as_json(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(replace(openai_reply(VALID), content_type="text/plain"))
    run = repair(server, validator, WIRES["openai"])
    assert run.result.status is Status.LLM_REPAIRED


def test_an_html_page_labelled_json_is_still_an_html_page(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(replace(html_reply(), content_type="application/json"))
    run = repair(server, validator, WIRES["openai"])
    assert (len(server.requests), run.last.code, "HTML page" in run.last.message) == (
        1,
        "llm.bad_response",
        True,
    )


@pytest.mark.parametrize(
    ("wire_name", "body", "code"),
    [
        ("openai", {"choices": [{"message": "hi"}]}, "llm.bad_response"),
        ("openai", {"choices": [None]}, "llm.bad_response"),
        ("openai", {"choices": []}, "llm.bad_response"),
        ("openai", json.dumps("a JSON string"), "llm.bad_response"),
        ("openai", [1, 2], "llm.bad_response"),
        ("anthropic", {"content": "x"}, "llm.bad_response"),
        ("anthropic", [], "llm.bad_response"),
        (  # odd usage and model fields are ignored, the answer is used
            "openai",
            {
                "choices": [{"message": {"content": json.dumps(VALID)}, "finish_reason": 1}],
                "usage": {"prompt_tokens": "many", "completion_tokens": [2]},
                "model": {"name": "m"},
            },
            "llm.repaired",
        ),
        (
            "anthropic",
            {"content": [None, 3, {"type": "tool_use", "input": VALID}], "usage": "lots"},
            "llm.repaired",
        ),
    ],
)
def test_json_of_an_odd_shape_is_a_diagnostic_never_an_exception(
    server: LlmServer, validator: SchemaValidator, wire_name: str, body: Any, code: str
) -> None:
    server.enqueue(Reply(body=body), Reply(body=body))
    run = repair(server, validator, WIRES[wire_name])
    assert (run.last.code, len(server.requests)) == (code, 1)


# ------------------------------------------------------------------ what is recorded


def test_the_failed_request_is_recorded_as_an_error_attempt(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(*[reset_reply()] * (RETRIES + 1))
    run = repair(server, validator, WIRES["openai"])
    (attempt,) = run.outcome.attempts
    assert (attempt.status, attempt.answer, attempt.error) == ("error", None, run.last.message)


def test_the_result_counts_no_model_attempt_and_every_request_sent(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(*[truncated(openai_reply(VALID))] * (RETRIES + 1))
    run = repair(server, validator, WIRES["openai"])
    calls = run.last.data and run.last.data["calls"]
    assert (run.result.attempts, calls, len(server.requests)) == (0, RETRIES + 1, RETRIES + 1)


def test_garbage_control_characters_never_reach_the_message(
    server: LlmServer, validator: SchemaValidator
) -> None:
    server.enqueue(*[garbage_reply("\x1b[31mred\x1b[0m\x00\x07 bell")] * (RETRIES + 1))
    message = repair(server, validator, WIRES["openai"]).last.message
    assert ("\x1b" in message, "\\x1b[31mred" in message) == (False, True)


def test_an_invalid_base_url_is_one_line_error_not_a_traceback(
    validator: SchemaValidator,
) -> None:
    settings = LlmConfig(model="m", base_url="http://[::1/v1", api_key=FAKE_KEY, cache=False)
    first = repair_text(MISSING_AGE, validator=validator)
    with pytest.raises(ProviderError, match=r"invalid URL .*\[::1") as caught:
        llm_repair(MISSING_AGE, first, validator=validator, config=settings)
    assert one_line(str(caught.value))


def test_an_oversized_answer_is_not_read_on(server: LlmServer, validator: SchemaValidator) -> None:
    transport = HttpTransport("openai", RetryPolicy(max_retries=RETRIES, base=0.001))
    transport.max_bytes = 1000
    server.enqueue(openai_reply({"name": "x" * 5000, "age": 1}), openai_reply(VALID))
    run = repair(server, validator, WIRES["openai"], transport=transport)
    assert (len(server.requests), run.last.code, "larger than 1000 bytes" in run.last.message) == (
        1,
        "llm.bad_response",
        True,
    )


# ------------------------------------------------------------------ the command line


def _repair_with_a_model(
    server: LlmServer, tmp_path: Path, paths: list[str]
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """`llmfix repair PATHS -s person.json --llm --trust-config` (settings in llmfix.yaml,
    one retry, short backoff, no cache) on answers missing "age"; the process and its
    report's items."""
    (tmp_path / "person.json").write_text(json.dumps(PERSON), encoding="utf-8")
    for path in paths:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(MISSING_AGE, encoding="utf-8")
    (tmp_path / "llmfix.yaml").write_text(
        "llm:\n  provider: openai\n  model: test-model\n"
        f"  base-url: {server.openai_base}\n  timeout: {TIMEOUT}\n  max-retries: 1\n"
        "  backoff-base: 0.01\n  backoff-max: 0.02\n  cache: false\n",
        encoding="utf-8",
    )
    env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env["LLMFIX_CONFIG_DIR"] = str(tmp_path / "user-config")
    command = [sys.executable, "-m", "llmfix", "repair", *paths, "-s", "person.json", "--llm"]
    command += ["--trust-config"]  # the base URL is the test's own server
    command += ["--report", "report.json"]
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False
    )
    items = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["items"]
    return done, items


def test_a_batch_against_a_faulty_server_reports_every_item(
    server: LlmServer, tmp_path: Path
) -> None:
    """`llmfix repair` over three answers: reset, endless trickle, HTML page.

    (`llmfix check` has no --llm; `repair` with several files is the batch that asks a model.)
    """
    names = ["a.txt", "b.txt", "c.txt"]
    server.enqueue(
        reset_reply(), reset_reply(), trickle_reply(TRICKLE), trickle_reply(TRICKLE), html_reply()
    )
    started = time.monotonic()
    done, items = _repair_with_a_model(server, tmp_path, [f"answers/{n}" for n in names])
    seconds = time.monotonic() - started
    seen = [(Path(i["source"]).name, i["status"], i["diagnostics"][-1]["code"]) for i in items]
    assert seen == [
        ("a.txt", "invalid", "llm.provider_unavailable"),
        ("b.txt", "invalid", "llm.provider_unavailable"),
        ("c.txt", "invalid", "llm.bad_response"),
    ]
    assert (done.returncode, "Traceback" in done.stderr, len(server.requests)) == (1, False, 5)
    assert [n for n in names if n not in done.stderr] == []
    assert seconds < 15


def test_a_provider_down_for_three_requests_is_not_asked_again_in_the_run(
    server: LlmServer, tmp_path: Path
) -> None:
    """The circuit breaker: five answers, the server resets every connection."""
    server.enqueue(*(reset_reply() for _ in range(6)))  # 3 answers x (1 try + 1 retry)
    done, items = _repair_with_a_model(server, tmp_path, [f"{n}.txt" for n in "abcde"])
    last = [i["diagnostics"][-1] for i in items]
    assert [d["code"] for d in last] == ["llm.provider_unavailable"] * 5
    assert ["not sent to the model" in d["message"] for d in last] == [False] * 3 + [True] * 2
    assert (done.returncode, "Traceback" in done.stderr, len(server.requests)) == (1, False, 6)
