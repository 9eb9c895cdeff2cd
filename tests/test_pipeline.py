"""The pipeline's wiring: schema arguments, and where pointer diagnostics point."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmfix
import llmfix.pipeline.core
from llmfix.pipeline.core import parse_candidates


def test_a_schema_given_as_a_file_name_says_to_use_load_schema(tmp_path: Path) -> None:
    with pytest.raises(llmfix.SchemaError, match=r"llmfix\.load_schema\('file\.json'\)"):
        llmfix.repair("{}", schema="file.json")
    path = tmp_path / "s.json"
    path.write_text('{"type": "object", "required": ["a"]}')
    assert llmfix.repair("{}", schema=llmfix.load_schema(str(path))).status.value == "invalid"


def test_schema_errors_get_the_line_and_column_of_their_value() -> None:
    text = 'Sure:\n```json\n{\n  "a": 1,\n  "b": {"c": "x"}\n}\n```\n'
    schema = {
        "properties": {
            "a": {"type": "string"},
            "b": {"properties": {"c": {"type": "integer"}}},
        },
        "required": ["d"],
    }
    result = llmfix.repair(text, schema=schema, schema_repair=False)
    where = {d.pointer: (d.position.line, d.position.column) for d in result.errors if d.position}
    assert where == {"/a": (4, 8), "/b/c": (5, 14), "": (3, 1)}
    for d in result.errors:
        assert d.span is not None
        assert text[d.span.start] in '{1"'


def test_schema_errors_in_a_repaired_answer_point_at_their_values() -> None:
    text = "Here you go:\n```json\n{\n  'a': 1, // one\n  'b': [\"x\", 2,],\n}\n```\n"
    schema = {"properties": {"b": {"items": {"type": "string"}}}}
    result = llmfix.repair(text, schema=schema, schema_repair=False)
    (error,) = result.errors
    assert error.pointer == "/b/1"
    assert error.position is not None
    assert (error.position.line, error.position.column) == (5, 14)


def test_schema_repairs_point_at_the_value_they_changed() -> None:
    text = '{\n  "age": "12"\n}'
    result = llmfix.repair(text, schema={"properties": {"age": {"type": "integer"}}})
    (coerced,) = [d for d in result.diagnostics if d.pointer == "/age"]
    assert coerced.position is not None
    assert (coerced.position.line, coerced.position.column) == (2, 10)


def test_parse_candidates_rejects_prose_as_repair_does() -> None:
    _, parsed = parse_candidates("just some words, nothing else")
    assert [p.ok for p in parsed] == [False]
    assert llmfix.repair("just some words, nothing else").status.value == "unparseable"


def test_a_renamed_key_points_at_where_the_value_was_written() -> None:
    text = '{\n  "Name": "Ada"\n}'
    schema = {"properties": {"name": {"type": "string"}}, "required": ["name"]}
    result = llmfix.repair(text, schema=schema)
    (renamed,) = [d for d in result.diagnostics if d.code.startswith("repair.rename_key")]
    assert renamed.pointer == "/name"
    assert renamed.position is not None
    assert (renamed.position.line, renamed.position.column) == (2, 11)


@pytest.mark.parametrize(
    ("text", "code", "decodes", "parser_decodes"),
    [
        # not JSON to any decoder: the parser is told where, and decodes only once patched
        ('{"a": [1, 2,], "b": "x"}', "parse.trailing_comma", 1, 1),
        ('{"a": 1, "a": 2}', "parse.duplicate_key", 2, 1),  # JSON the strict decoder refuses,
        ('  {"a": NaN}  ', "parse.js_literal", 2, 1),  # so extraction asks json.loads
    ],
)
def test_a_text_found_not_strict_is_decoded_once(
    monkeypatch: pytest.MonkeyPatch, text: str, code: str, decodes: int, parser_decodes: int
) -> None:
    """The whole text's failed strict decode is handed on: the parse of the same text does
    not decode it again, nor does extraction when the text is not JSON to any decoder."""
    import json

    from llmfix import jsontext
    from llmfix.repair_parser import _decoding

    calls: list[str] = []
    scans: list[int] = []

    def scan_once(doc: str, pos: int) -> object:
        if pos == 0:  # the value's start in the (stripped) text the parser reads
            scans.append(pos)
        return scan(doc, pos)

    scan = _decoding._scan_once
    monkeypatch.setattr(_decoding, "_scan_once", scan_once)

    def counted(decode):  # type: ignore[no-untyped-def]
        def run(s: str):  # type: ignore[no-untyped-def]
            if len(s.strip()) == len(text.strip()):
                calls.append(s)
            return decode(s)

        return run

    monkeypatch.setattr(jsontext, "strict_decode", counted(jsontext.strict_decode))
    monkeypatch.setattr(json, "loads", counted(json.loads))
    result = llmfix.repair(text)
    assert len(calls) == decodes
    assert len(scans) == parser_decodes
    assert result.ok
    assert code in {d.code for d in result.diagnostics}


# -- a whole text that is one broken value: parsed before extraction (pipeline.ONE_VALUE) ----

_ONE_VALUE_PIECES = st.sampled_from(
    [
        "True", "None", "1", '"a"', '"x, ]"', '"it\'s"', '"```json"', '"<tool_call>"', '"~~~"',
        '"say \\"hi\\""', '"\\\\"', "'a'", "{name}", "[value]", "```", "<json>", "// c\n",
        " and then ", '{"b": 2}', "...", "'", "`", "<", "]", "}", "{", "[",
    ]
)  # fmt: skip


@st.composite
def _one_value_texts(draw: st.DrawFn, depth: int = 0) -> str:
    """Mostly one broken value, with the pieces that decide what extraction finds (fences,
    tags, quotes, stray brackets, a second value) inside and outside its strings."""
    if depth > 2 or draw(st.integers(0, 3)) == 0:
        return draw(_ONE_VALUE_PIECES)
    items = draw(st.lists(_one_value_texts(depth + 1), max_size=4))
    trailing = draw(st.sampled_from(["", ",", ",\n"]))
    if draw(st.booleans()):
        return "[" + ", ".join(items) + trailing + "]"
    pairs = [f'"k{i}": {v}' for i, v in enumerate(items)]
    return "{" + ", ".join(pairs) + trailing + "}"


def _reading(text: str, one_value: bool) -> str:
    import json

    from llmfix.pipeline import core as pipeline

    with mock.patch.object(pipeline, "ONE_VALUE", one_value):
        result = llmfix.repair(text).to_dict()
    del result["timings"]
    return json.dumps(result, sort_keys=True, default=repr)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _one_value_texts(),
    st.floats(0.2, 1),
    st.sampled_from(["", " ", "\n"]),
    st.sampled_from(["", "\n", " and more", "\n```", ' {"c": 3}']),
)
def test_a_broken_value_parsed_first_reads_as_after_extraction(
    value: str, keep: float, before: str, after: str
) -> None:
    text = before + value[: max(1, int(len(value) * keep))] + after
    assert _reading(text, True) == _reading(text, False)


@pytest.mark.parametrize(
    ("text", "extracted"),
    [
        ('{"a": [1, 2,], "b": True}', False),  # literals and commas: the value alone
        ('{"a": "x <b> ```", "b": [None', False),  # cut off, markers only in strings
        ('{"a": 1,} and {"b": 2}', True),  # a second value: extraction finds it
        ("{'a': 1}", True),  # a repair that moves a string's bounds
        ('{"a": 1, b: 2}', True),
    ],
)
def test_extraction_runs_only_when_the_parse_cannot_tell(
    monkeypatch: pytest.MonkeyPatch, text: str, extracted: bool
) -> None:
    from llmfix.pipeline import core as pipeline

    calls: list[str] = []
    extract = pipeline.extract_candidates

    def counted(*args: object, **kwargs: object) -> object:
        calls.append("extract")
        return extract(*args, **kwargs)  # type: ignore[arg-type]

    parses: list[str] = []
    parse = pipeline.parse_json

    def counted_parse(text: str, **kwargs: object) -> object:
        parses.append(text)
        return parse(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "extract_candidates", counted)
    monkeypatch.setattr(pipeline, "parse_json", counted_parse)
    result = llmfix.repair(text)
    assert bool(calls) is extracted
    assert parses.count(text) == 1  # the whole text is parsed once either way
    assert result.value is not None


def test_a_value_is_listed_against_its_schema_once_before_repair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The errors found when a candidate is validated are the ones finish() starts from;
    only the repaired value is validated again."""
    from llmfix.pipeline.core import make_validator
    from llmfix.schema.validate import SchemaValidator

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    listed: list[object] = []
    errors = SchemaValidator.errors

    def counted(self: SchemaValidator, value: object) -> object:
        listed.append(value)
        return errors(self, value)

    monkeypatch.setattr(SchemaValidator, "errors", counted)
    validator = make_validator(schema)
    for text in ("{'n': '12'}", '{"n": "12"}', "Here: {'n': '12'}"):
        listed.clear()
        result = llmfix.pipeline.core.repair_text(text, validator=validator)
        assert result.value == {"n": 12}
        assert listed == [{"n": "12"}, {"n": 12}]
