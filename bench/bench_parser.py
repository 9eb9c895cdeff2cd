"""The lenient parser alone: ``repair_parse`` against ``json_repair.loads`` in one process.

Run: ``.venv/bin/python bench/bench_parser.py [--quick] [--sizes 1000,100000] [--mb 1]``.

Two tables, both in CPU seconds (the machine is shared; a busy neighbour must not count).
The first times ``llmfix.repair_parser.repair_parse`` (no extraction, no diagnostics) and
``json_repair.loads`` in alternating rounds on the broken shapes of ``bench_pipeline.py``
(trailing commas, single quotes, Python literals, cut off at 90%); the ratio is
json_repair's time over the parser's, so higher is better. The second gives seconds per MB
of the pathological families (missing commas, trailing commas, inner unescaped quotes) for
the parser alone and for ``llmfix.repair``, at ``--mb`` megabytes (issue 16's target is
≤ 2 s/MB at 10 MB through ``llmfix.repair``).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import markdown_table
from bench.bench_pipeline import shapes
from bench.bench_valid import make_document

SIZES = (1_000, 100_000, 1_000_000)
BROKEN = ("trailing commas", "single quotes", "Python literals", "cut off at 90%")


def _repeat(unit: str, size: int, head: str = "[", tail: str = "]") -> str:
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


# The pathological families of issue 16 (as scripts/parser_conformance.py --linear builds them).
PATHOLOGICAL: dict[str, Callable[[int], str]] = {
    "missing commas": lambda n: _repeat('"abc" 12 ', n),
    "trailing commas": lambda n: _repeat("[1,],", n),
    "inner unescaped quotes": lambda n: _repeat('{"a": "say "hi" now"},', n),
    "quotes in a string": lambda n: '{"a": "' + 'x" ' * (n // 3) + '"}',
}


def run_shapes(sizes: tuple[int, ...], quick: bool) -> list[list[str]]:
    import json_repair

    from llmfix.repair_parser import repair_parse

    rows = []
    for size in sizes:
        every = shapes(make_document(size))
        for name in BROKEN:
            text = every[name][0]
            ours, theirs = _interleaved(
                (repair_parse, json_repair.loads), text, rounds=3 if quick else 7
            )
            rows.append(
                [
                    name,
                    f"{size // 1000:,} KB",
                    f"{ours * 1e3:.2f} ms",
                    f"{theirs * 1e3:.2f} ms",
                    f"{theirs / ours:.2f}×",
                ]
            )
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def _interleaved(fns: tuple[Callable[[str], object], ...], text: str, rounds: int) -> list[float]:
    """Best CPU seconds per call of each function, timed in alternating rounds (CPU time,
    not wall time: the machine is shared, and a busy neighbour must not count)."""
    loops = max(1, 100_000 // len(text))
    best = [float("inf")] * len(fns)
    for fn in fns:
        fn(text)  # warm up
    collecting = gc.isenabled()
    try:
        for _ in range(rounds):
            for i, fn in enumerate(fns):
                gc.collect()
                gc.disable()
                start = time.process_time()
                for _ in range(loops):
                    fn(text)
                best[i] = min(best[i], (time.process_time() - start) / loops)
                if collecting:
                    gc.enable()
    finally:
        if collecting:
            gc.enable()
    return best


def _cpu(fn: Callable[[str], object], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn(text)
        best = min(best, time.process_time() - start)
    return best


def run_pathological(megabytes: float, quick: bool, whole: bool = True) -> list[list[str]]:
    import llmfix
    from llmfix.repair_parser import repair_parse

    size = int(megabytes * 1_000_000)
    rows = []

    def whole_pipeline(text: str) -> object:
        # no time budget and no size limit: the whole input is repaired, not cut short
        result = llmfix.repair(text, time_budget=0, max_size=len(text) + 1)
        assert result.status.value == "repaired", result.status
        return result

    for name, make in PATHOLOGICAL.items():
        text = make(size)
        mb = len(text) / 1e6
        parser = _cpu(repair_parse, text, 1 if quick else 2) / mb
        through = f"{_cpu(whole_pipeline, text, 1 if quick else 2) / mb:.2f} s" if whole else "-"
        rows.append([name, f"{mb:.0f} MB", f"{parser:.2f} s", through])
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing (noisier)")
    parser.add_argument("--sizes", help="comma-separated byte sizes (default 1000,100000,1000000)")
    parser.add_argument("--mb", type=float, default=1.0, help="size of the pathological inputs")
    parser.add_argument("--only", choices=["shapes", "pathological"], help="run one table")
    parser.add_argument(
        "--parser-only", action="store_true", help="pathological inputs: skip llmfix.repair"
    )
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else SIZES
    if args.only != "pathological":
        header = ["shape", "size", "parser", "json_repair", "json_repair/parser"]
        print(markdown_table(header, run_shapes(sizes, args.quick)))
        print()
    if args.only != "shapes":
        header = ["family", "size", "parser s/MB", "llmfix.repair s/MB"]
        print(markdown_table(header, run_pathological(args.mb, args.quick, not args.parser_only)))


if __name__ == "__main__":
    main()
