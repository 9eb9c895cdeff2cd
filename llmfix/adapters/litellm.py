"""LiteLLM: :class:`LlmfixCallback`, a callback that checks every completion LiteLLM makes,
for whichever provider it reached (``pip install 'llmfix[litellm]'``).

``litellm.callbacks = [LlmfixCallback(schema=Person)]``: each completion's answers are
repaired and validated as ``llmfix.repair`` does (the provider's stop reason applied),
and recorded in :attr:`LlmfixCallback.checked`; :attr:`LlmfixCallback.failures` are the
ones that are not usable. ``on_result`` is called with each one as it is made (to log it,
count it, or alert). LiteLLM runs success callbacks after the call returns (a sync call's
in a thread of its own), so a callback observes: to use the repaired value in the calling
code, call ``llmfix.repair(response, schema=...)`` on the response it got.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from llmfix.batch.responses import repair_response
from llmfix.model import Result
from llmfix.options import make_options
from llmfix.pipeline.core import make_validator

__all__ = ["CheckedCompletion", "LlmfixCallback"]


@dataclass(frozen=True)
class CheckedCompletion:
    """One answer of one completion: the model asked, the response id, llmfix's result."""

    model: str | None
    response_id: str | None
    result: Result


class LlmfixCallback(CustomLogger):
    """Repairs and validates every completion; ``schema`` is a JSON Schema or a Pydantic
    type, ``options`` those of :func:`llmfix.repair`. A bad schema or option raises here,
    when the callback is made, not later in LiteLLM's logging thread."""

    def __init__(
        self,
        schema: Any = None,
        *,
        on_result: Callable[[CheckedCompletion], None] | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        made = make_options(**options)
        make_validator(schema, allow_remote=made.allow_remote_refs)  # fails now if bad
        self.schema = schema
        self.options = options
        self.on_result = on_result
        self._lock = threading.Lock()
        self._checked: list[CheckedCompletion] = []

    @property
    def checked(self) -> list[CheckedCompletion]:
        """Every answer checked so far, in the order the completions were logged."""
        with self._lock:
            return list(self._checked)

    @property
    def failures(self) -> list[CheckedCompletion]:
        """The answers that are not usable (invalid, truncated, refused, unparseable)."""
        return [c for c in self.checked if not c.result.ok]

    def log_success_event(
        self, kwargs: dict[str, Any], response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self._check(kwargs, response_obj)

    def _check(self, kwargs: dict[str, Any], response: Any) -> None:
        if getattr(response, "choices", None) is None:  # an embedding, an image: no answer
            return
        model = kwargs.get("model")
        response_id = getattr(response, "id", None)
        for _, result in repair_response(response, self.schema, **self.options):
            checked = CheckedCompletion(
                model if isinstance(model, str) else None,
                response_id if isinstance(response_id, str) else None,
                result,
            )
            with self._lock:
                self._checked.append(checked)
            if self.on_result is not None:
                self.on_result(checked)
