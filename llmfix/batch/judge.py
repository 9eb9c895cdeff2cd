"""What a ``check`` run makes of its outcomes: pass or fail, and the tallies.

:func:`judge` applies the gates (``--fail-on``, ``--max-risk``) and the baseline to an
outcome (a :class:`Checked`); :func:`stable_key` and :func:`fingerprints` name an item and
its problems the same way on every machine; :class:`BatchSummary` and :class:`Tally` count
what a run found, overall and per group. No printing, no file I/O here: the run feeds
reporters.
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from llmfix.batch.core import Fingerprint, Outcome
from llmfix.batch.gate import gate_failures
from llmfix.batch.hints import FieldHints as FieldHints  # cli/check.py imports it from here
from llmfix.model import (
    Diagnostic,
    Risk,
    Severity,
    build,
)

if TYPE_CHECKING:
    from llmfix.batch.gate import FailOn
    from llmfix.batch.rates import RateResults
    from llmfix.inputs import Item
    from llmfix.model import Result


@dataclass(frozen=True)
class Checked:
    """An outcome judged: why it fails the gates (if it does) and whether that is known."""

    outcome: Outcome
    failures: tuple[str, ...] = ()
    baselined: bool = False

    @property
    def failed(self) -> bool:
        """Fails the run: a gate failure the baseline does not already know about."""
        return bool(self.failures) and not self.baselined

    @property
    def item(self) -> Item:
        return self.outcome.item

    @property
    def status(self) -> str:
        return self.outcome.status


def fingerprints(item_key: str, status: str, diagnostics: Iterable[Diagnostic]) -> set[Fingerprint]:
    """What identifies an item's failure: its status and each error (code, JSON Pointer)."""
    found = {(item_key, "status", status)}
    found.update(
        (item_key, d.code, d.pointer or "") for d in diagnostics if d.severity is Severity.ERROR
    )
    return found


def key_root(config: str | None = None, start: str | None = None) -> str:
    """What baseline keys are relative to: the repository root (the nearest directory at or
    above ``start``, the working directory, holding ``.git``, as SARIF's URIs are), else the
    directory of the project ``config`` file, else the working directory."""
    here = os.path.realpath(start or os.getcwd())
    directory = here
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    if config is not None and not config.startswith("builtin:"):
        return os.path.dirname(os.path.realpath(config))
    return here


def stable_key(item: Item, root: str | None) -> str:
    """The item's :attr:`~llmfix.inputs.Item.key` with its file named relative to ``root``
    (``/`` separators), so that ``check data``, ``check $PWD/data`` and ``cd data; check .``
    give the same keys; a file outside ``root`` keeps its absolute path, stdin its name.
    With no ``root``: the key as the path was typed."""
    key, source = item.key, item.source
    if root is None or source.startswith("<") or not key.startswith(source):
        return key
    return _rooted_name(source, root, os.getcwd()) + key[len(source) :]


@functools.lru_cache(maxsize=256)
def _rooted_name(source: str, root: str, cwd: str) -> str:
    """``source`` (relative to ``cwd``) named relative to ``root``: once per file, which
    a JSONL file's records share (it looks at every link on the way)."""
    for path in (os.path.abspath(source), os.path.realpath(source)):
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            name = os.path.relpath(path, root)
            break
    else:
        name = os.path.realpath(source)
    return name.replace(os.sep, "/")


class Baseline:
    """Known failures from an earlier run: they are reported, but do not fail.

    Items are matched by their stable key (:func:`stable_key`: the batch ``custom_id``, the
    record's ``id``, or a hash of the answer, after the file's path relative to ``root``),
    so lines inserted above a known failure leave it known, and so does running from
    another directory. A baseline written before keys were relative to the root (its keys
    name files as they were typed then) still matches a run that names them the same way;
    one whose items have no ``key`` (written before keys existed) is matched by item id.
    """

    def __init__(self, known: set[Fingerprint], root: str | None = None) -> None:
        self.known = known
        self.root = root

    @classmethod
    def from_report(cls, report: Mapping[str, Any], root: str | None = None) -> Baseline:
        known: set[Fingerprint] = set()
        for entry in report.get("items") or []:
            if not isinstance(entry, Mapping):
                continue
            name = entry.get("key", entry.get("id"))
            if not isinstance(name, str):
                continue
            known.add((name, "status", str(entry.get("status"))))
            for diag in entry.get("diagnostics") or []:
                if isinstance(diag, Mapping) and diag.get("severity") == "error":
                    known.add((name, str(diag.get("code")), str(diag.get("pointer") or "")))
        return cls(known, root)

    def covers(self, outcome: Outcome) -> bool:
        item = outcome.item
        for name in (stable_key(item, self.root), item.key, item.id):
            if fingerprints(name, outcome.status, outcome.diagnostics) <= self.known:
                return True
        return False


def judge(
    outcome: Outcome,
    fail_on: FailOn = "invalid",
    max_risk: Risk | None = None,
    baseline: Baseline | None = None,
    *,
    partial: bool = False,
    codes: frozenset[str] = frozenset(),
) -> Checked:
    """Apply the gates and the baseline to one outcome (``partial``, ``codes``: see
    ``gate_failures``)."""
    if outcome.result is None:
        error = outcome.error
        failures: tuple[str, ...] = (f"not checked ({error.code})" if error else "not checked",)
    else:
        failures = tuple(
            gate_failures(outcome.result, fail_on, max_risk, partial=partial, codes=codes)
        )
    known = bool(failures) and baseline is not None and baseline.covers(outcome)
    return build(Checked, outcome=outcome, failures=failures, baselined=known)


# ------------------------------------------------------- judged in the workers

# Which items a run's reporters and writers read whole: every item, those failing a gate,
# or none (the summary alone: ``-q``).
Need = Literal["all", "failing", "none"]

# What a tally reads of one diagnostic: its code, whether it counts as a repair, whether
# it is an error, its JSON Pointer.
Counted = tuple[str, bool, bool, "str | None"]


def counted_diagnostics(diagnostics: Iterable[Diagnostic]) -> tuple[Counted, ...]:
    """What :meth:`Tally.count` reads of each diagnostic (an extraction is no repair)."""
    return tuple(
        (
            d.code,
            d.risk is not None and d.stage != "extract",
            d.severity is Severity.ERROR,
            d.pointer,
        )
        for d in diagnostics
    )


class Counts(NamedTuple):
    """What the summary counts of one item a worker judged: sent back in place of its
    result, which no reporter or writer of the run reads (a few dozen bytes, not a
    pickled :class:`~llmfix.model.Result` of kilobytes)."""

    status: str
    seconds: float
    failures: tuple[str, ...]
    diagnostics: tuple[Counted, ...]
    attempts: int


@dataclass(frozen=True)
class Tallied:
    """An item judged and counted in a worker: its summary counts, with the item."""

    item: Item
    counts: Counts

    @property
    def status(self) -> str:
        return self.counts.status


@dataclass(frozen=True)
class Judging:
    """What a worker needs to judge items itself, and which items it sends back whole.

    The gates (``--fail-on``, ``--max-risk``, ``--fail-on CODE``) as :func:`judge` applies
    them, and ``need``: which judged items the run's reporters and writers read
    (:meth:`llmfix.reporters.base.Reporter.needs`). An item the run does not need whole
    comes back as its :class:`Counts`. Only for items whose verdict depends on nothing
    but the result: no baseline, no stop reason, no bytes replaced by the reader.
    """

    fail_on: FailOn = "invalid"
    max_risk: Risk | None = None
    codes: frozenset[str] = frozenset()
    need: Need = "all"

    def counts(self, result: Result, seconds: float, *, partial: bool) -> Counts | None:
        """``result``'s counts, judged as :func:`judge` would; ``None`` when the run
        needs the item whole."""
        failures = tuple(
            gate_failures(result, self.fail_on, self.max_risk, partial=partial, codes=self.codes)
        )
        if self.need == "all" or (failures and self.need == "failing"):
            return None
        found = counted_diagnostics(result.diagnostics) if result.diagnostics else ()
        return Counts(result.status.value, seconds, failures, found, result.attempts)


_NOT_VALID = frozenset({"invalid", "truncated", "refused", "unparseable", "error"})


_MAX_KEYS = 2000  # distinct keys kept per counter; the rest are tallied as "(other)"


_INDEX = re.compile(r"/\d+(?=/|$)")


def pointer_pattern(pointer: str) -> str:
    """A JSON Pointer with array indices as ``*``: ``/items/3/name`` → ``/items/*/name``."""
    return _INDEX.sub("/*", pointer)


def _bump(counter: Counter[Any], key: Any, by: int = 1) -> None:
    if key in counter or len(counter) < _MAX_KEYS:
        counter[key] += by
    else:
        counter["(other)"] += by


@dataclass
class Tally:
    """Counts for a set of checked items (the whole run, or one ``--group-by`` group)."""

    items: int = 0
    status: Counter[str] = field(default_factory=Counter)
    repairs: Counter[str] = field(default_factory=Counter)  # items needing each repair code
    # (code, pointer pattern); the pattern is None for errors about no place in the value
    errors: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    # items with each diagnostic code, and with each family of codes (the rate gates' keys)
    codes: Counter[str] = field(default_factory=Counter)
    families: Counter[str] = field(default_factory=Counter)
    repairs_total: int = 0
    attempts: int = 0
    failed: int = 0
    baselined: int = 0
    seconds: float = 0.0

    def add(self, checked: Checked) -> None:
        outcome = checked.outcome
        result = outcome.result
        found = outcome.diagnostics if outcome.error or outcome.item.diagnostics else None
        if found is None:  # most items: the result's own, with no tuple made to hold them
            found = result.diagnostics if result is not None else ()
        self.count(
            outcome.status,
            outcome.seconds,
            checked.failed,
            checked.baselined and bool(checked.failures),
            counted_diagnostics(found) if found else (),
            result.attempts if result is not None else 0,
        )

    def count(
        self,
        status: str,
        seconds: float,
        failed: bool,
        baselined: bool,
        diagnostics: tuple[Counted, ...],
        attempts: int,
    ) -> None:
        """Count one item: what :meth:`add` reads of a judged outcome, or what a worker
        sent of one it judged itself (:class:`Counts`)."""
        self.items += 1
        self.status[status] += 1
        self.seconds += seconds
        self.failed += failed
        self.baselined += baselined
        repaired: set[str] = set()
        seen: set[str] = set()
        for code, repair, error, pointer in diagnostics:
            seen.add(code)
            if repair:
                self.repairs_total += 1
                repaired.add(code)
            elif error:
                where = None if pointer is None else pointer_pattern(pointer)
                _bump(self.errors, (code, where))
        for code in sorted(repaired):
            _bump(self.repairs, code)
        if seen:
            for code in seen:
                _bump(self.codes, code)
            for family in {code.partition(".")[0] for code in seen}:
                _bump(self.families, family)
        self.attempts += attempts

    @property
    def parsed(self) -> int:
        return self.items - sum(self.status[s] for s in ("unparseable", "refused", "error"))

    @property
    def valid(self) -> int:
        return sum(n for s, n in self.status.items() if s not in _NOT_VALID)

    def rate(self, count: int) -> float:
        return count / self.items if self.items else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "status": dict(sorted(self.status.items())),
            "parse_rate": round(self.rate(self.parsed), 4),
            "valid_rate": round(self.rate(self.valid), 4),
            "repairs": self.repairs_total,
            "repairs_per_item": round(self.repairs_total / self.items, 4) if self.items else 0.0,
            "items_by_repair": dict(self.repairs.most_common()),
            "errors": [
                {"code": code, "count": count}
                if pointer is None
                else {"code": code, "pointer": pointer, "count": count}
                for (code, pointer), count in self.errors.most_common()
            ],
            "items_by_code": dict(sorted(self.codes.items())),
            "items_by_family": dict(sorted(self.families.items())),
            "llm_attempts": self.attempts,
            "failed": self.failed,
            "baselined": self.baselined,
        }


@dataclass
class BatchSummary:
    """The whole run's tally, and one per ``--group-by`` value when grouping."""

    total: Tally = field(default_factory=Tally)
    groups: dict[str, Tally] | None = None
    seconds: float = 0.0  # wall-clock time of the run
    finished: str | None = None  # when the run ended (UTC, ISO 8601): orders a trend
    # the rate gates and the comparison with an earlier run, when the run has any
    rates: RateResults | None = None
    llm: dict[str, Any] | None = None  # the model's usage, when LLM repair ran (issue 36)

    @property
    def failed(self) -> bool:
        """Whether the run fails: by its rates when it has rate gates or fails on a
        regression (``--max-rate``, ``--fail-on-regression``), else by any item failing."""
        if self.rates is not None and (self.rates.gates or self.rates.fail_on_regression):
            return self.rates.failed
        return bool(self.total.failed)

    def add(self, checked: Checked) -> None:
        self.total.add(checked)
        if self.groups is not None:
            self._group(checked.item).add(checked)

    def add_tallied(self, tallied: Tallied) -> None:
        """Count an item a worker judged (see :class:`Judging`), as :meth:`add` would."""
        counts = tallied.counts
        fields = (counts.status, counts.seconds, bool(counts.failures), False)
        self.total.count(*fields, counts.diagnostics, counts.attempts)
        if self.groups is not None:
            self._group(tallied.item).count(*fields, counts.diagnostics, counts.attempts)

    def _group(self, item: Item) -> Tally:
        assert self.groups is not None
        key = item.group if item.group is not None else "(none)"
        if key not in self.groups and len(self.groups) >= _MAX_KEYS:
            key = "(other)"
        return self.groups.setdefault(key, Tally())

    def to_dict(self) -> dict[str, Any]:
        out = self.total.to_dict()
        out["seconds"] = round(self.seconds, 3)
        if self.finished is not None:
            out["finished"] = self.finished
        if self.groups is not None:
            out["groups"] = {k: v.to_dict() for k, v in sorted(self.groups.items())}
        if self.rates is not None:
            out["rates"] = self.rates.to_dict()
        if self.llm is not None:
            out["llm"] = self.llm
        return out

    def counts(self) -> dict[str, Any]:
        """The tallies as a JSON report's summary has them (what the rate gates read)."""
        return self.to_dict()
