"""Atheris (libFuzzer) harness for llmfix's entry points; not part of the default test run.

Each input is bytes; the first byte picks the entry point and the rest is decoded as UTF-8
with replacement:

- ``llmfix.repair(text)`` with the default options (half of the inputs);
- ``llmfix.repair(text, schema=...)`` with a schema that makes schema repair coerce,
  rename, default and drop;
- ``check_tool_calls(text, registry)`` with the golden tool list (``tests/cases_tools``),
  format auto-detected, ``--salvage`` on.

A crash is any exception other than an ``LlmfixError``, or a result that claims success
(``result.ok``) with a value that is not strict JSON. Run it through ``scripts/fuzz.sh``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pkgutil
import sys
from pathlib import Path

import atheris

# llmfix imports its stages lazily: import them here so that they are instrumented too.
# Every library module is imported (the CLI, reporters, engines and the LLM client are not
# reached by the entry points); one that needs an optional dependency is left out.
_SKIP = ("llmfix.cli", "llmfix.reporters", "llmfix.engines", "llmfix.llm", "llmfix.__main__")
with atheris.instrument_imports(include=["llmfix"]):
    import llmfix
    import llmfix.toolcalls

    for _module in pkgutil.walk_packages(llmfix.__path__, "llmfix."):
        if not _module.name.startswith(_SKIP):
            with contextlib.suppress(ImportError):
                importlib.import_module(_module.name)
    from llmfix.errors import LlmfixError
    from llmfix.tools import ToolRegistry

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
        "kind": {"enum": ["a", "b", "c"]},
        "ok": {"type": "boolean", "default": False},
        "nested": {
            "type": "object",
            "properties": {"x": {"type": "number"}},
            "additionalProperties": False,
        },
    },
    "required": ["name", "age"],
}
TOOLS = ToolRegistry.load(str(Path(__file__).resolve().parents[1] / "cases_tools" / "tools.json"))


def test_one_input(data: bytes) -> None:
    if not data:
        return
    text = data[1:].decode("utf-8", errors="replace")
    try:
        if data[0] % 4 == 2:
            result = llmfix.toolcalls.check_tool_calls(text, TOOLS, salvage=True)
        elif data[0] % 4 == 3:
            result = llmfix.repair(text, schema=SCHEMA)
        else:
            result = llmfix.repair(text)
    except LlmfixError:
        return
    if result.ok:
        json.dumps(result.value, allow_nan=False)


def main() -> None:
    # scripts/fuzz.sh names a runnable wrapper, which libFuzzer's -jobs mode re-runs.
    argv0 = os.environ.get("LLMFIX_FUZZ_ARGV0", sys.argv[0])
    atheris.Setup([argv0, *sys.argv[1:]], test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
