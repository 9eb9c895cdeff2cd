"""Compare the compiled validator (jsonschema-rs) with jsonschema on real-world schemas.

    .venv/bin/python scripts/validator_crosscheck.py               # all 2,000 schemas
    .venv/bin/python scripts/validator_crosscheck.py --limit 200   # a deterministic sample
    .venv/bin/python scripts/validator_crosscheck.py --generated 3 # plus hypothesis instances

llmfix asks jsonschema-rs only whether a value is valid; a "no" goes to jsonschema, which
writes every diagnostic. So the one disagreement that would change what users see is
jsonschema-rs calling valid what jsonschema calls invalid ("rs too lenient"): it must be 0.
The other direction costs only time (jsonschema is asked as well, and decides).

Instances per schema: fixed probes, a skeleton built from the schema's shape, simple
mutations of it (numbers as strings, keys upper-cased, an extra key, booleans as strings),
and optionally instances from hypothesis-jsonschema. ``tests/test_validate.py`` runs a sample.

``--dump FILE`` also writes, per (schema, instance), every diagnostic ``SchemaValidator.errors``
gives and what ``coerce_to_schema`` returns, as JSON lines: two dumps taken before and after a
change to validation or schema repair are identical when it kept every message, pointer,
patch and repaired value (``cmp before.jsonl after.jsonl``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from llmfix.errors import SchemaError
from llmfix.schema.fast import fast_is_valid
from llmfix.schema.load import load_schema
from llmfix.schema.repair import coerce_to_schema
from llmfix.schema.validate import SchemaValidator

PROBES: list[Any] = [None, True, 0, -1, 1.5, "", "x", [], {}, [1, "a"], {"a": 1}]


def _corpus_script() -> ModuleType:
    path = Path(__file__).resolve().parent / "schema_corpus.py"
    spec = importlib.util.spec_from_file_location("schema_corpus", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("schema_corpus", module)
    spec.loader.exec_module(module)
    return module


@dataclass
class CrossCheck:
    schemas: int = 0
    served: int = 0  # schemas jsonschema-rs compiled
    not_compiled: int = 0  # schemas llmfix itself rejects
    instances: int = 0
    agree: int = 0
    rs_stricter: int = 0  # rs "invalid", jsonschema "valid": jsonschema decides; only time
    rs_too_lenient: list[tuple[str, str]] = field(default_factory=list)  # must stay empty
    deferred: int = 0  # schemas whose jsonschema compile waits for the first invalid value
    # Deferred schemas that jsonschema's meta-schema check rejects: must stay empty (their
    # error would show at the first invalid value instead of at load).
    deferred_but_rejected: list[str] = field(default_factory=list)


def instances_for(schema: Any, corpus: ModuleType, generated: int) -> list[Any]:
    shape = corpus.skeleton(schema)
    found = [*PROBES, shape, *corpus.mutations(shape)]
    if generated:
        found += corpus.generate(schema, generated)
    return found


def _dump_line(name: str, validator: SchemaValidator, instance: Any) -> str:
    try:
        errors: Any = [d.to_dict() for d in validator.errors(instance)]
    except SchemaError as error:
        errors = f"SchemaError: {error}"
    outcome = coerce_to_schema(instance, validator.schema)
    repaired = [outcome.value, [op.to_dict() for op in outcome.patch]]
    repaired.append([d.to_dict() for d in outcome.diagnostics])
    record = {"schema": name, "instance": instance, "errors": errors, "repair": repaired}
    return json.dumps(record, sort_keys=True, default=repr) + "\n"


def cross_check(files: list[Path], generated: int = 0, dump: TextIO | None = None) -> CrossCheck:
    corpus = _corpus_script()
    if generated:
        corpus.install_hypothesis_jsonschema_shim()
    report = CrossCheck()
    for path in files:
        report.schemas += 1
        try:
            validator = SchemaValidator(load_schema(str(path)))
        except SchemaError as error:
            report.not_compiled += 1
            if dump is not None:
                dump.write(json.dumps({"schema": path.name, "rejected": str(error)}) + "\n")
            continue
        if dump is not None:
            for instance in instances_for(validator.schema, corpus, generated):
                dump.write(_dump_line(path.name, validator, instance))
        fast = validator._fast
        if fast is None:
            continue
        report.served += 1
        if validator._compiled is None:
            report.deferred += 1
        try:
            slow = validator._validator
        except SchemaError:
            report.deferred_but_rejected.append(path.name)
            continue
        for instance in instances_for(validator.schema, corpus, generated):
            try:
                expected = bool(slow.is_valid(instance))
            except Exception:  # jsonschema itself fails on it: not a comparison
                continue
            report.instances += 1
            got = fast_is_valid(fast, instance)
            if got == expected:
                report.agree += 1
            elif expected:
                report.rs_stricter += 1
            else:
                report.rs_too_lenient.append((path.name, json.dumps(instance)[:200]))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="a deterministic sample")
    parser.add_argument("--generated", type=int, default=0, help="hypothesis instances each")
    parser.add_argument("--dump", type=Path, help="write every diagnostic and repair here")
    args = parser.parse_args(argv)
    corpus = _corpus_script()
    files = corpus.schema_files()
    if args.limit:
        files = corpus.sample_files(files, args.limit)
    started = time.perf_counter()
    if args.dump is not None:
        with args.dump.open("w", encoding="utf-8") as dump:
            report = cross_check(files, args.generated, dump)
    else:
        report = cross_check(files, args.generated)
    seconds = time.perf_counter() - started
    print(
        f"{report.schemas} schemas ({report.not_compiled} rejected by llmfix), "
        f"{report.served} served by jsonschema-rs; {report.instances} instances: "
        f"{report.agree} agree, {report.rs_stricter} rs stricter (jsonschema decides), "
        f"{len(report.rs_too_lenient)} rs too lenient; {report.deferred} schemas compiled by "
        f"jsonschema only on demand, {len(report.deferred_but_rejected)} of them rejected "
        f"then; {seconds:.1f} s"
    )
    for name in report.deferred_but_rejected[:20]:
        print(f"  deferred but rejected: {name}")
    for name, instance in report.rs_too_lenient[:20]:
        print(f"  too lenient: {name}: {instance}")
    return 1 if report.rs_too_lenient or report.deferred_but_rejected else 0


if __name__ == "__main__":
    raise SystemExit(main())
