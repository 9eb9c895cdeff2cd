"""What a ``check`` run writes besides its report, each file atomically
(:mod:`llmfix.files.atomic`).

:class:`FixWriter` (``check --write-fixed`` / ``--in-place``): repaired copies, each record
put back where it was found, byte for byte elsewhere. :class:`ResultsWriter`
(``check --results``): one row per item in Parquet or JSONL parts.
"""

from __future__ import annotations

import codecs
import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from llmfix.batch.gate import writable
from llmfix.errors import ConfigError, InputError, PathRefused
from llmfix.files.atomic import OUTPUT_ERRORS, AtomicFile
from llmfix.files.containment import (
    DIR_FDS,
    link_problem,
    open_below,
    real_below,
    refuse_mirror_root,
    refuse_vcs,
    same_files,
)
from llmfix.files.read import ReadRefused, open_regular
from llmfix.inputs import fixed_record, resolve_field
from llmfix.inputs.items import changed_only_by_reading
from llmfix.jsontext import ValueLocator, dumps

if TYPE_CHECKING:
    from llmfix.batch.core import Outcome
    from llmfix.batch.judge import Checked
    from llmfix.files.read import Within
    from llmfix.inputs import Item

__all__ = [
    "FixWriter",
    "ResultsWriter",
]


# ---------------------------------------------------------------------- repaired copies


class FixWriter:
    """Writes repaired outputs: a mirror tree under ``root``, or the inputs themselves.

    A whole-file item (a raw answer, a ``.json`` document) becomes its repaired JSON. In
    a ``.json`` response or a JSONL file, each repaired text is put back where it was
    found (a message's content, a tool call's arguments, the ``--field``), and every other
    line is copied as it is. Items that are invalid or unparseable are left as they were.
    With ``root=None`` (``--in-place``) only files with a repair are rewritten, atomically
    (an input that is a symbolic link: the file it leads to, the link kept).

    The mirror stays under ``root`` (:mod:`llmfix.files.containment`): its directories are
    opened without following links, so a link in it (``fixed/answers/h -> $HOME``) or a
    version-control directory is refused, and so is a target that is one of ``inputs``
    (the files of the run). A refused file is passed to ``refused`` (the command warns)
    and the rest are written.

    Each input is read again (what was not repaired is copied byte for byte) only where
    discovery listed it: ``within`` maps a path to its :class:`~llmfix.files.read.Within`,
    as the check read it. An input swapped for a link since is refused, not copied.
    """

    def __init__(
        self,
        root: Path | None,
        *,
        inputs: Sequence[str] = (),
        refused: Callable[[PathRefused], None] | None = None,
        within: Mapping[str, Within] | None = None,
    ) -> None:
        self.root = root
        self.within = within or {}
        self.source: str | None = None
        self.fixes: list[tuple[Checked, object]] = []
        self.changed = False
        self.inputs = inputs
        self.refused = refused
        self._input_files: dict[tuple[int, int], str] | None = None
        if root is not None:
            refuse_mirror_root(str(root))

    def add(self, checked: Checked) -> None:
        source = checked.item.source
        if source != self.source:
            self.close()
            self.source = source
        self.fixes.append((checked, _fixed_value(checked)))

    def close(self) -> None:
        if self.source is not None and not self.source.startswith("<"):
            self._write(self.source, self.fixes)
        self.source = None
        self.fixes = []

    def _target(self, source: str) -> Path:
        if self.root is None:
            return Path(os.path.realpath(source)) if os.path.islink(source) else Path(source)
        relative = Path(os.path.normpath(source))
        if relative.is_absolute() or relative.parts[:1] == ("..",):
            relative = Path(*[p for p in relative.parts if p not in ("..", relative.anchor)])
        return self.root / relative

    def _write(self, source: str, fixes: list[tuple[Checked, object]]) -> None:
        changed = any(value is not _UNCHANGED for _, value in fixes)
        unreadable = fixes[0][0].item.kind == "file"
        if unreadable or (self.root is None and not changed):
            return
        try:  # first: nothing is written for an input that is no longer where it was listed
            original = _original(source, self.within.get(source))
        except InputError as exc:
            doing = "rewriting" if self.root is None else "copying"
            self._refuse(PathRefused(source, exc.problem, doing))
            return
        with original:
            target = self._target(source)
            try:
                sink = self._sink(target, self.within.get(source))
            except PathRefused as exc:
                self._refuse(exc)
                return
            try:
                self._render(source, original, fixes, sink.handle)
            except BaseException:
                sink.discard()
                raise
        sink.commit()  # (the original closed first: Windows replaces no open file)

    def _refuse(self, refused: PathRefused) -> None:
        """A file not written: told through ``refused``, else raised."""
        if self.refused is None:
            raise refused
        self.refused(refused)

    def _sink(self, target: Path, within: Within | None = None) -> AtomicFile:
        """Where ``target`` is written: in place, or in the mirror as the class says. A
        walked input rewritten in place (``within``, no links followed) is written through
        its folders opened from the walk's root without following links, as the mirror is:
        a folder swapped for a link after the input was read again is not followed."""
        if self.root is None:
            if within is None or within.follow or not DIR_FDS:
                return AtomicFile(target, keep_mode=True)
            return self._in_place_below(target, within.root, open_below)

        if not DIR_FDS:  # no directory descriptors (Windows): the path, checked
            refuse_vcs(str(target))
            self._refuse_an_input(target, _identity(os.stat, str(target)))
            target.parent.mkdir(parents=True, exist_ok=True)
            return AtomicFile(target)
        parts = target.relative_to(self.root).parts
        try:
            directory = open_below(str(self.root), parts[:-1], str(target))
        except OSError as exc:
            raise InputError(str(target), f"cannot write: {exc.strerror or exc}") from None
        try:
            here = _identity(os.stat, target.name, dir_fd=directory, follow_symlinks=False)
            self._refuse_an_input(target, here)
        except BaseException:
            os.close(directory)
            raise
        return AtomicFile(target, directory=directory)

    def _in_place_below(
        self, target: Path, root: str, open_below: Callable[[str, Sequence[str], str], int]
    ) -> AtomicFile:
        folder = os.path.realpath(target.parent)
        if not real_below(folder, root):
            raise PathRefused(str(target), link_problem(str(target.parent), root), "rewriting")
        parts = [] if folder == root else os.path.relpath(folder, root).split(os.sep)
        try:
            directory = open_below(root, parts, str(target))
        except OSError as exc:
            raise InputError(str(target), f"cannot write: {exc.strerror or exc}") from None
        return AtomicFile(target, keep_mode=True, directory=directory)

    def _refuse_an_input(self, target: Path, found: tuple[int, int] | None) -> None:
        """Refuse ``target`` (its device and inode: ``found``) when it is an input."""
        if found is None:
            return
        if self._input_files is None:  # once, when a target first exists already
            self._input_files = same_files(self.inputs)
        if found in self._input_files:
            why = f"it is an input of this run ({self._input_files[found]})"
            raise PathRefused(str(target), why)

    def _render(
        self, source: str, original: BinaryIO, fixes: list[tuple[Checked, object]], out: TextIO
    ) -> None:
        """The fixed copy of ``source`` (open as ``original``): what was not repaired
        stays byte for byte (its encoding, its line endings, bytes that are not UTF-8), so
        an unrepaired file is copied as it is and, in JSON Lines, so is every line without
        a repair."""
        import shutil

        out.flush()
        sink = out.buffer  # bytes from here on: the original's, and the repaired text's
        first = fixes[0][0].item
        if all(value is _UNCHANGED for _, value in fixes):
            shutil.copyfileobj(original, sink)
            return
        if first.whole_file:
            sink.write(_document(original, fixes[0][1]))
            return
        by_line: dict[int, list[tuple[Item, object]]] = {}
        records: dict[int, object] = {}
        for checked, value in fixes:
            item = checked.item
            records.setdefault(item.line, item.record)
            if value is not _UNCHANGED:
                by_line.setdefault(item.line, []).append((item, value))
        if not source.lower().endswith((".jsonl", ".ndjson")):  # one .json document
            sink.write(fixed_document(original, records.get(1), by_line.get(1, [])))
            return
        fixed = {n: (records[n], found) for n, found in by_line.items()}
        _copy_lines(original, fixed, sink)


def fixed_document(
    original: BinaryIO, record: object, fixes: Sequence[tuple[Item, object]]
) -> bytes:
    """The ``.json`` response open as ``original`` (read as ``record``, which this changes)
    with each
    repaired answer put back where it was found (``check --in-place``/``--write-fixed``,
    ``repair --in-place``).

    Each repaired value's JSON is written over the bytes of the value it replaces, and
    every other byte stays as it was: the layout, the line endings, bytes that are not
    UTF-8 in fields that were not repaired (:func:`_spliced`). When a value cannot be
    found in the bytes as the record has it, the whole record is written, in the
    original's ways (:func:`_document`)."""
    raw = original.read()
    spliced, fixed = _spliced(raw, record, fixes)
    if spliced is not None:
        return spliced
    original.seek(0)
    return _document(original, fixed)


def fixed_file(source: str, record: object, fixes: Sequence[tuple[Item, object]]) -> bytes:
    """:func:`fixed_document` of the file ``source`` (named by the user: read as named)."""
    with _original(source) as original:
        return fixed_document(original, record, fixes)


def _spliced(
    raw: bytes, record: object, fixes: Sequence[tuple[Item, object]]
) -> tuple[bytes | None, object]:
    """``raw`` (the JSON text ``record`` was read from) with the value at each fix's
    target replaced by its repaired JSON (ASCII with ``\\u`` escapes when ``raw`` is not
    UTF-8), and the fixed record (``record``, changed). The bytes are ``None`` when a
    target is not found in ``raw`` holding what ``record`` holds there."""
    targets = {item.target for item, _ in fixes if item.target is not None}
    try:  # (the values fixed_record replaces, not changes: read before it runs)
        was = {target: resolve_field(record, target) for target in targets}
    except (KeyError, IndexError, TypeError):
        return None, fixed_record(record, fixes)
    fixed = fixed_record(record, fixes)
    utf8 = _is_utf8(raw)
    locator = ValueLocator(raw.decode("latin-1"))  # a character per byte: offsets are bytes'
    edits: list[tuple[int, int, bytes]] = []
    for target in targets:
        span = locator.exact(tuple(_raw_token(token) for token in target))
        if span is None or not _holds(raw[span[0] : span[1]], was[target]):
            return None, fixed
        repaired = dumps(resolve_field(fixed, target), ensure_ascii=not utf8)
        edits.append((span[0], span[1], repaired.encode("utf-8", OUTPUT_ERRORS)))
    edits.sort()
    if any(a[1] > b[0] for a, b in itertools.pairwise(edits)):  # one target inside another
        return None, fixed
    out: list[bytes] = []
    at = 0
    for start, end, value in edits:
        out += [raw[at:start], value]
        at = end
    out.append(raw[at:])
    return b"".join(out), fixed


def _raw_token(token: str | int) -> str:
    """A path token as :func:`_spliced`'s locator reads a member name: the name's UTF-8
    bytes, a character each."""
    if isinstance(token, int):
        return str(token)
    return token.encode("utf-8", "surrogatepass").decode("latin-1")


def _holds(raw: bytes, value: object) -> bool:
    """Whether the JSON text ``raw`` is ``value`` (read as UTF-8 or as Latin-1, invalid
    bytes replaced, as the reader reads a file)."""
    import json

    for encoding in ("utf-8", "latin-1"):
        try:
            if json.loads(raw.decode(encoding, "replace")) == value:
                return True
        except (ValueError, RecursionError):
            continue
    return False


def _is_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _document(original: BinaryIO, value: object) -> bytes:
    """A repaired document as JSON, in the original's ways: its line endings (CRLF when
    it has them), and ASCII with ``\\u`` escapes when it is not UTF-8 (Latin-1, UTF-16:
    the text is then the same in any encoding that reads ASCII)."""
    utf8, crlf = _layout(original)
    text = dumps(value, indent=2, ensure_ascii=not utf8) + "\n"
    if crlf:  # (a newline inside a JSON string is written as \n: only the layout's)
        text = text.replace("\n", "\r\n")
    return text.encode("utf-8", OUTPUT_ERRORS)


def _layout(original: BinaryIO) -> tuple[bool, bool]:
    """Whether a file is valid UTF-8, and whether it has CRLF line endings; read in
    pieces (bounded memory)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    utf8, crlf, last = True, False, b""
    while piece := original.read(1 << 20):
        crlf = crlf or b"\r\n" in last[-1:] + piece
        last = piece
        if utf8:
            try:
                decoder.decode(piece)
            except UnicodeDecodeError:
                utf8 = False
    if utf8:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            utf8 = False
    return utf8, crlf


def _copy_lines(
    original: BinaryIO,
    fixed: dict[int, tuple[object, list[tuple[Item, object]]]],
    sink: BinaryIO,
) -> None:
    """Copy a JSONL file line by line (split on ``\\n``, as the reader splits it), each
    in pieces of at most 1 MB; the lines in ``fixed`` (a record and its fixes) are written
    repaired instead (:func:`_fixed_line`), with the line's own ending."""
    number = 1
    line: list[bytes] | None = [] if 1 in fixed else None
    while piece := original.readline(1 << 20):
        if line is None:
            sink.write(piece)
        else:
            line.append(piece)
        if not piece.endswith(b"\n"):
            continue
        if line is not None:
            sink.write(_fixed_line(*fixed[number], b"".join(line)))
        number += 1
        line = [] if number in fixed else None
    if line:
        sink.write(_fixed_line(*fixed[number], b"".join(line)))


def _fixed_line(record: object, fixes: list[tuple[Item, object]], raw: bytes) -> bytes:
    """A JSONL line with its repairs put back as :func:`fixed_document` puts them back
    (the rest of its bytes kept), else its repaired record on one line."""
    ending = b"\r\n" if raw.endswith(b"\r\n") else b"\n" if raw.endswith(b"\n") else b""
    body = raw[: len(raw) - len(ending)]
    spliced, fixed = _spliced(body, record, fixes)
    if spliced is not None:
        return spliced + ending
    return dumps(fixed, ensure_ascii=not _is_utf8(body)).encode("utf-8", OUTPUT_ERRORS) + ending


def _original(source: str, within: Within | None = None) -> BinaryIO:
    """The input file, opened again to copy what was not repaired (only where ``within``
    says, as the check read it)."""
    try:
        return open_regular(source, within=within)
    except ReadRefused as exc:
        raise InputError(source, exc.problem) from None


_UNCHANGED = object()


def _identity(
    stat_call: Callable[..., os.stat_result], *args: object, **kwargs: object
) -> tuple[int, int] | None:
    """(device, inode) of what ``stat_call(*args)`` finds, ``None`` when nothing is there."""
    try:
        found = stat_call(*args, **kwargs)
    except (OSError, ValueError):
        return None
    return found.st_dev, found.st_ino


def _fixed_value(checked: Checked) -> object:
    """The value to write back for an item, or ``_UNCHANGED``: only what the gate allowed
    (the rule `repair` follows for stdout, ``-o`` and ``--in-place``)."""
    result = checked.outcome.result
    if result is None or result.status.value == "valid" or changed_only_by_reading(result):
        return _UNCHANGED  # (bytes the reader replaced are no repair to write back)
    # Only what passed the gate (a cut-off answer only under --partial, when it passed).
    return result.value if writable(result, checked.failures) else _UNCHANGED


# ---------------------------------------------------------------------- result rows


class ResultsWriter:
    """``--results DIR``: one row per item (``id``, ``source``, ``line``, ``tool``, ``group``,
    then ``llmfix.batch.columns.RESULT_COLUMNS``) in ``part-NNNNN.parquet`` or ``.jsonl`` files of
    at most ``ROWS`` rows, each written atomically. A directory that already holds result
    parts is refused (nothing is overwritten)."""

    ROWS = 100_000

    def __init__(self, root: Path, fmt: str) -> None:
        self.root = root
        self.fmt = fmt
        self.rows: list[dict[str, object]] = []
        self.parts = 0
        if fmt == "parquet":
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise ConfigError(
                    "--results-format parquet needs pyarrow: pip install 'llmfix[parquet]'"
                ) from None

        refuse_vcs(str(root))
        if root.is_dir() and any(root.glob("part-*")):
            raise ConfigError(f"--results {root}: already holds results; choose a new directory")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--results {root}: cannot create: {exc.strerror or exc}") from None

    def add(self, outcome: Outcome) -> None:
        # (start-up: the Arrow columns load only for --results)
        from llmfix.batch.columns import result_row

        item = outcome.item
        where = {"id": item.id, "source": item.source, "line": item.line}
        self.rows.append({**where, "tool": item.tool, "group": item.group, **result_row(outcome)})
        if len(self.rows) >= self.ROWS:
            self._flush()

    def close(self) -> None:
        if self.rows or not self.parts:
            self._flush()

    def _flush(self) -> None:
        import json

        target = self.root / f"part-{self.parts:05d}.{self.fmt}"
        self.parts += 1
        rows, self.rows = self.rows, []
        if self.fmt == "jsonl":
            sink = AtomicFile(target)
            sink.handle.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
            sink.commit()
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        # (start-up: the Arrow columns load only for --results)
        from llmfix.batch.columns import result_schema

        fields = [("id", pa.string()), ("source", pa.string()), ("line", pa.int64())]
        fields += [(name, pa.string()) for name in ("tool", "group")]
        schema = pa.schema([*fields, *result_schema()])
        table = pa.Table.from_pylist(rows, schema=schema)
        temporary = target.with_name(f".{target.name}.tmp")
        pq.write_table(table, temporary)
        os.replace(temporary, target)
