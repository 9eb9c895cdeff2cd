"""Schema-guided reading through the pipeline: when it runs, what it reports, what it leaves."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import llmfix
from llmfix.batch.gate import gate_failures
from llmfix.deadline import Deadline, OutOfTime
from llmfix.guided import collect_values, read_answer
from llmfix.guided.convert import plain_json
from llmfix.guided.formats import read_key_values, read_table, read_xml
from llmfix.guided.known_keys import read_known_keys
from llmfix.guided.lists import read_lists
from llmfix.guided.scalars import read_scalars
from llmfix.guided.values import refine_strings
from llmfix.model import Risk, Span, Status

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
BOOLEAN = {"type": "boolean"}


def codes(result: llmfix.Result) -> list[str]:
    return [d.code for d in result.diagnostics]


def test_without_a_schema_nothing_is_read() -> None:
    for text in ("name: Ada\nage: 36", "<p><name>Ada</name></p>", "- a\n- b", "True."):
        result = llmfix.repair(text)
        assert not any(c.startswith("guided.") for c in codes(result)), text
    assert llmfix.repair("name: Ada\nage: 36").status is Status.UNPARSEABLE


def test_valid_json_is_never_touched() -> None:
    text = '{"name": "Ada", "age": 36}'
    result = llmfix.repair(text, schema=PERSON)
    assert result.status is Status.VALID
    assert result.diagnostics == ()
    fenced = llmfix.repair("```json\n" + text + "\n```", schema=PERSON)
    assert fenced.value == {"name": "Ada", "age": 36}
    assert not any(c.startswith("guided.") for c in codes(fenced))


def test_strings_in_json_are_read_only_when_the_whole_string_is_the_value() -> None:
    schema = {"type": "object", "properties": {"ok": BOOLEAN, "note": {"type": "string"}}}
    result = llmfix.repair('{"ok": "**Yes**", "note": "yes"}', schema=schema)
    assert result.value == {"ok": True, "note": "yes"}
    assert codes(result) == ["guided.in_value"]
    assert result.risk is Risk.SAFE
    for text in ('{"ok": "Yes, it builds"}', '{"ok": "Yes, it builds",}'):
        assert llmfix.repair(text, schema=schema).status is Status.INVALID
    from_lines = llmfix.repair("ok: Yes, it builds", schema=schema)
    assert from_lines.value == {"ok": True}
    assert from_lines.risk is Risk.GUESS
    stays = llmfix.repair('{"a": 1}', schema={"type": "string"})
    assert stays.status is Status.INVALID


def test_a_reading_is_a_diagnostic_with_span_position_and_risk() -> None:
    text = "Thinking about it.\nThe answer is **True**"
    result = llmfix.repair(text, schema=BOOLEAN)
    assert result.status is Status.REPAIRED
    assert result.value is True
    (reading,) = [d for d in result.diagnostics if d.code == "guided.boolean"]
    assert reading.risk is Risk.GUESS
    assert reading.span is not None
    assert text[reading.span.start : reading.span.end] == "True"
    assert reading.position is not None
    assert (reading.position.line, reading.position.column) == (2, 17)
    assert result.candidate is not None
    assert result.candidate.origin == "guided"


def test_max_risk_safe_refuses_prose_guesses_but_keeps_safe_readings() -> None:
    refused = llmfix.repair("The answer is **True**", schema=BOOLEAN, max_risk="safe")
    assert refused.status is Status.UNPARSEABLE
    (note,) = [d for d in refused.diagnostics if d.code == "guided.refused"]
    assert note.data == {"reading": "guided.boolean", "value": True}
    kept = llmfix.repair("**True**", schema=BOOLEAN, max_risk="safe")
    assert kept.value is True
    assert gate_failures(kept, "invalid", Risk.SAFE) == []


def test_competing_values_are_named_not_guessed() -> None:
    result = llmfix.repair("ONE or TWO, hard to say", schema={"enum": ["ONE", "TWO"]})
    assert result.status is Status.UNPARSEABLE
    (ambiguous,) = [d for d in result.diagnostics if d.code == "guided.ambiguous"]
    assert ambiguous.data == {"candidates": ["ONE", "TWO"]}


def test_reasoning_blocks_are_not_read() -> None:
    result = llmfix.repair("<think>ONE? or TWO?</think>\nTWO", schema={"enum": ["ONE", "TWO"]})
    assert result.value == "TWO"
    readings, _ = read_answer("<think>yes</think>", BOOLEAN, [Span(0, 18)])
    assert readings == []


def test_several_values_become_the_array_the_schema_wants() -> None:
    schema = {"type": "array", "items": {"type": "object", "required": ["key"]}}
    text = 'a {"key": 1} b {"other": 2} c {"key": 3}'
    result = llmfix.repair(text, schema=schema)
    assert result.value == [{"key": 1}, {"key": 3}]
    assert "guided.collect" in codes(result)
    assert collect_values([(Span(0, 1), 1)], lambda v: True) is None


def test_pick_all_is_left_alone() -> None:
    result = llmfix.repair("- a\n- b", schema={"type": "array"}, pick="all")
    assert not any(c.startswith("guided.") for c in codes(result))


def test_invented_keys_give_way_to_the_known_keys_reading() -> None:
    schema = {
        "type": "object",
        "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
        "required": ["title", "body"],
    }
    body = 'Late, and "they" came: six, then three.\n\nNobody, "not one", spoke.'
    result = llmfix.repair('{"title": "T", "body": ' + body + "}", schema=schema)
    assert result.value == {"title": "T", "body": body}
    assert "guided.known_keys" in codes(result)


def test_a_guessed_parse_gives_way_only_to_a_less_risky_reading() -> None:
    numbers = {"type": "array", "items": {"type": "integer"}}
    listed = llmfix.repair("- 1\n- 2\n- 3", schema=numbers)
    assert listed.value == [1, 2, 3]
    assert listed.risk is Risk.SAFE
    cut = llmfix.repair(
        '{"name": "Ada", "age": 3',
        schema={"type": "object", "properties": {"name": {}, "age": {}}},
    )
    assert cut.value == {"name": "Ada", "age": 3}
    assert not any(c.startswith("guided.") for c in codes(cut))


def test_optional_properties_stay_missing_and_required_defaults_fill() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "nick": {"type": "string"},
            "lang": {"type": "string", "default": "en"},
        },
        "required": ["name", "lang"],
    }
    result = llmfix.repair("<person><name>Ada</name></person>", schema=schema)
    assert result.value == {"name": "Ada", "lang": "en"}


def test_the_installed_program_refuses_a_guess_under_max_risk_safe(tmp_path: Path) -> None:
    schema = tmp_path / "bool.json"
    schema.write_text(json.dumps(BOOLEAN))
    exe = shutil.which("llmfix", path=str(Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "llmfix"]
    args = [*command, "repair", "--schema", str(schema)]
    run = {"capture_output": True, "text": True, "timeout": 60, "check": False}
    guessed = subprocess.run(args, input="The answer is **True**", **run)  # type: ignore[call-overload]
    assert (guessed.returncode, guessed.stdout.strip()) == (0, "true")
    assert "guided.boolean" in guessed.stderr
    refused = subprocess.run([*args, "--max-risk", "safe"], input="The answer is **True**", **run)  # type: ignore[call-overload]
    assert refused.returncode == 1
    assert "guided.refused" in refused.stderr


def test_the_readings_stop_at_the_time_budget() -> None:
    # A few hundred bytes, quick to extract and parse; YAML aliases make the value they stand
    # for a hundred thousand items, which the reading walks (and gives up on) in Python.
    keys = "abcdef"
    schema = {"type": "object", "properties": {k: {} for k in keys}}
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, key in itertools.pairwise(keys):
        lines.append(f"{key}: &{key} [" + ", ".join([f"*{prev}"] * 10) + "]")
    text = "```yaml\n" + "\n".join(lines) + "\n```"
    result = llmfix.repair(text, schema=schema, time_budget=0.05)
    late = [d for d in result.diagnostics if d.code == "limits.time" and d.stage == "guided"]
    assert late
    assert "schema-guided reading" in late[0].message


def test_strict_json_alone_in_a_fence_is_not_re_read_but_prose_around_it_may_be() -> None:
    schema = {"properties": {"a": {"type": "integer"}}}
    fenced = llmfix.repair('```json\n{"a": "x 1", "b": 2}\n```', schema=schema)
    assert fenced.status is Status.INVALID
    assert fenced.value == {"a": "x 1", "b": 2}
    result = llmfix.repair(
        '<result>{"value": 5}</result>',
        schema={
            "type": "object",
            "properties": {"result": {"type": "object"}},
            "required": ["result"],
        },
    )
    assert result.value == {"result": {"value": 5}}


# -- deadlines: every reader checks the one it is given -------------------------------------


def _spent() -> Deadline:
    deadline = Deadline(0.001, "guided")
    time.sleep(0.002)
    return deadline


_ROWS = {"type": "array", "items": PERSON}
_SPENT_READINGS: list[tuple[str, Callable[[Deadline], Any]]] = [
    (
        "xml",
        lambda d: read_xml("<p><name>Ada</name><age>36</age></p>" * 3, 0, _ROWS, _ROWS, d),
    ),
    (
        "table",
        lambda d: read_table("| name | age |\n|---|---|\n| Ada | 36 |\n", 0, _ROWS, _ROWS, d),
    ),
    ("key_value", lambda d: read_key_values("name: Ada\nage: 36\n", 0, PERSON, PERSON, d)),
    ("list", lambda d: read_lists("- 1\n- 2\n", 0, {"type": "array"}, {"type": "array"}, d)),
    (
        "known_keys",
        lambda d: read_known_keys('{"name": Ada, "age": 36}', 0, PERSON, PERSON, None, d),
    ),
    ("in_value", lambda d: refine_strings({"age": "36"}, PERSON, Span(0, 1), deadline=d)),
    ("yaml value", lambda d: plain_json({"a": [1] * 5000}, d)),  # checked every 1,024 values
    ("read_answer", lambda d: read_answer("name: Ada\nage: 36", PERSON, deadline=d)),
    (
        "enum in prose",
        lambda d: read_scalars("I would say b.", 0, {"enum": ["a", "b"]}, {}, d),
    ),
]


@pytest.mark.parametrize(
    "read", [r for _, r in _SPENT_READINGS], ids=[n for n, _ in _SPENT_READINGS]
)
def test_each_reader_stops_at_a_spent_deadline(read: Callable[[Deadline], Any]) -> None:
    with pytest.raises(OutOfTime) as stopped:
        read(_spent())
    assert stopped.value.stage == "guided"
    assert read(Deadline(30, "guided")) is not None  # the same reading, in time


def test_a_long_xml_answer_is_checked_while_it_is_scanned() -> None:
    # One tag scanned after another: the scan itself checks (not only the values read).
    text = "<a>" * 5000 + "</b>" * 5000
    with pytest.raises(OutOfTime):
        read_xml(text, 0, _ROWS, _ROWS, _spent())
