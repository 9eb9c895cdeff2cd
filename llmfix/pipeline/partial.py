"""`--partial`: output cut off mid-stream, kept for what is complete.

A streamed answer read before the model finished ends in the middle of something. The
parser closes what is open; in partial mode llmfix also drops the scalar that was cut
short (a string or number completed by a guess is not what the model wrote), and turns
"missing required property" / "too few items" errors into ``partial.missing`` warnings
that say what has not arrived yet. A partial result is never reported as valid.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from llmfix import codes
from llmfix.model import Diagnostic, Risk, Severity


def was_truncated(diagnostics: Sequence[Diagnostic]) -> bool:
    return any(d.code == "parse.truncated" for d in diagnostics)


def cut_off(partial: bool) -> Diagnostic:
    """Why a value the text ends inside is ``truncated`` (a warning when partial is wanted)."""
    return codes.PARSE_CUT_OFF.at(
        "the answer ends inside a value: it was cut off, and what was closed "
        "at the end is not what the model wrote",
        hint="raise the token limit of the request, or pass --partial to keep what is complete",
        severity=Severity.WARNING if partial else Severity.ERROR,
    )


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def drop_incomplete_tail(
    value: Any, diagnostics: Sequence[Diagnostic]
) -> tuple[Any, list[Diagnostic]]:
    """Remove the last scalar when the parser had to complete it (a guessed truncation)."""
    cut_scalar = any(d.code == "parse.truncated" and d.risk is Risk.GUESS for d in diagnostics)
    if not cut_scalar or not isinstance(value, (dict, list)) or not value:
        return value, []
    value = copy.deepcopy(value)
    parent: Any = None
    key: Any = None
    node: Any = value
    path: list[str] = []
    while isinstance(node, (dict, list)) and node:
        parent, key = node, (next(reversed(node)) if isinstance(node, dict) else len(node) - 1)
        path.append(_escape(str(key)))
        node = node[key]
    if isinstance(node, (dict, list)) or parent is None:
        return value, []
    del parent[key]
    pointer = "/" + "/".join(path)
    note = codes.PARTIAL_INCOMPLETE_VALUE.at(
        f"{pointer}: the value was cut off mid-stream and is left out",
        pointer=pointer,
        data={"removed": node},
    )
    return value, [note]


# Schema errors that a cut-off output explains: what is missing may simply not have arrived.
_NOT_ARRIVED = frozenset({"schema.required", "schema.min_items", "schema.min_properties"})


def mark_missing(errors: Sequence[Diagnostic]) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Split schema errors into the ones that stay and ``partial.missing`` warnings."""
    remaining: list[Diagnostic] = []
    missing: list[Diagnostic] = []
    for error in errors:
        found = not_arrived(error)
        if found is not None:
            missing.append(found)
        else:
            remaining.append(error)
    return remaining, missing


def not_arrived(error: Diagnostic) -> Diagnostic | None:
    """The ``partial.missing`` warning a schema error of a cut-off value is (something
    required that has not arrived yet), or ``None`` when the cut does not explain it."""
    if error.code not in _NOT_ARRIVED or error.severity is not Severity.ERROR:
        return None
    return codes.PARTIAL_MISSING.instead_of(error, hint="not arrived yet: the output was cut off")
