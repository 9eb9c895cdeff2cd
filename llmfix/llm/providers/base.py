"""What every provider shares: the :class:`Provider` protocol, :class:`Completion`, the
failures (:class:`ProviderRefused`, :class:`ProviderUnavailable`, ...) and wire constants."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from llmfix.errors import ProviderError

if TYPE_CHECKING:
    pass


Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant", "content": ...}

ANTHROPIC_VERSION = "2023-06-01"
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # an answer is a few kB; a larger one is not read on
USER_AGENT = "llmfix"
WRAP_KEY = "value"
WRAP_INSTRUCTION = (
    '\n\nThis API answers with a JSON object: give the corrected value as {"value": <value>}.'
)


class _Tried:
    """What the transport saw of the tries of one request before it failed: how many never
    reached the server (connection refused, DNS, TLS, a connect timeout) and how many it
    answered with HTTP 429 (rate limited). Set by :meth:`HttpTransport.post`."""

    unreached: int = 0
    rate_limited: int = 0


class ProviderRefused(_Tried, ProviderError):
    """The provider refused the request (HTTP 400/401/403/404 …); trying again won't help."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class ProviderUnavailable(_Tried, ProviderError):
    """No usable answer after the transport retries (timeouts, 429, 5xx, lost connections)."""


class BudgetSpent(_Tried, ProviderError):
    """The run's limit of model requests (``--max-llm-calls``) was reached before a request
    that a retry or a fallback would have sent; it was not sent."""


Meter = Callable[[], bool]  # asked before each HTTP request: False → not sent (BudgetSpent)


class ProviderBadResponse(ProviderUnavailable):
    """The server answered, but not with an API response: not JSON, an HTML page, a JSON
    body of the wrong shape, or one too large to read."""


@dataclass(frozen=True)
class Completion:
    """One answer from a model."""

    text: str  # the JSON text the model produced (a tool call's input, serialised)
    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None  # the model the server says answered
    mode: str = ""  # how JSON was asked for: a structured mode, or "tool" (Anthropic)
    finish_reason: str | None = None
    retries: int = 0  # transport retries this answer needed
    cached: bool = False  # served from the on-disk cache, no request made
    unreached: int = 0  # of those retries, tries that never reached the server
    rate_limited: int = 0  # of those retries, tries answered HTTP 429
    grammar: bool = False  # a continuation asked with a grammar of the rest of the value

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "model": self.model,
            "mode": self.mode,
            "finish_reason": self.finish_reason,
            "grammar": self.grammar,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Completion:
        return cls(
            text=str(data["text"]),
            input_tokens=int(data.get("input_tokens") or 0),
            output_tokens=int(data.get("output_tokens") or 0),
            model=data.get("model"),
            mode=str(data.get("mode") or ""),
            finish_reason=data.get("finish_reason"),
            grammar=data.get("grammar") is True,
        )


class ContinuationRequest(Protocol):
    """What a provider needs to ask for the rest of a cut-off answer (built by
    :func:`llmfix.llm.continuation.continuation_request`): the messages with the prefix
    as the last, assistant message, and the messages that show it in a prompt instead."""

    @property
    def prefix(self) -> str: ...

    @property
    def prefill(self) -> Sequence[Message]: ...

    @property
    def prompt(self) -> Sequence[Message]: ...


class ConstrainedRequest(Protocol):
    """A continuation asked with a grammar (built by
    :func:`llmfix.llm.continue_attempt.constrained_request`): ``request`` holds the
    prefill, maybe moved back to a token boundary (token healing), and ``grammar`` is the
    GBNF grammar of what follows it, for servers that take llama.cpp's ``grammar`` field."""

    @property
    def request(self) -> ContinuationRequest: ...

    @property
    def grammar(self) -> str: ...


class Provider(Protocol):
    """What the repair loop needs from a model."""

    name: str
    model: str
    base_url: str

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
    ) -> Completion: ...

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
    ) -> Completion: ...

    def prefill_ignored(self) -> None:
        """Told by the caller that the server answered a prefill with a fresh message (it
        took the prefix as a finished turn): later continuations use the prompt."""

    def close(self) -> None: ...


def json_or_none(text: str) -> Any:
    """``text`` parsed as JSON, or ``None`` when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return None
