"""Pydantic models as schemas (``llmfix/schema/pydantic_models.py``): a ``BaseModel``, a
``TypeAdapter``, a dataclass or a ``TypedDict`` where a JSON Schema goes, the validated
instance in ``Result.parsed``, Pydantic's own errors as ``schema.pydantic`` diagnostics."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator
from typing_extensions import TypedDict

import llmfix
from llmfix.model import Status


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)
    role: Literal["admin", "user"] = "user"

    @field_validator("name")
    @classmethod
    def capitalised(cls, value: str) -> str:
        if not value[:1].isupper():
            raise ValueError("a name starts with a capital letter")
        return value


class Team(BaseModel):
    title: str
    members: list[Person]


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Movie(TypedDict):
    title: str
    year: int


class Event(BaseModel):
    model_config = ConfigDict(strict=True)
    day: date


def test_a_model_repairs_and_gives_its_instance() -> None:
    result = llmfix.repair('Sure!\n```json\n{"name": "Ada", "age": "36",}\n```', schema=Person)
    assert result.status is Status.REPAIRED
    assert result.value == {"name": "Ada", "age": 36}
    assert result.parsed == Person(name="Ada", age=36)
    assert isinstance(result.parsed, Person)


def test_a_valid_answer_is_untouched_and_parsed() -> None:
    text = '{"title": "core", "members": [{"name": "Ada", "age": 36, "role": "admin"}]}'
    result = llmfix.repair(text, schema=Team)
    assert result.status is Status.VALID
    assert result.value == json.loads(text)
    assert result.parsed.members[0].role == "admin"


def test_the_json_schema_repairs_run_first() -> None:
    # an enum by case and a forbidden extra would both fail Pydantic; schema repair fixes them
    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        role: Literal["admin", "user"]

    result = llmfix.repair('{"role": "Admin", "note": "x"}', schema=Strict)
    assert result.ok
    assert result.parsed == Strict(role="admin")


def test_a_validator_error_is_a_diagnostic_with_pointer_and_span() -> None:
    text = '{"title": "core",\n "members": [{"name": "ada", "age": 3}]}'
    result = llmfix.repair(text, schema=Team)
    assert result.status is Status.INVALID
    assert result.parsed is None
    [error] = result.errors
    assert error.code == "schema.pydantic"
    assert error.pointer == "/members/0/name"
    assert error.span is not None
    assert text[error.span.start : error.span.end] == '"ada"'
    assert (error.position.line, error.position.column) == (2, 23)  # type: ignore[union-attr]
    assert "capital letter" in error.message
    assert error.data is not None
    assert error.data["type"] == "value_error"


def test_schema_errors_come_before_pydantic_errors() -> None:
    result = llmfix.repair('{"name": "ada", "age": -1}', schema=Person, schema_repair=False)
    assert result.status is Status.INVALID
    assert [d.code for d in result.errors] == ["schema.minimum"]


def test_a_strict_model_takes_json_as_json() -> None:
    # JSON mode: a strict model accepts a date string, as model_validate_json does
    result = llmfix.repair('{"day": "2026-11-28"}', schema=Event)
    assert result.ok
    assert result.parsed == Event(day=date(2026, 11, 28))


def test_a_dataclass_a_typeddict_and_a_type_adapter() -> None:
    point = llmfix.repair("{x: 1, y: '2'}", schema=Point)
    assert point.ok
    assert point.parsed == Point(1, 2)
    movie = llmfix.repair('{"title": "Alien", "year": "1979"}', schema=Movie)
    assert movie.parsed == {"title": "Alien", "year": 1979}
    movies = llmfix.repair('[{"title": "Alien", "year": 1979},]', schema=TypeAdapter(list[Movie]))
    assert movies.ok
    assert movies.parsed == [{"title": "Alien", "year": 1979}]


def test_a_missing_field_points_at_its_object() -> None:
    # a model whose JSON Schema was edited to require less than the model does
    def optional_y(schema: dict[str, Any]) -> None:
        schema["required"] = ["x"]

    class Loose(BaseModel):
        model_config = ConfigDict(json_schema_extra=optional_y)
        x: int
        y: int

    class Wrapper(BaseModel):
        point: Loose

    result = llmfix.repair('{"point": {"x": 1}}', schema=Wrapper)
    [error] = result.errors
    assert error.pointer == "/point"
    assert error.message == "/point: Field required (at y)"


def test_an_unusable_result_has_no_instance() -> None:
    result = llmfix.repair("I cannot help with that.", schema=Person)
    assert not result.ok
    assert result.parsed is None


def test_a_model_that_has_no_json_schema_is_a_schema_error() -> None:
    class Odd(BaseModel):
        model_config = ConfigDict(arbitrary_types_allowed=True)
        thing: Path.__class__  # type: ignore[valid-type]

    with pytest.raises(llmfix.SchemaError, match="Odd"):
        llmfix.repair("{}", schema=Odd)


def test_repair_response_and_stream_take_a_model() -> None:
    completion = {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": '{"name": "Ada", "age": 36}'},
                "finish_reason": "stop",
            }
        ],
    }
    [(_, result)] = llmfix.repair_response(completion, Person)
    assert result.parsed == Person(name="Ada", age=36)
    parser = llmfix.stream(schema=Person)
    parser.feed('{"name": "ada", ')
    parser.feed('"age": 3}')
    assert [d.code for d in parser.close().errors] == ["schema.pydantic"]


def test_the_diagnostic_code_is_registered() -> None:
    from llmfix import codes

    assert codes.get("schema.pydantic").stage == "validate"


def test_importing_llmfix_does_not_import_pydantic() -> None:
    code = (
        "import sys, llmfix\n"
        "llmfix.repair('{\"a\": 1,}', schema={'type': 'object'})\n"
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
