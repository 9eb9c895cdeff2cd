"""Record-per-line and record-per-row files: JSON Lines (streamed, bounded memory) and
Parquet (each row read as a JSONL line is)."""

from __future__ import annotations

import codecs
import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import IO, Any

from llmfix import codes
from llmfix.errors import ConfigError, InputError
from llmfix.files.read import ReadRefused, Within, open_regular
from llmfix.inputs.fields import (
    field_tokens,
)
from llmfix.inputs.items import Item, ReadOptions
from llmfix.inputs.records import record_items
from llmfix.inputs.sources import (
    invalid_utf8,
    is_url,
    open_url,
    refused,
)
from llmfix.jsontext import loads
from llmfix.model import Diagnostic, Severity


def jsonl_file(path: str, options: ReadOptions, within: Within | None = None) -> Iterator[Item]:
    """The items of a JSON Lines file (a file discovery listed: only where ``within`` says,
    see :class:`~llmfix.files.read.Within`); an unreadable file is one error item."""
    try:
        handle: IO[bytes] = open_url(path) if is_url(path) else open_regular(path, within=within)
    except InputError as exc:
        yield _unreadable(path, exc.problem)
        return
    except ReadRefused as exc:
        yield _unreadable(path, refused(path, exc).problem)
        return
    try:
        lines = JsonLines(handle, options.encoding, options.max_bytes)
        yield from _jsonl_lines(lines, path, options, lines.notes)
    finally:
        handle.close()


# Lines per :class:`LineBatch`: a few milliseconds of checking, so that the pool's chunks
# (made of whole batches) still balance across workers.
BATCH_LINES = 64


@dataclass(frozen=True)
class LineBatch:
    """Consecutive lines of a JSON Lines file, read (bounded, decoded to text) but not yet
    parsed: :meth:`items` turns them into the file's items exactly as
    :func:`jsonl_file` does. A ``check -j N`` run sends these to its workers, so that
    parsing each record and taking ``--field`` out of it happens there, not in the
    process that reads the files and merges the results."""

    name: str
    options: ReadOptions
    profile: str
    lines: tuple[tuple[int, str], ...]
    notes: tuple[tuple[int, Diagnostic], ...] = ()  # what reading found, by line

    @property
    def size(self) -> int:
        """Characters in these lines (their line endings counted)."""
        return sum(len(line) + 1 for _, line in self.lines)

    def items(self) -> Iterator[Item]:
        """The items of these lines, in order (see :func:`jsonl_file`)."""
        found = _jsonl_lines(self.lines, self.name, self.options, dict(self.notes))
        if not self.profile:
            return found
        return (replace(item, profile=self.profile) for item in found)


def jsonl_batches(
    path: str,
    options: ReadOptions,
    profile: str = "",
    within: Within | None = None,
    size: int = BATCH_LINES,
) -> Iterator[Item | LineBatch]:
    """The lines of a JSON Lines file as :class:`LineBatch` es of ``size`` lines, read as
    :func:`jsonl_file` reads them (where ``within`` says, each line bounded); an
    unreadable file is one error item. Not for a file whose records depend on earlier
    ones (``ReadOptions.tool_results``: an MCP result names its tool by its request)."""
    if options.tool_results:
        raise ValueError("a file read for tool results is read in one piece (jsonl_file)")
    try:
        handle: IO[bytes] = open_url(path) if is_url(path) else open_regular(path, within=within)
    except InputError as exc:
        yield _unreadable(path, exc.problem, profile)
        return
    except ReadRefused as exc:
        yield _unreadable(path, refused(path, exc).problem, profile)
        return
    try:
        lines = JsonLines(handle, options.encoding, options.max_bytes)
        batch: list[tuple[int, str]] = []
        for pair in lines:
            batch.append(pair)
            if len(batch) >= size:
                yield _batch(path, options, profile, batch, lines.notes)
                batch = []
        if batch:
            yield _batch(path, options, profile, batch, lines.notes)
    finally:
        handle.close()


def _unreadable(path: str, problem: str, profile: str = "") -> Item:
    error = codes.INPUT_UNREADABLE.at(problem)
    return Item(id=path, source=path, line=1, text="", kind="file", error=error, profile=profile)


def _batch(
    name: str,
    options: ReadOptions,
    profile: str,
    lines: list[tuple[int, str]],
    notes: dict[int, Diagnostic],
) -> LineBatch:
    found = tuple((n, notes.pop(n)) for n, _ in lines if n in notes) if notes else ()
    return LineBatch(name, options, profile, tuple(lines), found)


class JsonLines:
    """The lines of a JSON Lines file as ``(number, text)``, each read with a bound.

    A line is split on ``\\n`` (as :class:`~llmfix.batch.writers.FixWriter` splits it to copy
    the lines back), its line ending dropped. At most ``limit`` bytes of a line are kept:
    the rest of a longer one is read and dropped in pieces, and the line is an
    ``input.too_large`` error (its text is its first 4 KB, for the item's key). A line
    that is not valid UTF-8 is decoded with U+FFFD and noted (``input.invalid_utf8``).
    ``notes`` holds these, by line number, as each line is yielded.
    """

    def __init__(self, handle: IO[bytes], encoding: str | None, limit: int) -> None:
        self.handle = handle
        self.codec = encoding or "utf-8"
        self.limit = limit
        self.notes: dict[int, Diagnostic] = {}

    def __iter__(self) -> Iterator[tuple[int, str]]:
        offset = 0
        readline = self.handle.readline
        for number in itertools.count(1):
            raw = readline(self.limit + 1)
            if not raw:
                return
            start = offset
            offset += len(raw)
            if len(raw) > self.limit and not raw.endswith(b"\n"):
                offset += self._skip_rest()
                self.notes[number] = _too_large(number, self.limit)
                yield number, self._decode(raw[:4096], number, start, note=False)
                continue
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[3:]
                start += 3
            yield number, self._decode(raw, number, start).rstrip("\r\n")

    def _skip_rest(self) -> int:
        skipped = 0
        while True:
            piece = self.handle.readline(1 << 16)  # (pieces of 64 KB: a small peak)
            skipped += len(piece)
            if not piece or piece.endswith(b"\n"):
                return skipped

    def _decode(self, raw: bytes, number: int, start: int, *, note: bool = True) -> str:
        try:
            return raw.decode(self.codec)
        except LookupError:
            raise ConfigError(f"unknown encoding {self.codec!r}") from None
        except UnicodeDecodeError as exc:
            if note and self.codec == "utf-8":  # (with --encoding: what the user asked for)
                bad = raw[exc.start : exc.end]
                self.notes[number] = invalid_utf8(start + exc.start, bad, f" (line {number})")
            return raw.decode(self.codec, "replace")


def _too_large(number: int, limit: int) -> Diagnostic:
    return codes.INPUT_TOO_LARGE.at(
        f"line {number} is over {limit:,} bytes; not read",
        hint="raise --max-item-size (check) or --max-size (repair): 4 bytes a character",
    )


def parquet_items(
    path: str, options: ReadOptions, row_group: int | None = None, within: Within | None = None
) -> Iterator[Item]:
    """Items from a Parquet file, or from one of its row groups: each row is a record
    (a file discovery listed: only where ``within`` says).

    A row is read as a JSONL line is (API response shapes, ``--field``, ``--group-by``);
    its ``line`` is its 1-based row number in the file. Only the columns ``--field`` and
    ``--group-by`` start with are read when they exist. A file that pyarrow cannot read
    is one item with an ``input.unreadable`` error.
    """

    def failed(problem: str) -> Item:
        error = codes.INPUT_UNREADABLE.at(problem)
        return Item(id=path, source=path, line=1, text="", kind="file", error=error)

    try:
        import pyarrow as pa
        import pyarrow.parquet  # open_parquet needs it: a missing pyarrow is reported here
    except ImportError:
        yield failed("reading Parquet needs pyarrow: pip install 'llmfix[parquet]'")
        return
    try:
        file = open_parquet(path, within)
    except ReadRefused as exc:
        yield failed(refused(path, exc).problem)
        return
    except (OSError, ValueError, pa.ArrowException) as exc:
        yield failed(f"not a readable Parquet file: {' '.join(str(exc).split())}")
        return
    try:
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
    finally:
        file.close(force=True)  # (the file opened here, or by pyarrow)


def items_from_lines(
    lines: Iterable[tuple[int, str]],
    name: str,
    options: ReadOptions,
    notes: dict[int, Diagnostic] | None = None,
) -> Iterator[Item]:
    """Items from ``(line number, line)`` pairs of JSON Lines, read lazily (a stream);
    ``notes``: what reading found, by line (:attr:`JsonLines.notes`)."""
    return _jsonl_lines(lines, name, options, notes)


def _jsonl_lines(
    lines: Iterable[tuple[int, str]],
    name: str,
    options: ReadOptions,
    notes: dict[int, Diagnostic] | None = None,
) -> Iterator[Item]:
    """Items of JSON Lines; ``notes`` (filled as ``lines`` is read) says what reading
    found on a line: an error stands for the line, a warning goes on its items."""
    calls: dict[Any, str] = {}  # JSON-RPC request id → tool name, for MCP results
    for number, line in lines:
        note = notes.pop(number, None) if notes else None
        if note is not None and note.severity is Severity.ERROR:
            yield _failed_line(name, number, line, note)
            continue
        if not line.strip():
            continue
        try:
            record = loads(line)
        except (ValueError, RecursionError) as exc:
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            column = f" (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) else ""
            error = codes.INPUT_BAD_RECORD.at(
                f"line {number} is not a JSON record: {detail}{column}",
                hint="each line of a .jsonl file must be one JSON value",
            )
            yield _failed_line(name, number, line, error)
            continue
        found = record_items(record, line, name, number, options, single_file=False, calls=calls)
        if note is None:
            yield from found
        else:  # bytes replaced on this line: a change to each of its answers
            yield from (replace(item, diagnostics=(note, *item.diagnostics)) for item in found)


def _failed_line(name: str, number: int, line: str, error: Diagnostic) -> Item:
    import hashlib  # about 3 ms to import: only for a line that is not read

    digest = hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return Item(
        id=f"{name}:{number}",
        source=name,
        line=number,
        text="",
        kind="record",
        error=error,
        anchor=f"@{digest}",
    )


# --------------------------------------------------------------------------- records


def open_parquet(path: str, within: Within | None = None) -> Any:
    """A ``pyarrow.parquet.ParquetFile`` for a path or a URL (needs pyarrow); a file
    discovery listed is opened here, where ``within`` says (:class:`ReadRefused`)."""
    import pyarrow.parquet as pq

    if is_url(path):
        return pq.ParquetFile(open_url(path, random_access=True))
    if within is None:
        return pq.ParquetFile(path)
    handle = open_regular(path, within=within)
    try:
        return pq.ParquetFile(handle)  # (closed with the ParquetFile: close(force=True))
    except BaseException:
        handle.close()
        raise
