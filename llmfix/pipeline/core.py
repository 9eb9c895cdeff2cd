"""The repair pipeline: normalize → extract → parse → select → validate → schema repair.

Each stage is a pure function in its own module; this module only wires them together,
maps every diagnostic's span back to the raw input, and decides the final status.

Time: each stage that may run long gets its own :class:`~llmfix.deadline.Deadline` of
``limits.time_budget`` seconds (extraction, with normalization, once per answer; the parse
of each candidate, made in :mod:`llmfix.parse.core`; schema repair of each value; the
schema-guided readings), which its loops check. A stage that runs out is a ``limits.time``
diagnostic naming it. A caller's own deadline (``llmfix check``'s item ``--timeout``) may
be passed as ``deadline``: every stage's deadline lies within it, and when it is that one
that ends, its :class:`~llmfix.deadline.OutOfTime` is raised to the caller.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from llmfix import codes
from llmfix.deadline import Deadline, OutOfTime
from llmfix.errors import SchemaError
from llmfix.gcpause import paused_gc
from llmfix.jsontext import NotStrict, nests_deeper, strict_or_not
from llmfix.model import (
    Candidate,
    Diagnostic,
    LineIndex,
    Result,
    Severity,
    Span,
    Status,
    Timings,
    build,
)
from llmfix.options import RepairOptions
from llmfix.parse.core import ParseOutcome, Placement, parse_json, relocate
from llmfix.pipeline.extract import broken_whole, extract_candidates, found_alone
from llmfix.pipeline.finish import Clock, finish, out_of_time, worthless
from llmfix.pipeline.guided_step import collected, guided_on, read_guided
from llmfix.pipeline.normalize import clean_payload, normalize_document
from llmfix.pipeline.select import ParsedCandidate, select_candidates
from llmfix.pipeline.stops import text_refused_result

if TYPE_CHECKING:
    from llmfix.schema.validate import SchemaValidator


def make_validator(schema: Any, *, allow_remote: bool = False) -> SchemaValidator | None:
    """A validator for a ``SchemaSpec``, a schema value, or ``None``.

    Checking a schema costs far more than validating a value with it, so compiled validators
    are kept: a caller passing the same schema dict (or the same ``SchemaSpec``) on every
    call gets its validator back by identity, after a comparison with a copy taken when it
    was compiled (a dict changed in place since is compiled again); an equal dict that is
    another object finds it by content.
    """
    if schema is None:
        return None
    key = (id(schema), allow_remote)
    hit = _BY_IDENTITY.get(key)
    if hit is not None and hit[0] is schema and _unchanged(schema, hit[1]):
        return hit[2]
    if isinstance(schema, (str, os.PathLike)):
        raise SchemaError(
            str(schema),
            "got a file name or string, not a schema: to use a schema file or a bundled "
            f"schema, pass schema=llmfix.load_schema({str(schema)!r})",
        )
    # (start-up: the schema modules load only for a run with a schema)
    from llmfix.schema.load import SchemaSpec, schema_from_value
    from llmfix.schema.pydantic_models import is_model, model_validator
    from llmfix.schema.validate import SchemaValidator

    if is_model(schema):  # a Pydantic model, dataclass, TypedDict or TypeAdapter
        return model_validator(schema, allow_remote)
    if isinstance(schema, SchemaSpec):
        made = SchemaValidator(schema, allow_remote=allow_remote)
        _remember(key, schema, schema.schema, made)
        return made
    # An equal schema that is another object: found by its content.
    content = json.dumps([allow_remote, schema], sort_keys=True, default=repr)
    found = _VALIDATORS.get(content)
    if found is None:
        found = SchemaValidator(schema_from_value(schema), allow_remote=allow_remote)
        if len(_VALIDATORS) >= _VALIDATOR_CACHE_SIZE:
            _VALIDATORS.pop(next(iter(_VALIDATORS)))
        _VALIDATORS[content] = found
    _remember(key, schema, schema, found)
    return found


def _unchanged(schema: Any, snapshot: Any) -> bool:
    """Whether ``schema`` (a dict or a ``SchemaSpec``) still equals the copy of its schema
    taken when it was compiled."""
    current = schema if isinstance(schema, (dict, bool)) else schema.schema
    return bool(current == snapshot)


def _remember(key: tuple[int, bool], schema: Any, content: Any, validator: Any) -> None:
    # The entry holds the schema object itself, so its id is not reused while it is kept.
    snapshot = copy.deepcopy(content)
    with _REMEMBERING:
        if len(_BY_IDENTITY) >= _VALIDATOR_CACHE_SIZE:
            _BY_IDENTITY.pop(next(iter(_BY_IDENTITY)))
        _BY_IDENTITY[key] = (schema, snapshot, validator)


_VALIDATOR_CACHE_SIZE = 32
_VALIDATORS: dict[str, SchemaValidator] = {}
_BY_IDENTITY: dict[tuple[int, bool], tuple[Any, Any, SchemaValidator]] = {}
_REMEMBERING = threading.Lock()


# Whether a text that begins like JSON and is not is parsed before extraction runs (see
# _read_candidates); off, extraction always runs first (tests compare the two).
ONE_VALUE = True


def _parse_candidate(
    candidate: Candidate,
    options: RepairOptions,
    validator: SchemaValidator | None,
    lines: LineIndex,
    clock: Clock,
    outer: Deadline | None = None,
    not_strict: NotStrict | None = None,
) -> ParsedCandidate:
    diagnostics: list[Diagnostic] = list(candidate.diagnostics)
    depth = options.limits.max_depth  # strict JSON deeper goes on to the parse, which says so

    def parse(text: str, within: Placement | None = None) -> ParseOutcome:
        # the parse makes its own deadline, when strict decoding fails, unless the
        # caller has one; diagnostics without positions unless placed ``within`` the
        # answer (else relocate() places them)
        deadline = (
            None if outer is None else Deadline(options.limits.time_budget, "parse", within=outer)
        )
        outcome = clock.run(
            "parse",
            lambda: parse_json(
                text,
                limits=options.limits,
                engine=options.engine,
                deadline=deadline,
                positions=False,
                not_strict=not_strict,
                within=within,
            ),
        )
        if outer is not None:
            outer.check()  # a limits.time that was the caller's deadline ending is the caller's
        return outcome

    if candidate.synthetic:
        outcome = parse(candidate.text)
        # A synthesised payload has no text of its own in the input: point at the envelope.
        diagnostics += [
            replace(
                d,
                span=candidate.span,
                position=lines.position(candidate.span.start),
                related=(),
                related_positions=(),
            )
            for d in outcome.diagnostics
        ]
    elif candidate.decoded is not None and not nests_deeper(
        candidate.text, candidate.decoded[0], depth
    ):
        outcome = ParseOutcome(True, candidate.decoded[0], True, ())
    elif (not_strict is None or not not_strict.covers(candidate.text)) and (
        strict := clock.run("parse", lambda: strict_or_not(candidate.text, depth))
    )[0]:
        # Strict JSON inside a fence or an envelope takes the whole-text fast path: no
        # cleaning (strict JSON has nothing to normalize outside its strings, and its
        # strings are kept as written, as they are for a whole text that is JSON).
        outcome = ParseOutcome(True, strict[1], True, ())
    else:
        payload = clock.run("normalize", lambda: clean_payload(candidate.text))
        diagnostics += relocate(payload.diagnostics, candidate.span.start, lines)
        if not payload.removed and payload.text is candidate.text:
            # (the parse places its diagnostics in the answer as it makes them)
            outcome = parse(payload.text, (candidate.span.start, lines))
            diagnostics += outcome.diagnostics
        else:
            outcome = parse(payload.text)
            mapped = [
                replace(
                    d,
                    span=Span(payload.to_source(d.span.start), payload.to_source(d.span.end)),
                    related=tuple(
                        Span(payload.to_source(r.start), payload.to_source(r.end))
                        for r in d.related
                    ),
                )
                if d.span is not None
                else d
                for d in outcome.diagnostics
            ]
            diagnostics += relocate(tuple(mapped), candidate.span.start, lines, fresh=True)
    schema_errors = None
    found: tuple[Diagnostic, ...] | None = None
    if validator is not None and outcome.ok:
        value = outcome.value
        found = clock.run(
            "validate", lambda: () if validator.is_valid(value) else tuple(validator.errors(value))
        )
        schema_errors = len(found)
    return build(  # (no frozen __init__: a field set at a time costs more than a parse)
        ParsedCandidate,
        candidate=candidate,
        ok=outcome.ok,
        value=outcome.value,
        strict=outcome.strict,
        diagnostics=tuple(diagnostics),
        schema_errors=schema_errors,
        schema_found=found,
    )


_STATUS_ORDER = list(Status)

# Parse repairs that mean words were taken for JSON, or text was dropped around a value.
_PROSE_READINGS = frozenset(
    {
        "parse.leading_text",
        "parse.trailing_text",
        "parse.stray_text",
        "parse.unquoted_string",
        "parse.json_repair",
    }
)


def strict_document(
    text: str,
    validator: SchemaValidator | None,
    options: RepairOptions,
    stages: dict[str, float],
    decoded: tuple[Any] | None = None,
) -> Result | ParsedCandidate | NotStrict | None:
    """The fast path: a whole text that is strict JSON (an object or array) is the value.

    Valid input never meets a heuristic, and pays for one decode and one validation: when
    the value is valid (or there is no schema) its :class:`Result` is made here, since
    nothing is left to finish; an invalid one comes back as its parsed candidate, for
    :func:`~llmfix.pipeline.finish.finish`. A text that begins like a value but is not strict
    gives its :class:`NotStrict`, so that no later stage decodes the same text again;
    any other text ``None``. ``stages`` gets the seconds of ``parse`` and ``validate``.
    ``decoded`` is ``(value,)`` when the caller decoded the text strictly already
    (``llmfix check``'s reader, ``Item.decoded``): it is taken, not decoded again.
    """
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return None
    clock = time.perf_counter
    begin = clock()
    # (a strict decode of the text is one of the stripped text: JSON's whitespace is
    # whitespace to strip(), and strip() leaves nothing else around a value that decodes)
    depth = options.limits.max_depth  # deeper: not taken here; the parse says so
    if decoded is None:
        ok, value = strict_or_not(stripped, depth)
    elif nests_deeper(stripped, decoded[0], depth):
        ok, value = False, NotStrict(stripped, RecursionError)
    else:
        ok, value = True, decoded[0]
    parsed = clock()
    stages["parse"] = parsed - begin
    if not ok:
        return cast(NotStrict, value)
    found: tuple[Diagnostic, ...] = ()
    if validator is not None:
        found = () if validator.is_valid(value) else tuple(validator.errors(value))
        stages["validate"] = clock() - parsed
    start = text.find(stripped[0])
    span = build(Span, start=start, end=start + len(stripped))
    candidate = build(Candidate, text=stripped, span=span, origin="whole")
    if not found:
        return build(
            Result,
            status=Status.VALID,
            value=value,
            diagnostics=tuple(worthless(value, text, validator, options, candidate)),
            patch=(),
            timings=build(Timings, stages=stages),
            candidate=candidate,
            values=(value,) if options.pick == "all" else None,
        )
    return build(
        ParsedCandidate,
        candidate=candidate,
        ok=True,
        value=value,
        strict=True,
        diagnostics=(),
        schema_errors=len(found),
        schema_found=found,
    )


def _reject_prose(parsed: ParsedCandidate) -> ParsedCandidate:
    """A text that does not look like JSON at all is prose, not a JSON string.

    A lenient parser can read ``Optional parts go in [square brackets].`` as a list, or
    (json-repair) ``I cannot help with that`` as a string; when extraction found nothing
    JSON-like, a value read by taking words for strings or dropping text around it is
    not a recovery. ``True``, ``.3`` or ``‘foo’`` still are.
    """
    if not parsed.ok or not any(d.code in _PROSE_READINGS for d in parsed.diagnostics):
        return parsed
    failure = codes.PARSE_FAILED.at(
        "no JSON value found: the text reads as prose",
        span=parsed.candidate.span,
        hint="the response holds no JSON object or array",
    )
    return replace(
        parsed, ok=False, value=None, diagnostics=(*parsed.diagnostics, failure), schema_found=None
    )


def _read_candidates(
    text: str,
    options: RepairOptions,
    validator: SchemaValidator | None,
    lines: LineIndex,
    clock: Clock,
    outer: Deadline | None = None,
    not_strict: NotStrict | None = None,
) -> tuple[list[Diagnostic], list[ParsedCandidate]] | Diagnostic:
    """Normalize, extract and parse every candidate: the document's diagnostics, and each
    candidate as parsed (or the ``limits.time`` of an extraction that ran out of time).
    ``not_strict``: the whole text's failed strict decode, when it was tried."""
    deadline = Deadline(options.limits.time_budget, "extract", within=outer)
    try:
        document = clock.run("normalize", lambda: normalize_document(text))
        deadline.check()  # normalization is linear and does not check as it goes
    except OutOfTime as stop:
        return out_of_time(stop, "extract")
    # A text that begins like JSON and is not is mostly one broken value: its parse comes
    # first, and when its repairs show that extraction would find it alone, extraction
    # is not run. Otherwise extraction finds it among the others, parsed already.
    whole = broken_whole(document, not_strict) if ONE_VALUE and options.engine == "llmfix" else None
    early = None
    if whole is not None:
        early = _parse_candidate(whole, options, validator, lines, clock, outer, not_strict)
        if found_alone(whole, document, (d.code for d in early.diagnostics)):
            return list(document.diagnostics), [early]
        deadline = Deadline(options.limits.time_budget, "extract", within=outer)
    try:
        candidates, extract_diags = clock.run(
            "extract",
            lambda: extract_candidates(document, deadline=deadline, not_strict=not_strict),
        )
    except OutOfTime as stop:
        return out_of_time(stop, "extract")
    if outer is not None:
        outer.check()  # between stages too: not every step of a stage checks
    diagnostics: list[Diagnostic] = list(document.diagnostics) + list(extract_diags)
    parsed = [
        early
        if early is not None and c == early.candidate
        else _parse_candidate(c, options, validator, lines, clock, outer, not_strict)
        for c in candidates
    ]
    if any(d.code == "extract.none" for d in extract_diags):
        parsed = [_reject_prose(p) for p in parsed]
    return diagnostics, parsed


def parse_candidates(
    text: str, options: RepairOptions | None = None
) -> tuple[list[Diagnostic], list[ParsedCandidate]]:
    """Every candidate in ``text``, parsed exactly as :func:`repair_text` parses it before
    choosing one (``llmfix extract`` shows these): what ``repair`` calls prose is not
    ``ok`` here either. Spans and positions are into ``text``. Pure."""
    options = options or RepairOptions()
    read = _read_candidates(text, options, None, LineIndex(text), Clock())
    if isinstance(read, Diagnostic):
        return [read], []
    return read


def repair_text(
    text: str,
    schema: Any = None,
    options: RepairOptions | None = None,
    *,
    validator: SchemaValidator | None = None,
    deadline: Deadline | None = None,
) -> Result:
    """Run the whole pipeline on one raw model response. Pure: no I/O, no printing.

    ``deadline`` is the caller's own (a batch item's): each stage's time budget ends no
    later than it does, and when it ends first its :class:`~llmfix.deadline.OutOfTime`
    propagates (a stage's own budget running out is a ``limits.time`` diagnostic instead).
    """
    options = options or RepairOptions()
    if validator is None:
        validator = make_validator(schema, allow_remote=options.allow_remote_refs)
    clock = Clock()
    lines = LineIndex(text)

    fast = strict_document(text, validator, options, clock.stages)
    if isinstance(fast, Result):
        return fast
    if isinstance(fast, ParsedCandidate):  # strict JSON, invalid
        status, value, fast_diagnostics, fast_patch = finish(
            fast, options, validator, clock, lines, deadline
        )
        fast_result = build(
            Result,
            status=status,
            value=value,
            diagnostics=tuple(fast_diagnostics),
            patch=tuple(fast_patch),
            timings=build(Timings, stages=clock.stages),
            candidate=fast.candidate,
            values=(value,) if options.pick == "all" else None,
        )
        if status is not Status.INVALID or not guided_on(validator, options):
            return fast_result
        return read_guided(text, fast_result, fast, options, validator, clock, lines, deadline)

    if len(text) > options.limits.max_size:
        # Checked before extraction, which is linear but slow enough on megabytes of
        # brackets that the limit would otherwise be reported seconds late.
        limit = options.limits.max_size
        too_large = codes.LIMITS_SIZE.at(
            f"input of {len(text):,} characters is over the {limit:,} character limit for repair",
            hint="raise --max-size to repair it anyway",
        )
        return Result(
            status=Status.UNPARSEABLE,
            value=None,
            diagnostics=(too_large,),
            timings=Timings(clock.stages),
        )

    with paused_gc():  # megabytes of broken text make millions of objects, and no cycles
        return _repair_lenient(text, options, validator, clock, lines, deadline, fast)


def _repair_lenient(
    text: str,
    options: RepairOptions,
    validator: SchemaValidator | None,
    clock: Clock,
    lines: LineIndex,
    deadline: Deadline | None,
    not_strict: NotStrict | None = None,
) -> Result:
    """Extract, parse, select and finish the candidates of a text that is not strict JSON."""
    read = _read_candidates(text, options, validator, lines, clock, deadline, not_strict)
    if isinstance(read, Diagnostic):
        return Result(
            status=Status.UNPARSEABLE,
            value=None,
            diagnostics=(read,),
            timings=Timings(clock.stages),
        )
    diagnostics, parsed = read
    if validator is not None and options.pick == "best" and options.guided and len(parsed) > 1:
        parsed += collected(parsed, validator, clock)
    chosen, select_diags = clock.run(
        "select", lambda: select_candidates(parsed, options.pick, text)
    )
    diagnostics += select_diags
    if deadline is not None:
        deadline.check()

    if not chosen:
        refused = _refused_in_words(text, clock)
        if refused is not None:
            return refused
        failures = [d for p in parsed for d in p.diagnostics if d.severity is Severity.ERROR]
        if not failures:
            failures = [
                codes.PARSE_FAILED.at(
                    "no JSON value found in the input",
                    hint="the response holds no JSON object, array or value to recover",
                )
            ]
        failed = Result(
            status=Status.UNPARSEABLE,
            value=None,
            diagnostics=tuple(diagnostics + failures),
            timings=Timings(clock.stages),
        )
        if not guided_on(validator, options):
            return failed
        return read_guided(text, failed, None, options, validator, clock, lines, deadline)

    finished = [finish(p, options, validator, clock, lines, deadline) for p in chosen]
    status = max((f[0] for f in finished), key=_STATUS_ORDER.index)
    all_diags = diagnostics + [d for f in finished for d in f[2]]
    all_patch = [op for f in finished for op in f[3]]
    values = tuple(f[1] for f in finished) if options.pick == "all" else None
    result = build(
        Result,
        status=status,
        value=finished[0][1] if values is None else list(values),
        diagnostics=tuple(all_diags),
        patch=tuple(all_patch),
        timings=build(Timings, stages=clock.stages),
        candidate=chosen[0].candidate,
        values=values,
    )
    if not guided_on(validator, options):
        return result
    return read_guided(
        text, result, chosen[0], options, validator, clock, lines, deadline, others=parsed
    )


def _refused_in_words(text: str, clock: Clock) -> Result | None:
    """``refused`` for an answer with no JSON value that is a refusal in words; it is not
    read around (no schema-guided reading takes the refusal for a string)."""
    # (start-up: loaded only for an answer with no JSON value)
    from llmfix.pipeline.refusals import text_refusal

    refusal = clock.run("select", lambda: text_refusal(text))
    if refusal is None:
        return None

    return replace(text_refused_result(refusal), timings=Timings(clock.stages))
