"""Deadlines: a time budget as a value passed down, checked by the loops that do the work.

A stage that may run long (extraction, lenient parsing, schema repair, schema-guided
reading, tool-call checks) is given a :class:`Deadline` and calls :meth:`Deadline.check`
every so many steps of its own loops; when the time is spent, ``check`` raises
:class:`OutOfTime`, an ordinary exception naming the stage, which the pipeline turns into
a ``limits.time`` diagnostic. Nothing is interrupted from outside: only code that checks
can run out of time, so a loop that may run long must check.

``Deadline.never(stage)`` never expires; it lets a loop check without asking whether it
has a deadline. A deadline ``within`` another ends no later than the other one, and an
expired inner deadline reports the stage of whichever deadline ends first.
"""

from __future__ import annotations

import math
import time

__all__ = ["CHECK_EVERY", "Deadline", "OutOfTime"]

# How many steps a loop may take between two checks (a power of two, for ``n & MASK``).
CHECK_EVERY = 1024


class OutOfTime(Exception):
    """A stage used up its time budget (raised by :meth:`Deadline.check`)."""

    def __init__(self, stage: str, seconds: float) -> None:
        what = stage.replace("_", " ")
        super().__init__(f"{what} took longer than the {seconds:g} s time budget")
        self.stage = stage
        self.seconds = seconds


class Deadline:
    """The monotonic time by which one stage's work on one item must end."""

    __slots__ = ("at", "seconds", "stage")

    def __init__(self, seconds: float | None, stage: str, *, within: Deadline | None = None):
        """``seconds`` from now; ``None``, zero, negative or not finite means no limit."""
        limited = seconds is not None and seconds > 0 and math.isfinite(seconds)
        self.seconds = float(seconds) if limited and seconds is not None else math.inf
        self.at = time.monotonic() + self.seconds if limited else math.inf
        self.stage = stage
        if within is not None and within.at < self.at:
            self.at, self.seconds, self.stage = within.at, within.seconds, within.stage

    @classmethod
    def never(cls, stage: str = "work") -> Deadline:
        """A deadline that does not expire."""
        return cls(None, stage)

    @property
    def limited(self) -> bool:
        return self.at != math.inf

    def remaining(self) -> float:
        """Seconds left (``inf`` without a limit, never below zero)."""
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def check(self) -> None:
        """Raise :class:`OutOfTime` when the time is spent."""
        if time.monotonic() >= self.at:
            raise OutOfTime(self.stage, self.seconds)

    def __repr__(self) -> str:
        return f"Deadline({self.stage!r}, remaining={self.remaining():.3f})"
