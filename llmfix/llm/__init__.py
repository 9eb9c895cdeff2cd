"""LLM repair: ask a configured model to fix what rules cannot — bounded, recorded, verified.

Off unless configured. Importing this package costs nothing at start-up: httpx is imported
on the first request. The pieces:

- :class:`LlmConfig` (:mod:`llmfix.llm.config`) — provider, model, base URL, attempts, …;
- :func:`make_provider` and the providers (:mod:`llmfix.llm.providers`) — OpenAI-compatible
  chat completions and Anthropic messages, with one retry policy (:mod:`llmfix.llm.retry`);
- :func:`llm_repair` (:mod:`llmfix.llm.loop`) — the repair loop, returning an
  :class:`LlmRepairOutcome` with the final :class:`~llmfix.model.Result` and every
  :class:`Attempt`;
- :mod:`llmfix.llm.continuation` — continuing an answer the token limit cut off from its
  valid beginning (an assistant prefill where the provider takes one), instead of asking
  for all of it again; the loop's continuation attempts are :mod:`llmfix.llm.continue_attempt`,
  sent with a grammar of the rest of the value (:mod:`llmfix.llm.grammar`) to servers that
  take llama.cpp's ``grammar`` field;
- :class:`AnswerCache` (:mod:`llmfix.llm.cache`) and :func:`redact`
  (:mod:`llmfix.llm.redact`);
- :mod:`llmfix.run.llm` — LLM repair for a whole `repair` or `check` run: whether it is on
  (a user decision, never a project file's alone), one provider and call budget, totals.
"""

from __future__ import annotations

from llmfix.llm.budget import CallBudget
from llmfix.llm.cache import AnswerCache, default_cache_dir
from llmfix.llm.config import PROVIDERS, STRUCTURED_MODES, LlmConfig
from llmfix.llm.loop import (
    OUTPUT_VALIDATION_FAILED,
    Attempt,
    LlmRepairOutcome,
    llm_repair,
    needs_llm,
    wants_llm,
)
from llmfix.llm.providers import (
    AnthropicProvider,
    Completion,
    OpenAIProvider,
    Provider,
    ProviderBadResponse,
    ProviderRefused,
    ProviderUnavailable,
    make_provider,
)
from llmfix.llm.redact import redact

__all__ = [
    "OUTPUT_VALIDATION_FAILED",
    "PROVIDERS",
    "STRUCTURED_MODES",
    "AnswerCache",
    "AnthropicProvider",
    "Attempt",
    "CallBudget",
    "Completion",
    "LlmConfig",
    "LlmRepairOutcome",
    "OpenAIProvider",
    "Provider",
    "ProviderBadResponse",
    "ProviderRefused",
    "ProviderUnavailable",
    "default_cache_dir",
    "llm_repair",
    "make_provider",
    "needs_llm",
    "redact",
    "wants_llm",
]
