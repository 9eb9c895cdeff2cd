"""`--partial`: a cut-off output keeps what is complete and is never claimed valid."""

from __future__ import annotations

import llmfix
from llmfix.batch.gate import gate_failures
from llmfix.model import Status

SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 3},
        "score": {"type": "integer"},
    },
    "required": ["title", "tags", "score"],
}


def _codes(result: llmfix.Result) -> set[str]:
    return {d.code for d in result.diagnostics}


def test_the_value_cut_short_is_left_out() -> None:
    result = llmfix.repair('{"title": "Dune", "tags": ["sci-fi", "clas', SCHEMA, partial=True)
    assert result.value == {"title": "Dune", "tags": ["sci-fi"]}
    removed = [d for d in result.diagnostics if d.code == "partial.incomplete_value"]
    assert [(d.pointer, d.data["removed"] if d.data else None) for d in removed] == [
        ("/tags/1", "clas")
    ]


def test_what_has_not_arrived_is_marked_missing_not_failed() -> None:
    result = llmfix.repair('{"title": "Dune", "tags": ["sci-fi", "clas', SCHEMA, partial=True)
    missing = sorted(d.message for d in result.diagnostics if d.code == "partial.missing")
    assert len(missing) == 2  # score not arrived, tags too short so far
    assert result.status is Status.TRUNCATED
    assert not result.errors


def test_without_partial_the_guess_is_kept_and_missing_is_an_error() -> None:
    result = llmfix.repair('{"title": "Dune", "tags": ["sci-fi", "clas', SCHEMA)
    assert result.value["tags"] == ["sci-fi", "clas"]
    # truncation outranks schema errors: the status says cut off, the errors stay listed
    assert result.status is Status.TRUNCATED
    assert {"schema.required", "parse.cut_off"} <= {d.code for d in result.errors}


def test_a_partial_result_is_never_valid() -> None:
    result = llmfix.repair('{"title": "Dune", "tags": ["a", "b", "c"], "score": 7', partial=True)
    assert result.status is Status.TRUNCATED
    assert result.value == {"title": "Dune", "tags": ["a", "b", "c"]}  # 7 may be 70


def test_complete_input_is_unaffected_by_partial() -> None:
    result = llmfix.repair('{"title": "Dune", "tags": ["a", "b", "c"], "score": 7}', partial=True)
    assert result.status is Status.VALID
    assert "partial.missing" not in _codes(result)


def test_wrong_values_stay_errors_in_partial_mode() -> None:
    result = llmfix.repair('{"title": {"x": 1}, "tags": ["a", "b', SCHEMA, partial=True)
    assert result.status is Status.TRUNCATED
    assert "schema.type" in {d.code for d in result.errors}
    # what arrived is wrong: --partial does not let it through
    assert gate_failures(result, partial=True)
