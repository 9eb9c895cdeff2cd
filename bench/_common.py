"""Shared timing and table helpers for the benchmarks (not part of llmfix)."""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Best seconds per call of one contender, and how many samples produced it."""

    name: str
    best: float
    samples: int
    loops: int


def _sample(
    fn: Callable[[], object], loops: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    start = clock()
    for _ in range(loops):
        fn()
    return (clock() - start) / loops


def compare(
    contenders: dict[str, Callable[[], object]],
    *,
    budget: float,
    min_sample: float = 0.05,
    min_rounds: int = 3,
    max_rounds: int = 50,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Timing]:
    """Time every contender, interleaved, keeping each one's best seconds per call.

    The loop count is calibrated so one sample lasts at least ``min_sample`` seconds for the
    slowest contender; rounds alternate between contenders (so drift from other processes on
    the machine hits them alike) until ``budget`` seconds are spent or ``max_rounds`` is reached.
    The garbage collector is paused during samples, as ``timeit`` does. ``clock`` may be
    ``time.process_time`` (CPU time), which other processes on a shared machine disturb less.
    """
    for fn in contenders.values():  # warm caches, lazy imports, compiled patterns
        fn()
    single = max(_sample(fn, 1) for fn in contenders.values())
    loops = max(1, int(min_sample / max(single, 1e-9)))
    best = dict.fromkeys(contenders, float("inf"))
    rounds = 0
    start = time.perf_counter()
    gc_was_enabled = gc.isenabled()
    try:
        while rounds < max_rounds and (rounds < min_rounds or time.perf_counter() - start < budget):
            for name, fn in contenders.items():
                gc.collect()
                gc.disable()
                try:
                    best[name] = min(best[name], _sample(fn, loops, clock))
                finally:
                    if gc_was_enabled:
                        gc.enable()
            rounds += 1
    finally:
        if gc_was_enabled:
            gc.enable()
    return {name: Timing(name, best[name], rounds, loops) for name in contenders}


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured markdown table; numbers are right-aligned."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    numeric = [
        all(_looks_numeric(row[i]) for row in cells[1:]) if rows else False
        for i in range(len(header))
    ]

    def line(row: list[str]) -> str:
        parts = [
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(row, widths, numeric, strict=True)
        ]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "|"
        + "|".join(
            "-" * (w + 1) + ":" if num else "-" * (w + 2)
            for w, num in zip(widths, numeric, strict=True)
        )
        + "|"
    )
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def _looks_numeric(cell: str) -> bool:
    return re.fullmatch(r"[-+]?\d[\d,]*(\.\d+)?\s*(×|%|s|ms|µs|B|KB|MB)?", cell.strip()) is not None


def human_size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    if n >= 1_000:
        return f"{n / 1_000:.0f} KB"
    return f"{n} B"


def human_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def verdict(ratio: float, target: float, higher_is_better: bool) -> str:
    ok = ratio >= target if higher_is_better else ratio <= target
    return "ok" if ok else "MISSED"
