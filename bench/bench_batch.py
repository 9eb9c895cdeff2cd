"""Batch checking (issue 5): per-file cost vs a floor, -j 2 vs -j 1, the pool crossover,
peak memory on a big JSONL file, and jsonschema vs jsonschema-rs.

Run: ``.venv/bin/python bench/bench_batch.py [--quick] [--big-mb N] [--only SECTION ...]``.
Prints markdown. Sections:

- ``files`` — 10,000 files of ≈ 2 KB (valid, pretty-printed order pages) checked by
  ``llmfix check``'s own code path (``llmfix.run.check.run_check``: discovery, reading, the
  pipeline, gates, the summary and a JSON report; and again with the default format, the
  text reporter, as CI runs it), in-process with ``-j 1``, against a floor
  timed in the same script: read the file, ``orjson.loads`` (stdlib ``json`` when orjson is
  not installed), ``is_valid`` on a validator compiled once — jsonschema, and jsonschema-rs
  when installed. Target: ≤ 3× the jsonschema floor.
- ``jobs`` — 1,000 broken answers (Python repr in a fence, strings for numbers: lenient
  parsing and schema repair on every file) with ``-j 2`` vs ``-j 1``. Target ≥ 1.6×.
- ``crossover`` — N items checked in this process vs with a pool started at the first item;
  where the pool starts to win, in items and in seconds of serial work (``SERIAL_BUDGET``).
- ``rss`` — peak RSS of ``llmfix check big.jsonl -f json -o report.json`` (a subprocess) on
  OpenAI Batch output files of two sizes; flat means memory does not grow with the input.
- ``engine`` — per-instance cost of jsonschema vs jsonschema-rs on the same schema, and
  whether they report the same errors at the same JSON Pointers.

orjson and jsonschema-rs are optional (not llmfix dependencies): ``pip install orjson
jsonschema-rs`` (or put them on ``PYTHONPATH``) to include them.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import compare, human_size, human_time, markdown_table, verdict
from bench.bench_valid import ORDER_SCHEMA, make_order

FILES = 10_000
BROKEN = 1_000
TARGET_FILES = 3.0
TARGET_RS = 1.5  # issue 16: against the orjson + jsonschema-rs floor
TARGET_JOBS = 1.6
SEED = 5
JSON_FORMAT = "llmfix check -j 1 -f json -o"
DEFAULT_FORMAT = "llmfix check -j 1, default format"


def _optional(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        return None


orjson = _optional("orjson")
jsonschema_rs = _optional("jsonschema_rs")


def page(rng: random.Random, n: int) -> dict[str, Any]:
    return {
        "orders": [make_order(rng, 2 * n), make_order(rng, 2 * n + 1)],
        "page": 1,
        "total_pages": 4,
    }


def broken(value: dict[str, Any]) -> str:
    """A page as a model might botch it: Python repr in a fence, prices as strings."""
    for order in value["orders"]:
        for line in order["items"]:
            line["quantity"] = str(line["quantity"])
    return f"Here is the extracted page:\n```python\n{value!r}\n```\nAnything else?"


def write_tree(root: Path, count: int, make: Callable[[random.Random, int], str]) -> list[Path]:
    rng = random.Random(SEED)
    paths = []
    for i in range(count):
        folder = root / f"d{i % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"answer{i:05d}.txt"
        path.write_text(make(rng, i), encoding="utf-8")
        paths.append(path)
    return paths


def run_check_in_process(
    paths: list[str], schema: str, jobs: int, out: Path | None, fmt: str | None = "json"
) -> int:
    """What ``llmfix check PATHS -s SCHEMA -j JOBS -f json -o OUT -q`` runs, minus start-up;
    with ``fmt=None``, what ``llmfix check PATHS -s SCHEMA -j JOBS`` runs (the default
    format, the text reporter, on a stdout that is not a terminal)."""
    from llmfix.run.check import run_check
    from llmfix.run.settings import CheckFlags, build_run

    flags = CheckFlags(paths=tuple(paths), schema=schema, jobs=jobs, use_config=False)
    if fmt is not None:
        flags = flags._replace(format=fmt, output=str(out), verbosity=-1)
    run = build_run(flags)
    return int(run_check(run, stdout=io.StringIO()))


# ----------------------------------------------------------------------- sections


def bench_files(quick: bool, work: Path) -> dict[str, Any]:
    import jsonschema

    count = 2_000 if quick else FILES
    tree = work / "valid"
    paths = write_tree(
        tree, count, lambda rng, i: json.dumps(page(rng, i), ensure_ascii=False, indent=2)
    )
    sizes = [p.stat().st_size for p in paths]
    schema_path = work / "order.schema.json"
    schema_path.write_text(json.dumps(ORDER_SCHEMA))
    loads = orjson.loads if orjson is not None else json.loads
    validator = jsonschema.Draft202012Validator(ORDER_SCHEMA)

    def floor() -> None:
        for p in paths:
            assert validator.is_valid(loads(p.read_bytes()))

    contenders: dict[str, Callable[[], object]] = {"floor (jsonschema)": floor}
    if jsonschema_rs is not None:
        rs = jsonschema_rs.validator_for(ORDER_SCHEMA)

        def floor_rs() -> None:
            for p in paths:
                assert rs.is_valid(loads(p.read_bytes()))

        contenders["floor (jsonschema-rs)"] = floor_rs
    report = work / "report.json"
    contenders[JSON_FORMAT] = lambda: run_check_in_process([str(tree)], str(schema_path), 1, report)
    contenders[DEFAULT_FORMAT] = lambda: run_check_in_process(
        [str(tree)], str(schema_path), 1, None, fmt=None
    )
    timings = compare(contenders, budget=0, min_sample=0, min_rounds=2 if quick else 3)
    start = time.perf_counter()
    proc = subprocess.run(
        [_llmfix(), "check", str(tree), "-s", str(schema_path), "-j", "1", "-q"],
        capture_output=True,
        check=False,
        env=_this_checkout(),
    )
    cli_seconds = time.perf_counter() - start
    return {
        "count": count,
        "mean_size": sum(sizes) / len(sizes),
        "orjson": orjson is not None,
        "per_file": {name: t.best / count for name, t in timings.items()},
        "cli_per_file": cli_seconds / count,
        "cli_exit": proc.returncode,
    }


def bench_jobs(quick: bool, work: Path) -> dict[str, Any]:
    count = 500 if quick else BROKEN
    tree = work / "broken"
    write_tree(tree, count, lambda rng, i: broken(page(rng, i)))
    schema_path = work / "order.schema.json"
    schema_path.write_text(json.dumps(ORDER_SCHEMA))
    report = work / "report.json"
    contenders = {
        f"-j {jobs}": (
            lambda jobs=jobs: run_check_in_process([str(tree)], str(schema_path), jobs, report)
        )
        for jobs in (1, 2)
    }
    timings = compare(contenders, budget=0, min_sample=0, min_rounds=2 if quick else 3)
    statuses = json.loads(report.read_text())["summary"]["status"]
    return {
        "count": count,
        "seconds": {name: t.best for name, t in timings.items()},
        "statuses": statuses,
        "cores": os.cpu_count(),
    }


def bench_crossover(quick: bool) -> dict[str, Any]:
    from llmfix.batch.core import BatchLimits, Profile
    from llmfix.batch.pool import run_items
    from llmfix.inputs import Item
    from llmfix.schema.load import schema_from_value
    from llmfix.schema.validate import SchemaValidator

    rng = random.Random(SEED)
    texts = [broken(page(rng, i)) for i in range(64)]
    profiles = {"": Profile(SchemaValidator(schema_from_value(ORDER_SCHEMA)))}
    rows = []
    for n in (4, 16, 48, 128) if quick else (4, 16, 32, 64, 128, 256, 512):
        items = [
            Item(id=str(i), source="x", line=1, text=texts[i % 64], kind="text") for i in range(n)
        ]

        def serial(items: list[Item] = items) -> None:
            list(run_items(items, profiles, BatchLimits(jobs=1)))

        def pooled(items: list[Item] = items) -> None:
            list(run_items(items, profiles, BatchLimits(jobs=2, serial_budget=0.0)))

        timings = compare({"serial": serial, "pool": pooled}, budget=0, min_sample=0, min_rounds=3)
        rows.append((n, timings["serial"].best, timings["pool"].best))
    return {"rows": rows}


def bench_rss(quick: bool, work: Path, big_mb: int) -> dict[str, Any]:
    schema_path = work / "order.schema.json"
    schema_path.write_text(json.dumps(ORDER_SCHEMA))
    sizes = [max(4, big_mb // 16), big_mb] if not quick else [8, 32]
    rows = []
    for mb in sizes:
        path = work / f"batch_{mb}mb.jsonl"
        records = _write_batch_jsonl(path, mb * 1_000_000)
        start = time.perf_counter()
        peak, code = _peak_rss(
            [
                _llmfix(),
                "check",
                str(path),
                "-s",
                str(schema_path),
                "-f",
                "json",
                "-o",
                str(work / "rss-report.json"),
                "-q",
            ]
        )
        rows.append((path.stat().st_size, records, peak, time.perf_counter() - start, code))
        path.unlink()
    return {"rows": rows}


def _write_batch_jsonl(path: Path, target: int) -> int:
    rng = random.Random(SEED)
    templates = []
    for i in range(50):
        content = json.dumps(page(rng, i), ensure_ascii=False)
        if i % 5 == 0:
            content = broken(page(rng, i))
        body = {
            "id": f"chatcmpl-{i}",
            "object": "chat.completion",
            "model": "gpt-4o-mini" if i % 2 else "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
        }
        templates.append(body)
    written = 0
    count = 0
    with path.open("w", encoding="utf-8") as handle:
        while written < target:
            body = templates[count % len(templates)]
            line = json.dumps(
                {"custom_id": f"req-{count}", "response": {"status_code": 200, "body": body}},
                ensure_ascii=False,
            )
            handle.write(line + "\n")
            written += len(line) + 1
            count += 1
    return count


def _peak_rss(cmd: list[str]) -> tuple[int, int]:
    """Peak RSS in bytes of the largest process of ``cmd`` (the CLI or one of its workers)."""
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *cmd], capture_output=True, text=True, env=_this_checkout()
    )
    kib, returncode = out.stdout.split()
    return int(kib) * 1024, int(returncode)


def bench_engine(quick: bool) -> dict[str, Any]:
    import jsonschema

    rng = random.Random(SEED)
    valid = [page(rng, i) for i in range(200)]
    invalid = [_spoil(page(rng, i), rng) for i in range(200)]
    py = jsonschema.Draft202012Validator(ORDER_SCHEMA)
    out: dict[str, Any] = {"rs": jsonschema_rs is not None}
    contenders: dict[str, Callable[[], object]] = {
        "jsonschema is_valid": lambda: [py.is_valid(v) for v in valid],
        "jsonschema iter_errors (invalid)": lambda: [list(py.iter_errors(v)) for v in invalid],
    }
    if jsonschema_rs is not None:
        rs = jsonschema_rs.validator_for(ORDER_SCHEMA)
        contenders["jsonschema-rs is_valid"] = lambda: [rs.is_valid(v) for v in valid]
        contenders["jsonschema-rs iter_errors (invalid)"] = lambda: [
            list(rs.iter_errors(v)) for v in invalid
        ]
        same = 0
        for v in invalid:
            ours = sorted(_pointer(e.absolute_path) for e in py.iter_errors(v))
            theirs = sorted(_pointer(e.instance_path) for e in rs.iter_errors(v))
            same += ours == theirs
        out["same_pointers"] = (same, len(invalid))
    timings = compare(contenders, budget=2 if quick else 6)
    out["per_instance"] = {name: t.best / 200 for name, t in timings.items()}
    return out


def _spoil(value: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    order = value["orders"][0]
    choice = rng.randrange(4)
    if choice == 0:
        order["status"] = "lost"
    elif choice == 1:
        order["items"][0]["quantity"] = "three"
    elif choice == 2:
        del order["customer"]["email"]
    else:
        value["extra"] = True
    return value


def _pointer(path: Any) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _this_checkout() -> dict[str, str]:
    """The environment for an ``llmfix`` subprocess that runs this checkout's code (a
    worktree's, say) rather than wherever the installed package points."""
    root = str(Path(__file__).resolve().parent.parent)
    rest = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + rest if rest else "")}


def _llmfix() -> str:
    exe = Path(sys.executable).parent / "llmfix"
    return str(exe) if exe.exists() else "llmfix"


# ------------------------------------------------------------------------ report


def format_report(data: dict[str, Any]) -> str:
    parts = ["### Batch checking (`bench/bench_batch.py`)"]
    if "files" in data:
        f = data["files"]
        floor = f["per_file"]["floor (jsonschema)"]
        rs_floor = f["per_file"].get("floor (jsonschema-rs)")
        per_file = {**f["per_file"], "`llmfix check -j 1 -q` (whole process)": f["cli_per_file"]}
        rows = [
            [name, human_time(sec), f"{sec / floor:.2f}×"]
            + ([f"{sec / rs_floor:.2f}×"] if rs_floor else [])
            for name, sec in per_file.items()
        ]
        ratio = f["per_file"][JSON_FORMAT] / floor
        parts.append(
            f"#### {f['count']:,} valid files of ≈ {human_size(int(f['mean_size']))}, per file "
            f"(loads: {'orjson' if f['orjson'] else 'json (orjson not installed)'}); "
            f"target ≤ {TARGET_FILES:.0f}× the jsonschema floor: "
            f"{ratio:.2f}× {verdict(ratio, TARGET_FILES, higher_is_better=False)}"
        )
        header = ["", "per file", "× jsonschema floor"]
        header += ["× jsonschema-rs floor"] if rs_floor else []
        parts.append(markdown_table(header, rows))
        if rs_floor:
            found = [
                f"{name}: {sec / rs_floor:.2f}× "
                f"{verdict(sec / rs_floor, TARGET_RS, higher_is_better=False)}"
                for name, sec in f["per_file"].items()
                if name.startswith("llmfix")
            ]
            parts.append(
                f"Issue 16's target, ≤ {TARGET_RS}× the jsonschema-rs floor: " + "; ".join(found)
            )
    if "jobs" in data:
        j = data["jobs"]
        one, two = j["seconds"]["-j 1"], j["seconds"]["-j 2"]
        speedup = one / two
        parts.append(
            f"#### -j 2 vs -j 1 on {j['count']:,} broken answers ({j['cores']} cores); "
            f"target ≥ {TARGET_JOBS}×: {speedup:.2f}× {verdict(speedup, TARGET_JOBS, True)}"
        )
        parts.append(
            markdown_table(
                ["", "seconds", "per file"],
                [[k, f"{v:.2f} s", human_time(v / j["count"])] for k, v in j["seconds"].items()],
            )
        )
        parts.append(f"statuses: {j['statuses']}")
    if "crossover" in data:
        rows = [
            [n, human_time(s), human_time(p), f"{s / p:.2f}×", "pool" if p < s else "serial"]
            for n, s, p in data["crossover"]["rows"]
        ]
        parts.append("#### Crossover: N broken answers, in this process vs a 2-worker pool")
        parts.append(markdown_table(["items", "serial", "pool", "speed-up", "faster"], rows))
    if "rss" in data:
        rows = [
            [human_size(size), f"{n:,}", human_size(peak), f"{sec:.1f} s", code]
            for size, n, peak, sec, code in data["rss"]["rows"]
        ]
        parts.append("#### Peak RSS, `llmfix check big.jsonl -f json -o report.json`")
        parts.append(markdown_table(["file", "records", "peak RSS", "time", "exit"], rows))
    if "engine" in data:
        e = data["engine"]
        rows = [[k, human_time(v)] for k, v in e["per_instance"].items()]
        parts.append("#### Validation engine, per instance (order page ≈ 2 KB)")
        parts.append(markdown_table(["", "per instance"], rows))
        if "same_pointers" in e:
            same, total = e["same_pointers"]
            parts.append(f"same error JSON Pointers on {same}/{total} invalid instances")
    return "\n\n".join(parts)


def run(quick: bool = False, only: list[str] | None = None, big_mb: int = 64) -> dict[str, Any]:
    chosen = only or ["files", "jobs", "crossover", "rss", "engine"]
    data: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="llmfix-bench-batch-") as tmp:
        work = Path(tmp)
        for section in chosen:
            if section == "files":
                data["files"] = bench_files(quick, work)
            elif section == "jobs":
                data["jobs"] = bench_jobs(quick, work)
            elif section == "crossover":
                data["crossover"] = bench_crossover(quick)
            elif section == "rss":
                data["rss"] = bench_rss(quick, work, big_mb)
            elif section == "engine":
                data["engine"] = bench_engine(quick)
    return data


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs (noisier)")
    parser.add_argument("--big-mb", type=int, default=64, help="size of the big JSONL (MB)")
    parser.add_argument(
        "--only",
        action="append",
        choices=["files", "jobs", "crossover", "rss", "engine"],
        help="run only these sections",
    )
    args = parser.parse_args(argv)
    resource.getrusage(resource.RUSAGE_SELF)
    print(format_report(run(args.quick, args.only, args.big_mb)), flush=True)


if __name__ == "__main__":
    main()
