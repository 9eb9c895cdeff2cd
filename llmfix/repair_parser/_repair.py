"""What the lenient parser reports: a :class:`Repair` per change, or a :class:`ParseFailure`.

A repair is a ``NamedTuple``: the parser makes one per change (hundreds of thousands on a
large broken document), and a tuple subclass is made and read at C speed where a frozen
dataclass costs several times more; it is also what :func:`repair_parse` hands out, so no
second object is built per repair.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from llmfix.model import Risk

# Risk tiers; a note that changed nothing (a number kept as written) has none.
LOSSLESS: Final = Risk.LOSSLESS
SAFE: Final = Risk.SAFE
GUESS: Final = Risk.GUESS
NOTE: Final = None

SINGLE_QUOTED: Final = "single-quoted string"  # the message of parse.single_quotes
CLOSING_QUOTE_ADDED: Final = "closing quote added at end of input"  # a cut string's


class Repair(NamedTuple):
    """One change the parser made: ``text[start:end]`` is what it changed."""

    code: str
    start: int
    end: int
    risk: Risk | None  # None for a note that changed nothing (a number kept as written)
    message: str
    related: tuple[tuple[int, int], ...] = ()  # other spans it concerns (a duplicate's first)


class ParseFailure(Exception):
    """Nothing can be recovered; ``limit`` names the bound that stopped the parser."""

    def __init__(self, message: str, position: int | None = None, limit: str | None = None):
        super().__init__(message)
        self.message = message
        self.position = position
        self.limit = limit
