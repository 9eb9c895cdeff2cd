"""The grammar of the rest of a cut-off answer (issue 36): built from the prefix's state and
the schema, read by a GBNF matcher (tests/gbnf.py) as llama.cpp reads it; token healing at
the seam; and sent only to servers that take it, a refusal remembered across runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from llmfix.llm import LlmConfig, llm_repair
from llmfix.llm.grammar import FRESH_ITEMS, MAX_GRAMMAR_CHARS, continuation_grammar
from llmfix.llm.providers.memory import FILE_NAME
from llmfix.llm.providers.schemas import about_grammar, grammar_unsupported, takes_grammar
from llmfix.model import Status
from llmfix.pipeline.core import repair_text
from llmfix.pipeline.stops import Finish, apply_finish
from llmfix.schema.load import schema_from_value
from llmfix.schema.validate import SchemaValidator
from tests.gbnf import matches, parse
from tests.llm_server import LlmServer, anthropic_text_reply, continuing, openai_reply

INVOICE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "invoice": {"type": "string"},
        "status": {"enum": ["draft", "sent", "paid"]},
        "lines": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "amount": {"type": "number"},
                    "taxed": {"type": "boolean"},
                },
                "required": ["text", "amount"],
                "additionalProperties": False,
            },
        },
        "notes": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
        "due": {"type": "string"},
    },
    "required": ["invoice", "status", "lines", "due"],
    "additionalProperties": False,
}


def rest_ok(prefix: str, schema: Any, end: str) -> bool:
    """Whether the grammar of ``prefix`` lets the model write ``end`` after it (the
    healed text first, when the prefill was moved back)."""
    found = continuation_grammar(prefix, schema)
    assert found is not None
    assert found.prefill + found.healed == prefix
    parse(found.text)
    return matches(found.text, found.healed + end)


@pytest.mark.parametrize(
    ("prefix", "end"),
    [
        (
            '{"invoice": "F-1", "status": "se',
            'nt", "lines": [{"text": "a", "amount": 1}], "due": "x"}',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "Ho',
            'sting", "amount": 12.5}], "due": "2026-01-01"}',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 12.',
            '5}], "due": "d"}',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 1, "taxed": tr',
            'ue}], "due": "d"}',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "li',
            'nes": [{"text": "a", "amount": 1}], "due": "d"}',
        ),
        (
            '{\n  "invoice": "F-1",\n  "status": "draft",\n'
            '  "lines": [\n    {"text": "a", "amount": 1}',
            '\n  ],\n  "notes": ["x", "y"],\n  "due": "d"\n}',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "lines": [',
            '{"text": "a", "amount": 1}], "due": "d"}',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 1}],',
            ' "due": "d"}',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a\\',
            'n", "amount": 1}], "due": "d"}',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "caf\\u00',
            'e9", "amount": 1}], "due": "d"}',
        ),
    ],
)
def test_the_grammar_takes_the_endings_that_finish_the_value(prefix: str, end: str) -> None:
    assert json.loads(prefix + end)  # the ending makes one whole value
    assert rest_ok(prefix, INVOICE, end)


@pytest.mark.parametrize(
    ("prefix", "end"),
    [
        # an enum member that does not start with what is written
        (
            '{"invoice": "F-1", "status": "se',
            'nd", "lines": [{"text": "a", "amount": 1}], "due": "x"}',
        ),
        # a key the schema does not have
        ('{"invoice": "F-1", "status": "paid", "li', 'st": [], "due": "d"}'),
        # a required key left out
        ('{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 1}]', "}"),
        # another item in an array the prefix opened, past what minItems asks
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 1}',
            ', {"text": "b", "amount": 2}], "due": "d"}',
        ),
        # anything after the value closes
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 1}]',
            ', "due": "d"}\n',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 1}]',
            ', "due": "d"} {}',
        ),
        # a key written twice
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 1}]',
            ', "status": "sent", "due": "d"}',
        ),
        # more notes than maxItems, in an array the continuation writes afresh
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 1}]',
            ', "notes": ["1", "2", "3", "4"], "due": "d"}',
        ),
        # an integer part after a leading zero; a string with a raw newline
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a", "amount": 0',
            '1}], "due": "d"}',
        ),
        (
            '{"invoice": "F-1", "status": "paid", "lines": [{"text": "a',
            '\nb", "amount": 1}], "due": "d"}',
        ),
    ],
)
def test_the_grammar_refuses_what_would_not_finish_the_value(prefix: str, end: str) -> None:
    assert not rest_ok(prefix, INVOICE, end)


def test_an_array_the_continuation_writes_gets_a_bounded_number_of_items() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["a", "tags"],
    }
    items = lambda n: ", ".join(f'"t{i}"' for i in range(n))  # noqa: E731
    assert rest_ok('{"a": "x",', schema, f' "tags": [{items(FRESH_ITEMS)}]}}')
    assert not rest_ok('{"a": "x",', schema, f' "tags": [{items(FRESH_ITEMS + 1)}]}}')
    assert rest_ok('{"a": "x",', schema, ' "tags": []}')


@pytest.mark.parametrize(
    ("prefix", "healed"),
    [
        ('{"sku": "MN-27", "on_ha', ' "on_ha'),  # inside a key: back to before its quote
        ('{"summary": "Customer was char', " char"),  # inside a word: back to its space
        ('{"summary": "Cust', ' "Cust'),  # the string's first word: before the quote
        ('{"summary": "', ' "'),
        ('{"celsius": 21.7', " 21.7"),  # a number, with the space before it
        ('{"ok": fal', " fal"),
        ('{"text": "line\\nNext', "\\nNext"),  # an escape is not split
        ('{"a": [1, 2', " 2"),
        ('{"a": [1, 2,', ""),  # between tokens: nothing to heal
        ('{"a": "x", "b":', ""),
    ],
)
def test_token_healing_moves_the_prefill_back_to_a_boundary(prefix: str, healed: str) -> None:
    found = continuation_grammar(prefix, None)
    assert found is not None
    assert (found.prefill, found.healed) == (prefix[: len(prefix) - len(healed)], healed)
    if healed:
        literal = json.dumps(healed)  # GBNF literals escape as JSON strings do here
        assert found.text.startswith(f"root ::= {literal}")


def test_a_long_word_is_not_healed() -> None:
    prefix = '{"url": "' + "x" * 200
    found = continuation_grammar(prefix, None)
    assert found is not None
    assert found.healed == ""
    assert found.prefill == prefix


@pytest.mark.parametrize(
    "prefix",
    ['{"a": 1} trailing', '{"a": 1}', "{'a': 1", '{"a": 1, // note', "no json", '{"a": tx'],
)
def test_no_grammar_for_a_prefix_that_is_not_the_start_of_one_json_value(prefix: str) -> None:
    assert continuation_grammar(prefix, None) is None


def test_a_schema_it_cannot_follow_is_any_json_value_there() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"allOf": [{"type": "string"}, {"minLength": 2}]}},
        "required": ["a"],
    }
    assert rest_ok('{"a":', schema, ' {"free": [1, "form"]}}')
    assert rest_ok('{"b": 1', None, "}")  # no schema: the open object closes


def test_recursive_refs_stop_at_the_depth_limit() -> None:
    schema = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["name"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    }
    assert rest_ok('{"name": "root", "kids": [{"name": "a"', schema, ', "kids": [{"name": "b"}]}]}')


def test_a_grammar_too_large_for_the_schema_is_the_schema_free_one() -> None:
    props = {f"field_{i:04d}": {"enum": [f"value-{i}-{j}" for j in range(40)]} for i in range(300)}
    schema = {"type": "object", "properties": props, "required": sorted(props)}
    found = continuation_grammar('{"field_0000": "value-0-1",', schema)
    assert found is not None
    assert not found.from_schema
    assert len(found.text) <= MAX_GRAMMAR_CHARS
    assert matches(found.text, ' "anything": [1]}')


def test_hosted_apis_get_no_grammar_and_refusals_are_told_apart() -> None:
    assert not takes_grammar("https://api.openai.com/v1")
    assert not takes_grammar("https://eu.api.openai.com/v1")
    assert not takes_grammar("https://openrouter.ai/api/v1")
    assert takes_grammar("http://127.0.0.1:8080/v1")
    assert takes_grammar("http://gpu-box.lan:8000/v1")
    assert grammar_unsupported("Unrecognized request argument supplied: grammar")
    assert grammar_unsupported(
        '{"detail": [{"type": "extra_forbidden", "loc": ["body", "grammar"]}]}'
    )
    assert not grammar_unsupported("Failed to initialize samplers: failed to parse grammar")
    assert about_grammar(400, "failed to parse grammar")
    assert not about_grammar(400, "Unrecognized request argument supplied: continue_final_message")
    assert not about_grammar(401, "grammar")


# ------------------------------------------------------------------ on the wire

CUT = '{"invoice": "F-7", "status": "paid", "lines": [{"text": "Hosting for Ma'
WHOLE = json.dumps(
    {
        "invoice": "F-7",
        "status": "paid",
        "lines": [{"text": "Hosting for March", "amount": 40}],
        "due": "2026-04-01",
    }
)


@pytest.fixture
def validator() -> SchemaValidator:
    return SchemaValidator(schema_from_value(INVOICE))


def repair(server: LlmServer, validator: SchemaValidator, tmp_path: Path, **changes: Any) -> Any:
    first = apply_finish(
        repair_text(CUT, validator=validator), Finish("cut_off", 'finish_reason "length"')
    )
    settings: dict[str, Any] = {
        "model": "test-model",
        "base_url": server.openai_base,
        "api_key": "sk-test-FAKEKEY1234567890abcdef",
        "backoff_base": 0.001,
        "backoff_max": 0.01,
        "cache": False,
        "cache_dir": str(tmp_path),
        **changes,
    }
    return llm_repair(CUT, first, validator=validator, config=LlmConfig(**settings), name="a")


def test_a_continuation_goes_with_the_grammar_and_joins(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(continuing(WHOLE, grammar="take"))
    outcome = repair(server, validator, tmp_path)
    assert outcome.result.status is Status.LLM_REPAIRED
    assert outcome.result.value == json.loads(WHOLE)
    body = server.requests[0].body
    assert body["messages"][-1]["content"] == CUT[: -len(" Ma")]  # healed: the word goes
    assert body["grammar"].startswith('root ::= " Ma" ')
    attempt = outcome.attempts[0].to_dict()
    assert (attempt["kind"], attempt["mode"], attempt["grammar"]) == (
        "continuation",
        "prefill",
        True,
    )
    assert attempt["prompt"].endswith(CUT[: -len(" Ma")])


def test_a_server_that_refuses_the_field_is_asked_without_it_and_remembered(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(continuing(WHOLE, grammar="refuse"), continuing(WHOLE, grammar="take"))
    outcome = repair(server, validator, tmp_path)
    assert outcome.result.status is Status.LLM_REPAIRED
    first, second = (r.body for r in server.requests)
    assert "grammar" in first
    assert "grammar" not in second
    assert second["messages"][-1]["content"] == CUT  # no grammar: no healing
    assert not outcome.attempts[0].grammar
    assert outcome.calls == 2
    assert "no_grammar" in (tmp_path / FILE_NAME).read_text()
    # the next run knows: one request, without the field
    server.enqueue(continuing(WHOLE, grammar="take"))
    again = repair(server, validator, tmp_path)
    assert again.result.status is Status.LLM_REPAIRED
    assert len(server.requests) == 3
    assert "grammar" not in server.requests[2].body


def test_a_grammar_the_server_cannot_read_is_dropped_once_not_remembered(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(continuing(WHOLE, grammar="unreadable"), continuing(WHOLE, grammar="take"))
    outcome = repair(server, validator, tmp_path)
    assert outcome.result.status is Status.LLM_REPAIRED
    assert "grammar" not in server.requests[1].body
    assert (
        not (tmp_path / FILE_NAME).exists()
        or "no_grammar" not in (tmp_path / FILE_NAME).read_text()
    )


def test_turned_off_no_grammar_is_sent(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(continuing(WHOLE, grammar="take"))
    outcome = repair(server, validator, tmp_path, continuation_grammar=False)
    assert outcome.result.status is Status.LLM_REPAIRED
    assert "grammar" not in server.requests[0].body
    assert server.requests[0].body["messages"][-1]["content"] == CUT


def test_the_prompt_way_goes_with_the_grammar_too(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    # a server that refuses the prefill: the prompt shows the healed prefix, and the
    # grammar makes the model write the dropped word first
    server.enqueue(continuing(WHOLE, prefill="refuse"), continuing(WHOLE, grammar="take"))
    outcome = repair(server, validator, tmp_path)
    assert outcome.result.status is Status.LLM_REPAIRED
    body = server.requests[1].body
    assert "continue_final_message" not in body
    assert body["grammar"].startswith('root ::= " Ma"')
    assert outcome.attempts[0].mode == "prompt"
    assert outcome.attempts[0].grammar


def test_anthropic_gets_no_grammar(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    server.enqueue(anthropic_text_reply(WHOLE[len(CUT) :]))
    outcome = repair(
        server, validator, tmp_path, provider="anthropic", base_url=server.anthropic_base
    )
    assert outcome.result.status is Status.LLM_REPAIRED
    assert "grammar" not in server.requests[0].body
    assert not outcome.attempts[0].grammar


def test_an_answer_that_does_not_write_the_healed_text_does_not_join(
    server: LlmServer, validator: SchemaValidator, tmp_path: Path
) -> None:
    # a server that took the field but did not apply it (it ignored the grammar): the
    # answer goes on from the healed prefill with another word; not joined, not taken
    rest = ' Mars", "amount": 40}], "due": "2026-04-01"}'
    server.enqueue(openai_reply(rest.replace(" Mars", " April")), openai_reply(rest))
    outcome = repair(server, validator, tmp_path, max_attempts=1)
    assert outcome.result.status is Status.TRUNCATED
    assert outcome.attempts[0].status == "unjoined"


def test_a_hostile_schema_does_not_make_the_grammar_grow_without_bound() -> None:
    # 3,000 optional properties: every one may come first, a quadratic grammar; given up
    # while it is built, for the schema-free one
    props = {f"p{i}": {"type": "string"} for i in range(3000)}
    found = continuation_grammar("{", {"type": "object", "properties": props})
    assert found is not None
    assert not found.from_schema
    deep = "[" * 50_000
    assert continuation_grammar(deep, None) is None  # too large even without a schema
