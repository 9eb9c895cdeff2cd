"""Golden cases: realistic model answers under ``tests/cases/<name>/``, one test id per case.

Each case directory holds:

- ``input.txt`` — the raw model response, read byte-for-byte as UTF-8 (a BOM stays in);
- ``schema.json`` — optional JSON Schema passed to ``llmfix.repair``;
- ``expected.json`` — the JSON value the user should get (absent when no value is expected,
  e.g. for unparseable input or when the case is about a diagnostic, not the value);
- ``expected.report.json`` — ``{"status": ..., "codes": [...]}``: the exact status, and
  diagnostic codes that must be present (others may appear too).

Adding a case needs no code change: make a directory with those files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import llmfix
from llmfix.model import Result, Status

CASES_DIR = Path(__file__).parent / "cases"
_MISSING = object()


@dataclass(frozen=True)
class GoldenCase:
    name: str
    text: str
    schema: Any
    expected: Any  # _MISSING when the case has no expected.json
    status: Status
    codes: tuple[str, ...]

    @property
    def has_value(self) -> bool:
        return self.expected is not _MISSING


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _load(directory: Path) -> GoldenCase:
    # newline="" keeps \r\n and lone \r exactly as written; the input is raw model output.
    with (directory / "input.txt").open(encoding="utf-8", newline="") as fh:
        text = fh.read()
    schema_path = directory / "schema.json"
    expected_path = directory / "expected.json"
    report = _read_json(directory / "expected.report.json")
    return GoldenCase(
        name=directory.name,
        text=text,
        schema=_read_json(schema_path) if schema_path.exists() else None,
        expected=_read_json(expected_path) if expected_path.exists() else _MISSING,
        status=Status(report["status"]),
        codes=tuple(report.get("codes", ())),
    )


def _discover() -> list[GoldenCase]:
    return [_load(d) for d in sorted(CASES_DIR.iterdir()) if (d / "input.txt").is_file()]


CASES = _discover()
VALUE_CASES = [c for c in CASES if c.has_value]


def _canonical(value: Any) -> str:
    """Type-exact comparison key: ``1`` vs ``1.0`` vs ``true`` and ``"12"`` vs ``12`` differ."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, indent=1)


def _repair(case: GoldenCase, text: str | None = None) -> Result:
    return llmfix.repair(case.text if text is None else text, schema=case.schema)


def _codes(result: Result) -> set[str]:
    return {d.code for d in result.diagnostics}


def _explain(result: Result) -> str:
    lines = [f"status={result.status.value}"]
    lines += [f"  {d.code} [{d.severity.value}] {d.message}" for d in result.diagnostics]
    lines += [f"  patch {op.op} {op.path} ({op.rule})" for op in result.patch]
    return "\n".join(lines)


def _repairs(result: Result) -> list[str]:
    """Everything that changed the value: diagnostics with a risk tier, and patch operations."""
    changed = [d.code for d in result.diagnostics if d.risk is not None]
    return changed + [f"{op.op} {op.path}" for op in result.patch]


def test_cases_are_discovered() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_status(case: GoldenCase) -> None:
    result = _repair(case)
    assert result.status is case.status, _explain(result)


@pytest.mark.parametrize("case", VALUE_CASES, ids=lambda c: c.name)
def test_value(case: GoldenCase) -> None:
    result = _repair(case)
    assert _canonical(result.value) == _canonical(case.expected), _explain(result)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_codes(case: GoldenCase) -> None:
    result = _repair(case)
    missing = sorted(set(case.codes) - _codes(result))
    assert not missing, f"missing codes {missing}\n{_explain(result)}"


@pytest.mark.parametrize("case", VALUE_CASES, ids=lambda c: c.name)
def test_idempotent(case: GoldenCase) -> None:
    """Repairing the expected output again changes nothing and needs nothing."""
    result = _repair(case, json.dumps(case.expected, ensure_ascii=False))
    # A value that still violates the schema stays invalid (an invalid one, or a cut-off one
    # whose schema errors the case lists); everything else is now valid as-is.
    violates = case.status is Status.INVALID or (
        case.status is Status.TRUNCATED and any(c.startswith("schema.") for c in case.codes)
    )
    want = Status.INVALID if violates else Status.VALID
    outcome = (result.status, _canonical(result.value), _repairs(result))
    assert outcome == (want, _canonical(case.expected), []), _explain(result)
