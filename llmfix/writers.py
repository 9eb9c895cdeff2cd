"""Atomic file writes: a temp file in the same directory, then a rename.

A reader (or a crash, or ``kill -9``) never sees a half-written file: the target is
either as it was or complete. A replaced target keeps its permission bits; a new one
gets the usual ``0666 & ~umask`` (not the temp file's ``0600``). A target that is not a
regular file (``/dev/stdout``, a FIFO) is written directly: there is nothing to replace
atomically, and renaming over it would destroy it.

Every text llmfix writes goes through the :data:`OUTPUT_ERRORS` error handler: a character
the encoding cannot carry — a lone surrogate such as ``"\ud800"``, which ``json.loads``
accepts and UTF-8 cannot encode — is written as its JSON escape (``\ud800``), so any value
that was read is written back without a traceback. In JSON (and YAML, XML, text reports)
such a character can only stand inside a string, where the escape is the same value.

Built on these: :class:`FixWriter` (`check --write-fixed` / ``--in-place``: repaired copies,
each record put back where it was found) and :class:`ResultsWriter` (`check --results`: one
row per item in Parquet or JSONL parts).
"""

from __future__ import annotations

import codecs
import contextlib
import itertools
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from llmfix.errors import ConfigError, InputError, PathRefused

if TYPE_CHECKING:
    from llmfix.batch import Checked, Outcome
    from llmfix.filebytes import Within
    from llmfix.inputs import Item

OUTPUT_ERRORS = "llmfix.json-escape"


def _escape_unencodable(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for char in exc.object[exc.start : exc.end]:
        code = ord(char)
        if code > 0xFFFF:  # outside the BMP: a JSON escape is a surrogate pair
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), exc.end


codecs.register_error(OUTPUT_ERRORS, _escape_unencodable)


def tolerate_unencodable(stream: object) -> None:
    """Make a text stream (stdout, stderr) escape what its encoding cannot carry."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(Exception):  # a detached or closed stream: leave it
            reconfigure(errors=OUTPUT_ERRORS)


class AtomicFile:
    """A text file written through :attr:`handle` and put in place by :meth:`commit`.

    :meth:`discard` (or never committing) leaves the target untouched. Nothing is written
    into a version-control directory (:func:`llmfix.containment.refuse_vcs`): the target's
    directory is checked as named and, once opened, as the temp file's real path says.
    A replaced file gets its old permission bits without the executable ones (a report
    written over a git hook is no longer run) unless ``keep_mode`` (an answer file
    rewritten in place). With ``directory`` (a descriptor of the target's directory, see
    :func:`llmfix.containment.open_below`; closed here) the temp file is made and renamed
    in that directory, and a symbolic link at the target is replaced, never followed.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        backup: bool = False,
        keep_mode: bool = False,
        directory: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.tmp: str | None = None
        self.directory = directory
        if directory is not None:
            self.handle: TextIO = self._open_in(directory, keep_mode)
            return
        from llmfix.containment import refuse_vcs

        target = self.path
        refuse_vcs(str(target))
        try:
            if target.exists() and not target.is_file():
                self.handle = target.open("w", encoding="utf-8", errors=OUTPUT_ERRORS, newline="")
                return
            exists = target.exists()
            self.mode = _replaced_mode(target.stat().st_mode, keep_mode) if exists else _new_mode()
            if backup and exists:
                _copy_atomic(target, target.with_name(target.name + ".bak"))
            import tempfile  # not at start-up: a run that only prints never needs it

            fd, self.tmp = tempfile.mkstemp(
                prefix=f".{target.name}.", suffix=".tmp", dir=_directory(target)
            )
        except OSError as exc:
            raise self._error(exc) from None
        self.handle = os.fdopen(fd, "w", encoding="utf-8", errors=OUTPUT_ERRORS, newline="")
        self._refuse_opened_vcs()

    def _open_in(self, directory: int, keep_mode: bool) -> TextIO:
        """The temp file, made in ``directory`` (a descriptor) without following links."""
        import secrets

        name = self.path.name
        try:
            try:
                found: os.stat_result | None = os.stat(
                    name, dir_fd=directory, follow_symlinks=False
                )
            except FileNotFoundError:
                found = None
            if found is not None and stat.S_ISLNK(found.st_mode):
                found = None  # a link is replaced by the file, never followed
            if found is not None and not stat.S_ISREG(found.st_mode):
                raise PathRefused(str(self.path), "not a regular file")
            self.mode = _new_mode() if found is None else _replaced_mode(found.st_mode, keep_mode)
            self.tmp = f".{name}.{secrets.token_hex(4)}.tmp"
            flags = (
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            )
            fd = os.open(self.tmp, flags, 0o600, dir_fd=directory)
        except BaseException as exc:
            self.tmp = None
            os.close(directory)
            self.directory = None
            if isinstance(exc, OSError):
                raise self._error(exc) from None
            raise
        return os.fdopen(fd, "w", encoding="utf-8", errors=OUTPUT_ERRORS, newline="")

    def _refuse_opened_vcs(self) -> None:
        """Check the temp file where it was really made: a directory on the way may have
        become a link to ``.git`` since the target's path was checked."""
        from llmfix.containment import descriptor_path, refuse_vcs

        real = descriptor_path(self.handle.fileno())
        if real is None:
            return
        try:
            refuse_vcs(os.path.dirname(real))
        except PathRefused as exc:
            self.discard()
            raise PathRefused(str(self.path), exc.why) from None

    def commit(self) -> None:
        """Flush, sync and rename over the target (or just close a non-regular target)."""
        try:
            if self.tmp is None:
                self.handle.close()
                return
            self.handle.flush()
            os.fsync(self.handle.fileno())
            if hasattr(os, "fchmod"):  # the file written, whatever its name now leads to
                os.fchmod(self.handle.fileno(), self.mode)
            self.handle.close()
            if self.directory is not None:
                directory = self.directory
                os.rename(self.tmp, self.path.name, src_dir_fd=directory, dst_dir_fd=directory)
                self._close_directory()
            else:
                if not hasattr(os, "fchmod"):
                    os.chmod(self.tmp, self.mode)
                os.replace(self.tmp, self.path)
        except OSError as exc:
            self.discard()
            raise self._error(exc) from None

    def discard(self) -> None:
        """Close and remove the temp file; the target stays as it was."""
        with contextlib.suppress(OSError):
            self.handle.close()
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp, dir_fd=self.directory)
        self._close_directory()

    def _close_directory(self) -> None:
        if self.directory is not None:
            with contextlib.suppress(OSError):
                os.close(self.directory)
            self.directory = None

    def _error(self, exc: OSError) -> InputError:
        return InputError(str(self.path), f"cannot write: {exc.strerror or exc}")


def _replaced_mode(mode: int, keep: bool) -> int:
    """The permission bits of a file written over one with ``mode``: the same, less the
    executable (and set-id, sticky) bits unless ``keep``."""
    bits = stat.S_IMODE(mode)
    return bits if keep else bits & 0o666


def _new_mode() -> int:
    return 0o666 & ~_umask()


@contextlib.contextmanager
def atomic_output(path: str | Path) -> Iterator[TextIO]:
    """Write ``path`` atomically through the handle yielded; an exception discards it."""
    sink = AtomicFile(path)
    try:
        yield sink.handle
    except BaseException:
        sink.discard()
        raise
    sink.commit()


def write_atomic(
    path: str | Path, text: str | bytes, *, backup: bool = False, keep_mode: bool = False
) -> None:
    """Replace ``path`` with ``text`` (or bytes, written as they are) atomically; with
    ``backup`` keep ``path.bak`` first; ``keep_mode``: an input rewritten in place keeps all
    its permission bits."""
    sink = AtomicFile(path, backup=backup, keep_mode=keep_mode)
    try:
        if isinstance(text, bytes):
            sink.handle.flush()
            sink.handle.buffer.write(text)
        else:
            sink.handle.write(text)
    except OSError as exc:
        sink.discard()
        raise sink._error(exc) from None
    except BaseException:
        sink.discard()
        raise
    sink.commit()


# ---------------------------------------------------------------------- repaired copies


class FixWriter:
    """Writes repaired outputs: a mirror tree under ``root``, or the inputs themselves.

    A whole-file item (a raw answer, a ``.json`` document) becomes its repaired JSON. In
    a ``.json`` response or a JSONL file, each repaired text is put back where it was
    found (a message's content, a tool call's arguments, the ``--field``), and every other
    line is copied as it is. Items that are invalid or unparseable are left as they were.
    With ``root=None`` (``--in-place``) only files with a repair are rewritten, atomically
    (an input that is a symbolic link: the file it leads to, the link kept).

    The mirror stays under ``root`` (:mod:`llmfix.containment`): its directories are
    opened without following links, so a link in it (``fixed/answers/h -> $HOME``) or a
    version-control directory is refused, and so is a target that is one of ``inputs``
    (the files of the run). A refused file is passed to ``refused`` (the command warns)
    and the rest are written.

    Each input is read again (what was not repaired is copied byte for byte) only where
    discovery listed it: ``within`` maps a path to its :class:`~llmfix.filebytes.Within`,
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
            from llmfix.containment import refuse_mirror_root

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
        from llmfix.containment import DIR_FDS, open_below, refuse_vcs

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
        from llmfix.containment import link_problem, real_below

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
        from llmfix.containment import same_files

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
    from llmfix.inputs import fixed_record, resolve_field
    from llmfix.jsontext import ValueLocator, dumps

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
    from llmfix.jsontext import dumps

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
    from llmfix.jsontext import dumps

    ending = b"\r\n" if raw.endswith(b"\r\n") else b"\n" if raw.endswith(b"\n") else b""
    body = raw[: len(raw) - len(ending)]
    spliced, fixed = _spliced(body, record, fixes)
    if spliced is not None:
        return spliced + ending
    return dumps(fixed, ensure_ascii=not _is_utf8(body)).encode("utf-8", OUTPUT_ERRORS) + ending


def _original(source: str, within: Within | None = None) -> BinaryIO:
    """The input file, opened again to copy what was not repaired (only where ``within``
    says, as the check read it)."""
    from llmfix.filebytes import ReadRefused, open_regular

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
    from llmfix.gate import writable
    from llmfix.inputs.items import changed_only_by_reading

    result = checked.outcome.result
    if result is None or result.status.value == "valid" or changed_only_by_reading(result):
        return _UNCHANGED  # (bytes the reader replaced are no repair to write back)
    # Only what passed the gate (a cut-off answer only under --partial, when it passed).
    return result.value if writable(result, checked.failures) else _UNCHANGED


# ---------------------------------------------------------------------- result rows


class ResultsWriter:
    """``--results DIR``: one row per item (``id``, ``source``, ``line``, ``tool``, ``group``,
    then ``llmfix.columns.RESULT_COLUMNS``) in ``part-NNNNN.parquet`` or ``.jsonl`` files of
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
        from llmfix.containment import refuse_vcs

        refuse_vcs(str(root))
        if root.is_dir() and any(root.glob("part-*")):
            raise ConfigError(f"--results {root}: already holds results; choose a new directory")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"--results {root}: cannot create: {exc.strerror or exc}") from None

    def add(self, outcome: Outcome) -> None:
        from llmfix.columns import result_row

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

        from llmfix.columns import result_schema

        fields = [("id", pa.string()), ("source", pa.string()), ("line", pa.int64())]
        fields += [(name, pa.string()) for name in ("tool", "group")]
        schema = pa.schema([*fields, *result_schema()])
        table = pa.Table.from_pylist(rows, schema=schema)
        temporary = target.with_name(f".{target.name}.tmp")
        pq.write_table(table, temporary)
        os.replace(temporary, target)


def _copy_atomic(source: Path, target: Path) -> None:
    """Copy ``source`` to ``target`` (contents, mode, times) through a temp file."""
    import shutil
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=_directory(target))
    os.close(fd)
    try:
        shutil.copy2(source, tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _directory(target: Path) -> Path:
    return target.parent if str(target.parent) else Path(".")


_UMASK: int | None = None


def _umask() -> int:
    """The process umask (read once: reading it means setting it for an instant)."""
    global _UMASK
    if _UMASK is None:
        _UMASK = os.umask(0o022)
        os.umask(_UMASK)
    return _UMASK
