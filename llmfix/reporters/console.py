"""Human-readable diagnostics for one result, on a rich Console (stderr for `repair`).

A stream that is not a terminal gets a :class:`PlainConsole` instead: it writes what rich
would write there (no styles), without importing rich, which costs about 20 ms of start-up.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from llmfix.jsontext import dumps
from llmfix.model import Diagnostic, Result, Severity, Status
from llmfix.reporters.base import locate, message_with_place
from llmfix.reporters.sinks import for_terminal

if TYPE_CHECKING:
    from rich.console import Console

    from llmfix.inputs import Item

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_STATUS_STYLE = {
    Status.VALID: "green",
    Status.EXTRACTED: "green",
    Status.REPAIRED: "yellow",
    Status.LLM_REPAIRED: "yellow",
    Status.TRUNCATED: "bold red",
    Status.INVALID: "bold red",
    Status.REFUSED: "bold red",
    Status.UNPARSEABLE: "bold red",
}


# The control codes a rich Text drops (rich.control.STRIP_CONTROL_CODES: bell, backspace,
# vertical tab, form feed, carriage return).
_STRIPPED = dict.fromkeys((7, 8, 11, 12, 13))
# What rich's markup (``[bold]``) or emoji codes (``:smile:``) could change in a printed str.
_MARKUP = re.compile(r"\[|:\S*:")
# Where str.expandtabs expands tabs as rich does: every character one cell wide.
_ONE_CELL = re.compile(r"[\t\n -~]*")


def styled_stream(stream: TextIO, environ: Mapping[str, str] = os.environ) -> bool:
    """Whether rich's ``Console`` would treat ``stream`` as a terminal (or runs in Jupyter):
    ``TTY_COMPATIBLE``, then ``FORCE_COLOR``, then ``isatty()``, as rich decides."""
    if getattr(builtins, "get_ipython", None) is not None:
        return True
    compatible = environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    try:
        return bool(stream.isatty())
    except ValueError:  # a closed stream
        return False


class PlainConsole:
    """What ``Console(highlight=False, soft_wrap=True)`` writes to a stream that is not a
    terminal, written without rich: no styles, no wrapping, the control codes rich strips
    stripped, tabs expanded to every 8th column. Lines only rich can render as rich does
    (a tab after a wide or zero-width character; markup or emoji codes in a ``markup``
    line) are handed to a rich Console on the same stream.

    ``file``: the stream; ``None`` is ``sys.stderr`` at the time of writing.
    """

    def __init__(self, file: TextIO | None = None) -> None:
        self._file = file
        self._rich: Console | None = None

    @property
    def file(self) -> TextIO:
        return self._file if self._file is not None else sys.stderr

    def line(self, text: str, style: str = "", *, markup: bool = False) -> None:
        """One line, as ``print_line`` prints it on a rich Console."""
        plain = text.translate(_STRIPPED)
        tabs = "\t" in plain
        if (tabs and not _ONE_CELL.fullmatch(plain)) or (markup and _MARKUP.search(plain)):
            if self._rich is None:
                from rich.console import Console

                self._rich = Console(file=self._file, stderr=True, highlight=False, soft_wrap=True)
            print_line(self._rich, text, style, markup=markup)
            return
        file = self.file
        file.write((plain.expandtabs(8) if tabs else plain) + "\n")
        file.flush()


def print_line(
    console: Console | PlainConsole, text: str, style: str = "", *, markup: bool = False
) -> None:
    """One line of ``text`` in ``style``; with ``markup``, read as rich markup (as
    ``Console.print`` reads a str). The text is escaped for the terminal first: it holds
    file names, keys and model text (see :mod:`llmfix.reporters.sinks`)."""
    text = for_terminal(text)
    if isinstance(console, PlainConsole):
        console.line(text, style, markup=markup)
    elif markup:
        console.print(text, style=style, highlight=False)
    else:
        from rich.text import Text

        console.print(Text(text, style=style), soft_wrap=True)


def _location(source: str, d: Diagnostic) -> str:
    if d.position is not None:
        return f"{source}:{d.position.line}:{d.position.column}"
    return source


def diagnostic_line(source: str, d: Diagnostic, item: Item | None = None) -> str:
    """``file:line:col: severity code: message [risk] (at /pointer)`` — plain text.

    For an ``item`` of a file (a JSONL record, a message), the place is what ``check``
    prints: the file's line:column when the text is a verbatim slice of the file, else the
    record's line with the in-text position added to the message (``… [text 2:2]``)."""
    if item is None:
        where, message = _location(source, d), d.message
    else:
        location = locate(item, d, None)
        where, message = str(location), message_with_place(d, location)
    parts = [f"{where}: {d.severity.value} {d.code}: {message}"]
    if d.risk is not None:
        parts.append(f"[{d.risk.value}]")
    if d.pointer is not None and d.pointer not in d.message:
        parts.append(f"(at {d.pointer or '/'})")
    return " ".join(parts)


def summary_line(source: str, result: Result, verbosity: int = 1) -> str:
    """``file: status, N changes (highest risk: R), M errors``; changes that are not listed
    at this ``verbosity`` (info-level ones, below ``-v``) are said to be there."""
    changes = [d for d in result.diagnostics if d.risk is not None]
    repairs = len(changes)
    errors = len(result.errors)
    bits = [f"{source}: {result.status.value}"]
    if repairs:
        risk = result.risk.value if result.risk else "none"
        about = f"highest risk: {risk}"
        unlisted = sum(1 for d in changes if not _listed(d, verbosity))
        if unlisted:
            about += f"; {unlisted} info-level, listed with -v"
        bits.append(f"{repairs} change{'s' if repairs != 1 else ''} ({about})")
    if errors:
        bits.append(f"{errors} error{'s' if errors != 1 else ''}")
    return ", ".join(bits)


def _listed(d: Diagnostic, verbosity: int) -> bool:
    """Whether :func:`print_result` lists ``d`` at ``verbosity``."""
    if verbosity < 0:
        return d.severity is Severity.ERROR
    return verbosity > 0 or d.severity is not Severity.INFO


def print_result(
    console: Console | PlainConsole,
    source: str,
    result: Result,
    verbosity: int = 0,
    item: Item | None = None,
) -> None:
    """Print diagnostics (errors only when ``verbosity < 0``; info too when > 0) and a summary;
    ``item``: the record or message of ``source`` the result is for (see diagnostic_line)."""
    for d in result.diagnostics:
        if not _listed(d, verbosity):
            continue
        print_line(console, diagnostic_line(source, d, item), _STYLE[d.severity])
        if d.hint and verbosity > 0:
            print_line(console, f"    hint: {d.hint}", "dim")
    if verbosity >= 0:
        summary = summary_line(source, result, verbosity)
        print_line(console, summary, _STATUS_STYLE[result.status])


def print_failures(console: Console | PlainConsole, source: str, failures: list[str]) -> None:
    """What the gate failed a result for, one line each (plain text: the file name is the
    repository's, and markup in it would act on the terminal, as ``[link=…]`` does)."""
    for reason in failures:
        print_line(console, f"{source}: fails: {reason}", "bold red")


def _short(value: Any) -> str:
    text = dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def print_explanation(console: Console | PlainConsole, source: str, result: Result) -> None:
    """A readable account of every schema repair: path, before → after, rule and risk."""
    if not result.patch:
        print_line(console, f"{source}: no schema repairs", "dim")
        return
    for op in result.patch:
        where = op.path or "/"
        if op.op == "move":
            line = f"{source}: rename {op.from_} → {where}"
        elif op.op == "remove":
            line = f"{source}: remove {where} (was {_short(op.before)})"
        elif op.op == "add":
            line = f"{source}: add {where} = {_short(op.after)}"
        else:
            line = f"{source}: {where}: {_short(op.before)} → {_short(op.after)}"
        print_line(console, f"{line}  [{op.rule}, {op.risk.value}]")
        if op.message:
            print_line(console, f"    {op.message}", "dim")


@contextlib.contextmanager
def progress_bar(console: Console | None, total: int) -> Iterator[Callable[[int, int], None]]:
    """A rich progress bar over ``total`` records (a JSONL line, or a whole file); yields
    ``update(records_done, items_done)``.

    With no console (not a terminal, ``--quiet``, ``--no-progress``) it draws nothing.
    """
    if console is None:
        yield lambda records, items: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("checking"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("records, {task.fields[items]:,} items"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True, redirect_stdout=True) as bar:
        task = bar.add_task("check", total=total, items=0)

        def update(records: int, items: int) -> None:
            bar.update(task, completed=min(records, total), items=items)

        yield update
