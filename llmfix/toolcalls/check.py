"""Check the tool calls of one response against the tools that were offered.

:func:`check_tool_calls` extracts the calls, decides which are used, checks each against
the registry, and returns a :class:`~llmfix.model.Result` whose value is the list of calls
(canonical ``{"id", "name", "arguments"}``, or the OpenAI / Anthropic shape).

Which calls are used:

- a call cut off by truncation is left out and reported (``tools.truncated_call``: an error,
  a warning with ``partial``), and the result is ``truncated``: the calls before it are
  kept (a parallel call cut mid-argument loses only itself). With ``salvage`` its
  recovered arguments are used instead, marked as a guess;
- a call inside a reasoning block (``tools.in_reasoning``) is left out when the answer has
  calls outside reasoning, and used (with the warning) when it has none.

Checks, each reported with a JSON Pointer into the value (``/<index>/arguments/...``):

- ``tools.unknown_name`` (error) with the closest registered name; when ``max_risk`` allows
  it and the match is unique and close, the call is renamed instead (``repair.tool_name``:
  ``safe`` when only case and separators differ, else ``guess``);
- the arguments are validated against the tool's schema and repaired by the schema-repair
  engine (``repair.*`` with JSON Patch operations at ``/<index>/arguments/...``); what stays
  wrong is reported: ``tools.missing_argument`` for a missing required one, ``schema.*`` for
  the rest, ``tools.unknown_argument`` (warning) for an argument the tool does not declare;
- ``tools.duplicate_id``, ``tools.sequence`` (``expect_sequence``), and
  ``tools.unregistered_in_prose`` (warning) for tool-like names in the answer's text that
  are not registered.

Status: ``unparseable`` when tool-call syntax was found but no call could be used;
``truncated`` when a call was cut off and left out (the calls before it are the value);
``invalid`` when an error remains (with ``strict``, also when a ``tools.*`` warning does);
``repaired`` when anything was repaired or guessed; ``valid`` for an API response object
that needed nothing; ``extracted`` otherwise (including an answer with no calls). Then what
an API response given whole says applies, as ``llmfix check`` applies it
(:func:`llmfix.pipeline.stops.apply_finish`): calls the API says were cut off
(``finish_reason "length"``, ``stop_reason "max_tokens"``, ``finishReason "MAX_TOKENS"``)
are ``truncated``, a refused or filtered answer is ``refused`` (with no calls).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.deadline import Deadline, OutOfTime
from llmfix.errors import ConfigError
from llmfix.jsontext import dumps
from llmfix.model import (
    Diagnostic,
    LineIndex,
    PatchOp,
    Result,
    Risk,
    Severity,
    Span,
    Status,
    Timings,
)
from llmfix.options import Limits
from llmfix.pipeline.stops import apply_finish
from llmfix.toolcalls.base import (
    NAME_HINT,
    STAGE,
    ToolCall,
    ToolCallExtraction,
    bad_name_message,
    shown_name,
    valid_name,
)
from llmfix.toolcalls.detect import extract_tool_calls
from llmfix.toolcalls.values import escape_pointer

if TYPE_CHECKING:
    from llmfix.toolcalls.registry import ToolRegistry

EMITS: tuple[str, ...] = ("canonical", "openai", "anthropic")

# A word that looks like a function name in prose: snake_case with two or more parts,
# or a name written as a call or in backticks.
_TOOLISH = re.compile(
    r"(?<![\w@/.-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w@/-]|\.\w)"
    r"|`([A-Za-z_][\w.-]*)(?:\(\))?`"
    r"|(?<![\w.])([A-Za-z_]\w*)\("
)
_CAMEL = re.compile(r"[a-z][A-Z]")


def check_tool_calls(
    text: str,
    registry: ToolRegistry | None = None,
    *,
    fmt: str | None = None,
    salvage: bool = False,
    max_risk: Risk | None = None,
    expect_sequence: Sequence[str] | None = None,
    strict: bool = False,
    emit: str = "canonical",
    schema_repair: bool = True,
    disabled_rules: frozenset[str] = frozenset(),
    time_budget: float = Limits.time_budget,
    partial: bool = False,
) -> Result:
    """Extract the tool calls of ``text`` and check them (see the module docstring).
    ``partial``: a cut-off response's ``response.cut_off`` is a warning (``--partial``).

    The work is bounded by ``time_budget`` seconds: the readers and the checks share one
    :class:`~llmfix.deadline.Deadline` (stage ``tool_calls``) and check it as they go;
    when it passes, the result is ``unparseable`` with a ``limits.time`` error naming the
    stage.
    Raises :class:`~llmfix.errors.ConfigError` for an unknown ``fmt`` or ``emit``; never
    prints, never exits.
    """
    if emit not in EMITS:
        raise ConfigError(f"unknown emit shape {emit!r} (expected one of: {', '.join(EMITS)})")
    started = extracted = time.perf_counter()
    deadline = Deadline(time_budget, "tool_calls")
    try:
        extraction = extract_tool_calls(text, fmt=fmt, registry=registry, deadline=deadline)
        extracted = time.perf_counter()
        checker = _Checker(
            text,
            registry,
            salvage=salvage,
            max_risk=max_risk,
            strict=strict,
            schema_repair=schema_repair,
            disabled_rules=disabled_rules,
            deadline=deadline,
            partial=partial,
        )
        result = _finished_as_said(checker.run(extraction, expect_sequence), extraction, partial)
    except OutOfTime as spent:
        out_of_time = codes.LIMITS_TIME.at(
            f"tool-call checking took longer than the {spent.seconds:g} s time budget",
            hint="raise --time-budget to give it longer",
            data={"stage": spent.stage},
            stage=STAGE,
        )
        result = Result(status=Status.UNPARSEABLE, value=[], diagnostics=(out_of_time,))
    timings = Timings({"extract": extracted - started, "check": time.perf_counter() - extracted})
    return replace(result, value=emit_calls(result.value, emit), timings=timings)


def _finished_as_said(result: Result, extraction: ToolCallExtraction, partial: bool) -> Result:
    """``result`` with the response's stop reason applied (one rule with ``check``'s):
    cut-off calls are ``truncated``; a refusal is ``refused`` and has no calls."""
    finished = apply_finish(result, extraction.finish, partial=partial)
    return finished if finished.value is not None else replace(finished, value=[])


def emit_calls(calls: list[dict[str, Any]], emit: str) -> list[dict[str, Any]]:
    """Canonical calls in the shape an API uses (ids made up where the model gave none)."""
    if emit == "openai":
        return [
            {
                "id": c["id"] or f"call_{i}",
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": dumps(c["arguments"]),
                },
            }
            for i, c in enumerate(calls)
        ]
    if emit == "anthropic":
        return [
            {
                "type": "tool_use",
                "id": c["id"] or f"toolu_{i}",
                "name": c["name"],
                "input": c["arguments"],
            }
            for i, c in enumerate(calls)
        ]
    return calls


class _Checker:
    def __init__(
        self,
        text: str,
        registry: ToolRegistry | None,
        *,
        salvage: bool,
        max_risk: Risk | None,
        strict: bool,
        schema_repair: bool,
        disabled_rules: frozenset[str],
        deadline: Deadline,
        partial: bool = False,
    ) -> None:
        self.text = text
        self.partial = partial
        self.cut = 0  # calls cut off and left out
        self.deadline = deadline
        self.registry = registry
        self.salvage = salvage
        self.max_risk = max_risk
        self.strict = strict
        self.schema_repair = schema_repair
        self.disabled_rules = disabled_rules
        self.lines = LineIndex(text)
        self.diagnostics: list[Diagnostic] = []
        self.patch: list[PatchOp] = []

    def note(
        self,
        code: codes.Code,
        message: str,
        span: Span | None,
        *,
        severity: Severity | None = None,
        pointer: str | None = None,
        risk: Risk | None = None,
        rule: str | None = None,
        hint: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Add a diagnostic of ``code`` at ``span`` (of the checked text; with its
        line:column), made in the tools stage."""
        self.diagnostics.append(
            code.at(
                message,
                pointer=pointer,
                span=span,
                position=self.lines.position(span.start) if span is not None else None,
                risk=risk,
                rule=rule,
                hint=hint,
                data=data,
                severity=severity,
                stage=STAGE,
            )
        )

    # -- the run ------------------------------------------------------------------------------

    def run(self, extraction: ToolCallExtraction, expect_sequence: Sequence[str] | None) -> Result:
        self.diagnostics.extend(extraction.diagnostics)
        used = self.select(extraction.calls)
        entries: list[dict[str, Any]] = []
        for index, call in enumerate(used):
            self.deadline.check()
            entries.append(self.check_call(index, call))
        self.duplicate_ids(entries, used)
        if expect_sequence is not None:
            self.sequence(entries, list(expect_sequence))
        if self.registry is not None:
            self.prose(extraction, entries)
        if not extraction.calls:
            self.note(
                codes.TOOLS_NO_CALLS,
                "the response calls no tool"
                if not extraction.markers
                else "tool-call syntax was found but no call could be read",
                None,
            )
        status = self.status(extraction, entries)
        return Result(
            status=status,
            value=entries,
            diagnostics=tuple(self.diagnostics),
            patch=tuple(self.patch),
        )

    def select(self, calls: tuple[ToolCall, ...]) -> list[ToolCall]:
        outside = sum(not c.in_reasoning for c in calls)
        used = []
        for call in calls:
            if not valid_name(call.name):  # a reader that takes any name (an XML attribute)
                shown = shown_name(call.name)
                self.note(
                    codes.TOOLS_BAD_NAME,
                    bad_name_message(shown, call.format),
                    call.span,
                    hint=NAME_HINT,
                    data={"name": shown},
                )
                continue
            if call.in_reasoning:
                if outside:
                    self.note(
                        codes.TOOLS_IN_REASONING,
                        f"a call to {call.name} inside a reasoning block was left out: the answer "
                        "makes its calls outside it",
                        call.span,
                        data={"name": call.name, "used": False},
                    )
                    continue
                self.note(
                    codes.TOOLS_IN_REASONING,
                    f"the call to {call.name} is inside a reasoning block; it was used, as the "
                    "answer makes no call outside it",
                    call.span,
                    data={"name": call.name, "used": True},
                    hint="check that the model closed its reasoning before calling the tool",
                )
            if not call.complete:
                if not self.salvage:
                    self.cut += 1
                    self.note(
                        codes.TOOLS_TRUNCATED_CALL,
                        f"the call to {call.name} is cut off (the output ends inside it); "
                        "it was left out",
                        call.span,
                        severity=Severity.WARNING if self.partial else None,
                        data={"name": call.name, "arguments": call.arguments},
                        hint="raise the output token limit, or use --salvage to repair it",
                    )
                    continue
                self.note(
                    codes.TOOLS_TRUNCATED_CALL,
                    f"the call to {call.name} is cut off; its arguments were salvaged",
                    call.span,
                    severity=Severity.WARNING,
                    risk=Risk.GUESS,
                    rule="salvage",
                    data={"name": call.name},
                )
            used.append(call)
        return used

    def check_call(self, index: int, call: ToolCall) -> dict[str, Any]:
        base = f"/{index}"
        for d in call.diagnostics:
            # Notes about the arguments carry a pointer into them; the others are about the
            # call as written (its JSON repaired, say).
            pointer = base if d.pointer is None else base + "/arguments" + d.pointer
            self.diagnostics.append(replace(d, pointer=pointer))
        entry: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": call.arguments}
        if self.registry is None:
            if not isinstance(call.arguments, dict):
                self.not_object(index, call)
            return entry
        name = self.check_name(index, call)
        if name is None:
            return entry
        entry["name"] = name
        entry["arguments"] = self.check_arguments(index, call, name)
        return entry

    def check_name(self, index: int, call: ToolCall) -> str | None:
        registry = self.registry
        assert registry is not None
        if call.name in registry:
            return call.name
        target = registry.rename_target(call.name)
        allowed = (
            target is not None
            and "tool_name" not in self.disabled_rules
            and (self.max_risk is None or target.risk.rank <= self.max_risk.rank)
        )
        if allowed and target is not None:
            message = f"renamed the unknown tool {call.name!r} to the registered {target.name!r}"
            self.patch.append(
                PatchOp(
                    op="replace",
                    path=f"/{index}/name",
                    value=target.name,
                    rule="tool_name",
                    risk=target.risk,
                    before=call.name,
                    after=target.name,
                    message=message,
                )
            )
            self.note(
                codes.REPAIR_TOOL_NAME,
                message,
                call.span,
                pointer=f"/{index}/name",
                risk=target.risk,
                rule="tool_name",
                data={"from": call.name, "to": target.name},
            )
            return target.name
        closest = registry.closest(call.name)
        known = ", ".join(registry.names[:10]) + (" …" if len(registry) > 10 else "")
        self.note(
            codes.TOOLS_UNKNOWN_NAME,
            f"call {index}: {call.name!r} is not a registered tool (registered: {known})",
            call.span,
            pointer=f"/{index}/name",
            hint=f"did you mean {closest!r}?" if closest else None,
            data={"name": call.name, "closest": closest},
        )
        return None

    def check_arguments(self, index: int, call: ToolCall, name: str) -> Any:
        registry = self.registry
        assert registry is not None
        tool = registry.get(name)
        assert tool is not None
        arguments = call.arguments
        prefix = f"/{index}/arguments"
        if tool.problem is not None:
            self.note(
                codes.TOOLS_BAD_SCHEMA,
                f"the schema of {name} does not compile, so its arguments were not checked: "
                f"{tool.problem}",
                call.span,
                pointer=prefix,
            )
            if not isinstance(arguments, dict):
                self.not_object(index, call)
            return arguments
        validator = registry.validator_for(name)
        assert validator is not None
        errors = validator.errors(arguments)
        if errors and self.schema_repair:
            # (start-up: schema repair loads only for arguments that fail their schema)
            from llmfix.schema.repair import coerce_to_schema

            outcome = coerce_to_schema(
                arguments,
                validator.schema,
                disabled_rules=self.disabled_rules,
                max_risk=self.max_risk,
                deadline=self.deadline,
            )
            if outcome.patch:
                arguments = outcome.value
                self.patch.extend(
                    replace(op, path=prefix + op.path, from_=_prefixed(prefix, op.from_))
                    for op in outcome.patch
                )
                errors = validator.errors(arguments)
            for d in outcome.diagnostics:
                self.diagnostics.append(
                    replace(
                        d,
                        pointer=prefix + (d.pointer or ""),
                        span=call.span,
                        position=self.lines.position(call.span.start),
                        message=f"{name}(): {d.message}",
                    )
                )
        reported = set()
        for error in errors:
            data = dict(error.data or {})
            message = f"{name}(): {error.message}"
            missing = error.code == codes.SCHEMA_REQUIRED.id  # a missing required argument
            if missing and not error.pointer and "property" in data:
                message = f"{name}(): missing required argument {data['property']!r}"
            if error.code == codes.SCHEMA_ADDITIONAL_PROPERTIES.id and error.pointer:
                reported.add(error.pointer.rsplit("/", 1)[-1])
            placed: dict[str, Any] = {
                "pointer": prefix + (error.pointer or ""),
                "span": call.span,
                "position": self.lines.position(call.span.start),
                "message": message,
                "data": data or None,
            }
            self.diagnostics.append(
                codes.TOOLS_MISSING_ARGUMENT.instead_of(error, **placed)
                if missing
                else replace(error, **placed)
            )
        if isinstance(arguments, dict):
            self.unknown_arguments(index, call, name, arguments, reported)
        elif not errors:
            self.not_object(index, call)
        return arguments

    def unknown_arguments(
        self, index: int, call: ToolCall, name: str, arguments: dict[str, Any], reported: set[str]
    ) -> None:
        registry = self.registry
        assert registry is not None
        tool = registry.get(name)
        assert tool is not None
        schema = tool.parameters
        if (
            not isinstance(schema, dict)
            or "properties" not in schema
            or "patternProperties" in schema
        ):
            return
        declared = tool.properties
        for key in arguments:
            if key in declared or escape_pointer(key) in reported:
                continue
            self.note(
                codes.TOOLS_UNKNOWN_ARGUMENT,
                f"{name}() takes no argument {key!r}",
                call.span,
                pointer=f"/{index}/arguments/{escape_pointer(key)}",
                hint=f"declared arguments: {', '.join(declared) or '(none)'}",
                data={"argument": key},
            )

    def not_object(self, index: int, call: ToolCall) -> None:
        self.note(
            codes.TOOLS_ARGUMENTS_NOT_OBJECT,
            f"the arguments of {call.name} are not a JSON object",
            call.span,
            pointer=f"/{index}/arguments",
        )

    def duplicate_ids(self, entries: list[dict[str, Any]], used: list[ToolCall]) -> None:
        seen: dict[str, int] = {}
        for index, entry in enumerate(entries):
            call_id = entry["id"]
            if call_id is None:
                continue
            if call_id in seen:
                self.note(
                    codes.TOOLS_DUPLICATE_ID,
                    f"calls {seen[call_id]} and {index} share the id {call_id!r}",
                    used[index].span,
                    pointer=f"/{index}/id",
                    hint="each call needs its own id for its result to be matched to it",
                )
            else:
                seen[call_id] = index

    def sequence(self, entries: list[dict[str, Any]], expected: list[str]) -> None:
        names = [e["name"] for e in entries]
        if names == expected:
            return
        at = next(
            (i for i, (a, b) in enumerate(zip(names, expected, strict=False)) if a != b),
            min(len(names), len(expected)),
        )
        self.note(
            codes.TOOLS_SEQUENCE,
            f"expected the calls {', '.join(expected) or '(none)'}; got "
            f"{', '.join(names) or '(none)'} (first difference at call {at})",
            None,
            pointer=f"/{at}/name" if at < len(names) else "",
            data={"expected": expected, "got": names, "index": at},
        )

    def prose(self, extraction: ToolCallExtraction, entries: list[dict[str, Any]]) -> None:
        registry = self.registry
        assert registry is not None
        known = set(registry.names) | registry.parameter_names() | {e["name"] for e in entries}
        for entry in entries:
            if isinstance(entry["arguments"], dict):
                known.update(entry["arguments"])
        flagged: set[str] = set()
        for m in _TOOLISH.finditer(extraction.content):
            word = m.group(1) or m.group(2) or m.group(3)
            if word is None or word in known or word in flagged or word.isupper():
                continue
            if m.group(3) and "_" not in word and not _CAMEL.search(word):
                continue  # print(...), sum(...): ordinary words written as calls
            self.deadline.check()  # each new word costs a search and a fuzzy match
            flagged.add(word)
            where = self.text.find(word)
            span = Span(where, where + len(word)) if where != -1 else None
            closest = registry.closest(word)
            self.note(
                codes.TOOLS_UNREGISTERED_IN_PROSE,
                f"the answer mentions {word!r}, which looks like a tool but is not registered",
                span,
                hint=f"did you mean {closest!r}?"
                if closest
                else "the model may believe it has this tool",
                data={"name": word},
            )

    def status(self, extraction: ToolCallExtraction, entries: list[dict[str, Any]]) -> Status:
        diagnostics = self.diagnostics
        if not entries and extraction.markers:
            return Status.UNPARSEABLE
        if self.cut:  # the calls before the cut are kept; the answer is not all there
            return Status.TRUNCATED
        if any(d.severity is Severity.ERROR for d in diagnostics):
            return Status.INVALID
        if self.strict and any(
            d.severity is Severity.WARNING and d.code.startswith("tools.") for d in diagnostics
        ):
            return Status.INVALID
        if self.patch or any(d.risk in (Risk.SAFE, Risk.GUESS) for d in diagnostics):
            return Status.REPAIRED
        if extraction.structured and entries:
            return Status.VALID
        return Status.EXTRACTED


def _prefixed(prefix: str, pointer: str | None) -> str | None:
    return None if pointer is None else prefix + pointer
