"""Transport retries: which failures are worth another try, and how long to wait first.

One policy for every provider: at most ``max_retries`` more tries of one request; the wait
before retry ``n`` (0-based) is drawn uniformly from ``[0, min(cap, base * 2**n)]`` ("full
jitter", so many clients that failed together do not come back together); a ``Retry-After``
(or ``retry-after-ms``) header the server sends is honoured instead, up to ``max_wait``.

What is retried — faults that pass:

- HTTP 408, 409, 429 and 5xx;
- no connection, a connection reset or closed before the answer was complete (a body shorter
  than its ``Content-Length``), no answer within the timeout, and an answer still trickling in
  when the request's time (the timeout, for the whole request) is up;
- a success status whose body is not JSON (or does not decompress): a corrupted or cut
  answer is usually a passing fault.

What is not — answers that would come again the same:

- a 400, 401, 403 or 404: the request itself is wrong and will stay wrong;
- a success status with an HTML page (a wrong base URL, a proxy's login page, a captive
  portal) or with JSON that is not the API's answer (another API behind the base URL), or an
  answer over the size limit. A JSON body is read as JSON whatever its ``Content-Type`` says:
  local servers often label it wrongly.

These retries are a separate budget from repair attempts, and what went wrong in transport
never reaches a repair prompt.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or 500 <= status <= 599


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and full jitter."""

    max_retries: int = 4
    base: float = 0.5  # seconds
    cap: float = 30.0  # longest backoff wait, seconds
    max_wait: float = 60.0  # longest Retry-After honoured; a longer one ends the retries

    def backoff(self, retry: int, rand: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``retry`` (0-based), without a server hint."""
        ceiling = min(self.cap, self.base * 2.0**retry)
        return float(rand() * ceiling)

    def wait(
        self, retry: int, retry_after: float | None, rand: Callable[[], float] = random.random
    ) -> float | None:
        """Seconds to wait before retry ``retry``; ``None`` when the server asks for too long."""
        if retry_after is not None:
            return None if retry_after > self.max_wait else max(0.0, retry_after)
        return self.backoff(retry, rand)


def parse_retry_after(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """Seconds a response asks the client to wait (``retry-after-ms`` or ``Retry-After``)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # an HTTP date: rare, and the module is slow to import

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - now())
