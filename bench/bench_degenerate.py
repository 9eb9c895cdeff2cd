"""Degenerate-answer checks (issue 35): what they add to `llmfix check`'s time.

Run: ``.venv/bin/python bench/bench_degenerate.py [--rows N] [--rounds R]``. Prints markdown.

The input is bench/bench_scale.py's mix (N answers of ≈ 1 KB: 80 % valid JSON objects, 15 %
repairable, 4 % invalid, 1 % prose) in one JSONL file. Two contenders, timed in this
process (CPU time of the process: with ``-j 1`` all the work is here, and the machine's other
load counts less), one after the other in each of R rounds, which goes first alternating:

- ``check``: ``llmfix check FILE --field text --schema S -f json -j 1`` through
  ``llmfix.run.check.run_check`` (reading, the pipeline, the gate, the summary, a JSON
  report), the degenerate checks on (the default);
- ``check, checks off``: the same with ``--disable-rule`` for each of the six checks (their
  walk is skipped; the hook returns at once).

The ratio of the two is the checks' share of `check`'s time; the target is ≤ 5 %. On a
shared machine one round's ratio moves by ±10 %: the figure is the median of the R rounds'
ratios (each round's pair run back to back), with the ratio of the best times beside it. A
third figure times the detection alone, which noise moves far less: ``degenerate()`` on
every answer's final value and text, over the check's time.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_scale import SCHEMA, answer

RULES = (
    "schema_echo",
    "placeholder",
    "repetition_loop",
    "whitespace_run",
    "all_empty",
    "repeated_elements",
)


def check(path: Path, schema: Path, off: bool) -> float:
    from llmfix.run.check import run_check
    from llmfix.run.settings import CheckFlags, build_run

    flags = CheckFlags(
        paths=(str(path),),
        schema=str(schema),
        field="text",
        jobs=1,
        format="json",
        use_config=False,
        progress=False,
        disable_rule=RULES if off else (),
        verbosity=-1,
    )
    run = build_run(flags)
    start = time.process_time()
    with contextlib.redirect_stderr(io.StringIO()):  # the summary a -f json run prints
        run_check(run, stdout=io.StringIO())
    return time.process_time() - start


def detection_alone(texts: list[str], schema: dict[str, object]) -> tuple[float, int]:
    """Seconds of ``degenerate()`` over every answer's value (read once, beforehand)."""
    import llmfix
    from llmfix.options import Degenerate
    from llmfix.pipeline.degenerate import degenerate

    values = [(llmfix.repair(t, schema).value, t) for t in texts]
    options = Degenerate()
    start = time.process_time()
    found = sum(len(degenerate(v, t, schema, options)) for v, t in values)
    return time.process_time() - start, found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(15)
    texts = [answer(i, rng) for i in range(args.rows)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        log, schema = root / "mix.jsonl", root / "schema.json"
        log.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
        schema.write_text(json.dumps(SCHEMA))
        check(log, schema, False)  # warm: imports, the schema's compiled plan
        on, off = [], []
        for n in range(args.rounds):
            if n % 2:
                off.append(check(log, schema, True))
                on.append(check(log, schema, False))
            else:
                on.append(check(log, schema, False))
                off.append(check(log, schema, True))
        alone, found = detection_alone(texts, SCHEMA)
    best_on, best_off = min(on), min(off)
    ratios = sorted(a / b for a, b in zip(on, off, strict=True))
    median = (
        ratios[len(ratios) // 2] if len(ratios) % 2 else sum(ratios[len(ratios) // 2 - 1 :][:2]) / 2
    )
    print(f"{args.rows:,} answers of bench_scale's mix, -j 1, best of {args.rounds} rounds\n")
    print("| contender | CPU seconds | per answer | vs checks off |")
    print("|---|---:|---:|---:|")
    for name, best in (("check (checks on, default)", best_on), ("check, checks off", best_off)):
        per = best / args.rows * 1e6
        print(f"| {name} | {best:.3f} | {per:.0f} µs | {best / best_off:.3f}× |")
    print(
        f"\nmedian of the rounds' ratios (checks on / off): {median:.3f}× "
        f"(from {ratios[0]:.3f}× to {ratios[-1]:.3f}×)"
    )
    print(
        f"detection alone: {alone:.3f} s ({alone / args.rows * 1e6:.1f} µs per answer, "
        f"{100 * alone / best_on:.1f} % of check's time); warnings found: {found}"
    )


if __name__ == "__main__":
    main()
