"""Reading inputs: files, directories, stdin, and the record formats models' output is logged in.

The pieces, from the outside in:

- :func:`read_source` / :func:`decode_bytes` read one file (or stdin) as text, with decoding
  problems reported as data.
- :func:`discover_files` walks the paths given on the command line: files as named, directories
  recursively (sorted, dot-directories skipped, symbolic links followed only with
  ``--follow-symlinks``) filtered by ``--include``/``--exclude`` globs.
- :func:`items_from_file` turns one file into :class:`Item` objects — the texts to check — by
  its extension and content:

  ============  ======================================================================
  ``.jsonl``    one record per line, streamed (bounded memory): OpenAI Batch API output
  ``.ndjson``   (``response.body``), Anthropic Message Batches results, chat completions,
                Anthropic messages, Responses API objects, Gemini ``generateContent``
                responses, transcripts (``messages``), or
                any record with ``--field``; a record of no known shape is itself the
                document to check. A line that is not JSON is an item with an error.
  ``.json``     the same shapes, for one object per file; anything else (including JSON
                too broken to parse) is a plain document to check.
  ``.parquet``  each row is a record, read as a JSONL line is (``--field`` names the column,
                or a path inside a struct column); needs pyarrow (``llmfix[parquet]``).
  other         a raw model answer (``.txt``, ``.md``, anything unknown).
  ============  ======================================================================

Item ids: ``PATH`` for a whole file, ``PATH:LINE`` for a JSONL record (the record's 1-based
line), ``PATH:LINE#msgN`` for a message inside it (``N`` is the index of the choice, of the
message in ``messages``, or of the entry in a Responses ``output``; 0 for an Anthropic
message; ``PATH#msgN`` in a ``.json`` file) and ``…#msgN.callK`` for its K-th tool call; a
batch output's ``custom_id`` follows the line (``PATH:LINE[req-7]#msg0``). :attr:`Item.key`
is what stays the same when lines move (the ``custom_id``, the record's ``id`` or a hash of
the answer), for ``--baseline``.

``--messages last`` (the default) checks the last assistant turn of a transcript,
``--messages all`` every assistant turn; every choice of a completion is always checked.

What a response says about its answer travels with the item: :attr:`Item.finish` (cut off
or refused, from the stop reason; see :mod:`llmfix.pipeline.stops`) and :attr:`Item.model`. With
``ReadOptions.tool_results`` (a tool registry with output schemas), what tools returned is
read too: MCP ``tools/call`` results in a JSON-RPC log and tool messages in transcripts
(``kind="tool-result"``; see :mod:`llmfix.toolcalls.results`).

Positions: when an item's text is a verbatim slice of the file (a raw answer, a ``.json``
document, a JSONL record checked as a whole), :attr:`Item.origin` says where it starts, so
a problem at line:column of the text maps to a line:column of the file. Text taken out of a
JSON string (a message's content, a ``--field`` value) cannot be mapped that way — its
escapes change every offset — so its problems point at the record's line and reporters put
the in-text line:column into the message.

The readers live in submodules: :mod:`.sources` (bytes → text, file discovery),
:mod:`.items` (:class:`Item`, :class:`ReadOptions`), :mod:`.jsonl` (JSON Lines, Parquet),
:mod:`.records` (one record → items, by response shape) and :mod:`.fields` (``--field``,
``--group-by``, writing repaired values back). This module picks the reader for a file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import IO

from llmfix import codes
from llmfix.errors import InputError, InputTooLarge
from llmfix.files.read import ReadRefused, Within, open_regular
from llmfix.inputs.fields import (
    closest_field,
    field_tokens,
    fixed_record,
    resolve_field,
    set_field,
)
from llmfix.inputs.items import KINDS, MESSAGES, Item, Kind, Messages, ReadOptions
from llmfix.inputs.jsonl import (
    LineBatch,
    items_from_lines,
    jsonl_batches,
    jsonl_file,
    parquet_items,
)
from llmfix.inputs.records import _with_finish, record_items, response_shape
from llmfix.inputs.sources import (
    STDIN,
    STDIN_NAME,
    TextSource,
    WalkNotes,
    decode_bytes,
    discover_files,
    glob_match,
    is_url,
    open_url,
    read_chunks,
    read_source,
)
from llmfix.jsontext import loads, strict_or_not
from llmfix.model import Diagnostic, Position, Severity, build
from llmfix.pipeline.stops import stream_finish

__all__ = [
    "JSONL_SUFFIXES",
    "KINDS",
    "MESSAGES",
    "PARQUET_SUFFIXES",
    "STDIN",
    "STDIN_NAME",
    "Item",
    "Kind",
    "LineBatch",
    "Messages",
    "ReadOptions",
    "TextSource",
    "WalkNotes",
    "closest_field",
    "count_records",
    "decode_bytes",
    "discover_files",
    "field_tokens",
    "file_kind",
    "fixed_record",
    "glob_match",
    "is_url",
    "items_from_file",
    "items_from_lines",
    "items_from_text",
    "items_or_lines",
    "open_url",
    "parquet_items",
    "read_chunks",
    "read_source",
    "resolve_field",
    "response_shape",
    "set_field",
]


JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet", ".pq")


def file_kind(path: str, kind: Kind = "auto") -> Kind:
    """``text``, ``json`` or ``jsonl`` for a path (``auto`` decides by extension)."""
    if kind != "auto":
        return kind
    lower = path.lower()
    if lower.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if lower.endswith(".json"):
        return "json"
    return "auto" if path == STDIN else "text"


def count_records(path: str, kind: Kind = "auto", within: Within | None = None) -> int:
    """How many records ``path`` holds, for a progress bar: its non-blank lines for JSON
    Lines (not parsed), else 1. An unreadable file (or one not ``within``) counts 1."""
    if file_kind(path, kind) != "jsonl" or path == STDIN:
        return 1
    try:
        with open_regular(path, within=within) as handle:  # never waits on a FIFO
            return max(1, _count_lines(handle))
    except (OSError, ReadRefused):
        return 1


def _count_lines(handle: IO[bytes]) -> int:
    """The non-blank lines of ``handle``, read in pieces of at most 1 MB (a line of a
    gigabyte costs no more memory than a short one)."""
    count = 0
    blank = True
    while True:
        piece = handle.readline(1 << 20)
        if not piece:
            return count if blank else count + 1
        blank = blank and not piece.strip()
        if piece.endswith(b"\n"):
            count += 0 if blank else 1
            blank = True


def items_from_file(
    path: str, options: ReadOptions, profile: str = "", within: Within | None = None
) -> Iterator[Item]:
    """The items in one file (or stdin for ``-``); read problems become error items. A
    file discovery listed is read only where it was listed (``within``: see
    :class:`llmfix.files.read.Within`); a path named as it is."""
    kind = file_kind(path, options.kind)
    name = STDIN_NAME if path == STDIN else path
    if kind == "jsonl" and path != STDIN and not _saved_stream_file(path, options, within):
        yield from _with_profile(jsonl_file(path, options, within), profile)
        return
    if options.kind == "auto" and path.lower().endswith(PARQUET_SUFFIXES):
        yield from _with_profile(parquet_items(path, options, within=within), profile)
        return
    try:
        source = read_source(path, options.encoding, options.max_bytes, within)
    except InputError as exc:
        code = codes.INPUT_TOO_LARGE if isinstance(exc, InputTooLarge) else codes.INPUT_UNREADABLE
        error = code.at(exc.problem)
        yield Item(id=name, source=name, line=1, text="", kind="file", error=error, profile=profile)
        return
    items = items_from_text(source.text, name, options, kind, source)
    yield from _with_profile(items, profile) if profile else items


def items_or_lines(
    path: str, options: ReadOptions, profile: str = "", within: Within | None = None
) -> Iterator[Item | LineBatch]:
    """What :func:`items_from_file` reads, but a JSON Lines file's lines left unparsed, in
    :class:`~llmfix.inputs.jsonl.LineBatch` es (each gives its items when asked): for a
    pool whose workers parse them. Other files, stdin, a saved stream and a file read for
    tool results come as their items."""
    if (
        file_kind(path, options.kind) == "jsonl"
        and path != STDIN
        and not options.tool_results
        and not _saved_stream_file(path, options, within)
    ):
        return jsonl_batches(path, options, profile, within)
    return items_from_file(path, options, profile, within)


def items_from_text(
    text: str,
    name: str,
    options: ReadOptions,
    kind: Kind = "auto",
    source: TextSource | None = None,
) -> Iterator[Item]:
    """The items in ``text`` read as ``kind`` (``auto``: JSON, then JSON Lines, then text)."""
    warnings = source.diagnostics if source is not None else ()
    if kind in ("auto", "text", "json", "jsonl") and options.field is None:
        # (start-up: the stream sniffer loads only when a text may be a saved stream)
        from llmfix.stream.sniff import looks_like_stream

        if looks_like_stream(text):
            yield from _saved_stream_items(text, name, options, warnings)
            return
    if kind == "auto":
        kind = _sniff(text)
    if kind == "jsonl":
        yield from items_from_lines(enumerate(text.splitlines(), start=1), name, options)
        return
    if kind == "json":
        # Strictly first: a document that is strict JSON (the common case) is then not
        # decoded again by the check (``Item.decoded``); else as leniently as before.
        strict, document = strict_or_not(text)
        if not strict:
            try:
                document = loads(text)
            except (ValueError, RecursionError):
                document = _UNPARSED
        if document is _UNPARSED and options.field is not None:
            error = codes.INPUT_BAD_RECORD.at(
                "the file is not valid JSON, so --field cannot be looked up in it",
            )
            yield Item(id=name, source=name, line=1, text="", kind="document", error=error)
            return
        if document is not _UNPARSED:
            found = record_items(document, text, name, 1, options, single_file=True, strict=strict)
            items = list(found)
            yield from (_add_warnings(i, warnings) for i in items)
            return
    yield build(  # one per file checked: without the frozen dataclass __init__
        Item,
        id=name,
        source=name,
        line=1,
        text=text,
        kind="document" if kind == "json" else "text",
        origin=_FIRST,
        diagnostics=warnings,
        whole_file=True,
    )


_FIRST = Position(1, 1)


_UNPARSED = object()


def _saved_stream_file(path: str, options: ReadOptions, within: Within | None = None) -> bool:
    """Whether a ``.jsonl`` file holds a recorded stream (its lines are chunks or events)."""
    if options.field is not None or options.kind == "jsonl":
        return False
    # (start-up: the stream sniffer loads only when a text may be a saved stream)
    from llmfix.stream.sniff import looks_like_stream

    try:
        with open_regular(path, within=within) as handle:  # (not a FIFO: the read reports it)
            head = handle.read(8192)
    except (OSError, ReadRefused):
        return False
    return looks_like_stream(head.decode("utf-8", "replace"))


# Finish reasons that mean the model was cut off by its token limit.
_CUT_OFF = frozenset({"length", "max_tokens", "max_output_tokens", "incomplete"})


def _saved_stream_items(
    text: str, name: str, options: ReadOptions, warnings: tuple[Diagnostic, ...]
) -> Iterator[Item]:
    """A recorded stream (SSE events or NDJSON chunks), reassembled into its final message.

    The message is checked like an API response (content and tool calls, ids
    ``PATH:1:0[:tK]``); records that are not JSON and a stop at the token limit are
    warnings on each item.
    """
    # (start-up: the stream decoder loads only for a saved stream)
    from llmfix.stream.wire import reassemble

    decoder = reassemble(text)
    notes = list(warnings)
    for problem in decoder.errors:
        notes.append(codes.INPUT_BAD_RECORD.at(f"{problem} (skipped)", severity=Severity.WARNING))
    if decoder.stop_reason in _CUT_OFF:
        notes.append(
            codes.STREAM_CUT_OFF.at(
                f"the stream ended at the token limit (stop reason "
                f"{decoder.stop_reason!r}): the answer may be cut off",
                hint="raise the output token limit",
            )
        )
    record = decoder.message()
    found = list(record_items(record, text, name, 1, options, single_file=True))
    finish = stream_finish(decoder.format, decoder.stop_reason)
    if finish is not None and all(item.finish is None for item in found):
        # (the message is in the chat shape; the stop reason is in the stream's own words)
        found = _with_finish(found, finish)
    for item in found:
        yield replace(
            item, kind=f"stream:{decoder.format}", diagnostics=(*notes, *item.diagnostics)
        )


def _sniff(text: str) -> Kind:
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return "text"
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        pass
    else:
        return "json"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1:
        try:
            first = json.loads(lines[0])
        except (ValueError, RecursionError):
            return "text"
        if isinstance(first, dict):
            return "jsonl"
    return "text"


def _with_profile(items: Iterable[Item], profile: str) -> Iterator[Item]:
    if not profile:
        yield from items
        return
    for item in items:
        yield replace(item, profile=profile)


def _add_warnings(item: Item, warnings: tuple[Diagnostic, ...]) -> Item:
    return replace(item, diagnostics=warnings + item.diagnostics) if warnings else item
