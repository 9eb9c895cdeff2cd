"""What a server was found to refuse, remembered across runs: one small file beside the
answer cache, so a fallback costs one refused request per server, not one per run.

llama-cpp-python's server answers ``response_format: json_schema`` with HTTP 500 and takes
``json_object`` with a schema; an OpenAI reasoning model refuses ``max_tokens``; a server
that does not take ``continue_final_message`` refuses an assistant prefill, one that does
not take llama.cpp's ``grammar`` field refuses a constrained continuation. A provider
learns each of these from one refused request. :class:`ServerMemory` keeps what it learnt
per provider, base URL and model in ``<cache dir>/servers.json`` (the base URL and model
are hashed: the file names no host), and the next run's provider starts from it.

It is about servers, not answers: ``--no-cache`` (which skips the answer cache) keeps it.
The file is bounded (at most :data:`MAX_ENTRIES` servers, the least recently seen
dropped first; a file larger than :data:`MAX_BYTES` is not read), written atomically
(a temporary file in the same directory, then renamed), and anything wrong with it (a
damaged file, a value of the wrong type, a directory that cannot be written) means
starting from nothing: it is an optimisation, never a failure. The directory is the
answer cache's (``cache_dir``, a setting an untrusted project file may not choose).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

FILE_NAME = "servers.json"
VERSION = 1
MAX_ENTRIES = 200
MAX_BYTES = 256 * 1024

# What a record may hold: each a flag, or (refused_modes) a list of structured modes.
FLAGS = ("max_completion_tokens", "no_temperature", "no_prefill", "no_grammar")


def server_key(provider: str, base_url: str, model: str) -> str:
    """The record's key: a hash of the provider, the base URL and the model."""
    text = json.dumps([provider, base_url.rstrip("/"), model])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class ServerMemory:
    """The records of ``<directory>/servers.json``."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory).expanduser() / FILE_NAME

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            if self.path.is_symlink() or self.path.stat().st_size > MAX_BYTES:
                return {}
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("v") != VERSION:
            return {}
        servers = data.get("servers")
        if not isinstance(servers, dict):
            return {}
        return {k: v for k, v in servers.items() if isinstance(k, str) and isinstance(v, dict)}

    def recall(self, key: str) -> dict[str, Any]:
        """What was learnt of the server ``key``, checked: ``refused_modes`` (a list of
        mode names) and the :data:`FLAGS` that are true; empty when nothing is known."""
        record = self._read().get(key, {})
        out: dict[str, Any] = {}
        modes = record.get("refused_modes")
        if isinstance(modes, list):
            out["refused_modes"] = [m for m in modes if isinstance(m, str) and len(m) < 40]
        for flag in FLAGS:
            if record.get(flag) is True:
                out[flag] = True
        return out

    def keep(self, key: str, learnt: Mapping[str, Any]) -> None:
        """Record what was learnt of the server ``key`` (replacing its record)."""
        servers = self._read()
        record: dict[str, Any] = {k: v for k, v in learnt.items() if v}
        record["seen"] = int(time.time())
        servers[key] = record
        if len(servers) > MAX_ENTRIES:
            newest = sorted(servers, key=lambda k: _seen(servers[k]), reverse=True)
            servers = {k: servers[k] for k in newest[:MAX_ENTRIES]}
        text = json.dumps({"v": VERSION, "servers": servers}, sort_keys=True)
        if len(text.encode("utf-8")) > MAX_BYTES:
            return
        directory = self.path.parent
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".servers.", suffix=".tmp", dir=directory)
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _seen(record: Mapping[str, Any]) -> int:
    seen = record.get("seen")
    return seen if isinstance(seen, int) and not isinstance(seen, bool) else 0
