"""The HTML report (issue 17): generation time and file size for 1,000 and 100,000 items.

Run: ``.venv/bin/python bench/bench_html.py [--sizes 1000 100000] [--no-browser]``. Prints
markdown.

The items are support-ticket triage answers of two models (``demo_records``: clean JSON,
fences, trailing commas, Python literals, strings for numbers, cut-off output, extra keys,
missing fields, prose only, and a few hostile answers with ``</script>`` and ``<img
onerror>``), checked once by the pipeline (at most 2,000 of them); the checked items are then
repeated under new ids up to each size, so what is timed is the report, not the checking.

For each size, in the same process: the HTML reporter (``check -f html``) against the JSON
reporter (``check -f json``) as the baseline — CPU seconds to write the report (best of two),
file size, bytes per item. With Chromium installed (``/usr/bin/chromium``), also what a
reader waits for: the time from opening the file to the item list being ready, and for one
filter and one search over all items (timed in the page).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import human_size, markdown_table

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "samples" / "transcripts" / "triage.schema.json"
SEED = 17
DISTINCT = 2_000

_CATEGORIES = ("billing", "shipping", "returns", "account", "technical", "other")
_PRIORITIES = ("low", "medium", "high", "urgent")
_SUMMARIES = (
    "Charged twice for the same order last week.",
    "Parcel shows delivered but never arrived at the door.",
    "Wants to return a jacket that is one size too small.",
    "Cannot log in after changing the account e-mail.",
    "Two-factor codes arrive after they have already expired.",
    "Asks whether the store ships to the Canary Islands.",
)
_HOSTILE = (
    "Customer pasted </script><script>window.__pwned=1;alert(1)</script> into the form.",
    'Signature reads <img src=x onerror="window.__pwned=1;alert(1)"> in the mail.',
)


def _ticket(rng: random.Random) -> dict[str, Any]:
    ticket: dict[str, Any] = {
        "category": rng.choice(_CATEGORIES),
        "priority": rng.choice(_PRIORITIES),
        "summary": rng.choice(_SUMMARIES),
        "order_id": f"ORD-{rng.randrange(10**6):06d}",
        "needs_human": rng.random() < 0.3,
    }
    if rng.random() < 0.5:
        ticket["confidence"] = round(rng.random(), 2)
    return ticket


def _answer(kind: str, rng: random.Random) -> str:
    t = _ticket(rng)
    plain = json.dumps(t)
    if kind == "clean":
        return plain
    if kind == "fence":
        return f"Here is the triage:\n```json\n{json.dumps(t, indent=2)}\n```\nAnything else?"
    if kind == "trailing_comma":
        return json.dumps(t, indent=2)[:-2] + ",\n}"
    if kind == "python":
        return repr(t)
    if kind == "strings":
        t["needs_human"] = "yes" if t["needs_human"] else "no"
        t["priority"] = t["priority"].upper()
        t["confidence"] = str(t.get("confidence", 0.5))
        return json.dumps(t, indent=2)[:-2] + ",\n}"
    if kind == "truncated":
        text = json.dumps(t, indent=2)
        return text[: rng.randrange(len(text) // 2, len(text) - 2)]
    if kind == "extra_key":
        t["reasoning"] = "The customer sounds upset."
        return json.dumps(t)
    if kind == "missing":
        del t["priority"]
        t["category"] = "refund"
        return json.dumps(t)
    if kind == "prose":
        return "I'm sorry, I can't classify this message without more context."
    t["summary"] = rng.choice(_HOSTILE)
    return f"<think>quote the user</think>\n```json\n{json.dumps(t)}\n```"


# (kind, weight for model-a, weight for model-b)
_KINDS = (
    ("clean", 60, 25),
    ("fence", 15, 20),
    ("trailing_comma", 5, 10),
    ("python", 2, 8),
    ("strings", 5, 12),
    ("truncated", 2, 8),
    ("extra_key", 5, 6),
    ("missing", 3, 6),
    ("prose", 2, 4),
    ("hostile", 1, 1),
)


def demo_records(n: int, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """``n`` JSONL records ``{"model", "prompt", "output"}``: two models' triage answers."""
    rng = random.Random(seed)
    kinds = [k for k, _, _ in _KINDS]
    for index in range(n):
        model = "model-a" if index % 2 == 0 else "model-b"
        weights = [a if model == "model-a" else b for _, a, b in _KINDS]
        kind = rng.choices(kinds, weights)[0]
        yield {"model": model, "prompt": "triage-v3", "output": _answer(kind, rng)}


def checked_items(n: int, workdir: Path) -> tuple[list[Any], Any]:
    """``n`` judged items (distinct ones checked once, then repeated under new ids) + summary."""
    from llmfix.batch.core import BatchLimits, Profile
    from llmfix.batch.judge import BatchSummary, judge
    from llmfix.batch.pool import run_items
    from llmfix.inputs import ReadOptions, items_from_file
    from llmfix.schema.load import load_schema
    from llmfix.schema.validate import SchemaValidator

    source = workdir / "answers.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for record in demo_records(min(n, DISTINCT)):
            out.write(json.dumps(record) + "\n")
    profiles = {"": Profile(SchemaValidator(load_schema(str(SCHEMA))))}
    items = items_from_file(str(source), ReadOptions(field="output", group_by="model"), "")
    distinct = [judge(o) for o in run_items(items, profiles, BatchLimits(jobs=1))]
    found = []
    summary = BatchSummary(groups={})
    for index in range(n):
        checked = distinct[index % len(distinct)]
        if index >= len(distinct):
            item = dataclasses.replace(checked.item, id=f"{source}:{index + 1}", line=index + 1)
            checked = dataclasses.replace(
                checked, outcome=dataclasses.replace(checked.outcome, item=item)
            )
        summary.add(checked)
        found.append(checked)
    return found, summary


def write_report(fmt: str, checked: list[Any], summary: Any, path: Path) -> float:
    """CPU seconds to write ``checked`` as a ``fmt`` report to ``path`` (what ``check -o``
    does). CPU time, not wall time: on a shared machine the wall clock mostly measures the
    neighbours."""
    from llmfix.reporters import reporter_class
    from llmfix.reporters.base import ReportOptions

    start = time.process_time()
    with path.open("w", encoding="utf-8") as out:
        reporter = reporter_class(fmt)(out, ReportOptions(group_by="model"))
        for item in checked:
            reporter.add(item)
        reporter.finish(summary)
    return time.process_time() - start


_TIMED = """([control, query, status]) => {
    document.getElementById('q').value = query;
    document.getElementById('f-status').value = status;
    const start = performance.now();
    document.getElementById(control).dispatchEvent(new Event('change'));
    return (performance.now() - start) / 1000;
}"""


def browser_times(path: Path) -> dict[str, float] | None:
    """Seconds to a ready item list, one status filter and one search, in headless Chromium."""
    from tests.browser import chromium_path, open_browser

    if chromium_path() is None:
        return None
    with open_browser() as browser:
        page = browser.new_page()
        start = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready]", timeout=600_000)
        ready = time.perf_counter() - start
        # the list's own work, timed in the page: a change event runs the filter at once
        filtered = page.evaluate(_TIMED, ["f-status", "", "5"])
        searched = page.evaluate(_TIMED, ["sort", "canary", ""])
        rows = page.evaluate("document.querySelectorAll('.row.item').length")
    return {"ready": ready, "filter": filtered, "search": searched, "rows": rows}


def run(sizes: list[int], browser: bool) -> list[dict[str, Any]]:
    import tempfile

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for n in sizes:
            checked, summary = checked_items(n, workdir)
            row: dict[str, Any] = {"items": n}
            for fmt in ("json", "html"):
                path = workdir / f"report.{fmt}"
                row[f"{fmt}_seconds"] = min(write_report(fmt, checked, summary, path) for _ in "ab")
                row[f"{fmt}_bytes"] = path.stat().st_size
            if browser:
                row["browser"] = browser_times(workdir / "report.html")
            results.append(row)
            del checked
    return results


def format_report(results: list[dict[str, Any]]) -> str:
    rows = []
    for r in results:
        n = r["items"]
        rows.append(
            [
                f"{n:,}",
                f"{r['html_seconds']:.2f} s",
                f"{r['json_seconds']:.2f} s",
                f"{r['html_seconds'] / r['json_seconds']:.2f}×",
                human_size(r["html_bytes"]),
                f"{r['html_bytes'] / n:,.0f} B",
                human_size(r["json_bytes"]),
                f"{r['html_bytes'] / r['json_bytes']:.2f}×",
            ]
        )
    table = markdown_table(
        [
            "items",
            "HTML: write (CPU)",
            "JSON: write (CPU)",
            "HTML/JSON time",
            "HTML size",
            "per item",
            "JSON size",
            "HTML/JSON size",
        ],
        rows,
    )
    opened = [r for r in results if r.get("browser")]
    if opened:
        table += "\n\nIn headless Chromium (`/usr/bin/chromium`, via Playwright):\n\n"
        table += markdown_table(
            ["items", "open → list ready", "status filter", "text search", "rows in the DOM"],
            [
                [
                    f"{r['items']:,}",
                    f"{r['browser']['ready']:.2f} s",
                    f"{r['browser']['filter']:.2f} s",
                    f"{r['browser']['search']:.2f} s",
                    r["browser"]["rows"],
                ]
                for r in opened
            ],
        )
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium timings")
    args = parser.parse_args(argv)
    print(format_report(run(args.sizes, not args.no_browser)))


if __name__ == "__main__":
    main()
