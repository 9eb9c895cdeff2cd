"""One response through a `repair` run: its answers, the rules, then the model.

A response is either one answer (the whole text) or an API response / transcript holding
several (:func:`answers_in`). Each answer is repaired by the rules (:func:`repair_answer`:
the pipeline, or the tool-call checks with ``--tools``), then, when the rules left it
broken and LLM repair is on, by the model (:func:`llm_repair`), and judged by the gate.
:func:`stream_answer` does the same for an answer read as it streams, writing a snapshot
line per event to the stream it is given. Nothing here prints or exits; the command decides
what goes where.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TextIO

from llmfix.jsontext import dumps
from llmfix.model import Result, Status

if TYPE_CHECKING:
    from collections.abc import Iterable

    from llmfix.inputs import Item
    from llmfix.run.llm import LlmRun
    from llmfix.run.settings import RepairRun, Run, ToolSettings
    from llmfix.schema.validate import SchemaValidator
    from llmfix.stream.wire import WireDecoder

# An answer's result: (the item, when read out of an API response), result, gate failures,
# and the model's record when it was asked.
Answered = tuple["Item | None", Result, list[str], "dict[str, object] | None"]


def start_llm(run: Run) -> LlmRun | None:
    """The run's LLM repair (one provider, one call budget), or ``None`` when it is off;
    nothing of :mod:`llmfix.llm` is imported when it is off."""
    if not run.llm_enabled:
        return None
    # lazy: repair on a clean answer, repair --schema on a valid answer start without it
    from llmfix.run.llm import build_llm_run

    return build_llm_run(run.config, run.llm.overrides())


def llm_repair(
    run: RepairRun,
    llm: LlmRun | None,
    name: str,
    text: str,
    result: Result,
    validator: SchemaValidator | None,
) -> tuple[Result, dict[str, object] | None]:
    """The model's repair of an answer the rules left broken (tool calls stay the rules')."""
    if llm is None or run.tools is not None:
        return result, None
    repaired, record = llm.repair(
        text, result, validator=validator, options=run.options, name=name, max_risk=run.max_risk
    )
    return repaired, record


def repair_answer(
    run: RepairRun,
    llm: LlmRun | None,
    name: str,
    text: str,
    validator: SchemaValidator | None,
    item: Item | None = None,
) -> tuple[Result, list[str], dict[str, object] | None]:
    """Repair one answer (``item``: it was read out of an API response) and judge it."""
    # lazy: extract, config -f json start without it
    from llmfix.batch.gate import gate_failures

    record = None
    if item is not None:
        # lazy: repair on a clean answer, repair --schema on a valid answer start without it
        from llmfix.batch.core import Profile, check_item

        result = check_item(item, Profile(validator=validator, options=run.options))
        if item.tool is None:  # (a cut-off or refused answer: see llmfix.llm.loop.needs_llm)
            result, record = llm_repair(run, llm, name, text, result, validator)
    else:
        result = _rules(run, text, validator)
        result, record = llm_repair(run, llm, name, text, result, validator)
    failures = gate_failures(
        result, run.fail_on, run.max_risk, partial=run.options.partial, codes=run.gate.codes
    )
    return result, failures, record


def _rules(run: RepairRun, text: str, validator: SchemaValidator | None) -> Result:
    tools = run.tools
    if tools is None:
        # lazy: repair --tool-calls, repair --tools start without it
        from llmfix.pipeline.core import repair_text

        return repair_text(text, options=run.options, validator=validator)
    # lazy: repair on a clean answer, repair --schema on a valid answer start without it
    from llmfix.toolcalls import check_tool_calls

    return check_tool_calls(
        text,
        tools.registry,
        fmt=tools.fmt,
        salvage=tools.salvage,
        max_risk=run.options.max_risk,
        expect_sequence=_sequence(tools),
        strict=tools.strict,
        emit=tools.emit,
        schema_repair=run.options.schema_repair,
        disabled_rules=run.options.disabled_rules,
        time_budget=run.options.limits.time_budget,
        partial=run.options.partial,
    )


def repair_input(
    run: RepairRun, llm: LlmRun | None, name: str, text: str, validator: SchemaValidator | None
) -> list[Answered]:
    """Every answer of one input, repaired and judged: the text itself, or each answer of
    the API response it is (``--kind``, ``--field``)."""
    answers = answers_in(run, name, text, validator)
    if answers is None:  # the whole text is the answer
        return [(None, *repair_answer(run, llm, name, text, validator))]
    done: list[Answered] = []
    for item in answers:
        if item.error is not None:
            failed = Result(status=Status.UNPARSEABLE, value=None, diagnostics=(item.error,))
            done.append((item, failed, [f"not checked ({item.error.code})"], None))
        else:
            done.append((item, *repair_answer(run, llm, item.id, item.text, validator, item)))
    return done


def answers_in(
    run: RepairRun, name: str, text: str, validator: SchemaValidator | None
) -> list[Item] | None:
    """The answers in an API response (``--kind``, ``--field``); ``None``: the text is one."""
    reading = run.reading
    if reading is None:
        return None
    # lazy: config -f json starts without it
    from llmfix.inputs import items_from_text, response_shape

    kind = reading.kind
    auto = kind == "auto" and reading.field is None
    if kind == "auto":
        if auto and response_shape(text) is None:
            return None
        kind = "json"
    found = list(items_from_text(text, name, reading, kind))
    if len(found) == 1 and found[0].whole_file:
        return None
    if auto and _is_the_answer(text, found, validator):
        return None
    return found


def _is_the_answer(text: str, found: list[Item], validator: SchemaValidator | None) -> bool:
    """An answer that only looks like an API response (``{"messages": [...]}`` with no
    assistant turn, or a document that already satisfies ``--schema``) is the answer."""
    if all(i.error is not None and i.error.code == "input.no_answer" for i in found):
        return True
    if validator is None:
        return False
    try:
        return validator.is_valid(json.loads(text))
    except (ValueError, RecursionError):
        return False


def fixed_response(done: list[Answered]) -> str | None:
    """The response with each repaired answer put back where it was; ``None``: unchanged.
    (``repair --in-place`` writes the file's own bytes back instead, the repaired values
    spliced in: :func:`llmfix.batch.writers.fixed_file`.)"""
    import copy

    # lazy: config -f json starts without it
    from llmfix.inputs import fixed_record

    changed = changed_answers(done)
    if not changed:
        return None
    record = copy.deepcopy(changed[0][0].record)
    return dumps(fixed_record(record, changed), indent=2) + "\n"


def changed_answers(done: list[Answered]) -> list[tuple[Item, object]]:
    """Each answer read out of an API response that was repaired, with its repaired value:
    what is put back into the response (not what only reading the file changed)."""
    # lazy: config -f json starts without it
    from llmfix.inputs.items import changed_only_by_reading

    return [
        (item, r.value)
        for item, r, _, _ in done
        if item is not None and r.status is not Status.VALID and not changed_only_by_reading(r)
    ]


def output_text(result: Result, indent: int | None) -> str:
    """The JSON text written for a result: its value, or one line per value (``--pick all``)."""
    if result.values is not None:
        return "".join(json_text(v, None) + "\n" for v in result.values)
    return json_text(result.value, indent) + "\n"


def json_text(value: object, indent: int | None) -> str:
    """JSON text of a repaired value (each number as the model wrote it); ``indent=None``:
    one line."""
    if indent is None:
        return dumps(value, separators=(",", ":"))
    return dumps(value, indent=indent)


def stream_answer(
    run: RepairRun,
    llm: LlmRun | None,
    chunks: Iterable[str],
    name: str,
    validator: SchemaValidator | None,
    out: TextIO,
    *,
    final: bool = False,
) -> tuple[Result, list[str], list[str]]:
    """``--stream``: read an answer as it arrives (raw text, SSE, NDJSON; detected), writing
    one JSON line per snapshot to ``out`` (flushed at once), then the result line; with
    ``final``, only the final JSON when it passes. Returns the result, its gate failures and
    the wire format's problems."""
    # lazy: extract, config -f json start without it
    from llmfix.batch.gate import gate_failures

    # lazy: repair on a clean answer, repair --schema on a valid answer start without it
    from llmfix.stream.reader import StreamParser

    # lazy: repair on a clean answer, repair --schema on a valid answer start without it
    from llmfix.stream.wire import WireDecoder

    tools = run.tools
    parser = StreamParser(
        options=run.options,
        validator=validator,
        registry=tools.registry if tools is not None else None,
        tools=tools is not None,
        tool_options=_stream_tool_options(tools),
    )
    decoder = WireDecoder()
    for chunk in chunks:
        for event in parser.feed_deltas(decoder.feed(chunk)) + parser.flush():
            if not final:
                out.write(json_text(event.to_dict(), None) + "\n")
                out.flush()
    events = parser.feed_deltas(decoder.close()) + parser.flush()
    result = _stopped_as_said(parser.close(), decoder, run.options.partial)
    result, _ = llm_repair(run, llm, name, parser.text, result, validator)
    failures = gate_failures(
        result, run.fail_on, run.max_risk, partial=run.options.partial, codes=run.gate.codes
    )
    if final:
        if not failures and (result.value is not None or result.ok):
            out.write(output_text(result, run.indent))
    else:
        for event in events:
            out.write(json_text(event.to_dict(), None) + "\n")
        line: dict[str, object] = {
            "event": "result",
            "format": decoder.format,
            "stop_reason": decoder.stop_reason,
        }
        line.update(result.to_dict())
        line.pop("timings", None)
        out.write(json_text(line, None) + "\n")
    out.flush()
    return result, failures, list(decoder.errors)


def _stopped_as_said(result: Result, decoder: WireDecoder, partial: bool) -> Result:
    """``result`` with the stream's stop reason applied (a cut-off answer is ``truncated``,
    a refused one ``refused``), as it is when the same stream is read from a file."""
    # lazy: config -f json starts without it
    from llmfix.pipeline.stops import apply_finish, stream_finish

    finish = stream_finish(decoder.format, decoder.stop_reason, decoder.refusal)
    return apply_finish(result, finish, partial=partial)


def _stream_tool_options(tools: ToolSettings | None) -> dict[str, object]:
    if tools is None:
        return {}
    return {
        "fmt": tools.fmt,
        "salvage": tools.salvage,
        "expect_sequence": _sequence(tools),
        "strict": tools.strict,
        "emit": tools.emit,
    }


def _sequence(tools: ToolSettings) -> list[str] | None:
    return None if tools.expect_sequence is None else list(tools.expect_sequence)
