"""Tool calls: find them in any model's raw output, and check them against a tool registry.

>>> from llmfix.toolcalls import extract_tool_calls
>>> extract_tool_calls('<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>').calls[0].name
'f'

:func:`extract_tool_calls` finds the calls (every format in :data:`FORMATS`, detected without
a hint); :func:`check_tool_calls` checks them against a :class:`ToolRegistry` (the tools'
definitions, ``ToolRegistry.load(path)``) and returns a
:class:`~llmfix.model.Result` whose value is the list of calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llmfix.toolcalls.base import ToolCall, ToolCallExtraction
from llmfix.toolcalls.check import EMITS, check_tool_calls
from llmfix.toolcalls.detect import FORMATS, extract_tool_calls

if TYPE_CHECKING:
    from llmfix.toolcalls.registry import ToolRegistry

__all__ = [
    "EMITS",
    "FORMATS",
    "ToolCall",
    "ToolCallExtraction",
    "ToolRegistry",
    "check_tool_calls",
    "extract_tool_calls",
]


def __getattr__(name: str) -> Any:
    if name == "ToolRegistry":
        # (start-up: reading tool calls, as `llmfix extract` does, needs no registry)
        from llmfix.toolcalls.registry import ToolRegistry

        return ToolRegistry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
