"""Tool-call answers with a marker repeated thousands of times (issue 32): each reader runs
once per marker, and a marker's value may run past the marker that would have ended it.

Run: ``.venv/bin/python bench/bench_toolcall_markers.py``. Prints a markdown table.

Each row is one shape repeated 2,000 and 16,000 times, read by
``llmfix.toolcalls.extract_tool_calls`` (CPU seconds). The figure that matters is the ratio
of the two times: linear work gives 8, quadratic work 64. (Before issue 32 the JSON-argument
shapes gave 15–23: every failed strict decode built an error that counted the lines of the
whole text before it.)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import markdown_table
from llmfix.toolcalls import extract_tool_calls

SHAPES = {
    "Hermes, unterminated string": '<tool_call>{"name": "x", "arguments": {"v": "',
    "Hermes, marker inside a string": '<tool_call>{"name": "x", "arguments": {"v": '
    '"</tool_call>"}}</tool_call>',
    "Harmony, the call marker in arguments": "<|channel|>commentary to=functions.f<|message|>"
    '{"v": "<|call|>',
    "Mistral, unterminated string": '[TOOL_CALLS]{"a": "',
    "<think> holding a cut call": '<think><tool_call>{"name": "x", "arguments": {',
    "Qwen3-Coder, </parameter> in prose": "<tool_call><function=f><parameter=v>a </parameter> b ",
    "DSML invoke, junk after values": '<｜DSML｜tool_calls><｜DSML｜invoke name="a">'
    '<｜DSML｜parameter name="p">x</｜DSML｜parameter> j ',
    "GLM, junk after values": "<tool_call>f<arg_key>k</arg_key><arg_value>x</arg_value> j ",
    "Kimi K3, junk after arguments": '<|open|>call tool="a"<|sep|><|open|>argument key="k"'
    "<|sep|>x<|close|>argument<|sep|> j ",
}
COUNTS = (2_000, 16_000)


def seconds(text: str) -> float:
    started = time.process_time()
    extract_tool_calls(text)
    return time.process_time() - started


def main() -> None:
    rows = []
    for name, unit in SHAPES.items():
        small, large = (seconds(unit * n) for n in COUNTS)
        rows.append([name, f"{small:.3f}", f"{large:.3f}", f"{large / max(small, 1e-4):.1f}"])
    print(markdown_table(["shape", "× 2,000 (s)", "× 16,000 (s)", "ratio"], rows))


if __name__ == "__main__":
    main()
