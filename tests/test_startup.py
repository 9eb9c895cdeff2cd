"""What a piped ``llmfix repair`` imports: only what the command needs.

Start-up time itself is measured by ``bench/bench_startup.py`` (a ratio to a ``json.load``
one-liner); this test holds the cause in place: heavy libraries stay out of a clean run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "samples" / "person.schema.json"
ANSWER = ROOT / "samples" / "person_answer.txt"
# What makes rich style a stream that is not a terminal; the runs here leave it to isatty().
_STYLING = ("FORCE_COLOR", "TTY_COMPATIBLE")

# Libraries a small clean answer never needs: the terminal renderer, the HTTP client, the
# pure-Python validator (jsonschema-rs answers "valid"), and the stdlib's HTTP stack
# (jsonschema-rs itself imports email.utils, which is cheap next to these).
HEAVY = ("rich", "httpx", "jsonschema", "referencing", "json_repair", "http", "ssl")
# What `repair` does not use, on a clean answer or on issue 16's command: the other commands'
# modules, the stream decoder (telling a saved stream from an answer is llmfix.stream.sniff),
# ...
NOT_FOR_REPAIR = {
    "llmfix.cli.check",
    "llmfix.cli.config",
    "llmfix.cli.explain",
    "llmfix.cli.inspect",
    "llmfix.stream.wire",
}


def run_llmfix(
    tmp_path: Path, *args: str, stdin: str | None = None, **environ: str
) -> subprocess.CompletedProcess[str]:
    """One CLI run with ``-X importtime``, stderr a pipe (not a terminal), of this checkout's
    llmfix (first on ``PYTHONPATH``: the run's directory is elsewhere, and an editable install
    may point at another worktree)."""
    env = {k: v for k, v in os.environ.items() if k not in _STYLING}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "llmfix", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, **environ},
        check=False,
    )


# `python -m llmfix ARGS`, and at exit every module then loaded written to a file: -X importtime
# does not see a module loaded by importlib.import_module (as the CLI loads a command's module).
_WITH_MODULES = """
import atexit, os, runpy, sys
out = os.environ["LLMFIX_TEST_MODULES"]
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv = ["llmfix", *sys.argv[1:]]
runpy.run_module("llmfix", run_name="__main__", alter_sys=True)
"""


def imported_modules(tmp_path: Path, *args: str, stdin: str | None = None) -> set[str]:
    """Top-level module names (and llmfix submodules) loaded by one CLI run: those in
    ``sys.modules`` when it exits (``-X importtime`` would miss the command's module)."""
    listed = tmp_path / "modules.txt"
    env = {k: v for k, v in os.environ.items() if k not in _STYLING}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["LLMFIX_TEST_MODULES"] = str(listed)
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _WITH_MODULES, *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    logged = {  # (also the imports that failed: optional modules a library tries)
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    loaded = set(listed.read_text(encoding="utf-8").split())
    assert "llmfix.cli" in loaded & logged  # the file is this run's
    return {name if name.startswith("llmfix") else name.split(".")[0] for name in loaded}


@pytest.fixture
def clean_answer(tmp_path: Path) -> Path:
    path = tmp_path / "answer.json"
    path.write_text(json.dumps({"name": "Ada", "age": 36}), encoding="utf-8")
    return path


def test_clean_answer_with_a_schema_imports_nothing_heavy(
    tmp_path: Path, clean_answer: Path
) -> None:
    pytest.importorskip("jsonschema_rs")
    names = imported_modules(tmp_path, "repair", str(clean_answer), "--schema", str(SCHEMA))
    assert sorted(names & set(HEAVY)) == []
    assert sorted(names & {"hashlib", "fractions"}) == []  # imported where they are used
    assert sorted(n for n in names if n.startswith("llmfix.llm")) == []
    assert sorted(names & NOT_FOR_REPAIR) == []


def test_clean_answer_on_stdin_imports_nothing_heavy(tmp_path: Path) -> None:
    names = imported_modules(tmp_path, "repair", stdin='{"a": [1, 2]}')
    assert sorted(names & set(HEAVY)) == []
    assert sorted(names & {"hashlib", "fractions"}) == []  # imported where they are used
    assert sorted(n for n in names if n.startswith("llmfix.llm")) == []
    assert sorted(names & NOT_FOR_REPAIR) == []


def test_invalid_answer_loads_jsonschema_to_explain(tmp_path: Path) -> None:
    """The other side of the lazy import: a value that fails is explained by jsonschema."""
    answer = tmp_path / "bad.json"
    answer.write_text('{"name": "Ada", "age": "thirty"}', encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "llmfix", "repair", str(answer), "--schema", str(SCHEMA)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "/age" in result.stderr


def test_issue_16_command_piped_prints_its_diagnostics_without_rich(tmp_path: Path) -> None:
    """Diagnostics on a stderr that is not a terminal are plain text: rich is not imported."""
    names = imported_modules(tmp_path, "repair", str(ANSWER), "--schema", str(SCHEMA))
    assert "rich" not in names
    assert sorted(names & NOT_FOR_REPAIR) == []
    # A repaired answer the schema-guided readings could not improve on: no reader, and
    # nothing of what readers make, loads.
    assert sorted(n for n in names if n.startswith("llmfix.guided.")) == ["llmfix.guided.shape"]
    result = run_llmfix(tmp_path, "repair", str(ANSWER), "--schema", str(SCHEMA))
    diagnostics = [line for line in result.stderr.splitlines() if "import time:" not in line]
    assert diagnostics[-1] == (
        f"{ANSWER}: repaired, 8 changes (highest risk: safe; 1 info-level, listed with -v)"
    )
    assert any("repair.coerce_integer" in line for line in diagnostics)
    assert "\x1b[" not in result.stderr


def test_force_color_styles_the_diagnostics_with_rich(tmp_path: Path) -> None:
    result = run_llmfix(tmp_path, "repair", str(ANSWER), "--schema", str(SCHEMA), FORCE_COLOR="1")
    assert result.returncode == 0
    assert "\x1b[" in result.stderr
    assert any(line.endswith("| rich.console") for line in result.stderr.splitlines())


def test_only_the_command_that_runs_is_built(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`llmfix NAME ...` builds NAME alone; what it prints is what the whole app prints."""
    import llmfix.cli
    from llmfix.cli import _MODULE_OF, _app_for, app, main

    assert _app_for(["--help"]) is app
    assert _app_for(["config", "trust"]) is app
    assert _app_for(["repiar"]) is app
    names = ["check", "explain", "extract", "proxy", "repair", "rules", "schemas", "trend"]
    for name in names:
        only = _app_for([name, "--help"])
        assert [info.callback.__name__ for info in only.registered_commands if info.callback] == [
            name
        ]
        assert only.registered_groups == []
        printed = []
        for choose in (_app_for, lambda args: app):
            monkeypatch.setattr(llmfix.cli, "_app_for", choose)
            for args in ([name, "--help"], [name, "--no-such-flag"]):
                monkeypatch.setattr(sys, "argv", ["llmfix", *args])
                with pytest.raises(SystemExit) as exited:
                    main()
                printed.append((exited.value.code, capsys.readouterr()))
        assert printed[:2] == printed[2:]
        assert printed[0][0] == 0
        assert printed[1][0] == 2
    assert len(app.registered_commands) == len(names)
    # each command's module, as `llmfix NAME` imports it (and the whole app's order)
    modules = {info.callback.__name__: info.callback.__module__ for info in app.registered_commands}
    assert modules == {name: f"llmfix.cli.{module}" for name, module in _MODULE_OF.items()}
    assert list(modules) == [
        "check",
        "extract",
        "schemas",
        "rules",
        "repair",
        "explain",
        "trend",
        "proxy",
    ]
