"""Valid JSON, 1 KB to 1 MB: ``llmfix.repair`` against ``json.loads`` (+ the same validation).

Run: ``.venv/bin/python bench/bench_valid.py [--quick]``. Prints a markdown table.

The floor is what a careful user would write by hand: ``json.loads`` and, with a schema, a
``jsonschema`` validator compiled once and asked ``is_valid``. The ratio is llmfix throughput
over floor throughput (1.00× = as fast as the floor; the target is ≥ 0.90×).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import compare, human_size, human_time, markdown_table, verdict

TARGET = 0.9
SIZES = (1_000, 10_000, 100_000, 1_000_000)
SEED = 20240501

ORDER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://example.com/schemas/order-page.json",
    "title": "A page of orders extracted from customer e-mails",
    "type": "object",
    "required": ["orders", "page", "total_pages"],
    "additionalProperties": False,
    "properties": {
        "orders": {"type": "array", "items": {"$ref": "#/$defs/order"}},
        "page": {"type": "integer", "minimum": 1},
        "total_pages": {"type": "integer", "minimum": 1},
        "source": {"type": "string"},
    },
    "$defs": {
        "money": {"type": "number", "minimum": 0},
        "address": {
            "type": "object",
            "required": ["street", "city", "country"],
            "properties": {
                "street": {"type": "string", "minLength": 1},
                "city": {"type": "string", "minLength": 1},
                "postcode": {"type": "string", "maxLength": 12},
                "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
            },
            "additionalProperties": False,
        },
        "customer": {
            "type": "object",
            "required": ["name", "email"],
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 200},
                "email": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+$"},
                "age": {"type": ["integer", "null"], "minimum": 0, "maximum": 130},
                "address": {"$ref": "#/$defs/address"},
            },
        },
        "line": {
            "type": "object",
            "required": ["sku", "quantity", "price"],
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                "title": {"type": "string"},
                "quantity": {"type": "integer", "minimum": 1},
                "price": {"$ref": "#/$defs/money"},
                "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            },
        },
        "order": {
            "type": "object",
            "required": ["id", "customer", "status", "items", "total", "currency"],
            "properties": {
                "id": {"type": "string", "pattern": "^ord_[0-9]{6}$"},
                "customer": {"$ref": "#/$defs/customer"},
                "status": {"enum": ["pending", "paid", "shipped", "delivered", "refunded"]},
                "items": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/line"}},
                "total": {"$ref": "#/$defs/money"},
                "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "JPY"]},
                "created_at": {"type": "string"},
                "gift": {"type": "boolean"},
                "coupon": {"type": ["string", "null"]},
                "notes": {"type": "string"},
            },
        },
    },
}

_FIRST = ["Ana", "Björn", "Chloé", "Dmitri", "Emeka", "Fatima", "Grace", "Hiro", "Inès", "José"]
_LAST = ["Okafor", "Müller", "Nakamura", "García", "Smith", "Dubois", "Kowalski", "Rossi", "Li"]
_CITIES = [("Lyon", "FR"), ("Köln", "DE"), ("Osaka", "JP"), ("Leeds", "GB"), ("Austin", "US")]
_NOTE = (
    "the parcel arrived late but intact please send an invoice to my office address and "
    "note that the blue variant was out of stock so I accepted the grey one instead thanks"
)
_WORDS = _NOTE.split()
_TAGS = ["sale", "fragile", "gift-wrap", "express", "eco", "bulk", "returnable", "new"]


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    words = rng.choices(_WORDS, k=rng.randint(lo, hi))
    return " ".join(words).capitalize() + "."


def make_order(rng: random.Random, n: int) -> dict[str, Any]:
    """One order record, the kind of object a model extracts from an e-mail."""
    city, country = rng.choice(_CITIES)
    lines: list[dict[str, Any]] = []
    for _ in range(rng.randint(1, 4)):
        lines.append(
            {
                "sku": f"{rng.choice(['ABC', 'KLM', 'XYZ', 'QRS'])}-{rng.randint(0, 9999):04d}",
                "title": _sentence(rng, 2, 6).rstrip("."),
                "quantity": rng.randint(1, 12),
                "price": round(rng.uniform(0.5, 250.0), 2),
                "tags": rng.sample(_TAGS, k=rng.randint(0, 3)),
            }
        )
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    return {
        "id": f"ord_{n:06d}",
        "customer": {
            "name": f"{first} {last}",
            "email": f"{first.lower()}.{last.lower()}@example.com",
            "age": rng.choice([None, rng.randint(18, 90)]),
            "address": {
                "street": f"{rng.randint(1, 200)} {rng.choice(_LAST)} Street",
                "city": city,
                "postcode": f"{rng.randint(10000, 99999)}",
                "country": country,
            },
        },
        "status": rng.choice(["pending", "paid", "shipped", "delivered", "refunded"]),
        "items": lines,
        "total": round(sum(x["price"] * x["quantity"] for x in lines), 2),
        "currency": rng.choice(["EUR", "USD", "GBP", "JPY"]),
        "created_at": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
        "gift": rng.random() < 0.2,
        "coupon": rng.choice([None, None, "SPRING10", "WELCOME"]),
        "notes": _sentence(rng, 4, 24),
    }


def make_document(target_bytes: int, seed: int = SEED) -> str:
    """A pretty-printed order page of roughly ``target_bytes`` UTF-8 bytes (deterministic)."""
    rng = random.Random(seed + target_bytes)
    orders: list[dict[str, Any]] = []
    size = 80  # the envelope
    while size < target_bytes:
        order = make_order(rng, len(orders) + 1)
        orders.append(order)
        size += len(json.dumps(order, indent=2, ensure_ascii=False).encode()) + 6
    page = {"orders": orders, "page": 1, "total_pages": 1, "source": "inbox export"}
    actual = len(json.dumps(page, indent=2, ensure_ascii=False).encode())
    if actual > target_bytes * 1.05 and len(orders) > 1:  # nesting adds indentation
        del orders[max(1, round(len(orders) * target_bytes / actual)) :]
    return json.dumps(page, indent=2, ensure_ascii=False)


def _check(text: str, schema: dict[str, Any]) -> str:
    """Sanity: the document is valid and llmfix returns it unchanged with status valid."""
    import jsonschema

    import llmfix

    expected = json.loads(text)
    jsonschema.Draft202012Validator(schema).validate(expected)
    notes = []
    for with_schema in (False, True):
        result = llmfix.repair(text, schema=schema if with_schema else None)
        if result.value != expected:
            notes.append("value differs")
        if str(result.status.value) != "valid":
            notes.append(f"status {result.status.value}")
    return ", ".join(sorted(set(notes))) or "ok"


def run(quick: bool = False) -> dict[str, Any]:
    """Measure every size; return rows for the report tables."""
    import jsonschema

    import llmfix

    # Seconds per size and contender group; the 1 MB case gets more (≈ 0.5 s per call).
    budgets = {1_000: 3.0, 10_000: 3.0, 100_000: 4.0, 1_000_000: 9.0}
    min_sample = 0.02 if quick else 0.05
    min_rounds = 2 if quick else 3
    floor_validator = jsonschema.Draft202012Validator(ORDER_SCHEMA)
    internal = _internal_contender(ORDER_SCHEMA)
    rows = []
    for target in SIZES[:-1] if quick else SIZES:
        text = make_document(target)
        nbytes = len(text.encode())
        check = _check(text, ORDER_SCHEMA)

        def floor_schema(text: str = text) -> object:
            return floor_validator.is_valid(json.loads(text))

        def llmfix_schema(text: str = text) -> object:
            return llmfix.repair(text, schema=ORDER_SCHEMA)

        def floor_plain(text: str = text) -> object:
            return json.loads(text)

        def llmfix_plain(text: str = text) -> object:
            return llmfix.repair(text)

        with_schema: dict[str, Any] = {"floor": floor_schema, "llmfix": llmfix_schema}
        if internal is not None:
            with_schema["reused"] = lambda text=text: internal(text)
        budget = 0.6 if quick else budgets[target]
        t_schema = compare(with_schema, budget=budget, min_sample=min_sample, min_rounds=min_rounds)
        t_plain = compare(
            {"floor": floor_plain, "llmfix": llmfix_plain},
            budget=budget,
            min_sample=min_sample,
            min_rounds=min_rounds,
        )
        rows.append(
            {
                "size": nbytes,
                "check": check,
                "schema": {k: v.best for k, v in t_schema.items()},
                "plain": {k: v.best for k, v in t_plain.items()},
            }
        )
    return {"rows": rows, "target": TARGET, "quick": quick}


def _internal_contender(schema: dict[str, Any]) -> Any:
    """``repair_text`` with a validator built once, if the pipeline offers it (diagnostic only)."""
    try:
        from llmfix.pipeline.core import make_validator, repair_text
    except ImportError:
        return None
    validator = make_validator(schema)
    return lambda text: repair_text(text, validator=validator)


def _mbps(nbytes: int, seconds: float) -> str:
    rate = nbytes / seconds / 1e6
    return f"{rate:.2f}" if rate < 1 else f"{rate:.1f}"


def summary(data: dict[str, Any]) -> list[list[str]]:
    """Rows for the overall table: the worst ratio with and without a schema."""
    out = []
    for key, label in (("schema", "valid JSON + schema"), ("plain", "valid JSON, no schema")):
        worst = min(data["rows"], key=lambda r: r[key]["floor"] / r[key]["llmfix"])
        ratio = worst[key]["floor"] / worst[key]["llmfix"]
        out.append(
            [
                f"{label} (worst size: {human_size(worst['size'])})",
                f"{ratio:.2f}× floor throughput",
                f"≥ {data['target']}×",
                verdict(ratio, data["target"], higher_is_better=True),
            ]
        )
    return out


def format_report(data: dict[str, Any]) -> str:
    target = data["target"]
    schema_rows = []
    plain_rows = []
    for row in data["rows"]:
        n = row["size"]
        s, p = row["schema"], row["plain"]
        ratio = s["floor"] / s["llmfix"]
        reused = f"{s['floor'] / s['reused']:.2f}×" if "reused" in s else "n/a"
        schema_rows.append(
            [
                human_size(n),
                _mbps(n, s["floor"]),
                _mbps(n, s["llmfix"]),
                f"{ratio:.2f}×",
                verdict(ratio, target, higher_is_better=True),
                reused,
                row["check"],
            ]
        )
        ratio_p = p["floor"] / p["llmfix"]
        plain_rows.append(
            [
                human_size(n),
                _mbps(n, p["floor"]),
                _mbps(n, p["llmfix"]),
                human_time(p["llmfix"]),
                f"{ratio_p:.2f}×",
                verdict(ratio_p, target, higher_is_better=True),
            ]
        )
    head = ["size", "floor MB/s", "llmfix MB/s", "ratio", f"≥ {target}×", "validator reused¹"]
    out = [
        "### Valid JSON with a schema: `llmfix.repair(text, schema=s)` vs "
        "`json.loads` + compiled `jsonschema` `is_valid`",
        "",
        markdown_table([*head, "sanity"], schema_rows),
        "",
        "¹ internal `pipeline.repair_text(text, validator=v)` with the validator built once: "
        "shows how much of the gap is per-call schema compilation.",
        "",
        "### Valid JSON without a schema: `llmfix.repair(text)` vs `json.loads(text)`",
        "",
        markdown_table(
            ["size", "json.loads MB/s", "llmfix MB/s", "llmfix per call", "ratio", f"≥ {target}×"],
            plain_rows,
        ),
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (noisier figures)")
    args = parser.parse_args(argv)
    print(format_report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
