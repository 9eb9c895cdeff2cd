"""Fixtures shared by the tests: each test's own user config (every test), the local server
(``server``) and a validator for the module's ``PERSON`` schema (``validator``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from llmfix.schema.load import schema_from_value
from llmfix.schema.validate import SchemaValidator
from tests.llm_server import LlmServer

_SETTINGS_FROM_THE_ENVIRONMENT = (
    "LLMFIX_TRUST_CONFIG",
    "LLMFIX_LLM",
    "LLMFIX_PROVIDER",
    "LLMFIX_MODEL",
    "LLMFIX_BASE_URL",
    "LLMFIX_API_KEY_ENV",
)


@pytest.fixture(autouse=True)
def _own_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test's user config (llm settings, trusted files) is its own empty directory,
    never the real ``~/.config/llmfix``; subprocesses inherit it through the environment."""
    monkeypatch.setenv("LLMFIX_CONFIG_DIR", str(tmp_path_factory.mktemp("user-config")))
    for name in _SETTINGS_FROM_THE_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server() -> Iterator[LlmServer]:
    """The local server (``tests/llm_server.py``), a real HTTP server on 127.0.0.1: a model
    provider on POST (script it with ``enqueue``), documents and streams on GET (``serve``,
    ``stream``); every request recorded. Stopped after the test."""
    with LlmServer() as running:
        yield running


@pytest.fixture(scope="module")
def validator(request: pytest.FixtureRequest) -> SchemaValidator:
    """A validator for the test module's ``PERSON`` schema (each module says what a person
    is for its tests), made once per module."""
    return SchemaValidator(schema_from_value(request.module.PERSON))
