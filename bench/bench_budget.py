"""What the time budget costs (issue 8): ``llmfix.repair`` of small broken answers with the
default ``--time-budget`` vs with no budget, timed interleaved in the same process.

Run: ``.venv/bin/python bench/bench_budget.py [--rounds N]``. Prints markdown. Three ways a
budget is enforced, each its own row:

- the main thread with no interval timer running (``llmfix repair``): ``setitimer``;
- the main thread with an interval timer already running, as in ``llmfix check``'s
  workers, whose item ``--timeout`` holds ``SIGALRM``: the shared watcher thread;
- a worker thread (a library caller's thread pool): the shared watcher thread.

A broken answer opens two budgets (extraction, then the parse of its candidate).
"""

from __future__ import annotations

import argparse
import signal
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


def _per_answer(budget: float, count: int) -> float:
    start = time.perf_counter()
    for i in range(count):
        llmfix.repair(ANSWERS[i % len(ANSWERS)], time_budget=budget)
    return (time.perf_counter() - start) / count


def _ratio(rounds: int, count: int, run: Callable[[Callable[[], None]], None]) -> list[float]:
    """Median of ``rounds`` interleaved (budget, no budget) pairs: µs each, and the ratio."""
    with_budget: list[float] = []
    without: list[float] = []

    def one_round() -> None:
        with_budget.append(_per_answer(5.0, count))
        without.append(_per_answer(0.0, count))

    for _ in range(rounds):
        run(one_round)
    a, b = statistics.median(with_budget), statistics.median(without)
    return [a * 1e6, b * 1e6, a / b]


def _here(work: Callable[[], None]) -> None:
    work()


def _with_itimer(work: Callable[[], None]) -> None:
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, 3600)
    try:
        work()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _in_a_thread(work: Callable[[], None]) -> None:
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--count", type=int, default=500, help="answers per timing")
    args = parser.parse_args()
    _per_answer(5.0, 200)  # warm up: imports, caches, the watcher thread
    print("| how the budget is enforced | with budget (µs) | no budget (µs) | ratio |")
    print("|---|---:|---:|---:|")
    for label, run in [
        ("main thread, `setitimer` (`llmfix repair`)", _here),
        ("main thread, interval timer in use (`llmfix check` workers)", _with_itimer),
        ("worker thread", _in_a_thread),
    ]:
        a, b, ratio = _ratio(args.rounds, args.count, run)
        print(f"| {label} | {a:.0f} | {b:.0f} | {ratio:.2f}× |")


if __name__ == "__main__":
    main()
