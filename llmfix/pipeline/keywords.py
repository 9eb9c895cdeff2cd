"""Repair options from keyword arguments: the library's ``**options``, a config file's
``options:`` table and the CLI's flags all go through :func:`make_options`.

It lives here, not in :mod:`llmfix.options` on the ground floor, because it checks rule
ids against the schema repair table (:mod:`llmfix.schema.repair`), a floor below the
pipeline. The package face re-exports it as ``llmfix.make_options``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from llmfix.errors import ConfigError
from llmfix.model import Risk
from llmfix.options import PARSE_ENGINES, PICKS, Limits, RepairOptions

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
    if "disabled_rules" in rest:
        rules = list(rest["disabled_rules"])
        if rules:
            # (start-up: the schema repair rules load only when a run names rules to disable)
            from llmfix.rules import rule_ids

            rest["disabled_rules"] = rule_ids(rules)
        else:
            rest["disabled_rules"] = frozenset()
    return RepairOptions(limits=limits, **rest)
