"""Instructor: :func:`repairing`, a response model that repairs the answer before Instructor
validates it (``pip install 'llmfix[instructor]'``).

``client.chat.completions.create(response_model=repairing(Person), max_retries=2, ...)``:
Instructor reads the answer (the message's JSON, or the tool call's arguments) with the
response model's ``model_validate_json``; :func:`repairing` gives a subclass of the model
(same name, fields and JSON Schema, so the request is the same) whose
``model_validate_json`` runs :func:`llmfix.repair` first and validates the repaired value.
What repair cannot make usable is validated as the model wrote it, so Instructor re-asks
with Pydantic's own errors: a re-ask (a model call) is spent only when repair fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from llmfix.adapters.answers import repair_answer
from llmfix.jsontext import dumps
from llmfix.model import Result
from llmfix.options import make_options
from llmfix.pipeline.core import make_validator

__all__ = ["repairing"]

M = TypeVar("M", bound=BaseModel)


def repairing(
    model: type[M], *, on_result: Callable[[Result], None] | None = None, **options: Any
) -> type[M]:
    """A subclass of ``model`` whose ``model_validate_json`` repairs the text first.

    ``options`` are those of :func:`llmfix.repair`; ``on_result`` sees each repair's
    :class:`~llmfix.model.Result` (what was changed, at which risk). Instances are instances
    of ``model``."""
    made = make_options(**options)
    make_validator(model, allow_remote=made.allow_remote_refs)  # a bad model fails now

    def model_validate_json(
        cls: type[M],
        json_data: str | bytes | bytearray,
        /,
        *,
        strict: bool | None = None,
        context: Any | None = None,
        **kwargs: Any,
    ) -> M:
        text = (
            json_data if isinstance(json_data, str) else bytes(json_data).decode("utf-8", "replace")
        )
        result = repair_answer(text, model, options)
        if on_result is not None:
            on_result(result)
        if result.ok:
            text = dumps(result.value)
        # (the model's own, with Instructor's own arguments)
        parent: Any = super(repaired, cls)
        return cast(M, parent.model_validate_json(text, strict=strict, context=context, **kwargs))

    namespace = {
        "__module__": model.__module__,
        "__qualname__": model.__qualname__,
        "__doc__": model.__doc__,
        "model_validate_json": classmethod(model_validate_json),
    }
    repaired = cast("type[M]", type(model.__name__, (model,), namespace))
    return repaired
