"""The last steps of the pipeline for one chosen value: validate it, repair it against the
schema, place each diagnostic at its line:column, and decide the status.

Split from :mod:`llmfix.pipeline.core` (which wires the stages together) because both the
ordinary reading and the schema-guided readings finish their values here. Also here: the
per-stage clock behind ``Result.timings`` and the ``limits.time`` diagnostic of a stage
whose :class:`~llmfix.deadline.Deadline` ended.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from llmfix import codes
from llmfix.deadline import Deadline, OutOfTime
from llmfix.jsontext import ValueLocator
from llmfix.model import (
    Candidate,
    Diagnostic,
    LineIndex,
    PatchOp,
    Risk,
    Span,
    Status,
    build,
)
from llmfix.options import RepairOptions
from llmfix.pipeline.degenerate import degenerate
from llmfix.pipeline.partial import cut_off, drop_incomplete_tail, mark_missing, was_truncated
from llmfix.pipeline.select import ParsedCandidate

if TYPE_CHECKING:
    from llmfix.schema.validate import SchemaValidator

T = TypeVar("T")


class Clock:
    """Seconds spent per stage of one repair (``Result.timings``)."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}

    def run(self, stage: str, fn: Callable[[], T]) -> T:
        start = time.perf_counter()
        try:
            return fn()
        finally:
            self.stages[stage] = self.stages.get(stage, 0.0) + time.perf_counter() - start


READING_STAGES = ("parse", "guided")


def _changes_value(diagnostic: Diagnostic) -> bool:
    """A change to what the model wrote: a reading's repair, or a cleaning that is no
    lossless one (a NUL deleted inside a string)."""
    risk = diagnostic.risk
    if risk is None:
        return False
    return diagnostic.stage in READING_STAGES or (
        diagnostic.stage == "normalize" and risk is not Risk.LOSSLESS
    )


# The stages the pipeline gives a deadline of their own, as a message names them.
STAGE_NAMES = {
    "extract": "extraction",
    "schema_repair": "schema repair",
    "guided": "schema-guided reading",
}


def out_of_time(stop: OutOfTime, stage: str) -> Diagnostic:
    """``limits.time`` for a ``stage`` that ran out of its time budget.

    An :class:`OutOfTime` of another deadline (the caller's, which ended first) is not this
    stage's to report: it is raised on.
    """
    if stop.stage != stage:
        raise stop
    return codes.LIMITS_TIME.at(
        f"{STAGE_NAMES[stage]} took longer than the {stop.seconds:g} s time budget",
        hint="raise --time-budget to give it longer",
        stage=stage,
    )


def place_pointers(
    diagnostics: list[Diagnostic], candidate: Candidate, lines: LineIndex, strict: bool = False
) -> list[Diagnostic]:
    """Give each diagnostic that has a JSON Pointer but no span (a schema error, a schema
    repair) the span of that value in the input, so reports point at its line:column.
    ``strict``: the candidate's text is strict JSON (its root needs no reading)."""
    if not any(d.pointer is not None and d.span is None for d in diagnostics):
        return diagnostics
    locator = None
    if not candidate.synthetic:  # a synthesised payload is not in the input: its start
        locator = ValueLocator(candidate.text, whole=strict)
    out = []
    offset = candidate.span.start
    for d in diagnostics:
        if d.pointer is not None and d.span is None:
            # a moved (renamed) value is written where it came from
            source = d.data.get("from") if d.data is not None else None
            where = source if isinstance(source, str) else d.pointer
            found = locator.span(where) if locator is not None else None
            span = (
                Span(found[0] + offset, found[1] + offset)
                if found is not None
                else Span(offset, offset)
            )
            # (a copy made as build() makes one: dataclasses.replace costs several times more)
            d = build(
                Diagnostic, **{**d.__dict__, "span": span, "position": lines.position(span.start)}
            )
        out.append(d)
    return out


def worthless(
    value: Any,
    text: str,
    validator: SchemaValidator | None,
    options: RepairOptions,
    candidate: Candidate | None = None,
) -> list[Diagnostic]:
    """The degenerate-answer warnings of a finished ``value`` (:mod:`.degenerate`); placed
    in ``text`` when ``candidate`` is given (the fast path, which has no other to place)."""
    schema = validator.schema if validator is not None else None
    found = degenerate(value, text, schema, options.degenerate, options.disabled_rules)
    if found and candidate is not None:
        return place_pointers(found, candidate, LineIndex(text))
    return found


def finish(
    chosen: ParsedCandidate,
    options: RepairOptions,
    validator: SchemaValidator | None,
    clock: Clock,
    lines: LineIndex,
    outer: Deadline | None = None,
) -> tuple[Status, Any, list[Diagnostic], list[PatchOp]]:
    """Validate the chosen value, repair it against the schema (within ``outer``, the
    caller's deadline), and decide its status."""
    value = chosen.value
    diagnostics = list(chosen.diagnostics)
    patch: list[PatchOp] = []
    errors: list[Diagnostic] = []
    partial = options.partial and was_truncated(chosen.diagnostics)
    if partial:
        value, notes = drop_incomplete_tail(value, chosen.diagnostics)
        diagnostics += notes
    if validator is not None and (chosen.schema_errors != 0 or partial):
        found = chosen.schema_found
        if found is not None and not partial:  # listed when the candidate was validated
            errors = list(found)
        else:
            errors = clock.run("validate", lambda: validator.errors(value))
        if errors and options.schema_repair:
            # (start-up: schema repair loads only for a value that fails its schema)
            from llmfix.schema.repair import coerce_to_schema, nothing_to_repair

            outcome = None
            deadline = Deadline(options.limits.time_budget, "schema_repair", within=outer)
            # A value that only misses required properties no rule can fill is told from
            # its errors (all of them, as the plan lists them): no walk.
            listed = validator.plan_lists  # (then the errors are all there are)
            sure = listed and nothing_to_repair(value, validator.schema, errors)
            try:
                if not sure:
                    outcome = clock.run(
                        "schema_repair",
                        lambda: coerce_to_schema(
                            value,
                            validator.schema,
                            disabled_rules=options.disabled_rules,
                            max_risk=options.max_risk,
                            deadline=deadline,
                            copy=False,  # (the parsed value is the pipeline's own)
                            errors=errors if listed else None,
                        ),
                    )
            except OutOfTime as stop:
                diagnostics.append(out_of_time(stop, "schema_repair"))
            if outcome is not None and outcome.patch:
                value = outcome.value
                patch = list(outcome.patch)
                errors = clock.run("validate", lambda: validator.errors(value))
            if outcome is not None:
                diagnostics += outcome.diagnostics
    if partial:
        errors, missing = mark_missing(errors)
        diagnostics += missing
    diagnostics += errors
    diagnostics += worthless(value, lines.text, validator, options)  # valid, yet no data?
    # (a candidate read strictly with nothing to say about its text is strict JSON as written)
    strict = chosen.strict and not chosen.diagnostics
    diagnostics = place_pointers(diagnostics, chosen.candidate, lines, strict)

    cut = was_truncated(chosen.diagnostics)
    if cut:
        # The input ended inside the value: whatever its schema errors (listed all the
        # same), it is not the whole answer, and that is what a report must count.
        status = Status.TRUNCATED
    elif errors:
        status = Status.INVALID
    elif patch or any(_changes_value(d) for d in diagnostics):
        status = Status.REPAIRED
    elif (
        chosen.candidate.origin == "whole"
        and chosen.strict
        and not any(d.risk is not None for d in diagnostics)
    ):
        status = Status.VALID
    else:
        status = Status.EXTRACTED
    if cut:  # closed only because the input ended: never a clean repair, nor "invalid"
        diagnostics.append(cut_off(options.partial))
    if chosen.candidate.in_reasoning and status is not Status.INVALID:
        diagnostics.append(
            codes.EXTRACT_ONLY_IN_REASONING.at(
                "the only JSON value found is inside a reasoning block",
                span=chosen.candidate.span,
                hint="check that the model gave a final answer outside its reasoning",
            )
        )
    return status, value, diagnostics, patch
