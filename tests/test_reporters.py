"""Reporters: every format, parsed the way its consumer parses it."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml

from llmfix import codes
from llmfix.batch.core import Profile
from llmfix.batch.judge import Baseline, BatchSummary, Checked, judge
from llmfix.batch.pool import run_items
from llmfix.errors import ConfigError
from llmfix.inputs import Item, ReadOptions, items_from_text
from llmfix.reporters import FORMATS, reporter_class
from llmfix.reporters.base import ReportOptions, item_record, locate
from llmfix.reporters.github import escape_property, workflow_command
from llmfix.schema.load import schema_from_value
from llmfix.schema.validate import SchemaValidator

DATA = Path(__file__).resolve().parent / "data"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
RAW = 'Here:\n```json\n{"name": "Ada", "age": 3,}\n```\n'  # repaired, line 3
INVALID = 'line one\n{"name": "Bo"}'  # invalid: missing age
BROKEN_RECORD = "{nope"


def run(items: list[Item], baseline: Baseline | None = None, fail_on: Any = "invalid") -> Any:
    profiles = {"": Profile(SchemaValidator(schema_from_value(SCHEMA)))}
    summary = BatchSummary()
    checked = []
    for outcome in run_items(items, profiles):
        judged = judge(outcome, fail_on, None, baseline)
        summary.add(judged)
        checked.append(judged)
    return checked, summary


def raw(name: str, text: str) -> Item:
    [item] = items_from_text(text, name, ReadOptions(), "text")
    return item


def jsonl(name: str, text: str, **options: Any) -> list[Item]:
    return list(items_from_text(text, name, ReadOptions(**options), "jsonl"))


@pytest.fixture
def mixed() -> list[Item]:
    records = json.dumps({"output": "{'name': 'Cy'}"}) + "\n" + BROKEN_RECORD + "\n"
    return [
        raw("answers/ok.md", RAW),
        raw("answers/bad.txt", INVALID),
        *jsonl("logs/run.jsonl", records, field="output"),
    ]


def render(fmt: str, items: list[Item], **options: Any) -> str:
    baseline = options.pop("baseline", None)
    checked, summary = run(items, baseline, options.pop("fail_on", "invalid"))
    out = io.StringIO()
    reporter = reporter_class(fmt)(out, ReportOptions(**options))
    for c in checked:
        reporter.add(c)
    reporter.finish(summary)
    return out.getvalue()


def test_the_registry_feeds_every_format() -> None:
    assert FORMATS == ("text", "json", "yaml", "junit", "github", "sarif", "html", "baseline")


def test_an_unknown_format_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="expected one of"):
        reporter_class("pdf")


# ------------------------------------------------------------------- locations


def test_a_raw_text_problem_maps_to_the_file_line_and_column() -> None:
    [checked], _ = run([raw("a.txt", RAW)])
    comma = next(d for d in checked.outcome.diagnostics if d.code == "parse.trailing_comma")
    assert str(locate(checked.item, comma, checked.outcome.anchor)) == "a.txt:3:25"


def test_a_schema_error_points_where_the_value_starts() -> None:
    [checked], _ = run([raw("b.txt", INVALID)])
    [error] = checked.outcome.result.errors  # type: ignore[union-attr]
    assert str(locate(checked.item, error, checked.outcome.anchor)) == "b.txt:2:1"


def test_a_problem_inside_a_json_string_points_at_the_record_line() -> None:
    items = jsonl(
        "r.jsonl", "\n" + json.dumps({"output": 'x\n{"name": "Ada", "age": 1,}'}), field="output"
    )
    [checked], _ = run(items)
    comma = next(d for d in checked.outcome.diagnostics if d.code == "parse.trailing_comma")
    location = locate(checked.item, comma, checked.outcome.anchor)
    assert (str(location), str(location.in_text)) == ("r.jsonl:2", "2:25")


# ------------------------------------------------------------------- json/yaml


def test_json_report_has_version_summary_and_every_item(mixed: list[Item]) -> None:
    report = json.loads(render("json", mixed))
    assert (report["version"], report["summary"]["items"], len(report["items"])) == ("1", 4, 4)


def test_json_report_items_carry_id_status_value_and_located_diagnostics(
    mixed: list[Item],
) -> None:
    first = json.loads(render("json", mixed))["items"][0]
    comma = next(d for d in first["diagnostics"] if d["code"] == "parse.trailing_comma")
    assert (first["id"], first["status"], first["value"], comma["location"]) == (
        "answers/ok.md",
        "repaired",
        {"name": "Ada", "age": 3},
        {"file": "answers/ok.md", "line": 3, "column": 25},
    )


def test_json_report_is_laid_out_like_json_dumps(mixed: list[Item]) -> None:
    text = render("json", mixed)
    assert text == json.dumps(json.loads(text), ensure_ascii=False, indent=2) + "\n"


def test_json_report_of_no_items_is_valid_json() -> None:
    assert json.loads(render("json", []))["items"] == []


def test_yaml_report_holds_what_the_json_report_holds(mixed: list[Item]) -> None:
    from_yaml = yaml.safe_load(render("yaml", mixed))
    from_json = json.loads(render("json", mixed))
    for report in (from_yaml, from_json):
        report["summary"].pop("seconds")
        for entry in report["items"]:
            entry.pop("timings", None)
    assert from_yaml == from_json


def test_item_record_marks_a_baselined_failure() -> None:
    [checked], _ = run([raw("b.txt", INVALID)])
    known = Checked(checked.outcome, checked.failures, baselined=True)
    assert (item_record(known)["failed"], item_record(known)["baselined"]) == (False, True)


def test_item_record_carries_what_the_result_dict_carries(mixed: list[Item]) -> None:
    checked, _ = run(mixed)
    for judged in checked:
        record = item_record(judged)
        result = judged.outcome.result
        if result is None:
            assert "patch" not in record
            continue
        full = result.to_dict()
        assert (record["status"], record["value"], record["risk"]) == (
            full["status"],
            full["value"],
            full["risk"],
        )
        codes = [d["code"] for d in record["diagnostics"]]  # the item's own ones first
        assert codes[len(codes) - len(full["diagnostics"]) :] == [
            d["code"] for d in full["diagnostics"]
        ]
        after = list(full)[list(full).index("diagnostics") + 1 :]
        assert list(record)[list(record).index("diagnostics") + 1 :] == after
        assert {key: record[key] for key in after} == {key: full[key] for key in after}


# ------------------------------------------------------------------------ junit


def test_junit_is_one_testcase_per_item(mixed: list[Item]) -> None:
    root = ET.fromstring(render("junit", mixed))
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == [
        "answers/ok.md",
        "answers/bad.txt",
        "logs/run.jsonl:1",
        "logs/run.jsonl:2",
    ]


def test_junit_names_a_case_by_its_id_and_its_file_by_the_display_path() -> None:
    items = [raw("./answers/ok.txt", '{"name": "A", "age": 1}'), raw("a&b <c>.txt", "{}")]
    items += jsonl("./logs/run.jsonl", json.dumps({"output": "{}"}) + "\n", field="output")
    cases = ET.fromstring(render("junit", items)).findall("./testsuite/testcase")
    found = [(c.get("classname"), c.get("name"), c.get("file"), c.get("line")) for c in cases]
    assert found == [
        ("answers/ok.txt", "./answers/ok.txt", "answers/ok.txt", "1"),
        ("a&b <c>.txt", "a&b <c>.txt", "a&b <c>.txt", "1"),
        ("logs/run.jsonl", "./logs/run.jsonl:1", "logs/run.jsonl", "1"),
    ]


def test_junit_counts_failures_and_errors(mixed: list[Item]) -> None:
    suite = ET.fromstring(render("junit", mixed)).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "1")


def test_junit_failures_carry_the_diagnostics(mixed: list[Item]) -> None:
    root = ET.fromstring(render("junit", mixed))
    failure = root.find("./testsuite/testcase[@name='answers/bad.txt']/failure")
    assert failure is not None
    assert (failure.get("type"), failure.text) == (
        "schema.required",
        'answers/bad.txt:2:1: schema.required: /: missing required property "age"',
    )


def test_junit_shows_control_characters_xml_cannot_hold_as_escapes() -> None:
    text = render("junit", [raw("ctl\x01.txt", '{"name": "\x02"}')])
    name = ET.fromstring(text).find("./testsuite/testcase").get("name")  # type: ignore[union-attr]
    assert name == "ctl\\x01.txt"


def test_junit_marks_baselined_failures_skipped() -> None:
    items = [raw("b.txt", INVALID)]
    suite = ET.fromstring(render("junit", items, baseline=known(items))).find("testsuite")
    assert suite is not None
    assert (suite.get("skipped"), suite.get("failures")) == ("1", "0")


# ----------------------------------------------------------------------- github


def test_github_lines_are_exact(mixed: list[Item]) -> None:
    lines = render("github", mixed).splitlines()
    assert lines == [
        "::error file=answers/bad.txt,line=2,col=1,title=llmfix schema.required::"
        '/: missing required property "age"',
        "::error file=logs/run.jsonl,line=1,title=llmfix schema.required::"
        '/: missing required property "age" [text 1:1]',
        "::error file=logs/run.jsonl,line=2,title=llmfix input.bad_record::"
        "line 2 is not a JSON record: "
        "Expecting property name enclosed in double quotes (column 2)",
        "::notice title=llmfix check::4 items, 1 not checked, 2 invalid, 1 repaired, 3 failed",
    ]


def test_github_escapes_messages_and_properties() -> None:
    line = workflow_command("error", "a%b\nc", file="x,y:z.txt", line=1)
    assert line == "::error file=x%2Cy%3Az.txt,line=1::a%25b%0Ac"


def test_github_property_escape() -> None:
    assert escape_property("a:b,c%\r") == "a%3Ab%2Cc%25%0D"


def test_github_reports_the_repairs_that_fail_a_strict_gate() -> None:
    lines = render("github", [raw("a.txt", RAW)], fail_on="repaired").splitlines()
    assert lines[0] == (
        "::error file=a.txt,line=3,col=25,title=llmfix parse.trailing_comma::"
        "trailing comma before '}' (status repaired (--fail-on repaired))"
    )


# ------------------------------------------------------------------------ sarif


@pytest.fixture(scope="module")
def sarif_validator() -> Any:
    """The OASIS SARIF 2.1.0 schema (errata01; tests/data/README.md says where it is from)."""
    import jsonschema

    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft4Validator(schema)


def test_sarif_is_valid_against_the_sarif_schema(mixed: list[Item], sarif_validator: Any) -> None:
    log = json.loads(render("sarif", mixed))
    assert [e.message for e in sarif_validator.iter_errors(log)] == []


def render_with_baseline(fmt: str, items: list[Item], baseline: Baseline) -> str:
    checked, summary = run(items, baseline)
    out = io.StringIO()
    reporter = reporter_class(fmt)(out, ReportOptions(baseline=True))
    for c in checked:
        reporter.add(c)
    reporter.finish(summary)
    return out.getvalue()


def known(items: list[Item]) -> Baseline:
    checked, _ = run(items)
    return Baseline.from_report({"items": [item_record(c) for c in checked]})


def test_sarif_with_a_baseline_is_valid(sarif_validator: Any) -> None:
    items = [raw("b.txt", INVALID), raw("c.txt", '{"name": "x", "age": "old"}')]
    log = json.loads(render_with_baseline("sarif", items, known(items[:1])))
    assert [e.message for e in sarif_validator.iter_errors(log)] == []


def test_sarif_rule_ids_are_diagnostic_codes(mixed: list[Item]) -> None:
    run_ = json.loads(render("sarif", mixed))["runs"][0]
    rules = [rule["id"] for rule in run_["tool"]["driver"]["rules"]]
    assert sorted(rules) == ["input.bad_record", "schema.required"]


def test_sarif_results_point_at_file_line_and_column(mixed: list[Item]) -> None:
    result = json.loads(render("sarif", mixed))["runs"][0]["results"][0]
    location = result["locations"][0]["physicalLocation"]
    assert (result["ruleId"], location["artifactLocation"]["uri"], location["region"]) == (
        "schema.required",
        "answers/bad.txt",
        {"startLine": 2, "startColumn": 1},
    )


def test_sarif_baseline_state_says_new_or_unchanged() -> None:
    items = [raw("b.txt", INVALID), raw("c.txt", '{"name": "x", "age": "old"}')]
    results = json.loads(render_with_baseline("sarif", items, known(items[:1])))
    results = results["runs"][0]["results"]
    assert [r["baselineState"] for r in results] == ["unchanged", "new"]


# ------------------------------------------------------------------------- text


def text_report(items: list[Item], verbosity: int = 0, group: bool = False) -> str:
    from rich.console import Console

    from llmfix.reporters.text import TextReporter

    checked, summary = run(items)
    if group:
        summary = BatchSummary(groups={})
        for c in checked:
            summary.add(c)
    buffer = io.StringIO()
    reporter = TextReporter(
        buffer, ReportOptions(verbosity=verbosity), Console(file=buffer, width=100)
    )
    for c in checked:
        reporter.add(c)
    reporter.finish(summary)
    return buffer.getvalue()


def test_text_prints_failing_items_with_file_locations(mixed: list[Item]) -> None:
    out = text_report(mixed)
    assert 'answers/bad.txt:2:1: error schema.required: /: missing required property "age"' in out


def test_text_leaves_passing_items_out_by_default(mixed: list[Item]) -> None:
    assert "answers/ok.md" not in text_report(mixed)


@pytest.mark.parametrize("row", ["valid as-is", "repaired", "parsed", "schema-valid", "failed"])
def test_text_summary_has_the_rows(mixed: list[Item], row: str) -> None:
    assert row in text_report(mixed, verbosity=-1)


def test_text_summary_lists_repairs_by_rule(mixed: list[Item]) -> None:
    assert "parse.trailing_comma" in text_report(mixed, verbosity=-1)


def test_text_group_table_has_a_row_per_group() -> None:
    items = jsonl(
        "m.jsonl",
        '{"model": "m-one", "output": "{}"}\n{"model": "m-two", "output": "{}"}\n',
        field="output",
        group_by="model",
    )
    out = text_report(items, verbosity=-1, group=True)
    assert ("m-one" in out, "m-two" in out) == (True, True)


def test_error_items_are_reported_not_raised() -> None:
    bad = Item(
        id="x:1",
        source="x",
        line=1,
        text="",
        kind="record",
        error=codes.INPUT_BAD_RECORD.at("no"),
    )
    assert "input.bad_record" in text_report([bad])


def _group_row(out: str, name: str) -> list[str]:
    line = next(ln for ln in out.splitlines() if ln.strip().startswith(name))
    return line.replace("│", " ").split()


def test_group_table_counts_unparseable_and_not_checked_apart() -> None:
    log = '{"output": "no json here"}\n{nope\n{nope\n{"model": "m", "output": "{}"}\n'
    items = jsonl("m.jsonl", log, field="output", group_by="model")
    out = text_report(items, verbosity=-1, group=True)
    # columns: group, items, valid, extr., repd., inval., unpars., n/c, ...
    row = _group_row(out, "(none)")
    assert (row[1], row[6], row[7], "n/c" in out) == ("3", "1", "2", True)


# ------------------------------------------------------------------ issue 20


BATCH_LINE = json.dumps(
    {
        "custom_id": "req-7",
        "response": {
            "status_code": 200,
            "body": {"choices": [{"message": {"role": "assistant", "content": '{"name": "Q"}'}}]},
        },
    }
)


def test_github_annotations_do_not_repeat_the_item_id_but_name_the_message() -> None:
    [line, _] = render("github", jsonl("logs/batch.jsonl", BATCH_LINE + "\n")).splitlines()
    assert line == (
        "::error file=logs/batch.jsonl,line=1,title=llmfix schema.required::"
        '/: missing required property "age" [text 1:1] ([req-7]#msg0)'
    )


def test_github_max_annotations_holds_the_rest_back_and_says_how_many(
    mixed: list[Item],
) -> None:
    lines = render("github", mixed, max_annotations=1).splitlines()
    assert (len([ln for ln in lines if ln.startswith("::error")]), lines[1]) == (
        1,
        "::warning title=llmfix check::2 more problems not annotated (--max-annotations 1)",
    )


def test_sarif_results_of_one_item_never_share_a_fingerprint() -> None:
    two_missing = raw("answers/empty.txt", "{}")  # name and age missing: same code, pointer
    results = json.loads(render("sarif", [two_missing]))["runs"][0]["results"]
    prints = [r["partialFingerprints"]["llmfixItem/v2"] for r in results]
    assert (len(prints), len(set(prints))) == (2, 2)


def test_sarif_fingerprints_survive_a_line_inserted_above() -> None:
    record = json.dumps({"output": '{"name": "Q"}'})
    before = render("sarif", jsonl("l.jsonl", record + "\n", field="output"))
    valid = json.dumps({"output": '{"name": "A", "age": 1}'})
    after = render("sarif", jsonl("l.jsonl", valid + "\n" + record + "\n", field="output"))
    first = json.loads(before)["runs"][0]["results"][0]["partialFingerprints"]
    later = [r["partialFingerprints"] for r in json.loads(after)["runs"][0]["results"]]
    assert first in later


def test_sarif_uris_are_relative_to_the_repository_root_with_a_base_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sarif_validator: Any
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    log = json.loads(render("sarif", [raw("../answers/bad file.txt", INVALID)]))
    run_ = log["runs"][0]
    location = run_["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert (location, run_["originalUriBaseIds"], list(sarif_validator.iter_errors(log))) == (
        {"uri": "answers/bad%20file.txt", "uriBaseId": "%SRCROOT%"},
        {"%SRCROOT%": {"uri": tmp_path.resolve().as_uri() + "/"}},
        [],
    )


def test_sarif_a_file_outside_the_repository_gets_an_absolute_uri(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "repo")
    outside = str(tmp_path / "elsewhere" / "a.txt")
    log = json.loads(render("sarif", [raw(outside, INVALID)]))
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": Path(outside).resolve().as_uri()}


def test_the_baseline_format_keeps_only_failing_items_by_key(mixed: list[Item]) -> None:
    written = json.loads(render("baseline", mixed))
    keys = [entry["key"] for entry in written["items"]]
    assert (len(keys), keys[0], written["items"][0]["diagnostics"]) == (
        3,
        "answers/bad.txt",
        [{"code": "schema.required", "severity": "error", "pointer": ""}],
    )


def test_a_written_baseline_makes_the_same_run_pass(mixed: list[Item]) -> None:
    baseline = Baseline.from_report(json.loads(render("baseline", mixed)))
    checked, _ = run(mixed, baseline)
    assert [c.failed for c in checked] == [False, False, False, False]


@pytest.mark.parametrize("fmt", ["json", "junit", "github", "sarif", "text", "baseline"])
def test_a_batch_custom_id_appears_in_every_report(fmt: str) -> None:
    assert "req-7" in render(fmt, jsonl("logs/batch.jsonl", BATCH_LINE + "\n"))
