"""`llmfix check` and `llmfix config` end to end: CliRunner, and the installed program."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmfix.cli import app

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples" / "transcripts"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv("LLMFIX_CONFIG", raising=False)
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(app, list(args), input=input)

    return invoke


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small tree: a clean answer, a repaired one, a JSONL log with an invalid record."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "clean.txt").write_text('{"name": "Ada", "age": 36}')
    (out / "sub" / "fenced.md").write_text('Sure!\n```json\n{"name": "Bo", "age": "7",}\n```\n')
    records = [
        {"model": "m1", "output": '{"name": "Cy", "age": 1}'},
        {"model": "m2", "output": '{"name": "Di"}'},
    ]
    (out / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def test_a_clean_tree_exits_0(cli: Any, project: Path) -> None:
    result = cli("check", "out", "--schema", "schema.json", "--exclude", "*.jsonl")
    assert result.exit_code == 0


def test_a_violation_exits_1(cli: Any, project: Path) -> None:
    result = cli("check", "out", "--schema", "schema.json", "--field", "output")
    assert result.exit_code == 1


def test_the_failing_record_is_named_with_its_line(cli: Any, project: Path) -> None:
    result = cli("check", "out", "--schema", "schema.json", "--field", "output")
    assert (
        'out/log.jsonl:2: error schema.required: /: missing required property "age"'
        in result.stdout
    )


def test_the_summary_table_is_printed(cli: Any, project: Path) -> None:
    result = cli("check", "out", "--schema", "schema.json", "--field", "output", "-q")
    assert "schema-valid" in result.stdout


@pytest.mark.parametrize("fmt", ["json", "yaml", "junit", "github", "sarif"])
def test_every_format_writes_a_report_file(cli: Any, project: Path, fmt: str) -> None:
    result = cli("check", "out", "-s", "schema.json", "--field", "output", "-f", fmt, "-o", "r.out")
    text = (project / "r.out").read_text()
    assert (result.exit_code, len(text) > 0, result.stdout.strip() == "") == (1, True, True)


def test_junit_output_parses(cli: Any, project: Path) -> None:
    result = cli("check", "out", "-s", "schema.json", "--field", "output", "-f", "junit", "-q")
    assert len(ET.fromstring(result.stdout).findall("./testsuite/testcase")) == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["out", "-f", "pdf"], "--format must be one of text, json, yaml, junit, github"),
        (["nowhere"], "nowhere: no such file or directory"),
        (["out", "--schema", "missing.json"], "schema missing.json"),
        (["out", "--fail-on", "sometimes"], "--fail-on must be one of"),
        (["out", "--messages", "first"], "--messages must be last or all, not 'first'"),
        (["out", "--in-place", "--write-fixed", "x"], "either --in-place or --write-fixed"),
        ([], "no paths given"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    cli: Any, project: Path, args: list[str], message: str
) -> None:
    result = cli("check", "--no-config", *args)
    assert (result.exit_code, message in result.stderr) == (2, True)


def test_fail_on_repaired_fails_a_repaired_answer(cli: Any, project: Path) -> None:
    result = cli("check", "out/sub", "-s", "schema.json", "--fail-on", "repaired")
    assert result.exit_code == 1


def test_max_risk_lossless_fails_a_coercion(cli: Any, project: Path) -> None:
    result = cli("check", "out/sub", "-s", "schema.json", "--max-risk", "lossless")
    assert result.exit_code == 1


def test_a_baseline_lets_known_failures_pass(cli: Any, project: Path) -> None:
    args = ["check", "out", "-s", "schema.json", "--field", "output"]
    cli(*args, "-f", "json", "-o", "baseline.json")
    assert cli(*args, "--baseline", "baseline.json").exit_code == 0


def test_a_new_failure_fails_despite_the_baseline(cli: Any, project: Path) -> None:
    args = ["check", "out", "-s", "schema.json", "--field", "output"]
    cli(*args, "-f", "json", "-o", "baseline.json")
    (project / "out" / "new.txt").write_text('{"name": 1}')
    assert cli(*args, "--baseline", "baseline.json").exit_code == 1


def test_a_bad_baseline_is_a_usage_error(cli: Any, project: Path) -> None:
    (project / "b.json").write_text("[]")
    result = cli("check", "out", "--baseline", "b.json")
    assert (result.exit_code, "not an llmfix report" in result.stderr) == (2, True)


def test_group_by_prints_a_row_per_model(cli: Any, project: Path) -> None:
    result = cli(
        "check",
        "out/log.jsonl",
        "-s",
        "schema.json",
        "--field",
        "output",
        "--group-by",
        "model",
        "-q",
    )
    assert ("by model" in result.stdout, "m1" in result.stdout, "m2" in result.stdout) == (
        True,
        True,
        True,
    )


def test_stdin_is_checked(cli: Any, project: Path) -> None:
    result = cli(
        "check", "-", "-s", "schema.json", "-f", "json", "-q", input='{"name": "A", "age": 1}'
    )
    assert json.loads(result.stdout)["items"][0]["id"] == "<stdin>"


# ------------------------------------------------------------------------ fixes


def test_write_fixed_mirrors_the_tree_and_leaves_inputs_alone(cli: Any, project: Path) -> None:
    before = (project / "out" / "sub" / "fenced.md").read_text()
    cli("check", "out", "-s", "schema.json", "--field", "output", "--write-fixed", "fixed")
    fixed = json.loads((project / "fixed" / "out" / "sub" / "fenced.md").read_text())
    assert (fixed, (project / "out" / "sub" / "fenced.md").read_text()) == (
        {"name": "Bo", "age": 7},
        before,
    )


def test_write_fixed_copies_clean_files_unchanged(cli: Any, project: Path) -> None:
    cli("check", "out", "-s", "schema.json", "--field", "output", "--write-fixed", "fixed")
    assert (project / "fixed" / "out" / "log.jsonl").read_text() == (
        project / "out" / "log.jsonl"
    ).read_text()


def test_write_fixed_puts_repairs_back_into_jsonl_records(cli: Any, project: Path) -> None:
    (project / "out" / "log.jsonl").write_text(
        json.dumps({"output": "{'name': 'E', 'age': 2,}"}) + "\n"
    )
    cli(
        "check", "out/log.jsonl", "-s", "schema.json", "--field", "output", "--write-fixed", "fixed"
    )
    record = json.loads((project / "fixed" / "out" / "log.jsonl").read_text())
    assert json.loads(record["output"]) == {"name": "E", "age": 2}


def test_in_place_rewrites_only_repaired_files(cli: Any, project: Path) -> None:
    clean = project / "out" / "clean.txt"
    stamp = clean.stat().st_mtime_ns
    cli("check", "out", "-s", "schema.json", "--exclude", "*.jsonl", "--in-place")
    fixed = json.loads((project / "out" / "sub" / "fenced.md").read_text())
    assert (fixed, clean.stat().st_mtime_ns) == ({"name": "Bo", "age": 7}, stamp)


# ------------------------------------------------------------------------ config


CONFIG = """\
fail-on: invalid
checks:
  - files: "out/*.jsonl"
    field: output
    schema: schema.json
  - files: "out/**/*.md"
    schema: schema.json
"""


def test_a_config_with_checks_runs_with_no_paths(cli: Any, project: Path) -> None:
    (project / "llmfix.yaml").write_text(CONFIG)
    result = cli("check", "-f", "json", "-q")
    ids = [item["id"] for item in json.loads(result.stdout)["items"]]
    assert ids == ["out/log.jsonl:1", "out/log.jsonl:2", "out/sub/fenced.md"]


def test_a_flag_beats_the_config(cli: Any, project: Path) -> None:
    (project / "llmfix.yaml").write_text(CONFIG)
    assert cli("check", "out/sub", "--fail-on", "repaired", "-q").exit_code == 1


def test_an_unknown_config_key_is_a_usage_error(cli: Any, project: Path) -> None:
    (project / "llmfix.yaml").write_text("shema: schema.json\n")
    result = cli("check", "out")
    assert (result.exit_code, "did you mean 'schema'?" in result.stderr) == (2, True)


def test_config_command_shows_the_merged_settings(cli: Any, project: Path) -> None:
    (project / "llmfix.yaml").write_text(CONFIG)
    result = cli("config", "-f", "json")
    shown = json.loads(result.stdout)
    assert (shown["fail-on"], shown["format"], shown["checks"][0]["field"]) == (
        "invalid",
        "text",
        "output",
    )


def test_config_command_names_the_file(cli: Any, project: Path) -> None:
    (project / "llmfix.yaml").write_text(CONFIG)
    assert cli("config").stdout.startswith("# config file: llmfix.yaml\n")


# ------------------------------------------------------------------- the samples


def test_the_samples_check_reports_every_kind(cli: Any) -> None:
    result = cli(
        "check",
        str(SAMPLES),
        "--schema",
        str(SAMPLES / "triage.schema.json"),
        "--tools",
        str(SAMPLES / "tools.json"),
        "-f",
        "json",
        "-q",
    )
    kinds = {item["kind"] for item in json.loads(result.stdout)["items"]}
    assert kinds == {
        "text",
        "record",  # a JSONL line that is not JSON
        "batch-error",  # a failed batch request
        "chat-completion",
        "tool-call",
        "response",
        "anthropic-message",
        "transcript",
    }


# --------------------------------------------------------- the installed program


def llmfix() -> list[str]:
    exe = shutil.which("llmfix", path=str(Path(sys.executable).parent))
    return [exe] if exe else [sys.executable, "-m", "llmfix"]


def test_installed_cli_checks_a_tree_of_thousands_of_files(tmp_path: Path) -> None:
    variants = [
        '{"name": "Ada", "age": 36}',
        'Here you go:\n```json\n{"name": "Bo", "age": "7"}\n```',
        "{'name': 'Cy', 'age': 1,}",
        '{"name": "Di"}',
    ]
    for i in range(3000):
        folder = tmp_path / "tree" / f"d{i % 30:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"a{i:04d}.txt").write_text(variants[i % 4])
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("LLMFIX_CONFIG", None)
    start = time.perf_counter()
    proc = subprocess.run(
        [*llmfix(), "check", "tree", "-s", "schema.json", "-f", "json", "-o", "r.json", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    elapsed = time.perf_counter() - start
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert (proc.returncode, summary["items"], summary["status"]["invalid"], elapsed < 30) == (
        1,
        3000,
        750,
        True,
    )


# ---------------------------------------------------------------- repair --jsonl


def test_repair_jsonl_writes_one_result_per_record(cli: Any) -> None:
    records = [{"output": "{'a': 1,}"}, {"output": "no json here"}, {"other": 1}]
    text = "".join(json.dumps(r) + "\n" for r in records) + "{broken\n"
    result = cli("repair", "--jsonl", "--field", "output", input=text)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["line"], r["status"], r["value"]) for r in lines] == [
        (1, "repaired", {"a": 1}),
        (2, "unparseable", None),
        (3, "error", None),
        (4, "error", None),
    ]


def test_repair_jsonl_exits_1_when_a_record_fails(cli: Any) -> None:
    result = cli("repair", "--jsonl", "--field", "output", input='{"output": "nothing"}\n')
    assert result.exit_code == 1


def test_repair_jsonl_flushes_each_result_as_its_record_arrives() -> None:
    command = [*llmfix(), "repair", "--jsonl", "--field", "output"]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(json.dumps({"output": '{"a": [1, 2,]}'}) + "\n")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())  # arrives while stdin is still open
        proc.stdin.close()
        proc.wait(timeout=30)
    assert (first["status"], first["value"]) == ("repaired", {"a": [1, 2]})


# -- issue 20: number texts and where schema errors point ---------------------------------


def test_check_in_place_and_json_report_keep_number_texts(cli: Any, project: Path) -> None:
    answer = project / "nums.txt"
    answer.write_text('Sure: {"name": "Ada", "age": 36, "score": 1e5, "huge": 1e400,}')
    cli("check", "nums.txt", "-f", "json", "-o", "report.json")
    report = (project / "report.json").read_text()
    assert '"score": 1e5' in report
    assert '"huge": 1e400' in report
    assert "Infinity" not in report
    cli("check", "nums.txt", "--in-place")
    written = answer.read_text()
    assert '"score": 1e5' in written
    assert '"huge": 1e400' in written


PRETTY_ANSWER = '{\n  "name": "Ann",\n  "age": "x",\n  "tags": [\n    1,\n    "b"\n  ]\n}\n'
PRETTY_SCHEMA = {
    "type": "object",
    "properties": {
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}


@pytest.fixture
def pretty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.json").write_text(PRETTY_ANSWER)
    (tmp_path / "s.json").write_text(json.dumps(PRETTY_SCHEMA))
    return tmp_path


def test_schema_errors_in_a_pretty_printed_file_point_at_their_values_in_github(
    cli: Any, pretty: Path
) -> None:
    out = cli("check", "a.json", "-s", "s.json", "--no-schema-repair", "-f", "github").stdout
    assert "::error file=a.json,line=3,col=10,title=llmfix schema.type::" in out
    assert "::error file=a.json,line=5,col=5,title=llmfix schema.type::" in out
    assert "line=1,col=1" not in out


def test_schema_errors_in_a_pretty_printed_file_point_at_their_values_in_junit_and_text(
    cli: Any, pretty: Path
) -> None:
    junit = cli("check", "a.json", "-s", "s.json", "--no-schema-repair", "-f", "junit").stdout
    assert "a.json:3:10: schema.type: /age" in junit
    assert "a.json:5:5: schema.type: /tags/0" in junit
    text = cli("check", "a.json", "-s", "s.json", "--no-schema-repair").output
    assert "a.json:3:10: error schema.type: /age" in text


def test_schema_errors_in_a_pretty_printed_file_point_at_their_values_in_sarif(
    cli: Any, pretty: Path
) -> None:
    sarif = json.loads(
        cli("check", "a.json", "-s", "s.json", "--no-schema-repair", "-f", "sarif").stdout
    )
    regions = sorted(
        (r["locations"][0]["physicalLocation"]["region"]["startLine"], r["ruleId"])
        for r in sarif["runs"][0]["results"]
    )
    assert regions == [(3, "schema.type"), (5, "schema.type")]


# ------------------------------------------------------------------ issue 20


FRACTION_SCHEMA = {"type": "object", "properties": {"s": {"type": "integer", "maximum": 5}}}


def _fraction_project(project: Path) -> None:
    (project / "fraction.json").write_text(json.dumps(FRACTION_SCHEMA))
    (project / "a.txt").write_text('{"s": "4/5"}')
    records = [{"output": '{"s": "4/5"}'}, {"output": '{"s": "4",}'}]
    (project / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_write_fixed_never_contains_a_guess_that_max_risk_rejected(cli: Any, project: Path) -> None:
    _fraction_project(project)
    args = ["a.txt", "log.jsonl", "-s", "fraction.json", "--field", "output"]
    cli("check", *args, "--max-risk", "safe", "--write-fixed", "fixed")
    raw = (project / "fixed" / "a.txt").read_text()
    records = [
        json.loads(line) for line in (project / "fixed" / "log.jsonl").read_text().splitlines()
    ]
    assert (raw, records[0]["output"], json.loads(records[1]["output"])) == (
        '{"s": "4/5"}',
        '{"s": "4/5"}',
        {"s": 4},
    )


def test_in_place_never_writes_a_guess_that_max_risk_rejected(cli: Any, project: Path) -> None:
    _fraction_project(project)
    result = cli("check", "a.txt", "-s", "fraction.json", "--max-risk", "safe", "--in-place")
    assert (result.exit_code, (project / "a.txt").read_text()) == (1, '{"s": "4/5"}')


def test_check_max_risk_applies_no_schema_rule_above_it_like_repair(
    cli: Any, project: Path
) -> None:
    _fraction_project(project)
    result = cli("check", "a.txt", "-s", "fraction.json", "--max-risk", "safe", "-f", "json")
    [item] = json.loads(result.stdout)["items"]
    assert (item["status"], item["value"]) == ("invalid", {"s": "4/5"})


@pytest.mark.parametrize("spelling", ["enum-case", "enum_case"])
def test_disable_rule_accepts_both_spellings_in_check(
    cli: Any, project: Path, spelling: str
) -> None:
    schema = {"type": "object", "properties": {"s": {"enum": ["in_progress"]}}}
    (project / "enum.json").write_text(json.dumps(schema))
    (project / "e.txt").write_text('{"s": "IN PROGRESS"}')
    result = cli(
        "check", "e.txt", "-s", "enum.json", "--disable-rule", spelling,
        "--disable-rule", "enum_nearest",
    )  # fmt: skip
    assert result.exit_code == 1  # both rules are off, so the value stays invalid


def test_disable_rule_rejects_an_unknown_rule_in_check(cli: Any, project: Path) -> None:
    result = cli("check", "out", "--disable-rule", "enum-cse")
    assert (result.exit_code, "did you mean 'enum_case'" in result.stderr) == (2, True)


def test_config_options_accept_both_rule_spellings(cli: Any, project: Path) -> None:
    schema = {"type": "object", "properties": {"s": {"enum": ["in_progress"]}}}
    (project / "enum.json").write_text(json.dumps(schema))
    (project / "e.txt").write_text('{"s": "IN PROGRESS"}')
    (project / "llmfix.yaml").write_text("options: {disabled-rules: [enum-case, enum-nearest]}\n")
    assert cli("check", "e.txt", "-s", "enum.json").exit_code == 1


def test_zero_matched_files_exit_2_naming_the_paths_and_globs(cli: Any, project: Path) -> None:
    result = cli("check", "out", "--include", "*.csv", "--exclude", "old/**")
    line = "no files to check in out (--include '*.csv', --exclude 'old/**')"
    assert (result.exit_code, line in result.stderr, len(result.stderr.splitlines())) == (
        2,
        True,
        1,
    )


def test_zero_items_in_empty_files_exit_2(cli: Any, project: Path) -> None:
    (project / "empty.jsonl").write_text("\n\n")
    result = cli("check", "empty.jsonl")
    assert (
        result.exit_code,
        "no items (the files are empty) to check in empty.jsonl" in result.stderr,
    ) == (2, True)


def test_allow_empty_lets_a_run_with_nothing_to_check_pass(cli: Any, project: Path) -> None:
    (project / "empty").mkdir()
    assert cli("check", "empty", "--allow-empty").exit_code == 0


def _readme_read_table_suffixes() -> set[str]:
    """The suffixes the docs' inputs page names (written from llmfix.inputs' tables)."""
    import re

    from scripts.docs_reference import inputs_page

    text = inputs_page()
    table = text[text.index("| suffix |") : text.index("\n\n", text.index("| suffix |"))]
    firsts = [row.split("|")[1] for row in table.splitlines()[2:]]
    return {s for cell in firsts for s in re.findall(r"`(\.[a-z]+)`", cell)}


def test_the_pre_commit_hook_passes_every_kind_of_file_check_reads() -> None:
    import re

    import yaml

    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    suffixes = _readme_read_table_suffixes()
    missed = sorted(s for s in suffixes if not re.search(hook["files"], f"evals/answer{s}"))
    assert (len(suffixes) >= 5, missed) == (True, [])


def test_quiet_json_report_to_a_file_still_prints_the_summary(cli: Any, project: Path) -> None:
    result = cli(
        "check", "out", "-s", "schema.json", "--field", "output", "-q", "-f", "json", "-o", "r.json"
    )
    assert ("schema-valid" in result.stderr, "4 items in" in result.stderr) == (True, True)


def test_the_closing_line_says_1_item_not_1_items(cli: Any, project: Path) -> None:
    result = cli("check", "out/clean.txt", "-s", "schema.json")
    assert ("1 item in" in result.stdout, "1 items" in result.stdout) == (True, False)


def test_the_progress_bar_counts_records_not_files(tmp_path: Path) -> None:
    import pty

    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"output": '{"a": 1}'}) + "\n" for _ in range(3000)))
    exe = shutil.which("llmfix") or str(Path(sys.executable).parent / "llmfix")
    parent, child = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "TERM": "xterm"}
    env.pop("LLMFIX_CONFIG", None)
    proc = subprocess.Popen(
        [exe, "check", str(log), "--field", "output", "--no-config"],
        stdout=subprocess.DEVNULL,
        stderr=child,
        env=env,
        cwd=tmp_path,
    )
    os.close(child)
    seen = b""
    while True:
        try:
            block = os.read(parent, 65536)
        except OSError:
            break
        if not block:
            break
        seen += block
    proc.wait(timeout=60)
    os.close(parent)
    import re

    shown = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", seen)
    assert b"3000/3000 records, 3,000 items" in shown


def test_report_writes_more_formats_from_one_run(cli: Any, project: Path) -> None:
    args = ["check", "out", "-s", "schema.json", "--field", "output", "-f", "github"]
    result = cli(*args, "--report", "r.sarif", "--report", "r.xml", "--report", "r.json")
    sarif = json.loads((project / "r.sarif").read_text())
    junit = ET.fromstring((project / "r.xml").read_text())
    report = json.loads((project / "r.json").read_text())
    assert (
        result.exit_code,
        result.stdout.count("::error "),
        len(sarif["runs"][0]["results"]),
        len(junit.findall("./testsuite/testcase")),
        report["summary"]["items"],
    ) == (1, 1, 1, 4, 4)


def test_report_with_an_unknown_suffix_is_a_usage_error(cli: Any, project: Path) -> None:
    result = cli("check", "out", "--report", "r.txt")
    assert (result.exit_code, "--report r.txt: the file name must end in" in result.stderr) == (
        2,
        True,
    )


def test_a_baseline_keeps_known_failures_known_after_a_line_is_inserted(
    cli: Any, project: Path
) -> None:
    log = project / "out" / "log.jsonl"
    args = ["check", "out/log.jsonl", "-s", "schema.json", "--field", "output"]
    cli(*args, "-f", "baseline", "-o", "known.json")
    log.write_text(
        json.dumps({"model": "m0", "output": '{"name": "Z", "age": 9}'}) + "\n" + log.read_text()
    )
    assert cli(*args, "--baseline", "known.json").exit_code == 0


def test_the_baseline_file_holds_only_failing_items(cli: Any, project: Path) -> None:
    args = ["check", "out", "-s", "schema.json", "--field", "output"]
    cli(*args, "-f", "baseline", "-o", "known.json")
    known = json.loads((project / "known.json").read_text())
    assert [entry["id"] for entry in known["items"]] == ["out/log.jsonl:2"]


@pytest.fixture
def evals(project: Path) -> Path:
    rows = [
        {
            "id": i,
            "model": f"m{i % 2}",
            "prompt": "p",
            "output": json.dumps({"name": "A", "age": i}),
        }
        for i in range(6)
    ]
    path = project / "evals.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (
            ["--field", "outptu"],
            "llmfix: hint: --field outptu: 6 of 6 records have no such field "
            "(did you mean --field output?)",
        ),
        (
            ["--field", "output", "--group-by", "modle"],
            "llmfix: hint: --group-by modle: 6 of 6 records have no such field "
            "(did you mean --group-by model?)",
        ),
        (
            [],
            "llmfix: hint: every record has the fields id, model, output, prompt; 'output' "
            "holds what looks like the answer: to check only it, pass --field output",
        ),
    ],
)
def test_a_field_typo_gets_the_closest_field_seen_in_the_records(
    cli: Any, evals: Path, args: list[str], hint: str
) -> None:
    result = cli("check", "evals.jsonl", "-q", *args)
    assert hint in result.stderr.splitlines()


def test_a_right_field_gets_no_hint(cli: Any, evals: Path) -> None:
    result = cli("check", "evals.jsonl", "-q", "--field", "output", "--group-by", "model")
    assert "hint" not in result.stderr


def test_the_runs_own_files_are_not_checked_under_any_name(cli: Any, project: Path) -> None:
    (project / "out" / "sub" / "schema.json").write_text('{"name": "Ed", "age": 2}')
    (project / "out" / "link.json").symlink_to(project / "schema.json")
    (project / "out" / "schema.json").symlink_to(project / "out" / "clean.txt")
    args = ("check", ".", "--schema", "schema.json", "-f", "json", "-o", "out/report.json")
    cli(*args, "--follow-symlinks")
    report = json.loads((project / "out" / "report.json").read_text())
    checked = sorted({item["source"] for item in report["items"]})
    # schema.json, out/link.json (its link) and out/report.json are the run's own.
    assert checked == [
        "out/clean.txt",
        "out/log.jsonl",
        "out/schema.json",
        "out/sub/fenced.md",
        "out/sub/schema.json",
    ]


def _report_without_timings(path: Path) -> str:
    """A JSON report's text with the run's clock readings (seconds, timings) blanked."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r'"seconds": [0-9.e-]+', '"seconds": 0', text)
    text = re.sub(r'"finished": "[^"]*"', '"finished": ""', text)
    return re.sub(r'"timings": \{[^{}]*\}', '"timings": {}', text)


def test_the_json_report_is_what_the_general_writer_gives_for_awkward_files(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import llmfix.jsontext

    monkeypatch.chdir(tmp_path)
    (tmp_path / "schema.json").write_text(json.dumps({"type": "object"}))
    answers = tmp_path / "answers"
    answers.mkdir()
    files = {
        "duplicate.json": b'{"a": 1, "a": 2}',
        "numbers.json": b'{"big": 1e400, "price": 1.50, "tiny": 1e-400, "n": [1e5, -0.0]}',
        "bom.json": b'\xef\xbb\xbf{"name": "Ada"}',
        "utf16.json": '{"name": "\u00e9"}'.encode("utf-16"),
        "invalid_utf8.txt": b'{"name": "caf\xe9", "ok": true}',
        "empty.txt": b"",
        "fenced.md": b'Sure:\n```json\n{"a": \'x\', "b": [1, 2,],}\n```',
        "unicode.json": '{"name": "\u00e9\u2028\U0001f600", "ctl": "\\u0001"}'.encode(),
        "clean.json": b'{\n  "list": [],\n  "map": {},\n  "nested": [[{"x": null}]]\n}',
    }
    for name, data in files.items():
        (answers / name).write_bytes(data)
    args = ("check", "answers", "-s", "schema.json", "-f", "json", "--allow-empty")
    first = cli(*args, "-o", "fast.json")
    monkeypatch.setattr(llmfix.jsontext, "_indented", lambda *args: None)
    second = cli(*args, "-o", "general.json")
    assert first.exit_code == second.exit_code == 1  # the empty file is unparseable
    fast = _report_without_timings(tmp_path / "fast.json")
    assert fast == _report_without_timings(tmp_path / "general.json")
    report = json.loads(fast)
    assert len(report["items"]) == len(files)
    assert '"big": 1e400' in fast
    assert '"price": 1.50' in fast
