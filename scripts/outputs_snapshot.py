"""Write what llmfix prints and reports for a fixed set of inputs, to compare two commits.

``python scripts/outputs_snapshot.py OUT`` runs the ``llmfix`` of the interpreter it runs
under (use ``PYTHONPATH=<checkout>`` to pick a checkout) over:

- every golden case in ``tests/cases/`` and ``tests/cases_tools/``: ``llmfix repair`` with
  the case's schema or tools, its stdout, stderr, exit code and a ``--report`` per suffix;
- every corpus in ``tests/corpora/``: ``llmfix check --field input`` in every report format;
- a 5,000-item JSONL batch (eight kinds of answer, ``tests/scale_fixture.answer``): one
  ``check`` with every format at once (``--report``), ``--write-fixed`` and ``--results``.

Wall-clock figures (``seconds``, ``timings``, JUnit ``time=``, the HTML's timings and
date) are replaced by ``0`` so that two runs compare with ``diff -r OUT1 OUT2``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path.cwd()  # run from the root of the checkout to measure
FORMATS = {
    "text": "txt",
    "json": "json",
    "yaml": "yaml",
    "junit": "xml",
    "github": "github",
    "sarif": "sarif",
    "html": "html",
    "baseline": "baseline.json",
}
_CLOCK = [
    (re.compile(r'"(seconds|elapsed|duration_ms|ms)": [0-9.e-]+'), r'"\1": 0'),
    (re.compile(r"\b(seconds|elapsed|ms): [0-9.e-]+"), r"\1: 0"),
    (re.compile(r'"timings": \{[^{}]*\}'), '"timings": {}'),
    (re.compile(r"timings:\n(  +\w+: [0-9.e-]+\n)+"), "timings: {}\n"),
    (re.compile(r'time="[0-9.]+"'), 'time="0"'),
    (re.compile(r"\bin [0-9.]+ ?(s|ms)\b"), "in 0 s"),
    (re.compile(r"[0-9.]+ items/s"), "0 items/s"),
    (re.compile(r"\b[0-9]+(\.[0-9]+)? ?(ms|s)\b(?= ?[)·,\n<])"), "0 s"),
    (re.compile(r'"startTimeUtc": "[^"]*"|"endTimeUtc": "[^"]*"'), '"time": ""'),
    (re.compile(r'timestamp="[^"]*"'), 'timestamp=""'),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC"), "<DATE> UTC"),
    (re.compile(r'"finished": "[^"]*"'), '"finished": ""'),
    (re.compile(r"\bfinished: '[^']*'"), "finished: ''"),
]


def _llmfix(*args: str, stdin: str | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120", "XDG_CONFIG_HOME": str(cwd / ".xdg")}
    env.pop("LLMFIX_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "llmfix", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=900,
    )


def _scrub(text: str, *paths: Path) -> str:
    for path in paths:
        text = text.replace(str(path), "<DIR>")
    for pattern, repl in _CLOCK:
        text = pattern.sub(repl, text)
    return text


def _save(out: Path, name: str, run: subprocess.CompletedProcess[str], *paths: Path) -> None:
    (out / f"{name}.out").write_text(_scrub(run.stdout, *paths), encoding="utf-8")
    (out / f"{name}.err").write_text(_scrub(run.stderr, *paths), encoding="utf-8")
    (out / f"{name}.exit").write_text(f"{run.returncode}\n", encoding="utf-8")


def _scrub_files(folder: Path, *paths: Path) -> None:
    for file in sorted(folder.rglob("*")):
        if file.is_file() and file.suffix not in {".parquet"}:
            text = file.read_text(encoding="utf-8", errors="replace")
            file.write_text(_scrub(text, *paths), encoding="utf-8")


def cases(out: Path) -> None:
    for folder in ("cases", "cases_tools"):
        for case in sorted((ROOT / "tests" / folder).iterdir()):
            if not case.is_dir():
                continue
            text = next(case.glob("input.*")).read_text(encoding="utf-8")
            args = ["repair"]
            if (case / "schema.json").exists():
                args += ["--schema", str(case / "schema.json")]
            if (case / "tools.json").exists():
                args += ["--tools", str(case / "tools.json")]
            elif folder == "cases_tools":
                args += ["--tool-calls"]
            dest = out / folder / case.name
            dest.mkdir(parents=True)
            _save(dest, "repair", _llmfix(*args, "-v", stdin=text, cwd=case), case, dest)
            for suffix in ("json", "html"):
                report = f"--report={dest / f'report.{suffix}'}"
                run = _llmfix(*args, report, stdin=text, cwd=case)
                _save(dest, f"report-{suffix}", run, case, dest)
            _scrub_files(dest, case, dest)


def corpora(out: Path) -> None:
    for corpus in sorted((ROOT / "tests" / "corpora").glob("*.jsonl")):
        dest = out / "corpora" / corpus.stem
        dest.mkdir(parents=True)
        # A copy, named relative to the run: a report's keys (SARIF fingerprints) hash the
        # path, which would differ between two checkouts.
        shutil.copyfile(corpus, dest / corpus.name)
        for fmt, suffix in FORMATS.items():
            run = _llmfix(
                "check",
                corpus.name,
                "--field",
                "input",
                "--no-config",
                "--no-progress",
                "-f",
                fmt,
                cwd=dest,
            )
            _save(dest, f"check.{suffix}", run, corpus.parent, dest)


def batch(out: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.scale_fixture import SCHEMA, answer

    dest = out / "batch"
    data = dest / "data"
    data.mkdir(parents=True)
    with (data / "answers.jsonl").open("w", encoding="utf-8") as lines:
        for i in range(5000):
            lines.write(json.dumps({"n": i, "model": f"m{i % 3}", "text": answer(i)}) + "\n")
    (dest / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    reports = [f"--report={fmt}:{dest / f'report.{suffix}'}" for fmt, suffix in FORMATS.items()]
    reports.remove(f"--report=text:{dest / 'report.txt'}")  # the run's own output
    run = _llmfix(
        "check",
        "data",
        "--schema",
        "schema.json",
        "--field",
        "text",
        "--group-by",
        "model",
        "--max-item-size",
        "5000",
        "--no-config",
        "--no-progress",
        "-j",
        "2",
        "--write-fixed",
        "fixed",
        "--results",
        "results",
        "--results-format",
        "jsonl",
        *reports,
        cwd=dest,
    )
    _save(dest, "check", run, dest)
    # Runs that read fewer items whole (the summary, the failing items): the pool's
    # workers judge and count the others themselves.
    for name, args in BATCH_RUNS.items():
        common = ["--field", "text", "--group-by", "model", "--no-config", "--no-progress"]
        run = _llmfix("check", "data", "--schema", "schema.json", *common, *args, cwd=dest)
        _save(dest, f"check-{name}", run, dest)
    _scrub_files(dest, dest)


BATCH_RUNS: dict[str, list[str]] = {
    "quiet": ["-q", "-j", "2"],
    "text": ["-j", "2"],
    "github": ["-f", "github", "-j", "2"],
    "sarif": ["-f", "sarif", "-j", "2"],
    "baseline": ["-f", "baseline", "-j", "2"],
    "repaired-fail": ["--fail-on", "repaired", "--max-risk", "safe", "-j", "2"],
    "degenerate": ["-q", "--fail-on", "degenerate", "-j", "2"],
    "serial": ["-q", "-j", "1"],
}


def main() -> int:
    out = Path(sys.argv[1]).resolve()
    out.mkdir(parents=True, exist_ok=False)
    cases(out)
    corpora(out)
    batch(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
