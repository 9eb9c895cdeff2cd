"""Gates on rates, comparison with an earlier run, and series of runs (issue 35).

A ``check`` run over thousands of answers is judged by rates as well as by items:
``--max-rate invalid=2%`` fails the run when more than 2 % of its answers are invalid,
``--max-rate 'model=gpt-4o-mini:invalid=2%'`` when more than 2 % of that group's are, and
``--compare OLD.json --fail-on-regression`` when a rate rose since an earlier run by more
than the noise of two samples explains. Each rate is shown with its Wilson interval
(:func:`llmfix.stats.wilson`); each change with its two-proportion test, corrected for the
number of rates compared (:func:`llmfix.stats.holm`).

Everything here reads the counts of a run as its JSON report's ``summary`` has them
(:meth:`llmfix.batch.judge.BatchSummary.to_dict`): a rate of this run and one of last
week's report are counted the same way. A rate's *key* is a status (``invalid``,
``truncated``, ...), ``failing`` (the items that fail the item gate: ``--fail-on``,
``--max-risk``, not in the baseline), a diagnostic code (``degenerate.placeholder``) or a
family of codes (``degenerate``): the share of items with at least one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llmfix import codes
from llmfix.errors import ConfigError
from llmfix.model import Status
from llmfix.stats import Change, holm, two_proportions, wilson

# The statuses an item can end with (the model's, then ``error``: not checked).
STATUS_KEYS: tuple[str, ...] = (*(status.value for status in Status), "error")
# Statuses whose rise is a regression (the others are good, or neutral).
BAD_STATUSES = frozenset({"truncated", "invalid", "refused", "unparseable", "error"})
FAILING = "failing"
ALL = "*"  # a gate on every group


def _percent(text: str, spec: str) -> float:
    """``2%``, ``2`` or ``0.5%`` as a fraction (0.02, 0.02, 0.005)."""
    number = text.strip().removesuffix("%").strip()
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 100.0:
        raise ConfigError(f"--max-rate {spec}: {text.strip()!r} is not a percentage from 0 to 100")
    return value / 100.0


def check_key(key: str, where: str) -> str:
    """``key`` if it names a rate (a status, ``failing``, a code or a family of codes);
    a :class:`ConfigError` naming the nearest one otherwise."""
    key = key.strip()
    if key in STATUS_KEYS or key == FAILING or key in codes.CODES or key in codes.FAMILIES:
        return key
    import difflib

    known = [*STATUS_KEYS, FAILING, *codes.FAMILIES, *codes.CODES]
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(
        f"{where}: {key!r} is not a status, 'failing', a code or a family of codes{hint}"
    )


@dataclass(frozen=True)
class RateGate:
    """One ``--max-rate``: the share of items with ``key`` must be at most ``limit``, in
    the whole run (``group`` None), in the group ``group``, or in every group (``*``)."""

    spec: str
    key: str
    limit: float
    group: str | None = None

    @classmethod
    def parse(cls, spec: str, group_by: str | None) -> RateGate:
        """``[FIELD=GROUP:]KEY=PCT``; FIELD must be the run's ``--group-by``."""
        # The gate is after the last colon (a group's value may hold colons: llama3:8b).
        head, colon, gate = spec.rpartition(":")
        key, equals, percent = gate.partition("=")
        field, is_group, value = head.partition("=")
        if not equals or not key.strip() or (colon and (not is_group or not field.strip())):
            raise ConfigError(
                f"--max-rate {spec}: expected KEY=PCT (invalid=2%) or "
                "FIELD=GROUP:KEY=PCT (model=gpt-4o-mini:invalid=2%)"
            )
        key = check_key(key, f"--max-rate {spec}")
        limit = _percent(percent, spec)
        group = None
        if colon:
            wanted = field.strip()
            if group_by is None:
                raise ConfigError(f"--max-rate {spec}: a group's gate needs --group-by {wanted}")
            if wanted != group_by:
                raise ConfigError(
                    f"--max-rate {spec}: the run groups by {group_by!r}, not {wanted!r}"
                )
            group = value.strip() or ALL
        return cls(spec.strip(), key, limit, group)


def parse_gates(specs: Iterable[str], group_by: str | None) -> tuple[RateGate, ...]:
    return tuple(RateGate.parse(spec, group_by) for spec in specs)


def count(tally: Mapping[str, Any], key: str) -> int:
    """How many items of a summary's tally (a ``to_dict``) have ``key``."""
    if key == FAILING:
        found = tally.get("failed", 0)
    elif key in STATUS_KEYS:
        found = (tally.get("status") or {}).get(key, 0)
    elif "." in key:
        found = (tally.get("items_by_code") or {}).get(key, 0)
    else:
        found = (tally.get("items_by_family") or {}).get(key, 0)
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def items(tally: Mapping[str, Any]) -> int:
    found = tally.get("items", 0)
    return found if isinstance(found, int) and not isinstance(found, bool) else 0


def pct(rate: float) -> str:
    """A rate as a percentage with the digits it needs: 2%, 2.5%, 0.13%."""
    value = rate * 100.0
    if value == 0.0 or value >= 10.0:
        return f"{value:.1f}%".replace(".0%", "%")
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return f"{text}%"


@dataclass(frozen=True)
class GateResult:
    """One gate applied to one group (``group`` None: the whole run)."""

    gate: RateGate
    group: str | None
    count: int
    items: int
    low: float
    high: float
    confidence: float

    @property
    def rate(self) -> float:
        return self.count / self.items if self.items else 0.0

    @property
    def over(self) -> bool:
        """The rate measured is above the limit."""
        return self.rate > self.gate.limit

    @property
    def surely_over(self) -> bool:
        """Even the interval's lower bound is above the limit."""
        return self.low > self.gate.limit

    def failed(self, significant_only: bool) -> bool:
        return self.surely_over if significant_only else self.over

    def where(self) -> str:
        return "all items" if self.group is None else f"group {self.group}"

    def describe(self) -> str:
        """``invalid in all items: 3% (30 of 1,000; 95% CI 2.1%–4.3%), max 2%: over by
        1 point``."""
        level = pct(self.confidence)
        text = (
            f"{self.gate.key} in {self.where()}: {pct(self.rate)} ({self.count:,} of "
            f"{self.items:,}; {level} CI {pct(self.low)}–{pct(self.high)}), max "
            f"{pct(self.gate.limit)}"
        )
        if self.over:
            points = f"{(self.rate - self.gate.limit) * 100.0:.2g}"
            text += f": over by {points} point{'' if points == '1' else 's'}"
            if not self.surely_over:
                text += " (within the noise of the sample)"
        return text

    def to_dict(self, significant_only: bool) -> dict[str, Any]:
        return {
            "gate": self.gate.spec,
            "key": self.gate.key,
            "group": self.group,
            "limit": self.gate.limit,
            "count": self.count,
            "items": self.items,
            "rate": round(self.rate, 6),
            "interval": [round(self.low, 6), round(self.high, 6)],
            "failed": self.failed(significant_only),
            "message": self.describe(),
        }


def evaluate(
    gates: Sequence[RateGate], summary: Mapping[str, Any], confidence: float = 0.95
) -> list[GateResult]:
    """Every gate applied to ``summary`` (a ``BatchSummary.to_dict()``): one result per
    gate, or per group for a ``*`` gate."""
    groups: Mapping[str, Any] = summary.get("groups") or {}
    out = []
    for gate in gates:
        if gate.group is None:
            targets: list[tuple[str | None, Mapping[str, Any]]] = [(None, summary)]
        elif gate.group == ALL:
            targets = list(groups.items())
        else:
            targets = [(gate.group, groups.get(gate.group) or {})]
        for name, tally in targets:
            n, k = items(tally), count(tally, gate.key)
            low, high = wilson(k, n, confidence)
            out.append(GateResult(gate, name, k, n, low, high, confidence))
    return out


# ---------------------------------------------------------------- comparison


def bad_key(key: str) -> bool:
    """Whether a rise of ``key`` is a regression: a failing status, ``failing``, or a code
    that is an error or a warning."""
    if key == FAILING or key in BAD_STATUSES:
        return True
    code = codes.CODES.get(key)
    return code is not None and code.severity.value in ("error", "warning")


@dataclass(frozen=True)
class Compared:
    """One rate then and now, in the whole run (``group`` None) or one group."""

    group: str | None
    key: str
    change: Change
    significant: bool
    regression: bool

    def describe(self) -> str:
        c = self.change
        where = "all items" if self.group is None else f"group {self.group}"
        verdict = "significant" if self.significant else "not significant"
        if self.regression:
            verdict = "significant rise: a regression"
        return (
            f"{self.key} in {where}: {pct(c.rate_before)} ({c.before:,} of {c.n_before:,}) → "
            f"{pct(c.rate_after)} ({c.after:,} of {c.n_after:,}), p = {c.p_value:.2g}, {verdict}"
        )

    def to_dict(self) -> dict[str, Any]:
        c = self.change
        return {
            "group": self.group,
            "key": self.key,
            "before": {"count": c.before, "items": c.n_before, "rate": round(c.rate_before, 6)},
            "after": {"count": c.after, "items": c.n_after, "rate": round(c.rate_after, 6)},
            "z": round(c.z, 4),
            "p_value": round(c.p_value, 6),
            "significant": self.significant,
            "regression": self.regression,
        }


def _keys(*tallies: Mapping[str, Any]) -> list[str]:
    """The rates worth comparing: every status either run has, ``failing``, every code."""
    found: set[str] = set()
    for tally in tallies:
        # (a report is input: only names, never a key YAML read as a number)
        found.update(k for k, n in (tally.get("status") or {}).items() if n and isinstance(k, str))
        found.update(
            k for k, n in (tally.get("items_by_code") or {}).items() if n and isinstance(k, str)
        )
    order = {key: i for i, key in enumerate(STATUS_KEYS)}
    statuses = sorted((k for k in found if k in order), key=order.__getitem__)
    return [*statuses, FAILING, *sorted(k for k in found if k not in order)]


def compare(
    before: Mapping[str, Any], after: Mapping[str, Any], confidence: float = 0.95
) -> list[Compared]:
    """Each rate of ``before`` and ``after`` (summaries, as :func:`evaluate` takes), over
    all items and per group both runs have; significant by the two-proportion test at
    ``1 - confidence``, Holm-corrected over every rate compared."""
    pairs: list[tuple[str | None, Mapping[str, Any], Mapping[str, Any]]] = [(None, before, after)]
    old_groups: Mapping[str, Any] = before.get("groups") or {}
    new_groups: Mapping[str, Any] = after.get("groups") or {}
    pairs += [(g, old_groups[g], new_groups[g]) for g in sorted(new_groups) if g in old_groups]
    rows: list[tuple[str | None, str, Change]] = []
    for group, old, new in pairs:
        n_old, n_new = items(old), items(new)
        for key in _keys(old, new):
            rows.append(
                (group, key, two_proportions(count(old, key), n_old, count(new, key), n_new))
            )
    significant = holm([c.p_value for _, _, c in rows], 1.0 - confidence)
    return [
        Compared(group, key, change, sure, sure and change.delta > 0 and bad_key(key))
        for (group, key, change), sure in zip(rows, significant, strict=True)
    ]


def check_summary(report: Any, where: str) -> dict[str, Any]:
    """The ``summary`` of a ``-f json`` report of a check run; a :class:`ConfigError`
    naming ``where`` when ``report`` is no such report."""
    summary = report.get("summary") if isinstance(report, Mapping) else None
    if not isinstance(summary, Mapping) or not isinstance(summary.get("status"), Mapping):
        raise ConfigError(f"{where}: not a -f json report of a check run (no summary)")
    if not isinstance(summary.get("items"), int):
        raise ConfigError(f"{where}: not a -f json report of a check run (no item count)")
    groups = summary.get("groups")
    if groups is not None and not (
        isinstance(groups, Mapping) and all(isinstance(g, Mapping) for g in groups.values())
    ):
        raise ConfigError(f"{where}: its summary's groups are not tallies")
    return dict(summary)


@dataclass(frozen=True)
class RunPoint:
    """One run of a series (``llmfix trend``, ``check --history``): its name (the report's
    file name), when it finished, and its summary (as the JSON report has it)."""

    name: str
    finished: str | None
    summary: Mapping[str, Any]


# ---------------------------------------------------------------- the run's verdict


@dataclass
class RateResults:
    """What a run's rate gates and comparison found (``BatchSummary.rates``)."""

    gates: list[GateResult] = field(default_factory=list)
    significant_only: bool = False  # --max-rate fails only when surely over
    comparison: list[Compared] | None = None
    compared_with: str | None = None  # the earlier report's name
    fail_on_regression: bool = False
    confidence: float = 0.95

    @property
    def failed_gates(self) -> list[GateResult]:
        return [g for g in self.gates if g.failed(self.significant_only)]

    @property
    def regressions(self) -> list[Compared]:
        return [c for c in self.comparison or () if c.regression]

    @property
    def failed(self) -> bool:
        """The run fails by its rates: a gate, or (``--fail-on-regression``) a regression."""
        return bool(self.failed_gates) or (self.fail_on_regression and bool(self.regressions))

    def reasons(self) -> list[str]:
        """One line per gate failed and per regression that fails the run."""
        out = [f"--max-rate {g.gate.spec}: {g.describe()}" for g in self.failed_gates]
        if self.fail_on_regression:
            out += [f"regression: {c.describe()}" for c in self.regressions]
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"confidence": self.confidence, "failed": self.failed}
        if self.gates:
            out["gates"] = [g.to_dict(self.significant_only) for g in self.gates]
        if self.comparison is not None:
            out["comparison"] = {
                "with": self.compared_with,
                "fail_on_regression": self.fail_on_regression,
                "rates": [c.to_dict() for c in self.comparison],
            }
        return out
