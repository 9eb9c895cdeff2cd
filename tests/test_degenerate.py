"""Degenerate answers: valid JSON that holds no data (issue 35).

Several real shapes of each: the schema or its parts echoed back, template values, a
repetition loop cut by the token limit, whitespace until the limit (JSON mode's known
failure), an answer of empty values, one element repeated. Each is a warning with its code;
``--disable-rule`` turns a check off, the ``degenerate`` option moves its threshold, and
``--fail-on`` makes it fail. The conformance corpora's valid answers raise none.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import llmfix
from llmfix.cli import app
from llmfix.errors import ConfigError
from llmfix.options import Degenerate
from llmfix.pipeline.degenerate import degenerate
from tests import conformance, guided_conformance, tool_conformance

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "email": {"type": "string"},
        "age": {"type": "integer"},
    },
    "examples": [{"name": "Ada Lovelace", "email": "ada@analytical.org", "age": 36}],
}


def found(text: str, schema: Any = None, **options: Any) -> list[tuple[str, str | None]]:
    result = llmfix.repair(text, schema, **options)
    return [(d.code, d.pointer) for d in result.diagnostics if d.code.startswith("degenerate")]


# ------------------------------------------------------------------ each check


@pytest.mark.parametrize(
    "answer",
    [
        json.dumps(PERSON),  # the schema itself
        json.dumps(PERSON["properties"]),  # its properties
        json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", **PERSON}),
        json.dumps({"type": "object", "properties": PERSON["properties"], "required": ["name"]}),
        json.dumps(PERSON["examples"][0]),  # its example
        "Here is the JSON:\n```json\n" + json.dumps(PERSON, indent=2) + "\n```",
    ],
)
def test_schema_echo(answer: str) -> None:
    assert ("degenerate.schema_echo", "") in found(answer, PERSON)


def test_no_echo_without_a_schema_or_with_data() -> None:
    assert found(json.dumps(PERSON)) == []  # no schema given: a schema may be the answer
    data = {"name": "Grace Hopper", "email": "grace@navy.mil", "age": 85}
    assert found(json.dumps(data), PERSON) == []
    one_key = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "examples": [{"ok": 1}]}
    assert found('{"ok": 1}', one_key) == []  # a one-member example is too small to tell


@pytest.mark.parametrize(
    ("answer", "pointer"),
    [
        ('{"name": "John Doe", "age": 40}', "/name"),
        ('{"name": "Ada", "email": "example@example.com"}', "/email"),
        ('{"name": "<name>", "age": 1}', "/name"),
        ('{"city": "{{city}}"}', "/city"),
        ('{"city": "{city}"}', "/city"),
        ('{"title": "[Insert title here]"}', "/title"),
        ('{"notes": "TODO"}', "/notes"),
        ('{"summary": "Lorem ipsum dolor sit amet, consectetur adipiscing elit."}', "/summary"),
        ('{"name": "string", "age": 0}', "/name"),
        ('{"people": [{"name": "Jane Doe"}]}', "/people/0/name"),
        ('{"a/b": "TBD"}', "/a~1b"),
    ],
)
def test_placeholder_values(answer: str, pointer: str) -> None:
    assert ("degenerate.placeholder", pointer) in found(answer)


@pytest.mark.parametrize(
    "answer",
    [
        '{"type": "string", "format": "email"}',  # a type name under a key that names a type
        '{"columns": [{"name": "id", "data_type": "integer"}]}',
        '{"name": "Johnny Doerr", "email": "jd@example.org"}',
        '{"text": "<p>hello</p>", "tag": "<br>x"}',
        '{"template": "Dear {name}, your order shipped"}',
        '{"value": "not TODO at all"}',
    ],
)
def test_data_is_no_placeholder(answer: str) -> None:
    assert found(answer) == []


def test_the_placeholder_list_is_configurable() -> None:
    assert found('{"owner": "TBA"}') == []
    extra = {"degenerate": {"extra_placeholders": ["TBA"]}}
    assert found('{"owner": "TBA"}', **extra) == [("degenerate.placeholder", "/owner")]
    replaced = {"degenerate": {"placeholders": ["unknown"]}}
    assert found('{"owner": "John Doe", "b": "Unknown"}', **replaced) == [
        ("degenerate.placeholder", "/b")
    ]
    assert found('{"owner": "<name>"}', **replaced) == []  # a list of its own: no templates


@pytest.mark.parametrize(
    "answer",
    [
        # cut by the token limit inside a string: closed by the repair, read as truncated
        '{"summary": "The quarterly numbers' + " are up and" * 60,
        '{"items": ["a"], "note": "' + "ha" * 300 + '"}',
        '{"text": "' + "The answer is 42. " * 20 + '"}',
        '{"digits": "3.' + "14" * 150 + '"}',
    ],
)
def test_repetition_loops(answer: str) -> None:
    codes = [code for code, _ in found(answer)]
    assert "degenerate.repetition" in codes


def test_a_loop_reports_its_unit_and_length() -> None:
    result = llmfix.repair('{"s": "intro ' + "na" * 200 + '"}')
    (loop,) = [d for d in result.diagnostics if d.code == "degenerate.repetition"]
    assert loop.data is not None
    assert (loop.data["period"], loop.data["length"]) == (2, 400)
    assert "'na' 200 times" in loop.message
    assert loop.position is not None
    assert loop.pointer == "/s"


def test_text_that_repeats_a_little_is_no_loop() -> None:
    prose = "It was the best of times, it was the worst of times. " * 3
    assert found(json.dumps({"text": prose})) == []
    assert found(json.dumps({"rule": "-" * 80})) == []  # under loop-chars
    assert found(json.dumps({"rule": "-" * 300})) != []
    assert found(json.dumps({"rule": "-" * 300}), degenerate={"loop_chars": 400}) == []


@pytest.mark.parametrize(
    ("answer", "pointer"),
    [
        ('{"answer": 42}' + "\n" * 300, None),  # JSON mode's whitespace to the limit
        ('{"answer": 42,' + " " * 500, None),  # ... and cut there
        ('{"a": [1,\n' + "\t" * 250 + "2]}", None),
        (json.dumps({"text": "end" + "\n" * 260}), "/text"),
    ],
)
def test_whitespace_runs(answer: str, pointer: str | None) -> None:
    assert ("degenerate.whitespace_run", pointer) in found(answer)


def test_indentation_is_no_whitespace_run() -> None:
    deep: Any = 1
    for _ in range(40):
        deep = {"k": deep}
    assert found(json.dumps(deep, indent=2)) == []
    assert found('{"a": 1}' + "\n" * 150) == []


@pytest.mark.parametrize(
    "answer",
    [
        '{"name": "", "email": "", "age": null}',
        '{"user": {"name": "", "tags": []}, "notes": null}',
        '[{"title": ""}, {"title": ""}]',
    ],
)
def test_all_empty(answer: str) -> None:
    assert ("degenerate.all_empty", "") in found(answer)


@pytest.mark.parametrize(
    "answer",
    [
        '{"errors": [], "warnings": []}',  # nothing found is an answer
        '{"name": "", "age": 3}',
        '{"a": null}',
        "{}",
        "[]",
    ],
)
def test_empty_but_no_all_empty(answer: str) -> None:
    assert found(answer) == []


@pytest.mark.parametrize(
    ("answer", "pointer", "start", "count"),
    [
        ('{"tags": ["a", "b", "b", "b", "b", "b"]}', "/tags", 1, 5),
        (json.dumps({"rows": [{"id": 1}] * 8}), "/rows", 0, 8),
        (json.dumps([["x", 1]] * 5), "", 0, 5),
        (json.dumps({"s": ["", "", "", "", ""]}), "/s", 0, 5),
    ],
)
def test_repeated_elements(answer: str, pointer: str, start: int, count: int) -> None:
    result = llmfix.repair(answer)
    (d,) = [d for d in result.diagnostics if d.code == "degenerate.repeated_elements"]
    assert (d.pointer, d.data) == (pointer, {"start": start, "count": count})


def test_numbers_and_short_runs_repeat_as_data() -> None:
    assert found(json.dumps({"v": [0, 0, 0, 0, 0, 0, 0]})) == []
    assert found(json.dumps({"v": [True] * 6, "n": [None] * 6})) == []
    assert found(json.dumps({"tags": ["x", "x", "x", "x", "y"]})) == []
    assert found(json.dumps({"tags": ["x", "x", "x"]}), degenerate={"repeated_elements": 3})


# ------------------------------------------------------------------ rules and options


def test_each_check_is_a_rule_disable_rule_turns_off() -> None:
    answer = '{"name": "John Doe", "tags": ["a", "a", "a", "a", "a"]}'
    assert {c for c, _ in found(answer)} == {
        "degenerate.placeholder",
        "degenerate.repeated_elements",
    }
    assert found(answer, disabled_rules=["placeholder"]) == [
        ("degenerate.repeated_elements", "/tags")
    ]
    assert found(answer, disabled_rules=["placeholder", "repeated-elements"]) == []


def test_warnings_do_not_change_the_status_or_the_value() -> None:
    answer = '{"name": "John Doe", "email": "example@example.com", "age": 3}'
    result = llmfix.repair(answer, PERSON)
    assert result.status is llmfix.Status.VALID
    assert result.ok
    assert result.value == json.loads(answer)
    assert {d.severity.value for d in result.diagnostics} == {"warning"}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"loop_chars": 0}, "whole number from 1"),
        ({"loop_repeats": 1}, "whole number from 2"),
        ({"loop_chars": "many"}, "whole number from 1"),
        ({"loops": 3}, "unknown threshold 'loops'"),
        ({"placeholders": [1]}, "list of strings"),
    ],
)
def test_bad_thresholds(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Degenerate.from_mapping(given)


def test_detection_is_linear_in_shape() -> None:
    # One megabyte string: only its end is compared, once per period, so a loop-free
    # string of any length costs the same handful of slice comparisons.
    options = Degenerate()
    big = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(1_000_000))
    assert degenerate({"s": big}, None, None, options) == []
    whitespace = "x" + " " * 199 + "y"
    text = whitespace * 5000  # a million characters of runs one short of the threshold
    assert degenerate(None, text, None, options) == []


# ------------------------------------------------------------------ the command line


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LLMFIX_CONFIG", raising=False)
    (tmp_path / "a.json").write_text('{"name": "John Doe", "age": 3}')
    (tmp_path / "b.json").write_text('{"name": "Ada", "age": 36}')
    return tmp_path


def test_check_warns_and_fail_on_makes_them_fail(workdir: Path) -> None:
    runner = CliRunner()
    base = ["check", "a.json", "b.json", "--no-config"]
    warned = runner.invoke(app, [*base, "-v"])
    assert warned.exit_code == 0
    assert "warning degenerate.placeholder: placeholder value 'John Doe'" in warned.stdout
    for fail_on in ("degenerate", "degenerate.placeholder", "repaired,degenerate"):
        failed = runner.invoke(app, [*base, "--fail-on", fail_on])
        assert failed.exit_code == 1, fail_on
        assert "degenerate.placeholder (--fail-on" in failed.stdout
    other = runner.invoke(app, [*base, "--fail-on", "degenerate.repetition"])
    assert other.exit_code == 0
    bad = runner.invoke(app, [*base, "--fail-on", "degenerated"])
    assert (bad.exit_code, "--fail-on must be one of" in bad.stderr) == (2, True)
    off = runner.invoke(app, [*base, "--fail-on", "degenerate", "--disable-rule", "placeholder"])
    assert off.exit_code == 0
    added = runner.invoke(
        app, ["check", "b.json", "--fail-on", "degenerate", "--degenerate", "placeholder=Ada"]
    )
    assert added.exit_code == 1
    wrong = runner.invoke(app, ["check", "b.json", "--degenerate", "loop-chars"])
    assert (wrong.exit_code, "expected NAME=VALUE" in wrong.stderr) == (2, True)


def test_repair_fails_on_degenerate_when_asked(workdir: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["repair", "a.json"]).exit_code == 0
    assert runner.invoke(app, ["repair", "a.json", "--fail-on", "degenerate"]).exit_code == 1


def test_the_config_file_sets_thresholds_and_fail_on(workdir: Path) -> None:
    (workdir / "llmfix.yaml").write_text(
        "fail-on: invalid,degenerate\noptions:\n  degenerate:\n    extra-placeholders: [Ada]\n"
    )
    result = CliRunner().invoke(app, ["check", "b.json"])
    assert result.exit_code == 1
    assert "placeholder value 'Ada'" in result.stdout


# ------------------------------------------------------------------ no false positive


def _corpus_answers() -> list[tuple[str, str, Any, dict[str, Any]]]:
    """Every valid answer of the conformance corpora: the repair corpora's answers that
    llmfix reads as written (valid, or extracted from prose and fences), every answer of
    the schema-guided corpus that must not fail, and every tool-call corpus input."""
    out: list[tuple[str, str, Any, dict[str, Any]]] = []
    for case in conformance.load_cases():
        if not case.must_fail:
            out.append((case.id, case.input, case.schema, {}))
    for g in guided_conformance.load_cases():
        if not g.must_fail:
            out.append((g.id, g.input, g.schema, dict(g.options)))
    return out


def test_no_warning_on_the_corpora_valid_answers() -> None:
    checked = 0
    flagged = []
    for case_id, text, schema, options in _corpus_answers():
        result = llmfix.repair(text, schema, **options)
        guided = not case_id.startswith(("json_repair", "jsonrepair"))
        if not guided and result.status.value not in ("valid", "extracted"):
            continue
        checked += 1
        flagged += [(case_id, d.code) for d in result.diagnostics if d.stage == "degenerate"]
    assert checked > 400
    assert flagged == []


def test_no_warning_on_the_tool_call_corpus() -> None:
    flagged = []
    cases = tool_conformance.load_cases()
    for case in cases:
        result = llmfix.check_tool_calls(case.input, None)
        flagged += [(case.id, d.code) for d in result.diagnostics if d.stage == "degenerate"]
    assert len(cases) > 100
    assert flagged == []


def test_the_summaries_count_degenerate_answers(workdir: Path) -> None:
    runner = CliRunner()
    (workdir / "c.json").write_text('{"name": "<your name>", "age": 5}')
    text = runner.invoke(app, ["check", "a.json", "b.json", "c.json", "--no-config", "-q"])
    assert text.exit_code == 0
    assert "Degenerate answers" in text.stdout
    assert re.search(r"degenerate\.placeholder\s+│\s+2\b", text.stdout)
    html = runner.invoke(
        app, ["check", "a.json", "b.json", "c.json", "--no-config", "-q", "-f", "html"]
    )
    found = re.search(r'<div class="chart" id="chart-degenerate">.*?</div>', html.stdout)
    assert found is not None
    assert 'data-key="degenerate.placeholder" data-count="2"' in found.group(0)
    report = runner.invoke(
        app, ["check", "a.json", "b.json", "c.json", "--no-config", "-q", "-f", "json"]
    )
    summary = json.loads(report.stdout)["summary"]
    assert summary["items_by_code"]["degenerate.placeholder"] == 2
    assert summary["items_by_family"]["degenerate"] == 2


# ------------------------------------------------------------------ the quick screens


def _brute_run(text: str, threshold: int) -> tuple[int, int] | None:
    """The first run of ``threshold`` or more of `` \\t\\r\\n``, one character at a time."""
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \t\r\n":
            j = i
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j - i >= threshold:
                return i, j
            i = j
        else:
            i += 1
    return None


def test_whitespace_runs_are_found_as_one_character_at_a_time_finds_them() -> None:
    from llmfix.pipeline.degenerate import _whitespace_run

    rng = random.Random(5)
    for _ in range(6000):
        threshold = rng.choice([1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 50, 200])
        alphabet = rng.choice([" a", " \n\tx", "ab \r", "  \n\n\t\tq", "a", "é \n"])
        weights = [rng.random() for _ in alphabet]
        text = "".join(rng.choices(alphabet, weights=weights, k=rng.randint(0, 600)))
        if rng.random() < 0.3:  # one run about as long as the threshold
            at = rng.randint(0, len(text))
            run = "".join(rng.choices(" \t\r\n", k=rng.randint(0, 2 * threshold + 3)))
            text = text[:at] + run + text[at:]
        assert _whitespace_run(text, threshold) == _brute_run(text, threshold), (threshold, text)


_WORDS = [
    "Ada",
    "string",
    " STRING ",
    "todo",
    "TBD\n",
    "<name>",
    "{{x}}",
    "lorem ipsum dolor",
    "",
    "x",
    "ok",
    "John Doe",
    "a\x00b",
    "\u00a0todo",
    "K",
    "Straße",
    "abc" * 80,
]


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 4 and roll < 0.25:
        keys = rng.choices(
            ["type", "name", "kind", "note", "a", "b", "format"], k=rng.randint(0, 4)
        )
        return {key: _random_value(rng, depth + 1) for key in keys}
    if depth < 4 and roll < 0.45:
        if rng.random() < 0.2:  # a run of one element
            item = _random_value(rng, depth + 1)
            return [item] * rng.randint(1, 7)
        return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    if roll < 0.75:
        word = rng.choice(_WORDS)
        if rng.random() < 0.05:  # a loop or a whitespace run inside a string
            word = "text " + rng.choice(["ab", "xyz ", " ", "\n"]) * rng.randint(50, 260)
        return word
    return rng.choice([None, None, 0, 1.5, True, False])


def test_the_screen_finds_what_the_walk_finds() -> None:
    """On values of every shape, the warnings with the screen on are the walk's own: the
    screen only ever skips a walk that would have found nothing."""
    import llmfix.pipeline.degenerate as module

    rng = random.Random(35)
    options = [Degenerate(), Degenerate(placeholders=("n/a", "Ada")), Degenerate(loop_chars=40)]
    screened = 0
    for _ in range(4000):
        value = _random_value(rng)
        text = json.dumps(value) if rng.random() < 0.5 else None
        given = rng.choice(options)
        disabled = frozenset(rng.sample(module.RULE_IDS, rng.randint(0, 2)))
        quick = degenerate(value, text, None, given, disabled)
        original = module._quiet
        module._quiet = lambda *args: False  # the walk alone
        try:
            walked = degenerate(value, text, None, given, disabled)
        finally:
            module._quiet = original
        assert quick == walked, value
        screened += not walked
    assert screened > 500  # (the screen had work to do)
