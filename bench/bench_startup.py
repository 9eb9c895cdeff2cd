"""Whole-process start-up: two ``llmfix repair`` commands vs a ``json.load`` one-liner.

Run: ``.venv/bin/python bench/bench_startup.py [--quick] [--installed]``. Prints markdown tables.

The commands: ``llmfix repair`` on a clean 1 KB file, and issue 16's
``llmfix repair samples/person_answer.txt --schema samples/person.schema.json`` (an answer
that needs extraction, lenient parsing and a schema repair, so it prints diagnostics).
All are run as subprocesses (median wall time of ~20 runs each, interleaved; stderr is a
pipe, not a terminal). Each ratio is llmfix over the one-liner; the target is ≤ 5×. A
``-X importtime`` run of each llmfix command then shows which imports its start-up is spent
on.

What is measured is this checkout's llmfix (the one this file sits in): by default the
console script next to this interpreter, with the checkout first on ``PYTHONPATH`` (a
development venv's editable install may point at another worktree), and the report says
which ``llmfix/__init__.py`` ran. The interpreter's ``site`` then still imports the editable
install's finder (pathlib, urllib.parse, ...), for every contender, the one-liner included.
``--installed`` measures what users get from pip instead: the wheel pip builds from this
checkout, installed (not editable) into a new venv whose one other path is this
interpreter's site-packages (the same dependency versions; its ``.pth`` files, the editable
finder among them, do not run); every contender then runs on that venv's interpreter.
Building the wheel fetches setuptools from the package registry (build isolation).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import venv
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import human_time, markdown_table, verdict
from bench.bench_valid import make_document

TARGET = 5.0
ROOT = Path(__file__).resolve().parent.parent
ONE_LINER = "import json,sys; json.load(sys.stdin)"
# Packages the design wants kept lazy on a plain `llmfix repair` (DESIGN.md, issue 2 item 7).
WATCHED = (
    "typer",
    "click",
    "pydantic",
    "rich",
    "jsonschema",
    "json_repair",
    "yaml",
    "httpx",
    "requests",
)


def llmfix_command(python: str = sys.executable) -> list[str]:
    """The console script next to ``python``, else ``python -m llmfix``."""
    script = Path(python).parent / "llmfix"
    if script.exists():
        return [str(script)]
    return [python, "-m", "llmfix"]


def _env(checkout: bool = False) -> dict[str, str]:
    """The environment for every contender: bytecode cached, as after a normal install.

    Without this, ``PYTHONDONTWRITEBYTECODE`` (set in some sandboxes and CI images) makes every
    run of an editable install recompile llmfix from source. The cache goes to a directory of
    its own so the benchmark writes nothing into the source tree. ``checkout``: this
    checkout first on ``PYTHONPATH``, so its llmfix is the one that runs.
    """
    env = dict(os.environ)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPATH", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "llmfix-bench-pycache")
    env["NO_COLOR"] = "1"
    if checkout:
        env["PYTHONPATH"] = str(ROOT)
    return env


def which_llmfix(python: str, checkout: bool) -> str:
    """The ``llmfix/__init__.py`` that ``python`` imports in the benchmark's environment."""
    probe = "import llmfix; print(llmfix.__file__)"
    return subprocess.run(
        [python, "-c", probe],
        capture_output=True,
        text=True,
        env=_env(checkout),
        cwd=tempfile.gettempdir(),
        check=True,
    ).stdout.strip()


def installed_copy(tmp: Path) -> str:
    """A regular install of this checkout in a new venv under ``tmp``; returns its python.

    pip builds the wheel from a copy of what the wheel is made of (so the build leaves
    nothing in this tree) and installs it without dependencies; a ``.pth`` file gives the
    venv this interpreter's site-packages, where the dependencies are.
    """
    source = tmp / "source"
    for part in ("llmfix", "schemas"):
        shutil.copytree(ROOT / part, source / part, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip"]
    quiet = {"check": True, "capture_output": True}
    subprocess.run([*pip, "wheel", "--no-deps", "-q", "-w", str(tmp), str(source)], **quiet)
    (wheel,) = tmp.glob("llmfix-*.whl")
    home = tmp / "venv"
    venv.create(home, with_pip=False, symlinks=True)
    python = str(home / "bin" / "python")
    subprocess.run([*pip, "--python", python, "install", "--no-deps", "-q", str(wheel)], **quiet)
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "_bench_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8"
    )
    return python


def _wall(cmd: list[str], stdin_path: Path | None, checkout: bool) -> tuple[float, int, str]:
    env = _env(checkout)
    with open(stdin_path or os.devnull, "rb") as stdin:
        start = time.perf_counter()
        proc = subprocess.run(
            cmd,
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
            check=False,
        )
        elapsed = time.perf_counter() - start
    errors = proc.stderr.decode(errors="replace").strip().splitlines()
    return elapsed, proc.returncode, errors[-1] if errors else ""


def importtime(cmd: list[str], checkout: bool = False) -> list[tuple[int, int, str]]:
    """(self µs, cumulative µs, indented module name) for every import the command makes."""
    env = _env(checkout)
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    rows = []
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        head, cumulative_us, name = line.split("|", 2)
        self_us = head.removeprefix("import time:").strip()
        rows.append((int(self_us), int(cumulative_us), name.rstrip()))
    return rows


def summarize_imports(rows: list[tuple[int, int, str]]) -> dict[str, Any]:
    """Self time grouped by top-level package, and the slowest top-level imports."""
    by_package: dict[str, int] = {}
    for self_us, _, name in rows:
        package = name.strip().split(".")[0]
        by_package[package] = by_package.get(package, 0) + self_us
    # The depth of an import is shown by the indentation of its name (one space, then two
    # per level); depth-0 names are what the program (or interpreter start-up) asked for.
    top_level = [(cum, name.strip()) for _, cum, name in rows if not name.startswith("   ")]
    return {
        "total_us": sum(r[0] for r in rows),
        "by_package": sorted(by_package.items(), key=lambda kv: -kv[1]),
        "top_level": sorted(top_level, reverse=True),
        "watched": [p for p in WATCHED if p in by_package],
    }


# The llmfix rows: name → arguments after `llmfix` (FILE: the 1 KB answer, written per run).
# The second is issue 16's command, paths relative to the repository (the working directory).
COMMANDS: dict[str, list[str]] = {
    "llmfix repair": ["repair", "FILE"],
    "llmfix repair --schema (issue 16)": [
        "repair",
        "samples/person_answer.txt",
        "--schema",
        "samples/person.schema.json",
    ],
}
BASE = "json.load one-liner"


def run(quick: bool = False, installed: bool = False) -> dict[str, Any]:
    runs = 5 if quick else 21
    with tempfile.TemporaryDirectory(prefix="llmfix-bench-") as tmp:
        python = installed_copy(Path(tmp)) if installed else sys.executable
        checkout = not installed
        llmfix_file = which_llmfix(python, checkout)
        expected = Path(tmp, "venv") if installed else ROOT / "llmfix"
        if not Path(llmfix_file).resolve().is_relative_to(expected.resolve()):
            raise SystemExit(f"the llmfix that would run is {llmfix_file}, not under {expected}")
        path = Path(tmp) / "answer.json"
        path.write_text(make_document(1000), encoding="utf-8")
        args = {
            name: [str(path) if a == "FILE" else a for a in argv] for name, argv in COMMANDS.items()
        }
        # name → (command, stdin, with the checkout on PYTHONPATH)
        contenders: dict[str, tuple[list[str], Path | None, bool]] = {
            "python -c pass": ([python, "-c", "pass"], None, False),
            BASE: ([python, "-c", ONE_LINER], path, False),
            **{
                name: ([*llmfix_command(python), *argv], None, checkout)
                for name, argv in args.items()
            },
        }
        # The first run of each writes its bytecode cache; the second is the check.
        checks = {name: _wall(*contender) for name, contender in contenders.items()}
        checks = {name: _wall(*contender) for name, contender in contenders.items()}
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(runs):
            for name, contender in contenders.items():
                times[name].append(_wall(*contender)[0])
        imports = {
            name: summarize_imports(importtime([python, "-m", "llmfix", *argv], checkout))
            for name, argv in args.items()
        }
    return {
        "runs": runs,
        "commands": {
            name: " ".join("FILE" if a == str(path) else a for a in ["llmfix", *argv])
            for name, argv in args.items()
        },
        "median": {name: statistics.median(ts) for name, ts in times.items()},
        "codes": {name: check[1] for name, check in checks.items()},
        "stderr": {name: check[2] for name, check in checks.items() if check[1] != 0},
        "imports": imports,
        "target": TARGET,
        "quick": quick,
        "installed": installed,
        "llmfix": llmfix_file.replace(tmp, "TMP"),
    }


def _ratios(data: dict[str, Any]) -> dict[str, float]:
    """llmfix command name → its median over the one-liner's."""
    median = data["median"]
    return {name: median[name] / median[BASE] for name in data["commands"]}


def summary(data: dict[str, Any]) -> list[list[str]]:
    labels = {
        "llmfix repair": "start-up, `llmfix repair` 1 KB",
        "llmfix repair --schema (issue 16)": "start-up, issue 16 `repair --schema`",
    }
    return [
        [
            labels.get(name, f"start-up, `{name}`"),
            f"{ratio:.2f}× the one-liner",
            f"≤ {data['target']}×",
            verdict(ratio, data["target"], higher_is_better=False),
        ]
        for name, ratio in _ratios(data).items()
    ]


def _imports_report(command: str, imports: dict[str, Any]) -> list[str]:
    package_rows = [[package, f"{us / 1000:.1f}"] for package, us in imports["by_package"][:12]]
    top_rows = [[name, f"{us / 1000:.1f}"] for us, name in imports["top_level"][:8]]
    watched = ", ".join(imports["watched"]) or "none"
    shown = command.replace("llmfix ", "python -X importtime -m llmfix ", 1)
    return [
        f"### Imports of `{shown}` "
        f"(total self time {imports['total_us'] / 1000:.0f} ms, inflated by the profiler)",
        "",
        "Self time by top-level package:",
        "",
        markdown_table(["package", "self ms"], package_rows),
        "",
        "Slowest imports at depth 0 (cumulative):",
        "",
        markdown_table(["module", "cumulative ms"], top_rows),
        "",
        f"Heavy packages imported on this path: {watched}.",
    ]


def format_report(data: dict[str, Any]) -> str:
    median = data["median"]
    base = median[BASE]
    rows = [
        [name, human_time(t), f"{t / base:.2f}×", data["codes"][name]] for name, t in median.items()
    ]
    failures = [
        f"`{name}` exited non-zero; stderr: {line}" for name, line in data["stderr"].items()
    ]
    commands = "; ".join(f"`{c}`" for c in data["commands"].values())
    verdicts = [
        f"{name} / one-liner: **{ratio:.2f}×** (target ≤ {data['target']}×: "
        f"{verdict(ratio, data['target'], higher_is_better=False)})."
        for name, ratio in _ratios(data).items()
    ]
    imports = [
        line
        for name, command in data["commands"].items()
        for line in ["", *_imports_report(command, data["imports"][name])]
    ]
    return "\n".join(
        [
            f"### Start-up: {commands} (FILE: 1 KB of JSON) vs "
            f'`python -c "{ONE_LINER}" < FILE` (median of {data["runs"]} runs)',
            "",
            markdown_table(["command", "median wall", "vs one-liner", "exit code"], rows),
            "",
            f"llmfix as run: `{data['llmfix']}` ("
            + (
                "a regular install of this checkout's wheel"
                if data["installed"]
                else "this checkout; `site` imports the editable install's finder for every row"
            )
            + ").",
            "",
            *(f"**Warning:** {f}\n" for f in failures),
            *(f"{line}\n" for line in verdicts[:-1]),
            verdicts[-1],
            *imports,
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 runs instead of 21")
    parser.add_argument(
        "--installed",
        action="store_true",
        help="measure a regular (non-editable) install of this checkout's wheel in a new venv",
    )
    args = parser.parse_args(argv)
    print(format_report(run(quick=args.quick, installed=args.installed)))


if __name__ == "__main__":
    main()
