"""A response's verdict: the worst status of its answers, the repairs made, and why it
fails the proxy's gate (``--max-risk``; a cut-off or refused answer always fails).

One response holds several answers (the text, each tool call); :func:`verdict_of` folds
their results into one :class:`Verdict`, which goes into the response's headers (or the
last event of a stream), the exchange log and the metrics.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llmfix.model import Result, Severity, Status

if TYPE_CHECKING:
    from collections.abc import Iterable

# ``status`` of a response none of whose answers the proxy checks (prose to a request
# that asked for no JSON, an upstream error).
UNCHECKED = "unchecked"
# What the proxy does with an answer that fails: send it marked, or answer an error.
POLICIES: tuple[str, ...] = ("pass", "error")
_ORDER = [s.value for s in Status]


@dataclass(frozen=True)
class Verdict:
    """What the proxy found in one response."""

    status: str = UNCHECKED  # a Status value, or UNCHECKED
    repairs: Counter[str] = field(default_factory=Counter)  # rule (or code) → times
    failures: tuple[str, ...] = ()  # why it fails the gate (empty: it passes)
    errors: tuple[str, ...] = ()  # the first error messages, for the client and the log

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def repair_count(self) -> int:
        return sum(self.repairs.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "passed": self.passed,
            "repairs": self.repair_count,
            "rules": dict(sorted(self.repairs.items())),
            "failures": list(self.failures),
            "errors": list(self.errors),
        }

    def headers(self) -> dict[str, str]:
        """The response headers that carry the verdict."""
        return {
            "x-llmfix-status": self.status,
            "x-llmfix-repairs": str(self.repair_count),
            "x-llmfix-passed": "true" if self.passed else "false",
        }


def repairs_in(result: Result) -> Counter[str]:
    """The repairs a result made, by rule, counted as ``llmfix check``'s summary counts
    them (finding the JSON in prose or a fence is not a repair)."""
    found: Counter[str] = Counter()
    for d in result.diagnostics:
        if d.risk is not None and d.stage != "extract":
            found[d.rule or d.code] += 1
    return found


def verdict_of(checked: Iterable[tuple[Result, list[str]]]) -> Verdict:
    """One verdict for the answers of a response: each result with its gate failures."""
    status = UNCHECKED
    repairs: Counter[str] = Counter()
    failures: list[str] = []
    errors: list[str] = []
    for result, failed in checked:
        made = repairs_in(result)
        # a structured tool call's check says "valid" for arguments a rule had to mend
        found = Status.REPAIRED.value if result.status is Status.VALID and made else None
        found = found or result.status.value
        if status == UNCHECKED or _ORDER.index(found) > _ORDER.index(status):
            status = found
        repairs += made
        failures += [f for f in failed if f not in failures]
        for d in result.diagnostics:
            if d.severity is Severity.ERROR and len(errors) < 5:
                where = f"{d.pointer}: " if d.pointer else ""
                errors.append(f"{d.code}: {where}{d.message}")
    return Verdict(status, repairs, tuple(failures), tuple(errors))
