"""On-disk cache of model answers, so re-running a batch does not pay twice.

The key is a SHA-256 of the provider, base URL, model, the messages, the schema and the
temperature: the same question to the same model gets the stored answer, with no request.
One small JSON file per answer under ``<dir>/<2 hex>/<64 hex>.json``, written atomically.
The default directory is ``$XDG_CACHE_HOME/llmfix`` or ``~/.cache/llmfix``; a cache that
cannot be read or written is skipped silently (it is an optimisation, never a failure).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from llmfix.llm.config import default_cache_dir
from llmfix.llm.providers import Completion

__all__ = ["CACHE_VERSION", "AnswerCache", "cache_key", "default_cache_dir"]

CACHE_VERSION = 1


def cache_key(
    *,
    provider: str,
    base_url: str,
    model: str,
    messages: Sequence[Mapping[str, str]],
    schema: Any,
    temperature: float | None,
) -> str:
    payload = {
        "v": CACHE_VERSION,
        "provider": provider,
        "base_url": base_url,
        "model": model,
        "messages": [dict(m) for m in messages],
        "schema": schema,
        "temperature": temperature,
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class AnswerCache:
    """Answers keyed by :func:`cache_key`."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory else default_cache_dir()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
            if data.get("v") != CACHE_VERSION:
                return None
            return Completion.from_dict(data["completion"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def put(self, key: str, completion: Completion) -> None:
        path = self._path(key)
        text = json.dumps({"v": CACHE_VERSION, "completion": completion.to_dict()})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
