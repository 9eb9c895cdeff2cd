"""llmfix.run.settings: one run, built once from flags, environment and config files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmfix.errors import ConfigError
from llmfix.model import Risk
from llmfix.run.settings import (
    CHOICES,
    CheckFlags,
    LlmFlags,
    RepairFlags,
    build_run,
    run_config,
)

PERSON = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}


def _library_tables() -> dict[str, tuple[str, ...]]:
    """Each choice table, read from where the library keeps it."""
    from llmfix.batch.gate import FAIL_ON
    from llmfix.engines import ENGINES as CHECK_ENGINES
    from llmfix.inputs import KINDS, MESSAGES
    from llmfix.llm.config import PROVIDERS
    from llmfix.options import PARSE_ENGINES, PICKS
    from llmfix.reporters import FORMATS
    from llmfix.run.settings import CONFIG_FORMATS, RESULTS_FORMATS
    from llmfix.toolcalls import EMITS
    from llmfix.toolcalls.detect import FORMATS as TOOL_FORMATS

    return {
        "pick": PICKS,
        "parser_engine": PARSE_ENGINES,
        "fail_on": FAIL_ON,
        "risk": tuple(r.value for r in Risk),
        "kind": KINDS,
        "messages": MESSAGES,
        "emit": EMITS,
        "tool_format": tuple(TOOL_FORMATS),
        "report_format": FORMATS,
        "check_engine": CHECK_ENGINES,
        "results_format": RESULTS_FORMATS,
        "provider": PROVIDERS,
        "config_format": CONFIG_FORMATS,
    }


def _choice_options() -> list[tuple[str, Any]]:
    """Every option of every command whose values are one of a table's, with its command."""
    import typer.main

    from llmfix.cli import app
    from llmfix.cli.common import TableChoice

    found: list[tuple[str, Any]] = []
    commands = list(typer.main.get_command(app).commands.items())  # type: ignore[attr-defined]
    while commands:
        name, command = commands.pop()
        commands += [(f"{name} {n}", c) for n, c in getattr(command, "commands", {}).items()]
        found += [(name, p) for p in command.params if isinstance(p.type, TableChoice)]
    return found


def test_the_command_line_takes_exactly_each_tables_values() -> None:
    from typer import BadParameter

    tables = _library_tables()
    options = _choice_options()
    assert {param.type.table for _, param in options} == set(CHOICES) == set(tables)
    for command, param in options:
        table = tables[param.type.table]
        where = f"{command} {param.opts[0]}"
        assert param.type.choices == table, where
        assert [param.type.convert(v, param, None) for v in table] == list(table), where
        with pytest.raises(BadParameter):
            param.type.convert("not-one-of-them", param, None)
        assert param.default is None or param.default in table, where  # taken unread


def test_results_formats_are_what_the_results_writer_writes(tmp_path: Path) -> None:
    from llmfix.batch.writers import ResultsWriter
    from llmfix.run.settings import RESULTS_FORMATS

    assert RESULTS_FORMATS == ("parquet", "jsonl")
    assert ResultsWriter(tmp_path / "rows", "jsonl").fmt == "jsonl"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory (the working directory) with a schema and an untrusted config
    that sets a schema, a gate, and two settings only a trusted file may set."""
    (tmp_path / "person.json").write_text(json.dumps(PERSON), encoding="utf-8")
    (tmp_path / "llmfix.yaml").write_text(
        "schema: person.json\nfail-on: repaired\nallow-remote-refs: true\n"
        "llm: {model: m, base-url: http://127.0.0.1:9/v1}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_repair_run_is_typed_values_with_the_gate_applied() -> None:
    run = build_run(RepairFlags(pick="last", max_risk="safe", engine="json-repair", indent=None))
    assert (run.options.pick, run.options.engine, run.indent) == ("last", "json-repair", None)
    assert (run.fail_on, run.max_risk, run.options.max_risk) == ("invalid", Risk.SAFE, Risk.SAFE)
    assert (run.tools, run.schema, run.validator_for("a.txt")) == (None, None, None)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (RepairFlags(indent=-1), "--indent must be 0 or more"),
        (RepairFlags(time_budget=0), "must be positive"),
        (RepairFlags(salvage=True), "need --tool-calls or --tools"),
        (RepairFlags(tool_calls=True, schema="builtin:tool-call"), "don't go together"),
        (RepairFlags(tool_format="smoke-signals"), "unknown tool-call format"),
        (RepairFlags(kind="csv"), "--kind must be one of"),
        (RepairFlags(tools="t.json", kind="jsonl"), "a.json"),
        (RepairFlags(fail_on="sometimes"), "--fail-on must be one of"),
    ],
)
def test_bad_repair_flags_are_config_errors(
    flags: RepairFlags, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    if flags.tools:
        (tmp_path / "t.json").write_text(json.dumps([{"name": "a", "parameters": {}}]))
        message = "--field and --kind don't apply"
    with pytest.raises(ConfigError, match=message):
        build_run(flags)


def test_repair_without_schema_uses_the_config_schema_but_its_own_gate(project: Path) -> None:
    run = build_run(RepairFlags())
    validator = run.validator_for("answer.txt")
    assert validator is not None
    assert validator.is_valid({"age": 3})
    assert not validator.is_valid({})
    assert validator is run.validator_for("-")  # compiled once per run
    assert run.fail_on == "invalid"  # repair's gate is its flags', not the file's


def test_an_untrusted_project_file_keeps_its_network_settings_to_itself(project: Path) -> None:
    flags = RepairFlags()
    config = run_config(flags)
    run = build_run(flags, config)
    assert run.options.allow_remote_refs is False
    assert "allow-remote-refs" in config.ignored
    assert "llm.base-url" in config.ignored
    assert run.config.llm == {"model": "m"}
    assert run.llm_enabled is False  # an untrusted llm: section turns nothing on


def test_a_trusted_project_file_is_used_whole(project: Path) -> None:
    run = build_run(RepairFlags(trust_config=True))
    assert (run.options.allow_remote_refs, run.config.ignored) == (True, ())
    assert run.config.llm["base_url"] == "http://127.0.0.1:9/v1"
    assert run.llm_enabled is True


def test_llm_flags_and_environment_decide_over_the_files(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert build_run(RepairFlags(llm=LlmFlags(enabled=True))).llm_enabled is True
    monkeypatch.setenv("LLMFIX_LLM", "1")
    assert build_run(RepairFlags()).llm_enabled is True
    off = RepairFlags(trust_config=True, llm=LlmFlags(enabled=False))
    assert build_run(off).llm_enabled is False


def test_llm_flags_become_config_overrides() -> None:
    flags = LlmFlags(model="m", cache=False, save_prompts="p")
    given = {k: v for k, v in flags.overrides().items() if v is not None}
    assert given == {"model": "m", "cache": False, "save_prompts": "p"}


def test_a_check_run_takes_the_file_under_the_flags(project: Path) -> None:
    run = build_run(CheckFlags(max_risk="lossless", verbosity=1, tool_calls=True))
    assert (run.fail_on, run.max_risk) == ("repaired", Risk.LOSSLESS)
    assert run.options.max_risk is Risk.LOSSLESS
    assert (run.config.schema, run.verbosity, run.tool_calls) == ("person.json", 1, True)
    assert run.options.allow_remote_refs is False  # untrusted: left out


def test_a_check_run_ignores_project_files_with_no_config(project: Path) -> None:
    run = build_run(CheckFlags(use_config=False))
    assert (run.config.schema, run.fail_on, run.config.ignored) == (None, "invalid", ())


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"in_place": True, "write_fixed": "out"}, "either --in-place or --write-fixed"),
        ({"jobs": -1}, "--jobs must be 0 or more"),
        ({"fail_on": "sometimes"}, "--fail-on must be one of"),
    ],
)
def test_bad_check_flags_are_config_errors(flags: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_run(CheckFlags(**flags, use_config=False))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (CheckFlags(use_config=False, max_annotations=-1), "--max-annotations must be 0"),
        (CheckFlags(use_config=False, engine="dask"), "--engine must be one of local, ray"),
        (CheckFlags(use_config=False, results_format="csv"), "parquet or jsonl, not 'csv'"),
    ],
)
def test_check_only_flags_are_checked_when_the_run_is_built(
    flags: CheckFlags, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        build_run(flags)


def test_check_only_flags_reach_the_run() -> None:
    flags = CheckFlags(use_config=False, engine="ray", results="rows", reports=("a.sarif",))
    run = build_run(flags)
    assert (run.engine, run.results, run.results_format) == ("ray", "rows", "parquet")
    assert (run.reports, run.allow_empty, run.max_annotations) == (("a.sarif",), False, None)


def test_the_run_package_exports_what_it_lists() -> None:
    import llmfix.run

    assert sorted(llmfix.run.__all__) == sorted(llmfix.run._WHERE)
    for name in llmfix.run.__all__:
        assert getattr(llmfix.run, name).__name__ == name
    with pytest.raises(AttributeError):
        llmfix.run.RunSettings  # noqa: B018 - the old name is gone
