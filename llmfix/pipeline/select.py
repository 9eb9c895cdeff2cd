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
as ``extract.ambiguous`` (naming both spans) instead of being silently resolved, unless
the words just before them say which is the answer (:func:`choose_by_cue`,
``extract.cue``): a value introduced as a correction (``Actually, correction:``) replaces the
ones before it, one introduced as an example (``For example``) is not the answer, one
introduced as the answer (``Extracted:``, ``Final answer:``) is. With a schema, two values
that both fit and no cue is a guess (``extract.no_cue``, risk ``guess``).
"""

from __future__ import annotations

import re
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


# What the words just before a value may say about it (looked for in that order).
_CUES = (
    (
        "correction",
        re.compile(
            r"\b(?:actually|correction|corrected|revised|updated?|instead|on second thought|"
            r"my mistake|sorry|oops|wait|fixed)\b"
        ),
    ),
    (
        "example",
        re.compile(
            r"\b(?:for example|for instance|e\.g\.|example|such as|sample|template|"
            r"illustration|looks? like|input)\b|\bformat\b(?!\w)"
        ),
    ),
    (
        "answer",
        re.compile(
            r"\b(?:answer|extracted|extraction|result|output|final|solution|actual|"
            r"here(?: is|'s) the (?:json|data|object|value|list))\b"
        ),
    ),
)
_LEAD = 160  # characters before a value where its cue may be


def _cue(text: str, start: int, floor: int) -> str | None:
    """What the words before ``start`` (after ``floor``, the end of the value before it)
    introduce the value as: ``correction``, ``example``, ``answer`` or nothing."""
    lead = text[max(floor, start - _LEAD) : start]
    lead = lead.rstrip().rsplit("\n\n", 1)[-1].casefold()  # the paragraph before the value
    for name, pattern in _CUES:
        if pattern.search(lead):
            return name
    return None


def cues_before(text: str, spans: Sequence[Span]) -> list[str | None]:
    """What the words before each value (their spans, in any order) introduce it as:
    ``correction``, ``example``, ``answer`` or nothing. The words looked at for a value
    begin after the value before it."""
    order = sorted(range(len(spans)), key=lambda i: spans[i].start)
    cues: list[str | None] = [None] * len(spans)
    floor = 0
    for i in order:
        cues[i] = _cue(text, spans[i].start, floor)
        floor = max(floor, spans[i].end)
    return cues


def choose_by_cue(text: str, spans: Sequence[Span]) -> tuple[int, str] | None:
    """Which of several values (their spans, in any order) the prose says is the answer,
    and why; ``None`` when no cue decides (or there is only one)."""
    if len(spans) < 2:
        return None
    order = sorted(range(len(spans)), key=lambda i: spans[i].start)
    cues = cues_before(text, spans)
    corrections = [i for i in order if cues[i] == "correction"]
    if corrections:
        return corrections[-1], "introduced as a correction, it replaces the value before it"
    kept = [i for i in order if cues[i] != "example"]
    if len(kept) == 1:
        return kept[0], "the other value is introduced as an example"
    answers = [i for i in kept if cues[i] == "answer"]
    if len(answers) == 1:
        return answers[0], "introduced as the answer"
    return None


def _distinct(first: ParsedCandidate, rivals: Sequence[ParsedCandidate]) -> list[ParsedCandidate]:
    """``first`` and the rivals whose spans overlap none kept before them (one per value)."""
    kept = [first]
    for p in sorted(rivals, key=lambda p: p.candidate.span.start):
        if not any(_overlaps(k.candidate.span, p.candidate.span) for k in kept):
            kept.append(p)
    return kept


def select_candidates(
    parsed: Sequence[ParsedCandidate], pick: Pick = "best", text: str | None = None
) -> tuple[list[ParsedCandidate], list[Diagnostic]]:
    """Return the chosen candidate(s) (empty when none parsed) and selection diagnostics.

    ``text``: the answer the candidates were found in, for the cues before them."""
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
        fitting = _distinct(best, rivals) if rivals else []
        decided = (
            choose_by_cue(text, [p.candidate.span for p in fitting])
            if fitting and text is not None
            else None
        )
        if decided is not None:
            index, why = decided
            picked = fitting[index]
            diagnostics.append(
                codes.EXTRACT_CUE.at(
                    f"{len(fitting)} different valid values; took the one at "
                    f"{picked.candidate.span.start}-{picked.candidate.span.end}: {why}",
                    span=picked.candidate.span,
                    risk=Risk.SAFE,
                    data={
                        "chosen": picked.candidate.span.to_dict(),
                        "others": [p.candidate.span.to_dict() for p in fitting if p is not picked],
                    },
                )
            )
            return [picked], diagnostics
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
            if best.schema_errors is not None:  # both fit the schema: taking one is a guess
                diagnostics.append(
                    codes.EXTRACT_NO_CUE.at(
                        "both values fit the schema and no words before them say which "
                        "is the answer (a correction, an example, 'Answer:')",
                        span=best.candidate.span,
                        risk=Risk.GUESS,
                        hint="ask the model for one value",
                    )
                )
        elif text is not None and best.schema_errors == 0:
            example = _only_an_example(text, best, pool)
            if example is not None:
                diagnostics.append(example)
    return [best], diagnostics


def _only_an_example(
    text: str, best: ParsedCandidate, pool: Sequence[ParsedCandidate]
) -> Diagnostic | None:
    """A note at risk ``guess`` when the one value that fits the schema is introduced as an
    example and the answer holds another value that is not: the answer meant may be the
    other one, which does not fit."""
    others = [
        p
        for p in _distinct(best, [p for p in pool if p is not best])[1:]
        if p.candidate.origin != "whole"
    ]
    if not others:
        return None
    cues = cues_before(text, [best.candidate.span] + [p.candidate.span for p in others])
    if cues[0] != "example" or all(cue == "example" for cue in cues[1:]):
        return None
    return codes.EXTRACT_CUE.at(
        "the one value that fits the schema is introduced as an example; taken, as a guess "
        "(another value of the answer, not an example, does not fit)",
        span=best.candidate.span,
        risk=Risk.GUESS,
        hint="ask the model for one value",
    )


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
