"""The `llmfix` command line: options → options object → library call → reporter → exit code.

Each command lives in its own module and registers itself on the shared Typer app
(:mod:`llmfix.cli.common`) when it is imported. ``llmfix NAME ...`` imports NAME's module
alone (``llmfix repair`` never loads `check`'s); :data:`app`, read from this package, is the
whole app, every command registered.
"""

from __future__ import annotations

import copy
import importlib
import sys
from typing import Any

import typer
import typer.main

from llmfix.cli.common import app as _app
from llmfix.model import ExitCode
from llmfix.options import make_room

__all__ = ["app", "main"]

# The command modules, in the order the whole app lists their commands, and the module that
# registers each command (`config` is a group: it gets the whole app).
_MODULES = ("check", "config", "inspect", "repair", "explain", "trend", "proxy")
_MODULE_OF = {
    "check": "check",
    "explain": "explain",
    "extract": "inspect",
    "schemas": "inspect",
    "rules": "inspect",
    "repair": "repair",
    "trend": "trend",
    "proxy": "proxy",
}


def __getattr__(name: str) -> Any:
    if name == "app":
        return _whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _whole_app() -> typer.Typer:
    """The app with every command registered, listed in :data:`_MODULES` order whichever
    module was imported first."""
    for module in _MODULES:
        importlib.import_module(f"{__name__}.{module}")
    rank = {f"{__name__}.{module}": i for i, module in enumerate(_MODULES)}
    _app.registered_commands.sort(
        key=lambda info: rank.get(getattr(info.callback, "__module__", ""), len(rank))
    )
    return _app


def _app_for(args: list[str]) -> typer.Typer:
    """The app with only the command ``args`` start with, when they name one; only that
    command's module is imported.

    Typer builds the Click command of every registered command on each run (about 10 ms
    for all of them) and only one runs; anything else (``--help``, ``--version``, a
    misspelt command, a group such as ``config``) gets the whole app.
    """
    module = _MODULE_OF.get(args[0])
    if module is None:
        return _whole_app()
    importlib.import_module(f"{__name__}.{module}")
    named = [
        info
        for info in _app.registered_commands
        if info.callback is not None
        and (info.name or typer.main.get_command_name(info.callback.__name__)) == args[0]
    ]
    if len(named) != 1:
        return _whole_app()
    only = copy.copy(_app)
    only.registered_commands = named
    only.registered_groups = []
    return only


def main() -> None:
    """Console-script entry point: usage errors become one line and exit code 2."""
    args = sys.argv[1:] or ["--help"]

    make_room()  # values as deep as the depth ceiling are written without a RecursionError
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
        # lazy: llmfix --help, repair --help start without it
        from llmfix.reporters.sinks import for_terminal

        command = " ".join(sys.argv[1:2]) if len(sys.argv) > 1 else ""
        message = f"error: {format_message()} (see `llmfix {command} --help`)"
        sys.stderr.write(
            f"llmfix: {for_terminal(message)}\n".replace("llmfix  --help", "llmfix --help")
        )
        sys.exit(int(ExitCode.USAGE))
    sys.exit(code if isinstance(code, int) else 0)
