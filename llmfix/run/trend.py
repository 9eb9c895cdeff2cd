"""A `trend` run: a series of `check` reports in, their rates over time out.

The command (:mod:`llmfix.cli.trend`) hands the report paths (files, or folders whose
``*.json`` reports are read), the format and the keys; :func:`run_trend` reads the runs,
orders them, and writes the table (text), the series (json) or the page with its charts
(html, one self-contained file).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from llmfix.batch.rates import check_key
from llmfix.errors import ConfigError
from llmfix.files.containment import refuse_vcs
from llmfix.model import ExitCode

if TYPE_CHECKING:
    from llmfix.batch.rates import RunPoint
    from llmfix.reporters.trend import Series

TREND_FORMATS: tuple[str, ...] = ("text", "json", "html")


def run_trend(
    paths: Sequence[str],
    fmt: str = "text",
    output: str | None = None,
    keys: Sequence[str] = (),
    stdout: TextIO | None = None,
) -> ExitCode:
    """Write the trend of the reports ``paths`` name (a folder: its ``*.json`` reports)."""
    # lazy: the trend command's modules load only when it runs
    from llmfix.reporters.base import output_stream
    from llmfix.reporters.trend import MAX_RUNS, ordered, read_history, read_run, series

    if fmt not in TREND_FORMATS:
        raise ConfigError(f"--format must be one of {', '.join(TREND_FORMATS)}, not {fmt!r}")
    if not paths:
        raise ConfigError("no reports given: name -f json reports of check runs, or a folder")
    wanted = [check_key(key, "--key") for key in keys]
    if output is not None and output != "-":
        refuse_vcs(output)  # as check's reports: never into .git/
    runs: list[RunPoint] = []
    for path in paths:
        if os.path.isdir(path):
            runs += read_history(path)
        else:
            runs.append(read_run(path))
    runs = ordered(runs)[-MAX_RUNS:]
    found = series(runs, wanted)
    out = stdout or sys.stdout
    target = Path(output) if output and output != "-" else None
    with output_stream(target, out) as stream:
        _write(stream, fmt, runs, found, target is None)
    return ExitCode.OK


def _write(
    stream: TextIO, fmt: str, runs: list[RunPoint], found: list[Series], terminal: bool
) -> None:
    from llmfix.reporters import trend

    if fmt == "json":
        stream.write(trend.to_json(runs, found))
    elif fmt == "html":
        stream.write(trend.trend_page(runs, found))
    else:
        from rich.console import Console

        color = terminal and stream.isatty() and "NO_COLOR" not in os.environ
        console = Console(
            file=stream,
            highlight=False,
            soft_wrap=True,
            force_terminal=color or None,
            no_color=not color,
            width=None if stream.isatty() else 200,
        )
        console.print(trend.trend_table(runs, found, f"llmfix trend: {len(runs)} runs"))
