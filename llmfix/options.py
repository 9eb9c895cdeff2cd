"""Options for one repair run, with their defaults and checks."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any, Literal

from llmfix.errors import ConfigError
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
class Degenerate:
    """Thresholds of the degenerate-answer checks (:mod:`llmfix.pipeline.degenerate`): a
    ``check`` or ``repair`` option ``degenerate`` (``--degenerate NAME=VALUE``, a config
    file's ``options: {degenerate: {...}}``)."""

    loop_chars: int = 200  # a repetition loop covers at least this many characters
    loop_repeats: int = 8  # ... and its unit appears at least this many times
    loop_period: int = 100  # units up to this many characters long are looked for
    whitespace_run: int = 200  # whitespace characters in a row
    repeated_elements: int = 5  # identical array elements in a row
    placeholders: tuple[str, ...] | None = None  # the values taken as placeholders (None: the list)
    extra_placeholders: tuple[str, ...] = ()  # added to the list

    @classmethod
    def from_mapping(cls, given: Any) -> Degenerate:
        """The thresholds a mapping names; :class:`ConfigError` for a bad name or value."""
        if isinstance(given, Degenerate):
            return given
        if not isinstance(given, dict):
            raise ConfigError(f"degenerate must be a mapping of thresholds, not {given!r}")
        known = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for raw, value in given.items():
            name = str(raw).strip().replace("-", "_")
            if name not in known:
                raise ConfigError(
                    f"degenerate: unknown threshold {raw!r} (expected one of: "
                    f"{', '.join(n.replace('_', '-') for n in known)})"
                )
            if name in ("placeholders", "extra_placeholders"):
                if isinstance(value, str):
                    value = [value]
                if not isinstance(value, (list, tuple)) or not all(
                    isinstance(v, str) for v in value
                ):
                    raise ConfigError(f"degenerate: {raw} must be a list of strings")
                values[name] = tuple(value)
                continue
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value)
            least = 2 if name == "loop_repeats" else 1  # one unit is no repetition
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ConfigError(f"degenerate: {raw} must be a whole number from {least}")
            values[name] = value
        return cls(**values)


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
    degenerate: Degenerate = field(default_factory=Degenerate)  # valid but worthless answers


RECURSION_LIMIT = 5_000  # Python frames: 600 levels x 3 (YAML) + the command's own stack


def make_room() -> None:
    """Let Python code recurse as deep as the depth ceiling's levels need (the command line
    and the ``-j`` pool's workers call this; the library leaves the interpreter's setting
    alone). Here, on the ground floor, so that the command line's first act loads nothing."""
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)


# Keyword options (``llmfix.repair``'s ``**options``, a config file's ``options:`` table and
# the CLI's flags) to RepairOptions; the face re-exports make_options.
_DEFAULT_OPTIONS = RepairOptions()
_LIMIT_NAMES = frozenset(f.name for f in dataclasses.fields(Limits))
_OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(RepairOptions)) - {"limits"}


def make_options(**options: Any) -> RepairOptions:
    """Build :class:`RepairOptions` from keyword arguments, rejecting unknown names."""
    if not options:
        return _DEFAULT_OPTIONS
    limit_names, option_names = _LIMIT_NAMES, _OPTION_NAMES
    unknown = set(options) - limit_names - option_names
    if unknown:
        import difflib  # (start-up: only a misspelt option needs it)

        name = sorted(unknown)[0]
        close = difflib.get_close_matches(name, sorted(limit_names | option_names), n=1)
        suggestion = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown option {name!r}{suggestion}")
    limits = Limits(**{k: v for k, v in options.items() if k in limit_names})
    rest = {k: v for k, v in options.items() if k in option_names}
    if rest.get("pick", "best") not in PICKS:
        raise ConfigError(f"unknown pick {rest['pick']!r} (expected one of: {', '.join(PICKS)})")
    if rest.get("engine", "llmfix") not in PARSE_ENGINES:
        raise ConfigError(
            f"unknown engine {rest['engine']!r} (expected one of: {', '.join(PARSE_ENGINES)})"
        )
    if isinstance(rest.get("max_risk"), str):
        try:
            rest["max_risk"] = Risk.parse(rest["max_risk"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if "degenerate" in rest:
        rest["degenerate"] = Degenerate.from_mapping(rest["degenerate"])
    if "disabled_rules" in rest:
        rules = list(rest["disabled_rules"])
        if rules:
            # (start-up: the schema repair rules load only when a run names rules to disable)
            from llmfix.rules import rule_ids

            rest["disabled_rules"] = rule_ids(rules)
        else:
            rest["disabled_rules"] = frozenset()
    return RepairOptions(limits=limits, **rest)
