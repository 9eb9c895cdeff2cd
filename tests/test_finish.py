"""The last steps for one chosen value: its status, and ``limits.time`` for a stage."""

from __future__ import annotations

import pytest

from llmfix.deadline import OutOfTime
from llmfix.model import Candidate, LineIndex, Severity, Span, Status
from llmfix.options import RepairOptions
from llmfix.pipeline.core import make_validator
from llmfix.pipeline.finish import Clock, finish, out_of_time
from llmfix.pipeline.select import ParsedCandidate


def test_a_stage_that_ran_out_is_a_limits_time_error_naming_it() -> None:
    found = out_of_time(OutOfTime("schema_repair", 0.5), "schema_repair")
    assert (found.code, found.severity, found.stage, found.message) == (
        "limits.time",
        Severity.ERROR,
        "schema_repair",
        "schema repair took longer than the 0.5 s time budget",
    )


def test_another_deadline_running_out_is_raised_on() -> None:
    stop = OutOfTime("item", 60)
    with pytest.raises(OutOfTime) as raised:
        out_of_time(stop, "extract")
    assert raised.value is stop


def _chosen(text: str, value: object, origin: str = "whole") -> ParsedCandidate:
    candidate = Candidate(text, Span(0, len(text)), origin)
    return ParsedCandidate(candidate, True, value, True, (), None)


def test_a_value_the_schema_repairs_is_repaired_and_timed() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    text = '{"n": "1"}'
    clock = Clock()
    status, value, _, patch = finish(
        _chosen(text, {"n": "1"}), RepairOptions(), make_validator(schema), clock, LineIndex(text)
    )
    assert (status, value, [op.op for op in patch]) == (Status.REPAIRED, {"n": 1}, ["replace"])
    assert set(clock.stages) == {"validate", "schema_repair"}


def test_strict_json_alone_is_valid() -> None:
    text = "[1]"
    status, value, diagnostics, patch = finish(
        _chosen(text, [1]), RepairOptions(), None, Clock(), LineIndex(text)
    )
    assert (status, value, diagnostics, patch) == (Status.VALID, [1], [], [])
