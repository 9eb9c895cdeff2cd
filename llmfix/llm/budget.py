"""The budgets of a run's LLM repair: model requests, tokens and money, shared by every
response, and the circuit breaker that stops asking a provider that stays down."""

from __future__ import annotations

import threading

from llmfix.errors import ConfigError
from llmfix.llm.config import LlmConfig


class CallBudget:
    """The run's budgets, shared by every response: model requests (``--max-llm-calls``),
    tokens (input + output, ``--max-llm-tokens``) and money (``--max-llm-cost``, counted
    with the model's ``price``: US dollars per million input and output tokens).

    A request is not sent once a budget is spent. What a request will cost is known only
    when it is answered, so the last one may go over: its output is capped at what is left
    (:meth:`output_room`), its input is not known before. :attr:`spent_on` says which
    budget stopped the run.

    It is also the run's circuit breaker: after :data:`DOWN_AFTER` requests in a row
    that found the provider unavailable or answering with something that is not an API
    response (each already retried inside the provider), the rest of the run is not
    sent, so a dead or trickling server costs a batch a few timeouts, not a few per item.
    """

    DOWN_AFTER = 3

    def __init__(
        self,
        limit: int | None,
        *,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        price: tuple[float, float] | None = None,
    ) -> None:
        if max_cost is not None and price is None:
            raise ConfigError("a cost budget needs the model's price (see LlmConfig.prices)")
        self.limit = limit
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self.price = price
        self.used = 0
        self.tokens = 0  # input + output tokens of the answers so far
        self.cost = 0.0  # US dollars (0 without a price)
        self.unavailable_in_a_row = 0
        self.rate_limited = 0  # requests the provider answered HTTP 429
        self._lock = threading.Lock()

    @classmethod
    def for_config(cls, config: LlmConfig) -> CallBudget:
        """The budgets ``config`` sets (its price table gives the model's price)."""
        config.require_price()
        return cls(
            config.max_calls,
            max_tokens=config.max_run_tokens,
            max_cost=config.max_cost,
            price=config.price(),
        )

    @property
    def provider_down(self) -> bool:
        return self.unavailable_in_a_row >= self.DOWN_AFTER

    def record(self, *, available: bool | None, rate_limited: int = 0) -> None:
        """Count a request that reached the provider, or one that found it unavailable
        (``None``: it was cut short by the limit, neither), and the tries of it that were
        answered HTTP 429."""
        with self._lock:
            if available is not None:
                self.unavailable_in_a_row = 0 if available else self.unavailable_in_a_row + 1
            self.rate_limited += rate_limited

    def cost_of(self, input_tokens: int, output_tokens: int) -> float:
        """US dollars of that many tokens at :attr:`price` (0 without one)."""
        if self.price is None:
            return 0.0
        return (input_tokens * self.price[0] + output_tokens * self.price[1]) / 1_000_000

    def spend(self, input_tokens: int, output_tokens: int) -> None:
        """Count the tokens (and their cost) of an answer."""
        with self._lock:
            self.tokens += input_tokens + output_tokens
            self.cost += self.cost_of(input_tokens, output_tokens)

    @property
    def spent_on(self) -> str | None:
        """The budget that is spent: ``calls``, ``tokens`` or ``cost``; ``None``."""
        if self.limit is not None and self.used >= self.limit:
            return "calls"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return "tokens"
        if self.max_cost is not None and self.cost >= self.max_cost:
            return "cost"
        return None

    def output_room(self, wanted: int) -> int:
        """``wanted`` output tokens, or fewer when a token or cost budget has less left."""
        room = wanted
        if self.max_tokens is not None:
            room = min(room, self.max_tokens - self.tokens)
        if self.max_cost is not None and self.price is not None and self.price[1] > 0:
            room = min(room, int((self.max_cost - self.cost) * 1_000_000 / self.price[1]))
        return max(1, room)

    def take(self) -> bool:
        """Count one HTTP request; ``False`` (and nothing counted) when a budget is spent.

        The providers ask before every request they send, retries and structured-mode
        fallbacks included, so the limits bound what reaches the server."""
        with self._lock:
            if self.spent_on is not None:
                return False
            self.used += 1
            return True

    @property
    def remaining(self) -> int | None:
        """Requests left (``None``: no call limit); 0 as soon as any budget is spent."""
        if self.spent_on is not None:
            return 0
        return None if self.limit is None else max(0, self.limit - self.used)
