"""Rate gates, the comparison with an earlier run and the statistics behind them (issue 35).

The runs are real `llmfix check` runs over JSONL logs of 1,000 answers whose rates are
known (so many invalid, so many with a placeholder), through the command line; the figures
the tests hold are computed by hand from those counts.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llmfix.batch.rates import RateGate, evaluate
from llmfix.cli import app
from llmfix.errors import ConfigError
from llmfix.stats import holm, two_proportions, wilson, z_value

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


# ------------------------------------------------------------------ the statistics


def test_z_values_are_the_normal_quantiles() -> None:
    assert round(z_value(0.95), 4) == 1.96
    assert round(z_value(0.99), 4) == 2.5758
    with pytest.raises(ValueError, match="between 0 and 1"):
        z_value(1.0)


@pytest.mark.parametrize(
    ("count", "total", "low", "high"),
    [
        # Wilson score intervals at 95 %, by the formula worked by hand
        (30, 1000, 0.02109, 0.04250),
        (3, 100, 0.01025, 0.08452),
        (0, 50, 0.0, 0.07135),
        (50, 50, 0.92865, 1.0),
        (500, 1000, 0.46907, 0.53093),
    ],
)
def test_wilson_intervals(count: int, total: int, low: float, high: float) -> None:
    found = wilson(count, total)
    assert (round(found[0], 5), round(found[1], 5)) == (low, high)


def test_an_interval_narrows_with_the_sample_and_widens_with_the_confidence() -> None:
    small, large = wilson(3, 100), wilson(30, 1000)
    assert small[1] - small[0] > large[1] - large[0]
    assert wilson(30, 1000, 0.99)[0] < large[0] < large[1] < wilson(30, 1000, 0.99)[1]
    assert wilson(0, 0) == (0.0, 1.0)  # nothing measured, nothing known


def test_two_proportions_by_hand() -> None:
    change = two_proportions(20, 1000, 45, 1000)
    pooled = 65 / 2000
    z = (0.045 - 0.02) / math.sqrt(pooled * (1 - pooled) * (2 / 1000))
    assert change.z == pytest.approx(z)
    assert change.p_value == pytest.approx(0.00162, abs=1e-5)
    assert change.delta == pytest.approx(0.025)
    same = two_proportions(20, 1000, 21, 1000)
    assert same.p_value > 0.8
    assert two_proportions(0, 100, 0, 100).p_value == 1.0  # no variance: no evidence
    assert two_proportions(0, 0, 5, 100).p_value == 1.0


def test_holm_holds_each_test_to_its_step() -> None:
    # m = 4 at 0.05: 0.01 < 0.0125, 0.016 < 0.0167, 0.03 >= 0.025 stops there
    assert holm([0.03, 0.01, 0.5, 0.016], 0.05) == [False, True, False, True]
    assert holm([], 0.05) == []


# ------------------------------------------------------------------ gates, unit


def test_gate_specs() -> None:
    gate = RateGate.parse("invalid=2%", None)
    assert (gate.key, gate.limit, gate.group) == ("invalid", 0.02, None)
    assert RateGate.parse(" failing = 0.5 ", None).limit == 0.005
    grouped = RateGate.parse("model=gpt-4o-mini:invalid=2%", "model")
    assert (grouped.group, grouped.key) == ("gpt-4o-mini", "invalid")
    assert RateGate.parse("model=*:degenerate=1%", "model").group == "*"


@pytest.mark.parametrize(
    ("spec", "group_by", "message"),
    [
        ("invalid", None, "expected KEY=PCT"),
        ("invalidd=2%", None, "did you mean 'invalid'"),
        ("invalid=120%", None, "not a percentage from 0 to 100"),
        ("invalid=lots", None, "not a percentage"),
        ("model=a:invalid=2%", None, "needs --group-by model"),
        ("model=a:invalid=2%", "provider", "groups by 'provider', not 'model'"),
    ],
)
def test_bad_gate_specs(spec: str, group_by: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RateGate.parse(spec, group_by)


def test_evaluate_counts_statuses_failing_codes_and_families() -> None:
    summary = {
        "items": 200,
        "status": {"valid": 190, "invalid": 10},
        "failed": 12,
        "items_by_code": {"degenerate.placeholder": 4, "degenerate.repetition": 3},
        "items_by_family": {"degenerate": 6},
    }
    specs = ["invalid=4%", "failing=5%", "degenerate.placeholder=1%", "degenerate=3%"]
    found = evaluate([RateGate.parse(s, None) for s in specs], summary)
    assert [(g.count, g.items, g.over) for g in found] == [
        (10, 200, True),
        (12, 200, True),
        (4, 200, True),
        (6, 200, False),
    ]


# ------------------------------------------------------------------ end to end


def _log(path: Path, invalid: set[int], placeholder: set[int], n: int = 1000) -> None:
    """``n`` answers, alternating models a and b; those in ``invalid`` have a string age,
    those in ``placeholder`` the name "John Doe"."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            name = "John Doe" if i in placeholder else f"person {i}"
            age = '"old"' if i in invalid else str(20 + i % 50)
            answer = f'{{"name": "{name}", "age": {age}}}'
            record = {"id": f"r{i}", "model": "a" if i % 2 else "b", "text": answer}
            out.write(json.dumps(record) + "\n")


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LLMFIX_CONFIG", raising=False)
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    runner = CliRunner()

    def invoke(log: str, *args: str) -> Any:
        return runner.invoke(
            app,
            ["check", log, "--field", "text", "--schema", "schema.json", "--no-config", *args],
        )

    return invoke


def _rates(path: str) -> dict[str, Any]:
    rates: dict[str, Any] = json.loads(Path(path).read_text())["summary"]["rates"]
    return rates


def test_a_rate_gate_over_1000_answers(run: Any, tmp_path: Path) -> None:
    # 30 of 1,000 invalid (3 %), all in model b (6 % of its 500)
    _log(tmp_path / "log.jsonl", invalid=set(range(0, 60, 2)), placeholder=set())
    result = run("log.jsonl", "--max-rate", "invalid=2%", "-q", "-f", "json", "-o", "r.json")
    assert result.exit_code == 1
    (gate,) = _rates("r.json")["gates"]
    assert (gate["count"], gate["items"], gate["rate"], gate["failed"]) == (30, 1000, 0.03, True)
    assert gate["interval"] == [0.021094, 0.042503]
    assert "3% (30 of 1,000; 95% CI 2.11%–4.25%), max 2%: over by 1 point" in gate["message"]
    # the text summary on stderr names the gate and by how much
    assert "FAIL --max-rate invalid=2%" in result.stderr
    assert "rate gates: 1 of 1 failed" in result.stderr

    passed = run("log.jsonl", "--max-rate", "invalid=4%", "-q")
    assert passed.exit_code == 0  # 30 items fail one by one, but the rate decides
    assert "pass --max-rate invalid=4%" in passed.stdout


def test_a_rate_within_the_noise_fails_only_without_significant_only(
    run: Any, tmp_path: Path
) -> None:
    # 25 of 1,000 (2.5 %) against 2 %: over, but its interval (1.7 %–3.7 %) holds 2 %
    _log(tmp_path / "log.jsonl", invalid=set(range(25)), placeholder=set())
    assert run("log.jsonl", "--max-rate", "invalid=2%", "-q").exit_code == 1
    sure = run("log.jsonl", "--max-rate", "invalid=2%", "--significant-only", "-q")
    assert sure.exit_code == 0
    assert "within the noise of the sample" in sure.stdout
    # 40 of 1,000 (4 %; interval 2.95 %–5.41 %) is surely over 2 %
    _log(tmp_path / "log.jsonl", invalid=set(range(40)), placeholder=set())
    assert run("log.jsonl", "--max-rate", "invalid=2%", "--significant-only", "-q").exit_code == 1


def test_gates_per_group(run: Any, tmp_path: Path) -> None:
    _log(tmp_path / "log.jsonl", invalid=set(range(0, 60, 2)), placeholder=set())
    args = ("--group-by", "model", "-q", "-f", "json", "-o", "r.json")
    one = run("log.jsonl", "--max-rate", "model=a:invalid=1%", *args)
    assert one.exit_code == 0  # group a has none
    every = run("log.jsonl", "--max-rate", "model=*:invalid=5%", *args)
    assert every.exit_code == 1
    found = {g["group"]: (g["count"], g["items"], g["failed"]) for g in _rates("r.json")["gates"]}
    assert found == {"a": (0, 500, False), "b": (30, 500, True)}
    wrong = run("log.jsonl", "--max-rate", "provider=a:invalid=1%", *args)
    assert wrong.exit_code == 2
    assert "groups by 'model', not 'provider'" in wrong.stderr


def test_gates_from_the_config_file(run: Any, tmp_path: Path) -> None:
    _log(tmp_path / "log.jsonl", invalid=set(range(0, 60, 2)), placeholder=set(range(1, 21, 2)))
    (tmp_path / "llmfix.yaml").write_text(
        "group-by: model\nmax-rate:\n  invalid: 5%\n  model=a:\n    degenerate: 1%\n"
    )
    runner = CliRunner()
    args = ["check", "log.jsonl", "--field", "text", "--schema", "schema.json", "-q"]
    result = runner.invoke(app, [*args, "-f", "json", "-o", "r.json"])
    assert result.exit_code == 1
    gates = {(g["gate"], g["group"]): g["failed"] for g in _rates("r.json")["gates"]}
    # 3 % invalid passes 5 %; 10 of model a's 500 answers (2 %) have a placeholder
    assert gates == {("invalid=5%", None): False, ("model=a:degenerate=1%", "a"): True}
    # a flag replaces the file's gates
    flagged = runner.invoke(app, [*args, "--max-rate", "invalid=5%"])
    assert flagged.exit_code == 0
    (tmp_path / "pyproject.toml").write_text('[tool.llmfix]\nmax-rate = ["failing=1%"]\n')
    (tmp_path / "llmfix.yaml").unlink()
    assert runner.invoke(app, args).exit_code == 1


def test_the_comparison_flags_a_significant_rise_only(run: Any, tmp_path: Path) -> None:
    # then: 20 of 1,000 invalid; now: 45 (p = 0.0016), and 21 (noise)
    _log(tmp_path / "old.jsonl", invalid=set(range(20)), placeholder=set())
    assert run("old.jsonl", "-q", "-f", "json", "-o", "old.json").exit_code == 1
    _log(tmp_path / "noise.jsonl", invalid=set(range(21)), placeholder=set())
    args = ("--compare", "old.json", "--fail-on-regression", "-q", "-f", "json", "-o", "n.json")
    noise = run("noise.jsonl", *args)
    assert noise.exit_code == 0  # 21 answers fail, but the rate did not rise significantly
    rows = {(r["group"], r["key"]): r for r in _rates("n.json")["comparison"]["rates"]}
    assert rows[(None, "invalid")]["before"]["count"] == 20
    assert rows[(None, "invalid")]["after"]["count"] == 21
    assert not rows[(None, "invalid")]["significant"]

    _log(tmp_path / "now.jsonl", invalid=set(range(45)), placeholder=set())
    worse = run("now.jsonl", *args)
    assert worse.exit_code == 1
    rates = _rates("n.json")
    row = next(r for r in rates["comparison"]["rates"] if r["key"] == "invalid")
    assert (row["significant"], row["regression"]) == (True, True)
    assert row["p_value"] == pytest.approx(0.00162, abs=1e-5)
    assert "significant rise: a regression" in worse.stderr
    # without --fail-on-regression the items decide, as ever; the comparison is shown
    shown = run("now.jsonl", "--compare", "old.json")
    assert shown.exit_code == 1
    assert "Compared with old.json" in shown.stdout
    # a fall is no regression
    better = run("old.jsonl", "--compare", "n.json", "--fail-on-regression", "-q")
    assert better.exit_code == 0


def test_the_comparison_per_group_and_per_code(run: Any, tmp_path: Path) -> None:
    _log(tmp_path / "old.jsonl", invalid=set(), placeholder=set())
    args = ("--group-by", "model", "-q", "-f", "json")
    assert run("old.jsonl", *args, "-o", "old.json").exit_code == 0
    # now 40 of model a's answers have "John Doe"
    _log(tmp_path / "now.jsonl", invalid=set(), placeholder=set(range(1, 81, 2)))
    result = run("now.jsonl", *args, "-o", "n.json", "--compare", "old.json")
    assert result.exit_code == 0  # a warning, and no --fail-on-regression
    rows = {(r["group"], r["key"]): r for r in _rates("n.json")["comparison"]["rates"]}
    assert rows[("a", "degenerate.placeholder")]["regression"]
    assert rows[("a", "degenerate.placeholder")]["after"] == {
        "count": 40,
        "items": 500,
        "rate": 0.08,
    }
    # a code is compared in a group where either run has it
    assert ("b", "degenerate.placeholder") not in rows
    assert not rows[("b", "valid")]["significant"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "--compare old.json: not a report"),
        ('{"version": "1", "items": []}', "not a -f json report of a check run"),
        ('{"version": "1", "baseline": true, "failing": 0, "items": []}', "no summary"),
        ('{"version": "0", "items": []}', "report version '0'"),
        ("[1, 2]", "not an llmfix report"),
    ],
)
def test_compare_refuses_a_file_that_is_no_report(
    run: Any, tmp_path: Path, content: str, message: str
) -> None:
    _log(tmp_path / "log.jsonl", invalid=set(), placeholder=set(), n=10)
    (tmp_path / "old.json").write_text(content)
    result = run("log.jsonl", "--compare", "old.json")
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_fail_on_regression_needs_compare_and_confidence_is_checked(
    run: Any, tmp_path: Path
) -> None:
    _log(tmp_path / "log.jsonl", invalid=set(), placeholder=set(), n=10)
    assert "needs --compare" in run("log.jsonl", "--fail-on-regression").stderr
    assert "--confidence must be" in run("log.jsonl", "--confidence", "1.5").stderr


def test_machine_reports_say_which_gate_failed(run: Any, tmp_path: Path) -> None:
    _log(tmp_path / "old.jsonl", invalid=set(range(10)), placeholder=set())
    run("old.jsonl", "-q", "-f", "json", "-o", "old.json")
    _log(tmp_path / "log.jsonl", invalid=set(range(40)), placeholder=set())
    gates = ("--max-rate", "invalid=2%", "--max-rate", "failing=10%")
    compared = ("--compare", "old.json", "--fail-on-regression")
    junit = run("log.jsonl", *gates, *compared, "-q", "-f", "junit")
    assert junit.exit_code == 1
    root = ET.fromstring(junit.stdout)
    suite = root.find("./testsuite[@name='llmfix rates']")
    assert suite is not None
    failures = {c.get("name"): c.find("failure") is not None for c in suite.iter("testcase")}
    assert failures["invalid=2% (all items)"] is True
    assert failures["failing=10% (all items)"] is False
    assert failures["invalid in all items"] is True  # the regression
    assert int(root.get("failures") or 0) == 40 + sum(failures.values())

    github = run("log.jsonl", *gates, *compared, "-q", "-f", "github").stdout
    assert "::error title=llmfix --max-rate invalid=2%25::invalid in all items: 4%25" in github
    assert "::notice title=llmfix --max-rate failing=10%25::" in github
    assert "::error title=llmfix regression::invalid in all items: 1%25 " in github

    sarif = json.loads(run("log.jsonl", *gates, *compared, "-q", "-f", "sarif").stdout)
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    levels = [(n["descriptor"]["id"], n["level"]) for n in notes]
    assert ("max-rate", "error") in levels
    assert ("max-rate", "note") in levels
    assert ("regression", "error") in levels


def test_a_group_value_may_hold_colons() -> None:
    gate = RateGate.parse("model=llama3:8b:invalid=2%", "model")
    assert (gate.group, gate.key, gate.limit) == ("llama3:8b", "invalid", 0.02)
    with pytest.raises(ConfigError, match="expected KEY=PCT"):
        RateGate.parse("llama3:8b:invalid=2%", "model")


def test_compare_reads_a_json_report_up_to_its_items(run: Any, tmp_path: Path) -> None:
    _log(tmp_path / "log.jsonl", invalid=set(range(10)), placeholder=set(), n=200)
    assert run("log.jsonl", "-q", "-f", "json", "-o", "old.json").exit_code == 1
    text = (tmp_path / "old.json").read_text()
    cut = text.index(',\n  "items": [')
    # the items of a big report are never parsed: here they are not even JSON
    (tmp_path / "old.json").write_text(text[: cut + 14] + "not parsed" * 1000)
    result = run("log.jsonl", "--compare", "old.json", "-q", "-f", "json", "-o", "n.json")
    assert result.exit_code == 1, result.stderr
    rows = _rates("n.json")["comparison"]["rates"]
    assert {(r["key"], r["before"]["count"]) for r in rows if r["group"] is None} >= {
        ("invalid", 10)
    }
    # a YAML report is read whole, and compares the same
    assert run("log.jsonl", "-q", "-f", "yaml", "-o", "old.yaml").exit_code == 1
    again = run("log.jsonl", "--compare", "old.yaml", "--fail-on-regression", "-q")
    assert again.exit_code == 0
    assert "Compared with old.yaml" in again.stdout


def test_group_names_from_the_input_stay_text_in_every_report(run: Any, tmp_path: Path) -> None:
    hostile = "m<script>alert(1)</script>\u202e\x1b[31m"
    with (tmp_path / "log.jsonl").open("w", encoding="utf-8") as out:
        for i in range(100):
            age = '"x"' if i < 20 else "3"
            out.write(json.dumps({"model": hostile, "text": f'{{"name": "n", "age": {age}}}'}))
            out.write("\n")
    args = ("--group-by", "model", "--max-rate", "model=*:invalid=5%", "-q")
    assert run("log.jsonl", *args, "-f", "json", "-o", "old.json").exit_code == 1
    compared = ("--compare", "old.json")
    html = run("log.jsonl", *args, *compared, "-f", "html").stdout
    assert "<script>alert(1)" not in html
    assert "m&lt;script&gt;alert(1)&lt;/script&gt;\\u202e\\x1b[31m" in html
    text = run("log.jsonl", *args, *compared)
    assert "\x1b" not in text.stdout
    assert "\u202e" not in text.stdout
    assert "group m<script>alert(1)</script>\\u202e\\x1b[31m: 20%" in text.stdout
    junit = run("log.jsonl", *args, "-f", "junit").stdout
    assert "\x1b" not in junit
    assert "\u202e" not in junit


def test_the_confidence_level_widens_the_intervals(run: Any, tmp_path: Path) -> None:
    _log(tmp_path / "log.jsonl", invalid=set(range(30)), placeholder=set())
    args = ("--max-rate", "invalid=2%", "-q", "-f", "json", "-o", "r.json")
    run("log.jsonl", *args, "--confidence", "0.99")
    (gate,) = _rates("r.json")["gates"]
    low, high = wilson(30, 1000, 0.99)
    assert gate["interval"] == [round(low, 6), round(high, 6)]
    assert gate["interval"][0] < 0.021094  # wider than at 95 %
    assert "99% CI" in gate["message"]
    assert _rates("r.json")["confidence"] == 0.99
