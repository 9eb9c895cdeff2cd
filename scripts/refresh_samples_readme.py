"""Re-run every ```console block of samples/README.md and put the real output in it.

Usage: .venv/bin/python scripts/refresh_samples_readme.py   (from the repository root)
Lines starting with "$ " are commands; everything else in a block is replaced by what
they print (stderr, then stdout, as a terminal would show them one after the other).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "samples" / "README.md"
BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)


def run(command: str) -> tuple[str, int]:
    bindir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "COLUMNS": "100",
        "PATH": f"{bindir}:{os.environ['PATH']}",
    }
    done = subprocess.run(
        command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    return done.stderr + done.stdout, done.returncode


def refresh(match: re.Match[str]) -> str:
    out = []
    code = 0
    for line in match.group(1).splitlines():
        if not line.startswith("$ "):
            continue
        if line == "$ echo $?":  # the exit code of the command before, as a shell shows it
            out.append(f"{line}\n{code}\n")
            continue
        text, code = run(line[2:])
        out.append(f"{line}\n{text}")
    return "```console\n" + "".join(out) + "```"


def main() -> None:
    README.write_text(BLOCK.sub(refresh, README.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    main()
