"""Every example in the README, samples/README.md and the docs pages runs, and prints what
the page says it prints.

The convention (a page's author writes to it):

- a ```` ```console ```` block: each line starting with ``$ `` is a shell command (a line
  ending in ``\\`` goes on on the next one), run by bash with ``llmfix`` on PATH; the lines
  after it, up to the next ``$ `` line or the end of the block, are what it prints, stdout and
  stderr merged, no colour. A line holding only ``...`` matches any run of lines.
- a ```` ```pycon ```` block: ``>>> ``/``... `` prompts and their output, run as a doctest
  (``...`` inside an output line matches anything, as doctest's ELLIPSIS does).
- a ```` ```python ```` block: executed; it must not raise.
- The pycon and python blocks of one page share one namespace, in page order; the commands of
  one page share one working directory. Both run in a scratch copy of the repository root:
  ``samples/`` and ``docs/examples/`` are copied (an example may write next to them), the
  rest is linked, and HOME and the user config and cache folders are empty.
- ``<!-- not run: REASON -->`` on the line right before a fence leaves that block out. Other
  fence languages (json, yaml, toml, text, sh, bash, ...) are not run.

``llmfix`` on the examples' PATH is a launcher that forks a process with llmfix already
imported (``tests/docs_forkserver.py``): the same command line, the same descriptors, a
fraction of the start-up. ``LLMFIX_DOCS_COLD=1`` runs the real command each time instead.

Pages fail with the page and line of the example and what differs. To write the real output
into the console blocks of pages (those without ``...`` lines), run
``python -m tests.test_docs_examples --update [PAGE ...]`` from the repository root.
"""

from __future__ import annotations

import doctest
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

RUN = frozenset({"console", "pycon", "python"})
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)[^\n]*$")
_NOT_RUN = re.compile(r"^[ \t]*<!--\s*not run:\s*(?P<reason>.*?)\s*-->[ \t]*$")
_ANY = "..."


def documents() -> list[Path]:
    """The pages whose examples run: the README, samples/README.md and docs/**/*.md."""
    pages = [ROOT / "README.md", ROOT / "samples" / "README.md"]
    return pages + sorted((ROOT / "docs").rglob("*.md"))


@dataclass
class Block:
    """One fenced block: its language, its lines (indentation removed) and where it is."""

    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    lines: list[str]
    skip: str | None = None  # the reason of a <!-- not run: ... --> before it

    @property
    def text(self) -> str:
        return "".join(f"{line}\n" for line in self.lines)


def blocks(text: str, page: str) -> list[Block]:
    """The fenced blocks of a Markdown page, in order. A fence may be indented (inside a
    list item); it closes at a line of the same character at least as long."""
    found = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        skip = None
        if i > 0 and (marker := _NOT_RUN.match(lines[i - 1])):
            skip = marker["reason"] or "(no reason given)"
        body = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                break
            inner = lines[j]
            body.append(inner[len(indent) :] if inner.startswith(indent) else inner.lstrip())
            j += 1
        found.append(Block(page, i + 1, opening["lang"].lower(), body, skip))
        i = j + 1
    return found


# --- console blocks ----------------------------------------------------------------------


@dataclass
class Command:
    line: int  # 1-based line in the page
    command: str
    expected: list[str] = field(default_factory=list)


def commands(block: Block) -> list[Command]:
    """The ``$ `` commands of a console block, each with the output it shows."""
    found: list[Command] = []
    going_on = False
    for offset, text in enumerate(block.lines):
        if going_on and found:
            found[-1].command += "\n" + text
            going_on = text.endswith("\\")
        elif text.startswith("$ ") or text == "$":
            found.append(Command(block.line + 1 + offset, text[2:]))
            going_on = text.endswith("\\")
        elif found:
            found[-1].expected.append(text)
        elif text.strip():
            raise ValueError(f"{block.page}:{block.line + 1 + offset}: output before any $ command")
    return found


def matches(expected: list[str], got: list[str]) -> bool:
    """Whether ``got`` is ``expected``, each ``...`` line standing for any run of lines."""
    expected = _trimmed(expected)
    got = _trimmed(got)
    # ends[j]: the lines of `got` that the first i expected lines can end at
    ends = {0}
    for want in expected:
        if want.strip() == _ANY:
            start = min(ends, default=len(got) + 1)
            ends = set(range(start, len(got) + 1))
        else:
            ends = {j + 1 for j in ends if j < len(got) and got[j] == want}
        if not ends:
            return False
    return len(got) in ends


def _trimmed(lines: list[str]) -> list[str]:
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


_SERVER: list[Any] = []


def _warm_llmfix() -> Path | None:
    """The folder of the warm ``llmfix`` launcher (``tests/docs_forkserver.py``), started on
    first use and stopped when this process ends; ``None`` where it cannot run (no Unix
    sockets) or when ``LLMFIX_DOCS_COLD=1`` asks for the real command each time."""
    if os.environ.get("LLMFIX_DOCS_COLD") == "1" or not hasattr(socket, "send_fds"):
        return None
    if not _SERVER:
        import atexit
        import tempfile

        from tests import docs_forkserver

        where = Path(tempfile.mkdtemp(prefix="llmfix-docs-"))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
        server, bindir = docs_forkserver.start(where, env)

        def stop() -> None:
            server.kill()
            server.wait()
            shutil.rmtree(where, ignore_errors=True)

        atexit.register(stop)
        _SERVER.append(bindir)
    return _SERVER[0]  # type: ignore[no-any-return]


class Scratch:
    """A copy of the repository root to run a page's examples in."""

    COPIED = ("samples", "docs/examples")

    def __init__(self, where: Path) -> None:
        self.root = where / "repo"
        self.root.mkdir(parents=True)
        for name in self.COPIED:
            if (ROOT / name).is_dir():
                shutil.copytree(ROOT / name, self.root / name, symlinks=True)
        for entry in ROOT.iterdir():
            if entry.name.startswith(".") or entry.name in ("samples", "docs", "site"):
                continue
            (self.root / entry.name).symlink_to(entry)
        home = where / "home"
        self.env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("LLMFIX_", "GITHUB_", "OPENAI_", "ANTHROPIC_", "PYTEST_"))
            and key not in ("CI", "FORCE_COLOR", "CLICOLOR_FORCE")
        }
        bindir = str(Path(sys.executable).parent)
        warm = _warm_llmfix()
        if warm is not None:
            bindir = f"{warm}{os.pathsep}{bindir}"
        self.env.update(
            {
                "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
                "PYTHONPATH": str(ROOT),
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "NO_COLOR": "1",
                "TERM": "dumb",
                "COLUMNS": "100",
                "LC_ALL": "C.UTF-8",
            }
        )

    def run(self, block: Block) -> list[tuple[Command, list[str]]]:
        """Run a console block's commands in one bash, in order; what each printed."""
        found = commands(block)
        token = secrets.token_hex(8)
        # (the marker keeps $? of the command before it, for a `$ echo $?` line)
        script = ["exec 2>&1 </dev/null", "__docs_rc() { return $1; }"]
        for i, command in enumerate(found):
            script.append(f"__rc=$?; printf '\\036{token} {i}\\036\\n'; __docs_rc $__rc")
            script.append(command.command)
        done = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        parts = re.split(rf"\x1e{token} (\d+)\x1e\n", done.stdout)
        printed: dict[int, list[str]] = {}
        for i in range(1, len(parts) - 1, 2):
            printed[int(parts[i])] = parts[i + 1].splitlines()
        return [(command, printed.get(i, [])) for i, command in enumerate(found)]


# --- pycon and python blocks --------------------------------------------------------------


def run_pycon(block: Block, namespace: dict[str, Any]) -> str | None:
    """A doctest of the block in ``namespace``; what failed, or ``None``."""
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.text, namespace, block.page, block.page, block.line)
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS, verbose=False)
    runner.run(test, out=report.append, clear_globs=False)
    namespace.update(test.globs)  # (a DocTest runs in a copy of the namespace it is given)
    return "".join(report) or None


def run_python(block: Block, namespace: dict[str, Any]) -> str | None:
    """Execute the block in ``namespace``; the traceback (naming page and line), or ``None``."""
    code = compile("\n" * block.line + block.text, block.page, "exec")
    try:
        exec(code, namespace)
    except Exception:
        return traceback.format_exc(limit=-3)
    return None


def page_failures(page: Path, where: Path, name: str = "") -> Iterator[str]:
    """What fails among the examples of ``page``, each naming its page (``name``, else its
    path in the repository) and line."""
    name = name or str(page.relative_to(ROOT))
    runnable = [b for b in blocks(page.read_text(encoding="utf-8"), name) if b.lang in RUN]
    runnable = [b for b in runnable if b.skip is None]
    if not runnable:
        return
    scratch = Scratch(where)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    os.environ.clear()
    os.environ.update({k: v for k, v in scratch.env.items() if k != "PYTHONPATH"})
    os.chdir(scratch.root)
    try:
        for block in runnable:
            if block.lang == "console":
                for command, got in scratch.run(block):
                    if not matches(command.expected, got):
                        yield (
                            f"{name}:{command.line}: $ {command.command}\n"
                            f"--- the page says\n{_show(command.expected)}"
                            f"--- it printed\n{_show(got)}"
                        )
            elif block.lang == "pycon":
                failed = run_pycon(block, namespace)
                if failed:
                    yield f"{name}:{block.line}: pycon block\n{failed}"
            else:
                failed = run_python(block, namespace)
                if failed:
                    yield f"{name}:{block.line}: python block raised\n{failed}"
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def _show(lines: list[str]) -> str:
    return "".join(f"    {line}\n" for line in _trimmed(lines)) or "    (nothing)\n"


# --- the tests ----------------------------------------------------------------------------


@pytest.mark.parametrize("page", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_examples_of_the_page_run_as_shown(page: Path, tmp_path: Path) -> None:
    failures = list(page_failures(page, tmp_path))
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize("page", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_a_not_run_marker_sits_right_before_a_fence_and_says_why(page: Path) -> None:
    lines = page.read_text(encoding="utf-8").splitlines()
    wrong = [
        f"{page.name}:{i + 1}"
        for i, line in enumerate(lines)
        if (marker := _NOT_RUN.match(line))
        and (not marker["reason"] or i + 1 >= len(lines) or not _FENCE.match(lines[i + 1]))
    ]
    assert wrong == []


def test_the_pages_hold_examples_that_run() -> None:
    # the reading finds blocks in the README and the guide (a broken fence pattern would
    # find none, and every page would pass)
    found = {
        b.lang
        for page in documents()
        for b in blocks(page.read_text(encoding="utf-8"), page.name)
        if b.skip is None
    }
    assert found >= RUN


TEXT = """\
Intro
<!-- not run: needs a model server -->
```console
$ llmfix repair --llm x
```

- item

  ```console
  $ echo a; echo b; echo c
  a
  ...
  c
  $ echo d
  d
  ```
"""


def test_blocks_commands_and_the_not_run_marker_are_read() -> None:
    first, second = blocks(TEXT, "page.md")
    assert (first.skip, first.line, second.skip, second.line) == (
        "needs a model server",
        3,
        None,
        9,
    )
    assert [(c.line, c.command, c.expected) for c in commands(second)] == [
        (10, "echo a; echo b; echo c", ["a", "...", "c"]),
        (14, "echo d", ["d"]),
    ]


@pytest.mark.parametrize(
    ("expected", "got", "same"),
    [
        (["a", "...", "c"], ["a", "b", "b", "c"], True),
        (["a", "...", "c"], ["a", "c"], True),
        (["a", "...", "c"], ["a", "b"], False),
        (["a", "b"], ["a", "b", ""], True),
        (["a", "b"], ["a", "x"], False),
        (["..."], [], True),
        (["a"], ["a", "b"], False),
    ],
)
def test_dots_match_any_run_of_lines(expected: list[str], got: list[str], same: bool) -> None:
    assert matches(expected, got) is same


def test_a_wrong_output_names_the_page_and_line(tmp_path: Path) -> None:
    page = tmp_path / "wrong.md"
    page.write_text("# x\n\n```console\n$ echo hello\nhullo\n```\n", encoding="utf-8")
    failures = list(page_failures(page, tmp_path / "run", "docs/wrong.md"))
    assert len(failures) == 1
    assert failures[0].startswith("docs/wrong.md:4: $ echo hello\n--- the page says\n    hullo")


# --- writing the real output into the pages -----------------------------------------------


def update(page: Path, where: Path) -> int:
    """Write what each command prints into the console blocks of ``page`` (blocks with a
    ``...`` line are left as they are); the number of blocks rewritten."""
    name = str(page.relative_to(ROOT))
    lines = page.read_text(encoding="utf-8").splitlines()
    scratch = Scratch(where)
    changed = 0
    for block in reversed(blocks("\n".join(lines), name)):
        if block.lang != "console" or block.skip is not None:
            continue
        if any(line.strip() == _ANY for line in block.lines):
            continue
        indent = re.match(r"[ \t]*", lines[block.line - 1]).group(0)  # type: ignore[union-attr]
        new: list[str] = []
        for command, got in scratch.run(block):
            new += [
                f"{indent}$ {part}" if i == 0 else f"{indent}{part}"
                for i, part in enumerate(command.command.split("\n"))
            ]
            new += [f"{indent}{line}".rstrip() for line in _trimmed(got)]
        start, end = block.line, block.line + len(block.lines)
        if lines[start:end] != new:
            lines[start:end] = new
            changed += 1
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return changed


def main(argv: list[str]) -> int:
    import tempfile

    if not argv or argv[0] != "--update":
        sys.stderr.write("usage: python -m tests.test_docs_examples --update [PAGE ...]\n")
        return 2
    pages = [Path(p).resolve() for p in argv[1:]] or documents()
    for page in pages:
        with tempfile.TemporaryDirectory() as tmp:
            print(f"{page.relative_to(ROOT)}: {update(page, Path(tmp))} blocks rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


# --- the site's navigation ----------------------------------------------------------------


def _nav_pages(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for entry in node:
            yield from _nav_pages(entry)
    elif isinstance(node, dict):
        for entry in node.values():
            yield from _nav_pages(entry)


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    # (mkdocs build --strict fails on either too; this says it in the test run)
    import yaml

    from scripts.docs_reference import PAGES

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = set(_nav_pages(config["nav"]))
    written = {
        str(p.relative_to(ROOT / "docs"))
        for p in (ROOT / "docs").rglob("*.md")
        if not p.is_relative_to(ROOT / "docs" / "examples")
    }
    pages = written | set(PAGES)
    assert (sorted(pages - nav), sorted(nav - pages)) == ([], [])
