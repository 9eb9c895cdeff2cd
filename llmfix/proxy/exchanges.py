"""The log of every exchange: one JSON line per request, that ``llmfix check`` reads.

Each line has the shape of an OpenAI Batch API output record, which ``llmfix check``
reads as it reads a batch: ``custom_id``, ``response.status_code`` and ``response.body``
(the upstream's answer as the model wrote it, before any repair; a stream reassembled as a
chat completion), beside the request's body and the proxy's verdict (``llmfix``).
``llmfix check proxy.jsonl --schema S`` checks the logged answers again.

Credentials are never logged: request headers are not written at all, and the values of
the client's ``Authorization``/``x-api-key`` headers are scrubbed from what is. Every
string is also redacted as ``--save-prompts`` files are (keys, emails, card and phone
numbers; :mod:`llmfix.llm.redact`), unless the proxy was started with ``--no-redact``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llmfix.errors import InputError
from llmfix.llm.redact import redact, scrub

if TYPE_CHECKING:
    from collections.abc import Iterable


def redacted(value: Any, secrets: Iterable[str], *, personal: bool = True) -> Any:
    """``value`` with every string scrubbed of ``secrets`` (and redacted when
    ``personal``), keys included; numbers and the structure are kept."""
    kept = tuple(secrets)

    def clean(text: str) -> str:
        text = scrub(text, kept)
        return redact(text) if personal else text

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return clean(node)
        if isinstance(node, dict):
            return {clean(str(k)): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(value)


class ExchangeLog:
    """Appends one line per exchange to ``path`` (a JSONL file), from any thread and any
    number of processes (``--workers``): each line goes to the file in one ``write`` on a
    descriptor opened for appending, under an advisory lock where the system has one, so
    that lines from several workers never interleave."""

    def __init__(self, path: str, *, redact_personal: bool = True) -> None:
        self.path = path
        self.redact_personal = redact_personal
        self._lock = threading.Lock()
        self._count = 0
        self._tag = f"{os.getpid()}-"
        try:
            target = Path(path).expanduser()
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            self._fd: int | None = os.open(target, flags, 0o644)
        except OSError as error:
            raise InputError(path, f"cannot open the exchange log: {error.strerror}") from None

    def write(
        self,
        *,
        route: str,
        request: Any,
        status_code: int,
        body: Any,
        verdict: dict[str, Any],
        secrets: Iterable[str],
        stream: bool,
    ) -> None:
        """Log one exchange (``body``: the upstream's answer, parsed, or its text)."""
        with self._lock:
            self._count += 1
            number = self._count
        secrets = tuple(secrets)
        line = {
            "custom_id": f"proxy-{int(time.time() * 1000)}-{self._tag}{number}",
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "route": route,
            "stream": stream,
            "request": redacted(request, secrets, personal=self.redact_personal),
            "response": {
                "status_code": status_code,
                "body": redacted(body, secrets, personal=self.redact_personal),
            },
            "llmfix": verdict,
        }
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                return
            _append(self._fd, data)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _append(fd: int, data: bytes) -> None:
    """``data`` at the end of the file, whole: one write (looped only if the system
    writes less), under ``flock`` where there is one."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: one process writes the log
        fcntl = None  # type: ignore[assignment]
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
