"""The calls-left-in-content audit for ``llmfix check``, which reads an API response's
message text and its ``tool_calls`` as separate items (see :mod:`llmfix.inputs.records`).

:func:`left_in_content` reads the message text for tool-call markup and compares it with
the server's calls (:mod:`llmfix.toolcalls.audit`): the notes it returns go on the text's
item. ``check`` reports them; ``--tool-calls`` reads the calls from the text as well, and
``repair --tool-calls`` on the whole response moves them into the calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from llmfix import codes
from llmfix.model import Diagnostic
from llmfix.toolcalls.audit import audit_content
from llmfix.toolcalls.detect import extract_tool_calls

# Text that may open a call in some format; a text without any is not read at all.
MAY_HOLD_CALLS = re.compile(
    r"<[|｜]|<(?:[\w-]+:)?(?:tool_call|function|invoke|tool_calls|function_calls)\b"
    r"|\[TOOL_CALLS\]|\[\s*[A-Za-z_][\w.]*\s*\(|functools\[|<start_function_call>|<\|tool_call>"
)


def left_in_content(text: str, server: Sequence[tuple[str | None, str]]) -> tuple[Diagnostic, ...]:
    """Notes for a message text holding tool calls the server's ``(name, arguments text)``
    calls lack (``tools.left_in_content``) or read otherwise (``tools.server_mismatch``)."""
    if not MAY_HOLD_CALLS.search(text):
        return ()
    read = extract_tool_calls(text)
    if read.format == "json":  # a JSON answer shaped like a call: the answer, not markup
        return ()
    found = audit_content(read, [(name or "", _decoded(arguments)) for name, arguments in server])
    if found is None:
        return ()
    notes: list[Diagnostic] = []
    whole = [c for c in found.moved if c.complete]
    if whole:
        names = ", ".join(c.name for c in whole)
        where = "and its tool_calls is empty" if not server else "that its tool_calls lacks"
        notes.append(
            codes.TOOLS_LEFT_IN_CONTENT.at(
                f"the message text holds {len(whole)} {found.format} tool call(s) ({names}) "
                f"{where}: the server did not parse them",
                hint="check the server's tool-call parser setting; `llmfix repair --tool-calls` "
                "on the response moves them into the calls",
                data={"format": found.format, "calls": [c.to_dict() for c in whole]},
            )
        )
    for index, call in found.mismatched:
        name, arguments = server[index]
        notes.append(
            codes.TOOLS_SERVER_MISMATCH.at(
                f"the server read call {index} ({name}) with other arguments than its markup "
                "in the message text gives",
                data={"index": index, "server": _decoded(arguments), "text": call.arguments},
            )
        )
    return tuple(notes)


def _decoded(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments
