"""A whole (not streamed) response, checked as ``llmfix check`` checks a saved one.

The answers are read out of the response by :func:`llmfix.inputs.items_from_text` (the
text of an OpenAI chat completion, a Responses object or an Anthropic message, and each
tool call's arguments), each is checked by :func:`llmfix.batch.core.check_item` (the stop
reason applied: a cut-off answer is ``truncated``, a refused one ``refused``) and judged by
the run's gate. What passes and was repaired is written back into the response
(:func:`llmfix.inputs.fixed_record`); what fails is left as the model wrote it, for the
policy to decide (see :mod:`llmfix.proxy.app`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmfix.model import Result, Status
from llmfix.proxy.verdict import Verdict, verdict_of

if TYPE_CHECKING:
    from llmfix.inputs import Item
    from llmfix.proxy.expect import Expectation
    from llmfix.run.llm import LlmRun
    from llmfix.run.settings import RepairRun

# The model's repair of one answer the rules left broken: (item, result) → result.
ModelRepair = Callable[["Item", Result, "Expectation"], Result]


@dataclass(frozen=True)
class Checked:
    """A whole response's verdict, and its body with the repairs made (``None``: the
    body is to be sent as it came)."""

    verdict: Verdict
    body: Any = None


def check_whole(
    text: str, expect: Expectation, run: RepairRun, model: ModelRepair | None = None
) -> Checked:
    """Check the answers of the response ``text`` (its JSON) that ``expect`` covers."""
    # (start-up: loaded by the first response the proxy checks)
    from llmfix.batch.core import Profile, check_item
    from llmfix.batch.gate import gate_failures
    from llmfix.inputs import ReadOptions, fixed_record, items_from_text
    from llmfix.inputs.items import changed_only_by_reading

    profile = Profile(validator=expect.validator, options=run.options, tools=expect.tools)
    items = items_from_text(text, "<response>", ReadOptions(kind="json"), "json")
    checked: list[tuple[Item, Result, list[str]]] = []
    for item in items:
        if item.error is not None or not _covered(item, expect):
            continue
        result = check_item(item, profile)
        failures = gate_failures(result, run.fail_on, run.max_risk, partial=run.options.partial)
        if failures and model is not None and item.tool is None:
            result = model(item, result, expect)
            failures = gate_failures(result, run.fail_on, run.max_risk, partial=run.options.partial)
        checked.append((item, result, failures))
    verdict = verdict_of((result, failures) for _, result, failures in checked)
    changed = [
        (item, result.value)
        for item, result, failures in checked
        if not failures
        and result.status not in (Status.VALID, Status.EXTRACTED)
        and result.value is not None
        and not changed_only_by_reading(result)
    ]
    if not changed or not verdict.passed:
        return Checked(verdict)
    record = copy.deepcopy(changed[0][0].record)
    return Checked(verdict, fixed_record(record, changed))


def _covered(item: Item, expect: Expectation) -> bool:
    """Whether the proxy checks this answer: a tool call always (its arguments must be
    JSON), the text when the request asked for JSON, and a refusal or cut-off answer
    whenever it asked for anything (the API's word must not pass as a good answer)."""
    if item.tool is not None:
        return True
    if expect.json:
        return True
    finish = item.finish
    return finish is not None and finish.kind == "refused" and expect.registry is not None


def model_repair(llm: LlmRun, run: RepairRun) -> ModelRepair:
    """The opt-in LLM repair of a text answer the rules left failing (``--llm``): the
    run's model, its attempts and its call budget (``--max-llm-calls``, for the life of
    the proxy), one request at a time."""
    import threading

    lock = threading.Lock()

    def repair(item: Item, result: Result, expect: Expectation) -> Result:
        with lock:
            repaired, _ = llm.repair(
                item.text,
                result,
                validator=expect.validator,
                options=run.options,
                name=item.id,
                max_risk=run.max_risk,
            )
        return repaired

    return repair
