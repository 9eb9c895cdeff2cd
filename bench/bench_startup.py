"""Whole-process start-up: two ``llmfix repair`` commands vs a ``json.load`` one-liner.

Run: ``.venv/bin/python bench/bench_startup.py [--quick]``. Prints markdown tables.

The commands: ``llmfix repair`` on a clean 1 KB file, and issue 16's
``llmfix repair samples/person_answer.txt --schema samples/person.schema.json`` (an answer
that needs extraction, lenient parsing and a schema repair, so it prints diagnostics).
All are run as subprocesses of the same interpreter (median wall time of ~20 runs each,
interleaved; stderr is a pipe, not a terminal). Each ratio is llmfix over the one-liner;
the target is ≤ 5×. A ``-X importtime`` run of each llmfix command then shows which
imports its start-up is spent on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
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


def llmfix_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m llmfix``."""
    script = Path(sys.executable).parent / "llmfix"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "llmfix"]


def _env() -> dict[str, str]:
    """The environment for every contender: bytecode cached, as after a normal install.

    Without this, ``PYTHONDONTWRITEBYTECODE`` (set in some sandboxes and CI images) makes every
    run of an editable install recompile llmfix from source. The cache goes to a directory of
    its own so the benchmark writes nothing into the source tree.
    """
    env = dict(os.environ)
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "llmfix-bench-pycache")
    env["NO_COLOR"] = "1"
    return env


def _wall(cmd: list[str], stdin_path: Path | None) -> tuple[float, int, str]:
    env = _env()
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


def importtime(cmd: list[str]) -> list[tuple[int, int, str]]:
    """(self µs, cumulative µs, indented module name) for every import the command makes."""
    env = _env()
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


def run(quick: bool = False) -> dict[str, Any]:
    runs = 5 if quick else 21
    with tempfile.TemporaryDirectory(prefix="llmfix-bench-") as tmp:
        path = Path(tmp) / "answer.json"
        path.write_text(make_document(1000), encoding="utf-8")
        args = {
            name: [str(path) if a == "FILE" else a for a in argv] for name, argv in COMMANDS.items()
        }
        contenders: dict[str, tuple[list[str], Path | None]] = {
            "python -c pass": ([sys.executable, "-c", "pass"], None),
            BASE: ([sys.executable, "-c", ONE_LINER], path),
            **{name: ([*llmfix_command(), *argv], None) for name, argv in args.items()},
        }
        # The first run of each writes its bytecode cache; the second is the check.
        checks = {name: _wall(cmd, stdin) for name, (cmd, stdin) in contenders.items()}
        checks = {name: _wall(cmd, stdin) for name, (cmd, stdin) in contenders.items()}
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(runs):
            for name, (cmd, stdin) in contenders.items():
                times[name].append(_wall(cmd, stdin)[0])
        imports = {
            name: summarize_imports(importtime([sys.executable, "-m", "llmfix", *argv]))
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
            *(f"**Warning:** {f}\n" for f in failures),
            *(f"{line}\n" for line in verdicts[:-1]),
            verdicts[-1],
            *imports,
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 runs instead of 21")
    args = parser.parse_args(argv)
    print(format_report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
