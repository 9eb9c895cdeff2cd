"""llmfix.engines (units, the worker's share) and `check --engine/--results`, with no engine."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmfix.cli import app

pa = pytest.importorskip("pyarrow", reason="--results and Parquet need pyarrow (llmfix[parquet])")

from llmfix.batch.core import BatchLimits, Profile  # noqa: E402
from llmfix.engines import Job, Unit, check_unit, plan_units  # noqa: E402
from llmfix.inputs import ReadOptions  # noqa: E402
from tests.scale_fixture import ROWS, run, write_fixture  # noqa: E402


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("engines")
    write_fixture(root)
    return root


def test_parquet_files_split_by_row_group_and_others_stay_whole(fixture: Path) -> None:
    data = fixture / "answers"
    files = [(str(data / n), "") for n in ("answers.parquet", "answers.jsonl", "broken.parquet")]
    units = plan_units(files)
    groups = [u.row_group for u in units if u.path.endswith("answers.parquet")]
    assert groups == [0, 1, 2, 3]
    assert [u.row_group for u in units[4:]] == [None, None]


def test_units_together_give_every_row_once_in_order(fixture: Path) -> None:
    path = str(fixture / "answers" / "answers.parquet")
    units = tuple(plan_units([(path, "")]))
    job = Job(units, {"": ReadOptions(field="text")}, {"": Profile()}, BatchLimits())
    outcomes = [pickle.loads(b) for i in range(len(units)) for b in check_unit(job, i)]
    assert [o.item.line for o in outcomes] == list(range(1, ROWS + 1))
    assert all(o.item.record is None for o in outcomes)  # not shipped back


def test_a_malformed_parquet_unit_is_one_error_item(fixture: Path) -> None:
    job = Job(
        (Unit(str(fixture / "answers" / "broken.parquet")),),
        {"": ReadOptions(field="text")},
        {"": Profile()},
        BatchLimits(),
    )
    (outcome,) = [pickle.loads(b) for b in check_unit(job, 0)]
    assert (outcome.status, outcome.error.code) == ("error", "input.unreadable")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_results_dir_from_a_local_run(fixture: Path, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "results"
    code, report = run(fixture, "-j", "1", "--results", str(out), "--results-format", fmt)
    assert code == 1
    if fmt == "parquet":
        rows = pa.parquet.read_table(out).to_pylist()
    else:
        rows = [json.loads(line) for line in (out / "part-00000.jsonl").read_text().splitlines()]
    assert [(r["id"], r["status"]) for r in rows] == [
        (i["id"], i["status"]) for i in report["items"]
    ]
    assert {r["group"] for r in rows if r["source"].endswith("answers.jsonl")} == {"m0", "m1", "m2"}


def test_results_never_overwrite_earlier_results(fixture: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    out.mkdir()
    (out / "part-00000.parquet").write_bytes(b"earlier")
    result = CliRunner().invoke(app, ["check", str(fixture / "answers"), "--results", str(out)])
    assert result.exit_code == 2
    assert "already holds results" in result.output
    assert (out / "part-00000.parquet").read_bytes() == b"earlier"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "dask"], "--engine must be one of local, ray, spark"),
        (["--engine", "ray", "-"], "reads files, not stdin"),
        (["--engine", "spark", "--write-fixed", "fixed"], "need --engine local"),
        (["--results-format", "csv", "--results", "r"], "parquet or jsonl"),
    ],
)
def test_engine_usage_errors_exit_2(
    fixture: Path, args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(fixture)
    paths = [] if "-" in args else ["answers/torn.jsonl"]
    result = CliRunner().invoke(app, ["check", *paths, "--no-config", *args], input="{}")
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_a_file_url_reads_as_its_path(fixture: Path) -> None:
    data = fixture / "answers"
    argv = ["check", "--field", "text", "--no-config", "-q", "-f", "json", "--include", "*.*l"]
    by_path = CliRunner().invoke(app, [*argv, str(data)])
    by_url = CliRunner().invoke(app, [*argv, data.as_uri()])
    assert by_url.exit_code == by_path.exit_code == 1
    path_items = json.loads(by_path.stdout)["items"]
    url_items = json.loads(by_url.stdout)["items"]
    assert [i["source"] for i in url_items] == [(data / "answers.jsonl").as_uri()] * ROWS + [
        (data / "torn.jsonl").as_uri()
    ] * 2
    assert [i["status"] for i in url_items] == [i["status"] for i in path_items]


def _to_memory(data: Path, names: tuple[str, ...]) -> str:
    """Copy fixture files into fsspec's in-memory filesystem (a scheme pyarrow itself
    cannot read); the directory's URL."""
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    root = f"/llmfix-{len(memory.store)}"
    for name in names:
        memory.pipe(f"{root}/{name}", (data / name).read_bytes())
    return f"memory://{root}"


def test_an_fsspec_url_reads_as_its_path(fixture: Path) -> None:
    data = fixture / "answers"
    url = _to_memory(data, ("answers.jsonl", "answers.parquet"))
    argv = ["check", "--field", "text", "--no-config", "-q", "-f", "json", "-j", "1"]
    by_path = CliRunner().invoke(app, [*argv, str(data / "answers.jsonl")])
    by_url = CliRunner().invoke(app, [*argv, url])
    assert by_url.exit_code == by_path.exit_code == 1, by_url.output
    url_items = json.loads(by_url.stdout)["items"]
    path_items = json.loads(by_path.stdout)["items"]
    # the directory holds the same rows twice: as JSON Lines, then as Parquet
    assert {i["source"] for i in url_items} == {f"{url}/answers.jsonl", f"{url}/answers.parquet"}
    statuses = [i["status"] for i in path_items]
    assert [i["status"] for i in url_items] == statuses + statuses


def test_an_fsspec_parquet_url_splits_into_row_groups(fixture: Path) -> None:
    url = _to_memory(fixture / "answers", ("answers.parquet",)) + "/answers.parquet"
    units = tuple(plan_units([(url, "")]))
    assert [u.row_group for u in units] == [0, 1, 2, 3]
    job = Job(units, {"": ReadOptions(field="text")}, {"": Profile()}, BatchLimits())
    outcomes = [pickle.loads(b) for i in range(len(units)) for b in check_unit(job, i)]
    assert [o.item.line for o in outcomes] == list(range(1, ROWS + 1))


def test_an_unknown_url_scheme_is_one_clear_error(fixture: Path) -> None:
    pytest.importorskip("fsspec")
    result = CliRunner().invoke(app, ["check", "nosuchscheme://bucket/answers", "--no-config"])
    assert result.exit_code == 2
    assert "nosuchscheme://bucket/answers" in result.output
    assert "Traceback" not in result.output
