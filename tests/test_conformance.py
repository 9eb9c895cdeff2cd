"""Conformance floors: no pass rate (per corpus and per category) may drop below its floor.

Floors live in tests/conformance_floors.json; raise them when llmfix gets better
(`python -m tests.conformance --json` prints the current rates).
"""

from __future__ import annotations

import json

import pytest

from tests.conformance import FLOORS, Outcome, load_differences, run_all, table


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return run_all()


@pytest.fixture(scope="module")
def rates(outcomes: list[Outcome]) -> dict[str, dict[str, tuple[int, int]]]:
    return table(outcomes)


def test_every_failure_is_documented_and_every_documented_case_fails(
    outcomes: list[Outcome],
) -> None:
    failing = {o.case.id for o in outcomes if not o.passed}
    documented = set(load_differences())
    assert sorted(failing - documented) == [], "failing without a reason in the differences file"
    assert sorted(documented - failing) == [], "passing now: remove from the differences file"


FLOOR_ITEMS = sorted(
    (corpus, category, floor)
    for corpus, cats in json.loads(FLOORS.read_text()).items()
    for category, floor in cats.items()
)


@pytest.mark.parametrize(("corpus", "category", "floor"), FLOOR_ITEMS)
def test_rate_at_or_above_floor(
    rates: dict[str, dict[str, tuple[int, int]]], corpus: str, category: str, floor: float
) -> None:
    passed, total = rates[corpus][category]
    assert passed / total >= floor, f"{corpus}/{category}: {passed}/{total} < floor {floor:.3f}"
