"""Ray Data: check a dataset's answers inside the pipeline that produced them.

::

    import ray
    from llmfix.engines.ray import check_dataset, summarize

    checked = check_dataset(ds, "generated_text", schema={"type": "object"})
    checked.write_parquet("checked/")
    summary = summarize(checked)  # {"items": ..., "status": {...}, "parse_rate": ..., ...}

:class:`RayChecker` is the callable class ``Dataset.map_batches`` runs on each actor (the
schema compiled once, in ``__init__``); it adds the columns of :mod:`llmfix.batch.columns`.
:func:`run_job` is what ``llmfix check --engine ray`` runs. Importing this module imports
Ray.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import ray

from llmfix.batch.columns import ColumnChecker, merge_summaries, partial_summary
from llmfix.engines import check_unit

if TYPE_CHECKING:
    from llmfix.engines import Job

__all__ = [
    "RayChecker",
    "check_dataset",
    "summarize",
]


class RayChecker(ColumnChecker):
    """A :class:`~llmfix.batch.columns.ColumnChecker` for
    ``map_batches(..., batch_format="pyarrow")``."""


def check_dataset(
    ds: Any,
    column: str = "text",
    schema: Any = None,
    *,
    concurrency: int | tuple[int, int] = 1,
    **options: Any,
) -> Any:
    """``ds`` with the result columns added (lazy, like Ray Data).

    ``concurrency`` is the number of checker actors (or a ``(min, max)`` range to
    autoscale); each holds one CPU, so leave CPUs for the stages that feed it.
    """
    kwargs = {"column": column, "schema": schema, **options}
    return ds.map_batches(
        RayChecker,
        fn_constructor_kwargs=kwargs,
        batch_format="pyarrow",
        concurrency=concurrency,
    )


def _partial(batch: pa.Table) -> pa.Table:
    import json

    return pa.table({"part": [json.dumps(partial_summary(batch))]})


def summarize(ds: Any) -> dict[str, Any]:
    """The summary of a checked dataset: per-block counts, merged on the driver."""
    import json

    parts = ds.select_columns(["status", "error_codes", "repairs"]).map_batches(
        _partial, batch_format="pyarrow"
    )
    return merge_summaries(json.loads(row["part"]) for row in parts.take_all())


def _check_units(batch: pa.Table, job: Job) -> pa.Table:
    blobs = [blob for i in batch.column("unit").to_pylist() for blob in check_unit(job, i)]
    return pa.table({"outcome": pa.array(blobs, pa.binary())})


def run_job(job: Job, workers: int) -> Iterator[bytes]:
    """Check a job's units as Ray tasks, one unit each; pickled outcomes in input order.

    Joins the running Ray instance (``ray.init`` already called, or ``RAY_ADDRESS`` set),
    or starts a local one with ``workers`` CPUs (all when 0) and stops it at the end.
    """
    started = not ray.is_initialized()
    if started:  # our own Ray: its progress notes would bury the summary
        logging.getLogger("ray").setLevel(logging.ERROR)
        if os.environ.get("RAY_ADDRESS"):
            ray.init(logging_level=logging.WARNING, log_to_driver=False)
        else:
            ray.init(
                num_cpus=workers or None,
                include_dashboard=False,
                logging_level=logging.WARNING,
                log_to_driver=False,
            )
    try:
        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True
        context.enable_progress_bars = False
        units = ray.data.from_items(
            [{"unit": i} for i in range(len(job.units))],
            override_num_blocks=max(1, len(job.units)),
        )
        checked = units.map_batches(
            _check_units, fn_kwargs={"job": job}, batch_size=1, batch_format="pyarrow"
        )
        for batch in checked.iter_batches(batch_size=None, batch_format="pyarrow"):
            yield from batch.column("outcome").to_pylist()
    finally:
        if started:
            ray.shutdown()
