"""Running `llmfix check` on an engine: Ray Data or Spark, in place of the local pool.

The work is cut into :class:`Unit` s — a Parquet row group, or a whole file of any other
kind — and each engine task reads its units with :mod:`llmfix.inputs` and checks their
items with :mod:`llmfix.batch.columns`, exactly as the local run does, so item ids, statuses
and diagnostics are the same whichever engine ran them. Each checked item comes back to
the driver as one pickled :class:`~llmfix.batch.core.Outcome` (its parsed record left out), in
input order, and the CLI gives it to the same gates, summary and reporters as a local
run. The engine modules are imported only when an engine is asked for.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from llmfix.batch.columns import check_items
from llmfix.errors import ConfigError
from llmfix.inputs import PARQUET_SUFFIXES, items_from_file, parquet_items
from llmfix.inputs.jsonl import open_parquet

if TYPE_CHECKING:
    from llmfix.batch.core import BatchLimits, Outcome, Profile
    from llmfix.files.read import Within
    from llmfix.inputs import ReadOptions

ENGINES: tuple[str, ...] = ("local", "ray", "spark")


@dataclass(frozen=True)
class Unit:
    """One engine task's share of the input: a file, or one row group of a Parquet file."""

    path: str
    profile: str = ""  # the ``checks`` rule whose schema applies ("" for the run's own)
    row_group: int | None = None
    within: Within | None = None  # where discovery listed the file (see Within)


@dataclass(frozen=True)
class Job:
    """Everything a worker needs, shipped once per task: units, readers, profiles, limits."""

    units: tuple[Unit, ...]
    readers: Mapping[str, ReadOptions]
    profiles: Mapping[str, Profile]
    limits: BatchLimits


def plan_units(
    files: Iterable[tuple[str, str]], within: Mapping[str, Within] | None = None
) -> list[Unit]:
    """Units for ``(path, profile)`` pairs: Parquet files split by row group; each file
    read where discovery listed it (``within``, by path)."""
    within = within or {}
    units: list[Unit] = []
    for path, profile in files:
        if path == "-":
            raise ConfigError("--engine ray|spark reads files, not stdin")
        rule = within.get(path)
        groups = _row_groups(path, rule) if path.lower().endswith(PARQUET_SUFFIXES) else 0
        if groups > 1:
            units.extend(Unit(path, profile, g, rule) for g in range(groups))
        else:
            units.append(Unit(path, profile, within=rule))
    return units


def _row_groups(path: str, within: Within | None = None) -> int:
    try:
        file = open_parquet(path, within)
        try:
            return int(file.num_row_groups)
        finally:
            file.close(force=True)
    except Exception:  # unreadable or no pyarrow: one unit, whose read reports the problem
        return 0


def check_unit(job: Job, index: int) -> list[bytes]:
    """Check one unit (on a worker): one pickled outcome per item, in order."""
    unit = job.units[index]
    reader = job.readers[unit.profile]
    if unit.row_group is None:
        items = items_from_file(unit.path, reader, unit.profile, unit.within)
    else:
        found = parquet_items(unit.path, reader, unit.row_group, unit.within)
        items = (replace(i, profile=unit.profile) for i in found) if unit.profile else found
    return [
        pickle.dumps(_shipped(o), protocol=pickle.HIGHEST_PROTOCOL)
        for o in check_items(items, job.profiles, job.limits)
    ]


def _shipped(outcome: Outcome) -> Outcome:
    # The parsed record is only for --write-fixed, which engine runs do not offer.
    return replace(outcome, item=replace(outcome.item, record=None))


def run_engine(engine: str, job: Job, workers: int) -> Iterator[Outcome]:
    """Every item's outcome, in input order, checked on ``engine`` (``ray`` or ``spark``)."""
    import importlib

    if engine not in ENGINES[1:]:
        raise ConfigError(f"--engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if not job.units:
        return
    try:
        module = importlib.import_module(f"llmfix.engines.{engine}")
    except ImportError as exc:
        missing = (exc.name or engine).split(".")[0]
        raise ConfigError(
            f"--engine {engine} needs {missing}: pip install 'llmfix[{engine}]'"
        ) from None
    for blob in module.run_job(job, workers):
        outcome: Outcome = pickle.loads(blob)  # our own workers' output, never a file's
        yield outcome
