"""`llmfix check --engine ray` and llmfix.engines.ray against a real local Ray (num_cpus=2).

One Ray instance serves the module; the CLI joins it. The same fixture is checked once
locally and once on Ray, and the two runs must agree item for item.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyarrow", reason="engine tests need pyarrow (llmfix[ray])")
ray = pytest.importorskip("ray", reason="Ray tests need llmfix[ray]")

from llmfix.batch.columns import ColumnChecker, merge_summaries, partial_summary  # noqa: E402
from tests.scale_fixture import (  # noqa: E402
    EXPECTED_STATUS,
    SCHEMA,
    answer,
    comparable,
    docs_example,
    run,
    write_fixture,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")


@pytest.fixture(scope="module")
def session() -> Any:
    import logging

    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def runs(session: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("ray")
    write_fixture(root)
    local = run(root, "-j", "1")
    engine = run(root, "--engine", "ray", "--results", str(root / "results"))
    return {"root": root, "local": local, "ray": engine}


def test_ray_gives_what_local_check_gives(runs: dict[str, Any]) -> None:
    (local_code, local), (ray_code, on_ray) = runs["local"], runs["ray"]
    assert (ray_code, local_code) == (1, 1)
    assert comparable(on_ray) == comparable(local)


def test_jsonl_and_parquet_copies_agree(runs: dict[str, Any]) -> None:
    _, report = runs["ray"]
    by_file: dict[str, Counter[str]] = {}
    lines: dict[str, dict[int, str]] = {}
    for item in report["items"]:
        name = Path(item["source"]).name
        by_file.setdefault(name, Counter())[item["status"]] += 1
        lines.setdefault(name, {})[item["line"]] = item["status"]
    assert by_file["answers.jsonl"] == by_file["answers.parquet"] == Counter(EXPECTED_STATUS)
    assert lines["answers.jsonl"] == lines["answers.parquet"]


def test_a_malformed_file_is_one_item_and_a_bad_line_one_more(runs: dict[str, Any]) -> None:
    _, report = runs["ray"]
    bad = [
        (Path(i["source"]).name, i["status"], [d["code"] for d in i["diagnostics"]])
        for i in report["items"]
        if Path(i["source"]).name in ("broken.parquet", "torn.jsonl")
    ]
    assert bad == [
        ("broken.parquet", "error", ["input.unreadable"]),
        ("torn.jsonl", "valid", []),
        ("torn.jsonl", "error", ["input.bad_record"]),
    ]


def test_results_dir_holds_a_row_per_item(runs: dict[str, Any]) -> None:
    import pyarrow.parquet as pq

    _, report = runs["ray"]
    table = pq.read_table(runs["root"] / "results")
    assert table.column("id").to_pylist() == [i["id"] for i in report["items"]]
    assert table.column("status").to_pylist() == [i["status"] for i in report["items"]]


def test_a_baseline_from_a_local_run_passes_the_ray_run(runs: dict[str, Any]) -> None:
    root = runs["root"]
    baseline = root / "baseline.json"
    baseline.write_text(json.dumps(runs["local"][1]))
    code, report = run(root, "--engine", "ray", "--baseline", str(baseline))
    assert (code, report["summary"]["failed"]) == (0, 0)
    assert report["summary"]["baselined"] == runs["local"][1]["summary"]["failed"]


def test_check_dataset_and_its_summary(session: Any) -> None:
    from llmfix.engines.ray import RayChecker, check_dataset, summarize

    texts = [answer(i) for i in range(64)]
    import pyarrow as pa

    table = pa.table({"generated_text": texts})
    checked = check_dataset(
        ray.data.from_arrow(table), "generated_text", SCHEMA, max_item_size=5000
    ).materialize()
    expected = RayChecker("generated_text", SCHEMA, max_item_size=5000)(table)
    rows = checked.to_arrow_refs()
    got = pa.concat_tables(ray.get(rows))
    assert got.column("status").to_pylist() == expected.column("status").to_pylist()
    assert summarize(checked) == merge_summaries([partial_summary(expected)])


def test_a_checker_in_map_batches_survives_bad_rows(session: Any) -> None:
    import pyarrow as pa

    table = pa.table({"text": [None, "x" * 100, '{"name": "a", "age": 1}']})
    ds = ray.data.from_arrow(table).map_batches(
        ColumnChecker,
        fn_constructor_kwargs={"column": "text", "schema": SCHEMA, "max_item_size": 50},
        batch_format="pyarrow",
        concurrency=1,
    )
    assert [r["status"] for r in ds.take_all()] == ["error", "error", "valid"]


def test_the_docs_example_runs_as_written(session: Any) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(docs_example("ray"), "docs/guide/scale-out.md", "exec"), namespace)
    rows = namespace["checked"].select_columns(["status"]).take_all()
    assert [r["status"] for r in rows] == ["valid", "repaired", "unparseable"]
