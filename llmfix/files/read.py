"""Reading a file's bytes with bounds: regular files only, and never more than a limit.

A repository llmfix checks is not trusted, and neither is what is piped to it. A FIFO with
no writer makes ``open()`` wait for ever, a device (``/dev/zero``) never ends, and a file of
gigabytes would be read whole before any size limit is looked at. So a named path is opened
without waiting (``O_NONBLOCK``) and refused unless the opened file is a regular one (the
check is made on the open descriptor, so a file swapped for a FIFO after a first look is
still caught), and a read stops one byte past its limit: enough to know it is over.

A file a walk listed is read where it was listed (:class:`Within`): opened without following
a final symbolic link, and only if the opened file's real path is still below the folder
walked, so a file swapped for a link (or a folder on its path swapped for one) between the
listing and the read is refused, not read outside the tree.

Kept apart from :mod:`llmfix.inputs` so that schema loading can use it without importing
the readers. Problems are :class:`ReadRefused`; each caller turns it into its own error.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from typing import IO, BinaryIO

from llmfix.files.containment import descriptor_path, real_below, shown

# What an input of N characters can take in bytes at most: UTF-8, UTF-16 and UTF-32 all
# spend at most 4 bytes on a character, plus a byte order mark.
BYTES_PER_CHARACTER = 4
BOM_BYTES = 4

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO opens at once instead of waiting for a writer
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CHUNK = 1 << 20
BECAME_LINK = "became a symbolic link after it was listed; not read"


class ReadRefused(Exception):
    """A file that is not read: ``problem`` says why, in a few words."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


class TooLarge(ReadRefused):
    """A file over the limit of a read."""


class NotRegular(ReadRefused):
    """A FIFO, a device or a socket: never read from a path (stdin may be a pipe)."""


@dataclass(frozen=True)
class Within:
    """Where a file listed by discovery must still be when it is opened.

    ``root`` is a real path (links resolved when the file was listed): the opened file's
    real path must be below it. ``follow``: whether the file's own last component may be
    a symbolic link (``--follow-symlinks``, or a path an untrusted config names); when not,
    it is opened with ``O_NOFOLLOW`` and a link there is refused.
    """

    root: str
    follow: bool = False


def byte_limit(characters: int) -> int:
    """The most bytes an input of at most ``characters`` characters can take."""
    return BYTES_PER_CHARACTER * characters + BOM_BYTES


# Bytes read from one input when the caller names no limit: what 10,000,000 characters
# (the default --max-item-size and --max-size) can take.
DEFAULT_READ_LIMIT = byte_limit(10_000_000)


def not_regular(mode: int) -> str | None:
    """What a file of ``mode`` is when it is not a regular file ("a FIFO …"), else None."""
    if stat.S_ISREG(mode):
        return None
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def refusal(kind: str) -> ReadRefused:
    """The refusal of a file that is not regular."""
    if kind == "a directory":
        return ReadRefused("is a directory")
    return NotRegular(f"is {kind}, not a regular file")


def open_regular(path: str, buffering: int = -1, within: Within | None = None) -> BinaryIO:
    """``path`` opened for reading, when it is a regular file (links followed, unless
    ``within`` says otherwise: see :class:`Within`).

    Anything else is refused before a byte is read: looked at first with ``stat`` (a
    device is not even opened: opening some has effects), then checked again on the
    open file. Raises :class:`ReadRefused` (also for a missing or unreadable file).
    """
    fd, _ = _open_regular(path, within)
    return os.fdopen(fd, "rb", buffering=buffering)


def _open_regular(path: str, within: Within | None = None) -> tuple[int, int]:
    """A descriptor of the regular file ``path`` and its size (see :func:`open_regular`)."""
    nofollow = within is not None and not within.follow
    try:
        mode = os.stat(path, follow_symlinks=not nofollow).st_mode
    except OSError as exc:
        raise ReadRefused(_problem(path, exc)) from None
    if nofollow and stat.S_ISLNK(mode):
        raise ReadRefused(BECAME_LINK)
    kind = not_regular(mode)
    if kind is not None:
        raise refusal(kind)
    try:
        fd = os.open(path, (_OPEN_FLAGS | _NOFOLLOW) if nofollow else _OPEN_FLAGS)
    except OSError as exc:
        if nofollow and exc.errno == errno.ELOOP:  # swapped for a link since the stat
            raise ReadRefused(BECAME_LINK) from None
        raise ReadRefused(_problem(path, exc)) from None
    try:
        found = os.fstat(fd)
        kind = not_regular(found.st_mode)
        if kind is not None:
            raise refusal(kind)
        if within is not None:
            _refuse_outside(fd, path, within)
    except BaseException:
        os.close(fd)
        raise
    # (O_NONBLOCK stays: it changes nothing for a regular file.)
    return fd, found.st_size


def _refuse_outside(fd: int, path: str, within: Within) -> None:
    """Refuse the open file ``fd`` unless its real path is below ``within.root``: what
    was opened, not what the path leads to now (a folder on it may have been swapped)."""
    real = descriptor_path(fd)
    if real is None:  # the system does not say (Windows): the path, looked up again
        real = os.path.realpath(path)
    if not real_below(real, within.root):
        where = shown(within.root)
        raise ReadRefused(
            f"leads outside {'the current folder' if where == '.' else where} since it was "
            "listed (a folder on its path became a symbolic link?); not read"
        )


def read_at_most(handle: IO[bytes], limit: int) -> bytes | None:
    """The rest of ``handle``, or ``None`` when it holds more than ``limit`` bytes (then
    at most ``limit + 1`` were read)."""
    want = limit + 1
    pieces: list[bytes] = []
    got = 0
    while got < want:
        data = handle.read(min(want - got, max(CHUNK, _size_hint(handle) + 1)))
        if not data:
            break
        pieces.append(data)
        got += len(data)
    if got > limit:
        return None
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def read_regular(path: str, limit: int, within: Within | None = None) -> bytes:
    """The bytes of the regular file ``path``, if there are at most ``limit`` of them
    (opened as ``within`` says: see :class:`Within`). Raises :class:`ReadRefused`.

    Unbuffered, on the descriptor: one read of the whole file when its size is known (a
    third of what ``Path.read_bytes`` costs); a short read of a regular file is its end.
    """
    fd, size = _open_regular(path, within)
    try:
        want = min(size, limit) + 1
        first = os.read(fd, want)
        data: bytes | None = first
        if len(first) > limit:
            data = None
        elif len(first) == want:  # the file grew since fstat: read on, bounded
            with os.fdopen(os.dup(fd), "rb", buffering=0) as rest:
                more = read_at_most(rest, limit - len(first))
            data = None if more is None else first + more
    except OSError as exc:
        raise ReadRefused(_problem(path, exc)) from None
    finally:
        os.close(fd)
    if data is None:
        raise TooLarge(too_large(limit))
    return data


def too_large(limit: int) -> str:
    return f"over {limit:,} bytes; not read (the limit follows --max-item-size / --max-size)"


def _size_hint(handle: IO[bytes]) -> int:
    """The file's size, for one read of the whole (a third of what growing reads cost)."""
    try:
        return os.fstat(handle.fileno()).st_size
    except (OSError, ValueError, AttributeError):
        return 0


def _problem(path: str, exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "broken symbolic link" if os.path.islink(path) else "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if exc.errno == errno.ENXIO:  # a socket, or a device with nothing behind it
        return "is a socket or a device, not a regular file"
    return f"cannot read: {exc.strerror or exc}"
