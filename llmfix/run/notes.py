"""What a run says on stderr besides its reports: one-line notes, and the console that
styles them when stderr is a terminal."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from llmfix.reporters.console import PlainConsole


def say(line: str) -> None:
    """``llmfix: LINE`` on stderr, escaped for the terminal: a line names files, keys and
    values from the input (see :mod:`llmfix.reporters.sinks`), one line whatever they hold."""
    # lazy: llmfix --help, repair --help start without it
    from llmfix.reporters.sinks import for_terminal

    sys.stderr.write(f"llmfix: {for_terminal(line)}\n")


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def diagnostics_console() -> Console | PlainConsole:
    """Where diagnostics go: :func:`stderr_console` when stderr is a terminal (or
    ``FORCE_COLOR`` says to style it); else the same text, plain, without importing rich."""
    # lazy: llmfix --help, repair --help start without it
    from llmfix.reporters.console import PlainConsole, styled_stream

    return stderr_console() if styled_stream(sys.stderr) else PlainConsole()
