"""The gate shared by `repair` and `check`: flags, the options it narrows, what may be written."""

from __future__ import annotations

import pytest

import llmfix
from llmfix.batch.gate import Gate, writable
from llmfix.errors import ConfigError
from llmfix.model import Risk

FRACTION = {"type": "object", "properties": {"s": {"type": "integer", "maximum": 5}}}


@pytest.mark.parametrize(
    ("fail_on", "max_risk", "message"),
    [("sometimes", None, "--fail-on must be one of"), ("invalid", "yolo", "--max-risk")],
)
def test_bad_gate_flags_are_config_errors(fail_on: str, max_risk: str | None, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Gate.parse(fail_on, max_risk)


def test_max_risk_narrows_the_repair_options_to_no_riskier_rule() -> None:
    gate = Gate.parse("invalid", "safe")
    options = gate.options(llmfix.make_options())
    result = llmfix.repair('{"s": "4/5"}', FRACTION, max_risk=options.max_risk)
    assert (options.max_risk, result.status.value, result.value) == (
        Risk.SAFE,
        "invalid",
        {"s": "4/5"},
    )


def test_a_stricter_option_is_kept() -> None:
    options = Gate.parse("invalid", "guess").options(llmfix.make_options(max_risk="lossless"))
    assert options.max_risk is Risk.LOSSLESS


def test_only_a_result_that_passes_the_gate_is_writable() -> None:
    gate = Gate.parse("invalid", "safe")
    guessed = llmfix.repair('{"s": "4/5"}', FRACTION)  # coerce_fraction: a guess
    plain = llmfix.repair('{"s": 4}', FRACTION)
    assert (
        writable(guessed, gate.failures(guessed)),
        writable(plain, gate.failures(plain)),
    ) == (False, True)
