"""What llmfix prints from its input cannot act on the reader, and reports count every status.

Issue 27.13: file names, JSON keys, ``custom_id``\\ s and ``--group-by`` values holding ESC/OSC
sequences, CR/LF (a GitHub workflow command on a line of its own) or bidi overrides are
printed as visible escapes, in every sink. Issue 28.7: every status of the model appears in
every reporter, and the columns add up. Issues 28.10-28.12: baseline keys do not depend on
how the path is typed; writing a baseline exits 0; known failures are one line unless -v.
Issue 28.14: repair's counts and places say what check says.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from llmfix import codes
from llmfix.batch.core import Outcome, Profile
from llmfix.batch.judge import BatchSummary, Checked, judge
from llmfix.batch.pool import run_items
from llmfix.inputs import Item, ReadOptions, items_from_text
from llmfix.model import Status
from llmfix.reporters import reporter_class
from llmfix.reporters.base import STATUSES, ReportOptions
from llmfix.reporters.sinks import for_html, for_terminal, github_message
from llmfix.schema.load import schema_from_value
from llmfix.schema.validate import SchemaValidator

REPO = Path(__file__).resolve().parent.parent

# What a hostile repository or model puts in names, keys and ids.
OSC = "\x1b]0;PWNED\x07\x1b]8;;http://evil.example/\x1b\\"
CSI = "\x1b[2J\x1b[31m"
INJECTION = "\n::error file=evil.py,line=1::INJECTED"
BIDI = "\u202egnp.exe\u2066"
HOSTILE = f"k{OSC}{CSI}\r{INJECTION}{BIDI}\x9b31m"

# Raw bytes that must never reach a terminal or a log: C0 controls but tab and newline,
# DEL, C1 controls (as UTF-8), bidi controls (as UTF-8).
_RAW_CONTROL = re.compile(
    rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|\xe2\x80[\x8e\x8f\xaa-\xae]|\xe2\x81[\xa6-\xa9]"
)
SCHEMA = {"type": "object", "additionalProperties": {"type": "integer"}}


def llmfix(*args: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    env.pop("LLMFIX_CONFIG", None)
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "llmfix", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )


def assert_safe(data: bytes, github: bool = False) -> None:
    """No raw control or bidi character; no line a CI runner would read as a command but
    llmfix's own annotations (``-f github``)."""
    found = _RAW_CONTROL.search(data)
    assert found is None, f"raw {found.group()!r} in {data!r}"
    for line in data.decode("utf-8", "replace").splitlines():
        if not line.startswith("::"):
            continue
        assert github, f"a workflow command in a text log: {line!r}"
        match = re.fullmatch(r"::(error|warning|notice)( [^:]*)?::(.*)", line)
        assert match is not None, line
        properties = dict(p.split("=", 1) for p in (match.group(2) or " ")[1:].split(",") if p)
        assert properties.get("file") != "evil.py", line
        assert "line" not in properties or properties["line"].isdigit(), line


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A tree whose file names, keys, custom_ids and group values hold control sequences."""
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    answers = tmp_path / "answers"
    answers.mkdir()
    # An invalid answer (its hostile key holds a string) in a file with a hostile name.
    name = f"a{OSC}{CSI}{INJECTION}{BIDI}.txt".replace("/", "_")
    (answers / name).write_text(json.dumps({HOSTILE: "not a number"}))
    # A repaired answer (a number as a string), for --explain.
    (answers / "repaired.txt").write_text(json.dumps({HOSTILE: "5"}))
    # A batch output whose custom_id is hostile, and a log grouped by a hostile value.
    content = json.dumps({HOSTILE: "x"})
    body = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    line = {"custom_id": HOSTILE, "response": {"status_code": 200, "body": body}}
    (answers / "batch.jsonl").write_text(json.dumps(line) + "\n")
    record = {"model": HOSTILE, "output": content}
    (tmp_path / "log.jsonl").write_text(json.dumps(record) + "\n")
    return tmp_path


# ------------------------------------------------------------------ 27.13: the sinks


def test_for_terminal_makes_every_control_and_bidi_character_visible() -> None:
    shown = for_terminal(HOSTILE)
    assert _RAW_CONTROL.search(shown.encode()) is None
    assert "\\x1b]0;PWNED\\x07" in shown
    assert "\\x0d\\x0a::error" in shown
    assert "\\u202egnp.exe\\u2066" in shown
    assert for_terminal("plain\ttext é ✓") == "plain\ttext é ✓"


def test_a_github_message_keeps_the_runners_escapes_and_shows_the_rest() -> None:
    assert github_message("50%\r\nx\x1b[0m\u202e") == "50%25%0D%0Ax\\x1b[0m\\u202e"


def test_html_text_shows_bidi_controls_as_escapes() -> None:
    assert for_html("<b>\u202eabc\u2069") == "&lt;b&gt;\\u202eabc\\u2069"


@pytest.mark.parametrize("verbosity", [[], ["-q"], ["-v"]])
def test_check_text_output_prints_no_control_sequence(hostile: Path, verbosity: list[str]) -> None:
    done = llmfix("check", "answers", "-s", "schema.json", "--no-progress", *verbosity, cwd=hostile)
    assert done.returncode == 1, done.stderr
    assert b"\\x1b" in done.stdout  # the hostile parts are there, escaped
    assert_safe(done.stdout)
    assert_safe(done.stderr)


def test_the_errors_table_with_q_escapes_the_pointer(hostile: Path) -> None:
    done = llmfix("check", "answers", "-s", "schema.json", "-q", cwd=hostile)
    assert "Errors by code and JSON Pointer" in done.stdout.decode()
    assert "\\u202e" in done.stdout.decode()
    assert_safe(done.stdout)


def test_check_github_output_holds_only_llmfix_annotations(hostile: Path) -> None:
    done = llmfix("check", "answers", "-s", "schema.json", "-f", "github", cwd=hostile)
    assert done.returncode == 1
    assert done.stdout.count(b"::error ") >= 3
    assert_safe(done.stdout, github=True)
    assert_safe(done.stderr)


def test_check_junit_output_escapes_names_and_messages(hostile: Path) -> None:
    done = llmfix("check", "answers", "-s", "schema.json", "-f", "junit", cwd=hostile)
    assert_safe(done.stdout)
    ET.fromstring(done.stdout)  # still XML


def test_group_by_values_are_escaped_in_the_group_table(hostile: Path) -> None:
    args = ("check", "log.jsonl", "-s", "schema.json", "--field", "output", "--group-by", "model")
    done = llmfix(*args, cwd=hostile)
    assert "by model" in done.stdout.decode()
    assert "\\x1b" in done.stdout.decode()
    assert_safe(done.stdout)
    assert_safe(done.stderr)


def test_repair_diagnostics_and_explain_print_no_control_sequence(hostile: Path) -> None:
    names = sorted(p.name for p in (hostile / "answers").iterdir() if p.name.startswith("a"))
    for path in (f"answers/{names[0]}", "answers/repaired.txt"):
        done = llmfix("repair", path, "-s", "schema.json", "--explain", "-v", cwd=hostile)
        assert done.stderr, path
        assert_safe(done.stderr)
    explained = llmfix(
        "repair", "answers/repaired.txt", "-s", "schema.json", "--explain", cwd=hostile
    )
    assert "\\x1b" in explained.stderr.decode()  # the key, in the explained path


def test_a_file_name_with_rich_markup_prints_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "schema.json").write_text(json.dumps({"type": "integer"}))
    name = "[red]x[link=https:evil.example]y[-link].txt"
    (tmp_path / name).write_text('"a"')
    done = llmfix("repair", name, "-s", "schema.json", cwd=tmp_path)
    assert done.returncode == 1
    assert f"{name}: fails:" in done.stderr.decode()


def test_the_html_overview_shows_bidi_controls_as_escapes(hostile: Path) -> None:
    args = ("check", "answers", "log.jsonl", "-s", "schema.json", "--group-by", "model")
    done = llmfix(*args, "--field", "output", "-f", "html", "-o", "r.html", cwd=hostile)
    assert done.returncode == 1, done.stderr
    page = (hostile / "r.html").read_text(encoding="utf-8")
    # Outside the embedded data, which the script shows through the same escapes:
    markup = re.sub(r"<script\b.*?</script>", "", page, flags=re.S)
    assert "\\u202e" in markup
    assert re.search("[\u202a-\u202e\u2066-\u2069\x1b]", markup) is None
    script = (REPO / "llmfix" / "reporters" / "html_report.js").read_text()
    assert "node.textContent = visible(" in script


# ------------------------------------------------------------------ 28.7: every status


def _outcomes() -> list[Checked]:
    """One judged item per status of the model, and one that could not be checked; each
    in its own --group-by group, and two statuses in group ``both``."""
    profile = Profile(SchemaValidator(schema_from_value({"type": "object"})))
    texts = {
        "valid": '{"a": 1}',
        "extracted": 'Here: ```json\n{"a": 1}\n```',
        "repaired": "{'a': 1,}",
        "truncated": '{"a": [1, 2',
        "invalid": "[1]",
        "unparseable": "no json at all",
    }
    items = [
        replace(next(items_from_text(text, f"{name}.txt", ReadOptions(), "text")), group=name)
        for name, text in texts.items()
    ]
    made = {o.status: o for o in run_items(items, {"": profile})}
    assert set(made) == set(texts), made.keys()
    repaired = made["repaired"]
    assert repaired.result is not None
    made["llm_repaired"] = replace(
        repaired,
        item=replace(repaired.item, id="llm.txt", source="llm.txt", group="both"),
        result=replace(repaired.result, status=Status.LLM_REPAIRED),
    )
    unparseable = made["unparseable"]
    assert unparseable.result is not None
    made["refused"] = replace(
        unparseable,
        item=replace(unparseable.item, id="refused.txt", source="refused.txt", group="both"),
        result=replace(unparseable.result, status=Status.REFUSED),
    )
    missing = Item(
        id="gone.txt",
        source="gone.txt",
        line=1,
        text="",
        kind="text",
        error=codes.INPUT_UNREADABLE.at("cannot read"),
        group="error",
    )
    made["error"] = Outcome(item=missing, result=None, error=missing.error)
    assert set(made) == set(STATUSES)
    return [judge(made[status]) for status in STATUSES]


def _cells(text: str) -> str:
    """A rich table's text with its column rules as spaces."""
    return text.replace("│", " ").replace("┃", " ")


def _render(fmt: str, checked: list[Checked], **options: Any) -> str:
    summary = BatchSummary(groups={})
    for c in checked:
        summary.add(c)
    out = io.StringIO()
    reporter = reporter_class(fmt)(out, ReportOptions(group_by="model", **options))
    for c in checked:
        reporter.add(c)
    reporter.finish(summary)
    return out.getvalue()


def test_statuses_are_the_models_and_error() -> None:
    assert (*(s.value for s in Status), "error") == STATUSES


def test_the_text_summary_has_a_row_per_status_and_they_add_up() -> None:
    out = _cells(_render("text", _outcomes(), verbosity=-1))
    labels = {
        "valid": "valid as-is",
        "extracted": "extracted",
        "repaired": "repaired",
        "llm_repaired": "LLM-repaired",
        "truncated": "truncated (cut off)",
        "invalid": "invalid",
        "refused": "refused",
        "unparseable": "unparseable",
        "error": "not checked (error)",
    }
    counts = {}
    for status, label in labels.items():
        row = re.search(rf"^\s*{re.escape(label)}\s+(\d+)\s", out, re.M)
        assert row is not None, (status, out)
        counts[status] = int(row.group(1))
    assert counts == dict.fromkeys(STATUSES, 1)


def test_the_group_table_has_a_column_per_status_and_they_add_up() -> None:
    out = _cells(_render("text", _outcomes(), verbosity=-1))
    table = out[out.index("by model") :]
    header = next(line for line in table.splitlines() if "items" in line)
    columns = header.split()
    status_columns = columns[columns.index("items") + 1 : columns.index("parsed")]
    assert len(status_columns) == len(STATUSES), columns
    for name in ("both", "valid", "error", "truncated"):
        row = next(ln for ln in table.splitlines() if ln.strip().startswith(name + " "))
        cells = [int(c.replace(",", "")) for c in row.split()[1 : 2 + len(STATUSES)]][
            : 1 + len(STATUSES)
        ]
        assert cells[0] == sum(cells[1:]), (name, row)
    both = next(ln for ln in table.splitlines() if ln.strip().startswith("both "))
    assert both.split()[1] == "2"


def test_json_yaml_and_github_count_every_status() -> None:
    checked = _outcomes()
    summary = json.loads(_render("json", checked))["summary"]
    assert summary["status"] == dict.fromkeys(sorted(STATUSES), 1)
    notice = _render("github", checked).splitlines()[-1]
    for status in STATUSES:
        label = "not checked" if status == "error" else status
        assert f"1 {label}" in notice, (status, notice)


def test_junit_and_sarif_carry_every_item_and_failing_status() -> None:
    checked = _outcomes()
    suite = ET.fromstring(_render("junit", checked)).find("testsuite")
    assert suite is not None
    assert suite.get("tests") == str(len(STATUSES))
    assert len(suite.findall("testcase")) == len(STATUSES)
    failing = {c.status for c in checked if c.failed}
    assert failing == {"truncated", "invalid", "refused", "unparseable", "error"}
    results = json.loads(_render("sarif", checked))["runs"][0]["results"]
    assert {r["properties"]["status"] for r in results} == failing


def test_the_html_page_charts_filters_and_labels_every_status() -> None:
    page = _render("html", _outcomes())
    meta = json.loads(re.search(r'id="llmfix-meta"[^>]*>(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    assert meta["statuses"] == list(STATUSES)
    assert all(meta["labels"])
    chart = page[page.index('id="chart-status"') :]
    chart = chart[: chart.index("</table>")]
    rows = dict(re.findall(r'<tr data-key="([a-z_]+)" data-count="(\d+)"', chart))
    assert rows == dict.fromkeys(STATUSES, "1")
    items = json.loads(re.search(r'id="llmfix-items"[^>]*>(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    assert sorted(item[1] for item in items) == list(range(len(STATUSES)))  # no -1
    css = (REPO / "llmfix" / "reporters" / "html_report.css").read_text()
    for status in STATUSES:
        assert f".s-{status} " in css, status
    both = re.search(r'<tr data-group="both".*?</tr>', page, re.S)
    assert both is not None
    assert "LLM-repaired: 1" in both.group()
    assert "refused: 1" in both.group()


def test_repair_report_html_badges_a_truncated_item(tmp_path: Path) -> None:
    (tmp_path / "cut.txt").write_text('{"a": [1, 2')
    done = llmfix("repair", "cut.txt", "--report", "r.html", cwd=tmp_path)
    assert done.returncode == 1
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    meta = json.loads(re.search(r'id="llmfix-meta"[^>]*>(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    items = json.loads(re.search(r'id="llmfix-items"[^>]*>(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    assert meta["labels"][items[0][1]] == "truncated (cut off)"


def test_the_html_gate_line_agrees_in_number() -> None:
    checked = _outcomes()
    page = _render("html", checked[:5])  # one failing item: truncated
    assert "1 item fails the gates" in page
    assert "items fail the gates" in _render("html", checked)


# ------------------------------------------------------------------ 28.10-28.12: baseline


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A repository with ``data/`` holding one known failure; later a new one is added."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "schema.json").write_text(json.dumps({"type": "object", "required": ["a"]}))
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    (data / "sub" / "known.txt").write_text('{"b": 1}')
    (data / "ok.txt").write_text('{"a": 1}')
    records = [{"id": "r1", "output": '{"b": 2}'}, {"id": "r2", "output": '{"a": 2}'}]
    (data / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def _record_baseline(root: Path) -> subprocess.CompletedProcess[bytes]:
    schema = str(root / "schema.json")
    args = ("check", "data", "-s", schema, "--field", "output", "-f", "baseline")
    return llmfix(*args, "-o", ".llmfix-baseline.json", cwd=root)


def test_writing_a_baseline_exits_0(repository: Path) -> None:
    done = _record_baseline(repository)
    assert done.returncode == 0, done.stderr
    baseline = json.loads((repository / ".llmfix-baseline.json").read_text())
    assert baseline["failing"] == 2
    assert {item["key"].split("[")[0].split("@")[0] for item in baseline["items"]} == {
        "data/sub/known.txt",
        "data/log.jsonl",
    }


@pytest.mark.parametrize("how", ["as recorded", "absolute", "from inside data"])
def test_baseline_keys_do_not_depend_on_how_the_path_is_typed(repository: Path, how: str) -> None:
    _record_baseline(repository)
    (repository / "data" / "new.txt").write_text('{"c": 1}')
    schema, baseline = str(repository / "schema.json"), str(repository / ".llmfix-baseline.json")
    where, path = {
        "as recorded": (repository, "data"),
        "absolute": (repository, str(repository / "data")),
        "from inside data": (repository / "data", "."),
    }[how]
    args = ("check", path, "-s", schema, "--field", "output", "--baseline", baseline, "-f", "json")
    done = llmfix(*args, cwd=where)
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert (summary["failed"], summary["baselined"]) == (1, 2)


def test_a_baseline_with_keys_relative_to_the_old_working_directory_still_matches(
    repository: Path,
) -> None:
    schema = str(repository / "schema.json")
    args = ("check", ".", "-s", schema, "--field", "output", "-f", "baseline", "-o", "../old.json")
    llmfix(*args, cwd=repository / "data")
    old = json.loads((repository / "old.json").read_text())
    for item in old["items"]:  # as keys were written before: the path as typed
        item["key"] = item["key"].replace("data/", "", 1)
    (repository / "old.json").write_text(json.dumps(old))
    args = ("check", ".", "-s", schema, "--field", "output", "--baseline", "../old.json")
    assert llmfix(*args, cwd=repository / "data").returncode == 0


def test_known_failures_are_one_line_unless_verbose(repository: Path) -> None:
    _record_baseline(repository)
    (repository / "data" / "new.txt").write_text('{"c": 1}')
    args = ("check", "data", "-s", "schema.json", "--field", "output")
    args += ("--baseline", ".llmfix-baseline.json", "--no-progress")
    out = llmfix(*args, cwd=repository).stdout.decode()
    assert "data/new.txt" in out
    assert "known.txt" not in out
    assert "log.jsonl" not in out
    assert "2 known failures (baseline): not shown; -v to list" in out
    verbose = llmfix(*args, "-v", cwd=repository).stdout.decode()
    assert "known failure (baseline)" in verbose
    assert "known.txt" in verbose
    assert "not shown" not in verbose


# ------------------------------------------------------------------ 28.14: repair's lines


def test_repair_counts_the_changes_it_lists(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Sure:\n```json\n{'a': 1,}\n```\n")
    done = llmfix("repair", "a.md", cwd=tmp_path)
    lines = done.stderr.decode().splitlines()
    summary = lines[-1]
    listed = [ln for ln in lines[:-1] if re.search(r"\[(lossless|safe|guess)\]", ln)]
    count = int(re.search(r"(\d+) changes?", summary).group(1))  # type: ignore[union-attr]
    unlisted = re.search(r"(\d+) info-level, listed with -v", summary)
    assert count == len(listed) + (int(unlisted.group(1)) if unlisted else 0), lines
    verbose = llmfix("repair", "a.md", "-v", cwd=tmp_path).stderr.decode().splitlines()
    listed_v = [ln for ln in verbose[:-1] if re.search(r"\[(lossless|safe|guess)\]", ln)]
    assert len(listed_v) == count
    assert "listed with -v" not in verbose[-1]


def test_repair_of_a_jsonl_field_places_a_problem_as_check_does(tmp_path: Path) -> None:
    line = json.dumps({"output": "{'a': 1}"}) + "\n"
    done = llmfix(
        "repair", "--kind", "jsonl", "--field", "output", cwd=tmp_path, stdin=line.encode()
    )
    err = done.stderr.decode()
    assert "<stdin>:1:" not in err.replace("<stdin>:1: ", "")  # no line:col after the record
    assert re.search(r"^<stdin>:1: \w+ [\w.]+: .*\[text 1:\d+\]", err, re.M), err
