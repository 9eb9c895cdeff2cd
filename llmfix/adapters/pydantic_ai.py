"""PydanticAI: :class:`LlmfixHealing`, a capability that repairs each model response before
the agent validates it (``pip install 'llmfix[pydantic-ai]'``).

``Agent(model, output_type=Person, capabilities=[LlmfixHealing()])``: a tool call's
arguments (the output tool's and every function tool's) are repaired against that tool's
JSON Schema, and a text answer in native or prompted output mode against the output's
schema, as ``llmfix.repair`` does. A repaired part replaces the model's; a part that is
valid already, or that repair cannot make usable, is left as it was, so PydanticAI's own
validation still decides, and raises ``ModelRetry`` only for what repair could not fix: a
retry (a model call) is spent only then. A cut-off response (``finish_reason`` ``length``)
is not healed: completing it would guess. ``on_result`` sees each repair (the tool name, or
``None`` for text, and the :class:`~llmfix.model.Result`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse, ModelResponsePart, TextPart, ToolCallPart
from pydantic_ai.models import ModelRequestContext, ModelRequestParameters

from llmfix.adapters.answers import repair_answer
from llmfix.jsontext import dumps
from llmfix.model import Result, Status

__all__ = ["LlmfixHealing"]

# Output modes whose answer is the model's text (the tool mode's is a tool call).
_TEXT_MODES = ("native", "prompted")


@dataclasses.dataclass
class LlmfixHealing(AbstractCapability[Any]):
    """Repairs tool-call arguments and structured text answers before PydanticAI validates
    them; ``options`` are those of :func:`llmfix.repair` (``max_risk``, ...)."""

    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    on_result: Callable[[str | None, Result], None] | None = None

    async def after_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        response: ModelResponse,
    ) -> ModelResponse:
        if response.finish_reason == "length":
            return response
        parameters = request_context.model_request_parameters
        parts = [self._heal(part, parameters) for part in response.parts]
        if all(new is old for new, old in zip(parts, response.parts, strict=True)):
            return response
        return dataclasses.replace(response, parts=parts)

    def _heal(self, part: ModelResponsePart, parameters: ModelRequestParameters) -> Any:
        if isinstance(part, ToolCallPart):
            tool = parameters.tool_defs.get(part.tool_name)
            if tool is None:
                return part
            text = part.args if isinstance(part.args, str) else dumps(part.args or {})
            result = self._repair(part.tool_name, text, tool.parameters_json_schema)
            if result is None or not isinstance(result.value, dict):
                return part
            return dataclasses.replace(part, args=dumps(result.value))
        if (
            isinstance(part, TextPart)
            and parameters.output_mode in _TEXT_MODES
            and parameters.output_object is not None
        ):
            result = self._repair(None, part.content, parameters.output_object.json_schema)
            if result is None:
                return part
            return dataclasses.replace(part, content=dumps(result.value))
        return part

    def _repair(self, tool: str | None, text: str, schema: Any) -> Result | None:
        """The repaired result, when there was something to repair and it is usable."""
        result = repair_answer(text, schema, self.options)
        if result.status is Status.VALID or not result.ok:
            return None
        if self.on_result is not None:
            self.on_result(tool, result)
        return result
