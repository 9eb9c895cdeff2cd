"""Repair prompts, partial requests and the answer cache (no network)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmfix.llm.cache import AnswerCache, cache_key
from llmfix.llm.prompt import (
    PreviousAttempt,
    build_messages,
    error_lines,
    hints_for,
    render,
    truncate,
)
from llmfix.llm.providers import Completion
from llmfix.llm.subset import merge, plan_partial
from llmfix.model import Diagnostic, Severity
from llmfix.pipeline.core import make_validator, repair_text

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "a": {"type": "integer"},
        "b": {"type": "string"},
        "c": {"type": "string"},
        "d": {"type": "boolean"},
    },
    "required": ["a", "b", "c", "d"],
    "additionalProperties": False,
}


def user_text(**kwargs: Any) -> str:
    settings: dict[str, Any] = {"original": "{}", "errors": ["/a: bad"], "schema": SCHEMA}
    settings.update(kwargs)
    return build_messages(**settings)[1]["content"]


def errors_of(text: str, schema: Any = SCHEMA) -> list[Diagnostic]:
    """The validation errors of ``text`` as written (no schema repair)."""
    validator = make_validator(schema)
    assert validator is not None
    return validator.errors(json.loads(text))


# -------------------------------------------------------------------------- prompts


def test_messages_are_system_then_user() -> None:
    assert [m["role"] for m in build_messages(original="{}", errors=[], schema=None)] == [
        "system",
        "user",
    ]


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ('```json\n{"a": 1,}\n```', "code fence"),
        ('<tool_call>{"a": 1}</tool_call>', "XML tags"),
        ('{"a": 1,}', "trailing commas"),
        ("{'a': 'x'}", "double quotes"),
        ('{"a": True}', "true, false and null"),
        ('{"a": "line\nbreak"}', "\\n"),
    ],
)
def test_hints_for_patterns_seen(text: str, hint: str) -> None:
    result = repair_text(text)
    origin = result.candidate.origin if result.candidate else None
    assert any(hint in h for h in hints_for(result.diagnostics, origin))


def test_no_hints_for_clean_json() -> None:
    assert hints_for(repair_text('{"a": 1}').diagnostics, "whole") == []


def test_error_lines_keep_pointer_and_message() -> None:
    lines = error_lines(errors_of('{"a": "x", "b": "y", "c": "z", "d": true}'))
    assert lines == ['/a: expected integer, got string "x"']


def test_error_lines_skip_warnings() -> None:
    warning = Diagnostic("x.y", Severity.WARNING, "s", "not an error")
    assert error_lines([warning]) == []


def test_prompt_sections_in_order() -> None:
    text = user_text(hints=["a hint"], previous=PreviousAttempt("{}", ("/b: worse",)))
    order = [
        text.index(s)
        for s in ("ERRORS", "PATTERNS SEEN", "ORIGINAL OUTPUT", "JSON SCHEMA", "PREVIOUS ATTEMPT")
    ]
    assert order == sorted(order)


def test_previous_attempt_shows_its_answer_and_errors() -> None:
    text = user_text(previous=PreviousAttempt('{"a": "x"}', ("/a: still bad",)))
    assert 'PREVIOUS ATTEMPT FAILED VALIDATION\nYour previous answer:\n<<<\n{"a": "x"}' in text
    assert "- /a: still bad" in text


def test_many_errors_are_capped() -> None:
    text = user_text(errors=[f"/x{i}: bad" for i in range(50)])
    assert "… and 20 more" in text


def test_no_schema_prompt_asks_for_json() -> None:
    assert "JSON SCHEMA" not in user_text(schema=None)


def test_truncate_keeps_start_and_end() -> None:
    cut = truncate("A" * 100 + "B" * 1000 + "C" * 100, 200)
    assert (cut.startswith("A" * 100), cut.endswith("C" * 50), "characters left out" in cut) == (
        True,
        True,
        True,
    )


def test_truncate_leaves_short_text() -> None:
    assert truncate("short", 2000) == "short"


def test_render_labels_roles() -> None:
    assert render([{"role": "user", "content": "hi"}]) == "[user]\nhi"


# ------------------------------------------------------------------------- partial


def test_partial_plan_for_one_bad_property() -> None:
    value = {"a": "x", "b": "y", "c": "z", "d": True}
    plan = plan_partial(value, errors_of('{"a": "x", "b": "y", "c": "z", "d": true}'), SCHEMA)
    assert plan is not None
    assert (plan.keys, dict(plan.valid_part)) == (("a",), {"b": "y", "c": "z", "d": True})


def test_partial_plan_asks_for_a_missing_required_property() -> None:
    value = {"b": "y", "c": "z", "d": True}
    plan = plan_partial(value, errors_of('{"b": "y", "c": "z", "d": true}'), SCHEMA)
    assert plan is not None
    assert plan.schema["properties"] == {"a": {"type": "integer"}}


def test_no_partial_when_half_or_more_fail() -> None:
    text = '{"a": "x", "b": 1, "c": 2, "d": true}'
    assert plan_partial({"a": "x", "b": 1, "c": 2, "d": True}, errors_of(text), SCHEMA) is None


def test_no_partial_for_small_objects() -> None:
    small = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert plan_partial({"a": "x"}, errors_of('{"a": "x"}', small), small) is None


def test_no_partial_when_the_root_ties_properties_together() -> None:
    schema = {**SCHEMA, "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    value = {"a": "x", "b": "y", "c": "z", "d": True}
    assert plan_partial(value, errors_of('{"a": "x"}'), schema) is None


def test_partial_schema_carries_defs() -> None:
    schema = {
        **SCHEMA,
        "properties": {**SCHEMA["properties"], "a": {"$ref": "#/$defs/n"}},
        "$defs": {"n": {"type": "integer"}},
    }
    value = {"a": "x", "b": "y", "c": "z", "d": True}
    plan = plan_partial(value, errors_of('{"a": "x", "b": "y", "c": "z", "d": true}'), schema)
    assert plan is not None
    assert plan.schema["$defs"] == {"n": {"type": "integer"}}


def test_merge_keeps_the_original_order() -> None:
    value = {"a": "x", "b": "y", "c": "z", "d": True}
    plan = plan_partial(value, errors_of('{"a": "x", "b": "y", "c": "z", "d": true}'), SCHEMA)
    assert plan is not None
    assert list(merge(plan, {"a": 1, "zzz": 2}) or {}) == ["a", "b", "c", "d"]


def test_merge_of_a_non_object_is_none() -> None:
    value = {"a": "x", "b": "y", "c": "z", "d": True}
    plan = plan_partial(value, errors_of('{"a": "x", "b": "y", "c": "z", "d": true}'), SCHEMA)
    assert plan is not None
    assert merge(plan, [1]) is None


# --------------------------------------------------------------------------- cache


def key(**changes: Any) -> str:
    settings: dict[str, Any] = {
        "provider": "openai",
        "base_url": "http://127.0.0.1/v1",
        "model": "m",
        "messages": [{"role": "user", "content": "fix"}],
        "schema": SCHEMA,
        "temperature": 0.0,
    }
    settings.update(changes)
    return cache_key(**settings)


@pytest.mark.parametrize(
    "change",
    [
        {"provider": "anthropic"},
        {"model": "other"},
        {"messages": [{"role": "user", "content": "fix it"}]},
        {"schema": {"type": "object"}},
    ],
)
def test_cache_key_changes_with_each_part(change: dict[str, Any]) -> None:
    assert key(**change) != key()


def test_cache_round_trip(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path)
    cache.put(key(), Completion(text='{"a": 1}', input_tokens=3, output_tokens=2, mode="tool"))
    assert cache.get(key()) == Completion(
        text='{"a": 1}', input_tokens=3, output_tokens=2, mode="tool"
    )


def test_cache_miss(tmp_path: Path) -> None:
    assert AnswerCache(tmp_path).get(key()) is None


def test_corrupt_cache_entry_is_a_miss(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path)
    cache.put(key(), Completion(text="{}"))
    (entry,) = tmp_path.rglob("*.json")
    entry.write_text("not json", encoding="utf-8")
    assert cache.get(key()) is None


def test_unwritable_cache_is_skipped(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    AnswerCache(blocker / "sub").put(key(), Completion(text="{}"))
    assert AnswerCache(blocker / "sub").get(key()) is None


def test_default_cache_dir_follows_xdg(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert AnswerCache().directory == tmp_path / "llmfix"
