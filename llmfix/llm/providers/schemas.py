"""Fitting a JSON Schema to what a provider accepts: an object at the root, OpenAI's strict
subset, the ``response_format`` modes to try in order, and unwrapping the answer again."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from llmfix.llm.providers.base import (
    WRAP_KEY,
    json_or_none,
)

if TYPE_CHECKING:
    pass


def tool_name(name: str | None) -> str:
    """A tool / response-format name the APIs accept (``^[A-Za-z0-9_-]{1,64}$``)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", name or "").strip("_")[:64]
    return cleaned or "answer"


def _is_object_schema(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    return kind == "object" or (kind is None and "properties" in schema)


def object_root(schema: Any) -> tuple[dict[str, Any], bool]:
    """A schema with an object at the root, and whether ``schema`` had to be wrapped."""
    if _is_object_schema(schema):
        out = {k: v for k, v in schema.items() if k != "$schema"}
        out.setdefault("type", "object")
        return out, False
    inner: Any = {} if schema is True or schema is None else schema
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {},
        "required": [WRAP_KEY],
        "additionalProperties": False,
    }
    if isinstance(inner, dict):
        inner = {k: v for k, v in inner.items() if k != "$schema"}
        for key in ("$defs", "definitions"):  # keep "#/$defs/..." references resolvable
            if key in inner:
                wrapper[key] = inner.pop(key)
    wrapper["properties"][WRAP_KEY] = inner
    return wrapper, True


_STRICT_FORBIDDEN = frozenset(
    {
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "oneOf",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "patternProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
        "propertyNames",
        "$dynamicRef",
        "$recursiveRef",
    }
)


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict structured outputs accept ``schema`` as it is.

    The root is an object; every object lists all its properties in ``required`` and sets
    ``additionalProperties: false``; no ``allOf``/``not``/``if``/``oneOf`` (and the other
    keywords strict mode rejects); every subschema says what it is (``type``, ``enum``,
    ``const``, ``anyOf`` or ``$ref``).
    """
    if not _is_object_schema(schema):
        return False
    if "anyOf" in schema:
        return False
    return _strict_node(schema)


def _strict_node(node: Any) -> bool:
    if not isinstance(node, dict):
        return False
    if _STRICT_FORBIDDEN & node.keys():
        return False
    if not ({"type", "enum", "const", "anyOf", "$ref"} & node.keys()):
        return False
    kinds = node.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "object" in kinds or "properties" in node:
        properties = node.get("properties", {})
        if not isinstance(properties, dict) or node.get("additionalProperties") is not False:
            return False
        if set(node.get("required", [])) != set(properties):
            return False
        if not all(_strict_node(sub) for sub in properties.values()):
            return False
    children: list[Any] = []
    if "items" in node:
        children.append(node["items"])
    for key in ("anyOf", "prefixItems"):
        if key in node:
            inner = node[key]
            children.extend(inner if isinstance(inner, list) else [None])
    for key in ("$defs", "definitions"):
        if key in node:
            defs = node[key]
            children.extend(defs.values() if isinstance(defs, dict) else [None])
    return all(_strict_node(child) for child in children)


def structured_modes(mode: str, schema: Any) -> list[str]:
    """The ``response_format`` modes to try, strongest first (``auto``), or just ``mode``."""
    if mode != "auto":
        return [mode]
    if schema is None or schema is True or schema == {}:
        return ["json_object", "none"]
    chain = ["json_schema", "json_object_schema", "json_object", "none"]
    if strict_compatible(schema):
        chain.insert(0, "json_schema_strict")
    return chain


def response_format(mode: str, schema: Any, name: str) -> tuple[dict[str, Any] | None, bool]:
    """The ``response_format`` for ``mode``, and whether the schema was wrapped."""
    if mode == "none":
        return None, False
    if schema is None or schema is True:
        return {"type": "json_object"}, False
    if mode == "json_object":  # an object is forced: a non-object answer comes wrapped
        return {"type": "json_object"}, not _is_object_schema(schema)
    shaped, wrapped = object_root(schema)
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": shaped}, wrapped
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": shaped, "strict": mode == "json_schema_strict"},
    }, wrapped


def unwrap(text: str) -> str:
    """The ``value`` of a wrapped answer ``{"value": …}``; ``text`` when it is not one."""
    data = json_or_none(text)
    if isinstance(data, dict) and set(data) == {WRAP_KEY}:
        return json.dumps(data[WRAP_KEY], ensure_ascii=False)
    return text


_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar", "structured")


def about_response_format(status: int, text: str) -> bool:
    """Whether an error answer complains about how JSON was asked for."""
    if status not in (400, 422, 500, 501):
        return False
    lowered = text.lower()
    return any(word in lowered for word in _FORMAT_WORDS)


_CONTINUATION_WORDS = (
    "continue_final_message",
    "add_generation_prompt",
    "prefill",
    "assistant",
    "final message",
    "last message",
)


def about_continuation(status: int, text: str) -> bool:
    """Whether an error answer complains about continuing an assistant message."""
    if status not in (400, 422, 500, 501):
        return False
    lowered = text.lower()
    return any(word in lowered for word in _CONTINUATION_WORDS)


def about_grammar(status: int, text: str) -> bool:
    """Whether an error answer to a constrained continuation is about its ``grammar``
    (the field refused, or the grammar not read): then it is sent again without one."""
    if status not in (400, 422, 500, 501):
        return False
    lowered = text.lower()
    if "grammar" in lowered:
        return True
    named_other = any(word in lowered for word in _CONTINUATION_WORDS)
    return grammar_unsupported(text) and not named_other


# How servers say they take no such field (OpenAI, pydantic-based servers, others).
_UNKNOWN_FIELD_WORDS = (
    "unrecognized request argument",
    "unknown field",
    "unknown parameter",
    "unrecognized field",
    "extra fields not permitted",
    "extra_forbidden",
    "not supported",
    "unsupported",
)


def grammar_unsupported(text: str) -> bool:
    """Whether an error answer says the server takes no ``grammar`` field (remembered),
    not that it could not read this one (``failed to parse grammar``: not remembered)."""
    lowered = text.lower()
    if "parse" in lowered and "grammar" in lowered:
        return False
    return any(word in lowered for word in _UNKNOWN_FIELD_WORDS)


# Hosted APIs that take no llama.cpp ``grammar`` field: a continuation sent there goes
# without one (a refusal would cost a request; some answer 400 for any unknown field).
HOSTED_APIS = (
    "api.openai.com",
    "openai.azure.com",
    "api.anthropic.com",
    "openrouter.ai",
    "api.groq.com",
    "api.mistral.ai",
    "api.deepseek.com",
    "api.together.xyz",
    "api.fireworks.ai",
    "generativelanguage.googleapis.com",
    "api.x.ai",
    "api.cohere.ai",
    "api.perplexity.ai",
)


def takes_grammar(base_url: str) -> bool:
    """Whether a continuation to ``base_url`` may carry a ``grammar``: not to a known
    hosted API (or a subdomain of one)."""
    from urllib.parse import urlsplit

    host = (urlsplit(base_url).hostname or "").lower()
    return not any(host == h or host.endswith("." + h) for h in HOSTED_APIS)


def never(status: int, text: str) -> bool:
    return False


def mentions(text: str, *words: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in words)
