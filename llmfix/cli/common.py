"""The Typer application object and helpers shared by every command (each command module
registers itself on :data:`app` when it is imported; see :mod:`llmfix.cli`)."""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, Optional

import typer
import typer.core
from typer._types import TyperChoice

from llmfix._version import __version__
from llmfix.errors import LlmfixError
from llmfix.model import ExitCode
from llmfix.run.notes import diagnostics_console, say, stderr_console

__all__ = ["diagnostics_console", "say", "stderr_console"]  # here for the commands


class TableChoice(TyperChoice[str]):
    """A flag's choices: the values of a library table (a key of
    :data:`llmfix.run.settings.CHOICES`), read the first time they are needed, so a run
    imports the table's module only when the flag is given (or ``--help`` lists it).
    The flag's default is one of them (tests hold it so) and is taken unread."""

    def __init__(self, table: str, default: str | None = None) -> None:
        self.table = table
        self.default = default
        self.case_sensitive = True
        self._choices: tuple[str, ...] | None = None

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        if self._choices is None:
            # lazy: llmfix --help, extract --help start without it
            from llmfix.run.settings import choices

            self._choices = choices(self.table)
        return self._choices

    def convert(self, value: Any, param: Any, ctx: Any) -> str:
        if value == self.default and value is not None:
            return str(value)
        if self.table == "fail_on" and isinstance(value, str) and _codes_too(value, self.choices):
            return value  # a level and codes or families (llmfix.batch.gate.parse_fail_on)
        return str(super().convert(value, param, ctx))


def _codes_too(value: str, levels: tuple[str, ...]) -> bool:
    """Whether ``--fail-on value`` is levels and diagnostic codes or families, by commas."""
    # lazy: only a --fail-on that names codes loads the registry
    from llmfix import codes

    parts = [part.strip() for part in value.split(",")]
    return all(p in levels or p in codes.CODES or p in codes.FAMILIES for p in parts)


# The flags `repair` and `check` share: parameter name → the flag's names, and the table
# of its choices (None: it takes any value). Each command gives its own help text, as the
# same flag means a little more to one than to the other (see :func:`shared`).
_SHARED: dict[str, tuple[tuple[str, ...], str | None]] = {
    "schema": (("--schema", "-s"), None),
    "allow_remote_refs": (("--allow-remote-refs",), None),
    "tools": (("--tools",), None),
    "tool_calls": (("--tool-calls",), None),
    "field": (("--field",), None),
    "messages": (("--messages",), "messages"),
    "kind": (("--kind",), "kind"),
    "output": (("--output", "-o"), None),
    "in_place": (("--in-place",), None),
    "report": (("--report",), None),
    "fail_on": (("--fail-on",), "fail_on"),
    "max_risk": (("--max-risk",), "risk"),
    "disable_rule": (("--disable-rule",), None),
    "no_schema_repair": (("--no-schema-repair",), None),
    "partial": (("--partial",), None),
    "encoding": (("--encoding",), None),
    "quiet": (("--quiet", "-q"), None),
    "verbose": (("--verbose", "-v"), None),
    "llm": (("--llm/--no-llm",), None),
    "max_attempts": (("--max-attempts",), None),
}


def shared(name: str, help: str, default: str | None = None) -> Any:
    """The option ``name`` of :data:`_SHARED` with this command's ``help`` (``default``:
    the command's default for a choice flag, see :class:`TableChoice`)."""
    names, table = _SHARED[name]
    kind = None if table is None else TableChoice(table, default)
    return typer.Option(*names, help=help, click_type=kind)


def choice(table: str, default: str | None = None) -> TableChoice:
    """The click type of a flag that takes one of ``table``'s values."""
    return TableChoice(table, default)


# Options `repair` and `check` share whole, help included. Optional[...] (not `| None`):
# Typer reads these annotations at run time on Python 3.10.
ModelOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--model", help="Model for --llm (e.g. gpt-4o-mini, claude-haiku-4-5)."),
]
ProviderOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--provider",
        click_type=choice("provider"),
        help="openai (any OpenAI-compatible server) or anthropic.",
    ),
]
BaseUrlOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--base-url", help="API base URL for --llm (OpenAI style ends in /v1)."),
]
MaxLlmCallsOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--max-llm-calls", help="Model requests for the whole run, at most."),
]
MaxLlmTokensOption = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--max-llm-tokens",
        help="Model tokens (input + output) for the whole run, at most; then no more requests.",
    ),
]
MaxLlmCostOption = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option(
        "--max-llm-cost",
        help="US dollars of model use for the whole run, at most (needs the model's price "
        "in the config: llm: prices:).",
    ),
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
    from collections.abc import Callable
    from pathlib import Path

    from llmfix.run.config_file import Settings
    from llmfix.run.llm import LlmRun
    from llmfix.run.settings import CheckFlags, LlmFlags, RepairFlags


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


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> typer.Exit:
    """Print a one-line error on stderr and return the Exit to raise."""
    say(f"error: {message}")
    return typer.Exit(int(code))


def tolerant_streams() -> None:
    """stdout and stderr write what their encoding cannot carry as JSON escapes
    (see ``llmfix.batch.writers``): a lone surrogate in a value never ends in a traceback."""
    # lazy: llmfix --help, extract --help start without it
    from llmfix.files.atomic import tolerate_unencodable

    tolerate_unencodable(sys.stdout)
    tolerate_unencodable(sys.stderr)


def dump_json(value: Any, indent: int | None) -> str:
    """JSON text of a repaired value, each number written as the model wrote it."""
    # lazy: llmfix --help, repair --help start without it
    from llmfix.run.repair import json_text

    return json_text(value, indent)


def warn_untrusted(settings: Settings) -> None:
    """Say once, on stderr, which keys of an untrusted project file were not used, and
    which limits were lowered to their ceilings."""
    if settings.ignored:
        # lazy: llmfix --help, repair --help start without it
        from llmfix.run.trust import untrusted_note

        note = untrusted_note(settings.config or "the config file", settings.ignored)
        say(f"warning: {note}")
    if settings.limited:
        notes = "; ".join(settings.limited)
        say(f"warning: {notes} (see README, Limits and safety)")


def llm_flags(
    llm: bool | None,
    model: str | None,
    provider: str | None,
    base_url: str | None,
    max_attempts: int | None,
    max_llm_calls: int | None,
    no_cache: bool,
    no_redact: bool = False,
    save_prompts: Path | None = None,
    max_llm_tokens: int | None = None,
    max_llm_cost: float | None = None,
) -> LlmFlags:
    """The ``--llm`` flags of `repair` and `check` as the run builder takes them: a flag
    not given is ``None``, so the config's value stands (``check`` has no ``--no-redact``
    or ``--save-prompts``)."""
    # lazy: llmfix --help, extract --help start without it
    from llmfix.run.settings import LlmFlags

    return LlmFlags(
        enabled=llm,
        model=model,
        provider=provider,
        base_url=base_url,
        max_attempts=max_attempts,
        max_calls=max_llm_calls,
        cache=False if no_cache else None,
        redact=False if no_redact else None,
        save_prompts=str(save_prompts) if save_prompts is not None else None,
        max_run_tokens=max_llm_tokens,
        max_cost=max_llm_cost,
    )


def print_llm_totals(run: LlmRun, verbosity: int) -> None:
    """The provider's faults, one warning line per kind at every verbosity (a dead or
    refusing provider is never silent), then the closing ``llm: N model calls`` line (N:
    requests that reached the provider), left out with ``-q``."""
    for line in run.fault_lines():
        say(f"warning: {line}")
    if verbosity >= 0:
        say(run.summary())
    if verbosity > 0:
        for line in run.usage_lines():
            say(line)


def execute(
    flags: RepairFlags | CheckFlags,
    go: Callable[[Any, LlmRun | None], ExitCode],
    ready: Callable[[Any], None] | None = None,
) -> NoReturn:
    """Build the run ``flags`` describe (saying what an untrusted config left out), make
    the ``ready`` checks, start its LLM repair when it is on, run it with ``go`` and exit
    with the code it gives; an :class:`LlmfixError` is one line and exit 2."""
    # lazy: llmfix --help, repair --help start without it
    from llmfix.run.repair import start_llm

    # lazy: llmfix --help, extract --help start without it
    from llmfix.run.settings import build_run, run_config

    model_run = None
    try:
        settings = run_config(flags)
        warn_untrusted(settings)
        run = build_run(flags, settings)
        if ready is not None:
            ready(run)
        model_run = start_llm(run)  # without LLM repair, nothing of llmfix.llm loads
        try:
            code = go(run, model_run)
        finally:
            if model_run is not None:
                model_run.close()
    except LlmfixError as exc:
        raise fail(str(exc)) from None
    if model_run is not None:
        print_llm_totals(model_run, run.verbosity)
    raise typer.Exit(int(code))
