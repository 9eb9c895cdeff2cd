"""Hints about a ``check`` run's records: a ``--field`` or ``--group-by`` that names nothing
(a typo), or, without ``--field``, records whose answer is plainly one of their fields.

:class:`FieldHints` watches the items as :func:`llmfix.batch.pool.run_items` checks them and says
what it saw, one line each; no printing here.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import TYPE_CHECKING, Any

from llmfix.inputs import closest_field, field_tokens

if TYPE_CHECKING:
    from llmfix.inputs import Item

_ANSWER_LIKE = re.compile(r"[{\[]|```")
_SAMPLED = 1000  # records looked at for shapes and suggestions; counting goes on


@dataclass
class FieldHints:
    """Watches a run's records for a ``--field`` or ``--group-by`` that names nothing
    (a typo: ``outptu``) and, without ``--field``, for records whose answer is plainly
    one of their fields. :meth:`hints` says so, one line each; no printing here."""

    field: str | None = None
    group_by: str | None = None
    records: int = 0
    missing_field: int = 0
    missing_group: int = 0
    suggestions: Counter[tuple[str, str]] = dataclass_field(default_factory=Counter)
    shape: frozenset[str] | None = None  # the key set every whole record has so far
    mixed: bool = False  # records of different shapes (or not objects) were seen
    answers: set[str] | None = None  # string fields that looked like an answer in every one
    _last: tuple[str, int] | None = None

    def add(self, item: Item) -> None:
        where = (item.source, item.line)
        if where == self._last or (item.record is None and item.error is None):
            return
        self._last = where
        self.records += 1
        record = item.record
        error = item.error.code if item.error is not None else None
        if self.field is not None and error == "input.missing_field":
            self.missing_field += 1
            self._suggest("--field", self.field, record)
        if self.group_by is not None and item.group is None and record is not None:
            self.missing_group += 1
            self._suggest("--group-by", self.group_by, record)
        if self.field is None and item.kind == "record":
            self._watch_shape(record)
        elif self.field is None:
            self.mixed = True

    def _suggest(self, flag: str, spec: str, record: Any) -> None:
        if self.records > _SAMPLED:
            return

        close = closest_field(record, field_tokens(spec))
        if close is not None:
            self.suggestions[(flag, close)] += 1

    def _watch_shape(self, record: Any) -> None:
        if self.mixed or self.records > _SAMPLED:
            return
        if not isinstance(record, dict):
            self.mixed = True
            return
        keys = frozenset(str(k) for k in record)
        if self.shape is None:
            self.shape = keys
        elif keys != self.shape:
            self.mixed = True
            return
        found = {str(k) for k, v in record.items() if isinstance(v, str) and _ANSWER_LIKE.search(v)}
        self.answers = found if self.answers is None else self.answers & found

    def hints(self) -> list[str]:
        found = []
        for flag, spec, missing in (
            ("--field", self.field, self.missing_field),
            ("--group-by", self.group_by, self.missing_group),
        ):
            if spec is None or not missing:
                continue
            if flag == "--group-by" and missing < self.records and not self.suggestions:
                continue  # some records have it: the rest are a real "(none)" group
            wanted = [s for (f, s), _ in self.suggestions.most_common() if f == flag]
            close = f" (did you mean {flag} {wanted[0]}?)" if wanted else ""
            found.append(
                f"{flag} {spec}: {missing:,} of {self.records:,} records have no such field{close}"
            )
        if (
            self.field is None
            and not self.mixed
            and self.shape
            and self.answers is not None
            and len(self.answers) == 1
            and self.records > 1
        ):
            [name] = self.answers
            fields = ", ".join(sorted(self.shape))
            found.append(
                f"every record has the fields {fields}; {name!r} holds what looks like the "
                f"answer: to check only it, pass --field {name}"
            )
        return found
