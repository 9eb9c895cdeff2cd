"""Schema-guided conformance: score llmfix on answers that are not JSON, read with a schema.

Run ``python -m tests.guided_conformance`` from the repository root to print the pass rate
per category (``--failures`` lists what failed with the reason recorded in
``tests/guided_conformance_differences.yaml``; ``--json`` prints the table as JSON). The
corpus is ``tests/corpora/schema_guided.jsonl`` (see ``tests/corpora/README.md``, section 5):
answers from the test suites of LangChain's output parsers, DSPy's adapters and Instructor,
and answers written for issue 12, one category per item of the issue.

Every case goes through ``llmfix.repair(input, schema=..., **options)`` exactly as a user
calls it. A case passes when the result is ok and its value equals ``expected`` (JSON
equality), or, for a ``must_fail`` case, when the result is not ok. No case is special-cased;
a case llmfix answers differently is listed with its reason and still counts as a failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llmfix
from llmfix.batch.gate import gate_failures
from llmfix.model import Risk
from tests.conformance import print_failures, same_json

CORPUS = Path(__file__).parent / "corpora" / "schema_guided.jsonl"
DIFFERENCES = Path(__file__).parent / "guided_conformance_differences.yaml"
FLOORS = Path(__file__).parent / "guided_conformance_floors.json"


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    input: str
    schema: Any
    expected: Any
    must_fail: bool
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outcome:
    case: Case
    passed: bool
    got: Any
    status: str


def load_cases() -> list[Case]:
    cases = []
    with CORPUS.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                raw = json.loads(line)
                cases.append(
                    Case(
                        raw["id"],
                        raw["category"],
                        raw["input"],
                        raw["schema"],
                        raw["expected"],
                        raw["must_fail"],
                        raw.get("options", {}),
                    )
                )
    return cases


def run_case(case: Case) -> Outcome:
    try:
        result = llmfix.repair(case.input, schema=case.schema, **case.options)
    except llmfix.LlmfixError as exc:
        return Outcome(case, case.must_fail, None, f"error: {exc}")
    # --max-risk fails a result that needed a riskier repair, as the CLI gate does.
    limit = case.options.get("max_risk")
    within = not limit or not gate_failures(result, "invalid", Risk.parse(limit), partial=True)
    if case.must_fail:
        passed = not (result.ok and within)
    else:
        # As in tests/conformance.py: a cut-off input read to the expected value counts,
        # although its status (truncated) fails the CLI's gate.
        recovered = result.ok or result.status is llmfix.Status.TRUNCATED
        passed = recovered and within and same_json(result.value, case.expected)
    return Outcome(case, passed, result.value, result.status.value)


def run_all() -> list[Outcome]:
    return [run_case(case) for case in load_cases()]


def load_differences() -> dict[str, str]:
    """case id → the documented reason it does not pass."""
    import yaml

    groups = yaml.safe_load(DIFFERENCES.read_text(encoding="utf-8")) or []
    return {case: group["reason"] for group in groups for case in group["cases"]}


def table(outcomes: list[Outcome]) -> dict[str, tuple[int, int]]:
    """category → (passed, total); ``*`` is the whole corpus."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for o in outcomes:
        for category in (o.case.category, "*"):
            counts[category][0] += o.passed
            counts[category][1] += 1
    return {k: (p, t) for k, (p, t) in sorted(counts.items())}


def render_markdown(rates: dict[str, tuple[int, int]]) -> str:
    lines = ["| category | passed | total | rate |", "|---|---:|---:|---:|"]
    for category, (p, t) in rates.items():
        name = "**all**" if category == "*" else category
        lines.append(f"| {name} | {p} | {t} | {p / t:.1%} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.guided_conformance", description=__doc__)
    parser.add_argument("--failures", action="store_true", help="list every failing case")
    parser.add_argument("--json", action="store_true", help="print the table as JSON")
    args = parser.parse_args(argv)
    outcomes = run_all()
    rates = table(outcomes)
    if args.json:
        print(json.dumps({k: list(v) for k, v in rates.items()}))
    else:
        print(render_markdown(rates))
    if args.failures:
        print_failures(outcomes, load_differences())
    return 0


if __name__ == "__main__":
    sys.exit(main())
