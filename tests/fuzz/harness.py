"""Atheris (libFuzzer) harness for llmfix's entry points; not part of the default test run.

Each input is bytes; the first byte picks the entry point and the rest is decoded as UTF-8
with replacement:

- ``llmfix.repair(text)`` with the default options (half of the inputs);
- ``llmfix.repair(text, schema=...)`` with a schema that makes schema repair coerce,
  rename, default and drop;
- ``check_tool_calls(text, registry)`` with the golden tool list (``tests/cases_tools``),
  format auto-detected, ``--salvage`` on;
- the printing fields (issue 27): the text as a file name, JSON key and model text, through
  every sink of :mod:`llmfix.reporters.sinks` and the console lines ``repair`` prints;
- the path handling (issue 27): the text as a source path written into a ``--write-fixed``
  mirror that holds a link out, a link in and a ``.git`` folder, and as an untrusted
  config's ``output``/``write-fixed``/``paths``.

A crash is any exception other than an ``LlmfixError``, a result that claims success
(``result.ok``) with a value that is not strict JSON, a printed line holding a character
that acts on a terminal (or, for GitHub and XML, on their readers), and a file written
outside the mirror (or into its ``.git``), or an untrusted path kept that leads out. Run it
through ``scripts/fuzz.sh``.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import pkgutil
import re
import sys
import tempfile
from pathlib import Path

import atheris

# llmfix imports its stages lazily: import them here so that they are instrumented too.
# Every library module is imported (the CLI, engines, the LLM client and the reporters but
# the sinks and console lines are not reached by the entry points); one that needs an
# optional dependency is left out.
_SKIP = ("llmfix.cli", "llmfix.reporters", "llmfix.engines", "llmfix.llm", "llmfix.__main__")
with atheris.instrument_imports(include=["llmfix"]):
    import llmfix
    import llmfix.toolcalls

    for _module in pkgutil.walk_packages(llmfix.__path__, "llmfix."):
        if not _module.name.startswith(_SKIP):
            with contextlib.suppress(ImportError):
                importlib.import_module(_module.name)
    from llmfix.batch.writers import FixWriter
    from llmfix.errors import LlmfixError
    from llmfix.files.containment import within
    from llmfix.reporters import sinks
    from llmfix.reporters.console import PlainConsole, print_explanation, print_result
    from llmfix.run.trust import untrusted_view
    from llmfix.toolcalls.registry import ToolRegistry

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


# What a terminal (or a GitHub log, or an XML reader) must never be handed from the input.
_UNSAFE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029{sinks.BIDI}]")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _printing(text: str) -> None:
    """``text`` as a file name, a key and model text, in every sink and console line."""
    for line in (sinks.for_terminal(text), sinks.for_html(text), sinks.for_xml(text)):
        assert not _UNSAFE.search(line), line
    assert not _NOT_XML.search(sinks.for_xml(text))
    assert "<" not in sinks.for_html(text)
    for escaped in (sinks.github_message(text), sinks.github_property(text)):
        assert not _UNSAFE.search(escaped), escaped
    assert ":" not in sinks.github_property(text)
    assert "," not in sinks.github_property(text)
    result = llmfix.repair(json.dumps({text: text}) + text[:64], schema=SCHEMA)
    out = io.StringIO()
    console = PlainConsole(out)
    print_result(console, text, result, verbosity=1)
    print_explanation(console, text, result)
    lines = out.getvalue().split("\n")
    assert lines[-1] == "", lines[-1]
    for line in lines[:-1]:
        assert not _UNSAFE.search(line), line


def _tree(top: str) -> tuple[str, str]:
    """A mirror folder holding a link out, a link in and a ``.git``, and the folder outside."""
    mirror, outside = os.path.join(top, "fixed"), os.path.join(top, "outside")
    os.makedirs(os.path.join(mirror, "sub"))
    os.makedirs(os.path.join(mirror, ".git"))
    os.mkdir(outside)
    os.symlink(outside, os.path.join(mirror, "out"))
    os.symlink("sub", os.path.join(mirror, "in"))
    os.symlink("..", os.path.join(mirror, "up"))
    return mirror, outside


def _written(top: str) -> list[str]:
    """Every file under ``top`` (links not followed), as real paths."""
    return [
        os.path.realpath(os.path.join(folder, name))
        for folder, _dirs, names in os.walk(top)
        for name in names
    ]


def _paths(text: str) -> None:
    """``text`` as a source path written into the mirror, and as an untrusted config's paths."""
    source = text.replace("\0", "")[:300] or "x"
    with tempfile.TemporaryDirectory() as top:
        mirror, outside = _tree(top)
        writer = FixWriter(Path(mirror))
        try:
            sink = writer._sink(writer._target(source))
        except (LlmfixError, OSError):  # refused, or a name the system will not take
            sink = None
        if sink is not None:
            sink.handle.write("x")
            sink.commit()
        for path in _written(top):
            assert within(path, mirror), path
            assert not within(path, os.path.join(mirror, ".git")), path
        assert not os.listdir(outside)
        named = os.path.join(mirror, source)  # as the config's paths reach untrusted_view
        values = {"output": named, "write_fixed": named, "paths": [named]}
        kept, _ = untrusted_view(values, Path(mirror))
        for path in [kept.get("output"), kept.get("write_fixed"), *kept.get("paths", ())]:
            if path is not None:
                assert within(path, mirror), path
                assert ".git" not in os.path.relpath(os.path.realpath(path), mirror).split(os.sep)


def test_one_input(data: bytes) -> None:
    if not data:
        return
    text = data[1:].decode("utf-8", errors="replace")
    mode = data[0] % 6  # the seeds' "0", "2", "3" choose as they did modulo 4
    try:
        if mode == 2:
            result = llmfix.toolcalls.check_tool_calls(text, TOOLS, salvage=True)
        elif mode == 3:
            result = llmfix.repair(text, schema=SCHEMA)
        elif mode == 4:
            _printing(text)
            return
        elif mode == 5:
            _paths(text)
            return
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
