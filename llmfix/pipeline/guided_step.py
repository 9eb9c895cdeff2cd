"""The pipeline's schema-guided step: an answer the parser could not read as the JSON the
schema wants, read the way the schema says (:mod:`llmfix.guided`).

:func:`guided_on` says whether a run reads this way (a schema, ``guided`` on); :func:`collected`
gathers what the parse stage left for it; :func:`read_guided` tries the readings within the
stage's deadline and keeps the best, never better than ``truncated`` for a cut-off answer.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, TypeGuard

from llmfix import codes
from llmfix.deadline import Deadline, OutOfTime
from llmfix.model import (
    Candidate,
    Diagnostic,
    LineIndex,
    Result,
    Risk,
    Span,
    Status,
    Timings,
    max_risk,
)
from llmfix.options import RepairOptions
from llmfix.pipeline.degenerate import RULE_IDS as DEGENERATE_RULES
from llmfix.pipeline.finish import Clock, finish, out_of_time
from llmfix.pipeline.normalize import normalize_document
from llmfix.pipeline.partial import cut_off
from llmfix.pipeline.select import ParsedCandidate, collect_candidate

if TYPE_CHECKING:
    from llmfix.schema.validate import SchemaValidator


_GUESS_RANK = Risk.GUESS.rank


def _schema_errors(result: Result) -> bool:
    return any(d.code.startswith("schema.") for d in result.errors)


def _still_cut(reading: Result, options: RepairOptions) -> Result:
    """A schema-guided reading of a cut-off answer: its value (what arrived, read the way the
    schema says), still ``truncated`` and still saying so (``parse.cut_off``). Never a clean
    ``repaired``: truncation outranks whatever a reading made of the text."""
    return replace(
        reading,
        status=Status.TRUNCATED,
        diagnostics=(*reading.diagnostics, cut_off(options.partial)),
    )


def guided_on(
    validator: SchemaValidator | None, options: RepairOptions
) -> TypeGuard[SchemaValidator]:
    """Whether the schema-guided readings may run: a schema, and one value wanted."""
    return validator is not None and options.guided and options.pick != "all"


def collected(
    parsed: list[ParsedCandidate], validator: SchemaValidator, clock: Clock
) -> list[ParsedCandidate]:
    """Several JSON values where the schema wants an array: one more candidate, the array."""
    # (start-up: the schema-guided readers load only when a reading is needed)
    from llmfix.guided import wants_array

    if not wants_array(validator.schema):
        return []

    found = clock.run(
        "guided", lambda: collect_candidate(parsed, lambda v: validator.is_valid([v]))
    )
    if found is None:
        return []
    value = found.value
    errors = clock.run("validate", lambda: 0 if validator.is_valid(value) else 1)
    return [replace(found, schema_errors=errors)]


_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n]*$", re.MULTILINE)


def _only_json(text: str, span: Span) -> bool:
    """Whether nothing but whitespace and fence lines lies outside ``span``."""
    outside = text[: span.start] + "\n" + text[span.end :]
    return not _FENCE_LINE.sub("", outside).strip()


def read_guided(
    text: str,
    current: Result,
    chosen: ParsedCandidate | None,
    options: RepairOptions,
    validator: SchemaValidator,
    clock: Clock,
    lines: LineIndex,
    outer: Deadline | None = None,
) -> Result:
    """The schema-guided reading of an answer the ordinary reading could not make valid.

    Tried when the result is unparseable or invalid, when parsing invented keys the schema
    does not declare (a value split at its commas), or when parsing had to guess; the best
    reading that validates wins (see :mod:`llmfix.guided`) if it is no riskier than allowed,
    else the ordinary result stands, with any refusals added.

    One deadline bounds the readings and the schema repair of each (within ``outer``); when
    it ends, the ordinary result stands with ``limits.time`` added.
    """
    deadline = Deadline(options.limits.time_budget, "guided", within=outer)
    try:
        return _guided(text, current, chosen, options, validator, clock, lines, deadline)
    except OutOfTime as stop:
        late = out_of_time(stop, "guided")
        return replace(
            current, diagnostics=(*current.diagnostics, late), timings=Timings(clock.stages)
        )


def _guided(
    text: str,
    current: Result,
    chosen: ParsedCandidate | None,
    options: RepairOptions,
    validator: SchemaValidator,
    clock: Clock,
    lines: LineIndex,
    deadline: Deadline,
) -> Result:
    """:func:`read_guided` within its ``deadline``."""
    # (start-up: the schema-guided readers load only when a reading is needed)
    from llmfix.guided import invented_keys

    # How risky a reading may be to replace the current result: anything that validates
    # when it failed; no riskier than it when parsing invented undeclared keys; strictly
    # less risky when parsing had to guess.
    if current.status is Status.REFUSED:
        return current  # a refused answer is reported as such, never read around
    # A cut-off answer stays truncated whatever is read (see _still_cut); only one whose
    # value still violates the schema has anything to gain from another reading.
    cut = current.status is Status.TRUNCATED
    if cut and not _schema_errors(current):
        return current
    failed = cut or current.status in (Status.UNPARSEABLE, Status.INVALID)
    if failed or (chosen is not None and invented_keys(chosen, validator.schema)):
        ceiling = _GUESS_RANK
    elif current.risk is Risk.GUESS:
        ceiling = _GUESS_RANK - 1
    else:
        return current
    if any(d.code == "limits.time" and d.stage == "schema_repair" for d in current.diagnostics):
        return current  # every reading would need the schema repair that ran out of time
    # An answer that is strict JSON (alone, or alone in a fence) is never re-read as text;
    # only its mistyped strings are. Prose or tags around a JSON value may still say more.
    strict = chosen is not None and chosen.strict and _only_json(text, chosen.candidate.span)
    ordinary = (chosen.value, chosen.candidate.span) if chosen is not None and chosen.ok else None
    document = normalize_document(text) if not strict else None  # its reasoning blocks
    reasoning = document.reasoning if document is not None else ()
    # (start-up: the schema-guided readers load only when a reading is needed)
    from llmfix.guided import read_answer

    readings, refusals = clock.run(
        "guided",
        lambda: read_answer(
            text,
            validator.schema,
            reasoning,
            ordinary,
            text_readings=not strict,
            # Re-reading strings inside a JSON value redoes schema repair's coercions;
            # a user who turned a rule off is not overruled by another path (a check for
            # degenerate answers is no such rule).
            in_values=not options.disabled_rules.difference(DEGENERATE_RULES),
            deadline=deadline,
        ),
    )
    notes: list[Diagnostic] = []
    best: tuple[tuple[int, int, int], Result] | None = None
    for order, reading in enumerate(readings):
        diagnostic = codes.get(reading.code).at(
            reading.message,
            span=reading.span,
            rule=reading.code.split(".", 1)[1],
            risk=reading.risk,
            position=lines.position(reading.span.start),
        )
        if options.max_risk is not None and reading.risk.rank > options.max_risk.rank:
            notes.append(
                codes.GUIDED_REFUSED.instead_of(
                    diagnostic,
                    message=f"not taken: {reading.message} (a {reading.risk.value} reading; "
                    f"--max-risk {options.max_risk.value})",
                    rule=None,
                    risk=None,
                    data={"reading": reading.code, "value": reading.value},
                )
            )
            continue
        if reading.risk.rank > ceiling or (
            best is not None and (reading.risk.rank, 0, order) > best[0]
        ):
            continue  # it cannot be taken, or cannot beat the best so far: not validated
        # synthetic: the text read is not the JSON of the value (no pointer is looked up in it)
        candidate = Candidate(
            text[reading.span.start : reading.span.end], reading.span, "guided", synthetic=True
        )
        parsed = ParsedCandidate(candidate, True, reading.value, False, (diagnostic,), None)
        status, value, diagnostics, patch = finish(
            parsed, options, validator, clock, lines, deadline
        )
        if status is Status.INVALID:
            continue
        risk = max_risk([d.risk for d in diagnostics] + [op.risk for op in patch])
        key = (risk.rank if risk is not None else -1, len(patch), order)
        if key[0] <= ceiling and (best is None or key < best[0]):
            result = Result(
                status=status,
                value=value,
                diagnostics=(*(document.diagnostics if document else ()), *diagnostics),
                patch=tuple(patch),
                timings=Timings(clock.stages),
                candidate=candidate,
            )
            best = (key, result)
    if best is not None:
        found = _still_cut(best[1], options) if cut else best[1]
        return replace(found, timings=Timings(clock.stages))
    for refusal in refusals if failed else ():  # an error only where nothing better was found
        notes.append(
            codes.get(refusal.code).at(
                refusal.message,
                span=refusal.span,
                position=lines.position(refusal.span.start),
                hint="ask for one value, or for JSON",
                data=refusal.data,
            )
        )
    if not notes:
        return current
    return replace(
        current, diagnostics=(*current.diagnostics, *notes), timings=Timings(clock.stages)
    )
