"""The HTML report, opened in headless Chromium the way a reader opens it.

The reports are written by the installed ``llmfix`` (``check -f html``, ``repair --report
FILE.html``) next to the JSON report of the same run, and the page is checked against it:
the counts shown, the rows the filters leave, the characters each highlight sits on, and
that hostile answers stay text. The browser tests skip, with one line, only where no
Chromium is installed (``.ci/run`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llmfix.reporters.html import (
    DIAGNOSTICS_CUT,
    MAX_DIAGNOSTICS,
    MAX_ITEM_CHARS,
    MAX_TEXT,
    STATUSES,
    TEXT_CUT,
    VALUE_CUT,
    script_json,
)
from tests.browser import chromium_path, open_browser, wait_until

LLMFIX = str(Path(sys.executable).with_name("llmfix"))
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
HOSTILE_SCRIPT = (
    "</script><script>window.__pwned = 1; alert(1)</script>\n"
    '{"name": "</script><img src=x onerror=\\"window.__pwned=2\\">", "age": "7"}'
)
HOSTILE_IMG = (
    '<img src=x onerror="window.__pwned=3;alert(3)"> <!-- <b>bold</b> &amp; \u2028\n'
    "{'name': '<script>window.__pwned=4</script>', 'age': 5,}"
)
ANSWERS = {
    "answers/ok.txt": '{"name": "Ada", "age": 36}',
    "answers/fenced.md": 'Sure:\n```json\n{"name": "Bo", "age": 4,}\n```\n',
    "answers/invalid.txt": '{"name": "Cy"}',
    "answers/prose.txt": "I could not find the person you asked about.",
    "answers/wide.txt": "\U0001f642\U0001f680 ok: {'name': 'D\U0001f600e', 'age': 5,}",
    "answers/hostile_script.txt": HOSTILE_SCRIPT,
    "answers/hostile_img.md": HOSTILE_IMG,
}
RECORDS = [
    {"model": "alpha", "output": '{"name": "Eve", "age": 30}'},
    {"model": "alpha", "output": '{"name": "Fay", "age": "31"}'},
    {"model": "beta", "output": "{'name': 'Gus', 'age': 32, 'extra': 1}"},
    {"model": "beta", "output": '{"name": "Hal"'},
    {"model": "beta", "output": "nothing here"},
    {"model": "<i onmouseover=alert(5)>gamma</i>", "output": '{"name": "Ivy", "age": 40}'},
]


TEXTS = {**ANSWERS, **{f"run.jsonl:{n}": r["output"] for n, r in enumerate(RECORDS, start=1)}}
WEATHER_TOOLS = [
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


def llmfix(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LLMFIX, *args], cwd=cwd, capture_output=True, text=True, encoding="utf-8", check=False
    )


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One corpus checked twice: ``report.html`` and ``report.json``."""
    root = tmp_path_factory.mktemp("html")
    (root / "answers").mkdir()
    for name, text in ANSWERS.items():
        (root / name).write_text(text, encoding="utf-8")
    lines = "".join(json.dumps(r) + "\n" for r in RECORDS)
    (root / "run.jsonl").write_text(lines, encoding="utf-8")
    (root / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    common = ["answers", "run.jsonl", "-s", "schema.json", "--field", "output"]
    common += ["--group-by", "model", "-q"]
    for fmt in ("html", "json"):
        done = llmfix("check", *common, "-f", fmt, "-o", f"report.{fmt}", cwd=root)
        assert done.returncode == 1, done.stderr  # invalid and unparseable items fail
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    return {"root": root, "html": root / "report.html", "report": report}


def embedded_items(path: Path) -> list[Any]:
    page = path.read_text(encoding="utf-8")
    found = re.search(
        r'<script type="application/json" id="llmfix-items">(.*?)</script>', page, re.S
    )
    assert found is not None
    items: list[Any] = json.loads(found.group(1))
    return items


# ------------------------------------------------------------------ without a browser


def test_embedded_json_cannot_close_its_script_and_reads_back() -> None:
    hostile = "</script><!-- <script>&amp;\u2028\u2029 \udc80 \U0001f600"
    text = script_json({"t": hostile})
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == {"t": hostile}
    text.encode("utf-8")  # a lone surrogate is escaped, so the page can be written


def test_model_text_never_appears_as_markup_in_the_file(run: dict[str, Any]) -> None:
    page = run["html"].read_text(encoding="utf-8")
    assert page.count("</script>") == 3  # the report's own three script elements
    assert "<img" not in page
    assert "<i " not in page


def text_in(value: Any) -> int:
    """Characters of every string in a JSON value."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(text_in(v) for v in value)
    return 0


def test_an_item_is_bounded_and_says_so(tmp_path: Path) -> None:
    fields = ", ".join(f"'k{i}': '{'x' * 2000}'" for i in range(500))  # 1,000 changes
    (tmp_path / "big.txt").write_text("{" + fields + ",}", encoding="utf-8")
    done = llmfix("repair", "big.txt", "--report", "r.html", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    [row] = embedded_items(tmp_path / "r.html")
    assert row[4] & TEXT_CUT
    assert row[4] & VALUE_CUT
    assert row[4] & DIAGNOSTICS_CUT
    assert len(row[6]) == MAX_TEXT
    assert len(row[8]) == MAX_DIAGNOSTICS
    assert text_in(row) <= MAX_ITEM_CHARS
    assert (tmp_path / "r.html").stat().st_size < 150_000  # for a 1 MB answer


def test_repair_reports_an_unreadable_input_as_an_item(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text('{"a": 1}', encoding="utf-8")
    done = llmfix("repair", "missing.txt", "ok.txt", "--report", "r.html", "-q", cwd=tmp_path)
    assert done.returncode == 2
    rows = embedded_items(tmp_path / "r.html")
    assert [(r[0], STATUSES[r[1]]) for r in rows] == [("missing.txt", "error"), ("ok.txt", "valid")]
    assert "input.unreadable" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_repair_reports_each_answer_of_an_api_response(tmp_path: Path) -> None:
    calls = [
        {"id": f"c{n}", "type": "function", "function": {"name": "f", "arguments": args}}
        for n, args in enumerate(["{'a': 1}", '{"b": 2}'])
    ]
    completion = {"choices": [{"message": {"role": "assistant", "tool_calls": calls}}]}
    (tmp_path / "completion.json").write_text(json.dumps(completion), encoding="utf-8")
    for report in ("r.html", "r.json"):
        done = llmfix("repair", "completion.json", "--report", report, "-q", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    expected = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["items"]
    rows = embedded_items(tmp_path / "r.html")
    assert [(r[0], STATUSES[r[1]], r[5]) for r in rows] == [
        (i["id"], i["status"], "f") for i in expected
    ]
    assert [r[6] for r in rows] == ["{'a': 1}", '{"b": 2}']


def test_repair_writes_json_reports_as_before(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text('{"name": "Ada",}', encoding="utf-8")
    done = llmfix("repair", "a.txt", "--report", "r.json", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["items"][0]["status"] == "repaired"


# --------------------------------------------------------------------- in Chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if chromium_path() is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    with open_browser() as opened:
        yield opened


class Page:
    """One opened report, with what the tests look at."""

    def __init__(self, browser: Any, path: Path, scripts: bool = True, fragment: str = "") -> None:
        self.context = browser.new_context(java_script_enabled=scripts)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(path.as_uri() + fragment)
        if scripts:
            self.page.wait_for_selector("body[data-ready]")

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def rows(self) -> list[str]:
        ids: list[str] = self.page.eval_on_selector_all(
            ".row.item .id", "nodes => nodes.map(n => n.textContent)"
        )
        return ids

    def shown(self) -> str:
        return str(self.page.text_content("#shown"))

    def open(self, item_id: str) -> None:
        self.page.fill("#q", "")
        self.page.locator(".row.item", has_text=item_id).first.click()
        self.page.wait_for_selector("#detail:not([hidden])")
        assert self.page.text_content("#detail h3") == item_id

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def page(browser: Any, run: dict[str, Any]) -> Iterator[Page]:
    opened = Page(browser, run["html"])
    yield opened
    opened.close()


def chart(page: Any, name: str) -> dict[str, int]:
    """A chart's rows as shown: key → the count printed beside the bar."""
    rows = page.eval_on_selector_all(
        f"#chart-{name} tr[data-key]",
        "rows => rows.map(r => [r.dataset.key, r.querySelector('td.num').innerText])",
    )
    return {key: int(shown.replace(",", "")) for key, shown in rows}


def test_the_counts_shown_equal_the_json_report(page: Page, run: dict[str, Any]) -> None:
    summary = run["report"]["summary"]
    assert chart(page.page, "status") == summary["status"]
    assert chart(page.page, "repairs") == summary["items_by_repair"]
    errors = {
        e["code"] + (f" {e['pointer']}" if "pointer" in e else ""): e["count"]
        for e in summary["errors"]
    }
    assert chart(page.page, "errors") == errors
    gate = page.page.locator("#gate")
    assert gate.get_attribute("data-failed") == str(summary["failed"])
    assert "FAILED" in str(gate.text_content())
    groups = page.page.eval_on_selector_all(
        "#groups tr[data-group]", "rows => rows.map(r => [r.dataset.group, +r.dataset.items])"
    )
    assert dict(groups) == {k: v["items"] for k, v in summary["groups"].items()}
    assert page.shown() == f"{summary['items']} of {summary['items']} items"


def test_the_gate_compares_with_the_baseline(browser: Any, run: dict[str, Any]) -> None:
    root = run["root"]
    args = ["answers", "run.jsonl", "-s", "schema.json", "--field", "output", "-q"]
    done = llmfix(
        "check", *args, "--baseline", "report.json", "-f", "html", "-o", "b.html", cwd=root
    )
    assert done.returncode == 0, done.stderr  # every failure is known
    known = run["report"]["summary"]["failed"]
    opened = Page(browser, root / "b.html")
    try:
        gate = opened.page.locator("#gate")
        assert gate.get_attribute("data-failed") == "0"
        assert gate.get_attribute("data-baselined") == str(known)
        assert "PASSED" in str(gate.text_content())
        assert f"0 new failures, {known} known" in str(gate.text_content())
        opened.page.check("#f-failing")
        assert len(opened.rows()) == known  # known failures still fail the gates, listed
    finally:
        opened.close()


def test_the_overview_reads_with_scripts_off(browser: Any, run: dict[str, Any]) -> None:
    off = Page(browser, run["html"], scripts=False)
    try:
        assert chart(off.page, "status") == run["report"]["summary"]["status"]
        assert off.page.is_visible("#chart-status")
        assert off.page.is_hidden("#controls")
        assert "needs JavaScript" in str(off.page.text_content("noscript"))
    finally:
        off.close()


def ids_where(report: dict[str, Any], test: Any) -> list[str]:
    return sorted(item["id"] for item in report["items"] if test(item))


def test_filters_change_the_visible_rows(page: Page, run: dict[str, Any]) -> None:
    report = run["report"]
    p = page.page
    p.select_option("#f-status", str(STATUSES.index("invalid")))
    assert sorted(page.rows()) == ids_where(report, lambda i: i["status"] == "invalid")
    p.select_option("#f-status", "")
    p.select_option("#f-group", "beta")
    assert sorted(page.rows()) == ids_where(report, lambda i: i.get("group") == "beta")
    p.select_option("#f-group", "")
    p.select_option("#f-rule", label="parse.trailing_comma")
    expected = ids_where(
        report,
        lambda i: any(
            d["code"] == "parse.trailing_comma" and "risk" in d for d in i["diagnostics"]
        ),
    )
    assert expected
    assert sorted(page.rows()) == expected
    p.select_option("#f-rule", "")
    p.select_option("#f-code", label="schema.required")
    expected = ids_where(
        report, lambda i: any(d["code"] == "schema.required" for d in i["diagnostics"])
    )
    assert sorted(page.rows()) == expected
    p.select_option("#f-code", "")
    p.check("#f-failing")
    assert sorted(page.rows()) == ids_where(report, lambda i: i["failed"])
    p.uncheck("#f-failing")
    p.select_option("#f-risk", "2")  # guess
    assert sorted(page.rows()) == ids_where(report, lambda i: i["risk"] == "guess")
    p.select_option("#f-risk", "")
    p.fill("#q", "Gus")
    wait_until(p, "document.querySelectorAll('.row.item').length === 1")
    assert page.rows() == ["run.jsonl:3"]
    p.fill("#q", "")
    wait_until(p, f"document.querySelectorAll('.row.item').length === {len(report['items'])}")
    p.select_option("#sort", "status")
    worst = page.rows()[0]
    assert next(i for i in report["items"] if i["id"] == worst)["status"] == "unparseable"
    p.select_option("#sort", "input")
    p.click(".row.head [data-sort=id]")  # a column heading sorts too
    assert page.rows() == sorted(i["id"] for i in report["items"])


def marked(page: Any, index: int) -> str:
    """The text of every highlight that carries diagnostic ``index``, in order."""
    text: str = page.evaluate(
        """k => Array.from(document.querySelectorAll('#answer mark[data-d]'))
            .filter(m => m.dataset.d.split(' ').includes(String(k)))
            .map(m => m.textContent).join('')""",
        index,
    )
    return text


@pytest.mark.parametrize(
    "name",
    [
        "answers/fenced.md",  # extraction and syntax repairs
        "answers/wide.txt",  # characters outside the BMP before the spans (UTF-16 offsets)
        "answers/hostile_img.md",
        "answers/invalid.txt",  # a schema error: on the value its JSON Pointer leads to
        "run.jsonl:2",  # a schema repair
        "run.jsonl:3",  # a property removed
    ],
)
def test_an_item_opens_with_its_highlights_on_the_right_characters(
    page: Page, run: dict[str, Any], name: str
) -> None:
    item = next(i for i in run["report"]["items"] if i["id"] == name)
    text = TEXTS[name]
    page.open(name)
    assert page.page.text_content("#answer") == text
    spanned = [(k, d) for k, d in enumerate(item["diagnostics"]) if "span" in d]
    assert spanned
    for k, d in spanned:
        start, end = d["span"]["start"], d["span"]["end"]
        if end > start:
            assert marked(page.page, k) == text[start:end], d
    k, d = next((k, d) for k, d in spanned if d["span"]["end"] > d["span"]["start"])
    mark = page.page.locator("#answer mark[data-d]").filter(
        has=page.page.locator(f"xpath=self::*[contains(concat(' ', @data-d, ' '), ' {k} ')]")
    )
    mark.first.hover()
    page.page.wait_for_selector("#tip:not([hidden])")
    tip = str(page.page.text_content("#tip"))
    assert d["code"] in tip
    assert d["message"] in tip
    assert d["severity"] in tip
    assert (f"risk {d['risk']}" in tip) if "risk" in d else ("risk" not in tip)
    value = json.loads(str(page.page.text_content("#detail pre.value")))
    assert value == item["value"]


def test_schema_repairs_show_before_and_after(page: Page, run: dict[str, Any]) -> None:
    item = next(i for i in run["report"]["items"] if i["id"] == "run.jsonl:2")
    assert item["patch"]
    page.open("run.jsonl:2")
    rows = page.page.eval_on_selector_all(
        "table.patch tr:not(:first-child)",
        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))",
    )
    assert rows == [
        [op["op"], op["path"], json.dumps(op["before"]), json.dumps(op["after"]), op["rule"],
         op["risk"]]
        for op in item["patch"]
    ]  # fmt: skip


def test_hostile_answers_stay_text_and_run_nothing(page: Page) -> None:
    for name in ("answers/hostile_script.txt", "answers/hostile_img.md"):
        page.open(name)
        assert page.page.text_content("#answer") == ANSWERS[name]
        for mark in page.page.locator("#answer mark").all():
            mark.hover()
    page.page.wait_for_timeout(200)  # an image error handler would have fired by now
    assert page.page.evaluate("typeof window.__pwned") == "undefined"
    assert page.dialogs == []
    assert page.errors == []
    markup = "document.querySelectorAll('img, b, i, script:not([type])').length"
    assert page.page.evaluate(markup) == 1  # the report's own script
    groups = page.page.eval_on_selector_all("#groups th", "cells => cells.map(c => c.textContent)")
    assert "<i onmouseover=alert(5)>gamma</i>" in groups
    assert all(url.startswith("file://") for url in page.requests), page.requests


def test_a_tool_call_report_shows_each_call_and_its_checks(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(WEATHER_TOOLS), encoding="utf-8")
    (tmp_path / "calls.txt").write_text(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "days": "3"}}'
        '</tool_call>\n<tool_call>{"name": "get_weather", "arguments": {"days": 2}}</tool_call>',
        encoding="utf-8",
    )
    done = llmfix("repair", "calls.txt", "--tools", "tools.json", "--report", "r.html", "-q",
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stderr  # the second call misses "city"
    opened = Page(browser, tmp_path / "r.html")
    try:
        opened.open("calls.txt")
        heads = opened.page.eval_on_selector_all(
            ".call .call-head", "nodes => nodes.map(n => [n.className, n.textContent])"
        )
        assert [cls for cls, _ in heads] == ["call-head ok", "call-head bad"]
        assert all("get_weather" in text for _, text in heads)
        checks = opened.page.eval_on_selector_all(
            ".call ul.checks", "lists => lists.map(l => l.textContent)"
        )
        assert "repair.coerce_integer" in checks[0]
        assert "tools.missing_argument" in checks[1]
        args = json.loads(str(opened.page.locator(".call pre.value").first.text_content()))
        assert args == {"city": "Oslo", "days": 3}
    finally:
        opened.close()


def test_check_lists_the_tool_calls_of_a_message_with_their_checks(
    browser: Any, tmp_path: Path
) -> None:
    calls = [
        {"id": "c0", "type": "function",
         "function": {"name": "get_weather", "arguments": "{'city': 'Oslo', 'days': '3'}"}},
        {"id": "c1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"days": 2}'}},
    ]  # fmt: skip
    completion = {"choices": [{"message": {"role": "assistant", "tool_calls": calls}}]}
    (tmp_path / "completion.json").write_text(json.dumps(completion), encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps(WEATHER_TOOLS), encoding="utf-8")
    args = ["completion.json", "--tools", "tools.json", "-q"]
    assert llmfix("check", *args, "-f", "html", "-o", "r.html", cwd=tmp_path).returncode == 1
    first, second = "completion.json#msg0.call0", "completion.json#msg0.call1"
    opened = Page(browser, tmp_path / "r.html", fragment="#item=0")  # a link to one item
    try:
        assert opened.page.text_content("#detail h3") == first
        entries = opened.page.eval_on_selector_all(
            "ul.sibling-calls li", "items => items.map(i => [i.className, i.textContent])"
        )
        assert [cls for cls, _ in entries] == ["ok", "bad"]
        assert entries[0][1].startswith("call0 get_weather")
        assert "schema.required" in entries[1][1]  # "city" is missing
        opened.page.click("ul.sibling-calls li:nth-child(2) button")
        assert opened.page.text_content("#detail h3") == second
        assert json.loads(str(opened.page.text_content("#answer"))) == {"days": 2}
    finally:
        opened.close()


def test_an_empty_run_is_a_page_too(browser: Any, tmp_path: Path) -> None:
    from llmfix.batch.judge import BatchSummary
    from llmfix.reporters.html import HtmlReporter

    with (tmp_path / "r.html").open("w", encoding="utf-8") as out:
        HtmlReporter(out).finish(BatchSummary())
    opened = Page(browser, tmp_path / "r.html")
    try:
        assert opened.shown() == "0 of 0 items"
        assert "PASSED" in str(opened.page.text_content("#gate"))
        assert opened.errors == []
    finally:
        opened.close()


def test_an_llm_repair_shows_its_attempts(browser: Any, tmp_path: Path) -> None:
    from llmfix.batch.core import Outcome
    from llmfix.batch.judge import BatchSummary, Checked
    from llmfix.inputs import Item
    from llmfix.model import Result, Status
    from llmfix.reporters.base import ReportOptions
    from llmfix.reporters.html import HtmlReporter

    result = Result(Status.LLM_REPAIRED, {"name": "Ada", "age": 36}, attempts=2)
    item = Item("answer.txt", "answer.txt", 1, "name Ada, 36 years", kind="file", whole_file=True)
    entry = Checked(Outcome(item, result))
    summary = BatchSummary()
    summary.add(entry)
    with (tmp_path / "r.html").open("w", encoding="utf-8") as out:
        reporter = HtmlReporter(out, ReportOptions(title="llmfix repair"))
        reporter.add(entry)
        reporter.finish(summary)
    opened = Page(browser, tmp_path / "r.html", fragment="#item=0")
    try:
        facts = str(opened.page.text_content("#detail .facts"))
        assert "LLM-repaired" in facts
        assert "LLM attempts: 2" in facts
    finally:
        opened.close()


def test_a_large_report_renders_only_the_rows_in_view(browser: Any, tmp_path: Path) -> None:
    count = 20_000
    lines = "".join(
        json.dumps({"output": f'{{"name": "n{i}", "age": {i}{"," if i % 3 == 0 else ""}}}'}) + "\n"
        for i in range(count)
    )
    (tmp_path / "big.jsonl").write_text(lines, encoding="utf-8")
    done = llmfix("check", "big.jsonl", "--field", "output", "-f", "html", "-o", "r.html", "-q",
                  cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    opened = Page(browser, tmp_path / "r.html")
    try:
        assert opened.shown() == f"{count:,} of {count:,} items"
        assert 0 < len(opened.rows()) < 60
        opened.page.eval_on_selector("#viewport", "v => { v.scrollTop = v.scrollHeight; }")
        wait_until(
            opened.page,
            f"Array.from(document.querySelectorAll('.row.item .id'))"
            f".some(n => n.textContent === 'big.jsonl:{count}')",
        )
        assert len(opened.rows()) < 60
        opened.page.select_option("#f-status", str(STATUSES.index("repaired")))
        assert opened.shown() == f"{(count + 2) // 3:,} of {count:,} items"
    finally:
        opened.close()


def test_bidi_controls_in_a_name_and_an_answer_show_as_escapes(
    browser: Any, tmp_path: Path
) -> None:
    """A right-to-left override (U+202E) or an Arabic letter mark (U+061C) in a file name or
    in model text would reorder what the reader sees around it (trojan source): the page
    shows each as its escape, in the list and in the opened answer."""
    name = "bidi\u202etxt.json"
    (tmp_path / name).write_text('{"name": "\u202eevil\u061c", "age": 1,}', encoding="utf-8")
    done = llmfix("check", name, "-f", "html", "-o", "r.html", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = Page(browser, tmp_path / "r.html")
    try:
        assert page.rows() == ["bidi\\u202etxt.json"]
        page.open("bidi\\u202etxt.json")
        assert "\\u202eevil\\u061c" in str(page.page.text_content("#answer"))
        body = str(page.page.evaluate("document.body.innerText"))
        assert not [c for c in body if c in "\u202e\u061c"]
    finally:
        page.close()
