"""Record-per-line and record-per-row files: JSON Lines (streamed, bounded memory) and
Parquet (each row read as a JSONL line is)."""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator
from typing import IO, Any

from llmfix.errors import ConfigError, InputError
from llmfix.inputs.fields import (
    field_tokens,
)
from llmfix.inputs.items import Item, ReadOptions, input_error
from llmfix.inputs.records import record_items
from llmfix.inputs.sources import (
    is_url,
    open_url,
)
from llmfix.jsontext import loads


def jsonl_file(path: str, options: ReadOptions) -> Iterator[Item]:
    try:
        handle: IO[bytes] = open_url(path) if is_url(path) else open(path, "rb")  # noqa: SIM115
    except InputError as exc:
        error = input_error("input.unreadable", exc.problem)
        yield Item(id=path, source=path, line=1, text="", kind="file", error=error)
        return
    except OSError as exc:
        problem = "no such file" if isinstance(exc, FileNotFoundError) else str(exc.strerror)
        error = input_error("input.unreadable", problem)
        yield Item(id=path, source=path, line=1, text="", kind="file", error=error)
        return
    try:
        yield from _jsonl_lines(_decoded_lines(handle, options.encoding), path, options)
    finally:
        handle.close()


def _decoded_lines(handle: IO[bytes], encoding: str | None) -> Iterator[tuple[int, str]]:
    codec = encoding or "utf-8"
    for number, raw in enumerate(handle, start=1):
        if number == 1 and raw.startswith(codecs.BOM_UTF8):
            raw = raw[3:]
        try:
            yield number, raw.decode(codec).rstrip("\r\n")
        except LookupError:
            raise ConfigError(f"unknown encoding {codec!r}") from None
        except UnicodeDecodeError:
            # U+FFFD marks the bytes; the parse of the record (or the check) reports it.
            yield number, raw.decode(codec, "replace").rstrip("\r\n")


def parquet_items(path: str, options: ReadOptions, row_group: int | None = None) -> Iterator[Item]:
    """Items from a Parquet file, or from one of its row groups: each row is a record.

    A row is read as a JSONL line is (API response shapes, ``--field``, ``--group-by``);
    its ``line`` is its 1-based row number in the file. Only the columns ``--field`` and
    ``--group-by`` start with are read when they exist. A file that pyarrow cannot read
    is one item with an ``input.unreadable`` error.
    """

    def failed(problem: str) -> Item:
        error = input_error("input.unreadable", problem)
        return Item(id=path, source=path, line=1, text="", kind="file", error=error)

    try:
        import pyarrow as pa
        import pyarrow.parquet  # open_parquet needs it: a missing pyarrow is reported here
    except ImportError:
        yield failed("reading Parquet needs pyarrow: pip install 'llmfix[parquet]'")
        return
    try:
        file = open_parquet(path)
        sizes = [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)]
        groups = range(len(sizes)) if row_group is None else range(row_group, row_group + 1)
        wanted = {str(field_tokens(s)[0]) for s in (options.field, options.group_by) if s}
        columns = [n for n in file.schema_arrow.names if n in wanted] if options.field else None
        number = sum(sizes[: groups.start])
        for group in groups:
            for batch in file.read_row_group(group, columns=columns).to_batches():
                rows = batch.to_pylist() if batch.num_columns else [{}] * batch.num_rows
                for record in rows:
                    number += 1
                    raw = (
                        "" if options.field else json.dumps(record, ensure_ascii=False, default=str)
                    )
                    yield from record_items(record, raw, path, number, options, single_file=False)
    except (OSError, ValueError, pa.ArrowException) as exc:
        yield failed(f"not a readable Parquet file: {' '.join(str(exc).split())}")


def items_from_lines(
    lines: Iterable[tuple[int, str]], name: str, options: ReadOptions
) -> Iterator[Item]:
    """Items from ``(line number, line)`` pairs of JSON Lines, read lazily (a stream)."""
    return _jsonl_lines(lines, name, options)


def _jsonl_lines(
    lines: Iterable[tuple[int, str]], name: str, options: ReadOptions
) -> Iterator[Item]:
    calls: dict[Any, str] = {}  # JSON-RPC request id → tool name, for MCP results
    for number, line in lines:
        if not line.strip():
            continue
        try:
            record = loads(line)
        except (ValueError, RecursionError) as exc:
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            column = f" (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
            error = input_error(
                "input.bad_record",
                f"line {number} is not a JSON record: {detail}{column}",
                hint="each line of a .jsonl file must be one JSON value",
            )
            import hashlib  # about 3 ms to import: only for a line that is not JSON

            digest = hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            yield Item(
                id=f"{name}:{number}",
                source=name,
                line=number,
                text="",
                kind="record",
                error=error,
                anchor=f"@{digest}",
            )
            continue
        yield from record_items(record, line, name, number, options, single_file=False, calls=calls)


# --------------------------------------------------------------------------- records


def open_parquet(path: str) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` for a path or a URL (needs pyarrow)."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(open_url(path, random_access=True) if is_url(path) else path)
