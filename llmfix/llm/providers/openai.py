"""OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter):
``{base_url}/chat/completions`` with ``response_format``, the strongest mode first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from llmfix.llm.providers.base import (
    WRAP_INSTRUCTION,
    Completion,
    ConstrainedRequest,
    ContinuationRequest,
    Message,
    Meter,
    ProviderRefused,
)
from llmfix.llm.providers.schemas import (
    about_continuation,
    about_grammar,
    about_response_format,
    grammar_unsupported,
    mentions,
    never,
    response_format,
    structured_modes,
    takes_grammar,
    tool_name,
    unwrap,
)
from llmfix.llm.providers.transport import (
    HttpAnswer,
    HttpProvider,
    count,
    str_or_none,
)

if TYPE_CHECKING:
    pass


class OpenAIProvider(HttpProvider):
    """OpenAI-compatible ``/chat/completions``."""

    name = "openai"

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: Any,
        *,
        temperature: float | None,
        max_tokens: int,
        timeout: float,
        schema_name: str | None = None,
        meter: Meter | None = None,
    ) -> Completion:
        url = f"{self.base_url}/chat/completions"
        headers = self._headers()
        name = tool_name(schema_name)
        modes = structured_modes(self.config.structured_mode, schema)
        for _ in range(len(modes) + 4):  # each turn removes one mode or one parameter
            usable = [m for m in modes if m not in self.adjust.refused_modes] or modes[-1:]
            mode = usable[0]
            fmt, wrapped = response_format(mode, schema, name)
            sent = [dict(m) for m in messages]
            if wrapped and sent:
                sent[-1]["content"] += WRAP_INSTRUCTION
            body: dict[str, Any] = {"model": self.model, "messages": sent}
            self._sampling(body, temperature, max_tokens)
            if fmt is not None:
                body["response_format"] = fmt
            can_fall_back = fmt is not None and len(usable) > 1
            answer = self.transport.post(
                url,
                headers,
                body,
                timeout,
                keep=about_response_format if can_fall_back else never,
                meter=meter,
            )
            if answer.status < 300:
                return self._completion(answer, mode, wrapped, url)
            if self._adjusted(answer, body):
                continue
            text = answer.text
            if can_fall_back and about_response_format(answer.status, text):
                self.adjust.refused_modes.add(mode)
                if mode == "json_schema_strict" and not mentions(text, "strict"):
                    self.adjust.refused_modes.add("json_schema")  # json_schema itself refused
                self.learn()
                continue
            raise self._refused(answer, url)
        raise ProviderRefused(f"{self.name}: {url} refused every way of asking for JSON")

    def complete_continuation(
        self,
        request: ContinuationRequest,
        *,
        temperature: float | None,
        max_tokens: int,
        timeout: float,
        meter: Meter | None = None,
        prefill: bool = True,
        constrained: ConstrainedRequest | None = None,
    ) -> Completion:
        """The rest of ``request.prefix``, as plain text (no ``response_format``: what
        follows a prefix is not a JSON value of its own).

        With ``constrained``, a server that may take llama.cpp's ``grammar`` field (not a
        known hosted API: :func:`takes_grammar`; not one remembered to refuse it) is sent
        ``constrained.request`` with ``grammar``, the grammar of the rest of the value.
        A refusal about the field (HTTP 400/422 naming ``grammar``, or an unknown-field
        error) is remembered and the request sent again without it; a grammar the server
        could not read is dropped for this request only. Completion.grammar says whether
        it went with the answer.

        First as an assistant prefill: the prefix is the last, assistant message, with
        ``continue_final_message: true`` and ``add_generation_prompt: false`` (vLLM,
        llama.cpp's ``llama-server``, SGLang, TGI). A server that refuses that (HTTP
        400/422, or an error about those fields) is asked with the prompt instead, and
        remembered; OpenAI's own API takes no prefill and gets the prompt at once.
        Completion.mode says which: ``prefill`` or ``prompt``; ``prefill=False`` asks with
        the prompt this once."""
        url = f"{self.base_url}/chat/completions"
        headers = self._headers()
        wanted = prefill
        grammar = constrained is not None and takes_grammar(self.base_url)
        for _ in range(6):
            prefill = wanted and not self.adjust.no_prefill and not self.config.is_default_endpoint
            use = constrained if grammar and not self.adjust.no_grammar else None
            asked = use.request if use is not None else request
            messages = asked.prefill if prefill else asked.prompt
            body: dict[str, Any] = {"model": self.model, "messages": [dict(m) for m in messages]}
            if prefill:
                body["continue_final_message"] = True
                body["add_generation_prompt"] = False
            if use is not None:
                body["grammar"] = use.grammar
            self._sampling(body, temperature, max_tokens)
            answer = self.transport.post(
                url,
                headers,
                body,
                timeout,
                keep=_keep(prefill, use is not None),
                meter=meter,
            )
            if answer.status < 300:
                mode = "prefill" if prefill else "prompt"
                done = self._completion(answer, mode, False, url)
                return replace(done, grammar=use is not None)
            if self._adjusted(answer, body):
                continue
            text = answer.text
            if use is not None and about_grammar(answer.status, text):
                if grammar_unsupported(text):
                    self.adjust.no_grammar = True
                    self.learn()
                grammar = False
                continue
            if prefill and (answer.status in (400, 422) or about_continuation(answer.status, text)):
                self.adjust.no_prefill = True
                self.learn()
                continue
            raise self._refused(answer, url)
        raise ProviderRefused(f"{self.name}: {url} refused every way of asking to continue")

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self._key:
            headers["authorization"] = f"Bearer {self._key}"
        return headers

    def _sampling(self, body: dict[str, Any], temperature: float | None, max_tokens: int) -> None:
        """The temperature and the token limit, under the names this server takes."""
        if temperature is not None and not self.adjust.no_temperature:
            body["temperature"] = temperature
        key = "max_completion_tokens" if self.adjust.max_completion_tokens else "max_tokens"
        body[key] = max_tokens

    def _adjusted(self, answer: HttpAnswer, body: dict[str, Any]) -> bool:
        """Whether a refusal named a parameter this server wants otherwise (the token
        limit's name, no temperature): learned and remembered, so the caller asks again."""
        if answer.status != 400:
            return False
        if not self.adjust.max_completion_tokens and mentions(answer.text, "max_completion_tokens"):
            self.adjust.max_completion_tokens = True
        elif "temperature" in body and mentions(answer.text, "temperature"):
            self.adjust.no_temperature = True
        else:
            return False
        self.learn()
        return True

    def _completion(self, answer: HttpAnswer, mode: str, wrapped: bool, url: str) -> Completion:
        data = answer.data
        try:
            choice = data["choices"][0]
            message = choice["message"]
            if not isinstance(message, dict):
                raise TypeError(message)
        except (TypeError, KeyError, IndexError):
            raise self._unusable(answer, url, "a chat completion") from None
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(
                str(part.get("text", "")) for part in content if isinstance(part, dict)
            )
        if not content:
            content = message.get("refusal") or ""
        text = unwrap(str(content)) if wrapped else str(content)
        usage = data.get("usage")
        return Completion(
            text=text,
            input_tokens=count(usage, "prompt_tokens"),
            output_tokens=count(usage, "completion_tokens"),
            model=str_or_none(data.get("model")),
            mode=mode,
            finish_reason=str_or_none(choice.get("finish_reason")),
            retries=answer.retries,
            unreached=answer.unreached,
            rate_limited=answer.rate_limited,
        )


def _keep(prefill: bool, grammar: bool) -> Callable[[int, str], bool]:
    """Which error answers to a continuation are not retried but looked at: those about
    the prefill, and those about the grammar."""

    def keep(status: int, text: str) -> bool:
        return (prefill and about_continuation(status, text)) or (
            grammar and about_grammar(status, text)
        )

    return keep
