"""The columnar core: an Arrow batch of model answers in, the same batch with results out.

Every engine calls this one module (``llmfix.engines.ray``, ``llmfix.engines.spark``, and
``llmfix check --results``); it imports no engine. :class:`ColumnChecker` compiles the
schema (or tool registry) once, when it is made, and is then called per batch::

    checker = ColumnChecker("generated_text", schema={"type": "object"})
    table = checker(table)  # pyarrow.Table / RecordBatch (or pandas, via Arrow)

Added columns (:data:`RESULT_COLUMNS`), one row per input row:

``status``       valid | extracted | repaired | llm_repaired | invalid | unparseable |
                 error (the row was not checked: see its diagnostics)
``value``        the JSON value as JSON text (null when unparseable or not checked)
``risk``         the riskiest repair's tier (lossless | safe | guess), or null
``error_codes``  the codes of the error diagnostics, in order
``diagnostics``  every diagnostic as a JSON list (``Diagnostic.to_dict()`` each)
``repairs``      how many repairs were made (extraction alone is not a repair)

Each row gets what ``llmfix.repair`` gives for its text (tool-call arguments are checked
against their tool's schema, as ``check`` does). A bad row never fails the batch: a null
is ``error`` with ``input.missing_field``; a number, list or struct is checked as its JSON
text; a row over ``max_item_size`` characters is ``error`` with ``batch.too_large``; an
exception inside the pipeline is ``error`` with ``batch.crash``.

With ``response=True`` the column holds API response objects or transcripts (a struct, or
JSON text), read as ``check`` reads a JSONL record; the row's result is that of the first
answer in it (choice 0, the last assistant turn, or its first tool call).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from llmfix import codes
from llmfix.batch.core import BatchLimits, Profile
from llmfix.batch.judge import Tally
from llmfix.batch.pool import run_items
from llmfix.errors import ConfigError
from llmfix.inputs import Item, ReadOptions, items_from_lines
from llmfix.model import Severity
from llmfix.options import make_options
from llmfix.pipeline.core import make_validator

if TYPE_CHECKING:
    import pyarrow as pa

    from llmfix.batch.core import Outcome

__all__ = [
    "RESULT_COLUMNS",
    "ColumnChecker",
    "check_table",
    "merge_summaries",
    "partial_summary",
    "result_schema",
]

RESULT_COLUMNS: tuple[str, ...] = (
    "status",
    "value",
    "risk",
    "error_codes",
    "diagnostics",
    "repairs",
)


def result_schema() -> pa.Schema:
    """The Arrow types of :data:`RESULT_COLUMNS`."""
    import pyarrow as pa

    return pa.schema(
        [
            ("status", pa.string()),
            ("value", pa.string()),
            ("risk", pa.string()),
            ("error_codes", pa.list_(pa.string())),
            ("diagnostics", pa.string()),
            ("repairs", pa.int64()),
        ]
    )


def repairs_made(outcome: Outcome) -> int:
    """Repairs counted as the summary counts them (extraction alone is not a repair)."""
    return sum(1 for d in outcome.diagnostics if d.risk is not None and d.stage != "extract")


def result_row(outcome: Outcome) -> dict[str, Any]:
    """One row of :data:`RESULT_COLUMNS` for an outcome."""
    result = outcome.result
    diagnostics = outcome.diagnostics
    value = None
    if result is not None and result.status.value != "unparseable":
        value = json.dumps(result.value, ensure_ascii=False)
    return {
        "status": outcome.status,
        "value": value,
        "risk": result.risk.value if result is not None and result.risk else None,
        "error_codes": [d.code for d in diagnostics if d.severity is Severity.ERROR],
        "diagnostics": json.dumps([d.to_dict() for d in diagnostics], ensure_ascii=False),
        "repairs": repairs_made(outcome),
    }


def result_columns(outcomes: Iterable[Outcome]) -> pa.Table:
    """A table of :data:`RESULT_COLUMNS`, one row per outcome."""
    import pyarrow as pa

    rows = [result_row(o) for o in outcomes]
    schema = result_schema()
    return pa.table({n: [r[n] for r in rows] for n in schema.names}, schema=schema)


def check_items(
    items: Iterable[Item], profiles: Mapping[str, Profile], limits: BatchLimits
) -> Iterator[Outcome]:
    """Check items one after another in this process (an engine's task is the parallelism)."""
    from dataclasses import replace

    yield from run_items(items, profiles, replace(limits, jobs=1))


class ColumnChecker:
    """Adds :data:`RESULT_COLUMNS` to Arrow batches; the schema is compiled once, here.

    ``column`` names the text column (or the response-object column with
    ``response=True``). ``schema`` is a JSON Schema (dict, bool, or a path or
    ``builtin:NAME`` reference); ``tools`` a tools file (OpenAI/Anthropic/MCP definitions)
    whose schemas check tool-call arguments; ``tool_column`` names a column holding the
    tool name of each row, when the text column holds tool-call arguments. ``timeout`` and
    ``max_item_size`` are the per-row limits of ``check``; ``options`` are those of
    ``llmfix.repair``. A name clash with an input column is an error (``ConfigError``).
    """

    def __init__(
        self,
        column: str = "text",
        schema: Any = None,
        *,
        tools: str | None = None,
        tool_column: str | None = None,
        response: bool = False,
        timeout: float | None = 60.0,
        max_item_size: int = 10_000_000,
        **options: Any,
    ) -> None:
        self.column = column
        self.tool_column = tool_column
        self.response = response
        repair_options = make_options(**options)
        allow_remote = repair_options.allow_remote_refs
        self.profile = Profile(
            validator=_validator(schema, allow_remote) if schema is not None else None,
            options=repair_options,
            tools=_tools(tools, allow_remote) if tools is not None else None,
        )
        self.limits = BatchLimits(jobs=1, item_timeout=timeout, max_item_size=max_item_size)

    def __call__(self, batch: Any) -> Any:
        """``batch`` with the result columns appended (same type: Table, RecordBatch, pandas)."""
        import pyarrow as pa

        kind = type(batch)
        table = _as_table(batch)
        if self.column not in table.column_names:
            raise ConfigError(f"no column {self.column!r} (columns: {table.column_names})")
        clash = [n for n in RESULT_COLUMNS if n in table.column_names]
        if clash:
            raise ConfigError(f"the batch already has result columns: {', '.join(clash)}")
        values = table.column(self.column).to_pylist()
        tools = table.column(self.tool_column).to_pylist() if self.tool_column else None
        items = (self._item(i, v, tools[i] if tools else None) for i, v in enumerate(values))
        outcomes = check_items(items, {"": self.profile}, self.limits)
        results = result_columns(outcomes)
        for name in results.column_names:
            table = table.append_column(results.schema.field(name), results.column(name))
        if kind is pa.RecordBatch:
            return table.combine_chunks().to_batches()[0] if table.num_rows else _empty(table)
        if kind is pa.Table:
            return table
        return table.to_pandas()

    def _item(self, index: int, value: Any, tool: Any) -> Item:
        where = f"row {index + 1}"
        if value is None:
            error = codes.INPUT_MISSING_FIELD.at(f"{where}: {self.column} is null")
            return Item(
                id=where, source=self.column, line=index + 1, text="", kind="row", error=error
            )
        if self.response:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            found = items_from_lines([(index + 1, text)], self.column, ReadOptions())
            return next(iter(found))
        if not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False, default=str)
        name = None if tool is None else str(tool)
        return Item(id=where, source=self.column, line=index + 1, text=value, kind="row", tool=name)


def check_table(data: Any, column: str = "text", schema: Any = None, **options: Any) -> Any:
    """``ColumnChecker(column, schema, **options)(data)``, for one batch."""
    return ColumnChecker(column, schema, **options)(data)


def _as_table(batch: Any) -> pa.Table:
    import pyarrow as pa

    if isinstance(batch, pa.Table):
        return batch
    if isinstance(batch, pa.RecordBatch):
        return pa.Table.from_batches([batch])
    return pa.Table.from_pandas(batch, preserve_index=False)


def _empty(table: pa.Table) -> pa.RecordBatch:
    import pyarrow as pa

    return pa.RecordBatch.from_pylist([], schema=table.schema)


def _validator(schema: Any, allow_remote: bool) -> Any:
    # (start-up: the schema modules load only for a checker given a schema)
    from llmfix.schema.load import load_schema
    from llmfix.schema.validate import SchemaValidator

    if isinstance(schema, SchemaValidator):
        return schema
    spec = load_schema(schema) if isinstance(schema, str) else schema
    return make_validator(spec, allow_remote=allow_remote)


def _tools(path: str, allow_remote: bool) -> dict[str, Any]:
    # (start-up: the tool registry loads only for a checker given tools)
    from llmfix.toolcalls.registry import ToolRegistry

    registry = ToolRegistry.load(path, allow_remote=allow_remote)
    found = {name: registry.validator_for(name) for name in registry.names}
    return {name: v for name, v in found.items() if v is not None}


# ---------------------------------------------------------------------- the summary


def partial_summary(table: Any) -> dict[str, Any]:
    """Counts over a result batch, to be merged with :func:`merge_summaries`."""
    table = _as_table(table)
    status = Counter(table.column("status").to_pylist())
    codes: Counter[str] = Counter()
    for row in table.column("error_codes").to_pylist():
        codes.update(row or ())
    repairs = sum(n or 0 for n in table.column("repairs").to_pylist())
    return {"status": dict(status), "repairs": repairs, "errors": dict(codes)}


def merge_summaries(parts: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The summary of a whole result (what ``check`` prints): items, status, rates, repairs.

    ``parts`` are :func:`partial_summary` dicts, or rows of an engine's aggregation with
    the same keys; ``errors`` counts rows per error code.
    """
    tally = Tally()
    errors: Counter[str] = Counter()
    for part in parts:
        tally.status.update(part.get("status") or {})
        tally.repairs_total += int(part.get("repairs") or 0)
        errors.update(part.get("errors") or {})
    tally.items = sum(tally.status.values())
    full = tally.to_dict()
    summary = {k: full[k] for k in ("items", "status", "parse_rate", "valid_rate", "repairs")}
    summary["errors"] = dict(errors.most_common())
    return summary
