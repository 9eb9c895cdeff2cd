"""The PydanticAI adapter (``llmfix/adapters/pydantic_ai.py``): a real ``Agent`` with
PydanticAI's OpenAI model talking to the local server (``tests/llm_server.py``). The
measure is the server's request count: a healed answer costs no retry."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, field_validator
from pydantic_ai import Agent, PromptedOutput
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from llmfix.adapters.pydantic_ai import LlmfixHealing
from llmfix.model import Result, Status
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


def tool_reply(arguments: str, name: str = "final_result", finish: str = "tool_calls") -> Reply:
    """A chat completion whose answer is one tool call with ``arguments`` as written."""
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return Reply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "test-model",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
        }
    )


def run(
    server: LlmServer,
    output: Any = Person,
    *,
    heal: bool = True,
    tools: tuple[Any, ...] = (),
    **healing: Any,
) -> Any:
    """Run an agent once on its own event loop, with an OpenAI client of its own that is
    closed on that loop (a shared client would keep sockets to earlier tests' servers)."""
    import asyncio

    import openai

    async def main() -> Any:
        async with openai.AsyncOpenAI(
            base_url=server.openai_base, api_key="test", max_retries=0
        ) as client:
            model = OpenAIChatModel("test-model", provider=OpenAIProvider(openai_client=client))
            capabilities = [LlmfixHealing(**healing)] if heal else []
            agent = Agent(model, output_type=output, capabilities=capabilities, tools=tools)
            return (await agent.run("Who is Ada?")).output

    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def test_broken_tool_arguments_are_healed_without_a_retry(server: LlmServer) -> None:
    seen: list[tuple[str | None, Result]] = []
    server.enqueue(tool_reply("{name: 'Ada', age: '36',}"))
    output = run(server, on_result=lambda tool, r: seen.append((tool, r)))
    assert output == Person(name="Ada", age=36)
    assert len(server.requests) == 1
    [(tool, repaired)] = seen
    assert tool == "final_result"
    assert repaired.status is Status.REPAIRED


def test_without_healing_the_same_answer_costs_a_retry(server: LlmServer) -> None:
    server.enqueue(
        tool_reply("{name: 'Ada', age: '36',}"), tool_reply('{"name": "Ada", "age": 36}')
    )
    assert run(server, heal=False) == Person(name="Ada", age=36)
    assert len(server.requests) == 2


def test_what_repair_cannot_fix_still_gets_pydantic_ais_retry(server: LlmServer) -> None:
    server.enqueue(tool_reply('{"name": "ada", "age": 3}'), tool_reply('{"name": "Ada", "age": 3}'))
    assert run(server) == Person(name="Ada", age=3)
    assert len(server.requests) == 2
    retry = json.dumps(server.requests[1].body["messages"])
    assert "a name starts with a capital letter" in retry


def test_a_function_tools_arguments_are_healed(server: LlmServer) -> None:
    ages: list[int] = []
    server.enqueue(
        tool_reply('{"who": "Ada", "years": "36",}', name="record_age"),
        tool_reply('{"name": "Ada", "age": 36}'),
    )

    def record_age(who: str, years: int) -> str:
        """Record someone's age."""
        ages.append(years)
        return "recorded"

    assert run(server, tools=(record_age,)) == Person(name="Ada", age=36)
    assert ages == [36]
    assert len(server.requests) == 2  # the tool's answer and the final one: no retry


def test_a_prompted_text_answer_is_healed(server: LlmServer) -> None:
    server.enqueue(openai_reply('Here it is:\n```json\n{"name": "Ada", "age": 36,}\n```'))
    assert run(server, PromptedOutput(Person)) == Person(name="Ada", age=36)
    assert len(server.requests) == 1


def test_a_cut_off_answer_is_not_completed() -> None:
    # the hook itself, on PydanticAI's own types: completing a cut-off call would guess
    import asyncio

    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.models import ModelRequestContext, ModelRequestParameters
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tools import ToolDefinition

    schema = Person.model_json_schema()
    parameters = ModelRequestParameters(
        output_tools=[ToolDefinition(name="final_result", parameters_json_schema=schema)]
    )
    context = ModelRequestContext(
        model=TestModel(), messages=[], model_settings=None, model_request_parameters=parameters
    )
    healing = LlmfixHealing()

    def heal(response: ModelResponse) -> ModelResponse:
        hook = healing.after_model_request(
            None,  # type: ignore[arg-type]  # (the hook does not use the run context)
            request_context=context,
            response=response,
        )
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(hook)
        finally:
            loop.close()

    part = ToolCallPart("final_result", '{"name": "Ada", "age": 3')
    cut = ModelResponse(parts=[part], finish_reason="length")
    assert heal(cut) is cut
    whole = ModelResponse(parts=[ToolCallPart("final_result", '{"name": "Ada", "age": 3,}')])
    assert heal(whole).parts[0].args == '{"name": "Ada", "age": 3}'  # type: ignore[union-attr]
