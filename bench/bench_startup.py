"""Whole-process start-up: ``llmfix repair`` on a 1 KB file vs a ``json.load`` one-liner.

Run: ``.venv/bin/python bench/bench_startup.py [--quick]``. Prints markdown tables.

Both commands are run as subprocesses of the same interpreter (median wall time of ~20 runs
each, interleaved). The ratio is llmfix over the one-liner; the target is ≤ 5×. A
``-X importtime`` run then shows which imports the start-up is spent on.
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
            check=False,
        )
        elapsed = time.perf_counter() - start
    errors = proc.stderr.decode(errors="replace").strip().splitlines()
    return elapsed, proc.returncode, errors[-1] if errors else ""


def importtime(cmd: list[str]) -> list[tuple[int, int, str]]:
    """(self µs, cumulative µs, indented module name) for every import the command makes."""
    env = _env()
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
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


def run(quick: bool = False) -> dict[str, Any]:
    runs = 5 if quick else 21
    with tempfile.TemporaryDirectory(prefix="llmfix-bench-") as tmp:
        path = Path(tmp) / "answer.json"
        path.write_text(make_document(1000), encoding="utf-8")
        ours = [*llmfix_command(), "repair", str(path)]
        contenders = {
            "python -c pass": ([sys.executable, "-c", "pass"], None),
            "json.load one-liner": ([sys.executable, "-c", ONE_LINER], path),
            "llmfix repair": (ours, None),
        }
        # The first run of each writes its bytecode cache; the second is the check.
        checks = {name: _wall(cmd, stdin) for name, (cmd, stdin) in contenders.items()}
        checks = {name: _wall(cmd, stdin) for name, (cmd, stdin) in contenders.items()}
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for _ in range(runs):
            for name, (cmd, stdin) in contenders.items():
                times[name].append(_wall(cmd, stdin)[0])
        imports = summarize_imports(
            importtime([sys.executable, "-m", "llmfix", "repair", str(path)])
        )
    return {
        "runs": runs,
        "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(ours[:-1])),
        "median": {name: statistics.median(ts) for name, ts in times.items()},
        "codes": {name: check[1] for name, check in checks.items()},
        "stderr": {name: check[2] for name, check in checks.items() if check[1] != 0},
        "imports": imports,
        "target": TARGET,
        "quick": quick,
    }


def summary(data: dict[str, Any]) -> list[list[str]]:
    ratio = data["median"]["llmfix repair"] / data["median"]["json.load one-liner"]
    return [
        [
            "start-up, `llmfix repair` 1 KB",
            f"{ratio:.2f}× the one-liner",
            f"≤ {data['target']}×",
            verdict(ratio, data["target"], higher_is_better=False),
        ]
    ]


def format_report(data: dict[str, Any]) -> str:
    median = data["median"]
    base = median["json.load one-liner"]
    rows = [
        [name, human_time(t), f"{t / base:.2f}×", data["codes"][name]] for name, t in median.items()
    ]
    failures = [
        f"`{name}` exited non-zero; stderr: {line}" for name, line in data["stderr"].items()
    ]
    ratio = median["llmfix repair"] / base
    imports = data["imports"]
    package_rows = [[package, f"{us / 1000:.1f}"] for package, us in imports["by_package"][:12]]
    top_rows = [[name, f"{us / 1000:.1f}"] for us, name in imports["top_level"][:8]]
    watched = ", ".join(imports["watched"]) or "none"
    return "\n".join(
        [
            f"### Start-up: `{data['command']} FILE` (1 KB) vs "
            f'`python -c "{ONE_LINER}" < FILE` (median of {data["runs"]} runs)',
            "",
            markdown_table(["command", "median wall", "vs one-liner", "exit code"], rows),
            "",
            *(f"**Warning:** {f}\n" for f in failures),
            f"llmfix / one-liner: **{ratio:.2f}×** (target ≤ {data['target']}×: "
            f"{verdict(ratio, data['target'], higher_is_better=False)}).",
            "",
            f"### Imports of `python -X importtime -m llmfix repair FILE` "
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
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 runs instead of 21")
    args = parser.parse_args(argv)
    print(format_report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
