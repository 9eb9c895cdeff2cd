"""The Pydantic model the docs' examples use (docs/guide/pydantic-and-frameworks.md)."""

from pydantic import BaseModel, field_validator


class Person(BaseModel):
    name: str
    age: int

    @field_validator("name")
    @classmethod
    def capitalised(cls, value: str) -> str:
        if not value[:1].isupper():
            raise ValueError("a name starts with a capital letter")
        return value
