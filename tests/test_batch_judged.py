"""Items judged and counted in the pool's workers (``Judging``): the same summary as judging
every outcome here, and every item a reporter or writer reads still comes back whole."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmfix import codes
from llmfix.batch.core import BatchLimits, Outcome, Profile
from llmfix.batch.judge import BatchSummary, Judging, Need, Tallied, judge
from llmfix.batch.pool import run_items
from llmfix.inputs import Item, LineBatch, ReadOptions, items_from_file, items_or_lines
from llmfix.model import Risk
from llmfix.pipeline.stops import Finish
from llmfix.schema.load import schema_from_value
from llmfix.schema.validate import SchemaValidator

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "age"],
}
TEXTS = [
    '{"name": "Ada", "age": 36, "tags": ["a"]}',  # valid
    'Sure:\n```json\n{"name": "Bo", "age": 2}\n```',  # extracted
    "{'name': 'Cy', 'age': '7', 'tags': ['x', 'y',],}",  # repaired
    '{"name": "Di", "tags": [1, 2]}',  # invalid: errors with pointers
    '{"name": 3, "age": "many"}',  # invalid: other codes
    "There is no JSON in this answer.",  # unparseable
    '{"name": "Ed", "age": 4, "tags": [',  # truncated
    '{"name": "TODO", "age": 0}',  # a degenerate answer (a warning)
]


def _items(n: int) -> list[Item]:
    made = []
    for i in range(n):
        fields: dict[str, Any] = {"group": f"g{i % 3}"}
        if i % 17 == 5:  # the API said the answer was cut off: judged here, not there
            fields["finish"] = Finish("cut_off", 'finish_reason "length"')
        if i % 19 == 7:  # bytes the reader replaced: judged here too
            fields["diagnostics"] = (codes.INPUT_INVALID_UTF8.at("a byte that is not UTF-8"),)
        text = TEXTS[i % len(TEXTS)]
        made.append(Item(id=f"f:{i}", source="f", line=i + 1, text=text, kind="text", **fields))
    return made


@pytest.fixture(scope="module")
def profiles() -> dict[str, Profile]:
    return {"": Profile(SchemaValidator(schema_from_value(SCHEMA)))}


GATES = [
    Judging(),
    Judging(fail_on="repaired", max_risk=Risk.SAFE),
    Judging(codes=frozenset({"degenerate"})),
]


def _summary(found: list[Outcome | Tallied], gate: Judging) -> tuple[BatchSummary, list[Any]]:
    summary = BatchSummary(groups={})
    whole = []
    for outcome in found:
        if isinstance(outcome, Tallied):
            summary.add_tallied(outcome)
            continue
        checked = judge(outcome, gate.fail_on, gate.max_risk, codes=gate.codes)
        summary.add(checked)
        whole.append(checked)
    return summary, whole


@pytest.mark.parametrize("need", ["none", "failing"])
@pytest.mark.parametrize("gate", GATES, ids=["invalid", "repaired-safe", "degenerate"])
def test_the_summary_is_the_same_whoever_judged(
    profiles: dict[str, Profile], gate: Judging, need: Need
) -> None:
    items = _items(120)
    limits = BatchLimits(jobs=2, serial_budget=0.0)
    judging = Judging(gate.fail_on, gate.max_risk, gate.codes, need)
    here, _ = _summary(list(run_items(items, profiles, limits)), gate)
    found = list(run_items(items, profiles, limits, judging))
    there, whole = _summary(found, gate)
    assert there.to_dict() == here.to_dict()
    assert there.total.seconds > 0
    assert [o.item.id for o in found] == [i.id for i in items]  # input order
    tallied = [o for o in found if isinstance(o, Tallied)]
    alone = [i for i in items[1:] if i.finish is None and not i.diagnostics]  # (1st: here)
    if need == "none":
        assert len(tallied) == len(alone)
    else:
        assert 0 < len(tallied) < len(alone)
    # What the workers could not judge alone comes back whole.
    assert all(o.item.finish is None and not o.item.diagnostics for o in tallied)
    assert any(c.item.finish is not None for c in whole)
    if need == "failing":  # every failing item is there for the reporters
        failing = [c for c in whole if c.failures]
        assert failing
        assert not [o for o in tallied if o.counts.failures]
        assert sum(1 for c in whole if c.failed) == there.total.failed
    else:
        assert [o for o in tallied if o.counts.failures]


def test_every_item_is_whole_when_the_run_needs_all(profiles: dict[str, Profile]) -> None:
    limits = BatchLimits(jobs=2, serial_budget=0.0)
    found = list(run_items(_items(40), profiles, limits, Judging(need="all")))
    assert all(isinstance(o, Outcome) for o in found)


def test_in_process_items_are_whole(profiles: dict[str, Profile]) -> None:
    found = list(run_items(_items(40), profiles, BatchLimits(jobs=1), Judging(need="none")))
    assert all(isinstance(o, Outcome) for o in found)


def _jsonl(path: Any, n: int) -> None:
    """A JSON Lines file of answers in ``text``, with lines a reader has to report."""
    with open(path, "wb") as out:
        for i in range(n):
            if i % 23 == 4:
                out.write(b'{"text": "cut off\n')  # not a JSON record
            elif i % 29 == 6:
                out.write(b'{"output": "no text field here"}\n')  # --field names nothing
            elif i % 31 == 8:
                out.write(b'{"text": "{\\"name\\": \\"B\xff\\", \\"age\\": 1}"}\n')  # bad byte
            elif i % 37 == 9:
                out.write(b"\n")  # blank: no item
            elif i % 41 == 10:
                out.write(b'{"text": "' + b"x" * 600 + b'"}\n')  # over the line limit
            else:
                record = {"id": f"r{i}", "g": f"g{i % 3}", "text": TEXTS[i % len(TEXTS)]}
                out.write(json.dumps(record).encode() + b"\n")


@pytest.mark.parametrize("need", ["none", "failing"])
def test_workers_read_the_lines_as_this_process_does(
    profiles: dict[str, Profile], tmp_path: Any, need: Need
) -> None:
    """Lines of a JSON Lines file parsed in the workers (``LineBatch``) give the outcomes,
    in order, and the summary that reading every item here gives."""
    path = tmp_path / "answers.jsonl"
    _jsonl(path, 300)
    read = ReadOptions(field="text", group_by="g", max_bytes=400)
    gate = Judging(need=need)
    here, whole_here = _summary(
        list(run_items(items_from_file(str(path), read), profiles, BatchLimits(jobs=1))), gate
    )
    units = list(items_or_lines(str(path), read))
    assert any(isinstance(u, LineBatch) for u in units)
    found = list(run_items(units, profiles, BatchLimits(jobs=2, serial_budget=0.0), gate))
    there, whole = _summary(found, gate)
    assert there.to_dict() | {"seconds": 0} == here.to_dict() | {"seconds": 0}
    assert [o.item.id for o in found] == [c.item.id for c in whole_here]  # input order
    assert any(isinstance(o, Tallied) for o in found)
    # What a reporter reads of a failing line is there, naming the line.
    errors = {c.item.id: c.outcome.error for c in whole if c.outcome.error is not None}
    mine = {c.item.id: c.outcome.error for c in whole_here if c.outcome.error is not None}
    assert errors == mine
    assert "line 5 is not a JSON record" in errors[f"{path}:5"].message
    assert errors[f"{path}:7"].code == "input.missing_field"
    assert errors[f"{path}:11"].code == "input.too_large"


def test_a_file_read_for_tool_results_is_not_cut_in_batches(tmp_path: Any) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"jsonrpc": "2.0", "id": 1, "result": {}}\n', encoding="utf-8")
    read = ReadOptions(tool_results=True)  # a result names its tool by an earlier request
    units = list(items_or_lines(str(path), read))
    assert units == list(items_from_file(str(path), read))  # (a batch would not be)
