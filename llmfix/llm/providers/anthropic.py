"""Anthropic messages: ``{base_url}/v1/messages``, the schema as the ``input_schema`` of one
tool the model is forced to call; the answer is the tool's input."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from llmfix.llm.providers.base import (
    ANTHROPIC_VERSION,
    WRAP_KEY,
    Completion,
    ConstrainedRequest,
    ContinuationRequest,
    Message,
    Meter,
    ProviderRefused,
)
from llmfix.llm.providers.schemas import (
    about_continuation,
    mentions,
    object_root,
    tool_name,
)
from llmfix.llm.providers.transport import (
    HttpAnswer,
    HttpProvider,
    count,
    str_or_none,
)

if TYPE_CHECKING:
    pass


class AnthropicProvider(HttpProvider):
    """Anthropic ``/v1/messages`` with a forced tool call."""

    name = "anthropic"

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
        url = f"{self.base_url}/v1/messages"
        headers = self._headers()
        name = tool_name(schema_name)
        use_tool = self.config.structured_mode != "none"
        shaped, wrapped = object_root(schema)
        for _ in range(3):
            body = self._body(messages, temperature, max_tokens)
            if use_tool:
                body["tools"] = [
                    {
                        "name": name,
                        "description": "Submit the corrected JSON value. Its input must "
                        "satisfy the schema.",
                        "input_schema": shaped,
                    }
                ]
                body["tool_choice"] = {"type": "tool", "name": name}
            answer = self.transport.post(url, headers, body, timeout, meter=meter)
            if answer.status < 300:
                return self._completion(answer, name, wrapped and use_tool, url)
            if self._adjusted(answer, body):
                continue
            raise self._refused(answer, url)
        raise ProviderRefused(f"{self.name}: {url} refused the request")

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
        """The rest of ``request.prefix`` as plain text (``constrained`` is not used: the
        messages API takes no grammar): the prefix is the last, assistant
        message (Anthropic continues it; the answer holds only what follows). A model that
        refuses a prefill (HTTP 400 about it) is asked with the prompt instead, and
        remembered. Completion.mode says which: ``prefill`` or ``prompt``; ``prefill=False``
        asks with the prompt this once."""
        url = f"{self.base_url}/v1/messages"
        headers = self._headers()
        wanted = prefill
        for _ in range(3):
            prefill = wanted and not self.adjust.no_prefill
            messages = request.prefill if prefill else request.prompt
            body = self._body(messages, temperature, max_tokens)
            answer = self.transport.post(url, headers, body, timeout, meter=meter)
            if answer.status < 300:
                completion = self._completion(answer, "", False, url)
                return replace(completion, mode="prefill" if prefill else "prompt")
            if self._adjusted(answer, body):
                continue
            if prefill and about_continuation(answer.status, answer.text):
                self.adjust.no_prefill = True
                self.learn()
                continue
            raise self._refused(answer, url)
        raise ProviderRefused(f"{self.name}: {url} refused every way of asking to continue")

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if self._key:
            headers["x-api-key"] = self._key
        return headers

    def _body(
        self, messages: Sequence[Message], temperature: float | None, max_tokens: int
    ) -> dict[str, Any]:
        """A messages request: the system messages joined into ``system``, the rest in order."""
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [
                {"role": m["role"], "content": m["content"]}
                for m in messages
                if m["role"] != "system"
            ],
        }
        if system:
            body["system"] = system
        if temperature is not None and not self.adjust.no_temperature:
            body["temperature"] = temperature
        return body

    def _adjusted(self, answer: HttpAnswer, body: dict[str, Any]) -> bool:
        """Whether a refusal named the temperature (some models take none): learned and
        remembered, so the caller asks again without it."""
        if answer.status == 400 and "temperature" in body and mentions(answer.text, "temperature"):
            self.adjust.no_temperature = True
            self.learn()
            return True
        return False

    def _completion(self, answer: HttpAnswer, name: str, wrapped: bool, url: str) -> Completion:
        data = answer.data
        blocks = data.get("content") if isinstance(data, dict) else None
        if not isinstance(blocks, list):
            raise self._unusable(answer, url, "a messages response")
        text = ""
        mode = "text"
        for block in blocks:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                payload = block.get("input")
                if wrapped and isinstance(payload, dict) and WRAP_KEY in payload:
                    payload = payload[WRAP_KEY]
                text = json.dumps(payload, ensure_ascii=False)
                mode = "tool"
                break
        else:
            text = "".join(
                str(b.get("text", ""))
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "text"
            )
        usage = data.get("usage")
        return Completion(
            text=text,
            input_tokens=count(usage, "input_tokens"),
            output_tokens=count(usage, "output_tokens"),
            model=str_or_none(data.get("model")),
            mode=mode,
            finish_reason=str_or_none(data.get("stop_reason")),
            retries=answer.retries,
            unreached=answer.unreached,
            rate_limited=answer.rate_limited,
        )
