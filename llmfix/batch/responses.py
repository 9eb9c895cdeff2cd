"""A whole API response through the library: :func:`read_response` gives the items
``llmfix check`` and ``llmfix repair`` see in it, :func:`repair_response` each one's
result, its stop reason applied (:mod:`llmfix.pipeline.stops` reads the stop reasons of
every response shape)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from llmfix.model import Result, Status
from llmfix.options import make_options

if TYPE_CHECKING:
    from llmfix.inputs import Item


def read_response(
    response: Any,
    *,
    field: str | None = None,
    messages: Literal["last", "all"] = "last",
    name: str = "<response>",
) -> list[Item]:
    """The items ``llmfix check`` reads in one response, as :class:`~llmfix.inputs.Item`.

    ``response`` is the response's JSON text or its parsed value: an OpenAI chat completion
    or Responses API object, an Anthropic message, a Gemini ``generateContent`` response, a
    batch output record, a transcript; anything else is one document (its whole text).
    Each item carries the answer's text, its ``finish`` (cut off / refused) and ``model``.
    """
    # (start-up: the package face imports this module; the readers load on the first call)
    from llmfix.inputs import ReadOptions, items_from_text

    text = response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)
    options = ReadOptions(field=field, messages=messages)
    kind: Literal["auto", "json"] = "auto" if isinstance(response, str) else "json"
    return list(items_from_text(text, name, options, kind))


def repair_response(
    response: Any,
    schema: Any = None,
    *,
    field: str | None = None,
    messages: Literal["last", "all"] = "last",
    **options: Any,
) -> list[tuple[Item, Result]]:
    """Repair every answer in a response (see :func:`read_response`), as ``check`` does.

    Answers are checked against ``schema``; a tool call's arguments are only parsed (no
    registry). Each result has the response's stop reason applied: ``truncated`` for a
    cut-off answer, ``refused`` for a refusal. An item that could not be read (a failed
    batch request, a missing ``field``) gets an ``unparseable`` result holding its error.
    ``options`` are those of :func:`llmfix.repair`.
    """
    # (start-up: the package face imports this module; the checks load on the first call)
    from llmfix.batch.core import Profile, check_item
    from llmfix.pipeline.core import make_validator

    run_options = make_options(**options)
    validator = make_validator(schema, allow_remote=run_options.allow_remote_refs)
    profile = Profile(validator=validator, options=run_options)
    found = []
    for item in read_response(response, field=field, messages=messages):
        if item.error is not None:
            result = Result(status=Status.UNPARSEABLE, value=None, diagnostics=(item.error,))
        else:
            result = check_item(item, profile)
        found.append((item, result))
    return found
