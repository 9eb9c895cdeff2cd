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

:mod:`llmfix.batch.writers` builds the ``check`` run's repaired copies and result rows on
these.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from llmfix.errors import InputError, PathRefused
from llmfix.files.containment import descriptor_path, refuse_vcs

if TYPE_CHECKING:
    pass


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
    into a version-control directory (:func:`llmfix.files.containment.refuse_vcs`): the target's
    directory is checked as named and, once opened, as the temp file's real path says.
    A replaced file gets its old permission bits without the executable ones (a report
    written over a git hook is no longer run) unless ``keep_mode`` (an answer file
    rewritten in place). With ``directory`` (a descriptor of the target's directory, see
    :func:`llmfix.files.containment.open_below`; closed here) the temp file is made and renamed
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
