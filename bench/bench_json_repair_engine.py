"""What ``--engine json-repair`` costs under a time budget: its worker process against in-process.

Run: ``.venv/bin/python bench/bench_json_repair_engine.py [--quick]``. Prints a markdown table.

json-repair cannot check a clock, so with a finite ``--time-budget`` (the default is 5 s) the
parse stage runs it in a worker process that can be stopped (``llmfix/parse/json_repair.py``).
Each row times json-repair's reading (``run_json_repair``, value and log) with a deadline
(in the worker) and without one (in this process), interleaved, on broken answers of three
sizes; the difference is the per-call cost of the worker: sending the text, receiving the
value, and waking the other process (on a busy machine that wait dominates).
Starting a worker (once per process, and again after one was stopped) is timed apart: that
time is not counted against the budget.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import compare, human_time, markdown_table


def _answer(items: int) -> str:
    rows = ", ".join(
        f"{{'id': {i}, name: 'item {i}', ok: True, tags: ['a', 'b',],}}" for i in range(items)
    )
    return f"{{'order': 1234, 'items': [{rows}], // trailing note\n 'total': 12.5,}}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run")
    args = parser.parse_args(argv)
    from llmfix.deadline import Deadline
    from llmfix.parse.json_repair import _Worker, run_json_repair

    started = time.perf_counter()
    worker = _Worker()
    worker.wait_ready()
    start_time = time.perf_counter() - started
    worker.stop()

    budget = 0.5 if args.quick else 3.0
    rows = []
    for items in (1, 20, 500):
        text = _answer(items)

        def in_worker(text: str = text) -> object:
            return run_json_repair(text, 500, Deadline(5.0, "parse"))

        def in_process(text: str = text) -> object:
            # The worker's collector runs (compare() pauses only this process's): the same here.
            gc.enable()
            try:
                return run_json_repair(text, 500, Deadline.never())
            finally:
                gc.disable()

        timing = compare({"worker": in_worker, "in process": in_process}, budget=budget)
        ours, base = timing["worker"].best, timing["in process"].best
        rows.append(
            [
                f"{len(text):,} characters",
                human_time(base),
                human_time(ours),
                human_time(ours - base),
                f"{ours / base:.2f}×",
            ]
        )
    print(
        f"### `--engine json-repair` under a time budget (worker start: {human_time(start_time)})"
    )
    print()
    header = [
        "broken answer",
        "in process (no budget)",
        "worker (budget 5 s)",
        "cost per call",
        "ratio",
    ]
    print(markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
