"""The lean path of `check` (``llmfix.batch.core.strict_valid``): a text that is strict JSON and
valid gets the result the pipeline would give it, field for field, and every report
format writes the same bytes whether the lean path or the general one checked it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import llmfix.batch.core as batch
from llmfix.batch.core import BatchLimits, Profile, strict_valid
from llmfix.batch.pool import run_items
from llmfix.cli import app
from llmfix.inputs import Item, ReadOptions, items_from_text
from llmfix.jsontext import loads
from llmfix.options import RepairOptions
from llmfix.pipeline.core import repair_text
from llmfix.schema.load import schema_from_value
from llmfix.schema.validate import SchemaValidator

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
LIST_SCHEMA = {"type": "array", "items": {"type": "integer"}}

# Texts the lean path takes: strict JSON objects and arrays, valid.
TAKEN = [
    '{"name": "Ada", "age": 36}',
    '  \n\n  {"name": "Ada", "age": 36}\n\n',  # the anchor is on line 3
    '\u3000\u00a0{"name": "\u00e9\U0001f600", "age": 1}\u2028',  # Unicode whitespace
    '{\n  "name": "Ada",\n  "age": 36,\n  "x": [1.50, 1e5, -0.0, 0.1000000000000000055511]\n}',
    '{"name": "A\\u0000\\"\\\\", "age": 12345678901234567890, "z": {"y": [[], {}]}}',
]
# Texts it leaves to the pipeline: not strict, not valid, not an object or array.
LEFT = [
    '{"name": "Ada", "age": "36"}',  # invalid: schema repair coerces it
    '{"name": "Ada"}',  # invalid: a required key is missing
    '{"name": "Ada", "age": 1, "age": 2}',  # a duplicate key
    '{"name": "Ada", "age": 1, "big": 1e400}',  # beyond the float range
    '{"name": "Ada", "age": NaN}',
    "{'name': 'Ada', 'age': 36}",
    '{"name": "Ada", "age": 36,}',
    'Sure:\n```json\n{"name": "Ada", "age": 36}\n```',
    '"just a string"',
    "42",
    "",
    "   ",
    "[" * 100_000 + "]" * 100_000,  # too deep for the decoder
    "not json at all",
]


def validator(schema: Any = SCHEMA) -> SchemaValidator:
    return SchemaValidator(schema_from_value(schema))


def same_result(lean: Any, general: Any) -> None:
    """Every field equal, the candidate too; the clock's stages the same (not its readings)."""
    assert lean.status is general.status
    assert lean.value == general.value
    assert json.dumps(lean.value) == json.dumps(general.value)
    assert lean.diagnostics == general.diagnostics
    assert lean.patch == general.patch
    assert lean.attempts == general.attempts
    assert lean.candidate == general.candidate
    assert lean.values == general.values
    assert list(lean.timings.stages) == list(general.timings.stages)
    assert lean.to_dict().keys() == general.to_dict().keys()


@pytest.mark.parametrize("text", TAKEN)
@pytest.mark.parametrize("pick", ["best", "all"])
def test_a_strict_valid_text_gets_the_pipelines_result(text: str, pick: Any) -> None:
    options = RepairOptions(pick=pick)
    lean = strict_valid(text, validator(), options)
    assert lean is not None
    same_result(lean, repair_text(text, options=options, validator=validator()))


@pytest.mark.parametrize("text", ["[1, 2, 3]", "[]", "{}", '{"a": [{"b": null}]}'])
def test_without_a_schema_any_strict_object_or_array_is_taken(text: str) -> None:
    lean = strict_valid(text, None, RepairOptions())
    assert lean is not None
    same_result(lean, repair_text(text, options=RepairOptions()))
    assert list(lean.timings.stages) == ["parse"]


@pytest.mark.parametrize("text", LEFT)
def test_anything_else_is_left_to_the_pipeline(text: str) -> None:
    assert strict_valid(text, validator(), RepairOptions()) is None


@pytest.mark.parametrize(
    ("text", "strict"),
    [
        ('{"name": "Ada", "age": 36}', True),
        ('\n  {"name": "Ada", "age": 36, "x": [1.50, 1e5]}\r\n', True),
        ('{"name": "Ada", "age": 1, "age": 2}', False),  # read leniently, as before
        ('{"name": "Ada", "age": NaN}', False),
        ('{"name": "Ada", "big": 1e400}', False),
        ('\u00a0{"name": "Ada", "age": 36}', False),  # not JSON's whitespace
    ],
)
def test_a_json_document_read_strictly_is_not_decoded_again(text: str, strict: bool) -> None:
    [item] = items_from_text(text, "a.json", ReadOptions(), "json")
    assert item.kind == "document"
    try:
        lenient = loads(text)
    except ValueError:
        lenient = None  # not JSON to either decoder: the file is one raw text
    assert json.dumps(item.record) == json.dumps(lenient)  # the record is what it was
    if not strict:
        assert item.decoded is None
        return
    assert item.decoded is not None
    assert item.decoded[0] is item.record
    reused = strict_valid(item.text, validator(), RepairOptions(), item.decoded)
    assert reused is not None
    assert reused.value is item.record
    same_result(reused, repair_text(item.text, options=RepairOptions(), validator=validator()))


def test_an_api_response_keeps_no_decoded_value_for_its_answers() -> None:
    answer = '{"name": "Ada", "age": 36}'
    body = {"choices": [{"message": {"role": "assistant", "content": answer}}]}
    [item] = items_from_text(json.dumps(body), "r.json", ReadOptions(), "json")
    assert item.text == answer
    assert item.decoded is None


def test_an_array_is_checked_against_its_schema() -> None:
    assert strict_valid("[1, 2]", validator(LIST_SCHEMA), RepairOptions()) is not None
    assert strict_valid('[1, "2"]', validator(LIST_SCHEMA), RepairOptions()) is None


def spy_on_lean_path(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each item asked took the lean path, in order."""
    taken: list[bool] = []
    original = batch.strict_valid

    def spy(*args: Any) -> Any:
        found = original(*args)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(batch, "strict_valid", spy)
    return taken


def _outcomes(texts: list[str], profile: Profile) -> list[Any]:
    items = [
        Item(id=f"a{i}", source=f"a{i}", line=1, text=t, kind="text") for i, t in enumerate(texts)
    ]
    return list(run_items(items, {"": profile}, BatchLimits(jobs=1)))


def test_run_items_gives_the_same_outcomes_with_or_without_the_lean_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = [t for t in TAKEN + LEFT if len(t) < 1000]
    profile = Profile(validator())
    taken = spy_on_lean_path(monkeypatch)
    lean = _outcomes(texts, profile)
    assert taken.count(True) == len(TAKEN)
    monkeypatch.setattr(batch, "strict_valid", lambda *args: None)
    general = _outcomes(texts, profile)
    for a, b in zip(lean, general, strict=True):
        assert (a.item, a.error, a.anchor) == (b.item, b.error, b.anchor)
        assert (a.result is None) == (b.result is None)
        if a.result is not None:
            same_result(a.result, b.result)


def test_a_pool_gives_what_this_process_gives() -> None:
    texts = [t for t in TAKEN + LEFT if len(t) < 1000] * 3
    items = [
        Item(id=f"a{i}", source=f"a{i}", line=1, text=t, kind="text") for i, t in enumerate(texts)
    ]
    profiles = {"": Profile(validator())}
    here = list(run_items(items, profiles, BatchLimits(jobs=1)))
    pooled = list(run_items(items, profiles, BatchLimits(jobs=2, serial_budget=0.0)))
    for a, b in zip(here, pooled, strict=True):
        assert (a.item, a.error, a.anchor) == (b.item, b.error, b.anchor)
        if a.result is not None:
            same_result(a.result, b.result)


def test_tool_calls_never_take_the_lean_path(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any) -> Any:
        raise AssertionError("the lean path was taken")

    monkeypatch.setattr(batch, "strict_valid", fail)
    [outcome] = _outcomes(['{"name": "get", "arguments": {}}'], Profile(tool_calls=True))
    assert outcome.error is None


def test_a_crash_on_the_lean_path_is_the_items_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(self: Any, value: Any) -> bool:
        raise RuntimeError("boom")

    monkeypatch.setattr(SchemaValidator, "is_valid", crash)
    [lean] = _outcomes(['{"name": "Ada", "age": 1}'], Profile(validator()))
    monkeypatch.setattr(batch, "strict_valid", lambda *args: None)
    [general] = _outcomes(['{"name": "Ada", "age": 1}'], Profile(validator()))
    assert lean.error is not None
    assert lean.error == general.error
    assert "boom" in lean.error.message


# ---------------------------------------------------------------- every report format

FILES: dict[str, bytes] = {
    "valid.txt": b'{"name": "Ada", "age": 36}',
    "valid_pretty.json": b'{\n  "name": "Bo",\n  "age": 7\n}\n',
    "valid_late.txt": b'\n\n   {"name": "Cy", "age": 1, "x": [1.50, 1e5, -0.0]}',
    "bom.txt": b'\xef\xbb\xbf{"name": "Di", "age": 2}',  # extracted (the BOM is normalized)
    "valid_bad_utf8.txt": b'{"name": "caf\xe9", "age": 3}',
    "invalid.txt": b'{"name": "Ed"}',
    "repaired.txt": b'{"name": "Flo", "age": "5"}',
    "python.md": b"Here:\n```python\n{'name': 'Gus', 'age': 9}\n```\n",
    "fenced.md": b'Sure!\n```json\n{"name": "Hal", "age": 4}\n```\n',
    "duplicate.txt": b'{"name": "Ida", "age": 1, "age": 2}',
    "unparseable.txt": b"I cannot help with that.",
    "empty.txt": b"",
    "array.txt": b"[1, 2]",
    "log.jsonl": b'{"output": "{\\"name\\": \\"Jo\\", \\"age\\": 5}"}\n{"output": "nope"}\n',
}

# What differs between two runs of the same check: the clock.
_CLOCK = [
    (re.compile(r'"seconds": [0-9.e-]+'), '"seconds": 0'),
    (re.compile(r'"finished": "[^"]*"'), '"finished": ""'),
    (re.compile(r"finished: '[^']*'"), "finished: ''"),
    (re.compile(r'"timings": \{[^{}]*\}'), '"timings": {}'),
    (re.compile(r"timings:\n(?:\s+\w+: [0-9.e-]+\n)+"), "timings: {}\n"),
    (re.compile(r"seconds: [0-9.e-]+"), "seconds: 0"),
    (re.compile(r'time="[0-9.]+"'), 'time="0"'),
    (re.compile(r"in [0-9.]+ s"), "in 0 s"),
    (re.compile(r"\d+(?:\.\d+)? ?(?:ms|µs|s)\b"), "T"),
]


def _without_clock(text: str) -> str:
    for pattern, blank in _CLOCK:
        text = pattern.sub(blank, text)
    return text


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LLMFIX_CONFIG", raising=False)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    answers = tmp_path / "answers"
    answers.mkdir()
    for name, data in FILES.items():
        (answers / name).write_bytes(data)
    (answers / "broken_link.txt").symlink_to(tmp_path / "missing.txt")  # unreadable
    return tmp_path


def _run(args: list[str], report: Path | None) -> tuple[int, str, str, str]:
    result = CliRunner().invoke(app, args)
    written = report.read_text(encoding="utf-8") if report is not None else ""
    return (
        result.exit_code,
        _without_clock(result.stdout),
        _without_clock(result.stderr),
        _without_clock(written),
    )


@pytest.mark.parametrize(
    "fmt", [None, "text", "json", "yaml", "junit", "github", "sarif", "baseline", "html"]
)
@pytest.mark.parametrize("verbosity", [[], ["-v"], ["-q"]])
def test_every_format_writes_the_same_bytes_on_either_path(
    tree: Path, monkeypatch: pytest.MonkeyPatch, fmt: str | None, verbosity: list[str]
) -> None:
    args = ["check", "answers", "-s", "schema.json", "--no-progress", *verbosity]
    if fmt is not None:
        args += ["-f", fmt]
    report = tree / "report.out" if fmt not in (None, "text") else None
    if report is not None:
        args += ["-o", str(report)]
    taken = spy_on_lean_path(monkeypatch)
    lean = _run(args, report)
    assert taken.count(True) == 4  # the four valid files
    monkeypatch.setattr(batch, "strict_valid", lambda *a: None)
    general = _run(args, report)
    assert lean == general
    # invalid, unparseable and unreadable files fail the run; writing a baseline does not
    assert lean[0] == (0 if fmt == "baseline" else 1)


def test_the_same_bytes_with_every_report_at_once_and_two_workers(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = ["r.json", "r.yaml", "r.sarif", "r.xml", "baseline:r.base"]
    args = ["check", "answers", "-s", "schema.json", "--no-progress", "-j", "2", "-v"]
    for name in reports:
        args += ["--report", name]

    def run() -> tuple[Any, ...]:
        result = CliRunner().invoke(app, args)
        texts = [
            _without_clock((tree / name.split(":")[-1]).read_text(encoding="utf-8"))
            for name in reports
        ]
        return (result.exit_code, _without_clock(result.stdout), *texts)

    lean = run()
    monkeypatch.setattr(batch, "strict_valid", lambda *a: None)
    assert lean == run()
