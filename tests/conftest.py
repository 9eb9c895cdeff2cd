"""Fixtures shared by the tests: each test's own user config (every test), the local server
(``server``) and a validator for the module's ``PERSON`` schema (``validator``).

Also a session check: every diagnostic code made while the tests run is recorded (the
registry's ``Code.at``/``Code.instead_of``, and the parse stage's own fast construction), and
when the whole suite ran and passed, a registered code no test made fails the run."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import llmfix.parse.core as parse_core
from llmfix import codes
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
    # the answer cache and what servers refused (issue 36), never the real ~/.cache/llmfix
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
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


# -- every registered code is made by some test ---------------------------------------------

EMITTED: set[str] = set()


def _recording(method: Any) -> Any:
    @functools.wraps(method)
    def made(self: codes.Code, *args: Any, **kwargs: Any) -> Any:
        EMITTED.add(self.id)
        return method(self, *args, **kwargs)

    return made


codes.Code.at = _recording(codes.Code.at)  # type: ignore[method-assign]
codes.Code.instead_of = _recording(codes.Code.instead_of)  # type: ignore[method-assign]
_parse_diagnostics = parse_core._diagnostics


def _recorded_parse_diagnostics(*args: Any, **kwargs: Any) -> Any:
    found = _parse_diagnostics(*args, **kwargs)
    EMITTED.update(d.code for d in found)
    return found


parse_core._diagnostics = _recorded_parse_diagnostics

_TESTS = Path(__file__).resolve().parent


def _whole_suite(config: pytest.Config) -> bool:
    """Whether this run is the whole suite: every test file, no ``-k``/``-m`` selection."""
    if config.option.keyword or config.option.markexpr:
        return False
    return all(Path(arg.split("::")[0]).resolve() == _TESTS for arg in config.args)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if exitstatus != 0 or not _whole_suite(session.config):
        return
    never = [code for code in codes.CODES if code not in EMITTED]
    if never:
        session.config.stash[_NEVER] = never
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_NEVER = pytest.StashKey[list[str]]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    never = config.stash.get(_NEVER, [])
    if never:
        terminalreporter.section("registered codes no test made", red=True)
        terminalreporter.line(
            "each is registered in llmfix/codes.py and no test made one; "
            "write a test that provokes it (or unregister a code llmfix cannot emit):"
        )
        for code in never:
            terminalreporter.line(f"  {code}")
