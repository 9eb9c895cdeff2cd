"""`llmfix trend`: the rates of a series of `check` reports, over time."""

# No ``from __future__ import annotations``: see llmfix.cli.repair.
from typing import Annotated, Optional

import typer

from llmfix.cli.common import app, fail, tolerant_streams
from llmfix.errors import LlmfixError


@app.command()
def trend(
    reports: Annotated[
        list[str],
        typer.Argument(help="-f json reports of check runs, or folders of them."),
    ],
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="text (sparklines), json or html (charts).")
    ] = "text",
    output: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--output", "-o", help="Write here instead of stdout."),
    ] = None,
    key: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--key",
            help="A rate to follow: a status, failing, a code or a family (repeatable; "
            "default: every problem some run has).",
        ),
    ] = None,
) -> None:
    """Show rates over a series of runs, per group and per status or code: a table with
    sparklines, the series as JSON, or a page of charts (one self-contained file).

    Runs are ordered by when they finished. Exit codes: 0 shown, 2 a file is no report.
    """
    tolerant_streams()
    # lazy: llmfix --help starts without it
    from llmfix.run.trend import run_trend

    try:
        code = run_trend(reports, fmt, output, tuple(key or ()))
    except LlmfixError as exc:
        raise fail(str(exc)) from None
    raise typer.Exit(int(code))
