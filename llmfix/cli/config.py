"""`llmfix config`: show the settings `check` would use, merged from defaults and the file."""

from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer

from llmfix.cli.app import app, dump_json, fail
from llmfix.errors import LlmfixError


@app.command("config")
def show_config(
    config: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--config", help="Read this config file instead of searching upward."),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="yaml|json.")] = "yaml",
) -> None:
    """Print the merged configuration (defaults < llmfix.yaml / [tool.llmfix]) and its file.

    Paths are shown as `check` resolves them, relative to the working directory.
    """
    from llmfix.configfile import load_settings

    if fmt not in ("yaml", "json"):
        raise fail(f"--format must be yaml or json, not {fmt!r}")
    try:
        settings = load_settings({}, config=config)
    except LlmfixError as exc:
        raise fail(str(exc)) from None
    data = settings.to_dict()
    if fmt == "json":
        sys.stdout.write(dump_json(data, 2) + "\n")
        return
    import yaml

    where = settings.config or "none found (defaults only)"
    sys.stdout.write(f"# config file: {where}\n")
    sys.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
