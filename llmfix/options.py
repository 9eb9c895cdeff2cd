"""Options for one repair run, with their defaults and checks."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Literal

from llmfix.model import Risk

Pick = Literal["best", "first", "last", "largest", "all"]
PICKS: tuple[str, ...] = ("best", "first", "last", "largest", "all")
Engine = Literal["llmfix", "json-repair"]
PARSE_ENGINES: tuple[str, ...] = ("llmfix", "json-repair")


@dataclass(frozen=True)
class Limits:
    """Bounds on the work done for one response; hitting one is a diagnostic."""

    max_size: int = 10_000_000  # characters of raw input given to the lenient parser
    max_depth: int = 500  # nesting depth the lenient parser is allowed to see
    time_budget: float = 5.0  # seconds per stage of work on one answer (see pipeline.py)


@dataclass(frozen=True)
class RepairOptions:
    """Everything that changes what ``llmfix.repair`` does (but not how it is reported)."""

    pick: Pick = "best"
    engine: Engine = "llmfix"  # the lenient parser: our own, or json-repair
    limits: Limits = field(default_factory=Limits)
    schema_repair: bool = True
    disabled_rules: frozenset[str] = frozenset()
    partial: bool = False
    max_risk: Risk | None = None
    allow_remote_refs: bool = False  # fetch http(s) $ref targets when building the validator
    guided: bool = True  # with a schema, read answers that are not JSON (llmfix.guided)


RECURSION_LIMIT = 5_000  # Python frames: 600 levels x 3 (YAML) + the command's own stack


def make_room() -> None:
    """Let Python code recurse as deep as the depth ceiling's levels need (the command line
    and the ``-j`` pool's workers call this; the library leaves the interpreter's setting
    alone). Here, on the ground floor, so that the command line's first act loads nothing."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
