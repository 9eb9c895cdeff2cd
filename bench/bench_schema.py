"""Validation errors and schema repair on answers that break their schema.

Run: ``.venv/bin/python bench/bench_schema.py [--quick]``. Prints a markdown table.

Each case is an invalid value and its schema. Three contenders run interleaved in one
process: the baseline, ``jsonschema``'s ``iter_errors`` listed on a validator compiled once
(finding what is wrong, without saying it well); ``SchemaValidator.errors`` (the same
errors as llmfix diagnostics, messages and hints included); and ``coerce_to_schema``
(schema repair). Ratios are llmfix's time over the baseline's (lower is better), so they
hold across machines and loads; compare them between two versions of the code.

``--against DIR`` compares this code with another checkout (``git worktree add DIR REV``,
or ``git archive REV | tar -x -C DIR``) in the same process: DIR's ``llmfix`` package is
copied to a temporary directory as ``llmfix_base`` (its imports renamed), and both versions'
``errors()`` and ``coerce_to_schema`` are timed interleaved, in CPU time (``process_time``,
which other processes on a shared machine disturb less than the wall clock), with the
function calls each makes (cProfile, exact). Prints after/before ratios.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import importlib
import json
import pstats
import random
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import compare, human_time, markdown_table
from bench.bench_valid import ORDER_SCHEMA, make_order

INTERVIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name", "age", "score", "hired", "stage", "skills", "reasoning"],
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 16},
        "score": {"type": "number", "maximum": 100},
        "hired": {"type": "boolean"},
        "stage": {"enum": ["screening", "in_progress", "offer", "rejected"]},
        "skills": {"type": "array", "items": {"type": "string"}},
        "reasoning": {"type": "string"},
        "manager": {"type": ["string", "null"]},
    },
}
INTERVIEW = {
    "Name": "Ada",
    "age": "34",
    "score": "87%",
    "hired": "Yes",
    "stage": "In Progress",
    "skills": "python",
    "reasonning": "strong answers",
    "manager": "N/A",
    "mood": "calm",
}

SHAPES_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "oneOf": [
            {
                "type": "object",
                "required": ["kind", "radius"],
                "properties": {"kind": {"const": "circle"}, "radius": {"type": "number"}},
            },
            {
                "type": "object",
                "required": ["kind", "width", "height"],
                "properties": {
                    "kind": {"const": "rect"},
                    "width": {"type": "number"},
                    "height": {"type": "number"},
                },
            },
        ]
    },
}
SHAPES = [
    {"kind": "circle", "radius": "2.5"} if i % 2 else {"kind": "rect", "width": "3", "height": 4}
    for i in range(40)
]


def _broken_orders(seed: int = 7) -> dict[str, Any]:
    """An order page with the slips models make: numbers as strings, enum case, a stray key."""
    rng = random.Random(seed)
    page: dict[str, Any] = {
        "orders": [make_order(rng, n) for n in range(20)],
        "page": "1",
        "total_pages": 3,
    }
    page = copy.deepcopy(page)
    for order in page["orders"]:
        order["total"] = str(order["total"])
        order["status"] = order["status"].upper()
        order["Currency"] = order.pop("currency")
        for line in order["items"]:
            line["quantity"] = str(line["quantity"])
    page["comment"] = "extracted by a model"
    return page


def cases() -> dict[str, tuple[Any, dict[str, Any]]]:
    return {
        "interview answer (9 slips)": (INTERVIEW, INTERVIEW_SCHEMA),
        "oneOf items (40 shapes)": (SHAPES, SHAPES_SCHEMA),
        "order page (20 orders)": (_broken_orders(), ORDER_SCHEMA),
        "500 numerals for integers": (
            [str(i) for i in range(500)],
            {"type": "array", "items": {"type": "integer"}},
        ),
    }


def run(quick: bool = False) -> list[dict[str, Any]]:
    import jsonschema

    from llmfix.schema.load import schema_from_value
    from llmfix.schema.repair import coerce_to_schema
    from llmfix.schema.validate import SchemaValidator

    rows = []
    for name, (value, schema) in cases().items():
        baseline = jsonschema.validators.validator_for(schema)(schema)
        ours = SchemaValidator(schema_from_value(schema))
        contenders = {
            "baseline": lambda b=baseline, v=value: list(b.iter_errors(v)),
            "errors": lambda o=ours, v=value: o.errors(v),
            "repair": lambda s=schema, v=value: coerce_to_schema(v, s),
        }
        timings = compare(
            contenders,
            budget=0.5 if quick else 3.0,
            min_sample=0.02 if quick else 0.05,
            min_rounds=3 if quick else 5,
        )
        base = timings["baseline"].best
        rows.append(
            {
                "case": name,
                "baseline": base,
                "errors": timings["errors"].best,
                "repair": timings["repair"].best,
                "errors_ratio": timings["errors"].best / base,
                "repair_ratio": timings["repair"].best / base,
            }
        )
    return rows


def format_report(rows: list[dict[str, Any]]) -> str:
    table = [
        [
            row["case"],
            human_time(row["baseline"]),
            human_time(row["errors"]),
            f"{row['errors_ratio']:.2f}×",
            human_time(row["repair"]),
            f"{row['repair_ratio']:.2f}×",
        ]
        for row in rows
    ]
    header = ["case", "iter_errors", "errors()", "ratio", "coerce_to_schema", "ratio"]
    return markdown_table(header, table)


def _import_base(checkout: Path, scratch: Path) -> dict[str, ModuleType]:
    """The other checkout's llmfix, importable alongside this one as ``llmfix_base``."""
    package = scratch / "llmfix_base"
    shutil.copytree(checkout / "llmfix", package)
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"\bllmfix(?=[. ]|$)", "llmfix_base", text, flags=re.MULTILINE)
        path.write_text(text, encoding="utf-8")
    sys.path.insert(0, str(scratch))
    names = ("schema_repair", "schemas", "validate")
    return {name: importlib.import_module(f"llmfix_base.{name}") for name in names}


def _cpu_best(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Best CPU seconds per call of each function, interleaved over ``rounds``."""
    loops = {}
    for name, fn in fns.items():
        started = time.process_time()
        fn()
        loops[name] = max(1, int(0.05 / max(time.process_time() - started, 1e-6)))
    best = dict.fromkeys(fns, float("inf"))
    order = list(fns.items())
    for _ in range(rounds):
        # Reversed every round: what one function leaves in caches must not favour the next.
        order.reverse()
        for name, fn in order:
            gc.collect()
            gc.disable()
            try:
                started = time.process_time()
                for _ in range(loops[name]):
                    fn()
                best[name] = min(best[name], (time.process_time() - started) / loops[name])
            finally:
                gc.enable()
    return best


def _calls(fn: Callable[[], object]) -> int:
    profile = cProfile.Profile()
    profile.runcall(fn)
    return int(pstats.Stats(profile).total_calls)


def against(checkout: Path, quick: bool) -> str:
    from llmfix.schema import load as schemas
    from llmfix.schema import repair as schema_repair
    from llmfix.schema import validate

    with tempfile.TemporaryDirectory() as scratch:
        base = _import_base(checkout, Path(scratch))
        rows = []
        for name, (value, schema) in cases().items():
            old = base["validate"].SchemaValidator(base["schemas"].schema_from_value(schema))
            new = validate.SchemaValidator(schemas.schema_from_value(schema))
            fns: dict[str, Callable[[], object]] = {
                "errors before": lambda o=old, v=value: o.errors(v),
                "errors after": lambda n=new, v=value: n.errors(v),
                "repair before": lambda s=schema, v=value: base["schema_repair"].coerce_to_schema(
                    v, s
                ),
                "repair after": lambda s=schema, v=value: schema_repair.coerce_to_schema(v, s),
            }
            cpu = _cpu_best(fns, 5 if quick else 15)
            calls = {key: _calls(fn) for key, fn in fns.items()}
            rows.append(
                [name]
                + [
                    f"{figures[f'{what} after'] / figures[f'{what} before']:.3f}×"
                    for what in ("errors", "repair")
                    for figures in (cpu, calls)
                ]
            )
    header = ["case", "errors() CPU", "errors() calls", "coerce CPU", "coerce calls"]
    return "after / before\n\n" + markdown_table(header, rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (noisier figures)")
    parser.add_argument("--json", action="store_true", help="raw figures as JSON")
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
    args = parser.parse_args(argv)
    if args.against is not None:
        print(against(args.against, args.quick))
        return
    rows = run(quick=args.quick)
    print(json.dumps(rows, indent=2) if args.json else format_report(rows))


if __name__ == "__main__":
    main()
