"""Repair prompts: what a model is shown so that it can fix its own output.

A prompt holds, in this order: the validation errors (JSON Pointer + message, as
:mod:`llmfix.schema.validate` writes them), hints for the mistakes the pipeline saw in the original
(an XML wrapper, fences, trailing commas, single quotes, unescaped newlines …), the original
output (cut to ``max_chars``, its start and its end kept), the JSON Schema, and from the
second attempt on a ``PREVIOUS ATTEMPT FAILED VALIDATION`` section with the previous answer
and *its* errors. Transport failures never appear here: only what validation said.

For a partial repair (most of the value valid) the prompt shows the valid part and asks for
the failing properties only, with a schema for just those.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llmfix.model import Diagnostic

SYSTEM_PROMPT = (
    "You repair JSON produced by a language model so that it validates against a JSON "
    "Schema. Keep every value that is already correct; change only what the errors require; "
    "never invent data the original does not support when the schema allows leaving it out. "
    "Reply with the corrected JSON value only: no explanation, no Markdown code fences, "
    "no XML tags."
)

MAX_ERRORS = 30

# Diagnostic code (or candidate origin prefix) → a hint about that kind of mistake.
_HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (
        ("extract.xml_envelope", "origin:xml"),
        "The original wrapped the JSON in XML tags; answer with the bare JSON value.",
    ),
    (
        ("extract.fence", "parse.fence", "origin:fence"),
        "The original put the JSON in a Markdown code fence; answer without fences.",
    ),
    (
        ("extract.prose", "parse.leading_text", "parse.trailing_text", "parse.stray_text"),
        "The original mixed prose with the JSON; answer with the JSON value alone.",
    ),
    (
        ("parse.trailing_comma", "parse.leading_comma"),
        "The original had trailing commas; JSON allows no comma before } or ].",
    ),
    (
        ("parse.single_quotes", "parse.smart_quotes", "parse.missing_quote"),
        "The original used single or curly quotes; JSON strings and keys take double quotes.",
    ),
    (("parse.unquoted_key",), "The original had unquoted keys; quote every key."),
    (
        ("parse.unescaped_control",),
        "The original had raw newlines or tabs inside strings; write them as \\n and \\t.",
    ),
    (
        ("parse.unescaped_quote",),
        'The original had unescaped double quotes inside strings; write them as \\".',
    ),
    (
        ("parse.python_literal", "parse.js_literal"),
        "The original used True/False/None or undefined; JSON has true, false and null.",
    ),
    (("parse.comment",), "The original had comments; JSON has none."),
    (
        ("parse.truncated", "parse.missing_closer"),
        "The original was cut off before it ended; answer with a complete, shorter value.",
    ),
    (
        ("normalize.reasoning_block", "extract.only_in_reasoning"),
        "The original hid the JSON inside its reasoning; give the final JSON value only.",
    ),
    (
        ("parse.failed", "extract.none"),
        "No JSON value could be read from the original; build one from its content.",
    ),
)


def hints_for(diagnostics: Iterable[Diagnostic], origin: str | None = None) -> list[str]:
    """Hints for the patterns the pipeline reported, each once, in a fixed order."""
    seen = {d.code for d in diagnostics}
    if origin:
        seen.add(f"origin:{origin.split(':', 1)[0]}")
    return [hint for codes, hint in _HINTS if seen.intersection(codes)]


def error_lines(diagnostics: Iterable[Diagnostic]) -> list[str]:
    """One line per error diagnostic: the pointer and message the validator wrote."""
    out = []
    for d in diagnostics:
        if d.severity.value != "error":
            continue
        line = d.message
        if d.pointer is not None and not line.startswith(d.pointer or "/"):
            line = f"{d.pointer or '/'}: {line}"
        if d.hint:
            line += f" (hint: {d.hint})"
        out.append(line)
    return out


def truncate(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text
    head = max(1, limit * 3 // 4)
    tail = max(0, limit - head)
    cut = len(text) - head - tail
    marker = f"\n… [{cut} characters left out] …\n"
    return text[:head] + marker + (text[-tail:] if tail else "")


@dataclass(frozen=True)
class PreviousAttempt:
    """The last answer and what was wrong with it."""

    answer: str
    errors: tuple[str, ...]


@dataclass(frozen=True)
class PartialRequest:
    """Ask for ``keys`` only; the rest of the value (``valid_part``) is kept as it is."""

    keys: tuple[str, ...]
    valid_part: Mapping[str, Any]
    schema: dict[str, Any]
    order: tuple[str, ...] = ()  # the original key order, for merging back


def _bullets(lines: Sequence[str]) -> str:
    shown = [f"- {line}" for line in lines[:MAX_ERRORS]]
    if len(lines) > MAX_ERRORS:
        shown.append(f"- … and {len(lines) - MAX_ERRORS} more")
    return "\n".join(shown) if shown else "- (none reported)"


def _dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=repr)


def build_messages(
    *,
    original: str,
    errors: Sequence[str],
    schema: Any,
    hints: Sequence[str] = (),
    max_chars: int = 2000,
    previous: PreviousAttempt | None = None,
    partial: PartialRequest | None = None,
) -> list[dict[str, str]]:
    """The chat messages (system + user) of one repair attempt."""
    parts: list[str] = []
    if partial is None:
        if schema is None:
            parts.append("The output below should be one JSON value, but it is not valid JSON.")
        else:
            parts.append(
                "The output below should be a JSON value that validates against the JSON "
                "Schema further down. It does not."
            )
        parts.append("ERRORS\n" + _bullets(errors))
    else:
        names = ", ".join(json.dumps(k, ensure_ascii=False) for k in partial.keys)
        parts.append(
            "Most of the JSON value below is valid. Only these properties need fixing: "
            f"{names}. Answer with a JSON object holding exactly those properties, corrected; "
            "the rest is kept as it is."
        )
        parts.append("ERRORS\n" + _bullets(errors))
        parts.append("VALID PART (for context; do not repeat it)\n" + _dump(partial.valid_part))
    if hints:
        parts.append("PATTERNS SEEN IN THE ORIGINAL OUTPUT\n" + _bullets(hints))
    shown = truncate(original, max_chars)
    label = "ORIGINAL OUTPUT"
    if len(shown) < len(original):
        label += f" (cut to about {max_chars} of {len(original)} characters)"
    parts.append(f"{label}\n<<<\n{shown}\n>>>")
    if partial is not None:
        parts.append("JSON SCHEMA OF THE ANSWER\n" + _dump(partial.schema))
    elif schema is not None:
        parts.append("JSON SCHEMA\n" + _dump(schema))
    if previous is not None:
        parts.append(
            "PREVIOUS ATTEMPT FAILED VALIDATION\nYour previous answer:\n<<<\n"
            + truncate(previous.answer, max_chars)
            + "\n>>>\nIts errors:\n"
            + _bullets(previous.errors)
        )
    if partial is not None:
        parts.append("Answer with the JSON object of the corrected properties only.")
    else:
        parts.append("Answer with the corrected JSON value only.")
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def render(messages: Sequence[Mapping[str, str]]) -> str:
    """Messages as one text, for records (``[system]`` / ``[user]`` headed sections)."""
    return "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in messages)
