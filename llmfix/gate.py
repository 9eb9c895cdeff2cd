"""Gates: decide whether a result fails a run (``--fail-on``, ``--max-risk``)."""

from __future__ import annotations

from typing import Literal

from llmfix.model import Result, Risk, Status

FailOn = Literal["invalid", "repaired", "extracted"]
FAIL_ON: tuple[str, ...] = ("invalid", "repaired", "extracted")

# Which statuses fail under each --fail-on level (unparseable and invalid always fail).
_FAILING: dict[str, frozenset[Status]] = {
    "invalid": frozenset({Status.INVALID, Status.UNPARSEABLE}),
    "repaired": frozenset(
        {Status.INVALID, Status.UNPARSEABLE, Status.REPAIRED, Status.LLM_REPAIRED}
    ),
    "extracted": frozenset(
        {
            Status.INVALID,
            Status.UNPARSEABLE,
            Status.REPAIRED,
            Status.LLM_REPAIRED,
            Status.EXTRACTED,
        }
    ),
}


def gate_failures(
    result: Result, fail_on: FailOn = "invalid", max_risk: Risk | None = None
) -> list[str]:
    """Why ``result`` fails the gate (empty when it passes)."""
    reasons = []
    if result.status in _FAILING[fail_on]:
        reasons.append(f"status {result.status.value} (--fail-on {fail_on})")
    risk = result.risk
    if max_risk is not None and risk is not None and risk.rank > max_risk.rank:
        reasons.append(f"a {risk.value} repair was needed (--max-risk {max_risk.value})")
    return reasons
