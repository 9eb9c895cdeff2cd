"""llmfix.run.repair_lines: JSON Lines in, one result line per record out, as each arrives."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

from llmfix import make_options
from llmfix.model import ExitCode
from llmfix.run.repair_lines import repair_jsonl


def results(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_one_result_line_per_record_with_the_field_read() -> None:
    out = io.StringIO()
    lines = ['{"output": "{\\"a\\": 1,}"}\n', '{"output": "{\\"b\\": 2}"}\n']
    code = repair_jsonl(lines, out, options=make_options(), field="output")
    got = results(out)
    assert code is ExitCode.OK
    assert [(r["line"], r["status"], r["value"]) for r in got] == [
        (1, "repaired", {"a": 1}),
        (2, "valid", {"b": 2}),
    ]
    assert got[0]["risk"] == "lossless"
    assert got[0]["diagnostics"]


def test_a_line_that_is_not_json_is_an_error_line_and_the_run_fails() -> None:
    out = io.StringIO()
    code = repair_jsonl(["not json at all\n", '"{}"\n'], out, options=make_options())
    got = results(out)
    assert code is ExitCode.FAILED
    assert (got[0]["line"], got[0]["status"], got[0]["value"]) == (1, "error", None)
    assert got[1]["status"] == "valid"


def test_the_gate_decides_the_exit_code() -> None:
    record = '{"output": "{\\"a\\": 1,}"}\n'
    out = io.StringIO()
    passed = repair_jsonl([record], out, options=make_options(), field="output")
    assert passed is ExitCode.OK
    out = io.StringIO()
    options = make_options()
    code = repair_jsonl([record], out, options=options, field="output", fail_on="repaired")
    [line] = results(out)
    assert code is ExitCode.FAILED
    assert line["failures"] == ["status repaired (--fail-on repaired)"]


def test_each_result_is_written_before_the_next_record_is_read() -> None:
    out = io.StringIO()
    seen: list[int] = []

    def records() -> Iterator[str]:
        for n in range(3):
            seen.append(len(out.getvalue().splitlines()))
            yield json.dumps({"n": n}) + "\n"

    repair_jsonl(records(), out, options=make_options())
    assert seen == [0, 1, 2]
    assert [r["value"] for r in results(out)] == [{"n": 0}, {"n": 1}, {"n": 2}]
