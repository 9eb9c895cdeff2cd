"""What every adapter does with an answer: repair it against a schema (a JSON Schema or a
Pydantic type), and say what is still wrong in words a model can act on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llmfix.model import Result
from llmfix.options import make_options
from llmfix.pipeline.core import make_validator, repair_text
from llmfix.schema.pydantic_models import with_instance

__all__ = ["describe_problems", "repair_answer"]


def repair_answer(text: str, schema: Any, options: Mapping[str, Any]) -> Result:
    """``llmfix.repair(text, schema, **options)``: with a Pydantic type, a usable result's
    ``parsed`` is the validated instance."""
    made = make_options(**options)
    validator = make_validator(schema, allow_remote=made.allow_remote_refs)
    result = repair_text(text, schema, made, validator=validator)
    return result if validator is None else with_instance(result, validator)


def describe_problems(result: Result, limit: int = 10) -> str:
    """Why ``result`` is not usable, one line per error (its message and hint), for the
    retry prompt a framework sends back to the model, or an exception's message."""
    lines = [f"the answer is {result.status}"]
    for error in result.errors[:limit]:
        hint = f" ({error.hint})" if error.hint else ""
        lines.append(f"- {error.message}{hint}")
    if len(result.errors) > limit:
        lines.append(f"- and {len(result.errors) - limit} more")
    return "\n".join(lines)
