"""Run every benchmark and print one markdown report.

Run: ``.venv/bin/python -m bench [--quick]`` or ``.venv/bin/python bench/run_all.py [--quick]``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import bench_broken, bench_startup, bench_valid
from bench._common import markdown_table


def machine() -> str:
    from importlib.metadata import version

    deps = ", ".join(f"{d} {version(d)}" for d in ("jsonschema", "json_repair", "typer", "rich"))
    return (
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores; {deps}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (noisier figures)")
    parser.add_argument(
        "--only", choices=["valid", "broken", "startup"], action="append", help="run only these"
    )
    args = parser.parse_args(argv)
    chosen = args.only or ["valid", "broken", "startup"]
    modules = {"valid": bench_valid, "broken": bench_broken, "startup": bench_startup}
    today = datetime.date.today().isoformat()
    mode = " (quick)" if args.quick else ""
    print(f"## llmfix benchmarks{mode}, {today}\n\n{machine()}\n", flush=True)
    rows = []
    for name in chosen:
        start = time.perf_counter()
        data = modules[name].run(quick=args.quick)
        rows += modules[name].summary(data)
        report = modules[name].format_report(data)
        print(f"{report}\n\n_{name}: {time.perf_counter() - start:.0f} s_\n", flush=True)
    print("### Summary\n")
    print(markdown_table(["benchmark", "measured", "target", "verdict"], rows))


if __name__ == "__main__":
    main()
