"""LLM repair for a whole run of `repair` or `check`: whether it is on, one provider and one
call budget for every response, and the totals for the closing line.

Whether it runs is a user decision: ``--llm`` / ``--no-llm``, ``LLMFIX_LLM``, or a trusted
``llm:`` section (the user config, or a project file the user trusted; see
:mod:`llmfix.run.trust`). Settings: defaults < trusted ``llm:`` sections (the project file's
network keys only when it is trusted) < ``LLMFIX_*`` variables < flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from llmfix.errors import ConfigError
from llmfix.llm.budget import CallBudget
from llmfix.llm.config import LlmConfig
from llmfix.llm.loop import llm_repair, wants_llm
from llmfix.llm.providers import make_provider
from llmfix.model import Risk
from llmfix.run.ceilings import llm_ceiling_problems
from llmfix.run.trust import env_llm_settings

# What the provider did to a run, told once per kind even with -q: it could not be reached,
# answered with something that is not an API response, refused requests, or the run's
# call limit stopped it (its message says when the calls were rate-limited).
FAULT_CODES = (
    "llm.provider_unavailable",
    "llm.bad_response",
    "llm.request_rejected",
    "llm.budget_exhausted",
)

if TYPE_CHECKING:
    from llmfix.batch.core import Outcome, Profile
    from llmfix.llm.providers import Provider
    from llmfix.model import Result
    from llmfix.options import RepairOptions
    from llmfix.run.config_file import Settings
    from llmfix.schema.validate import SchemaValidator


@dataclass
class Usage:
    """What the model was asked for some responses: calls, tokens, cost."""

    responses: int = 0  # responses sent to the model (cache hits included)
    calls: int = 0  # HTTP requests that reached the model
    cached: int = 0  # answers taken from the cache
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0  # US dollars (0 when the model has no price)

    def add(
        self, calls: int, cached: int, input_tokens: int, output_tokens: int, cost: float
    ) -> None:
        self.responses += 1
        self.calls += calls
        self.cached += cached
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cost += cost

    def to_dict(self, priced: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "responses": self.responses,
            "calls": self.calls,
            "cached": self.cached,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens},
        }
        if priced:
            out["cost"] = round(self.cost, 6)
        return out


# Usage is kept for at most this many groups (a --group-by field with a value per item
# would otherwise grow without end); the rest are counted under "(other)".
MAX_USAGE_GROUPS = 1000


@dataclass
class LlmRun:
    """One provider (its connections, what a server refused) and one budget (calls, tokens,
    cost) shared by every response of the run; usage in all, per final status and per
    ``--group-by`` group."""

    config: LlmConfig
    provider: Provider
    budget: CallBudget
    calls: int = 0  # HTTP requests that reached the model
    cached: int = 0  # answers taken from the cache
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0  # US dollars, with a price for the model
    by_status: dict[str, Usage] = field(default_factory=dict)
    by_group: dict[str, Usage] = field(default_factory=dict)
    # provider faults seen (FAULT_CODES): code → first message and the number of
    # responses they hit; shown at every verbosity
    faults: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def priced(self) -> bool:
        return self.budget.price is not None

    def repair(
        self,
        text: str,
        result: Result,
        *,
        validator: SchemaValidator | None,
        options: RepairOptions | None,
        name: str,
        max_risk: Risk | None = None,
        group: str | None = None,
    ) -> tuple[Result, dict[str, Any] | None]:
        """The model's repair of ``text`` when the rules left it broken (or its continuation
        when it was cut off), and its record; ``group``: the item's ``--group-by`` value."""
        if max_risk is not None and max_risk is not Risk.GUESS:
            return result, None  # a model's answer is a guess: it would fail --max-risk anyway
        if not wants_llm(result, self.config):
            return result, None
        outcome = llm_repair(
            text,
            result,
            validator=validator,
            config=self.config,
            provider=self.provider,
            options=options,
            budget=self.budget,
            name=name,
        )
        self.calls += outcome.calls
        self.cached += outcome.cached
        self.input_tokens += outcome.input_tokens
        self.output_tokens += outcome.output_tokens
        cost = self.budget.cost_of(outcome.input_tokens, outcome.output_tokens)
        self.cost += cost
        spent = (outcome.calls, outcome.cached, outcome.input_tokens, outcome.output_tokens, cost)
        self.by_status.setdefault(outcome.result.status.value, Usage()).add(*spent)
        if group is not None:
            if group not in self.by_group and len(self.by_group) >= MAX_USAGE_GROUPS:
                group = "(other)"
            self.by_group.setdefault(group, Usage()).add(*spent)
        for diagnostic in outcome.result.diagnostics:
            if diagnostic.code in FAULT_CODES and diagnostic not in result.diagnostics:
                message, count = self.faults.get(diagnostic.code, (diagnostic.message, 0))
                self.faults[diagnostic.code] = (message, count + 1)
        return outcome.result, outcome.to_dict()

    def fix(
        self, outcome: Outcome, profiles: Mapping[str, Profile], max_risk: Risk | None
    ) -> Outcome:
        """`check --llm`: the outcome of one item, repaired by the model when the rules left
        it broken (tool calls are left to the rules)."""
        result = outcome.result
        item = outcome.item
        if result is None or item.tool is not None:
            return outcome
        profile = profiles[item.profile]
        repaired, _ = self.repair(
            item.text,
            result,
            validator=profile.validator,
            options=profile.options,
            name=item.id,
            max_risk=max_risk,
            group=None if item.group is None else str(item.group),
        )
        return outcome if repaired is result else replace(outcome, result=repaired)

    def fault_lines(self) -> list[str]:
        """One line per kind of provider fault: the code, how many responses, the first
        message."""
        return [
            f"{code}: {count} response{'' if count == 1 else 's'} not repaired by the "
            f"model: {message}"
            for code, (message, count) in self.faults.items()
        ]

    def summary(self) -> str:
        """``llm: N model calls, K from cache, X input + Y output tokens, $C`` (N: requests
        that reached the provider; K: answers the cache gave, only when there were some;
        the cost only when the model has a price)."""
        calls = self.calls
        cached = f"{self.cached} from cache, " if self.cached else ""
        cost = f", ${self.cost:.4f}" if self.priced else ""
        return (
            f"llm: {calls} model call{'' if calls == 1 else 's'}, {cached}"
            f"{self.input_tokens} input + {self.output_tokens} output tokens{cost}"
        )

    def usage_lines(self) -> list[str]:
        """One line per final status, then per group: responses, calls, tokens (cost)."""
        lines = []
        for title, table in (("status", self.by_status), ("group", self.by_group)):
            for key, usage in sorted(table.items()):
                cost = f", ${usage.cost:.4f}" if self.priced else ""
                lines.append(
                    f"llm: {title} {key}: {usage.responses} response"
                    f"{'' if usage.responses == 1 else 's'}, {usage.calls} call"
                    f"{'' if usage.calls == 1 else 's'}, {usage.input_tokens} input + "
                    f"{usage.output_tokens} output tokens{cost}"
                )
        return lines

    def usage(self) -> dict[str, Any]:
        """The run's usage for a report: in all, per final status, per group, and the
        budgets (and which one stopped the run)."""
        total = Usage(
            responses=sum(u.responses for u in self.by_status.values()),
            calls=self.calls,
            cached=self.cached,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost=self.cost,
        )
        budget = self.budget
        out: dict[str, Any] = {
            "provider": self.provider.name,
            "model": self.provider.model,
            **total.to_dict(self.priced),
            "by_status": {k: v.to_dict(self.priced) for k, v in sorted(self.by_status.items())},
            "budgets": {
                "calls": budget.limit,
                "tokens": budget.max_tokens,
                "cost": budget.max_cost,
                "spent": budget.spent_on,
            },
        }
        if self.by_group:
            out["by_group"] = {k: v.to_dict(self.priced) for k, v in sorted(self.by_group.items())}
        return out

    def close(self) -> None:
        self.provider.close()


def build_llm_run(settings: Settings, flags: Mapping[str, object]) -> LlmRun:
    """The run's LLM repair: the config's ``llm:`` settings < ``LLMFIX_*`` < ``flags`` (the
    LLM flags given; ``None``: not given). Whether it runs at all is decided before (see
    :attr:`llmfix.run.settings.Run.llm_enabled`)."""
    base = LlmConfig.from_mapping(settings.llm, source="config: llm")
    config = base.with_overrides(**env_llm_settings()).with_overrides(**flags)
    config.require_model()

    above = llm_ceiling_problems(config.to_dict())  # an untrusted file's were left out before
    if above:
        raise ConfigError(f"llm: {above[0]}")
    budget = CallBudget.for_config(config)  # an unpriced cost budget is refused here
    return LlmRun(config, make_provider(config), budget)
