"""Reporters turn results into text for people and machines.

``check`` reporters are registered here by name; the registry feeds ``--format``. Each
lives in its own module, imported only when chosen.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from llmfix.errors import ConfigError

if TYPE_CHECKING:
    from llmfix.reporters.base import Reporter

# name → (module, class)
REPORTERS: dict[str, tuple[str, str]] = {
    "text": ("llmfix.reporters.text", "TextReporter"),
    "json": ("llmfix.reporters.report", "JsonReporter"),
    "yaml": ("llmfix.reporters.report", "YamlReporter"),
    "junit": ("llmfix.reporters.junit", "JunitReporter"),
    "github": ("llmfix.reporters.github", "GithubReporter"),
    "sarif": ("llmfix.reporters.sarif", "SarifReporter"),
    "html": ("llmfix.reporters.html", "HtmlReporter"),
    "baseline": ("llmfix.reporters.report", "BaselineReporter"),
}
FORMATS: tuple[str, ...] = tuple(REPORTERS)


def reporter_class(name: str) -> type[Reporter]:
    """The reporter class registered under ``name``; ``ConfigError`` for an unknown one."""
    try:
        module, attribute = REPORTERS[name]
    except KeyError:
        raise ConfigError(
            f"unknown format {name!r} (expected one of: {', '.join(FORMATS)})"
        ) from None
    cls: type[Reporter] = getattr(importlib.import_module(module), attribute)
    return cls


# --report FILE (`check`): the format a file name asks for, by its suffix.
REPORT_SUFFIXES: dict[str, str] = {
    ".sarif": "sarif",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".xml": "junit",
    ".html": "html",
    ".htm": "html",
}


def report_target(spec: str) -> tuple[str, str]:
    """``(format, path)`` for ``--report``: ``FORMAT:PATH`` names the format, else the
    suffix does — ``sarif`` for ``x.sarif`` (and ``x.sarif.json``), ``json``, ``yaml``,
    ``junit`` for ``.xml``. ``ConfigError`` for any other suffix."""
    fmt, colon, rest = spec.partition(":")
    if colon and fmt in REPORTERS and fmt != "text" and rest:
        return fmt, rest
    lower = spec.lower()
    if lower.endswith(".sarif.json"):
        return "sarif", spec
    for suffix, name in REPORT_SUFFIXES.items():
        if lower.endswith(suffix):
            return name, spec

    raise ConfigError(
        f"--report {spec}: the file name must end in .sarif, .json, .yaml, .yml, .xml or .html, "
        "or start with FORMAT: (sarif:results.out)"
    )
