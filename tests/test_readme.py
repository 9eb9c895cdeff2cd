"""The README is a front page that fits on a screen; the reference pages of the docs are
written from the registries (``scripts/docs_reference.py``) and list every code, rule,
command, option and format; every string in the source shaped like a code is a registered
code."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmfix import codes, rules
from scripts import docs_reference

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

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


def test_the_readme_fits_on_a_screen_or_a_few() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines: move the manual into docs/"


def test_the_readme_holds_the_two_set_up_commands_and_links_to_the_docs() -> None:
    text = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    [test_command] = [line for line in text.splitlines() if line.endswith(".venv/bin/pytest")]
    assert (test_command in ci, "docs/getting-started.md" in text) == (True, True)


def test_every_registered_code_is_on_the_codes_page_once() -> None:
    page = docs_reference.codes_page()
    assert [c for c in codes.CODES if page.count(f"| `{c}` |") != 1] == []


def test_every_rule_is_on_the_rules_page() -> None:
    page = docs_reference.rules_page()
    missing = [r.id for r in rules.RULES.values() if f"| `{r.id}` |" not in page]
    assert missing == []


def test_every_command_and_option_is_on_the_command_line_page() -> None:
    import typer.main

    from llmfix.cli import app

    page = docs_reference.cli_page()
    group = typer.main.get_command(app)
    ctx = group.make_context("llmfix", [], resilient_parsing=True)
    missing = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        commands = [(name, command)]
        if hasattr(command, "list_commands"):
            commands += [
                (f"{name} {s}", command.get_command(ctx, s)) for s in command.list_commands(ctx)
            ]
        for full, each in commands:
            if f"## `llmfix {full}`" not in page:
                missing.append(full)
            missing += [
                f"{full} {opt}"
                for param in each.params
                if param.param_type_name == "option" and not param.hidden
                for opt in param.opts
                if f"`{opt}`" not in page
            ]
    assert missing == []


def test_every_tool_call_format_and_report_is_on_its_page() -> None:
    from llmfix.reporters import REPORTERS
    from llmfix.toolcalls.detect import FORMATS

    formats = docs_reference.tool_formats_page()
    reports = docs_reference.reports_page()
    assert [f for f in FORMATS if f"| `{f}` |" not in formats] == []
    assert [r for r in REPORTERS if f"| `{r}` |" not in reports] == []


def test_every_status_and_exit_code_is_on_its_page() -> None:
    from llmfix.model import ExitCode, Status

    page = docs_reference.exit_codes_page()
    assert [s.value for s in Status if f"| `{s.value}` |" not in page] == []
    assert [int(c) for c in ExitCode if f"| {int(c)} |" not in page] == []


def test_a_code_of_no_listed_family_stops_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    stray = codes.Code("stray.thing", "x", codes.ERROR, (), "a stray code", "")
    monkeypatch.setitem(codes.CODES, "stray.thing", stray)
    with pytest.raises(ValueError, match=r"stray\.thing"):
        docs_reference.codes_page()


@pytest.mark.parametrize("literal", sorted(set(SOURCE) - set(NOT_CODES)))
def test_each_code_shaped_string_in_the_source_is_registered(literal: str) -> None:
    # A code compared against (d.code == "...") or mapped (json-repair's log) is a real one.
    assert literal in codes.CODES, f"{literal} in {SOURCE[literal]}"


def test_the_strings_that_are_not_codes_are_still_in_the_source() -> None:
    assert [text for text in NOT_CODES if text not in SOURCE] == []


def test_the_tables_script_writes_every_reference_page() -> None:
    script = ROOT / "scripts" / "readme_tables.py"
    ok = subprocess.run(
        [sys.executable, str(script), "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert (ok.returncode, ok.stderr) == (0, "")
