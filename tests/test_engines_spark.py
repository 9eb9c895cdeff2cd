"""`llmfix check --engine spark` and llmfix.engines.spark against a real Spark (local[2]).

One SparkSession serves the module; the CLI joins it. Needs Java 17+ (skipped, saying
so, when there is none) and PYSPARK_PYTHON pointing at this Python (set here).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow", reason="engine tests need pyarrow (llmfix[spark])")
pytest.importorskip("pyspark", reason="Spark tests need llmfix[spark]")
if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
    pytest.skip("Spark tests need Java 17+: no java on PATH, no JAVA_HOME", allow_module_level=True)

from llmfix.batch.columns import ColumnChecker, merge_summaries, partial_summary
from tests.scale_fixture import (
    EXPECTED_STATUS,
    SCHEMA,
    answer,
    comparable,
    docs_example,
    run,
    write_fixture,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def spark() -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("llmfix tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def runs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("spark")
    write_fixture(root)
    local = run(root, "-j", "1")
    engine = run(
        root, "--engine", "spark", "--results", str(root / "results"), "--results-format", "jsonl"
    )
    return {"root": root, "local": local, "spark": engine}


def test_spark_gives_what_local_check_gives(runs: dict[str, Any]) -> None:
    (local_code, local), (spark_code, on_spark) = runs["local"], runs["spark"]
    assert (spark_code, local_code) == (1, 1)
    assert comparable(on_spark) == comparable(local)
    statuses = Counter(i["status"] for i in on_spark["items"] if i["source"].endswith("s.jsonl"))
    assert statuses == Counter(EXPECTED_STATUS)


def test_results_are_jsonl_rows_in_item_order(runs: dict[str, Any]) -> None:
    import json

    _, report = runs["spark"]
    parts = sorted((runs["root"] / "results").glob("part-*.jsonl"))
    rows = [json.loads(line) for p in parts for line in p.read_text().splitlines()]
    assert [(r["id"], r["status"]) for r in rows] == [
        (i["id"], i["status"]) for i in report["items"]
    ]
    broken = next(r for r in rows if Path(r["source"]).name == "broken.parquet")
    assert broken["error_codes"] == ["input.unreadable"]


def test_check_dataframe_and_the_summary_aggregation(spark: Any) -> None:
    import pyarrow as pa

    from llmfix.engines.spark import check_dataframe, summarize

    texts = [answer(i) for i in range(64)]
    frame = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "n long, response string")
    checked = check_dataframe(frame.repartition(3), "response", SCHEMA, max_item_size=5000)
    got = {row["n"]: row["status"] for row in checked.select("n", "status").collect()}
    table = pa.table({"response": texts})
    expected = ColumnChecker("response", SCHEMA, max_item_size=5000)(table)
    assert [got[i] for i in range(64)] == expected.column("status").to_pylist()
    assert summarize(checked) == merge_summaries([partial_summary(expected)])


def test_the_docs_example_runs_as_written(spark: Any) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(docs_example("spark"), "docs/guide/scale-out.md", "exec"), namespace)
    rows = namespace["checked"].select("id", "status", "error_codes").collect()
    assert sorted((r["id"], r["status"], r["error_codes"]) for r in rows) == [
        (1, "valid", []),
        (2, "repaired", []),
        (3, "error", ["input.missing_field"]),
    ]
