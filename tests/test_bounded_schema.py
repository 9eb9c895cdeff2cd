"""Schema work stays bounded on hostile values and schemas (issue 27, items 6, 7 and 9).

No test here is timed: each counts operations (values copied, validations run, requests
made) or gives a deadline that expires after a set number of checks, and asserts on that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmfix import schema_context, validate
from llmfix import schema_walk as sw
from llmfix.deadline import Deadline, OutOfTime
from llmfix.schema_check import RefRefused
from llmfix.schema_repair import coerce_to_schema
from llmfix.schemas import schema_from_value
from llmfix.validate import REMOTE_MAX_DOCUMENTS, SchemaValidator
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

# The shape: an array nested 300 deep around 2,000 numbers, where an object is wanted.
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
