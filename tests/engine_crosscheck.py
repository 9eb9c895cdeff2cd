"""Cross-check llmfix's own repair parser against json-repair, case by case.

    python -m tests.engine_crosscheck            # the summary and every disagreement
    python -m tests.engine_crosscheck --write    # record the current verdicts

Both engines read the same inputs: every case of the two repair corpora
(``tests/corpora/jsonrepair.jsonl`` and ``json_repair.jsonl``, without the schema and
option-dependent ones) and a generated set of typical model breakage with a known answer
(valid JSON rendered with trailing commas, single quotes, unquoted keys, Python literals,
comments, missing commas between lines, a fence and prose around it).

Where both succeed and their values differ, the verdict names the reading that is right:
the one matching the case's expected value, except where llmfix differs on purpose from
a json_repair expectation; then ``scripts/parser_conformance.py`` (``DIFFERENCES``) gives
the reason, and a reason that is not a "known gap" makes llmfix's reading the right one.
``tests/engine_crosscheck.json`` records every verdict, and
``tests/test_engine_crosscheck.py`` fails when a disagreement appears, disappears or
changes side, so a change in either engine is seen and judged.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmfix.repair_parser import repair_parse
from tests.conformance import same_json

HERE = Path(__file__).resolve().parent
CORPORA = HERE / "corpora"
RECORD = HERE / "engine_crosscheck.json"
_SKIP_OPTIONS = {"strict", "schema_repair_mode", "stream_stable", "ensure_ascii"}


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    expected: Any  # the right value; a must-fail corpus case has none and is skipped


@dataclass(frozen=True)
class Disagreement:
    case: Case
    ours: Any
    theirs: Any

    @property
    def right(self) -> str:
        if same_json(self.ours, self.case.expected):
            return "llmfix"
        if same_json(self.theirs, self.case.expected):
            reason = _differences().get(self.case.id, "")
            if reason and not reason.startswith("known gap"):
                return "llmfix (deliberate)"
            return "json-repair"
        return "neither"


@functools.cache
def _differences() -> dict[str, str]:
    """Why the parser differs from a corpus expectation (scripts/parser_conformance.py)."""
    path = HERE.parent / "scripts" / "parser_conformance.py"
    spec = importlib.util.spec_from_file_location("parser_conformance", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.DIFFERENCES)


def corpus_cases() -> Iterator[Case]:
    for name in ("jsonrepair", "json_repair"):
        with (CORPORA / f"{name}.jsonl").open(encoding="utf-8") as handle:
            for line in handle:
                case = json.loads(line)
                options = case.get("options") or {}
                if case["category"].endswith("must_fail") or case.get("schema") is not None:
                    continue
                if _SKIP_OPTIONS & set(options):
                    continue
                yield Case(case["id"], case["input"], case["expected"])


# -- generated breakage ------------------------------------------------------------------

_WORDS = ["alpha", "beta", "it's", 'say "hi"', "C:\\temp", "naïve", "a, b", "x: y", "", "{a}"]
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*\Z")


def _value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice(_WORDS)
    if kind == 1:
        return rng.choice([0, 7, -3, 12.5, 1e-3, 100000])
    if kind == 2:
        return rng.choice([True, False, None])
    if kind in (3, 4):
        return rng.choice(_WORDS) + str(rng.randrange(100))
    if kind in (5, 6):
        keys = ["id", "name", "items", "note", "value_2", "first name", "tags"]
        return {k: _value(rng, depth + 1) for k in rng.sample(keys, rng.randrange(1, 5))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]


def _string(text: str, quote: str) -> str:
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    if quote == "'":
        body = body.replace('\\"', '"').replace("'", "\\'")
    return quote + body + quote


def render(value: Any, style: frozenset[str]) -> str:
    """``value`` as a model might write it, in the given breakage ``style``."""
    quote = "'" if "single_quotes" in style else '"'
    comma = "," if "trailing_commas" in style else ""
    sep = "\n" if "missing_commas" in style else ", "
    if isinstance(value, bool) or value is None:
        if "python_literals" in style:
            return {True: "True", False: "False", None: "None"}[value]
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):
        return _string(value, quote)
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[" + sep.join(render(v, style) for v in value) + comma + "]"
    if not value:
        return "{}"
    parts = []
    for key, item in value.items():
        unquoted = "unquoted_keys" in style and _IDENTIFIER.match(key)
        name = key if unquoted else _string(key, quote)
        note = "  // a note\n  " if "comments" in style else ""
        parts.append(f"{note}{name}: {render(item, style)}")
    return "{" + sep.join(parts) + comma + "}"


STYLES = [
    "trailing_commas",
    "single_quotes",
    "unquoted_keys",
    "python_literals",
    "comments",
    "missing_commas",
]


def generated_cases(count: int = 300, seed: int = 7) -> Iterator[Case]:
    rng = random.Random(seed)
    for n in range(count):
        value = {"answer": _value(rng, 0), "n": n}
        style = frozenset(s for s in STYLES if rng.random() < 0.4)
        text = render(value, style)
        if rng.random() < 0.3:
            text = f"Here is the result:\n```json\n{text}\n```\nLet me know if you need more."
        yield Case(f"generated-{n:03d}", text, value)


# -- the comparison ----------------------------------------------------------------------


def disagreements() -> tuple[int, int, list[Disagreement]]:
    """How many inputs, how many both engines read, and where they differ."""
    from json_repair import repair_json

    inputs = both = 0
    found = []
    for case in [*corpus_cases(), *generated_cases()]:
        inputs += 1
        ours = repair_parse(case.text)
        try:
            theirs = repair_json(case.text, return_objects=True, skip_json_loads=True)
        except Exception:  # json-repair's own failure: nothing to compare
            continue
        if not ours.ok or theirs == "":
            continue
        both += 1
        if not same_json(ours.value, theirs):
            found.append(Disagreement(case, ours.value, theirs))
    return inputs, both, found


def generated_scores() -> dict[str, int]:
    """How many generated cases each engine reads to exactly the intended value."""
    from json_repair import repair_json

    scores = {"cases": 0, "llmfix": 0, "json-repair": 0}
    for case in generated_cases():
        ours = repair_parse(case.text)
        theirs = repair_json(case.text, return_objects=True, skip_json_loads=True)
        scores["cases"] += 1
        scores["llmfix"] += ours.ok and same_json(ours.value, case.expected)
        scores["json-repair"] += same_json(theirs, case.expected)
    return scores


def verdicts(found: list[Disagreement]) -> dict[str, str]:
    return {d.case.id: d.right for d in found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="record the current verdicts")
    args = parser.parse_args(argv)
    inputs, both, found = disagreements()
    tally = Counter(d.right for d in found)
    generated = sum(d.case.id.startswith("generated-") for d in found)
    print(f"{inputs} inputs, both engines read {both}, they disagree on {len(found)}")
    print(f"  right: {', '.join(f'{k} {v}' for k, v in tally.most_common())}")
    print(f"  generated typical breakage: {generated} of the disagreements")
    scores = generated_scores()
    print(
        f"  generated typical breakage read right: llmfix {scores['llmfix']}/{scores['cases']}, "
        f"json-repair {scores['json-repair']}/{scores['cases']}"
    )
    for d in found:
        print(f"{d.case.id:18} right={d.right:12} {d.case.text[:60]!r}")
        print(f"{'':18} llmfix:      {json.dumps(d.ours)[:100]}")
        print(f"{'':18} json-repair: {json.dumps(d.theirs)[:100]}")
    if args.write:
        RECORD.write_text(json.dumps(verdicts(found), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
