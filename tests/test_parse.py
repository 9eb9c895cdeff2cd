"""The parse stage: strict JSON first, then repairs that are all reported, within limits.

Both engines are tested here as the stage runs them; llmfix's reader itself is tested in
test_repair_parser.py, the mapping of json-repair's log in test_json_repair_engine.py.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmfix.deadline import Deadline
from llmfix.errors import ConfigError
from llmfix.jsontext import dumps
from llmfix.model import Risk, Severity
from llmfix.options import Limits
from llmfix.parse.core import ParseOutcome, parse_json

ENGINES = ["llmfix", "json-repair"]


def _codes(outcome: ParseOutcome) -> list[str]:
    return [d.code for d in outcome.diagnostics]


def with_json_repair(text: str, **options: Any) -> ParseOutcome:
    return parse_json(text, engine="json-repair", **options)


# -- strict ------------------------------------------------------------------------------

VALID = [
    '{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "\\u00e9\\n"}}',
    "[]",
    '""',
    "0",
    '  \n {"a": 1} \n',
    '"[1, 2,]"',
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("text", VALID)
def test_valid_json_is_strict_with_no_diagnostics(text: str, engine: str) -> None:
    outcome = parse_json(text, engine=engine)
    assert (outcome.strict, outcome.diagnostics) == (True, ())


@pytest.mark.parametrize("text", VALID)
def test_valid_json_value_is_what_json_gives(text: str) -> None:
    assert with_json_repair(text).value == json.loads(text)


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@settings(max_examples=100, deadline=None)
@given(_json_values)
def test_any_dumped_value_parses_strictly_to_itself(value: Any) -> None:
    outcome = with_json_repair(json.dumps(value))
    assert (outcome.ok, outcome.strict, outcome.value) == (True, True, value)


def _with_trailing_commas_and_comments(text: str) -> str:
    # json.dumps escapes newlines in strings, so every raw newline here is layout.
    text = re.sub(r"(?<=[^\[{\s])\n(\s*)([}\]])", r",\n\1\2", text)
    return text.replace("\n", "  // note\n")


@settings(max_examples=50, deadline=None)
@given(_json_values.filter(lambda v: isinstance(v, (list, dict))))
def test_lossless_departures_keep_the_value(value: Any) -> None:
    text = _with_trailing_commas_and_comments(json.dumps(value, indent=1))
    outcome = parse_json(text)
    risks = {d.risk for d in outcome.diagnostics}
    assert (outcome.value, risks <= {Risk.LOSSLESS}) == (value, True)


@settings(max_examples=50, deadline=None)
@given(_json_values.filter(lambda v: isinstance(v, (list, dict))))
def test_json_repair_never_reads_differently_in_silence(value: Any) -> None:
    # json-repair has its own readings of some escapes (\f, surrogate pairs): a value
    # other than llmfix's is allowed, but only with a guess saying so.
    text = _with_trailing_commas_and_comments(json.dumps(value, indent=1))
    outcome = with_json_repair(text)
    risks = {d.risk for d in outcome.diagnostics}
    if outcome.value == value:
        assert risks <= {Risk.LOSSLESS}
    else:
        assert (_codes(outcome)[-1], outcome.diagnostics[-1].risk) == (
            "parse.json_repair",
            Risk.GUESS,
        )


def test_unknown_engine_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown parse engine"):
        parse_json("{}", engine="magic")


# -- repairs: where json-repair reads what llmfix's reader reads, its account is used -------

REPAIRS = [
    ('{"a": 1,}', {"a": 1}, ["parse.trailing_comma"]),
    ("{'a': True}", {"a": True}, ["parse.single_quotes", "parse.python_literal"]),
    ('{"a": [1, 2', {"a": [1, 2]}, ["parse.truncated"]),
    (
        '{"name": "Ada", "note": "she said "hi" twice"}',
        {"name": "Ada", "note": 'she said "hi" twice'},
        ["parse.unescaped_quote", "parse.unescaped_quote"],
    ),
    ('{"a": hello world}', {"a": "hello world"}, ["parse.unquoted_string"]),
    ("[1,,2]", [1, 2], ["parse.trailing_comma"]),
    ('{"a":\u00a01}', {"a": 1}, ["parse.special_whitespace"]),
]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("text", "expected", "codes"), REPAIRS)
def test_repair_is_reported_with_one_code_per_fix(
    text: str, expected: Any, codes: list[str], engine: str
) -> None:
    outcome = parse_json(text, engine=engine)
    assert (outcome.ok, outcome.strict, outcome.value) == (True, False, expected)
    assert _codes(outcome) == codes
    assert all(d.span is not None for d in outcome.diagnostics)


def test_positions_are_relative_to_the_text() -> None:
    outcome = with_json_repair('{\n  "a": 1,\n  "b": [1, 2,],\n}')
    assert [str(d.position) for d in outcome.diagnostics] == ["3:13", "3:15"]


def test_json_repair_engine_keeps_number_texts_and_notes_a_duplicate_key() -> None:
    from llmfix.jsontext import dumps

    duplicate = with_json_repair("{'a': 1, 'a': 2}")
    assert duplicate.value == {"a": 2}
    assert "parse.duplicate_key" in _codes(duplicate)
    numbers = with_json_repair("{'n': 1e400, 'm': 1.50}")
    assert dumps(numbers.value) == '{"n": 1e400, "m": 1.50}'
    assert "parse.number_out_of_range" in _codes(numbers)


def test_strict_json_with_a_duplicate_key_is_read_by_the_own_parser_with_spans() -> None:
    outcome = with_json_repair('{"a": 1, "a": 2}')
    (dup,) = [d for d in outcome.diagnostics if d.code == "parse.duplicate_key"]
    assert dup.span is not None
    assert (dup.span.start, dup.span.end) == (9, 12)


# -- where the readings differ, json-repair's value and its log ---------------------------


def test_a_different_reading_keeps_json_repairs_value_and_says_so() -> None:
    # json-repair reads a missing colon before `true` as the string "rue".
    outcome = with_json_repair('{"a" true}')
    assert outcome.value == {"a": "rue"}
    assert _codes(outcome)[0] == "parse.missing_colon"
    assert _codes(outcome)[-1] == "parse.json_repair"
    assert outcome.diagnostics[-1].risk is Risk.GUESS


def test_a_logged_fix_gets_the_span_of_the_same_fix_from_llmfixs_reader() -> None:
    outcome = with_json_repair('{"a" true}')
    colon = outcome.diagnostics[0]
    assert colon.span is not None
    assert ((colon.span.start, colon.span.end), colon.risk) == ((4, 4), Risk.SAFE)
    assert colon.message.startswith("json-repair: While parsing an object we missed a :")


def test_a_fix_llmfixs_reader_did_not_make_has_no_span_and_is_a_guess() -> None:
    # json-repair reads NaN as a string; llmfix's reader reads it as null.
    outcome = with_json_repair("[NaN]")
    assert outcome.value == ["NaN"]
    unquoted = outcome.diagnostics[0]
    assert (unquoted.code, unquoted.span, unquoted.risk) == (
        "parse.unquoted_string",
        None,
        Risk.GUESS,
    )


# -- nothing to recover ------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n", "Sorry, I cannot help with that.", "hello"])
def test_nothing_recovered_by_json_repair_is_not_ok(text: str) -> None:
    outcome = with_json_repair(text)
    assert (outcome.ok, outcome.value, _codes(outcome)[-1]) == (False, None, "parse.failed")
    assert outcome.diagnostics[-1].severity is Severity.ERROR


def test_an_empty_string_literal_is_a_value() -> None:
    outcome = with_json_repair("''")
    assert (outcome.ok, outcome.value) == (True, "")


# -- limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_deep_nesting_hits_the_depth_limit_quickly(engine: str) -> None:
    started = time.perf_counter()
    outcome = parse_json("[" * 100_000, engine=engine)
    assert (_codes(outcome), time.perf_counter() - started < 2) == (["limits.depth"], True)


def test_deep_valid_json_hits_the_depth_limit() -> None:
    # The stdlib decoder raises RecursionError here; it must not escape.
    assert _codes(with_json_repair("[" * 100_000 + "]" * 100_000)) == ["limits.depth"]


@pytest.mark.parametrize("budget", [0.0, 30.0])
def test_recursion_in_json_repair_is_a_depth_limit(budget: float) -> None:
    limits = Limits(max_depth=1_000_000, time_budget=budget)
    assert _codes(with_json_repair("[" * 100_000 + "x", limits=limits)) == ["limits.depth"]


@pytest.mark.parametrize("budget", [0.0, 30.0])
def test_nesting_within_the_limit_is_repaired(budget: float) -> None:
    # Deeper than json-repair manages under the default recursion limit.
    text = "[" * 450 + "x" + "]" * 450
    assert with_json_repair(text, limits=Limits(max_depth=500, time_budget=budget)).ok


def test_recursion_limit_is_restored() -> None:
    before = sys.getrecursionlimit()
    with_json_repair("[" * 400 + "x" + "]" * 400, limits=Limits(time_budget=0))
    assert sys.getrecursionlimit() == before


@pytest.mark.parametrize("engine", ENGINES)
def test_size_limit(engine: str) -> None:
    outcome = parse_json("{'a': 1}" + " " * 100, limits=Limits(max_size=50), engine=engine)
    assert (outcome.ok, _codes(outcome)) == (False, ["limits.size"])


def test_size_limit_does_not_apply_to_valid_json() -> None:
    assert with_json_repair('{"a": "' + "x" * 100 + '"}', limits=Limits(max_size=50)).ok


# -- time --------------------------------------------------------------------------------

# json-repair takes tens of seconds on 30 KB of prose with braces and brackets in it.
_SLOW = "Some prose with {name} and [value] in it. " * 750
_LONG = "[" + ", ".join(f"{{'id': {i}, name: 'n{i}', ok: True,}}" for i in range(40_000)) + "]"


def test_llmfixs_reader_stops_at_the_deadline_naming_the_stage() -> None:
    started = time.perf_counter()
    outcome = parse_json(_LONG, limits=Limits(time_budget=0.005))
    elapsed = time.perf_counter() - started
    assert (_codes(outcome), elapsed < 1) == (["limits.time"], True)
    assert outcome.diagnostics[0].message == "parse took longer than the 0.005 s time budget"


def test_a_deadline_given_is_the_one_checked_and_named() -> None:
    outcome = parse_json(_LONG, deadline=Deadline(0.005, "extraction"))
    assert outcome.diagnostics[0].message.startswith("extraction took longer")


def test_a_slow_json_repair_is_stopped_and_the_next_call_works() -> None:
    started = time.perf_counter()
    outcome = with_json_repair(_SLOW, limits=Limits(time_budget=0.2))
    elapsed = time.perf_counter() - started
    # A new worker's start (an interpreter importing json-repair) is not counted.
    assert (_codes(outcome), elapsed < 5) == (["limits.time"], True)
    assert outcome.diagnostics[0].message == "parse took longer than the 0.2 s time budget"
    after = with_json_repair("{'a': hello}", limits=Limits(time_budget=5))
    assert after.value == {"a": "hello"}


def test_time_budget_in_a_thread() -> None:
    outcomes: list[ParseOutcome] = []
    limits = Limits(time_budget=0.2)
    worker = threading.Thread(
        target=lambda: outcomes.append(with_json_repair(_SLOW, limits=limits))
    )
    worker.start()
    worker.join(timeout=20)
    assert _codes(outcomes[0]) == ["limits.time"]


_brokenish = st.text(
    alphabet=st.sampled_from(list("{}[]:,'\"`\\ \n#/*.-+0123456789eETtruefalsNoxyz"))
)


@settings(max_examples=150, deadline=None)
@given(_brokenish)
def test_any_text_gives_an_outcome_and_a_repair_is_never_silent(text: str) -> None:
    for engine in ENGINES:
        outcome = parse_json(text, engine=engine)
        if outcome.ok and not outcome.strict:
            assert outcome.diagnostics, (engine, text)
        if not outcome.ok:
            assert outcome.diagnostics[-1].severity is Severity.ERROR


@pytest.mark.parametrize(
    ("text", "at"),
    [('{"a": 1_0e999}', (6, 13)), ("[1.e999,", (1, 7)), ('{"a": -1_0.5e9999, "b": 2}', (6, 17))],
)
def test_a_rewritten_number_that_overflows_is_null_where_it_was_written(
    text: str, at: tuple[int, int]
) -> None:
    outcome = parse_json(text)
    assert outcome.ok
    assert "null" in dumps(outcome.value)
    overflow = [d for d in outcome.diagnostics if "float range" in d.message]
    assert [(d.code, d.span.start, d.span.end) for d in overflow if d.span] == [
        ("parse.invalid_number", *at)
    ]
