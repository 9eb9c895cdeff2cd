"""Redaction of personal data and keys in recorded prompts and answers."""

from __future__ import annotations

import pytest

from llmfix.llm.redact import redact, scrub


@pytest.mark.parametrize(
    ("text", "placeholder"),
    [
        ("mail ada@example.com now", "[EMAIL]"),
        ("first.last+tag@mail.example.co.uk", "[EMAIL]"),
        ("call 555-123-4567", "[PHONE]"),
        ("call (555) 123-4567", "[PHONE]"),
        ("call +44 20 7946 0958", "[PHONE]"),
        ("card 4111 1111 1111 1111", "[CARD]"),
        ("card 4111-1111-1111-1111", "[CARD]"),
        ("card 4111111111111111", "[CARD]"),
        ("ssn 078-05-1120", "[SSN]"),
        ("key sk-proj-abcdefghijklmnopqrstuvwx", "[API_KEY]"),
        ("key sk-ant-api03-abcdefghijklmnopqrstu", "[API_KEY]"),
        ("aws AKIAIOSFODNN7EXAMPLE", "[API_KEY]"),
        ("gh ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[API_KEY]"),
        ("Authorization: Bearer abcdefghijklmnop1234", "[API_KEY]"),
    ],
)
def test_redacts(text: str, placeholder: str) -> None:
    assert placeholder in redact(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"id": 1234567890123456}',  # fails the Luhn check
        '{"date": "2024-01-15"}',
        '{"version": "1.2.3"}',
        '{"age": 36, "count": 5551234567}',
        '{"price": 19.99}',
    ],
)
def test_leaves_ordinary_values(text: str) -> None:
    assert redact(text) == text


def test_redacted_text_loses_the_value() -> None:
    assert "ada@example.com" not in redact('{"email": "ada@example.com"}')


def test_scrub_replaces_exact_secrets() -> None:
    assert scrub("token=abcd1234 ok", ["abcd1234"]) == "token=*** ok"


def test_scrub_ignores_empty_and_tiny_secrets() -> None:
    assert scrub("a b", ["", None, "a"]) == "a b"
