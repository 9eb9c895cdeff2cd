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
    The ``openai`` and ``anthropic`` SDKs' objects are read as the JSON they came as, and a
    list (or iterator) of their stream events, or of the events' JSON, as a saved stream.
    Each item carries the answer's text, its ``finish`` (cut off / refused) and ``model``.
    """
    # (start-up: the package face imports this module; the readers load on the first call)
    from llmfix.inputs import ReadOptions, items_from_text

    response = _wire_value(response)
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
    ``options`` are those of :func:`llmfix.repair`; with a Pydantic model as ``schema``,
    each usable result's ``parsed`` is the validated instance.
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
            if validator is not None:
                # (start-up: loaded with the schema modules, which a schema needs anyway)
                from llmfix.schema.pydantic_models import with_instance

                result = with_instance(result, validator)
        found.append((item, result))
    return found


def _wire_value(response: Any) -> Any:
    """An SDK object as the JSON it came over the wire as, and a sequence of stream events
    as the text of a saved stream (one record a line); anything else as it is.

    The SDKs' objects are Pydantic models: ``model_dump`` of the fields that were set gives
    back the API's JSON (fields the API left out stay out). Duck-typed: neither SDK is
    imported.
    """
    if isinstance(response, (str, bytes, dict)):
        return response
    if _is_sdk_object(response):
        return _dump(response)
    if isinstance(response, (list, tuple)) or (
        hasattr(response, "__iter__") and hasattr(response, "__next__")
    ):
        given = list(response)
        events = [_dump(e) if _is_sdk_object(e) else e for e in given]
        # (start-up: the stream sniffer loads only for a sequence)
        from llmfix.stream.sniff import is_record

        records = [e for e in events if is_record(e)]
        # The SDKs' stream helpers add events of their own (Anthropic's ``text`` and
        # ``input_json``, with a snapshot so far): they repeat the API's, and are left out.
        extra = [g for g, e in zip(given, events, strict=True) if not is_record(e)]
        if records and all(_is_sdk_object(g) for g in extra):
            return "\n".join(json.dumps(e, ensure_ascii=False) for e in records) + "\n"
        return events
    return response


def _is_sdk_object(value: Any) -> bool:
    return not isinstance(value, type) and callable(getattr(value, "model_dump", None))


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
