"""The pipeline's schema-guided step: an answer the parser could not read as the JSON the
schema wants, read the way the schema says (:mod:`llmfix.guided`).

:func:`guided_on` says whether a run reads this way (a schema, ``guided`` on); :func:`collected`
gathers what the parse stage left for it; :func:`read_guided` tries the readings within the
stage's deadline and keeps the best, never better than ``truncated`` for a cut-off answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeGuard

from llmfix import codes
from llmfix.deadline import Deadline, OutOfTime
from llmfix.model import (
    Candidate,
    Diagnostic,
    LineIndex,
    PatchOp,
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
from llmfix.pipeline.select import (
    ParsedCandidate,
    choose_by_cue,
    collect_candidate,
    cues_before,
)

if TYPE_CHECKING:
    from llmfix.guided.reading import Refusal
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
    others: Sequence[ParsedCandidate] = (),
) -> Result:
    """The schema-guided reading of an answer the ordinary reading could not make valid.

    ``others``: every candidate parsed (the chosen one among them). A later value
    introduced as a correction that fits once repaired replaces the chosen one
    (:func:`_correction`); when the chosen value stays invalid, another JSON value of the
    answer that schema repair makes valid is taken (:func:`_other_candidate`); both before
    any reading of the text.

    Tried when the result is unparseable or invalid, when parsing invented keys the schema
    does not declare (a value split at its commas), or when parsing had to guess; the best
    reading that validates wins (see :mod:`llmfix.guided`) if it is no riskier than allowed,
    else the ordinary result stands, with any refusals added.

    One deadline bounds the readings and the schema repair of each (within ``outer``); when
    it ends, the ordinary result stands with ``limits.time`` added.
    """
    deadline = Deadline(options.limits.time_budget, "guided", within=outer)
    try:
        # Only where llmfix chose the value: --pick first|last|largest is the user's choice.
        others = others if options.pick == "best" else ()
        if chosen is not None and others and current.status is not Status.REFUSED:
            corrected = _correction(
                text, chosen, others, options, validator, clock, lines, deadline
            )
            if corrected is not None:
                return corrected
        if chosen is not None and current.status is Status.INVALID and others:
            found = _other_candidate(
                text, chosen, others, options, validator, clock, lines, deadline
            )
            if found is not None:
                return found
        return _guided(text, current, chosen, options, validator, clock, lines, deadline)
    except OutOfTime as stop:
        late = out_of_time(stop, "guided")
        return replace(
            current, diagnostics=(*current.diagnostics, late), timings=Timings(clock.stages)
        )


_MAX_OTHERS = 8  # other candidates schema repair is tried on


def _other_candidate(
    text: str,
    chosen: ParsedCandidate,
    others: Sequence[ParsedCandidate],
    options: RepairOptions,
    validator: SchemaValidator,
    clock: Clock,
    lines: LineIndex,
    deadline: Deadline,
) -> Result | None:
    """Another JSON value of the answer that fits the schema once repaired, where the one
    chosen does not: two fenced blocks, an unrelated object first, then ``["7", "8"]`` for an
    array of integers. One introduced as an example is never taken; of several that fit, the
    words before them decide (:func:`~llmfix.pipeline.select.choose_by_cue`), and without a
    cue the first is taken, a guess (``extract.no_cue``). Safe when the chosen value is not
    even of the type wanted (an unrelated value), a guess when it is (the model may have
    meant it, and got it wrong)."""
    pool = [
        p
        for p in others
        if p.ok
        and p is not chosen
        and not p.candidate.in_reasoning
        and p.candidate.origin != "whole"
        and not _overlaps(p.candidate.span, chosen.candidate.span)
    ]
    pool.sort(key=lambda p: p.candidate.span.start)
    fitting: list[tuple[ParsedCandidate, tuple[Status, Any, list[Diagnostic], list[PatchOp]]]] = []
    for p in pool[:_MAX_OTHERS]:
        if fitting and _overlaps(fitting[-1][0].candidate.span, p.candidate.span):
            continue  # a value inside one already taken (a fence's double-encoded content)
        done = finish(p, options, validator, clock, lines, deadline)
        if done[0] is not Status.INVALID and not any(v[1] == done[1] for _, v in fitting):
            fitting.append((p, done))
    # A value introduced as an example is not the answer, even one that fits.
    cues = cues_before(text, [chosen.candidate.span] + [p.candidate.span for p, _ in fitting])
    fitting = [f for f, cue in zip(fitting, cues[1:], strict=True) if cue != "example"]
    if not fitting:
        return None
    decided = choose_by_cue(text, [p.candidate.span for p, _ in fitting])
    index = decided[0] if decided is not None else 0
    p, (status, value, diagnostics, patch) = fitting[index]
    span = p.candidate.span
    # (start-up: the schema-guided readers load only when a reading is needed)
    from llmfix.guided import shape
    from llmfix.schema.walk import json_type

    kind = json_type(chosen.value)
    unrelated = not any(
        shape.wants(validator.schema, validator.schema, k)
        for k in ((kind, "number") if kind == "integer" else (kind,))
    )
    note = codes.GUIDED_CANDIDATE.at(
        f"the value at {span.start}-{span.end} fits the schema once repaired; the one at "
        f"{chosen.candidate.span.start}-{chosen.candidate.span.end} does not"
        + ("" if unrelated else " (though it is of the type wanted: a guess)")
        + (f" ({decided[1]})" if decided is not None else ""),
        span=span,
        rule="candidate",
        risk=Risk.SAFE if unrelated else Risk.GUESS,
        position=lines.position(span.start),
    )
    notes = [note]
    if decided is None and len(fitting) > 1:
        notes.append(
            codes.EXTRACT_NO_CUE.at(
                f"{len(fitting)} other values fit the schema once repaired and no words "
                "before them say which is the answer; took the first",
                span=span,
                risk=Risk.GUESS,
                position=lines.position(span.start),
                hint="ask the model for one value",
            )
        )
    return Result(
        status=status,
        value=value,
        diagnostics=(*notes, *diagnostics),
        patch=tuple(patch),
        timings=Timings(clock.stages),
        candidate=p.candidate,
    )


def _correction(
    text: str,
    chosen: ParsedCandidate,
    others: Sequence[ParsedCandidate],
    options: RepairOptions,
    validator: SchemaValidator,
    clock: Clock,
    lines: LineIndex,
    deadline: Deadline,
) -> Result | None:
    """A later value introduced as a correction (``Actually, correction:``) that fits the
    schema once repaired, where the value chosen came before it: it replaces that value even
    when the chosen one was valid as it stood and the correction needed a repair."""
    end = chosen.candidate.span.end
    later = sorted(
        (
            p
            for p in others
            if p.ok
            and not p.candidate.in_reasoning
            and p.candidate.origin != "whole"
            and p.candidate.span.start >= end
        ),
        key=lambda p: p.candidate.span.start,
    )
    top: list[ParsedCandidate] = []
    for p in later:  # one per value: not a value inside another
        if not top or not _overlaps(top[-1].candidate.span, p.candidate.span):
            top.append(p)
    if not top:
        return None
    cues = cues_before(text, [chosen.candidate.span] + [p.candidate.span for p in top])
    fixes = [p for p, cue in zip(top, cues[1:], strict=True) if cue == "correction"]
    if not fixes or fixes[-1].value == chosen.value:
        return None
    fix = fixes[-1]
    status, value, diagnostics, patch = finish(fix, options, validator, clock, lines, deadline)
    if status is Status.INVALID:
        return None
    span = fix.candidate.span
    note = codes.EXTRACT_CUE.at(
        f"took the value at {span.start}-{span.end}: introduced as a correction, it replaces "
        f"the one at {chosen.candidate.span.start}-{chosen.candidate.span.end}",
        span=span,
        risk=Risk.SAFE,
        position=lines.position(span.start),
        data={"chosen": span.to_dict(), "others": [chosen.candidate.span.to_dict()]},
    )
    return Result(
        status=status,
        value=value,
        diagnostics=(note, *diagnostics),
        patch=tuple(patch),
        timings=Timings(clock.stages),
        candidate=fix.candidate,
    )


def _no_reading_helps(
    text: str, chosen: ParsedCandidate, current: Result, validator: SchemaValidator
) -> bool:
    """Whether no reading of a strict JSON answer can make its invalid object valid, told
    without making them: schema repair changed nothing, and every error left is a required
    property missing that no repair rule can fill (the plan lists all errors, and
    :func:`~llmfix.schema.repair.nothing_to_repair` holds).

    A strict answer's readings only read mistyped strings inside the value (objects keep
    their keys, arrays their lengths), cut off an optional last key (never for a value
    that ends the text), unwrap an object of one key where no object is wanted, or wrap a
    value that is no object: none gives a missing property, and the objects missing one
    keep the keys that made schema repair leave them alone."""
    value = chosen.value
    if current.patch or not isinstance(value, dict) or not validator.plan_lists:
        return False
    errors = [d for d in current.diagnostics if d.code.startswith("schema.")]
    if not errors or any(d.code != "schema.required" for d in errors):
        return False
    # (start-up: both are loaded already: schema repair ran, and the readings' module)
    from llmfix.guided.values import cut_off_key, unwrap
    from llmfix.schema.repair import nothing_to_repair

    span = chosen.candidate.span
    schema = validator.schema
    return (
        cut_off_key(text, value, schema, span) is None
        and unwrap(value, schema, span, text) is None
        and nothing_to_repair(value, schema, errors)
    )


def _left_open(text: str, chosen: ParsedCandidate | None, refusals: list[Refusal]) -> bool:
    """Whether a guessed scalar reading stands where the answer names two allowed values
    (``guided.ambiguous``) and does not open with a clear verdict."""
    if chosen is None or isinstance(chosen.value, (dict, list)):
        return False
    if not any(r.code == "guided.ambiguous" for r in refusals):
        return False
    # (start-up: the schema-guided readers load only when a reading is needed)
    from llmfix.guided.scalars import opens_with_verdict

    return not opens_with_verdict(text)


def _refusal_note(refusal: Refusal, lines: LineIndex) -> Diagnostic:
    return codes.get(refusal.code).at(
        refusal.message,
        span=refusal.span,
        position=lines.position(refusal.span.start),
        hint="ask for one value, or for JSON",
        data=refusal.data,
    )


def _overlaps(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


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
    if (
        strict
        and chosen is not None
        and not cut
        and _no_reading_helps(text, chosen, current, validator)
    ):
        return current
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
    if not failed and _left_open(text, chosen, refusals):
        # "4 or 5": the parser took the first value and left the rest as trailing text, a
        # guess; the readings say the answer names two allowed values. It fails.
        notes += [_refusal_note(r, lines) for r in refusals]
        return Result(
            status=Status.UNPARSEABLE,
            value=None,
            diagnostics=(*current.diagnostics, *notes),
            timings=Timings(clock.stages),
        )
    for refusal in refusals if failed else ():  # an error only where nothing better was found
        notes.append(_refusal_note(refusal, lines))
    if not notes:
        return current
    return replace(
        current, diagnostics=(*current.diagnostics, *notes), timings=Timings(clock.stages)
    )
