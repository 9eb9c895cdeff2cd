"""llmfix: validate and repair the JSON that language models write.

>>> import llmfix
>>> llmfix.repair('Sure! ```json\\n{"age": 12,}\\n```').value
{'age': 12}
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import llmfix.pipeline.extract as _extract_stage
import llmfix.stream as _stream_package  # noqa: F401 - so the function below owns the name
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
from llmfix.options import Limits, RepairOptions

if TYPE_CHECKING:
    from llmfix.schema.load import SchemaSpec
    from llmfix.stream.reader import StreamParser

__version__ = "0.1.0"

_DEFAULT_OPTIONS = RepairOptions()
_LIMIT_NAMES = frozenset(f.name for f in dataclasses.fields(Limits))
_OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(RepairOptions)) - {"limits"}

__all__ = [
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
    "read_response",
    "repair",
    "repair_response",
    "stream",
]


def repair(text: str, schema: Any = None, **options: Any) -> Result:
    """Repair one raw model response.

    ``schema`` is a JSON Schema (a dict or bool), a ``SchemaSpec`` from
    ``llmfix.schema.load.load_schema``, or ``None``. ``options`` are the fields of
    :class:`RepairOptions` (``pick``, ``schema_repair``, ``disabled_rules``, ``partial``,
    ``max_risk``, ``guided``) and of :class:`Limits` (``max_size``, ``max_depth``,
    ``time_budget``).
    Never prints, never exits; raises :class:`SchemaError` for a bad schema and
    :class:`ConfigError` for a bad option.
    """
    from llmfix.pipeline.core import repair_text

    return repair_text(text, schema, make_options(**options))


def check_tool_calls(text: str, tools: Any = None, **options: Any) -> Result:
    """Read the tool calls in ``text`` (any format ``llmfix repair --tools`` reads) and check
    each against ``tools``: a ``ToolRegistry``
    (``llmfix.toolcalls.registry.ToolRegistry.load(path)``),
    an OpenAI, Anthropic or MCP tools list as a value, or ``None``.

    ``options`` are those of :func:`llmfix.toolcalls.check.check_tool_calls` (``fmt``,
    ``salvage``, ``max_risk``, ``expect_sequence``, ``strict``, ``emit``,
    ``schema_repair``, ``disabled_rules``, ``time_budget``). The result's value is the
    list of calls. Never prints, never exits.
    """
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
    from llmfix.schema.load import load_schema as load

    return load(ref)


def stream(
    schema: Any = None, tools: Any = None, *, strings: str = "complete", **options: Any
) -> StreamParser:
    """A parser for an answer that arrives in chunks (see :mod:`llmfix.stream.reader`).

    ``parser.feed(chunk)`` returns :class:`~llmfix.stream.reader.Event` objects (snapshots
    that are never taken back); ``parser.close()`` returns what :func:`repair` returns on the
    whole text (with ``tools``: the tool-call check of ``llmfix repair --tools``).
    ``tools`` is a :class:`~llmfix.toolcalls.registry.ToolRegistry` or a list of OpenAI,
    Anthropic or MCP tool definitions; ``strings`` is ``"complete"`` (a string shows once it
    closed) or ``"growing"`` (the string being written shows as it grows). Other ``options``
    are those of :func:`repair`.
    """
    from llmfix.pipeline.core import make_validator
    from llmfix.stream.reader import STRING_MODES
    from llmfix.stream.reader import StreamParser as _Parser

    if strings not in STRING_MODES:
        raise ConfigError(f"unknown strings mode {strings!r} (expected complete or growing)")
    made = make_options(**options)
    registry = None
    if tools is not None:
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
    from llmfix.pipeline.normalize import normalize_document

    candidates, _ = _extract_stage.extract_candidates(normalize_document(text))
    return candidates


def make_options(**options: Any) -> RepairOptions:
    """Build :class:`RepairOptions` from keyword arguments, rejecting unknown names."""
    if not options:
        return _DEFAULT_OPTIONS
    from llmfix.options import ENGINES, PICKS

    limit_names, option_names = _LIMIT_NAMES, _OPTION_NAMES
    unknown = set(options) - limit_names - option_names
    if unknown:
        import difflib

        name = sorted(unknown)[0]
        close = difflib.get_close_matches(name, sorted(limit_names | option_names), n=1)
        suggestion = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown option {name!r}{suggestion}")
    limits = Limits(**{k: v for k, v in options.items() if k in limit_names})
    rest = {k: v for k, v in options.items() if k in option_names}
    if rest.get("pick", "best") not in PICKS:
        raise ConfigError(f"unknown pick {rest['pick']!r} (expected one of: {', '.join(PICKS)})")
    if rest.get("engine", "llmfix") not in ENGINES:
        raise ConfigError(
            f"unknown engine {rest['engine']!r} (expected one of: {', '.join(ENGINES)})"
        )
    if isinstance(rest.get("max_risk"), str):
        try:
            rest["max_risk"] = Risk.parse(rest["max_risk"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if "disabled_rules" in rest:
        from llmfix.rules import rule_ids

        rest["disabled_rules"] = rule_ids(rest["disabled_rules"])
    return RepairOptions(limits=limits, **rest)
