"""Adapters: llmfix inside the frameworks Python code already uses, one module each, each
an optional extra that imports its framework only when the module is imported.

- :mod:`llmfix.adapters.langchain` — ``LlmfixOutputParser``, an output parser for chains
  (``llmfix[langchain]``);
- :mod:`llmfix.adapters.litellm` — ``LlmfixCallback``, a LiteLLM callback that checks
  every completion (``llmfix[litellm]``);
- :mod:`llmfix.adapters.pydantic_ai` — ``LlmfixHealing``, a PydanticAI capability that
  repairs a response before the agent validates it, so a retry is spent only when repair
  fails (``llmfix[pydantic-ai]``);
- :mod:`llmfix.adapters.instructor` — ``repairing(Model)``, a response model for
  Instructor that repairs before Instructor re-asks (``llmfix[instructor]``).

Each is thin: the work is :func:`llmfix.repair` (:mod:`llmfix.adapters.answers`).
"""
