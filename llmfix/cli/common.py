"""The Typer application object and helpers shared by every command (each command module
registers itself on :data:`app` when it is imported; see :mod:`llmfix.cli`)."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
import typer.core

from llmfix.model import ExitCode
from llmfix.run.settings import Provider

# Options `repair` and `check` share, written once. Optional[...] (not `| None`): Typer
# reads these annotations at run time on Python 3.10.
ModelOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--model", help="Model for --llm (e.g. gpt-4o-mini, claude-haiku-4-5)."),
]
ProviderOption = Annotated[
    Optional[Provider],  # noqa: UP045
    typer.Option("--provider", help="openai (any OpenAI-compatible server) or anthropic."),
]
BaseUrlOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--base-url", help="API base URL for --llm (OpenAI style ends in /v1)."),
]
MaxLlmCallsOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--max-llm-calls", help="Model requests for the whole run, at most."),
]
NoCacheOption = Annotated[
    bool, typer.Option("--no-cache", help="Neither read nor write the model answer cache.")
]
TrustConfigOption = Annotated[
    bool,
    typer.Option(
        "--trust-config",
        help="Trust the project config this once, as `llmfix config trust` would: its "
        "llm:, allow-remote-refs and paths outside its directory are used.",
    ),
]

if TYPE_CHECKING:
    from rich.console import Console

    from llmfix.reporters.console import PlainConsole
    from llmfix.run.config_file import Settings
    from llmfix.run.llm import LlmRun


class _ChoiceError(typer.BadParameter):
    """A value outside a flag's choices, said as the config file says it."""

    def format_message(self) -> str:
        return self.message


class _Commands(typer.core.TyperGroup):
    """The commands; a flag given a value outside its choices is reported in one line,
    ``--kind must be one of auto, text, json, jsonl, not 'csv'`` (``--messages must be last
    or all, not 'first'``), as the library says it, and still exits 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:
            raise _choice_error(exc) from None


def _choice_error(exc: typer.BadParameter) -> typer.BadParameter:
    choices = getattr(getattr(exc.param, "type", None), "choices", None)
    names = getattr(exc.param, "opts", None)
    if not choices or not names:
        return exc
    given = re.match(r"^(['\"].*?['\"]) is not", exc.message)
    told = f", not {given.group(1)}" if given else ""
    flag = max(names, key=len)
    values = [str(getattr(c, "value", c)) for c in choices]
    allowed = " or ".join(values) if len(values) == 2 else "one of " + ", ".join(values)
    return _ChoiceError(f"{flag} must be {allowed}{told}", ctx=exc.ctx, param=exc.param)


app = typer.Typer(
    name="llmfix",
    cls=_Commands,
    help=(
        "Validate and repair the JSON that language models write.\n\n"
        "Example: cat answer.txt | llmfix repair --schema person.json > person.json"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from llmfix._version import __version__

        sys.stdout.write(f"llmfix {__version__}\n")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    """Validate and repair the JSON that language models write."""


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def diagnostics_console() -> Console | PlainConsole:
    """Where diagnostics go: :func:`stderr_console` when stderr is a terminal (or
    ``FORCE_COLOR`` says to style it); else the same text, plain, without importing rich."""
    from llmfix.reporters.console import PlainConsole, styled_stream

    return stderr_console() if styled_stream(sys.stderr) else PlainConsole()


def say(line: str) -> None:
    """``llmfix: LINE`` on stderr, escaped for the terminal: a line names files, keys and
    values from the input (see :mod:`llmfix.reporters.sinks`), one line whatever they hold."""
    from llmfix.reporters.sinks import for_terminal

    sys.stderr.write(f"llmfix: {for_terminal(line)}\n")


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> typer.Exit:
    """Print a one-line error on stderr and return the Exit to raise."""
    say(f"error: {message}")
    return typer.Exit(int(code))


def tolerant_streams() -> None:
    """stdout and stderr write what their encoding cannot carry as JSON escapes
    (see ``llmfix.batch.writers``): a lone surrogate in a value never ends in a traceback."""
    from llmfix.files.atomic import tolerate_unencodable

    tolerate_unencodable(sys.stdout)
    tolerate_unencodable(sys.stderr)


def dump_json(value: Any, indent: int | None) -> str:
    """JSON text of a repaired value, each number written as the model wrote it."""
    from llmfix.run.repair import json_text

    return json_text(value, indent)


def warn_untrusted(settings: Settings) -> None:
    """Say once, on stderr, which keys of an untrusted project file were not used, and
    which limits were lowered to their ceilings."""
    if settings.ignored:
        from llmfix.run.trust import untrusted_note

        note = untrusted_note(settings.config or "the config file", settings.ignored)
        say(f"warning: {note}")
    if settings.limited:
        notes = "; ".join(settings.limited)
        say(f"warning: {notes} (see README, Limits and safety)")


def print_llm_totals(run: LlmRun, verbosity: int) -> None:
    """The provider's faults, one warning line per kind at every verbosity (a dead or
    refusing provider is never silent), then the closing ``llm: N model calls`` line (N:
    requests that reached the provider), left out with ``-q``."""
    for line in run.fault_lines():
        say(f"warning: {line}")
    if verbosity >= 0:
        say(run.summary())
