"""Screenshots of the HTML report for the docs: the overview, and one item opened.

Run from the repository root: ``.venv/bin/python scripts/screenshots.py [--out docs/images]``.
Needs Chromium (``apt-get install chromium``; driven by Playwright, see ``tests/browser.py``).
It checks 400 demo answers of two models (``bench/bench_html.py``'s ``demo_records``) with
``llmfix check --group-by model -f html``, opens the report in headless Chromium, and writes
``report-overview.png`` and ``report-item.png`` (an answer with a schema repair, its spans
highlighted and one diagnostic's tooltip shown) into ``docs/images/``, where
``docs/guide/check.md`` ("The HTML report") shows them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_html import SCHEMA, demo_records  # noqa: E402
from tests.browser import open_browser  # noqa: E402

ITEMS = 400


def make_report(workdir: Path) -> Path:
    source = workdir / "triage-answers.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for record in demo_records(ITEMS):
            out.write(json.dumps(record) + "\n")
    report = workdir / "report.html"
    llmfix = Path(sys.executable).with_name("llmfix")
    command = [str(llmfix), "check", source.name, "--schema", str(SCHEMA), "--field", "output"]
    command += ["--group-by", "model", "-f", "html", "-o", str(report), "-q"]
    subprocess.run(command, cwd=workdir, check=False)  # exit 1: some answers fail
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, open_browser() as browser:
        report = make_report(Path(tmp))
        page = browser.new_page(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
        page.goto(report.as_uri())
        page.wait_for_selector("body[data-ready]")
        page.screenshot(path=str(args.out / "report-overview.png"), full_page=True)
        # an answer with a syntax repair and schema repairs: several highlights
        page.select_option("#f-rule", label="repair.coerce_boolean")
        page.locator(".row.item").first.click()
        page.locator("#answer mark.m-change").nth(2).hover()
        page.wait_for_selector("#tip:not([hidden])")
        top, height = page.evaluate(
            "() => { const r = document.getElementById('detail').getBoundingClientRect();"
            " return [r.top + window.scrollY, r.height]; }"
        )
        start = max(0, top - 250)  # the list's last rows above the item
        clip = {"x": 0, "y": start, "width": 1280, "height": min(1200, top + height - start + 10)}
        page.screenshot(path=str(args.out / "report-item.png"), full_page=True, clip=clip)
    for name in ("report-overview.png", "report-item.png"):
        print(args.out / name)


if __name__ == "__main__":
    main()
