"""Tool-call conformance floors: no pass rate (per vLLM parser family, complete and partial
cases, no format hint) may drop below its floor in tests/tool_conformance_floors.json.

Raise the floors when llmfix gets better (`python -m tests.tool_conformance --json` prints the
current rates; `--failures` lists what fails and why).
"""

from __future__ import annotations

import json

import pytest

from tests.tool_conformance import FLOORS, Outcome, load_differences, run_all, table

Rates = dict[str, dict[str, tuple[int, int]]]


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    return run_all()


@pytest.fixture(scope="module")
def rates(outcomes: list[Outcome]) -> Rates:
    return table(outcomes)


FLOOR_ITEMS = sorted(
    (family, column, floor)
    for family, columns in json.loads(FLOORS.read_text()).items()
    for column, floor in columns.items()
)


@pytest.mark.parametrize(("family", "column", "floor"), FLOOR_ITEMS)
def test_rate_at_or_above_floor(rates: Rates, family: str, column: str, floor: float) -> None:
    passed, total = rates[family][column]
    assert passed / total >= floor, f"{family}/{column}: {passed}/{total} < floor {floor:.3f}"


def test_every_failure_has_a_recorded_reason(outcomes: list[Outcome]) -> None:
    reasons = load_differences()
    unexplained = [o.case.id for o in outcomes if not o.passed and o.case.id not in reasons]
    assert unexplained == []


def test_no_recorded_reason_for_a_passing_case(outcomes: list[Outcome]) -> None:
    failing = {o.case.id for o in outcomes if not o.passed}
    assert sorted(set(load_differences()) - failing) == []


def test_the_command_line_reads_calls_as_the_library_does(rates: Rates) -> None:
    """`llmfix repair --tool-calls` (no registry) is within one complete case of the library
    given no registry either."""
    cli, total = rates["*"]["complete_cli"]
    library, _ = rates["*"]["complete_noreg"]
    assert abs(cli - library) <= 1, f"CLI {cli}/{total}, library {library}/{total}"


def test_the_registry_decides_only_where_it_must(outcomes: list[Outcome]) -> None:
    """On the families corpus the library without a registry reads what it reads with one,
    except on the cases marked ``registry_decides`` (a text value whose type only the tool's
    schema gives: ``<parameter=code>1234</parameter>`` for a string ``code``), which only
    the registry path gets right."""
    own = [o for o in outcomes if o.case.id.startswith("family-")]
    decided = [o.case.id for o in own if o.case.raw.get("registry_decides")]
    assert decided, "the corpus has no case only a registry can decide"
    for o in own:
        if o.case.raw.get("registry_decides"):
            assert o.passed, o.case.id
            assert not o.unregistered, o.case.id
        else:
            assert o.passed == o.unregistered, o.case.id
