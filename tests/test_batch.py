"""Batch execution: order, pool vs in-process, limits, gates, baseline, the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import llmfix.batch.core as batch
import llmfix.batch.pool as pool
from llmfix import codes
from llmfix.batch.core import BatchLimits, Outcome, Profile, check_text
from llmfix.batch.judge import Baseline, BatchSummary, judge, pointer_pattern
from llmfix.batch.pool import run_items
from llmfix.inputs import Item
from llmfix.model import Risk
from llmfix.schema.load import schema_from_value
from llmfix.schema.validate import SchemaValidator

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
TEXTS = [
    '{"name": "Ada", "age": 36}',  # valid
    'Sure:\n```json\n{"name": "Bo", "age": 2}\n```',  # extracted
    "{'name': 'Cy', 'age': '7',}",  # repaired
    '{"name": "Di"}',  # invalid
    "There is no JSON in this answer.",  # unparseable (a refusal would be refused)
]


def validator(schema: Any = PERSON) -> SchemaValidator:
    return SchemaValidator(schema_from_value(schema))


def item(text: str, index: int = 0, **fields: Any) -> Item:
    defaults: dict[str, Any] = {"id": f"f.txt:{index}", "source": "f.txt", "line": index + 1}
    defaults.update(fields)
    return Item(text=text, kind="text", **defaults)


def items(n: int) -> list[Item]:
    return [item(TEXTS[i % len(TEXTS)], i) for i in range(n)]


@pytest.fixture
def profiles() -> dict[str, Profile]:
    return {"": Profile(validator())}


def statuses(outcomes: Any) -> list[tuple[str, str]]:
    return [(o.item.id, o.status) for o in outcomes]


def test_statuses_in_input_order(profiles: dict[str, Profile]) -> None:
    outcomes = list(run_items(items(5), profiles, BatchLimits(jobs=1)))
    assert [o.status for o in outcomes] == [
        "valid",
        "extracted",
        "repaired",
        "invalid",
        "unparseable",
    ]


def test_the_pool_gives_the_same_results_in_the_same_order(profiles: dict[str, Profile]) -> None:
    serial = statuses(run_items(items(60), profiles, BatchLimits(jobs=1)))
    pooled = statuses(run_items(items(60), profiles, BatchLimits(jobs=2, serial_budget=0.0)))
    assert pooled == serial


def test_small_runs_never_start_a_pool(
    profiles: dict[str, Profile], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_pool(*args: Any) -> None:
        raise AssertionError("a pool was started")

    monkeypatch.setattr(pool, "_Pool", no_pool)
    assert len(list(run_items(items(20), profiles, BatchLimits(jobs=2)))) == 20


def test_a_bounded_window_still_checks_everything(profiles: dict[str, Profile]) -> None:
    limits = BatchLimits(jobs=2, serial_budget=0.0, window=1)
    assert len(list(run_items(items(40), profiles, limits))) == 40


def test_an_item_over_the_size_limit_is_not_checked(profiles: dict[str, Profile]) -> None:
    [outcome] = run_items([item("x" * 100)], profiles, BatchLimits(max_item_size=10))
    assert outcome.error is not None
    assert outcome.error.code == "batch.too_large"


def test_a_crash_inside_the_pipeline_is_the_items_error(
    profiles: dict[str, Profile], monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(batch, "check_text", crash)
    [outcome] = run_items([item("{}")], profiles, BatchLimits(jobs=1))
    assert outcome.error is not None
    assert (outcome.error.code, "boom" in outcome.error.message) == ("batch.crash", True)


def test_an_input_error_item_passes_through(profiles: dict[str, Profile]) -> None:
    bad = item("", error=codes.INPUT_BAD_RECORD.at("not JSON"))
    [outcome] = run_items([bad], profiles)
    assert (outcome.status, outcome.error) == ("error", bad.error)


def test_tool_calls_are_checked_against_their_tool() -> None:
    profile = Profile(validator(), tools={"lookup": validator({"required": ["id"]})})
    result = check_text('{"name": "x"}', profile, tool="lookup")
    assert [d.code for d in result.errors] == ["schema.required"]


def test_an_unknown_tool_is_an_error_with_a_suggestion() -> None:
    profile = Profile(tools={"lookup_order": validator(True)})
    result = check_text("{}", profile, tool="lookup_ordr")
    [error] = result.errors
    assert (error.code, error.hint) == ("tools.unknown_name", 'did you mean "lookup_order"?')


def test_tool_calls_without_a_registry_are_only_parsed() -> None:
    result = check_text('{"x": 1}', Profile(validator()), tool="anything")
    assert result.status.value == "valid"


# ---------------------------------------------------------------------- gates


def outcome_of(text: str, index: int = 0) -> Outcome:
    [outcome] = run_items([item(text, index)], {"": Profile(validator())})
    return outcome


@pytest.mark.parametrize(
    ("text", "fail_on", "fails"),
    [
        (TEXTS[2], "invalid", False),
        (TEXTS[2], "repaired", True),
        (TEXTS[1], "repaired", False),
        (TEXTS[1], "extracted", True),
        (TEXTS[3], "invalid", True),
    ],
)
def test_fail_on(text: str, fail_on: Any, fails: bool) -> None:
    assert judge(outcome_of(text), fail_on).failed is fails


def test_max_risk_fails_a_guess() -> None:
    truncated = outcome_of('{"name": "Ada", "age": 3')
    assert judge(truncated, "invalid", Risk.SAFE).failed


def test_an_error_item_always_fails() -> None:
    error = codes.INPUT_BAD_RECORD.at("x")
    bad = Outcome(item("", error=error), None, error)
    assert judge(bad).failures == ("not checked (input.bad_record)",)


def report_of(*outcomes: Outcome) -> dict[str, Any]:
    from llmfix.reporters.base import item_record

    return {"version": "1", "items": [item_record(judge(o)) for o in outcomes]}


def test_a_baselined_failure_does_not_fail() -> None:
    invalid = outcome_of(TEXTS[3])
    baseline = Baseline.from_report(report_of(invalid))
    checked = judge(invalid, baseline=baseline)
    assert (checked.failures != (), checked.baselined, checked.failed) == (True, True, False)


def test_a_new_error_on_a_baselined_item_fails() -> None:
    baseline = Baseline.from_report(report_of(outcome_of('{"name": "Di"}')))
    worse = outcome_of('{"name": "Di", "age": "old"}')
    assert judge(worse, baseline=baseline).failed


def test_a_failure_of_another_item_is_not_covered() -> None:
    baseline = Baseline.from_report(report_of(outcome_of(TEXTS[3], 0)))
    assert judge(outcome_of('{"name": "Eve"}', 1), baseline=baseline).failed


def test_a_known_failure_moved_down_by_an_inserted_line_stays_known() -> None:
    baseline = Baseline.from_report(report_of(outcome_of(TEXTS[3], 0)))
    moved = judge(outcome_of(TEXTS[3], 1), baseline=baseline)
    assert (moved.baselined, moved.failed) == (True, False)


def test_a_baseline_from_a_report_without_keys_matches_by_id() -> None:
    report = report_of(outcome_of(TEXTS[3], 0))
    for entry in report["items"]:
        del entry["key"]
    checked = judge(outcome_of(TEXTS[3], 0), baseline=Baseline.from_report(report))
    assert checked.baselined


# -------------------------------------------------------------------- summary


def test_summary_counts_statuses_rates_and_repairs(profiles: dict[str, Profile]) -> None:
    summary = BatchSummary()
    for outcome in run_items(items(5), profiles):
        summary.add(judge(outcome))
    data = summary.to_dict()
    assert (data["items"], data["parse_rate"], data["valid_rate"], data["failed"]) == (
        5,
        0.8,
        0.6,
        2,
    )


def test_summary_tallies_repairs_per_rule_by_item(profiles: dict[str, Profile]) -> None:
    summary = BatchSummary()
    for outcome in run_items([item(TEXTS[2])], profiles):
        summary.add(judge(outcome))
    assert summary.to_dict()["items_by_repair"]["parse.single_quotes"] == 1


def test_summary_tallies_errors_by_code_and_pointer(profiles: dict[str, Profile]) -> None:
    summary = BatchSummary()
    for outcome in run_items(
        [item('[{"a": 1}, {"a": 2}]')],
        {"": Profile(validator({"items": {"properties": {"a": {"minimum": 10}}}}))},
    ):
        summary.add(judge(outcome))
    assert summary.to_dict()["errors"] == [
        {"code": "schema.minimum", "pointer": "/*/a", "count": 2}
    ]


def test_group_by_tallies_each_group(profiles: dict[str, Profile]) -> None:
    summary = BatchSummary(groups={})
    group_items = [item(TEXTS[0], 0, group="m1"), item(TEXTS[3], 1, group="m2"), item(TEXTS[3], 2)]
    for outcome in run_items(group_items, profiles):
        summary.add(judge(outcome))
    groups = summary.to_dict()["groups"]
    assert {k: v["failed"] for k, v in groups.items()} == {"(none)": 1, "m1": 0, "m2": 1}


@pytest.mark.parametrize(
    ("pointer", "pattern"),
    [("/items/3/name", "/items/*/name"), ("/0", "/*"), ("/a10b", "/a10b"), ("", "")],
)
def test_pointer_pattern(pointer: str, pattern: str) -> None:
    assert pointer_pattern(pointer) == pattern


def _workers_die_on_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker process (not this one) checking the text ``CRASH`` dies on the spot."""
    import os

    real = batch.check_text
    parent = os.getpid()

    def dies_on_crash(text: str, profile: Profile, tool: str | None = None, **kw: Any) -> Any:
        if text == "CRASH" and os.getpid() != parent:
            os._exit(3)
        return real(text, profile, tool, **kw)

    monkeypatch.setattr(batch, "check_text", dies_on_crash)


def test_a_dead_worker_is_an_item_error_and_the_run_goes_on(
    profiles: dict[str, Profile], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _workers_die_on_crash(monkeypatch)
    run = [item("{}", 0), item("CRASH", 1), *(item("{}", i) for i in range(2, 6))]
    limits = BatchLimits(jobs=2, serial_budget=0.0)
    outcomes = list(run_items(run, profiles, limits))
    codes = [o.error.code if o.error else o.status for o in outcomes]
    assert (len(codes), codes[1]) == (6, "batch.worker_crashed")


def test_the_pool_starts_early_when_the_input_is_plainly_large() -> None:
    from llmfix.batch.pool import PROBE_SECONDS, _pool_pays

    probe = PROBE_SECONDS * 1.2
    big = BatchLimits(jobs=2, input_size=50_000_000)
    assert _pool_pays(probe, 1_000_000, big)  # 49 MB left at 60 ms per MB: start now
    assert not _pool_pays(PROBE_SECONDS / 2, 1_000_000, big)  # too little measured yet
    assert not _pool_pays(probe, 1_000_000, BatchLimits(jobs=2))  # size not known
    small = BatchLimits(jobs=2, input_size=1_500_000)
    assert not _pool_pays(probe, 1_000_000, small)  # 30 ms of work left: stay here
    assert _pool_pays(small.serial_budget, 1_000_000, small)  # the serial budget spent


def test_a_dead_worker_reading_lines_is_an_error_on_each_of_their_items(
    profiles: dict[str, Profile], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A worker that dies on a batch of JSON Lines lines: each item of the batch (and of
    the rest of its chunk) is a ``batch.worker_crashed`` error, a line that is not JSON
    keeps its own error, and the run ends with every item accounted for."""
    import json

    from llmfix.inputs import LineBatch, ReadOptions, items_or_lines

    _workers_die_on_crash(monkeypatch)
    texts = ["{}"] * 4 + ["CRASH", "{}", "not json"] + ["{}"] * 3
    lines = [json.dumps({"text": t}) if t != "not json" else "{oops" for t in texts]
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    units = list(jsonl_batches_of(str(path), ReadOptions(field="text"), 3))
    assert all(isinstance(u, LineBatch) for u in units)
    limits = BatchLimits(jobs=2, serial_budget=0.0)
    found = [o.error.code if o.error else o.status for o in run_items(units, profiles, limits)]
    # lines 1-3 checked here; 4-6 in the batch whose worker died; 7 is not JSON
    assert found[3:6] == ["batch.worker_crashed"] * 3
    assert found[6] == "input.bad_record"
    assert found[:3] == ["invalid"] * 3  # checked, here (the fixture's schema wants fields)
    assert len(found) == 10
    assert list(items_or_lines(str(path), ReadOptions(field="text")))  # (the default size)


def jsonl_batches_of(path: str, options: Any, size: int) -> Any:
    from llmfix.inputs.jsonl import jsonl_batches

    return jsonl_batches(path, options, size=size)
