"""Model providers: ask a model for JSON over HTTP, and say clearly when that fails.

A provider has one method, :meth:`Provider.complete_json`, taking chat messages and the
JSON Schema the answer must meet and returning a :class:`Completion` (the answer text and
token counts). Two built in, both on httpx (imported on first request, not at start-up):

- :class:`OpenAIProvider` — OpenAI-compatible chat completions: ``{base_url}/chat/completions``
  where ``base_url`` follows the OpenAI SDK convention and ends in ``/v1`` (OpenAI, Ollama,
  vLLM, llama.cpp, LM Studio, OpenRouter). The JSON is asked for with ``response_format``,
  the strongest mode the schema allows first (see :func:`structured_modes`); a server that
  answers 400/422/500 about ``response_format`` gets the next mode, and the provider
  remembers which modes were refused.
- :class:`AnthropicProvider` — Anthropic messages: ``{base_url}/v1/messages`` (SDK convention:
  no ``/v1`` in the base), headers ``x-api-key`` and ``anthropic-version``, the schema as the
  ``input_schema`` of one tool the model is forced to call; the answer is the tool's input.

Both APIs want an object at the root of the schema: a schema for an array or a scalar is
wrapped as the ``value`` property of an object, and the answer unwrapped again.

Failures are :class:`ProviderRefused` (the request is wrong and will stay wrong: bad key,
unknown model, bad request — not retried) or :class:`ProviderUnavailable` (no usable answer
after the transport retries of :mod:`llmfix.llm.retry`: unreachable, reset, cut off, too slow,
5xx …), of which :class:`ProviderBadResponse` is the kind where the server did answer, but not
with an API response (not JSON, an HTML page, another API's JSON). Each try of a request has
``timeout`` seconds in all, however slowly the answer trickles in. No message ever holds the
key, spans more than one line, or carries a control character.

The parts: :mod:`.base` (the protocol, :class:`Completion`, the failures), :mod:`.transport`
(HTTP with retries and deadlines), :mod:`.schemas` (fitting a schema to what an API takes),
and one module per wire format, :mod:`.openai` and :mod:`.anthropic`.
"""

from __future__ import annotations

from llmfix.llm.config import LlmConfig
from llmfix.llm.providers.anthropic import AnthropicProvider
from llmfix.llm.providers.base import (
    ANTHROPIC_VERSION,
    BudgetSpent,
    Completion,
    ConstrainedRequest,
    ContinuationRequest,
    Message,
    Meter,
    Provider,
    ProviderBadResponse,
    ProviderRefused,
    ProviderUnavailable,
)
from llmfix.llm.providers.openai import OpenAIProvider
from llmfix.llm.providers.schemas import object_root, strict_compatible, structured_modes, tool_name
from llmfix.llm.providers.transport import HttpTransport

__all__ = [
    "ANTHROPIC_VERSION",
    "AnthropicProvider",
    "BudgetSpent",
    "Completion",
    "ConstrainedRequest",
    "ContinuationRequest",
    "HttpTransport",
    "Message",
    "Meter",
    "OpenAIProvider",
    "Provider",
    "ProviderBadResponse",
    "ProviderRefused",
    "ProviderUnavailable",
    "make_provider",
    "object_root",
    "strict_compatible",
    "structured_modes",
    "tool_name",
]


def make_provider(config: LlmConfig, *, transport: HttpTransport | None = None) -> Provider:
    """The built-in provider ``config.provider`` names, for ``config.model``."""
    config.require_model()
    if config.provider == "anthropic":
        return AnthropicProvider(config, transport=transport)
    return OpenAIProvider(config, transport=transport)
