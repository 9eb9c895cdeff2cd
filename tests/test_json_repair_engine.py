"""json-repair's log in llmfix's codes, and json-repair run under an outside time limit."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from llmfix.deadline import Deadline, OutOfTime
from llmfix.model import Risk
from llmfix.parse import json_repair as engine
from llmfix.parse.json_repair import LOG_CODES, UNMAPPED, log_repairs, run_json_repair, same_reading
from llmfix.repair_parser import CODES, repair_parse


def _log_texts() -> list[str]:
    """The text (or the fixed start of an f-string) of every log call in json-repair."""
    import json_repair

    texts = []
    for path in Path(json_repair.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr not in ("log", "_log") or not node.args:
                continue
            first = node.args[0]
            if isinstance(first, ast.JoinedStr) and first.values:
                first = first.values[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                texts.append(first.value)
    return texts


@pytest.mark.parametrize("start", [start for start, _ in LOG_CODES])
def test_each_mapped_text_is_one_json_repair_logs(start: str) -> None:
    assert any(text.startswith(start) or start.startswith(text) for text in _log_texts())


def test_every_mapped_code_is_one_of_llmfixs_reader() -> None:
    assert {code for _, codes in LOG_CODES for code in codes} - CODES.keys() == set()


def _logged(text: str) -> list[engine.LoggedRepair]:
    _, log = run_json_repair(text, 500, Deadline.never())
    return log_repairs(text, log, repair_parse(text).repairs)


def test_a_logged_fix_takes_the_span_and_risk_of_llmfixs_repair() -> None:
    text = '{"a": [1, 2'
    (found,) = _logged(text)
    assert (found.code, found.span, found.risk) == ("parse.truncated", (11, 11), Risk.GUESS)
    assert (
        found.message == "json-repair: While parsing an array we missed the closing ], ignoring it"
    )


def test_an_unquoted_string_is_one_fix_not_three_log_entries() -> None:
    assert [r.code for r in _logged('{"a": hello world}')] == ["parse.unquoted_string"]


def test_an_entry_with_no_mapping_keeps_json_repairs_text() -> None:
    log = [{"text": "Something new json-repair did", "context": "abc"}]
    (found,) = log_repairs("abc", log, ())
    assert found == (UNMAPPED, None, Risk.GUESS, "json-repair: Something new json-repair did")


def test_a_note_that_changes_nothing_gives_no_diagnostic() -> None:
    log = [{"text": "The parser returned early, checking if there's more json elements"}]
    assert log_repairs("[1] x", log, ()) == []


@pytest.mark.parametrize(
    ("ours", "theirs", "same"),
    [
        ({"a": 1, "b": [True, None, "x"]}, {"a": 1, "b": [True, None, "x"]}, True),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, False),  # written in another order
        ([1], [True], False),
        ([True], [1], False),
        ([1], [1.0], False),
        ([1.5], [1.5], True),
        (["1"], [1], False),
        ([[]], [{}], False),
        ([1, 2], [1], False),
    ],
)
def test_same_reading(ours: Any, theirs: Any, same: bool) -> None:
    assert same_reading(ours, theirs) is same


# -- the worker ----------------------------------------------------------------------------

_SLOW = "Some prose with {name} and [value] in it. " * 750


def test_out_of_time_in_the_worker_names_the_stage() -> None:
    with pytest.raises(OutOfTime) as raised:
        run_json_repair(_SLOW, 500, Deadline(0.1, "parse"))
    assert raised.value.stage == "parse"


def test_a_worker_that_died_is_replaced() -> None:
    assert run_json_repair("[1, 2,", 500, Deadline(30, "parse"))[0] == [1, 2]
    for idle in engine._idle:
        idle.process.kill()
        idle.process.wait()
    assert run_json_repair("{'a': 1", 500, Deadline(30, "parse"))[0] == {"a": 1}


def test_a_worker_answers_what_json_repair_answers_here() -> None:
    text = "{'a': [1, 2, {b: None}], // c\n 'd': 'it''s'}"
    assert run_json_repair(text, 500, Deadline(30, "parse")) == run_json_repair(
        text, 500, Deadline.never()
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_starts_its_own_worker_and_the_parents_keeps_working() -> None:
    assert run_json_repair("[1, 2,", 500, Deadline(30, "parse"))[0] == [1, 2]
    parents = engine._idle[-1].process.pid
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child)
        try:
            value = run_json_repair("{'child': 1", 500, Deadline(30, "parse"))[0]
            used = engine._idle[-1].process.pid
            os.write(write, json.dumps([value, used]).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    with os.fdopen(read, "rb") as answer:
        value, used = json.loads(answer.read())
    assert (value, used != parents) == ({"child": 1}, True)
    # The child left the parent's worker alone.
    assert (engine._idle[-1].process.pid, engine._idle[-1].alive()) == (parents, True)
    assert run_json_repair("{'parent': 1", 500, Deadline(30, "parse"))[0] == {"parent": 1}


def test_a_script_without_a_main_guard_is_not_run_again_by_the_worker(tmp_path: Path) -> None:
    script = tmp_path / "use_engine.py"
    script.write_text(
        "from llmfix.options import Limits\n"
        "from llmfix.parse.core import parse_json\n"
        "outcome = parse_json(\"{'a': 1,\", engine='json-repair', limits=Limits(time_budget=30))\n"
        "print(outcome.value)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "{'a': 1}\n", "")
