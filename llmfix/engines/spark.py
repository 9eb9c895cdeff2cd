"""Spark: a column-in, columns-out step for DataFrames, and the summary as an aggregation.

::

    from llmfix.engines.spark import check_dataframe, summarize

    checked = check_dataframe(df, "response", schema={"type": "object"})
    checked.write.parquet("checked/")
    summary = summarize(checked)  # {"items": ..., "status": {...}, "parse_rate": ..., ...}

:func:`check_dataframe` adds the columns of :mod:`llmfix.batch.columns` through ``mapInArrow``;
each Python worker compiles the schema once (the checker is cached per worker process).
:func:`run_job` is what ``llmfix check --engine spark`` runs. Workers run the Python that
runs this (``PYSPARK_PYTHON`` is set to it unless already set). Importing this module
imports PySpark.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, LongType, StringType, StructField, StructType

from llmfix.batch.columns import ColumnChecker, merge_summaries
from llmfix.engines import check_unit
from llmfix.errors import ConfigError

if TYPE_CHECKING:
    from llmfix.engines import Job

__all__ = [
    "check_dataframe",
    "summarize",
    "summary_frame",
]

_CHECKERS: dict[str, ColumnChecker] = {}

RESULT_FIELDS = (
    StructField("status", StringType()),
    StructField("value", StringType()),
    StructField("risk", StringType()),
    StructField("error_codes", ArrayType(StringType())),
    StructField("diagnostics", StringType()),
    StructField("repairs", LongType()),
)


def _checker(spec: dict[str, Any]) -> ColumnChecker:
    key = json.dumps(spec, sort_keys=True, default=repr)
    if key not in _CHECKERS:
        _CHECKERS[key] = ColumnChecker(**spec)
    return _CHECKERS[key]


def check_dataframe(
    df: DataFrame, column: str = "text", schema: Any = None, **options: Any
) -> DataFrame:
    """``df`` with the result columns added (``mapInArrow``; lazy, like any transformation)."""
    spec = {"column": column, "schema": schema, **options}
    _checker(spec)  # a bad schema or option fails here, on the driver, not in a task
    out = StructType([*df.schema.fields, *RESULT_FIELDS])

    def check(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        checker = _checker(spec)
        for batch in batches:
            yield checker(batch)

    return df.mapInArrow(check, out)


def summary_frame(df: DataFrame) -> DataFrame:
    """Items and repairs per status: a DataFrame aggregation over a checked DataFrame."""
    return df.groupBy("status").agg(
        F.count(F.lit(1)).alias("items"), F.sum("repairs").alias("repairs")
    )


def summarize(df: DataFrame) -> dict[str, Any]:
    """The summary of a checked DataFrame (as :func:`llmfix.batch.columns.merge_summaries`)."""
    parts: list[dict[str, Any]] = [
        {"status": {row["status"]: row["items"]}, "repairs": row["repairs"]}
        for row in summary_frame(df).collect()
    ]
    codes = df.select(F.explode("error_codes").alias("code")).groupBy("code").count()
    parts.append({"errors": {row["code"]: row["count"] for row in codes.collect()}})
    return merge_summaries(parts)


def session(workers: int) -> tuple[SparkSession, bool]:
    """The active session, or a new local one with ``workers`` cores (True: we started it)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise ConfigError("--engine spark needs Java 17 or later (no java on PATH, no JAVA_HOME)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    master = os.environ.get("LLMFIX_SPARK_MASTER") or f"local[{workers or '*'}]"
    spark = (
        SparkSession.builder.master(master)
        .appName("llmfix check")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


def run_job(job: Job, workers: int) -> Iterator[bytes]:
    """Check a job's units as Spark tasks, one partition each; pickled outcomes in order.

    Units go in waves of two per core: each wave is one Spark job whose partitions run
    in parallel, and its results are collected in partition order, so the driver holds
    one wave at a time.
    """
    spark, started = session(workers)
    try:
        context = spark.sparkContext
        shared = context.broadcast(job)  # read once per Python worker, not per task

        def check(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                for index in batch.column(0).to_pylist():
                    blobs = check_unit(shared.value, index)
                    yield pa.RecordBatch.from_pydict({"outcome": pa.array(blobs, pa.binary())})

        wave = 2 * max(1, context.defaultParallelism)
        for start in range(0, len(job.units), wave):
            indices = [(i,) for i in range(start, min(len(job.units), start + wave))]
            units = spark.createDataFrame(context.parallelize(indices, len(indices)), "unit long")
            for row in units.mapInArrow(check, "outcome binary").collect():
                yield bytes(row["outcome"])
    finally:
        if started:
            spark.stop()
