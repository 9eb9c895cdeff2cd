"""Redaction of personal data and secrets in what LLM repair records.

Prompts and answers are kept in reports and ``--save-prompts`` files, which people share
more freely than the data itself. Before recording, :func:`redact` replaces API keys and
bearer tokens, email addresses, US Social Security numbers, payment card numbers (digit
runs of 13-19 that pass the Luhn check) and phone numbers (written with separators or a
leading ``+``) by placeholders like ``[EMAIL]``. What is *sent* to the model is not
redacted: it needs the data to repair it.

:func:`scrub` removes exact secrets (the API key in use) and always runs, redaction on or off.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_API_KEY = re.compile(
    r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}"  # OpenAI, Anthropic, Stripe-like
    r"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"  # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{30,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|\bAIza[0-9A-Za-z_-]{35}"  # Google
    r"|\bhf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|(?i:\bbearer\s+)[A-Za-z0-9._~+/-]{16,}=*"
)
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_CARD = re.compile(r"(?<![\d.])\d(?:[ -]?\d){12,18}(?![\d.])")
_PHONE = re.compile(
    r"(?<![\w+])\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{2,4}){1,4}(?![\w])"
    r"|(?<![\w.-])\(\d{3}\)\s?\d{3}[ .-]\d{4}(?![\w])"
    r"|(?<![\w.-])\d{3}[ .-]\d{3}[ .-]\d{4}(?![\w.-])"
)

PLACEHOLDERS = ("[API_KEY]", "[EMAIL]", "[SSN]", "[CARD]", "[PHONE]")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        n = int(char)
        if index % 2 == 1:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group())
    return "[CARD]" if 13 <= len(digits) <= 19 and _luhn_ok(digits) else match.group()


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with secrets, keys and personal data replaced by placeholders."""
    text = scrub(text, secrets)
    text = _API_KEY.sub("[API_KEY]", text)
    text = _EMAIL.sub("[EMAIL]", text)
    text = _SSN.sub("[SSN]", text)
    text = _CARD.sub(_card, text)
    return _PHONE.sub("[PHONE]", text)


def scrub(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with each exact secret (at least 4 characters long) replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text
