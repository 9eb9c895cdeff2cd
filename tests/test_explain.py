"""`llmfix explain`: a code's or a rule's doc with a live example; the list without one."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from llmfix import codes, rules
from llmfix.cli import app


@pytest.fixture
def cli() -> Any:
    runner = CliRunner()

    def invoke(*args: str) -> Any:
        return runner.invoke(app, list(args))

    return invoke


def test_a_code_is_explained_with_its_example_run(cli: Any) -> None:
    out = cli("explain", "parse.trailing_comma")
    assert out.exit_code == 0
    lines = out.stdout.splitlines()
    assert lines[0] == f"parse.trailing_comma: {codes.PARSE_TRAILING_COMMA.summary}"
    assert lines[1] == "stage parse, severity warning, risk lossless"
    assert "rule trailing_comma (a repair of the lenient reader)" in lines
    assert '  input:  "{\\"a\\": 1,}"' in lines
    # the real diagnostics line, as `llmfix repair` prints it
    assert any(
        line.startswith("    <example>:1:8: warning parse.trailing_comma:") for line in lines
    )
    assert '    value: {"a": 1}' in lines


def test_a_schema_rule_is_explained_with_its_schema_and_how_to_turn_it_off(cli: Any) -> None:
    out = cli("explain", "coerce-number")
    assert out.exit_code == 0
    assert out.stdout.startswith("coerce_number: number written as a string")
    assert "code repair.coerce_number" in out.stdout
    assert "Turn it off with --disable-rule coerce_number." in out.stdout
    assert '  schema: {"type": "number"}' in out.stdout
    assert "warning repair.coerce_number:" in out.stdout


def test_a_guided_reading_is_a_rule_too(cli: Any) -> None:
    out = cli("explain", "known_keys")
    assert out.exit_code == 0
    assert out.stdout.startswith("known_keys: an object re-read")
    assert "warning guided.known_keys:" in out.stdout


def test_a_code_without_an_example_prints_its_doc(cli: Any) -> None:
    out = cli("explain", "batch.timeout")
    assert out.exit_code == 0
    assert "Example" not in out.stdout
    assert codes.BATCH_TIMEOUT.doc in out.stdout.replace("\n", " ")


def test_an_unknown_name_is_one_line_with_the_closest_and_exit_2(cli: Any) -> None:
    out = cli("explain", "parse.trailng_comma")
    assert out.exit_code == 2
    assert out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        "llmfix: error: unknown code or rule 'parse.trailng_comma' "
        "(did you mean 'parse.trailing_comma'?)"
    ]


def test_without_a_name_every_code_and_rule_is_listed_once(cli: Any) -> None:
    out = cli("explain")
    assert out.exit_code == 0
    lines = out.stdout.splitlines()
    assert len(lines) == len(codes.CODES) + len(rules.RULES)
    firsts = [line.split("\t")[0] for line in lines]
    assert firsts[: len(codes.CODES)] == list(codes.CODES)
    assert {"coerce_number", "tool_name", "boolean"} <= set(firsts)


@pytest.mark.parametrize("code", [c.id for c in codes.CODES.values() if c.example])
def test_every_example_runs_in_explain(cli: Any, code: str) -> None:
    out = cli("explain", code)
    assert out.exit_code == 0, out.stderr
    assert f" {code}: " in out.stdout.split("Example", 1)[1]
