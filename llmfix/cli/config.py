"""`llmfix config`: show the merged settings; `config trust` / `config untrust` a project file."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from llmfix.cli.common import app, choice, dump_json, fail, warn_untrusted
from llmfix.errors import LlmfixError

config_app = typer.Typer(
    help="Show the merged configuration; trust a project config file.",
    invoke_without_command=True,
    no_args_is_help=False,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(config_app, name="config")


@config_app.callback()
def show_config(
    ctx: typer.Context,
    config: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--config", help="Read this config file instead of searching upward."),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", "-f", click_type=choice("config_format", "yaml"), help="Output format."
        ),
    ] = "yaml",
    trust_config: Annotated[
        bool,
        typer.Option("--trust-config", help="Show the settings as if the file were trusted."),
    ] = False,
) -> None:
    """Print the merged configuration (defaults < user config < llmfix.yaml / [tool.llmfix])
    and its file; `llmfix config trust` lets a project file's network settings be used.

    Paths are shown as `check` resolves them, relative to the working directory.
    """
    if ctx.invoked_subcommand is not None:
        return
    # lazy: llmfix --help, a misspelt command start without it
    from llmfix.run.settings import CheckFlags, run_config

    try:
        settings = run_config(CheckFlags(config=config, trust_config=trust_config))
    except LlmfixError as exc:
        raise fail(str(exc)) from None
    warn_untrusted(settings)
    data = settings.to_dict()
    if fmt == "json":
        sys.stdout.write(dump_json(data, 2) + "\n")
        return
    import yaml

    # lazy: llmfix --help, config -f json start without it
    from llmfix.reporters.sinks import for_terminal

    # lazy: llmfix --help, a misspelt command start without it
    from llmfix.run.trust import user_config_path

    where = for_terminal(settings.config or "none found (defaults only)")
    sys.stdout.write(f"# config file: {where}\n# user config: {user_config_path()}\n")
    sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _project_file(path: str | None) -> Path:
    """The file named, else the one `check` would use (``LLMFIX_CONFIG``, found upward)."""
    # lazy: llmfix --help, a misspelt command start without it
    from llmfix.run.config_file import find_config

    if path is not None:
        return Path(path)
    env = os.environ.get("LLMFIX_CONFIG")
    found = Path(env) if env else find_config(Path.cwd())
    if found is None:
        raise fail("no llmfix.yaml or [tool.llmfix] found here or above; name the file")
    return found


@config_app.command("trust")
def trust(
    path: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(help="The project config file (default: the one found upward)."),
    ] = None,
) -> None:
    """Trust a project config file as it is now: its llm: and allow-remote-refs settings are
    used until the file changes (its path and SHA-256 go in the user's trusted.json)."""
    # lazy: llmfix --help, a misspelt command start without it
    from llmfix.run.config_file import read_bytes, read_config

    # lazy: llmfix --help, a misspelt command start without it
    from llmfix.run.trust import trust_file, trust_store_path

    file = _project_file(path)
    try:
        raw = read_bytes(file)  # the bytes checked are the bytes trusted
        read_config(file, raw)  # a file that does not load is not worth trusting
        digest = trust_file(file, raw)
    except LlmfixError as exc:
        raise fail(str(exc)) from None
    # lazy: llmfix --help, config -f json start without it
    from llmfix.reporters.sinks import for_terminal

    where = for_terminal(os.path.abspath(file))
    sys.stdout.write(
        f"trusted {where} (sha256 {digest[:16]}…) in {trust_store_path()}; "
        "a change to the file makes it untrusted again\n"
    )


@config_app.command("untrust")
def untrust(
    path: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(help="The project config file (default: the one found upward)."),
    ] = None,
) -> None:
    """Forget that a project config file was trusted."""
    # lazy: llmfix --help, a misspelt command start without it
    from llmfix.run.trust import untrust_file

    file = _project_file(path)
    try:
        forgotten = untrust_file(file)
    except LlmfixError as exc:
        raise fail(str(exc)) from None
    state = "no longer trusted" if forgotten else "was not trusted"
    # lazy: llmfix --help, config -f json start without it
    from llmfix.reporters.sinks import for_terminal

    sys.stdout.write(f"{for_terminal(os.path.abspath(file))}: {state}\n")
