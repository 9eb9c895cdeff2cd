"""Speed where answers fail (issue 30): every in-process target of the issue, side by side.

Run: ``.venv/bin/python bench/bench_fail.py [--quick]``. Prints a markdown table.

The answers are about 1 KB, for a schema of 5 properties, 4 of them required (``ANSWER_SCHEMA``).
Each row times ``llmfix.repair(text, schema=S)`` — the schema dict passed on every call, as a
library caller does — interleaved in one process with a floor:

- ``json.loads`` + jsonschema-rs ``is_valid`` (compiled once): what detecting the problem costs;
- ``json_repair.loads`` + jsonschema-rs ``is_valid``: what a repair library costs.

Times are CPU seconds of this process (``time.process_time``), the best of interleaved
samples: the machine these figures come from is shared. The ratio is llmfix's time over the
floor's (lower is better) for the ``≤`` targets, and the
floor's over llmfix's (higher is better) for the ``≥`` targets, as the issue states them. The
rows without a schema put ``llmfix.repair(text)`` against ``json.loads`` of the JSON alone
(bare, and in a fence with a line of prose), 1 KB to 1 MB. The stream row feeds a broken
answer of about 200 KB in 16-byte chunks to ``llmfix.stream()`` and closes it, against one
``llmfix.repair`` of the whole text.

``--against DIR`` also times another checkout's ``llmfix.repair`` in the same process (DIR's
``llmfix`` package copied to a temporary directory as ``llmfix_base``, its imports renamed),
interleaved with this checkout's and the floors: before and after figures side by side.

``--batch`` times ``llmfix check mix.jsonl --field text --schema S -q -j 2`` on 20,000
answers of about 1 KB (``bench/bench_scale.py``'s mix: 80 % valid, 15 % repairable, 4 %
missing a field, 1 % prose) as a process started from this interpreter with the checkout
first on ``PYTHONPATH``, against the floor of one core reading the same file, decoding each
line and its answer, and validating it with jsonschema-rs, in this process. Wall seconds, and
CPU seconds of the whole process tree (the pool's workers included), which other processes
on a shared machine disturb less, and of the main process alone (reading, the first half
second of checking before the pool starts, merging); with ``--against``, the other
checkout's run too (each run from a scratch directory, so that ``PYTHONPATH`` decides which
llmfix runs).

Not here: the start-up of ``llmfix repair FILE --schema S`` (``bench/bench_startup.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import llmfix
from bench._common import compare, human_size, human_time, markdown_table, verdict
from bench.bench_stream import CHUNK, make_answer
from bench.bench_valid import make_document

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "score", "tags", "summary"],
    "properties": {
        "name": {"type": "string"},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "summary": {"type": "string"},
        "reviewer": {"type": ["string", "null"]},
    },
}


def make_value(seed: int = 7) -> dict[str, Any]:
    """A value of about 1 KB that fits ``ANSWER_SCHEMA``."""
    rng = random.Random(seed)
    words = ["the", "answer", "is", "clear", "and", "the", "model", "wrote", "it", "well"]
    summary = " ".join(rng.choice(words) for _ in range(175))
    return {
        "name": "Ada Lovelace",
        "score": 3.1,
        "tags": ["analysis", "engines", "notes", "poetry", "science"],
        "summary": summary,
        "reviewer": None,
    }


def make_record(seed: int = 3) -> dict[str, Any]:
    """A value of about 1 KB that fits ``ANSWER_SCHEMA``, made of many short values (45
    tags, a shorter summary) rather than one long string: more tokens to read."""
    rng = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "engines", "notes", "poetry", "review"]
    value = make_value(seed)
    value["tags"] = [f"{rng.choice(words)}{i}" for i in range(45)]
    value["summary"] = value["summary"][:300]
    return value


def python_like(value: dict[str, Any], fence: str = "json") -> str:
    """``value`` as a model writing Python rather than JSON puts it: single quotes, ``None``,
    trailing commas, the score as a string, in a fence (the kind of answer issue 30 timed
    json_repair on, at 2.8 ms for 1 KB)."""
    text = json.dumps(value, indent=2).replace('"', "'")
    text = text.replace("'score': 3.1", "'score': '3.1'").replace(": null", ": None")
    text = text.replace("\n  ]", ",\n  ]").replace("\n}", ",\n}")
    return f"Here you go:\n```{fence}\n{text}\n```\n"


def answers() -> dict[str, str]:
    """Answer shape → its text."""
    value = make_value()
    valid = json.dumps(value, indent=2)
    fenced = f"Here is the record:\n```json\n{valid}\n```\n"
    trailing = valid.replace('"poetry",', '"poetry",').replace("\n}", ",\n}")
    trailing = trailing.replace('"science"\n  ]', '"science",\n  ]')
    as_string = valid.replace('"score": 3.1', '"score": "3.1"')
    mixed = (
        "Sure! Here it is:\n```json\n"
        + as_string.replace(": null", ": None").replace("\n}", ",\n}")
        + "\n```"
    )
    missing = json.dumps({k: v for k, v in value.items() if k != "name"}, indent=2)
    cut = valid[: len(valid) * 9 // 10]
    return {
        "valid": valid,
        "fence only": fenced,
        "trailing comma": trailing,
        "fence + Python literals + trailing commas + number as string": mixed,
        "the same, single-quoted (issue 30's kind), one long string": python_like(value),
        "the same, single-quoted, many short values": python_like(make_record()),
        "a Python dict's repr in a fence, many short values": (
            "```python\n" + repr({**make_record(), "score": "3.1"}) + "\n```"
        ),
        "number as string": as_string,
        "a required field missing": missing,
        "cut off": cut,
    }


# Row → (floor, target ratio, higher is better). "detect" is json.loads + jsonschema-rs on the
# valid text; "json_repair" is json_repair.loads + jsonschema-rs on the same text.
TARGETS: dict[str, tuple[str, float | None, bool]] = {
    "valid": ("detect", 2.0, False),
    "fence only": ("json_repair", None, False),
    "trailing comma": ("json_repair", None, False),
    "fence + Python literals + trailing commas + number as string": ("json_repair", 8.0, True),
    "the same, single-quoted (issue 30's kind), one long string": ("json_repair", 8.0, True),
    "the same, single-quoted, many short values": ("json_repair", 8.0, True),
    "a Python dict's repr in a fence, many short values": ("json_repair", 8.0, True),
    "number as string": ("detect", 15.0, False),
    "a required field missing": ("detect", 10.0, False),
    "cut off": ("json_repair", None, False),
}


def import_base(checkout: Path, scratch: Path) -> ModuleType:
    """Another checkout's llmfix, importable alongside this one as ``llmfix_base``."""
    package = scratch / "llmfix_base"
    shutil.copytree(checkout / "llmfix", package)
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"\bllmfix(?=[. ]|$)", "llmfix_base", text, flags=re.MULTILINE)
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(scratch))
    return importlib.import_module("llmfix_base")


def _ratio(mine: float, base: float, higher: bool) -> float:
    return base / mine if higher else mine / base


def schema_rows(quick: bool, before: ModuleType | None = None) -> list[list[str]]:
    import jsonschema_rs
    from json_repair import loads as json_repair_loads

    fast = jsonschema_rs.Draft202012Validator(ANSWER_SCHEMA)
    rows: list[list[str]] = []
    budget = 0.5 if quick else 2.0
    for name, text in answers().items():
        floor, target, higher = TARGETS[name]
        result = llmfix.repair(text, schema=ANSWER_SCHEMA)
        contenders: dict[str, Callable[[], object]] = {
            "llmfix": lambda t=text: llmfix.repair(t, schema=ANSWER_SCHEMA),
            "detect": lambda t=text: fast.is_valid(json.loads(t)),
            "json_repair": lambda t=text: fast.is_valid(json_repair_loads(t)),
        }
        if before is not None:
            contenders["before"] = lambda t=text: before.repair(t, schema=ANSWER_SCHEMA)
        if not _strict(text):
            del contenders["detect"]
        timings = compare(contenders, budget=budget, clock=time.process_time)
        mine = timings["llmfix"].best
        base_name = floor if floor in timings else "json_repair"
        base = timings[base_name].best
        ratio = _ratio(mine, base, higher)
        shown = f"{ratio:.2f}×" if higher else f"{ratio:.1f}×"
        goal = ""
        if target is not None:
            goal = f"{'≥' if higher else '≤'} {target:g}× ({verdict(ratio, target, higher)})"
        row = [name, result.status.value]
        if before is not None:
            then = timings["before"].best
            was = _ratio(then, base, higher)
            row += [human_time(then), f"{was:.2f}×" if higher else f"{was:.1f}×"]
        row += [
            human_time(mine),
            human_time(timings["detect"].best) if "detect" in timings else "",
            human_time(timings["json_repair"].best),
            f"{shown} {'json.loads + rs' if base_name == 'detect' else 'json_repair + rs'}",
            goal,
        ]
        rows.append(row)
    return rows


def _strict(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def valid_rows(quick: bool, before: ModuleType | None = None) -> list[list[str]]:
    rows: list[list[str]] = []
    sizes = (1_000, 100_000) if quick else (1_000, 10_000, 100_000, 1_000_000)
    for size in sizes:
        document = make_document(size)
        fenced = f"Here is the JSON you asked for:\n```json\n{document}\n```\nAnything else?"
        for shape, text in (("bare", document), ("fenced", fenced)):
            contenders: dict[str, Callable[[], object]] = {
                "llmfix": lambda t=text: llmfix.repair(t),
                "json.loads": lambda d=document: json.loads(d),
            }
            if before is not None:
                contenders["before"] = lambda t=text: before.repair(t)
            timings = compare(contenders, budget=0.5 if quick else 1.5, clock=time.process_time)
            ratio = timings["json.loads"].best / timings["llmfix"].best
            row = [f"valid, {shape}", human_size(len(document))]
            if before is not None:
                was = timings["json.loads"].best / timings["before"].best
                row += [human_time(timings["before"].best), f"{was:.2f}×"]
            row += [
                human_time(timings["llmfix"].best),
                human_time(timings["json.loads"].best),
                f"{ratio:.2f}×",
                f"≥ 0.9× ({verdict(ratio, 0.9, True)})",
            ]
            rows.append(row)
    return rows


def _feed_all(text: str) -> llmfix.Result:
    parser = llmfix.stream()
    feed = parser.feed
    for start in range(0, len(text), CHUNK):
        feed(text[start : start + CHUNK])
    return parser.close()


def stream_rows(quick: bool) -> list[list[str]]:
    rows: list[list[str]] = []
    for seed in (11, 12) if not quick else (11,):
        text, _ = make_answer(200_000, broken=True, seed=seed)
        rounds = 2 if quick else 4
        stream_s = repair_s = float("inf")
        clock = time.process_time
        for _ in range(rounds):  # interleaved: drift hits both alike
            start = clock()
            _feed_all(text)
            stream_s = min(stream_s, clock() - start)
            start = clock()
            llmfix.repair(text)
            repair_s = min(repair_s, clock() - start)
        ratio = stream_s / repair_s
        rows.append(
            [
                f"broken, seed {seed}",
                human_size(len(text)),
                human_time(stream_s),
                human_time(repair_s),
                f"{ratio:.2f}×",
                f"≤ 2× ({verdict(ratio, 2.0, False)})",
            ]
        )
    return rows


BATCH_ROWS = 20_000


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


# Runs ``llmfix`` as ``python -m llmfix`` does, and at exit writes the CPU seconds of this
# process (the main one) to the file $BENCH_CPU_OUT: the tree's less this is the workers'.
_MAIN_CPU = """
import atexit, os, resource, runpy, sys
def _own():
    used = resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["BENCH_CPU_OUT"], "w") as out:
        out.write(repr(used.ru_utime + used.ru_stime))
atexit.register(_own)
sys.argv = ["llmfix", *sys.argv[1:]]
runpy.run_module("llmfix", run_name="__main__", alter_sys=True)
"""


def batch_run(
    checkout: Path, data: Path, schema: Path, cache: Path
) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds of the process tree, CPU seconds of the main process, exit
    code) of ``llmfix check``, the better of two runs."""
    argv = [sys.executable, "-c", _MAIN_CPU, "check", str(data), "--field", "text"]
    argv += ["--schema", str(schema), "--no-config", "--no-progress", "-q", "-j", "2"]
    # Compiled modules, as a regular install has them: kept under the scratch directory (a
    # first run writes them) so that no checkout gets files of this run.
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONPYCACHEPREFIX": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    own = cache.parent / f"{cache.name}.cpu"
    env["BENCH_CPU_OUT"] = str(own)
    # Run from the scratch directory: ``python -c`` (as ``-m``) puts the working directory
    # first on the path, and started in a checkout it would run that checkout's llmfix
    # whatever PYTHONPATH says.
    where = data.parent
    # First the modules are compiled, by a run over the file's first lines, which hold every
    # kind of answer (not timed: the better of the timed runs is taken by wall time, and a
    # run that compiles was sometimes it).
    first = where / f"{cache.name}-first.jsonl"
    with data.open(encoding="utf-8") as lines:
        first.write_text("".join(next(lines) for _ in range(200)), encoding="utf-8")
    warm = [str(first) if arg == str(data) else arg for arg in argv]
    subprocess.run(warm, env=env, cwd=where, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    best = (float("inf"), float("inf"), float("inf"), 0)
    for _ in range(2):
        cpu, start = _children_cpu(), time.perf_counter()
        done = subprocess.run(
            argv, env=env, cwd=where, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        took = time.perf_counter() - start, _children_cpu() - cpu
        best = min(best, (*took, float(own.read_text(encoding="utf-8")), done.returncode))
    return best


def batch_floor(data: Path, schema: dict[str, Any]) -> tuple[float, float]:
    """(wall, CPU) seconds of one core reading, decoding and validating every answer."""
    import jsonschema_rs

    fast = jsonschema_rs.validator_for(schema)
    cpu, start = time.process_time(), time.perf_counter()
    with data.open(encoding="utf-8") as handle:
        for line in handle:
            text = json.loads(line)["text"]
            with contextlib.suppress(ValueError):
                fast.is_valid(json.loads(text))
    return time.perf_counter() - start, time.process_time() - cpu


def batch_rows(against: Path | None) -> list[list[str]]:
    from bench.bench_scale import SCHEMA, answer

    here = Path(__file__).resolve().parent.parent
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-fail-") as tmp:
        data, schema = Path(tmp, "mix.jsonl"), Path(tmp, "schema.json")
        rng = random.Random(15)
        with data.open("w", encoding="utf-8") as out:
            for i in range(BATCH_ROWS):
                out.write(json.dumps({"n": i, "text": answer(i, rng)}) + "\n")
        schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
        wall, cpu = min(batch_floor(data, SCHEMA) for _ in range(3))
        floor_row = ["floor: read, decode, validate, 1 core", f"{wall:.2f}", f"{cpu:.2f}"]
        rows.append([*floor_row, f"{cpu:.2f}", "", "", "", ""])
        runs = [("llmfix check -j 2, this checkout", here)]
        if against is not None:
            runs.insert(0, ("llmfix check -j 2, before", against))
        for index, (label, checkout) in enumerate(runs):
            took, used, own, code = batch_run(checkout, data, schema, Path(tmp, f"pycache{index}"))
            rows.append(
                [
                    label,
                    f"{took:.2f}",
                    f"{used:.2f}",
                    f"{own:.2f}",
                    f"{BATCH_ROWS / took:,.0f}",
                    f"{took / wall:.1f}×",
                    f"{used / cpu:.1f}×",
                    str(code),
                ]
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, fewer sizes")
    parser.add_argument(
        "--only", choices=("schema", "valid", "stream", "batch"), help="one table only"
    )
    parser.add_argument("--against", type=Path, help="another checkout to time beside this one")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        before = import_base(args.against, Path(scratch)) if args.against else None
        then = ["before", "before ratio"] if before is not None else []
        if args.only in (None, "schema"):
            print("#### 1 KB answers, schema of 5 properties (4 required), dict passed per call\n")
            header = ["answer", "status", *then, "llmfix", "json.loads + rs", "json_repair + rs"]
            header += ["ratio", "target"]
            print(markdown_table(header, schema_rows(args.quick, before)))
            print()
        if args.only in (None, "valid"):
            print("#### Valid JSON without a schema: `llmfix.repair(text)` vs `json.loads`\n")
            header = ["answer", "size", *then, "llmfix", "json.loads", "ratio", "target"]
            print(markdown_table(header, valid_rows(args.quick, before)))
            print()
    if args.only in (None, "batch"):
        print("#### `llmfix check mix.jsonl --field text --schema S -q -j 2`, 20,000 answers\n")
        header = ["run", "wall s", "CPU s (tree)", "of which main process", "answers/s"]
        header += ["wall vs floor", "CPU vs floor"]
        header.append("exit")
        print(markdown_table(header, batch_rows(args.against)))
        print()
    if args.only in (None, "stream"):
        print("#### `llmfix.stream()` in 16-byte chunks, then `close()`, vs one `llmfix.repair`\n")
        header = ["answer", "size", "stream", "repair", "ratio", "target"]
        print(markdown_table(header, stream_rows(args.quick)))


if __name__ == "__main__":
    main()
