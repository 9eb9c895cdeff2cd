"""LangChain: :class:`LlmfixOutputParser`, an output parser that repairs the model's answer
instead of failing on it (``pip install 'llmfix[langchain]'``).

``prompt | model | LlmfixOutputParser(schema=Person)`` gives the repaired value (with a
Pydantic type: the validated instance). The stop reason LangChain keeps in the message's
``response_metadata`` (OpenAI's ``finish_reason``, Anthropic's ``stop_reason``) is applied
as everywhere in llmfix: a cut-off answer is ``truncated``, a refusal ``refused``. An answer
that cannot be used raises :class:`LlmfixParseError` (an ``OutputParserException``, so
LangChain's retry parsers and ``with_retry`` take it) holding the whole
:class:`~llmfix.model.Result`. :class:`LlmfixResultParser` gives the Result itself, for a
caller that wants the diagnostics of every answer (what was repaired, at which risk).
"""

from __future__ import annotations

from typing import Any

from langchain_core.exceptions import OutputParserException
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.outputs import ChatGeneration, Generation
from pydantic import Field

from llmfix.adapters.answers import describe_problems
from llmfix.batch.responses import repair_response
from llmfix.model import Result

__all__ = ["LlmfixOutputParser", "LlmfixParseError", "LlmfixResultParser"]


class LlmfixParseError(OutputParserException):
    """An answer llmfix could not make usable; :attr:`result` says why (its diagnostics)."""

    def __init__(self, result: Result, text: str) -> None:
        problems = describe_problems(result)
        super().__init__(problems, observation=problems, llm_output=text)
        self.result = result


class LlmfixResultParser(BaseOutputParser[Result]):
    """Parses an answer into llmfix's :class:`~llmfix.model.Result` (never raises for a bad
    answer: the Result says what happened). ``schema`` is a JSON Schema or a Pydantic type;
    ``options`` are those of :func:`llmfix.repair`."""

    answer_schema: Any = None
    options: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, schema: Any = None, **options: Any) -> None:
        fields: dict[str, Any] = {"answer_schema": schema, "options": options}
        super().__init__(**fields)

    def parse(self, text: str) -> Result:
        return self._repair(text, None, None)

    def parse_result(self, result: list[Generation], *, partial: bool = False) -> Result:
        generation = result[0]
        metadata: dict[str, Any] = dict(generation.generation_info or {})
        if isinstance(generation, ChatGeneration) and isinstance(generation.message, BaseMessage):
            metadata.update(generation.message.response_metadata or {})
        stop = metadata.get("stop_reason")
        finish = metadata.get("finish_reason")
        return self._repair(
            generation.text,
            stop if isinstance(stop, str) else None,
            finish if isinstance(finish, str) else None,
            partial=partial,
        )

    def _repair(
        self, text: str, stop: str | None, finish: str | None, *, partial: bool = False
    ) -> Result:
        # The answer in the shape of the API it came from, so that its stop reason counts.
        response: dict[str, Any]
        if stop is not None:
            response = {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "stop_reason": stop,
            }
        else:
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": finish}
            response = {"object": "chat.completion", "choices": [choice]}
        options = {**self.options, "partial": True} if partial else self.options
        return repair_response(response, self.answer_schema, **options)[0][1]

    def get_format_instructions(self) -> str:
        return "Answer with one JSON value, and nothing else."

    @property
    def _type(self) -> str:
        return "llmfix_result"


class LlmfixOutputParser(BaseOutputParser[Any]):
    """Parses an answer into its repaired value: the validated instance for a Pydantic type,
    else the JSON value. Raises :class:`LlmfixParseError` when the answer is not usable."""

    answer_schema: Any = None
    options: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, schema: Any = None, **options: Any) -> None:
        fields: dict[str, Any] = {"answer_schema": schema, "options": options}
        super().__init__(**fields)

    def _results(self) -> LlmfixResultParser:
        return LlmfixResultParser(self.answer_schema, **self.options)

    def parse(self, text: str) -> Any:
        return _usable(self._results().parse(text), text)

    def parse_result(self, result: list[Generation], *, partial: bool = False) -> Any:
        found = self._results().parse_result(result, partial=partial)
        if partial:  # a stream so far: what is complete of it, or nothing yet
            return found.value
        return _usable(found, result[0].text)

    def get_format_instructions(self) -> str:
        return self._results().get_format_instructions()

    @property
    def _type(self) -> str:
        return "llmfix"


def _usable(result: Result, text: str) -> Any:
    if not result.ok:
        raise LlmfixParseError(result, text)
    return result.parsed if result.parsed is not None else result.value
