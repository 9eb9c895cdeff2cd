"""Number texts kept through reading and writing, and where a pointer's value is written."""

from __future__ import annotations

import copy
import json
import math
import pickle

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from llmfix.jsontext import (
    JsonNumber,
    ValueLocator,
    dumps,
    dumps_indented,
    loads,
    read_float,
    yaml_dumper,
)
from tests.test_properties import json_values

# Tokens whose float reading gives back another text: each must be written as it came.
CHANGED_BY_FLOAT = [
    "1e5",
    "1E5",
    "1.50",
    "0.1000000000000000055511151231257827",
    "0.00001",
    "1e400",
    "-1e400",
    "1e-400",
    "12345678901234567890.5",
    "1.0e2",
]


@pytest.mark.parametrize("token", CHANGED_BY_FLOAT)
def test_a_number_whose_float_reading_changes_its_text_is_written_back_as_written(
    token: str,
) -> None:
    value = loads(f'{{"n": {token}}}')
    assert dumps(value, separators=(",", ":")) == f'{{"n":{token}}}'


@pytest.mark.parametrize("token", ["12.5", "-0.25", "3.0", "0.001", "1e-07", "123.456"])
def test_a_number_that_survives_the_float_reading_stays_a_plain_float(token: str) -> None:
    assert type(read_float(token)) is float
    assert float.__repr__(float(token)) == token


@pytest.mark.parametrize("token", CHANGED_BY_FLOAT)
def test_read_float_keeps_exactly_the_tokens_repr_would_change(token: str) -> None:
    assert type(read_float(token)) is JsonNumber


def test_an_out_of_range_number_is_never_written_as_infinity() -> None:
    text = dumps([read_float("1e400"), read_float("-1e400")])
    assert "Infinity" not in text
    assert text == "[1e400, -1e400]"


def test_a_plain_infinite_float_is_written_as_null_not_infinity() -> None:
    assert dumps({"a": math.inf, "b": [math.nan]}) == '{"a": null, "b": [null]}'


def test_a_json_number_is_a_float_for_comparisons_and_schemas() -> None:
    number = read_float("1e5")
    assert number == 100000.0
    assert isinstance(number, float)
    assert number > 99_999


def test_a_json_number_survives_pickle_and_deepcopy_with_its_text() -> None:
    number = read_float("1.50")
    for copied in (pickle.loads(pickle.dumps({"n": number}))["n"], copy.deepcopy(number)):
        assert type(copied) is JsonNumber
        assert copied.text == "1.50"


def test_dumps_matches_json_dumps_when_there_is_nothing_to_keep() -> None:
    value = {"a": [1, 2.5, "x\u00e9", None, True], "b": {"c": "\u0000"}}
    for indent in (None, 2):
        assert dumps(value, indent=indent) == json.dumps(value, indent=indent, ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from([0, 1, 2, 4]), st.booleans())
def test_indented_dumps_is_what_json_dumps_writes(value: object, indent: int, ascii: bool) -> None:
    expected = json.dumps(value, indent=indent, ensure_ascii=ascii)
    assert dumps(value, indent=indent, ensure_ascii=ascii) == expected
    assert dumps_indented(value, indent, margin="  ") == json.dumps(
        value, indent=indent, ensure_ascii=False
    ).replace("\n", "\n  ")


class _Text(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        {"n": read_float("1.50"), "big": [read_float("1e400")], "inf": math.inf},
        {1: "int key", "nested": {True: None}},  # keys json.dumps converts
        {"sub": _Text("a str subclass"), "tuple": (1, [2, {}], [])},
        {"deep": [[[[[[{"a": []}]]]]]]},
    ],
)
def test_indented_dumps_of_kept_numbers_and_unusual_values_matches_the_general_path(
    value: object,
) -> None:
    texts: list[str] = []
    from llmfix.jsontext import _mark

    expected = json.dumps(_mark(value, texts, "n"), indent=2, ensure_ascii=False)
    for i, text in enumerate(texts):
        expected = expected.replace(f'"\\u0000n{i}\\u0000"', text)
    assert dumps(value, indent=2) == expected
    assert dumps_indented(value, margin="    ") == expected.replace("\n", "\n    ")


def test_a_string_that_looks_like_a_marker_is_left_alone() -> None:
    value = {"s": "\x00000000000000\x00", "n": read_float("1e5")}
    assert json.loads(dumps(value)) == {"s": "\x00000000000000\x00", "n": 100000.0}


def test_yaml_reads_back_a_json_number_as_its_value() -> None:
    value = {"a": read_float("1e5"), "b": read_float("1.50"), "c": read_float("1e400")}
    text = yaml.dump(value, Dumper=yaml_dumper(), sort_keys=False)
    assert yaml.safe_load(text) == {"a": 100000.0, "b": 1.5, "c": math.inf}
    assert "1e5" in text
    assert "1.50" in text


PRETTY = '{\n  "name": "Ann",\n  "age": "x",\n  "tags": [\n    1,\n    "b"\n  ]\n}\n'


@pytest.mark.parametrize(
    ("pointer", "written"),
    [
        ("", PRETTY.rstrip()),
        ("/age", '"x"'),
        ("/tags/1", '"b"'),
        ("/tags/9", '[\n    1,\n    "b"\n  ]'),  # no such item: its array
        ("/missing", PRETTY.rstrip()),  # no such key: the object
    ],
)
def test_value_locator_finds_the_value_or_its_nearest_ancestor(pointer: str, written: str) -> None:
    span = ValueLocator(PRETTY).span(pointer)
    assert span is not None
    assert PRETTY[span[0] : span[1]] == written


def test_value_locator_points_at_the_kept_value_of_a_duplicate_key() -> None:
    text = '{"a": 1, "a": 2}'
    span = ValueLocator(text).span("/a")
    assert span == (14, 15)


BROKEN = """{
  // the model's note
  'a': 1,
  b: [1, 2,],
  "c": {"d": True, "e": 'x',},  /* more */
  "f": 3,
}"""


@pytest.mark.parametrize(
    ("pointer", "written"),
    [("/a", "1"), ("/b/1", "2"), ("/c/e", "'x'"), ("/f", "3"), ("/c", None)],
)
def test_value_locator_reads_the_breakage_models_write(pointer: str, written: str | None) -> None:
    span = ValueLocator(BROKEN).span(pointer)
    assert span is not None
    if written is None:
        assert BROKEN[span[0] : span[1]].startswith('{"d": True')
    else:
        assert BROKEN[span[0] : span[1]] == written


def test_value_locator_skips_broken_brackets_whole() -> None:
    # Quoted commas, brackets and escaped quotes inside a value that is not strict JSON.
    text = """{'tags': ['a, b', 'c]', 'd\\'e', ("f", [1, 2],),], 'g': None, 'h': 'x'}"""
    locator = ValueLocator(text)
    span = locator.span("/tags")
    assert span is not None
    assert text[span[0] : span[1]] == """['a, b', 'c]', 'd\\'e', ("f", [1, 2],),]"""
    assert locator.span("/h") == (len(text) - 4, len(text) - 1)


@pytest.mark.parametrize(
    "pointer", ["", "/name", "/tags", "/tags/1", "/none", "/name/x", "/tags/7"]
)
def test_value_locator_of_a_strict_text_gives_what_a_full_read_gives(pointer: str) -> None:
    # whole=True: the root is not read, and an object is scanned only up to the member
    # asked for; the spans are those of a full read.
    text = '  {"name": "Ada", "tags": ["a", {"b": [1]}], "none": null}\n'
    assert ValueLocator(text, whole=True).span(pointer) == ValueLocator(text).span(pointer)


def test_value_locator_gives_the_ancestor_when_the_text_cannot_be_read() -> None:
    text = '{"a": [1, 2 3 @@'
    locator = ValueLocator(text)
    assert locator.span("/a/5") == (6, len(text))
    assert locator.span("/zz") == (0, len(text))


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="{}[]()\",:'/*# \n\\abc1-eE.", max_size=60),
    st.lists(st.sampled_from(["a", "b", "0", "1", ""]), max_size=3),
)
def test_value_locator_never_fails_and_stays_inside_the_text(text: str, tokens: list[str]) -> None:
    span = ValueLocator(text).span("".join("/" + t for t in tokens))
    if span is not None:
        assert 0 <= span[0] <= span[1] <= len(text)
