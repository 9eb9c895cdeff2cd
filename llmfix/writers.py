"""Atomic file writes: a temp file in the same directory, then a rename.

A reader (or a crash) never sees a half-written file; the target's permission bits
are kept when it is replaced.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from llmfix.errors import InputError


def write_atomic(path: str | Path, text: str, *, backup: bool = False) -> None:
    """Replace ``path`` with ``text`` atomically; with ``backup`` keep ``path.bak`` first."""
    target = Path(path)
    if target.exists() and not target.is_file():
        # A device, FIFO or a link to one (``/dev/stdout``): there is nothing to replace
        # atomically, and renaming over it would destroy it.
        try:
            with target.open("w", encoding="utf-8", newline="") as handle:
                handle.write(text)
        except OSError as exc:
            raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
        return
    directory = target.parent if str(target.parent) else Path(".")
    try:
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
        if backup and target.exists():
            shutil.copy2(target, target.with_name(target.name + ".bak"))
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise InputError(str(path), f"cannot write: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
