"""`llmfix repair --llm` end to end: the installed CLI in a subprocess against a local server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.llm_server import LlmServer, anthropic_tool_reply, error_reply, openai_reply

FAKE_KEY = "sk-test-FAKEKEY1234567890abcdef"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
VALID = {"name": "Ada", "age": 36}


def llmfix(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmfix", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps(PERSON), encoding="utf-8")
    answer = tmp_path / "answer.txt"
    answer.write_text('Here you go:\n```json\n{"name": "Ada"}\n```\n', encoding="utf-8")
    return {"schema": schema, "answer": answer, "report": tmp_path / "report.json"}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "OPENAI_API_KEY": FAKE_KEY,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LLMFIX_CONFIG_DIR": str(tmp_path / "user-config"),
    }


def repair_llm(
    files: dict[str, Path],
    env: dict[str, str],
    base_url: str,
    *extra: str,
    provider: str = "openai",
) -> subprocess.CompletedProcess[str]:
    return llmfix(
        "repair",
        str(files["answer"]),
        "--schema",
        str(files["schema"]),
        "--llm",
        "--provider",
        provider,
        "--model",
        "test-model",
        "--base-url",
        base_url,
        "--max-attempts",
        "2",
        "--no-cache",
        "--report",
        str(files["report"]),
        *extra,
        env=env,
    )


def test_invalid_then_valid_prints_the_repaired_json(
    server: LlmServer, files: dict[str, Path], env: dict[str, str]
) -> None:
    server.enqueue(openai_reply('{"name": "Ada", "age": "old"}'), openai_reply(VALID))
    done = repair_llm(files, env, server.openai_base)
    assert (done.returncode, json.loads(done.stdout)) == (0, VALID)


def test_the_cli_sends_two_requests_for_two_attempts(
    server: LlmServer, files: dict[str, Path], env: dict[str, str]
) -> None:
    server.enqueue(openai_reply('{"name": "Ada", "age": "old"}'), openai_reply(VALID))
    repair_llm(files, env, server.openai_base)
    assert len(server.requests) == 2


def test_anthropic_from_the_cli(
    server: LlmServer, files: dict[str, Path], env: dict[str, str]
) -> None:
    server.enqueue(anthropic_tool_reply(VALID))
    done = repair_llm(files, env, server.anthropic_base, provider="anthropic")
    assert (done.returncode, server.requests[0].body["tool_choice"]["type"]) == (0, "tool")


def test_never_valid_exits_1_naming_output_validation_failed(
    server: LlmServer, files: dict[str, Path], env: dict[str, str]
) -> None:
    server.enqueue(*[openai_reply('{"name": "Ada", "age": "old"}')] * 2)
    done = repair_llm(files, env, server.openai_base)
    assert (done.returncode, "OUTPUT_VALIDATION_FAILED" in done.stderr) == (1, True)


def test_the_report_records_the_attempts(
    server: LlmServer, files: dict[str, Path], env: dict[str, str]
) -> None:
    server.enqueue(openai_reply('{"name": "Ada", "age": "old"}'), openai_reply(VALID))
    repair_llm(files, env, server.openai_base)
    report = files["report"].read_text(encoding="utf-8")
    assert "PREVIOUS ATTEMPT FAILED VALIDATION" in report


def test_a_bad_key_exits_2_on_one_line(
    server: LlmServer, files: dict[str, Path], env: dict[str, str]
) -> None:
    server.enqueue(error_reply(401, f"Incorrect API key provided: {FAKE_KEY}"))
    done = repair_llm(files, env, server.openai_base)
    assert (done.returncode, done.stderr.strip().count("\n"), FAKE_KEY in done.stderr) == (
        2,
        0,
        False,
    )


def test_llm_without_a_model_says_how_to_configure(files: dict[str, Path], env: Any) -> None:
    done = llmfix(
        "repair", str(files["answer"]), "--schema", str(files["schema"]), "--llm", env=env
    )
    assert (done.returncode, "--model" in done.stderr) == (2, True)


def test_the_key_never_appears_in_output_or_report(
    server: LlmServer, files: dict[str, Path], env: dict[str, str]
) -> None:
    server.enqueue(*[openai_reply('{"name": "Ada", "age": "old"}')] * 2)
    done = repair_llm(files, env, server.openai_base)
    seen = done.stdout + done.stderr + files["report"].read_text(encoding="utf-8")
    assert FAKE_KEY not in seen


def test_the_llm_section_of_a_trusted_llmfix_yaml_turns_llm_repair_on(
    server: LlmServer, files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "llmfix.yaml").write_text(
        f"llm:\n  provider: openai\n  model: test-model\n  base-url: {server.openai_base}\n"
        "  cache: false\n",
        encoding="utf-8",
    )
    server.enqueue(openai_reply(VALID))
    command = ["repair", str(files["answer"]), "-s", str(files["schema"]), "--trust-config"]
    done = llmfix(*command, env=env, cwd=tmp_path)
    assert (done.returncode, json.loads(done.stdout), len(server.requests)) == (0, VALID, 1)


def test_no_llm_beats_the_config_file(
    server: LlmServer, files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "llmfix.yaml").write_text(
        f"llm:\n  model: test-model\n  base-url: {server.openai_base}\n", encoding="utf-8"
    )
    done = llmfix(
        "repair",
        str(files["answer"]),
        "-s",
        str(files["schema"]),
        "--no-llm",
        env=env,
        cwd=tmp_path,
    )
    assert (done.returncode, server.requests) == (1, [])


def test_a_typo_in_the_llm_section_is_a_one_line_error(
    files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "llmfix.yaml").write_text("llm:\n  modle: x\n", encoding="utf-8")
    done = llmfix("repair", str(files["answer"]), env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert "model" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_max_risk_below_guess_does_not_ask_the_model(
    server: LlmServer, files: dict[str, Path], env: dict[str, str]
) -> None:
    server.enqueue(openai_reply(VALID))
    done = repair_llm(files, env, server.openai_base, "--max-risk", "safe")
    assert (done.returncode, server.requests) == (1, [])


# ------------------------------------------------------------------ request counting, check --llm


def test_max_llm_calls_1_sends_one_request_when_the_server_refuses_response_format(
    server: LlmServer, files: dict[str, Path], env: dict[str, str]
) -> None:
    """Structured-mode fallbacks are requests: the limit stops them, the line counts them."""
    refusal = error_reply(400, "response_format json_schema is not supported by this server")
    server.enqueue(refusal, refusal, refusal, openai_reply(VALID))
    done = repair_llm(files, env, server.openai_base, "--max-llm-calls", "1")
    assert (len(server.requests), "llm: 1 model call," in done.stderr) == (1, True)


def short_retries(tmp_path: Path, retries: int = 4) -> None:
    """The user config (``env``'s LLMFIX_CONFIG_DIR): short backoff, ``retries`` retries."""
    (tmp_path / "user-config").mkdir(exist_ok=True)
    (tmp_path / "user-config" / "config.yaml").write_text(
        f"llm:\n  enabled: false\n  backoff-base: 0.01\n  backoff-max: 0.02\n"
        f"  max-retries: {retries}\n",
        encoding="utf-8",
    )


def test_the_closing_line_counts_every_request_sent(
    server: LlmServer, files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    """A retry after a 500 and a fallback after a refused response_format: 3 requests."""
    short_retries(tmp_path)
    refusal = error_reply(400, "response_format json_schema is not supported by this server")
    server.enqueue(error_reply(500, "busy"), refusal, openai_reply(VALID))
    done = repair_llm(files, env, server.openai_base)
    assert (done.returncode, len(server.requests), "llm: 3 model calls," in done.stderr) == (
        0,
        3,
        True,
    )


def test_quiet_still_shows_that_the_provider_was_unavailable(
    files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    from tests.test_remote_refs import free_port

    short_retries(tmp_path, 0)
    down = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    done = repair_llm(files, env, down, "-q")
    assert (done.returncode, "llm.provider_unavailable" in done.stderr) == (1, True)


def check_llm(
    files: dict[str, Path], env: dict[str, str], base_url: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return llmfix(
        "check",
        str(files["answer"]),
        "--schema",
        str(files["schema"]),
        "--llm",
        "--model",
        "test-model",
        "--base-url",
        base_url,
        "--no-cache",
        "--no-progress",
        *extra,
        env=env,
    )


def test_check_llm_writes_the_models_repair_to_write_fixed(
    server: LlmServer, files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    server.enqueue(openai_reply(VALID))
    fixed = tmp_path / "fixed"
    done = check_llm(files, env, server.openai_base, "--write-fixed", str(fixed))
    [written] = [p for p in fixed.rglob("*") if p.is_file()]
    assert (done.returncode, json.loads(written.read_text(encoding="utf-8"))) == (0, VALID)
    assert "llm: 1 model call," in done.stderr


def test_check_uses_a_trusted_configs_llm_section(
    server: LlmServer, files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "llmfix.yaml").write_text(
        f"schema: person.json\nllm:\n  model: test-model\n  base-url: {server.openai_base}\n"
        "  cache: false\n",
        encoding="utf-8",
    )
    server.enqueue(openai_reply(VALID))
    command = ["check", "answer.txt", "--trust-config", "--no-progress", "-f", "json"]
    done = llmfix(*command, env=env, cwd=tmp_path)
    [item] = json.loads(done.stdout)["items"]
    assert (done.returncode, item["status"], len(server.requests)) == (0, "llm_repaired", 1)


def test_check_max_llm_calls_bounds_the_whole_run(
    server: LlmServer, files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    second = tmp_path / "second.txt"
    second.write_text(files["answer"].read_text(encoding="utf-8"), encoding="utf-8")
    server.enqueue(openai_reply(VALID), openai_reply(VALID))
    done = check_llm(files, env, server.openai_base, str(second), "--max-llm-calls", "1")
    assert (done.returncode, len(server.requests), "llm: 1 model call," in done.stderr) == (
        1,
        1,
        True,
    )


def test_check_quiet_still_shows_that_the_provider_was_unavailable(
    files: dict[str, Path], env: dict[str, str], tmp_path: Path
) -> None:
    from tests.test_remote_refs import free_port

    short_retries(tmp_path, 0)
    done = check_llm(files, env, f"http://127.0.0.1:{free_port()}/v1", "-q")
    assert (done.returncode, "llm.provider_unavailable" in done.stderr) == (1, True)
