"""Operational failures. Problems *in the data* are diagnostics, not exceptions.

Every error llmfix raises derives from :class:`LlmfixError`; the CLI catches that
one base class, prints ``str(error)`` on one line and exits with code 2.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "InputError",
    "InputTooLarge",
    "LlmfixError",
    "PathRefused",
    "ProviderError",
    "SchemaError",
]


class LlmfixError(Exception):
    """Base class of every error llmfix raises on purpose."""


class ConfigError(LlmfixError):
    """A bad option, flag value or configuration file."""


class SchemaError(LlmfixError):
    """A schema that cannot be read, parsed or compiled."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(source, problem)
        self.source = source
        self.problem = problem

    def __str__(self) -> str:
        return f"schema {self.source}: {self.problem}"


class InputError(LlmfixError):
    """An input file that cannot be read."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(source, problem)
        self.source = source
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.source}: {self.problem}"


class InputTooLarge(InputError):
    """An input over the bytes a run reads at most (``input.too_large`` in `check`)."""


class ProviderError(LlmfixError):
    """A model provider that cannot be reached or refuses the request."""


class PathRefused(LlmfixError):
    """A path the containment rule refuses (:mod:`llmfix.files.containment`): it leads outside
    the root it must stay in, through a symbolic link, or into a version-control directory."""

    def __init__(self, path: str, why: str, doing: str = "writing") -> None:
        super().__init__(path, why, doing)
        self.path = path
        self.why = why
        self.doing = doing

    def __str__(self) -> str:
        return f"not {self.doing} {self.path}: {self.why}"
