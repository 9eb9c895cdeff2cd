"""`llmfix trend` and `check --history`: rates over a series of runs (issue 35); and the
HTML report's comparison and trend charts, looked at in headless Chromium as
tests/test_html_report.py does.

Five runs of 400 answers each, whose invalid rate climbs 1 %, 2 %, 4 %, 8 %, 16 % in model
b and stays 0 in model a; each run's report is written by `llmfix check -f json`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmfix.cli import app
from llmfix.reporters.trend import sparkline
from tests.browser import chromium_path, open_browser

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
RATES_B = (0.01, 0.02, 0.04, 0.08, 0.16)  # model b's invalid rate, run by run
PER_MODEL = 200


def _log(path: Path, rate_b: float, hostile: bool = False) -> None:
    bad = round(rate_b * PER_MODEL)
    with path.open("w", encoding="utf-8") as out:
        for i in range(2 * PER_MODEL):
            model = "a" if i % 2 else "b"
            if hostile and model == "b":
                model = "b<img src=x onerror=alert(1)>\u202e"
            age = '"old"' if model != "a" and i // 2 < bad else str(i % 60)
            record = {"model": model, "text": f'{{"name": "n{i}", "age": {age}}}'}
            out.write(json.dumps(record) + "\n")


def _check(*args: str) -> Any:
    return CliRunner().invoke(app, ["check", "--no-config", "--field", "text", *args])


@pytest.fixture(scope="module")
def series_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trend")
    old = os.getcwd()
    os.chdir(root)
    try:
        (root / "schema.json").write_text(json.dumps(SCHEMA))
        (root / "history").mkdir()
        for n, rate in enumerate(RATES_B):
            _log(root / "log.jsonl", rate, hostile=n == 4)
            out = f"history/run{n}.json"
            done = _check(
                "log.jsonl", "-s", "schema.json", "--group-by", "model", "-q", "-f", "json",
                "-o", out,
            )  # fmt: skip
            assert done.exit_code == 1, done.stderr
            # the reports' finish times order the series (not the file names)
            report = json.loads((root / out).read_text())
            report["summary"]["finished"] = f"2026-01-0{9 - n}T00:00:00+00:00"
            (root / out).write_text(json.dumps(report))
    finally:
        os.chdir(old)
    return root


def test_sparklines_scale_to_the_series() -> None:
    assert sparkline([0.0, 0.5, 1.0]) == "▁▅█"
    assert sparkline([0.0, 0.0]) == "▁▁"
    assert sparkline([0.1, None, 0.2]) == "▅ █"


def test_trend_orders_runs_by_when_they_finished(series_dir: Path) -> None:
    files = sorted(str(p) for p in (series_dir / "history").glob("*.json"))
    result = CliRunner().invoke(app, ["trend", *files, "-f", "json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    # run4 finished first (the 9th minus 4), run0 last
    assert [r["name"] for r in data["runs"]] == [f"run{n}.json" for n in (4, 3, 2, 1, 0)]
    rows = {(s["group"], s["key"]): s["points"] for s in data["series"]}
    counts = [p["count"] for p in rows[(None, "invalid")]]
    assert counts == [32, 16, 8, 4, 2]
    assert [p["items"] for p in rows[(None, "invalid")]] == [400] * 5
    assert [p and p["count"] for p in rows[("a", "invalid")]] == [0] * 5
    # the hostile group name of the last run is only in that run
    hostile = "b<img src=x onerror=alert(1)>\u202e"
    assert rows[(hostile, "invalid")] == [{"count": 32, "items": 200}, None, None, None, None]


def test_trend_table_in_the_terminal(series_dir: Path) -> None:
    history = str(series_dir / "history")
    result = CliRunner().invoke(app, ["trend", history, "--key", "invalid"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    total = next(line for line in lines if line.lstrip().startswith("all"))
    assert "█▅▃▂▁" in total  # 8 %, 4 %, 2 %, 1 %, 0.5 %, oldest first
    assert "8%" in total
    assert "0.5%" in total
    assert "-7.5 pts" in total
    assert "\u202e" not in result.stdout  # escaped, as every name from a report
    assert "\\u202e" in result.stdout


def test_trend_refuses_what_is_no_report(series_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text('{"version": "1", "baseline": true, "items": []}')
    result = CliRunner().invoke(app, ["trend", str(bad)])
    assert result.exit_code == 2
    assert f"trend {bad}: not a -f json report of a check run" in result.stderr
    unknown = CliRunner().invoke(app, ["trend", str(series_dir / "history"), "--key", "nope"])
    assert unknown.exit_code == 2
    assert "--key: 'nope' is not a status" in unknown.stderr
    git = tmp_path / ".git"
    git.mkdir()
    into_git = CliRunner().invoke(
        app, ["trend", str(series_dir / "history"), "-o", str(git / "t.html")]
    )
    assert into_git.exit_code == 2
    assert "is a version-control directory" in into_git.stderr


def test_trend_page_is_one_file_with_a_chart_per_group(series_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "trend.html"
    result = CliRunner().invoke(
        app, ["trend", str(series_dir / "history"), "-f", "html", "-o", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    page = out.read_text()
    assert page.count('<figure class="trend-chart">') == 4  # all, a, b, the hostile one
    assert "<img" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;\\u202e" in page
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)


# ------------------------------------------------------------------ in the browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if chromium_path() is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    with open_browser() as opened:
        yield opened


def _open(browser: Any, path: Path) -> tuple[Any, Any, list[str]]:
    context = browser.new_context()
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready]")
    return context, page, requests


def test_the_html_report_draws_the_comparison_and_the_trend(
    browser: Any, series_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(series_dir)
    _log(series_dir / "now.jsonl", 0.30)
    out = tmp_path / "r.html"
    history = series_dir / "history"
    done = _check(
        "now.jsonl", "-s", "schema.json", "--group-by", "model", "-q", "-f", "html", "-o",
        str(out), "--compare", str(history / "run0.json"), "--fail-on-regression",
        "--history", str(history), "--max-rate", "model=*:invalid=10%",
    )  # fmt: skip
    assert done.exit_code == 1, done.stderr
    context, page, requests = _open(browser, out)
    try:
        assert "FAILED" in str(page.text_content("#gate"))
        assert "the rates decide" in str(page.text_content("#gate"))
        gates = page.eval_on_selector_all(
            "#rate-gates tr[data-gate]", "rows => rows.map(r => [r.innerText, r.dataset.failed])"
        )
        assert [failed for _, failed in gates] == ["false", "true"]  # a: 0 %, b: 30 %
        assert "30% (60 of 200" in gates[1][0]
        # the comparison: model b's invalid rate 1 % → 30 %, a regression, drawn in red
        drawn = page.eval_on_selector_all(
            "#comparison g.compared",
            """gs => gs.map(g => ({key: g.dataset.key, group: g.dataset.group,
                regression: g.dataset.regression,
                colour: g.querySelector('line').getAttribute('stroke'),
                width: g.querySelector('line').getBBox().width}))""",
        )
        b = next(d for d in drawn if d["group"] == "b" and d["key"] == "invalid")
        assert b["regression"] == "true"
        assert b["colour"] == "#c0392b"
        assert b["width"] > 100  # 1 % to 30 % on a 0–50 % axis of 370 px
        assert page.is_visible("#comparison svg")
        # the trend: the five earlier runs and this one, one chart per group
        figures = page.eval_on_selector_all(
            "#trend figure", "fs => fs.map(f => f.querySelector('figcaption').textContent)"
        )
        assert figures[:3] == ["all items", "group a", "group b"]
        points = page.eval_on_selector_all(
            "#trend figure:nth-of-type(3) polyline.series[data-key='b: invalid']",
            "ls => ls.map(l => l.getAttribute('points').split(' ').length)",
        )
        assert points == [5]  # the oldest run's group b had another name
        heights = page.eval_on_selector_all(
            "#trend figure:nth-of-type(3) circle.point",
            "cs => cs.map(c => +c.getAttribute('cy'))",
        )
        assert heights[0] > heights[-1]  # the rate climbs: the last point is the highest
        assert page.is_visible("#trend svg")
        assert [r for r in requests if not r.startswith("file:")] == []
    finally:
        context.close()


def test_check_history_adds_this_run_to_the_table(
    series_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(series_dir)
    _log(series_dir / "now.jsonl", 0.30)
    done = _check(
        "now.jsonl", "-s", "schema.json", "--group-by", "model", "-q", "--history", "history"
    )
    assert done.exit_code == 1
    assert "Trend over 6 runs" in done.stdout
    row = next(line for line in done.stdout.splitlines() if re.match(r"\s*all\s+│ invalid", line))
    assert "▅▃▂▁▁█" in row  # 8 %, 4 %, 2 %, 1 %, 0.5 %, then this run's 15 %
    assert "15%" in row
    empty = series_dir / "empty"
    empty.mkdir(exist_ok=True)
    (empty / "notes.json").write_text("{}")
    bad = _check("now.jsonl", "-s", "schema.json", "--history", "empty")
    assert bad.exit_code == 2
    assert "--history empty/notes.json: not an llmfix report" in bad.stderr
