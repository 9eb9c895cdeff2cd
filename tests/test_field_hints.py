"""Hints about a run's records: a --field or --group-by typo, an answer in one field."""

from __future__ import annotations

from llmfix.batch.hints import FieldHints
from llmfix.inputs import ReadOptions, items_from_text


def test_field_hints_say_nothing_when_records_differ_in_shape() -> None:
    text = '{"a": 1, "output": "{}"}\n{"b": 2, "output": "{}"}\n'
    hints = FieldHints()
    for found in items_from_text(text, "x.jsonl", ReadOptions(), "jsonl"):
        hints.add(found)
    assert hints.hints() == []


def test_field_hints_leave_a_partly_missing_group_alone() -> None:
    text = '{"model": "m", "output": "{}"}\n{"output": "{}"}\n'
    hints = FieldHints("output", "model")
    for found in items_from_text(text, "x.jsonl", ReadOptions("output", group_by="model"), "jsonl"):
        hints.add(found)
    assert hints.hints() == []
