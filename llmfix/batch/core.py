"""One item through a ``check`` run: its text checked by the pipeline, within its limits.

:func:`check_item` and :func:`check_text` run the pipeline on one item's text, with what
its API response said applied (a refusal, a cut-off answer) and its tool calls checked;
:func:`strict_valid` is the lean path for a text that is strict JSON and valid. A
:class:`Profile` is what every item of one kind is checked with (options, schema, tools);
an :class:`Outcome` is one item's result.

Per-item limits: an item longer than ``max_item_size`` characters is not checked
(``batch.too_large``); one that takes longer than ``item_timeout`` seconds is stopped
(``batch.timeout``). The timeout is a :class:`~llmfix.deadline.Deadline` for the item that
every stage's own deadline lies within, so the item stops at the first check after
whichever ends first: the stages' loops check (see :mod:`llmfix.deadline`), nothing is
interrupted from outside, and work that does not check (reading the file, strict decoding,
schema validation) is not cut short. The same holds in any thread. An exception inside the
pipeline is the item's error (``batch.crash``), never the end of the run.

Many items are run by :mod:`llmfix.batch.pool` and judged by :mod:`llmfix.batch.judge`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.batch.hints import FieldHints as FieldHints  # cli/check.py imports it from here
from llmfix.deadline import Deadline, OutOfTime
from llmfix.inputs.items import reading_notes, with_reading_changes
from llmfix.model import (
    Diagnostic,
    LineIndex,
    Position,
    Result,
    Status,
    build,
)
from llmfix.options import RepairOptions
from llmfix.pipeline.core import repair_text, strict_document
from llmfix.pipeline.stops import apply_finish, refused_result

if TYPE_CHECKING:
    from llmfix.inputs import Item
    from llmfix.schema.validate import SchemaValidator
    from llmfix.toolcalls.registry import ToolRegistry

STAGE = "batch"

# Below this much serial work (seconds) a run stays in one process; measured in
# bench/bench_batch.py (see bench/README.md, "Batch").
SERIAL_BUDGET = 0.5


@dataclass(frozen=True)
class Profile:
    """How one group of items is checked: the schema, the tool registry, the options.

    ``tool_calls`` (``--tool-calls``): an answer's text is read for tool calls in any known
    format and checked against ``registry`` when there is one (names and arguments are
    not checked without it), instead of being read as one JSON value.
    """

    validator: SchemaValidator | None = None
    options: RepairOptions = field(default_factory=RepairOptions)
    tools: Mapping[str, SchemaValidator] | None = None
    tool_calls: bool = False
    registry: ToolRegistry | None = None
    outputs: Mapping[str, SchemaValidator] | None = None  # tool name → output schema


@dataclass(frozen=True)
class BatchLimits:
    """Execution bounds (``-j``, ``--timeout``, ``--max-item-size``)."""

    jobs: int = 0  # 0: every core
    item_timeout: float | None = 60.0
    max_item_size: int = 10_000_000
    serial_budget: float = SERIAL_BUDGET
    window: int = 0  # chunks in flight; 0: two per worker
    # Bytes of the files to read, when known (0: not known): the pool starts as soon as
    # what is left plainly pays for it, not after the whole serial budget (see run_items).
    input_size: int = 0


@dataclass(frozen=True)
class Outcome:
    """What checking one item gave: a result, or the error that stopped it."""

    item: Item
    result: Result | None
    error: Diagnostic | None = None
    anchor: Position | None = None  # where the chosen JSON starts in the item's text
    seconds: float = 0.0

    @property
    def status(self) -> str:
        return self.result.status.value if self.result is not None else "error"

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        found = list(self.item.diagnostics)
        if self.error is not None:
            found.append(self.error)
        if self.result is not None:
            found.extend(self.result.diagnostics)
        return tuple(found)


def check_text(
    text: str, profile: Profile, tool: str | None = None, *, deadline: Deadline | None = None
) -> Result:
    """Check one text with a profile.

    ``tool`` is set (``""`` for a call with no name) when the text is a tool call's
    arguments: they are checked against that tool's schema from the profile's registry
    (``tools.unknown_name`` when it has none by that name), or only parsed without one.
    ``deadline`` is the item's: every stage's time budget ends no later than it, and when
    it ends first, :class:`~llmfix.deadline.OutOfTime` is raised.
    """
    if tool is None and profile.tool_calls:
        # (start-up: the tool-call readers load only for a run that reads tool calls)
        from llmfix.toolcalls import check_tool_calls

        options = profile.options
        return _stopped_by(
            check_tool_calls(
                text,
                profile.registry,
                max_risk=options.max_risk,
                schema_repair=options.schema_repair,
                disabled_rules=options.disabled_rules,
                time_budget=_budget_within(options.limits.time_budget, deadline),
            ),
            deadline,
        )
    validator = profile.validator
    unknown: Diagnostic | None = None
    if tool is not None:  # a tool call's arguments: the tool's schema, not the answer's
        # (start-up: the tool-call readers load only for a run that reads tool calls)
        from llmfix.toolcalls.base import valid_name

        validator = None
        if not valid_name(tool):  # no tool can have that name: an error, registry or not
            unknown = _bad_name(tool)
        elif profile.tools:
            validator = profile.tools.get(tool)
            if validator is None:
                unknown = _unknown_tool(tool, profile.tools)
    result = repair_text(text, options=profile.options, validator=validator, deadline=deadline)
    if unknown is None:
        return result
    from dataclasses import replace

    status = Status.INVALID if result.status.ok else result.status
    return replace(result, status=status, diagnostics=(*result.diagnostics, unknown))


def _budget_within(budget: float, deadline: Deadline | None) -> float:
    """A stage's ``--time-budget`` for a callee that makes its own deadline from it: no
    longer than what is left of ``deadline`` (which raises if nothing is)."""
    if deadline is None or not deadline.limited:
        return budget
    deadline.check()
    left = max(deadline.remaining(), 1e-6)
    own = Deadline(budget, "stage").seconds  # in seconds (inf when it is no limit)
    return left if left < own else budget


def _stopped_by(result: Result, deadline: Deadline | None) -> Result:
    """``result``, unless a stage ran out of time because ``deadline`` ended: then that
    deadline's :class:`~llmfix.deadline.OutOfTime`."""
    if (
        deadline is not None
        and deadline.expired()
        and any(d.code == "limits.time" for d in result.diagnostics)
    ):
        deadline.check()
    return result


def check_item(item: Item, profile: Profile) -> Result:
    """Check one item's text (:func:`check_text`), with what its API response said applied:
    a refusal is ``refused``, a cut-off answer ``truncated`` (see
    :mod:`llmfix.pipeline.stops`)."""
    if item.finish is not None and item.finish.kind == "refused":
        return refused_result(item.finish)
    result = _check(item.text, profile, item.tool, item.kind == "tool-result")
    return apply_finish(result, item.finish, partial=profile.options.partial)


def _check(
    text: str, profile: Profile, tool: str | None, output: bool, deadline: Deadline | None = None
) -> Result:
    """A tool's result (``output``) against its output schema; anything else by
    :func:`check_text`. Either within ``deadline`` (see :func:`check_text`)."""
    if not output:
        return check_text(text, profile, tool, deadline=deadline)
    from dataclasses import replace

    # (start-up: the tool-call readers load only for a run that reads tool calls)
    from llmfix.toolcalls.results import check_tool_result

    validator = (profile.outputs or {}).get(tool or "")
    options = profile.options
    budget = _budget_within(options.limits.time_budget, deadline)
    if budget != options.limits.time_budget:
        options = replace(options, limits=replace(options.limits, time_budget=budget))
    return _stopped_by(check_tool_result(text, tool or "", validator, options), deadline)


def _bad_name(name: str) -> Diagnostic:
    # (start-up: the tool-call readers load only for a run that reads tool calls)
    from llmfix.toolcalls.base import NAME_HINT, shown_name

    what = f"named {shown_name(name)}" if name else "with no name"
    return codes.TOOLS_BAD_NAME.at(
        f"a tool call {what}: that is not a usable tool name",
        hint=NAME_HINT,
        data={"name": shown_name(name)},
    )


def _unknown_tool(name: str | None, tools: Mapping[str, Any]) -> Diagnostic:
    import difflib

    close = difflib.get_close_matches(name or "", sorted(tools), n=1)
    hint = f'did you mean "{close[0]}"?' if close else "registered: " + ", ".join(sorted(tools))
    what = f'"{name}"' if name else "a call with no name"
    return codes.TOOLS_UNKNOWN_NAME.at(
        f"tool {what} is not in the tool registry",
        hint=hint,
        data={"tool": name},
    )


# ------------------------------------------------------------------------- one item


# The stage an item's deadline names (``--timeout``): never one of the pipeline's stages.
ITEM = "item"

Payload = tuple[str, str, str | None, bool]  # text, profile key, tool name, a tool's result
WorkDone = tuple[Result | None, Diagnostic | None, Position | None, float]


def check_payload(
    payload: Payload,
    profiles: Mapping[str, Profile],
    timeout: float | None,
    decoded: tuple[Any] | None = None,
) -> WorkDone:
    text, key, tool, output = payload
    start = time.perf_counter()
    profile = profiles[key]
    # An answer's text (not a tool call's arguments or result) that is strict JSON and
    # valid takes the lean path: the pipeline's result without its machinery.
    lean = tool is None and not output and not profile.tool_calls
    try:
        result = strict_valid(text, profile.validator, profile.options, decoded) if lean else None
        if result is None:
            result = _check(text, profile, tool, output, Deadline(timeout, ITEM))
    except OutOfTime as stop:
        if stop.stage == ITEM:
            error = codes.BATCH_TIMEOUT.at(f"stopped after {timeout:g} s (--timeout)")
            return None, error, None, time.perf_counter() - start
        problem = f"OutOfTime: {stop}"  # a stage's own budget ends in a diagnostic, not here
        return None, codes.BATCH_CRASH.at(f"checking failed: {problem}"), None, 0.0
    except Exception as exc:  # one bad item never ends the run
        problem = " ".join(f"{type(exc).__name__}: {exc}".split())
        return None, codes.BATCH_CRASH.at(f"checking failed: {problem}"), None, 0.0
    anchor = None
    if result.candidate is not None:
        at = result.candidate.span.start
        anchor = _FIRST if at == 0 else LineIndex(text).position(at)
    return result, None, anchor, time.perf_counter() - start


_FIRST = Position(1, 1)


def strict_valid(
    text: str,
    validator: SchemaValidator | None,
    options: RepairOptions,
    decoded: tuple[Any] | None = None,
) -> Result | None:
    """The result of a text that is strict JSON (an object or array) and valid against
    ``validator`` (or with no schema), from the pipeline's fast path
    (:func:`llmfix.pipeline.core.strict_document`) alone; ``None`` for any other text, which
    the whole pipeline checks. ``decoded``: ``Item.decoded``, the reader's strict decode
    of ``text``, taken instead of decoding it again. No deadline: the fast path does not
    check one (decoding and validation are not cut short)."""
    fast = strict_document(text, validator, options, {}, decoded)
    return fast if isinstance(fast, Result) else None


def payload_of(item: Item, limits: BatchLimits) -> Payload | Outcome:
    """What to send a worker for ``item``, or its outcome when it is not to be checked."""
    if item.error is not None:
        return Outcome(item, None, item.error)
    if item.finish is not None and item.finish.kind == "refused":
        return Outcome(item, refused_result(item.finish))
    if len(item.text) > limits.max_item_size:
        error = codes.BATCH_TOO_LARGE.at(
            f"{len(item.text):,} characters is over --max-item-size {limits.max_item_size:,}",
        )
        return Outcome(item, None, error)
    return item.text, item.profile, item.tool, item.kind == "tool-result"


def outcome_of(item: Item, done: WorkDone, profiles: Mapping[str, Profile]) -> Outcome:
    result, error, anchor, seconds = done
    if result is not None and item.finish is not None:  # what the API said (stop reason)
        partial = profiles[item.profile].options.partial
        result = apply_finish(result, item.finish, partial=partial)
    if result is not None and item.diagnostics:  # bytes the reader replaced are a change
        from dataclasses import replace

        notes = reading_notes(item.diagnostics)
        if len(notes) != len(item.diagnostics):
            result = with_reading_changes(result, item.diagnostics)
            item = replace(item, diagnostics=notes)
    return build(Outcome, item=item, result=result, error=error, anchor=anchor, seconds=seconds)


# ------------------------------------------------------------------------ the pool


# -------------------------------------------------------------------- gates, baseline


Fingerprint = tuple[str, str, str]


# ---------------------------------------------------------------------- the summary
