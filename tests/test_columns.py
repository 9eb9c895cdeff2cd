"""llmfix.batch.columns: an Arrow batch in, the result columns out, row for row as llmfix.repair."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import llmfix
from llmfix.batch import core as batch
from llmfix.errors import ConfigError

pa = pytest.importorskip("pyarrow", reason="the columnar core needs pyarrow (llmfix[parquet])")

from llmfix.batch.columns import (  # noqa: E402
    RESULT_COLUMNS,
    ColumnChecker,
    check_table,
    merge_summaries,
    partial_summary,
)
from tests.scale_fixture import SCHEMA, answer  # noqa: E402

TEXTS = [answer(i) for i in range(16)]


def test_every_row_gets_what_llmfix_repair_gives() -> None:
    texts = [t for t in TEXTS if t is not None]
    out = check_table(pa.table({"text": texts}), "text", SCHEMA).to_pylist()
    for text, row in zip(texts, out, strict=True):
        expected = llmfix.repair(text, schema=SCHEMA)
        assert row["status"] == expected.status.value
        value = None if expected.status.value == "unparseable" else json.dumps(expected.value)
        assert row["value"] == value
        assert row["risk"] == (expected.risk.value if expected.risk else None)
        assert json.loads(row["diagnostics"]) == [d.to_dict() for d in expected.diagnostics]
        assert row["error_codes"] == [d.code for d in expected.errors]


def test_bad_rows_are_rows_with_an_error_not_a_failed_batch() -> None:
    table = pa.table({"text": [None, "x" * 50, '{"name": "a", "age": 1}']})
    out = ColumnChecker("text", SCHEMA, max_item_size=30)(table).to_pylist()
    assert [(r["status"], r["error_codes"]) for r in out] == [
        ("error", ["input.missing_field"]),
        ("error", ["batch.too_large"]),
        ("valid", []),
    ]


def test_a_crash_in_one_row_is_that_rows_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = batch.check_text

    def flaky(text: str, profile: Any, tool: str | None = None, **kw: Any) -> Any:
        if text == "boom":
            raise RuntimeError("boom")
        return real(text, profile, tool, **kw)

    monkeypatch.setattr(batch, "check_text", flaky)
    out = check_table(pa.table({"text": ["boom", "{}"]}), "text").to_pylist()
    assert [r["status"] for r in out] == ["error", "valid"]
    assert out[0]["error_codes"] == ["batch.crash"]


def test_non_string_values_are_checked_as_their_json() -> None:
    table = pa.table({"obj": [{"name": "a", "age": "3"}, {"name": "b", "age": "x"}]})
    out = check_table(table, "obj", SCHEMA).to_pylist()
    assert [(r["status"], json.loads(r["value"])) for r in out] == [
        ("repaired", {"name": "a", "age": 3}),
        ("invalid", {"name": "b", "age": "x"}),
    ]


def test_the_schema_is_compiled_once_per_checker(monkeypatch: pytest.MonkeyPatch) -> None:
    from llmfix.schema import validate

    built = []
    original = validate.SchemaValidator.__init__

    def counting(self: Any, *args: Any, **kwargs: Any) -> None:
        built.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(validate.SchemaValidator, "__init__", counting)
    checker = ColumnChecker("text", {"type": "object", "title": "compiled once"})
    for _ in range(3):
        checker(pa.table({"text": ["{}", "[]", "nope"]}))
    assert len(built) == 1


def test_batches_keep_their_type_and_columns() -> None:
    table = pa.table({"id": [1, 2], "text": ['{"a": 1}', "no"]})
    checker = ColumnChecker("text")
    record_batch = checker(table.to_batches()[0])
    assert isinstance(record_batch, pa.RecordBatch)
    assert record_batch.schema.names == ["id", "text", *RESULT_COLUMNS]


def test_pandas_frames_are_checked_through_arrow() -> None:
    pytest.importorskip("pandas")  # llmfix[spark] brings it; llmfix[parquet] alone does not
    table = pa.table({"id": [1, 2], "text": ['{"a": 1}', "no"]})
    frame = ColumnChecker("text")(table.to_pandas())
    assert list(frame["status"]) == ["valid", "unparseable"]


def test_a_response_object_column_is_read_as_check_reads_a_record() -> None:
    completion = {"choices": [{"message": {"role": "assistant", "content": '{"a": 1,}'}}]}
    table = pa.table({"response": [json.dumps(completion), "not json"]})
    out = ColumnChecker("response", response=True)(table).to_pylist()
    assert [(r["status"], r["value"]) for r in out] == [
        ("repaired", '{"a": 1}'),
        ("error", None),
    ]
    assert out[1]["error_codes"] == ["input.bad_record"]


def test_tool_call_arguments_are_checked_against_their_tool(tmp_path: Path) -> None:
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([tool]))
    table = pa.table({"args": ['{"name": "a", "age": "1"}', "{}"], "tool": ["get_weather", "x"]})
    out = ColumnChecker("args", tools=str(tools), tool_column="tool")(table).to_pylist()
    assert [r["status"] for r in out] == ["repaired", "invalid"]
    assert "tools.unknown_name" in out[1]["error_codes"]


def test_missing_or_clashing_columns_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="no column 'answer'"):
        check_table(pa.table({"text": ["{}"]}), "answer")
    with pytest.raises(ConfigError, match="already has result columns: status"):
        check_table(pa.table({"text": ["{}"], "status": ["x"]}), "text")


def test_partial_summaries_merge_to_the_whole() -> None:
    texts = [t for t in TEXTS if t is not None]
    checked = check_table(pa.table({"text": texts}), "text", SCHEMA)
    whole = merge_summaries([partial_summary(checked)])
    halves = merge_summaries(
        [partial_summary(checked.slice(0, 5)), partial_summary(checked.slice(5))]
    )
    assert whole == halves
    assert whole["items"] == len(texts)
    assert whole["status"] == dict(sorted(Counter(checked.column("status").to_pylist()).items()))
    assert whole["repairs"] == sum(checked.column("repairs").to_pylist())


def test_importing_llmfix_imports_no_engine() -> None:
    code = (
        "import sys, llmfix, llmfix.batch.columns, llmfix.engines, llmfix.cli;"
        "print(sorted(m for m in ('ray', 'pyspark', 'pyarrow', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
