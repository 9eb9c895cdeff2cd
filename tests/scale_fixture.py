"""The fixture the engine tests share: 2,000 answers as JSONL and as Parquet, plus bad files.

Rows cycle through eight kinds: clean, fenced with Python quotes (repaired), a string age
(repaired), a missing required field (invalid), a refusal (refused), a null text, an answer
over ``--max-item-size`` and an empty answer. :func:`run` runs ``llmfix check`` in this
process (so a test module's Ray or Spark session is the one used) and returns the JSON
report; :func:`comparable` drops what differs between any two runs (timings).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from llmfix.cli import app

ROWS = 2000
MAX_ITEM_SIZE = "5000"
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
# Per copy (JSONL or Parquet): a null text is read as the JSON text "null" (as check reads
# a JSONL field), which parses but is not an object; an answer over the size limit is an
# error row; "" is unparseable, a refusal in words refused.
EXPECTED_STATUS = {
    "valid": 250,
    "repaired": 500,
    "invalid": 500,
    "refused": 250,
    "unparseable": 250,
    "error": 250,
}


def answer(i: int) -> str | None:
    kind = i % 8
    if kind == 0:
        return json.dumps({"name": f"p{i}", "age": i % 90})
    if kind == 1:
        return f"Sure!\n```json\n{{'name': 'p{i}', 'age': {i % 90},}}\n```"
    if kind == 2:
        return json.dumps({"name": f"p{i}", "age": str(i % 90)})
    if kind == 3:
        return json.dumps({"name": f"p{i}"})
    if kind == 4:
        return f"I am sorry, I cannot help with request {i}."
    if kind == 5:
        return None
    if kind == 6:
        return "x" * 6000
    return ""


def write_fixture(root: Path) -> Path:
    """``root/answers/{answers.jsonl, answers.parquet, torn.jsonl, broken.parquet}``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = root / "answers"
    data.mkdir(parents=True)
    rows = [{"n": i, "model": f"m{i % 3}", "text": answer(i)} for i in range(ROWS)]
    with (data / "answers.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(row) + "\n" for row in rows)
    pq.write_table(pa.Table.from_pylist(rows), data / "answers.parquet", row_group_size=500)
    torn = json.dumps({"n": 0, "text": answer(0)}) + "\n" + '{"n": 1, "text": "cut\n'
    (data / "torn.jsonl").write_text(torn, encoding="utf-8")
    (data / "broken.parquet").write_bytes(b"PAR1 this is not a parquet file")
    (root / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    return data


def run(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """``llmfix check answers --field text --group-by model ...`` → (exit code, JSON report)."""
    report = root / f"report-{len(list(root.glob('report-*')))}.json"
    argv = ["check", str(root / "answers"), "--schema", str(root / "schema.json")]
    argv += ["--field", "text", "--group-by", "model", "--max-item-size", MAX_ITEM_SIZE]
    argv += ["--no-config", "--no-progress", "-q", "-f", "json", "-o", str(report), *args]
    result = CliRunner().invoke(app, argv)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(report.read_text(encoding="utf-8"))


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """The report without wall-clock figures, which no two runs share."""
    summary = {k: v for k, v in report["summary"].items() if k not in ("seconds", "finished")}
    items = [{k: v for k, v in item.items() if k != "timings"} for item in report["items"]]
    return {"summary": summary, "items": items}


def docs_example(engine: str) -> str:
    """The Python example of docs/guide/scale-out.md that imports ``llmfix.engines.<engine>``
    (the docs' example runner leaves it to the engine's tests, which have a session)."""
    page = Path(__file__).resolve().parent.parent / "docs" / "guide" / "scale-out.md"
    text = page.read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```python\n")[1:]]
    return next(b for b in blocks if f"llmfix.engines.{engine} import" in b)
