"""The transport retry policy: backoff with full jitter, Retry-After, what is retried."""

from __future__ import annotations

import email.utils

import pytest

from llmfix.llm.retry import RetryPolicy, is_retryable_status, parse_retry_after


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_retryable(status: int) -> None:
    assert is_retryable_status(status)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_not_retryable(status: int) -> None:
    assert not is_retryable_status(status)


@pytest.mark.parametrize(("retry", "ceiling"), [(0, 0.5), (1, 1.0), (2, 2.0), (10, 30.0)])
def test_backoff_ceiling_doubles_up_to_the_cap(retry: int, ceiling: float) -> None:
    assert RetryPolicy(base=0.5, cap=30.0).backoff(retry, rand=lambda: 1.0) == ceiling


def test_backoff_is_full_jitter() -> None:
    assert RetryPolicy(base=1.0).backoff(3, rand=lambda: 0.25) == 2.0


def test_retry_after_wins_over_backoff() -> None:
    assert RetryPolicy(base=1.0).wait(0, 7.0, rand=lambda: 1.0) == 7.0


def test_too_long_retry_after_gives_up() -> None:
    assert RetryPolicy(max_wait=10).wait(0, 3600.0) is None


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], seconds: float | None) -> None:
    assert parse_retry_after(headers) == seconds


def test_parse_retry_after_http_date() -> None:
    date = email.utils.formatdate(1_000_030, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=lambda: 1_000_000) == 30.0
