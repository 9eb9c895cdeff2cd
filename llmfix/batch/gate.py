"""Gates: decide whether a result fails a run (``--fail-on``, ``--max-risk``).

One :class:`Gate` serves `repair` and `check` alike: it parses the flags, narrows the
repair options so that no schema rule riskier than ``--max-risk`` is applied, and says
whether a result may be written out (stdout, ``-o``, ``--in-place``, ``--write-fixed``):
only what passes the gate ever is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, cast

from llmfix.errors import ConfigError
from llmfix.model import Result, Risk, Status
from llmfix.options import RepairOptions

FailOn = Literal["invalid", "repaired", "extracted"]
FAIL_ON: tuple[str, ...] = ("invalid", "repaired", "extracted")

# Which statuses fail under each --fail-on level (unparseable, refused, invalid and
# truncated always fail; truncated counts as repaired when partial output is accepted and
# what arrived has no error).
_ALWAYS = frozenset({Status.INVALID, Status.UNPARSEABLE, Status.REFUSED})
_FAILING: dict[str, frozenset[Status]] = {
    "invalid": _ALWAYS,
    "repaired": _ALWAYS | {Status.REPAIRED, Status.LLM_REPAIRED},
    "extracted": _ALWAYS | {Status.REPAIRED, Status.LLM_REPAIRED, Status.EXTRACTED},
}


def gate_failures(
    result: Result,
    fail_on: FailOn = "invalid",
    max_risk: Risk | None = None,
    *,
    partial: bool = False,
    codes: frozenset[str] = frozenset(),
) -> list[str]:
    """Why ``result`` fails the gate (empty when it passes).

    A ``truncated`` result always fails, unless ``partial`` (``--partial``: the run asked
    for what is complete of a cut-off answer) and what arrived has no error (a value of the
    wrong type, say: truncation outranks schema errors in the status, not in the gate);
    then it counts as ``repaired``. ``codes``: diagnostic codes or families (``--fail-on
    degenerate``) whose every diagnostic fails the result, a warning too.
    """
    reasons = []
    if result.status is Status.TRUNCATED:
        errors = len(result.errors)
        if not partial:
            reasons.append("the answer was cut off (pass --partial to keep what is complete)")
        elif errors:
            reasons.append(
                f"the answer was cut off, and what arrived has {errors} "
                f"error{'s' if errors != 1 else ''}"
            )
        elif fail_on != "invalid":
            reasons.append(f"status truncated (--fail-on {fail_on})")
    elif result.status in _FAILING[fail_on]:
        reasons.append(f"status {result.status.value} (--fail-on {fail_on})")
    risk = result.risk
    if max_risk is not None and risk is not None and risk.rank > max_risk.rank:
        reasons.append(f"a {risk.value} repair was needed (--max-risk {max_risk.value})")
    if codes:  # --fail-on degenerate, --fail-on degenerate.placeholder: warnings that fail
        named = sorted(
            {d.code for d in result.diagnostics if d.code in codes or _family(d.code) in codes}
        )
        reasons += [f"{code} (--fail-on {_named(code, codes)})" for code in named]
    return reasons


def _family(code: str) -> str:
    return code.partition(".")[0]


def _named(code: str, codes: frozenset[str]) -> str:
    return code if code in codes else _family(code)


def parse_fail_on(value: str) -> tuple[FailOn, frozenset[str]]:
    """``--fail-on``: a level (``invalid``, ``repaired``, ``extracted``) and diagnostic
    codes or families that fail an item whatever their severity, comma-separated
    (``repaired,degenerate``); a :class:`ConfigError` for anything else."""
    # (start-up: the registry of codes loads only when --fail-on names one)
    level = "invalid"
    named: set[str] = set()
    levels = 0
    for part in (p.strip() for p in str(value).split(",")):
        if part in FAIL_ON:
            level, levels = part, levels + 1
            continue
        from llmfix import codes

        if part in codes.CODES or part in codes.FAMILIES:
            named.add(part)
            continue
        raise ConfigError(
            f"--fail-on must be one of {', '.join(FAIL_ON)} (or diagnostic codes or "
            f"families, comma-separated: repaired,degenerate), not {part!r}"
        )
    if levels > 1:
        raise ConfigError(f"--fail-on names one level of {', '.join(FAIL_ON)}, not {value!r}")
    return cast(FailOn, level), frozenset(named)


@dataclass(frozen=True)
class Gate:
    """``--fail-on`` and ``--max-risk`` of one run (``codes``: the codes and families
    ``--fail-on`` names besides its level)."""

    fail_on: FailOn = "invalid"
    max_risk: Risk | None = None
    codes: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, fail_on: str = "invalid", max_risk: str | Risk | None = None) -> Gate:
        """The gate the flags name; :class:`~llmfix.errors.ConfigError` for a bad value."""
        level, named = parse_fail_on(fail_on)
        risk = None
        if isinstance(max_risk, Risk):
            risk = max_risk
        elif max_risk is not None:
            try:
                risk = Risk.parse(max_risk)
            except ValueError as exc:
                raise ConfigError(f"--max-risk: {exc}") from None
        return cls(level, risk, named)

    def options(self, options: RepairOptions) -> RepairOptions:
        """``options`` with no schema rule above ``--max-risk`` (a riskier one never helps:
        the result would fail the gate, and its value could not be written)."""
        wanted = self.max_risk
        if wanted is None or (
            options.max_risk is not None and options.max_risk.rank <= wanted.rank
        ):
            return options
        return replace(options, max_risk=wanted)

    def failures(self, result: Result) -> list[str]:
        """Why ``result`` fails this gate (empty when it passes)."""
        return gate_failures(result, self.fail_on, self.max_risk, codes=self.codes)


def writable(result: Result, failures: Sequence[str]) -> bool:
    """Whether ``result``'s value may be written out (stdout, ``-o``, ``--in-place``,
    ``--write-fixed``): it passed the gate (``failures`` is empty) and has a value."""
    return not failures and (result.ok or result.value is not None)
