"""Reading inputs: files and stdin, decoded to text with problems reported as data."""

from __future__ import annotations

import codecs
import sys
from dataclasses import dataclass
from pathlib import Path

from llmfix.errors import InputError
from llmfix.model import Diagnostic, Severity

STDIN = "-"

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


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
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                return TextSource(name, data.decode(codec))
            except UnicodeDecodeError as exc:
                raise InputError(name, f"cannot decode as {codec}: {exc.reason}") from None
    if b"\x00" in data[:8192] and data.count(b"\x00", 0, 8192) > 8:
        raise InputError(name, "looks like a binary file (NUL bytes); skipped")
    try:
        return TextSource(name, data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        diag = Diagnostic(
            code="input.invalid_utf8",
            severity=Severity.WARNING,
            stage="input",
            message=f"invalid UTF-8 at byte {exc.start}; undecodable bytes replaced with U+FFFD",
            hint="pass --encoding if the file is in another encoding",
        )
        return TextSource(name, text, (diag,))


def read_source(path: str, encoding: str | None = None) -> TextSource:
    """Read one file (or stdin for ``-``) as text. Raises :class:`InputError`."""
    if path == STDIN:
        return decode_bytes(sys.stdin.buffer.read(), "<stdin>", encoding)
    file = Path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        problem = "broken symbolic link" if file.is_symlink() else "no such file"
        raise InputError(path, problem) from None
    except IsADirectoryError:
        raise InputError(path, "is a directory") from None
    except PermissionError:
        raise InputError(path, "permission denied") from None
    except OSError as exc:
        raise InputError(path, f"cannot read: {exc.strerror or exc}") from None
    return decode_bytes(data, path, encoding)
