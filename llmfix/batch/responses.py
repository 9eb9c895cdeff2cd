"""What an API response says about its answer: cut off, refused, and which model wrote it.

A response object carries evidence the answer's text cannot: the stop reason. This module
reads it for every response shape :mod:`llmfix.inputs` knows, and turns it into a
:class:`Finish` that the check applies to the answer's result:

=====================  ==================================  ===================================
shape                  cut off                             refused or filtered
=====================  ==================================  ===================================
OpenAI chat            ``finish_reason: "length"``         ``message.refusal``,
                                                           ``finish_reason: "content_filter"``
OpenAI Responses       ``status: "incomplete"`` with       a ``refusal`` content part,
                       ``incomplete_details.reason``       ``reason: "content_filter"``
Anthropic message      ``stop_reason: "max_tokens"``       ``stop_reason: "refusal"``
                       (or ``model_context_window_
                       exceeded``)
Gemini generateContent ``finishReason: "MAX_TOKENS"``      ``SAFETY``, ``RECITATION``,
                                                           ``BLOCKLIST``, ``PROHIBITED_CONTENT``,
                                                           ``SPII``, ``IMAGE_SAFETY``;
                                                           ``promptFeedback.blockReason``
=====================  ==================================  ===================================

A cut-off answer's result becomes ``truncated`` (:func:`apply_finish`), whatever its text
looks like — an answer cut right after a closing brace still parses, but the API said it is
not all there — and whatever its schema errors (truncation outranks them; they stay
listed). A refused one is ``refused`` (:func:`refused_result`): the text is the model's
refusal, not a broken JSON value, and is reported as such, not as "no JSON found". So is an
answer with no JSON that is a refusal in words (:func:`text_refused_result`).

The OpenAI and Anthropic batch outputs carry these responses inside each record
(``response.body``, ``result.message``) and are read the same way.

:func:`read_response` and :func:`repair_response` are the library's reading of a response:
the items ``llmfix check`` and ``llmfix repair`` see in it, and each one's result.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from llmfix.model import Result, Status
from llmfix.pipeline.keywords import make_options

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
