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
from llmfix.llm.config import LlmConfig
from llmfix.llm.loop import CallBudget, llm_repair, needs_llm
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
class LlmRun:
    """One provider (its connections, what a server refused) and one call budget shared by
    every response of the run; request and token totals."""

    config: LlmConfig
    provider: Provider
    budget: CallBudget
    calls: int = 0  # HTTP requests that reached the model
    cached: int = 0  # answers taken from the cache
    input_tokens: int = 0
    output_tokens: int = 0
    # provider faults seen (FAULT_CODES): code → first message and the number of
    # responses they hit; shown at every verbosity
    faults: dict[str, tuple[str, int]] = field(default_factory=dict)

    def repair(
        self,
        text: str,
        result: Result,
        *,
        validator: SchemaValidator | None,
        options: RepairOptions | None,
        name: str,
        max_risk: Risk | None = None,
    ) -> tuple[Result, dict[str, Any] | None]:
        """The model's repair of ``text`` when the rules left it broken, and its record."""
        if max_risk is not None and max_risk is not Risk.GUESS:
            return result, None  # a model's answer is a guess: it would fail --max-risk anyway
        if not needs_llm(result):
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
        """``llm: N model calls, K from cache, X input + Y output tokens`` (N: requests that
        reached the provider; K: answers the cache gave, only when there were some)."""
        calls = self.calls
        cached = f"{self.cached} from cache, " if self.cached else ""
        return (
            f"llm: {calls} model call{'' if calls == 1 else 's'}, {cached}"
            f"{self.input_tokens} input + {self.output_tokens} output tokens"
        )

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
    return LlmRun(config, make_provider(config), CallBudget(config.max_calls))
