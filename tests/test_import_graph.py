"""The import graph of llmfix has no cycles: not between packages, not inside one, and not
between a package's ``__init__`` and its own modules (which the ``acyclic`` contract of
``lint-imports`` does not look at: it compares siblings).

The graph is grimp's, the one ``lint-imports`` checks (see ``[tool.importlinter]`` in
pyproject.toml): every import, inside functions and under ``if TYPE_CHECKING:`` too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest

import llmfix

ROOT = Path(__file__).resolve().parents[1]


def cycles(edges: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in edges.get(module, ()):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(frozenset(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    # grimp reads the llmfix that imports, which must be this checkout's.
    assert Path(llmfix.__file__).parent == ROOT / "llmfix", llmfix.__file__
    return grimp.build_graph("llmfix", include_external_packages=False, cache_dir=None)


def test_cycles_finds_a_cycle() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert cycles(edges) == [frozenset("abc")]
    assert cycles({"a": ["b"], "b": []}) == []


def test_no_module_is_on_an_import_cycle(graph: grimp.ImportGraph) -> None:
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    found = set(cycles(edges))
    assert not found, sorted(sorted(group) for group in found)
