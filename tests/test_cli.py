"""The `llmfix` command line, through CliRunner and as an installed program with real pipes."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmfix.cli import app

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


@pytest.fixture
def cli() -> Any:
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(app, list(args), input=input)

    return invoke


@pytest.fixture
def person_schema(tmp_path: Path) -> Path:
    path = tmp_path / "person.json"
    path.write_text(json.dumps(PERSON))
    return path


def test_repair_stdin_to_stdout(cli: Any) -> None:
    result = cli("repair", "--compact", input='Here you go: {"a": 1,}')
    assert result.exit_code == 0
    assert result.stdout.strip() == '{"a":1}'


def test_valid_input_is_printed_with_indent(cli: Any) -> None:
    result = cli("repair", "--indent", "4", input='{"a": [1]}')
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"a": [1]}
    assert "\n        1" in result.stdout


def test_schema_violation_exits_1_and_prints_nothing(cli: Any, person_schema: Path) -> None:
    result = cli("repair", "--schema", str(person_schema), input='{"name": "Ada"}')
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "schema.required" in result.stderr


def test_unparseable_exits_1(cli: Any) -> None:
    result = cli("repair", input="There is no JSON in this answer.")
    assert result.exit_code == 1
    assert "parse.failed" in result.stderr


@pytest.mark.parametrize(
    ("fail_on", "text", "code"),
    [
        ("invalid", '```json\n{"a": 1}\n```', 0),
        ("extracted", '```json\n{"a": 1}\n```', 1),
        ("repaired", '{"a": 1,}', 1),
        ("repaired", '```json\n{"a": 1}\n```', 0),
        ("extracted", '{"a": 1}', 0),
    ],
)
def test_fail_on(cli: Any, fail_on: str, text: str, code: int) -> None:
    assert cli("repair", "--fail-on", fail_on, input=text).exit_code == code


def test_max_risk_fails_when_a_guess_was_needed(cli: Any) -> None:
    result = cli("repair", "--max-risk", "lossless", input='{"a": "unterminated')
    assert result.exit_code == 1
    assert "--max-risk lossless" in result.stderr


def test_output_file_and_report(cli: Any, tmp_path: Path, person_schema: Path) -> None:
    out = tmp_path / "out.json"
    report = tmp_path / "report.json"
    result = cli(
        "repair",
        "-s",
        str(person_schema),
        "-o",
        str(out),
        "--report",
        str(report),
        input="{'name': 'Ada', 'age': 36}",
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(out.read_text()) == {"name": "Ada", "age": 36}
    data = json.loads(report.read_text())
    assert data["version"] == "1"
    assert data["items"][0]["status"] == "repaired"
    assert "parse.single_quotes" in {d["code"] for d in data["items"][0]["diagnostics"]}
    assert "total" in data["items"][0]["timings"]


def test_yaml_report(cli: Any, tmp_path: Path) -> None:
    import yaml

    report = tmp_path / "r.yaml"
    assert cli("repair", "--report", str(report), input='{"a": 1}').exit_code == 0
    assert yaml.safe_load(report.read_text())["items"][0]["status"] == "valid"


def test_in_place_with_backup_keeps_mode(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "answer.json"
    target.write_text("{'a': True,}")
    target.chmod(0o640)
    result = cli("repair", "--in-place", "--backup", str(target))
    assert result.exit_code == 0, result.stderr
    assert json.loads(target.read_text()) == {"a": True}
    assert (tmp_path / "answer.json.bak").read_text() == "{'a': True,}"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_in_place_leaves_a_failing_file_untouched(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "answer.txt"
    target.write_text("no json here")
    assert cli("repair", "--in-place", str(target)).exit_code == 1
    assert target.read_text() == "no json here"


def test_missing_file_is_one_line_and_batch_continues(cli: Any, tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_text('{"a": 1}')
    result = cli("repair", "--compact", str(tmp_path / "missing.txt"), str(good))
    assert result.exit_code == 2
    assert "missing.txt: no such file" in result.stderr
    # several inputs: one JSON line each, the missing one included
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["status"] for line in lines] == ["error", "valid"]
    assert lines[1] == {"source": str(good), "status": "valid", "value": {"a": 1}}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fail-on", "sometimes"], "--fail-on must be one of"),
        (["--max-risk", "yolo"], "--max-risk must be one of lossless, safe, guess, not 'yolo'"),
        (["--pick", "middle"], "--pick must be one of best, first, last, largest, all"),
        (["--schema", "builtin:nope"], "builtin:nope"),
        (["--backup"], "--backup only makes sense with --in-place"),
    ],
)
def test_bad_flags_are_usage_errors(cli: Any, args: list[str], message: str) -> None:
    result = cli("repair", *args, input="{}")
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_schema_is_exit_2_naming_the_file(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "intger"}')
    result = cli("repair", "--schema", str(bad), input="{}")
    assert result.exit_code == 2
    assert "bad.json" in result.stderr


def test_pick_all_prints_json_lines(cli: Any) -> None:
    result = cli("repair", "--pick", "all", input='First {"a": 1} then {"b": 2}.')
    assert result.exit_code == 0
    assert [json.loads(line) for line in result.stdout.splitlines()] == [{"a": 1}, {"b": 2}]


def test_extract_lists_every_candidate(cli: Any) -> None:
    text = 'A {"a": 1} and ```json\n{"b": 2}\n```'
    result = cli("extract", input=text)
    assert result.exit_code == 0
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert {(r["origin"], json.dumps(r["value"])) for r in records} >= {
        ("prose", '{"a": 1}'),
        ("fence", '{"b": 2}'),
    }
    assert all({"span", "line", "column", "ok"} <= r.keys() for r in records)


def test_schemas_lists_builtins(cli: Any) -> None:
    result = cli("schemas")
    assert result.exit_code == 0
    assert "builtin:tool-call-envelope" in result.stdout


def test_builtin_schema_by_name(cli: Any) -> None:
    text = '{"toolCalls": [{"name": "search", "arguments": {"q": "x"}}]}'
    assert cli("repair", "-s", "builtin:tool-call-envelope", input=text).exit_code == 0


# --- the installed program, with real pipes -------------------------------------------


def _llmfix() -> list[str]:
    exe = shutil.which("llmfix", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "llmfix"]


def _run(
    *args: str, input: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_llmfix(), *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        check=False,
    )


def test_installed_program_repairs_the_sample() -> None:
    proc = _run(
        "repair",
        str(SAMPLES / "person_answer.txt"),
        "--schema",
        str(SAMPLES / "person.schema.json"),
    )
    assert proc.returncode == 0, proc.stderr
    value = json.loads(proc.stdout)
    assert value["name"] == "Ada Lovelace"
    assert value["languages"] == ["English", "French"]
    assert value["employed"] is False


def test_installed_program_pipe_and_stderr_are_separate() -> None:
    proc = _run("repair", "--compact", input="```json\n{'x': None}\n```\n")
    assert proc.returncode == 0
    assert proc.stdout == '{"x":null}\n'
    assert "parse.single_quotes" in proc.stderr
    assert "\x1b[" not in proc.stderr  # NO_COLOR / not a TTY: plain text


def test_installed_program_unknown_flag_is_one_line() -> None:
    proc = _run("repair", "--no-such-flag")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "no-such-flag" in proc.stderr


def test_python_dash_m_works() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "llmfix", "repair", "--compact"],
        input="[1, 2,]",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0
    assert proc.stdout == "[1,2]\n"


def test_writing_to_a_special_file_does_not_replace_it(tmp_path: Path) -> None:
    fifo_free_target = Path(os.devnull)
    from llmfix.files.atomic import write_atomic

    write_atomic(fifo_free_target, "x")
    assert fifo_free_target.is_char_device()


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(TOOLS))
    return path


def test_tools_calls_are_checked_and_repaired(cli: Any, tools_file: Path) -> None:
    text = (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3",}}\n'
        "</tool_call>"
    )
    result = cli("repair", "--tools", str(tools_file), "--compact", input=text)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == [
        {"id": None, "name": "get_weather", "arguments": {"city": "Paris", "days": 3}}
    ]


def test_tools_unknown_tool_fails(cli: Any, tools_file: Path) -> None:
    text = '<tool_call>{"name": "check_network_status", "arguments": {}}</tool_call>'
    result = cli("repair", "--tools", str(tools_file), input=text)
    assert result.exit_code == 1
    assert "tools.unknown_name" in result.stderr


def test_tools_emit_anthropic(cli: Any, tools_file: Path) -> None:
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
    result = cli(
        "repair", "--tools", str(tools_file), "--emit", "anthropic", "--compact", input=text
    )
    assert result.exit_code == 0, result.stderr
    block = json.loads(result.stdout)[0]
    assert (block["type"], block["name"], block["input"]) == (
        "tool_use",
        "get_weather",
        {"city": "Oslo"},
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--emit", "openai"], "need --tool-calls or --tools"),
        (["--tool-format", "no-such-format"], "no-such-format"),
    ],
)
def test_tool_flag_errors(cli: Any, args: list[str], message: str) -> None:
    result = cli("repair", *args, input="{}")
    assert result.exit_code == 2
    assert message in result.stderr


def test_schema_and_tools_together_is_a_usage_error(
    cli: Any, tools_file: Path, person_schema: Path
) -> None:
    result = cli("repair", "--tools", str(tools_file), "--schema", str(person_schema), input="{}")
    assert result.exit_code == 2


@pytest.mark.parametrize("engine", ["llmfix", "json-repair"])
def test_engine_choice(cli: Any, engine: str) -> None:
    result = cli("repair", "--engine", engine, "--compact", input="{'a': [1, 2,], b: None}")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"a": [1, 2], "b": None}


def test_unknown_engine_is_a_usage_error(cli: Any) -> None:
    result = cli("repair", "--engine", "regex", input="{}")
    assert result.exit_code == 2
    assert "--engine must be llmfix or json-repair, not 'regex'" in result.stderr


# -- issue 20: number texts, extract agreeing with repair --------------------------------

NUMBERS_IN = '{"big": 1e400, "exp": 1e5, "long": 0.1000000000000000055511151231257827, "z": 1.50,}'
NUMBERS_OUT = '{"big":1e400,"exp":1e5,"long":0.1000000000000000055511151231257827,"z":1.50}'


def test_repair_writes_numbers_as_the_model_wrote_them_on_stdout(cli: Any) -> None:
    result = cli("repair", "--compact", input=NUMBERS_IN)
    assert result.exit_code == 0
    assert result.stdout.strip() == NUMBERS_OUT
    assert "Infinity" not in result.stdout


def test_repair_writes_numbers_as_written_to_output_file_and_in_place(
    cli: Any, tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    assert cli("repair", "--compact", "-o", str(out), input=NUMBERS_IN).exit_code == 0
    assert out.read_text().strip() == NUMBERS_OUT
    target = tmp_path / "answer.json"
    target.write_text(NUMBERS_IN)
    assert cli("repair", "--compact", "--in-place", str(target)).exit_code == 0
    assert target.read_text().strip() == NUMBERS_OUT


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_repair_report_holds_numbers_as_written(cli: Any, tmp_path: Path, suffix: str) -> None:
    report = tmp_path / f"report{suffix}"
    assert cli("repair", "--report", str(report), input=NUMBERS_IN).exit_code == 0
    text = report.read_text()
    assert "Infinity" not in text
    assert ".inf" not in text
    for token in ("1e400", "1e5", "0.1000000000000000055511151231257827", "1.50"):
        assert token in text


def test_extract_does_not_call_prose_ok_when_repair_calls_it_unparseable(
    cli: Any, tmp_path: Path
) -> None:
    prose = tmp_path / "prose.txt"
    prose.write_text("I think the answer is yes, but it depends.\nLet me know.\n")
    repaired = cli("repair", str(prose))
    assert repaired.exit_code == 1
    records = [json.loads(line) for line in cli("extract", str(prose)).stdout.splitlines()]
    assert records
    assert [r["ok"] for r in records] == [False]
    assert "parse.failed" in records[0]["diagnostics"]


def test_extract_and_repair_read_the_same_candidate_the_same_way(cli: Any) -> None:
    text = 'Here:\n```json\n{"a": 1, "a": 2,}\n```\n'
    (record,) = [json.loads(line) for line in cli("extract", input=text).stdout.splitlines()]
    repaired = cli("repair", "--compact", input=text)
    assert record["ok"] is True
    assert json.dumps(record["value"], separators=(",", ":")) == repaired.stdout.strip()
    assert "parse.duplicate_key" in record["diagnostics"]


# ------------------------------------------------------------------ issue 20


ENUM = {"type": "object", "properties": {"s": {"enum": ["in_progress"]}}}


@pytest.mark.parametrize(
    ("args", "used"),
    [
        (["--disable-rule", "enum-case"], "repair.enum_nearest"),
        (["--disable-rule", "enum_case"], "repair.enum_nearest"),
        (["--rules", "enum-case,coerce-number"], "repair.enum_case"),
        (["--rules", "enum_case"], "repair.enum_case"),
    ],
)
def test_disable_rule_and_rules_accept_both_spellings(
    cli: Any, tmp_path: Path, args: list[str], used: str
) -> None:
    schema = tmp_path / "enum.json"
    schema.write_text(json.dumps(ENUM))
    result = cli("repair", "-s", str(schema), *args, input='{"s": "IN PROGRESS"}')
    codes = {c for c in ("repair.enum_case", "repair.enum_nearest") if c in result.stderr}
    assert (result.exit_code, codes) == (0, {used})


def test_library_disabled_rules_accept_both_spellings() -> None:
    import llmfix

    result = llmfix.repair(
        '{"s": "IN PROGRESS"}', ENUM, disabled_rules=["enum-case", "enum-nearest"]
    )
    assert result.status.value == "invalid"


def test_in_place_backup_leaves_a_valid_file_byte_for_byte_alone(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "answer.json"
    target.write_bytes(b'{"a":   1,\r\n "b": [true]}')
    os.utime(target, ns=(1_000_000_000, 1_000_000_000))
    result = cli("repair", "--in-place", "--backup", "-v", str(target))
    assert (
        result.exit_code,
        target.read_bytes(),
        target.stat().st_mtime_ns,
        (tmp_path / "answer.json.bak").exists(),
        f"{target}: already valid; left unchanged" in result.stderr,
    ) == (0, b'{"a":   1,\r\n "b": [true]}', 1_000_000_000, False, True)


def test_version_flag_prints_the_version(cli: Any) -> None:
    import llmfix

    result = cli("--version")
    assert (result.exit_code, result.stdout) == (0, f"llmfix {llmfix.__version__}\n")


def test_installed_program_has_a_version_flag() -> None:
    exe = shutil.which("llmfix") or str(Path(sys.executable).parent / "llmfix")
    done = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.startswith("llmfix ")) == (0, True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--indent", "-3"], "--indent must be 0 or more, not -3"),
        (
            ["--report", "r.txt"],
            "--report r.txt: the file name must end in .sarif, .json, .yaml, .yml, .xml or .html",
        ),
    ],
)
def test_a_negative_indent_and_an_unknown_report_suffix_are_usage_errors(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    result = cli("repair", *args, input='{"a": 1}')
    assert (result.exit_code, message in result.stderr, result.stdout) == (2, True, "")
    assert not (tmp_path / "r.txt").exists()


def test_several_files_to_stdout_are_json_lines_naming_each_input(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text('{"a": [1, 2]}')
    (tmp_path / "b.txt").write_text("{'b': 1,}")
    (tmp_path / "c.txt").write_text("no json at all")
    result = cli("repair", "a.txt", "b.txt", "c.txt", "gone.txt")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert (result.exit_code, lines) == (
        2,
        [
            {"source": "a.txt", "status": "valid", "value": {"a": [1, 2]}},
            {"source": "b.txt", "status": "repaired", "value": {"b": 1}},
            {
                "source": "c.txt",
                "status": "unparseable",
                "failures": ["status unparseable (--fail-on invalid)"],
            },
            {"source": "gone.txt", "status": "error", "error": "gone.txt: no such file"},
        ],
    )


@pytest.mark.parametrize(
    ("spec", "starts"),
    [
        ("r.json", '{\n  "version": "1",\n  "summary": {\n    "items": 1,'),
        ("r.yaml", "version: '1'\nsummary:\n  items: 1\n"),
        ("r.html", "<!DOCTYPE html>"),
        ("r.sarif", '{\n  "$schema": "https://json.schemastore.org/sarif-2.1.0.json"'),
        ("r.xml", '<?xml version="1.0" encoding="UTF-8"?>'),
        (
            "github:r.txt",
            "::error file=answer.txt,line=1,col=8,title=llmfix parse.trailing_comma::",
        ),
        ("baseline:r.txt", '{\n  "version": "1",\n  "baseline": true,\n  "failing": 1,'),
    ],
)
def test_repair_writes_a_report_in_every_format_check_does(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str, starts: str
) -> None:
    """`repair --report` goes through `check`'s reporters and suffix table."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "answer.txt").write_text('{"a": 1,}', encoding="utf-8")
    result = cli("repair", "answer.txt", "--fail-on", "repaired", "--report", spec)
    written = (tmp_path / spec.partition(":")[2 if ":" in spec else 0]).read_text("utf-8")
    assert (result.exit_code, written.startswith(starts)) == (1, True), written[:300]


def test_no_command_module_imports_another() -> None:
    """Commands share `llmfix.cli.common` (the Typer app, option types, output helpers) and the
    library; what one command needs from another belongs in the library."""
    import ast

    cli_dir = REPO / "llmfix" / "cli"
    commands = {p.stem for p in cli_dir.glob("*.py")} - {"__init__", "common"}
    assert {"repair", "check"} <= commands
    for name in sorted(commands):
        tree = ast.parse((cli_dir / f"{name}.py").read_text(encoding="utf-8"))
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
                imported.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
        others = {f"llmfix.cli.{c}" for c in commands - {name}}
        assert not imported & others, f"llmfix/cli/{name}.py imports {imported & others}"


def test_help_lists_the_values_of_choice_options(cli: Any) -> None:
    repair_help = cli("repair", "--help").stdout
    assert "<best|first|last|largest|all>" in repair_help
    assert "<llmfix|json-repair>" in repair_help
    assert "<invalid|repaired|extracted>" in repair_help
    assert "<canonical|openai|anthropic>" in repair_help
    check_help = cli("check", "--help").stdout
    assert "<text|json|yaml|junit|github|sarif|html|baseline>" in check_help
    assert "<local|ray|spark>" in check_help
    assert "<openai|anthropic>" in check_help


@pytest.mark.parametrize(
    ("command", "after"), [("repair", "--patch"), ("check", "--max-annotations")]
)
def test_report_help_names_every_suffix_of_the_table(cli: Any, command: str, after: str) -> None:
    """`repair --report` and `check --report` go through one suffix table; the help of each
    names every suffix of that table, and the FORMAT: prefix."""
    from llmfix.reporters import REPORT_SUFFIXES

    text = " ".join(cli(command, "--help").stdout.split())
    said = text[text.index("--report") : text.index(after)]
    assert [s for s in REPORT_SUFFIXES if s not in said] == []
    assert "FORMAT: prefix" in said


def test_a_value_outside_the_choices_is_one_line_exit_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "llmfix", "repair", "--kind", "csv"],
        input="{}",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "llmfix: error: --kind must be one of auto, text, json, jsonl, not 'csv' "
        "(see `llmfix repair --help`)\n"
    )


def test_each_shared_option_is_one_flag_of_both_commands() -> None:
    """The options `repair` and `check` share are declared once (`llmfix.cli.common`); each
    command gives its own help text."""
    import typer.main

    from llmfix.cli import app
    from llmfix.cli.common import _SHARED

    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    for command in ("repair", "check"):
        flags = {tuple(p.opts + p.secondary_opts) for p in commands[command].params}
        for name, (names, _) in _SHARED.items():
            declared = tuple(n for part in names for n in part.split("/"))
            assert any(set(declared) == set(f) for f in flags), f"{command} {name}"
