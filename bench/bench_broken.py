"""A typical mix of broken LLM answers: ``llmfix.repair`` against ``json_repair.loads`` alone.

Run: ``.venv/bin/python bench/bench_broken.py [--quick]``. Prints a markdown table.

About 200 answers are generated deterministically from a seed: prose around a markdown fence,
trailing commas, single quotes, Python literals, truncated output, comments, unquoted keys and
``<think>`` blocks, alone and combined. Both tools get the raw answer, as a user would pass it.
The ratio is llmfix time over json_repair time (how many times slower llmfix is); there is no
target for this one — it shows what the extraction, diagnostics and safety checks cost.
Whether each tool gets the answer right is measured by the conformance runner, not here.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import compare, human_time, markdown_table
from bench.bench_valid import make_order

SEED = 7
COUNT = 200

_INTROS = [
    "Sure! Here is the JSON you asked for:",
    "Here's the extracted data:",
    "Based on the e-mail, the structured result is below.",
    "Of course. I filled in every field I could find; `age` was not mentioned so I left it null.",
]
_OUTROS = [
    "Let me know if you need anything else!",
    "Note: the postcode was inferred from the city name.",
    "",
]
_THOUGHTS = [
    "The user wants a JSON object with {name} and [items]. The schema says total is a number, "
    "so I should not quote it. Let me check each line item before answering.",
    "I need to call the search tool first. Arguments: {query: string}. Then summarise.",
]


def _person(rng: random.Random) -> dict[str, Any]:
    order = make_order(rng, rng.randint(1, 999_999))
    person: dict[str, Any] = order["customer"]
    return {**person, "notes": order["notes"]}


def _tool_call(rng: random.Random) -> dict[str, Any]:
    return {
        "toolCalls": [
            {
                "name": rng.choice(["search_orders", "get_weather", "send_email"]),
                "arguments": {
                    "query": " ".join(rng.choices(["late", "parcel", "refund", "Lyon"], k=3)),
                    "limit": rng.randint(1, 50),
                    "include_archived": rng.random() < 0.5,
                },
            }
            for _ in range(rng.randint(1, 2))
        ],
        "content": "Looking that up for you.",
        "needsMoreWork": rng.random() < 0.5,
    }


def _classification(rng: random.Random) -> dict[str, Any]:
    return {
        "label": rng.choice(["complaint", "question", "praise", "spam"]),
        "confidence": round(rng.random(), 3),
        "reasons": [make_order(rng, 1)["notes"] for _ in range(rng.randint(1, 3))],
        "escalate": rng.random() < 0.3,
        "assignee": None,
    }


_SHAPES: list[Callable[[random.Random], dict[str, Any]]] = [
    lambda rng: make_order(rng, rng.randint(1, 999_999)),
    _person,
    _tool_call,
    _classification,
]


def _dump(value: Any, rng: random.Random) -> str:
    return json.dumps(value, indent=rng.choice([2, 2, 4, None]), ensure_ascii=False)


# Each breakage turns well-formed JSON text (whose strings hold no quotes, newlines or the
# words true/false/null, by construction) into what a model might write instead.
def trailing_commas(text: str, rng: random.Random) -> str:
    return re.sub(r"([^\s\[{,])(\s*[}\]])", r"\1,\2", text)


def single_quotes(text: str, rng: random.Random) -> str:
    return text.replace('"', "'")


def python_literals(text: str, rng: random.Random) -> str:
    table = {"true": "True", "false": "False", "null": "None"}
    return re.sub(r"\b(true|false|null)\b", lambda m: table[m.group(1)], text)


def unquoted_keys(text: str, rng: random.Random) -> str:
    return re.sub(r'"(\w+)":', r"\1:", text)


def comments(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return "/* answer */ " + text
    for i in sorted(rng.sample(range(1, len(lines)), k=min(3, len(lines) - 1)), reverse=True):
        if lines[i - 1].rstrip().endswith(("{", "[", ",")):
            lines.insert(i, lines[i][: len(lines[i]) - len(lines[i].lstrip())] + "// filled in")
    return "/* generated */\n" + "\n".join(lines)


def truncated(text: str, rng: random.Random) -> str:
    return text[: int(len(text) * rng.uniform(0.5, 0.95))]


def fenced(text: str, rng: random.Random) -> str:
    lang = rng.choice(["json", "json", "JSON", ""])
    return f"{rng.choice(_INTROS)}\n\n```{lang}\n{text}\n```\n\n{rng.choice(_OUTROS)}".rstrip()


def thinking(text: str, rng: random.Random) -> str:
    return f"<think>\n{rng.choice(_THOUGHTS)}\n</think>\n\n{text}"


def truncated_fence(text: str, rng: random.Random) -> str:
    """Output cut off by the token limit inside an open fence."""
    return f"{rng.choice(_INTROS)}\n\n```json\n{truncated(text, rng)}"


Breakage = Callable[[str, random.Random], str]

# (category, breakages applied in order to the JSON text, then to the wrapped answer)
MIX: list[tuple[str, list[Breakage]]] = [
    ("prose + fence", [fenced]),
    ("trailing commas", [trailing_commas]),
    ("single quotes", [single_quotes]),
    ("python literals", [python_literals]),
    ("python repr", [python_literals, single_quotes]),
    ("truncated", [truncated]),
    ("comments", [comments]),
    ("unquoted keys", [unquoted_keys]),
    ("think + JSON", [thinking]),
    ("fence + trailing commas", [trailing_commas, fenced]),
    ("think + fence + truncated", [truncated_fence, thinking]),
    ("fence + comments + unquoted", [comments, unquoted_keys, fenced]),
]


def make_answers(count: int = COUNT, seed: int = SEED) -> list[tuple[str, str]]:
    """``count`` (category, raw answer) pairs, round-robin over ``MIX`` (deterministic)."""
    rng = random.Random(seed)
    answers = []
    for i in range(count):
        category, breakages = MIX[i % len(MIX)]
        text = _dump(rng.choice(_SHAPES)(rng), rng)
        for breakage in breakages:
            text = breakage(text, rng)
        answers.append((category, text))
    return answers


def run(quick: bool = False) -> dict[str, Any]:
    import json_repair

    import llmfix

    answers = make_answers()
    texts = [t for _, t in answers]

    def run_llmfix(texts: list[str] = texts) -> object:
        return [llmfix.repair(t) for t in texts]

    def run_json_repair(texts: list[str] = texts) -> object:
        return [json_repair.loads(t) for t in texts]

    budget = 1.0 if quick else 5.0
    total = compare(
        {"llmfix": run_llmfix, "json_repair": run_json_repair},
        budget=budget,
        min_rounds=2 if quick else 5,
        min_sample=0.0,
    )
    per_category = {}
    for category, _ in MIX:
        subset = [t for c, t in answers if c == category]

        def subset_llmfix(subset: list[str] = subset) -> object:
            return [llmfix.repair(t) for t in subset]

        def subset_json_repair(subset: list[str] = subset) -> object:
            return [json_repair.loads(t) for t in subset]

        timing = compare(
            {"llmfix": subset_llmfix, "json_repair": subset_json_repair},
            budget=0.2 if quick else 1.0,
            min_sample=0.01 if quick else 0.05,
            min_rounds=2 if quick else 3,
        )
        per_category[category] = (
            len(subset),
            sum(len(t.encode()) for t in subset) / len(subset),
            timing["llmfix"].best / len(subset),
            timing["json_repair"].best / len(subset),
        )
    statuses: dict[str, int] = {}
    for t in texts:
        status = str(llmfix.repair(t).status.value)
        statuses[status] = statuses.get(status, 0) + 1
    return {
        "count": len(texts),
        "mean_bytes": sum(len(t.encode()) for t in texts) / len(texts),
        "llmfix": total["llmfix"].best / len(texts),
        "json_repair": total["json_repair"].best / len(texts),
        "per_category": per_category,
        "statuses": statuses,
        "quick": quick,
    }


def summary(data: dict[str, Any]) -> list[list[str]]:
    ratio = data["llmfix"] / data["json_repair"]
    return [["broken mix vs json_repair", f"{ratio:.2f}× its time per answer", "none", "info"]]


def format_report(data: dict[str, Any]) -> str:
    rows = []
    for category, (n, size, ours, theirs) in data["per_category"].items():
        rows.append(
            [
                category,
                n,
                f"{size:.0f}",
                human_time(theirs),
                human_time(ours),
                f"{ours / theirs:.2f}×",
            ]
        )
    ours, theirs = data["llmfix"], data["json_repair"]
    rows.append(
        [
            "**all**",
            data["count"],
            f"{data['mean_bytes']:.0f}",
            human_time(theirs),
            human_time(ours),
            f"{ours / theirs:.2f}×",
        ]
    )
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(data["statuses"].items()))
    return "\n".join(
        [
            "### Broken LLM answers: `llmfix.repair(raw)` vs `json_repair.loads(raw)` "
            "(mean time per answer)",
            "",
            markdown_table(
                [
                    "category",
                    "answers",
                    "mean bytes",
                    "json_repair",
                    "llmfix",
                    "llmfix / json_repair",
                ],
                rows,
            ),
            "",
            f"llmfix statuses over the mix: {statuses}.",
        ]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats (noisier figures)")
    parser.add_argument("--show", type=int, metavar="N", help="print answer N of the mix and exit")
    args = parser.parse_args(argv)
    if args.show is not None:
        category, text = make_answers()[args.show]
        print(f"# {category}\n{text}")
        return
    print(format_report(run(quick=args.quick)))


if __name__ == "__main__":
    main()
