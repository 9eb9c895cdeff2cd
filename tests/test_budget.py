"""Time budgets as deadlines: each stage's loops check one, and running out is a diagnostic.

``--time-budget`` (``time_budget=``) gives extraction, the parse of each candidate, schema
repair and the schema-guided readings each their own :class:`~llmfix.deadline.Deadline`;
``llmfix check --timeout`` gives an item one that every stage's lies within. Nothing is
interrupted from outside, so none of this depends on the thread it runs in.

No timing assertions: each test gives a tiny budget to an input that takes far longer, and
checks only that the work stopped and what it said.
"""

from __future__ import annotations

import json
import signal
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import llmfix
from llmfix.batch.core import BatchLimits, Profile
from llmfix.batch.pool import run_items
from llmfix.deadline import Deadline, OutOfTime
from llmfix.inputs import Item
from llmfix.model import Result, Status
from llmfix.options import Limits, RepairOptions
from llmfix.pipeline.core import repair_text

# An unclosed value in prose, 800 KB of brackets, ended by a fence: a long extraction (half
# a second), checked as the value's tokens are scanned and at the fence after it.
_LONG_ANSWER = "Note: {" + "[1, " * 200_000 + "\n```\nend\n```\n"
_SHORT_ANSWER = 'Notes ```json\n{"a": 1}\n``` then {x} and [y] in prose. ' * 100
_SCHEMA = {"type": "object", "properties": {"n": {"type": "array", "items": {"type": "integer"}}}}
# Strict JSON (the fast path), every item a string the schema wants as an integer.
_MANY_COERCIONS = json.dumps({"n": [str(i) for i in range(20_000)]})
# One fenced candidate, found at once (a fence is not scanned inside), which the lenient
# parser reads word by word: 60,000 unquoted keys and values, half a second or more.
_LONG_PARSE = "Here:\n```json\n{" + ", ".join(f"k{i}: v{i}" for i in range(60_000)) + "}\n```\n"
# A markdown table where the schema wants an array of objects: extracted at once (there is
# no JSON in it), read row by row by the schema-guided table reader (seconds).
_ITEMS = {
    "type": "array",
    "items": {"type": "object", "properties": {"name": {"type": "string"}}},
}
_LONG_TABLE = "| name |\n|---|\n" + "| x |\n" * 30_000


def _out_of_time(result: Result) -> list[tuple[str, str]]:
    return [(d.stage, d.message) for d in result.diagnostics if d.code == "limits.time"]


# -- one stage each ------------------------------------------------------------------------


def test_extraction_stops_at_its_budget_and_says_so() -> None:
    result = llmfix.repair(_LONG_ANSWER, time_budget=0.001)
    assert result.status is Status.UNPARSEABLE
    assert _out_of_time(result) == [
        ("extract", "extraction took longer than the 0.001 s time budget")
    ]


def test_extraction_within_its_budget_is_untouched() -> None:
    result = llmfix.repair(_SHORT_ANSWER, time_budget=30)
    assert (result.status, result.value, _out_of_time(result)) == (
        Status.EXTRACTED,
        {"a": 1},
        [],
    )


def test_parsing_stops_at_its_budget_and_names_the_stage() -> None:
    result = llmfix.repair(_LONG_PARSE, time_budget=0.05)
    assert result.status is Status.UNPARSEABLE
    assert [stage for stage, _ in _out_of_time(result)] == ["parse"]


def test_schema_repair_stops_at_its_budget_and_keeps_the_value() -> None:
    result = llmfix.repair(_MANY_COERCIONS, schema=_SCHEMA, time_budget=0.001)
    assert result.status is Status.INVALID
    assert _out_of_time(result) == [
        ("schema_repair", "schema repair took longer than the 0.001 s time budget")
    ]
    assert result.value == json.loads(_MANY_COERCIONS)  # unrepaired, not half-repaired
    assert result.patch == ()


def test_schema_repair_within_its_budget_repairs() -> None:
    result = llmfix.repair('{"n": ["1", "2"]}', schema=_SCHEMA, time_budget=5)
    assert (result.status, result.value) == (Status.REPAIRED, {"n": [1, 2]})


def test_schema_guided_reading_stops_at_its_budget_and_names_the_stage() -> None:
    result = llmfix.repair(_LONG_TABLE, schema=_ITEMS, time_budget=0.05)
    late = _out_of_time(result)
    assert ("guided", "schema-guided reading took longer than the 0.05 s time budget") in late
    assert result.status is Status.UNPARSEABLE  # the ordinary result stands


def test_schema_guided_reading_within_its_budget_reads() -> None:
    result = llmfix.repair(_LONG_TABLE[:200], schema=_ITEMS, time_budget=30)
    assert (result.status, result.value[:2]) == (Status.REPAIRED, [{"name": "x"}, {"name": "x"}])


def test_tool_call_checking_stops_at_its_budget() -> None:
    calls = '<tool_call>{"name": "f", "arguments": {"a": 1, b: [1, 2,}}</tool_call>\n' * 5000
    result = llmfix.check_tool_calls(calls, time_budget=0.001)
    assert (result.status, result.value) == (Status.UNPARSEABLE, [])
    assert len(_out_of_time(result)) == 1


# -- a caller's deadline -------------------------------------------------------------------


def test_a_callers_deadline_that_ends_first_is_raised_to_the_caller() -> None:
    options = RepairOptions(limits=Limits(time_budget=30))
    with pytest.raises(OutOfTime) as stopped:
        repair_text(_LONG_ANSWER, options=options, deadline=Deadline(0.001, "mine"))
    assert stopped.value.stage == "mine"


def test_a_callers_deadline_also_bounds_the_parse() -> None:
    options = RepairOptions(limits=Limits(time_budget=30))
    with pytest.raises(OutOfTime) as stopped:
        repair_text(_LONG_PARSE, options=options, deadline=Deadline(0.05, "mine"))
    assert stopped.value.stage == "mine"


def test_a_stage_budget_that_ends_first_is_the_stages_diagnostic() -> None:
    options = RepairOptions(limits=Limits(time_budget=0.001))
    result = repair_text(_LONG_ANSWER, options=options, deadline=Deadline(600, "mine"))
    assert [stage for stage, _ in _out_of_time(result)] == ["extract"]


# -- llmfix check --timeout: the item's deadline -------------------------------------------


def _item(text: str) -> Item:
    return Item(text=text, kind="text", id="f.txt:0", source="f.txt", line=1)


def _run(text: str, time_budget: float, timeout: float, schema: Any = None) -> Any:
    from llmfix.pipeline.core import make_validator

    profile = Profile(make_validator(schema), RepairOptions(limits=Limits(time_budget=time_budget)))
    [outcome] = run_items([_item(text)], {"": profile}, BatchLimits(jobs=1, item_timeout=timeout))
    return outcome


@pytest.mark.parametrize(
    ("text", "schema"),
    [(_LONG_ANSWER, None), (_LONG_PARSE, None), (_LONG_TABLE, _ITEMS)],
    ids=["extraction", "parse", "guided"],
)
def test_an_item_that_outlasts_its_timeout_is_stopped(text: str, schema: Any) -> None:
    outcome = _run(text, time_budget=600, timeout=0.05, schema=schema)
    assert outcome.result is None
    assert outcome.error is not None
    assert (outcome.error.code, outcome.error.message) == (
        "batch.timeout",
        "stopped after 0.05 s (--timeout)",
    )


def test_a_stage_that_outlasts_its_budget_before_the_timeout_is_a_result() -> None:
    outcome = _run(_LONG_ANSWER, time_budget=0.001, timeout=600)
    assert outcome.error is None
    assert [stage for stage, _ in _out_of_time(outcome.result)] == ["extract"]


def test_tool_call_items_stop_at_the_timeout() -> None:
    calls = '<tool_call>{"name": "f", "arguments": {"a": 1, b: [1, 2,}}</tool_call>\n' * 20_000
    profile = Profile(options=RepairOptions(limits=Limits(time_budget=600)), tool_calls=True)
    limits = BatchLimits(jobs=1, item_timeout=0.05)
    [outcome] = run_items([_item(calls)], {"": profile}, limits)
    assert outcome.error is not None
    assert outcome.error.code == "batch.timeout"


# -- threads: nothing is interrupted, so nothing depends on the thread -----------------


def test_budgets_hold_in_a_thread_pool_of_library_calls() -> None:
    def work(i: int) -> Result:
        if i % 3 == 0:
            return llmfix.repair(_LONG_ANSWER, time_budget=0.001)
        if i % 3 == 1:
            return llmfix.repair(_MANY_COERCIONS, schema=_SCHEMA, time_budget=0.001)
        return llmfix.repair("{'a': 1,}", time_budget=5)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(12)))
    assert [[stage for stage, _ in _out_of_time(r)] for r in results[:3]] == [
        ["extract"],
        ["schema_repair"],
        [],
    ]
    assert all(r.value == {"a": 1} for r in results[2::3])
    assert all(
        _out_of_time(a) == _out_of_time(b) for a, b in zip(results[:-3], results[3:], strict=True)
    )


def test_item_timeouts_hold_in_threads() -> None:
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda _: _run(_LONG_ANSWER, 600, 0.05), range(2)))
    assert [o.error.code for o in outcomes] == ["batch.timeout", "batch.timeout"]


def test_no_signal_handler_or_timer_is_touched() -> None:
    handler = signal.getsignal(signal.SIGALRM)
    llmfix.repair(_LONG_ANSWER, time_budget=0.001)
    _run(_LONG_ANSWER, time_budget=600, timeout=0.05)
    assert signal.getsignal(signal.SIGALRM) is handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert llmfix.repair("{'a': 1}").value == {"a": 1}


def test_schema_errors_are_capped_per_value() -> None:
    from llmfix.schema.validate import MAX_ERRORS

    wrong = json.dumps({"n": ["x"] * (MAX_ERRORS * 20)})
    result = llmfix.repair(wrong, schema=_SCHEMA)
    codes = [d.code for d in result.diagnostics]
    assert result.status is Status.INVALID
    assert (codes.count("schema.type"), codes.count("schema.too_many_errors")) == (MAX_ERRORS, 1)
