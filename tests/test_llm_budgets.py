"""Budgets in tokens and money across a run, and the usage a run reports (issue 36, item 3),
end to end: `llmfix check --llm` in a subprocess against the local server in both wire
protocols, and the budget itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llmfix.errors import ConfigError
from llmfix.llm import CallBudget, LlmConfig
from tests.llm_server import LlmServer, anthropic_tool_reply, openai_reply

FAKE_KEY = "sk-test-FAKEKEY1234567890abcdef"
PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
VALID = {"name": "Ada", "age": 36}
# openai_reply counts 11 input + 7 output tokens; anthropic_tool_reply 13 + 5: 18 a call.
PER_CALL = 18


def llmfix(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llmfix", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "user-config"
    config.mkdir()
    return {
        **os.environ,
        "OPENAI_API_KEY": FAKE_KEY,
        "ANTHROPIC_API_KEY": FAKE_KEY,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "LLMFIX_CONFIG_DIR": str(config),
    }


def user_config(env: dict[str, str], text: str) -> None:
    (Path(env["LLMFIX_CONFIG_DIR"]) / "config.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def data(tmp_path: Path) -> tuple[Path, Path]:
    """Four answers missing ``age`` (two of model a, two of model b), and the schema."""
    folder = tmp_path / "data"
    folder.mkdir()
    lines = [
        json.dumps({"model": model, "text": json.dumps({"name": f"P{i}"})})
        for i, model in enumerate(["a", "a", "b", "b"])
    ]
    (folder / "log.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps(PERSON), encoding="utf-8")
    return folder, schema


def check(
    server: LlmServer, data: tuple[Path, Path], env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    folder, schema = data
    style = "anthropic" if "anthropic" in extra else "openai"
    base = server.anthropic_base if style == "anthropic" else server.openai_base
    return llmfix(
        "check",
        str(folder),
        "-s",
        str(schema),
        "--field",
        "text",
        "--llm",
        "--model",
        "test-model",
        "--base-url",
        base,
        "--no-cache",
        "--no-progress",
        *extra,
        env=env,
    )


def summary(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(done.stdout)["summary"]
    return found


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_a_token_budget_stops_the_run_and_says_so_once(
    server: LlmServer, data: tuple[Path, Path], env: dict[str, str], style: str
) -> None:
    reply = openai_reply(VALID) if style == "openai" else anthropic_tool_reply(VALID)
    server.enqueue(*[reply] * 4)
    extra = ("--provider", style) if style == "anthropic" else ()
    done = check(server, data, env, "--max-llm-tokens", str(PER_CALL * 2), "-f", "json", *extra)
    warnings = [line for line in done.stderr.splitlines() if "llm.budget_exhausted" in line]
    assert (len(server.requests), done.returncode, len(warnings)) == (2, 1, 1)
    assert f"the budget of {PER_CALL * 2} tokens for this run is spent" in warnings[0]
    assert "2 responses not repaired" in warnings[0]
    usage = summary(done)["llm"]
    assert (usage["calls"], sum(usage["tokens"].values()), usage["budgets"]["spent"]) == (
        2,
        PER_CALL * 2,
        "tokens",
    )


def test_a_cost_budget_without_a_price_is_refused_at_the_start(
    server: LlmServer, data: tuple[Path, Path], env: dict[str, str]
) -> None:
    done = check(server, data, env, "--max-llm-cost", "0.50")
    assert (done.returncode, server.requests) == (2, [])
    [line] = done.stderr.strip().splitlines()
    assert "--max-llm-cost needs the price of model 'test-model'" in line
    assert "prices" in line


def test_a_cost_budget_counts_the_price_and_reports_usage_per_status_and_group(
    server: LlmServer, data: tuple[Path, Path], env: dict[str, str]
) -> None:
    # $1000 per million tokens in and out: 18 tokens a call is $0.018
    user_config(
        env, "llm:\n  enabled: false\n  prices:\n    test-model: {input: 1000, output: 1000}\n"
    )
    server.enqueue(*[openai_reply(VALID)] * 4)
    done = check(
        server, data, env, "--max-llm-cost", "0.03", "--group-by", "model", "-f", "json", "-v"
    )
    usage = summary(done)["llm"]
    assert (len(server.requests), usage["calls"], usage["cost"]) == (2, 2, 0.036)
    assert usage["by_status"]["llm_repaired"]["calls"] == 2
    assert usage["by_status"]["invalid"] == {
        "responses": 2,
        "calls": 0,
        "cached": 0,
        "tokens": {"input": 0, "output": 0},
        "cost": 0.0,
    }
    assert (usage["by_group"]["a"]["cost"], usage["by_group"]["b"]["calls"]) == (0.036, 0)
    assert "the budget of $0.03 for this run is spent" in done.stderr
    assert "llm: 2 model calls, 22 input + 14 output tokens, $0.0360" in done.stderr
    assert "llm: group a: 2 responses, 2 calls" in done.stderr


def test_the_price_table_of_an_untrusted_project_file_is_not_used(
    server: LlmServer, data: tuple[Path, Path], env: dict[str, str], tmp_path: Path
) -> None:
    folder, _ = data
    (folder / "llmfix.yaml").write_text(
        "llm:\n  prices:\n    test-model: {input: 0, output: 0}\n", encoding="utf-8"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "llmfix",
            "check",
            ".",
            "-s",
            str(data[1]),
            "--field",
            "text",
            "--llm",
            "--model",
            "test-model",
            "--base-url",
            server.openai_base,
            "--max-llm-cost",
            "1",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=60,
        check=False,
    )
    assert (done.returncode, server.requests) == (2, [])
    assert "llm.prices" in done.stderr  # named among the keys left out
    assert "needs the price of model" in done.stderr


def test_the_output_of_the_last_request_is_capped_at_what_the_budget_has_left(
    server: LlmServer, data: tuple[Path, Path], env: dict[str, str]
) -> None:
    server.enqueue(*[openai_reply(VALID)] * 4)
    check(server, data, env, "--max-llm-tokens", "30")
    assert [r.body["max_tokens"] for r in server.requests] == [30, 12]


# ------------------------------------------------------------------ the budget itself


def test_the_budget_says_which_limit_is_spent() -> None:
    budget = CallBudget(10, max_tokens=100, max_cost=1.0, price=(2000.0, 8000.0))
    assert (budget.take(), budget.spent_on) == (True, None)
    budget.spend(60, 30)  # 90 tokens, $0.12 + $0.24
    assert (budget.spent_on, budget.output_room(2048)) == (None, 10)
    budget.spend(5, 5)
    assert (budget.spent_on, budget.take(), budget.remaining) == ("tokens", False, 0)


def test_a_cost_budget_needs_a_price() -> None:
    with pytest.raises(ConfigError, match="price"):
        CallBudget.for_config(LlmConfig(model="m", max_cost=1.0))
    priced = LlmConfig(model="m", max_cost=1.0, prices={"m": {"input": 1, "output": 2}})
    assert CallBudget.for_config(priced).price == (1.0, 2.0)


@pytest.mark.parametrize(
    "prices",
    [{"m": {"input": -1, "output": 1}}, {"m": {"input": 1}}, {"m": 3}, ["m"]],
    ids=["negative", "no-output", "not-a-mapping", "a-list"],
)
def test_a_bad_price_table_is_a_config_error(prices: Any) -> None:
    with pytest.raises(ConfigError, match="prices"):
        LlmConfig.from_mapping({"model": "m", "prices": prices})
