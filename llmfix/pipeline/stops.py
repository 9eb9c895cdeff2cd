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

The library's reading of a whole response (``llmfix.read_response``,
``llmfix.repair_response``) is :mod:`llmfix.batch.responses`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from llmfix import codes
from llmfix.model import Diagnostic, Result, Severity, Status

if TYPE_CHECKING:
    pass

STAGE = "response"

FinishKind = Literal["cut_off", "refused"]


@dataclass(frozen=True)
class Finish:
    """How an answer ended, when the API says it is not a complete, willing answer.

    ``reason`` is the API's own words (``finish_reason "length"``); ``detail`` is the
    refusal text the model gave, when there is one.
    """

    kind: FinishKind
    reason: str
    detail: str | None = None


# Anthropic, OpenAI and Gemini stop reasons, by what they mean.
_ANTHROPIC = {
    "max_tokens": "cut_off",
    "model_context_window_exceeded": "cut_off",
    "refusal": "refused",
}
_OPENAI_CHAT = {"length": "cut_off", "content_filter": "refused"}
_OPENAI_INCOMPLETE = {"max_output_tokens": "cut_off", "content_filter": "refused"}
_GEMINI = {
    "MAX_TOKENS": "cut_off",
    "SAFETY": "refused",
    "RECITATION": "refused",
    "BLOCKLIST": "refused",
    "PROHIBITED_CONTENT": "refused",
    "SPII": "refused",
    "IMAGE_SAFETY": "refused",
    "LANGUAGE": "refused",
}


def _finish(table: Mapping[str, str], value: Any, label: str) -> Finish | None:
    if not isinstance(value, str) or value not in table:
        return None
    kind: FinishKind = "cut_off" if table[value] == "cut_off" else "refused"
    return Finish(kind, f'{label} "{value}"')


def chat_choice_finish(choice: Mapping[str, Any]) -> Finish | None:
    """An OpenAI chat completion choice: ``message.refusal``, then ``finish_reason``."""
    message = choice.get("message")
    refusal = message.get("refusal") if isinstance(message, Mapping) else None
    if isinstance(refusal, str) and refusal.strip():
        return Finish("refused", "message.refusal", refusal)
    return _finish(_OPENAI_CHAT, choice.get("finish_reason"), "finish_reason")


def responses_finish(response: Mapping[str, Any]) -> Finish | None:
    """A Responses API object: ``status: "incomplete"`` and its ``incomplete_details``."""
    if response.get("status") != "incomplete":
        return None
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    found = _finish(_OPENAI_INCOMPLETE, reason, 'status "incomplete", reason')
    if found is None:  # incomplete for a reason not listed: the answer is still not all there
        return Finish("cut_off", f'status "incomplete" ({reason or "no reason given"})')
    return found


def responses_refusal(entry: Mapping[str, Any]) -> Finish | None:
    """A ``refusal`` content part in a Responses API output message."""
    for part in entry.get("content") or []:
        if isinstance(part, Mapping) and part.get("type") == "refusal":
            text = part.get("refusal")
            return Finish(
                "refused", "a refusal content part", text if isinstance(text, str) else None
            )
    return None


def anthropic_finish(message: Mapping[str, Any]) -> Finish | None:
    """An Anthropic message's ``stop_reason``."""
    return _finish(_ANTHROPIC, message.get("stop_reason"), "stop_reason")


def gemini_finish(candidate: Mapping[str, Any]) -> Finish | None:
    """A Gemini ``generateContent`` candidate's ``finishReason``."""
    return _finish(_GEMINI, candidate.get("finishReason"), "finishReason")


# A streamed answer's stop reason, by the wire format it came in (see
# :class:`llmfix.stream.wire.WireDecoder`): the Responses API's is its
# ``incomplete_details.reason``, or its status when there is none.
_STREAMS: dict[str, tuple[Mapping[str, str], str]] = {
    "openai-chat": (_OPENAI_CHAT, "finish_reason"),
    "openai-responses": (
        {**_OPENAI_INCOMPLETE, "incomplete": "cut_off"},
        'status "incomplete", reason',
    ),
    "anthropic": (_ANTHROPIC, "stop_reason"),
    "ollama": ({"length": "cut_off"}, "done_reason"),
    "gemini": (_GEMINI, "finishReason"),
}


def stream_finish(fmt: str, stop_reason: str | None, refusal: str | None = None) -> Finish | None:
    """What a stream's stop reason (or the ``refusal`` it streamed) says, ``fmt`` being the
    decoder's format, as :func:`chat_choice_finish` and the others say it for a whole
    response: one reading for ``repair --stream`` and a saved stream read from a file."""
    if refusal is not None:
        return Finish("refused", "message.refusal", refusal)
    known = _STREAMS.get(fmt)
    if known is None:
        return None
    table, label = known
    return _finish(table, stop_reason, label)


def gemini_blocked(response: Mapping[str, Any]) -> Finish | None:
    """A Gemini response whose prompt was blocked (``promptFeedback.blockReason``)."""
    feedback = response.get("promptFeedback")
    reason = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
    if isinstance(reason, str) and reason:
        return Finish("refused", f'promptFeedback.blockReason "{reason}"')
    return None


@dataclass(frozen=True)
class GeminiParts:
    """What a Gemini ``generateContent`` candidate's ``content.parts`` hold, each with its
    index in ``parts``: the answer's text parts, its reasoning (``thought: true``) and its
    ``functionCall`` objects. The one reading of a candidate that ``check`` (the items of
    :mod:`llmfix.inputs`) and ``repair --tools`` (:mod:`llmfix.toolcalls`) both use."""

    texts: tuple[tuple[int, str], ...] = ()
    thoughts: tuple[tuple[int, str], ...] = ()
    calls: tuple[tuple[int, Mapping[str, Any]], ...] = ()


def gemini_parts(candidate: Mapping[str, Any]) -> GeminiParts | None:
    """The parts of a Gemini candidate, or ``None`` when it has no ``content.parts`` list."""
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list):
        return None
    texts: list[tuple[int, str]] = []
    thoughts: list[tuple[int, str]] = []
    calls: list[tuple[int, Mapping[str, Any]]] = []
    for i, part in enumerate(parts):
        if not isinstance(part, Mapping):
            continue
        text = part.get("text")
        if isinstance(text, str):
            (thoughts if part.get("thought") else texts).append((i, text))
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            calls.append((i, call))
    return GeminiParts(tuple(texts), tuple(thoughts), tuple(calls))


def model_name(body: Any) -> str | None:
    """The model that wrote a response (``model``; Gemini's ``modelVersion``)."""
    if not isinstance(body, Mapping):
        return None
    for key in ("model", "modelVersion"):
        value = body.get(key)
        if isinstance(value, str) and value:
            return value
    return None


# ------------------------------------------------------------------- applying it


def cut_off_diagnostic(finish: Finish, *, partial: bool = False) -> Diagnostic:
    return codes.RESPONSE_CUT_OFF.at(
        f"the API says the answer was cut off ({finish.reason}): "
        "what was read is not the whole answer",
        hint="raise the token limit of the request, or pass --partial to keep what is complete",
        severity=Severity.WARNING if partial else Severity.ERROR,
    )


def apply_finish(result: Result, finish: Finish | None, *, partial: bool = False) -> Result:
    """``result`` with what the API said applied: a cut-off answer is never ``ok``.

    A result that has a value (parsed, repaired, or ``invalid``: truncation outranks
    schema errors) becomes ``truncated``; an ``unparseable`` one keeps its status. Either
    way ``response.cut_off`` says why (a warning when ``partial``: the run asked for what is
    complete, and then a required property or item that is missing has "not arrived yet",
    a ``partial.missing`` warning). A refusal replaces the result (see
    :func:`refused_result`).
    """
    if finish is None:
        return result
    if finish.kind == "refused":
        return refused_result(finish)
    has_value = result.status.ok or result.status in (Status.TRUNCATED, Status.INVALID)
    status = Status.TRUNCATED if has_value else result.status
    # the API's word replaces the text's own evidence of the cut (one error, not two)
    kept = [d for d in result.diagnostics if d.code != "parse.cut_off"]
    if partial and has_value:
        kept = _not_arrived(kept)
    return replace(
        result, status=status, diagnostics=(*kept, cut_off_diagnostic(finish, partial=partial))
    )


def _not_arrived(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """``diagnostics`` with each schema error that a cut explains (a missing required
    property, too few items) made a ``partial.missing`` warning, where it was."""
    # (start-up: loaded only for an answer cut off by its stop reason)
    from llmfix.pipeline.partial import not_arrived

    return [not_arrived(d) or d for d in diagnostics]


def refused_result(finish: Finish) -> Result:
    """The result for an answer the model refused or the API filtered: no value."""
    said = f": {_quote(finish.detail)}" if finish.detail else ""
    refusal = codes.RESPONSE_REFUSED.at(
        f"the model refused or the API filtered the answer ({finish.reason}){said}",
        hint="this is not a JSON problem: the request or its content was declined",
        data={"reason": finish.reason, "refusal": finish.detail},
    )
    return Result(status=Status.REFUSED, value=None, diagnostics=(refusal,))


# ``data.reason`` of a refusal the answer's own words make (no API said so).
IN_WORDS = "the answer's text"


def text_refused_result(refusal: str) -> Result:
    """The result for an answer that is a refusal in words, with no JSON in it (see
    :func:`llmfix.pipeline.refusals.text_refusal`): ``refused``, as an API refusal is, and no
    value."""
    refused = codes.RESPONSE_REFUSED.at(
        f"the model refused, in words, instead of answering: {_quote(refusal)}",
        hint="this is not a JSON problem: the model declined the request",
        data={"reason": IN_WORDS, "refusal": refusal},
    )
    return Result(status=Status.REFUSED, value=None, diagnostics=(refused,))


def _quote(text: str, limit: int = 160) -> str:
    short = " ".join(text.split())
    if len(short) > limit:
        short = short[: limit - 1] + "…"
    return json.dumps(short, ensure_ascii=False)


# ---------------------------------------------------------------------- library
