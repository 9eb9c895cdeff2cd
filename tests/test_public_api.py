"""The README and the docs use only the public API: the package face ``llmfix`` and the
modules in ``llmfix.PUBLIC_MODULES``, and of each module only the names in its ``__all__``.

What is read: the imports and the ``llmfix.…`` attribute chains in the Python code blocks,
and every ``llmfix.…`` name in an inline code span (``llmfix.yaml`` and the like are file
names, not modules).
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

import llmfix

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

# The typed-runs work (issue 29, item 6) gives llmfix.run its __all__ (RepairRun, CheckRun
# and the builder that makes them) and rewrites the README's "Running as the command line
# does" example to import from it. Until then that example imports these modules, and
# their names are not checked; test_the_run_modules_are_still_pending says when to empty it.
# A name such as ``llmfix.yaml`` in a code span is a file.
FILE_SUFFIXES = frozenset({"json", "jsonl", "md", "sarif", "toml", "txt", "xml", "yaml", "yml"})

_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_SPAN = re.compile(r"`([^`\n]+)`")
_NAME = re.compile(r"(?<![\w./-])llmfix(?:\.[A-Za-z_]\w*)+")


def data_packages() -> frozenset[str]:
    """Packages that ship files, not Python (pyproject.toml's package-dir)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return frozenset(pyproject["tool"]["setuptools"].get("package-dir", {}))


PUBLIC = frozenset(llmfix.PUBLIC_MODULES) | data_packages()


def exported(module: str) -> frozenset[str] | None:
    """The names ``module`` offers (its ``__all__``); ``None``: a data package (no code)."""
    if module in data_packages():
        return None
    return frozenset(importlib.import_module(module).__all__)


def problem(dotted: str) -> str | None:
    """Why the reference ``llmfix.a.b.c`` is not public, or ``None`` when it is."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in PUBLIC:
            break
    if cut == len(parts):
        return None  # a public module, named
    names = exported(module)
    if names is None or parts[cut] in names:
        return None
    return f"{dotted}: {parts[cut]!r} is not in {module}.__all__ (public: {module})"


def code_references(source: str) -> list[str]:
    """The ``llmfix`` names one Python code block imports or uses."""
    tree = ast.parse(source)
    # an attribute that is part of a longer chain is read with that chain
    inner_ids = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "llmfix"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "llmfix":
            found += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Attribute) and id(node) not in inner_ids:
            chain = []
            inner: ast.expr = node
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id == "llmfix":
                found.append(".".join(["llmfix", *reversed(chain)]))
    return found


def span_references(text: str) -> list[str]:
    """The ``llmfix`` names in the inline code spans of ``text`` (code blocks left out)."""
    prose = _FENCE.sub("", text)
    found = []
    for span in _SPAN.findall(prose):
        for name in _NAME.findall(span):
            parts = name.split(".")
            if len(parts) == 2 and parts[1] in FILE_SUFFIXES:
                continue
            found.append(name)
    return found


def references() -> list[tuple[str, str]]:
    """(where, reference) for every document."""
    out = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        where = str(path.relative_to(ROOT))
        for language, block in _FENCE.findall(text):
            if language in ("python", "py"):
                out += [(f"{where} (code)", ref) for ref in code_references(block)]
        out += [(f"{where} (text)", ref) for ref in span_references(text)]
    return out


def test_the_documents_use_only_public_names() -> None:
    problems = [f"{where}: {why}" for where, ref in references() if (why := problem(ref))]
    assert problems == []


def test_the_reading_finds_what_the_readme_uses() -> None:
    found = {ref for _, ref in references()}
    assert {"llmfix.repair", "llmfix.engines.ray.check_dataset"} <= found
    assert "llmfix.batch.columns.ColumnChecker" in found


@pytest.mark.parametrize(
    ("reference", "public"),
    [
        ("llmfix.repair", True),
        ("llmfix.engines.ray", True),
        ("llmfix.batch.columns.ColumnChecker", True),
        ("llmfix.batch.columns.result_row", False),  # a module's helper, not in its __all__
        ("llmfix.batch.core.check_item", False),  # a private module
        ("llmfix.pipeline.core", False),
    ],
)
def test_problem_tells_public_from_private(reference: str, public: bool) -> None:
    assert (problem(reference) is None) is public


def test_code_and_spans_are_read() -> None:
    code = "import llmfix\nfrom llmfix.batch.core import Item\nllmfix.repair(t).value\n"
    assert sorted(code_references(code)) == [
        "llmfix",
        "llmfix.batch.core.Item",
        "llmfix.repair",
    ]
    text = "see `llmfix.pipeline.core.repair_text(x)`, `llmfix.yaml`, `.llmfix.yaml`\n"
    assert span_references(text) == ["llmfix.pipeline.core.repair_text"]


@pytest.mark.parametrize("module", llmfix.PUBLIC_MODULES)
def test_each_public_module_lists_what_it_offers(module: str) -> None:
    names = exported(module)
    assert names is not None, module
    loaded = importlib.import_module(module)
    assert names, module
    assert sorted(n for n in names if not hasattr(loaded, n)) == []
