"""The LangChain adapter (``llmfix/adapters/langchain.py``) in a real chain: a prompt,
langchain-openai's ``ChatOpenAI`` talking to the local server (``tests/llm_server.py``),
and the parser."""

from __future__ import annotations

import json
from typing import Any

import langchain_openai
import pytest
from langchain_core.exceptions import OutputParserException
from langchain_core.prompts import ChatPromptTemplate
from pydantic import BaseModel, field_validator

from llmfix.adapters.langchain import (
    LlmfixOutputParser,
    LlmfixParseError,
    LlmfixResultParser,
)
from llmfix.model import Status
from tests.llm_server import LlmServer, Reply, openai_reply


class Person(BaseModel):
    name: str
    age: int

    @field_validator("name")
    @classmethod
    def capitalised(cls, value: str) -> str:
        if not value[:1].isupper():
            raise ValueError("a name starts with a capital letter")
        return value


PROMPT = ChatPromptTemplate.from_messages([("user", "Who is {who}? Answer in JSON.")])


def chain(server: LlmServer, parser: Any) -> Any:
    model = langchain_openai.ChatOpenAI(
        base_url=server.openai_base, api_key="test", model="test-model", max_retries=0
    )
    return PROMPT | model | parser


def test_a_chain_gives_the_repaired_instance(server: LlmServer) -> None:
    server.enqueue(openai_reply('Sure!\n```json\n{"name": "Ada", "age": "36",}\n```'))
    person = chain(server, LlmfixOutputParser(Person)).invoke({"who": "Ada"})
    assert person == Person(name="Ada", age=36)
    assert "Who is Ada?" in server.requests[0].user_prompt()


def test_a_json_schema_gives_the_value(server: LlmServer) -> None:
    server.enqueue(openai_reply("{'name': 'Ada', 'age': 36}"))
    schema = {"type": "object", "required": ["name"]}
    assert chain(server, LlmfixOutputParser(schema)).invoke({"who": "Ada"}) == {
        "name": "Ada",
        "age": 36,
    }


def test_the_result_parser_gives_the_diagnostics(server: LlmServer) -> None:
    server.enqueue(openai_reply('{"name": "Ada", "age": 36,}'))
    result = chain(server, LlmfixResultParser(Person)).invoke({"who": "Ada"})
    assert result.status is Status.REPAIRED
    assert [d.code for d in result.diagnostics] == ["parse.trailing_comma"]
    assert result.parsed == Person(name="Ada", age=36)


def test_an_unusable_answer_raises_with_its_result(server: LlmServer) -> None:
    server.enqueue(openai_reply('{"name": "ada", "age": 3}'))
    with pytest.raises(LlmfixParseError) as raised:
        chain(server, LlmfixOutputParser(Person)).invoke({"who": "ada"})
    assert isinstance(raised.value, OutputParserException)
    assert raised.value.result.status is Status.INVALID
    assert [d.code for d in raised.value.result.errors] == ["schema.pydantic"]
    assert "/name: Value error, a name starts with a capital letter" in str(raised.value)


def test_the_finish_reason_counts(server: LlmServer) -> None:
    # a complete-looking value whose answer the API says was cut off
    server.enqueue(openai_reply('{"name": "Ada", "age": 36}', finish_reason="length"))
    result = chain(server, LlmfixResultParser(Person)).invoke({"who": "Ada"})
    assert result.status is Status.TRUNCATED


def test_a_retry_spends_a_call_only_when_repair_fails(server: LlmServer) -> None:
    server.enqueue(
        openai_reply('{"name": "ada", "age": 3}'),  # Pydantic rejects it: a retry
        openai_reply('{"name": "Ada", "age": 3,}'),  # repaired: no third call
    )
    retrying = chain(server, LlmfixOutputParser(Person)).with_retry(
        retry_if_exception_type=(OutputParserException,), stop_after_attempt=3
    )
    assert retrying.invoke({"who": "Ada"}) == Person(name="Ada", age=3)
    assert len(server.requests) == 2


def test_streaming_gives_the_final_value(server: LlmServer) -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        record = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        return "data: " + json.dumps({**record, "choices": [choice]}) + "\n\n"

    body = (
        chunk({"role": "assistant", "content": '{"name": "Ada", '})
        + chunk({"content": '"age": "36"}'})
        + chunk({}, "stop")
        + "data: [DONE]\n\n"
    )
    server.enqueue(Reply(body=body, content_type="text/event-stream"))
    found = list(chain(server, LlmfixOutputParser(Person)).stream({"who": "Ada"}))
    assert found[-1] == Person(name="Ada", age=36)
