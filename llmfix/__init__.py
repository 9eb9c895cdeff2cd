"""llmfix: validate and repair the JSON that language models write.

>>> import llmfix
>>> llmfix.repair('Sure! ```json\\n{"age": 12,}\\n```').value
{'age': 12}

The API is this module and the modules in :data:`PUBLIC_MODULES`, each of which lists what
it offers in ``__all__``. Every other module and package is private: its names may change
in any release, and the README and docs import none of them (``tests/test_public_api.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import llmfix.pipeline.extract as _extract_stage
import llmfix.stream as _stream_package  # noqa: F401 - so the function below owns the name
from llmfix._version import __version__
from llmfix.batch.responses import read_response, repair_response
from llmfix.errors import ConfigError, InputError, LlmfixError, ProviderError, SchemaError
from llmfix.jsontext import JsonNumber, dumps
from llmfix.model import (
    Candidate,
    Diagnostic,
    PatchOp,
    Position,
    Result,
    Risk,
    Severity,
    Span,
    Status,
)
from llmfix.options import Limits, RepairOptions, make_options
from llmfix.pipeline.normalize import normalize_document

if TYPE_CHECKING:
    from llmfix.schema.load import SchemaSpec
    from llmfix.stream.reader import StreamParser

# The documented modules; each one's ``__all__`` is its API (the package face's is above).
PUBLIC_MODULES: tuple[str, ...] = (
    "llmfix",
    "llmfix.errors",  # the exceptions the library raises
    "llmfix.model",  # Result, Diagnostic and the values they hold
    "llmfix.codes",  # every diagnostic code, as data (llmfix explain prints one)
    "llmfix.rules",  # every repair rule: id, kind, risk, description
    "llmfix.toolcalls",  # tool calls: find them in any format, check them against tools
    "llmfix.stream.wire",  # WireDecoder: API streams (SSE, NDJSON) as deltas for a parser
    "llmfix.batch.columns",  # ColumnChecker: Arrow batches in your own pipeline
    "llmfix.batch.writers",  # FixWriter, ResultsWriter: repaired copies and result rows
    "llmfix.engines.ray",  # Ray Data datasets
    "llmfix.engines.spark",  # Spark DataFrames
    "llmfix.run",  # a command's run, built as the command line builds it
    # the adapters, one per framework (each an extra: llmfix[langchain], ...)
    "llmfix.adapters.langchain",
    "llmfix.adapters.litellm",
    "llmfix.adapters.pydantic_ai",
    "llmfix.adapters.instructor",
)

__all__ = [
    "PUBLIC_MODULES",
    "Candidate",
    "ConfigError",
    "Diagnostic",
    "InputError",
    "JsonNumber",
    "Limits",
    "LlmfixError",
    "PatchOp",
    "Position",
    "ProviderError",
    "RepairOptions",
    "Result",
    "Risk",
    "SchemaError",
    "Severity",
    "Span",
    "Status",
    "__version__",
    "check_tool_calls",
    "dumps",
    "extract",
    "load_schema",
    "make_options",
    "read_response",
    "repair",
    "repair_response",
    "stream",
]


def repair(text: Any, schema: Any = None, **options: Any) -> Result:
    """Repair one raw model response.

    ``text`` is the answer's text, or the whole API response it came in: an ``openai`` or
    ``anthropic`` SDK object (a chat completion, a Responses API response, a message, a list
    of their stream events) or the response's JSON. Then its first answer is repaired, with
    the response's stop reason applied (:func:`repair_response` repairs every answer).

    ``schema`` is a JSON Schema (a dict or bool), a ``SchemaSpec`` from
    :func:`load_schema`, a Pydantic model, dataclass, ``TypedDict`` or ``TypeAdapter``
    (its JSON Schema, then Pydantic's own validation; a usable result's ``parsed`` is the
    validated instance), or ``None``. ``options`` are the fields of
    :class:`RepairOptions` (``pick``, ``schema_repair``, ``disabled_rules``, ``partial``,
    ``max_risk``, ``guided``) and of :class:`Limits` (``max_size``, ``max_depth``,
    ``time_budget``).
    Never prints, never exits; raises :class:`SchemaError` for a bad schema and
    :class:`ConfigError` for a bad option.
    """
    if not isinstance(text, str):
        return repair_response(text, schema, **options)[0][1]
    # (start-up: loaded on the first call, not by `import llmfix` or `llmfix --help`)
    from llmfix.pipeline.core import make_validator, repair_text

    made = make_options(**options)
    validator = make_validator(schema, allow_remote=made.allow_remote_refs)
    result = repair_text(text, schema, made, validator=validator)
    if validator is None:
        return result
    # (start-up: loaded with the schema modules, which a schema needs anyway)
    from llmfix.schema.pydantic_models import with_instance

    return with_instance(result, validator)


def check_tool_calls(text: str, tools: Any = None, **options: Any) -> Result:
    """Read the tool calls in ``text`` (any format ``llmfix repair --tools`` reads) and check
    each against ``tools``: a ``ToolRegistry``
    (``llmfix.toolcalls.ToolRegistry.load(path)``),
    an OpenAI, Anthropic or MCP tools list as a value, or ``None``.

    ``options`` are those of :func:`llmfix.toolcalls.check_tool_calls` (``fmt``,
    ``salvage``, ``max_risk``, ``expect_sequence``, ``strict``, ``emit``,
    ``schema_repair``, ``disabled_rules``, ``time_budget``). The result's value is the
    list of calls. Never prints, never exits.
    """
    # (start-up: loaded on the first call, not by `import llmfix` or `llmfix --help`)
    from llmfix.toolcalls.check import check_tool_calls as check
    from llmfix.toolcalls.registry import ToolRegistry

    registry = tools if tools is None or isinstance(tools, ToolRegistry) else None
    if tools is not None and registry is None:
        registry = ToolRegistry.from_value(tools)
    if isinstance(options.get("max_risk"), str):
        options["max_risk"] = make_options(max_risk=options["max_risk"]).max_risk
    return check(text, registry, **options)


def load_schema(ref: str) -> SchemaSpec:
    """A schema from a ``.json``/``.yaml`` file or ``builtin:NAME``, to pass as ``schema=``."""
    # (start-up: loaded on the first call, not by `import llmfix` or `llmfix --help`)
    from llmfix.schema.load import load_schema as load

    return load(ref)


def stream(
    schema: Any = None, tools: Any = None, *, strings: str = "complete", **options: Any
) -> StreamParser:
    """A parser for an answer that arrives in chunks (see :mod:`llmfix.stream.reader`).

    ``parser.feed(chunk)`` returns :class:`~llmfix.stream.reader.Event` objects (snapshots
    that are never taken back); ``parser.close()`` returns what :func:`repair` returns on the
    whole text (with ``tools``: the tool-call check of ``llmfix repair --tools``).
    ``tools`` is a :class:`~llmfix.toolcalls.ToolRegistry` or a list of OpenAI,
    Anthropic or MCP tool definitions; ``strings`` is ``"complete"`` (a string shows once it
    closed) or ``"growing"`` (the string being written shows as it grows). Other ``options``
    are those of :func:`repair`.
    """
    # (start-up: loaded on the first call, not by `import llmfix` or `llmfix --help`)
    from llmfix.pipeline.core import make_validator
    from llmfix.stream.reader import STRING_MODES
    from llmfix.stream.reader import StreamParser as _Parser

    if strings not in STRING_MODES:
        raise ConfigError(f"unknown strings mode {strings!r} (expected complete or growing)")
    made = make_options(**options)
    registry = None
    if tools is not None:
        # (start-up: loaded on the first call, not by `import llmfix` or `llmfix --help`)
        from llmfix.toolcalls.registry import ToolRegistry

        if schema is not None:
            raise ConfigError("schema and tools don't go together: tools carry their schemas")
        registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry.from_value(tools)
    validator = make_validator(schema, allow_remote=made.allow_remote_refs)
    return _Parser(
        options=made,
        validator=validator,
        registry=registry,
        tools=tools is not None,
        strings="growing" if strings == "growing" else "complete",
    )


def extract(text: str) -> list[Candidate]:
    """Every candidate JSON payload in ``text``, in order of appearance (no selection)."""
    candidates, _ = _extract_stage.extract_candidates(normalize_document(text))
    return candidates
