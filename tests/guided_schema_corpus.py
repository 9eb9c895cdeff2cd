"""The 2,000-schema run through the whole pipeline, with the schema-guided readings on.

Run ``python -m tests.guided_schema_corpus [--limit N] [--generate]`` from the repository root.
For every JSONSchemaBench schema (``../shared/corpora/schemas``, or the sample in
``tests/corpora/schemas``) it builds instances the way ``scripts/schema_corpus.py`` does (the
schema's skeleton, fixed probes, with ``--generate`` a few hypothesis-jsonschema instances) and
checks, through ``llmfix.repair(text, schema=…)``:

- every schema-valid instance, given as JSON text and as a fenced block in prose, comes back
  equal (``changed`` must be 0);
- invalid instances and their mutations, with words after them (so that the guided readings
  run), never raise (``exceptions`` must be 0); ``guided`` counts those a reading was used for.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

import llmfix
from llmfix.schema.walk import json_equal

ROOT = Path(__file__).resolve().parent.parent


def _schema_corpus() -> Any:
    spec = importlib.util.spec_from_file_location(
        "schema_corpus", ROOT / "scripts" / "schema_corpus.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("schema_corpus", module)
    spec.loader.exec_module(module)
    return module


def run(limit: int | None, generate: bool) -> dict[str, Any]:
    import jsonschema

    sc = _schema_corpus()
    directory = sc.SCHEMA_DIR if sc.SCHEMA_DIR.is_dir() else ROOT / "tests" / "corpora" / "schemas"
    files = sc.schema_files(directory)
    if limit is not None:
        files = sc.sample_files(files, limit)
    stats: dict[str, Any] = dict.fromkeys(
        ("schemas", "valid_instances", "changed", "exceptions", "invalid_inputs", "guided"), 0
    )
    examples: list[str] = []
    for path in files:
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
            checker = jsonschema.validators.validator_for(schema)(schema)
        except Exception:  # a schema the validator library cannot load is not ours to judge
            continue
        stats["schemas"] += 1
        instances = [*sc.PROBES]
        with contextlib.suppress(Exception):
            instances.insert(0, sc.skeleton(schema))
        if generate:
            instances += sc._generate_with_timeout(schema, 2, 1.0)
        for instance in instances:
            try:
                valid = checker.is_valid(instance)
            except Exception:
                continue
            if valid:
                stats["valid_instances"] += 1
                texts = [
                    json.dumps(instance),
                    f"Here:\n```json\n{json.dumps(instance, indent=2)}\n```",
                ]
                for text in texts:
                    _check(path.name, text, schema, instance, stats, examples)
            else:
                for mutated in [instance, *sc.mutations(instance)[:3]]:
                    stats["invalid_inputs"] += 1
                    _check(
                        path.name,
                        json.dumps(mutated) + " and more words",
                        schema,
                        None,
                        stats,
                        examples,
                    )
    stats["examples"] = examples[:20]
    return stats


def _check(
    name: str, text: str, schema: Any, want: Any, stats: dict[str, Any], examples: list[str]
) -> None:
    try:
        result = llmfix.repair(text, schema=schema)
    except llmfix.LlmfixError:
        return
    except Exception as exc:  # what this run is here to find
        stats["exceptions"] += 1
        examples.append(f"{name}: {exc!r}"[:300])
        return
    if want is None:
        stats["guided"] += any(d.stage == "guided" for d in result.diagnostics)
    elif not (result.ok and json_equal(result.value, want)):
        stats["changed"] += 1
        examples.append(f"{name}: {text[:100]!r} → {result.status.value} {result.value!r}"[:300])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.guided_schema_corpus", description=__doc__
    )
    parser.add_argument("--limit", type=int, help="a deterministic sample of N schemas")
    parser.add_argument("--generate", action="store_true", help="add hypothesis instances")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    stats = run(args.limit, args.generate)
    examples = stats.pop("examples")
    print(json.dumps(stats), f"{time.perf_counter() - start:.0f} s")
    for line in examples:
        print(line)
    return 1 if stats["changed"] or stats["exceptions"] else 0


if __name__ == "__main__":
    sys.exit(main())
