"""The README documents every diagnostic code the source can emit, each exactly once."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

# The families of diagnostic codes (the part before the dot).
FAMILIES = (
    "normalize",
    "extract",
    "parse",
    "guided",
    "limits",
    "partial",
    "schema",
    "repair",
    "tools",
    "toolresult",
    "stream",
    "llm",
    "response",
    "input",
    "batch",
    "check",
)
_CODE = re.compile(rf"(?:{'|'.join(FAMILIES)})\.[a-z][a-z_0-9]*\Z")
_FILE = re.compile(r"\.py\Z")  # a module named in a message

# Strings in the source shaped like a code that are something else.
NOT_CODES = {
    "llm.repair": "the rule of an LLM repair's patch operations",
    "response.completed": "an OpenAI Responses stream event",
    "response.incomplete": "an OpenAI Responses stream event",
    "response.failed": "an OpenAI Responses stream event",
}
# Codes built from a name (f"schema.{keyword}", f"repair.{rule}"): documented as a pattern
# and, for repair rules, in the rules table (test_every_schema_repair_rule_is_documented).
PATTERN_FAMILIES = ("schema", "repair")


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
EMITTED = sorted(code for code in SOURCE if code not in NOT_CODES)


def _codes_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Diagnostic codes\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


SECTION = _codes_section()
DOCUMENTED = sorted(set(re.findall(rf"`((?:{'|'.join(FAMILIES)})\.[a-z][a-z_0-9]*)`", SECTION)))


@pytest.mark.parametrize("code", EMITTED)
def test_each_code_emitted_is_documented_exactly_once(code: str) -> None:
    assert SECTION.count(f"`{code}`") == 1


@pytest.mark.parametrize(
    "code", [c for c in DOCUMENTED if c.partition(".")[0] not in PATTERN_FAMILIES]
)
def test_each_code_documented_is_one_the_source_emits(code: str) -> None:
    assert code in SOURCE


def test_the_strings_that_are_not_codes_are_still_in_the_source() -> None:
    assert [text for text in NOT_CODES if text not in SOURCE] == []


def test_the_collection_finds_codes_of_every_kind() -> None:
    # Codes written as Diagnostic(code=...), in repair tuples, tables and _fail(...) calls.
    assert {"parse.trailing_comma", "limits.size", "tools.unknown_name", "llm.repaired"} <= set(
        EMITTED
    )


def _code_arguments() -> set[str]:
    """Every string passed as ``code=...`` anywhere in llmfix/."""
    found = set()
    for path in (ROOT / "llmfix").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    value = keyword.value
                    if keyword.arg == "code" and isinstance(value, ast.Constant):
                        found.add(str(value.value))
    return found


def test_every_code_argument_is_of_a_known_family() -> None:
    # A code of a new family would be missed by the collection above: add the family.
    codes = _code_arguments()
    assert "parse.cut_off" in codes  # the collection sees Diagnostic(code="...")
    assert sorted(c for c in codes if c.partition(".")[0] not in FAMILIES) == []


def test_every_schema_repair_rule_is_documented() -> None:
    from llmfix.schema.repair import RULES

    readme = README.read_text(encoding="utf-8")
    assert [rule for rule in RULES if f"| `{rule}` |" not in readme] == []
