"""Issue 27, items 8, 10 and 12: a run's work stays bounded whatever the repository says.

- 8: an untrusted project file may only tighten limits; flags and the user config may loosen
  them up to hard ceilings the code honours (no ``RecursionError`` in any writer).
- 10: the stream reader costs linear work on strings full of escaped quotes.
- 12: ``check -j N`` pool workers end with their parent, even when it is killed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import llmfix
from llmfix.stream import reader

# ------------------------------------------------------------------ 10: linear stream reading


def _escaped_quotes_answer(size: int) -> str:
    return '{"a": "' + '\\"x' * (size // 3) + '"}'


def _scanned_characters(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any]:
    """Characters the reader's JSON scanners were pointed at (from where a scan starts to
    the end of the buffer: what a scan may read) when ``text`` is fed one at a time."""
    work = [0]
    scan_string, scan_value = reader.scanstring, reader._SCAN

    def counted_string(buf: str, start: int, strict: bool) -> tuple[str, int]:
        work[0] += len(buf) - start
        return scan_string(buf, start, strict)

    def counted_value(buf: str, start: int) -> tuple[Any, int]:
        work[0] += len(buf) - start
        return scan_value(buf, start)  # type: ignore[no-any-return]

    monkeypatch.setattr(reader, "scanstring", counted_string)
    monkeypatch.setattr(reader, "_SCAN", counted_value)
    parser = llmfix.stream()
    for char in text:
        parser.feed(char)
    parser.flush()
    return work[0], parser


def test_escaped_quotes_fed_one_at_a_time_cost_linear_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    small = _escaped_quotes_answer(3_000)
    large = _escaped_quotes_answer(12_000)
    small_work, _ = _scanned_characters(small, monkeypatch)
    large_work, parser = _scanned_characters(large, monkeypatch)
    # each escaped quote sent the reader back over the whole string: ~n²/6 characters
    assert small_work <= 20 * len(small)
    assert large_work <= 20 * len(large)
    assert large_work / small_work < 6  # 4x the text: linear is 4, quadratic 16
    assert parser.close().value == json.loads(large)


@pytest.mark.parametrize(
    "answer",
    [
        '{"a": "x\\\\", "b": 1}',  # an escaped backslash right before the closing quote
        '{"a": "\\\\\\"", "b": 1}',  # an escaped backslash, then an escaped quote
        '{"a": "\\"\\\\\\\\\\"", "b": "y"}',
        '{"a": "\\u0022\\"", "b": [1]}',
    ],
)
def test_strings_with_escapes_close_where_they_end(answer: str) -> None:
    """The escape state carried from chunk to chunk finds the real closing quote."""
    expected = json.loads(answer)
    for size in (1, 2, 3):
        parser = llmfix.stream()
        shown: list[Any] = []
        for start in range(0, len(answer), size):
            shown += [e.value for e in parser.feed(answer[start : start + size]) if e.value]
        shown += [e.value for e in parser.flush() if e.value]
        assert shown[-1] == expected
        assert parser.close().value == expected
