"""The plain console writes, byte for byte, what rich writes to a stream that is not a terminal.

`llmfix repair` prints its diagnostics with :class:`llmfix.reporters.console.PlainConsole` when
stderr is not a terminal, so that rich is not imported; these tests hold the two to the same
bytes, on awkward text: long lines, markup-like brackets, control codes, tabs, wide and
combining characters, emoji codes, lone surrogates.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from llmfix.model import Diagnostic, PatchOp, Position, Result, Risk, Severity, Status
from llmfix.reporters import console as console_module
from llmfix.reporters.console import (
    PlainConsole,
    print_explanation,
    print_failures,
    print_line,
    print_result,
    styled_stream,
)

SAMPLES = Path(__file__).resolve().parents[1] / "samples"

AWKWARD = [
    "",
    "plain words",
    "x" * 500 + " " + "y" * 300,
    "[bold]not bold[/bold] and [red]x[/]",
    "[link=https://example.com]a[/link]",
    "\\[escaped] and a lone [",
    "bell\x07 backspace\x08 vtab\x0b formfeed\x0c return\r end",
    "\x1b[31mescape sequence\x1b[0m and \x00 nul and \x7f del",
    "tab\there and\ttwice\t",
    "\ttab first",
    "日本語\tafter wide characters",
    "e\u0301\tafter a combining accent",
    "zero\u200bwidth\tspace",
    "\x1b\tafter an escape",
    "first line\nsecond\tline\n",
    "emoji :smile: :thumbs_up: and :not_an_emoji: and C:\\path:3",
    "🎉 wide emoji 🎉 and ∑ and \u00a0nbsp",
    "lone surrogate \udc80 here",
    "trailing spaces   ",
]


def rich_output(text: str, style: str, markup: bool) -> str:
    buffer = io.StringIO()
    print_line(Console(file=buffer, highlight=False, soft_wrap=True), text, style, markup=markup)
    return buffer.getvalue()


def plain_output(text: str, style: str, markup: bool) -> str:
    buffer = io.StringIO()
    print_line(PlainConsole(buffer), text, style, markup=markup)
    return buffer.getvalue()


def assert_same(text: str, style: str, markup: bool) -> None:
    try:
        expected = rich_output(text, style, markup)
    except Exception as error:  # rich's markup errors stay as they were
        with pytest.raises(type(error)):
            plain_output(text, style, markup)
        return
    assert plain_output(text, style, markup) == expected


@pytest.mark.parametrize("markup", [False, True])
@pytest.mark.parametrize("text", AWKWARD)
def test_a_line_is_written_as_rich_writes_it(text: str, markup: bool) -> None:
    assert_same(text, "bold red", markup)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(
        st.one_of(
            st.characters(codec="utf-8"),
            st.sampled_from(list("\t\n\r\x07\x08\x0b\x0c\x1b[]:/\\ ")),
        )
    ),
    markup=st.booleans(),
)
def test_any_line_is_written_as_rich_writes_it(text: str, markup: bool) -> None:
    assert_same(text, "yellow", markup)


def test_plain_text_is_written_without_rich() -> None:
    buffer = io.StringIO()
    PlainConsole(buffer).line("a\tb\x07 [bold]c[/bold] :smile:", "bold red")
    assert buffer.getvalue() == "a       b [bold]c[/bold] :smile:\n"


def awkward_result() -> Result:
    diagnostics = tuple(
        Diagnostic(
            code="parse.comment",
            severity=severity,
            stage="parse",
            message=message,
            position=Position(3, 7),
            risk=Risk.SAFE if severity is Severity.WARNING else None,
            pointer="/a~1b" if severity is Severity.ERROR else None,
            hint=f"hint with {message}",
        )
        for message in AWKWARD
        if "\udc80" not in message  # rich's markup reader cannot take a lone surrogate
        for severity in Severity
    )
    patch = tuple(
        PatchOp(
            op=op,
            path="/[bold]\t/x",
            before="\x07" + message,
            after=[message, 1],
            rule="coerce_integer",
            risk=Risk.SAFE,
            message=message,
            from_="/old\tname" if op == "move" else None,
        )
        for message in AWKWARD[:8]
        for op in ("replace", "add", "remove", "move")
    )
    return Result(status=Status.REPAIRED, value={}, diagnostics=diagnostics, patch=patch)


@pytest.mark.parametrize("verbosity", [-1, 0, 1])
def test_a_result_is_printed_as_rich_prints_it(verbosity: int) -> None:
    result = awkward_result()
    failures = ["status repaired", "risk [guess] above :safe:", "tab\there"]
    outputs = []
    for console in (
        Console(file=io.StringIO(), highlight=False, soft_wrap=True),
        PlainConsole(io.StringIO()),
    ):
        print_result(console, "dir [x]/a\tb.txt", result, verbosity)
        print_explanation(console, "dir [x]/a\tb.txt", result)
        print_explanation(console, "empty", Result(status=Status.VALID, value=1))
        print_failures(console, "name", failures)
        file: Any = console.file
        outputs.append(file.getvalue())
    assert outputs[0] == outputs[1]
    assert "\x07" not in outputs[1]
    assert "[bold]not bold[/bold]" in outputs[1]


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize("compatible", [None, "", "0", "1", "yes"])
@pytest.mark.parametrize("force", [None, "", "1", "0"])
@pytest.mark.parametrize("no_color", [None, "1"])
def test_plain_exactly_where_rich_sees_no_terminal(
    tty: bool, compatible: str | None, force: str | None, no_color: str | None
) -> None:
    """The choice follows rich's own: TTY_COMPATIBLE, then FORCE_COLOR, then isatty."""
    environ = {"TERM": "xterm-256color"}
    for name, value in (
        ("TTY_COMPATIBLE", compatible),
        ("FORCE_COLOR", force),
        ("NO_COLOR", no_color),
    ):
        if value is not None:
            environ[name] = value
    stream = _Stream(tty)
    rich_console = Console(file=stream, _environ=environ, force_jupyter=False)
    assert styled_stream(stream, environ) is rich_console.is_terminal
    if not rich_console.is_terminal:
        assert rich_console.color_system is None  # nothing styled: plain text is the same


def test_a_closed_stream_is_not_styled() -> None:
    stream = io.StringIO()
    stream.close()
    assert styled_stream(stream, {}) is False


def test_repair_diagnostics_are_the_same_with_or_without_rich(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole `repair` command: its stderr when rich writes it (as before) and plain."""
    from llmfix.cli import main

    args = [
        "llmfix",
        "repair",
        str(SAMPLES / "person_answer.txt"),
        "--schema",
        str(SAMPLES / "person.schema.json"),
        "--explain",
        "-v",
        "--fail-on",
        "repaired",
    ]
    outputs = []
    for styled in (True, False):
        monkeypatch.setattr(sys, "argv", args)
        monkeypatch.setattr(console_module, "styled_stream", lambda stream, s=styled: s)
        with pytest.raises(SystemExit) as exited:
            main()
        assert exited.value.code == 1
        outputs.append(capsys.readouterr())
    assert outputs[0] == outputs[1]
    assert "fails:" in outputs[1].err
    assert "repair.coerce_integer" in outputs[1].err
