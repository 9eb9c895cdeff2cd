"""The data model's behaviour for library users: truthiness and printing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmfix
from llmfix.model import LineIndex, Risk, Severity, Status


def test_bool_of_a_result_says_whether_its_value_is_usable() -> None:
    assert bool(llmfix.repair('{"a": 1}')) is True
    assert bool(llmfix.repair('{"a": "1"}', schema={"properties": {"a": {"type": "integer"}}}))
    invalid = llmfix.repair('{"a": [1]}', schema={"properties": {"a": {"const": 2}}})
    assert invalid.status is Status.INVALID
    assert bool(invalid) is False
    assert bool(llmfix.repair("no json here at all")) is False


@pytest.mark.parametrize("status", list(Status))
def test_str_of_a_status_is_its_value_not_the_enum_name(status: Status) -> None:
    assert str(status) == status.value
    assert f"{status}" == status.value


def test_str_of_risk_and_severity_is_their_value() -> None:
    assert str(Risk.GUESS) == "guess"
    assert f"{Severity.ERROR}" == "error"


def test_ok_errors_and_risk_describe_the_result() -> None:
    result = llmfix.repair('{"a": "1",}', schema={"properties": {"a": {"type": "integer"}}})
    assert result.ok
    assert result.errors == ()
    assert result.risk is Risk.SAFE
    bad = llmfix.repair('{"a": []}', schema={"properties": {"a": {"type": "integer"}}})
    assert [d.code for d in bad.errors] == ["schema.type"]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab\n", max_size=60),
    st.lists(st.integers(0, 60), min_size=1, max_size=10),
    st.booleans(),
)
def test_line_index_positions_in_any_order(text: str, offsets: list[int], ascending: bool) -> None:
    # ascending look-ups count on from the last one; one behind it builds the table
    offsets = [min(o, len(text)) for o in offsets]
    if ascending:
        offsets.sort()
    lines = LineIndex(text)
    for offset in offsets:
        expected = (
            text.count("\n", 0, offset) + 1,
            offset - (text.rfind("\n", 0, offset) + 1) + 1,
        )
        position = lines.position(offset)
        assert (position.line, position.column) == expected
