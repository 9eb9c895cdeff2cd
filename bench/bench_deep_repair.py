"""Schema repair of deeply nested arrays, and hostile schemas (issue 27, items 6 and 7).

Run: ``.venv/bin/python bench/bench_deep_repair.py``. Prints a markdown table.

The answer is ``[[[…[1,1,…,1]…]]]``: 400 levels of arrays around N ones (the issue's shape),
repaired against ``{"type": "object", "required": ["a"]}``, so schema repair walks every
level trying to make the value fit. Each row gives the best time of three runs and the peak
memory traced (``tracemalloc``) for N, 2N and 4N, each also as a ratio to the first row, and
the same ratios for ``json.loads`` of the same text in the same process: repair that is
linear in the size of the value grows as ``json.loads`` grows (about 2 and 4); the copy per
level this bench was written for grew with depth × size. The last rows time the issue's two
hostile schemas (a catastrophic ``pattern`` and 9 levels of ``allOf`` with 9 ``$ref`` each)
against ``llmfix.repair`` of the same value with a plain schema.
"""

from __future__ import annotations

import json
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import llmfix
from bench._common import human_time, markdown_table

DEPTH = 400
SIZES = (25_000, 50_000, 100_000)
OBJECT = {"type": "object", "required": ["a"]}


def deep(count: int) -> str:
    return "[" * DEPTH + "1," * (count - 1) + "1" + "]" * DEPTH


def best_of_three(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def nested_refs(levels: int, fan: int) -> dict[str, object]:
    defs: dict[str, object] = {"l0": {"type": "integer"}}
    for level in range(1, levels):
        defs[f"l{level}"] = {"allOf": [{"$ref": f"#/$defs/l{level - 1}"}] * fan}
    return {"$defs": defs, "allOf": [{"$ref": f"#/$defs/l{levels - 1}"}] * fan}


def main() -> None:
    rows = []
    first: tuple[float, int, float] | None = None
    for count in SIZES:
        text = deep(count)
        seconds = best_of_three(lambda text=text: llmfix.repair(text, schema=OBJECT))
        memory = peak_bytes(lambda text=text: llmfix.repair(text, schema=OBJECT))
        loads = best_of_three(lambda text=text: json.loads(text))
        first = first or (seconds, memory, loads)
        rows.append(
            [
                f"{len(text) / 1000:,.0f} KB, {DEPTH} deep",
                f"{human_time(seconds)} ({seconds / first[0]:.1f}×)",
                f"{memory / 1e6:.1f} MB ({memory / first[1]:.1f}×)",
                f"{human_time(loads)} ({loads / first[2]:.1f}×)",
            ]
        )
    print(markdown_table(["answer", "repair", "peak memory", "json.loads"], rows))
    print()
    value = '"' + "a" * 30 + '!"'
    plain = best_of_three(lambda: llmfix.repair(value, schema={"type": "string"}))
    hostile = {
        "pattern ^(a+)+$": {"type": "string", "pattern": "^(a+)+$"},
        "allOf 9 x 9 $ref": nested_refs(9, 9),
    }
    rows = []
    for name, schema in hostile.items():
        seconds = best_of_three(lambda schema=schema: llmfix.repair(value, schema=schema))
        status = llmfix.repair(value, schema=schema).status.value
        rows.append([name, human_time(seconds), f"{seconds / plain:,.0f}×", status])
    print(
        markdown_table(
            ["schema", "repair of a 32-byte string", "vs a plain schema", "status"], rows
        )
    )


if __name__ == "__main__":
    main()
