"""What the time budget costs (issue 19): ``llmfix.repair`` with the default ``--time-budget``
vs with no budget, timed interleaved in the same process.

Run: ``.venv/bin/python bench/bench_budget.py [--rounds N] [--count N] [--large-rounds N]``.
Prints markdown.

Rows:

- small broken answers (a fenced answer with Python literals, a cut-off object, prose
  around unquoted keys) on the main thread, as ``llmfix repair`` runs them;
- the same answers in a worker thread (a library caller's thread pool);
- one large broken answer: a fenced 1 MB array with a comment and a trailing comma, so
  extraction and the lenient parser walk a megabyte (checking the deadline as they go).

Each row times ``--rounds`` interleaved (budget, no budget) pairs of short blocks, so both
sides of a pair meet the same load on a shared machine; it shows the median time per
answer of each side and the median of the per-pair ratios (budget / no budget), so 1.00×
means the budget costs nothing measurable.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable

import llmfix

ANSWERS = [
    "Here you go:\n```json\n{'name': 'Ada', 'tags': ['a', 'b',], 'age': 36, // note\n"
    " 'ok': True}\n```\nAnything else?",
    '{"id": 7, "items": [1, 2, 3,], "note": "cut off',
    "Sure! {name: 'Grace', langs: ['COBOL' 'FLOW-MATIC'], active: None}",
]

_RECORD = '{"id": %d, "name": "item %d", "tags": ["a", "b"], "ok": true, "n": %d},\n'
# A fenced array with a comment and a trailing comma: two repairs, then 1 MB for the
# lenient parser's loop to walk (and extraction's scan before it).
LARGE = (
    "Results:\n```json\n// all of them\n["
    + "".join(_RECORD % (i, i, i) for i in range(13_000))
    + "]\n```\nDone."
)

DEFAULT_BUDGET = 5.0  # the default --time-budget
NO_BUDGET = 0.0  # not a positive number: no deadline at all


def _small(budget: float, count: int) -> float:
    start = time.perf_counter()
    for i in range(count):
        llmfix.repair(ANSWERS[i % len(ANSWERS)], time_budget=budget)
    return (time.perf_counter() - start) / count


def _large(budget: float, count: int) -> float:
    start = time.perf_counter()
    for _ in range(count):
        llmfix.repair(LARGE, time_budget=budget)
    return (time.perf_counter() - start) / count


def _here(work: Callable[[], None]) -> None:
    work()


def _in_a_thread(work: Callable[[], None]) -> None:
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()


def _ratio(
    rounds: int,
    count: int,
    timed: Callable[[float, int], float],
    run: Callable[[Callable[[], None]], None],
) -> tuple[float, float, float]:
    """``rounds`` interleaved (budget, no budget) pairs: the median seconds of each side and
    the median of the pairs' ratios (the order within a pair alternates)."""
    with_budget: list[float] = []
    without: list[float] = []

    def one_round() -> None:
        for i in range(rounds):
            if i % 2:
                without.append(timed(NO_BUDGET, count))
                with_budget.append(timed(DEFAULT_BUDGET, count))
            else:
                with_budget.append(timed(DEFAULT_BUDGET, count))
                without.append(timed(NO_BUDGET, count))

    run(one_round)
    ratios = [a / b for a, b in zip(with_budget, without, strict=True)]
    return statistics.median(with_budget), statistics.median(without), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=41, help="pairs per row")
    parser.add_argument("--count", type=int, default=60, help="small answers per block")
    parser.add_argument("--large-rounds", type=int, default=7, help="pairs for the 1 MB row")
    args = parser.parse_args()
    _small(DEFAULT_BUDGET, 200)  # warm up: imports, caches
    _large(DEFAULT_BUDGET, 1)
    rows: list[tuple[str, str, Callable[[float, int], float], int, Callable[..., None]]] = [
        ("small broken answers, main thread", "µs", _small, args.count, _here),
        ("small broken answers, worker thread", "µs", _small, args.count, _in_a_thread),
        (f"1 MB broken answer ({len(LARGE) / 1e6:.2f} MB)", "ms", _large, 1, _here),
    ]
    print("| input | with budget | no budget | ratio |")
    print("|---|---:|---:|---:|")
    for label, unit, timed, count, run in rows:
        rounds = args.large_rounds if timed is _large else args.rounds
        a, b, ratio = _ratio(rounds, count, timed, run)
        scale = 1e6 if unit == "µs" else 1e3
        print(f"| {label} | {a * scale:.0f} {unit} | {b * scale:.0f} {unit} | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
