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
"""

from __future__ import annotations

import threading
from collections import Counter

# Bucket bounds of the added-latency histogram, in seconds.
BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)


def _labels(**labels: str) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class Metrics:
    """Counters of one proxy; safe to update from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[tuple[str, str]] = Counter()
        self.repairs: Counter[str] = Counter()
        self.failures: Counter[tuple[str, str]] = Counter()
        self._buckets: dict[str, list[int]] = {}
        self._sums: dict[str, float] = {}
        self._counts: Counter[str] = Counter()

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
        with self._lock:
            self.requests[(route, status)] += 1
            self.repairs.update(repairs)
            if failed_action is not None:
                self.failures[(route, failed_action)] += 1
            buckets = self._buckets.setdefault(route, [0] * len(BUCKETS))
            for i, bound in enumerate(BUCKETS):
                if added <= bound:
                    buckets[i] += 1
            self._sums[route] = self._sums.get(route, 0.0) + added
            self._counts[route] += 1

    def render(self) -> str:
        """The counters in the Prometheus text format."""
        with self._lock:
            lines = [
                "# HELP llmfix_proxy_requests_total Responses by route and verdict status.",
                "# TYPE llmfix_proxy_requests_total counter",
            ]
            for (route, status), n in sorted(self.requests.items()):
                lines.append(
                    f"llmfix_proxy_requests_total{_labels(route=route, status=status)} {n}"
                )
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
                for bound, n in zip(BUCKETS, self._buckets[route], strict=True):
                    labels = _labels(route=route, le=repr(bound))
                    lines.append(f"llmfix_proxy_added_seconds_bucket{labels} {n}")
                total = self._counts[route]
                labels = _labels(route=route, le="+Inf")
                lines.append(f"llmfix_proxy_added_seconds_bucket{labels} {total}")
                lines.append(
                    f"llmfix_proxy_added_seconds_sum{_labels(route=route)} {self._sums[route]:.6f}"
                )
                lines.append(f"llmfix_proxy_added_seconds_count{_labels(route=route)} {total}")
            return "\n".join(lines) + "\n"
