"""Output encoding: every value ``json.loads`` accepts is written back out, without a traceback.

A lone surrogate (``"\\ud800"``) is valid JSON text but cannot be encoded as UTF-8; llmfix
writes it as its escape, on stdout, ``-o``, ``--in-place``, ``--write-fixed`` and in every
reporter.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llmfix.cli import app
from llmfix.files.atomic import OUTPUT_ERRORS, write_atomic
from llmfix.reporters import FORMATS

LONE = '{"a": "\\ud800", "b": ["x\\udfff y"], "\\udc00": 1}'
LONE_VALUE = json.loads(LONE)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    monkeypatch.delenv("LLMFIX_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> Any:
        return runner.invoke(app, list(args), input=input)

    return invoke


def test_the_error_handler_writes_json_escapes() -> None:
    assert "a\ud800b".encode("utf-8", OUTPUT_ERRORS) == b"a\\ud800b"
    assert "\U0001f600".encode("ascii", OUTPUT_ERRORS) == b"\\ud83d\\ude00"
    escaped = "é\U0001f600".encode("ascii", OUTPUT_ERRORS)
    assert json.loads(b'"' + escaped + b'"') == "é\U0001f600"


def test_write_atomic_keeps_a_lone_surrogate_as_an_escape(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_atomic(target, json.dumps(LONE_VALUE, ensure_ascii=False))
    assert json.loads(target.read_bytes()) == LONE_VALUE


def test_repair_prints_a_lone_surrogate_to_stdout(cli: Any) -> None:
    result = cli("repair", input=LONE)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == LONE_VALUE


def test_repair_output_file_and_in_place(cli: Any, tmp_path: Path) -> None:
    source = tmp_path / "answer.json"
    source.write_text(LONE + "\n```", encoding="utf-8")
    assert cli("repair", str(source), "-o", str(tmp_path / "out.json")).exit_code == 0
    assert json.loads((tmp_path / "out.json").read_bytes()) == LONE_VALUE
    assert cli("repair", str(source), "--in-place").exit_code == 0
    assert json.loads(source.read_bytes()) == LONE_VALUE


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_reporter_writes_a_lone_surrogate(cli: Any, tmp_path: Path, fmt: str) -> None:
    source = tmp_path / "answer.txt"
    source.write_text("```json\n" + LONE + "\n```", encoding="utf-8")
    schema = tmp_path / "schema.json"
    schema.write_text('{"properties": {"a": {"type": "integer"}}}')
    report = tmp_path / f"report.{fmt}"
    result = cli("check", str(source), "-s", str(schema), "-f", fmt, "-o", str(report), "-v")
    # "a" is not an integer: a real failure (writing a baseline of it succeeds)
    assert result.exit_code == (0 if fmt == "baseline" else 1), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    written = report.read_text(encoding="utf-8")
    # XML cannot hold the character at all (JUnit leaves it out); every other format escapes it
    # (the baseline keeps only what matching needs: the error's code, no message)
    shown = {"junit": "expected integer", "baseline": "schema.type"}.get(fmt, "ud800")
    assert shown in written.lower()
    stdout = cli("check", str(source), "-s", str(schema), "-f", fmt, "-v")
    assert stdout.exception is None or isinstance(stdout.exception, SystemExit)
    assert shown in stdout.stdout.lower()


# ---------------------------------------------------------------- the property

# Every code point, lone surrogates included, in keys and strings.
ANY_CHAR = st.characters(codec=None, exclude_categories=())
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(ANY_CHAR, max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(ANY_CHAR, max_size=6), inner)
    ),
    max_leaves=12,
)
documents = st.one_of(st.lists(values, max_size=4), st.dictionaries(st.text(ANY_CHAR), values))


def spell(value: Any, seed: int) -> str:
    """A JSON text for ``value`` using every escape: ``\\uXXXX`` for everything non-ASCII
    (or the character itself), and ``\\/`` for some slashes."""
    rng = random.Random(seed)
    text = json.dumps(value, ensure_ascii=rng.random() < 0.5)
    # UTF-8 cannot carry a lone surrogate even in the input: it comes escaped
    text = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
    if rng.random() < 0.5:
        text = text.replace("/", "\\/")  # a slash can only stand inside a string
    return text


PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@PROPERTY
@given(value=documents, seed=st.integers(0, 1000))
def test_any_json_value_round_trips_through_repair(cli: Any, value: Any, seed: int) -> None:
    text = spell(value, seed)
    result = cli("repair", "--compact", input=text)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == value


@PROPERTY
@given(value=documents, seed=st.integers(0, 1000))
def test_any_json_value_round_trips_through_check_write_fixed(
    cli: Any, tmp_path: Path, value: Any, seed: int
) -> None:
    work = tmp_path / f"w{seed}"
    work.mkdir(exist_ok=True)
    source = work / "answer.txt"
    # fenced, so the fixed copy is written from the value, not copied from the input
    source.write_text("```json\n" + spell(value, seed) + "\n```\n", encoding="utf-8")
    fixed = work / "fixed"
    result = cli("check", str(source), "--no-config", "-q", "--write-fixed", str(fixed))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 0, result.output
    [written] = [p for p in fixed.rglob("*") if p.is_file()]
    assert json.loads(written.read_bytes()) == value


def _checked(path: Path, field: str | None = None) -> list[Any]:
    """Every item of a file, checked and judged as `check` does it (no schema)."""
    from llmfix import make_options
    from llmfix.batch.core import Outcome, Profile, check_item
    from llmfix.batch.judge import judge
    from llmfix.inputs import ReadOptions, items_from_file

    profile = Profile(validator=None, options=make_options())
    return [
        judge(Outcome(item, check_item(item, profile)))
        for item in items_from_file(str(path), ReadOptions(field=field))
    ]


def test_fix_writer_mirrors_a_jsonl_file_with_only_the_repaired_records_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llmfix.batch.writers import FixWriter

    monkeypatch.chdir(tmp_path)
    lines = [
        json.dumps({"id": 1, "output": '{"a": 1,}'}),
        json.dumps({"id": 2, "output": '{"b": 2}'}),
        "not json",
    ]
    Path("log.jsonl").write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    writer = FixWriter(Path("fixed"))
    for checked in _checked(Path("log.jsonl"), field="output"):
        writer.add(checked)
    writer.close()
    written = Path("fixed/log.jsonl").read_bytes().decode().split("\r\n")
    assert json.loads(written[0]) == {"id": 1, "output": '{"a": 1}'}
    assert written[1:] == [lines[1], lines[2], ""]  # copied byte for byte


def test_fix_writer_in_place_leaves_a_valid_file_alone(tmp_path: Path) -> None:
    from llmfix.batch.writers import FixWriter

    valid, broken = tmp_path / "valid.json", tmp_path / "broken.txt"
    valid.write_text('{"a": 1}', encoding="utf-8")
    broken.write_text('Sure: {"a": 1,}', encoding="utf-8")
    before = valid.stat().st_mtime_ns
    writer = FixWriter(None)
    for path in (valid, broken):
        for checked in _checked(path):
            writer.add(checked)
    writer.close()
    assert valid.stat().st_mtime_ns == before
    assert json.loads(broken.read_text(encoding="utf-8")) == {"a": 1}


def test_results_writer_writes_jsonl_parts_and_refuses_a_used_directory(tmp_path: Path) -> None:
    from llmfix.batch.writers import ResultsWriter
    from llmfix.errors import ConfigError

    (tmp_path / "a.txt").write_text('{"a": 1,}', encoding="utf-8")
    rows = ResultsWriter(tmp_path / "rows", "jsonl")
    for checked in _checked(tmp_path / "a.txt"):
        rows.add(checked.outcome)
    rows.close()
    part = (tmp_path / "rows/part-00000.jsonl").read_text(encoding="utf-8")
    [row] = [json.loads(line) for line in part.splitlines()]
    assert (row["source"], row["status"]) == (str(tmp_path / "a.txt"), "repaired")
    with pytest.raises(ConfigError, match="already holds results"):
        ResultsWriter(tmp_path / "rows", "jsonl")
