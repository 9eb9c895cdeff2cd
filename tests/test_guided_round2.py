"""Schema-guided reading, round 2 (issue 31): XML with structure, TOON, unwrapping, ambiguity
that must fail, candidate choice, markers that are not values, lists in prose.

Each reading is checked for its value, its diagnostic, its span and its risk; the corpus
cases are in tests/corpora/schema_guided.jsonl (run by tests/test_guided_conformance.py).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import llmfix
from llmfix.deadline import Deadline, OutOfTime
from llmfix.guided.toon import read_toon
from llmfix.guided.xml_answers import parse_tree, read_xml
from llmfix.model import Risk, Status

STRING = {"type": "string"}
INTEGER = {"type": "integer"}
PERSON = {
    "type": "object",
    "properties": {"name": STRING, "age": INTEGER},
    "required": ["name", "age"],
}
TAGGED = {
    "type": "object",
    "properties": {"title": STRING, "tags": {"type": "array", "items": STRING}},
    "required": ["title"],
}


def codes(result: llmfix.Result) -> list[str]:
    return [d.code for d in result.diagnostics]


def only(result: llmfix.Result, code: str) -> Any:
    (found,) = [d for d in result.diagnostics if d.code == code]
    return found


# -- XML -------------------------------------------------------------------------------------


def test_xml_lists_maps_and_a_prologue() -> None:
    text = "<?xml version='1.0'?>\n<a><title>T</title><tags><item>x</item><item>y</item></tags></a>"
    reading = read_xml(text, 0, TAGGED, TAGGED)
    assert reading is not None
    assert reading.value == {"title": "T", "tags": ["x", "y"]}
    assert reading.risk is Risk.SAFE
    assert text[reading.span.start : reading.span.end].startswith("<a>")
    scores = {"type": "object", "additionalProperties": INTEGER}
    entries = "<s><entry><key>math</key><value>9</value></entry><entry><key>art</key>"
    entries += "<value>7</value></entry></s>"
    mapped = read_xml(entries, 0, scores, scores)
    assert mapped is not None
    assert mapped.value == {"math": 9, "art": 7}


def test_cut_off_xml_is_closed_and_read_as_a_guess() -> None:
    text = "<person><name>Ada</name><age>36</age>"
    result = llmfix.repair(text, schema=PERSON)
    assert result.value == {"name": "Ada", "age": 36}
    found = only(result, "guided.xml")
    assert found.risk is Risk.GUESS
    assert "cut off" in found.message
    assert (found.span.start, found.span.end) == (0, len(text))
    assert not llmfix.repair(text, schema=PERSON, max_risk="safe").ok
    # A number the answer stops inside may have been longer: left out (a string is kept).
    optional = {**PERSON, "required": ["name"]}
    assert llmfix.repair("<p><name>Ada</name><age>3", schema=optional).value == {"name": "Ada"}
    assert llmfix.repair("<p><age>3</age><name>Ad", schema=optional).value == {
        "name": "Ad",
        "age": 3,
    }


def test_xml_names_by_title_and_attributes() -> None:
    schema = {
        "title": "Invoice",
        "type": "object",
        "properties": {"invoice_number": {"type": "string", "title": "Invoice Number"}},
    }
    reading = read_xml("<Invoice><InvoiceNumber>7</InvoiceNumber></Invoice>", 0, schema, schema)
    assert reading is not None
    assert reading.value == {"invoice_number": "7"}
    attributes = read_xml('<person name="Ada" age="36"/>', 0, PERSON, PERSON)
    assert attributes is not None
    assert attributes.value == {"name": "Ada", "age": 36}


def test_xml_entities_are_never_resolved_and_bare_ampersands_are_text() -> None:
    hostile = (
        '<!DOCTYPE r [<!ENTITY e SYSTEM "file:///etc/passwd">]><r><name>&e;</name><age>1</age></r>'
    )
    reading = read_xml(hostile, 0, PERSON, PERSON)
    assert reading is not None
    assert reading.value["name"] == "&e;"
    laughs = '<!DOCTYPE r [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><r><name>&b;</name></r>'
    read = read_xml(laughs, 0, PERSON, PERSON)
    assert read is not None
    assert read.value == {"name": "&b;"}
    amp = read_xml("<r><name>Tom & Jerry &eacute;</name><age>1</age></r>", 0, PERSON, PERSON)
    assert amp is not None
    assert amp.value["name"] == "Tom & Jerry \u00e9"


def test_xml_reading_checks_its_deadline() -> None:
    spent = Deadline(0.001, "guided")
    time.sleep(0.002)
    with pytest.raises(OutOfTime):
        parse_tree("<a><b>1</b></a>", spent)


# -- TOON ------------------------------------------------------------------------------------

PEOPLE = {
    "type": "object",
    "properties": {"people": {"type": "array", "items": PERSON}},
    "required": ["people"],
}


def test_toon_tabular_array_with_a_miscounted_length_and_prose_around_it() -> None:
    text = "Here you go:\n\npeople[3]{name,age}:\n    Ada,36\n    Alan,41\n\nAnything else?"
    reading = read_toon(text, 0, PEOPLE, PEOPLE)
    assert reading is not None
    assert reading.value == {"people": [{"name": "Ada", "age": 36}, {"name": "Alan", "age": 41}]}
    assert reading.risk is Risk.GUESS
    assert text[reading.span.start : reading.span.end].startswith("people[3]")
    assert text[reading.span.start : reading.span.end].endswith("Alan,41")


def test_a_whole_toon_answer_is_safe_and_goes_through_the_pipeline() -> None:
    result = llmfix.repair("title: Notes\ntags[2]: a,b", schema=TAGGED)
    assert result.value == {"title": "Notes", "tags": ["a", "b"]}
    assert only(result, "guided.toon").risk is Risk.SAFE


def test_toon_needs_an_array_header_or_a_fence_and_declared_keys() -> None:
    assert read_toon("name: Ada\nage: 36", 0, PERSON, PERSON) is None  # YAML's
    assert read_toon("other[2]: a,b", 0, TAGGED, TAGGED) is None  # not a declared key
    assert read_toon("x" * 300_000 + "\ntags[1]: a", 0, TAGGED, TAGGED) is None  # too large


# -- unwrapping --------------------------------------------------------------------------------


def test_a_scalar_in_a_one_key_object_is_unwrapped_as_a_guess() -> None:
    result = llmfix.repair('{"answer": "4"}', schema=INTEGER)
    assert result.value == 4
    found = only(result, "guided.unwrap")
    assert found.risk is Risk.GUESS
    assert (found.span.start, found.span.end) == (0, len('{"answer": "4"}'))
    assert llmfix.repair('{"answer": 4}', schema=INTEGER, max_risk="safe").status is (
        Status.INVALID
    )


def test_only_a_whole_answer_of_one_key_of_a_fitting_type_is_unwrapped() -> None:
    assert not llmfix.repair('{"a": 1}', schema=STRING).ok
    assert not llmfix.repair('{"a": 1, "b": 2}', schema=INTEGER).ok
    assert not llmfix.repair('{"a": {"b": 1}}', schema=INTEGER).ok
    assert not llmfix.repair('The call {"a": 1} returned 12', schema=INTEGER).ok


# -- ambiguity -------------------------------------------------------------------------------

BOTH = {"anyOf": [{"const": 4}, {"const": 5}]}


@pytest.mark.parametrize(
    ("text", "schema"),
    [
        ("It is either yes or no", {"type": "boolean"}),
        ("4 or 5", BOTH),
        ("RED - that is it, not BLUE", {"enum": ["RED", "BLUE"]}),
        ("3 or 4", INTEGER),
    ],
)
def test_two_allowed_values_with_no_rule_to_choose_fail(text: str, schema: Any) -> None:
    result = llmfix.repair(text, schema=schema)
    assert not result.ok
    assert "guided.ambiguous" in codes(result)


@pytest.mark.parametrize(
    ("text", "schema", "value"),
    [
        ("No. The claim is wrong because yes-men said so.", {"type": "boolean"}, False),
        ("4\n\nI chose 4 because 5 is too many.", BOTH, 4),
        ("RED. BLUE was considered.", {"enum": ["RED", "BLUE"]}, "RED"),
        ("ONE - the first option", {"enum": ["ONE", "TWO"]}, "ONE"),
    ],
)
def test_a_verdict_then_its_explanation_is_not_ambiguous(
    text: str, schema: Any, value: Any
) -> None:
    result = llmfix.repair(text, schema=schema)
    assert result.ok
    assert result.value == value


def test_a_member_named_in_a_json_string_is_read_as_a_guess() -> None:
    schema = {"type": "object", "properties": {"color": {"enum": ["RED", "BLUE"]}}}
    result = llmfix.repair('{"color": "I would say BLUE"}', schema=schema)
    assert result.value == {"color": "BLUE"}
    assert only(result, "guided.in_value").risk is Risk.GUESS
    assert not llmfix.repair('{"color": "RED or BLUE"}', schema=schema).ok


# -- candidate choice ----------------------------------------------------------------------------


def test_the_candidate_that_fits_once_repaired_is_taken() -> None:
    text = '```json\n{"note": "ids"}\n```\n\n```json\n["7", "8"]\n```'
    result = llmfix.repair(text, schema={"type": "array", "items": INTEGER})
    assert result.value == [7, 8]
    found = only(result, "guided.candidate")
    assert text[found.span.start : found.span.end] == '["7", "8"]'
    assert found.risk is Risk.SAFE


@pytest.mark.parametrize(
    "text",
    [
        'For example {"name": "Bob", "age": 1}. Extracted: {"name": "Ada", "age": 36}',
        '{"name": "Bob", "age": 1}\nActually, correction: {"name": "Ada", "age": 36}',
        'Answer: {"name": "Ada", "age": 36}\n\nAn example of a bad one: {"name": "Bob", "age": 1}',
    ],
)
def test_cues_say_which_value_is_the_answer(text: str) -> None:
    result = llmfix.repair(text, schema=PERSON)
    assert result.value == {"name": "Ada", "age": 36}
    assert "extract.cue" in codes(result)
    assert "extract.ambiguous" not in codes(result)
    assert result.risk is not Risk.GUESS


def test_no_cue_and_both_fit_is_a_guess() -> None:
    text = '{"name": "Ada", "age": 36} or {"name": "Bob", "age": 1}'
    result = llmfix.repair(text, schema=PERSON)
    assert result.ok
    assert only(result, "extract.no_cue").risk is Risk.GUESS
    assert result.risk is Risk.GUESS  # so --max-risk safe fails it
    assert "extract.no_cue" not in codes(llmfix.repair(text))  # without a schema: as before


def test_two_later_values_fit_once_repaired_and_no_cue_is_a_guess() -> None:
    text = '```json\n{"a": 1}\n```\n```json\n["7"]\n```\n```json\n["9"]\n```'
    result = llmfix.repair(text, schema={"type": "array", "items": INTEGER})
    assert result.value == [7]
    assert "extract.no_cue" in codes(result)


# -- markers and prose lists -------------------------------------------------------------------


def test_markers_are_not_values() -> None:
    assert not llmfix.repair("1. Negative\n2. Positive", schema={"type": "number"}).ok
    assert not llmfix.repair("1. Negative", schema=INTEGER).ok
    code = "```python\nx = 1\ny = 2\n```"
    assert not llmfix.repair(code, schema={"type": "array", "items": STRING}).ok
    assert llmfix.repair(code, schema=STRING).value == "x = 1\ny = 2"
    assert llmfix.repair("1.5", schema={"type": "number"}).value == 1.5


def test_a_list_in_a_sentence_drops_its_lead_in() -> None:
    text = "The primary colours are red, yellow and blue."
    result = llmfix.repair(text, schema={"type": "array", "items": STRING})
    assert result.value == ["red", "yellow", "blue"]
    found = only(result, "guided.list")
    assert found.risk is Risk.GUESS
    assert "lead-in" in found.message
    plain = llmfix.repair("apples, pears", schema={"type": "array", "items": STRING})
    assert only(plain, "guided.list").risk is Risk.SAFE


def test_valid_json_never_changes() -> None:
    for text, schema in (
        ('{"answer": 4}', {"type": "object"}),
        ('["7", "8"]', {"type": "array", "items": STRING}),
        ('{"color": "I would say BLUE"}', {"type": "object"}),
    ):
        result = llmfix.repair(text, schema=schema)
        assert result.status is Status.VALID
        assert result.diagnostics == ()


def test_choose_by_cue_needs_two_values_and_a_cue() -> None:
    from llmfix.model import Span
    from llmfix.pipeline.select import choose_by_cue

    text = 'For example {"a": 1}. Result: {"a": 2}'
    first, second = Span(12, 20), Span(30, 38)
    assert choose_by_cue(text, [first, second]) == (
        1,
        "the other value is introduced as an example",
    )
    assert choose_by_cue(text, [first]) is None
    assert choose_by_cue('{"a": 1} or {"a": 2}', [Span(0, 8), Span(12, 20)]) is None
    fixed = '{"a": 1}\n\nOops, that was wrong. Updated:\n\n{"a": 2}\n\nExample: {"a": 3}'
    assert choose_by_cue(fixed, [Span(0, 8), Span(42, 50), Span(61, 69)]) == (
        1,
        "introduced as a correction, it replaces the value before it",
    )


def test_a_correction_that_needs_a_repair_still_replaces_a_valid_value() -> None:
    text = '{"name": "Ada", "age": 35}\nActually, correction: {"name": "Ada", "age": "36"}'
    result = llmfix.repair(text, schema=PERSON)
    assert result.value == {"name": "Ada", "age": 36}
    found = only(result, "extract.cue")
    assert text[found.span.start : found.span.end] == '{"name": "Ada", "age": "36"}'
    assert found.risk is Risk.SAFE
    broken = '{"name": "Ada", "age": 35}\nActually, correction: {"name": "Ada"}'
    assert llmfix.repair(broken, schema=PERSON).value == {"name": "Ada", "age": 35}


def test_the_only_value_that_fits_being_an_example_is_a_guess() -> None:
    text = '```json\n{"name": "Ada"}\n```\n\nFor example, a full record: {"name": "X", "age": 1}'
    result = llmfix.repair(text, schema=PERSON)
    assert result.value == {"name": "X", "age": 1}
    assert only(result, "extract.cue").risk is Risk.GUESS
    alone = llmfix.repair('For example: {"name": "X", "age": 1}', schema=PERSON)
    assert "extract.cue" not in codes(alone)  # nothing else in the answer: no doubt


def test_an_explicit_pick_is_not_overruled_by_a_cue_or_another_candidate() -> None:
    text = '{"name": "Ada", "age": 35}\nActually, correction: {"name": "Ada", "age": "36"}'
    assert llmfix.repair(text, schema=PERSON, pick="first").value == {"name": "Ada", "age": 35}
    fenced = '```json\n{"note": "ids"}\n```\n\n```json\n["7", "8"]\n```'
    ids = {"type": "array", "items": INTEGER}
    assert llmfix.repair(fenced, schema=ids, pick="first").status is Status.INVALID
