"""The Instructor adapter (``llmfix/adapters/instructor.py``): the real ``instructor`` client
over the OpenAI SDK, talking to the local server (``tests/llm_server.py``). The measure is
the server's request count: a repaired answer costs no re-ask."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import instructor
import openai
import pytest
from pydantic import BaseModel, field_validator

from llmfix.adapters.instructor import repairing
from llmfix.model import Result, Status
from tests.llm_server import LlmServer, Reply, openai_reply


class Person(BaseModel):
    """Someone the model was asked about."""

    name: str
    age: int

    @field_validator("name")
    @classmethod
    def capitalised(cls, value: str) -> str:
        if not value[:1].isupper():
            raise ValueError("a name starts with a capital letter")
        return value


def tool_reply(arguments: str) -> Reply:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "Person", "arguments": arguments},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return Reply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "test-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
        }
    )


@pytest.fixture
def openai_client(server: LlmServer) -> Iterator[Any]:
    with openai.OpenAI(base_url=server.openai_base, api_key="test", max_retries=0) as client:
        yield client


def same(found: Any, age: int) -> bool:
    """Instructor returns a subclass of the response model of its own."""
    return isinstance(found, Person) and found.model_dump() == {"name": "Ada", "age": age}


def ask(client: Any, model: Any, mode: Any = None) -> Any:
    patched = instructor.from_openai(client, mode=mode or instructor.Mode.TOOLS)
    return patched.chat.completions.create(
        model="test-model",
        response_model=model,
        messages=[{"role": "user", "content": "Who is Ada?"}],
        max_retries=2,
    )


def test_broken_tool_arguments_are_repaired_without_a_reask(
    server: LlmServer, openai_client: Any
) -> None:
    seen: list[Result] = []
    server.enqueue(tool_reply("{name: 'Ada', age: '36',}"))
    person = ask(openai_client, repairing(Person, on_result=seen.append))
    assert same(person, 36)
    assert isinstance(person, Person)
    assert len(server.requests) == 1
    assert [r.status for r in seen] == [Status.REPAIRED]


def test_without_it_the_same_answer_costs_a_reask(server: LlmServer, openai_client: Any) -> None:
    server.enqueue(
        tool_reply("{name: 'Ada', age: '36',}"), tool_reply('{"name": "Ada", "age": 36}')
    )
    assert same(ask(openai_client, Person), 36)
    assert len(server.requests) == 2


def test_the_request_is_the_same(server: LlmServer, openai_client: Any) -> None:
    server.enqueue(
        tool_reply('{"name": "Ada", "age": 36}'), tool_reply('{"name": "Ada", "age": 36}')
    )
    ask(openai_client, Person)
    ask(openai_client, repairing(Person))
    plain, repaired = (json.dumps(r.body["tools"], sort_keys=True) for r in server.requests)
    assert plain == repaired


def test_what_repair_cannot_fix_is_reasked_with_pydantics_errors(
    server: LlmServer, openai_client: Any
) -> None:
    server.enqueue(tool_reply('{"name": "ada", "age": 3}'), tool_reply('{"name": "Ada", "age": 3}'))
    assert same(ask(openai_client, repairing(Person)), 3)
    assert len(server.requests) == 2
    assert "a name starts with a capital letter" in json.dumps(server.requests[1].body["messages"])


def test_json_mode_answers_in_prose_are_repaired(server: LlmServer, openai_client: Any) -> None:
    server.enqueue(openai_reply('Sure! {"name": "Ada", "age": 36,} Anything else?'))
    person = ask(openai_client, repairing(Person), instructor.Mode.JSON)
    assert same(person, 36)
    assert len(server.requests) == 1
