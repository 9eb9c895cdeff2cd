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
import threading
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

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
    """Appends one line per exchange to ``path`` (a JSONL file), from any thread."""

    def __init__(self, path: str, *, redact_personal: bool = True) -> None:
        self.path = path
        self.redact_personal = redact_personal
        self._lock = threading.Lock()
        self._count = 0
        try:
            target = Path(path).expanduser()
            self._file: IO[str] = target.open("a", encoding="utf-8")
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
            "custom_id": f"proxy-{int(time.time() * 1000)}-{number}",
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
        text = json.dumps(line, ensure_ascii=False) + "\n"
        with self._lock:
            self._file.write(text)
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()
