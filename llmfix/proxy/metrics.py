"""The proxy's counters, served at ``/metrics`` in the Prometheus text format (0.0.4).

Four families, written here rather than with ``prometheus-client``: the format is a few
lines of text, and the client library keeps one registry per process, which several
proxies in one process (the tests, an embedding application) would share.

- ``llmfix_proxy_requests_total{route,status}`` — responses by route and verdict
  (``valid``, ``repaired``, ``invalid``, ..., ``unchecked``, ``upstream_error``);
- ``llmfix_proxy_repairs_total{rule}`` — repairs made, by rule;
- ``llmfix_proxy_failures_total{route,action}`` — answers that failed the gate, by what
  was done (``passed``: sent marked, ``error``: replaced by an error);
- ``llmfix_proxy_added_seconds{route}`` — a histogram of the time the proxy itself added
  to a request (reading, checking, rewriting; not the upstream's time).

With several worker processes (``--workers``) each keeps its own counters;
:meth:`Metrics.snapshot` gives them as JSON and :meth:`Metrics.render` adds up the
snapshots of the others, so that ``/metrics`` counts every worker's requests whichever
worker answers it (:class:`Peers`; see :mod:`llmfix.proxy.workers`).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterable

# The longest wait for another worker's counters when serving /metrics.
PEER_TIMEOUT = 2.0
# Largest snapshot read from another worker.
_MAX_SNAPSHOT = 10_000_000
# Bucket bounds of the added-latency histogram, in seconds.
BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


def _labels(**labels: str) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Counters of one proxy process; safe to update from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, str]] = Counter()
        self.repairs: Counter[str] = Counter()
        self.failures: Counter[tuple[str, str]] = Counter()
        # per route: how many fell in each bucket alone (cumulated when rendered)
        self._buckets: dict[str, list[int]] = {}
        self._sums: dict[str, float] = {}

    def record(
        self,
        route: str,
        status: str,
        repairs: Counter[str],
        added: float,
        failed_action: str | None = None,
    ) -> None:
        """One response: its route, verdict status, repairs by rule, the seconds the proxy
        added, and what was done with a failure (``None``: it passed)."""
        slot = bisect.bisect_left(BUCKETS, added)  # len(BUCKETS): above the last bound
        with self._lock:
            self.requests[(route, status)] += 1
            if repairs:
                self.repairs.update(repairs)
            if failed_action is not None:
                self.failures[(route, failed_action)] += 1
            buckets = self._buckets.get(route)
            if buckets is None:
                buckets = self._buckets[route] = [0] * (len(BUCKETS) + 1)
            buckets[slot] += 1
            self._sums[route] = self._sums.get(route, 0.0) + added

    def snapshot(self) -> dict[str, Any]:
        """The counters as a JSON value (what another worker adds to its own)."""
        with self._lock:
            return {
                "requests": [[r, s, n] for (r, s), n in self.requests.items()],
                "repairs": dict(self.repairs),
                "failures": [[r, a, n] for (r, a), n in self.failures.items()],
                "buckets": {r: list(b) for r, b in self._buckets.items()},
                "sums": dict(self._sums),
            }

    def render(self, others: Iterable[dict[str, Any]] = ()) -> str:
        """The counters in the Prometheus text format, with those of ``others``
        (snapshots of other workers) added."""
        total = Metrics()
        for snap in [self.snapshot(), *others]:
            total._add(snap)
        return total._text()

    def _add(self, snap: dict[str, Any]) -> None:
        """Add a snapshot (a JSON value from another process: only what fits is used)."""
        for row in snap.get("requests") or ():
            route, status, n = row
            self.requests[(str(route), str(status))] += int(n)
        for rule, n in (snap.get("repairs") or {}).items():
            self.repairs[str(rule)] += int(n)
        for row in snap.get("failures") or ():
            route, action, n = row
            self.failures[(str(route), str(action))] += int(n)
        for route, counts in (snap.get("buckets") or {}).items():
            mine = self._buckets.setdefault(str(route), [0] * (len(BUCKETS) + 1))
            for i, n in enumerate(counts[: len(mine)]):
                mine[i] += int(n)
        for route, value in (snap.get("sums") or {}).items():
            self._sums[str(route)] = self._sums.get(str(route), 0.0) + float(value)

    def _text(self) -> str:
        lines = [
            "# HELP llmfix_proxy_requests_total Responses by route and verdict status.",
            "# TYPE llmfix_proxy_requests_total counter",
        ]
        for (route, status), n in sorted(self.requests.items()):
            lines.append(f"llmfix_proxy_requests_total{_labels(route=route, status=status)} {n}")
        lines += [
            "# HELP llmfix_proxy_repairs_total Repairs made, by rule.",
            "# TYPE llmfix_proxy_repairs_total counter",
        ]
        for rule, n in sorted(self.repairs.items()):
            lines.append(f"llmfix_proxy_repairs_total{_labels(rule=rule)} {n}")
        lines += [
            "# HELP llmfix_proxy_failures_total Answers that failed the check, by action.",
            "# TYPE llmfix_proxy_failures_total counter",
        ]
        for (route, action), n in sorted(self.failures.items()):
            labels = _labels(route=route, action=action)
            lines.append(f"llmfix_proxy_failures_total{labels} {n}")
        lines += [
            "# HELP llmfix_proxy_added_seconds Time the proxy added to a request.",
            "# TYPE llmfix_proxy_added_seconds histogram",
        ]
        for route in sorted(self._buckets):
            counts = self._buckets[route]
            running = 0
            for bound, n in zip(BUCKETS, counts, strict=False):
                running += n
                labels = _labels(route=route, le=repr(bound))
                lines.append(f"llmfix_proxy_added_seconds_bucket{labels} {running}")
            total = sum(counts)
            labels = _labels(route=route, le="+Inf")
            lines.append(f"llmfix_proxy_added_seconds_bucket{labels} {total}")
            lines.append(
                f"llmfix_proxy_added_seconds_sum{_labels(route=route)} {self._sums[route]:.6f}"
            )
            lines.append(f"llmfix_proxy_added_seconds_count{_labels(route=route)} {total}")
        return "\n".join(lines) + "\n"


class Peers:
    """This worker's counters served to its siblings, and theirs fetched (all in
    ``folder``, one socket per worker: ``N.sock``)."""

    def __init__(self, folder: str, number: int) -> None:
        self.folder = Path(folder)
        self.number = number
        self._server: asyncio.AbstractServer | None = None

    @property
    def path(self) -> Path:
        return self.folder / f"{self.number}.sock"

    async def start(self, metrics: Metrics) -> None:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                writer.write(json.dumps(metrics.snapshot()).encode())
                await writer.drain()
            finally:
                writer.close()

        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server = await asyncio.start_unix_server(answer, path=str(self.path))

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def snapshots(self) -> list[dict[str, Any]]:
        """The other workers' counters (a worker that does not answer is left out)."""
        others = [p for p in self.folder.glob("*.sock") if p.name != self.path.name]
        found = await asyncio.gather(*(_fetch(p) for p in sorted(others)))
        return [snap for snap in found if snap is not None]


async def _fetch(path: Path) -> dict[str, Any] | None:
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_unix_connection(str(path)), PEER_TIMEOUT
        )
    except (OSError, asyncio.TimeoutError):
        return None
    try:
        data = await asyncio.wait_for(reader.read(_MAX_SNAPSHOT), PEER_TIMEOUT)
    except (OSError, asyncio.TimeoutError):
        return None
    finally:
        writer.close()
    try:
        snap = json.loads(data)
    except ValueError:
        return None
    return snap if isinstance(snap, dict) else None
