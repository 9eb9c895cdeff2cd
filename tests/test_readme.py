"""The README's tables of diagnostic codes and repair rules are the ones the registries write,
and every string in the source shaped like a code is a registered code."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmfix import codes, rules
from scripts.readme_tables import README, generated, markers

ROOT = Path(__file__).resolve().parent.parent

_CODE = re.compile(rf"(?:{'|'.join(codes.FAMILIES)})\.[a-z][a-z_0-9]*\Z")
_FILE = re.compile(r"\.py\Z")  # a module named in a message

# Strings in the source shaped like a code that are something else.
NOT_CODES = {
    "llm.repair": "the rule of an LLM repair's patch operations",
    "response.completed": "an OpenAI Responses stream event",
    "response.incomplete": "an OpenAI Responses stream event",
    "response.failed": "an OpenAI Responses stream event",
}


def _source_literals() -> dict[str, list[str]]:
    """Every string constant in llmfix/ shaped like a code, with the files using it."""
    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "llmfix").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
                if _CODE.match(text) and not _FILE.search(text):
                    found.setdefault(text, []).append(str(path.relative_to(ROOT)))
    return found


SOURCE = _source_literals()


def test_the_readme_tables_are_the_ones_the_registries_write() -> None:
    text = README.read_text(encoding="utf-8")
    assert generated(text) == text, "run: python scripts/readme_tables.py"


def test_each_table_sits_between_its_markers_once() -> None:
    text = README.read_text(encoding="utf-8")
    for name in ("codes", "rules"):
        start, end = markers(name)
        assert (text.count(start), text.count(end)) == (1, 1)


def test_every_registered_code_is_in_the_table_once() -> None:
    # (a code of a family the table does not list would be left out)
    table = codes.markdown()
    assert [c for c in codes.CODES if table.count(f"| `{c}` |") != 1] == []


def test_every_schema_and_tool_rule_is_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    assert [r for r in rules.all_rule_ids() if f"| `{r}` |" not in text] == []


@pytest.mark.parametrize("literal", sorted(set(SOURCE) - set(NOT_CODES)))
def test_each_code_shaped_string_in_the_source_is_registered(literal: str) -> None:
    # A code compared against (d.code == "...") or mapped (json-repair's log) is a real one.
    assert literal in codes.CODES, f"{literal} in {SOURCE[literal]}"


def test_the_strings_that_are_not_codes_are_still_in_the_source() -> None:
    assert [text for text in NOT_CODES if text not in SOURCE] == []


def test_the_check_script_passes_on_the_readme() -> None:
    script = ROOT / "scripts" / "readme_tables.py"
    ok = subprocess.run(
        [sys.executable, str(script), "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
