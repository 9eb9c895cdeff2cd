"""Reading bytes as text: one file, stdin or a URL (decoding problems reported as data), and
the files a command line names (directories walked, ``--include``/``--exclude`` globs)."""

from __future__ import annotations

import codecs
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from llmfix import codes
from llmfix.errors import InputError, InputTooLarge
from llmfix.files.containment import shown, within
from llmfix.files.read import (
    DEFAULT_READ_LIMIT,
    NotRegular,
    ReadRefused,
    TooLarge,
    Within,
    open_regular,
    read_at_most,
    read_regular,
    too_large,
)
from llmfix.model import Diagnostic, Risk, build

STDIN = "-"
STDIN_NAME = "<stdin>"


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_BOM_STARTS = tuple(bom for bom, _ in _BOMS)
# More NUL bytes than this in the first _SNIFF bytes: a binary file, not text.
_SNIFF = 8192
_MAX_NULS = 8


@dataclass(frozen=True)
class TextSource:
    """One input's decoded text; ``name`` is the path as given, or ``<stdin>``."""

    name: str
    text: str
    diagnostics: tuple[Diagnostic, ...] = ()


def decode_bytes(data: bytes, name: str, encoding: str | None = None) -> TextSource:
    """Decode ``data``: a UTF-16/32 BOM is honoured, invalid UTF-8 is replaced and reported."""
    if encoding is not None:
        try:
            return TextSource(name, data.decode(encoding))
        except (LookupError, UnicodeDecodeError) as exc:
            raise InputError(name, f"cannot decode as {encoding}: {exc}") from None
    for bom, codec in _BOMS if data.startswith(_BOM_STARTS) else ():
        if data.startswith(bom):
            try:
                return TextSource(name, data.decode(codec))
            except UnicodeDecodeError as exc:
                raise InputError(name, f"cannot decode as {codec}: {exc.reason}") from None
    if data.find(b"\x00", 0, _SNIFF) >= 0 and data.count(b"\x00", 0, _SNIFF) > _MAX_NULS:
        raise InputError(name, "looks like a binary file (NUL bytes); skipped")
    try:  # (one a file: without the frozen dataclass __init__)
        return build(TextSource, name=name, text=data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        return TextSource(name, text, (invalid_utf8(exc.start, data[exc.start : exc.end]),))


def invalid_utf8(offset: int, bad: bytes, where: str = "") -> Diagnostic:
    """What replacing undecodable bytes with U+FFFD is: a change to the text (risk safe,
    so the answer is never ``valid`` and ``--max-risk lossless`` stops it), first at byte
    ``offset`` of the file (the first 0-based; ``bad`` are the bytes there; ``where``
    names the line)."""
    return codes.INPUT_INVALID_UTF8.at(
        f"invalid UTF-8 at byte {offset}{where} (0x{bad.hex()}): undecodable bytes "
        "replaced with U+FFFD",
        risk=Risk.SAFE,
        hint="pass --encoding if the file is in another encoding",
        data={"offset": offset},
    )


def read_source(
    path: str,
    encoding: str | None = None,
    limit: int = DEFAULT_READ_LIMIT,
    within: Within | None = None,
) -> TextSource:
    """Read one file (or stdin for ``-``) as text: at most ``limit`` bytes, and only a
    regular file (stdin may be a pipe); a file discovery listed, only where it was listed
    (``within``: see :class:`llmfix.files.read.Within`). Raises :class:`InputError`."""
    if path == STDIN:
        data = read_at_most(sys.stdin.buffer, limit)
        if data is None:
            raise InputTooLarge(STDIN_NAME, too_large(limit))
        return decode_bytes(data, STDIN_NAME, encoding)
    if is_url(path):
        with open_url(path) as handle:
            data = read_at_most(handle, limit)
        if data is None:
            raise InputTooLarge(path, too_large(limit))
        return decode_bytes(data, path, encoding)
    try:
        # Unbuffered: one read of the whole file, a third of what Path.read_bytes costs.
        data = read_regular(path, limit, within)
    except ReadRefused as exc:
        raise refused(path, exc) from None
    return decode_bytes(data, path, encoding)


def refused(path: str, exc: ReadRefused) -> InputError:
    """The input error for a file :mod:`llmfix.files.read` would not read."""
    if isinstance(exc, TooLarge):
        return InputTooLarge(path, exc.problem)
    if isinstance(exc, NotRegular):
        pipe = "; pipe it to stdin to read it" if "FIFO" in exc.problem else ""
        return InputError(path, f"{exc.problem}; skipped{pipe}")
    return InputError(path, exc.problem)


def read_chunks(
    path: str, encoding: str | None = None, size: int = 65536, limit: int = DEFAULT_READ_LIMIT
) -> Iterator[str]:
    """One file (or stdin for ``-``) as text chunks, each as soon as it arrives (a pipe).

    Undecodable bytes become U+FFFD (a chunk boundary may split a character; the
    incremental decoder keeps it whole). A named file must be a regular one. Raises
    :class:`InputError`, also once more than ``limit`` bytes have arrived (what came
    before was yielded).
    """
    name = STDIN_NAME if path == STDIN else path
    try:
        decoder = codecs.getincrementaldecoder(encoding or "utf-8")(errors="replace")
    except LookupError:
        raise InputError(name, f"unknown encoding {encoding}") from None
    try:
        handle = sys.stdin.buffer if path == STDIN else open_regular(path, buffering=0)
    except ReadRefused as exc:
        raise refused(path, exc) from None
    fd = handle.fileno()
    total = 0
    nuls = 0  # in the first 8 KB: binary data (/dev/zero) is refused as read_source does
    try:
        while True:
            data = os.read(fd, min(size, limit + 1 - total))
            if not data:
                break
            if encoding is None and total < _SNIFF:
                nuls += data.count(b"\x00", 0, _SNIFF - total)
                if nuls > _MAX_NULS:
                    raise InputError(name, "looks like a binary file (NUL bytes); stopped reading")
            total += len(data)
            if total > limit:  # (what came before was yielded)
                problem = too_large(limit).replace("not read", "stopped reading")
                raise InputTooLarge(name, problem)
            text = decoder.decode(data)
            if text:
                yield text
        tail = decoder.decode(b"", final=True)
        if tail:
            yield tail
    finally:
        if path != STDIN:
            handle.close()


@dataclass
class WalkNotes:
    """What discovery passed over, for the command to tell: symbolic links not followed
    and paths refused (path → why), folders that could not be listed (path → problem;
    each is also yielded, to be reported as an unreadable input). And where the readers
    must find each file it listed (path → :class:`~llmfix.files.read.Within`): a walked
    file, below the folder walked and not through a final link (unless
    ``--follow-symlinks``); a path of an untrusted config, in the config's folder. A path
    not in ``within`` (a file named on the command line) is read as named."""

    skipped: dict[str, str] = dataclass_field(default_factory=dict)
    unlisted: dict[str, str] = dataclass_field(default_factory=dict)
    within: dict[str, Within] = dataclass_field(default_factory=dict)


def discover_files(
    paths: Iterable[str],
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    links: set[str] | None = None,
    *,
    follow_symlinks: bool = False,
    confine: str | None = None,
    notes: WalkNotes | None = None,
) -> Iterator[str]:
    """Files to check: each path as given (``-`` is stdin), directories walked recursively.

    A walk is sorted (stable ids and output order), skips directories whose name starts
    with a dot, and keeps the files that match an ``include`` glob (all when there is none)
    and no ``exclude`` glob. A glob without ``/`` matches the file name; one with ``/``
    matches the path relative to the directory walked (``**`` crosses directories). Explicit
    files are always checked. Raises :class:`InputError` for a path that does not exist.

    A walk follows no symbolic link (to a file or a folder) unless ``follow_symlinks``
    (``--follow-symlinks``); with ``confine`` (the directory of an untrusted project file
    whose paths these are) no path, named or walked, whose link leads out of it. What is
    passed over is named in ``notes.skipped``; a folder that cannot be listed is yielded
    itself (an unreadable input, not a silent pass) and named in ``notes.unlisted``. Where
    each file yielded must still be when it is read goes in ``notes.within``: the check
    was made on the listing, and the file may be swapped for a link before it is read.

    ``links``, when given, receives each path yielded that is a symbolic link, before it is
    yielded (a walk knows it from the directory listing, with no system call per file).
    """
    inc = tuple(include)
    exc = tuple(exclude)
    walk = _Walk(inc, exc, links, follow_symlinks, confine, notes or WalkNotes())
    for path in paths:
        if path == STDIN:
            yield path
            continue
        if is_url(path):
            yield from _walk_url(path, inc, exc)
            continue
        target = Path(path)
        if confine is not None and not walk.inside(path):
            continue
        if target.is_dir():
            yield from walk.files(target)
        elif target.exists() or target.is_symlink():
            if links is not None and target.is_symlink():
                links.add(path)
            if walk.confined is not None:  # an untrusted config's path: links inside it
                walk.notes.within[path] = walk.confined
            yield path
        else:
            raise InputError(path, "no such file or directory")


@dataclass
class _Walk:
    """One discovery's walking rules (see :func:`discover_files`)."""

    include: tuple[str, ...]
    exclude: tuple[str, ...]
    links: set[str] | None
    follow: bool
    confine: str | None
    notes: WalkNotes
    confined: Within | None = dataclass_field(init=False, default=None)  # of ``confine``

    def __post_init__(self) -> None:
        if self.confine is not None:
            self.confined = Within(os.path.realpath(self.confine), follow=True)

    def rule(self, root: Path) -> Within | None:
        """Where the files walked from ``root`` must be when read: below the folder as it
        is now, their last component no link; following links, only inside ``confine``."""
        if not self.follow:
            return Within(os.path.realpath(root))
        return self.confined

    def inside(self, path: str) -> bool:
        """Whether ``path`` stays in ``confine`` (links followed); else it is noted."""
        if self.confine is None or within(path, self.confine):
            return True
        self.notes.skipped[path] = f"leads outside {shown(self.confine)}"
        return False

    def files(self, root: Path) -> Iterator[str]:
        include, exclude, links = self.include, self.exclude, self.links
        rule = self.rule(root)
        within = self.notes.within
        for directory, dirnames, filenames, linked, problem in self.tree(os.fspath(root)):
            if problem is not None:
                self.notes.unlisted[directory] = problem
                yield directory
                continue
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            base = Path(directory)
            # What str(base / name) and (base / name).relative_to(root).as_posix() give, made
            # once per directory: a Path per file cost more than the rest of the walk.
            prefix = str(base / "_")[:-1]
            folder = base.relative_to(root).as_posix()
            relative = "" if folder == "." else folder + "/"
            for name in sorted(filenames):
                if include or exclude:
                    rel = relative + name
                    if include and not any(glob_match(g, rel) for g in include):
                        continue
                    if any(glob_match(g, rel) for g in exclude):
                        continue
                if name in linked:
                    if not self.followed(prefix + name):
                        continue
                    if links is not None:
                        links.add(prefix + name)
                if rule is not None:
                    within[prefix + name] = rule
                yield prefix + name

    def followed(self, link: str) -> bool:
        """Whether the walk goes on through the symbolic link ``link``; else it is noted."""
        if not self.follow:
            why = "a symbolic link, not followed (--follow-symlinks follows it)"
            self.notes.skipped[link] = why
            return False
        return self.inside(link)

    def tree(
        self, top: str, seen: frozenset[str] = frozenset()
    ) -> Iterator[tuple[str, list[str], list[str], set[str], str | None]]:
        """What ``os.walk(top)`` yields (top down: the caller may prune the directory
        names), each with the names of its files that are symbolic links, as the listing
        says, and ``None``; a directory that cannot be listed comes with the problem
        instead. A link to a directory is walked into only as :meth:`followed` says, and
        never into a directory it is already in (a loop)."""
        dirs: list[str] = []
        files: list[str] = []
        linked: set[str] = set()  # files
        dir_links: set[str] = set()
        try:
            with os.scandir(top) as listing:
                for entry in listing:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    try:
                        link = entry.is_symlink()
                    except OSError:
                        link = False
                    (dirs if is_dir else files).append(entry.name)
                    if link:
                        (dir_links if is_dir else linked).add(entry.name)
        except OSError as exc:
            yield top, [], [], set(), f"cannot list the folder: {exc.strerror or exc}"
            return
        yield top, dirs, files, linked, None
        if self.follow:  # the real folders above, to walk no loop
            seen = seen | {os.path.realpath(top)}
        for name in dirs:
            path = os.path.join(top, name)
            walked = name not in dir_links
            if walked or (self.followed(path) and os.path.realpath(path) not in seen):
                yield from self.tree(path, seen)


def is_url(path: str) -> bool:
    """A URL (``s3://``, ``gs://``, ``hdfs://``, ``file://`` …) rather than a local path."""
    return "://" in path and not os.path.exists(path)


def _filesystem(url: str) -> tuple[Any, str]:
    """pyarrow's filesystem for ``url`` and the path in it: pyarrow's own (``file``, ``s3``,
    ``gs``, ``hdfs`` …), else any scheme fsspec knows (``memory``, ``az``, ``http`` …, with
    that filesystem's package installed), seen through pyarrow's ``FSSpecHandler``."""
    try:
        from pyarrow import fs
    except ImportError:
        raise InputError(url, "reading URLs needs pyarrow: pip install 'llmfix[parquet]'") from None
    try:
        filesystem, path = fs.FileSystem.from_uri(url)
    except Exception as exc:  # pyarrow's errors: unknown scheme, missing credentials, …
        if "Unrecognized filesystem type" not in str(exc):
            raise InputError(url, f"cannot open: {' '.join(str(exc).split())}") from None
        return _fsspec_filesystem(url)
    return filesystem, str(path)


def _fsspec_filesystem(url: str) -> tuple[Any, str]:
    from pyarrow import fs

    scheme = url.split("://", 1)[0]
    try:
        import fsspec
    except ImportError:
        raise InputError(
            url, f"pyarrow cannot read {scheme}:// URLs; install fsspec (and its {scheme} package)"
        ) from None
    try:
        found, path = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:  # no such protocol, or its package is missing
        raise InputError(url, f"cannot open: {' '.join(str(exc).split())}") from None
    return fs.PyFileSystem(fs.FSSpecHandler(found)), str(path)


def open_url(url: str, *, random_access: bool = False) -> IO[bytes]:
    """A URL's content as a buffered binary stream (pyarrow's filesystems), or as a file
    that can seek (``random_access``: what a Parquet reader needs). ``InputError``."""
    import io

    filesystem, path = _filesystem(url)
    try:
        if random_access:
            return filesystem.open_input_file(path)  # type: ignore[no-any-return]
        return io.BufferedReader(filesystem.open_input_stream(path))
    except Exception as exc:  # FileNotFoundError, or a remote store's error
        raise InputError(url, f"cannot read: {' '.join(str(exc).split())}") from None


def _walk_url(url: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> Iterator[str]:
    """A URL's files as ``_walk`` lists a directory's (sorted, globs, no dot-directories)."""
    from pyarrow import fs

    filesystem, root = _filesystem(url)
    kind = filesystem.get_file_info(root).type
    if kind == fs.FileType.NotFound:
        raise InputError(url, "no such file or directory")
    if kind != fs.FileType.Directory:
        yield url
        return
    scheme = url.split("://", 1)[0]
    found = filesystem.get_file_info(fs.FileSelector(root, recursive=True))
    for entry in sorted(found, key=lambda e: str(e.path)):
        rel = str(entry.path)[len(root.rstrip("/")) + 1 :]
        if entry.type != fs.FileType.File or any(p.startswith(".") for p in rel.split("/")[:-1]):
            continue
        if include and not any(glob_match(g, rel) for g in include):
            continue
        if not any(glob_match(g, rel) for g in exclude):
            yield f"{scheme}://{entry.path}"


def glob_match(pattern: str, path: str) -> bool:
    """Whether a ``/``-separated relative ``path`` matches ``pattern``.

    ``*`` and ``?`` stay inside one path segment, ``**`` spans segments, ``[...]`` is a
    character class. A pattern without ``/`` is matched against the last segment only.
    """
    if "/" not in pattern.strip("/"):
        path = path.rsplit("/", 1)[-1]
    return (
        _glob_regex(pattern.lstrip("./") if pattern.startswith("./") else pattern).fullmatch(path)
        is not None
    )


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(char))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return re.compile("".join(out))
