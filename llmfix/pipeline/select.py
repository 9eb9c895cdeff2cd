"""Select stage: choose among parsed candidates.

Extraction never guesses which candidate the model meant; this stage does, by rules a
user can predict:

1. a candidate outside a reasoning block beats one inside it;
2. one that validates against the schema beats one that does not (then fewer errors);
3. the whole text, when it reads as JSON without dropping any of it, beats the pieces
   inside it: choosing ``{"a": 1}`` out of ``{"a": 1}, "b": 2}`` would silently lose
   ``b``, and ``{"a": 1} {"b": 2}`` reads as both values;
4. less risky repairs beat riskier ones, then fewer repairs;
5. an object or array beats a bare scalar (a JSON document double-encoded in a string
   is meant as the document);
6. the larger candidate, then the earlier one, wins.

Two different candidates that are both valid and needed no risky repair are reported
as ``extract.ambiguous`` (naming both spans) instead of being silently resolved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from llmfix import codes
from llmfix.model import Candidate, Diagnostic, Risk, Span, max_risk
from llmfix.options import Pick


@dataclass(frozen=True)
class ParsedCandidate:
    """A candidate after parsing (and, when there is a schema, a first validation)."""

    candidate: Candidate
    ok: bool
    value: Any
    strict: bool
    diagnostics: tuple[Diagnostic, ...]  # extraction, cleaning and parse diagnostics
    schema_errors: int | None = None  # None when no schema was given
    # the errors counted, when they were listed (finish() takes them instead of
    # validating the same value again)
    schema_found: tuple[Diagnostic, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def risk(self) -> Risk | None:
        return max_risk([d.risk for d in self.diagnostics])

    @property
    def repairs(self) -> int:
        return sum(1 for d in self.diagnostics if d.risk is not None and d.stage == "parse")

    @property
    def valid(self) -> bool:
        return self.ok and not self.schema_errors


def _contains(outer: Span, inner: Span) -> bool:
    return outer.start <= inner.start and inner.end <= outer.end


def _overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


# Repairs that mean the parser read part of the text as prose and left it out.
_DROPS_TEXT = frozenset({"parse.trailing_text", "parse.leading_text", "parse.stray_text"})


def _explains_all(p: ParsedCandidate) -> bool:
    return p.candidate.origin == "whole" and not any(d.code in _DROPS_TEXT for d in p.diagnostics)


def _rank(p: ParsedCandidate) -> tuple[Any, ...]:
    risk = p.risk
    span = p.candidate.span
    return (
        p.candidate.in_reasoning,
        p.schema_errors or 0,
        not _explains_all(p),
        risk.rank if risk is not None else -1,
        p.repairs,
        not isinstance(p.value, (dict, list)),
        -(span.end - span.start),
        span.start,
    )


def _dedupe(parsed: Sequence[ParsedCandidate]) -> list[ParsedCandidate]:
    """Drop a candidate that repeats the value of a better one over the same text."""
    kept: list[ParsedCandidate] = []
    for p in sorted(parsed, key=_rank):
        duplicate = any(
            k.value == p.value
            and type(k.value) is type(p.value)
            and (
                _contains(k.candidate.span, p.candidate.span)
                or k.candidate.span == p.candidate.span
            )
            for k in kept
        )
        if not duplicate:
            kept.append(p)
    return kept


def _clean(p: ParsedCandidate) -> bool:
    """Valid, and needing nothing riskier than lossless changes."""
    risk = p.risk
    return p.valid and (risk is None or risk is Risk.LOSSLESS)


def select_candidates(
    parsed: Sequence[ParsedCandidate], pick: Pick = "best"
) -> tuple[list[ParsedCandidate], list[Diagnostic]]:
    """Return the chosen candidate(s) (empty when none parsed) and selection diagnostics."""
    usable = [p for p in parsed if p.ok]
    if len(usable) == 1 and pick != "all":
        # the usual answer: one candidate, nothing to rank (ranking it walks every
        # diagnostic, and a broken megabyte has hundreds of thousands)
        return usable, []
    usable = _dedupe(usable)
    if not usable:
        return [], []
    diagnostics: list[Diagnostic] = []
    outside = [p for p in usable if not p.candidate.in_reasoning]
    pool = outside or usable

    if pick == "all":
        chosen = sorted(_top_level(pool), key=lambda p: p.candidate.span.start)
        return chosen, diagnostics
    if pick == "first":
        best = min(pool, key=lambda p: (p.candidate.span.start, _rank(p)))
    elif pick == "last":
        best = max(pool, key=lambda p: (p.candidate.span.start, [-x for x in _rank(p)[1:5]]))
    elif pick == "largest":
        best = min(pool, key=lambda p: (-(p.candidate.span.end - p.candidate.span.start), _rank(p)))
    else:
        best = min(pool, key=_rank)
        rivals = [
            p
            for p in pool
            if p is not best
            and _clean(p)
            and _clean(best)
            and p.value != best.value
            and not _overlaps(p.candidate.span, best.candidate.span)
        ]
        if rivals:
            other = rivals[0]
            diagnostics.append(
                codes.EXTRACT_AMBIGUOUS.at(
                    (
                        f"{len(rivals) + 1} different valid JSON values; chose the one at "
                        f"{best.candidate.span.start}-{best.candidate.span.end} "
                        f"({best.candidate.origin}) over "
                        f"{other.candidate.span.start}-{other.candidate.span.end} "
                        f"({other.candidate.origin})"
                    ),
                    span=best.candidate.span,
                    hint="use --pick first|last|largest|all to choose explicitly",
                    data={
                        "chosen": best.candidate.span.to_dict(),
                        "others": [r.candidate.span.to_dict() for r in rivals],
                    },
                )
            )
    return [best], diagnostics


def _top_level(pool: Sequence[ParsedCandidate]) -> list[ParsedCandidate]:
    """Candidates not nested inside a better-ranked one (for ``--pick all``)."""
    kept: list[ParsedCandidate] = []
    for p in sorted(pool, key=_rank):
        if not any(_overlaps(k.candidate.span, p.candidate.span) for k in kept):
            kept.append(p)
    return kept


def collect_candidate(
    parsed: Sequence[ParsedCandidate], fits: Callable[[Any], bool]
) -> ParsedCandidate | None:
    """Several top-level values collected into one array candidate (schema wants an array).

    The values are the parsed candidates outside reasoning blocks that no other candidate
    contains (the ``whole`` text, which contains them all, aside), in order; see
    :func:`llmfix.guided.collect_values`.
    """
    pool = sorted(
        (
            p
            for p in parsed
            if p.ok and not p.candidate.in_reasoning and p.candidate.origin != "whole"
        ),
        key=lambda p: (p.candidate.span.start, -p.candidate.span.end),
    )
    top: list[ParsedCandidate] = []
    for p in pool:
        if not top or not _overlaps(top[-1].candidate.span, p.candidate.span):
            top.append(p)
    if len(top) < 2:
        return None
    # (start-up: the schema-guided readers load only when a reading is needed)
    from llmfix.guided import collect_values

    reading = collect_values([(p.candidate.span, p.value) for p in top], fits)
    if reading is None:
        return None
    used = [p for p in top if fits(p.value)]
    note = codes.get(reading.code).at(
        reading.message,
        span=reading.span,
        rule=reading.code.split(".", 1)[1],
        risk=reading.risk,
    )
    lossless = tuple(d for p in used for d in p.diagnostics)
    return ParsedCandidate(
        candidate=Candidate("", reading.span, "guided:collect"),
        ok=True,
        value=reading.value,
        strict=False,
        diagnostics=(*lossless, note),
    )
