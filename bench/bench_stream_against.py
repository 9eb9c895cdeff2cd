"""The stream against one repair, this checkout and another side by side (issue 30).

Run: ``.venv/bin/python bench/bench_stream_against.py --against DIR``. For each answer of
``bench_stream.py`` (``make_answer``: 100 KB and 1 MB, clean and broken-and-cut-off), times
``llmfix.stream()`` fed in 16-byte chunks then closed, and one ``llmfix.repair`` of the whole
text, in this checkout and in DIR's (its ``llmfix`` imported as ``llmfix_base``, as
``bench_fail.py --against`` does), interleaved in one process. CPU seconds
(``time.process_time``), best of the rounds. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import llmfix
from bench._common import compare, markdown_table
from bench.bench_fail import import_base
from bench.bench_stream import CHUNK, make_answer


def feed_all(module: ModuleType, text: str) -> Any:
    parser = module.stream()
    feed = parser.feed
    for start in range(0, len(text), CHUNK):
        feed(text[start : start + CHUNK])
    return parser.close()


def rows(before: ModuleType, quick: bool) -> list[list[str]]:
    out = []
    for size in (100_000,) if quick else (100_000, 1_000_000):
        for broken in (False, True):
            text, _ = make_answer(size, broken=broken)
            timings = compare(
                {
                    "stream before": lambda t=text: feed_all(before, t),
                    "stream after": lambda t=text: feed_all(llmfix, t),
                    "repair before": lambda t=text: before.repair(t),
                    "repair after": lambda t=text: llmfix.repair(t),
                },
                budget=6.0 if size > 200_000 else 3.0,
                clock=time.process_time,
            )
            ms = {name: timing.best * 1e3 for name, timing in timings.items()}
            label = f"{size // 1000} KB {'broken, cut off' if broken else 'clean'}"
            out.append(
                [
                    label,
                    *(f"{ms[name]:.1f} ms" for name in ms),
                    f"{ms['stream before'] / ms['repair before']:.2f}×",
                    f"{ms['stream after'] / ms['repair after']:.2f}×",
                ]
            )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout")
    parser.add_argument("--quick", action="store_true", help="the 100 KB answers only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        before = import_base(args.against, Path(scratch))
        header = ["answer", "stream before", "stream after", "repair before", "repair after"]
        header += ["stream/repair before", "after"]
        print(markdown_table(header, rows(before, args.quick)))


if __name__ == "__main__":
    main()
