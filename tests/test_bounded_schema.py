"""Schema work stays bounded on hostile values and schemas (issue 27, items 6, 7 and 9).

No test here is timed: each counts operations (values copied, validations run, requests
made) or gives a deadline that expires after a set number of checks, and asserts on that.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from llmfix.deadline import Deadline, OutOfTime
from llmfix.schema import context as schema_context
from llmfix.schema import validate
from llmfix.schema import walk as sw
from llmfix.schema.budget import bounded_class, pattern_is_risky, steps
from llmfix.schema.check import RefRefused
from llmfix.schema.load import schema_from_value
from llmfix.schema.repair import coerce_to_schema
from llmfix.schema.validate import REMOTE_MAX_DOCUMENTS, SchemaValidator
from tests.llm_server import LlmServer
from tests.test_hardening import assert_no_traceback, error_lines, run_cli

NO_PROXY = {"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}


def nested(value: Any, depth: int) -> Any:
    """``value`` inside ``depth`` one-element arrays."""
    for _ in range(depth):
        value = [value]
    return value


def elements(value: Any) -> int:
    """How many JSON values ``value`` holds, itself included."""
    count, stack = 0, [value]
    while stack:
        node = stack.pop()
        count += 1
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


class _ExpiresAfter(Deadline):
    """A deadline that passes after a number of checks, whatever the clock says."""

    __slots__ = ("checks_left",)

    def __init__(self, checks: int) -> None:
        super().__init__(3600, "schema_repair")
        self.checks_left = checks

    def check(self) -> None:
        self.checks_left -= 1
        if self.checks_left < 0:
            raise OutOfTime(self.stage, 1.0)


# --- item 6: deep arrays cost their size, not depth × size -------------------------------

# The issue's shape: an array nested 300 deep around 2,000 numbers, where an object is wanted.
DEEP = nested([1] * 2_000, 300)
WANTS_OBJECT = {"type": "object", "required": ["a"]}


def test_repairing_a_deep_array_copies_about_its_size_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    copied: list[int] = []
    real_copy = sw.copy_json

    def counting_copy(value: Any, memo: dict[int, Any] | None = None) -> Any:
        copied.append(elements(value))
        return real_copy(value, memo)

    monkeypatch.setattr(sw, "copy_json", counting_copy)
    outcome = coerce_to_schema(DEEP, WANTS_OBJECT)
    assert not outcome.patch  # no reading of the array makes it an object
    # The value returned is one copy of the input (before: three copies per level tried).
    assert sum(copied) <= 2 * elements(DEEP)


def test_a_type_mismatch_is_decided_without_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    """jsonschema's type error writes the value's repr (its whole size) at each level."""
    asked: list[Any] = []
    real_check = schema_context.RepairContext._check

    def counting_check(self: Any, value: Any, schema: Any, resolver: Any) -> bool | None:
        asked.append(value)
        return real_check(self, value, schema, resolver)

    monkeypatch.setattr(schema_context.RepairContext, "_check", counting_check)
    coerce_to_schema(DEEP, WANTS_OBJECT)
    assert not any(isinstance(value, list) for value in asked)


def test_unwrapping_a_deep_array_stops_at_the_depth_limit_with_a_note() -> None:
    outcome = coerce_to_schema(DEEP, WANTS_OBJECT)
    assert [d.code for d in outcome.diagnostics] == ["repair.limit"]
    assert outcome.value == DEEP


def test_the_deadline_is_checked_while_unwrapping_nested_arrays() -> None:
    # Before, the unwrap chain went 300 levels deep after the root's one check.
    with pytest.raises(OutOfTime):
        coerce_to_schema(DEEP, WANTS_OBJECT, deadline=_ExpiresAfter(20))


def test_unwrapped_steps_share_nothing_with_the_input_or_the_output() -> None:
    inner = {"n": "1"}
    value = nested(inner, 3)
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    outcome = coerce_to_schema(value, schema)
    assert outcome.value == {"n": 1}
    assert [op.rule for op in outcome.patch] == ["unwrap_array"] * 3 + ["coerce_integer"]
    held = [op.before for op in outcome.patch] + [op.value for op in outcome.patch]
    inner["n"] = "changed"
    outcome.value["n"] = "changed too"
    assert all("changed" not in repr(part) for part in held)
    first = outcome.patch[0]
    assert first.before == nested({"n": "1"}, 3)
    assert first.value == first.after == nested({"n": "1"}, 2)


# --- item 9: a remote $ref chain ends at a cap --------------------------------------------


def test_an_endless_remote_ref_chain_stops_at_the_document_cap(
    server: LlmServer, tmp_path: Path
) -> None:
    """Each document refers to the next, one folder deeper (the issue's sub/sub/… chain)."""
    length = REMOTE_MAX_DOCUMENTS + 8
    for step in range(length):
        last = step == length - 1
        body = {"type": "integer"} if last else {"$ref": "sub/ok.json"}
        server.serve("/" + "sub/" * step + "ok.json", body)
    (tmp_path / "s.json").write_text(json.dumps({"$ref": server.url + "/ok.json"}))
    (tmp_path / "a.txt").write_text("1")
    proc = run_cli(
        "check", "a.txt", "-s", "s.json", "--allow-remote-refs", "--no-progress",
        cwd=tmp_path, env=NO_PROXY,
    )  # fmt: skip
    assert_no_traceback(proc)
    [error] = error_lines(proc.stderr)
    assert proc.returncode == 2
    assert f"{REMOTE_MAX_DOCUMENTS} remote documents (the cap per schema)" in error
    assert len(server.paths) == REMOTE_MAX_DOCUMENTS


def test_a_short_remote_ref_chain_is_followed_to_its_end(server: LlmServer) -> None:
    for step in range(3):
        body = {"type": "integer"} if step == 2 else {"$ref": "sub/ok.json"}
        server.serve("/" + "sub/" * step + "ok.json", body)
    spec = schema_from_value({"$ref": server.url + "/ok.json"})
    validator = SchemaValidator(spec, allow_remote=True)
    assert (validator.is_valid(1), validator.is_valid("x"), len(server.paths)) == (True, False, 3)


def test_requests_are_capped_as_well_as_documents(server: LlmServer) -> None:
    url = server.serve("/ok.json", {"type": "integer"})
    validator = SchemaValidator(schema_from_value({"type": "integer"}), allow_remote=True)
    validator._requests = validate.REMOTE_MAX_REQUESTS  # as if redirects had used them up
    with pytest.raises(RefRefused, match=r"64 HTTP requests \(the cap per schema\)"):
        validator._retrieve(url)
    assert server.paths == []


# --- item 7: hostile patterns and schemas end -----------------------------------------------

EVIL = "^(a+)+$"
EVIL_TEXT = "a" * 30 + "!"


@pytest.fixture
def no_backtracking_on_evil(monkeypatch: pytest.MonkeyPatch) -> None:
    """re.search with the catastrophic pattern fails the test instead of hanging it."""
    real_search = re.search

    def guarded(pattern: Any, text: Any, flags: int = 0) -> Any:
        assert pattern != EVIL, "Python's re was asked to backtrack on ^(a+)+$"
        return real_search(pattern, text, flags)

    monkeypatch.setattr(re, "search", guarded)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "string", "pattern": EVIL}, EVIL_TEXT),
        ({"type": "object", "propertyNames": {"pattern": EVIL}}, {EVIL_TEXT: 1}),
    ],
    ids=["pattern", "propertyNames"],
)
def test_a_catastrophic_pattern_is_decided_on_the_linear_engine(
    no_backtracking_on_evil: None, schema: dict[str, Any], value: Any
) -> None:
    validator = SchemaValidator(schema_from_value(schema))
    assert [d.code for d in validator.errors(value)] == ["schema.pattern"]
    assert validator.errors("aaaa" if "pattern" in schema else {"aaaa": 1}) == []
    assert coerce_to_schema(value, schema).patch == ()


@pytest.mark.parametrize(
    "pattern", [EVIL, "(a|aa)*$", r"^(\w+\s?)*$", r"(\d+,?)+x", r"(a)\1", "((ab)*c)*"]
)
def test_patterns_that_can_backtrack_without_end_are_risky(pattern: str) -> None:
    assert pattern_is_risky(pattern)


@pytest.mark.parametrize(
    "pattern",
    [r"^[a-z]+$", r"^\d{3}-\d{4}$", "^(foo|bar)$", "^(ab)+$", r"^[A-Z][a-z]*(\.[a-z]+)?$", "a{2}"],
)
def test_ordinary_patterns_stay_on_python_re(pattern: str) -> None:
    assert not pattern_is_risky(pattern)


def test_a_catastrophic_pattern_properties_key_is_a_schema_error(tmp_path: Path) -> None:
    schema = {"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False}
    (tmp_path / "s.json").write_text(json.dumps(schema))
    (tmp_path / "a.txt").write_text(json.dumps({EVIL_TEXT: 1}))
    proc = run_cli("check", "a.txt", "-s", "s.json", "--no-progress", cwd=tmp_path)
    assert_no_traceback(proc)
    [error] = error_lines(proc.stderr)
    assert proc.returncode == 2
    assert ("could take exponential time" in error, EVIL in error) == (True, True)


def test_repair_does_not_backtrack_on_a_pattern_properties_key(
    no_backtracking_on_evil: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = {"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False}
    real_compile = re.compile

    def no_search_on_evil(pattern: Any, flags: int = 0) -> Any:
        compiled = real_compile(pattern, flags)
        if pattern == EVIL:  # compiling is fine; searching with it is not
            return _NoSearch(compiled)
        return compiled

    monkeypatch.setattr(re, "compile", no_search_on_evil)
    outcome = coerce_to_schema({EVIL_TEXT: 1}, schema)
    # Decided on the linear engine: the key does not match, so it is not allowed.
    assert (outcome.value, [op.rule for op in outcome.patch]) == ({}, ["remove_additional"])


class _NoSearch:
    def __init__(self, compiled: re.Pattern[str]) -> None:
        self.compiled = compiled

    def search(self, text: str) -> Any:
        raise AssertionError("Python's re was asked to backtrack on ^(a+)+$")


def refs_schema(levels: int, fan_out: int = 9) -> dict[str, Any]:
    """``levels`` nested ``allOf``s of ``fan_out`` ``$ref``s to the next level."""
    defs: dict[str, Any] = {
        f"d{k}": {"allOf": [{"$ref": f"#/$defs/d{k + 1}"}] * fan_out} for k in range(levels)
    }
    defs[f"d{levels}"] = {"type": "integer"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def test_a_schema_that_multiplies_subschemas_is_too_costly_not_a_hang() -> None:
    # 9**6 = 531,441 subschemas for one value; jsonschema-rs cannot be stopped, so it is
    # left out, and jsonschema stops at its step budget with a diagnostic.
    validator = SchemaValidator(schema_from_value(refs_schema(6)))
    [diagnostic] = validator.errors(1)
    assert diagnostic.code == "schema.too_costly"
    assert "keywords" in diagnostic.message
    assert validator.is_valid(1) is False


def test_a_schema_of_ordinary_reach_keeps_the_fast_path() -> None:
    validator = SchemaValidator(schema_from_value(refs_schema(3)))  # 820 in place
    assert validator._fast is not None
    assert (validator.errors(1), [d.code for d in validator.errors("x")][:1]) == (
        [],
        ["schema.type"],
    )


def test_schema_repair_stops_at_the_step_budget_with_a_note() -> None:
    # The issue's schema: 9**9 subschemas where the string is read as an integer.
    outcome = coerce_to_schema("1", refs_schema(9))
    notes = [d for d in outcome.diagnostics if d.code == "repair.schema_unusable"]
    assert ["keywords" in note.message for note in notes] == [True]


def test_the_deadline_is_read_inside_one_validation() -> None:
    # One validation of 1 against five levels applies ~130,000 keywords; the deadline is
    # read every 1,024 of them, so a deadline that passes at its 40th reading stops it
    # before the step budget does.
    bounded = bounded_class(Draft202012Validator)(refs_schema(5))
    with pytest.raises(OutOfTime), steps(lambda: 10**9, _ExpiresAfter(40)):
        bounded.is_valid(1)
