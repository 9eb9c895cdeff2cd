"""Streaming a string full of escaped quotes, fed one character at a time (issue 27, item 10).

Run: ``.venv/bin/python bench/bench_stream_feed.py``. Prints a markdown table.

The answer is ``{"a": "\\"x\\"x…"}`` of 20, 40 and 100 KB, fed to ``llmfix.stream()`` one
character per ``feed`` (the worst chunking), then ``close()``; with ``--tools`` the same
string is the argument of a Hermes ``<tool_call>`` read with a tool registry; with ``--calls``
the answer is 500, 1,000 and 2,000 short Hermes tool calls (each argument holding escaped
quotes) under ``time_budget=0.5``. The figure that matters is the ratio of each row's time
to the first row's: linear work gives 2 and 5 (2 and 4 for ``--calls``), the quadratic
rescans this bench was written for gave about 4 and 20.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import llmfix
from bench._common import human_time, markdown_table

SIZES_KB = (20, 40, 100)
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def answer(size: int, tools: bool) -> str:
    body = '\\"x' * (size // 3)
    if tools:
        return '<tool_call>{"name": "f", "arguments": {"a": "' + body + '"}}</tool_call>'
    return '{"a": "' + body + '"}'


def calls(count: int) -> str:
    call = '<tool_call>{"name": "f", "arguments": {"a": "' + '\\"x' * 20 + '"}}</tool_call>\n'
    return call * count


def feed_seconds(text: str, tools: bool) -> float:
    parser = llmfix.stream(tools=TOOLS, time_budget=0.5) if tools else llmfix.stream()
    start = time.perf_counter()
    for char in text:
        parser.feed(char)
    parser.close()
    return time.perf_counter() - start


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--tools", action="store_true", help="the string in a tool call")
    args.add_argument("--calls", action="store_true", help="many short tool calls")
    parsed = args.parse_args()
    cases = (
        [(f"{n:,} calls", calls(n)) for n in (500, 1000, 2000)]
        if parsed.calls
        else [(f"{kb} KB", answer(kb * 1000, parsed.tools)) for kb in SIZES_KB]
    )
    tools = parsed.tools or parsed.calls
    rows = []
    base = None
    for name, text in cases:
        seconds = min(feed_seconds(text, tools) for _ in range(3))
        base = base or seconds
        rows.append([name, human_time(seconds), f"{seconds / base:.1f}x"])
    print(markdown_table(["answer", "fed 1 char at a time", "vs the first"], rows))


if __name__ == "__main__":
    main()
