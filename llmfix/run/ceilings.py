"""How far a run's limits may go: what an untrusted project file may set, and the ceilings.

A project file arrives with the repository, so of a limit it may only tighten: a value equal
to the built-in default or stricter (for an ``llm:`` limit, than the user config's value
when the user config sets one). A looser one is left out and named with the file's other
ignored keys (:func:`untrusted_limits`). The user's own sources (flags, the user config, a
project file the user trusted) may loosen a limit up to its ceiling; a value above is
lowered to the ceiling and named (:func:`clamped_settings`, :func:`clamped`), or, for the
``llm:`` limits, refused (:func:`llm_ceiling_problems`).

The depth ceiling is what the code can honour: every writer of a value (the JSON, YAML and
HTML reports, ``--write-fixed``, the ``-j`` pool's pickles) recurses at least once per
level. CPython 3.12 stops C code at about 1,500 nested calls (pickle takes two a level:
about 750 levels), and the command line raises Python's own recursion limit to
:data:`~llmfix.options.RECURSION_LIMIT` (:func:`~llmfix.options.make_room`), enough for
PyYAML's three frames a level.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from llmfix.options import Limits

MAX_DEPTH = 600
JOBS_PER_CPU = 4  # -j ceiling: this many workers per usable CPU

# name -> ceiling; for each of these a larger value is looser
OPTION_CEILINGS: dict[str, float] = {
    "max_depth": MAX_DEPTH,
    "max_size": 1_000_000_000,  # characters
    "time_budget": 3_600.0,  # seconds per stage of one answer
}
CHECK_CEILINGS: dict[str, float] = {
    "timeout": 86_400.0,  # seconds per item
    "max_item_size": 1_000_000_000,  # bytes
}
LLM_CEILINGS: dict[str, float] = {
    "max_attempts": 10,
    "max_retries": 20,
    "backoff_base": 60.0,
    "backoff_max": 600.0,
    "timeout": 3_600.0,
}
# llm: limits an untrusted file may only lower (max_calls, max_run_tokens, max_cost: None
# is no limit at all)
LLM_LIMITS = (*LLM_CEILINGS, "max_calls", "max_run_tokens", "max_cost")


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _spelled(key: str) -> str:
    return key.replace("_", "-")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ------------------------------------------------------------------ an untrusted project file


def untrusted_limits(
    values: Mapping[str, Any],
    user_llm: Mapping[str, Any] | None,
    check_defaults: Mapping[str, Any],
) -> tuple[dict[str, Any], list[str]]:
    """An untrusted project file's ``values`` without the limits it loosens, and those left
    out (as ``key: value (looser than default)``); ``check_defaults``: the run's default of
    each key of :data:`CHECK_CEILINGS` (the caller's settings class holds them)."""
    from dataclasses import replace

    out = dict(values)
    ignored: list[str] = []
    option_defaults = {name: getattr(Limits, name) for name in OPTION_CEILINGS}
    for key in CHECK_CEILINGS:
        default = check_defaults[key]
        if _number(out.get(key)) and out[key] > default:
            ignored.append(f"{_spelled(key)}: {out.pop(key)} (more than {default})")
    jobs = out.get("jobs")
    if isinstance(jobs, int) and jobs > usable_cpus():
        ignored.append(f"jobs: {out.pop('jobs')} (more than the {usable_cpus()} CPUs)")
    if out.get("options"):
        out["options"], left = _tighter_only(out["options"], option_defaults, "options.")
        ignored += left
    rules = []
    for index, rule in enumerate(out.get("checks", ())):
        if rule.options:
            kept, left = _tighter_only(rule.options, option_defaults, f"checks[{index}].options.")
            rule = replace(rule, options=kept)
            ignored += left
        rules.append(rule)
    if "checks" in out:
        out["checks"] = rules
    if out.get("llm"):
        out["llm"], left = _tighter_only(out["llm"], _llm_bounds(user_llm or {}), "llm.")
        ignored += left
    return out, ignored


def _llm_bounds(user_llm: Mapping[str, Any]) -> dict[str, Any]:
    """The value each llm: limit may not exceed in a project file: the user config's, else
    the default."""
    # (start-up: nothing of llmfix.llm loads while LLM repair is off)
    # lazy: repair on a clean answer, repair --schema on a valid answer start without it
    from llmfix.llm.config import LlmConfig

    return {name: user_llm.get(name, getattr(LlmConfig, name)) for name in LLM_LIMITS}


def _tighter_only(
    section: Mapping[str, Any], bounds: Mapping[str, Any], prefix: str
) -> tuple[dict[str, Any], list[str]]:
    kept = dict(section)
    left: list[str] = []
    for key, bound in bounds.items():
        value = kept.get(key)
        # a bound of None is no limit at all (max_calls): any number is tighter
        if _number(value) and bound is not None and value > bound:
            left.append(f"{prefix}{_spelled(key)}: {kept.pop(key)} (more than {bound})")
    return kept, left


# ------------------------------------------------------------------ the ceilings


def clamped(key: str, value: Any, ceiling: float, where: str = "") -> tuple[Any, str | None]:
    """``value`` lowered to ``ceiling`` when above it, and the note that says so."""
    if not _number(value) or value <= ceiling:
        return value, None
    kept = type(value)(ceiling)
    return kept, f"{where}{_spelled(key)} {value} is above its ceiling: {kept} is used"


def clamped_options(
    options: Mapping[str, Any], where: str = ""
) -> tuple[dict[str, Any], list[str]]:
    """Repair options with ``max_depth``, ``max_size`` and ``time_budget`` at most their
    ceilings, and a note for each one lowered."""
    out = dict(options)
    notes: list[str] = []
    for key, ceiling in OPTION_CEILINGS.items():
        if key in out:
            out[key], note = clamped(key, out[key], ceiling, where)
            if note:
                notes.append(note)
    return out, notes


def clamped_settings(values: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A run's merged settings (defaults, user config, project file, flags) with every limit
    at most its ceiling, and a note for each one lowered."""
    from dataclasses import replace

    out = dict(values)
    notes: list[str] = []
    for key, ceiling in {**CHECK_CEILINGS, "jobs": JOBS_PER_CPU * usable_cpus()}.items():
        if key in out:
            out[key], note = clamped(key, out[key], ceiling)
            if note:
                notes.append(note)
    if out.get("options"):
        out["options"], lowered = clamped_options(out["options"])
        notes += lowered
    rules = []
    for index, rule in enumerate(out.get("checks", ())):
        if rule.options:
            options, lowered = clamped_options(rule.options, f"checks[{index}].options.")
            rule = replace(rule, options=options)
            notes += lowered
        rules.append(rule)
    if "checks" in out:
        out["checks"] = rules
    return out, notes


def llm_ceiling_problems(values: Mapping[str, Any]) -> list[str]:
    """What in an LLM config is above its ceiling (a flag's or the user config's mistake)."""
    return [
        f"{name} must be at most {ceiling:g}, not {values[name]}"
        for name, ceiling in LLM_CEILINGS.items()
        if _number(values.get(name)) and values[name] > ceiling
    ]
