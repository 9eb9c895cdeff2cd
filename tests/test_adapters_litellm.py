"""The LiteLLM adapter (``llmfix/adapters/litellm.py``): the real ``litellm.completion``
talking to the local server (``tests/llm_server.py``) in two providers' wire formats, with
the callback registered the way users register one."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from llmfix.model import Status
from tests.llm_server import LlmServer, anthropic_text_reply, openai_reply

# LiteLLM reads its model price list from the network unless told to use its own copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# LiteLLM's own TypedDicts warn when Pydantic first sees them (on import, and when a
# provider's module loads lazily during a call): not this test's business.
_READ_ONLY = "ignore:Item.* using the `ReadOnly` qualifier:UserWarning"
pytestmark = pytest.mark.filterwarnings(_READ_ONLY)
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Item.* using the `ReadOnly` qualifier", UserWarning)
    import litellm

from pydantic import BaseModel  # noqa: E402

from llmfix.adapters.litellm import CheckedCompletion, LlmfixCallback  # noqa: E402


class Person(BaseModel):
    name: str
    age: int


@pytest.fixture
def registered() -> Iterator[list[Any]]:
    """``litellm.callbacks`` for one test. LiteLLM copies a callback into lists of its own
    on the first call (and keeps one instance per class there): they are emptied before
    and after each test, so that each test's callback is the one called."""
    litellm.logging_callback_manager._reset_all_callbacks()
    yield litellm.callbacks
    litellm.logging_callback_manager._reset_all_callbacks()


def wait_for(callback: LlmfixCallback, count: int) -> list[CheckedCompletion]:
    """LiteLLM logs a sync call's success in a thread of its own, after the call returns."""
    deadline = time.monotonic() + 20
    while len(callback.checked) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    return callback.checked


def ask(server: LlmServer, model: str) -> Any:
    base = server.openai_base if model.startswith("openai/") else server.anthropic_base
    return litellm.completion(
        model=model,
        messages=[{"role": "user", "content": "Who is Ada?"}],
        api_base=base,
        api_key="test",
        max_tokens=100,
    )


def test_every_completion_is_checked(server: LlmServer, registered: list[Any]) -> None:
    seen: list[CheckedCompletion] = []
    callback = LlmfixCallback(Person, on_result=seen.append)
    registered.append(callback)
    server.enqueue(
        openai_reply('```json\n{"name": "Ada", "age": "36",}\n```'),
        openai_reply('{"name": "Ada"}'),
    )
    ask(server, "openai/test-model")
    ask(server, "openai/test-model")
    # (LiteLLM's logging threads may log the two in either order)
    first, second = sorted(wait_for(callback, 2), key=lambda c: c.result.status is Status.INVALID)
    assert first.result.status is Status.REPAIRED
    assert first.result.parsed == Person(name="Ada", age=36)
    assert first.model == "test-model"
    assert first.response_id == "chatcmpl-test"
    assert second.result.status is Status.INVALID
    assert callback.failures == [second]
    assert sorted(seen, key=lambda c: c.result.status is Status.INVALID) == [first, second]


def test_any_provider_litellm_reaches(server: LlmServer, registered: list[Any]) -> None:
    callback = LlmfixCallback({"type": "object", "required": ["name"]})
    registered.append(callback)
    server.enqueue(anthropic_text_reply("{'name': 'Ada'}"))
    ask(server, "anthropic/claude-test")
    [checked] = wait_for(callback, 1)
    assert server.paths == ["/v1/messages"]
    assert checked.result.status is Status.REPAIRED
    assert checked.result.value == {"name": "Ada"}


def test_the_stop_reason_counts(server: LlmServer, registered: list[Any]) -> None:
    callback = LlmfixCallback(Person)
    registered.append(callback)
    server.enqueue(openai_reply('{"name": "Ada", "age": 36}', finish_reason="length"))
    ask(server, "openai/test-model")
    [checked] = wait_for(callback, 1)
    assert checked.result.status is Status.TRUNCATED


def test_async_completions_are_checked(server: LlmServer, registered: list[Any]) -> None:
    import asyncio

    callback = LlmfixCallback(Person)
    registered.append(callback)
    server.enqueue(openai_reply("{name: 'Ada', age: 36}"))

    async def run() -> None:
        await litellm.acompletion(
            model="openai/test-model",
            messages=[{"role": "user", "content": "Who is Ada?"}],
            api_base=server.openai_base,
            api_key="test",
        )
        # an async call is logged by a task on this loop, after the call returns
        deadline = time.monotonic() + 20
        while not callback.checked and time.monotonic() < deadline:
            await asyncio.sleep(0.02)

    # (not asyncio.run: it would unset the loop LiteLLM's sync calls set for this thread,
    # which then is collected unclosed)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(run())
    finally:
        loop.close()
    [checked] = callback.checked
    assert checked.result.parsed == Person(name="Ada", age=36)


def test_a_bad_schema_fails_when_the_callback_is_made() -> None:
    from llmfix.errors import SchemaError

    with pytest.raises(SchemaError):
        LlmfixCallback({"type": "no-such-type"})
