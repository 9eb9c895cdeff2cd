"""LlmConfig: defaults, the ``llm:`` mapping of a config file, flags, the API key."""

from __future__ import annotations

from typing import Any

import pytest

from llmfix.errors import ConfigError
from llmfix.llm.config import LlmConfig

FAKE_KEY = "sk-test-FAKEKEY1234567890abcdef"


def test_defaults() -> None:
    config = LlmConfig()
    assert (config.provider, config.max_attempts, config.temperature, config.cache) == (
        "openai",
        2,
        0.0,
        True,
    )


def test_from_mapping_reads_settings() -> None:
    config = LlmConfig.from_mapping(
        {"provider": "anthropic", "model": "claude-x", "max-attempts": 3, "timeout": 10}
    )
    assert (config.provider, config.model, config.max_attempts, config.timeout) == (
        "anthropic",
        "claude-x",
        3,
        10,
    )


def test_unknown_key_suggests_the_near_one() -> None:
    with pytest.raises(
        ConfigError, match=r"unknown key 'max_atempts' \(did you mean 'max_attempts'"
    ):
        LlmConfig.from_mapping({"max_atempts": 3})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_attempts", "3"),
        ("timeout", True),
        ("temperature", "hot"),
        ("cache", "yes"),
        ("structured_mode", "xml"),
        ("provider", "gemini"),
    ],
)
def test_values_are_type_checked(key: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=key):
        LlmConfig.from_mapping({key: value})


@pytest.mark.parametrize(
    ("key", "value"),
    [("max_attempts", 0), ("timeout", 0), ("max_retries", -1), ("temperature", 5)],
)
def test_values_are_range_checked(key: str, value: Any) -> None:
    with pytest.raises(ConfigError):
        LlmConfig.from_mapping({key: value})


def test_api_key_in_a_file_is_refused() -> None:
    with pytest.raises(ConfigError, match="api_key_env"):
        LlmConfig.from_mapping({"api_key": FAKE_KEY})


def test_refused_api_key_is_not_echoed() -> None:
    with pytest.raises(ConfigError) as caught:
        LlmConfig.from_mapping({"api_key": FAKE_KEY})
    assert FAKE_KEY not in str(caught.value)


def test_errors_name_the_section() -> None:
    with pytest.raises(ConfigError, match=r"^llm\.timeout"):
        LlmConfig.from_mapping({"timeout": "soon"})


def test_not_a_mapping() -> None:
    with pytest.raises(ConfigError, match="mapping"):
        LlmConfig.from_mapping(["model"])  # type: ignore[arg-type]


def test_unknown_provider_in_code_suggests() -> None:
    with pytest.raises(ConfigError, match="did you mean 'openai'"):
        LlmConfig(provider="opanai")


def test_base_url_must_be_http() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        LlmConfig(base_url="localhost:8080/v1")


def test_overrides_win_and_none_is_ignored() -> None:
    config = LlmConfig.from_mapping({"model": "a", "max_attempts": 3})
    changed = config.with_overrides(model="b", max_attempts=None)
    assert (changed.model, changed.max_attempts) == ("b", 3)


def test_unknown_override() -> None:
    with pytest.raises(ConfigError):
        LlmConfig().with_overrides(modle="x")


def test_require_model_says_how_to_configure() -> None:
    with pytest.raises(ConfigError, match=r"--model NAME.*llmfix\.yaml"):
        LlmConfig().require_model()


@pytest.mark.parametrize(
    ("provider", "base_url", "url"),
    [
        ("openai", None, "https://api.openai.com/v1"),
        ("anthropic", None, "https://api.anthropic.com"),
        ("openai", "http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434/v1"),
    ],
)
def test_base_url(provider: str, base_url: str | None, url: str) -> None:
    assert LlmConfig(provider=provider, base_url=base_url).url == url


@pytest.mark.parametrize(
    ("provider", "env"), [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")]
)
def test_key_from_the_provider_variable(provider: str, env: str, monkeypatch: Any) -> None:
    monkeypatch.setenv(env, FAKE_KEY)
    assert LlmConfig(provider=provider).resolve_api_key() == FAKE_KEY


def test_key_from_a_named_variable(monkeypatch: Any) -> None:
    monkeypatch.setenv("MY_KEY", FAKE_KEY)
    assert LlmConfig(api_key_env="MY_KEY").resolve_api_key() == FAKE_KEY


def test_public_endpoint_without_key_is_an_error(monkeypatch: Any) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        LlmConfig().resolve_api_key()


def test_local_server_without_key_is_fine(monkeypatch: Any) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert LlmConfig(base_url="http://127.0.0.1:8080/v1").resolve_api_key() is None


def test_repr_hides_the_key() -> None:
    assert FAKE_KEY not in repr(LlmConfig(api_key=FAKE_KEY))


def test_to_dict_hides_the_key() -> None:
    assert "api_key" not in LlmConfig(api_key=FAKE_KEY).to_dict()
