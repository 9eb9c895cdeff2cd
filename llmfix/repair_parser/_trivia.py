"""What the parser skips between tokens: whitespace, comments and markdown fences."""

from __future__ import annotations

from llmfix.repair_parser import _text as T
from llmfix.repair_parser._frames import (
    CLOSER,
    K_ARR,
    K_OBJ,
    S_KEY_FIRST,
    S_VALUE_FIRST,
    Containers,
)
from llmfix.repair_parser._repair import LOSSLESS


class Trivia(Containers):
    """Skipping (and recording) what carries no value."""

    def _skip(self, pos: int, record: bool = True) -> int:
        """Skip whitespace, comments and markdown fences; record them when ``record``."""
        text = self.text
        end = self.end
        check_at = pos + T.CHUNK
        while pos < end:
            if pos >= check_at:  # a long run of comments
                self.deadline.check()
                check_at = pos + T.CHUNK
            c = text[pos]
            if c in " \t\n\r":
                pos = T.WS.match(text, pos, end).end()  # type: ignore[union-attr]
                continue
            if c == "/":
                if pos + 1 >= end:
                    return pos
                n = text[pos + 1]
                if n == "*":
                    close = text.find("*/", pos + 2, end)
                    stop = end if close < 0 else close + 2
                    if record:
                        self._repair("parse.comment", pos, stop, LOSSLESS, "block comment removed")
                    pos = stop
                    continue
                if n == "/":
                    stop = T.LINE_END.match(text, pos, end).end()  # type: ignore[union-attr]
                    if record:
                        self._repair("parse.comment", pos, stop, LOSSLESS, "line comment removed")
                    pos = stop
                    continue
                return pos
            if c == "#":
                if pos + 1 < end and text[pos + 1] not in " \t#!\n\r":
                    return pos
                stop = T.HASH_COMMENT.match(text, pos, end).end()  # type: ignore[union-attr]
                if record:
                    self._repair("parse.comment", pos, stop, LOSSLESS, "'#' comment removed")
                pos = stop
                continue
            if c == "`":
                if not text.startswith("```", pos):
                    return pos
                stop = T.FENCE.match(text, pos, end).end()  # type: ignore[union-attr]
                if record:
                    stop = self._fence(pos, stop)
                pos = stop
                continue
            if c in T.SPECIAL_WS_CHARS:
                stop = T.SPECIAL_WS.match(text, pos, end).end()  # type: ignore[union-attr]
                if record:
                    self._repair(
                        "parse.special_whitespace", pos, stop, LOSSLESS, "non-JSON space character"
                    )
                pos = stop
                continue
            return pos
        return pos

    def _fence(self, pos: int, stop: int) -> int:
        start = pos
        stack = self.stack
        pending = self.fenced_quotes
        if pending and pending[-1][0] == len(stack) and self.text.startswith(pending[-1][1], stop):
            # "```json {...}```": the closing quote of a fence written inside a string
            pending.pop()
            stop += 1
        if len(stack) == 2:
            frame = stack[1]
            opener = frame.open_pos
            if (
                frame.kind in (K_ARR, K_OBJ)
                and not frame.container
                and frame.state in (S_VALUE_FIRST, S_KEY_FIRST)
                and pos - opener <= 64
                and not self.text[opener + 1 : pos].strip()
            ):
                # "[```json ... ```]": the bracket belongs to the fence, not to the value
                stack.pop()
                closer = CLOSER[frame.kind]
                self.open_counts[closer] -= 1
                self.dropped_closer = closer
                start = opener
        self._repair("parse.fence", start, stop, LOSSLESS, "markdown fence removed")
        return stop

    def _peek(self, pos: int) -> int:
        if pos < self.end and self.text[pos] in T.TRIVIA_START:
            return self._skip(pos, record=False)
        return pos
