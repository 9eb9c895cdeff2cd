"""The `llmfix` command line: options → options object → library call → reporter → exit code.

Each command lives in its own module and registers itself on the shared Typer app.
"""

from __future__ import annotations

import copy
import sys

import typer
import typer.main

from llmfix.cli import check as _check  # noqa: F401  (registers check)
from llmfix.cli import config as _config  # noqa: F401  (registers config)
from llmfix.cli import inspect as _inspect  # noqa: F401  (registers extract, schemas, rules)
from llmfix.cli import repair as _repair  # noqa: F401  (registers repair)
from llmfix.cli.app import app
from llmfix.model import ExitCode

__all__ = ["app", "main"]


def _app_for(args: list[str]) -> typer.Typer:
    """The app with only the command ``args`` start with, when they name one.

    Typer builds the Click command of every registered command on each run (about 10 ms
    for all of them) and only one runs; anything else (``--help``, ``--version``, a
    misspelt command, a group such as ``config``) gets the whole app.
    """
    named = [
        info
        for info in app.registered_commands
        if info.callback is not None
        and (info.name or typer.main.get_command_name(info.callback.__name__)) == args[0]
    ]
    if len(named) != 1:
        return app
    only = copy.copy(app)
    only.registered_commands = named
    only.registered_groups = []
    return only


def main() -> None:
    """Console-script entry point: usage errors become one line and exit code 2."""
    args = sys.argv[1:] or ["--help"]
    try:
        code = _app_for(args)(args=args, standalone_mode=False)
    except KeyboardInterrupt:
        sys.stderr.write("llmfix: interrupted\n")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.stderr.write("llmfix: aborted\n")
        sys.exit(130)
    except Exception as exc:
        # Typer's bundled Click raises UsageError/BadParameter with a format_message().
        format_message = getattr(exc, "format_message", None)
        if format_message is None:
            raise
        command = " ".join(sys.argv[1:2]) if len(sys.argv) > 1 else ""
        sys.stderr.write(
            f"llmfix: error: {format_message()} (see `llmfix {command} --help`)\n".replace(
                "llmfix  --help", "llmfix --help"
            )
        )
        sys.exit(int(ExitCode.USAGE))
    sys.exit(code if isinstance(code, int) else 0)
